/*
 * bench.c - the C workloads of `make bench`: the C face and the plugin host
 * of libturnstate, measured from a C program.
 *
 *   bench [options] [workload...]      workloads: c1 c2 c3 c4 c5 c6 memory startup big
 *                                      cpatch cappend cunhandled
 *                                      (none: all of them)
 *   --runs R          timed runs per workload (default 7)
 *   --scale F         multiply every loop count by F (default 1; 0.01 for a smoke test)
 *   --plugin-dir DIR  where pass-a.so, pass-b.so, pass-c.so are (C3)
 *   --startup BIN     the start-up program (startup.c) to time with fork/exec
 *   --startup-plugin SO   the plugin it loads
 *   --inspector SO    the inspector plugin (C1i; default: build/plugins/inspector.so,
 *                     found from --plugin-dir build/bench/plugins)
 *   --big-mb N        the size of the state of `big` in MB (default 100)
 *
 * Output, one line per timed run, for Benchmarks/report.py:
 *   RESULT <TAB> workload-id <TAB> value <TAB> unit
 * and INFO lines (what was checked). Nothing here asserts a timing: a failed
 * store call or a lost update exits non-zero, a slow run only prints.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_callbacks.h"

#include "turnstate_plugin.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Under callgrind (Benchmarks/callgrind.py: --collect-atstart=no), only the
 * measured loops are counted; elsewhere these macros do nothing. */
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_TOGGLE_COLLECT
#endif

static int runs = 7;
static double scale = 1.0;
static const char *plugin_dir = NULL;
static const char *startup_bin = NULL;
static const char *startup_plugin = NULL;
static const char *inspector_plugin = NULL;

/* ---- Helpers ------------------------------------------------------------ */

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static long scaled(long n) {
    long s = (long)((double)n * scale);
    return s < 1 ? 1 : s;
}

static void die(const char *what, ts_status status) {
    fprintf(stderr, "bench: %s failed: %s: %s\n", what, ts_status_name(status), ts_last_error());
    exit(1);
}

#define CHECK(call)                                 \
    do {                                            \
        ts_status check_status_ = (call);           \
        if (check_status_ != TS_OK) die(#call, check_status_); \
    } while (0)

/* Whether the next measured loop is counted by callgrind (C4 and C5 also
 * time loops that are not their own). */
static int counting = 1;

/* Counts `ops` operations of workload `id` under callgrind: the loop between
 * count_start() and count_stop() (a "COUNTED id ops" line for callgrind.py). */
static void count_start(void) {
    if (counting) CALLGRIND_TOGGLE_COLLECT;
}

static void count_stop(const char *id, long ops) {
    if (!counting) return;
    CALLGRIND_TOGGLE_COLLECT;
#ifdef RUNNING_ON_VALGRIND
    if (!RUNNING_ON_VALGRIND) return;
    CALLGRIND_DUMP_STATS_AT(id); /* a file per loop, named by its id */
#endif
    printf("COUNTED\t%s\t%ld\n", id, ops);
}

static void result(const char *id, double value, const char *unit) {
    printf("RESULT\t%s\t%.3f\t%s\n", id, value, unit);
    fflush(stdout);
}

static void info(const char *format, ...) {
    va_list args;
    va_start(args, format);
    printf("INFO\t");
    vprintf(format, args);
    printf("\n");
    fflush(stdout);
    va_end(args);
}

static long long read_count(ts_store *store) {
    char *text;
    CHECK(ts_store_get_state(store, "/count", &text));
    long long value = bench_parse_ll(text);
    ts_free(text);
    return value;
}

/* ---- Store shapes ------------------------------------------------------- */

static unsigned long long listener_calls;

/* C1: a counter slice, one listener (called after every dispatch). */
static ts_store *counter_store(const char *initial_state) {
    ts_store *store;
    uint64_t token;
    CHECK(ts_store_create(initial_state, &store));
    CHECK(ts_store_add_reducer(store, "count", bench_counter_reducer, NULL));
    CHECK(ts_store_subscribe(store, NULL, bench_counting_listener, &listener_calls, &token));
    return store;
}

static ts_status pass_through(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)store;
    (void)ctx;
    return next(action->json);
}

/* Times `n` dispatches of the counter action after a warm-up of n/10;
 * checks that each one counted. Returns ns per dispatch. */
static const char *counted_id = "?";

static double time_dispatches(ts_store *store, long n) {
    for (long i = 0; i < n / 10; i++) CHECK(ts_store_dispatch(store, BENCH_ADD_ACTION));
    long long before = read_count(store);
    unsigned long long calls_before = listener_calls;
    count_start();
    double start = now_ns();
    for (long i = 0; i < n; i++) {
        ts_status status = ts_store_dispatch(store, BENCH_ADD_ACTION);
        if (status != TS_OK) die("ts_store_dispatch", status);
    }
    double elapsed = now_ns() - start;
    count_stop(counted_id, n);
    long long after = read_count(store);
    if (after - before != n || listener_calls - calls_before != (unsigned long long)n) {
        fprintf(stderr, "bench: %ld dispatches moved the count by %lld and called the listener %llu times\n", n,
                after - before, listener_calls - calls_before);
        exit(1);
    }
    return elapsed / (double)n;
}

