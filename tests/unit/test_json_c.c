/* json_c.c against the stdlib json module: the same corpus through both,
 * values (types, float bits, nan), output strings and error messages
 * compared; plus a fixed-seed fuzz of broken documents, the nesting limits,
 * and that the json helper imports no stdlib json (nor re). */
#include <Python.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "guest.h"
#include "json_c.h"
#include "pyembed.h"
#include "tap.h"

/* Runs src in g; on an exception prints it and returns -1. */
static int run(PyObject *g, const char *src) {
  PyObject *r = PyRun_String(src, Py_file_input, g, g);
  if (r) {
    Py_DECREF(r);
    return 0;
  }
  char why[4096];
  pyembed_exc(why, sizeof why);
  printf("#   raised %s\n", why);
  return -1;
}

/* ok() on the list g[name] being empty; prints its first entries. */
static void none_in(PyObject *g, const char *name, const char *what) {
  PyObject *l = PyDict_GetItemString(g, name);
  Py_ssize_t n = l && PyList_Check(l) ? PyList_GET_SIZE(l) : -1;
  ok(n == 0, "%s (%zd mismatches)", what, n);
  for (Py_ssize_t i = 0; i < n && i < 10; i++) {
    PyObject *r = PyObject_Repr(PyList_GET_ITEM(l, i));
    printf("#   %s\n", r ? PyUnicode_AsUTF8(r) : "?");
    Py_XDECREF(r);
    PyErr_Clear();
  }
}

static PyMethodDef loads_def = {"loads",
                                (PyCFunction)(void (*)(void))json_c_loads,
                                METH_VARARGS | METH_KEYWORDS, NULL};
static PyObject *strict(PyObject *self, PyObject *s) {
  (void)self;
  if (!PyUnicode_Check(s))
    return PyErr_Format(PyExc_TypeError, "str expected");
  return json_c_parse_strict(s);
}

static PyMethodDef strict_def = {"strict", strict, METH_O, NULL};
static PyMethodDef dumps_def = {"dumps",
                                (PyCFunction)(void (*)(void))json_c_dumps,
                                METH_VARARGS | METH_KEYWORDS, NULL};

/* Before anything imports json: the helper must not. */
static void test_helper_imports_nothing(void) {
  const char *const names[] = {"json"};
  struct coil_error err = {0};
  int rc = guest_preimport(names, 1, false, &err);
  ok(rc == 0, "preimport of the json helper (%s)", rc ? err.msg : "ok");
  PyObject *g = NULL;
  rc = guest_globals(names, 1, true, &g, &err);
  ok(rc == 0, "restricted globals with json (%s)", rc ? err.msg : "ok");
  if (rc != 0)
    return;
  rc = run(g, "import json\n"
              "r = json.loads(json.dumps({'a': [1, 2.5, '\\u00e9', None]},\n"
              "               sort_keys=True, indent=2))\n"
              "assert r == {'a': [1, 2.5, '\\u00e9', None]}, r\n"
              "assert json.loads(b'\\xef\\xbb\\xbf[1]') == [1]\n"
              "assert json.loads('[1]'.encode('utf-16')) == [1]\n"
              "assert json.loads('[1]'.encode('utf-32-le')) == [1]\n"
              "assert json.dumps([1], indent=None) == '[1]'\n"
              "assert json.dumps((1, 'x')) == '[1, \"x\"]'\n");
  ok(rc == 0, "guest: import json; loads/dumps work, UTF-16/32 bytes too");
  PyObject *mods = PyImport_GetModuleDict();
  const char *const absent[] = {"json",
                                "json.decoder",
                                "json.scanner",
                                "re",
                                "enum",
                                "encodings.utf_16",
                                "encodings.utf_32",
                                "encodings.utf_16_le",
                                "encodings.utf_8_sig"};
  bool clean = true;
  for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
    if (PyDict_GetItemString(mods, absent[i])) {
      printf("#   imported: %s\n", absent[i]);
      clean = false;
    }
  ok(clean, "nothing imported: no json, re, enum or codec module");
  char src[] = "import json\njson.dumps(x for x in [1])";
  PyObject *r = PyRun_String(src, Py_file_input, g, g);
  ok(!r && PyErr_ExceptionMatches(PyExc_TypeError),
     "guest: the proxy still screens for plain data");
  Py_XDECREF(r);
  PyErr_Clear();
  Py_DECREF(g);
}

