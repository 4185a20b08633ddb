/* The helper namespaces user code can import (docs/gate.md, Helpers). Each
 * is a coil.namespace whose members are listed here; nothing else of the
 * real module is reachable. How each member is exposed, and what it returns:
 *
 * helper        member                       wrap  returns
 * ------------  ---------------------------  ----  -----------------------
 * json          loads(s)                     IMPL  dict/list/str/...
 *               dumps(o, indent, sort_keys)  IMPL  str
 *   C code of its own (json_c.c), no stdlib module: importing json costs
 *   more than the rest of a run; no object_hook/cls/default/parse_*
 * re            compile(pattern, flags)      PY    Pattern (C)
 *               match search fullmatch       IMPL  Match (C) or None
 *               findall split                IMPL  list
 *               finditer                     IMPL  list of Match
 *               sub subn                     IMPL  str / (str, int)
 *               escape(pattern)              PY    str
 *               A ASCII I IGNORECASE L       INT   int
 *               LOCALE M MULTILINE NOFLAG
 *               S DOTALL U UNICODE X VERBOSE
 *   IMPL: re.compile, then the Pattern's C method, so no frame of module
 *   re sits under user code; sub/subn take a str/bytes repl only
 *   ("repl must be a string"); flags are plain ints, not RegexFlag (a
 *   Python class); re.error is not exposed: catch ValueError/Exception
 * base64        b64encode b64decode          PY    bytes
 *               standard_b64encode/decode
 *               urlsafe_b64encode/decode
 *               b32encode b32decode
 *               b32hexencode b32hexdecode
 *               b16encode b16decode
 *               b85encode b85decode
 *   functions only: the module leaks re, struct, binascii
 * hashlib       md5 sha1 sha256 sha512       C     HASH (C)
 *               blake2b                      C     blake2b (C)
 *   no hashlib.new: OpenSSL fetches by any name
 * hmac          digest(key, msg, name)       IMPL  bytes
 *               compare_digest(a, b)         C     bool
 *   name is a str, one of the hashlib names above: no digestmod callables
 * binascii      hexlify unhexlify crc32      C     bytes / int
 * struct        pack unpack unpack_from      C     bytes / tuple / int
 *               calcsize
 * math          every public function        C     float / int
 *               e inf nan pi tau             DATA  float
 * datetime      datetime date timedelta      TYPE  C objects
 *               timezone
 *   the C types of _datetime as themselves: constructors, classmethods
 *   (strptime, fromisoformat, now) and isinstance need the type
 * urllib.parse  urlsplit urlparse            IMPL  record
 *               urlunsplit urlunparse        PY    str
 *               urljoin quote quote_plus     PY    str
 *               quote_from_bytes unquote
 *               unquote_plus
 *               unquote_to_bytes             PY    bytes
 *               parse_qs parse_qsl           PY    dict / list
 *               urlencode                    PY    str
 *   records: SplitResult (scheme netloc path query fragment) and
 *   ParseResult (+ params after path) as the tuple part, plus username
 *   password hostname port read eagerly (port None when absent or
 *   invalid); no geturl: use urlunsplit/urlunparse, which take a record;
 *   urlencode has no quote_via (a callable run from urllib.parse: A05)
 * ipaddress     ip_address(a)                IMPL  record
 *               ip_network(a, strict=True)   IMPL  record
 *               in_network(addr, net)        IMPL  bool
 *               hosts(net, limit=256)        IMPL  list of str
 *   IPAddress: version compressed exploded packed is_private is_global
 *   is_loopback is_multicast is_reserved is_link_local is_unspecified;
 *   IPNetwork: network_address broadcast_address netmask (str) prefixlen
 *   num_addresses version with_prefixlen is_private; in_network and hosts
 *   read net with strict=False; another IP version is not in a network;
 *   hosts() is a generator, materialised up to limit; in_network answers
 *   two plain address strings in C (a fresh child's stdlib calls write
 *   pages of their own) and leaves anything else to the stdlib
 *
 * PY    the stdlib's Python function, proxied: positional count and
 *       keywords as in its row below, every argument plain data (a user
 *       callable run from it would have the helper's frame under it)
 * C     the stdlib's C callable, proxied; arguments passed through
 * IMPL  a C function here, proxied: calls the stdlib with checked
 *       arguments, returns plain data or a record
 * TYPE  the C type itself; INT an exact int; DATA a plain constant
 * Every proxied helper also rebuilds escaping exceptions as builtin
 * exceptions with plain args, no traceback and no context (proxy.c). */
