/*
 * tamper_nats.c - replicate.so on a damaged JetStream log, for
 * Tests/replicate/nats_run.py:
 *   tamper_nats PLUGIN URL
 * The server at URL (one nats-server with JetStream) is this program's alone.
 * A second client (nats.c, this program's own connection) does what a
 * careless operator or another writer would: a message published on the
 * log's subject without replicate.so's header, with another log's id, with
 * a NUL byte in its action; an entry deleted from the middle; the stream
 * purged, or deleted and made again under running replicas; the snapshot
 * overwritten with garbage or ahead of the stream; a stream of that name that
 * replicate.so did not make. What every case must give (Plugins/replicate/
 * README.md, "A damaged log"): a dispatch or a join fails with TS_E_PLUGIN
 * and a message that says what is wrong, nothing that the log does not hold
 * in order is applied, no TS_OK for an action that was not applied, no hang
 * (every case runs under alarm()).
 * Prints "N passed, M failed".
 */
#define _DEFAULT_SOURCE

#include "turnstate.h"

#include <nats/nats.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *plugin, *url;
static int passed, failed;
static natsConnection *nc;
static jsCtx *js;
static const char *step = "";

static void check(int ok, const char *what, const char *detail) {
    if (ok) {
        passed++;
        if (getenv("TAMPER_VERBOSE")) printf("ok: %s (%s)\n", what, detail ? detail : "");
    } else {
        failed++;
        printf("FAIL: %s (%s)\n", what, detail ? detail : "");
    }
    fflush(stdout);
}

static void on_alarm(int sig) {
    static const char a[] = "FAIL: no return within the time allowed (a hang): ";
    (void)sig;
    if (write(1, a, sizeof a - 1) < 0 || write(1, step, strlen(step)) < 0 || write(1, "\n", 1) < 0) _exit(4);
    _exit(3);
}

static char *count_reducer(const char *slice, const ts_action *action, void *ctx) {
    char *out;
    (void)ctx;
    if (strcmp(action->type, "inc") != 0) return NULL;
    out = ts_alloc(24);
    if (out) snprintf(out, 24, "%lld", atoll(slice) + 1);
    return out;
}

static char last_error[2048];

/* "status": the last "@@replicate/status" payload. */
static char *status_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)slice;
    (void)ctx;
    if (strcmp(action->type, "@@replicate/status") != 0 || action->payload == NULL) return NULL;
    return ts_strdup(action->payload);
}

/* "seen": the payloads of the "inc" actions, in the order applied, each
 * followed by a space (per-origin order, below). */
static char *seen_reducer(const char *slice, const ts_action *action, void *ctx) {
    size_t n = strlen(slice), m;
    char *out;
    (void)ctx;
    if (strcmp(action->type, "inc") != 0 || action->payload == NULL || action->payload[0] != '"') return NULL;
    m = strlen(action->payload);
    out = ts_alloc(n + m + 2);
    if (out == NULL || n < 2 || m < 2) return NULL;
    memcpy(out, slice, n - 1);                          /* "... without its closing quote */
    memcpy(out + n - 1, action->payload + 1, m - 2);    /* the payload's text */
    memcpy(out + n - 1 + m - 2, " \"", 3);
    return out;
}

/* A replica of `stream` (`extra`: more config members, "," first): NULL
 * when the load was refused (message in last_error). */
static ts_store *join_with(const char *stream, const char *extra, ts_status *status) {
    char config[512];
    ts_store *s = NULL;
    ts_status st;
    if (ts_store_create("{\"count\":0,\"seen\":\"\",\"status\":null}", &s) != TS_OK ||
        ts_store_add_reducer(s, "count", count_reducer, NULL) != TS_OK ||
        ts_store_add_reducer(s, "seen", seen_reducer, NULL) != TS_OK ||
        ts_store_add_reducer(s, "status", status_reducer, NULL) != TS_OK)
        exit(1);
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"stream\":\"%s\",\"replicas\":1,\"timeout_ms\":2000%s}", url,
             stream, extra);
    step = "joining";
    alarm(30);
    st = ts_store_load_plugin(s, plugin, config);
    alarm(0);
    snprintf(last_error, sizeof last_error, "%s", st == TS_OK ? "" : ts_last_error());
    if (status) *status = st;
    if (st != TS_OK) {
        ts_store_destroy(s);
        return NULL;
    }
    return s;
}

static ts_store *join(const char *stream, ts_status *status) { return join_with(stream, "", status); }

static ts_store *replica(const char *stream) {
    ts_store *s = join(stream, NULL);
    char what[200];
    snprintf(what, sizeof what, "a replica of \"%s\" loads", stream);
    check(s != NULL, what, last_error);
    if (s == NULL) exit(1);
    return s;
}

