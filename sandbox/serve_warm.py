# coil serve's template computes ahead, once, what every child would
# otherwise compute again, using only trusted code and constant or literal
# data; nothing of the user's code runs here (docs/serve.md, Security):
#
# - helpers(h): each helper called once on constant input, through the
#   namespaces the user's code imports (h), so that what the helpers and
#   the stdlib under them build on first use is there before any child
#   runs: OpenSSL's digest lookups, the records' field names, ipaddress's
#   netmask per prefix length, strptime's locale regexes, and the
#   interpreter's method cache entries for the types these paths touch.
#   A child then reads that state instead of building and writing it,
#   which in a forked child costs a copied page per page written;
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


def helpers(h):
    """Runs each step on h, the helper namespaces by import name as the
    user's code gets them; the number of steps that failed (one whose
    helper is missing from the rootfs fails and is skipped)."""
    failed = 0
    for step in _HELPER_STEPS:
        try:
            step(h)
        except Exception:
            failed += 1
    return failed


def _digests(h):
    for name in ("md5", "sha1", "sha256", "sha512", "blake2b"):
        getattr(h["hashlib"], name)(b"").hexdigest()
        h["hmac"].digest(b"k", b"", name)
    h["hmac"].compare_digest(b"a", b"a")


def _json(h):
    json = h["json"]
    value = {"b": [1, 1.5, "x\u00e9", None, True], "a": {"c": -2}}
    json.loads(json.dumps(value, sort_keys=True))
    json.loads(json.dumps(value, indent=1))


def _encodings(h):
    b64, data = h["base64"], b"\x00coil\xff"
    for kind in ("b64", "standard_b64", "urlsafe_b64", "b32", "b32hex",
                 "b16", "b85"):
        getattr(b64, kind + "decode")(getattr(b64, kind + "encode")(data))
    h["binascii"].unhexlify(h["binascii"].hexlify(data))
    h["binascii"].crc32(data)
    st = h["struct"]
    st.unpack(">HHI", st.pack(">HHI", 1, 2, 3))
    st.unpack_from("!H", b"\x00\x01")
    st.calcsize("<Q")


def _datetime(h):
    dt = h["datetime"]
    utc = dt.timezone.utc
    t = dt.datetime(2020, 1, 2, 3, 4, 5, 6, tzinfo=utc)
    dt.datetime.fromisoformat(t.isoformat())
    t.strftime("%Y-%m-%dT%H:%M:%SZ")
    dt.datetime.strptime("2020-01-02 03:04:05", "%Y-%m-%d %H:%M:%S")
    (t + dt.timedelta(days=1, seconds=2)).timestamp()
    dt.datetime.fromtimestamp(0, utc)
    dt.date(2020, 1, 2).isoformat()


def _urls(h):
    up = h["urllib.parse"]
    url = "https://user:pw@example.test:8443/a/b;p?x=1&y=%20z#f"
    up.urlunsplit(up.urlsplit(url))
    up.urlunparse(up.urlparse(url))
    up.urljoin(url, "../c?d=e")
    up.parse_qs("x=1&y=%20z&x=2")
    up.parse_qsl("x=1&y=", keep_blank_values=True)
    up.urlencode({"a": "b c", "d": ["e", "f"]}, doseq=True)
    up.unquote(up.quote("a b/\u00e9"))
    up.unquote_plus(up.quote_plus("a b/\u00e9"))
    up.unquote_to_bytes(up.quote_from_bytes(b"\xff/"))


def _ipaddress(h):
    ip = h["ipaddress"]
    for addr, net in (("192.0.2.1", "192.0.2.0/24"),
                      ("2001:db8::1", "2001:db8::/32")):
        ip.ip_address(addr)
        ip.in_network(addr, net)
        ip.hosts(net, 2)
        base = net.split("/")[0]
        for prefix in range(129 if ":" in addr else 33):
            ip.ip_network("%s/%d" % (base, prefix), strict=False)


def _re(h):
    r = h["re"]
    r.compile("a+", r.I)
    r.match("(a+)(b)?", "aab").groups()
    r.search("b", "ab")
    r.fullmatch("a+", "aa")
    r.findall("a", "aa")
    list(r.finditer("a", "aa"))
    r.split(",", "a,b")
    r.sub("a", "b", "aa")
    r.subn("a", "b", "aa")
    r.escape("a.b")


_HELPER_STEPS = (_digests, _json, _encodings, _datetime, _urls, _ipaddress,
                 _re)


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