#include "embed.h"
#include "guest.h"
#include "json_c.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

enum wrap { W_PY, W_C, W_IMPL, W_TYPE, W_INT, W_DATA };

struct member {
  const char *name;
  enum wrap how;
  struct guest_callspec spec; /* W_PY, W_IMPL */
  PyMethodDef def;            /* W_IMPL */
  const char *self;           /* W_IMPL: module attribute given as self;
                                 NULL: the module */
};

#define PY(n, pos, kw)                                                         \
  { n, W_PY, {pos, kw, true}, {0}, NULL }
#define C(n)                                                                   \
  { n, W_C, {-1, NULL, false}, {0}, NULL }
/* plain: whether the proxy screens the arguments for plain data. */
#define IMPL(n, fn, self_attr, plain)                                          \
  {                                                                            \
    n, W_IMPL, {-1, NULL, plain},                                              \
        {n, (PyCFunction)(void (*)(void))fn, METH_VARARGS | METH_KEYWORDS,     \
         NULL},                                                                \
        self_attr                                                              \
  }
/* IMPL screened like PY: positional count, keywords, plain data. */
#define IMPL_PY(n, fn, pos, kw)                                                \
  {                                                                            \
    n, W_IMPL, {pos, kw, true},                                                \
        {n, (PyCFunction)(void (*)(void))fn, METH_VARARGS | METH_KEYWORDS,     \
         NULL},                                                                \
        NULL                                                                   \
  }
#define TYPE(n)                                                                \
  { n, W_TYPE, {-1, NULL, false}, {0}, NULL }
#define INT(n)                                                                 \
  { n, W_INT, {-1, NULL, false}, {0}, NULL }
#define DATA(n)                                                                \
  { n, W_DATA, {-1, NULL, false}, {0}, NULL }
#define END                                                                    \
  { NULL, W_C, {-1, NULL, false}, {0}, NULL }

/* ---- records ------------------------------------------------------------ */

struct shape {
  const char *kind;
  const char *fields; /* space-separated; the first n_seq make the tuple */
  Py_ssize_t n_seq;
  PyObject *kind_str, *names; /* built on first use, kept for the process */
};

static struct shape split_shape = {
    "SplitResult",
    "scheme netloc path query fragment username password hostname port", 5,
    NULL, NULL};
static struct shape parse_shape = {"ParseResult",
                                   "scheme netloc path params query fragment "
                                   "username password hostname port",
                                   6, NULL, NULL};
static struct shape address_shape = {
    "IPAddress",
    "version compressed exploded packed is_private is_global is_loopback "
    "is_multicast is_reserved is_link_local is_unspecified",
    11, NULL, NULL};
static struct shape network_shape = {
    "IPNetwork",
    "network_address broadcast_address netmask prefixlen num_addresses "
    "version with_prefixlen is_private",
    8, NULL, NULL};

static int shape_ready(struct shape *s) {
  if (s->names)
    return 0;
  PyObject *fields = PyUnicode_FromString(s->fields);
  PyObject *list = fields ? PyUnicode_Split(fields, NULL, -1) : NULL;
  Py_XDECREF(fields);
  PyObject *names = list ? PyList_AsTuple(list) : NULL;
  Py_XDECREF(list);
  PyObject *kind = names ? PyUnicode_FromString(s->kind) : NULL;
  if (!kind) {
    Py_XDECREF(names);
    return -1;
  }
  s->names = names;
  s->kind_str = kind;
  return 0;
}

/* Reads every field of obj (trusted stdlib code runs, no user code) into a
 * record. A field that raises ValueError is None (urlsplit's port on a bad
 * port); a non-plain value (an IPv4Address) becomes its str. */