static void run_dispatch_workload(const char *id, ts_store *store, long n) {
    counted_id = id;
    for (int r = 0; r < runs; r++) result(id, time_dispatches(store, n), "ns");
}

/* ---- C1, C2, C3 --------------------------------------------------------- */

static void c1(void) {
    ts_store *store = counter_store(NULL);
    run_dispatch_workload("C1", store, scaled(200000));
    ts_store_destroy(store);
}

static void c2(void) {
    ts_store *store = counter_store(NULL);
    CHECK(ts_store_add_middleware(store, "pass-1", pass_through, NULL));
    CHECK(ts_store_add_middleware(store, "pass-2", pass_through, NULL));
    CHECK(ts_store_add_middleware(store, "pass-3", pass_through, NULL));
    run_dispatch_workload("C2", store, scaled(200000));
    ts_store_destroy(store);
}

static void c3(void) {
    if (plugin_dir == NULL) {
        fprintf(stderr, "bench: c3 needs --plugin-dir\n");
        exit(2);
    }
    ts_store *store = counter_store(NULL);
    static const char *const names[] = {"pass-a.so", "pass-b.so", "pass-c.so"};
    for (int i = 0; i < 3; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", plugin_dir, names[i]);
        CHECK(ts_store_load_plugin(store, path, NULL));
    }
    run_dispatch_workload("C3", store, scaled(200000));
    ts_store_destroy(store);
}

/* C1i: what the inspector plugin (Plugins/inspector) costs with no browser
 * connected. Three stores of the C1 shape in one process, timed in turn:
 * none, one pass-through plugin (what any plugin costs the host), the
 * inspector (which also records each action in its ring). */
/* The inspector plugin: --inspector, else build/plugins/inspector.so beside
 * the bench plugins' folder (build/bench/plugins). */
static const char *inspector_path(void) {
    static char path[4096];
    if (inspector_plugin) return inspector_plugin;
    if (plugin_dir == NULL) {
        fprintf(stderr, "bench: c1i needs --inspector SO (or --plugin-dir build/bench/plugins)\n");
        exit(2);
    }
    snprintf(path, sizeof path, "%s/../../plugins/inspector.so", plugin_dir);
    return path;
}

static void c1i(void) {
    if (plugin_dir == NULL) {
        fprintf(stderr, "bench: c1i needs --plugin-dir\n");
        exit(2);
    }
    ts_store *base = counter_store(NULL);
    ts_store *pass = counter_store(NULL);
    ts_store *inspected = counter_store(NULL);
    char path[4096];
    snprintf(path, sizeof path, "%s/pass-a.so", plugin_dir);
    CHECK(ts_store_load_plugin(pass, path, NULL));
    CHECK(ts_store_load_plugin(inspected, inspector_path(), "{\"port\":0,\"history\":1000}"));
    long n = scaled(200000);
    for (int r = 0; r < runs; r++) {
        counted_id = "C1i-base";
        double b = time_dispatches(base, n);
        counted_id = "C1i-pass";
        double p = time_dispatches(pass, n);
        counted_id = "C1i";
        double i = time_dispatches(inspected, n);
        result("C1i-base", b, "ns");
        result("C1i-pass", p, "ns");
        result("C1i", i, "ns");
        result("C1i-ratio", i / b, "x");
        result("C1i-vs-pass", i / p, "x");
    }
    ts_store_destroy(inspected);
    ts_store_destroy(pass);
    ts_store_destroy(base);
}

/* C1i-own: the inspector's own work per action, without the host: its run()
 * called directly with a `next` that does nothing, on a stand-in table. */
static ts_status own_next(const char *json) { return json ? TS_OK : TS_E_ARGUMENT; }
static ts_status own_dispatch(const char *json) { (void)json; return TS_OK; }
static ts_status own_get_state(const char *pointer, char **out) {
    (void)pointer;
    *out = strdup("{\"count\":0}");
    return *out ? TS_OK : TS_E_NOMEM;
}
static void own_free(void *p) { free(p); }
static ts_status own_fail(ts_status status, const char *message) { (void)message; return status; }
static const char *own_status_name(ts_status status) { return status == TS_OK ? "TS_OK" : "TS_E_OTHER"; }

