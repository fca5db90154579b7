# Turnstate: build, test, run, install, benchmark.
#
#   make run       set up, build, and run the C demo (plugins loaded from a folder)
#   make test      every test: Swift (also under TSan), C (also under valgrind),
#                  exported symbols, pkg-config consumer, Python, plugins,
#                  the shutdown protocol model (spin), the concurrency
#                  torture test (ASan and TSan), fault injection, the fuzz
#                  corpora replayed, the C and plugin suites under ASan
#   make fuzz      libFuzzer harnesses (FUZZ_SECONDS each, default 60)
#   make install PREFIX=/usr/local   the library, headers and turnstate.pc
#   make bench     release benchmarks, printed as one table
#   make coverage  line and branch coverage of Sources/ and Plugins/ from the
#                  Swift, C, JSON, Python, plugin and fault-injection suites
#                  (not part of test)
#   make fuzz      the libFuzzer harnesses (Tests/fuzz), FUZZ_SECONDS (60) each,
#                  against an ASan build (not part of test; test-fuzz-replay,
#                  test-c-asan and test-plugins-asan are)
#
# Everything built lands in build/ (C programs, the library) and .build*/
# (SwiftPM); both are ignored by git.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
VERSION := $(shell sed -n 's/^\#define TS_VERSION_MAJOR \([0-9]*\)/\1/p' Include/turnstate.h).$(shell sed -n 's/^\#define TS_VERSION_MINOR \([0-9]*\)/\1/p' Include/turnstate.h).$(shell sed -n 's/^\#define TS_VERSION_PATCH \([0-9]*\)/\1/p' Include/turnstate.h)
SOVERSION := $(firstword $(subst ., ,$(VERSION)))

BUILD := $(CURDIR)/build
LIB := $(BUILD)/lib/libturnstate.so
SWIFT ?= swift
# The shipped library: a SONAME, and a version script that exports only ts_*.
# DWARF 4: Debian 12's valgrind (3.19) cannot read the DWARF 5 that Swift emits.
DWARF4 := -Xswiftc -dwarf-version=4 -Xcc -gdwarf-4 -Xcxx -gdwarf-4
LIB_LDFLAGS := $(DWARF4) -Xlinker --version-script=$(CURDIR)/Sources/TurnstateC/exports.map \
               -Xlinker -soname -Xlinker libturnstate.so.$(SOVERSION)
# What ships (the library and the Swift logger plugin) carries no path into
# the build machine's toolchain: libturnstate finds its private copy of the
# Swift runtime in $ORIGIN/turnstate (LIBDIR/turnstate, filled by
# pkgconfig/swift-runtime.sh), and a Swift plugin uses the copy that
# libturnstate has already loaded (the loader matches the runtime's SONAMEs),
# so a process maps one Swift runtime. Neither links the standard library's
# string processing (libswift_StringProcessing, libswift_RegexParser), which
# they do not use.
SHIP_SWIFTFLAGS := -Xswiftc -no-toolchain-stdlib-rpath --disable-local-rpath \
                   -Xswiftc -Xfrontend -Xswiftc -disable-implicit-string-processing-module-import
LIB_SHIP_FLAGS := $(SHIP_SWIFTFLAGS) -Xlinker -rpath -Xlinker '$$ORIGIN/turnstate'
# Installed in LIBDIR/turnstate/plugins, the logger names the runtime folder
# LIBDIR/turnstate as $ORIGIN/.. (for ldd and loaders that open it by path;
# the store opens plugins through /proc/self/fd, where the runtime that
# libturnstate loaded is what it gets).
PLUGIN_SHIP_FLAGS := $(SHIP_SWIFTFLAGS) -Xlinker -rpath -Xlinker '$$ORIGIN/..'
RELEASE_SCRATCH := .build-release
# `make coverage` builds the library in another configuration and scratch path
# (debug, instrumented) and points BUILD at build/coverage; see Tests/coverage/run.sh.
LIB_CONFIG ?= release
LIB_SWIFTFLAGS ?=
PLUGIN_SCRATCH ?= .build-plugins
PLUGIN_SWIFTFLAGS ?=

CC ?= cc
CFLAGS ?= -std=c99 -O2 -g -Wall -Wextra -Werror -pedantic
C_LINK := -L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib -lturnstate -lpthread
VALGRIND := valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
            --show-leak-kinds=definite,indirect --suppressions=$(CURDIR)/Tests/c/valgrind.supp

PLUGIN_CFLAGS := -std=c99 -O2 -g -Wall -Wextra -Werror -pedantic -shared -fPIC -IInclude
C_PLUGINS := guard delay journal
# The demo's plugin folder: loaded in name order, guard first, journal last.
DEMO_PLUGINS := $(BUILD)/demo/plugins