static PyObject *to_record(PyObject *obj, struct shape *s) {
  if (!obj || shape_ready(s) < 0) {
    Py_XDECREF(obj);
    return NULL;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(s->names);
  PyObject *values = PyTuple_New(n);
  for (Py_ssize_t i = 0; values && i < n; i++) {
    PyObject *v = PyObject_GetAttr(obj, PyTuple_GET_ITEM(s->names, i));
    if (!v && PyErr_ExceptionMatches(PyExc_ValueError)) {
      PyErr_Clear();
      v = Py_NewRef(Py_None);
    } else if (v && !guest_is_plain(v)) {
      Py_SETREF(v, PyObject_Str(v));
    }
    if (!v)
      Py_CLEAR(values);
    else
      PyTuple_SET_ITEM(values, i, v);
  }
  Py_DECREF(obj);
  if (!values)
    return NULL;
  PyObject *r = guest_record_new(s->kind_str, s->names, s->n_seq, values);
  Py_DECREF(values);
  return r;
}

/* ---- re ----------------------------------------------------------------- */

/* re.compile with the pattern checked first: str, bytes or a Pattern. */
static PyObject *re_compiled(PyObject *re, PyObject *pattern, PyObject *flags) {
  PyObject *ptype = PyObject_GetAttrString(re, "Pattern");
  if (!ptype)
    return NULL;
  int is_pattern = PyObject_TypeCheck(pattern, (PyTypeObject *)ptype);
  Py_DECREF(ptype);
  if (!is_pattern && !PyUnicode_Check(pattern) && !PyBytes_Check(pattern)) {
    PyErr_SetString(PyExc_TypeError,
                    "first argument must be string or compiled pattern");
    return NULL;
  }
  if (flags && !PyLong_Check(flags)) {
    PyErr_SetString(PyExc_TypeError, "flags must be an int");
    return NULL;
  }
  return flags ? PyObject_CallMethod(re, "compile", "OO", pattern, flags)
               : PyObject_CallMethod(re, "compile", "O", pattern);
}

/* re.<method>(pattern, string, flags=0) as pattern.<method>(string). */
static PyObject *re_on_string(PyObject *re, PyObject *args, PyObject *kw,
                              const char *method) {
  static char *kwlist[] = {"pattern", "string", "flags", NULL};
  PyObject *pattern, *string, *flags = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O", kwlist, &pattern, &string,
                                   &flags))
    return NULL;
  PyObject *p = re_compiled(re, pattern, flags);
  if (!p)
    return NULL;
  PyObject *res = PyObject_CallMethod(p, method, "O", string);
  Py_DECREF(p);
  return res;
}

static PyObject *re_match(PyObject *re, PyObject *args, PyObject *kw) {
  return re_on_string(re, args, kw, "match");
}

static PyObject *re_search(PyObject *re, PyObject *args, PyObject *kw) {
  return re_on_string(re, args, kw, "search");
}

static PyObject *re_fullmatch(PyObject *re, PyObject *args, PyObject *kw) {
  return re_on_string(re, args, kw, "fullmatch");
}

static PyObject *re_findall(PyObject *re, PyObject *args, PyObject *kw) {
  return re_on_string(re, args, kw, "findall");
}

static PyObject *re_finditer(PyObject *re, PyObject *args, PyObject *kw) {
  PyObject *it = re_on_string(re, args, kw, "finditer");
  PyObject *list = it ? PySequence_List(it) : NULL;
  Py_XDECREF(it);
  return list;
}

static PyObject *re_split(PyObject *re, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"pattern", "string", "maxsplit", "flags", NULL};
  PyObject *pattern, *string, *flags = NULL;
  Py_ssize_t maxsplit = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|nO:split", kwlist, &pattern,
                                   &string, &maxsplit, &flags))
    return NULL;
  PyObject *p = re_compiled(re, pattern, flags);
  if (!p)
    return NULL;
  PyObject *res = PyObject_CallMethod(p, "split", "On", string, maxsplit);
  Py_DECREF(p);
  return res;
}

/* sub/subn: a template string only ever looks up groups; a callable repl
 * would be called back (and from re.sub, under a frame of module re). */
