/* Smoke test of the default rootfs without coil (bundles/Makefile `smoke`).
 * probe ROOTFS SCRIPT: reads SCRIPT, chroots into ROOTFS, drops to uid/gid
 * 65534, initialises the embedded libpython3.11 with the configuration of
 * docs/gate.md (Embedding) and runs SCRIPT. Run it in a private mount
 * namespace with ROOTFS bound read-only. Not shipped in the rootfs. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void die(const char *what) { perror(what); exit(125); }

int main(int argc, char **argv) {
  static char code[1 << 16];
  if (argc != 3) { fprintf(stderr, "usage: probe ROOTFS SCRIPT\n"); return 2; }
  FILE *f = fopen(argv[2], "r");
  if (!f) die(argv[2]);
  code[fread(code, 1, sizeof code - 1, f)] = 0;
  fclose(f);
  if (chroot(argv[1]) < 0 || chdir("/") < 0) die("chroot");
  if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0) die("setuid");
  clearenv();

  PyPreConfig pre; PyPreConfig_InitIsolatedConfig(&pre); pre.utf8_mode = 1;
  PyStatus st = Py_PreInitialize(&pre);
  if (PyStatus_Exception(st)) Py_ExitStatusException(st);
  PyConfig c; PyConfig_InitIsolatedConfig(&c);
  c.site_import = 0; c.write_bytecode = 0; c.install_signal_handlers = 0;
  c.quiet = 1; c.pathconfig_warnings = 0;
  PyConfig_SetString(&c, &c.check_hash_pycs_mode, L"never");
  PyConfig_SetString(&c, &c.program_name, L"coil-init");
  PyConfig_SetString(&c, &c.home, L"/usr");
  PyConfig_SetString(&c, &c.executable, L"/usr/bin/coil-init");
  PyWideStringList_Append(&c.xoptions, L"int_max_str_digits=4300");
  c.module_search_paths_set = 1;
  PyWideStringList_Append(&c.module_search_paths, L"/usr/lib/python3.11");
  PyWideStringList_Append(&c.module_search_paths, L"/usr/lib/python3.11/lib-dynload");
  st = Py_InitializeFromConfig(&c);
  PyConfig_Clear(&c);
  if (PyStatus_Exception(st)) Py_ExitStatusException(st);
  int rc = PyRun_SimpleString(code) == 0 ? 0 : 1;
  fflush(stdout);
  _exit(rc);
}
