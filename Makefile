# vitals: `make` builds everything, `make test` runs every test,
# `make bench` runs the benchmarks (never part of `make test`).
# SANITIZER=address|undefined builds into its own folder (make asan/ubsan).

CC       ?= cc
WERROR   ?= -Werror
OPT      ?= -O2 -g
WARN      = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wcast-qual -Wwrite-strings -Wformat=2 -Wundef
CFLAGS_ALL = -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) $(WERROR) -fPIC -pthread \
            -Iinclude -I. -MMD -MP $(CFLAGS)
LDLIBS_ALL = -pthread $(LDLIBS)

ifeq ($(SANITIZER),)
B := build
else
comma := ,
B := build-$(subst $(comma),-,$(SANITIZER))
CFLAGS_ALL += -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDLIBS_ALL += -fsanitize=$(SANITIZER)
endif

ZMQ_LIBS  = -lzmq
LMDB_LIBS = -llmdb
PCRE_LIBS = -lpcre2-8
JSON_LIBS = -ljson-c
CURSES_LIBS = -lncursesw
# vitalsd --http (libmicrohttpd), --alertmanager (libcurl, json-c),
# --remote-write (protobuf-c, snappy, libcurl).
FLEET_LIBS = -lmicrohttpd -lcurl $(JSON_LIBS) -lprotobuf-c -lsnappy

