/* The guest namespace on its own (docs/gate.md, Builtins to Output and
 * errors): an interpreter on the host's stdlib, every helper pre-imported,
 * user snippets run with PyRun_String and NO AST gate, so each check shows
 * what this layer holds by itself (the AST-off outcomes of docs/gate.md,
 * Attack corpus). The reachability walk runs in a separate trusted dict
 * with the real builtins. */
#include <Python.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "guest.h"
#include "pyembed.h"
#include "tap.h"

static const char *const all_helpers[] = {
    "json",   "re",       "base64",    "hashlib",  "hmac",         "math",
    "struct", "binascii", "ipaddress", "datetime", "urllib.parse",
};
#define N_HELPERS (sizeof all_helpers / sizeof all_helpers[0])

static PyObject *guest; /* restricted globals */

/* ---- running snippets --------------------------------------------------- */

/* Runs src in g. Returns 0, or -1 with "Type: message" in why. */
static int run(PyObject *g, const char *src, char *why, size_t len) {
  why[0] = '\0';
  PyObject *r = PyRun_String(src, Py_file_input, g, g);
  if (r) {
    Py_DECREF(r);
    return 0;
  }
  pyembed_exc(why, len);
  return -1;
}

static void expect_ok(const char *what, const char *src) {
  char why[512];
  int rc = run(guest, src, why, sizeof why);
  ok(rc == 0, "%s", what);
  if (rc != 0)
    printf("#   raised %s\n", why);
}

/* The snippet must raise; why must start with want ("NameError: ..."). */
static void expect_raise(const char *what, const char *src, const char *want) {
  char why[512];
  int rc = run(guest, src, why, sizeof why);
  ok(rc != 0 && strncmp(why, want, strlen(want)) == 0, "%s", what);
  if (rc == 0 || strncmp(why, want, strlen(want)) != 0)
    printf("#   want '%s...', got '%s'\n", want, rc ? why : "no exception");
}

static PyObject *get(PyObject *g, const char *name) {
  return PyDict_GetItemString(g, name); /* borrowed */
}

/* ---- interpreter -------------------------------------------------------- */

/* ---- the builtins dict -------------------------------------------------- */

static void test_builtins(void) {
  PyObject *b = get(guest, "__builtins__");
  ok(b && PyDict_CheckExact(b), "__builtins__ is a fresh dict");
  if (!b)
    return;
  ok(PyDict_Size(b) == 63,
     "63 names: 24 functions, 19 types, 18 exceptions, "
     "print, __import__ (got %zd)",
     PyDict_Size(b));
  static const char *const absent[] = {"__loader__",
                                       "__spec__",
                                       "__name__",
                                       "__doc__",
                                       "__package__",
                                       "__build_class__",
                                       "getattr",
                                       "setattr",
                                       "delattr",
                                       "hasattr",
                                       "vars",
                                       "dir",
                                       "globals",
                                       "locals",
                                       "type",
                                       "object",
                                       "super",
                                       "eval",
                                       "exec",
                                       "compile",
                                       "open",
                                       "input",
                                       "breakpoint",
                                       "format",
                                       "id",
                                       "memoryview",
                                       "classmethod",
                                       "staticmethod",
                                       "property",
                                       "aiter",
                                       "anext",
                                       "BaseExceptionGroup",
                                       "ExceptionGroup",
                                       "GeneratorExit",
                                       "SystemExit",
                                       "KeyboardInterrupt",
                                       "help",
                                       "exit",
                                       "quit"};
  bool clean = true;
  for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
    if (PyDict_GetItemString(b, absent[i])) {
      printf("#   present: %s\n", absent[i]);
      clean = false;
    }
  ok(clean, "no module metadata and none of the absent names");
  PyObject *len = PyDict_GetItemString(b, "len");
  PyObject *r = len ? PyObject_Repr(len) : NULL;
  is_str(r ? PyUnicode_AsUTF8(r) : NULL, "<coil helper len>", "len is a proxy");
  Py_XDECREF(r);
  ok(PyDict_GetItemString(b, "str") == (PyObject *)&PyUnicode_Type &&
         PyDict_GetItemString(b, "ValueError") == PyExc_ValueError,
     "types and exceptions as themselves");
}

/* ---- benign use of every helper ----------------------------------------- */

