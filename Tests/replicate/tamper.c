/*
 * tamper.c - replicate.so on a damaged or tampered log (issue 18, items 7-11),
 * for Tests/replicate/run.sh:
 *   tamper PLUGIN HOST PORT
 * (With TAMPER_VERBOSE set it prints every check, with the messages.)
 * The server at HOST:PORT is this program's alone (it runs FLUSHALL). A
 * second Redis client (hiredis, this program's own connection) does what a
 * careless operator or another writer would: FLUSHALL, DEL of the stream or
 * of its counter, a log made again with ids that sort before the replicas'
 * position, an entry added without the counter, a key of the log set
 * to another type, an entry deleted from the middle, a negative number, an
 * entry replicate.so did not write, an action with a NUL byte, a snapshot
 * whose number is ahead of its entries, a server that stops answering, the
 * snapshot deleted under a replica behind the entries it let trim away.
 * What every case must give (Plugins/replicate/README.md, "A damaged log"):
 * the replicas refuse and report (a dispatch or a join fails with
 * TS_E_PLUGIN and a message that says what is wrong; a reader thread writes
 * one line on stderr), never apply what the log does not hold in order,
 * never answer TS_OK for an action they did not apply, never hang and never
 * spin; once the damage is repaired they go on.
 * Each scenario runs in a child process under alarm(): a call that does not
 * return fails the scenario (naming the call) instead of hanging the suite.
 * The reader threads' stderr goes to a file per scenario, read by the checks.
 * Prints "N passed, M failed".
 */
#define _DEFAULT_SOURCE

#include "turnstate.h"

#include <hiredis/hiredis.h>

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *plugin, *host;
static int port;
static redisContext *hostile;
/* Counts shared with the children (MAP_SHARED): [0] passed, [1] failed. */
static volatile int *counts;
static char capture_path[256];
static const char *step = "";

static void check(int ok, const char *what, const char *detail) {
    if (ok && getenv("TAMPER_VERBOSE") && detail) printf("ok: %s (%s)\n", what, detail);
    if (ok) {
        counts[0]++;
    } else {
        counts[1]++;
        printf("FAIL: %s (%s)\n", what, detail ? detail : "");
        fflush(stdout);
    }
}

/* SIGALRM: the call named by `step` did not return in time. */
static void on_alarm(int sig) {
    static const char a[] = "FAIL: no return within the time allowed (a hang): ";
    (void)sig;
    counts[1]++;
    if (write(1, a, sizeof a - 1) < 0 || write(1, step, strlen(step)) < 0 || write(1, "\n", 1) < 0) _exit(4);
    _exit(3);
}

/* Bounds the next call: `seconds` for `what`, then alarm(0) with bounded(0, "") */
static void bounded(unsigned seconds, const char *what) {
    step = what;
    alarm(seconds);
}

/* ---- The store: {"count": N, "log": [payloads in order]} ---------------- */

static char *count_reducer(const char *slice, const ts_action *action, void *ctx) {
    char *out;
    (void)ctx;
    if (strcmp(action->type, "push") != 0) return NULL;
    out = ts_alloc(24);
    if (out) snprintf(out, 24, "%lld", atoll(slice) + 1);
    return out;
}

static char *log_reducer(const char *slice, const ts_action *action, void *ctx) {
    size_t n = strlen(slice), p;
    char *out;
    (void)ctx;
    if (strcmp(action->type, "push") != 0 || action->payload == NULL) return NULL;
    p = strlen(action->payload);
    out = ts_alloc(n + p + 2);
    if (out == NULL) return NULL;
    memcpy(out, slice, n - 1); /* "[...]" without the "]" */
    if (n > 2) out[n - 1] = ',', n++;
    memcpy(out + n - 1, action->payload, p);
    memcpy(out + n - 1 + p, "]", 2);
    return out;
}

static ts_store *new_store(void) {
    ts_store *s = NULL;
    if (ts_store_create("{\"count\":0,\"log\":[]}", &s) != TS_OK ||
        ts_store_add_reducer(s, "count", count_reducer, NULL) != TS_OK ||
        ts_store_add_reducer(s, "log", log_reducer, NULL) != TS_OK) {
        printf("FAIL: cannot make a store\n");
        exit(1);
    }
    return s;
}