static void c1i_own(void) {
    const char *inspector = inspector_path();
    void *so = dlopen(inspector, RTLD_NOW | RTLD_LOCAL);
    ts_plugin_entry_fn entry = NULL;
    void *symbol = so ? dlsym(so, TS_PLUGIN_ENTRY_SYMBOL) : NULL;
    memcpy(&entry, &symbol, sizeof symbol);
    const ts_plugin *plugin = entry ? entry(TS_PLUGIN_ABI_VERSION) : NULL;
    if (plugin == NULL) {
        fprintf(stderr, "bench: %s is not a plugin (%s)\n", inspector, so ? "no entry" : dlerror());
        exit(1);
    }
    ts_store_api api = {sizeof(ts_store_api), own_dispatch, own_get_state, own_free, own_fail,
                        own_dispatch, own_status_name, own_dispatch, NULL, own_dispatch};
    void *self = NULL;
    char *why = NULL;
    if (plugin->create("{\"port\":0,\"history\":1000}", &api, &self, &why) != TS_OK) {
        fprintf(stderr, "bench: inspector create: %s\n", why ? why : "failed");
        exit(1);
    }
    ts_action action = {"counter/add", "1", BENCH_ADD_ACTION};
    long n = scaled(2000000);
    for (long i = 0; i < n / 10; i++) plugin->run(&api, own_next, &action, self);
    for (int r = 0; r < runs; r++) {
        count_start();
        double start = now_ns();
        for (long i = 0; i < n; i++) {
            if (plugin->run(&api, own_next, &action, self) != TS_OK) die("inspector run", TS_E_PLUGIN);
        }
        double elapsed = now_ns() - start;
        count_stop("C1i-own", n);
        result("C1i-own", elapsed / (double)n, "ns");
    }
    plugin->destroy(self);
}

/* ---- C4, C5: a 10 MB document in another slice --------------------------- */

#define DOC_BYTES (10L * 1024 * 1024)

/* {"doc": {"items": [{"id": 0, "name": "item-000000", ...}, ...]}} of at
 * least 10 MB; *items gets the number of items. */
static char *big_state(long *items) {
    size_t capacity = (size_t)DOC_BYTES + 4096;
    char *text = malloc(capacity);
    if (text == NULL) {
        perror("malloc");
        exit(1);
    }
    size_t at = (size_t)snprintf(text, capacity, "{\"doc\":{\"title\":\"a large document\",\"items\":[");
    long i = 0;
    while (at < (size_t)DOC_BYTES) {
        at += (size_t)snprintf(text + at, capacity - at,
                               "%s{\"id\":%ld,\"name\":\"item-%06ld\",\"done\":%s,\"tags\":[\"red\",\"green\"],"
                               "\"note\":\"the quick brown fox jumps over the dog\"}",
                               i ? "," : "", i, i, (i % 3) ? "false" : "true");
        i++;
    }
    snprintf(text + at, capacity - at, "]}}");
    *items = i;
    return text;
}

static ts_store *big_store(long *items) {
    char *initial = big_state(items);
    ts_store *store = counter_store(initial);
    CHECK(ts_store_add_reducer(store, "doc", bench_unchanged_reducer, NULL));
    info("C4/C5 state: doc slice of %zu bytes, %ld items", strlen(initial), *items);
    free(initial);
    return store;
}

/* C4 runs alternate with runs of the C1 shape in the same process (C4-C1),
 * so that the ratio C4 / C1 of each pair does not depend on what else the
 * machine did between two processes. */
static void c4(void) {
    long items;
    ts_store *small = counter_store(NULL);
    ts_store *store = big_store(&items);
    long n = scaled(200000);
    counted_id = "C4";
    for (int r = 0; r < runs; r++) {
        counting = 0;
        double base = time_dispatches(small, n);
        counting = 1;
        double big = time_dispatches(store, n);
        result("C4-C1", base, "ns");
        result("C4", big, "ns");
        result("C4-ratio", big / base, "x");
    }
    ts_store_destroy(store);
    ts_store_destroy(small);
}

static double time_get_state(ts_store *store, const char *pointer, long n, size_t *length) {
    char *text;
    CHECK(ts_store_get_state(store, pointer, &text)); /* warm: parse / cache */
    *length = strlen(text);
    ts_free(text);
    count_start();
    double start = now_ns();
    for (long i = 0; i < n; i++) {
        ts_status status = ts_store_get_state(store, pointer, &text);
        if (status != TS_OK) die("ts_store_get_state", status);
        ts_free(text);
    }
    double elapsed = now_ns() - start;
    count_stop(counted_id, n);
    return elapsed / (double)n;
}