static void test_benign(void) {
  expect_ok(
      "json round trip, indent, sort_keys",
      "import json\n"
      "d = json.loads('{\"b\": [1, 2.5, null, \"x\"], \"a\": true}')\n"
      "assert d == {'a': True, 'b': [1, 2.5, None, 'x']}\n"
      "assert json.dumps(d, sort_keys=True) == "
      "'{\"a\": true, \"b\": [1, 2.5, null, \"x\"]}'\n"
      "assert json.loads(json.dumps(d, indent=2)) == d\n"
      "assert json.loads('{\"k\": 1}'.encode('utf-16-be')) == {'k': 1}\n"
      "assert json.loads('{\"k\": 1}'.encode('utf-8-sig')) == {'k': 1}\n");
  expect_ok("re: groups, flags, sub template, finditer list, split",
            "import re\n"
            "m = re.match(r'(?P<k>\\w+)=(\\d+)', 'Key=42')\n"
            "assert m.group('k') == 'Key' and m.group(2) == '42'\n"
            "assert m.groupdict() == {'k': 'Key'} and m.span() == (0, 6)\n"
            "assert re.search('key', 'A KEY', re.I).group() == 'KEY'\n"
            "assert re.search('key', 'A KEY', flags=re.IGNORECASE)\n"
            "assert re.compile('^x', re.M).findall('x\\nx') == ['x', 'x']\n"
            "assert re.fullmatch('a+', 'aaa') and not re.fullmatch('a', 'ab')\n"
            "assert re.findall(r'\\d', 'a1b2') == ['1', '2']\n"
            "it = re.finditer(r'\\d+', '1 22 333')\n"
            "assert isinstance(it, list)\n"
            "assert [x.group() for x in it] == ['1', '22', '333']\n"
            "assert re.sub(r'(\\w+)@(\\w+)', r'\\2 at \\1', 'me@host') == "
            "'host at me'\n"
            "assert re.sub('(a)', r'\\g<1>\\g<1>', 'cat') == 'caat'\n"
            "assert re.subn('a', 'b', 'aaa', count=2) == ('bba', 2)\n"
            "assert re.split(r',\\s*', 'a, b,c') == ['a', 'b', 'c']\n"
            "assert re.split(',', 'a,b,c', 1) == ['a', 'b,c']\n"
            "assert re.escape('a.b') == 'a\\\\.b'\n"
            "assert re.I == 2 and re.IGNORECASE == re.I and re.M == 8\n"
            "p = re.compile(r'(\\d+)')\n"
            "assert re.match(p, '12').group(1) == '12'\n"
            "assert p.sub(r'<\\1>', 'a1') == 'a<1>'\n");
  expect_ok("base64",
            "import base64\n"
            "assert base64.b64decode(base64.b64encode(b'hi')) == b'hi'\n"
            "assert base64.urlsafe_b64encode(b'\\xff\\xfe') == b'__4='\n"
            "assert base64.b64decode('aGk=', validate=True) == b'hi'\n"
            "assert base64.b32decode(base64.b32encode(b'xyz')) == b'xyz'\n"
            "assert base64.b16encode(b'\\x01') == b'01'\n"
            "assert base64.b85decode(base64.b85encode(b'abc')) == b'abc'\n");
  expect_ok(
      "hashlib",
      "import hashlib\n"
      "assert hashlib.sha256(b'abc').hexdigest() == "
      "'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'\n"
      "assert hashlib.md5(b'').hexdigest() == "
      "'d41d8cd98f00b204e9800998ecf8427e'\n"
      "h = hashlib.sha1()\n"
      "h.update(b'a')\n"
      "assert h.digest_size == 20\n"
      "assert len(hashlib.sha512(b'x').digest()) == 64\n"
      "assert len(hashlib.blake2b(b'x', digest_size=16).digest()) == 16\n");
  expect_ok("hmac.digest by name, compare_digest",
            "import hmac\n"
            "d = hmac.digest(b'key', b'The quick brown fox jumps over the "
            "lazy dog', 'sha256')\n"
            "assert d.hex() == 'f7bc83f430538424b13298e6aa6fb143ef4d59a1494617"
            "5997479dbc2d1a3cd8'\n"
            "assert hmac.compare_digest(d, d)\n"
            "assert not hmac.compare_digest(b'a', b'b')\n");
  expect_ok("struct and binascii",
            "import struct, binascii\n"
            "b = struct.pack('>HI', 1, 2)\n"
            "assert b == b'\\x00\\x01\\x00\\x00\\x00\\x02'\n"
            "assert struct.unpack('>HI', b) == (1, 2)\n"
            "assert struct.calcsize('>HI') == 6\n"
            "assert struct.unpack_from('>H', b, 4) == (2,)\n"
            "assert binascii.hexlify(b'\\x01\\xff') == b'01ff'\n"
            "assert binascii.unhexlify('01ff') == b'\\x01\\xff'\n"
            "assert binascii.crc32(b'hello') == 907060870\n");
  expect_ok("math functions and plain-float constants",
            "import math\n"
            "assert math.sqrt(16) == 4.0 and math.floor(2.5) == 2\n"
            "assert isinstance(math.pi, float) and 3.14 < math.pi < 3.15\n"
            "assert math.isinf(math.inf) and math.isnan(math.nan)\n"
            "assert math.fsum(x * x for x in [1, 2]) == 5.0\n"
            "assert math.gcd(12, 18) == 6\n");
  expect_ok("datetime arithmetic, strftime, strptime, fromisoformat",
            "import datetime\n"
            "d = datetime.datetime(2024, 1, 31, 12, 0, "
            "tzinfo=datetime.timezone.utc)\n"
            "e = d + datetime.timedelta(days=1)\n"
            "assert (e.month, e.day) == (2, 1)\n"
            "assert e.strftime('%Y-%m-%d %H:%M %Z') == '2024-02-01 12:00 UTC'\n"
            "assert (e - d).total_seconds() == 86400\n"
            "p = datetime.datetime.strptime('2024-03-04 05:06', "
            "'%Y-%m-%d %H:%M')\n"
            "assert (p.year, p.hour, p.minute) == (2024, 5, 6)\n"
            "f = datetime.datetime.fromisoformat('2024-01-02T03:04:05+01:00')\n"
            "assert f.utcoffset() == datetime.timedelta(hours=1)\n"
            "assert datetime.date(2024, 2, 29).isoformat() == '2024-02-29'\n"
            "assert isinstance(datetime.datetime.now(datetime.timezone.utc), "
            "datetime.datetime)\n");
  expect_ok(
      "urllib.parse: records, parse_qs, urlencode, quote",
      "import urllib.parse\n"
      "u = 'https://u:p@Example.com:8443/a/b?x=1&y=2#frag'\n"
      "r = urllib.parse.urlsplit(u)\n"
      "assert (r.scheme, r.netloc, r.path) == "
      "('https', 'u:p@Example.com:8443', '/a/b')\n"
      "assert (r.query, r.fragment) == ('x=1&y=2', 'frag')\n"
      "assert (r.username, r.password, r.hostname, r.port) == "
      "('u', 'p', 'example.com', 8443)\n"
      "assert r == ('https', 'u:p@Example.com:8443', '/a/b', 'x=1&y=2', "
      "'frag')\n"
      "assert len(r) == 5 and r[0] == 'https' and r[-1] == 'frag'\n"
      "assert r[1:3] == ('u:p@Example.com:8443', '/a/b')\n"
      "s, n, p, q, f = r\n"
      "assert urllib.parse.urlunsplit(r) == u\n"
      "assert urllib.parse.urlsplit('http://h:bad/').port is None\n"
      "assert urllib.parse.urlsplit('http://h/').port is None\n"
      "pr = urllib.parse.urlparse('http://h/p;par?q=1')\n"
      "assert pr.params == 'par' and len(pr) == 6\n"
      "assert urllib.parse.urlunparse(pr) == 'http://h/p;par?q=1'\n"
      "assert urllib.parse.parse_qs('a=1&a=2&b=3') == "
      "{'a': ['1', '2'], 'b': ['3']}\n"
      "assert urllib.parse.parse_qsl('a=1&b=') == [('a', '1')]\n"
      "assert urllib.parse.urlencode({'a': 'x y', 'b': 1}) == "
      "'a=x+y&b=1'\n"
      "assert urllib.parse.urlencode({'a': [1, 2]}, doseq=True) == "
      "'a=1&a=2'\n"
      "assert urllib.parse.quote('a b/c') == 'a%20b/c'\n"
      "assert urllib.parse.quote_plus('a b') == 'a+b'\n"
      "assert urllib.parse.unquote('a%20b') == 'a b'\n"
      "assert urllib.parse.urljoin('http://h/a/b', 'c') == 'http://h/a/c'\n"
      "from urllib.parse import quote\n"
      "from urllib import parse\n"
      "assert quote('/') == '/' and parse.quote('é') == '%C3%A9'\n");
  expect_ok(
      "ipaddress records, in_network, hosts",
      "import ipaddress\n"
      "a = ipaddress.ip_address('10.1.2.3')\n"
      "assert a.version == 4 and a.is_private and not a.is_global\n"
      "assert a.compressed == '10.1.2.3' and a.packed == bytes([10, 1, 2, "
      "3])\n"
      "b = ipaddress.ip_address('::1')\n"
      "assert b.is_loopback and b.version == 6\n"
      "assert b.exploded == '0000:0000:0000:0000:0000:0000:0000:0001'\n"
      "assert ipaddress.ip_address(3232235521).compressed == "
      "'192.168.0.1'\n"
      "n = ipaddress.ip_network('192.168.0.0/30')\n"
      "assert (n.num_addresses, n.prefixlen) == (4, 30)\n"
      "assert n.broadcast_address == '192.168.0.3'\n"
      "assert n.netmask == '255.255.255.252'\n"
      "assert n.with_prefixlen == '192.168.0.0/30' and n.is_private\n"
      "assert ipaddress.in_network('192.168.0.2', '192.168.0.0/30')\n"
      "assert not ipaddress.in_network('10.0.0.1', '192.168.0.0/30')\n"
      "assert not ipaddress.in_network('::1', '0.0.0.0/0')\n"
      "assert ipaddress.in_network('10.9.9.9', '10.1.2.3/8')\n"
      "assert ipaddress.hosts('192.168.0.0/30') == "
      "['192.168.0.1', '192.168.0.2']\n"
      "assert len(ipaddress.hosts('10.0.0.0/8', limit=3)) == 3\n");
  expect_ok("pre-imported codecs: idna, punycode, cp1252, utf-16/32",
            "assert 'é.com'.encode('idna') == b'xn--9ca.com'\n"
            "assert 'é'.encode('cp1252') == b'\\xe9'\n"
            "assert 'a'.encode('utf-16').decode('utf-16') == 'a'\n"
            "assert 'a'.encode('utf-32').decode('utf-32') == 'a'\n"
            "assert 'é'.encode('latin-1') == b'\\xe9'\n");
  expect_ok("plain builtins work: sorted key, map, iter, next",
            "assert sorted([3, 1, 2], key=lambda x: -x) == [3, 2, 1]\n"
            "assert list(map(str, range(3))) == ['0', '1', '2']\n"
            "it = iter([1])\n"
            "assert next(it) == 1 and next(it, None) is None\n"
            "assert isinstance(1, int) and max([1, 5]) == 5\n");
}

