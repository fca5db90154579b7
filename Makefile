# Turnstate: build, test, run, install, benchmark.
#
#   make run       set up, build, and run the C demo (plugins loaded from a folder)
#   make check     the quick edit-test loop: the Swift tests, the C suite, the
#                  JSON layer and the plugins, counted as make test counts
#   make test      every suite of TEST_SUITES, one line each (full logs in
#                  build/test-logs), then "N passed, M failed" counting checks
#   make abi-baseline  rewrite Tests/abi/ (the ABI test-abi compares with)
#   make install PREFIX=/usr/local   the library, its private Swift runtime,
#                  the plugins, the headers, turnstate.pc and the man pages
#   make deb       the Debian packages, in build/deb
#   make bench     release benchmarks, printed as one table
#   make coverage  line and branch coverage of Sources/ and Plugins/ (not part of test)
#   make fuzz      the libFuzzer harnesses (Tests/fuzz), FUZZ_SECONDS (60) each
#   make docs      the DocC documentation, in build/docs
#   make man       the manual pages (from the headers' comments), in build/man
#
#   make help      every target, with its description
#
# Everything built lands in build/ (C programs, the library) and .build*/
# (SwiftPM); both are ignored by git.
#
# Building needs only what it builds (.ci/setup.sh build: Swift, a C
# compiler, libffi, simdjson, the plugins' libraries); the test targets
# install the test toolchain (.ci/setup.sh test). Each build step prints one
# line; its command line and output go to build/logs/STEP.log, whose tail is
# shown when it fails. make V=1 prints the commands and their output instead.

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
LIB_LDFLAGS := $(DWARF4) -Xlinker --version-script=$(CURDIR)/Sources/TurnstateC/CAPI/exports.map \
               -Xlinker -soname -Xlinker libturnstate.so.$(SOVERSION)
# What ships (the library and the Swift logger plugin) carries no path into
# the build machine's toolchain: libturnstate finds its private copy of the
# Swift runtime in $ORIGIN/turnstate (LIBDIR/turnstate, filled by
# .ci/packaging/swift-runtime.sh), and a Swift plugin uses the copy that
# libturnstate has already loaded (the loader matches the runtime's SONAMEs),
# so a process maps one Swift runtime. Neither links the standard library's
# string processing (libswift_StringProcessing, libswift_RegexParser), which
# they do not use.
SHIP_SWIFTFLAGS := -Xswiftc -no-toolchain-stdlib-rpath --disable-local-rpath \
                   -Xswiftc -Xfrontend -Xswiftc -disable-implicit-string-processing-module-import
# Full RELRO (-z relro -z now): the GOT is read-only once loaded (about 2.6% more
# start-up instructions, for resolving every symbol at load).
LIB_SHIP_FLAGS := $(SHIP_SWIFTFLAGS) -Xlinker -rpath -Xlinker '$$ORIGIN/turnstate' -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now
# Installed in LIBDIR/turnstate/plugins, the logger names the runtime folder
# LIBDIR/turnstate as $ORIGIN/.. (for ldd and loaders that open it by path;
# the store opens plugins through /proc/self/fd, where the runtime that
# libturnstate loaded is what it gets).
PLUGIN_SHIP_FLAGS := $(SHIP_SWIFTFLAGS) -Xlinker -rpath -Xlinker '$$ORIGIN/..' -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now
RELEASE_SCRATCH := .build-release
# `make coverage` builds the library in another configuration and scratch path
# (debug, instrumented) and points BUILD at build/coverage; see Tests/coverage/run.sh.
LIB_CONFIG ?= release
LIB_SWIFTFLAGS ?=
PLUGIN_SCRATCH ?= .build-plugins
PLUGIN_SWIFTFLAGS ?=

# The library's and plugins' Swift builds evaluate Package.swift with
# TURNSTATE_LIBRARY_ONLY=1: no docs or test package is resolved (Package.swift
# says what it leaves out).
LIBRARY_ONLY := env TURNSTATE_LIBRARY_ONLY=1

# Quiet steps (.ci/step.sh): one line each, the command line and its output in
# build/logs/NAME.log. V=1: the commands and their output on the terminal.
V ?=
export TS_VERBOSE := $(filter 1,$(V))
Q := $(if $(TS_VERBOSE),,@)
STEP := .ci/step.sh
LOGS = $(BUILD)/logs
# A path as the step lines show it: relative to the checkout when inside it.
show = $(patsubst $(CURDIR)/%,%,$(1))

# ---- C flags: the one place ----
# The test scripts get them from the environment (exported below), or, run
# alone, from `make flags` (Tests/flags.sh); Benchmarks/Makefile likewise.
C_STD := -std=c99
C_WARN := -Wall -Wextra -Werror -pedantic
CC ?= cc
# Test programs and examples.
CFLAGS ?= $(C_STD) -O2 -g $(C_WARN)
# Programs and plugins built with a sanitizer (ASan, TSan) or for libFuzzer.
SAN_CFLAGS := $(C_STD) -O1 -g -fno-omit-frame-pointer $(C_WARN)
export TS_C_STD := $(C_STD)
export TS_C_WARN := $(C_WARN)
export TS_CFLAGS = $(CFLAGS)
export TS_SAN_CFLAGS := $(SAN_CFLAGS)
# C++ (turnstate.hpp's tests, the README's C++ example, turnstate_json.cpp built for tests).
CXX_STD := -std=c++17
CXX_WARN := $(C_WARN)
export TS_CXX_STD := $(CXX_STD)
export TS_CXX_WARN := $(CXX_WARN)
C_LINK := -L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib -lturnstate -lpthread
VALGRIND := valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
            --show-leak-kinds=definite,indirect --suppressions=$(CURDIR)/Tests/c/valgrind.supp

# Hardened as Debian builds (lintian: hardening-no-fortify-functions, -no-bindnow).
PLUGIN_CFLAGS := $(C_STD) -O2 -g $(C_WARN) -shared -fPIC -IInclude -D_FORTIFY_SOURCE=2 \
                 -fstack-protector-strong -Wl,-z,relro,-z,now
C_PLUGINS := guard delay journal recorder undo
# replicate.so (issues 14, 21): the plugin and its log engines (Redis Streams,
# NATS JetStream), chosen by the url's scheme.
REPLICATE_SOURCES := Plugins/replicate/replicate.c Plugins/replicate/engine.c Plugins/replicate/engine_redis.c \
                     Plugins/replicate/engine_nats.c Plugins/replicate/entry.c
REPLICATE_LIBS := -lhiredis -lnats -lssl -lcrypto -lpthread
# The demo's plugin folder: loaded in name order, guard first, journal last.
DEMO_PLUGINS := $(BUILD)/demo/plugins

.PHONY: setup build lib plugins demo-plugins examples run test install uninstall clean deb \
        test-swift test-swift-tsan test-json test-c test-exports test-abi test-abi-selftest abi-baseline \
        test-pkgconfig test-install test-deb test-python test-python-package test-plugins test-readme test-cpp test-rust \
        test-model test-torture test-faults test-replicate test-replicate-nats lib-tsan bench coverage inspector-plugin test-inspector \
        asan-lib asan-plugins fuzz-build fuzz-json-build fuzz test-fuzz-replay test-c-asan test-plugins-asan test-build test-harness help docs test-docs \
        man test-man setup-test setup-deb check check-build flags test-setup test-testgen test-undo

