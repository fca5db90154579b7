/*
 * optimistic.c - replicate.so's optimistic mode and status, for
 * Tests/replicate/run.sh:
 *   optimistic PLUGIN URL STOP_CMD START_CMD PROXY_URL PROXY_PID [EXTRA [SCENARIOS]]
 * (and for Tests/replicate/nats_run.py, URL a nats:// cluster, EXTRA the
 * config members every replica adds, e.g. "\"replicas\":3", SCENARIOS the
 * names of those to run, e.g. "offline": STOP_CMD stops two of the three
 * servers, START_CMD starts them again and waits for a stream leader).
 * URL is a server this program may stop and start (STOP_CMD, START_CMD;
 * persistent); PROXY_URL reaches the same server through
 * Tests/replicate/delay_proxy.py (process PROXY_PID, no delay), which this
 * program pauses (SIGSTOP) and resumes (SIGCONT) to stall the link of one
 * replica while another goes on, or loses every answer to (SIGUSR1, until
 * SIGUSR2).
 * Checks: config refusals; a dispatch with the server down returns TS_OK at
 * once, the state shows it, the status counts it pending and says the log
 * is unreachable; max_pending refuses the next one with TS_E_IO and changes
 * nothing; once the server is back everything is appended once and
 * confirmed; an append whose answer was lost (link stalled past timeout_ms)
 * and sent again is in the log once; an action that the log's order puts
 * where a reducer refuses it is dropped and reported (@@replicate/dropped,
 * with its reason, seen by the reducers and by middleware after the
 * plugin), and the replicas agree; pending actions whose entries were
 * trimmed before the replica read them (a snapshot covers them) are not
 * applied twice; a listener's nested dispatch is applied
 * once everywhere; a store destroyed right after a dispatch still appends
 * it; the status in ordered mode. Prints "N passed, M failed".
 */
#define _DEFAULT_SOURCE

#include "turnstate.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static int passed, failed;
static const char *plugin, *url, *proxy_url;
static const char *extra_config = ""; /* argv[7]: members every replica's config adds */
static char scheme[16];                /* "redis://" or "nats://": what the log's errors name */
static pid_t proxy_pid;

static void check(int ok, const char *what, const char *detail) {
    if (ok) {
        passed++;
        if (getenv("OPTIMISTIC_VERBOSE")) printf("ok: %s (%s)\n", what, detail ? detail : "");
    } else {
        failed++;
        printf("FAIL: %s (%s)\n", what, detail ? detail : "");
    }
    fflush(stdout);
}

/* ---- The store: {"counter", "stock", "status", "dropped", "last_dropped"} */

static int counted(const ts_action *a) { return strcmp(a->type, "inc") == 0 || strcmp(a->type, "take") == 0; }

static char *number(long long n) {
    char *out = ts_alloc(24);
    if (out) snprintf(out, 24, "%lld", n);
    return out;
}

static char *counter_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    return counted(a) ? number(atoll(slice) + 1) : NULL;
}

static char *stock_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    if (strcmp(a->type, "take") != 0) return NULL;
    if (atoll(slice) <= 0) {
        ts_reducer_fail("out of stock");
        return NULL;
    }
    return number(atoll(slice) - 1);
}

static char *payload_of(const char *type, const ts_action *a) {
    return strcmp(a->type, type) == 0 && a->payload ? ts_strdup(a->payload) : NULL;
}

static char *status_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)slice;
    (void)ctx;
    return payload_of("@@replicate/status", a);
}

static char *last_dropped_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)slice;
    (void)ctx;
    return payload_of("@@replicate/dropped", a);
}

static char *dropped_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    return strcmp(a->type, "@@replicate/dropped") == 0 ? number(atoll(slice) + 1) : NULL;
}