/* ---- print capture ------------------------------------------------------ */

static int overflow_calls;

static void count_overflow(const void *arg) {
  if (arg == &overflow_calls)
    overflow_calls++;
}

static void test_print(void) {
  size_t len;
  bool over;
  guest_stdout_set_cap(1024, NULL, NULL);
  expect_ok("print with sep and end", "print('a', 1, sep='-', end='!\\n')\n"
                                      "print('é')\n");
  const char *s = guest_stdout(&len, &over);
  is_str(s, "a-1!\né\n", "captured text");
  ok(len == 8 && !over, "length 8, no overflow");
  expect_raise("print(file=...) is refused", "print('x', file=None)",
               "TypeError");

  guest_stdout_set_cap(8, NULL, NULL);
  expect_ok("print up to the cap exactly", "print('0123456')");
  expect_raise("print past the cap raises", "print('more')",
               "RuntimeError: print output over the 8-byte output cap");
  expect_raise("so does every later print, however short", "print(end='')",
               "RuntimeError");
  s = guest_stdout(&len, &over);
  is_str(s, "0123456\n", "output beyond the cap is dropped");
  ok(len == 8 && over, "overflow is reported");

  guest_stdout_set_cap(4, NULL, NULL);
  expect_raise("print of multi-byte text over the cap", "print('aéé')",
               "RuntimeError");
  s = guest_stdout(&len, &over);
  is_str(s, "aé", "cut back to a UTF-8 boundary");
  ok(len == 3 && over, "3 bytes kept, overflow reported");

  const char *const huge[] = {"print('x' * 100)", "print('a', end='y' * 100)",
                              "print('a', 'b', sep='z' * 100)"};
  for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
    overflow_calls = 0;
    guest_stdout_set_cap(16, count_overflow, &overflow_calls);
    expect_raise(huge[i], huge[i], "RuntimeError");
    expect_raise("a later print", "print(1)", "RuntimeError");
    ok(overflow_calls == 1, "on_overflow called once, with its arg (%d)",
       overflow_calls);
  }
  guest_stdout_set_cap(1 << 20, NULL, NULL);
}

