"""The default Python bundle is reproducible and holds nothing it must not."""
import os
import subprocess

import harness

ROOTFS = os.path.join(harness.REPO, "bundles", "python", "rootfs")
FORBIDDEN = ("_ctypes", "_testcapi", "_testinternalcapi", "_xxsubinterpreters",
             "mmap")


def test_bundle_rebuild_matches_manifest():
    r = subprocess.run(["make", "-s", "-C", os.path.join(harness.REPO, "bundles"),
                        "verify"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, harness.describe(r)


def test_bundle_has_no_forbidden_extension_modules():
    found = []
    for dirpath, _, files in os.walk(ROOTFS):
        found += [os.path.join(dirpath, f) for f in files
                  if f.startswith(FORBIDDEN) and f.endswith(".so")]
    assert not found, found


def test_bundle_has_no_python_binary_and_is_root_owned():
    assert not os.path.exists(os.path.join(ROOTFS, "usr", "bin", "python3.11"))
    for dirpath, dirs, files in os.walk(ROOTFS):
        for name in dirs + files:
            st = os.lstat(os.path.join(dirpath, name))
            assert st.st_uid == 0 and st.st_gid == 0, (dirpath, name)
            assert not st.st_mode & 0o022, (dirpath, name, oct(st.st_mode))