## help: this list (the "## target: description" comments of the Makefile)
help:
	@awk 'function flush() { if (name != "") { printf "  %-18s", name; n = split(text, w, " "); col = 20; \
	        for (i = 1; i <= n; i++) { if (col + length(w[i]) > 100) { printf "\n%20s", ""; col = 20 } \
	        printf " %s", w[i]; col += length(w[i]) + 1 } printf "\n" } name = "" } \
	      /^## [a-z][a-z0-9-]*: / { flush(); name = substr($$2, 1, length($$2) - 1); text = substr($$0, length($$2) + 5); next } \
	      /^## / && name != "" { text = text " " substr($$0, 4); next } \
	      { flush() } END { flush() }' $(firstword $(MAKEFILE_LIST))

## setup: check what building needs and install what is missing, as root (.ci/setup.sh build:
## Swift 6.3, a C compiler, make, pkg-config, libffi, simdjson, python3, the plugins' libhiredis
## and libmicrohttpd); otherwise print the apt-get line. Nothing of the test toolchain
setup:
	@.ci/setup.sh build

## setup-test: setup, and the test toolchain (.ci/setup.sh test: valgrind, spin, abigail-tools,
## redis-server, chromium, bindgen, lintian, ...); every test target, make check, bench and coverage run it
setup-test:
	@.ci/setup.sh test

## setup-deb: setup, and dpkg-dev (.ci/setup.sh deb), for make deb
setup-deb:
	@.ci/setup.sh deb

## build: the library, the plugins, the examples
build: setup lib plugins examples

## lib: build/lib/libturnstate.so (release) and its private Swift runtime, build/lib/turnstate
lib: setup
	@$(STEP) $(LOGS)/lib.log "swift build libturnstate ($(LIB_CONFIG))" \
	  $(LIBRARY_ONLY) $(SWIFT) build -c $(LIB_CONFIG) --scratch-path $(RELEASE_SCRATCH) --product turnstate \
	  $(LIB_LDFLAGS) $(LIB_SHIP_FLAGS) $(LIB_SWIFTFLAGS)
	$(Q)mkdir -p $(BUILD)/lib
	@# The private Swift runtime beside it, as installed: build/lib/turnstate.
	@$(STEP) $(LOGS)/lib-runtime.log "copy the Swift runtime to $(call show,$(BUILD))/lib/turnstate" \
	  .ci/packaging/swift-runtime.sh $(BUILD)/lib/turnstate $(RELEASE_SCRATCH)/$(LIB_CONFIG)/libturnstate.so
	@# A new file, renamed into place: never rewrite a library a running process has mapped.
	$(Q)install -m 0755 $(RELEASE_SCRATCH)/$(LIB_CONFIG)/libturnstate.so $(BUILD)/lib/.libturnstate.so.new
	$(Q)mv -f $(BUILD)/lib/.libturnstate.so.new $(BUILD)/lib/libturnstate.so.$(VERSION)
	$(Q)ln -sf libturnstate.so.$(VERSION) $(BUILD)/lib/libturnstate.so.$(SOVERSION)
	$(Q)ln -sf libturnstate.so.$(SOVERSION) $(BUILD)/lib/libturnstate.so

## plugins: build/plugins/NAME.so; C plugins need only the headers (no libturnstate)
plugins: setup inspector-plugin
	$(Q)mkdir -p $(BUILD)/plugins
	@for p in $(C_PLUGINS); do \
	  $(STEP) $(LOGS)/$$p.log "cc $$p.so" $(CC) $(PLUGIN_CFLAGS) Plugins/$$p/$$p.c -o $(BUILD)/plugins/$$p.so -lpthread; \
	done
	@# replicate.so links hiredis and OpenSSL (Redis Streams), nats.c (JetStream), never libturnstate.
	@$(STEP) $(LOGS)/replicate.log "cc replicate.so" \
	  $(CC) $(PLUGIN_CFLAGS) -fvisibility=hidden $(REPLICATE_SOURCES) -o $(BUILD)/plugins/replicate.so $(REPLICATE_LIBS)
	@$(STEP) $(LOGS)/logger.log "swift build logger.so ($(LIB_CONFIG))" \
	  $(LIBRARY_ONLY) $(SWIFT) build -c $(LIB_CONFIG) --scratch-path $(PLUGIN_SCRATCH) --product turnstate-logger \
	  $(PLUGIN_SHIP_FLAGS) $(PLUGIN_SWIFTFLAGS)
	$(Q)cp -f $(PLUGIN_SCRATCH)/$(LIB_CONFIG)/libturnstate-logger.so $(BUILD)/plugins/logger.so