/* ---- attacks without the AST layer ------------------------------------- */

static void test_attacks(void) {
  char why[512];
  int rc;
  /* os is loaded or not depending on what ran before; either way the
   * module is never handed out. posix always is (built into libpython). */
  bool os_loaded = PyDict_GetItemString(PyImport_GetModuleDict(), "os");
  rc = run(guest, "r = __import__('os')", why, sizeof why);
  ok(os_loaded ? rc == 0 && get(guest, "r") == Py_None
               : strncmp(why, "ImportError", 11) == 0,
     "A02 __import__('os') gives %s", os_loaded ? "None" : "ImportError");
  rc = run(guest, "import os\nr = os", why, sizeof why);
  ok(os_loaded ? rc == 0 && get(guest, "r") == Py_None
               : strncmp(why, "ImportError", 11) == 0,
     "A03 import os gives %s", os_loaded ? "None" : "ImportError");
  ok(run(guest, "import posix\nr = posix", why, sizeof why) == 0 &&
         get(guest, "r") == Py_None,
     "import of a loaded module (posix) gives None");
  ok(run(guest, "r = __import__('sys')", why, sizeof why) == 0 &&
         get(guest, "r") == Py_None,
     "__import__('sys') gives None");
  expect_raise("A04 import gc", "import gc", "ImportError: module 'gc'");
  expect_raise("A12 import pickle", "import pickle",
               "ImportError: module 'pickle'");
  expect_raise("A20 import ctypes", "import ctypes",
               "ImportError: module 'ctypes'");
  expect_raise("A07/A18 type is missing", "type(1)", "NameError");
  expect_raise("A08 getattr is missing", "getattr(1, 'real')", "NameError");
  expect_raise("A11 urllib.parse.sys", "import urllib.parse\nurllib.parse.sys",
               "AttributeError: 'urllib.parse' has no member 'sys'");
  expect_raise("datetime.sys", "import datetime\ndatetime.sys",
               "AttributeError: 'datetime' has no member 'sys'");
  expect_raise("json.codecs", "import json\njson.codecs",
               "AttributeError: 'json' has no member 'codecs'");
  ok(run(guest,
         "def handle(q):\n    return q\n"
         "r = handle.__globals__['__builtins__']['__import__']('posix')\n",
         why, sizeof why) == 0 &&
         get(guest, "r") == Py_None,
     "A14 __globals__['__builtins__']['__import__']('posix') gives None");
  expect_raise("A15 class statement", "class C:\n    pass\n",
               "NameError: __build_class__ not found");
  expect_raise("A22 open is missing", "open('/etc/hostname')", "NameError");
  expect_raise("A23 len.__self__", "len.__self__", "AttributeError");
  expect_raise("A23 json.dumps.__globals__",
               "import json\njson.dumps.__globals__", "AttributeError");
  expect_raise("json.loads(object_hook=)",
               "import json\njson.loads('{}', object_hook=print)",
               "TypeError: json.loads() got an unexpected keyword argument "
               "'object_hook'");
  expect_raise("json.loads(cls=)", "import json\njson.loads('{}', cls=dict)",
               "TypeError");
  expect_raise("json.dumps(default=)",
               "import json\njson.dumps({1}, default=list)", "TypeError");
  expect_raise("json.dumps of a generator (not plain data)",
               "import json\njson.dumps(x for x in [1])",
               "TypeError: json.dumps(): argument 1 is not plain data");
  expect_raise("re.sub with a callable repl",
               "import re\nre.sub('a', lambda m: 'b', 'a')",
               "TypeError: repl must be a string");
  expect_raise("re.subn with a callable repl",
               "import re\nre.subn('a', len, 'a')",
               "TypeError: repl must be a string");
  expect_raise("urlencode(quote_via=)",
               "import urllib.parse\n"
               "urllib.parse.urlencode({'a': 1}, quote_via=lambda *a: 'x')",
               "TypeError");
  expect_raise("urlencode with quote_via as 6th positional",
               "import urllib.parse\n"
               "urllib.parse.urlencode({'a': 1}, 0, '', None, None, len)",
               "TypeError: urllib.parse.urlencode() takes at most 5");
  expect_raise("hmac.digest with a callable digestmod",
               "import hmac, hashlib\nhmac.digest(b'k', b'm', hashlib.sha256)",
               "TypeError");
  expect_raise("hmac.digest with an unknown name",
               "import hmac\nhmac.digest(b'k', b'm', 'sha3_256')",
               "ValueError: unsupported digest");
  expect_raise("setting a namespace member", "import json\njson.loads = len",
               "AttributeError");
  expect_raise("setting an attribute on a proxy", "len.x = 1",
               "AttributeError");
  expect_raise(
      "setting a record field",
      "import urllib.parse\nurllib.parse.urlsplit('http://h').path = 1",
      "AttributeError");
  expect_raise("record has no geturl",
               "import urllib.parse\nurllib.parse.urlsplit('http://h').geturl",
               "AttributeError: SplitResult has no field 'geturl'");
  expect_raise("import of an unknown helper-like name", "import urllib.request",
               "ImportError");
}

