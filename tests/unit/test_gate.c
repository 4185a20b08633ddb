/* The static gate (sandbox/gate.c + gate_policy.py): the attack corpus
 * (docs/gate.md, Attack corpus), the node and identifier rules, benign
 * handlers, limits and decoding. Runs in a real embedded interpreter.
 *
 * Under ASan, leaks allocated inside libpython are suppressed: the
 * interpreter is never finalised (as in coil), and what it holds at exit is
 * referenced from pymalloc arenas, which LeakSanitizer does not scan. */
#include <Python.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "pyembed.h"
#include "tap.h"

static struct coil_error err;

/* Runs the gate with the default limits; false when the gate failed. */
static bool gate_len(const char *src, size_t len, struct gate_result *r) {
  if (gate_check(src, len, "<user>", NULL, true, r, &err) == 0)
    return true;
  printf("# gate failed: %s\n", err.msg);
  return false;
}

static bool gate(const char *src, struct gate_result *r) {
  return gate_len(src, strlen(src), r);
}

static void dump(const struct gate_result *r) {
  for (size_t i = 0; i < r->n; i++)
    printf("#   %d:%d: %s\n", r->v[i].line, r->v[i].col, r->v[i].msg);
}

/* A violation at line whose message contains want. */
static bool has(const struct gate_result *r, int line, const char *want) {
  for (size_t i = 0; i < r->n; i++)
    if (r->v[i].line == line && strstr(r->v[i].msg, want))
      return true;
  return false;
}

/* Rejected, no code, and a violation at line containing want. */
static void rejected(const char *name, const char *src, int line,
                     const char *want) {
  struct gate_result r;
  bool ran = gate(src, &r);
  bool pass = ran && r.n > 0 && !r.code && has(&r, line, want);
  ok(pass, "%s: rejected at line %d (%s)", name, line, want);
  if (ran) {
    if (!pass)
      dump(&r);
    gate_result_free(&r);
  }
}

static void accepted(const char *name, const char *src) {
  struct gate_result r;
  bool ran = gate(src, &r);
  bool pass = ran && r.n == 0 && r.code;
  ok(pass, "%s: accepted", name);
  if (ran) {
    if (!pass)
      dump(&r);
    gate_result_free(&r);
  }
}

/* The attack corpus (docs/gate.md), each written as a handler; line is
 * where the core of the attack is. */