static long long count(ts_store *s) {
    char *text = NULL;
    long long n = -1;
    if (ts_store_get_state(s, "/count", &text) == TS_OK) n = atoll(text);
    ts_free(text);
    return n;
}

static ts_status dispatch(ts_store *s) {
    ts_status status;
    step = "a dispatch";
    alarm(30);
    status = ts_store_dispatch(s, "{\"type\":\"inc\"}");
    alarm(0);
    snprintf(last_error, sizeof last_error, "%s", status == TS_OK ? "" : ts_last_error());
    return status;
}

/* A dispatch refused with TS_E_PLUGIN and `words` in its message, and nothing applied. */
static void refused(ts_store *s, const char *label, const char *words) {
    char what[300];
    long long before = count(s);
    ts_status status = dispatch(s);
    snprintf(what, sizeof what, "%s: a dispatch is refused (TS_E_PLUGIN, \"%s\")", label, words);
    check(status == TS_E_PLUGIN && strstr(last_error, words) != NULL, what, last_error);
    snprintf(what, sizeof what, "%s: nothing applied", label);
    check(count(s) == before, what, NULL);
}

/* A join refused with TS_E_PLUGIN and `words` in its message. */
static void join_refused(const char *stream, const char *label, const char *words) {
    char what[300];
    ts_status status = TS_OK;
    ts_store *s = join(stream, &status);
    snprintf(what, sizeof what, "%s: a join is refused (TS_E_PLUGIN, \"%s\")", label, words);
    check(s == NULL && status == TS_E_PLUGIN && strstr(last_error, words) != NULL, what, last_error);
    if (s) ts_store_destroy(s);
}

static uint64_t log_id(const char *stream) {
    jsStreamInfo *si = NULL;
    uint64_t id = 0;
    if (js_GetStreamInfo(&si, js, stream, NULL, NULL) == NATS_OK && si->Config->Description)
        sscanf(si->Config->Description, "replicate.so log %llu", (unsigned long long *)&id);
    if (si) jsStreamInfo_Destroy(si);
    return id;
}

/* Publishes `data` (length n) on the log's subject with header Ts-Log
 * `log` (NULL: none). */
static void publish(const char *stream, const char *log, const char *data, int n) {
    char subject[200];
    natsMsg *msg = NULL;
    jsPubAck *ack = NULL;
    natsStatus s;
    snprintf(subject, sizeof subject, "replicate.%s.%llu", stream, (unsigned long long)log_id(stream));
    s = natsMsg_Create(&msg, subject, NULL, data, n);
    if (s == NATS_OK && log) s = natsMsgHeader_Set(msg, "Ts-Log", log);
    if (s == NATS_OK) s = js_PublishMsg(&ack, js, msg, NULL, NULL);
    check(s == NATS_OK, "the second client publishes", natsStatus_GetText(s));
    if (ack) jsPubAck_Destroy(ack);
    natsMsg_Destroy(msg);
    usleep(300000); /* the replicas' cursors have it */
}

static void id_text(const char *stream, char *out, size_t size) {
    snprintf(out, size, "%llu", (unsigned long long)log_id(stream));
}

/* ---- Per-origin order (Plugins/replicate/README.md, "Per-origin order") ----
 * Entries of an optimistic replica ("#pORIGIN:N"), published here out of
 * their origin's order, as JetStream may store them when its leader changes
 * under pipelined appends. */

/* Publishes `count` entries `format` % i (i = first, first + 1 ...; the
 * format may leave i out) of the
 * log, pipelined (js_PublishMsgAsync), then waits for their acknowledgements. */
static void put_many(const char *stream, const char *format, long first, long count) {
    char subject[200], id[32], data[300];
    natsStatus s = NATS_OK;
    long i;
    snprintf(subject, sizeof subject, "replicate.%s.%llu", stream, (unsigned long long)log_id(stream));
    id_text(stream, id, sizeof id);
    for (i = first; i < first + count && s == NATS_OK; i++) {
        natsMsg *msg = NULL;
        int n = snprintf(data, sizeof data, format, i);
        s = natsMsg_Create(&msg, subject, NULL, data, n);
        if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Ts-Log", id);
        if (s == NATS_OK) s = js_PublishMsgAsync(js, &msg, NULL);
        natsMsg_Destroy(msg);
    }
    if (s == NATS_OK) s = js_PublishAsyncComplete(js, NULL);
    check(s == NATS_OK, "the second client publishes", natsStatus_GetText(s));
}

/* One entry "#ORIGIN:N {"type":"inc","payload":"PAYLOAD"}". */
static void put(const char *stream, const char *origin, long n, const char *payload) {
    char format[200];
    snprintf(format, sizeof format, "#%s:%%ld {\"type\":\"inc\",\"payload\":\"%s\"}", origin, payload);
    put_many(stream, format, n, 1);
}

