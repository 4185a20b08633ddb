/* The three C types user code holds in place of Python-level objects
 * (docs/gate.md, Helpers):
 *   proxy     wraps exactly one callable and forwards calls; it answers no
 *             attribute at all, so the target's __self__ (len.__self__ is the
 *             builtins module), __globals__, __module__ ... stay hidden;
 *   namespace a helper's members, looked up in a private dict: never a
 *             module object, so urllib.parse.sys does not exist;
 *   record    immutable named plain data (urlsplit, ip_address results) in
 *             place of Python-class instances whose methods lead to module
 *             globals (A09/A10: geturl.__func__.__globals__).
 * None of them can be subclassed, instantiated from Python or assigned to.
 * Setting an attribute raises from an explicit tp_setattro rather than the
 * inherited generic one, so no descriptor of `object` is ever consulted. */
#include "guest.h"

#include <string.h>

/* Cycle guard for guest_is_plain: deeper data is refused, not walked. */
#define PLAIN_MAX_DEPTH 64

typedef struct {
  PyObject_HEAD PyObject *target;
  PyObject *name; /* str, for repr and messages */
  const struct guest_callspec *spec;
} proxy_object;

typedef struct {
  PyObject_HEAD PyObject *name;
  PyObject *members; /* dict: member name -> object */
} namespace_object;

typedef struct {
  PyObject_HEAD PyObject *kind; /* str: "SplitResult" */
  PyObject *names;              /* tuple of str */
  PyObject *values;             /* tuple, one per name */
  PyObject *seq;                /* tuple: the first n_seq values */
} record_object;

static PyTypeObject proxy_type, namespace_type, record_type;

/* ---- plain data --------------------------------------------------------- */

static int plain_at(PyObject *o, int depth);

static int plain_items(PyObject *seq, int depth) {
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  PyObject **items = PySequence_Fast_ITEMS(seq);
  for (Py_ssize_t i = 0; i < n; i++)
    if (!plain_at(items[i], depth + 1))
      return 0;
  return 1;
}

static int plain_set(PyObject *set, int depth) {
  /* Iterating an exact set or frozenset is C code only. */
  PyObject *it = PyObject_GetIter(set);
  if (!it) {
    PyErr_Clear();
    return 0;
  }
  int plain = 1;
  PyObject *item;
  while (plain && (item = PyIter_Next(it))) {
    plain = plain_at(item, depth + 1);
    Py_DECREF(item);
  }
  Py_DECREF(it);
  PyErr_Clear();
  return plain;
}

static int plain_at(PyObject *o, int depth) {
  if (depth > PLAIN_MAX_DEPTH)
    return 0;
  if (o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) ||
      PyFloat_CheckExact(o) || PyComplex_CheckExact(o) ||
      PyUnicode_CheckExact(o) || PyBytes_CheckExact(o) ||
      PyByteArray_CheckExact(o))
    return 1;
  if (Py_IS_TYPE(o, &record_type))
    return plain_items(((record_object *)o)->values, depth);
  if (PyTuple_CheckExact(o) || PyList_CheckExact(o))
    return plain_items(o, depth);
  if (PyDict_CheckExact(o)) {
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(o, &pos, &k, &v))
      if (!plain_at(k, depth + 1) || !plain_at(v, depth + 1))
        return 0;
    return 1;
  }
  if (PyAnySet_CheckExact(o))
    return plain_set(o, depth);
  return 0;
}

int guest_is_plain(PyObject *o) { return plain_at(o, 0); }

/* ---- proxy -------------------------------------------------------------- */

PyObject *guest_proxy_new(PyObject *target, const char *name,
                          const struct guest_callspec *spec) {
  if (PyType_Ready(&proxy_type) < 0)
    return NULL;
  proxy_object *p = PyObject_GC_New(proxy_object, &proxy_type);
  if (!p)
    return NULL;
  p->name = PyUnicode_FromString(name);
  if (!p->name) {
    p->target = NULL;
    Py_DECREF(p);
    return NULL;
  }
  Py_INCREF(target);
  p->target = target;
  p->spec = spec;
  PyObject_GC_Track(p);
  return (PyObject *)p;
}

static bool kw_allowed(const char *list, const char *name) {
  size_t len = strlen(name);
  for (const char *s = list; *s;) {
    size_t n = strcspn(s, " ");
    if (n == len && memcmp(s, name, n) == 0)
      return true;
    s += n;
    s += strspn(s, " ");
  }
  return false;
}

