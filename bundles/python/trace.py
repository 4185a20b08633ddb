#!/usr/bin/python3
"""Summarise `strace -f -e trace=%file,getdents64` of the smoke probe: after
the chroot, every path that was opened must be an entry of MANIFEST; lists the
paths that were looked up and missing (loader probes, /etc/localtime)."""
import os
import re
import sys

trace, manifest = sys.argv[1], os.path.join(os.path.dirname(__file__), "MANIFEST")
entries = {"/" + l.rstrip("\n").split("  ")[2].rstrip("/") for l in open(manifest) if not l.startswith("#")}
entries.add("/")
call = re.compile(r'^\d+\s+(\w+)\((?:AT_FDCWD, )?"([^"]*)".*\) = (-?\d+)( \w+)?')
opened, missing, bad, after = set(), set(), [], False
for line in open(trace):
    m = call.match(line)
    if not m:
        continue
    name, path, rc, err = m.group(1), m.group(2), int(m.group(3)), (m.group(4) or "").strip()
    if name == "chroot":
        after = True
        continue
    if not after or not path:
        continue
    if rc >= 0 and name in ("openat", "open"):
        opened.add(path)
        if os.path.normpath(path) not in entries:
            bad.append(path)
    elif rc < 0:
        missing.add(f"{path} ({err})")
print(f"trace: after chroot {len(opened)} distinct files opened, all in MANIFEST: {not bad}")
ldso = {p for p in missing if "libcrypto" in p or re.search(r"/(tls|x86_64|glibc-hwcaps)", p)
        or p.startswith("/lib/x86_64-linux-gnu ")}
ext = {p for p in missing if re.search(r"__init__\.(abi3\.|cpython-311-x86_64-linux-gnu\.)?so ", p)}
print(f"trace: absent and looked up: {len(ldso)} ld.so search-path probes for libcrypto.so.3, "
      f"{len(ext)} package __init__ extension probes, and:")
for p in sorted(missing - ldso - ext):
    print("   ", p)
if bad:
    sys.exit(f"trace: opened outside the manifest: {bad}")