/* Waits (up to 10 s: the reader applies what comes) until replica s's
 * "seen" is `want`; checks it. */
static void seen_is(ts_store *s, const char *want, const char *what) {
    char *text = NULL, expected[4096];
    int i;
    snprintf(expected, sizeof expected, "\"%s\"", want);
    for (i = 0; i < 200; i++) {
        ts_free(text);
        text = NULL;
        if (ts_store_get_state(s, "/seen", &text) == TS_OK && strcmp(text, expected) == 0) break;
        usleep(50000);
    }
    {
        char detail[700];
        snprintf(detail, sizeof detail, "want %.300s, seen %.300s", expected, text ? text : "(none)");
        check(text != NULL && strcmp(text, expected) == 0, what, detail);
    }
    ts_free(text);
}

/* Replica s's status says it appended one abandon marker and one number
 * was abandoned. */
static void one_marker(ts_store *s, const char *who) {
    char *markers = NULL, *abandoned = NULL, detail[100], what[200];
    snprintf(what, sizeof what, "%s: its status", who);
    check(ts_store_dispatch(s, "{\"type\":\"@@replicate/status\"}") == TS_OK &&
              ts_store_get_state(s, "/status/markers", &markers) == TS_OK &&
              ts_store_get_state(s, "/status/abandoned", &abandoned) == TS_OK,
          what, ts_last_error());
    snprintf(detail, sizeof detail, "markers %s, abandoned %s", markers ? markers : "?", abandoned ? abandoned : "?");
    snprintf(what, sizeof what, "%s appended one marker, one number abandoned", who);
    check(markers && abandoned && strcmp(markers, "1") == 0 && strcmp(abandoned, "1") == 0, what, detail);
    ts_free(markers);
    ts_free(abandoned);
}

#define OPTIMISTIC ",\"mode\":\"optimistic\""
#define P "p00000000000000a" /* an optimistic replica's origin */

