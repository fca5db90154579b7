/*
 * ts_test.c - the harness of ts_test.h: the tally, the checks and the runner.
 */
#include "ts_test.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int passed, failed;
int ts_test_quick;
const char *ts_test_current = "(no test)";
const char *ts_test_program = "";
void (*ts_test_on_failure)(FILE *out, int has_detail);
static const char *skip_reason; /* of the running test, if it called ts_test_skip */

void ts_test_skip(const char *why) {
    pthread_mutex_lock(&lock);
    skip_reason = why != NULL ? why : "";
    pthread_mutex_unlock(&lock);
}

int ts_test_passed(void) {
    pthread_mutex_lock(&lock);
    int n = passed;
    pthread_mutex_unlock(&lock);
    return n;
}

int ts_test_failed(void) {
    pthread_mutex_lock(&lock);
    int n = failed;
    pthread_mutex_unlock(&lock);
    return n;
}

int ts_test_report(int ok, const char *file, int line, const char *expr, const char *detail) {
    pthread_mutex_lock(&lock);
    if (ok) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "%s:%d: [%s] FAILED: %s\n", file, line, ts_test_current, expr);
        if (detail != NULL) {
            /* Each line of the detail indented under the check. */
            const char *p = detail;
            while (*p != '\0') {
                const char *end = strchr(p, '\n');
                size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
                fprintf(stderr, "    %.*s\n", (int)n, p);
                p += n + (end != NULL ? 1 : 0);
            }
        }
        if (ts_test_on_failure != NULL) ts_test_on_failure(stderr, detail != NULL);
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

int ts_test_reportf(int ok, const char *file, int line, const char *expr, const char *format, ...) {
    char detail[1024] = "";
    if (!ok) {
        va_list args;
        va_start(args, format);
        vsnprintf(detail, sizeof detail, format, args);
        va_end(args);
    }
    return ts_test_report(ok, file, line, expr, detail);
}

const char *ts_test_quote(char *buf, size_t size, const char *s) {
    if (s == NULL) {
        snprintf(buf, size, "NULL");
    } else {
        size_t n = strlen(s);
        if (n > 160) snprintf(buf, size, "\"%.160s\"... (%zu bytes)", s, n);
        else snprintf(buf, size, "\"%s\"", s);
    }
    return buf;
}

void ts_test_check_int(long long got, long long want, const char *file, int line, const char *expr) {
    ts_test_reportf(got == want, file, line, expr, "got %lld, expected %lld", got, want);
}

void ts_test_check_str(const char *got, const char *want, const char *file, int line, const char *expr) {
    int ok = (got == NULL && want == NULL) || (got != NULL && want != NULL && strcmp(got, want) == 0);
    char a[200], b[200];
    ts_test_reportf(ok, file, line, expr, "got:      %s\nexpected: %s", ts_test_quote(a, sizeof a, got),
                    ts_test_quote(b, sizeof b, want));
}

void ts_test_check_contains(const char *text, const char *part, const char *file, int line, const char *expr) {
    int ok = text != NULL && part != NULL && strstr(text, part) != NULL;
    char a[200], b[200];
    ts_test_reportf(ok, file, line, expr, "text:           %s\nshould contain: %s", ts_test_quote(a, sizeof a, text),
                    ts_test_quote(b, sizeof b, part));
}

/* ---- The runner ------------------------------------------------------------ */

/* `name` ("topic__rule") is selected by `want` (a topic, or a test with or
 * without "test_"). */
static int selects(const char *want, const char *name) {
    if (strncmp(want, "test_", 5) == 0) want += 5;
    size_t n = strlen(want);
    if (strcmp(want, name) == 0) return 1;
    return strncmp(want, name, n) == 0 && strncmp(name + n, "__", 2) == 0;
}

static int usage(const char *program) {
    fprintf(stderr, "usage: %s [--quick] [-l|--list] [-s TOPIC|-s TOPIC__RULE]... [the suite's options]\n", program);
    return 2;
}

