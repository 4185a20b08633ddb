"""The default Python bundle is reproducible and holds nothing it must not.

The verify tests build into temp dirs against manifests generated here, so
they hold on any Debian patch level of the bundle's input packages."""
import hashlib
import os
import subprocess

import harness

BUNDLES = os.path.join(harness.REPO, "bundles")
BUILD_PY = os.path.join(BUNDLES, "python", "build.py")
ROOTFS = os.path.join(BUNDLES, "python", "rootfs")
FORBIDDEN = ("_ctypes", "_testcapi", "_testinternalcapi", "_xxsubinterpreters",
             "mmap")
# The packages whose files are copied into the tree or compile its .pyc.
PACKAGES = ["libpython3.11-minimal", "libpython3.11-stdlib", "libssl3",
            "python3.11-minimal"]
ENTRY = "usr/lib/python3.11/base64.py"
EPOCH = int(os.environ.get("SOURCE_DATE_EPOCH", "1672531200"))


def make(*args):
    return subprocess.run(["make", "-s", "-C", BUNDLES] + list(args),
                          capture_output=True, text=True, timeout=300)


def verify(manifest, rootfs):
    return make("verify", "MANIFEST=" + manifest, "ROOTFS=" + rootfs)


def generate():
    """Builds a rootfs and its manifest (inputs: those installed here) into
    a temp dir; returns (manifest, rootfs, make's result)."""
    d = harness.tmpdir()
    manifest, rootfs = os.path.join(d, "MANIFEST"), os.path.join(d, "rootfs")
    r = make("manifest", "MANIFEST=" + manifest, "ROOTFS=" + rootfs)
    assert r.returncode == 0, harness.describe(r)
    return manifest, rootfs, r


def installed(pkg):
    return subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg],
                          capture_output=True, text=True, check=True).stdout


def apt_candidate(pkg):
    out = subprocess.run(["apt-cache", "policy", pkg], capture_output=True,
                         text=True).stdout
    for line in out.splitlines():
        key, _, value = line.strip().partition(": ")
        if key == "Candidate" and value != "(none)":
            return value
    return None


def older(a, b):
    return subprocess.run(["dpkg", "--compare-versions", a, "lt", b]).returncode == 0


def build_py_digest():
    with open(BUILD_PY, "rb") as f:
        return "sha256:" + hashlib.sha256(f.read()).hexdigest()


def read_lines(path):
    with open(path) as f:
        return f.read().splitlines()