static void per_origin_order(void) {
    ts_store *a, *b, *c, *d;
    char id[32];
    long i;
    /* Out of order: each replica applies P's entries in P's order, wherever
     * the log put them; other entries where the log put them. */
    a = replica("t9");
    b = join_with("t9", OPTIMISTIC, NULL);
    check(b != NULL, "order: an optimistic replica joins", last_error);
    if (b == NULL) exit(1);
    put("t9", P, 1, "a1");
    put("t9", P, 3, "a3");
    put("t9", "0123456789abcdef", 7, "x7"); /* an ordered replica's: never held */
    put("t9", P, 2, "a2");
    put("t9", P, 5, "a5");
    put("t9", P, 4, "a4");
    seen_is(a, "a1 x7 a2 a3 a4 a5 ", "order: an ordered replica applies a3 after a2, a5 after a4");
    seen_is(b, "a1 x7 a2 a3 a4 a5 ", "order: an optimistic replica the same");
    c = replica("t9");
    d = join_with("t9", OPTIMISTIC, NULL);
    seen_is(c, "a1 x7 a2 a3 a4 a5 ", "order: a replica that joins later the same");
    if (d) seen_is(d, "a1 x7 a2 a3 a4 a5 ", "order: an optimistic one that joins later the same");
    /* A number already applied: not applied again. */
    put("t9", P, 2, "a2again");
    put("t9", P, 6, "a6");
    seen_is(a, "a1 x7 a2 a3 a4 a5 a6 ", "order: a number already applied is not applied again (late)");
    seen_is(d ? d : b, "a1 x7 a2 a3 a4 a5 a6 ", "order: the same on an optimistic replica");
    ts_store_destroy(a);
    ts_store_destroy(b);
    ts_store_destroy(c);
    if (d) ts_store_destroy(d);

    /* The snapshot carries each origin's next number: a replica that joins
     * from it holds what the others hold, and applies what they apply. */
    a = join_with("t10", ",\"snapshot_every\":1", NULL);
    check(a != NULL, "order: a replica with snapshot_every 1 joins", last_error);
    if (a == NULL) exit(1);
    put("t10", P, 1, "a1");
    put("t10", P, 3, "a3");
    put("t10", P, 2, "a2");
    seen_is(a, "a1 a2 a3 ", "order, snapshot: in order before the snapshot");
    check(dispatch(a) == TS_OK, "order, snapshot: a dispatch (its entry is snapshotted)", last_error);
    put("t10", P, 5, "a5");
    put("t10", P, 4, "a4");
    seen_is(a, "a1 a2 a3 a4 a5 ", "order, snapshot: in order after it");
    b = replica("t10");
    seen_is(b, "a1 a2 a3 a4 a5 ", "order, snapshot: a replica that joins from the snapshot the same");
    put("t10", P, 7, "a7");
    put("t10", P, 6, "a6");
    seen_is(b, "a1 a2 a3 a4 a5 a6 a7 ", "order, snapshot: and goes on from the origin's number in it");
    seen_is(a, "a1 a2 a3 a4 a5 a6 a7 ", "order, snapshot: as the replica that took it");
    ts_store_destroy(a);
    ts_store_destroy(b);
    {
        /* A snapshot whose origins' numbers are malformed: refused, nothing loaded. */
        static const char *const bad[] = {"P {\"count\":1}", "Pp1 {\"count\":1}", "Pp1:x {\"count\":1}",
                                          "Pp1:1,{\"count\":1}", "PP1:1 {\"count\":1}"};
        kvStore *snap = NULL;
        char value[200];
        uint64_t revision;
        size_t i;
        natsStatus st = js_KeyValue(&snap, js, "t10_snap");
        check(st == NATS_OK, "order, snapshot: the second client opens the bucket", natsStatus_GetText(st));
        id_text("t10", id, sizeof id);
        for (i = 0; st == NATS_OK && i < sizeof bad / sizeof *bad; i++) {
            snprintf(value, sizeof value, "%s 4\n%s", id, bad[i]);
            st = kvStore_PutString(&revision, snap, "snapshot", value);
            check(st == NATS_OK, "order, snapshot: the second client writes a malformed snapshot", natsStatus_GetText(st));
            join_refused("t10", bad[i], "starts with \"P\" but not with the origins' next numbers");
        }
        if (snap) kvStore_Destroy(snap);
    }

    /* The origin itself: its entry 3 stored before its entry 2 (published
     * here with the message id its sender uses, "ORIGIN:3", so that the
     * stream keeps the sender's own copy out as a duplicate, as when a
     * resend lands after a later entry). It keeps b3 pending on top until
     * b2 is in; every replica applies b1 b2 b3. */
    a = replica("t12");
    b = join_with("t12", OPTIMISTIC, NULL);
    if (b == NULL) exit(1);
    check(ts_store_dispatch(b, "{\"type\":\"inc\",\"payload\":\"b1\"}") == TS_OK, "order, own: b dispatches b1",
          ts_last_error());
    seen_is(a, "b1 ", "order, own: b1 reaches the other replica");
    {
        natsMsg *first = NULL;
        char origin[80] = "", data[300], subject[200], log[32];
        jsPubAck *ack = NULL;
        natsMsg *msg = NULL;
        natsStatus st = js_GetMsg(&first, js, "t12", 1, NULL, NULL);
        if (st == NATS_OK && natsMsg_GetDataLength(first) < 200) {
            snprintf(data, sizeof data, "%.*s", natsMsg_GetDataLength(first), natsMsg_GetData(first));
            sscanf(data, "#%70[0-9a-z]:", origin);
        }
        if (first) natsMsg_Destroy(first);
        check(origin[0] == 'p', "order, own: an optimistic replica's origin begins with p", data);
        snprintf(subject, sizeof subject, "replicate.t12.%llu", (unsigned long long)log_id("t12"));
        snprintf(data, sizeof data, "#%s:3 {\"type\":\"inc\",\"payload\":\"b3\"}", origin);
        id_text("t12", log, sizeof log);
        st = natsMsg_Create(&msg, subject, NULL, data, (int)strlen(data));
        if (st == NATS_OK) st = natsMsgHeader_Set(msg, "Ts-Log", log);
        snprintf(data, sizeof data, "%s:3", origin);
        if (st == NATS_OK) st = natsMsgHeader_Set(msg, "Nats-Msg-Id", data);
        if (st == NATS_OK) st = js_PublishMsg(&ack, js, msg, NULL, NULL);
        check(st == NATS_OK, "order, own: the second client publishes b's entry 3", natsStatus_GetText(st));
        if (ack) jsPubAck_Destroy(ack);
        natsMsg_Destroy(msg);
    }
    usleep(300000);
    seen_is(a, "b1 ", "order, own: b3 held on the other replica");
    check(ts_store_dispatch(b, "{\"type\":\"inc\",\"payload\":\"b2\"}") == TS_OK &&
          ts_store_dispatch(b, "{\"type\":\"inc\",\"payload\":\"b3\"}") == TS_OK,
          "order, own: b dispatches b2 and b3", ts_last_error());
    seen_is(a, "b1 b2 b3 ", "order, own: the other replica applies b2, then b3");
    seen_is(b, "b1 b2 b3 ", "order, own: b shows b1 b2 b3");
    c = replica("t12");
    seen_is(c, "b1 b2 b3 ", "order, own: a replica that joins later the same");
    {
        char *pending = NULL, *held = NULL, detail[100];
        int i;
        /* b's pending list empties: b3 was confirmed once released. */
        for (i = 0; i < 200; i++) {
            ts_free(pending);
            ts_free(held);
            pending = held = NULL;
            if (ts_store_dispatch(b, "{\"type\":\"@@replicate/status\"}") == TS_OK &&
                ts_store_get_state(b, "/status/pending", &pending) == TS_OK &&
                ts_store_get_state(b, "/status/held_total", &held) == TS_OK && strcmp(pending, "0") == 0)
                break;
            usleep(50000);
        }
        snprintf(detail, sizeof detail, "pending %s, held_total %s", pending ? pending : "?", held ? held : "?");
        check(pending && held && strcmp(pending, "0") == 0 && strcmp(held, "1") == 0,
              "order, own: nothing pending in b once quiet, one entry held back (its status)", detail);
        ts_free(pending);
        ts_free(held);
    }
    ts_store_destroy(a);
    ts_store_destroy(b);
    ts_store_destroy(c);

    /* The same on a quiet log: an optimistic replica that held an entry for
     * abandon_ms appends an abandon marker; where the log puts it, every
     * replica abandons the missing numbers and applies the held ones. */
    a = replica("t13");
    b = join_with("t13", OPTIMISTIC ",\"abandon_ms\":500", NULL);
    if (b == NULL) exit(1);
    check(ts_store_dispatch(b, "{\"type\":\"@@replicate/abandon\",\"payload\":{\"origin\":\"" P "\",\"below\":9}}") ==
              TS_E_ARGUMENT && strstr(ts_last_error(), "a program cannot dispatch it") != NULL,
          "order, marker: a program's @@replicate/abandon is refused (TS_E_ARGUMENT)", ts_last_error());
    put("t13", P, 1, "m1");
    put("t13", P, 3, "m3");
    seen_is(a, "m1 m3 ", "order, marker: m3 applied after the marker (about 0.5 s), m2 abandoned");
    seen_is(b, "m1 m3 ", "order, marker: the same on the replica that appended it");
    put("t13", P, 2, "m2");
    put("t13", P, 4, "m4");
    seen_is(a, "m1 m3 m4 ", "order, marker: m2, come later, is never applied");
    c = replica("t13");
    seen_is(c, "m1 m3 m4 ", "order, marker: a replica that joins later the same");
    one_marker(b, "order, marker: b");
    ts_store_destroy(a);
    ts_store_destroy(b);
    ts_store_destroy(c);

    /* The same when every replica left is in ordered mode: an ordered
     * replica appends the marker too (under an origin "p..." of its own). */
    a = join_with("u5", ",\"abandon_ms\":500", NULL);
    check(a != NULL, "order, marker from an ordered replica: it joins", last_error);
    if (a == NULL) exit(1);
    c = replica("u5");
    put("u5", P, 1, "o1");
    put("u5", P, 3, "o3");
    seen_is(a, "o1 o3 ", "order, marker from an ordered replica: o3 applied after its marker (about 0.5 s)");
    seen_is(c, "o1 o3 ", "order, marker from an ordered replica: the same on another ordered replica");
    put("u5", P, 2, "o2");
    put("u5", P, 4, "o4");
    seen_is(c, "o1 o3 o4 ", "order, marker from an ordered replica: o2, come later, is never applied");
    check(dispatch(a) == TS_OK, "order, marker from an ordered replica: a dispatch after it", last_error);
    one_marker(a, "order, marker from an ordered replica: it");
    ts_store_destroy(a);
    ts_store_destroy(c);

    /* A number that never comes (its origin died): the entries after it are
     * held for 100,000 entries of the log (HOLD_WINDOW), then applied, and
     * that number, if it comes later, is never applied. */
    a = replica("t11");
    b = join_with("t11", OPTIMISTIC, NULL);
    if (b == NULL) exit(1);
    put("t11", P, 1, "q1");
    put("t11", P, 4, "q4");
    put("t11", P, 3, "q3"); /* held too, after q4: q2 never comes */
    put_many("t11", "{\"type\":\"tick\"}", 0, 99998);
    seen_is(a, "q1 ", "order, abandoned: q4 and q3 held while 99,999 entries came after q4");
    put_many("t11", "{\"type\":\"tick\"}", 0, 1);
    seen_is(a, "q1 q3 q4 ", "order, abandoned: at the 100,000th entry after q4, q3 then q4 (q2 abandoned)");
    seen_is(b, "q1 q3 q4 ", "order, abandoned: the same on an optimistic replica");
    put("t11", P, 2, "q2");
    put("t11", P, 5, "q5");
    seen_is(a, "q1 q3 q4 q5 ", "order, abandoned: q2, come later, is never applied");
    c = replica("t11");
    seen_is(c, "q1 q3 q4 q5 ", "order, abandoned: a replica that joins later the same");
    ts_store_destroy(a);
    ts_store_destroy(b);
    ts_store_destroy(c);
    (void)i;
}