.PHONY: setup build lib plugins demo-plugins examples run test install uninstall clean deb test-deb \
        test-swift test-swift-tsan test-json test-c test-exports test-pkgconfig test-install test-python test-plugins test-readme \
        test-model test-torture test-faults lib-tsan bench coverage \
        asan-lib asan-plugins fuzz-build fuzz test-fuzz-replay test-c-asan test-plugins-asan

setup:
	@.ci/setup.sh

## build: the library, the plugins, the examples
build: setup lib plugins examples

lib: setup
	$(SWIFT) build -c $(LIB_CONFIG) --scratch-path $(RELEASE_SCRATCH) --product turnstate $(LIB_LDFLAGS) $(LIB_SHIP_FLAGS) $(LIB_SWIFTFLAGS)
	@mkdir -p $(BUILD)/lib
	@# The private Swift runtime beside it, as installed: build/lib/turnstate.
	@pkgconfig/swift-runtime.sh $(BUILD)/lib/turnstate $(RELEASE_SCRATCH)/$(LIB_CONFIG)/libturnstate.so >/dev/null
	@# A new file, renamed into place: never rewrite a library a running process has mapped.
	@install -m 0755 $(RELEASE_SCRATCH)/$(LIB_CONFIG)/libturnstate.so $(BUILD)/lib/.libturnstate.so.new
	@mv -f $(BUILD)/lib/.libturnstate.so.new $(BUILD)/lib/libturnstate.so.$(VERSION)
	@ln -sf libturnstate.so.$(VERSION) $(BUILD)/lib/libturnstate.so.$(SOVERSION)
	@ln -sf libturnstate.so.$(SOVERSION) $(BUILD)/lib/libturnstate.so
	@echo "built $(BUILD)/lib/libturnstate.so.$(VERSION)"

## plugins: build/plugins/NAME.so; C plugins need only the headers (no libturnstate)
plugins: setup
	@mkdir -p $(BUILD)/plugins
	@for p in $(C_PLUGINS); do \
	  echo "cc $$p.so"; \
	  $(CC) $(PLUGIN_CFLAGS) Plugins/$$p/$$p.c -o $(BUILD)/plugins/$$p.so -lpthread; \
	done
	$(SWIFT) build -c $(LIB_CONFIG) --scratch-path $(PLUGIN_SCRATCH) --product turnstate-logger $(PLUGIN_SHIP_FLAGS) $(PLUGIN_SWIFTFLAGS)
	@cp -f $(PLUGIN_SCRATCH)/$(LIB_CONFIG)/libturnstate-logger.so $(BUILD)/plugins/logger.so