static ts_store *new_store(long long stock) {
    ts_store *s = NULL;
    char initial[200];
    snprintf(initial, sizeof initial,
             "{\"counter\":0,\"stock\":%lld,\"status\":null,\"dropped\":0,\"last_dropped\":null}", stock);
    if (ts_store_create(initial, &s) != TS_OK || ts_store_add_reducer(s, "counter", counter_reducer, NULL) != TS_OK ||
        ts_store_add_reducer(s, "stock", stock_reducer, NULL) != TS_OK ||
        ts_store_add_reducer(s, "status", status_reducer, NULL) != TS_OK ||
        ts_store_add_reducer(s, "dropped", dropped_reducer, NULL) != TS_OK ||
        ts_store_add_reducer(s, "last_dropped", last_dropped_reducer, NULL) != TS_OK) {
        printf("FAIL: cannot make a store\n");
        exit(1);
    }
    return s;
}

/* A replica of `stream` at `where` (extra: more config members). */
static ts_store *replica(const char *where, const char *stream, long long stock, const char *extra) {
    char config[800];
    ts_store *s = new_store(stock);
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"stream\":\"%s\"%s%s%s%s}", where, stream, extra[0] ? "," : "",
             extra, extra_config[0] ? "," : "", extra_config);
    if (ts_store_load_plugin(s, plugin, config) != TS_OK) {
        printf("FAIL: %s cannot load: %s\n", config, ts_last_error());
        fflush(stdout);
        exit(1);
    }
    return s;
}

static char *text_at(ts_store *s, const char *pointer) {
    char *text = NULL;
    if (ts_store_get_state(s, pointer, &text) != TS_OK) return NULL;
    return text;
}

/* The value at pointer, for messages (a static buffer). */
static const char *shown(ts_store *s, const char *pointer) {
    static char buffer[2048];
    char *text = text_at(s, pointer);
    snprintf(buffer, sizeof buffer, "%s", text ? text : "(none)");
    ts_free(text);
    return buffer;
}

static long long number_at(ts_store *s, const char *pointer) {
    char *text = text_at(s, pointer);
    long long n = text ? atoll(text) : -1;
    ts_free(text);
    return n;
}

static int text_has(ts_store *s, const char *pointer, const char *needle) {
    char *text = text_at(s, pointer);
    int has = text && strstr(text, needle) != NULL;
    ts_free(text);
    return has;
}