static const char prelude[] =
    "import json, math, random\n"
    "def canon(v):\n"
    "    t = type(v).__name__\n"
    "    if isinstance(v, float):\n"
    "        return (t, 'nan' if v != v else v.hex())\n"
    "    if isinstance(v, list):\n"
    "        return (t, [canon(x) for x in v])\n"
    "    if isinstance(v, dict):\n"
    "        return (t, [(canon(k), canon(x)) for k, x in v.items()])\n"
    "    return (t, v)\n"
    "def outcome(f, *a, **k):\n"
    "    try:\n"
    "        return ('ok', canon(f(*a, **k)))\n"
    "    except RecursionError as e:\n"
    "        return ('deep',)\n"
    "    except Exception as e:\n"
    "        t = type(e)\n"
    "        while t.__module__ != 'builtins':\n"
    "            t = t.__base__\n"
    "        return ('err', t.__name__, str(e))\n"
    "def differ(cases, mine, ref):\n"
    "    bad = []\n"
    "    for a, k in cases:\n"
    "        m, r = outcome(mine, *a, **k), outcome(ref, *a, **k)\n"
    "        if m != r:\n"
    "            bad.append((a, k, m, r))\n"
    "    return bad\n";

static const char loads_corpus[] =
    "docs = [\n"
    "  '{}', '[]', '\"\"', '0', '-0', '1', '-1', '123456789012345678',\n"
    "  '1234567890123456789', '-9223372036854775809', '9' * 400,\n"
    "  '1.5', '0.1', '-0.0', '1e308', '1e309', '-1e400', '2.5e-324', '1E2',\n"
    "  '1e+2', '1e-2', '1.0e5', 'NaN', 'Infinity', '-Infinity', '[NaN, 1]',\n"
    "  'true', 'false', 'null', ' \\t\\n\\r 1 \\r\\n', '{\"a\": 1, \"a\": "
    "2}',\n"
    "  '{\"b\": [1, 2.5, null, \"x\"], \"a\": true}',\n"
    "  '[[[[[]]]], {\"\": {\"\": [{}]}}]',\n"
    "  "
    "'\"\\\\u00e9\\\\ud83d\\\\ude00\\\\u0000\\\\\"\\\\\\\\\\\\/\\\\b\\\\f\\\\n"
    "\\\\r\\\\t\"',\n"
    "  '{\"a\\\\u0000b\": 1, \"\\\\u0000\": \"\\\\u0000\"}', '{\"\\\\ud800\": "
    "1}',\n"
    "  '[\"evil.com\\\\u0000.good.example\"]',\n"
    "  '\"\\\\ud800\"', '\"\\\\udc00\\\\ud800x\"', '\"\\\\ud800\\\\u0041\"',\n"
    "  '\"\\\\ud800\\\\ud800\\\\udc00\"', '\"\\\\uD83D\\\\uDE00\"',\n"
    "  '\"\\u00e9\\U0001f600\\ud800 raw\"', '{\"\\u00e9\": \"\\u4e2d\"}',\n"
    "  '', ' ', '[', ']', '{', '}', '[1,]', '{\"a\":1,}', '[1 2]',\n"
    "  '{\"a\" 1}', '{\"a\":1 \"b\":2}', '{1: 2}', \"{'a': 1}\", '[1,,2]',\n"
    "  '\"abc', '\"a\\\\', '\"\\\\x\"', '\"\\\\u12\"', '\"\\\\u00zz\"',\n"
    "  '\"\\\\u0041', '\"\\\\ud800\\\\uzz00\"', '\"\\\\ud800\\\\u00', "
    "'\"\\x01\"',\n"
    "  '\"a\\nb\"', '\"\\x7f\"', '-', '-I', '-Inf', '1.', '.5', '1e', '1e+',\n"
    "  '01', '00', '-01', '1.5.2', '+1', 'nul', 'tru', 'nulll', 'NaNa',\n"
    "  'Infinit', 'True', 'None', '1 2', '[1]x', '[1]\\n\\nx', '\\n\\n  [1,\\n "
    "2,]',\n"
    "  '\\ufeff[1]', '[1]\\ufeff', '[\"\\u00e9\", 1,]', '[\"\\U0001f600\", "
    "x]',\n"
    "  '1' * 5000, '[' + '1' * 5000 + ']', '[1e' + '9' * 50 + ']',\n"
    "  '[' * 500 + ']' * 500, '{\"a\":' * 300 + '1' + '}' * 300,\n"
    "]\n"
    "cases = [((d,), {}) for d in docs]\n"
    "cases += [((d.encode('utf-8'),), {}) for d in docs if '\\ud800' not in "
    "d]\n"
    "cases += [((bytearray(d.encode('utf-8')),), {}) for d in docs[:40]\n"
    "          if '\\ud800' not in d]\n"
    "for enc in ('utf-8-sig', 'utf-16', 'utf-16-le', 'utf-16-be', 'utf-32',\n"
    "            'utf-32-le', 'utf-32-be'):\n"
    "    for d in ('{\"k\": 1}', '[\"\\u00e9\\U0001f600\"]', '1', '12', '',\n"
    "              '\"x\"', '[1,]'):\n"
    "        cases.append(((d.encode(enc),), {}))\n"
    "bin = [b'\\xff', b'[\"\\xff\"]', b'\\x00', b'\\x00\\x00', b'1\\x00',\n"
    "       b'\\x00\\x001\\x00', b'[\"\\xed\\xa0\\x80\"]', "
    "b'\\xfe\\xff\\x00',\n"
    "       b'\\xef\\xbb\\xbf\\xef\\xbb\\xbf1', b'\\xc3']\n"
    "cases += [((b,), {}) for b in bin]\n"
    "cases += [((x,), {}) for x in (1, None, [], 1.5, {'a': 1})]\n"
    "bad = differ(cases, my_loads, json.loads)\n"
    "n_cases = len(cases)\n";