static const struct {
  const char *id, *src;
  int line;
  const char *msg;
} attacks[] = {
    {"A01 __subclasses__ walk to load_module('posix')",
     "def handle(request):\n"
     "    base = ().__class__.__bases__[0]\n"
     "    for c in base.__subclasses__():\n"
     "        if c.__name__ == 'BuiltinImporter':\n"
     "            return c.load_module('posix').system('true')\n",
     2,
     "attribute '__class__' is not allowed (names starting with '_' are "
     "reserved)"},
    {"A02 __import__('os')",
     "def handle(request):\n"
     "    return __import__('os').getcwd()\n",
     2, "name '__import__' is not allowed"},
    {"A03 import os",
     "def handle(request):\n"
     "    import os\n"
     "    return os.getcwd()\n",
     2, "import of 'os' is not allowed (helpers: json, re, base64,"},
    {"A04 gc.get_objects scan",
     "def handle(request):\n"
     "    import gc\n"
     "    for o in gc.get_objects():\n"
     "        if isinstance(o, dict) and 'system' in o:\n"
     "            return o['system']('true')\n",
     2, "import of 'gc' is not allowed"},
    {"A05 sys._getframe in a quote_via callback",
     "from urllib.parse import urlencode\n"
     "import sys\n"
     "def handle(request):\n"
     "    def cb(s, *a):\n"
     "        return sys._getframe(1).f_globals['sys']\n"
     "    return urlencode({'a': 1}, quote_via=cb)\n",
     5, "attribute '_getframe' is not allowed"},
    {"A06 genexp gi_frame.f_back",
     "def handle(request):\n"
     "    g = (x for x in [1])\n"
     "    return g.gi_frame.f_back.f_back.f_globals['sys']\n",
     3, "attribute 'gi_frame' is not allowed"},
    {"A07 forged code object",
     "def handle(request):\n"
     "    def f():\n"
     "        return 1\n"
     "    return type(f)(f.__code__.replace(co_consts=(2,)), {})()\n",
     4, "name 'type' is not allowed"},
    {"A08 getattr with a built string",
     "def handle(request):\n"
     "    x = ()\n"
     "    sub = getattr(getattr(x, '__cla' + 'ss__'), '__sub' + 'classes__')\n"
     "    return sub\n",
     3, "name 'getattr' is not allowed"},
    {"A09 str.format traversal to os.environ",
     "from urllib.parse import urlsplit\n"
     "def handle(request):\n"
     "    t = '{0.geturl.__func__.__globals__[sys].modules[os].environ[S]}'\n"
     "    return t.format(urlsplit('http://x/'))\n",
     4, "'format' is not allowed: use an f-string"},
    {"A10 format_map traversal",
     "from urllib.parse import urlsplit\n"
     "def handle(request):\n"
     "    t = '{x.geturl.__func__.__globals__[sys].modules[os].environ[S]}'\n"
     "    return t.format_map({'x': urlsplit('http://x/')})\n",
     4, "'format_map' is not allowed: use an f-string"},
    {"A11 module attribute of a helper",
     "from urllib.parse import urlparse\n"
     "def handle(request):\n"
     "    return urlparse.sys.modules['posix'].system('true')\n",
     3, "attribute 'sys' is not allowed (not a member"},
    {"A12 pickle.loads",
     "import pickle\n"
     "def handle(request):\n"
     "    return pickle.loads(b'cposix\\nsystem\\n(Vtrue\\ntR.')\n",
     1, "import of 'pickle' is not allowed"},
    {"A13 traceback frame walk",
     "def handle(request):\n"
     "    try:\n"
     "        1 / 0\n"
     "    except Exception as e:\n"
     "        return e.__traceback__.tb_frame.f_back.f_globals['sys']\n",
     5, "attribute '__traceback__' is not allowed"},
    {"A14 __globals__ of the handler",
     "def handle(request):\n"
     "    b = handle.__globals__['__builtins__']\n"
     "    return b['__import__']('posix').system('true')\n",
     2, "attribute '__globals__' is not allowed"},
    {"A15 BaseExceptionGroup subclass + except* (gh-128049)",
     "class Evil(BaseExceptionGroup):\n"
     "    def split(self, *a):\n"
     "        return self, self\n"
     "def handle(request):\n"
     "    try:\n"
     "        raise Evil('x', [ValueError()])\n"
     "    except* ValueError:\n"
     "        pass\n",
     1, "class definitions are not allowed"},
    {"A16 match class patterns as getattr",
     "def handle(request):\n"
     "    O = ValueError.mro()[-1]\n"
     "    match ():\n"
     "        case O(__class__=O(__base__=O(__subclasses__=s))):\n"
     "            return s()\n",
     3, "'match' statements are not allowed"},
    {"A17 NFKC-folded __class__",
     "def handle(request):\n"
     "    return ()._\uFF3F\U0001D41C\U0001D425\U0001D41A\U0001D42C\U0001D42C"
     "\uFF3F\uFF3F.__base__.__subclasses__()\n",
     2, "attribute '__class__' is not allowed"},
    {"A18 type() with dunder keys",
     "def handle(request):\n"
     "    C = type('C', (), {'__getattr__': len, '__del__': len})\n"
     "    return C()\n",
     2, "name 'type' is not allowed"},
    {"A19 positional-only __builtins__ (GHSA-ffg3)",
     "def f(__builtins__, /):\n"
     "    return __builtins__\n"
     "def handle(request):\n"
     "    return f(1)\n",
     1, "name '__builtins__' is not allowed"},
    {"A20 ctypes",
     "def handle(request):\n"
     "    import ctypes\n"
     "    return ctypes.CDLL(None).system(b'true')\n",
     2, "import of 'ctypes' is not allowed"},
    {"A21 operator.attrgetter",
     "import operator\n"
     "def handle(request):\n"
     "    get = operator.attrgetter('__class__.__base__.__subclasses__')\n"
     "    return operator.methodcaller('load_module', 'posix')\n",
     1, "import of 'operator' is not allowed"},
    {"A22 open()",
     "def handle(request):\n"
     "    return open('/etc/hostname').read()\n",
     2, "name 'open' is not allowed"},
    {"A23 len.__self__ / json.dumps.__globals__",
     "import json\n"
     "def handle(request):\n"
     "    return len.__self__, json.dumps.__globals__\n",
     3, "attribute '__self__' is not allowed"},
};

