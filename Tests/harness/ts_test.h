/*
 * ts_test.h - the one harness of the C test programs (Tests/README.md).
 *
 * A test is a function `void test_<topic>__<rule>(void)` (not static): the
 * topic is lower_snake (the file's topic: test_dispatch.c holds
 * test_dispatch__*), the rule lowerCamelCase and says what the test guards,
 * as the Swift tests do: test_subscribe__listenerRemovedDuringDispatchIsStillCalled.
 * Nothing registers it by hand: Tests/harness/gen_registry.py scans the
 * sources for those definitions and writes the program's table and main()
 * (the Makefile runs it before compiling), so a test cannot be left out or
 * listed twice, and a name off the pattern or a name used twice stops the
 * build.
 *
 * The program (ts_test_main, in ts_test.c) takes:
 *     --quick           smaller loop counts (ts_test_quick; the valgrind runs)
 *     -s NAME           run only NAME: a topic ("dispatch") or one test
 *                       ("dispatch__invalidJsonIsRefused", with or without
 *                       "test_"); may be repeated; a NAME that matches no
 *                       test is an error (exit 2), never an empty green run
 *     -l, --list        print the tests' names and exit
 * and prints, last, the line Tests/checks.sh reads:
 *     [SUITE: ]N passed, M failed
 * exiting 1 if a check failed, 0 otherwise. A failed check prints, on stderr:
 *     Tests/c/test_dispatch.c:123: [test_dispatch__invalidJsonIsRefused] FAILED: <expression>
 *         <detail: the values compared>
 * and each test with a failure is named again at the end ("FAILED test_...").
 * A test that makes no check at all fails ("made no check"): a test must
 * assert something (ts_test_skip says why one does not apply to a run).
 * A program's suite hooks, each optional and defined at most once, are found
 * by name by gen_registry.py (not static) and called by ts_test_main:
 *     int ts_test_suite_option(int argc, char **argv, int i)
 *         argv[i] is an argument the harness does not know: return how many
 *         arguments (argv[i] and its values) the suite takes there, or 0 if
 *         none (then it is a usage error, exit 2). Tests/plugins: --plugins DIR.
 *     void ts_test_suite_setup(void)
 *         after the options, before the first test (not with -l); its checks
 *         count. Tests/c/check.c sets ts_test_on_failure there; a program that
 *         re-runs itself in a child mode runs the child there and exits.
 *     void ts_test_suite_teardown(void)
 *         after the last test, before the summary line (not with -l): removes
 *         what setup made; its checks count.
 *
 * Checks are safe from any thread (one lock). Include this header first, or
 * through a suite's own header (Tests/c/check.h adds the C API's checks).
 */
#ifndef TS_TEST_H
#define TS_TEST_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <stddef.h>
#include <stdio.h>

/* ---- The registry (written by gen_registry.py) ---------------------------- */

typedef void (*ts_test_fn)(void);
typedef struct ts_test_case {
    const char *name; /* "topic__rule", without "test_" */
    ts_test_fn fn;
} ts_test_case;

/* The suite hooks a program defines (see above); NULL where it has none. */
typedef struct ts_test_hooks {
    int (*option)(int argc, char **argv, int i);
    void (*setup)(void);
    void (*teardown)(void);
} ts_test_hooks;

/* Runs the tests of `cases` that the command line selects (see above); the
 * generated main() calls it. `suite` prefixes the summary line, or NULL;
 * `hooks` may be NULL. */
int ts_test_main(int argc, char **argv, const char *suite, const ts_test_case *cases, size_t count,
                 const ts_test_hooks *hooks);

/* ---- State ---------------------------------------------------------------- */

extern int ts_test_quick;            /* --quick was given */
extern const char *ts_test_current;  /* the running test's full name ("test_topic__rule") */
extern const char *ts_test_program;  /* argv[0] (a program that re-runs itself) */
int ts_test_passed(void);            /* checks passed so far */
int ts_test_failed(void);            /* checks failed so far */

/* A suite's extra lines under each failure (Tests/c/check.h prints
 * ts_last_error()); called under the harness's lock. `has_detail` says
 * whether the check gave its own detail. */
extern void (*ts_test_on_failure)(FILE *out, int has_detail);

/* Says the running test does not apply to this run (call it, then return):
 * the test is listed as skipped with `why` and needs no check. For what a
 * run cannot do (a 40 MB state under valgrind), never to hide a failure. */
void ts_test_skip(const char *why);

/* ---- Checks ---------------------------------------------------------------- */

/* Counts one check; on failure prints file:line, the test, `expr` and
 * `detail` (may be NULL or several lines) as one block. Returns `ok`, so a
 * test can stop where going on makes no sense: if (!CHECK(p != NULL)) return; */
int ts_test_report(int ok, const char *file, int line, const char *expr, const char *detail);
/* As ts_test_report, the detail from a printf format. */
int ts_test_reportf(int ok, const char *file, int line, const char *expr, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
void ts_test_check_int(long long got, long long want, const char *file, int line, const char *expr);
/* Equal strings (both NULL counts as equal); shows at most 160 bytes of each. */
void ts_test_check_str(const char *got, const char *want, const char *file, int line, const char *expr);
void ts_test_check_contains(const char *text, const char *part, const char *file, int line, const char *expr);
/* `s` as a quoted, bounded string (160 bytes) into buf: "NULL" for NULL. */
const char *ts_test_quote(char *buf, size_t size, const char *s);

#define CHECK(cond) ts_test_report((cond) ? 1 : 0, __FILE__, __LINE__, #cond, NULL)
/* CHECK_MSG(cond, "format", ...): the failure's detail from a printf format. */
#define CHECK_MSG(cond, ...) ts_test_reportf((cond) ? 1 : 0, __FILE__, __LINE__, #cond, __VA_ARGS__)
#define CHECK_INT(got, want) \
    ts_test_check_int((long long)(got), (long long)(want), __FILE__, __LINE__, #got " == " #want)
#define CHECK_STR(got, want) ts_test_check_str((got), (want), __FILE__, __LINE__, #got " == " #want)
#define CHECK_CONTAINS(text, part) \
    ts_test_check_contains((text), (part), __FILE__, __LINE__, #text " contains " #part)

#endif