static PyObject *re_replace(PyObject *re, PyObject *args, PyObject *kw,
                            const char *method) {
  static char *kwlist[] = {"pattern", "repl", "string", "count", "flags", NULL};
  PyObject *pattern, *repl, *string, *flags = NULL;
  Py_ssize_t count = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|nO", kwlist, &pattern, &repl,
                                   &string, &count, &flags))
    return NULL;
  if (!PyUnicode_Check(repl) && !PyBytes_Check(repl)) {
    PyErr_SetString(PyExc_TypeError, "repl must be a string");
    return NULL;
  }
  PyObject *p = re_compiled(re, pattern, flags);
  if (!p)
    return NULL;
  PyObject *res = PyObject_CallMethod(p, method, "OOn", repl, string, count);
  Py_DECREF(p);
  return res;
}

static PyObject *re_sub(PyObject *re, PyObject *args, PyObject *kw) {
  return re_replace(re, args, kw, "sub");
}

static PyObject *re_subn(PyObject *re, PyObject *args, PyObject *kw) {
  return re_replace(re, args, kw, "subn");
}

/* ---- hmac --------------------------------------------------------------- */

/* The digest names hmac.digest accepts: those hashlib exposes. */
static const char *const digest_names[] = {"md5", "sha1", "sha256", "sha512",
                                           "blake2b"};

static PyObject *hmac_digest(PyObject *digest, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"key", "msg", "digest", NULL};
  PyObject *key, *msg;
  const char *name;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOs:digest", kwlist, &key, &msg,
                                   &name))
    return NULL;
  for (size_t i = 0; i < sizeof digest_names / sizeof digest_names[0]; i++)
    if (strcmp(name, digest_names[i]) == 0)
      return PyObject_CallFunction(digest, "OOs", key, msg, name);
  PyErr_Format(PyExc_ValueError,
               "unsupported digest '%s' (md5, sha1, sha256, sha512, blake2b)",
               name);
  return NULL;
}

/* ---- urllib.parse ------------------------------------------------------- */

static PyObject *url_split(PyObject *urlsplit, PyObject *args, PyObject *kw) {
  return to_record(PyObject_Call(urlsplit, args, kw), &split_shape);
}

static PyObject *url_parse(PyObject *urlparse, PyObject *args, PyObject *kw) {
  return to_record(PyObject_Call(urlparse, args, kw), &parse_shape);
}

/* ---- ipaddress ---------------------------------------------------------- */

static PyObject *ip_address(PyObject *ipaddress, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"address", NULL};
  PyObject *a;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O:ip_address", kwlist, &a))
    return NULL;
  return to_record(PyObject_CallMethod(ipaddress, "ip_address", "O", a),
                   &address_shape);
}

static PyObject *ip_network(PyObject *ipaddress, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"address", "strict", NULL};
  PyObject *a;
  int strict = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|p:ip_network", kwlist, &a,
                                   &strict))
    return NULL;
  return to_record(PyObject_CallMethod(ipaddress, "ip_network", "OO", a,
                                       strict ? Py_True : Py_False),
                   &network_shape);
}

/* A network given to in_network/hosts may have host bits set. */
static PyObject *loose_network(PyObject *ipaddress, PyObject *net) {
  return PyObject_CallMethod(ipaddress, "ip_network", "OO", net, Py_False);
}

/* s as an address in b (16 bytes): 4 or 6, or 0 when inet_pton takes
 * neither form. It takes what the stdlib takes for plain dotted quads and
 * IPv6 text (no leading zeros in an octet, at most 4 hex digits a group);
 * a scope ("%eth0") and the stdlib's other forms are left to it. */
static int addr_parse(const char *s, unsigned char *b) {
  if (inet_pton(AF_INET, s, b) == 1)
    return 4;
  if (inet_pton(AF_INET6, s, b) == 1)
    return 6;
  return 0;
}

/* in_network for str arguments of the plain forms ADDR and NET[/PREFIX]
 * (PREFIX: 1-3 ASCII digits within the version's length): 1 or 0, what
 * ipaddress answers with strict=False. -1, with no exception, for anything
 * else, which the stdlib then answers or rejects with its own error. */