static const char dns_handler[] =
    "import re\n"
    "import hashlib\n"
    "import hmac\n"
    "import base64\n"
    "import ipaddress\n"
    "import struct\n"
    "import binascii\n"
    "from datetime import datetime, timedelta, timezone\n"
    "\n"
    "LABEL = re.compile(r'^[a-z0-9-]{1,63}$', re.IGNORECASE)\n"
    "\n"
    "\n"
    "def handle(request):\n"
    "    name = request.get('name', '').rstrip('.').lower()\n"
    "    labels = [l for l in name.split('.') if l]\n"
    "    if not all(LABEL.match(l) for l in labels):\n"
    "        return {'rcode': 'FORMERR'}\n"
    "    seen = request.get('state', {}).get(name, 0)\n"
    "    first = ipaddress.ip_address(request.get('first', '192.0.2.1'))\n"
    "    second = ipaddress.ip_address(request.get('second', '127.0.0.1'))\n"
    "    answer = first if seen == 0 else second\n"
    "    token = hmac.digest(request.get('key', 'k').encode(), name.encode(), "
    "'sha256')\n"
    "    qid = struct.unpack('>H', struct.pack('>I', "
    "binascii.crc32(name.encode()))[2:])[0]\n"
    "    when = datetime.fromisoformat(request.get('now', "
    "'2024-01-01T00:00:00'))\n"
    "    expires = when.replace(tzinfo=timezone.utc) + timedelta(seconds=60)\n"
    "    return {\n"
    "        'answers': [{'type': 'A' if answer.version == 4 else 'AAAA',\n"
    "                     'data': str(answer), 'ttl': 0}],\n"
    "        'state': {name: seen + 1},\n"
    "        'tag': base64.urlsafe_b64encode(token[:12]).decode(),\n"
    "        'id': qid,\n"
    "        'digest': hashlib.sha256(name.encode()).hexdigest()[:16],\n"
    "        'expires': expires.strftime('%Y-%m-%dT%H:%M:%SZ'),\n"
    "        'log': f'{name!r} -> {answer} (seen {seen:d}x)',\n"
    "    }\n";

static const char http_handler[] =
    "import json\n"
    "import math\n"
    "import urllib.parse\n"
    "from urllib.parse import parse_qs, quote\n"
    "import hashlib\n"
    "import base64\n"
    "\n"
    "\n"
    "def handle(request):\n"
    "    url = urllib.parse.urlsplit(request.get('url', "
    "'http://example.test/a?size=25'))\n"
    "    params = {k: v[0] for k, v in parse_qs(url.query).items()}\n"
    "    try:\n"
    "        body = json.loads(request.get('body') or '{}')\n"
    "    except ValueError as e:\n"
    "        body = {'error': str(e)}\n"
    "    pages = math.ceil(int(params.get('size', '1')) / 10)\n"
    "    etag = hashlib.md5(json.dumps(body, "
    "sort_keys=True).encode()).hexdigest()\n"
    "    headers = sorted({'ETag': etag, 'X-Pages': str(pages)}.items(),\n"
    "                     key=lambda kv: kv[0])\n"
    "    status = 200 if url.path.startswith('/a') else 404\n"
    "    return {\n"
    "        'status': status,\n"
    "        'headers': dict(headers),\n"
    "        'body': '<p>%(path)s</p>' % {'path': url.path},\n"
    "        'cookie': base64.b64encode(quote(url.path).encode()).decode(),\n"
    "        'summary': f\"{status} {url.netloc}{url.path:>8} {len(params)} "
    "params\",\n"
    "    }\n";