static const char loads_fuzz[] =
    "rng = random.Random(1234)\n"
    "seeds = ['{\"a\": [1, -2.5e3, \"x\\\\ny\", true, null], \"b\": {}}',\n"
    "         '[\"\\\\ud83d\\\\ude00\", \"\\u00e9\", 0, -0.0, NaN, 1E-5]',\n"
    "         '{\"k\": {\"l\": [[], [{}], \"\\\\u0041\\\\\\\\\"]}}']\n"
    "alphabet = list('{}[]:,\"\\\\ \\n01-+.eEtrufalsnNI\\u00e9') + ['\\\\u', "
    "'ud8']\n"
    "cases = []\n"
    "for i in range(20000):\n"
    "    s = list(rng.choice(seeds))\n"
    "    for _ in range(rng.randint(1, 3)):\n"
    "        op = rng.randrange(3)\n"
    "        p = rng.randrange(len(s) + 1)\n"
    "        if op == 0 and p < len(s):\n"
    "            del s[p]\n"
    "        elif op == 1:\n"
    "            s.insert(p, rng.choice(alphabet))\n"
    "        else:\n"
    "            s = s[:p]\n"
    "    cases.append(((''.join(s),), {}))\n"
    "bad = differ(cases, my_loads, json.loads)\n"
    "n_ok = sum(outcome(json.loads, *a)[0] == 'ok' for a, k in cases)\n";