## inspector-plugin: build/plugins/inspector.so, the page of Plugins/inspector/web embedded (embed.py), over libmicrohttpd
INSPECTOR_WEB := $(sort $(wildcard Plugins/inspector/web/*))
# Its sources, one job each (Plugins/inspector/README.md: Source map).
INSPECTOR_SOURCES := $(addprefix Plugins/inspector/,inspector.c config.c history.c travel.c http.c sse.c api.c)
inspector-plugin: setup
	$(Q)mkdir -p $(BUILD)/plugins $(BUILD)/inspector
	@$(STEP) $(LOGS)/inspector-web.log "embed the inspector's page (embed.py)" \
	  python3 Plugins/inspector/embed.py $(BUILD)/inspector/inspector_web.h $(INSPECTOR_WEB)
	@$(STEP) $(LOGS)/inspector.log "cc inspector.so" \
	  $(CC) $(PLUGIN_CFLAGS) -fvisibility=hidden -I$(BUILD)/inspector $(INSPECTOR_SOURCES) -o $(BUILD)/plugins/inspector.so \
	  -lpthread -lmicrohttpd

## demo-plugins: the demo's plugin folder, build/demo/plugins (guard, logger,
## delay, journal), made anew; the journal and the log beside it, in
## build/demo, are kept, so the next `make run` restores the state
demo-plugins: plugins
	@echo "demo plugins in $(call show,$(DEMO_PLUGINS))"
	$(Q)rm -rf $(DEMO_PLUGINS) && mkdir -p $(DEMO_PLUGINS) && chmod 0755 $(BUILD)/demo $(DEMO_PLUGINS)
	$(Q)cp Examples/plugins/*.json $(DEMO_PLUGINS)/
	$(Q)sed -i 's|@DEMO@|$(BUILD)/demo|' $(DEMO_PLUGINS)/*.json
	$(Q)cp $(BUILD)/plugins/guard.so $(DEMO_PLUGINS)/10-guard.so
	$(Q)cp $(BUILD)/plugins/logger.so $(DEMO_PLUGINS)/20-logger.so
	$(Q)cp $(BUILD)/plugins/delay.so $(DEMO_PLUGINS)/30-delay.so
	$(Q)cp $(BUILD)/plugins/journal.so $(DEMO_PLUGINS)/90-journal.so
	$(Q)chmod 0644 $(DEMO_PLUGINS)/*

## examples: the C demo, build/bin/todo
examples: lib
	$(Q)mkdir -p $(BUILD)/bin
	@$(STEP) $(LOGS)/todo.log "cc todo" $(CC) $(CFLAGS) -IInclude Examples/todo.c -o $(BUILD)/bin/todo $(C_LINK)

## run: the C demo, with the plugins of build/demo/plugins; run it again and
## its journal (build/demo/todo.journal) restores the state first (rm -rf
## build/demo to start afresh)
run: build demo-plugins
	@echo "run $(call show,$(BUILD))/bin/todo $(call show,$(DEMO_PLUGINS))"
	@$(BUILD)/bin/todo $(DEMO_PLUGINS)

## test: test-build, then every suite of TEST_SUITES: one line per suite (its
## checks and seconds), full logs in build/test-logs/SUITE.log (the tail shown
## when a suite fails), and a last line "N passed, M failed" counting checks
TEST_SUITES := test-swift test-swift-tsan test-json test-c test-exports test-abi test-abi-selftest \
               test-pkgconfig test-python test-python-package test-plugins test-inspector test-install test-readme test-cpp \
               test-rust test-model test-torture test-faults test-fuzz-replay test-c-asan test-plugins-asan test-undo \
               test-docs test-man test-harness test-setup test-replicate test-replicate-nats test-deb \
               test-testgen
# Suites of TEST_SUITES that mostly wait on the servers they start and install
# nothing: they run one after the other in a second lane, beside the others
# (Tests/run-suites.sh), which keeps `make test` under 15 minutes on 2 cores.
TEST_SUITES_BESIDE := test-replicate test-replicate-nats
test: setup-test
	@TS_BESIDE="$(TEST_SUITES_BESIDE)" Tests/run-suites.sh $(TEST_SUITES)

## check: the edit-test loop, a few minutes: check-build, then CHECK_SUITES (the Swift tests, the
## C suite, the JSON layer, the plugins), printed and counted as make test prints and counts
CHECK_SUITES := test-swift test-c test-json test-plugins
check: setup-test
	@TS_BUILD_STEP=check-build Tests/run-suites.sh $(CHECK_SUITES)

# Each suite reports its checks through Tests/checks.sh ("checks: N passed,
# M failed" lines, added up by Tests/run-suites.sh). `make test` builds once
# (test-build) and then runs each suite with TS_PREBUILT=1, under which the
# suites' prerequisites in $(call prebuilt,...) are not remade (no repeated
# build output); `make test-X` alone builds what it needs as before.
prebuilt = $(if $(TS_PREBUILT),,$(1))

## check-build: what make check's suites share: the library, the plugins, the Swift tests (debug)
check-build: setup-test lib plugins
	@$(STEP) $(LOGS)/swift-tests.log "swift build --build-tests (debug)" \
	  $(SWIFT) build --build-tests --scratch-path .build

## test-build: what the suites share, built once by `make test` before them:
## check-build's, the TSan and ASan libraries, the fuzzers, the Swift tests under TSan
test-build: check-build lib-tsan asan-plugins fuzz-build
	@$(STEP) $(LOGS)/swift-tests-tsan.log "swift build --build-tests (TSan)" \
	  $(SWIFT) build --build-tests --scratch-path .build-tsan --sanitize=thread

## flags: the C flags of this Makefile as shell assignments (Tests/flags.sh reads them when a test
## script runs without make)
flags:
	@printf "TS_C_STD='%s'\nTS_C_WARN='%s'\nTS_CFLAGS='%s'\nTS_SAN_CFLAGS='%s'\nTS_CXX_STD='%s'\nTS_CXX_WARN='%s'\n" \
	  '$(TS_C_STD)' '$(TS_C_WARN)' '$(TS_CFLAGS)' '$(TS_SAN_CFLAGS)' '$(TS_CXX_STD)' '$(TS_CXX_WARN)'

## test-harness: the test machinery: Tests/checks.sh's counts, Tests/run-suites.sh, .ci/step.sh, make help
test-harness: $(call prebuilt,setup-test)
	Tests/checks.sh Tests/harness/run.sh

## test-setup: building needs none of the test toolchain: with dpkg-query faked to say the test
## packages (chromium, redis-server, spin, lintian, bindgen, ...) are missing and those commands
## shadowed by ones that fail, make run and make install work and install and run none of them;
## .ci/setup.sh's build list holds none; make -n run/install/build never reach the test setup; and
## Package.swift with TURNSTATE_LIBRARY_ONLY=1 lists no docs or test package (Tests/setup/run.sh)
test-setup: $(call prebuilt,setup-test lib plugins)
	Tests/checks.sh Tests/setup/run.sh

## test-swift: the Swift tests (swift-testing), then the XCTest ones (the
## TestStore under XCTest: TurnstateTestingTests)
test-swift: $(call prebuilt,setup-test)
	$(if $(TS_PREBUILT),,$(SWIFT) build --build-tests --scratch-path .build)
	Tests/checks.sh $(SWIFT) test --skip-build --disable-xctest --scratch-path .build
	Tests/checks.sh $(SWIFT) test --skip-build --disable-swift-testing --scratch-path .build --filter TurnstateTestingTests

## test-swift-tsan: the Swift tests (swift-testing, then XCTest) under ThreadSanitizer
test-swift-tsan: $(call prebuilt,setup-test)
	$(if $(TS_PREBUILT),,$(SWIFT) build --build-tests --scratch-path .build-tsan --sanitize=thread)
	Tests/checks.sh $(SWIFT) test --skip-build --disable-xctest --scratch-path .build-tsan --sanitize=thread
	Tests/checks.sh $(SWIFT) test --skip-build --disable-swift-testing --scratch-path .build-tsan --sanitize=thread \
	  --filter TurnstateTestingTests

## docs: the DocC documentation of Turnstate, TurnstateCore and TurnstateTesting
## (swift package generate-documentation, combined), in build/docs/turnstate.doccarchive
DOCS_TARGETS := --target Turnstate --target TurnstateCore --target TurnstateTesting
docs: setup
	@rm -rf $(BUILD)/docs/turnstate.doccarchive && mkdir -p $(BUILD)/docs
	$(SWIFT) package --scratch-path .build --allow-writing-to-directory $(BUILD)/docs generate-documentation \
	  $(DOCS_TARGETS) --enable-experimental-combined-documentation --output-path $(BUILD)/docs/turnstate.doccarchive
	@test -f $(BUILD)/docs/turnstate.doccarchive/index.html || { echo "docs: no archive in $(BUILD)/docs" >&2; exit 1; }

## test-docs: make docs prints no DocC warning, every public symbol of
## Turnstate, TurnstateCore and TurnstateTesting has a documentation comment,
## and a plain `swift package generate-documentation` (every target) succeeds
test-docs: $(call prebuilt,setup-test)
	SWIFT=$(SWIFT) BUILD=$(BUILD) Tests/checks.sh Tests/docs/check.sh

## man: the manual pages, build/man/man3/NAME.3 (every TS_API function and every
## type of the headers) and build/man/man7/turnstate.7, turnstate-plugins.7,
## made by docs/man/genman.py from the comments of Include/turnstate.h and
## Include/turnstate_plugin.h (the one source: the pages are not committed)
MAN_HEADERS := Include/turnstate.h Include/turnstate_plugin.h
MANDIR ?= $(PREFIX)/share/man
# The pages' date: the headers' last commit (the same for every build of a commit).
MAN_DATE = $(shell git log -1 --format=%cs -- $(MAN_HEADERS) 2>/dev/null)
man:
	@rm -rf $(BUILD)/man
	@python3 docs/man/genman.py --out $(BUILD)/man $(if $(MAN_DATE),--date $(MAN_DATE)) $(MAN_HEADERS)

## test-man: every TS_API function and type of the headers has a page, whose
## synopsis is the header's declaration; man -l and groff render every page
## without a warning; a missing page, a changed synopsis and a roff error fail
## the check (Tests/man/check.sh)
test-man: man
	Tests/checks.sh Tests/man/check.sh $(BUILD)/man

## test-json: the JSON layer's C tests (Tests/json), natively and under valgrind
test-json: $(call prebuilt,setup-test)
	Tests/checks.sh Tests/json/run.sh

## test-c: the C API suite (C_SUITE: one program, build/tests/test_store),
## natively and under valgrind (--quick), then each program of C_TESTS
# The C test programs' harness is Tests/harness/ts_test.h (ts_test.c): a test
# is `void test_<topic>__<rule>(void)`, and C_REGISTRY (gen_registry.py)
# writes each program's table and main() from its sources before compiling,
# so nothing is registered by hand. One test or topic: PROGRAM -s NAME.
# C_SUITE: every Tests/c/test_TOPIC.c but C_TESTS's (a new topic file joins
# by itself, after C_TOPICS), with check.c (the C API's checks and shared
# helpers). C_TOPICS keeps the order the topics have always run in: basics
# first (its first test reads ts_last_error before anything failed), big
# after threads and errors (its peak-RSS check measures growth over what the
# earlier tests already reached).
TS_HARNESS := Tests/harness/ts_test.c
C_REGISTRY := python3 Tests/harness/gen_registry.py
# Extra C test programs, each its own program (its registry from its file
# alone): versions, ts_alloc/ts_strdup, ts_reducer_fail.
C_TESTS := Tests/c/test_memory_and_errors.c
C_TOPICS := basics reducers dispatch state subscribe middleware threads errors big replace filters patch getters slice_ids
C_SUITE := Tests/c/check.c $(C_TOPICS:%=Tests/c/test_%.c) \
           $(filter-out $(C_TESTS) $(C_TOPICS:%=Tests/c/test_%.c),$(sort $(wildcard Tests/c/test_*.c)))
C_TEST_INCLUDES := -IInclude -ITests/harness -ITests/c
test-c: $(call prebuilt,setup-test lib)
	@mkdir -p $(BUILD)/tests
	$(C_REGISTRY) -o $(BUILD)/tests/registry_store.c $(C_SUITE)
	$(CC) $(CFLAGS) $(C_TEST_INCLUDES) $(TS_HARNESS) $(C_SUITE) $(BUILD)/tests/registry_store.c \
	  -o $(BUILD)/tests/test_store $(C_LINK)
	Tests/checks.sh $(BUILD)/tests/test_store
	Tests/checks.sh $(VALGRIND) $(BUILD)/tests/test_store --quick
	@for t in $(C_TESTS); do \
	  name=$$(basename $$t .c); name=$${name#test_}; bin=$(BUILD)/tests/$$name; \
	  echo "cc $$t"; $(C_REGISTRY) --suite $$name -o $(BUILD)/tests/registry_$$name.c $$t && \
	  $(CC) $(CFLAGS) $(C_TEST_INCLUDES) $(TS_HARNESS) $$t $(BUILD)/tests/registry_$$name.c -o $$bin $(C_LINK) || exit 1; \
	  Tests/checks.sh $$bin; \
	  Tests/checks.sh $(VALGRIND) $$bin --quick; \
	done
	@# The header's macros (TS_API, TS_DEPRECATED, TS_VERSION*) under gcc and clang, and without attributes.
	PATH="$$PATH:$(dir $(realpath $(shell command -v $(SWIFT))))" Tests/checks.sh Tests/c/check_header.sh $(CC)

## test-exports: the library exports exactly the ts_ functions of the header
test-exports: $(call prebuilt,setup-test lib)
	Tests/checks.sh Tests/abi/check_exports.sh Include/turnstate.h $(LIB)

## test-abi: the ABI of libturnstate against the committed baseline
## (Tests/abi/libturnstate.abi and Tests/abi/layout.txt; how, in
## Tests/abi/check_abi.sh): abidiff on the C types of the headers, the built
## library's exports, and the struct layouts (ts_plugin and ts_store_api
## append-only). An incompatible change fails unless TS_VERSION_MAJOR (the
## SONAME) changes with it. Additions fail too until the baseline records
## them, so a commit that adds to the ABI runs `make abi-baseline` and commits
## Tests/abi/ with the change.
test-abi: $(call prebuilt,setup-test lib)
	CC="$(CC)" Tests/checks.sh Tests/abi/check_abi.sh check $(BUILD) $(LIB) $(SOVERSION)

## test-abi-selftest: test-abi's check against altered copies of the headers
## (a signature, a struct layout, a status code, additions, a SONAME bump) and
## stand-in libraries that lost or gained an export (Tests/abi/selftest.sh),
## so that a check that stops seeing a kind of break fails
test-abi-selftest: $(call prebuilt,setup-test lib)
	CC="$(CC)" Tests/checks.sh Tests/abi/selftest.sh $(BUILD) $(LIB) $(SOVERSION)

## abi-baseline: rewrites Tests/abi/ from the headers and the built library;
## refuses an incompatible change while the SONAME stays the same
abi-baseline: lib
	@CC="$(CC)" Tests/abi/check_abi.sh baseline $(BUILD) $(LIB) $(SOVERSION)

## test-pkgconfig: make install into a temporary prefix; a consumer built with pkg-config
test-pkgconfig: $(call prebuilt,setup-test lib)
	Tests/checks.sh Tests/pkgconfig/run.sh

## test-install: what `make install` ships runs with the Swift toolchain hidden
## (a private mount namespace): every plugin loaded, one Swift runtime mapped
test-install: $(call prebuilt,setup-test lib plugins)
	Tests/checks.sh Tests/install/run.sh

## test-deb: make deb, the packages checked and linted (lintian: no error),
## installed, a pkg-config consumer run with the Swift toolchain hidden, then
## purged with nothing left (as root: CI machines are disposable)
test-deb: $(call prebuilt,setup-test lib plugins)
	Tests/checks.sh Tests/deb/run.sh $(VERSION) $(BUILD)/deb

## test-python: the Python tests (ctypes and cffi bindings of the header)
test-python: $(call prebuilt,setup-test lib)
	TURNSTATE_LIB=$(LIB) Tests/checks.sh python3 -m unittest discover -s Tests/python -v

## test-python-package: the Python package (bindings/python) in fresh venvs
## (pytest, hatchling, build, mypy, auditwheel from PyPI): its pytest suite
## against the bundled library, mypy --strict, the wheel from python -m build
## (and auditwheel's manylinux one), and docs/python.md's example with the
## Swift toolchain hidden, from the wheels and after make install; then from a
## fresh git clone, where pip builds the library (make lib plugins: minutes)
test-python-package: $(call prebuilt,setup-test lib plugins)
	Tests/checks.sh bindings/python/tests/run.sh

## test-readme: the examples of README.md, docs/ (C, C++, plugins, install) and the
## DocC TestStore article build and run as shown; their relative links resolve
test-readme: $(call prebuilt,setup-test lib plugins)
	Tests/checks.sh Tests/readme/check.sh

## test-cpp: Include/turnstate.hpp: the header under g++ and clang++ (C++17,
## C++20, strict warnings), Tests/cpp/test_turnstate.cpp run directly, under
## valgrind, under ThreadSanitizer (with build/tsan/lib, the library built for it) and built with clang++, and
## Tests/cpp/misuse.cpp under ASan against build/asan (Tests/cpp/run.sh)
test-cpp: $(call prebuilt,setup-test lib lib-tsan plugins asan-plugins)
	CXX="$(CXX)" VALGRIND="$(VALGRIND)" ASAN_CXX="$(ASAN_CXX)" PATH="$$PATH:$(dir $(realpath $(shell command -v $(SWIFT))))" \
	  Tests/checks.sh Tests/cpp/run.sh $(BUILD)

## test-rust: the Rust bindings (bindings/rust): turnstate-sys's declarations
## against the headers (bindgen), `cargo test --offline` against build/lib and
## build/plugins, its misuse tests (a Store dropped inside its own callbacks)
## under valgrind, and docs/rust.md's example run with `cargo run --offline`
## against a `make install` in a temporary prefix, Swift toolchain hidden
CARGO ?= cargo
test-rust: $(call prebuilt,setup-test lib plugins)
	CARGO=$(CARGO) TS_BUILD=$(BUILD) VALGRIND="$(VALGRIND)" Tests/checks.sh Tests/rust/run.sh

## test-model: spin checks the shutdown protocol model, and that it catches
## each deliberately broken variant (Sources/TurnstateC/PluginHost/ShutdownProtocol.pml)
test-model: $(call prebuilt,setup-test)
	Tests/checks.sh Tests/model/run.sh

## test-faults: fault injection (Tests/faults): every scenario of C API calls
## runs again for each N with the Nth allocation (or I/O call, or thread
## set-up call) failing, in a forked child; checks the statuses, that a failed
## call changed nothing, and where a crash came from. FAULTS_ARGS="--stride 10"
## for a quick look.
FAULTS_CC ?= $(CC)
test-faults: $(call prebuilt,setup-test lib plugins)
	@mkdir -p $(BUILD)/tests
	$(FAULTS_CC) $(CFLAGS) -shared -fPIC Tests/faults/inject.c \
	  -o $(BUILD)/tests/inject.so -ldl
	$(FAULTS_CC) $(CFLAGS) -IInclude -ITests/faults Tests/faults/test_faults.c \
	  -o $(BUILD)/tests/test_faults $(C_LINK) -ldl
	Tests/checks.sh env SWIFT_BACKTRACE=enable=no LD_PRELOAD=$(BUILD)/tests/inject.so \
	  $(BUILD)/tests/test_faults --plugins $(BUILD)/plugins $(FAULTS_ARGS)

## lib-tsan: the library built with -sanitize=thread, in build/tsan/lib
lib-tsan: setup
	@$(STEP) $(LOGS)/lib-tsan.log "swift build libturnstate (release, TSan)" \
	  $(LIBRARY_ONLY) $(SWIFT) build -c release --scratch-path .build-tsan-lib --product turnstate --sanitize=thread $(LIB_LDFLAGS)
	$(Q)mkdir -p $(BUILD)/tsan/lib
	$(Q)install -m 0755 .build-tsan-lib/release/libturnstate.so $(BUILD)/tsan/lib/.libturnstate.so.new
	$(Q)mv -f $(BUILD)/tsan/lib/.libturnstate.so.new $(BUILD)/tsan/lib/libturnstate.so.$(VERSION)
	$(Q)ln -sf libturnstate.so.$(VERSION) $(BUILD)/tsan/lib/libturnstate.so.$(SOVERSION)
	$(Q)ln -sf libturnstate.so.$(SOVERSION) $(BUILD)/tsan/lib/libturnstate.so

## test-torture: many threads on one store and stores destroyed while the
## delay plugin dispatches, under AddressSanitizer and ThreadSanitizer
test-torture: $(call prebuilt,setup-test lib lib-tsan)
	Tests/checks.sh Tests/torture/run.sh

## test-replicate: replicate.so against Redis servers the test starts on
## loopback (Tests/replicate/run.sh): three processes x 10,000 dispatches
## converge, and three x 300 whose reducers answer with patches, a replica
## SIGKILLed and restarted catches up, the server killed and restarted loses
## no acknowledged dispatch, a replica joins after 100,000
## actions from a snapshot, bad configs and a server that is down, a log
## damaged through a second client (refused and reported, never applied), a
## journal after it restarted ("restore": false; one that restores refused);
## optimistic mode: offline dispatches, bounds, status, resends, drops, a
## history checker against the log folded by a fresh store, kills, +100 ms
test-replicate: $(call prebuilt,setup-test lib plugins)
	TS_BUILD=$(BUILD) Tests/checks.sh Tests/replicate/run.sh

## test-replicate-nats: replicate.so on NATS JetStream (Tests/replicate/nats_run.py):
## a three-server cluster the test starts on loopback (an R3 stream), three
## replica processes converge (the history checker: one common order, each
## acknowledged action once, states equal to a fresh fold), the stream
## leader's server SIGKILLed and restarted (nothing lost or doubled), two of
## three servers down (TS_E_IO, nothing applied, recovery), TLS with a CA the
## test makes, user/password and token credentials, optimistic mode (three
## replicas converge to a fresh fold of the stream, drops reported; the
## leader's server killed, a replica killed with pending actions, two of
## three servers down, +100 ms round trips; local p50/p99 and throughput)
test-replicate-nats: $(call prebuilt,lib plugins)
	TS_BUILD=$(BUILD) Tests/checks.sh python3 Tests/replicate/nats_run.py

## test-undo: the undo plugin (Plugins/undo, docs/undo.md), a few seconds: redux-undo's behaviours
## (limit, filter, groupBy, jump, clear history, initial state), the byte bound, every bad config
## field and the journal restart under ASan (Tests/plugins/test_undo.c), then from Python, Rust and
## C++, two replicas on a Redis stream it starts on loopback, and actions through next and
## dispatch_after (Tests/undo/run.sh); the Swift Undoable runs in test-swift
test-undo: $(call prebuilt,setup-test lib plugins asan-lib)
	FUZZ_CC=$(FUZZ_CC) TS_BUILD=$(BUILD) Tests/checks.sh Tests/undo/run.sh

## test-plugins: the shipped plugins (built from the headers alone) and the
## loader, natively and under valgrind; the logger plugin (Swift) and its test
test-plugins: $(call prebuilt,setup-test lib plugins)
	TS_BUILD=$(BUILD) Tests/checks.sh Tests/plugins/run.sh
	TS_BUILD=$(BUILD) Tests/checks.sh Tests/plugins/logger_run.sh

## test-inspector: the inspector plugin in headless Chromium (Debian's chromium
## and chromium-driver; Selenium from PyPI, installed into build/inspector-venv
## on first use): live actions, state and diff, time travel checked through
## ts_store_get_state, skip, dispatch through guard, export/import, requests
## without the token or from a foreign Origin or Host refused, read-only mode;
## over plain HTTP: malformed imports refused (no crash, no leak), refused
## imported actions kept JSON, a dispatch made in the past kept on return, no
## token cookie, security headers everywhere, idle connections time out; with
## patch reducers (app.c's patch mode) the recorded states, jump, present, skip
## give the same states as with whole-slice reducers; the inspector from Python
## (the package from bindings/python in build/fuzz-venv, Tests/fuzz/py_venv.sh); the
## session recorded in the browser, exported, becomes a C and a pytest test that pass (turnstate-testgen),
## and is kept in build/inspector/testgen/browser.session for test-testgen (its Swift test, and the failures);
## state versions through export and import (Tests/inspector/test_migrate.c)
test-inspector: $(call prebuilt,setup-test lib plugins)
	@mkdir -p $(BUILD)/inspector
	$(CC) $(CFLAGS) -IInclude Tests/inspector/app.c -o $(BUILD)/inspector/app $(C_LINK)
	$(C_REGISTRY) --suite inspector_migrate -o $(BUILD)/inspector/registry_migrate.c Tests/inspector/test_migrate.c
	$(CC) $(CFLAGS) -IInclude -ITests/harness -ITests/plugins $(TS_HARNESS) Tests/inspector/test_migrate.c \
	  $(BUILD)/inspector/registry_migrate.c -o $(BUILD)/inspector/test_migrate $(C_LINK)
	Tests/checks.sh $(BUILD)/inspector/test_migrate --plugin $(BUILD)/plugins/inspector.so
	@Tests/fuzz/py_venv.sh $(FUZZ_VENV)
	@$(FUZZ_VENV)/bin/python -c 'import pytest' 2>/dev/null || $(FUZZ_VENV)/bin/pip install -q pytest
	TS_PACKAGE_PYTHON=$(FUZZ_VENV)/bin/python Tests/checks.sh python3 Tests/inspector/run.py $(BUILD)

## test-testgen: recorded sessions become tests (Tests/testgen/run.py): turnstate-testgen
## (Tools/turnstate-testgen) makes C, pytest and Swift tests of a todo demo journal, of a session
## exported by the inspector's HTTP API, of the session test-inspector recorded in the browser
## (build/inspector/testgen/browser.session: made by test-inspector when missing; under
## TS_PREBUILT=1, as in make test, which runs test-inspector first, a missing one fails the suite)
## and of a Python program's journal; they pass, and fail
## naming the action and the JSON Pointer when one reducer changes (the C one also under
## valgrind); the flight recorder plugin (Plugins/recorder) natively and under ASan: config
## refusals, dumps on a reducer failure and on SIGSEGV, deny rules; its dumps become failing tests;
## the recorder from Rust (Tests/testgen/rust_recorder, cargo, valgrind) and C++ (ASan): dumps with
## the rules applied become tests over the program's own reducers that fail at the failed action;
## a typed Swift program (testgen-counter-recorder, built in .build as check-build builds it) records
## a session with the journal plugin, which becomes TestStore tests that pass, and fail with a diff
test-testgen: $(call prebuilt,setup-test lib plugins asan-lib $(BUILD)/inspector/testgen/browser.session)
	@Tests/fuzz/py_venv.sh $(FUZZ_VENV)
	@$(FUZZ_VENV)/bin/python -c 'import pytest' 2>/dev/null || $(FUZZ_VENV)/bin/pip install -q pytest
	TS_PACKAGE_PYTHON=$(FUZZ_VENV)/bin/python FUZZ_CC=$(FUZZ_CC) VALGRIND="$(VALGRIND)" SWIFT=$(SWIFT) \
	  CXX="$(CXX)" ASAN_CXX="$(ASAN_CXX)" CARGO=$(CARGO) \
	  Tests/checks.sh python3 Tests/testgen/run.py $(BUILD) --swift

# The session test-inspector records in headless Chromium and exports (test-testgen's input).
$(BUILD)/inspector/testgen/browser.session:
	$(MAKE) test-inspector

## coverage: line and branch coverage of Sources/ and Plugins/ from the Swift,
## C, JSON, Python, plugin and fault-injection suites, run against an
## instrumented library and instrumented plugins (build/coverage/); one table,
## HTML in build/coverage/html. Not part of `make test`.
coverage: setup-test
	@Tests/coverage/run.sh

# ---- AddressSanitizer and fuzzing (Tests/fuzz/README.md) ----
# One instrumented build serves the fuzzers and the ASan suites: the library
# (.build-asan, copied to build/asan/lib) and the plugins (build/asan/plugins)
# are built with ASan and libFuzzer's coverage; the ASan runtime provides
# no-op coverage hooks to programs that are not fuzzers.
# The toolchain's clang (beside swift) has libFuzzer and the ASan runtime.
FUZZ_CC ?= $(dir $(realpath $(shell command -v $(SWIFT))))clang
# Its clang++, for C++ programs against the ASan library (test-cpp's misuse.cpp).
ASAN_CXX ?= $(dir $(realpath $(shell command -v $(SWIFT))))clang++
ASAN := $(BUILD)/asan
ASAN_SCRATCH := .build-asan
ASAN_SWIFT_FLAGS := -Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp \
                    -Xcc -fsanitize=address,fuzzer-no-link -Xcxx -fsanitize=address,fuzzer-no-link $(DWARF4)
ASAN_CFLAGS := $(SAN_CFLAGS) -IInclude
ASAN_LINK := -fuse-ld=lld -L$(ASAN)/lib -Wl,-rpath,$(ASAN)/lib -lturnstate -lpthread
# Harnesses of the library (linked with the ASan libturnstate.so), and of the
# JSON layer alone (built from turnstate_json.cpp: libturnstate.so does not
# export the tsj_ functions); make fuzz and test-fuzz-replay run both.
FUZZ_LIB_TARGETS := create dispatch pointer journal plugin_config inspector_import replicate_entry
FUZZ_JSON_TARGETS := patch
# Python harnesses (Tests/fuzz/fuzz_NAME.py, atheris): the package's patch
# reducers through the store (build/lib) against jsonpatch, in their own venv
# (Tests/fuzz/py_venv.sh). FUZZ_PY_KNOWN: the open faults (Tests/fuzz/README.md)
# that their seeded run in test-fuzz-replay steps over; never their corpus replay.
FUZZ_PY_TARGETS := store_patch
FUZZ_VENV := $(BUILD)/fuzz-venv
FUZZ_PY_KNOWN :=
FUZZ_TARGETS := $(FUZZ_LIB_TARGETS) $(FUZZ_JSON_TARGETS) $(FUZZ_PY_TARGETS)
FUZZ_CXX ?= $(dir $(realpath $(shell command -v $(SWIFT))))clang++
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
fuzz test-fuzz-replay: export TS_FUZZ_PYTHON = $(FUZZ_VENV)/bin/python
fuzz test-fuzz-replay: export TURNSTATE_LIB = $(BUILD)/lib/libturnstate.so.0
test-fuzz-replay: export TS_FUZZ_SEEDED_KNOWN = $(FUZZ_PY_KNOWN)

## asan-lib: the library with ASan and libFuzzer's coverage, in build/asan/lib
asan-lib: setup
	@$(STEP) $(LOGS)/asan-lib.log "swift build libturnstate (release, ASan and fuzzer coverage)" \
	  $(LIBRARY_ONLY) $(SWIFT) build -c release --scratch-path $(ASAN_SCRATCH) --product turnstate $(ASAN_SWIFT_FLAGS) \
	  -Xlinker --version-script=$(CURDIR)/Sources/TurnstateC/CAPI/exports.map \
	  -Xlinker -soname -Xlinker libturnstate.so.$(SOVERSION)
	$(Q)mkdir -p $(ASAN)/lib
	$(Q)install -m 0755 $(ASAN_SCRATCH)/release/libturnstate.so $(ASAN)/lib/.libturnstate.so.new
	$(Q)mv -f $(ASAN)/lib/.libturnstate.so.new $(ASAN)/lib/libturnstate.so.$(VERSION)
	$(Q)ln -sf libturnstate.so.$(VERSION) $(ASAN)/lib/libturnstate.so.$(SOVERSION)
	$(Q)ln -sf libturnstate.so.$(SOVERSION) $(ASAN)/lib/libturnstate.so

## asan-plugins: the C plugins and the logger (Swift) with ASan, in build/asan/plugins
asan-plugins: asan-lib
	$(Q)mkdir -p $(ASAN)/plugins && chmod 0755 $(ASAN)/plugins
	@for p in $(C_PLUGINS); do \
	  $(STEP) $(LOGS)/asan-$$p.log "clang(asan) $$p.so" \
	    $(FUZZ_CC) $(ASAN_CFLAGS) -fsanitize=address,fuzzer-no-link -fuse-ld=lld -shared -fPIC \
	    Plugins/$$p/$$p.c -o $(ASAN)/plugins/$$p.so -lpthread; \
	done
	@$(STEP) $(LOGS)/asan-logger.log "swift build logger.so (release, ASan)" \
	  $(LIBRARY_ONLY) $(SWIFT) build -c release --scratch-path $(ASAN_SCRATCH) --product turnstate-logger $(ASAN_SWIFT_FLAGS)
	$(Q)install -m 0755 $(ASAN_SCRATCH)/release/libturnstate-logger.so $(ASAN)/plugins/logger.so

## fuzz-build: the libFuzzer harnesses (Tests/fuzz), in build/asan/bin
fuzz-build: asan-plugins fuzz-json-build
	$(Q)mkdir -p $(ASAN)/bin
	@for t in $(FUZZ_LIB_TARGETS); do \
	  $(STEP) $(LOGS)/fuzz_$$t.log "clang(fuzzer) fuzz_$$t" \
	    $(FUZZ_CC) $(ASAN_CFLAGS) -fsanitize=address,fuzzer Tests/fuzz/fuzz_$$t.c -o $(ASAN)/bin/fuzz_$$t $(ASAN_LINK); \
	done

## fuzz-json-build: the JSON layer's harnesses (Tests/fuzz/fuzz_patch.c) with
## turnstate_json.cpp compiled in (ASan, libFuzzer coverage), in build/asan/bin; no Swift build
fuzz-json-build: $(FUZZ_JSON_TARGETS:%=$(ASAN)/bin/fuzz_%)

$(ASAN)/obj/turnstate_json.o: Sources/CTurnstateJSON/turnstate_json.cpp Sources/CTurnstateJSON/include/turnstate_json.h
	$(Q)mkdir -p $(ASAN)/obj
	@$(STEP) $(LOGS)/asan-turnstate_json.log "clang++(asan) turnstate_json.o" \
	  $(FUZZ_CXX) $(CXX_STD) -O1 -g -fno-omit-frame-pointer $(CXX_WARN) -fsanitize=address,fuzzer-no-link \
	  -ISources/CTurnstateJSON/include -c $< -o $@

$(FUZZ_JSON_TARGETS:%=$(ASAN)/bin/fuzz_%): $(ASAN)/bin/fuzz_%: Tests/fuzz/fuzz_%.c $(ASAN)/obj/turnstate_json.o
	$(Q)mkdir -p $(ASAN)/bin
	@$(STEP) $(LOGS)/fuzz_$*.log "clang(fuzzer) fuzz_$*" \
	  $(FUZZ_CC) $(ASAN_CFLAGS) -ISources/CTurnstateJSON/include -fsanitize=address,fuzzer $< $(ASAN)/obj/turnstate_json.o \
	  -o $@ -fuse-ld=lld -lsimdjson -lstdc++ -lpthread

## fuzz: each harness for FUZZ_SECONDS (default 60), one after the other; new
## inputs go to build/asan/corpus/NAME (the committed seeds in Tests/fuzz/corpus
## are read, not written); findings to build/asan/findings/NAME
fuzz: fuzz-build lib
	@Tests/fuzz/py_venv.sh $(FUZZ_VENV) --atheris
	@Tests/fuzz/run.sh fuzz $(ASAN) $(FUZZ_SECONDS) $(FUZZ_OPTS) -- $(FUZZ_TARGETS)

## test-fuzz-replay: every committed corpus through its harness (no new fuzzing), and the
## Python harness's seeded run (patches through the store against jsonpatch, 3000 cases)
test-fuzz-replay: $(call prebuilt,setup-test fuzz-build lib) fuzz-json-build
	@Tests/fuzz/py_venv.sh $(FUZZ_VENV)
	@Tests/checks.sh Tests/fuzz/run.sh replay $(ASAN) 0 $(FUZZ_OPTS) -- $(FUZZ_TARGETS)

## test-c-asan: the C suite against the ASan library, with leak checks
test-c-asan: $(call prebuilt,setup-test asan-lib)
	@mkdir -p $(ASAN)/tests
	$(C_REGISTRY) -o $(ASAN)/tests/registry_store.c $(C_SUITE)
	$(FUZZ_CC) $(ASAN_CFLAGS) -fsanitize=address $(C_TEST_INCLUDES) $(TS_HARNESS) $(C_SUITE) $(ASAN)/tests/registry_store.c \
	  -o $(ASAN)/tests/test_store $(ASAN_LINK)
	@# test_errors__outOfMemoryIsNomemNotACrash makes malloc fail on purpose: ASan must return NULL, not abort.
	ASAN_OPTIONS=$$ASAN_OPTIONS:allocator_may_return_null=1 Tests/checks.sh $(ASAN)/tests/test_store
	@for t in $(C_TESTS); do \
	  name=$$(basename $$t .c); name=$${name#test_}; bin=$(ASAN)/tests/$$name; \
	  echo "clang(asan) $$t"; $(C_REGISTRY) --suite $$name -o $(ASAN)/tests/registry_$$name.c $$t && \
	  $(FUZZ_CC) $(ASAN_CFLAGS) -fsanitize=address $(C_TEST_INCLUDES) $(TS_HARNESS) $$t $(ASAN)/tests/registry_$$name.c \
	    -o $$bin $(ASAN_LINK) || exit 1; \
	  ASAN_OPTIONS=$$ASAN_OPTIONS:allocator_may_return_null=1 Tests/checks.sh $$bin; \
	done

## test-plugins-asan: the plugin suite (plugins, loader variants, tests) and the
## logger's test with ASan; the suite builds its plugins in build/asan/ptest,
## apart from the fuzzers' instrumented ones
test-plugins-asan: $(call prebuilt,setup-test asan-plugins)
	@mkdir -p $(ASAN)/ptest $(ASAN)/tests && ln -sfn ../lib $(ASAN)/ptest/lib
	TS_VALGRIND=0 CC="$(FUZZ_CC) -fsanitize=address -fuse-ld=lld" TS_BUILD=$(ASAN)/ptest Tests/checks.sh Tests/plugins/run.sh
	$(C_REGISTRY) --suite logger -o $(ASAN)/tests/registry_logger.c Tests/plugins/logger_test.c
	$(FUZZ_CC) $(ASAN_CFLAGS) -fsanitize=address -ITests/harness $(TS_HARNESS) Tests/plugins/logger_test.c \
	  $(ASAN)/tests/registry_logger.c -o $(ASAN)/tests/logger_test $(ASAN_LINK) -ldl
	Tests/checks.sh $(ASAN)/tests/logger_test $(ASAN)/plugins/logger.so

## bench: release benchmarks (Swift W1-W5 and their floors, C C1-C6, C1i (the inspector plugin), CP, CA, CU (patches, appends, unhandled actions),
## Python P1, Rust R1, CP/CA/CU from Rust (RP, RA, RU) and C++ (XP, XA, XU), replicate.so REP, start-up, memory, a 100 MB state), printed as one table with
## callgrind's instructions per operation; BENCH_ARGS="--runs 3 --scale 0.1" for a quick look,
## BENCH_ARGS=--big for the 1 GB state too
bench: setup-test lib plugins
	$(MAKE) -C Benchmarks BUILD=$(BUILD) SWIFT=$(SWIFT) CC=$(CC) CARGO=$(CARGO)
	SWIFT=$(SWIFT) python3 Benchmarks/report.py $(BENCH_ARGS)

## install: the library, its private Swift runtime, the plugins, the headers,
## turnstate.pc, turnstate-testgen and the man pages into PREFIX (default /usr/local), LIBDIR
## (default PREFIX/lib), MANDIR (default PREFIX/share/man); DESTDIR for
## staging. Libraries 0644 and stripped; their debug information in a .debug
## folder beside each (gdb finds it by debuglink). Pages gzip -9n, as Debian's.
INSTALL_PLUGINS := $(C_PLUGINS) replicate logger
PLUGINSDIR = $(LIBDIR)/turnstate/plugins
# Under TS_PREBUILT (test-install and test-deb in `make test`, after test-build)
# the library and plugins already built are installed as they are.
install: setup $(call prebuilt,lib plugins) man
	$(Q)install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(PLUGINSDIR)
	@$(STEP) $(LOGS)/install-lib.log "install libturnstate.so.$(VERSION) (stripped) in $(DESTDIR)$(LIBDIR)" \
	  .ci/packaging/install-stripped.sh $(BUILD)/lib/libturnstate.so.$(VERSION) $(DESTDIR)$(LIBDIR) libturnstate.so.$(VERSION)
	$(Q)ln -sf libturnstate.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libturnstate.so.$(SOVERSION)
	$(Q)ln -sf libturnstate.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libturnstate.so
	@$(STEP) $(LOGS)/install-runtime.log "install the private Swift runtime in $(DESTDIR)$(LIBDIR)/turnstate" \
	  .ci/packaging/swift-runtime.sh $(DESTDIR)$(LIBDIR)/turnstate $(BUILD)/lib/libturnstate.so.$(VERSION) $(BUILD)/plugins/logger.so
	@for p in $(INSTALL_PLUGINS); do \
	  $(STEP) $(LOGS)/install-$$p.log "install $$p.so (stripped) in $(DESTDIR)$(PLUGINSDIR)" \
	    .ci/packaging/install-stripped.sh $(BUILD)/plugins/$$p.so $(DESTDIR)$(PLUGINSDIR) $$p.so; \
	done
	@echo "install turnstate-testgen in $(DESTDIR)$(PREFIX)/bin"
	$(Q)install -d $(DESTDIR)$(PREFIX)/bin
	$(Q)install -m 0755 Tools/turnstate-testgen $(DESTDIR)$(PREFIX)/bin/turnstate-testgen
	@echo "install the headers and turnstate.pc"
	$(Q)install -m 0644 Include/turnstate.h Include/turnstate_plugin.h Include/turnstate.hpp $(DESTDIR)$(PREFIX)/include/
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    pkgconfig/turnstate.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/turnstate.pc
	$(Q)install -d $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man7
	@cd $(BUILD)/man; for page in man3/*.3 man7/*.7; do \
	  gzip -9nc $$page > $(DESTDIR)$(MANDIR)/$$page.gz; chmod 0644 $(DESTDIR)$(MANDIR)/$$page.gz; \
	done; echo "man pages: $$(ls man3 | wc -l) in $(MANDIR)/man3, $$(ls man7 | wc -l) in $(MANDIR)/man7"
	$(Q)install -d $(DESTDIR)$(MANDIR)/man1
	$(Q)gzip -9nc docs/man/turnstate-testgen.1 > $(DESTDIR)$(MANDIR)/man1/turnstate-testgen.1.gz
	$(Q)chmod 0644 $(DESTDIR)$(MANDIR)/man1/turnstate-testgen.1.gz
	@echo "installed into $(DESTDIR)$(PREFIX) (plugins in $(PLUGINSDIR))"

## deb: the Debian packages libturnstate0 (library, plugins, private Swift
## runtime), libturnstate-dev and libturnstate0-dbgsym in build/deb/, from
## `make install PREFIX=/usr LIBDIR=/usr/lib/<multiarch>` (.ci/packaging/debian/)
DEB_MULTIARCH = $(shell dpkg-architecture -qDEB_HOST_MULTIARCH)
deb: setup-deb $(call prebuilt,lib plugins)
	$(Q)rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb
	@$(MAKE) --no-print-directory install PREFIX=/usr LIBDIR=/usr/lib/$(DEB_MULTIARCH) DESTDIR=$(BUILD)/deb/stage
	@# Its output is its result: a line per package built, and the library's Depends.
	$(Q).ci/packaging/debian/build-debs.sh $(VERSION) $(BUILD)/deb/stage $(BUILD)/deb

## uninstall: remove what install put in DESTDIR, PREFIX and LIBDIR
uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libturnstate.so* $(DESTDIR)$(LIBDIR)/.debug/libturnstate.so.*.debug \
	      $(DESTDIR)$(PREFIX)/include/turnstate.h $(DESTDIR)$(PREFIX)/include/turnstate_plugin.h \
	      $(DESTDIR)$(PREFIX)/include/turnstate.hpp $(DESTDIR)$(PREFIX)/bin/turnstate-testgen \
	      $(DESTDIR)$(MANDIR)/man1/turnstate-testgen.1.gz \
	      $(DESTDIR)$(LIBDIR)/pkgconfig/turnstate.pc
	rm -rf $(DESTDIR)$(LIBDIR)/turnstate
	-rmdir $(DESTDIR)$(LIBDIR)/.debug 2>/dev/null
	@# The pages that make install writes: the list the headers give now.
	for page in $$(python3 docs/man/genman.py --list $(MAN_HEADERS)); do rm -f $(DESTDIR)$(MANDIR)/$$page.gz; done

## clean: remove build/ and every SwiftPM scratch folder (.build*)
clean:
	rm -rf $(BUILD) .build .build-*
