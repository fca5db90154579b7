/* replicas.c - undo.so after replicate.so (Tests/undo/run.sh):
 *   replicas UNDO_SO REPLICATE_SO REDIS_URL STREAM
 * 1. Two replicas of stream STREAM, each with the chain replicate -> undo:
 *    an @@undo dispatched on one replica is an ordinary entry of the log,
 *    and every replica undoes the same step (the last step of the log's
 *    order, whichever replica made it); redo and a jump likewise; the
 *    histories' counts agree.
 * 2. A late joiner (stream STREAM-join, "snapshot_every": 64): A and B make
 *    steps, C joins from the snapshot, then @@undo is dispatched from each
 *    replica, reaching past C's join; then past a checkpoint; then C falls
 *    behind a trimmed log (its reader held inside its store by a reducer)
 *    and goes on from a snapshot while running. The three states and
 *    histories are equal after every step, and follow the history rule:
 *    undo.so's load is an entry of the log that empties every replica's
 *    history, and so is replicate.so's @@replicate/checkpoint after each
 *    entry numbered a multiple of 64 (or a snapshot of it loaded): an undo
 *    reaches back to the later of the two and no further.
 * 3. Optimistic mode (stream STREAM-optimistic): undo.so after replicate.so
 *    in "mode": "optimistic" refuses to load, with a message naming the
 *    mode, and the state is unchanged.
 * Prints "N passed, M failed". */
#include "turnstate.h"

#include <pthread.h>
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

static ts_store *replica(const char *undo_so, const char *replicate_so, const char *url, const char *stream,
                         const char *extra) {
    ts_store *s = NULL;
    char config[512];
    ts_store_create(NULL, &s);
    ts_store_add_reducer(s, "count", count, NULL);
    ts_store_add_reducer(s, "status", status, NULL);
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"stream\":\"%s\",\"timeout_ms\":5000%s}", url, stream,
             extra);
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

/* The gate: a reducer that, on one replica (ctx not NULL), holds its
 * reader thread inside the store on {"type":"block"} until released: that
 * replica falls behind while the others go on. */
typedef struct gate {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int entered, released;
} gate;

static char *gate_reducer(const char *slice, const ts_action *action, void *ctx) {
    gate *g = ctx;
    if (slice == NULL) return ts_strdup("0");
    if (g == NULL || strcmp(action->type, "block") != 0) return NULL;
    pthread_mutex_lock(&g->mutex);
    g->entered = 1;
    pthread_cond_broadcast(&g->cond);
    while (!g->released) pthread_cond_wait(&g->cond, &g->mutex);
    pthread_mutex_unlock(&g->mutex);
    return NULL;
}

/* Keeps the payload of @@replicate/status (local: never appended). */
static char *repl_status(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice == NULL) return ts_strdup("null");
    if (strcmp(action->type, "@@replicate/status") != 0 || action->payload == NULL) return NULL;
    return ts_strdup(action->payload);
}

/* Keeps the payload of @@replicate/checkpoint (local: never appended),
 * which undo.so passes on. */
static char *checkpoint_seen(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice == NULL) return ts_strdup("null");
    if (strcmp(action->type, "@@replicate/checkpoint") != 0 || action->payload == NULL) return NULL;
    return ts_strdup(action->payload);
}

/* The "seq" of the last @@replicate/checkpoint the replica applied (0:
 * none). */
static unsigned long long checkpoint_of(ts_store *s) {
    char *seq = NULL;
    unsigned long long n = 0;
    if (ts_store_get_state(s, "/checkpoint/seq", &seq) == TS_OK) n = strtoull(seq, NULL, 10);
    ts_free(seq);
    return n;
}

/* The last entry the replica applied (its @@replicate/status "seq"). */
static unsigned long long seq_of(ts_store *s) {
    char *seq = NULL;
    unsigned long long n = 0;
    send(s, "{\"type\":\"@@replicate/status\"}");
    if (ts_store_get_state(s, "/repl/seq", &seq) == TS_OK) n = strtoull(seq, NULL, 10);
    ts_free(seq);
    return n;
}