static const char dumps_corpus[] =
    "big = 10 ** 100\n"
    "objs = [\n"
    "  None, True, False, 0, -1, 2 ** 63, -2 ** 63 - 1, big, -big,\n"
    "  1.5, 0.1, -0.0, 0.0, 1e308, 1e-320, 5e-324, 1e16, 123456789.0,\n"
    "  float('nan'), float('inf'), float('-inf'), '', 'abc',\n"
    "  "
    "'\"\\\\/\\n\\r\\t\\b\\f\\x00\\x01\\x1f\\x7f\\x80\\u00e9\\u20ac\\uffff',\n"
    "  '\\U0001f600\\U0010ffff\\ud800\\udfff', [], {}, (), [[]], [{}], {'a': "
    "[]},\n"
    "  [1, 'a', None, True, 2.5], (1, (2, (3,))), [[1, [2, [3, {}]]], {}],\n"
    "  {'b': 1, 'a': [1, 2, {'z': None, 'y': ()}], 'c': {'x': {}}},\n"
    "  {1: 'int', 2.5: 'float', True: 't', False: 'f', None: 'n'},\n"
    "  {float('nan'): 1, float('inf'): 2, float('-inf'): 3, -0.0: 4},\n"
    "  {big: 1, -5: 2, '\\u00e9': 3, '\\U0001f600': 4},\n"
    "  {'b': 1, 'a': 2, 'c': {'z': 1, 'y': [{'q': 1, 'p': 2}]}},\n"
    "  {3: 1, 1: 2, 2: 3}, {1: 1, 'a': 2}, {(1, 2): 3}, {'a': {(1,): 2}},\n"
    "  b'x', [1, b'x'], {'a': bytearray(b'x')}, {1, 2}, 1j, [frozenset()],\n"
    "  len, [print], 10 ** 4400, [10 ** 4400], {10 ** 4400: 1},\n"
    "  [[[[[[[[[[1]]]]]]]]]], ['x' * 1000] * 50,\n"
    "]\n"
    "cyc = [1]; cyc.append(cyc)\n"
    "cd = {}; cd['a'] = [cd]\n"
    "objs += [cyc, cd, [cyc], {'x': cd}]\n"
    "cases = []\n"
    "for o in objs:\n"
    "    for kw in ({}, {'sort_keys': True}, {'indent': 2},\n"
    "               {'indent': 2, 'sort_keys': True}, {'indent': '\\t'},\n"
    "               {'indent': 0}, {'indent': ''}, {'indent': -3},\n"
    "               {'indent': '\\u00e9'}, {'indent': True},\n"
    "               {'sort_keys': 1}, {'indent': None}):\n"
    "        cases.append(((o,), kw))\n"
    "cases.append((([1],), {'indent': 1.5}))\n"
    "def as_str(f):\n"
    "    def g(*a, **k):\n"
    "        r = f(*a, **k)\n"
    "        assert type(r) is str\n"
    "        return r\n"
    "    return g\n"
    "bad = differ(cases, as_str(my_dumps), json.dumps)\n"
    "for a, k in ((([1],), {'default': str}), (([1], 2), {}), ((), {}),\n"
    "             (('[1]', 2), {}), (('[1]',), {'cls': None})):\n"
    "    f = my_loads if a and type(a[0]) is str else my_dumps\n"
    "    if outcome(f, *a, **k)[:2] != ('err', 'TypeError'):\n"
    "        bad.append(('signature', a, k))\n"
    "n_cases = len(cases)\n";

static const char dumps_roundtrip[] =
    "rng = random.Random(99)\n"
    "def gen(d):\n"
    "    r = rng.randrange(10 if d < 4 else 7)\n"
    "    if r == 0: return rng.randint(-10 ** 30, 10 ** 30)\n"
    "    if r == 1: return rng.uniform(-1e300, 1e300) * rng.random()\n"
    "    if r == 2: return ''.join(chr(rng.choice([rng.randrange(128),\n"
    "                   rng.randrange(0x110000)])) for _ in "
    "range(rng.randrange(8)))\n"
    "    if r == 3: return rng.choice([None, True, False])\n"
    "    if r in (4, 5, 6): return rng.randrange(1000) / 8\n"
    "    if r == 7: return [gen(d + 1) for _ in range(rng.randrange(4))]\n"
    "    if r == 8: return tuple(gen(d + 1) for _ in range(rng.randrange(3)))\n"
    "    return {rng.choice(['a', 'b', 'c', 'd', '\\u00e9', 'z' * 3]): gen(d + "
    "1)\n"
    "            for _ in range(rng.randrange(5))}\n"
    "cases = []\n"
    "for i in range(3000):\n"
    "    cases.append(((gen(0),), rng.choice([{}, {'sort_keys': True},\n"
    "                  {'indent': 2}, {'indent': '\\t', 'sort_keys': "
    "True}])))\n"
    "bad = differ(cases, my_dumps, json.dumps)\n"
    "bad += differ([((json.dumps(a[0], **k),), {}) for a, k in cases],\n"
    "              my_loads, json.loads)\n";