demo-plugins: plugins
	@rm -rf $(BUILD)/demo && mkdir -p $(DEMO_PLUGINS) && chmod 0755 $(BUILD)/demo $(DEMO_PLUGINS)
	@cp Examples/plugins/*.json $(DEMO_PLUGINS)/
	@sed -i 's|@DEMO@|$(BUILD)/demo|' $(DEMO_PLUGINS)/*.json
	@cp $(BUILD)/plugins/guard.so $(DEMO_PLUGINS)/10-guard.so
	@cp $(BUILD)/plugins/logger.so $(DEMO_PLUGINS)/20-logger.so
	@cp $(BUILD)/plugins/delay.so $(DEMO_PLUGINS)/30-delay.so
	@cp $(BUILD)/plugins/journal.so $(DEMO_PLUGINS)/90-journal.so
	@chmod 0644 $(DEMO_PLUGINS)/*

examples: lib
	@mkdir -p $(BUILD)/bin
	$(CC) $(CFLAGS) -IInclude Examples/todo.c -o $(BUILD)/bin/todo $(C_LINK)

## run: the C demo, with the plugins of build/demo/plugins
run: build demo-plugins
	$(BUILD)/bin/todo $(DEMO_PLUGINS)

## test: every suite; a summary line at the end
test: setup
	@Tests/run-suites.sh test-swift test-swift-tsan test-json test-c test-exports test-pkgconfig test-python \
	  test-plugins test-install test-readme test-model test-torture test-faults test-fuzz-replay test-c-asan test-plugins-asan \
	  test-deb

test-swift: setup
	$(SWIFT) test --scratch-path .build

test-swift-tsan: setup
	$(SWIFT) test --scratch-path .build-tsan --sanitize=thread

test-json: setup
	Tests/json/run.sh

test-c: lib
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS) -IInclude Tests/c/test_store.c -o $(BUILD)/tests/test_store $(C_LINK)
	$(BUILD)/tests/test_store
	$(VALGRIND) $(BUILD)/tests/test_store --quick

test-exports: lib
	Tests/abi/check_exports.sh Include/turnstate.h $(LIB)

test-pkgconfig: lib
	Tests/pkgconfig/run.sh

## test-install: what `make install` ships runs with the Swift toolchain hidden
## (a private mount namespace): every plugin loaded, one Swift runtime mapped
test-install: lib plugins
	Tests/install/run.sh

test-python: lib
	TURNSTATE_LIB=$(LIB) python3 -m unittest discover -s Tests/python -v

test-readme: lib
	Tests/readme/check.sh

## test-model: spin checks the shutdown protocol model, and that it catches
## each deliberately broken variant (Sources/TurnstateC/ShutdownProtocol.pml)
test-model: setup
	Tests/model/run.sh

## test-faults: fault injection (Tests/faults): every scenario of C API calls
## runs again for each N with the Nth allocation (or I/O call, or thread
## set-up call) failing, in a forked child; checks the statuses, that a failed
## call changed nothing, and where a crash came from. FAULTS_ARGS="--stride 10"
## for a quick look.
FAULTS_CC ?= $(CC)
test-faults: lib plugins
	@mkdir -p $(BUILD)/tests
	$(FAULTS_CC) -std=c99 -O2 -g -Wall -Wextra -Werror -pedantic -shared -fPIC Tests/faults/inject.c \
	  -o $(BUILD)/tests/inject.so -ldl
	$(FAULTS_CC) -std=c99 -O2 -g -Wall -Wextra -Werror -pedantic -IInclude -ITests/faults Tests/faults/test_faults.c \
	  -o $(BUILD)/tests/test_faults $(C_LINK) -ldl
	SWIFT_BACKTRACE=enable=no LD_PRELOAD=$(BUILD)/tests/inject.so \
	  $(BUILD)/tests/test_faults --plugins $(BUILD)/plugins $(FAULTS_ARGS)

## lib-tsan: the library built with -sanitize=thread, in build/tsan/lib
lib-tsan: setup
	$(SWIFT) build -c release --scratch-path .build-tsan-lib --product turnstate --sanitize=thread $(LIB_LDFLAGS)
	@mkdir -p $(BUILD)/tsan/lib
	@install -m 0755 .build-tsan-lib/release/libturnstate.so $(BUILD)/tsan/lib/.libturnstate.so.new
	@mv -f $(BUILD)/tsan/lib/.libturnstate.so.new $(BUILD)/tsan/lib/libturnstate.so.$(VERSION)
	@ln -sf libturnstate.so.$(VERSION) $(BUILD)/tsan/lib/libturnstate.so.$(SOVERSION)
	@ln -sf libturnstate.so.$(SOVERSION) $(BUILD)/tsan/lib/libturnstate.so

## test-torture: many threads on one store and stores destroyed while the
## delay plugin dispatches, under AddressSanitizer and ThreadSanitizer
test-torture: lib lib-tsan
	Tests/torture/run.sh

test-plugins: lib plugins
	TS_BUILD=$(BUILD) Tests/plugins/run.sh
	TS_BUILD=$(BUILD) Tests/plugins/logger_run.sh

## coverage: line and branch coverage of Sources/ and Plugins/ from the Swift,
## C, JSON, Python and plugin suites, run against an instrumented library and
## instrumented plugins (build/coverage/); one table, HTML in build/coverage/html.
## Not part of `make test`.
coverage: setup
	@Tests/coverage/run.sh

## AddressSanitizer and fuzzing (Tests/fuzz/README.md)
# One instrumented build serves the fuzzers and the ASan suites: the library
# (.build-asan, copied to build/asan/lib) and the plugins (build/asan/plugins)
# are built with ASan and libFuzzer's coverage; the ASan runtime provides
# no-op coverage hooks to programs that are not fuzzers.
# The toolchain's clang (beside swift) has libFuzzer and the ASan runtime.
FUZZ_CC ?= $(dir $(realpath $(shell command -v $(SWIFT))))clang
ASAN := $(BUILD)/asan
ASAN_SCRATCH := .build-asan
ASAN_SWIFT_FLAGS := -Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp \
                    -Xcc -fsanitize=address,fuzzer-no-link -Xcxx -fsanitize=address,fuzzer-no-link $(DWARF4)
ASAN_CFLAGS := -std=c99 -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror -pedantic -IInclude
ASAN_LINK := -fuse-ld=lld -L$(ASAN)/lib -Wl,-rpath,$(ASAN)/lib -lturnstate -lpthread
FUZZ_TARGETS := create dispatch pointer journal plugin_config
FUZZ_SECONDS ?= 60
# Options for every fuzzer run and replay: inputs up to 64 KiB, 20 s per input
# at most. Each harness runs as one plain libFuzzer process, one after the
# other (2 shared cores): that is one job on one core, as -jobs=1 would be,
# without -jobs' extra child process and its ./fuzz-0.log. Leaks are checked:
# LeakSanitizer works with the toolchain's ASan runtime.
FUZZ_OPTS := -max_len=65536 -timeout=20 -rss_limit_mb=4096
# Swift's own crash backtracer would take the signal from libFuzzer.
ASAN_TARGETS := fuzz test-fuzz-replay test-c-asan test-plugins-asan
$(ASAN_TARGETS): export ASAN_OPTIONS = detect_leaks=1:strict_string_checks=1:$(EXTRA_ASAN_OPTIONS)
$(ASAN_TARGETS): export LSAN_OPTIONS = suppressions=$(CURDIR)/Tests/fuzz/lsan.supp:print_suppressions=0
$(ASAN_TARGETS): export SWIFT_BACKTRACE = enable=no

asan-lib: setup
	$(SWIFT) build -c release --scratch-path $(ASAN_SCRATCH) --product turnstate $(ASAN_SWIFT_FLAGS) \
	  -Xlinker --version-script=$(CURDIR)/Sources/TurnstateC/exports.map \
	  -Xlinker -soname -Xlinker libturnstate.so.$(SOVERSION)
	@mkdir -p $(ASAN)/lib
	@install -m 0755 $(ASAN_SCRATCH)/release/libturnstate.so $(ASAN)/lib/.libturnstate.so.new
	@mv -f $(ASAN)/lib/.libturnstate.so.new $(ASAN)/lib/libturnstate.so.$(VERSION)
	@ln -sf libturnstate.so.$(VERSION) $(ASAN)/lib/libturnstate.so.$(SOVERSION)
	@ln -sf libturnstate.so.$(SOVERSION) $(ASAN)/lib/libturnstate.so

# The C plugins, and the logger (Swift) from the same instrumented scratch path.
asan-plugins: asan-lib
	@mkdir -p $(ASAN)/plugins && chmod 0755 $(ASAN)/plugins
	@for p in $(C_PLUGINS); do \
	  echo "clang(asan) $$p.so"; \
	  $(FUZZ_CC) $(ASAN_CFLAGS) -fsanitize=address,fuzzer-no-link -fuse-ld=lld -shared -fPIC \
	    Plugins/$$p/$$p.c -o $(ASAN)/plugins/$$p.so -lpthread; \
	done
	$(SWIFT) build -c release --scratch-path $(ASAN_SCRATCH) --product turnstate-logger $(ASAN_SWIFT_FLAGS)
	@install -m 0755 $(ASAN_SCRATCH)/release/libturnstate-logger.so $(ASAN)/plugins/logger.so

fuzz-build: asan-plugins
	@mkdir -p $(ASAN)/bin
	@for t in $(FUZZ_TARGETS); do \
	  echo "clang(fuzzer) fuzz_$$t"; \
	  $(FUZZ_CC) $(ASAN_CFLAGS) -fsanitize=address,fuzzer Tests/fuzz/fuzz_$$t.c -o $(ASAN)/bin/fuzz_$$t $(ASAN_LINK); \
	done

## fuzz: each harness for FUZZ_SECONDS (default 60), one after the other; new
## inputs go to build/asan/corpus/NAME (the committed seeds in Tests/fuzz/corpus
## are read, not written); findings to build/asan/findings/NAME
fuzz: fuzz-build
	@Tests/fuzz/run.sh fuzz $(ASAN) $(FUZZ_SECONDS) $(FUZZ_OPTS) -- $(FUZZ_TARGETS)

## test-fuzz-replay: every committed corpus through its harness (no new fuzzing)
test-fuzz-replay: fuzz-build
	@Tests/fuzz/run.sh replay $(ASAN) 0 $(FUZZ_OPTS) -- $(FUZZ_TARGETS)

## test-c-asan: the C suite against the ASan library, with leak checks
test-c-asan: asan-lib
	@mkdir -p $(ASAN)/tests
	$(FUZZ_CC) $(ASAN_CFLAGS) -fsanitize=address Tests/c/test_store.c -o $(ASAN)/tests/test_store $(ASAN_LINK)
	@# test_out_of_memory_is_nomem makes malloc fail on purpose: ASan must return NULL, not abort.
	ASAN_OPTIONS=$$ASAN_OPTIONS:allocator_may_return_null=1 $(ASAN)/tests/test_store

## test-plugins-asan: the plugin suite (plugins, loader variants, tests) and the
## logger's test with ASan; the suite builds its plugins in build/asan/ptest,
## apart from the fuzzers' instrumented ones
test-plugins-asan: asan-plugins
	@mkdir -p $(ASAN)/ptest $(ASAN)/tests && ln -sfn ../lib $(ASAN)/ptest/lib
	TS_VALGRIND=0 CC="$(FUZZ_CC) -fsanitize=address -fuse-ld=lld" TS_BUILD=$(ASAN)/ptest Tests/plugins/run.sh
	$(FUZZ_CC) $(ASAN_CFLAGS) -fsanitize=address Tests/plugins/logger_test.c -o $(ASAN)/tests/logger_test $(ASAN_LINK) -ldl
	$(ASAN)/tests/logger_test $(ASAN)/plugins/logger.so

## bench: release benchmarks (Swift W1-W5, C C1-C6, Python P1, start-up, memory),
## printed as one table; BENCH_ARGS="--runs 3 --scale 0.1" for a quick look
bench: lib
	$(MAKE) -C Benchmarks BUILD=$(BUILD) SWIFT=$(SWIFT) CC=$(CC)
	SWIFT=$(SWIFT) python3 Benchmarks/report.py $(BENCH_ARGS)

## install: the library, its private Swift runtime, the plugins, the headers
## and turnstate.pc into PREFIX (default /usr/local), LIBDIR (default
## PREFIX/lib); DESTDIR for staging. Libraries 0644 and stripped; their debug
## information in a .debug folder beside each (gdb finds it by debuglink).
INSTALL_PLUGINS := $(C_PLUGINS) logger
PLUGINSDIR = $(LIBDIR)/turnstate/plugins
install: lib plugins
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(PLUGINSDIR)
	pkgconfig/install-stripped.sh $(BUILD)/lib/libturnstate.so.$(VERSION) $(DESTDIR)$(LIBDIR) libturnstate.so.$(VERSION)
	ln -sf libturnstate.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libturnstate.so.$(SOVERSION)
	ln -sf libturnstate.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libturnstate.so
	pkgconfig/swift-runtime.sh $(DESTDIR)$(LIBDIR)/turnstate $(BUILD)/lib/libturnstate.so.$(VERSION) \
	  $(BUILD)/plugins/logger.so | sed 's|^|runtime: |'
	for p in $(INSTALL_PLUGINS); do \
	  pkgconfig/install-stripped.sh $(BUILD)/plugins/$$p.so $(DESTDIR)$(PLUGINSDIR) $$p.so; \
	done
	install -m 0644 Include/turnstate.h Include/turnstate_plugin.h $(DESTDIR)$(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    pkgconfig/turnstate.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/turnstate.pc
	@echo "installed into $(DESTDIR)$(PREFIX) (plugins in $(PLUGINSDIR))"

## deb: the Debian packages libturnstate0 (library, plugins, private Swift
## runtime), libturnstate-dev and libturnstate0-dbgsym in build/deb/, from
## `make install PREFIX=/usr LIBDIR=/usr/lib/<multiarch>` (pkgconfig/debian/)
DEB_MULTIARCH = $(shell dpkg-architecture -qDEB_HOST_MULTIARCH)
deb: lib plugins
	@rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb
	$(MAKE) --no-print-directory install PREFIX=/usr LIBDIR=/usr/lib/$(DEB_MULTIARCH) DESTDIR=$(BUILD)/deb/stage
	pkgconfig/debian/build-debs.sh $(VERSION) $(BUILD)/deb/stage $(BUILD)/deb

## test-deb: builds the packages, checks them, runs lintian, installs them,
## builds and runs a pkg-config consumer with the Swift toolchain hidden,
## purges them (as root: CI machines are disposable; Tests/deb/run.sh)
test-deb: deb
	Tests/deb/run.sh $(VERSION) $(BUILD)/deb

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libturnstate.so* $(DESTDIR)$(LIBDIR)/.debug/libturnstate.so.*.debug \
	      $(DESTDIR)$(PREFIX)/include/turnstate.h $(DESTDIR)$(PREFIX)/include/turnstate_plugin.h \
	      $(DESTDIR)$(LIBDIR)/pkgconfig/turnstate.pc
	rm -rf $(DESTDIR)$(LIBDIR)/turnstate
	-rmdir $(DESTDIR)$(LIBDIR)/.debug 2>/dev/null

clean:
	rm -rf $(BUILD) .build .build-*