/* The dunders that lead to modules, globals and code, and the public module
 * attributes, on each of the three types: all raise. */
static void test_total_getattr(void) {
  char why[512];
  int rc = run(guest,
               "import json, urllib.parse\n"
               "px = json.loads\nns = urllib.parse\n"
               "rec = urllib.parse.urlsplit('http://h/')\n",
               why, sizeof why);
  ok(rc == 0, "objects for the attribute probe");
  static const char *const names[] = {"__class__",
                                      "__self__",
                                      "__globals__",
                                      "__module__",
                                      "__wrapped__",
                                      "__call__",
                                      "__dict__",
                                      "__func__",
                                      "__code__",
                                      "__closure__",
                                      "__reduce__",
                                      "__reduce_ex__",
                                      "__init_subclass__",
                                      "__getattribute__",
                                      "__doc__",
                                      "__name__",
                                      "__qualname__",
                                      "__builtins__",
                                      "__dir__",
                                      "__subclasshook__",
                                      "sys",
                                      "geturl"};
  static const char *const objs[] = {"px", "ns", "rec", "len", "print"};
  for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) {
    PyObject *o = get(guest, objs[i]);
    if (!o) {
      PyObject *b = get(guest, "__builtins__");
      o = PyDict_GetItemString(b, objs[i]);
    }
    int leaked = 0;
    for (size_t j = 0; o && j < sizeof names / sizeof names[0]; j++) {
      PyObject *v = PyObject_GetAttrString(o, names[j]);
      if (v || !PyErr_ExceptionMatches(PyExc_AttributeError)) {
        printf("#   %s.%s answered\n", objs[i], names[j]);
        leaked++;
      }
      Py_XDECREF(v);
      PyErr_Clear();
    }
    ok(o && leaked == 0, "%s: every probed attribute raises AttributeError",
       objs[i]);
  }
}