static void c5(void) {
    long items;
    ts_store *store = big_store(&items);
    CHECK(ts_store_dispatch(store, BENCH_ADD_ACTION));
    char pointer[64];
    snprintf(pointer, sizeof pointer, "/doc/items/%ld/name", items / 2);
    size_t length;

    /* The first look-up below the big slice parses it once (then kept). */
    char *text;
    double start = now_ns();
    CHECK(ts_store_get_state(store, pointer, &text));
    double first = now_ns() - start;
    info("C5 %s = %s; first look-up (parses the 10 MB slice once) %.1f ms", pointer, text, first / 1e6);
    ts_free(text);

    counted_id = "C5-small";
    for (int r = 0; r < runs; r++) result("C5-small", time_get_state(store, pointer, scaled(200000), &length), "ns");
    counting = 0;
    for (int r = 0; r < runs; r++) result("C5-count", time_get_state(store, "/count", scaled(200000), &length), "ns");
    for (int r = 0; r < runs; r++)
        result("C5-whole", time_get_state(store, NULL, scaled(20) < 3 ? 3 : scaled(20), &length) / 1e3, "us");
    info("C5 whole state: %zu bytes", length);
    /* The whole state after a change: one dispatch, then one read. */
    for (int r = 0; r < runs; r++) {
        long n = scaled(20) < 3 ? 3 : scaled(20);
        double total = 0;
        for (long i = 0; i < n; i++) {
            CHECK(ts_store_dispatch(store, BENCH_ADD_ACTION));
            start = now_ns();
            CHECK(ts_store_get_state(store, NULL, &text));
            total += now_ns() - start;
            ts_free(text);
        }
        result("C5-whole-changed", total / (double)n / 1e3, "us");
    }
    ts_store_destroy(store);
}

/* ---- C6: four threads --------------------------------------------------- */

#define C6_THREADS 4

typedef struct {
    ts_store *store;
    long n;
    pthread_barrier_t *barrier;
    ts_status status;
} c6_worker;

static void *c6_run(void *argument) {
    c6_worker *worker = argument;
    worker->status = TS_OK;
    pthread_barrier_wait(worker->barrier);
    count_start(); /* callgrind's collection state is per thread */
    for (long i = 0; i < worker->n; i++) {
        ts_status status = ts_store_dispatch(worker->store, BENCH_ADD_ACTION);
        if (status != TS_OK) {
            worker->status = status;
            fprintf(stderr, "bench: C6 dispatch failed: %s: %s\n", ts_status_name(status), ts_last_error());
            break;
        }
    }
    if (counting) CALLGRIND_TOGGLE_COLLECT;
    return NULL;
}

static void c6(void) {
    ts_store *store = counter_store(NULL);
    long per_thread = scaled(50000);
    long long lost_total = 0;
    for (int r = 0; r < runs; r++) {
        pthread_barrier_t barrier;
        pthread_barrier_init(&barrier, NULL, C6_THREADS + 1);
        pthread_t threads[C6_THREADS];
        c6_worker workers[C6_THREADS];
        long long before = read_count(store);
        unsigned long long calls_before = listener_calls;
        for (int t = 0; t < C6_THREADS; t++) {
            workers[t] = (c6_worker){store, per_thread, &barrier, TS_OK};
            if (pthread_create(&threads[t], NULL, c6_run, &workers[t]) != 0) {
                perror("pthread_create");
                exit(1);
            }
        }
        pthread_barrier_wait(&barrier);
        double start = now_ns();
        for (int t = 0; t < C6_THREADS; t++) pthread_join(threads[t], NULL);
        double elapsed = now_ns() - start;
#ifdef RUNNING_ON_VALGRIND
        if (RUNNING_ON_VALGRIND) {
            CALLGRIND_DUMP_STATS_AT("C6");
            printf("COUNTED\tC6\t%ld\n", per_thread * C6_THREADS);
        }
#endif
        pthread_barrier_destroy(&barrier);
        for (int t = 0; t < C6_THREADS; t++)
            if (workers[t].status != TS_OK) exit(1);
        long long total = (long long)per_thread * C6_THREADS;
        long long counted = read_count(store) - before;
        long long notified = (long long)(listener_calls - calls_before);
        long long lost = total - counted;
        lost_total += lost;
        result("C6", (double)total / (elapsed / 1e9) / 1e6, "M/s");
        result("C6-ns", elapsed / (double)total, "ns");
        result("C6-lost", (double)lost, "updates");
        if (lost != 0 || notified != total) {
            fprintf(stderr, "bench: C6 lost updates: %lld dispatched, %lld counted, %lld notified\n", total, counted,
                    notified);
        }
    }
    info("C6: %d threads x %ld dispatches per run, %d runs, %lld updates lost", C6_THREADS, per_thread, runs,
         lost_total);
    ts_store_destroy(store);
}

/* ---- Patches, appends and actions no reducer handles (issue 19) --------- */

/* A todo list {"items":[{"id":0,"title":"todo item number 0","done":false,
 * "tags":["home","later"]}, ...]} of `items` items (about 80 bytes each, so
 * 100,000 items are about 8 MB). malloc'ed. */
static char *todo_slice(long items) {
    size_t capacity = (size_t)items * 96 + 64;
    char *text = malloc(capacity);
    if (text == NULL) {
        perror("malloc");
        exit(1);
    }
    size_t at = (size_t)snprintf(text, capacity, "{\"items\":[");
    for (long i = 0; i < items; i++) {
        at += (size_t)snprintf(text + at, capacity - at,
                               "%s{\"id\":%ld,\"title\":\"todo item number %ld\",\"done\":false,\"tags\":[\"home\",\"later\"]}",
                               i ? "," : "", i, i);
    }
    snprintf(text + at, capacity - at, "]}");
    return text;
}