static char last_error[2048];

/* A replica of `stream` (extra: more config members, "" for none). NULL when
 * the load was refused: its status in *status, its message in last_error. */
static ts_store *join(const char *stream, const char *extra, ts_status *status) {
    char config[512];
    ts_store *s = new_store();
    ts_status st;
    snprintf(config, sizeof config, "{\"url\":\"redis://%s:%d\",\"stream\":\"%s\"%s}", host, port, stream, extra);
    st = ts_store_load_plugin(s, plugin, config);
    snprintf(last_error, sizeof last_error, "%s", st == TS_OK ? "" : ts_last_error());
    if (status) *status = st;
    if (st != TS_OK) {
        ts_store_destroy(s);
        return NULL;
    }
    return s;
}

/* A replica that must load. */
static ts_store *replica(const char *stream, const char *extra) {
    ts_status status;
    ts_store *s = join(stream, extra, &status);
    char what[200];
    snprintf(what, sizeof what, "a replica of \"%s\" loads", stream);
    check(s != NULL, what, last_error);
    if (s == NULL) exit(1);
    return s;
}

static ts_status push(ts_store *s, int n) {
    char action[64];
    ts_status status;
    snprintf(action, sizeof action, "{\"type\":\"push\",\"payload\":%d}", n);
    status = ts_store_dispatch(s, action);
    snprintf(last_error, sizeof last_error, "%s: %s", ts_status_name(status), status == TS_OK ? "" : ts_last_error());
    return status;
}