/* The status now (the program asks: "@@replicate/status"). */
static long long status_of(ts_store *s, const char *field) {
    char pointer[64];
    (void)ts_store_dispatch(s, "{\"type\":\"@@replicate/status\"}");
    snprintf(pointer, sizeof pointer, "/status/%s", field);
    return number_at(s, pointer);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Waits up to `seconds` until nothing of s is pending and it applied `seq`
 * entries (seq 0: any). */
static int settled(ts_store *s, long long seq, double seconds) {
    double until = now_s() + seconds;
    do {
        if (status_of(s, "pending") == 0 && (seq == 0 || status_of(s, "seq") == seq)) return 1;
        usleep(10000);
    } while (now_s() < until);
    return 0;
}

/* Nothing pending and the counter at n: n actions confirmed (whatever
 * entries carry them: on NATS a message may carry several). */
static int confirmed_at(ts_store *s, long long n, double seconds) {
    double until = now_s() + seconds;
    do {
        if (status_of(s, "pending") == 0 && number_at(s, "/counter") == n) return 1;
        usleep(10000);
    } while (now_s() < until);
    return 0;
}

static int counter_becomes(ts_store *s, long long n, double seconds) {
    double until = now_s() + seconds;
    while (number_at(s, "/counter") != n && now_s() < until) usleep(10000);
    return number_at(s, "/counter") == n;
}

/* How many entries the log holds: a new ordered replica folds them all. */
static long long log_count(const char *stream) {
    ts_store *j = replica(url, stream, 1000, "");
    long long n = number_at(j, "/counter");
    ts_store_destroy(j);
    return n;
}

static void refused(const char *config, const char *message) {
    ts_store *s = new_store(0);
    char what[300];
    ts_status status = ts_store_load_plugin(s, plugin, config);
    snprintf(what, sizeof what, "config %s is refused with %s", config, message);
    check(status == TS_E_PLUGIN && strstr(ts_last_error(), message) != NULL, what, ts_last_error());
    ts_store_destroy(s);
}

/* ---- Scenarios ------------------------------------------------------------ */

static void configs(void) {
    char c[300];
    snprintf(c, sizeof c, "{\"url\":\"%s\",\"stream\":\"x\",\"mode\":\"fast\"}", url);
    refused(c, "\"mode\" must be \"ordered\" or \"optimistic\", not \"fast\"");
    snprintf(c, sizeof c, "{\"url\":\"%s\",\"stream\":\"x\",\"mode\":1}", url);
    refused(c, "\"mode\" must be \"ordered\" or \"optimistic\", not a number");
    snprintf(c, sizeof c, "{\"url\":\"%s\",\"stream\":\"x\",\"max_pending\":0}", url);
    refused(c, "\"max_pending\" must be an integer from 1");
    snprintf(c, sizeof c, "{\"url\":\"%s\",\"stream\":\"x\",\"max_pending_bytes\":100}", url);
    refused(c, "\"max_pending_bytes\" must be an integer from 1024");
    snprintf(c, sizeof c, "{\"url\":\"%s\",\"stream\":\"x\",\"status_ms\":-5}", url);
    refused(c, "\"status_ms\" must be an integer from 0 to 3600000 (milliseconds; 0 = never), not a negative");
    snprintf(c, sizeof c, "{\"url\":\"%s\",\"stream\":\"x\",\"abandon_ms\":50}", url);
    refused(c, "\"abandon_ms\" must be an integer from 100 to 86400000 (milliseconds), not that number");
    snprintf(c, sizeof c, "{\"url\":\"%s\",\"stream\":\"x\",\"abandon_ms\":\"1s\"}", url);
    refused(c, "\"abandon_ms\" must be an integer from 100 to 86400000 (milliseconds), not a string");
}

/* The server down: dispatches apply here at once, wait as pending, up to
 * max_pending; the status says so; then the server is back. */
static void offline(const char *stop, const char *start) {
    ts_store *s = replica(url, "offline", 1000, "\"mode\":\"optimistic\",\"status_ms\":20,\"timeout_ms\":300");
    ts_store *t = replica(url, "offline", 1000, "\"mode\":\"optimistic\",\"max_pending\":2,\"timeout_ms\":300");
    ts_status status;
    int i, ok;
    double until;
    check(text_has(s, "/status/mode", "optimistic") && number_at(s, "/status/pending") == 0,
          "status_ms: the status is in the state from the load on", NULL);
    check(ts_store_dispatch(s, "{\"type\":\"inc\"}") == TS_OK && settled(s, 1, 5), "a dispatch is confirmed",
          ts_last_error());
    check(system(stop) == 0, "the server stops", stop);
    ok = 1;
    for (i = 0; i < 3; i++) ok &= ts_store_dispatch(s, "{\"type\":\"inc\"}") == TS_OK;
    check(ok, "server down: optimistic dispatches return TS_OK", ts_last_error());
    check(number_at(s, "/counter") == 4, "server down: the state shows the pending actions (counter 4)", NULL);
    check(status_of(s, "pending") == 3, "server down: the status counts 3 pending", NULL);
    until = now_s() + 5;
    while (now_s() < until && !(text_has(s, "/status/connected", "false") && text_has(s, "/status/last_error", scheme)))
        usleep(20000);
    check(text_has(s, "/status/connected", "false") && text_has(s, "/status/last_error", scheme),
          "server down: the periodic status says the log is unreachable, and why", shown(s, "/status"));
    check(ts_store_dispatch(t, "{\"type\":\"inc\"}") == TS_OK && ts_store_dispatch(t, "{\"type\":\"inc\"}") == TS_OK,
          "max_pending 2: two dispatches wait", ts_last_error());
    /* Until t's sender has failed once (at once on Redis: the connection is
     * refused; after timeout_ms on NATS, whose remaining server takes the
     * append but no quorum stores it). */
    until = now_s() + 5;
    while (now_s() < until && (status_of(t, "pending") < 0 || !text_has(t, "/status/last_error", scheme)))
        usleep(20000);
    status = ts_store_dispatch(t, "{\"type\":\"inc\"}");
    check(status == TS_E_IO && strstr(ts_last_error(), "\"max_pending\" (2)") && strstr(ts_last_error(), scheme),
          "max_pending 2: the third is refused with TS_E_IO, the bound and the log's last failure", ts_last_error());
    check(number_at(t, "/counter") == 3, "max_pending: the refused one is not applied (1 + 2)", NULL);
    check(system(start) == 0, "the server starts again", start);
    check(confirmed_at(s, 6, 15) && confirmed_at(t, 6, 15), "server back: everything confirmed, 6 actions", NULL);
    check(number_at(s, "/counter") == 6 && number_at(t, "/counter") == 6, "server back: counter 6 on both", NULL);
    /* (On NATS the client may have stayed on the server that ran on: no
     * reconnection to count then.) */
    check((strcmp(scheme, "nats://") == 0 || status_of(s, "reconnections") >= 1) &&
              (status_of(s, "pending") == 0 && text_has(s, "/status/connected", "true")),
          "server back: the status counts the reconnections and says connected", shown(s, "/status"));
    check(status_of(s, "lag") == 0 && status_of(s, "head") == status_of(s, "seq") && status_of(s, "seq") >= 2,
          "server back: lag 0, the log's head applied", shown(s, "/status"));
    check(ts_store_dispatch(t, "{\"type\":\"inc\"}") == TS_OK, "max_pending: dispatches go on once confirmed",
          ts_last_error());
    check(confirmed_at(s, 7, 5) && log_count("offline") == 7, "each action in the log once (a new replica counts 7)",
          NULL);
    ts_store_destroy(s);
    ts_store_destroy(t);
}

/* An append sent, the link stalled past timeout_ms (the answer is lost),
 * sent again on a new connection: the log holds it once. */
static void resend(void) {
    ts_store *x = replica(proxy_url, "resend", 1000, "\"mode\":\"optimistic\",\"timeout_ms\":300");
    char detail[200];
    check(ts_store_dispatch(x, "{\"type\":\"inc\"}") == TS_OK && settled(x, 1, 5), "resend: first action confirmed",
          ts_last_error());
    check(kill(proxy_pid, SIGSTOP) == 0, "resend: the link stalls", NULL);
    check(ts_store_dispatch(x, "{\"type\":\"inc\"}") == TS_OK, "resend: a dispatch on the stalled link", NULL);
    usleep(1500000); /* the append times out (300 ms), is sent again, times out ... */
    check(kill(proxy_pid, SIGCONT) == 0, "resend: the link comes back", NULL);
    check(settled(x, 0, 10), "resend: confirmed", NULL);
    check(status_of(x, "reconnections") >= 1, "resend: it did reconnect", NULL);
    snprintf(detail, sizeof detail, "counter %lld, seq %lld, a new replica counts %lld", number_at(x, "/counter"),
             status_of(x, "seq"), log_count("resend"));
    check(number_at(x, "/counter") == 2 && status_of(x, "seq") == 2 && log_count("resend") == 2,
          "resend: the log holds the action once (2 entries, counter 2)", detail);
    ts_store_destroy(x);
}

/* A middleware after the plugin: counts the reports that pass it. */
static ts_status count_dropped(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)store;
    if (strcmp(action->type, "@@replicate/dropped") == 0) (*(int *)ctx)++;
    return next(action->json);
}