/* The patch reducer of "todos" (ts_store_add_patch_reducer, for "todos/"
 * then "*"): at init, the list of *(long *)ctx items; "todos/toggle"
 * {"id": N} reads the payload and the item's "done" with the getters and
 * answers with one replace; "todos/add" {"title": ...} appends the payload
 * with "add" at "/items/-". */
static char *todo_patch_reducer(const ts_json *slice, const ts_action *action, void *ctx) {
    if (slice == NULL) return todo_slice(*(long *)ctx);
    char patch[160];
    if (strcmp(action->type, "todos/toggle") == 0) {
        int64_t id;
        int done;
        char pointer[48];
        ts_json value;
        if (ts_json_get_int(action->payload, "/id", &id) != TS_OK) goto fail;
        snprintf(pointer, sizeof pointer, "/items/%lld/done", (long long)id);
        if (ts_json_find(slice, pointer, &value) != TS_OK || ts_json_bool(&value, &done) != TS_OK) goto fail;
        snprintf(patch, sizeof patch, "[{\"op\":\"replace\",\"path\":\"%s\",\"value\":%s}]", pointer,
                 done ? "false" : "true");
        if (ts_reducer_patch(patch) != TS_OK) goto fail;
    } else if (strcmp(action->type, "todos/add") == 0) {
        /* The payload is small and minified: one patch around it. */
        static const char head[] = "[{\"op\":\"add\",\"path\":\"/items/-\",\"value\":";
        size_t length = strlen(action->payload), head_length = sizeof head - 1;
        char *text = malloc(head_length + length + 3);
        if (text == NULL) return NULL;
        memcpy(text, head, head_length);
        memcpy(text + head_length, action->payload, length);
        memcpy(text + head_length + length, "}]", 3);
        ts_status status = ts_reducer_patch(text);
        free(text);
        if (status != TS_OK) goto fail;
    }
    return NULL;
fail:
    ts_reducer_fail(ts_last_error());
    return NULL;
}

static const char *const todo_types[] = {"todos/" "*", NULL};

/* A store of the C1 shape (the counter, one listener) plus "todos" of
 * `items` items, owned by the patch reducer. */
static ts_store *todo_store(long *items) {
    ts_store *store = counter_store(NULL);
    CHECK(ts_store_add_patch_reducer(store, "todos", todo_types, todo_patch_reducer, items));
    return store;
}

/* Times `n` dispatches of actions[i % count]; every one must succeed and
 * call the listener. Returns ns per dispatch. */
static double time_actions(ts_store *store, char **actions, int count, long n) {
    unsigned long long calls_before = listener_calls;
    count_start();
    double start = now_ns();
    for (long i = 0; i < n; i++) {
        ts_status status = ts_store_dispatch(store, actions[i % count]);
        if (status != TS_OK) die("ts_store_dispatch", status);
    }
    double elapsed = now_ns() - start;
    count_stop(counted_id, n);
    if (listener_calls - calls_before != (unsigned long long)n) {
        fprintf(stderr, "bench: %ld dispatches called the listener %llu times\n", n, listener_calls - calls_before);
        exit(1);
    }
    return elapsed / (double)n;
}

enum { TOGGLE_ACTIONS = 16 };

/* The item that toggle action i names: ids spread over the list. */
static long toggle_id(int i, long items) { return (long)((i * items) / TOGGLE_ACTIONS + i) % items; }

static void toggle_actions(long items, char **actions) {
    for (int i = 0; i < TOGGLE_ACTIONS; i++) {
        actions[i] = malloc(64);
        if (actions[i] == NULL) exit(1);
        snprintf(actions[i], 64, "{\"type\":\"todos/toggle\",\"payload\":{\"id\":%ld}}", toggle_id(i, items));
    }
}

/* After `runs` loops of `n` toggles, item toggle_id(0) is done if it was
 * toggled an odd number of times: checks it. */
static void check_toggled(ts_store *store, long items, long n) {
    long id = toggle_id(0, items), times = 0;
    for (int i = 0; i < TOGGLE_ACTIONS; i++) {
        if (toggle_id(i, items) != id) continue;
        times += n / TOGGLE_ACTIONS + (i < n % TOGGLE_ACTIONS ? 1 : 0);
    }
    times *= runs;
    char pointer[64], *text;
    snprintf(pointer, sizeof pointer, "/todos/items/%ld/done", id);
    CHECK(ts_store_get_state(store, pointer, &text));
    const char *want = (times % 2) ? "true" : "false";
    if (strcmp(text, want) != 0) {
        fprintf(stderr, "bench: %s is %s after %ld toggles, expected %s\n", pointer, text, times, want);
        exit(1);
    }
    ts_free(text);
}