/* An entry that changes no tracked key: not a step. */
static void noop(ts_store *s) { send(s, "{\"type\":\"@@undo/status\"}"); }

#define EVERY 64

/* Appends no-op entries from s until the log's last entry is a multiple of
 * EVERY plus `rest` (1: a checkpoint was just passed, the next one is EVERY
 * entries on; s applies every entry before its own, and nothing else
 * appends meanwhile). */
static void pad_to(ts_store *s, unsigned long long rest) {
    int i;
    for (i = 0; i < 2 * EVERY && seq_of(s) % EVERY != rest; i++) noop(s);
}

static ts_store *replica3(const char *undo_so, const char *replicate_so, const char *url, const char *stream,
                          gate *g) {
    ts_store *s = NULL;
    char config[512];
    ts_store_create(NULL, &s);
    ts_store_add_reducer(s, "count", count, NULL);
    ts_store_add_reducer(s, "status", status, NULL);
    ts_store_add_reducer(s, "repl", repl_status, NULL);
    ts_store_add_reducer(s, "gate", gate_reducer, g);
    ts_store_add_reducer(s, "checkpoint", checkpoint_seen, NULL);
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"stream\":\"%s\",\"timeout_ms\":5000,\"snapshot_every\":%d}", url,
             stream, EVERY);
    if (ts_store_load_plugin(s, replicate_so, config) != TS_OK ||
        ts_store_load_plugin(s, undo_so, "{\"keys\":[\"count\"]}") != TS_OK) {
        fprintf(stderr, "loading the plugins: %s\n", ts_last_error());
        ts_store_destroy(s);
        return NULL;
    }
    return s;
}

/* Brings three replicas up to the log (one no-op entry from each, in turn:
 * each applies every entry before its own, and no-ops change neither the
 * count nor the history), then compares their counts (with each other and
 * with want_count) and their histories' counts. */
static void same3(ts_store *r[3], const char *want_count, const char *what) {
    char *c[3] = {NULL, NULL, NULL}, *st[3] = {NULL, NULL, NULL}, detail[768];
    int i, ok_count = 1, ok_status = 1;
    for (i = 0; i < 3; i++) noop(r[i]);
    for (i = 0; i < 3; i++) {
        ts_store_get_state(r[i], "/count", &c[i]);
        ts_store_get_state(r[i], "/status", &st[i]);
    }
    for (i = 0; i < 3; i++) {
        if (c[i] == NULL || strcmp(c[i], want_count) != 0) ok_count = 0;
        if (st[i] == NULL || st[0] == NULL || strcmp(st[i], st[0]) != 0) ok_status = 0;
    }
    snprintf(detail, sizeof detail, "A count %s status %s; B count %s status %s; C count %s status %s; want count %s",
             c[0] ? c[0] : "?", st[0] ? st[0] : "?", c[1] ? c[1] : "?", st[1] ? st[1] : "?", c[2] ? c[2] : "?",
             st[2] ? st[2] : "?", want_count);
    check(ok_count, what, detail);
    check(ok_status, "the three replicas' histories agree", detail);
    for (i = 0; i < 3; i++) {
        ts_free(c[i]);
        ts_free(st[i]);
    }
}

/* 2. A and B make steps; C joins from the snapshot; @@undo from each,
 * reaching past C's join; a checkpoint; then C falls behind a trimmed log
 * and goes on from a snapshot while running. */