/* y takes the last item while its link is stalled; x takes it meanwhile,
 * first in the log: y's take is refused where the log put it, on every
 * replica, and y is told. */
static void dropped(void) {
    int seen = 0;
    ts_store *y = replica(proxy_url, "drop", 1, "\"mode\":\"optimistic\",\"timeout_ms\":300");
    ts_store *x = replica(url, "drop", 1, "");
    check(ts_store_add_middleware(y, "after", count_dropped, &seen) == TS_OK, "drop: a middleware after the plugin",
          NULL);
    check(kill(proxy_pid, SIGSTOP) == 0, "drop: y's link stalls", NULL);
    check(ts_store_dispatch(y, "{\"type\":\"take\",\"payload\":\"y1\"}") == TS_OK && number_at(y, "/stock") == 0,
          "drop: y's take applies at once (stock 0 on y, pending)", ts_last_error());
    check(ts_store_dispatch(x, "{\"type\":\"take\",\"payload\":\"x1\"}") == TS_OK, "drop: x's take goes first",
          ts_last_error());
    usleep(400000);
    check(kill(proxy_pid, SIGCONT) == 0, "drop: y's link comes back", NULL);
    check(settled(y, 2, 10), "drop: y confirmed both entries", NULL);
    check(counter_becomes(x, 1, 5) && number_at(y, "/counter") == 1 && number_at(y, "/stock") == 0 &&
              number_at(x, "/stock") == 0,
          "drop: both replicas: x's take applied, y's refused (counter 1, stock 0)", NULL);
    check(number_at(y, "/dropped") == 1 && status_of(y, "dropped") == 1, "drop: y heard of one dropped action", NULL);
    check(text_has(y, "/last_dropped/action", "\"payload\":\"y1\"") &&
              text_has(y, "/last_dropped/reason", "out of stock") &&
              text_has(y, "/last_dropped/status", "TS_E_REDUCER"),
          "drop: the report carries the action, TS_E_REDUCER and the reducer's reason", shown(y, "/last_dropped"));
    check(seen == 1, "drop: the middleware after the plugin saw the report once", NULL);
    check(number_at(x, "/dropped") == 0, "drop: x, whose action went through, heard of nothing", NULL);
    ts_store_destroy(y);
    ts_store_destroy(x);
}

