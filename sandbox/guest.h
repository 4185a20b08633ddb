/* What user code can reach: a fresh restricted builtins dict, the helper
 * namespaces (C objects whose attributes are exactly the chosen callables,
 * each wrapped in an attribute-less C proxy), a bounded print() capture and
 * the __import__ shim. Built in the TRUSTED phase. */
#ifndef COIL_GUEST_H
#define COIL_GUEST_H

#include <Python.h>
#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Imports what would otherwise be imported lazily after lockdown: with
 * codecs, the codecs benign code looks up by name (encodings.{ascii,latin_1,
 * idna,punycode,utf_16,utf_32,cp1252}); for each named helper its real module
 * and that module's own lazy imports (_strptime for datetime, ...). */
int guest_preimport(const char *const *helpers, size_t n, bool codecs,
                    struct coil_error *err);

/* A new globals dict for user code: __builtins__ = the restricted dict (or,
 * when restricted is false, for the layer-off tests, a copy of the real
 * builtins module's dict with only print and __import__ replaced, so other
 * imports give real modules), __name__ = "__main__". Helper namespaces are
 * reachable only through `import NAME` (the shim). Call guest_preimport
 * first: helpers are never imported here. */
int guest_globals(const char *const *helpers, size_t n, bool restricted,
                  PyObject **globals, struct coil_error *err);

/* print() capture: everything user code prints, up to cap bytes (default
 * 1 MiB); setting the cap also empties the buffer. The print that goes over
 * keeps what fits (cut at a UTF-8 boundary) and calls on_overflow(arg),
 * which is expected not to return: python_mode ends the run there as
 * OutputLimit, before user code could swallow an exception. Without
 * on_overflow (or if it returns) that print and every later one raise
 * RuntimeError. */
void guest_stdout_set_cap(size_t cap, void (*on_overflow)(const void *arg),
                          const void *arg);
const char *guest_stdout(size_t *len, bool *overflowed);

/* Every member user code can reach through the namespace or record o, as a
 * new dict (name -> object); NULL with TypeError for other objects. Trusted
 * side only: for the tests' reachability walk and the gate's allowlist. */
PyObject *guest_public_members(PyObject *o);

/* ---- shared by sandbox/{proxy,builtins,helpers}.c ------------------------ */

/* How a helper proxy screens a call before forwarding it. */
struct guest_callspec {
  int max_pos;    /* most positional arguments; -1: no limit */
  const char *kw; /* allowed keyword names, space-separated; NULL: any */
  bool plain;     /* every argument must be plain data (guest_is_plain) */
};

/* A proxy around target named name ("json.loads"). With spec NULL the call
 * is forwarded untouched (builtins); with spec the arguments are screened
 * and an exception escaping the target is rebuilt as a fresh instance of
 * its nearest builtin class with plain args, no traceback and no context. */
PyObject *guest_proxy_new(PyObject *target, const char *name,
                          const struct guest_callspec *spec);

/* A read-only namespace over members (a dict, referenced, not copied). */
PyObject *guest_namespace_new(const char *name, PyObject *members);

/* An immutable record: kind (str) names it in repr, names (tuple of str)
 * the fields, values (tuple, same length, plain data) their values; the
 * first n_seq fields also make it a tuple (len, index, iter, ==). */
PyObject *guest_record_new(PyObject *kind, PyObject *names, Py_ssize_t n_seq,
                           PyObject *values);

/* 1 when o is plain data: None, bool, exact int/float/complex/str/bytes/
 * bytearray, records, and exact tuple/list/dict/set/frozenset of plain data
 * (nested at most 64 deep); 0 otherwise. Never runs Python code. */
int guest_is_plain(PyObject *o);

/* The helper namespaces for helpers[0..n): a new dict mapping each import
 * name ("json", "urllib.parse") and each dotted prefix ("urllib") to its
 * namespace. */
PyObject *guest_helpers_new(const char *const *helpers, size_t n,
                            struct coil_error *err);

#endif
