/* The handler protocol's JSON: the input is a request read by
 * protocol_read_request (json_c_parse_strict underneath). A request that
 * parses must come back unchanged through the success envelope and through
 * json_c's dumps/loads; any input used as an error message and as print
 * output must still give an error envelope that is strict UTF-8 JSON. A
 * broken invariant aborts, so libFuzzer keeps the input. */
#include <Python.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "fuzz_py.h"
#include "json_c.h"
#include "protocol.h"

#define REQUEST_CAP (1u << 20)
#define ENVELOPE_CAP (8u << 20)

static int request_fd = -1, envelope_fd = -1;

static void check(int cond, const char *what) {
  if (!cond) {
    fprintf(stderr, "fuzz_protocol: %s\n", what);
    if (PyErr_Occurred())
      PyErr_Print();
    abort();
  }
}

static void reset(int fd) {
  check(ftruncate(fd, 0) == 0 && lseek(fd, 0, SEEK_SET) == 0, "memfd reset");
}

/* The envelope written to envelope_fd, parsed back (new reference). */
static PyObject *read_envelope(void) {
  off_t len = lseek(envelope_fd, 0, SEEK_CUR);
  check(len > 0, "an envelope was written");
  char *buf = malloc((size_t)len);
  check(buf != NULL, "malloc");
  check(pread(envelope_fd, buf, (size_t)len, 0) == len, "pread envelope");
  check(buf[len - 1] == '\n', "the envelope ends with a newline");
  PyObject *text = PyUnicode_DecodeUTF8(buf, len - 1, "strict");
  free(buf);
  check(text != NULL, "the envelope is strict UTF-8");
  PyObject *env = json_c_parse_strict(text);
  Py_DECREF(text);
  check(env && PyDict_CheckExact(env), "the envelope is a JSON object");
  return env;
}

static void check_result_round_trip(PyObject *req, const uint8_t *data,
                                    size_t size) {
  struct coil_error err = {0};
  reset(envelope_fd);
  if (protocol_write_result(envelope_fd, req, (const char *)data, size,
                            ENVELOPE_CAP, &err) < 0)
    return; /* refused (Infinity, too big): nothing to compare */
  PyObject *env = read_envelope();
  check(PyDict_GetItemString(env, "ok") == Py_True, "ok is true");
  PyObject *result = PyDict_GetItemString(env, "result");
  check(result && PyObject_RichCompareBool(result, req, Py_EQ) == 1,
        "the result comes back as sent");
  PyObject *out =
      PyUnicode_DecodeUTF8((const char *)data, (Py_ssize_t)size, "strict");
  PyObject *got = PyDict_GetItemString(env, "stdout");
  check(out && got && PyUnicode_Compare(out, got) == 0,
        "stdout comes back as printed");
  Py_DECREF(out);
  Py_DECREF(env);
}

/* json_c's encoder and decoder agree; the indent variant by input size. */
static void check_dumps_round_trip(PyObject *req, size_t size) {
  PyObject *args = PyTuple_Pack(1, req);
  PyObject *kw =
      size & 1 ? Py_BuildValue("{s:i,s:O}", "indent", 2, "sort_keys", Py_True)
               : NULL;
  check(args && (kw || !(size & 1)), "argument tuple");
  PyObject *s = json_c_dumps(NULL, args, kw);
  Py_DECREF(args);
  Py_XDECREF(kw);
  if (!s) {
    PyErr_Clear(); /* e.g. an int over the str conversion limit */
    return;
  }
  PyObject *largs = PyTuple_Pack(1, s);
  Py_DECREF(s);
  check(largs != NULL, "argument tuple");
  PyObject *back = json_c_loads(NULL, largs, NULL);
  Py_DECREF(largs);
  check(back != NULL, "loads reads what dumps wrote");
  check(PyObject_RichCompareBool(back, req, Py_EQ) == 1,
        "dumps then loads gives the request back");
  Py_DECREF(back);
}

static void check_error_envelope(const uint8_t *data, size_t size) {
  /* As a C string: the message ends at the first NUL, if any. */
  char *msg = malloc(size + 1);
  check(msg != NULL, "malloc");
  memcpy(msg, data, size);
  msg[size] = '\0';
  struct protocol_failure f = {.type = "Exception",
                               .message = msg,
                               .exception = "ValueError",
                               .line = 3,
                               .col = 7};
  reset(envelope_fd);
  protocol_write_error(envelope_fd, &f, (const char *)data, size);
  free(msg);
  PyObject *env = read_envelope();
  check(PyDict_GetItemString(env, "ok") == Py_False, "ok is false");
  PyObject *e = PyDict_GetItemString(env, "error");
  check(e && PyDict_CheckExact(e) && PyDict_GetItemString(e, "message"),
        "the error has a message");
  Py_DECREF(env);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fuzz_py_start();
  request_fd = memfd_create("request", MFD_CLOEXEC);
  envelope_fd = memfd_create("envelope", MFD_CLOEXEC);
  check(request_fd >= 0 && envelope_fd >= 0, "memfd_create");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reset(request_fd);
  check(write(request_fd, data, size) == (ssize_t)size &&
            lseek(request_fd, 0, SEEK_SET) == 0,
        "request written");
  PyObject *req = NULL;
  struct coil_error err = {0};
  if (protocol_read_request(request_fd, REQUEST_CAP, &req, &err) == 0) {
    check(req != NULL && !PyErr_Occurred(), "a parsed request, no exception");
    check_result_round_trip(req, data, size);
    check_dumps_round_trip(req, size);
    Py_DECREF(req);
  } else {
    check(!PyErr_Occurred(), "no exception left pending on refusal");
  }
  check_error_envelope(data, size);
  return 0;
}
