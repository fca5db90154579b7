/* relay.c - undo.so after a plugin that applies some actions with
 * dispatch_after and passes others with next (Tests/undo/run.sh):
 *   relay RELAY_SO UNDO_SO
 * undo.so starts its history anew when it is handed a new `next` (the chain
 * after it changed); actions that reach it from dispatch_after and from
 * next, through the same chain, must both be steps of one history.
 * Prints "N passed, M failed". */
#include "turnstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

static char *count(const char *slice, const ts_action *action, void *ctx) {
    char out[32];
    (void)ctx;
    if (slice == NULL) return ts_strdup("0");
    if (strcmp(action->type, "INCREMENT") != 0) return NULL;
    snprintf(out, sizeof out, "%d", atoi(slice) + 1);
    return ts_strdup(out);
}

static char *status(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice == NULL) return ts_strdup("null");
    if (strcmp(action->type, "@@undo/status") != 0 || action->payload == NULL) return NULL;
    return ts_strdup(action->payload);
}

static void expect(ts_store *s, const char *pointer, const char *want, const char *what) {
    char *got = NULL;
    ts_store_dispatch(s, "{\"type\":\"@@undo/status\"}");
    ts_store_get_state(s, pointer, &got);
    if (got != NULL && strcmp(got, want) == 0) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "FAIL %s: %s is %s, want %s\n", what, pointer, got ? got : "(none)", want);
    }
    ts_free(got);
}

int main(int argc, char **argv) {
    ts_store *s = NULL;
    if (argc != 3) {
        fprintf(stderr, "usage: relay RELAY_SO UNDO_SO\n");
        return 2;
    }
    ts_store_create(NULL, &s);
    ts_store_add_reducer(s, "count", count, NULL);
    ts_store_add_reducer(s, "status", status, NULL);
    if (ts_store_load_plugin(s, argv[1], NULL) != TS_OK || ts_store_load_plugin(s, argv[2], "{\"keys\":[\"count\"]}") != TS_OK) {
        fprintf(stderr, "loading the plugins: %s\n", ts_last_error());
        printf("0 passed, 1 failed\n");
        return 1;
    }
    ts_store_dispatch(s, "{\"type\":\"INCREMENT\"}");
    ts_store_dispatch(s, "{\"type\":\"relay\"}");
    ts_store_dispatch(s, "{\"type\":\"INCREMENT\"}");
    ts_store_dispatch(s, "{\"type\":\"relay\"}");
    expect(s, "/status/past", "4", "steps through next and through dispatch_after are one history");
    ts_store_dispatch(s, "{\"type\":\"@@undo\"}");
    ts_store_dispatch(s, "{\"type\":\"@@undo\"}");
    expect(s, "/count", "2", "undo takes back a relayed step and a passed one");
    expect(s, "/status/future", "2", "both are in the future");
    ts_store_destroy(s);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