/* y's appends reach the log but y reads nothing back (the proxy loses its
 * answers) while x appends enough for its snapshots to trim y's entries
 * away: y then loads a snapshot that covers its pending actions, which must
 * leave the pending list and not be applied again. */
static void covered(void) {
    ts_store *y = replica(proxy_url, "cover", 0, "\"mode\":\"optimistic\",\"timeout_ms\":300");
    ts_store *x = replica(url, "cover", 0, "\"snapshot_every\":2");
    int i, ok = 1;
    long long appended;
    double until;
    char detail[200];
    check(ts_store_dispatch(y, "{\"type\":\"inc\"}") == TS_OK && settled(y, 1, 5), "cover: y's first action confirmed",
          ts_last_error());
    check(kill(proxy_pid, SIGUSR1) == 0, "cover: the proxy loses y's answers", NULL);
    ok &= ts_store_dispatch(y, "{\"type\":\"inc\"}") == TS_OK;
    ok &= ts_store_dispatch(y, "{\"type\":\"inc\"}") == TS_OK;
    check(ok && number_at(y, "/counter") == 3, "cover: two more from y, pending", NULL);
    /* The sender's first append goes through (one batch, or the first of
     * two); its answer is lost, and so is every answer after it (a new
     * connection's SCRIPT LOAD too): nothing more is appended meanwhile. */
    until = now_s() + 10;
    while (log_count("cover") < 2 && now_s() < until) usleep(50000);
    usleep(300000);
    appended = log_count("cover") - 1;
    check(appended >= 1, "cover: y's appends reached the log (their answers did not)", NULL);
    for (i = 0; i < 10; i++) ok &= ts_store_dispatch(x, "{\"type\":\"inc\"}") == TS_OK;
    check(ok, "cover: x appends 10 more, a snapshot every 2 (the stream trimmed past y's)", ts_last_error());
    check(kill(proxy_pid, SIGUSR2) == 0, "cover: y's answers flow again", NULL);
    check(settled(y, 13, 15), "cover: y catches up through the snapshot, nothing pending", NULL);
    usleep(300000);
    snprintf(detail, sizeof detail, "y %lld, x %lld, covered %lld of the %lld appended", number_at(y, "/counter"),
             number_at(x, "/counter"), status_of(y, "covered"), appended);
    check(number_at(y, "/counter") == 13 && number_at(x, "/counter") == 13 && status_of(y, "covered") == appended,
          "cover: y's actions counted once (13 on both); those the trimmed entries held covered by the snapshot", detail);
    ts_store_destroy(y);
    ts_store_destroy(x);
}

/* A listener that dispatches once, nested, when the counter reaches 2. */
static int nested_done;
static void nested_listener(ts_store *store, void *ctx) {
    (void)ctx;
    if (!nested_done && number_at(store, "/counter") == 2) {
        nested_done = 1;
        (void)ts_store_dispatch(store, "{\"type\":\"inc\"}");
    }
}

