/*
 * check.h - the checks of the replicate test programs that stand alone
 * (journal.c, migrate.c, faults.c): each check counted, a failure printed
 * as "FAIL: WHAT (DETAIL)", and the summary "N passed, M failed" that
 * run.sh and nats_run.py add to theirs.
 */
#ifndef TS_TESTS_REPLICATE_CHECK_H
#define TS_TESTS_REPLICATE_CHECK_H

#include "turnstate.h"

#include <stdio.h>
#include <string.h>

static int passed, failed;

static inline void check(int ok, const char *what, const char *detail) {
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL: %s (%s)\n", what, detail ? detail : "");
    }
}

/* The store's whole state is `want`. */
static inline void check_state(ts_store *store, const char *want, const char *what) {
    char *state = NULL;
    check(ts_store_get_state(store, "", &state) == TS_OK && strcmp(state, want) == 0, what, state);
    ts_free(state);
}

/* Prints the summary; the exit status: 1 when a check failed. */
static inline int check_summary(void) {
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}

#endif