/* Refuses what the target must never see: extra positionals (urlencode's
 * sixth is quote_via), unlisted keywords (object_hook, cls, default) and,
 * for Python-implemented targets, anything but plain data, since a user
 * callable called from there would run with the helper's frame under it. */
static int proxy_screen(const proxy_object *p, PyObject *args, PyObject *kw) {
  const struct guest_callspec *spec = p->spec;
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (spec->max_pos >= 0 && n > spec->max_pos) {
    PyErr_Format(PyExc_TypeError,
                 "%U() takes at most %d positional argument%s (%zd given)",
                 p->name, spec->max_pos, spec->max_pos == 1 ? "" : "s", n);
    return -1;
  }
  for (Py_ssize_t i = 0; spec->plain && i < n; i++)
    if (!guest_is_plain(PyTuple_GET_ITEM(args, i))) {
      PyErr_Format(PyExc_TypeError, "%U(): argument %zd is not plain data",
                   p->name, i + 1);
      return -1;
    }
  Py_ssize_t pos = 0;
  PyObject *k, *v;
  while (kw && PyDict_Next(kw, &pos, &k, &v)) {
    const char *key = PyUnicode_AsUTF8(k);
    if (!key)
      return -1;
    if (spec->kw && !kw_allowed(spec->kw, key)) {
      PyErr_Format(PyExc_TypeError,
                   "%U() got an unexpected keyword argument '%s'", p->name,
                   key);
      return -1;
    }
    if (spec->plain && !guest_is_plain(v)) {
      PyErr_Format(PyExc_TypeError, "%U(): argument '%s' is not plain data",
                   p->name, key);
      return -1;
    }
  }
  return 0;
}

/* Replaces the pending exception by a fresh one of its nearest builtin
 * class: the original may be a Python class (JSONDecodeError, whose methods
 * lead to json.decoder's globals), carry a traceback through the helper's
 * frames, a __context__ from inside the helper, or non-plain args. */
static void proxy_clean_error(void) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  Py_XDECREF(tb);
  PyTypeObject *base = (PyTypeObject *)type;
  while (base->tp_flags & Py_TPFLAGS_HEAPTYPE)
    base = base->tp_base;
  PyObject *args = PyObject_GetAttrString(value, "args");
  if (args && !guest_is_plain(args)) {
    Py_DECREF(args);
    PyObject *msg = PyObject_Str(value);
    args = msg ? PyTuple_Pack(1, msg) : NULL;
    Py_XDECREF(msg);
  }
  Py_DECREF(type);
  Py_DECREF(value);
  if (!args)
    return; /* the error from building args is now pending */
  PyObject *fresh = PyObject_Call((PyObject *)base, args, NULL);
  Py_DECREF(args);
  if (!fresh)
    return;
  PyErr_SetObject((PyObject *)Py_TYPE(fresh), fresh);
  Py_DECREF(fresh);
}

static PyObject *proxy_call(PyObject *self, PyObject *args, PyObject *kw) {
  proxy_object *p = (proxy_object *)self;
  if (!p->spec)
    return PyObject_Call(p->target, args, kw);
  if (proxy_screen(p, args, kw) < 0)
    return NULL;
  PyObject *res = PyObject_Call(p->target, args, kw);
  if (!res)
    proxy_clean_error();
  return res;
}

static PyObject *proxy_getattro(PyObject *self, PyObject *name) {
  PyErr_Format(PyExc_AttributeError, "helper %U has no attribute '%U'",
               ((proxy_object *)self)->name, name);
  return NULL;
}

static int proxy_setattro(PyObject *self, PyObject *name, PyObject *v) {
  (void)v;
  PyErr_Format(PyExc_AttributeError, "helper %U has no attribute '%U'",
               ((proxy_object *)self)->name, name);
  return -1;
}

static PyObject *proxy_repr(PyObject *self) {
  return PyUnicode_FromFormat("<coil helper %U>", ((proxy_object *)self)->name);
}

static int proxy_traverse(PyObject *self, visitproc visit, void *arg) {
  Py_VISIT(((proxy_object *)self)->target);
  return 0;
}

static int proxy_clear(PyObject *self) {
  Py_CLEAR(((proxy_object *)self)->target);
  return 0;
}

static void proxy_dealloc(PyObject *self) {
  PyObject_GC_UnTrack(self);
  proxy_clear(self);
  Py_CLEAR(((proxy_object *)self)->name);
  PyObject_GC_Del(self);
}