/* ---- Messages of several actions (entry.h, "Ts-Parts") ---------------------- */

/* Publishes `data` (length n, its parts separated by NUL bytes) with the
 * log's Ts-Log and the header Ts-Parts `parts` (NULL: none). */
static void publish_parts(const char *stream, const char *parts, const char *data, int n) {
    char subject[200], id[32];
    natsMsg *msg = NULL;
    jsPubAck *ack = NULL;
    natsStatus s;
    snprintf(subject, sizeof subject, "replicate.%s.%llu", stream, (unsigned long long)log_id(stream));
    id_text(stream, id, sizeof id);
    s = natsMsg_Create(&msg, subject, NULL, data, n);
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Ts-Log", id);
    if (s == NATS_OK && parts) s = natsMsgHeader_Set(msg, "Ts-Parts", parts);
    if (s == NATS_OK) s = js_PublishMsg(&ack, js, msg, NULL, NULL);
    check(s == NATS_OK, "the second client publishes", natsStatus_GetText(s));
    if (ack) jsPubAck_Destroy(ack);
    natsMsg_Destroy(msg);
    usleep(300000);
}

#define INC(origin, n, payload) "#" origin ":" #n " {\"type\":\"inc\",\"payload\":\"" payload "\"}"

static void several_a_message(void) {
    ts_store *a, *b, *c;
    static const char three[] = INC(P, 1, "b1") "\0" INC(P, 2, "b2") "\0" INC(P, 3, "b3");
    static const char overlap[] = INC(P, 2, "b2") "\0" INC(P, 3, "b3") "\0" INC(P, 4, "b4");
    static const char two[] = INC(P, 5, "b5") "\0" INC(P, 6, "b6");
    /* Applied in order, one entry each, on ordered and optimistic replicas
     * and on one that joins later; a copy of actions already applied (a
     * resend cut otherwise) is skipped. */
    a = replica("u1");
    b = join_with("u1", OPTIMISTIC, NULL);
    check(b != NULL, "several a message: an optimistic replica joins", last_error);
    if (b == NULL) exit(1);
    publish_parts("u1", "3", three, (int)sizeof three - 1);
    seen_is(a, "b1 b2 b3 ", "several a message: an ordered replica applies the three in order");
    seen_is(b, "b1 b2 b3 ", "several a message: an optimistic replica the same");
    publish_parts("u1", "3", overlap, (int)sizeof overlap - 1);
    seen_is(a, "b1 b2 b3 b4 ", "several a message: a copy of b2 and b3 is skipped, b4 applied");
    seen_is(b, "b1 b2 b3 b4 ", "several a message: the same on the optimistic replica");
    check(dispatch(a) == TS_OK && count(a) == 5,
          "several a message: a dispatch after them; count 5 (b1 to b4 and it: the copies counted nowhere)", last_error);
    c = join_with("u1", OPTIMISTIC, NULL);
    check(c != NULL, "several a message: a replica joins later", last_error);
    if (c) seen_is(c, "b1 b2 b3 b4 ", "several a message: the replica that joins later the same");
    publish_parts("u1", "2", two, (int)sizeof two - 1);
    seen_is(a, "b1 b2 b3 b4 b5 b6 ", "several a message: a second message");
    if (c) seen_is(c, "b1 b2 b3 b4 b5 b6 ", "several a message: the same on the replica that joined later");
    ts_store_destroy(b);
    if (c) ts_store_destroy(c);

    /* Damaged: refused whole, nothing of it applied. */
    publish_parts("u1", "1", three, (int)sizeof three - 1);
    refused(a, "Ts-Parts 1", "its header \"Ts-Parts\" is \"1\", not a count from 2 to 1024");
    ts_store_destroy(a);
    a = replica("u2");
    publish_parts("u2", "4", three, (int)sizeof three - 1);
    refused(a, "Ts-Parts 4 over 3 actions", "its header \"Ts-Parts\" says 4 actions, but its data holds another count");
    join_refused("u2", "Ts-Parts 4 over 3 actions", "says 4 actions");
    seen_is(a, "", "several a message: none of the damaged message's actions applied");
    ts_store_destroy(a);
    a = replica("u3");
    publish_parts("u3", "2", INC(P, 1, "c1") "\0", (int)sizeof(INC(P, 1, "c1")));
    refused(a, "an empty action", "says 2 actions, but its data holds an empty one");
    ts_store_destroy(a);
    a = replica("u4");
    publish_parts("u4", "1025", three, (int)sizeof three - 1);
    refused(a, "Ts-Parts past 1024", "is \"1025\", not a count from 2 to 1024");
    ts_store_destroy(a);

    /* Trimmed to a message of several actions (as a snapshot's trim leaves
     * it), no snapshot: told as trimmed, not as entries missing. */
    a = replica("u6");
    publish_parts("u6", NULL, INC(P, 1, "d1"), (int)sizeof(INC(P, 1, "d1")) - 1);
    publish_parts("u6", "2", two, (int)sizeof two - 1);
    {
        jsOptions o;
        natsStatus s;
        jsOptions_Init(&o);
        o.Stream.Purge.Sequence = 2; /* up to, not including, entry 2 */
        s = js_PurgeStream(js, "u6", &o, NULL);
        check(s == NATS_OK, "the second client trims the stream to its message of several actions",
              natsStatus_GetText(s));
    }
    join_refused("u6", "trimmed to a message of several actions",
                 "no longer holds entry 1 (trimmed before 2) and no snapshot covers it");
    ts_store_destroy(a);
}

