"""The built binaries are hardened: read from their ELF headers.

The plain build (./coil, what `make install` installs) is checked in full
whatever binary the suite runs against; the binary under test (COIL_BIN,
possibly the ASan build, which cannot use FORTIFY) and its Python object for
what every build has: PIE (the object: position-independent), full RELRO
and a non-executable stack; and that only the object links libpython."""

import os
import struct
import subprocess

from harness import COIL, COIL_PYTHON, REPO

ET_DYN = 3
PT_DYNAMIC, PT_INTERP = 2, 3
PT_GNU_STACK, PT_GNU_RELRO = 0x6474E551, 0x6474E552
PF_X = 1
DT_NULL, DT_NEEDED, DT_FLAGS, DT_FLAGS_1 = 0, 1, 30, 0x6FFFFFFB
DF_BIND_NOW, DF_1_NOW = 0x8, 0x1
SHT_DYNAMIC, SHT_DYNSYM = 6, 11
SHN_UNDEF = 0


class Elf:
    """The parts of a 64-bit little-endian ELF file these checks need."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = f.read()
        d = self.data
        assert d[:4] == b"\x7fELF", "%s is not an ELF file" % path
        assert d[4] == 2 and d[5] == 1, "%s is not 64-bit little-endian" % path
        (self.type, _, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize,
         shnum, _) = struct.unpack_from("<HHIQQQIHHHHHH", d, 16)
        # (type, flags, offset, vaddr, paddr, filesz, memsz, align)
        self.segments = [struct.unpack_from("<IIQQQQQQ", d, phoff + i * phentsize)
                         for i in range(phnum)]
        # (name, type, flags, addr, offset, size, link, info, align, entsize)
        self.sections = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize)
                         for i in range(shnum)]

    def segment(self, ptype):
        return next((s for s in self.segments if s[0] == ptype), None)

    def dynamic(self):
        """The (tag, value) entries of the dynamic segment."""
        seg = self.segment(PT_DYNAMIC)
        assert seg, "no PT_DYNAMIC segment"
        out = []
        for off in range(seg[2], seg[2] + seg[5], 16):
            tag, val = struct.unpack_from("<qQ", self.data, off)
            if tag == DT_NULL:
                break
            out.append((tag, val))
        return out

    def _string(self, strtab, off):
        end = self.data.index(b"\0", strtab + off)
        return self.data[strtab + off:end].decode()

    def _dynsyms(self):
        """(name, defined) of each named dynamic symbol."""
        for sh in self.sections:
            if sh[1] != SHT_DYNSYM:
                continue
            strtab = self.sections[sh[6]][4]
            for off in range(sh[4], sh[4] + sh[5], sh[9]):
                name, _, _, shndx, _, _ = struct.unpack_from("<IBBHQQ",
                                                             self.data, off)
                if name:
                    yield self._string(strtab, name), shndx != SHN_UNDEF

    def imports(self):
        """Names of the undefined symbols of the dynamic symbol table."""
        return {n for n, defined in self._dynsyms() if not defined}

    def exports(self):
        """Names of the defined symbols of the dynamic symbol table."""
        return {n for n, defined in self._dynsyms() if defined}

    def needed(self):
        """The libraries of the DT_NEEDED entries."""
        sh = next(s for s in self.sections if s[1] == SHT_DYNAMIC)
        strtab = self.sections[sh[6]][4]
        return [self._string(strtab, v) for t, v in self.dynamic()
                if t == DT_NEEDED]


def _pie_relro_now_nx(path, pie=True):
    elf = Elf(path)
    assert elf.type == ET_DYN and (elf.segment(PT_INTERP) or not pie), (
        "%s is not a PIE (type %d)" % (path, elf.type))
    assert elf.segment(PT_GNU_RELRO), "%s has no PT_GNU_RELRO" % path
    dyn = elf.dynamic()
    flags = sum(v for t, v in dyn if t == DT_FLAGS)
    flags_1 = sum(v for t, v in dyn if t == DT_FLAGS_1)
    assert flags & DF_BIND_NOW or flags_1 & DF_1_NOW, (
        "%s is not linked with -z now (DT_FLAGS %#x, DT_FLAGS_1 %#x)"
        % (path, flags, flags_1))
    stack = elf.segment(PT_GNU_STACK)
    assert stack and not stack[1] & PF_X, "%s has an executable stack" % path
    return elf


def test_plain_build_is_hardened():
    path = os.path.join(REPO, "coil")
    assert os.path.isfile(path), "%s is missing: run make" % path
    imports = _pie_relro_now_nx(path).imports()
    assert "__stack_chk_fail" in imports, (
        "%s has no stack protector (__stack_chk_fail not imported)" % path)
    fortified = sorted(n for n in imports
                       if n.startswith("__") and n.endswith("_chk")
                       and n != "__stack_chk_fail")
    assert fortified, "%s is not built with FORTIFY (no __*_chk import)" % path


def test_binary_under_test_is_pie_relro_now():
    _pie_relro_now_nx(COIL)


def test_executable_links_neither_python_nor_systemd_nor_libmount():
    # Every command would map and relocate them at start, twice with the
    # re-exec: only the Python object links libpython, the systemd cgroup
    # driver loads libsystemd when it is used, and container creation
    # loads libmount (with libblkid, libselinux and libpcre2).
    needed = Elf(COIL).needed()
    for lib in ("libpython", "libsystemd", "libmount", "libblkid",
                "libselinux"):
        assert not [n for n in needed if n.startswith(lib)], (
            "%s needs %s: %s" % (COIL, lib, needed))


def test_seccomp_cap_and_yajl_are_linked_once_into_the_executable():
    # Linked statically: no command loads them as shared objects at start,
    # and the Python object binds to the executable's copy rather than
    # loading a second one into the same process.
    for path in (COIL, COIL_PYTHON):
        needed = Elf(path).needed()
        for lib in ("libseccomp", "libcap", "libyajl"):
            assert not [n for n in needed if n.startswith(lib)], (
                "%s needs %s: %s" % (path, lib, needed))
    r = subprocess.run(["nm", "-D", "--defined-only", COIL],
                       stdout=subprocess.PIPE, text=True, check=True)
    exported = {line.split()[-1] for line in r.stdout.splitlines()}
    assert "yajl_gen_map_open" in exported, (
        "%s does not export yajl's generator to the Python object" % COIL)


def test_python_object_is_hardened_and_exports_only_its_table():
    assert os.path.isfile(COIL_PYTHON), "%s is missing: run make" % COIL_PYTHON
    elf = _pie_relro_now_nx(COIL_PYTHON, pie=False)
    assert [n for n in elf.needed() if n.startswith("libpython")], (
        "%s does not link libpython" % COIL_PYTHON)
    assert elf.exports() == {"coil_python_api"}, (
        "%s exports %s" % (COIL_PYTHON, sorted(elf.exports())))