static PyTypeObject proxy_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "coil.helper",
    .tp_basicsize = sizeof(proxy_object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
                Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .tp_call = proxy_call,
    .tp_getattro = proxy_getattro,
    .tp_setattro = proxy_setattro,
    .tp_repr = proxy_repr,
    .tp_traverse = proxy_traverse,
    .tp_clear = proxy_clear,
    .tp_dealloc = proxy_dealloc,
};

/* ---- namespace ---------------------------------------------------------- */

PyObject *guest_namespace_new(const char *name, PyObject *members) {
  if (PyType_Ready(&namespace_type) < 0)
    return NULL;
  namespace_object *ns = PyObject_GC_New(namespace_object, &namespace_type);
  if (!ns)
    return NULL;
  ns->name = PyUnicode_FromString(name);
  if (!ns->name) {
    ns->members = NULL;
    Py_DECREF(ns);
    return NULL;
  }
  Py_INCREF(members);
  ns->members = members;
  PyObject_GC_Track(ns);
  return (PyObject *)ns;
}

/* Raises its own AttributeError: nothing hidden is consulted or attached. */
static PyObject *namespace_getattro(PyObject *self, PyObject *name) {
  namespace_object *ns = (namespace_object *)self;
  PyObject *v = PyDict_GetItemWithError(ns->members, name);
  if (v) {
    Py_INCREF(v);
    return v;
  }
  if (!PyErr_Occurred())
    PyErr_Format(PyExc_AttributeError, "'%U' has no member '%U'", ns->name,
                 name);
  return NULL;
}

static int namespace_setattro(PyObject *self, PyObject *name, PyObject *v) {
  (void)v;
  PyErr_Format(PyExc_AttributeError, "'%U' is read-only (member '%U')",
               ((namespace_object *)self)->name, name);
  return -1;
}

static PyObject *namespace_repr(PyObject *self) {
  return PyUnicode_FromFormat("<coil namespace %U>",
                              ((namespace_object *)self)->name);
}

static int namespace_traverse(PyObject *self, visitproc visit, void *arg) {
  Py_VISIT(((namespace_object *)self)->members);
  return 0;
}

static int namespace_clear(PyObject *self) {
  Py_CLEAR(((namespace_object *)self)->members);
  return 0;
}

static void namespace_dealloc(PyObject *self) {
  PyObject_GC_UnTrack(self);
  namespace_clear(self);
  Py_CLEAR(((namespace_object *)self)->name);
  PyObject_GC_Del(self);
}

static PyTypeObject namespace_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "coil.namespace",
    .tp_basicsize = sizeof(namespace_object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
                Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .tp_getattro = namespace_getattro,
    .tp_setattro = namespace_setattro,
    .tp_repr = namespace_repr,
    .tp_traverse = namespace_traverse,
    .tp_clear = namespace_clear,
    .tp_dealloc = namespace_dealloc,
};

/* ---- record ------------------------------------------------------------- */

PyObject *guest_record_new(PyObject *kind, PyObject *names, Py_ssize_t n_seq,
                           PyObject *values) {
  if (PyType_Ready(&record_type) < 0)
    return NULL;
  if (PyTuple_GET_SIZE(names) != PyTuple_GET_SIZE(values) || n_seq < 0 ||
      n_seq > PyTuple_GET_SIZE(values)) {
    PyErr_SetString(PyExc_SystemError, "coil record: bad shape");
    return NULL;
  }
  PyObject *seq = PyTuple_GetSlice(values, 0, n_seq);
  if (!seq)
    return NULL;
  record_object *r = PyObject_GC_New(record_object, &record_type);
  if (!r) {
    Py_DECREF(seq);
    return NULL;
  }
  Py_INCREF(kind);
  Py_INCREF(names);
  Py_INCREF(values);
  r->kind = kind;
  r->names = names;
  r->values = values;
  r->seq = seq;
  PyObject_GC_Track(r);
  return (PyObject *)r;
}

static PyObject *record_getattro(PyObject *self, PyObject *name) {
  record_object *r = (record_object *)self;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(r->names); i++) {
    int eq =
        PyObject_RichCompareBool(PyTuple_GET_ITEM(r->names, i), name, Py_EQ);
    if (eq < 0)
      return NULL;
    if (eq) {
      PyObject *v = PyTuple_GET_ITEM(r->values, i);
      Py_INCREF(v);
      return v;
    }
  }
  PyErr_Format(PyExc_AttributeError, "%U has no field '%U'", r->kind, name);
  return NULL;
}