/* helpers recorded, as a space-separated string */
static void helpers_are(const char *name, const char *src, const char *want) {
  struct gate_result r;
  if (!gate(src, &r)) {
    ok(0, "%s: gate ran", name);
    return;
  }
  char got[256] = "";
  for (size_t i = 0; i < r.n_helpers; i++)
    snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "",
             r.helpers[i]);
  ok(r.n == 0 && r.code, "%s: accepted", name);
  if (r.n)
    dump(&r);
  is_str(got, want, "%s: helpers recorded", name);
  gate_result_free(&r);
}

static void test_attacks(void) {
  for (size_t i = 0; i < sizeof attacks / sizeof attacks[0]; i++)
    rejected(attacks[i].id, attacks[i].src, attacks[i].line, attacks[i].msg);
  rejected("A15 except* reported too", attacks[14].src, 7,
           "'except*' is not allowed");
  rejected("A16 mro denied too", attacks[15].src, 2,
           "attribute 'mro' is not allowed");
}

static void test_rules(void) {
  rejected("NFKC function name", "def _\uFE4D\U0001D41Bx():\n    pass\n", 1,
           "name '__bx' is not allowed");
  accepted("positional-only _ argument",
           "def f(_, /, a, *args, b=1, **kw):\n    return a\n");
  rejected("positional-only _x argument", "def f(a, _x, /):\n    return a\n", 1,
           "name '_x' is not allowed");
  rejected("lambda _x argument", "f = lambda _x: 1\n", 1,
           "name '_x' is not allowed");
  rejected("except*", "try:\n    pass\nexcept* ValueError:\n    pass\n", 3,
           "'except*' is not allowed");
  rejected("match", "x = 1\nmatch x:\n    case 1:\n        pass\n", 2,
           "'match' statements are not allowed");
  rejected("class", "x = 1\nclass A:\n    pass\n", 2,
           "class definitions are not allowed");
  rejected("with", "with x as y:\n    pass\n", 1,
           "'with' statements are not allowed");
  rejected("yield", "def g():\n    yield 1\n", 2, "'yield' is not allowed");
  rejected("async def", "async def f():\n    pass\n", 1,
           "async functions are not allowed");
  rejected("global", "def f():\n    global x\n", 2, "'global' is not allowed");
  rejected("annotated assignment", "x: int = 1\n", 1,
           "annotated assignments are not allowed");
  rejected("argument annotation", "def f(a: int):\n    pass\n", 1,
           "annotations are not allowed");
  rejected("return annotation", "def f() -> int:\n    pass\n", 1,
           "return annotations are not allowed");
  rejected("decorator", "@len\ndef f():\n    pass\n", 1,
           "decorators are not allowed");
  rejected("attribute store", "x = []\nx.append = 1\n", 2,
           "assigning to attributes is not allowed");
  rejected("attribute delete", "x = []\ndel x.append\n", 2,
           "deleting attributes is not allowed");
  rejected("del of a tuple", "a = b = 1\ndel (a, b)\n", 2,
           "'del' is only allowed on names and subscripts");
  accepted("del of names and subscripts", "a = [1]\nb = 2\ndel a[0], b\n");
  rejected("unknown attribute", "x = 1\ny = x.foo\n", 2,
           "attribute 'foo' is not allowed (not a member");
  rejected("frame attribute without _", "def f(g):\n    return g.f_back\n", 2,
           "attribute 'f_back' is not allowed");
  rejected("name denylist", "x = eval('1')\n", 1, "name 'eval' is not allowed");
  rejected("denied name as a parameter", "def f(vars):\n    return 1\n", 1,
           "name 'vars' is not allowed");
  rejected("from helper import unknown member", "from json import decoder\n", 1,
           "'decoder' is not a member of helper 'json'");
  rejected("from helper import *", "from re import *\n", 1,
           "'from re import *' is not allowed");
  rejected("relative import", "from . import json\n", 1,
           "relative imports are not allowed");
  rejected("submodule of a helper", "import json.decoder\n", 1,
           "import of 'json.decoder' is not allowed");
  rejected("import binding a denied name", "from re import compile\n", 1,
           "name 'compile' is not allowed");
  rejected("async comprehension",
           "async def f():\n    return [x async for x in y]\n", 2,
           "async comprehensions are not allowed");
  accepted("lambda", "def f(xs):\n    return sorted(xs, key=lambda x: -x)\n");
  accepted("f-strings",
           "def f(x, w):\n"
           "    return f'{x!r} {x!s:>10} {x!a} {x:{w}.{w}}' f\"{x=}\"\n");
  rejected("format() builtin", "def f(x):\n    return format(x, 'x')\n", 2,
           "'format' is not allowed: use an f-string");
  rejected(".format(", "def f(x):\n    return '{}'.format(x)\n", 2,
           "'format' is not allowed: use an f-string");
  accepted("%-formatting with a mapping",
           "def f(d):\n    return '%(k)s and %d' % d, '%d' % 1\n");
  accepted(
      "try/except/finally, while, assert, raise",
      "def f(x):\n    try:\n        assert x\n    except (ValueError, "
      "KeyError) as e:\n"
      "        raise ValueError(str(e)) from e\n    finally:\n        x = 0\n"
      "    while x:\n        x -= 1\n        continue\n    return x\n");
  accepted("walrus, slices, starred, comprehensions",
           "def f(xs):\n    if (n := len(xs)) > 2:\n        a, *b = xs[1:n:2]\n"
           "    return {k: v for k, v in zip(xs, xs)}, {x for x in xs}, "
           "[*xs], (x for x in xs if x), {**{}}\n");
  rejected("compiler-level error", "def f():\n    pass\nreturn 1\n", 3,
           "SyntaxError: 'return' outside function");
  rejected("syntax error", "def handle(request):\n    return (\n", 2,
           "SyntaxError: '(' was never closed");
  rejected("indentation error", "def f():\nreturn 1\n", 2,
           "IndentationError: expected an indented block");

  /* every violation, in source order */
  struct gate_result r;
  if (gate("def f(x):\n    return x.__class__, format(x)\n"
           "class A:\n    pass\nimport os\n",
           &r)) {
    ok(r.n == 4, "every violation collected (%zu)", r.n);
    bool sorted = true;
    for (size_t i = 1; i < r.n; i++)
      sorted &=
          r.v[i - 1].line < r.v[i].line ||
          (r.v[i - 1].line == r.v[i].line && r.v[i - 1].col <= r.v[i].col);
    ok(sorted, "violations sorted by position");
    bool pass =
        r.n == 4 && r.v[0].line == 2 && r.v[0].col == 14 && r.v[1].col == 25;
    ok(pass, "columns are 1-based characters");
    if (!pass)
      dump(&r);
    gate_result_free(&r);
  }
  /* a column after non-ASCII text counts characters, not bytes */
  if (gate("x = 'ééé'; y = x.__len__\n", &r)) {
    bool pass = r.n == 1 && r.v[0].line == 1 && r.v[0].col == 18;
    ok(pass, "column after non-ASCII text");
    if (!pass)
      dump(&r);
    gate_result_free(&r);
  }
}