int ts_test_main(int argc, char **argv, const char *suite, const ts_test_case *cases, size_t count,
                 const ts_test_hooks *hooks) {
    static const ts_test_hooks none = {NULL, NULL, NULL};
    if (hooks == NULL) hooks = &none;
    ts_test_program = argc > 0 ? argv[0] : "";
    const char **wanted = calloc((size_t)argc + 1, sizeof *wanted);
    size_t nwanted = 0;
    int list = 0;
    if (wanted == NULL) return 2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            ts_test_quick = 1;
        } else if (strcmp(argv[i], "-l") == 0 || strcmp(argv[i], "--list") == 0) {
            list = 1;
        } else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc) {
            wanted[nwanted++] = argv[++i];
        } else if (strncmp(argv[i], "-s", 2) == 0 && argv[i][2] != '\0') {
            wanted[nwanted++] = argv[i] + 2;
        } else {
            int taken = hooks->option != NULL ? hooks->option(argc, argv, i) : 0;
            if (taken <= 0 || taken > argc - i) {
                free(wanted);
                return usage(argv[0]);
            }
            i += taken - 1;
        }
    }
    /* Every -s must name something: a typo is not an empty, green run. */
    for (size_t w = 0; w < nwanted; w++) {
        int found = 0;
        for (size_t i = 0; i < count && !found; i++) found = selects(wanted[w], cases[i].name);
        if (!found) {
            fprintf(stderr, "%s: no test or topic named \"%s\" (-l lists them)\n", argv[0], wanted[w]);
            free(wanted);
            return 2;
        }
    }
    char **failed_tests = calloc(count + 3, sizeof *failed_tests);
    size_t nfailed_tests = 0, ran = 0, skipped = 0;
    if (failed_tests == NULL) {
        free(wanted);
        return 2;
    }
    if (!list && hooks->setup != NULL) {
        int failed_before = ts_test_failed();
        ts_test_current = "ts_test_suite_setup";
        hooks->setup();
        ts_test_current = "(no test)";
        if (ts_test_failed() > failed_before) failed_tests[nfailed_tests++] = strdup("ts_test_suite_setup");
    }
    for (size_t i = 0; i < count; i++) {
        int run = nwanted == 0;
        for (size_t w = 0; w < nwanted && !run; w++) run = selects(wanted[w], cases[i].name);
        if (!run) continue;
        char full[256];
        snprintf(full, sizeof full, "test_%s", cases[i].name);
        if (list) {
            printf("%s\n", full);
            continue;
        }
        ran++;
        int passed_before = ts_test_passed(), failed_before = ts_test_failed();
        ts_test_current = full;
        skip_reason = NULL;
        cases[i].fn();
        int new_passed = ts_test_passed() - passed_before, new_failed = ts_test_failed() - failed_before;
        if (skip_reason != NULL) {
            printf("skipped %s: %s\n", full, skip_reason);
            skipped++;
        } else if (new_passed + new_failed == 0)
            ts_test_report(0, "ts_test.c", __LINE__, "the test made no check", "a test must check something");
        new_failed = ts_test_failed() - failed_before;
        if (new_failed > 0) {
            fprintf(stderr, "-- %s: %d failed\n", full, new_failed);
            failed_tests[nfailed_tests++] = strdup(full);
        }
        ts_test_current = "(no test)";
    }
    if (!list && hooks->teardown != NULL) {
        int failed_before = ts_test_failed();
        ts_test_current = "ts_test_suite_teardown";
        hooks->teardown();
        ts_test_current = "(no test)";
        if (ts_test_failed() > failed_before) failed_tests[nfailed_tests++] = strdup("ts_test_suite_teardown");
    }
    int status = 0;
    if (!list) {
        for (size_t i = 0; i < nfailed_tests; i++) fprintf(stderr, "FAILED %s\n", failed_tests[i]);
        fflush(stderr);
        printf("ran %zu of %zu tests (%zu skipped)\n", ran, count, skipped);
        printf("%s%s%d passed, %d failed\n", suite != NULL ? suite : "", suite != NULL ? ": " : "", ts_test_passed(),
               ts_test_failed());
        status = ts_test_failed() > 0 ? 1 : 0;
    }
    for (size_t i = 0; i < nfailed_tests; i++) free(failed_tests[i]);
    free(failed_tests);
    free(wanted);
    return status;
}