static void nested(void) {
    uint64_t token;
    ts_store *n = new_store(0), *m = replica(url, "nested-opt", 0, "\"mode\":\"optimistic\"");
    char config[300];
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"stream\":\"nested-opt\",\"mode\":\"optimistic\"}", url);
    check(ts_store_subscribe(n, NULL, nested_listener, NULL, &token) == TS_OK &&
              ts_store_load_plugin(n, plugin, config) == TS_OK,
          "nested: a replica whose listener dispatches", ts_last_error());
    check(ts_store_dispatch(m, "{\"type\":\"inc\"}") == TS_OK && ts_store_dispatch(m, "{\"type\":\"inc\"}") == TS_OK,
          "nested: two dispatches from the other", NULL);
    check(counter_becomes(n, 3, 5) && counter_becomes(m, 3, 5) && settled(n, 3, 5) && settled(m, 3, 5),
          "nested: 3 on both", NULL);
    usleep(200000);
    check(number_at(n, "/counter") == 3 && number_at(m, "/counter") == 3 && log_count("nested-opt") == 3,
          "nested: the listener's dispatch applied once everywhere", NULL);
    ts_store_destroy(n);
    ts_store_destroy(m);
}

/* Destroyed right after a dispatch: the sender's last attempt appends it. */
static void flush_on_destroy(void) {
    ts_store *d = replica(url, "flush", 0, "\"mode\":\"optimistic\"");
    int i, ok = 1;
    for (i = 0; i < 50; i++) ok &= ts_store_dispatch(d, "{\"type\":\"inc\"}") == TS_OK;
    ts_store_destroy(d);
    check(ok && log_count("flush") == 50, "destroy: the 50 actions dispatched just before are in the log", NULL);
}

static void ordered_status(void) {
    ts_store *o = replica(url, "ordered-status", 0, "");
    int ok;
    check(ts_store_dispatch(o, "{\"type\":\"inc\"}") == TS_OK && ts_store_dispatch(o, "{\"type\":\"inc\"}") == TS_OK,
          "ordered: two dispatches", ts_last_error());
    ok = status_of(o, "seq") == 2 && status_of(o, "pending") == 0 && status_of(o, "confirmed") == 2 &&
         text_has(o, "/status/mode", "ordered");
    check(ok, "ordered: the status on demand (mode, seq 2, confirmed 2)", shown(o, "/status"));
    check(log_count("ordered-status") == 2, "ordered: the status action is not appended", NULL);
    ts_store_destroy(o);
}

/* Whether SCENARIOS (argv[8]; none: all) names `name`. */
static int chosen(int argc, char **argv, const char *name) {
    const char *p;
    size_t n = strlen(name);
    if (argc < 9) return 1;
    for (p = strstr(argv[8], name); p; p = strstr(p + 1, name))
        if ((p == argv[8] || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' ')) return 1;
    return 0;
}

int main(int argc, char **argv) {
    const char *colon;
    if (argc < 7 || argc > 9) {
        fprintf(stderr, "usage: optimistic PLUGIN URL STOP_CMD START_CMD PROXY_URL PROXY_PID [EXTRA [SCENARIOS]]\n");
        return 2;
    }
    plugin = argv[1];
    url = argv[2];
    proxy_url = argv[5];
    proxy_pid = (pid_t)atol(argv[6]);
    if (argc > 7) extra_config = argv[7];
    colon = strstr(url, "://");
    snprintf(scheme, sizeof scheme, "%.*s", colon ? (int)(colon - url) + 3 : 0, url);
    if (chosen(argc, argv, "configs")) configs();
    if (chosen(argc, argv, "offline")) offline(argv[3], argv[4]);
    if (chosen(argc, argv, "resend")) resend();
    if (chosen(argc, argv, "dropped")) dropped();
    if (chosen(argc, argv, "covered")) covered();
    if (chosen(argc, argv, "nested")) nested();
    if (chosen(argc, argv, "flush")) flush_on_destroy();
    if (chosen(argc, argv, "ordered_status")) ordered_status();
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