static void late_joiner(const char *undo_so, const char *replicate_so, const char *url, const char *base) {
    char stream[256], *n = NULL;
    ts_store *r[3] = {NULL, NULL, NULL};
    gate g;
    int i;
    pthread_mutex_init(&g.mutex, NULL);
    pthread_cond_init(&g.cond, NULL);
    g.entered = g.released = 0;
    snprintf(stream, sizeof stream, "%s-join", base);
    r[0] = replica3(undo_so, replicate_so, url, stream, NULL);
    r[1] = r[0] ? replica3(undo_so, replicate_so, url, stream, NULL) : NULL;
    if (r[0] == NULL || r[1] == NULL) {
        check(0, "late joiner: A and B load", NULL);
        goto done;
    }
    send(r[0], "{\"type\":\"add\",\"payload\":1}");
    send(r[1], "{\"type\":\"add\",\"payload\":10}");
    send(r[0], "{\"type\":\"add\",\"payload\":100}");
    send(r[1], "{\"type\":\"add\",\"payload\":1000}");
    send(r[0], "{\"type\":\"add\",\"payload\":10000}");
    /* Past two multiples of EVERY: the log is trimmed behind a snapshot,
     * which C loads when it joins. Then just before a checkpoint, so that
     * the steps below are in one stretch between two. */
    for (i = 0; i < 2 * EVERY; i++) noop(r[i % 2]);
    pad_to(r[0], EVERY - 1);
    r[2] = replica3(undo_so, replicate_so, url, stream, &g);
    if (r[2] == NULL) {
        check(0, "late joiner: C loads", NULL);
        goto done;
    }
    ts_store_get_state(r[2], "/count", &n);
    check(n != NULL && strcmp(n, "11111") == 0, "C joins with the log's state", n);
    ts_free(n);
    same3(r, "11111", "C joined: the same state on the three");
    send(r[2], "{\"type\":\"add\",\"payload\":100000}");
    send(r[0], "{\"type\":\"add\",\"payload\":1000000}");
    same3(r, "1111111", "two adds after C joined");
    send(r[1], "{\"type\":\"@@undo\"}");
    same3(r, "111111", "an @@undo on B undoes A's add on the three");
    send(r[2], "{\"type\":\"@@undo\"}");
    same3(r, "11111", "an @@undo on C undoes its own add on the three");
    /* C's load emptied every replica's history: nothing before it to undo. */
    send(r[0], "{\"type\":\"@@undo\"}");
    same3(r, "11111", "an @@undo on A reaching past C's join changes nothing on the three");
    send(r[2], "{\"type\":\"@@undo\"}");
    same3(r, "11111", "an @@undo on C reaching past its join changes nothing on the three");
    send(r[1], "{\"type\":\"@@redo\"}");
    same3(r, "111111", "an @@redo on B redoes on the three");
    /* A checkpoint: every replica's history starts anew there. */
    send(r[0], "{\"type\":\"add\",\"payload\":2}");
    pad_to(r[0], 0);
    {
        unsigned long long at = seq_of(r[0]);
        char detail[128];
        snprintf(detail, sizeof detail, "A's last checkpoint %llu, its last entry %llu", checkpoint_of(r[0]), at);
        check(at > 0 && at % EVERY == 0 && checkpoint_of(r[0]) == at,
              "@@replicate/checkpoint reached A's reducers after the entry numbered a multiple of 64", detail);
    }
    send(r[1], "{\"type\":\"add\",\"payload\":20}");
    same3(r, "111133", "two adds, a checkpoint between them");
    send(r[2], "{\"type\":\"@@undo\"}");
    same3(r, "111113", "an @@undo on C undoes the add after the checkpoint on the three");
    send(r[0], "{\"type\":\"@@undo\"}");
    same3(r, "111113", "an @@undo on A reaching past the checkpoint changes nothing on the three");
    /* C falls behind: its reader is held inside its store while A and B
     * go on past two multiples of EVERY (the log is trimmed past C's
     * place); released, C goes on from the snapshot. */
    send(r[0], "{\"type\":\"add\",\"payload\":300}");
    send(r[1], "{\"type\":\"block\"}");
    pthread_mutex_lock(&g.mutex);
    while (!g.entered) pthread_cond_wait(&g.cond, &g.mutex);
    pthread_mutex_unlock(&g.mutex);
    send(r[1], "{\"type\":\"add\",\"payload\":4000}");
    for (i = 0; i < 2 * EVERY; i++) noop(r[i % 2]);
    send(r[0], "{\"type\":\"add\",\"payload\":50000}");
    pthread_mutex_lock(&g.mutex);
    g.released = 1;
    pthread_cond_broadcast(&g.cond);
    pthread_mutex_unlock(&g.mutex);
    same3(r, "165413", "three adds, C behind a trimmed log then back from the snapshot");
    {
        char detail[160];
        snprintf(detail, sizeof detail, "last checkpoints: A %llu, B %llu, C %llu", checkpoint_of(r[0]),
                 checkpoint_of(r[1]), checkpoint_of(r[2]));
        check(checkpoint_of(r[2]) > 0 && checkpoint_of(r[2]) == checkpoint_of(r[0]) &&
                  checkpoint_of(r[1]) == checkpoint_of(r[0]),
              "C, back from the snapshot, passed the same last checkpoint as A and B", detail);
    }
    send(r[2], "{\"type\":\"@@undo\"}");
    same3(r, "115413", "an @@undo on C undoes the last add on the three");
    send(r[0], "{\"type\":\"@@undo\"}");
    same3(r, "115413", "an @@undo on A reaching past the checkpoints C skipped changes nothing on the three");
done:
    for (i = 0; i < 3; i++) ts_store_destroy(r[i]);
    pthread_mutex_destroy(&g.mutex);
    pthread_cond_destroy(&g.cond);
}