static const char limits_src[] =
    "def err(f, *a):\n"
    "    try:\n"
    "        f(*a)\n"
    "    except Exception as e:\n"
    "        return type(e).__name__ + ': ' + str(e)\n"
    "deep_loads = err(my_loads, '[' * 100000)\n"
    "deep_loads_obj = err(my_loads, '{\"a\":' * 100000)\n"
    "at_limit = my_loads('[' * LIMIT + ']' * LIMIT)\n"
    "over_limit = err(my_loads, '[' * (LIMIT + 1) + ']' * (LIMIT + 1))\n"
    "d = []\n"
    "for _ in range(100000):\n"
    "    d = [d]\n"
    "deep_dumps = err(my_dumps, d)\n"
    "d = []\n"
    "for _ in range(LIMIT - 1):\n"
    "    d = [d]\n"
    "at_limit_dumps = my_dumps(d) == '[' * LIMIT + ']' * LIMIT\n"
    "long_cycle = []\n"
    "x = long_cycle\n"
    "for _ in range(5):\n"
    "    x.append([])\n"
    "    x = x[0]\n"
    "x.append(long_cycle)\n"
    "cycle = err(my_dumps, {'k': long_cycle}, )\n"
    "cycle_indent = err(lambda o: my_dumps(o, indent=2), long_cycle)\n";

/* json_c_parse_strict (the request parser) against json.loads: the same
 * for every corpus and fuzz document without NaN/Infinity or a surrogate
 * escape, and those refused with positions, \\u0000 kept. */
static const char strict_src[] =
    "import re\n"
    "def has_surrogate(v):\n"
    "    if isinstance(v, str):\n"
    "        return any(0xd800 <= ord(c) <= 0xdfff for c in v)\n"
    "    if isinstance(v, list):\n"
    "        return any(has_surrogate(x) for x in v)\n"
    "    if isinstance(v, dict):\n"
    "        return any(has_surrogate(k) or has_surrogate(x) for k, x in "
    "v.items())\n"
    "    return False\n"
    "def refused(d):\n"
    "    return 'NaN' in d or 'Infinity' in d or "
    "re.search(r'\\\\u[dD][89a-fA-F]', d)\n"
    "plain = [d for d in docs + [a[0] for a, k in cases]\n"
    "         if isinstance(d, str) and not refused(d)]\n"
    "bad = differ([((d,), {}) for d in plain], my_strict, json.loads)\n"
    "n_plain = len(plain)\n"
    "explicit = [\n"
    "    ('\"evil.com\\\\u0000.good.example\"', ('ok', "
    "'evil.com\\x00.good.example')),\n"
    "    ('{\"a\\\\u0000b\": \"\\\\u0000\", \"\\\\u0000\": 1}',\n"
    "     ('ok', {'a\\x00b': '\\x00', '\\x00': 1})),\n"
    "    ('[\"\\\\ud83d\\\\ude00\", \"\\\\uD83D\\\\uDE00\"]', ('ok', "
    "['\\U0001f600'] * 2)),\n"
    "    ('\"\\\\ud800\"', 'Unpaired surrogate \\\\ud800 in string at: '\n"
    "     'line 1 column 2 (char 1)'),\n"
    "    ('{\"\\\\udc00\": 1}', 'Unpaired surrogate \\\\udc00 in string at: '\n"
    "     'line 1 column 3 (char 2)'),\n"
    "    ('[\"x\", \"ab\\\\ud800\\\\u0041\"]', 'Unpaired surrogate \\\\ud800 "
    "in string at: '\n"
    "     'line 1 column 10 (char 9)'),\n"
    "    ('\"\\\\ud800\\\\ud800\\\\udc00\"', 'Unpaired surrogate \\\\ud800 in "
    "string at: '\n"
    "     'line 1 column 2 (char 1)'),\n"
    "    ('\"\\\\udfff\\\\ud800\"', 'Unpaired surrogate \\\\udfff in string "
    "at: '\n"
    "     'line 1 column 2 (char 1)'),\n"
    "    ('[NaN]', 'Expecting value: line 1 column 2 (char 1)'),\n"
    "    ('Infinity', 'Expecting value: line 1 column 1 (char 0)'),\n"
    "    ('{\"a\": -Infinity}', 'Expecting value: line 1 column 7 (char 6)'),\n"
    "]\n"
    "for d, want in explicit:\n"
    "    got = outcome(my_strict, d)\n"
    "    if isinstance(want, str):\n"
    "        want = ('err', 'ValueError', want)\n"
    "    else:\n"
    "        want = ('ok', canon(want[1]))\n"
    "    if got != want:\n"
    "        bad.append((d, got, want))\n";

