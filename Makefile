# Turnstate: build, test, run, install, benchmark.
#
#   make run       set up, build, and run the C demo (plugins loaded from a folder)
#   make test      every test: Swift (also under TSan), C (also under valgrind),
#                  exported symbols, pkg-config consumer, Python, plugins
#   make install PREFIX=/usr/local   the library, headers and turnstate.pc
#   make bench     release benchmarks, printed as one table
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
# STATIC_STDLIB=1 links the Swift runtime in (a .so that needs only libc,
# libstdc++, libffi and libsimdjson at run time).
LIB_LDFLAGS := -Xlinker --version-script=$(CURDIR)/Sources/TurnstateC/exports.map \
               -Xlinker -soname -Xlinker libturnstate.so.$(SOVERSION)
ifeq ($(STATIC_STDLIB),1)
LIB_LDFLAGS += -Xswiftc -static-stdlib
RELEASE_SCRATCH := .build-release-static
else
RELEASE_SCRATCH := .build-release
endif

CC ?= cc
CFLAGS ?= -std=c99 -O2 -g -Wall -Wextra -Werror -pedantic
C_LINK := -L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib -lturnstate -lpthread
VALGRIND := valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
            --show-leak-kinds=definite,indirect --suppressions=$(CURDIR)/Tests/c/valgrind.supp

.PHONY: setup build lib examples run test install uninstall clean \
        test-swift test-swift-tsan test-json test-c test-exports test-pkgconfig test-python

setup:
	@.ci/setup.sh

## build: the library, the examples
build: setup lib examples

lib: setup
	$(SWIFT) build -c release --scratch-path $(RELEASE_SCRATCH) --product turnstate $(LIB_LDFLAGS)
	@mkdir -p $(BUILD)/lib
	@cp -f $(RELEASE_SCRATCH)/release/libturnstate.so $(BUILD)/lib/libturnstate.so.$(VERSION)
	@ln -sf libturnstate.so.$(VERSION) $(BUILD)/lib/libturnstate.so.$(SOVERSION)
	@ln -sf libturnstate.so.$(SOVERSION) $(BUILD)/lib/libturnstate.so
	@echo "built $(BUILD)/lib/libturnstate.so.$(VERSION)"

examples: lib
	@mkdir -p $(BUILD)/bin
	$(CC) $(CFLAGS) -IInclude Examples/todo.c -o $(BUILD)/bin/todo $(C_LINK)

## run: the C demo
run: build
	$(BUILD)/bin/todo

## test: every suite; a summary line at the end
test: setup
	@Tests/run-suites.sh test-swift test-swift-tsan test-json test-c test-exports test-pkgconfig test-python

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

test-python: lib
	TURNSTATE_LIB=$(LIB) python3 -m unittest discover -s Tests/python -v

## install: PREFIX (default /usr/local), LIBDIR (default PREFIX/lib)
install: lib
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 0755 $(BUILD)/lib/libturnstate.so.$(VERSION) $(DESTDIR)$(LIBDIR)/
	ln -sf libturnstate.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libturnstate.so.$(SOVERSION)
	ln -sf libturnstate.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libturnstate.so
	install -m 0644 Include/turnstate.h $(DESTDIR)$(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@VERSION@|$(VERSION)|' \
	    pkgconfig/turnstate.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/turnstate.pc
	@echo "installed into $(DESTDIR)$(PREFIX)"

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libturnstate.so* $(DESTDIR)$(PREFIX)/include/turnstate.h \
	      $(DESTDIR)$(LIBDIR)/pkgconfig/turnstate.pc

clean:
	rm -rf $(BUILD) .build .build-*