/* CP: toggling one item of a 10-item and of a 100,000-item list, runs
 * alternating in one process (CP-ratio: pairs of runs). */
static void cpatch(void) {
    long small_items = 10, big_items = 100000;
    ts_store *small = todo_store(&small_items);
    ts_store *big = todo_store(&big_items);
    char *small_actions[TOGGLE_ACTIONS], *big_actions[TOGGLE_ACTIONS];
    toggle_actions(small_items, small_actions);
    toggle_actions(big_items, big_actions);
    char *text;
    CHECK(ts_store_get_state(big, "/todos", &text));
    info("CP: the 100,000-item slice is %zu bytes", strlen(text));
    ts_free(text);
    long n_small = scaled(100000), n_big = scaled(2000) < 16 ? 16 : scaled(2000);
    for (int r = 0; r < runs; r++) {
        counted_id = "CP-10";
        double a = time_actions(small, small_actions, TOGGLE_ACTIONS, n_small);
        counted_id = "CP-100k";
        double b = time_actions(big, big_actions, TOGGLE_ACTIONS, n_big);
        result("CP-10", a, "ns");
        result("CP-100k", b, "ns");
        result("CP-ratio", b / a, "x");
    }
    check_toggled(small, small_items, n_small);
    check_toggled(big, big_items, n_big);
    for (int i = 0; i < TOGGLE_ACTIONS; i++) {
        free(small_actions[i]);
        free(big_actions[i]);
    }
    ts_store_destroy(big);
    ts_store_destroy(small);
}

/* CA: appending to a 10-item and to a 100,000-item list. Each run starts
 * from fresh stores (made outside the timed loop) and appends n items. */
static void cappend(void) {
    long small_items = 10, big_items = 100000;
    char *action[1] = {"{\"type\":\"todos/add\",\"payload\":{\"id\":-1,\"title\":\"a new todo\",\"done\":false,"
                       "\"tags\":[]}}"};
    long n_small = scaled(20000), n_big = scaled(2000) < 16 ? 16 : scaled(2000);
    long n = n_small < n_big ? n_small : n_big;
    for (int r = 0; r < runs; r++) {
        ts_store *small = todo_store(&small_items);
        ts_store *big = todo_store(&big_items);
        counted_id = "CA-10";
        double a = time_actions(small, action, 1, n);
        counted_id = "CA-100k";
        double b = time_actions(big, action, 1, n);
        char *text;
        CHECK(ts_store_get_state(big, "/todos/items/100000/title", &text));
        if (strcmp(text, "\"a new todo\"") != 0) {
            fprintf(stderr, "bench: the appended item reads %s\n", text);
            exit(1);
        }
        ts_free(text);
        result("CA-10", a, "ns");
        result("CA-100k", b, "ns");
        result("CA-ratio", b / a, "x");
        ts_store_destroy(big);
        ts_store_destroy(small);
    }
    info("CA: %ld appends per run to each list", n);
}

/* CU: an action that no reducer's filter matches (the counter reducer takes
 * "counter/" then "*" only, the todos reducer "todos/" then "*"), with the
 * 100,000-item slice present, against C1 in the same process. */
static void cunhandled(void) {
    long big_items = 100000;
    ts_store *c1_store = counter_store(NULL);
    ts_store *store;
    uint64_t token;
    static const char *const counter_types[] = {"counter/" "*", NULL};
    CHECK(ts_store_create(NULL, &store));
    CHECK(ts_store_add_reducer_for(store, "count", counter_types, bench_counter_reducer, NULL));
    CHECK(ts_store_subscribe(store, NULL, bench_counting_listener, &listener_calls, &token));
    CHECK(ts_store_add_patch_reducer(store, "todos", todo_types, todo_patch_reducer, &big_items));
    char *action[1] = {"{\"type\":\"session/ping\",\"payload\":1}"};
    long n = scaled(200000);
    for (int r = 0; r < runs; r++) {
        counting = 0;
        double base = time_dispatches(c1_store, n);
        counting = 1;
        counted_id = "CU";
        double unhandled = time_actions(store, action, 1, n);
        result("CU-C1", base, "ns");
        result("CU", unhandled, "ns");
        result("CU-ratio", unhandled / base, "x");
    }
    if (read_count(store) != 0) {
        fprintf(stderr, "bench: CU: an unhandled action changed the count\n");
        exit(1);
    }
    ts_store_destroy(store);
    ts_store_destroy(c1_store);
}

/* ---- Memory ------------------------------------------------------------- */

static double max_rss_mb(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)usage.ru_maxrss / 1024.0; /* Linux: kilobytes */
}