static PyObject *get(PyObject *g, const char *name) {
  return PyDict_GetItemString(g, name);
}

static void test_differential(void) {
  PyObject *g = PyDict_New();
  PyDict_SetItemString(g, "__builtins__", PyEval_GetBuiltins());
  PyObject *l = PyCFunction_NewEx(&loads_def, NULL, NULL);
  PyObject *d = PyCFunction_NewEx(&dumps_def, NULL, NULL);
  PyDict_SetItemString(g, "my_loads", l);
  PyDict_SetItemString(g, "my_dumps", d);
  Py_XDECREF(l);
  Py_XDECREF(d);
  PyObject *st = PyCFunction_NewEx(&strict_def, NULL, NULL);
  PyDict_SetItemString(g, "my_strict", st);
  Py_XDECREF(st);
  PyObject *lim = PyLong_FromLong(JSON_C_MAX_DEPTH);
  PyDict_SetItemString(g, "LIMIT", lim);
  Py_XDECREF(lim);
  ok(run(g, prelude) == 0, "prelude");

  if (run(g, loads_corpus) == 0)
    none_in(g, "bad",
            "loads: corpus (str, bytes, BOM, UTF-16/32, errors) "
            "as the stdlib");
  else
    ok(0, "loads corpus ran");
  if (run(g, loads_fuzz) == 0) {
    none_in(g, "bad",
            "loads: 20000 mutated documents as the stdlib "
            "(value or error message and position)");
    long n_ok = PyLong_AsLong(get(g, "n_ok"));
    ok(n_ok > 500 && n_ok < 19500, "fuzz mixes valid and invalid (%ld valid)",
       n_ok);
  } else {
    ok(0, "loads fuzz ran");
  }
  if (run(g, strict_src) == 0) {
    none_in(g, "bad",
            "strict (request) parser: as the stdlib, but NaN/Infinity and "
            "lone surrogates refused, \\u0000 kept");
    long n = PyLong_AsLong(get(g, "n_plain"));
    ok(n > 10000, "strict parser compared on %ld documents", n);
  } else {
    ok(0, "strict parser corpus ran");
  }
  if (run(g, dumps_corpus) == 0)
    none_in(g, "bad",
            "dumps: corpus x indent/sort_keys as the stdlib "
            "(output or error)");
  else
    ok(0, "dumps corpus ran");
  if (run(g, dumps_roundtrip) == 0)
    none_in(g, "bad", "dumps/loads: 3000 random values as the stdlib");
  else
    ok(0, "dumps roundtrip ran");

  if (run(g, limits_src) == 0) {
    char want[96];
    snprintf(want, sizeof want, "ValueError: Nesting deeper than %d levels",
             JSON_C_MAX_DEPTH);
    PyObject *s = get(g, "deep_loads");
    const char *m = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "";
    ok(strncmp(m, want, strlen(want)) == 0, "loads of 100000 '[': %s", m);
    s = get(g, "deep_loads_obj");
    m = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "";
    ok(strncmp(m, want, strlen(want)) == 0, "loads of 100000 '{\"a\":': %s", m);
    ok(PyList_Check(get(g, "at_limit")), "loads of %d levels works",
       JSON_C_MAX_DEPTH);
    s = get(g, "over_limit");
    m = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "";
    ok(strncmp(m, want, strlen(want)) == 0, "one more level: %s", m);
    s = get(g, "deep_dumps");
    m = s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "";
    ok(strcmp(m, want) == 0, "dumps of 100000 levels: %s", m);
    ok(get(g, "at_limit_dumps") == Py_True, "dumps of %d levels works",
       JSON_C_MAX_DEPTH);
    s = get(g, "cycle");
    is_str(s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "",
           "ValueError: Circular reference detected",
           "dumps of a 6-list cycle");
    s = get(g, "cycle_indent");
    is_str(s && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : "",
           "ValueError: Circular reference detected", "same with indent");
  } else {
    ok(0, "limits ran");
  }
  Py_DECREF(g);
}

int main(void) {
  if (pyembed_start(NULL) < 0) {
    printf("Bail out! Python did not initialise\n");
    return 1;
  }
  test_helper_imports_nothing();
  test_differential();
  ok(Py_FinalizeEx() == 0, "interpreter finalises cleanly");
  return tap_done();
}
