#!/usr/bin/python3
"""Build coil's default Python rootfs reproducibly, or check it.

    build.py [OUT]              build OUT (default: rootfs next to this file)
    build.py --manifest [OUT]   the same, and write the manifest
    build.py --check [OUT]      verify: see check() below
    --manifest-path FILE        the manifest to write or check (default:
                                MANIFEST next to this file)

The manifest records the tree's inputs (`input  NAME  VALUE`: the Debian
package and version of every file copied into the tree or run to make it,
and this script's sha256), `sha256  mode  path` per entry, and the tree
digest. Building prints the inputs and warns when apt knows a newer version
of one than is installed.

The rootfs holds only what coil's embedded libpython3.11 needs in Python
sandbox mode: the stdlib modules that the helpers and the fixed pre-import
list load (found by an import-closure probe of Debian's own python3.11), their
lib-dynload extensions, libcrypto for _hashlib, a minimal openssl.cnf, and the
empty mount points of config.json. Every module ships as its .py plus an
unchecked-hash .pyc in __pycache__ (the interpreter never re-reads the source
nor writes bytecode; the source keeps stdlib tracebacks readable, ~0.9 MB).
No python binary, no /etc (no /etc/localtime: the guest runs in UTC; no
ld.so.cache: ld.so finds libcrypto in its built-in /usr/lib/x86_64-linux-gnu).

Run with Debian's /usr/bin/python3 (3.11, the version coil links). Root is
needed to make every entry root:root.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3.11"
STDLIB = "/usr/lib/python3.11"
DYNLOAD = STDLIB + "/lib-dynload"
LIBDIR = "/usr/lib/x86_64-linux-gnu"
EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "1672531200"))  # 2023-01-01

# The helpers user code may import (docs/gate.md, Helpers) and the modules
# coil pre-imports because the stdlib would import them lazily after lockdown
# (docs/gate.md, Lockdown and pre-imports).
HELPERS = ["json", "re", "base64", "hashlib", "hmac", "math", "struct",
           "binascii", "ipaddress", "datetime", "urllib.parse"]
PREIMPORT = ["_strptime", "encodings.ascii", "encodings.latin_1",
             "encodings.idna", "encodings.punycode", "encodings.utf_16",
             "encodings.utf_32", "encodings.cp1252", "encodings.utf_8_sig",
             "encodings.utf_16_be", "encodings.utf_16_le", "encodings.utf_32_be",
             "encodings.utf_32_le"]
# Calls that make the stdlib load what it loads lazily, so the probe sees it.
EXERCISE = r"""
hashlib.sha256(b"x").hexdigest(); hashlib.md5(b"x").digest()
hashlib.sha1(b"x"); hashlib.sha512(b"x"); hashlib.blake2b(b"x")
hmac.digest(b"k", b"m", "sha256"); hmac.new(b"k", b"m", "sha256").hexdigest()
json.loads(json.dumps({"a": [1, 2.5, "\u00e9", None]}, indent=1, sort_keys=True))
re.compile(r"(?i)a+[b-z]\w").findall("AAB"); re.sub(r"\d", "x", "a1")
datetime.datetime.strptime("2024-01-02 03:04:05", "%Y-%m-%d %H:%M:%S").strftime("%c %A")
datetime.datetime.fromisoformat("2024-01-02T03:04:05+00:00").astimezone(datetime.timezone.utc)
"\u00e9.example".encode("idna"); "x".encode("cp1252"); "x".encode("utf-16")
urllib.parse.urlsplit("http://a/b?c=d#e"); urllib.parse.parse_qs("a=1&b=%20")
urllib.parse.quote("a b/\u00e9"); urllib.parse.urlencode({"a": 1}); urllib.parse.urljoin("http://a/b", "../c")
list(ipaddress.ip_network("10.0.0.0/30").hosts()); ipaddress.ip_address("::1") in ipaddress.ip_network("::/0")
base64.b64encode(b"x"); base64.b85encode(b"x"); base64.b32decode(base64.b32encode(b"x")); base64.urlsafe_b64decode(b"eA==")
struct.unpack(">HI", struct.pack(">HI", 1, 2)); binascii.crc32(b"x"); math.isqrt(10)
"""
PROBE = (
    "import sys, json\n"
    f"import {', '.join(HELPERS + PREIMPORT)}\n"
    + EXERCISE +
    "out = []\n"
    "for name, mod in sys.modules.items():\n"
    "    spec = getattr(mod, '__spec__', None)\n"
    "    origin = getattr(spec, 'origin', None)\n"
    "    if origin and origin.startswith('/'):\n"
    "        out.append(origin)\n"
    "print(json.dumps(sorted(out)))\n")
# Read by init itself before anything is imported: the rest of start-up is
# frozen into libpython (docs/gate.md, Lockdown and pre-imports).
ALWAYS = ["encodings/__init__.py", "encodings/aliases.py", "encodings/utf_8.py"]
FORBIDDEN = ("_ctypes", "_testcapi", "_testinternalcapi", "_xxsubinterpreters",
             "mmap")
# Mount destinations of config.json (the rootfs is read-only: coil cannot
# create them). /dev: coil creates its default device nodes there (a tmpfs).
MOUNT_POINTS = ["tmp", "dev"]
# libcrypto's [openssl_init] is empty on Debian too; a fixed file keeps the
# digest independent of the `openssl` package and rules out .include.
OPENSSL_CNF = ("# coil default bundle: OpenSSL built-in defaults only.\n"
               "openssl_conf = openssl_init\n"
               "[openssl_init]\n")
# The files that make the .pyc besides the sources: the interpreter (marshal
# and the compiler are built into it) and py_compile.
COMPILER_FILES = [PY, STDLIB + "/py_compile.py"]
# The name of this script's digest among the manifest's inputs.
SELF = "build.py"
ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}
# Compiled in a fresh interpreter with a fixed state so that marshal's
# reference flags (they depend on refcounts) come out the same every time.
COMPILER = (
    "import json, py_compile, sys\n"
    "for src, dst, shown in json.load(sys.stdin):\n"
    "    py_compile.compile(src, cfile=dst, dfile=shown, doraise=True, optimize=0,\n"
    "        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\n")


def run(argv, stdin=None, check=True):
    return subprocess.run(argv, input=stdin, check=check, capture_output=True,
                          text=True, env=ENV).stdout


def module_closure():
    """Stdlib .py files and lib-dynload .so files the probe loaded."""
    py, so = set(ALWAYS), set()
    for origin in json.loads(run([PY, "-I", "-S", "-c", PROBE])):
        if origin.startswith(DYNLOAD + "/"):
            so.add(os.path.basename(origin))
        elif origin.startswith(STDLIB + "/") and origin.endswith(".py"):
            py.add(os.path.relpath(origin, STDLIB))
        else:
            sys.exit(f"build.py: unexpected module origin {origin}")
    bad = [s for s in so if s.split(".")[0] in FORBIDDEN]
    if bad:
        sys.exit(f"build.py: forbidden extension modules in the closure: {bad}")
    return sorted(py), sorted(so)


def shared_deps(paths):
    """Libraries that ldd lists for paths, recursively, minus libc/ld.so
    (already mapped in coil's process) and the vDSO."""
    seen, todo = {}, list(paths)
    while todo:
        for line in run(["ldd", todo.pop()]).splitlines():
            parts = line.split()
            if "=>" not in parts or len(parts) < 3 or not parts[2].startswith("/"):
                continue
            name, path = parts[0], parts[2]
            if name.startswith(("libc.so", "ld-linux", "linux-vdso")) or name in seen:
                continue
            seen[name] = os.path.realpath(path)
            todo.append(path)
    return sorted(seen.items())


def build(out):
    """Build the tree at out; return the host files it was made from."""
    py, so = module_closure()
    os.makedirs(out)
    lib = os.path.join(out, STDLIB.lstrip("/"))
    jobs = []
    for rel in py:
        dst = os.path.join(lib, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(os.path.join(STDLIB, rel), dst)
        d, f = os.path.split(dst)
        pyc = os.path.join(d, "__pycache__", f[:-3] + ".cpython-311.pyc")
        jobs.append([dst, pyc, os.path.join(STDLIB, rel)])
    run([PY, "-I", "-S", "-c", COMPILER], stdin=json.dumps(jobs))
    os.makedirs(os.path.join(out, DYNLOAD.lstrip("/")))
    for name in so:
        shutil.copyfile(os.path.join(DYNLOAD, name),
                        os.path.join(out, DYNLOAD.lstrip("/"), name))
    os.makedirs(os.path.join(out, LIBDIR.lstrip("/")))
    libs = shared_deps(os.path.join(DYNLOAD, s) for s in so)
    for name, path in libs:
        shutil.copyfile(path, os.path.join(out, LIBDIR.lstrip("/"), name))
    os.makedirs(os.path.join(out, "usr/lib/ssl"))
    with open(os.path.join(out, "usr/lib/ssl/openssl.cnf"), "w") as f:
        f.write(OPENSSL_CNF)
    for d in MOUNT_POINTS:
        os.makedirs(os.path.join(out, d))
    normalise(out)
    return ([os.path.join(STDLIB, rel) for rel in py] +
            [os.path.join(DYNLOAD, name) for name in so] +
            [path for _, path in libs] + COMPILER_FILES)


def normalise(out):
    for dirpath, dirs, files in os.walk(out, topdown=False):
        for name in files:
            p = os.path.join(dirpath, name)
            os.chown(p, 0, 0)
            os.chmod(p, 0o644)
            os.utime(p, (EPOCH, EPOCH))
        os.chown(dirpath, 0, 0)
        os.chmod(dirpath, 0o755)
        os.utime(dirpath, (EPOCH, EPOCH))


def inputs(files):
    """{name: value}: the installed version of each Debian package that owns
    one of files, and this script's digest."""
    files = sorted(set(files))
    owned = {}
    for line in run(["dpkg-query", "-S"] + files, check=False).splitlines():
        pkgs, sep, path = line.partition(": ")
        if sep and not line.startswith("diversion by "):
            owned[path] = pkgs.split(", ")
    for path in files:
        if path not in owned:
            sys.exit(f"build.py: {path}: not installed by any Debian package")
    pkgs = sorted({p for ps in owned.values() for p in ps})
    found = {}
    for line in run(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n"] + pkgs).splitlines():
        name, version = line.split(" ", 1)
        found[name] = version
    with open(os.path.abspath(__file__), "rb") as f:
        found[SELF] = "sha256:" + hashlib.sha256(f.read()).hexdigest()
    return found


def apt_candidates(pkgs):
    """{package: the version apt would install}, from apt's local lists; a
    package apt knows no candidate for is left out."""
    try:
        out = run(["apt-cache", "policy"] + pkgs, check=False)
    except OSError:
        return {}
    found, pkg = {}, None
    for line in out.splitlines():
        if not line.startswith(" ") and line.endswith(":"):
            pkg = line[:-1].split(":")[0]
            continue
        key, _, value = line.strip().partition(": ")
        if pkg in pkgs and key == "Candidate" and value and value != "(none)":
            found[pkg] = value
    return found


def report_inputs(found):
    """Print the inputs; warn on stderr for each package apt has a newer
    version of (e.g. a security update not yet installed)."""
    for name, value in sorted(found.items()):
        print(f"build.py: input {name} {value}")
    pkgs = sorted(n for n in found if n != SELF)
    for name, newer in sorted(apt_candidates(pkgs).items()):
        if subprocess.run(["dpkg", "--compare-versions", found[name], "lt", newer],
                          env=ENV).returncode == 0:
            print(f"build.py: warning: {name} {found[name]} is installed but apt "
                  f"has {newer}; the bundle is built from {found[name]}",
                  file=sys.stderr)


def manifest(root):
    """`sha256  mode  path` per entry (directories: `-`), sorted, then the
    digest of those lines. Fails on anything a build never makes."""
    lines, size = [], 0
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if st.st_uid or st.st_gid or int(st.st_mtime) != EPOCH:
                sys.exit(f"build.py: {rel}: owner/mtime not normalised")
            if os.path.isdir(p) and not os.path.islink(p):
                lines.append(f"-  {st.st_mode & 0o7777:04o}  {rel}/")
            elif os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as f:
                    data = f.read()
                size += len(data)
                lines.append(f"{hashlib.sha256(data).hexdigest()}  {st.st_mode & 0o7777:04o}  {rel}")
            else:
                sys.exit(f"build.py: {rel}: not a file or directory")
    lines.sort(key=lambda l: l.split("  ", 2)[2])
    total = hashlib.sha256("".join(l + "\n" for l in lines).encode()).hexdigest()
    return lines + [f"{total}  total  {len(lines)} entries, {size} bytes"]


def write_manifest(path, found, tree):
    with open(path, "w") as f:
        for name, value in sorted(found.items()):
            f.write(f"input  {name}  {value}\n")
        f.write("\n".join(tree) + "\n")


def read_manifest(path):
    """({name: value} of the `input` lines, the other lines)."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        sys.exit(f"build.py: {path}: {e.strerror}")
    found, tree = {}, []
    for line in lines:
        if line.startswith("input  "):
            _, name, value = line.split("  ", 2)
            found[name] = value
        else:
            tree.append(line)
    return found, tree


def compare(trees, want, ref):
    """Print whether each (what, lines) of trees equals want; 1 if any does
    not, with the lines only one side has."""
    bad = 0
    for what, lines in trees:
        if lines == want:
            print(f"verify: {what} matches {ref} (tree {want[-1].split()[0][:16]}...)")
            continue
        bad = 1
        print(f"verify: {what} differs from {ref}:", file=sys.stderr)
        for l in sorted(set(lines) ^ set(want), key=lambda l: l.split("  ")[-1]):
            print(("  + " if l in lines else "  - ") + l, file=sys.stderr)
    return bad


def check(out, mpath):
    """With the manifest's inputs installed, a fresh build and out (if it
    exists) must have the manifest's tree. With other inputs the manifest's
    tree cannot be expected: name each changed input, then build a second
    time elsewhere; both builds and out (if it exists) must be the same."""
    want_inputs, want = read_manifest(mpath)
    with tempfile.TemporaryDirectory(prefix="coil-rootfs-") as tmp:
        first = os.path.join(tmp, "first")
        found = inputs(build(first))
        got = manifest(first)
        existing = [(out, manifest(out))] if os.path.isdir(out) else []
        changed = [(n, want_inputs.get(n, "(none)"), found.get(n, "(none)"))
                   for n in sorted(set(want_inputs) | set(found))
                   if want_inputs.get(n) != found.get(n)]
        if not changed:
            print(f"verify: inputs are those of {mpath}")
            return compare([("a fresh build", got)] + existing, want, mpath)
        for name, was, now in changed:
            print(f"verify: input {name} changed: {mpath} has {was}, "
                  f"this machine has {now}", file=sys.stderr)
        print(f"verify: so the tree is not compared with {mpath}; checking "
              "instead that two builds in separate directories are identical")
        second = os.path.join(tmp, "second")
        build(second)
        bad = compare([("a second fresh build", manifest(second))] + existing,
                      got, "a first fresh build")
    if not bad:
        print("verify: reproducible")
    return bad


def main(argv):
    ap = argparse.ArgumentParser(allow_abbrev=False,
                                 description="Build coil's default Python rootfs.")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--manifest", action="store_true",
                      help="also write the manifest")
    mode.add_argument("--check", action="store_true",
                      help="verify the build against the manifest")
    ap.add_argument("--manifest-path", default=os.path.join(HERE, "MANIFEST"),
                    metavar="FILE", help="default: MANIFEST next to build.py")
    ap.add_argument("out", nargs="?", default=os.path.join(HERE, "rootfs"),
                    metavar="OUT", help="default: rootfs next to build.py")
    opts = ap.parse_args(argv)
    # stdout and stderr lines in the order they were printed, under make too.
    sys.stdout.reconfigure(line_buffering=True)
    out = os.path.abspath(opts.out)
    if os.geteuid() != 0:
        sys.exit("build.py: run as root (entries must be root:root)")
    if opts.check:
        return check(out, opts.manifest_path)
    tmp = out + ".new"
    shutil.rmtree(tmp, ignore_errors=True)
    found = inputs(build(tmp))
    tree = manifest(tmp)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    report_inputs(found)
    if opts.manifest:
        write_manifest(opts.manifest_path, found, tree)
    print(tree[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
