/*
 * bug_reducers.c - the reducers of the flight recorder's test program
 * (test_recorder.c) and of the tests turnstate-testgen makes from its dumps
 * (run.sh): a counter, a session with a secret token, and a list whose
 * reducer has two bugs, fixed when compiled with -DTS_BUG_FIXED:
 *   "items/boom"  fails (ts_reducer_fail: TS_E_REDUCER);
 *   "items/crash" writes through a null pointer (SIGSEGV).
 * ts_testgen_setup adds them (the setup function turnstate-testgen names).
 */
#include <turnstate.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *counter_reducer(const char *slice, const ts_action *a, void *ctx) {
    char buffer[32];
    (void)ctx;
    if (slice == NULL) return ts_strdup("0");
    if (strcmp(a->type, "counter/inc") != 0) return NULL;
    snprintf(buffer, sizeof buffer, "%lld", strtoll(slice, NULL, 10) + 1);
    return ts_strdup(buffer);
}

/* "secret/login" {"token": "..."}: the token is kept in the state. */
static char *session_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    if (slice == NULL) return ts_strdup("{\"token\":null}");
    if (strcmp(a->type, "secret/login") != 0 || a->payload == NULL) return NULL;
    size_t n = strlen(a->payload);
    char *out = ts_alloc(n + 1);
    if (out) memcpy(out, a->payload, n + 1);
    return out;
}

/* "items/add" appends its payload; "items/boom" and "items/crash" are the bugs. */
static char *items_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    if (slice == NULL) return ts_strdup("[]");
#ifndef TS_BUG_FIXED
    if (strcmp(a->type, "items/boom") == 0) {
        ts_reducer_fail("boom is not handled");
        return NULL;
    }
    if (strcmp(a->type, "items/crash") == 0) {
        volatile int *nowhere = NULL;
        *nowhere = 1;
        return NULL;
    }
#endif
    if (strcmp(a->type, "items/add") != 0 || a->payload == NULL) return NULL;
    size_t n = strlen(slice), m = strlen(a->payload), at = n - 1;
    char *out = ts_alloc(n + m + 2);
    if (out == NULL) return NULL;
    memcpy(out, slice, at);
    if (n > 2) out[at++] = ',';
    memcpy(out + at, a->payload, m);
    at += m;
    out[at++] = ']';
    out[at] = '\0';
    return out;
}

ts_status ts_testgen_setup(ts_store *store);

ts_status ts_testgen_setup(ts_store *store) {
    ts_status status;
    if ((status = ts_store_add_reducer(store, "count", counter_reducer, NULL)) != TS_OK) return status;
    if ((status = ts_store_add_reducer(store, "session", session_reducer, NULL)) != TS_OK) return status;
    return ts_store_add_reducer(store, "items", items_reducer, NULL);
}