static int in_network_plain(PyObject *a, PyObject *n) {
  if (!PyUnicode_Check(a) || !PyUnicode_Check(n))
    return -1;
  Py_ssize_t alen, nlen;
  const char *as = PyUnicode_AsUTF8AndSize(a, &alen);
  const char *ns = PyUnicode_AsUTF8AndSize(n, &nlen);
  char net[64];
  if (!as || !ns) {
    PyErr_Clear();
    return -1;
  }
  if ((size_t)alen != strlen(as) || nlen >= (Py_ssize_t)sizeof net ||
      (size_t)nlen != strlen(ns))
    return -1;
  memcpy(net, ns, (size_t)nlen + 1);
  char *slash = strchr(net, '/');
  int prefix = -1;
  if (slash) {
    *slash = '\0';
    size_t digits = strlen(slash + 1);
    if (digits == 0 || digits > 3)
      return -1;
    prefix = 0;
    for (const char *d = slash + 1; *d; d++) {
      if (*d < '0' || *d > '9')
        return -1;
      prefix = prefix * 10 + (*d - '0');
    }
  }
  unsigned char ab[16], nb[16];
  int va = addr_parse(as, ab), vn = addr_parse(net, nb);
  int bits = vn == 4 ? 32 : 128;
  if (!va || !vn || prefix > bits)
    return -1;
  if (va != vn)
    return 0;
  if (prefix < 0)
    prefix = bits;
  size_t whole = (size_t)prefix / 8;
  unsigned char mask = (unsigned char)(0xff00 >> (prefix % 8));
  return memcmp(ab, nb, whole) == 0 &&
         (mask == 0 || (ab[whole] & mask) == (nb[whole] & mask));
}

static PyObject *ip_in_network(PyObject *ipaddress, PyObject *args,
                               PyObject *kw) {
  static char *kwlist[] = {"addr", "net", NULL};
  PyObject *a, *n;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO:in_network", kwlist, &a, &n))
    return NULL;
  int plain = in_network_plain(a, n);
  if (plain >= 0)
    return PyBool_FromLong(plain);
  PyObject *addr = PyObject_CallMethod(ipaddress, "ip_address", "O", a);
  PyObject *net = addr ? loose_network(ipaddress, n) : NULL;
  PyObject *va = net ? PyObject_GetAttrString(addr, "version") : NULL;
  PyObject *vn = va ? PyObject_GetAttrString(net, "version") : NULL;
  int in = vn ? PyObject_RichCompareBool(va, vn, Py_EQ) : -1;
  if (in > 0)
    in = PySequence_Contains(net, addr);
  Py_XDECREF(addr);
  Py_XDECREF(net);
  Py_XDECREF(va);
  Py_XDECREF(vn);
  return in < 0 ? NULL : PyBool_FromLong(in);
}

static PyObject *ip_hosts(PyObject *ipaddress, PyObject *args, PyObject *kw) {
  static char *kwlist[] = {"net", "limit", NULL};
  PyObject *n;
  Py_ssize_t limit = 256;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|n:hosts", kwlist, &n, &limit))
    return NULL;
  if (limit < 0) {
    PyErr_SetString(PyExc_ValueError, "limit must be >= 0");
    return NULL;
  }
  PyObject *net = loose_network(ipaddress, n);
  PyObject *it = net ? PyObject_CallMethod(net, "hosts", NULL) : NULL;
  Py_XDECREF(net);
  PyObject *list = it ? PyList_New(0) : NULL;
  PyObject *h;
  while (list && PyList_GET_SIZE(list) < limit && (h = PyIter_Next(it))) {
    PyObject *s = PyObject_Str(h);
    Py_DECREF(h);
    if (!s || PyList_Append(list, s) < 0)
      Py_CLEAR(list);
    Py_XDECREF(s);
  }
  Py_XDECREF(it);
  if (list && PyErr_Occurred())
    Py_CLEAR(list);
  return list;
}

/* ---- the tables --------------------------------------------------------- */

static struct member json_members[] = {
    IMPL_PY("loads", json_c_loads, 1, ""),
    IMPL_PY("dumps", json_c_dumps, 1, "indent sort_keys"),
    END,
};

static struct member re_members[] = {
    PY("compile", 2, "flags"),
    IMPL("match", re_match, NULL, false),
    IMPL("search", re_search, NULL, false),
    IMPL("fullmatch", re_fullmatch, NULL, false),
    IMPL("findall", re_findall, NULL, false),
    IMPL("finditer", re_finditer, NULL, false),
    IMPL("split", re_split, NULL, false),
    IMPL("sub", re_sub, NULL, false),
    IMPL("subn", re_subn, NULL, false),
    PY("escape", 1, ""),
    INT("A"),
    INT("ASCII"),
    INT("I"),
    INT("IGNORECASE"),
    INT("L"),
    INT("LOCALE"),
    INT("M"),
    INT("MULTILINE"),
    INT("NOFLAG"),
    INT("S"),
    INT("DOTALL"),
    INT("U"),
    INT("UNICODE"),
    INT("X"),
    INT("VERBOSE"),
    END,
};