static void test_benign(void) {
  helpers_are("benign DNS handler", dns_handler,
              "base64 binascii datetime hashlib hmac ipaddress re struct");
  helpers_are("benign HTTP handler", http_handler,
              "base64 hashlib json math urllib.parse");
  helpers_are("import urllib.parse as a name", "import urllib.parse as up\n",
              "urllib.parse");
  ok(gate_n_helper_names == 11 && strcmp(gate_helper_names[0], "json") == 0 &&
         strcmp(gate_helper_names[10], "urllib.parse") == 0,
     "11 helper names");
}

/* src of n bytes filled with a repeated unit between head and tail */
static char *build(const char *head, const char *unit, size_t n,
                   const char *tail) {
  size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
  char *s = malloc(hl + ul * n + tl + 1);
  if (!s)
    abort();
  memcpy(s, head, hl);
  for (size_t i = 0; i < n; i++)
    memcpy(s + hl + i * ul, unit, ul);
  memcpy(s + hl + ul * n, tail, tl + 1);
  return s;
}

/* The result of src under lim: n violations, first one's message. */
static void limit_case(const char *name, char *src,
                       const struct gate_limits *lim, bool want_ok,
                       const char *want) {
  struct gate_result r;
  int rc = gate_check(src, strlen(src), "<user>", lim, true, &r, &err);
  if (rc < 0) {
    ok(0, "%s: gate failed: %s", name, err.msg);
  } else if (want_ok) {
    ok(r.n == 0 && r.code, "%s: accepted", name);
    if (r.n)
      dump(&r);
  } else {
    bool pass = r.n >= 1 && !r.code && strstr(r.v[0].msg, want);
    ok(pass, "%s: %s", name, want);
    if (!pass)
      dump(&r);
  }
  if (rc == 0)
    gate_result_free(&r);
  free(src);
}