/* A helper's exception arrives as a builtin class with plain args and no
 * traceback entry or context from inside the helper. */
static void test_helper_errors(PyObject *trusted) {
  char why[512];
  int rc = run(guest,
               "import json, re, binascii\n"
               "try:\n    json.loads('{')\nexcept ValueError as e:\n"
               "    e1 = e\n"
               "try:\n    re.compile('(')\nexcept Exception as e:\n    e2 = e\n"
               "try:\n    binascii.unhexlify('zz')\nexcept ValueError as e:\n"
               "    e3 = e\n",
               why, sizeof why);
  ok(rc == 0, "helper exceptions are catchable as ValueError/Exception (%s)",
     why);
  if (rc != 0)
    return;
  PyObject *e1 = get(guest, "e1"), *e2 = get(guest, "e2"),
           *e3 = get(guest, "e3");
  ok(Py_IS_TYPE(e1, (PyTypeObject *)PyExc_ValueError),
     "json.loads error is a plain ValueError, not JSONDecodeError");
  ok(Py_IS_TYPE(e2, (PyTypeObject *)PyExc_Exception),
     "re.compile error is a plain Exception, not re.error");
  ok(Py_IS_TYPE(e3, (PyTypeObject *)PyExc_ValueError),
     "binascii error is a plain ValueError");
  bool plain = true, clean = true;
  PyObject *errs[] = {e1, e2, e3};
  for (size_t i = 0; i < 3; i++) {
    PyObject *args = PyObject_GetAttrString(errs[i], "args");
    plain = plain && args && guest_is_plain(args);
    Py_XDECREF(args);
    clean = clean && PyException_GetContext(errs[i]) == NULL &&
            PyException_GetCause(errs[i]) == NULL;
  }
  ok(plain, "their args are plain data");
  ok(clean, "no __context__ or __cause__ from inside the helper");
  PyObject *tuple = PyTuple_Pack(3, e1, e2, e3);
  PyDict_SetItemString(trusted, "errs", tuple);
  Py_XDECREF(tuple);
  rc = run(trusted,
           "files = set()\n"
           "for e in errs:\n"
           "    tb = e.__traceback__\n"
           "    while tb is not None:\n"
           "        files.add(tb.tb_frame.f_code.co_filename)\n"
           "        tb = tb.tb_next\n"
           "files_ok = files == {'<string>'}\n",
           why, sizeof why);
  ok(rc == 0 && get(trusted, "files_ok") == Py_True,
     "tracebacks hold only the user's frames");
}

/* ---- reachability walk (docs/gate.md, Helpers) ------------------------- */

