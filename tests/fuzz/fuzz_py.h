/* The embedded interpreter for the harnesses that need one, started once:
 * isolated as coil starts it, plus what fuzzing needs: a fixed hash seed
 * (the same input takes the same path every time) and the malloc allocator
 * (ASan sees every object, not pymalloc's arenas). Static inline: each
 * harness is its own program. */
#ifndef COIL_FUZZ_PY_H
#define COIL_FUZZ_PY_H

#include <Python.h>
#include <stdio.h>
#include <stdlib.h>

static inline void fuzz_py_start(void) {
  PyPreConfig pre;
  PyPreConfig_InitIsolatedConfig(&pre);
  pre.utf8_mode = 1;
  pre.allocator = PYMEM_ALLOCATOR_MALLOC;
  PyStatus st = Py_PreInitialize(&pre);
  PyConfig c;
  PyConfig_InitIsolatedConfig(&c);
  c.site_import = 0;
  c.write_bytecode = 0;
  c.install_signal_handlers = 0;
  c.use_hash_seed = 1;
  c.hash_seed = 0;
  if (!PyStatus_Exception(st))
    st = PyConfig_SetString(&c, &c.home, L"/usr");
  if (!PyStatus_Exception(st))
    st = Py_InitializeFromConfig(&c);
  PyConfig_Clear(&c);
  if (PyStatus_Exception(st)) {
    fprintf(stderr, "fuzz: cannot start the Python interpreter: %s\n",
            st.err_msg ? st.err_msg : "?");
    abort();
  }
}

#endif