static void memory(void) {
    ts_store *store = counter_store(NULL);
    long million = scaled(1000000);
    double at_start = max_rss_mb();
    double start = now_ns();
    for (long i = 0; i < 10 * million; i++) {
        ts_status status = ts_store_dispatch(store, BENCH_ADD_ACTION);
        if (status != TS_OK) die("ts_store_dispatch", status);
        if (i + 1 == million) result("MEM-1M", max_rss_mb(), "MB");
    }
    double elapsed = now_ns() - start;
    result("MEM-10M", max_rss_mb(), "MB");
    info("memory: peak RSS %.1f MB before the loop; %ld dispatches in %.2f s (%.0f ns each); count %lld", at_start,
         10 * million, elapsed / 1e9, elapsed / (double)(10 * million), read_count(store));
    ts_store_destroy(store);
}

/* ---- Start-up ----------------------------------------------------------- */

static double time_process(void) {
    double start = now_ns();
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        exit(1);
    }
    if (child == 0) {
        execl(startup_bin, startup_bin, startup_plugin, (char *)NULL);
        perror("execl");
        _exit(127);
    }
    int status;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("waitpid");
            exit(1);
        }
    }
    double elapsed = now_ns() - start;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench: %s %s failed (status %d)\n", startup_bin, startup_plugin, status);
        exit(1);
    }
    return elapsed;
}

static void startup(void) {
    if (startup_bin == NULL || startup_plugin == NULL) {
        fprintf(stderr, "bench: startup needs --startup and --startup-plugin\n");
        exit(2);
    }
    for (int i = 0; i < 3; i++) time_process(); /* warm the page cache */
    int n = runs * 5;
    for (int i = 0; i < n; i++) result("STARTUP", time_process() / 1e6, "ms");
}

/* ---- BIG: a state of about --big-mb megabytes ---------------------------- */

static long big_mb = 100;

/* Linux: the resident set now and its peak (VmRSS, VmHWM), in kB. */
static long status_kb(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) return -1;
    char line[256];
    long value = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, field, n) == 0 && line[n] == ':') value = atol(line + n + 1);
    fclose(f);
    return value;
}