static PyObject *members_fn(PyObject *self, PyObject *o) {
  (void)self;
  PyObject *d = guest_public_members(o);
  if (!d && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  return d;
}

static PyMethodDef members_def = {"members", members_fn, METH_O, NULL};

static const char walker_src[] =
    "import types\n"
    "BAD = (types.ModuleType, types.FrameType, types.CodeType,\n"
    "       types.TracebackType, types.GeneratorType, types.CoroutineType,\n"
    "       types.AsyncGeneratorType, types.FunctionType, types.MethodType)\n"
    "def py_fn(v):\n"
    "    v = getattr(v, '__func__', getattr(v, 'fget', v))\n"
    "    return isinstance(v, types.FunctionType)\n"
    "def py_class(t):\n"
    "    return any(py_fn(v) for c in t.__mro__ for v in vars(c).values())\n"
    "def walk(roots, depth=4):\n"
    "    bad, keep, seen = [], [], set()\n"
    "    queue = [(p, o, 0) for p, o in roots.items()]\n"
    "    while queue:\n"
    "        path, o, d = queue.pop(0)\n"
    "        if id(o) in seen:\n"
    "            continue\n"
    "        seen.add(id(o))\n"
    "        keep.append(o)\n"
    "        if isinstance(o, BAD) or py_class(type(o)):\n"
    "            bad.append(path + ': ' + type(o).__name__)\n"
    "            continue\n"
    "        if d >= depth:\n"
    "            continue\n"
    "        items = members(o)\n"
    "        items = list(items.items()) if items is not None else []\n"
    "        for a in dir(o):\n"
    "            if not a.startswith('_'):\n"
    "                try:\n"
    "                    items.append((a, getattr(o, a)))\n"
    "                except Exception:\n"
    "                    pass\n"
    "        if isinstance(o, (list, tuple)):\n"
    "            items += [('[%d]' % i, v) for i, v in enumerate(o)]\n"
    "        if isinstance(o, dict):\n"
    "            items += [('[%r]' % (k,), v) for k, v in o.items()]\n"
    "        queue += [(path + '.' + a, v, d + 1) for a, v in items]\n"
    "    return bad, len(seen)\n"
    "bad, seen = walk(roots)\n";

static const char roots_src[] =
    "import json, re, base64, hashlib, hmac, math, struct, binascii\n"
    "import ipaddress, datetime, urllib.parse\n"
    "roots = {'json': json, 're': re, 'base64': base64, 'hashlib': hashlib,\n"
    "  'hmac': hmac, 'math': math, 'struct': struct, 'binascii': binascii,\n"
    "  'ipaddress': ipaddress, 'datetime': datetime, 'urllib': urllib,\n"
    "  'builtins': __builtins__,\n"
    "  'loads': json.loads('{\"a\": [1, {\"b\": null}]}'),\n"
    "  'dumps': json.dumps([1]),\n"
    "  'pattern': re.compile('(a)(?P<n>b)'),\n"
    "  'match': re.match('(a)(?P<n>b)', 'ab'),\n"
    "  'finditer': re.finditer('a', 'aa'), 'split': re.split(',', 'a,b'),\n"
    "  'subn': re.subn('a', 'b', 'a'),\n"
    "  'b64': base64.b64encode(b'x'), 'sha256': hashlib.sha256(b'x'),\n"
    "  'md5': hashlib.md5(), 'blake2b': hashlib.blake2b(),\n"
    "  'hmac_digest': hmac.digest(b'k', b'm', 'sha1'),\n"
    "  'unpack': struct.unpack('>H', b'\\x00\\x01'),\n"
    "  'hexlify': binascii.hexlify(b'a'), 'sqrt': math.sqrt(2),\n"
    "  'dt': datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc),\n"
    "  'today': datetime.date.today(), 'td': datetime.timedelta(1),\n"
    "  'utc': datetime.timezone.utc,\n"
    "  'urlsplit': urllib.parse.urlsplit('http://u:p@h:1/p?q#f'),\n"
    "  'urlparse': urllib.parse.urlparse('http://h/p;x?q'),\n"
    "  'parse_qs': urllib.parse.parse_qs('a=1'),\n"
    "  'parse_qsl': urllib.parse.parse_qsl('a=1'),\n"
    "  'ip4': ipaddress.ip_address('1.2.3.4'),\n"
    "  'ip6': ipaddress.ip_address('::1'),\n"
    "  'net': ipaddress.ip_network('10.0.0.0/8'),\n"
    "  'hosts': ipaddress.hosts('10.0.0.0/30')}\n"
    "def catch(f, *a, **k):\n"
    "    try:\n"
    "        f(*a, **k)\n"
    "    except Exception as e:\n"
    "        return e\n"
    "roots['e_json'] = catch(json.loads, '{')\n"
    "roots['e_re'] = catch(re.compile, '(')\n"
    "roots['e_ip'] = catch(ipaddress.ip_address, 'x')\n"
    "roots['e_b64'] = catch(base64.b64decode, '@', validate=True)\n"
    "try:\n    json.sys\nexcept AttributeError as e:\n"
    "    roots['e_ns'] = e\n"
    "try:\n    len.__self__\nexcept AttributeError as e:\n"
    "    roots['e_proxy'] = e\n";

static void test_walk(PyObject *trusted) {
  char why[512];
  int rc = run(guest, roots_src, why, sizeof why);
  ok(rc == 0, "guest builds the walk roots (%s)", why);
  if (rc != 0)
    return;
  PyObject *roots = get(guest, "roots");
  ok(PyDict_Size(roots) >= 44, "%zd roots: namespaces, results, exceptions",
     PyDict_Size(roots));
  PyObject *fn = PyCFunction_NewEx(&members_def, NULL, NULL);
  PyDict_SetItemString(trusted, "members", fn);
  Py_XDECREF(fn);
  PyDict_SetItemString(trusted, "roots", roots);
  rc = run(trusted, walker_src, why, sizeof why);
  ok(rc == 0, "walker ran (%s)", why);
  if (rc != 0)
    return;
  PyObject *bad = get(trusted, "bad");
  long seen = PyLong_AsLong(get(trusted, "seen"));
  ok(PyList_Size(bad) == 0,
     "no public path (depth 4) reaches a module, frame, code, traceback, "
     "generator, Python function or Python-class instance (%ld objects)",
     seen);
  for (Py_ssize_t i = 0; i < PyList_Size(bad) && i < 20; i++)
    printf("#   %s\n", PyUnicode_AsUTF8(PyList_GET_ITEM(bad, i)));
  ok(seen > 500, "the walk covered %ld objects", seen);
  /* Negative control: the walker finds A09's path on the real namedtuple
   * (geturl is a bound Python method). */
  rc = run(trusted,
           "import urllib.parse\n"
           "bad, seen = walk({'real': urllib.parse.urlsplit('http://h/')})\n",
           why, sizeof why);
  ok(rc == 0 && PyList_Size(get(trusted, "bad")) > 0,
     "control: the walker flags the real SplitResult");
}

/* ---- builtins layer off ------------------------------------------------- */

static void test_unrestricted(void) {
  PyObject *g = NULL;
  struct coil_error err = {0};
  int rc = guest_globals(all_helpers, N_HELPERS, false, &g, &err);
  ok(rc == 0, "unrestricted globals (%s)", rc ? err.msg : "ok");
  if (rc != 0)
    return;
  char why[512];
  rc = run(g,
           "import json, urllib.parse\n"
           "r = repr(json)\nu = repr(urllib.parse)\n"
           "os = __import__('os')\nt = type(1)\n",
           why, sizeof why);
  ok(rc == 0, "real builtins present (%s)", why);
  if (rc == 0) {
    is_str(PyUnicode_AsUTF8(get(g, "r")), "<coil namespace json>",
           "helpers are still namespaces");
    is_str(PyUnicode_AsUTF8(get(g, "u")), "<coil namespace urllib.parse>",
           "dotted helpers too");
    ok(PyModule_Check(get(g, "os")), "other imports are real (layer off)");
  }
  Py_DECREF(g);
}

int main(void) {
  if (pyembed_start(NULL) < 0) {
    printf("Bail out! Python did not initialise\n");
    return 1;
  }
  struct coil_error err = {0};
  int rc = guest_preimport(all_helpers, N_HELPERS, true, &err);
  ok(rc == 0, "preimport every helper (%s)", rc ? err.msg : "ok");
  const char *bogus[] = {"os"};
  ok(guest_preimport(bogus, 1, true, &err) < 0 &&
         strstr(err.msg, "unknown helper"),
     "an unknown helper name is an error: %s", err.msg);
  rc = guest_globals(all_helpers, N_HELPERS, true, &guest, &err);
  ok(rc == 0, "restricted globals (%s)", rc ? err.msg : "ok");
  if (rc != 0)
    return tap_done();
  PyObject *trusted = PyDict_New();
  PyDict_SetItemString(trusted, "__builtins__", PyEval_GetBuiltins());

  test_builtins();
  test_benign();
  test_print();
  test_attacks();
  test_total_getattr();
  test_helper_errors(trusted);
  test_walk(trusted);
  test_unrestricted();

  Py_DECREF(trusted);
  Py_CLEAR(guest);
  ok(Py_FinalizeEx() == 0, "interpreter finalises cleanly");
  return tap_done();
}