WIRE_SRC    = wire/wire.c
EMITTER_SRC = $(wildcard emitter/*.c)
STORE_SRC   = $(wildcard store/*.c)
DETECT_SRC  = $(wildcard detect/*.c)
TUI_SRC     = $(wildcard tui/*.c)
COLLECT_SRC = $(filter-out collector/main.c,$(wildcard collector/*.c))
CLI_SRC     = $(filter-out cli/main.c,$(wildcard cli/*.c))
COMMON_SRC  = $(wildcard common/*.c)

obj = $(patsubst %.c,$(B)/%.o,$(1))

LIB_OBJ     = $(call obj,$(EMITTER_SRC) $(WIRE_SRC))
STORE_OBJ   = $(call obj,$(STORE_SRC))
DETECT_OBJ  = $(call obj,$(DETECT_SRC))
TUI_OBJ     = $(call obj,$(TUI_SRC))
# The remote-write messages: proto/remote_write.proto compiled by protoc-c
# at build time (rule below), linked with the collector.
PROTO_OBJ   = $(B)/proto/remote_write.pb-c.o
COLLECT_OBJ = $(call obj,$(COLLECT_SRC)) $(PROTO_OBJ)
CLI_OBJ     = $(call obj,$(CLI_SRC))
COMMON_OBJ  = $(call obj,$(COMMON_SRC))

# The library exports only what include/vitals.h marks VT_API: its
# objects hide every other symbol (wire_*, vte_*), so the ABI is the header.
$(LIB_OBJ): CFLAGS_ALL += -fvisibility=hidden

BINS = $(B)/vitalsd $(B)/vitals $(B)/libvitals.a $(B)/libvitals.so \
       $(B)/vt-simtrainer

all: $(BINS)

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c $< -o $@

# protoc-c's output casts away const in its initialisers: built with
# that warning off, it is not our code.
$(B)/proto/remote_write.pb-c.c: proto/remote_write.proto
	@mkdir -p $(B)/proto
	protoc-c --c_out=$(B)/proto --proto_path=proto remote_write.proto
$(B)/proto/remote_write.pb-c.h: $(B)/proto/remote_write.pb-c.c
$(PROTO_OBJ): $(B)/proto/remote_write.pb-c.c
	$(CC) $(CFLAGS_ALL) -Wno-cast-qual -c $< -o $@
$(B)/collector/remote_write.o: $(B)/proto/remote_write.pb-c.h
$(B)/collector/remote_write.o: CFLAGS_ALL += -I$(B)

$(B)/libvitals.a: $(LIB_OBJ)
	ar rcs $@ $^

$(B)/libvitals.so: $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,libvitals.so.0 -o $@ $^ $(ZMQ_LIBS) $(LDLIBS_ALL)
	ln -sf libvitals.so $(B)/libvitals.so.0

$(B)/vitalsd: $(B)/collector/main.o $(COLLECT_OBJ) $(COMMON_OBJ) $(STORE_OBJ) $(DETECT_OBJ) $(call obj,$(WIRE_SRC))
	$(CC) -o $@ $^ $(ZMQ_LIBS) $(LMDB_LIBS) $(PCRE_LIBS) $(FLEET_LIBS) $(LDLIBS_ALL) -lm

$(B)/vitals: $(B)/cli/main.o $(CLI_OBJ) $(TUI_OBJ) $(COMMON_OBJ) $(STORE_OBJ) $(DETECT_OBJ) $(B)/libvitals.a
	$(CC) -o $@ $^ $(ZMQ_LIBS) $(LMDB_LIBS) $(PCRE_LIBS) $(JSON_LIBS) $(CURSES_LIBS) $(LDLIBS_ALL) -lm

$(B)/vt-simtrainer: $(B)/demo/simtrainer.o $(B)/libvitals.a
	$(CC) -o $@ $^ $(ZMQ_LIBS) $(LDLIBS_ALL) -lm

# Tests: one program per module, tests/test_<module>.c, each linked with
# everything it may need; tests/run.sh runs them and the integration
# scripts and prints the closing `N passed, N failed` line.
TEST_SRC  = $(wildcard tests/test_*.c)
TEST_BINS = $(patsubst tests/%.c,$(B)/tests/%,$(TEST_SRC))
TEST_HELPERS = $(patsubst tests/helpers/%.c,$(B)/tests/%,$(wildcard tests/helpers/*.c))

$(B)/tests/%: $(B)/tests/%.o $(COLLECT_OBJ) $(COMMON_OBJ) $(STORE_OBJ) $(DETECT_OBJ) $(CLI_OBJ) $(TUI_OBJ) $(B)/libvitals.a
	$(CC) -o $@ $^ $(ZMQ_LIBS) $(LMDB_LIBS) $(PCRE_LIBS) $(JSON_LIBS) $(CURSES_LIBS) $(FLEET_LIBS) $(LDLIBS_ALL) -lm

$(B)/tests/%: $(B)/tests/helpers/%.o $(B)/libvitals.a
	$(CC) -o $@ $^ $(ZMQ_LIBS) $(LDLIBS_ALL) -lm

# slowreader opens the store itself (a viewer holding a read transaction).
$(B)/tests/slowreader: $(B)/tests/helpers/slowreader.o $(STORE_OBJ) $(call obj,$(WIRE_SRC))
	$(CC) -o $@ $^ $(LMDB_LIBS) $(LDLIBS_ALL)

BENCH_SRC  = $(wildcard bench/bench_*.c)
BENCH_BINS = $(patsubst bench/%.c,$(B)/bench/%,$(BENCH_SRC))

$(B)/bench/%: $(B)/bench/%.o $(B)/bench/realistic.o $(COLLECT_OBJ) $(COMMON_OBJ) $(STORE_OBJ) $(DETECT_OBJ) $(CLI_OBJ) $(TUI_OBJ) $(B)/libvitals.a
	$(CC) -o $@ $^ $(ZMQ_LIBS) $(LMDB_LIBS) $(PCRE_LIBS) $(JSON_LIBS) $(CURSES_LIBS) $(FLEET_LIBS) $(LDLIBS_ALL) -lm

# Fuzzing: libFuzzer targets in fuzz/ (clang, ASan + UBSan), run for
# FUZZ_SECONDS each by `make fuzz`. The same targets are built with the
# normal compiler into $(B)/tests/test_fuzz_<target> and run over the seed
# corpus and every input that once crashed (fuzz/regress/<target>/) by
# `make test`.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FZ            = build-fuzz
FUZZ_CFLAGS   = -std=c11 -D_GNU_SOURCE -g -O1 -Iinclude -I. \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_TARGETS  = wire block rules replay engine scrape
FUZZ_SRC_wire   = wire/wire.c collector/feed.c $(DETECT_SRC)
FUZZ_SRC_block  = store/block.c
FUZZ_SRC_rules  = $(DETECT_SRC)
FUZZ_SRC_replay = cli/replay_input.c $(DETECT_SRC)
FUZZ_SRC_engine = $(DETECT_SRC)
FUZZ_SRC_scrape = cli/scrape.c
FUZZ_LIBS       = $(PCRE_LIBS) $(JSON_LIBS) -lm

$(FZ)/fuzz_%: fuzz/fuzz_%.c $(WIRE_SRC) collector/feed.c collector/feed.h $(DETECT_SRC) store/block.c cli/replay_input.c cli/scrape.c
	@mkdir -p $(FZ)
	$(FUZZ_CC) $(FUZZ_CFLAGS) fuzz/fuzz_$*.c $(FUZZ_SRC_$*) -o $@ $(FUZZ_LIBS)

$(B)/tests/test_fuzz_%: fuzz/fuzz_%.c fuzz/driver.c $(WIRE_SRC) collector/feed.c collector/feed.h $(DETECT_SRC) store/block.c cli/replay_input.c cli/scrape.c
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS_ALL) -DFUZZ_NAME='"$*"' fuzz/fuzz_$*.c fuzz/driver.c $(FUZZ_SRC_$*) -o $@ $(FUZZ_LIBS) $(LDLIBS_ALL)

FUZZ_REGRESS = $(patsubst %,$(B)/tests/test_fuzz_%,$(FUZZ_TARGETS))

fuzz:
	@$(MAKE) --no-print-directory $(patsubst %,$(FZ)/fuzz_%,$(FUZZ_TARGETS))
	@FZ=$(FZ) FUZZ_SECONDS=$(FUZZ_SECONDS) sh fuzz/run.sh $(FUZZ_TARGETS)

.PHONY: all deps test test-ci test-build fuzz bench bench-detect bench-peers bench-peers-wide demo asan ubsan clean format

# Installs what building and testing need, when run as root on Debian.
deps:
	@sh scripts/deps.sh

test-build: all $(TEST_BINS) $(TEST_HELPERS) $(FUZZ_REGRESS)

test: deps
	@$(MAKE) --no-print-directory test-build
	@B=$(B) sh tests/run.sh

# CI: every test, then the test programs and the main integration
# scripts again against an AddressSanitizer + UBSan build; one total.
test-ci: deps
	@$(MAKE) --no-print-directory test-build
	@$(MAKE) --no-print-directory SANITIZER=address,undefined test-build
	@B=$(B) SAN_B=build-address-undefined sh tests/run.sh

asan:
	@$(MAKE) --no-print-directory SANITIZER=address test

ubsan:
	@$(MAKE) --no-print-directory SANITIZER=undefined test

bench: deps
	@$(MAKE) --no-print-directory all $(BENCH_BINS) OPT="-O2 -g -DNDEBUG"
	@B=$(B) sh bench/run.sh

bench-detect: deps
	@$(MAKE) --no-print-directory $(B)/bench/bench_detect OPT="-O2 -g -DNDEBUG"
	@$(B)/bench/bench_detect

bench-peers: deps
	@$(MAKE) --no-print-directory all $(BENCH_BINS)
	@B=$(B) sh bench/peers.sh

bench-peers-wide: deps
	@$(MAKE) --no-print-directory all $(BENCH_BINS)
	@B=$(B) sh bench/peers.sh --wide

.PHONY: bench-wide-e2e
bench-wide-e2e: deps
	@$(MAKE) --no-print-directory all $(B)/bench/bench_wide_e2e OPT="-O2 -g -DNDEBUG"
	@T=$$(mktemp -d /tmp/vitals-wide-e2e.XXXXXX) && $(B)/bench/bench_wide_e2e $(B)/vitalsd $$T; rc=$$?; rm -rf $$T; exit $$rc

demo: deps
	@$(MAKE) --no-print-directory all
	@B=$(B) sh demo/demo.sh

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-address build-undefined build-address-undefined build-fuzz

-include $(shell find $(B) -name '*.d' 2>/dev/null)

# Keep objects of pattern-built programs (tests, benches) between runs.
.SECONDARY:

# ---- Install ---------------------------------------------------------------
# `make install` / `make uninstall`, with PREFIX (default /usr/local) and
# DESTDIR (staging, as packagers use it). The shared library is installed
# under its full version, libvitals.so.MAJOR.MINOR.PATCH, with the soname
# link libvitals.so.0 (what programs load) and the dev link libvitals.so
# (what -lvitals finds). Run ldconfig after installing into a system
# folder. The version comes from include/vitals.h, the one place it lives.
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
PKGCONFIGDIR   ?= $(LIBDIR)/pkgconfig
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
INSTALL    ?= install

VT_VERSION := $(shell sed -n 's/^\#define VT_VERSION_STR "\(.*\)"/\1/p' include/vitals.h)
VT_SOMAJOR := $(firstword $(subst ., ,$(VT_VERSION)))
VT_SONAME   = libvitals.so.$(VT_SOMAJOR)
VT_SOFILE   = libvitals.so.$(VT_VERSION)

# Files generated from a template with the install folders filled in.
$(B)/vitals.pc: vitals.pc.in include/vitals.h
	@mkdir -p $(B)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VT_VERSION)|g' \
	    vitals.pc.in >$@

$(B)/vitalsd.service: packaging/systemd/vitalsd.service.in
	@mkdir -p $(B)
	sed -e 's|@BINDIR@|$(BINDIR)|g' $< >$@

# The generated files depend on PREFIX and friends: always regenerate.
.PHONY: install uninstall $(B)/vitals.pc $(B)/vitalsd.service

install: $(B)/vitals $(B)/vitalsd $(B)/libvitals.so $(B)/libvitals.a \
	 $(B)/vitals.pc $(B)/vitalsd.service
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) \
	    $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) \
	    $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
	    $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(SYSTEMDUNITDIR)
	$(INSTALL) -m 755 $(B)/vitals $(B)/vitalsd $(DESTDIR)$(BINDIR)/
	$(INSTALL) -m 644 include/vitals.h $(DESTDIR)$(INCLUDEDIR)/vitals.h
	$(INSTALL) -m 755 $(B)/libvitals.so $(DESTDIR)$(LIBDIR)/$(VT_SOFILE)
	ln -sf $(VT_SOFILE) $(DESTDIR)$(LIBDIR)/$(VT_SONAME)
	ln -sf $(VT_SONAME) $(DESTDIR)$(LIBDIR)/libvitals.so
	$(INSTALL) -m 644 $(B)/libvitals.a $(DESTDIR)$(LIBDIR)/libvitals.a
	$(INSTALL) -m 644 $(B)/vitals.pc $(DESTDIR)$(PKGCONFIGDIR)/vitals.pc
	$(INSTALL) -m 644 man/vitals.1 $(DESTDIR)$(MANDIR)/man1/vitals.1
	$(INSTALL) -m 644 man/libvitals.3 $(DESTDIR)$(MANDIR)/man3/libvitals.3
	$(INSTALL) -m 644 man/vitalsd.8 $(DESTDIR)$(MANDIR)/man8/vitalsd.8
	$(INSTALL) -m 644 $(B)/vitalsd.service \
	    $(DESTDIR)$(SYSTEMDUNITDIR)/vitalsd.service

# Removes exactly what install put there (the folders may be shared).
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/vitals $(DESTDIR)$(BINDIR)/vitalsd \
	    $(DESTDIR)$(INCLUDEDIR)/vitals.h \
	    $(DESTDIR)$(LIBDIR)/$(VT_SOFILE) $(DESTDIR)$(LIBDIR)/$(VT_SONAME) \
	    $(DESTDIR)$(LIBDIR)/libvitals.so $(DESTDIR)$(LIBDIR)/libvitals.a \
	    $(DESTDIR)$(PKGCONFIGDIR)/vitals.pc \
	    $(DESTDIR)$(MANDIR)/man1/vitals.1 \
	    $(DESTDIR)$(MANDIR)/man3/libvitals.3 \
	    $(DESTDIR)$(MANDIR)/man8/vitalsd.8 \
	    $(DESTDIR)$(SYSTEMDUNITDIR)/vitalsd.service