/* Resets the peak (VmHWM) to the current RSS (Linux >= 4.0); 0 on success. */
static int reset_peak(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f == NULL) return -1;
    int ok = fputs("5", f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

static unsigned long long big_listener_calls;
static void big_listener(ts_store *store, void *ctx) {
    (void)store;
    ++*(unsigned long long *)ctx;
}

/* {"count":0,"big":{"items":["<1 KB>", ...],"meta":{"items":N}}} of about
 * big_mb MB: an array of 1 KB strings, then a small value after it.
 * Measures, in this process (its own, as every workload):
 *   BIG<n>-peak   what ts_store_create and the first pointer read add to the
 *                 peak RSS, over the size of the state's text (target <= 2);
 *   BIG<n>-create ts_store_create (validation, slices), ms;
 *   BIG<n>-first  the first pointer read below the big slice, ms;
 *   BIG<n>-read   later reads of /big/meta/items (the slice unchanged), us;
 *   BIG<n>-listen a dispatch that leaves the big slice alone with a pointer
 *                 listener on /big/meta/items (never called), ns;
 *   BIG<n>-whole  one read of the whole state, ms, and -whole-peak what it
 *                 adds to the peak RSS (the copy it returns included). */
static void big(void) {
    char id[32];
    const size_t item = 1024;
    size_t items = (size_t)big_mb * 1024 * 1024 / (item + 3);
    size_t capacity = items * (item + 3) + 256;
    char *text = malloc(capacity);
    if (text == NULL) {
        perror("malloc");
        exit(1);
    }
    size_t at = (size_t)snprintf(text, capacity, "{\"count\":0,\"big\":{\"items\":[");
    for (size_t i = 0; i < items; i++) {
        if (i) text[at++] = ',';
        text[at++] = '"';
        int head = snprintf(text + at, 24, "%zu:", i);
        memset(text + at + head, 'a' + (char)(i % 26), item - (size_t)head);
        at += item;
        text[at++] = '"';
    }
    at += (size_t)snprintf(text + at, capacity - at, "],\"meta\":{\"items\":%zu}}}", items);
    double mb = (double)at / (1024.0 * 1024.0);
    long before = status_kb("VmRSS");
    int peak_ok = reset_peak() == 0;

    ts_store *store;
    double start = now_ns();
    CHECK(ts_store_create(text, &store));
    double create = now_ns() - start;
    free(text);
    CHECK(ts_store_add_reducer(store, "count", bench_counter_reducer, NULL));
    CHECK(ts_store_add_reducer(store, "big", bench_unchanged_reducer, NULL));

    char *value;
    start = now_ns();
    CHECK(ts_store_get_state(store, "/big/meta/items", &value));
    double first = now_ns() - start;
    if ((size_t)bench_parse_ll(value) != items) {
        fprintf(stderr, "bench: /big/meta/items is %s, expected %zu\n", value, items);
        exit(1);
    }
    ts_free(value);
    long peak = status_kb("VmHWM");

    snprintf(id, sizeof id, "BIG%ld-create", big_mb);
    result(id, create / 1e6, "ms");
    snprintf(id, sizeof id, "BIG%ld-first", big_mb);
    result(id, first / 1e6, "ms");
    if (peak_ok && peak > 0 && before > 0) {
        snprintf(id, sizeof id, "BIG%ld-peak", big_mb);
        result(id, (double)(peak - before) / 1024.0 / mb, "x");
    }
    info("BIG%ld: state text %.1f MB (%zu strings of %zu B); RSS %.1f MB before ts_store_create, peak %.1f MB, "
         "%.1f MB after the first read; create %.0f ms, first read %.0f ms",
         big_mb, mb, items, item, before / 1024.0, peak / 1024.0, status_kb("VmRSS") / 1024.0, create / 1e6,
         first / 1e6);

    long n = scaled(20000);
    size_t length;
    snprintf(id, sizeof id, "BIG%ld-read", big_mb);
    counted_id = id;
    for (int r = 0; r < runs; r++) result(id, time_get_state(store, "/big/meta/items", n, &length) / 1e3, "us");

    uint64_t token;
    CHECK(ts_store_subscribe(store, NULL, bench_counting_listener, &listener_calls, &token));
    CHECK(ts_store_subscribe(store, "/big/meta/items", big_listener, &big_listener_calls, &token));
    snprintf(id, sizeof id, "BIG%ld-listen", big_mb);
    counted_id = id;
    for (int r = 0; r < runs; r++) result(id, time_dispatches(store, scaled(200000)), "ns");
    if (big_listener_calls != 0) {
        fprintf(stderr, "bench: the listener on an unchanged slice was called %llu times\n", big_listener_calls);
        exit(1);
    }

    /* The whole state, once: its time and what it adds to the peak (the
     * caller's copy included). */
    long whole_before = status_kb("VmRSS");
    peak_ok = reset_peak() == 0;
    start = now_ns();
    CHECK(ts_store_get_state(store, NULL, &value));
    double whole = now_ns() - start;
    long whole_peak = status_kb("VmHWM");
    size_t whole_length = strlen(value);
    ts_free(value);
    snprintf(id, sizeof id, "BIG%ld-whole", big_mb);
    result(id, whole / 1e6, "ms");
    if (peak_ok && whole_peak > 0 && whole_before > 0) {
        snprintf(id, sizeof id, "BIG%ld-whole-peak", big_mb);
        result(id, (double)(whole_peak - whole_before) / 1024.0 / mb, "x");
    }
    info("BIG%ld: whole state read: %zu bytes in %.0f ms", big_mb, whole_length, whole / 1e6);
    ts_store_destroy(store);
}

/* ---- Main --------------------------------------------------------------- */

static const struct {
    const char *name;
    void (*run)(void);
} workloads[] = {
    {"c1", c1}, {"c1i", c1i}, {"c1i-own", c1i_own}, {"c2", c2}, {"c3", c3}, {"c4", c4}, {"c5", c5}, {"c6", c6},
    {"memory", memory}, {"startup", startup}, {"big", big}, {"cpatch", cpatch}, {"cappend", cappend},
    {"cunhandled", cunhandled},
};

#define WORKLOAD_COUNT (sizeof workloads / sizeof workloads[0])

static void run_named(const char *name) {
    for (size_t i = 0; i < WORKLOAD_COUNT; i++) {
        if (strcmp(workloads[i].name, name) == 0) {
            workloads[i].run();
            return;
        }
    }
    fprintf(stderr, "bench: unknown workload \"%s\"\n", name);
    exit(2);
}

int main(int argc, char **argv) {
    int first_workload = argc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--scale") == 0 && i + 1 < argc) scale = atof(argv[++i]);
        else if (strcmp(argv[i], "--plugin-dir") == 0 && i + 1 < argc) plugin_dir = argv[++i];
        else if (strcmp(argv[i], "--startup") == 0 && i + 1 < argc) startup_bin = argv[++i];
        else if (strcmp(argv[i], "--startup-plugin") == 0 && i + 1 < argc) startup_plugin = argv[++i];
        else if (strcmp(argv[i], "--inspector") == 0 && i + 1 < argc) inspector_plugin = argv[++i];
        else if (strcmp(argv[i], "--big-mb") == 0 && i + 1 < argc) big_mb = atol(argv[++i]);
        else if (argv[i][0] == '-') {
            fprintf(stderr, "bench: unknown option %s\n", argv[i]);
            return 2;
        } else {
            first_workload = i;
            break;
        }
    }
    if (runs < 1) runs = 1;
    info("libturnstate %s", ts_version_string());
    if (first_workload == argc) {
        for (size_t i = 0; i < WORKLOAD_COUNT; i++) workloads[i].run();
    } else {
        for (int i = first_workload; i < argc; i++) run_named(argv[i]);
    }
    return 0;
}