static struct member base64_members[] = {
    PY("b64encode", 2, "altchars"),
    PY("b64decode", 3, "altchars validate"),
    PY("standard_b64encode", 1, ""),
    PY("standard_b64decode", 1, ""),
    PY("urlsafe_b64encode", 1, ""),
    PY("urlsafe_b64decode", 1, ""),
    PY("b32encode", 1, ""),
    PY("b32decode", 3, "casefold map01"),
    PY("b32hexencode", 1, ""),
    PY("b32hexdecode", 2, "casefold"),
    PY("b16encode", 1, ""),
    PY("b16decode", 2, "casefold"),
    PY("b85encode", 2, "pad"),
    PY("b85decode", 1, ""),
    END,
};

static struct member hashlib_members[] = {
    C("md5"), C("sha1"), C("sha256"), C("sha512"), C("blake2b"), END,
};

static struct member hmac_members[] = {
    IMPL("digest", hmac_digest, "digest", true),
    C("compare_digest"),
    END,
};

static struct member binascii_members[] = {
    C("hexlify"),
    C("unhexlify"),
    C("crc32"),
    END,
};

static struct member struct_members[] = {
    C("pack"), C("unpack"), C("calcsize"), C("unpack_from"), END,
};

static struct member math_members[] = {
    C("acos"),     C("acosh"),     C("asin"),      C("asinh"),   C("atan"),
    C("atan2"),    C("atanh"),     C("cbrt"),      C("ceil"),    C("comb"),
    C("copysign"), C("cos"),       C("cosh"),      C("degrees"), C("dist"),
    C("erf"),      C("erfc"),      C("exp"),       C("exp2"),    C("expm1"),
    C("fabs"),     C("factorial"), C("floor"),     C("fmod"),    C("frexp"),
    C("fsum"),     C("gamma"),     C("gcd"),       C("hypot"),   C("isclose"),
    C("isfinite"), C("isinf"),     C("isnan"),     C("isqrt"),   C("lcm"),
    C("ldexp"),    C("lgamma"),    C("log"),       C("log10"),   C("log1p"),
    C("log2"),     C("modf"),      C("nextafter"), C("perm"),    C("pow"),
    C("prod"),     C("radians"),   C("remainder"), C("sin"),     C("sinh"),
    C("sqrt"),     C("tan"),       C("tanh"),      C("trunc"),   C("ulp"),
    DATA("e"),     DATA("inf"),    DATA("nan"),    DATA("pi"),   DATA("tau"),
    END,
};

static struct member datetime_members[] = {
    TYPE("datetime"), TYPE("date"), TYPE("timedelta"), TYPE("timezone"), END,
};

static struct member urlparse_members[] = {
    IMPL("urlsplit", url_split, "urlsplit", true),
    IMPL("urlparse", url_parse, "urlparse", true),
    PY("urlunsplit", 1, ""),
    PY("urlunparse", 1, ""),
    PY("urljoin", 3, "allow_fragments"),
    PY("parse_qs", 7,
       "keep_blank_values strict_parsing encoding errors max_num_fields "
       "separator"),
    PY("parse_qsl", 7,
       "keep_blank_values strict_parsing encoding errors max_num_fields "
       "separator"),
    PY("quote", 4, "safe encoding errors"),
    PY("quote_plus", 4, "safe encoding errors"),
    PY("quote_from_bytes", 2, "safe"),
    PY("unquote", 3, "encoding errors"),
    PY("unquote_plus", 3, "encoding errors"),
    PY("unquote_to_bytes", 1, ""),
    PY("urlencode", 5, "doseq safe encoding errors"),
    END,
};

static struct member ipaddress_members[] = {
    IMPL("ip_address", ip_address, NULL, true),
    IMPL("ip_network", ip_network, NULL, true),
    IMPL("in_network", ip_in_network, NULL, true),
    IMPL("hosts", ip_hosts, NULL, true),
    END,
};