def write_lines(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def tamper(rootfs):
    """Changes ENTRY's content, keeping its owner, mode and mtime."""
    p = os.path.join(rootfs, ENTRY)
    with open(p, "ab") as f:
        f.write(b"# changed\n")
    os.utime(p, (EPOCH, EPOCH))


def entry_hash(manifest):
    return [l for l in read_lines(manifest) if l.endswith("  " + ENTRY)][0].split()[0]


def test_bundle_rebuild_matches_manifest():
    r = make("verify")
    assert r.returncode == 0, harness.describe(r)


def test_bundle_build_prints_inputs_and_warns_of_newer_candidates():
    manifest, _, r = generate()
    lines = read_lines(manifest)
    want = {p: installed(p) for p in PACKAGES}
    want["build.py"] = build_py_digest()
    for name, value in want.items():
        assert "input  %s  %s" % (name, value) in lines, (name, lines[:8])
        assert "build.py: input %s %s\n" % (name, value) in r.stdout, harness.describe(r)
    assert len([l for l in lines if l.startswith("input  ")]) == len(want), lines[:8]
    for pkg in PACKAGES:
        newer = apt_candidate(pkg)
        warning = "build.py: warning: %s %s is installed but apt has %s;" % (
            pkg, want[pkg], newer)
        if newer and older(want[pkg], newer):
            assert warning in r.stderr, harness.describe(r)
        else:
            assert "warning: %s " % pkg not in r.stderr, harness.describe(r)


def test_bundle_verify_with_same_inputs_compares_the_tree():
    manifest, rootfs, _ = generate()
    r = verify(manifest, rootfs)
    assert r.returncode == 0, harness.describe(r)
    assert "verify: inputs are those of %s\n" % manifest in r.stdout, harness.describe(r)
    assert "verify: a fresh build matches %s " % manifest in r.stdout, harness.describe(r)
    assert "verify: %s matches %s " % (rootfs, manifest) in r.stdout, harness.describe(r)
    assert "changed" not in r.stderr and "two builds" not in r.stdout, harness.describe(r)


def test_bundle_verify_with_same_inputs_fails_on_a_different_tree():
    manifest, rootfs, _ = generate()
    good = entry_hash(manifest)
    wrong = os.path.join(os.path.dirname(manifest), "MANIFEST.wrong")
    write_lines(wrong, [l.replace(good, "0" * 64) for l in read_lines(manifest)])
    r = verify(wrong, rootfs)
    assert r.returncode != 0, harness.describe(r)
    assert "verify: a fresh build differs from %s:\n" % wrong in r.stderr, harness.describe(r)
    assert "  - %s  0644  %s\n" % ("0" * 64, ENTRY) in r.stderr, harness.describe(r)
    assert "  + %s  0644  %s\n" % (good, ENTRY) in r.stderr, harness.describe(r)

    tamper(rootfs)
    r = verify(manifest, rootfs)
    assert r.returncode != 0, harness.describe(r)
    assert "verify: a fresh build matches %s " % manifest in r.stdout, harness.describe(r)
    assert "verify: %s differs from %s:\n" % (rootfs, manifest) in r.stderr, harness.describe(r)
    assert "  - %s  0644  %s\n" % (good, ENTRY) in r.stderr, harness.describe(r)


def test_bundle_verify_with_other_inputs_names_them_and_builds_twice():
    manifest, rootfs, _ = generate()
    other = os.path.join(os.path.dirname(manifest), "MANIFEST.other")
    lines = []
    for l in read_lines(manifest):
        if l.startswith("input  libpython3.11-stdlib  "):
            l = "input  libpython3.11-stdlib  0~other"
        elif l.startswith("input  build.py  "):
            l = "input  build.py  sha256:" + "0" * 64
        elif l.startswith("input  libssl3  "):
            continue
        lines.append(l)
    write_lines(other, lines)
    r = verify(other, rootfs)
    assert r.returncode == 0, harness.describe(r)
    changed = sorted(l for l in r.stderr.splitlines() if l.startswith("verify: input "))
    assert changed == [
        "verify: input build.py changed: %s has sha256:%s, this machine has %s"
        % (other, "0" * 64, build_py_digest()),
        "verify: input libpython3.11-stdlib changed: %s has 0~other, this machine has %s"
        % (other, installed("libpython3.11-stdlib")),
        "verify: input libssl3 changed: %s has (none), this machine has %s"
        % (other, installed("libssl3")),
    ], harness.describe(r)
    assert "a fresh build matches" not in r.stdout, harness.describe(r)
    assert "verify: a second fresh build matches a first fresh build " in r.stdout, \
        harness.describe(r)
    assert "verify: %s matches a first fresh build " % rootfs in r.stdout, harness.describe(r)
    assert r.stdout.endswith("verify: reproducible\n"), harness.describe(r)

    tamper(rootfs)
    r = verify(other, rootfs)
    assert r.returncode != 0, harness.describe(r)
    assert "verify: %s differs from a first fresh build:\n" % rootfs in r.stderr, \
        harness.describe(r)
    assert "  + %s  0644  %s\n" % (entry_hash(manifest), ENTRY) not in r.stderr
    assert "  - %s  0644  %s\n" % (entry_hash(manifest), ENTRY) in r.stderr, harness.describe(r)
    assert "reproducible" not in r.stdout, harness.describe(r)


def test_bundle_has_no_forbidden_extension_modules():
    assert os.path.isdir(ROOTFS), "no %s: run make bundle" % ROOTFS
    found = []
    for dirpath, _, files in os.walk(ROOTFS):
        found += [os.path.join(dirpath, f) for f in files
                  if f.startswith(FORBIDDEN) and f.endswith(".so")]
    assert not found, found


def test_bundle_has_no_python_binary_and_fixed_owner_modes_mtimes():
    assert os.path.isdir(ROOTFS), "no %s: run make bundle" % ROOTFS
    assert not os.path.exists(os.path.join(ROOTFS, "usr", "bin"))
    for dirpath, dirs, files in os.walk(ROOTFS):
        for name in [dirpath] + [os.path.join(dirpath, f) for f in files]:
            st = os.lstat(name)
            assert st.st_uid == 0 and st.st_gid == 0, name
            assert st.st_mode & 0o7777 == (0o755 if name == dirpath else 0o644), \
                (name, oct(st.st_mode))
            assert int(st.st_mtime) == EPOCH, (name, st.st_mtime)