static void test_limits(void) {
  struct gate_limits big;
  gate_limits_default(&big);
  ok(big.max_source == 65536 && big.max_nodes == 20000 && big.max_depth == 100,
     "default limits");
  limit_case("65 KiB source", build("x = 1\n#", "x", 65 * 1024, "\n"), NULL,
             false, "the source is larger than 65536 bytes");
  limit_case("64 KiB source", build("x = 1\n#", "x", 65536 - 8, "\n"), NULL,
             true, NULL);
  /* Module, Assign, Name, Store, List, Load + one Constant per item */
  limit_case("20001 nodes", build("x = [", "0,", 19995, "]\n"), NULL, false,
             "more than 20000 syntax nodes");
  limit_case("20000 nodes", build("x = [", "0,", 19994, "]\n"), NULL, true,
             NULL);
  /* Module 1, Assign 2, lists 3..k+2, the constant k+3 */
  char *deep = build("x = ", "[", 98, "0");
  char *closed = build(deep, "]", 98, "\n");
  free(deep);
  limit_case("depth 101", closed, NULL, false, "nested more than 100 levels");
  deep = build("x = ", "[", 97, "0");
  closed = build(deep, "]", 97, "\n");
  free(deep);
  limit_case("depth 100", closed, NULL, true, NULL);

  /* the parser's own guards, at the default cap and far beyond it */
  big.max_source = 4u << 20;
  deep = build("x = ", "(", 1000, "1");
  limit_case("1000 nested parens", build(deep, ")", 1000, "\n"), NULL, false,
             "too many nested parentheses");
  free(deep);
  limit_case("-*60000", build("x = ", "-", 60000, "1\n"), NULL, false,
             "nested too deeply to parse");
  limit_case("-*2000000", build("x = ", "-", 2000000, "1\n"), &big, false,
             "nested too deeply to parse");
  limit_case("1+1+... (30000)", build("x = ", "1+", 30000, "1\n"), NULL, false,
             "nested too deeply to parse");
  limit_case("1+1+... (1000000)", build("x = ", "1+", 1000000, "1\n"), &big,
             false, "nested too deeply to parse");
  limit_case("not not ...", build("x = ", "not ", 16000, "1\n"), NULL, false,
             "nested too deeply to parse");
  limit_case("a.a.a...", build("x = a", ".a", 30000, "\n"), NULL, false,
             "nested too deeply to parse");
  char *ind = malloc(101 * 110);
  size_t off = 0;
  for (int i = 0; i <= 101; i++)
    off += (size_t)sprintf(ind + off, "%*sif x:\n", i, "");
  sprintf(ind + off, "%*spass\n", 102, "");
  limit_case("102 indentation levels", ind, NULL, false,
             "IndentationError: too many levels of indentation");
}