static char state_text[4096];
static const char *state(ts_store *s) {
    char *text = NULL;
    if (ts_store_get_state(s, NULL, &text) != TS_OK) return "(no state)";
    snprintf(state_text, sizeof state_text, "%s", text);
    ts_free(text);
    return state_text;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Waits up to 5 s for the state `want`. */
static int wait_state(ts_store *s, const char *want) {
    double deadline = now_s() + 5;
    while (strcmp(state(s), want) != 0 && now_s() < deadline) usleep(10000);
    return strcmp(state(s), want) == 0;
}

static int contains(const char *text, const char *part) { return strstr(text, part) != NULL; }

/* Pushes that must succeed. */
static void pushes(ts_store *s, int from, int to) {
    int i;
    for (i = from; i <= to; i++) check(push(s, i) == TS_OK, "a dispatch on an intact log succeeds", last_error);
}

/* A dispatch that the damaged log must refuse: TS_E_PLUGIN, a message with
 * "is damaged" and `why`, and the replica's state unchanged. */
static void refused(ts_store *s, int n, const char *why, const char *what) {
    char before[4096], full[400];
    ts_status status;
    snprintf(before, sizeof before, "%s", state(s));
    bounded(10, what);
    status = push(s, n);
    bounded(0, "");
    snprintf(full, sizeof full, "%s: refused (TS_E_PLUGIN, \"is damaged\", \"%s\")", what, why);
    check(status == TS_E_PLUGIN && contains(last_error, "is damaged") && contains(last_error, why), full, last_error);
    snprintf(full, sizeof full, "%s: nothing applied (still %.150s)", what, before);
    check(strcmp(state(s), before) == 0, full, state(s));
}

/* A join that the damaged log must refuse, within 10 s. */
static void join_refused(const char *stream, const char *why, const char *not_this, const char *what) {
    ts_status status;
    ts_store *s;
    char full[300];
    bounded(10, what);
    s = join(stream, "", &status);
    bounded(0, "");
    snprintf(full, sizeof full, "%s: the load is refused (TS_E_PLUGIN, \"is damaged\", \"%s\"%s%s%s)", what, why,
             not_this ? ", not \"" : "", not_this ? not_this : "", not_this ? "\"" : "");
    check(s == NULL && status == TS_E_PLUGIN && contains(last_error, "is damaged") && contains(last_error, why) &&
              (not_this == NULL || !contains(last_error, not_this)),
          full, s ? state(s) : last_error);
    if (s) ts_store_destroy(s);
}

/* ---- The hostile client ------------------------------------------------- */

static redisReply *h(const char *format, ...) {
    va_list args;
    redisReply *r;
    va_start(args, format);
    r = redisvCommand(hostile, format, args);
    va_end(args);
    if (r == NULL) {
        printf("FAIL: the hostile client lost the server: %s\n", hostile->errstr);
        exit(1);
    }
    return r;
}
static void hdo(const char *format, ...) {
    va_list args;
    redisReply *r;
    va_start(args, format);
    r = redisvCommand(hostile, format, args);
    va_end(args);
    if (r == NULL || r->type == REDIS_REPLY_ERROR) {
        printf("FAIL: hostile command %s: %s\n", format, r ? r->str : hostile->errstr);
        exit(1);
    }
    freeReplyObject(r);
}
static long long hint(const char *format, ...) {
    va_list args;
    redisReply *r;
    long long n = -1;
    va_start(args, format);
    r = redisvCommand(hostile, format, args);
    va_end(args);
    if (r && r->type == REDIS_REPLY_INTEGER) n = r->integer;
    if (r && r->type == REDIS_REPLY_STRING) n = atoll(r->str);
    if (r && r->type == REDIS_REPLY_NIL) n = -2;
    if (r) freeReplyObject(r);
    return n;
}
/* The id of entry `index` (0: first) of `stream`. */
static void entry_id(const char *stream, size_t index, char *out, size_t size) {
    redisReply *r = h("XRANGE %s - +", stream);
    out[0] = '\0';
    if (r->type == REDIS_REPLY_ARRAY && index < r->elements) snprintf(out, size, "%s", r->element[index]->element[0]->str);
    freeReplyObject(r);
}

/* ---- stderr (the reader threads' reports) and CPU time ------------------- */

static char captured[8192];
static const char *stderr_text(void) {
    FILE *f = fopen(capture_path, "r");
    size_t n = 0;
    captured[0] = '\0';
    if (f) {
        n = fread(captured, 1, sizeof captured - 1, f);
        fclose(f);
    }
    captured[n] = '\0';
    return captured;
}
static int lines_with(const char *part) {
    const char *p = stderr_text();
    int n = 0;
    while ((p = strstr(p, part)) != NULL) {
        n++;
        p = strchr(p, '\n');
        if (p == NULL) break;
    }
    return n;
}
/* Waits up to 15 s for a stderr line with both parts (a reader reports
 * within one wait, 250 ms, when the machine is not starved). */
static int reported(const char *part, const char *and_part) {
    double deadline = now_s() + 15;
    for (;;) {
        const char *p = stderr_text();
        while ((p = strstr(p, part)) != NULL) {
            const char *end = strchr(p, '\n');
            const char *q = strstr(p, and_part);
            if (q && (end == NULL || q < end)) return 1;
            if (end == NULL) break;
            p = end;
        }
        if (now_s() >= deadline) return 0;
        usleep(20000);
    }
}

/* The process's CPU time over 1.5 s while nothing is dispatched: the reader
 * threads that face the damage must wait, not spin (a generous bound: under
 * 30% of one core; a spinning reader takes most of one). */
static void not_spinning(const char *what) {
    struct rusage a, b;
    double t0, t1, cpu;
    char full[300], detail[100];
    getrusage(RUSAGE_SELF, &a);
    t0 = now_s();
    usleep(1500000);
    getrusage(RUSAGE_SELF, &b);
    t1 = now_s();
    cpu = (double)(b.ru_utime.tv_sec - a.ru_utime.tv_sec) + (b.ru_utime.tv_usec - a.ru_utime.tv_usec) / 1e6 +
          (double)(b.ru_stime.tv_sec - a.ru_stime.tv_sec) + (b.ru_stime.tv_usec - a.ru_stime.tv_usec) / 1e6;
    snprintf(full, sizeof full, "%s: the readers do not spin (CPU under 30%% of the time)", what);
    snprintf(detail, sizeof detail, "%.2f s of CPU in %.2f s", cpu, t1 - t0);
    check(cpu < 0.3 * (t1 - t0), full, detail);
}

/* ---- Scenarios ---------------------------------------------------------- */

#define ONE "{\"count\":1,\"log\":[1]}"
#define TWO "{\"count\":2,\"log\":[1,2]}"
#define THREE "{\"count\":3,\"log\":[1,2,3]}"

/* Item 7: FLUSHALL under running replicas. */
static void flushall(void) {
    ts_store *a = replica("t1", ""), *b = replica("t1", ""), *c;
    pushes(a, 1, 3);
    check(wait_state(b, THREE), "flushall: b has a's 3 entries", state(b));
    hdo("FLUSHALL");
    refused(a, 4, "reset", "flushall: a's dispatch after FLUSHALL");
    refused(b, 5, "reset", "flushall: b's dispatch after FLUSHALL");
    check(hint("EXISTS t1") == 0 && hint("EXISTS t1:seq") == 0, "flushall: nothing was written into the reset log",
          NULL);
    c = replica("t1", "");
    check(strcmp(state(c), "{\"count\":0,\"log\":[]}") == 0,
          "flushall: a replica joining the new, empty log holds no action of the refused dispatches", state(c));
    check(push(c, 6) == TS_OK && strcmp(state(c), "{\"count\":1,\"log\":[6]}") == 0,
          "flushall: the new replica starts a new log", last_error);
    check(reported("\"t1\"", "reset"), "flushall: a's and b's readers report the reset log on stderr", stderr_text());
    check(strcmp(state(a), THREE) == 0 && strcmp(state(b), THREE) == 0,
          "flushall: a and b do not apply entry 1 of the new log", state(a));
    not_spinning("flushall");
    check(lines_with("\"t1\"") == 2, "flushall: each reader reported it once (no line per retry)", stderr_text());
    ts_store_destroy(a);
    ts_store_destroy(b);
    ts_store_destroy(c);
}

/* Item 7: DEL of the counter, then of the stream; recovery once restored. */
static void deleted_keys(void) {
    ts_store *a = replica("t2", ""), *b = replica("t2", ""), *c;
    pushes(a, 1, 2);
    check(wait_state(b, TWO), "del seq: b has 2", state(b));
    hdo("DEL t2:seq");
    refused(a, 3, "counter", "del seq: a's dispatch after DEL t2:seq");
    refused(b, 4, "counter", "del seq: b's dispatch after DEL t2:seq");
    check(hint("XLEN t2") == 2 && hint("GET t2:seq") == -2, "del seq: nothing appended, the counter not made again",
          NULL);
    join_refused("t2", "counter", NULL, "del seq: a joining replica");
    hdo("SET t2:seq 2");
    check(push(a, 3) == TS_OK && strcmp(state(a), THREE) == 0, "del seq: once the counter is restored a dispatches",
          last_error);
    check(wait_state(b, THREE), "del seq: and b applies it", state(b));
    ts_store_destroy(b);

    hdo("RENAME t2 t2:kept");
    refused(a, 4, "stream was deleted", "del stream: a's dispatch after the stream was deleted");
    check(hint("GET t2:seq") == 3 && hint("EXISTS t2") == 0, "del stream: nothing appended, no number used", NULL);
    join_refused("t2", "stream was deleted", NULL, "del stream: a joining replica");
    hdo("RENAME t2:kept t2");
    check(push(a, 4) == TS_OK, "del stream: once the stream is back a dispatches", last_error);
    c = replica("t2", "");
    check(strcmp(state(c), "{\"count\":4,\"log\":[1,2,3,4]}") == 0, "del stream: a new replica has all 4", state(c));
    ts_store_destroy(a);
    ts_store_destroy(c);
}

/* Item 8: an entry with the next number, written without INCR. */
static void injected(void) {
    ts_store *a = replica("t3", ""), *b = replica("t3", "");
    char id[64];
    pushes(a, 1, 1);
    check(wait_state(b, ONE), "injected: b has 1", state(b));
    hdo("XADD t3 * n 2 a {\"type\":\"push\",\"payload\":99}");
    entry_id("t3", 1, id, sizeof id);
    refused(a, 2, "counter", "injected: a's dispatch after an entry added without the counter");
    check(reported("\"t3\"", "counter"), "injected: b's reader reports the entry added without the counter",
          stderr_text());
    check(strcmp(state(b), ONE) == 0, "injected: b does not apply it", state(b));
    hdo("XDEL t3 %s", id);
    check(push(a, 2) == TS_OK && strcmp(state(a), TWO) == 0, "injected: once it is deleted a's dispatch goes through",
          last_error);
    check(wait_state(b, TWO), "injected: b applies it", state(b));
    ts_store_destroy(a);
    ts_store_destroy(b);
}

/* A log made again whose ids sort before the replicas' position (a server
 * whose clock went back, or ids chosen by a writer): XREAD after that
 * position returns nothing, so only the counter can tell the readers. */
static void reset_behind(void) {
    ts_store *a = replica("t14", ""), *b = replica("t14", "");
    pushes(a, 1, 3);
    check(wait_state(b, THREE), "reset behind: b has a's 3 entries", state(b));
    hdo("FLUSHALL");
    hdo("XADD t14 1-1 n 1 a {\"type\":\"push\",\"payload\":50}");
    hdo("SET t14:seq 1");
    check(reported("\"t14\"", "reset"), "reset behind: the readers report the reset log (its counter is behind them)",
          stderr_text());
    check(lines_with("\"t14\"") == 2, "reset behind: each reader reported it once", stderr_text());
    check(strcmp(state(a), THREE) == 0 && strcmp(state(b), THREE) == 0, "reset behind: nothing applied", state(b));
    refused(a, 4, "reset", "reset behind: a's dispatch");
    ts_store_destroy(a);
    ts_store_destroy(b);
}

/* Item 9: the last entry's number already applied (a number used twice). */
static void number_twice(void) {
    ts_store *a = replica("t4", ""), *b = replica("t4", "");
    pushes(a, 1, 3);
    check(wait_state(b, THREE), "number twice: b has 3", state(b));
    hdo("XADD t4 * n 3 a {\"type\":\"push\",\"payload\":77}"); /* the counter stays at 3 */
    check(reported("\"t4\"", "number 3"), "number twice: the readers report entry 3 twice", stderr_text());
    not_spinning("number twice");
    check(strcmp(state(a), THREE) == 0 && strcmp(state(b), THREE) == 0, "number twice: nothing applied", state(b));
    join_refused("t4", "number 3", NULL, "number twice: a joining replica's load");
    refused(a, 4, "number 3", "number twice: a's dispatch");
    ts_store_destroy(a);
    ts_store_destroy(b);
}

/* Item 9: a snapshot whose number is ahead of its entries. */
static void snapshot_ahead(void) {
    ts_store *a = replica("t5", ",\"snapshot_every\":2");
    ts_status status;
    ts_store *c;
    pushes(a, 1, 4);
    check(hint("HGET t5:snap n") == 4, "snapshot ahead: a took the snapshot at entry 4", NULL);
    hdo("HSET t5:snap n 10");
    /* No entry after it: such a replica used to load, then answer TS_OK for dispatches it skipped. */
    bounded(10, "snapshot ahead (nothing after it): a joining replica's load");
    c = join("t5", "", &status);
    if (c != NULL) {
        bounded(10, "snapshot ahead: a dispatch of a replica that loaded it");
        status = push(c, 5);
        check(status != TS_OK || contains(state(c), ",5]"), "snapshot ahead: a dispatch answered TS_OK is applied",
              state(c));
        ts_store_destroy(c);
        check(0, "snapshot ahead (nothing after it): the load is refused", "it loaded");
    } else {
        check(status == TS_E_PLUGIN && contains(last_error, "is damaged") && contains(last_error, "snapshot"),
              "snapshot ahead (nothing after it): the load is refused, naming the snapshot", last_error);
    }
    bounded(0, "");
    ts_store_destroy(a);
    a = replica("t5b", ",\"snapshot_every\":4");
    pushes(a, 1, 6);
    check(hint("HGET t5b:snap n") == 4, "snapshot ahead: a took the snapshot at entry 4", NULL);
    hdo("HSET t5b:snap n 10"); /* entries 5 and 6 after its position */
    join_refused("t5b", "snapshot", NULL, "snapshot ahead (entries after it): a joining replica's load");
    hdo("HSET t5b:snap n x1");
    join_refused("t5b", "snapshot", NULL, "snapshot number malformed: a joining replica's load");
    hdo("HSET t5b:snap n 4 pos zzz");
    join_refused("t5b", "snapshot", NULL, "snapshot position malformed: a joining replica's load");
    bounded(10, "snapshot ahead: a's dispatch");
    check(push(a, 7) == TS_OK, "snapshot ahead: a replica that does not need the snapshot dispatches", last_error);
    bounded(0, "");
    ts_store_destroy(a);
}

/* Item 10: a failed append (WRONGTYPE) uses no number; restored, all goes on. */
static void wrong_type(void) {
    ts_store *a = replica("t6", ""), *b = replica("t6", ""), *c;
    pushes(a, 1, 2);
    check(wait_state(b, TWO), "wrong type: b has 2", state(b));
    hdo("RENAME t6 t6:kept");
    hdo("SET t6 x");
    refused(a, 3, "holds a string", "wrong type: a's dispatch while t6 holds a string");
    check(hint("GET t6:seq") == 2, "wrong type: the refused append used no number", NULL);
    check(reported("\"t6\"", "is damaged"), "wrong type: b's reader reports it", stderr_text());
    not_spinning("wrong type");
    hdo("DEL t6");
    hdo("RENAME t6:kept t6");
    check(push(a, 3) == TS_OK && strcmp(state(a), THREE) == 0, "wrong type: restored, a's dispatch goes through",
          last_error);
    check(wait_state(b, THREE), "wrong type: b applies it", state(b));
    c = replica("t6", "");
    check(strcmp(state(c), THREE) == 0, "wrong type: a new replica joins with all 3", state(c));
    ts_store_destroy(a);
    ts_store_destroy(b);
    ts_store_destroy(c);
}

/* Item 11: a gap is not "trimmed". */
static void gap(void) {
    ts_store *a = replica("t7", "");
    char id[64];
    pushes(a, 1, 3);
    entry_id("t7", 1, id, sizeof id);
    hdo("XDEL t7 %s", id);
    join_refused("t7", "entry 2 is missing", "trimmed", "gap: a joining replica");
    ts_store_destroy(a);
}

/* Item 11: a negative number is malformed, not "trimmed". */
static void negative(void) {
    ts_store *a = replica("t8", ""), *b = replica("t8", "");
    pushes(a, 1, 1);
    check(wait_state(b, ONE), "negative: b has 1", state(b));
    hdo("INCR t8:seq");
    hdo("XADD t8 * n -1 a {\"type\":\"push\",\"payload\":5}");
    check(reported("\"t8\"", "\"-1\""), "negative: the readers report the number \"-1\"", stderr_text());
    check(strcmp(state(b), ONE) == 0, "negative: b does not apply it", state(b));
    join_refused("t8", "\"-1\"", "trimmed", "negative: a joining replica");
    refused(a, 2, "\"-1\"", "negative: a's dispatch");
    ts_store_destroy(a);
    ts_store_destroy(b);
}

/* Item 11: an entry that replicate.so did not write. */
static void malformed(void) {
    ts_store *a = replica("t9", ""), *b = replica("t9", "");
    pushes(a, 1, 1);
    check(wait_state(b, ONE), "malformed: b has 1", state(b));
    hdo("INCR t9:seq");
    hdo("XADD t9 * colour blue");
    check(reported("\"t9\"", "not written by replicate.so"), "malformed: the readers report it (not silently)",
          stderr_text());
    not_spinning("malformed");
    check(lines_with("\"t9\"") == 2, "malformed: each reader reported it once", stderr_text());
    join_refused("t9", "not written by replicate.so", NULL, "malformed: a joining replica");
    refused(a, 2, "not written by replicate.so", "malformed: a's dispatch");
    ts_store_destroy(a);
    ts_store_destroy(b);
}

/* Item 11: an action with a NUL byte is not applied cut at the NUL. */
static void nul_byte(void) {
    static const char action[] = "{\"type\":\"push\",\"payload\":7}\0{\"type\":\"push\",\"payload\":8}";
    ts_store *a = replica("t10", ""), *b = replica("t10", "");
    pushes(a, 1, 1);
    check(wait_state(b, ONE), "NUL: b has 1", state(b));
    hdo("INCR t10:seq");
    hdo("XADD t10 * n 2 a %b", action, sizeof action - 1);
    check(reported("\"t10\"", "NUL"), "NUL: the readers report the action with a NUL byte", stderr_text());
    check(strcmp(state(b), ONE) == 0, "NUL: b does not apply it cut at the NUL", state(b));
    join_refused("t10", "NUL", NULL, "NUL: a joining replica");
    refused(a, 3, "NUL", "NUL: a's dispatch");
    ts_store_destroy(a);
    ts_store_destroy(b);
}

/* Item 11: a server that does not answer in time: a timeout, said so. */
static void timeout(void) {
    ts_store *a = replica("t11", ",\"timeout_ms\":300");
    ts_status status;
    pushes(a, 1, 1);
    hdo("CLIENT PAUSE 1500 ALL");
    bounded(10, "timeout: a dispatch while the server is paused");
    status = push(a, 2);
    bounded(0, "");
    check(status == TS_E_IO && contains(last_error, "did not answer within 300 ms") &&
              !contains(last_error, "Resource temporarily unavailable"),
          "timeout: TS_E_IO, \"did not answer within 300 ms\"", last_error);
    check(strcmp(state(a), ONE) == 0, "timeout: nothing applied when it returned", state(a));
    hdo("CLIENT UNPAUSE");
    ts_store_destroy(a);
}

/* A listener on the reader thread that holds it (the replica falls behind)
 * until released, then dispatches, nested: a dispatch from a replica whose
 * position was trimmed away. */
typedef struct holder {
    volatile int phase; /* 0 waiting for entry 1, 1 holding, 2 released, 3 done */
    ts_status status;
    char message[1024];
} holder;
static void holding_listener(ts_store *store, void *ctx) {
    holder *h = ctx;
    char *count = NULL;
    int one = ts_store_get_state(store, "/count", &count) == TS_OK && strcmp(count, "1") == 0;
    ts_free(count);
    if (h->phase != 0 || !one) return;
    h->phase = 1;
    while (h->phase == 1) usleep(1000);
    h->status = ts_store_dispatch(store, "{\"type\":\"push\",\"payload\":100}");
    snprintf(h->message, sizeof h->message, "%s: %s", ts_status_name(h->status),
             h->status == TS_OK ? "" : ts_last_error());
    h->phase = 3;
}

static int wait_phase(holder *h, int phase) {
    double deadline = now_s() + 5;
    while (h->phase != phase && now_s() < deadline) usleep(1000);
    return h->phase == phase;
}

/* Trimming: a replica behind the trimmed entries loads the snapshot; without
 * the snapshot its dispatch is refused and nothing is appended. */
static void trimmed(void) {
    static holder kept, lost;
    const char *streams[2] = {"t12", "t13"};
    holder *holders[2] = {&kept, &lost};
    int k;
    for (k = 0; k < 2; k++) {
        ts_store *a = replica(streams[k], ",\"snapshot_every\":2"), *b = replica(streams[k], "");
        uint64_t token;
        holder *h = holders[k];
        char key[32], what[200];
        check(ts_store_subscribe(b, NULL, holding_listener, h, &token) == TS_OK, "trimmed: b subscribes", NULL);
        pushes(a, 1, 1);
        check(wait_phase(h, 1), "trimmed: b's reader holds at entry 1", NULL);
        pushes(a, 2, 6);
        check(hint("XLEN %s", streams[k]) == 3, "trimmed: snapshots at 2, 4, 6 trimmed the stream to 4, 5, 6", NULL);
        if (k == 1) {
            snprintf(key, sizeof key, "%s:snap", streams[k]);
            hdo("DEL %s", key);
        }
        h->phase = 2;
        check(wait_phase(h, 3), "trimmed: b's nested dispatch returns", NULL);
        if (k == 0) {
            check(h->status == TS_OK && wait_state(b, "{\"count\":7,\"log\":[1,2,3,4,5,6,100]}"),
                  "trimmed, snapshot kept: b loads it and its dispatch goes through", h->message);
            check(wait_state(a, "{\"count\":7,\"log\":[1,2,3,4,5,6,100]}"), "trimmed, snapshot kept: a applies it",
                  state(a));
        } else {
            snprintf(what, sizeof what, "trimmed, snapshot deleted: b's dispatch is refused (TS_E_PLUGIN, \"no "
                                        "snapshot covers it\")");
            check(h->status == TS_E_PLUGIN && contains(h->message, "is damaged") &&
                      contains(h->message, "no snapshot covers it") && !contains(h->message, "appended as"),
                  what, h->message);
            check(hint("XLEN %s", streams[k]) == 3 && strcmp(state(b), ONE) == 0,
                  "trimmed, snapshot deleted: nothing appended, nothing applied", state(b));
            join_refused(streams[k], "no snapshot covers it", NULL, "trimmed, snapshot deleted: a joining replica");
        }
        ts_store_destroy(a);
        ts_store_destroy(b);
    }
}

typedef struct scenario {
    const char *name;
    void (*run)(void);
} scenario;

int main(int argc, char **argv) {
    static const scenario scenarios[] = {
        {"flushall", flushall}, {"reset behind", reset_behind}, {"deleted keys", deleted_keys}, {"injected", injected},
        {"number twice", number_twice}, {"snapshot ahead", snapshot_ahead}, {"wrong type", wrong_type},
        {"gap", gap}, {"negative", negative}, {"malformed", malformed}, {"NUL", nul_byte}, {"timeout", timeout},
        {"trimmed", trimmed},
    };
    size_t i;
    if (argc != 4) {
        fprintf(stderr, "usage: tamper PLUGIN HOST PORT\n");
        return 2;
    }
    plugin = argv[1];
    host = argv[2];
    port = atoi(argv[3]);
    counts = mmap(NULL, 2 * sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (counts == MAP_FAILED) return 1;
    for (i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        int before = counts[1], status;
        pid_t pid;
        fflush(stdout);
        snprintf(capture_path, sizeof capture_path, "%s/tamper-%d.err", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
                 (int)getpid());
        pid = fork();
        if (pid == 0) {
            FILE *err = freopen(capture_path, "w", stderr);
            if (err == NULL) _exit(1);
            setvbuf(stderr, NULL, _IONBF, 0);
            signal(SIGALRM, on_alarm);
            hostile = redisConnect(host, port);
            if (hostile == NULL || hostile->err) {
                printf("FAIL: the hostile client cannot connect\n");
                _exit(1);
            }
            scenarios[i].run();
            redisFree(hostile);
            fflush(stdout);
            _exit(0);
        }
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (counts[1] == before) counts[1]++;
            printf("FAIL: scenario \"%s\" ended with status %d\n", scenarios[i].name, status);
        }
        if (counts[1] != before) {
            printf("  \"%s\": what the replicas wrote on stderr:\n", scenarios[i].name);
            {
                FILE *f = fopen(capture_path, "r");
                char line[1024];
                while (f && fgets(line, sizeof line, f)) printf("    %s", line);
                if (f) fclose(f);
            }
        } else {
            printf("ok: tamper: %s\n", scenarios[i].name);
        }
        unlink(capture_path);
    }
    printf("%d passed, %d failed\n", counts[0], counts[1]);
    return counts[1] != 0;
}