static int record_setattro(PyObject *self, PyObject *name, PyObject *v) {
  (void)v;
  PyErr_Format(PyExc_AttributeError, "%U is read-only (field '%U')",
               ((record_object *)self)->kind, name);
  return -1;
}

static PyObject *record_repr(PyObject *self) {
  record_object *r = (record_object *)self;
  PyObject *parts = PyList_New(0);
  if (!parts)
    return NULL;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(r->names); i++) {
    PyObject *s = PyUnicode_FromFormat("%U=%R", PyTuple_GET_ITEM(r->names, i),
                                       PyTuple_GET_ITEM(r->values, i));
    if (!s || PyList_Append(parts, s) < 0) {
      Py_XDECREF(s);
      Py_DECREF(parts);
      return NULL;
    }
    Py_DECREF(s);
  }
  PyObject *sep = PyUnicode_FromString(", ");
  PyObject *body = sep ? PyUnicode_Join(sep, parts) : NULL;
  Py_XDECREF(sep);
  Py_DECREF(parts);
  if (!body)
    return NULL;
  PyObject *out = PyUnicode_FromFormat("%U(%U)", r->kind, body);
  Py_DECREF(body);
  return out;
}

static Py_ssize_t record_length(PyObject *self) {
  return PyTuple_GET_SIZE(((record_object *)self)->seq);
}

static int record_contains(PyObject *self, PyObject *v) {
  return PySequence_Contains(((record_object *)self)->seq, v);
}

static PyObject *record_subscript(PyObject *self, PyObject *key) {
  return PyObject_GetItem(((record_object *)self)->seq, key);
}

static PyObject *record_iter(PyObject *self) {
  return PyObject_GetIter(((record_object *)self)->seq);
}

static Py_hash_t record_hash(PyObject *self) {
  return PyObject_Hash(((record_object *)self)->seq);
}

/* Compares as its tuple part, like a namedtuple. */
static PyObject *record_richcompare(PyObject *self, PyObject *other, int op) {
  if (Py_IS_TYPE(other, &record_type))
    other = ((record_object *)other)->seq;
  else if (!PyTuple_Check(other))
    Py_RETURN_NOTIMPLEMENTED;
  return PyObject_RichCompare(((record_object *)self)->seq, other, op);
}

static int record_traverse(PyObject *self, visitproc visit, void *arg) {
  record_object *r = (record_object *)self;
  Py_VISIT(r->values);
  Py_VISIT(r->seq);
  return 0;
}

static int record_clear(PyObject *self) {
  record_object *r = (record_object *)self;
  Py_CLEAR(r->values);
  Py_CLEAR(r->seq);
  return 0;
}

static void record_dealloc(PyObject *self) {
  record_object *r = (record_object *)self;
  PyObject_GC_UnTrack(self);
  record_clear(self);
  Py_CLEAR(r->kind);
  Py_CLEAR(r->names);
  PyObject_GC_Del(self);
}

static PySequenceMethods record_as_sequence = {
    .sq_length = record_length,
    .sq_contains = record_contains,
};

static PyMappingMethods record_as_mapping = {
    .mp_length = record_length,
    .mp_subscript = record_subscript,
};

static PyTypeObject record_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "coil.record",
    .tp_basicsize = sizeof(record_object),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC |
                Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .tp_getattro = record_getattro,
    .tp_setattro = record_setattro,
    .tp_repr = record_repr,
    .tp_as_sequence = &record_as_sequence,
    .tp_as_mapping = &record_as_mapping,
    .tp_iter = record_iter,
    .tp_hash = record_hash,
    .tp_richcompare = record_richcompare,
    .tp_traverse = record_traverse,
    .tp_clear = record_clear,
    .tp_dealloc = record_dealloc,
};

/* ---- trusted introspection ---------------------------------------------- */

PyObject *guest_public_members(PyObject *o) {
  if (Py_IS_TYPE(o, &namespace_type))
    return PyDict_Copy(((namespace_object *)o)->members);
  if (!Py_IS_TYPE(o, &record_type)) {
    PyErr_SetString(PyExc_TypeError, "not a coil namespace or record");
    return NULL;
  }
  record_object *r = (record_object *)o;
  PyObject *d = PyDict_New();
  for (Py_ssize_t i = 0; d && i < PyTuple_GET_SIZE(r->names); i++)
    if (PyDict_SetItem(d, PyTuple_GET_ITEM(r->names, i),
                       PyTuple_GET_ITEM(r->values, i)) < 0)
      Py_CLEAR(d);
  return d;
}
