# coil — see README.md. `make` builds ./coil, `make check` runs every test.
PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
# Debian's python3.11 only: never a python found on PATH (pyenv etc.).
PY_PKG := PKG_CONFIG_LIBDIR=/usr/lib/x86_64-linux-gnu/pkgconfig:/usr/share/pkgconfig pkg-config python3-embed
PKGS := libseccomp libcap yajl mount
# libsystemd: its header only. coil loads the library when the systemd cgroup
# driver needs it (runtime/systemd_bus.c).
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) libsystemd 2>/dev/null) $(shell $(PY_PKG) --cflags 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
# libmount: loaded by coil when a container is built (runtime/libmount_load.c),
# so the executable does not link it. libseccomp, libcap and yajl are linked
# into the executable from their static archives: every command then starts
# without loading three more shared objects (runc's release builds link
# libseccomp statically too). coil-python.so uses the executable's copy
# (exports_list below), so one process never holds two copies of a library.
STATIC_LIBS := seccomp cap yajl_s
STATIC_ARCHIVES = $(foreach l,$(STATIC_LIBS),$(shell $(CC) -print-file-name=lib$(l).a))
EXE_LIBS := -Wl,-Bstatic $(addprefix -l,$(STATIC_LIBS)) -Wl,-Bdynamic
PY_LIBS := $(shell $(PY_PKG) --libs 2>/dev/null)
VERSION := 0.1.0

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wformat=2 -Wno-format-nonliteral -Wvla
CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -D_GNU_SOURCE -DCOIL_VERSION='"$(VERSION)"' -DCOIL_DATADIR='"$(PREFIX)/share/coil"' \
              -Iruntime -Isandbox $(PKG_CFLAGS)
SAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
# Every build is a PIE with full RELRO (GOT read-only after relocation, all
# symbols bound at start). The plain and clang builds also get FORTIFY and
# stack canaries; the ASan build does not: FORTIFY and ASan both instrument
# the same libc calls and do not combine. FORTIFY needs optimisation: -O2
# unless CFLAGS chose a level, and -U first so a compiler default does not
# clash.
PIE_CFLAGS := -fPIE
PIE_LDFLAGS := -pie -Wl,-z,relro,-z,now
HARDEN_CFLAGS := $(if $(filter -O%,$(CFLAGS)),,-O2) -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2 \
                 -fstack-protector-strong $(PIE_CFLAGS)

RUNTIME_SRC := $(sort $(wildcard runtime/*.c))
SANDBOX_SRC := $(sort $(wildcard sandbox/*.c))
CMD_SRC := $(sort $(wildcard cmd/*.c))
LIB_SRC := $(RUNTIME_SRC) $(SANDBOX_SRC)
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))

# The code that needs libpython is a shared object of its own, which coil
# loads only in a run that needs Python (sandbox/python_api.h): the sandbox's
# files that include Python.h, directly or through a sandbox header. The
# executable is everything else; it does not link libpython, and exports to
# the object exactly the functions the object calls (the exports list
# below). Each build has its object, found next to its binary.
empty :=
space := $(empty) $(empty)
PY_HDR := $(notdir $(shell grep -l '^\#include <Python.h>' sandbox/*.h))
PY_SRC := $(shell grep -lE '^\#include (<Python\.h>|"($(subst $(space),|,$(PY_HDR)))")' $(SANDBOX_SRC))
EXE_SRC := $(RUNTIME_SRC) $(filter-out $(PY_SRC),$(SANDBOX_SRC)) $(CMD_SRC)
PY_SO := coil-python.so
ASAN_PY_SO := coil-asan-python.so
CLANG_PY_SO := coil-clang-python.so

OBJ := $(patsubst %.c,build/%.o,$(EXE_SRC))
PY_OBJ := $(patsubst %.c,build/%.o,$(PY_SRC))
LIB_OBJ := $(patsubst %.c,build/%.o,$(LIB_SRC))
ASAN_OBJ := $(patsubst %.c,build-asan/%.o,$(EXE_SRC))
ASAN_PY_OBJ := $(patsubst %.c,build-asan/%.o,$(PY_SRC))
ASAN_LIB_OBJ := $(patsubst %.c,build-asan/%.o,$(LIB_SRC))
CLANG_OBJ := $(patsubst %.c,build-clang/%.o,$(EXE_SRC))
CLANG_PY_OBJ := $(patsubst %.c,build-clang/%.o,$(PY_SRC))
UNIT_BIN := $(patsubst tests/unit/%.c,build/tests/%,$(UNIT_SRC))
UNIT_ASAN_BIN := $(patsubst tests/unit/%.c,build-asan/tests/%,$(UNIT_SRC))

# The object's code is position-independent and hides every symbol but its
# table (also sandbox/python.map), so it never interposes on coil's.
$(PY_OBJ) $(ASAN_PY_OBJ) $(CLANG_PY_OBJ): PIC_CFLAGS := -fPIC -fvisibility=hidden
PY_SO_LDFLAGS := -shared -Wl,-z,relro,-z,now -Wl,--version-script=sandbox/python.map -Wl,--as-needed

# The functions of the executable the object calls: defined by one ($(2):
# coil's objects and the static archives it links), used by the other ($(1))
# (nm), exported by name with --dynamic-list.
define exports_list
	@mkdir -p $(dir $@)
	@nm -P -g --defined-only $(2) | awk 'NF > 2 && $$2 != "U" { print $$1 }' | sort -u > $@.def
	@nm -P -u $(1) | awk 'NF >= 2 { print $$1 }' | sort -u > $@.use
	@{ echo '{'; comm -12 $@.def $@.use | sed 's/.*/  &;/'; echo '};'; } > $@.tmp
	@rm -f $@.def $@.use
	@echo "exports list $@"
	@mv $@.tmp $@
endef

.PHONY: all deps bundle check check-unit check-integration check-vm check-asan demo install clean bench bench-vm format oast-demo \
        fuzz clean-fuzz

all: coil

# `make coil` builds its object too: a coil without it has no Python mode.
coil: $(OBJ) build/python-exports.list | $(PY_SO)
	$(CC) $(ALL_CFLAGS) $(HARDEN_CFLAGS) $(PIE_LDFLAGS) -Wl,--dynamic-list=build/python-exports.list $(LDFLAGS) -o $@ $(OBJ) $(EXE_LIBS)

$(PY_SO): $(PY_OBJ) sandbox/python.map
	$(CC) $(ALL_CFLAGS) $(HARDEN_CFLAGS) $(PY_SO_LDFLAGS) $(LDFLAGS) -o $@ $(PY_OBJ) $(PY_LIBS)

build/python-exports.list: $(OBJ) $(PY_OBJ)
	$(call exports_list,$(PY_OBJ),$(OBJ) $(STATIC_ARCHIVES))

coil-asan: $(ASAN_OBJ) build-asan/python-exports.list | $(ASAN_PY_SO)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(PIE_CFLAGS) $(PIE_LDFLAGS) -Wl,--dynamic-list=build-asan/python-exports.list $(LDFLAGS) -o $@ $(ASAN_OBJ) $(EXE_LIBS)

$(ASAN_PY_SO): $(ASAN_PY_OBJ) sandbox/python.map
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(PY_SO_LDFLAGS) $(LDFLAGS) -o $@ $(ASAN_PY_OBJ) $(PY_LIBS)

build-asan/python-exports.list: $(ASAN_OBJ) $(ASAN_PY_OBJ)
	$(call exports_list,$(ASAN_PY_OBJ),$(ASAN_OBJ) $(STATIC_ARCHIVES))

build/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DCOIL_PYTHON_OBJECT='"$(PY_SO)"' $(HARDEN_CFLAGS) $(PIC_CFLAGS) -MMD -MP -c -o $@ $<

# The same tree built with clang, warnings as errors (make check builds it).
coil-clang: $(CLANG_OBJ) build-clang/python-exports.list | $(CLANG_PY_SO)
	clang $(ALL_CFLAGS) $(HARDEN_CFLAGS) $(PIE_LDFLAGS) -Wl,--dynamic-list=build-clang/python-exports.list $(LDFLAGS) -o $@ $(CLANG_OBJ) $(EXE_LIBS)

$(CLANG_PY_SO): $(CLANG_PY_OBJ) sandbox/python.map
	clang $(ALL_CFLAGS) $(HARDEN_CFLAGS) $(PY_SO_LDFLAGS) $(LDFLAGS) -o $@ $(CLANG_PY_OBJ) $(PY_LIBS)

build-clang/python-exports.list: $(CLANG_OBJ) $(CLANG_PY_OBJ)
	$(call exports_list,$(CLANG_PY_OBJ),$(CLANG_OBJ) $(STATIC_ARCHIVES))

build-clang/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	clang $(ALL_CFLAGS) -DCOIL_PYTHON_OBJECT='"$(CLANG_PY_SO)"' $(HARDEN_CFLAGS) $(PIC_CFLAGS) -MMD -MP -c -o $@ $<

build-asan/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DCOIL_PYTHON_OBJECT='"$(ASAN_PY_SO)"' $(SAN_FLAGS) $(PIE_CFLAGS) $(PIC_CFLAGS) -MMD -MP -c -o $@ $<

# Unit tests link every object, the Python ones too, into one executable.
build/tests/%: tests/unit/%.c $(LIB_OBJ) $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(HARDEN_CFLAGS) $(PIE_LDFLAGS) $(LDFLAGS) -Itests/unit -o $@ $< $(LIB_OBJ) $(PKG_LIBS) $(PY_LIBS)

build-asan/tests/%: tests/unit/%.c $(ASAN_LIB_OBJ) $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(PIE_CFLAGS) $(PIE_LDFLAGS) $(LDFLAGS) -Itests/unit -o $@ $< $(ASAN_LIB_OBJ) $(PKG_LIBS) $(PY_LIBS)

# ---- Python shipped inside coil-python.so: the gate's policy
# (sandbox/gate_policy.py) and serve's warm-up (sandbox/serve_warm.py),
# compiled by Debian's python3.11 (the interpreter coil embeds, so the
# marshal format matches) and embedded as marshalled bytecode: no compile at
# run time.
build/gen/%.inc: sandbox/%.py Makefile
	@mkdir -p $(dir $@)
	/usr/bin/python3.11 -I -S -c 'import marshal,sys; src=open(sys.argv[1]).read(); \
	  sys.stdout.write(",".join(str(b) for b in marshal.dumps(compile(src, sys.argv[2], "exec"))))' \
	  $< '<coil $*>' > $@.tmp
	mv $@.tmp $@

build/sandbox/gate.o build-asan/sandbox/gate.o build-clang/sandbox/gate.o: build/gen/gate_policy.inc
build/sandbox/serve_warm.o build-asan/sandbox/serve_warm.o build-clang/sandbox/serve_warm.o: build/gen/serve_warm.inc
build/sandbox/gate.o build-asan/sandbox/gate.o build-clang/sandbox/gate.o \
build/sandbox/serve_warm.o build-asan/sandbox/serve_warm.o build-clang/sandbox/serve_warm.o: ALL_CFLAGS += -Ibuild/gen
# ----

-include $(LIB_OBJ:.o=.d) $(ASAN_LIB_OBJ:.o=.d) $(patsubst %.o,%.d,$(CLANG_OBJ) $(CLANG_PY_OBJ)) \
         $(patsubst %.c,build/%.d,$(CMD_SRC)) $(patsubst %.c,build-asan/%.d,$(CMD_SRC))

# ---- fuzzing: libFuzzer harnesses tests/fuzz/fuzz_<name>.c built by clang
# with ASan+UBSan into build-fuzz/. `make fuzz FUZZ_SECONDS=N` runs each for
# N seconds (tests/fuzz/run.sh). make check replays every harness's corpus
# and regressions through the unit tests tests/unit/test_fuzz_<name>.c (the
# same harness with tests/fuzz/replay.c's main, gcc, plain and ASan).
FUZZ_NAMES := config seccomp protocol gate
FUZZ_SECONDS ?= 60
FUZZ_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FUZZ_LIB_OBJ := $(patsubst %.c,build-fuzz/%.o,$(LIB_SRC))
FUZZ_BIN := $(patsubst %,build-fuzz/fuzz_%,$(FUZZ_NAMES))
FUZZ_HDR := $(wildcard tests/fuzz/*.h)

fuzz: deps
	$(MAKE) $(FUZZ_BIN)
	tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_NAMES)

build-fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(ALL_CFLAGS) -DCOIL_PYTHON_OBJECT='"$(PY_SO)"' $(FUZZ_SAN) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJ) $(FUZZ_HDR)
	clang $(ALL_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer -Itests/fuzz -o $@ $< $(FUZZ_LIB_OBJ) $(PKG_LIBS) $(PY_LIBS)

build-fuzz/sandbox/gate.o: build/gen/gate_policy.inc
build-fuzz/sandbox/serve_warm.o: build/gen/serve_warm.inc
build-fuzz/sandbox/gate.o build-fuzz/sandbox/serve_warm.o: ALL_CFLAGS += -Ibuild/gen

# tests/unit/test_fuzz_<name>.c includes its harness and replay.c: rebuild
# those unit tests when either changes.
FUZZ_REPLAY := $(patsubst %,build/tests/test_fuzz_%,$(FUZZ_NAMES)) \
               $(patsubst %,build-asan/tests/test_fuzz_%,$(FUZZ_NAMES))
$(FUZZ_REPLAY): %: tests/fuzz/replay.c $(FUZZ_HDR)
$(filter build/%,$(FUZZ_REPLAY)): build/tests/test_fuzz_%: tests/fuzz/fuzz_%.c
$(filter build-asan/%,$(FUZZ_REPLAY)): build-asan/tests/test_fuzz_%: tests/fuzz/fuzz_%.c

-include $(FUZZ_LIB_OBJ:.o=.d)

clean: clean-fuzz
clean-fuzz:
	rm -rf build-fuzz
# ----

# Installs the Debian packages the build and tests need, only when missing.
deps:
	@.ci/install-deps.sh

unit: $(UNIT_BIN)
unit-asan: $(UNIT_ASAN_BIN)

# The default Python bundle's rootfs (reproducible; see bundles/).
bundle:
	$(MAKE) -C bundles python

# Every test, plain and sanitizer builds; ends with "N passed, M failed".
check: deps
	$(MAKE) coil coil-asan coil-clang unit unit-asan bundle
	tests/run-all.sh

# Only the unit test binaries (plain and ASan), or only the integration suite;
# each ends with "N passed, M failed" and fails when a test fails.
check-unit: unit unit-asan
	COIL_TEST_PARTS=unit tests/run-all.sh

check-integration: coil coil-asan bundle
	COIL_TEST_PARTS=integration tests/run-all.sh

# The cgroup v2 part of the suite in a VM with a pure v2 hierarchy (Debian's
# kernel under qemu, this machine's root shared read-only; see tests/vm), and
# the systemd cgroup driver's tests in a second VM with systemd as PID 1.
check-vm: deps
	$(MAKE) coil bundle
	COIL_TEST_PARTS=vm COIL_TEST_VARIANTS=plain tests/run-all.sh

# ./coil too: test_build.py checks the plain build's hardening in every run.
check-asan: deps
	$(MAKE) coil coil-asan unit-asan bundle
	COIL_TEST_VARIANTS=asan tests/run-all.sh

demo: deps
	$(MAKE) coil bundle
	tests/demo.sh

bench: coil
	tests/bench/run.sh
	tests/bench/oast_bench.sh

# The OAST listener on loopback (DNS 127.0.0.1:5353, HTTP 127.0.0.1:8053),
# tenants t1 and t2 of oast/config.json, calling a coil serve (oast/serve.json)
# the demo starts; docs/oast.md. Ctrl-C stops both.
oast-demo: deps coil
	@[ -d bundles/python/rootfs/usr/lib/python3.11 ] || $(MAKE) bundle
	/usr/bin/python3 oast/demo.py

# The same benchmark inside the pure cgroup v2 VM of check-vm (tests/vm);
# under emulation (TCG) only its ratios mean anything. Not part of check.
bench-vm: coil bundle
	tests/vm/run.sh -- env $$(env | grep '^BENCH_' | tr '\n' ' ') tests/bench/vm.sh

# The object goes to lib/coil/ beside bin/, where coil looks for it
# (sandbox/python_load.h); not writable by group or others, or coil refuses
# to load it.
install: coil bundle
	install -D -m 0755 coil $(DESTDIR)$(PREFIX)/bin/coil
	install -D -m 0644 $(PY_SO) $(DESTDIR)$(PREFIX)/lib/coil/$(PY_SO)
	install -D -m 0644 config.schema.json $(DESTDIR)$(PREFIX)/share/coil/config.schema.json
	install -d $(DESTDIR)$(PREFIX)/share/coil/bundles/python
	install -m 0644 bundles/python/config.json bundles/python/handler.py \
	  $(DESTDIR)$(PREFIX)/share/coil/bundles/python/
	cp -a bundles/python/rootfs $(DESTDIR)$(PREFIX)/share/coil/bundles/python/
	install -D -m 0644 sandbox/coil_client.py $(DESTDIR)$(PREFIX)/share/coil/python/coil_client.py

format:
	clang-format -i $(LIB_SRC) $(CMD_SRC) $(wildcard runtime/*.h sandbox/*.h cmd/*.h) $(UNIT_SRC)

clean:
	rm -rf build build-asan build-clang coil coil-asan coil-clang tests/.build \
	  $(PY_SO) $(ASAN_PY_SO) $(CLANG_PY_SO)