/* preimport: modules the helper's code imports lazily on some path (re and
 * urllib.parse import warnings and unicodedata inside functions;
 * datetime.strptime imports _strptime). */
static const struct helper {
  const char *name;      /* the import name user code writes */
  const char *module;    /* the real module; NULL: none (C code here) */
  const char *preimport; /* space-separated; NULL: none */
  struct member *members;
} helpers[] = {
    {"json", NULL, NULL, json_members},
    {"re", "re", "warnings unicodedata", re_members},
    {"base64", "base64", NULL, base64_members},
    {"hashlib", "hashlib", NULL, hashlib_members},
    {"hmac", "hmac", NULL, hmac_members},
    {"binascii", "binascii", NULL, binascii_members},
    {"struct", "struct", NULL, struct_members},
    {"math", "math", NULL, math_members},
    {"datetime", "datetime", "_strptime", datetime_members},
    {"urllib.parse", "urllib.parse", "unicodedata", urlparse_members},
    {"ipaddress", "ipaddress", NULL, ipaddress_members},
};

/* The codecs benign code looks up by name (str.encode, bytes.decode;
 * docs/gate.md, Lockdown and pre-imports). Importing them costs more than
 * the interpreter start-up (encodings.idna pulls in re), so only when the
 * gate saw a codec lookup; without them such a lookup fails cleanly after
 * lockdown. */
static const char codec_preimport[] =
    "encodings.ascii encodings.latin_1 encodings.idna encodings.punycode "
    "encodings.utf_16 encodings.utf_32 encodings.cp1252";

/* ---- building ----------------------------------------------------------- */

static const struct helper *helper_find(const char *name) {
  for (size_t i = 0; i < sizeof helpers / sizeof helpers[0]; i++)
    if (strcmp(helpers[i].name, name) == 0)
      return &helpers[i];
  return NULL;
}

/* Imports every module of a space-separated list. */
static int import_list(const char *list, struct coil_error *err) {
  char name[128];
  for (const char *s = list; *s;) {
    size_t n = strcspn(s, " ");
    if (n >= sizeof name)
      return coil_error_set(err, ENAMETOOLONG, "preimport: name too long");
    memcpy(name, s, n);
    name[n] = '\0';
    PyObject *m = PyImport_ImportModule(name);
    if (!m)
      return embed_py_error(err, name);
    Py_DECREF(m);
    s += n;
    s += strspn(s, " ");
  }
  return 0;
}

int guest_preimport(const char *const *names, size_t n, bool codecs,
                    struct coil_error *err) {
  if (codecs && import_list(codec_preimport, err) < 0)
    return coil_error_prefix(err, "preimport");
  for (size_t i = 0; i < n; i++) {
    const struct helper *h = helper_find(names[i]);
    if (!h)
      return coil_error_set(err, EINVAL, "preimport: unknown helper '%s'",
                            names[i]);
    if ((h->module && import_list(h->module, err) < 0) ||
        (h->preimport && import_list(h->preimport, err) < 0))
      return coil_error_prefix(err, "preimport: helper %s", h->name);
  }
  return 0;
}

/* Whether arbitrary arguments may be passed straight through: only to C
 * code, which cannot put a Python frame under a user callable. */
static bool is_c_callable(PyObject *t) {
  if (PyCFunction_Check(t))
    return true;
  if (!PyType_Check(t))
    return false;
  if (!PyType_HasFeature((PyTypeObject *)t, Py_TPFLAGS_HEAPTYPE))
    return true;
  /* A heap type made by an extension module knows its module; a class
   * statement's type does not. */
  PyObject *mod = PyType_GetModule((PyTypeObject *)t);
  if (!mod)
    PyErr_Clear();
  return mod != NULL;
}