/* 3. Optimistic mode: undo.so refuses to load after replicate.so. */
static void optimistic(const char *undo_so, const char *replicate_so, const char *url, const char *base) {
    ts_store *s = NULL;
    char stream[256], config[512], *n = NULL;
    ts_status st;
    const char *why;
    snprintf(stream, sizeof stream, "%s-optimistic", base);
    ts_store_create(NULL, &s);
    ts_store_add_reducer(s, "count", count, NULL);
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"stream\":\"%s\",\"timeout_ms\":5000,\"mode\":\"optimistic\"}",
             url, stream);
    st = ts_store_load_plugin(s, replicate_so, config);
    check(st == TS_OK, "optimistic: replicate.so loads", ts_last_error());
    send(s, "{\"type\":\"add\",\"payload\":7}");
    st = ts_store_load_plugin(s, undo_so, "{\"keys\":[\"count\"]}");
    why = ts_last_error();
    check(st != TS_OK, "optimistic: undo.so after replicate.so in optimistic mode refuses to load",
          ts_status_name(st));
    check(st != TS_OK && why != NULL && strstr(why, "optimistic") != NULL && strstr(why, "ordered") != NULL,
          "optimistic: the refusal names the mode and the fix", why);
    if (st != TS_OK) printf("optimistic refusal: %s: %s\n", ts_status_name(st), why);
    /* Nothing was applied: the store and the stream still hold 7. */
    ts_store_get_state(s, "/count", &n);
    check(n != NULL && strcmp(n, "7") == 0, "optimistic: the refused load changed nothing", n);
    ts_free(n);
    ts_store_destroy(s);
}

int main(int argc, char **argv) {
    ts_store *a, *b;
    if (argc != 5) {
        fprintf(stderr, "usage: replicas UNDO_SO REPLICATE_SO REDIS_URL STREAM\n");
        return 2;
    }
    a = replica(argv[1], argv[2], argv[3], argv[4], "");
    b = a ? replica(argv[1], argv[2], argv[3], argv[4], "") : NULL;
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
    late_joiner(argv[1], argv[2], argv[3], argv[4]);
    optimistic(argv[1], argv[2], argv[3], argv[4]);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