static void test_decoding(void) {
  struct gate_result r;
  static const char bad[] = "x = 1\ny = '\xff'\n";
  if (gate_len(bad, sizeof bad - 1, &r)) {
    bool pass = r.n == 1 && r.v[0].line == 2 && r.v[0].col == 6 &&
                strstr(r.v[0].msg, "not valid UTF-8 (byte 0xff at offset 11)");
    ok(pass, "invalid UTF-8 rejected at its position");
    if (!pass)
      dump(&r);
    gate_result_free(&r);
  }
  static const char surrogate[] = "x = '\xed\xa0\x80'\n";
  if (gate_len(surrogate, sizeof surrogate - 1, &r)) {
    ok(r.n == 1 && r.v[0].col == 6, "encoded surrogate rejected");
    gate_result_free(&r);
  }
  static const char overlong[] = "x = '\xc0\xaf'\n";
  if (gate_len(overlong, sizeof overlong - 1, &r)) {
    ok(r.n == 1 && r.v[0].col == 6, "overlong form rejected");
    gate_result_free(&r);
  }
  static const char nul[] = "x = 1\r\n\xc3\xa9"
                            "b\0c\n";
  if (gate_len(nul, sizeof nul - 1, &r)) {
    bool pass = r.n == 1 && r.v[0].line == 2 && r.v[0].col == 3 &&
                strstr(r.v[0].msg, "NUL byte");
    ok(pass, "NUL rejected at its position");
    if (!pass)
      dump(&r);
    gate_result_free(&r);
  }
  /* PEP 263: as bytes, this would decode to x = 'abc' */
  static const char utf7[] = "# -*- coding: utf-7 -*-\nx = '+AGEAYgBj-'\n";
  if (gate(utf7, &r)) {
    bool pass = r.n == 0 && r.code;
    if (pass) {
      PyObject *g = PyDict_New();
      PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins());
      PyObject *res = PyEval_EvalCode(r.code, g, g);
      PyObject *x = PyDict_GetItemString(g, "x");
      pass = res && x && PyUnicode_CompareWithASCIIString(x, "+AGEAYgBj-") == 0;
      Py_XDECREF(res);
      Py_DECREF(g);
      PyErr_Clear();
    }
    ok(pass, "coding cookie ignored: decoded as UTF-8");
    gate_result_free(&r);
  }
  static const char bom[] = "\xEF\xBB\xBFx = 1\n";
  accepted("UTF-8 BOM", bom);
}

/* Codecs are pre-imported only when the code may look one up by name. */
static void test_codec_use(void) {
  static const struct {
    const char *src;
    bool codecs;
  } cases[] = {
      {"x = 'a'.upper()\n", false},
      {"x = 'a'.encode()\n", false},
      {"x = 'a'.encode('UTF-8')\n", false},
      {"x = b'a'.decode('latin-1', errors='replace')\n", false},
      {"x = str(b'a', 'ascii')\n", false},
      {"x = 'a'.encode('idna')\n", true},
      {"e = 'cp1252'; x = 'a'.encode(e)\n", true},
      {"x = bytes('a', encoding='utf-16')\n", true},
      {"x = str(b'a', *['idna'])\n", true},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct gate_result r;
    bool done = gate(cases[i].src, &r);
    ok(done && r.n == 0 && r.uses_codecs == cases[i].codecs,
       "codec lookup %s: %.*s", cases[i].codecs ? "seen" : "none",
       (int)strcspn(cases[i].src, "\n"), cases[i].src);
    gate_result_free(&r);
  }
  struct gate_result r;
  ok(gate_check("x = 1\n", 6, "<user>", NULL, false, &r, &err) == 0 &&
         r.uses_codecs,
     "check_ast off: codecs assumed");
  gate_result_free(&r);
}

static void test_policy_private(void) {
  struct gate_result r;
  ok(gate_check("class A:\n    pass\n", 18, "<user>", NULL, false, &r, &err) ==
             0 &&
         r.n == 0 && r.code && r.n_helpers == gate_n_helper_names,
     "check_ast off: only decoding, size and compile; every helper listed");
  gate_result_free(&r);
  PyObject *mods = PyImport_GetModuleDict();
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  bool hidden = true;
  while (PyDict_Next(mods, &pos, &key, &value)) {
    const char *k = PyUnicode_AsUTF8(key);
    if (k && (strstr(k, "gate") || strstr(k, "coil")))
      hidden = false;
  }
  ok(hidden, "the policy is not in sys.modules");
  ok(PyDict_GetItemString(mods, "_ast") && !PyDict_GetItemString(mods, "ast"),
     "the policy uses _ast, not ast.py");
}

int main(void) {
  /* The isolated configuration (docs/gate.md, Embedding) on the host's
   * Debian Python, as `coil check` uses it (cmd/check.c). */
  if (pyembed_start(L"/usr") < 0) {
    printf("not ok 1 - python initialisation\n");
    return 1;
  }
  test_attacks();
  test_rules();
  test_benign();
  test_limits();
  test_decoding();
  test_codec_use();
  test_policy_private();
  return tap_done();
}