static PyObject *member_new(PyObject *module, const struct helper *h,
                            struct member *m) {
  char qual[96];
  snprintf(qual, sizeof qual, "%s.%s", h->name, m->name);
  if (m->how == W_IMPL) {
    PyObject *self =
        m->self ? PyObject_GetAttrString(module, m->self) : Py_NewRef(module);
    PyObject *fn = self ? PyCFunction_NewEx(&m->def, self, NULL) : NULL;
    Py_XDECREF(self);
    PyObject *p = fn ? guest_proxy_new(fn, qual, &m->spec) : NULL;
    Py_XDECREF(fn);
    return p;
  }
  PyObject *v = PyObject_GetAttrString(module, m->name);
  if (!v)
    return NULL;
  const char *bad = NULL;
  switch (m->how) {
  case W_C:
    if (!is_c_callable(v))
      bad = "is not implemented in C";
    else
      Py_SETREF(v, guest_proxy_new(v, qual, &m->spec));
    break;
  case W_PY:
    Py_SETREF(v, guest_proxy_new(v, qual, &m->spec));
    break;
  case W_TYPE:
    if (!PyType_Check(v) || !is_c_callable(v))
      bad = "is not a C type";
    break;
  case W_INT:
    Py_SETREF(v, PyNumber_Long(v));
    break;
  case W_DATA:
    if (!guest_is_plain(v))
      bad = "is not plain data";
    break;
  case W_IMPL: /* built above, from its PyMethodDef */
    break;
  }
  if (bad) {
    Py_DECREF(v);
    PyErr_Format(PyExc_TypeError, "%s %s", qual, bad);
    return NULL;
  }
  return v;
}

static PyObject *namespace_for(const struct helper *h) {
  PyObject *modname = h->module ? PyUnicode_FromString(h->module) : NULL;
  PyObject *module = !h->module ? Py_NewRef(Py_None)
                     : modname  ? PyImport_GetModule(modname)
                                : NULL;
  Py_XDECREF(modname);
  if (!module) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_ImportError, "%s was not pre-imported", h->module);
    return NULL;
  }
  PyObject *members = PyDict_New();
  for (struct member *m = h->members; members && m->name; m++) {
    PyObject *v = member_new(module, h, m);
    if (!v || PyDict_SetItemString(members, m->name, v) < 0)
      Py_CLEAR(members);
    Py_XDECREF(v);
  }
  Py_DECREF(module);
  PyObject *ns = members ? guest_namespace_new(h->name, members) : NULL;
  Py_XDECREF(members);
  return ns;
}

/* For "a.b": map["a"] gets member b = map["a.b"]; the parent namespace
 * holds nothing else. */
static int link_parent(PyObject *map, PyObject *parents, const char *name,
                       PyObject *ns) {
  const char *dot = strrchr(name, '.');
  if (!dot)
    return 0;
  PyObject *head = PyUnicode_FromStringAndSize(name, dot - name);
  if (!head)
    return -1;
  int rc = -1;
  PyObject *members = PyDict_GetItemWithError(parents, head);
  if (!members && !PyErr_Occurred()) {
    PyObject *pns = NULL;
    members = PyDict_New();
    if (members)
      pns = guest_namespace_new(PyUnicode_AsUTF8(head), members);
    if (pns && PyDict_SetItem(parents, head, members) == 0 &&
        PyDict_SetItem(map, head, pns) == 0)
      rc = 0;
    Py_XDECREF(pns);
    Py_XDECREF(members); /* parents holds it now */
    if (rc < 0) {
      Py_DECREF(head);
      return -1;
    }
  }
  rc = members ? PyDict_SetItemString(members, dot + 1, ns) : -1;
  Py_DECREF(head);
  return rc;
}

PyObject *guest_helpers_new(const char *const *names, size_t n,
                            struct coil_error *err) {
  PyObject *map = PyDict_New();
  PyObject *parents = PyDict_New();
  if (!parents)
    Py_CLEAR(map);
  for (size_t i = 0; map && i < n; i++) {
    const struct helper *h = helper_find(names[i]);
    if (!h) {
      Py_DECREF(map);
      Py_DECREF(parents);
      coil_error_set(err, EINVAL, "helpers: unknown helper '%s'", names[i]);
      return NULL;
    }
    PyObject *ns = namespace_for(h);
    if (!ns || PyDict_SetItemString(map, h->name, ns) < 0 ||
        link_parent(map, parents, h->name, ns) < 0)
      Py_CLEAR(map);
    Py_XDECREF(ns);
  }
  Py_XDECREF(parents);
  if (!map)
    embed_py_error(err, "helpers");
  return map;
}
