# coil — see README.md. `make` builds ./coil, `make check` runs every test.
PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
# Debian's python3.11 only: never a python found on PATH (pyenv etc.).
PY_PKG := PKG_CONFIG_LIBDIR=/usr/lib/x86_64-linux-gnu/pkgconfig:/usr/share/pkgconfig pkg-config python3-embed
PKGS := libseccomp libcap yajl mount libsystemd
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null) $(shell $(PY_PKG) --cflags 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null) $(shell $(PY_PKG) --libs 2>/dev/null)
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

OBJ := $(patsubst %.c,build/%.o,$(LIB_SRC) $(CMD_SRC))
LIB_OBJ := $(patsubst %.c,build/%.o,$(LIB_SRC))
ASAN_OBJ := $(patsubst %.c,build-asan/%.o,$(LIB_SRC) $(CMD_SRC))
ASAN_LIB_OBJ := $(patsubst %.c,build-asan/%.o,$(LIB_SRC))
CLANG_OBJ := $(patsubst %.c,build-clang/%.o,$(LIB_SRC) $(CMD_SRC))
UNIT_BIN := $(patsubst tests/unit/%.c,build/tests/%,$(UNIT_SRC))
UNIT_ASAN_BIN := $(patsubst tests/unit/%.c,build-asan/tests/%,$(UNIT_SRC))

.PHONY: all deps bundle check check-unit check-integration check-vm check-asan demo install clean bench format oast-demo \
        fuzz clean-fuzz

all: coil

coil: $(OBJ)
	$(CC) $(ALL_CFLAGS) $(HARDEN_CFLAGS) $(PIE_LDFLAGS) $(LDFLAGS) -o $@ $(OBJ) $(PKG_LIBS)

coil-asan: $(ASAN_OBJ)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(PIE_CFLAGS) $(PIE_LDFLAGS) $(LDFLAGS) -o $@ $(ASAN_OBJ) $(PKG_LIBS)

build/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(HARDEN_CFLAGS) -MMD -MP -c -o $@ $<

# The same tree built with clang, warnings as errors (make check builds it).
coil-clang: $(CLANG_OBJ)
	clang $(ALL_CFLAGS) $(HARDEN_CFLAGS) $(PIE_LDFLAGS) $(LDFLAGS) -o $@ $(CLANG_OBJ) $(PKG_LIBS)

build-clang/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	clang $(ALL_CFLAGS) $(HARDEN_CFLAGS) -MMD -MP -c -o $@ $<

build-asan/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(PIE_CFLAGS) -MMD -MP -c -o $@ $<

build/tests/%: tests/unit/%.c $(LIB_OBJ) $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(HARDEN_CFLAGS) $(PIE_LDFLAGS) $(LDFLAGS) -Itests/unit -o $@ $< $(LIB_OBJ) $(PKG_LIBS)

build-asan/tests/%: tests/unit/%.c $(ASAN_LIB_OBJ) $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(SAN_FLAGS) $(PIE_CFLAGS) $(PIE_LDFLAGS) $(LDFLAGS) -Itests/unit -o $@ $< $(ASAN_LIB_OBJ) $(PKG_LIBS)

# ---- the gate's policy: sandbox/gate_policy.py compiled by Debian's
# python3.11 (the interpreter coil embeds, so the marshal format matches)
# and embedded in gate.o as marshalled bytecode: no compile at run time.
build/gen/gate_policy.inc: sandbox/gate_policy.py Makefile
	@mkdir -p $(dir $@)
	/usr/bin/python3.11 -I -S -c 'import marshal,sys; src=open(sys.argv[1]).read(); \
	  sys.stdout.write(",".join(str(b) for b in marshal.dumps(compile(src, "<coil gate policy>", "exec"))))' \
	  $< > $@.tmp
	mv $@.tmp $@

build/sandbox/gate.o build-asan/sandbox/gate.o build-clang/sandbox/gate.o: build/gen/gate_policy.inc
build/sandbox/gate.o build-asan/sandbox/gate.o build-clang/sandbox/gate.o: ALL_CFLAGS += -Ibuild/gen
# ----

-include $(OBJ:.o=.d) $(ASAN_OBJ:.o=.d) $(CLANG_OBJ:.o=.d)

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
	clang $(ALL_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJ) $(FUZZ_HDR)
	clang $(ALL_CFLAGS) $(FUZZ_SAN) -fsanitize=fuzzer -Itests/fuzz -o $@ $< $(FUZZ_LIB_OBJ) $(PKG_LIBS)

build-fuzz/sandbox/gate.o: build/gen/gate_policy.inc
build-fuzz/sandbox/gate.o: ALL_CFLAGS += -Ibuild/gen

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

install: coil bundle
	install -D -m 0755 coil $(DESTDIR)$(PREFIX)/bin/coil
	install -D -m 0644 config.schema.json $(DESTDIR)$(PREFIX)/share/coil/config.schema.json
	install -d $(DESTDIR)$(PREFIX)/share/coil/bundles/python
	install -m 0644 bundles/python/config.json bundles/python/handler.py \
	  $(DESTDIR)$(PREFIX)/share/coil/bundles/python/
	cp -a bundles/python/rootfs $(DESTDIR)$(PREFIX)/share/coil/bundles/python/
	install -D -m 0644 sandbox/coil_client.py $(DESTDIR)$(PREFIX)/share/coil/python/coil_client.py

format:
	clang-format -i $(LIB_SRC) $(CMD_SRC) $(wildcard runtime/*.h sandbox/*.h cmd/*.h) $(UNIT_SRC)

clean:
	rm -rf build build-asan build-clang coil coil-asan coil-clang tests/.build
