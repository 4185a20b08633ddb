/* json.loads and json.dumps in C for the json helper (helpers.c): the
 * stdlib json module (re, enum, json.decoder's regexes) costs more to
 * import than the rest of a sandboxed run. Both follow Python 3.11's json
 * for builtin data, byte for byte in output and error messages, except:
 *   - nesting deeper than JSON_C_MAX_DEPTH raises ValueError (Python:
 *     RecursionError near the recursion limit);
 *   - dumps finds a circular reference when the nesting limit is reached,
 *     not at the first repeat: same ValueError "Circular reference
 *     detected", later;
 *   - exceptions are plain ValueError/TypeError (JSONDecodeError is a
 *     Python class), with JSONDecodeError's message ("Expecting value: line
 *     1 column 1 (char 0)");
 *   - only the arguments the helper exposes: loads(s), dumps(obj, *,
 *     indent=None, sort_keys=False).
 * No Python code runs and no module is imported: bytes input is decoded
 * like json.detect_encoding with the C UTF-8/16/32 decoders. */
#ifndef COIL_JSON_C_H
#define COIL_JSON_C_H

#include <Python.h>

#define JSON_C_MAX_DEPTH 1000

/* METH_VARARGS | METH_KEYWORDS functions; self is ignored. */
PyObject *json_c_loads(PyObject *self, PyObject *args, PyObject *kw);
PyObject *json_c_dumps(PyObject *self, PyObject *args, PyObject *kw);

/* The handler's request (protocol.c): s parsed like loads(s), but only
 * RFC 8259 JSON: NaN, Infinity and -Infinity are "Expecting value", and an
 * escape that leaves a lone surrogate in a string (key or value) is
 * "Unpaired surrogate \\ud800 in string at: line 1 column 8 (char 7)", as
 * the protocol's UTF-8 text could not carry it back out. \\u0000 is kept.
 * Errors are ValueError; their message holds positions, never input text. */
PyObject *json_c_parse_strict(PyObject *s);

#endif