/* A server with max_payload 64 KiB: ten actions of 40 KB dispatched at once
 * on an optimistic replica (its appends would put several in a message of
 * more than 64 KiB) all reach the log, and another replica applies them. */
static void small_payload(void) {
    static char big[40100];
    ts_store *a = join_with("p1", OPTIMISTIC, NULL), *b;
    int i, ok = 1;
    char detail[100];
    check(a != NULL, "max_payload 64 KiB: an optimistic replica joins", last_error);
    if (a == NULL) exit(1);
    b = replica("p1");
    /* (A payload that is no string: "seen" ignores it, so that the
     * dispatches are quick and the sender finds several pending.) */
    static const char head[] = "{\"type\":\"inc\",\"payload\":{\"x\":\"";
    memcpy(big, head, sizeof head - 1);
    memset(big + sizeof head - 1, 'x', 40000);
    memcpy(big + sizeof head - 1 + 40000, "\"}}", 4);
    for (i = 0; i < 10; i++) ok &= ts_store_dispatch(a, big) == TS_OK;
    check(ok, "max_payload 64 KiB: ten dispatches of 40 KB return TS_OK (pending)", ts_last_error());
    for (i = 0; i < 200 && count(b) != 10; i++) usleep(50000);
    snprintf(detail, sizeof detail, "the other replica counts %lld", count(b));
    check(count(b) == 10, "max_payload 64 KiB: all ten reach the log, cut to fit; another replica applies them", detail);
    ts_store_destroy(a);
    ts_store_destroy(b);
}

