/* replicas.c - undo.so after replicate.so (Tests/undo/run.sh):
 *   replicas UNDO_SO REPLICATE_SO REDIS_URL STREAM
 * Two replicas of one stream, each with the chain replicate -> undo: an
 * @@undo dispatched on one replica is an ordinary entry of the log, and
 * every replica undoes the same step (the last step of the log's order,
 * whichever replica made it); redo and a jump likewise; the histories'
 * counts agree. Prints "N passed, M failed". */
#include "turnstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

static void check(int ok, const char *what, const char *detail) {
    if (ok) {
        passed++;
        return;
    }
    failed++;
    fprintf(stderr, "FAIL %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
}

static char *count(const char *slice, const ts_action *action, void *ctx) {
    char out[32];
    (void)ctx;
    if (slice == NULL) return ts_strdup("0");
    if (strcmp(action->type, "add") != 0 || action->payload == NULL) return NULL;
    snprintf(out, sizeof out, "%lld", atoll(slice) + atoll(action->payload));
    return ts_strdup(out);
}

static char *status(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice == NULL) return ts_strdup("null");
    if (strcmp(action->type, "@@undo/status") != 0 || action->payload == NULL) return NULL;
    return ts_strdup(action->payload);
}

static ts_store *replica(const char *undo_so, const char *replicate_so, const char *url, const char *stream) {
    ts_store *s = NULL;
    char config[512];
    ts_store_create(NULL, &s);
    ts_store_add_reducer(s, "count", count, NULL);
    ts_store_add_reducer(s, "status", status, NULL);
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"stream\":\"%s\",\"timeout_ms\":5000}", url, stream);
    if (ts_store_load_plugin(s, replicate_so, config) != TS_OK ||
        ts_store_load_plugin(s, undo_so, "{\"keys\":[\"count\"]}") != TS_OK) {
        fprintf(stderr, "loading the plugins: %s\n", ts_last_error());
        ts_store_destroy(s);
        return NULL;
    }
    return s;
}

static void send(ts_store *s, const char *json) {
    ts_status st = ts_store_dispatch(s, json);
    if (st != TS_OK) check(0, json, ts_last_error());
}

/* Brings a replica up to the log: an ordered dispatch applies every entry
 * before its own (@@undo/status changes no tracked key: not a step). */
static void sync_both(ts_store *a, ts_store *b) {
    send(a, "{\"type\":\"@@undo/status\"}");
    send(b, "{\"type\":\"@@undo/status\"}");
    send(a, "{\"type\":\"@@undo/status\"}");
}

static void same(ts_store *a, ts_store *b, const char *want_count, const char *what) {
    char *ca = NULL, *cb = NULL, *sa = NULL, *sb = NULL, detail[512];
    sync_both(a, b);
    ts_store_get_state(a, "/count", &ca);
    ts_store_get_state(b, "/count", &cb);
    ts_store_get_state(a, "/status", &sa);
    ts_store_get_state(b, "/status", &sb);
    snprintf(detail, sizeof detail, "A count %s status %s; B count %s status %s; want count %s", ca ? ca : "?",
             sa ? sa : "?", cb ? cb : "?", sb ? sb : "?", want_count);
    check(ca && cb && strcmp(ca, want_count) == 0 && strcmp(cb, want_count) == 0, what, detail);
    check(sa && sb && strcmp(sa, sb) == 0, "the replicas' histories agree", detail);
    ts_free(ca);
    ts_free(cb);
    ts_free(sa);
    ts_free(sb);
}

int main(int argc, char **argv) {
    ts_store *a, *b;
    if (argc != 5) {
        fprintf(stderr, "usage: replicas UNDO_SO REPLICATE_SO REDIS_URL STREAM\n");
        return 2;
    }
    a = replica(argv[1], argv[2], argv[3], argv[4]);
    b = a ? replica(argv[1], argv[2], argv[3], argv[4]) : NULL;
    if (a == NULL || b == NULL) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    send(a, "{\"type\":\"add\",\"payload\":1}");
    send(b, "{\"type\":\"add\",\"payload\":10}");
    send(a, "{\"type\":\"add\",\"payload\":100}");
    same(a, b, "111", "three adds from two replicas");
    send(b, "{\"type\":\"@@undo\"}");
    same(a, b, "11", "an @@undo on B undoes A's last add on both");
    send(a, "{\"type\":\"@@undo\"}");
    same(a, b, "1", "an @@undo on A undoes B's add on both");
    send(b, "{\"type\":\"@@redo\"}");
    same(a, b, "11", "an @@redo on B redoes it on both");
    send(a, "{\"type\":\"@@undo/jump\",\"payload\":-2}");
    same(a, b, "0", "a jump on A moves both");
    ts_store_destroy(a);
    ts_store_destroy(b);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
