# coil serve's template computes ahead, once, what every child would
# otherwise compute again, using only trusted code and constant or literal
# data; nothing of the user's code runs here (docs/serve.md, Security):
#
# - helpers(): the helpers' lazily built state (OpenSSL's digest lookups,
#   hmac, json's encoder and decoder), from constant input;
# - regexes(src): the regular expressions that accepted handler code writes
#   as literals (re.compile("...", re.I), re.match("...", s), ...), compiled
#   into the re module's own cache, so each child finds them there instead
#   of running re's compiler again. Only a literal pattern and literal flags
#   are read. A pattern that fails, warns or asks for re.DEBUG (which
#   prints) is left for the child to compile, which then behaves exactly as
#   it would without this. Called after the gate accepted the code (so the
#   source parses within the gate's limits).
import _ast as ast
import re
import warnings

# Each function's position of flags in the stdlib signature.
_FLAGS_AT = {"compile": 1, "match": 2, "search": 2, "fullmatch": 2,
             "findall": 2, "finditer": 2, "split": 3, "sub": 4, "subn": 4}
_FLAG_NAMES = frozenset(("A", "ASCII", "I", "IGNORECASE", "L", "LOCALE", "M",
                         "MULTILINE", "S", "DOTALL", "X", "VERBOSE", "U",
                         "UNICODE", "NOFLAG"))
# Bounds on the template's work per code version.
MAX_PATTERNS = 32
MAX_PATTERN_LEN = 4096


def _walk(tree):
    """Every node of tree (the interpreter ships _ast, not ast)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, ast.AST):
                todo.append(value)
            elif isinstance(value, list):
                todo.extend(v for v in value if isinstance(v, ast.AST))


def _aliases(tree):
    """Names bound to the re module, and to its functions and flags."""
    mods, funcs, flags = set(), {}, {}
    for node in _walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "re":
                    mods.add(a.asname or "re")
        elif (isinstance(node, ast.ImportFrom) and node.module == "re"
              and not node.level):
            for a in node.names:
                if a.name in _FLAGS_AT:
                    funcs[a.asname or a.name] = a.name
                elif a.name in _FLAG_NAMES:
                    flags[a.asname or a.name] = a.name
    return mods, funcs, flags


def _flags(node, mods, flags):
    """The int value of a literal flags expression, or None."""
    if node is None:
        return 0
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    name = None
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and node.value.id in mods and node.attr in _FLAG_NAMES):
        name = node.attr
    elif isinstance(node, ast.Name) and node.id in flags:
        name = flags[node.id]
    if name is not None:
        return int(getattr(re, name))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left = _flags(node.left, mods, flags)
        right = _flags(node.right, mods, flags)
        if left is not None and right is not None:
            return left | right
    return None


def literals(src):
    """(pattern, flags) of each call of an re function with literal
    arguments, in source order, without repeats."""
    tree = compile(src, "<string>", "exec", ast.PyCF_ONLY_AST)
    mods, funcs, flag_names = _aliases(tree)
    if not mods and not funcs:
        return []
    found = []
    for node in _walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                and f.value.id in mods and f.attr in _FLAGS_AT):
            fn = f.attr
        elif isinstance(f, ast.Name) and f.id in funcs:
            fn = funcs[f.id]
        else:
            continue
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        pattern = node.args[0] if node.args else kw.get("pattern")
        at = _FLAGS_AT[fn]
        flags_node = node.args[at] if len(node.args) > at else kw.get("flags")
        if not (isinstance(pattern, ast.Constant)
                and type(pattern.value) in (str, bytes)
                and len(pattern.value) <= MAX_PATTERN_LEN):
            continue
        value = _flags(flags_node, mods, flag_names)
        if value is None or value & re.DEBUG:
            continue
        key = (pattern.value, value)
        if key not in found:
            found.append(key)
            if len(found) == MAX_PATTERNS:
                break
    return found


def helpers():
    """Builds the helpers' lazy state; the number of steps that worked (a
    helper missing from the rootfs is skipped)."""
    n = 0
    for step in _HELPER_STEPS:
        try:
            step()
            n += 1
        except Exception:
            pass
    return n


def _digests():
    import hashlib
    import hmac
    for name in ("md5", "sha1", "sha224", "sha256", "sha384", "sha512"):
        getattr(hashlib, name)(b"").hexdigest()
        hashlib.new(name, b"").hexdigest()
        hmac.new(b"k", b"", name).hexdigest()


def _json():
    import json
    value = {"b": [1, 1.5, "x\u00e9", None, True], "a": {"c": -2}}
    json.loads(json.dumps(value, sort_keys=True))
    json.loads(json.dumps(value, indent=1, separators=(",", ": ")))


_HELPER_STEPS = (_digests, _json)


def regexes(src):
    """Compiles the literal patterns of src into re's cache; the number
    compiled. A pattern that raises or warns is not kept."""
    n = 0
    for pattern, flags in literals(src):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                re.compile(pattern, flags)
            except Exception:
                continue
        if caught:
            re._cache.pop((type(pattern), pattern, flags), None)
            continue
        n += 1
    return n