int main(int argc, char **argv) {
    ts_store *a, *b, *c;
    char id[32];
    natsStatus s;
    uint64_t revision;
    kvStore *kv = NULL;
    if (argc != 3 && !(argc == 4 && strcmp(argv[3], "payload") == 0)) {
        fprintf(stderr, "usage: tamper_nats PLUGIN URL [payload]\n");
        return 2;
    }
    plugin = argv[1];
    url = argv[2];
    signal(SIGALRM, on_alarm);
    if (natsConnection_ConnectTo(&nc, url) != NATS_OK || natsConnection_JetStream(&js, nc, NULL) != NATS_OK) {
        printf("FAIL: the second client connects to %s\n0 passed, 1 failed\n", url);
        return 1;
    }

    if (argc == 4) {
        small_payload();
        jsCtx_Destroy(js);
        natsConnection_Destroy(nc);
        printf("%d passed, %d failed\n", passed, failed);
        return failed != 0;
    }

    /* A message without replicate.so's header. */
    a = replica("t1");
    check(dispatch(a) == TS_OK && dispatch(a) == TS_OK && count(a) == 2, "foreign: two dispatches", last_error);
    publish("t1", NULL, "{\"type\":\"inc\"}", 14);
    refused(a, "foreign (no header)", "entry 3 was not written by replicate.so: it has no header \"Ts-Log\"");
    join_refused("t1", "foreign (no header)", "entry 3 was not written by replicate.so");
    ts_store_destroy(a);

    /* Another log's id; a NUL byte; an empty action. */
    a = replica("t2");
    check(dispatch(a) == TS_OK, "other log: a dispatch", last_error);
    publish("t2", "12345", "{\"type\":\"inc\"}", 14);
    refused(a, "another log's id", "entry 2 belongs to the log 12345");
    ts_store_destroy(a);
    a = replica("t3");
    id_text("t3", id, sizeof id);
    check(dispatch(a) == TS_OK, "NUL: a dispatch", last_error);
    publish("t3", id, "{\"type\":\"inc\"}\0x", 16);
    refused(a, "NUL byte", "entry 2 was not written by replicate.so: its action contains a NUL byte");
    join_refused("t3", "NUL byte", "contains a NUL byte");
    ts_store_destroy(a);

    /* An entry deleted from the middle: joins refused; a replica past it goes on. */
    a = replica("t4");
    check(dispatch(a) == TS_OK && dispatch(a) == TS_OK && dispatch(a) == TS_OK, "deleted: three dispatches", last_error);
    s = js_DeleteMsg(js, "t4", 2, NULL, NULL);
    check(s == NATS_OK, "the second client deletes entry 2", natsStatus_GetText(s));
    join_refused("t4", "deleted from the middle", "1 of its entries were deleted from the middle");
    check(dispatch(a) == TS_OK && count(a) == 4, "deleted from the middle: a replica past it goes on", last_error);
    ts_store_destroy(a);

    /* Purged (the oldest entries gone, no snapshot): joins refused; a replica past them goes on. */
    a = replica("t5");
    check(dispatch(a) == TS_OK && dispatch(a) == TS_OK, "purged: two dispatches", last_error);
    s = js_PurgeStream(js, "t5", NULL, NULL);
    check(s == NATS_OK, "the second client purges the stream", natsStatus_GetText(s));
    join_refused("t5", "purged, no snapshot", "no longer holds entry 1");
    check(dispatch(a) == TS_OK && count(a) == 3, "purged: a replica past them goes on", last_error);
    ts_store_destroy(a);

    /* Deleted and made again under a running replica. */
    a = replica("t6");
    check(dispatch(a) == TS_OK && dispatch(a) == TS_OK && dispatch(a) == TS_OK, "reset: three dispatches", last_error);
    s = js_DeleteStream(js, "t6", NULL, NULL);
    check(s == NATS_OK, "the second client deletes the stream", natsStatus_GetText(s));
    b = replica("t6"); /* makes a new log */
    check(dispatch(b) == TS_OK && count(b) == 1, "reset: a new replica starts a new log", last_error);
    refused(a, "stream made again (behind the replica)", "it was deleted and made again; nothing was appended");
    check(dispatch(b) == TS_OK && dispatch(b) == TS_OK && dispatch(b) == TS_OK && count(b) == 4,
          "reset: the new log goes on past the old replica's position", last_error);
    refused(a, "stream made again (past the replica)", "it was deleted and made again; nothing was appended");
    ts_store_destroy(a);
    ts_store_destroy(b);

    /* The snapshot: garbage, then ahead of the stream. */
    a = replica("t7");
    check(dispatch(a) == TS_OK && dispatch(a) == TS_OK, "snapshot: two dispatches", last_error);
    s = js_KeyValue(&kv, js, "t7_snap");
    if (s == NATS_OK) s = kvStore_PutString(&revision, kv, "snapshot", "not a snapshot");
    check(s == NATS_OK, "the second client writes the snapshot", natsStatus_GetText(s));
    join_refused("t7", "a malformed snapshot", "its snapshot \"not a snapshot\" was not written by replicate.so");
    {
        char value[100];
        id_text("t7", id, sizeof id);
        snprintf(value, sizeof value, "%s 999999\n{\"count\":7}", id);
        s = kvStore_PutString(&revision, kv, "snapshot", value);
    }
    check(s == NATS_OK, "the second client writes a snapshot ahead", natsStatus_GetText(s));
    join_refused("t7", "a snapshot ahead of the stream", "its snapshot covers entry 999999 but the stream's last entry is 2");
    check(dispatch(a) == TS_OK && count(a) == 3, "snapshot: a replica that does not need it goes on", last_error);
    kvStore_Destroy(kv);
    ts_store_destroy(a);

    /* A stream of that name that replicate.so did not make. */
    {
        jsStreamConfig config;
        jsStreamInfo *si = NULL;
        const char *subjects[1] = {"elsewhere.>"};
        jsStreamConfig_Init(&config);
        config.Name = "t8";
        config.Subjects = subjects;
        config.SubjectsLen = 1;
        s = js_AddStream(&si, js, &config, NULL, NULL);
        check(s == NATS_OK, "the second client makes a stream \"t8\"", natsStatus_GetText(s));
        if (si) jsStreamInfo_Destroy(si);
        join_refused("t8", "a stream replicate.so did not make", "the stream was not made by replicate.so");
    }

    per_origin_order();
    several_a_message();

    /* Repaired by starting a new log: the stream and the bucket deleted. */
    js_DeleteStream(js, "t1", NULL, NULL);
    js_DeleteKeyValue(js, "t1_snap");
    c = replica("t1");
    check(dispatch(c) == TS_OK && count(c) == 1, "repaired: a new log under the same name works", last_error);
    ts_store_destroy(c);

    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
