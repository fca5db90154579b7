/*
 * replica.c - one replica for Tests/replicate/run.sh, nats_run.py and the
 * benchmark: a C store with replicate.so, which dispatches actions and then
 * waits until it has applied the whole stream.
 *
 *   replica --plugin SO --url URL --stream NAME --origin a|b|c|d
 *           [--count N] [--threads T] [--snapshot-every N] [--go FILE]
 *           [--total-file FILE] [--out FILE] [--latency]
 *           [--timeout-ms N] [--extra ',"key":value...'] [--history FILE]
 *           [--acked FILE]
 *   replica --fold HISTORY --out FILE
 *
 * State: {"counter": every "inc" applied, "a".."d": the "inc"s from that
 * origin}. Each action is {"type":"inc","payload":"ORIGIN","id":"ORIGIN.R.N"}
 * (R: this run's random number, N: this attempt's number: every attempt of a
 * dispatch has an id of its own). A dispatch that fails (TS_E_IO: the server
 * is down) is retried after 10 ms.
 * Prints "join_ms=X" (loading the plugin: snapshot + replay), "acked=N" (every
 * 1,000 and at the end; flushed), "failed=N", with --latency "dispatch_p50_us"
 * and "dispatch_p99_us", and "rate=X" (dispatches/s). Then, when
 * --total-file names a file, waits for it (the stream's total number of
 * entries, written by the test once every dispatcher is done) and until its
 * counter equals that number; writes the whole state to --out.
 * --extra adds members to the plugin's config; --history writes every action
 * this replica applied, in the order it applied them, one a line (recorded
 * by a middleware after the plugin: it runs on every replica for every
 * entry); --acked writes the ids of the dispatches that returned TS_OK.
 * --fold: a fresh store (the same reducers, no plugin) dispatches the actions
 * of HISTORY in order and writes its state to --out (the history checker).
 */
#define _DEFAULT_SOURCE

#include "turnstate.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *origins[] = {"a", "b", "c", "d"};

static char *count_reducer(const char *slice, const ts_action *action, void *ctx) {
    const char *key = ctx;
    char *out;
    long long n;
    if (strcmp(action->type, "inc") != 0) return NULL;
    if (key[0] != '*') {
        /* Only this origin's: the payload is "\"a\"". */
        if (action->payload == NULL || strlen(action->payload) != 3 || action->payload[1] != key[0]) return NULL;
    }
    n = atoll(slice) + 1;
    out = ts_alloc(24);
    if (out) snprintf(out, 24, "%lld", n);
    return out;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static ts_store *store;
static const char *origin = "a";
static long count_per_thread;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static long acked, failed;
static double *latencies;
static long latency_count;
static unsigned long run_id;
static long attempts;
/* --history: the actions applied, in order; --acked: the ids acknowledged. */
static char **history, **acked_ids;
static long history_count, history_capacity, acked_capacity;

static void keep(char ***list, long *count, long *capacity, const char *text) {
    if (*count == *capacity) {
        *capacity = *capacity ? *capacity * 2 : 1024;
        *list = realloc(*list, sizeof **list * (size_t)*capacity);
        if (*list == NULL) abort();
    }
    (*list)[(*count)++] = strdup(text);
}

/* After the plugin: every entry applied here, in order (the store is held). */
static ts_status recorder(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)api;
    (void)ctx;
    keep(&history, &history_count, &history_capacity, action->json);
    return next(action->json);
}

static int write_lines(const char *path, char **lines, long count) {
    FILE *f = fopen(path, "w");
    long i;
    if (f == NULL) return 1;
    for (i = 0; i < count; i++) fprintf(f, "%s\n", lines[i]);
    return fclose(f) != 0;
}

static void *dispatcher(void *arg) {
    char action[128], id[64];
    long i;
    (void)arg;
    for (i = 0; i < count_per_thread; i++) {
        for (;;) {
            double t0, t1;
            ts_status status;
            pthread_mutex_lock(&mutex);
            snprintf(id, sizeof id, "%s.%lu.%ld", origin, run_id, ++attempts);
            pthread_mutex_unlock(&mutex);
            snprintf(action, sizeof action, "{\"type\":\"inc\",\"payload\":\"%s\",\"id\":\"%s\"}", origin, id);
            t0 = now_s();
            status = ts_store_dispatch(store, action);
            t1 = now_s();
            if (status == TS_OK) {
                pthread_mutex_lock(&mutex);
                if (latencies) latencies[latency_count++] = t1 - t0;
                if (acked_capacity >= 0) keep(&acked_ids, &acked, &acked_capacity, id);
                else acked++;
                if (acked % 1000 == 0) {
                    printf("acked=%ld\n", acked);
                    fflush(stdout);
                }
                pthread_mutex_unlock(&mutex);
                break;
            }
            pthread_mutex_lock(&mutex);
            failed++;
            if (failed <= 3 || failed % 100 == 0) {
                fprintf(stderr, "replica %s: dispatch failed (%s): %s\n", origin, ts_status_name(status),
                        ts_last_error());
            }
            pthread_mutex_unlock(&mutex);
            usleep(10000);
        }
    }
    return NULL;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static long long counter_of(void) {
    char *text = NULL;
    long long n = -1;
    if (ts_store_get_state(store, "/counter", &text) == TS_OK) n = atoll(text);
    ts_free(text);
    return n;
}

int main(int argc, char **argv) {
    const char *plugin = NULL, *url = NULL, *stream = NULL, *go = NULL, *total_file = NULL, *out = NULL;
    const char *extra = "", *history_file = NULL, *acked_file = NULL, *fold = NULL;
    long count = 0, threads = 1, snapshot_every = 10000, timeout_ms = 2000, t;
    int latency = 0, i;
    char config[4096];
    pthread_t *ids;
    double t0, t1;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--latency") == 0) { latency = 1; continue; }
        if (v == NULL) { fprintf(stderr, "replica: %s needs a value\n", a); return 2; }
        i++;
        if (strcmp(a, "--plugin") == 0) plugin = v;
        else if (strcmp(a, "--url") == 0) url = v;
        else if (strcmp(a, "--stream") == 0) stream = v;
        else if (strcmp(a, "--origin") == 0) origin = v;
        else if (strcmp(a, "--count") == 0) count = atol(v);
        else if (strcmp(a, "--threads") == 0) threads = atol(v);
        else if (strcmp(a, "--snapshot-every") == 0) snapshot_every = atol(v);
        else if (strcmp(a, "--go") == 0) go = v;
        else if (strcmp(a, "--total-file") == 0) total_file = v;
        else if (strcmp(a, "--out") == 0) out = v;
        else if (strcmp(a, "--timeout-ms") == 0) timeout_ms = atol(v);
        else if (strcmp(a, "--extra") == 0) extra = v;
        else if (strcmp(a, "--history") == 0) history_file = v;
        else if (strcmp(a, "--acked") == 0) acked_file = v;
        else if (strcmp(a, "--fold") == 0) fold = v;
        else { fprintf(stderr, "replica: unknown option %s\n", a); return 2; }
    }
    acked_capacity = acked_file ? 0 : -1;
    {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        run_id = (unsigned long)now.tv_nsec ^ ((unsigned long)getpid() << 16);
    }
    if (fold != NULL) {
        /* The history checker: the same reducers, no plugin, the history in order. */
        FILE *f = fopen(fold, "r");
        char *line = NULL, *text = NULL;
        size_t size = 0;
        ssize_t n;
        long lines = 0;
        if (f == NULL || out == NULL || ts_store_create("{\"counter\":0,\"a\":0,\"b\":0,\"c\":0,\"d\":0}", &store) != TS_OK ||
            ts_store_add_reducer(store, "counter", count_reducer, "*") != TS_OK) {
            fprintf(stderr, "replica: --fold needs a readable HISTORY and --out\n");
            return 2;
        }
        for (i = 0; i < 4; i++) ts_store_add_reducer(store, origins[i], count_reducer, (void *)origins[i]);
        while ((n = getline(&line, &size, f)) > 0) {
            if (line[n - 1] == '\n') line[n - 1] = '\0';
            if (ts_store_dispatch(store, line) != TS_OK) {
                fprintf(stderr, "replica: --fold: line %ld refused: %s\n", lines + 1, ts_last_error());
                return 1;
            }
            lines++;
        }
        free(line);
        fclose(f);
        f = fopen(out, "w");
        if (f == NULL || ts_store_get_state(store, NULL, &text) != TS_OK) return 1;
        fprintf(f, "%s\n", text);
        fclose(f);
        ts_free(text);
        printf("folded=%ld\n", lines);
        ts_store_destroy(store);
        return 0;
    }
    if (!plugin || !url || !stream || threads < 1 || strlen(origin) != 1 || origin[0] < 'a' || origin[0] > 'd') {
        fprintf(stderr, "replica: --plugin, --url, --stream and --origin a|b|c|d are required\n");
        return 2;
    }
    if (ts_store_create("{\"counter\":0,\"a\":0,\"b\":0,\"c\":0,\"d\":0}", &store) != TS_OK) return 1;
    if (ts_store_add_reducer(store, "counter", count_reducer, "*") != TS_OK) return 1;
    for (i = 0; i < 4; i++) {
        if (ts_store_add_reducer(store, origins[i], count_reducer, (void *)origins[i]) != TS_OK) return 1;
    }
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"stream\":\"%s\",\"timeout_ms\":%ld,\"snapshot_every\":%ld%s}",
             url, stream, timeout_ms, snapshot_every, extra);
    t0 = now_s();
    if (ts_store_load_plugin(store, plugin, config) != TS_OK) {
        fprintf(stderr, "replica %s: cannot load %s: %s\n", origin, plugin, ts_last_error());
        return 1;
    }
    t1 = now_s();
    if (history_file && ts_store_add_middleware(store, "history", recorder, NULL) != TS_OK) return 1;
    printf("join_ms=%.1f counter=%lld\n", (t1 - t0) * 1000, counter_of());
    fflush(stdout);

    /* Start together: wait for the go file. */
    while (go && access(go, F_OK) != 0) usleep(5000);
    count_per_thread = count / threads;
    if (latency && count > 0) latencies = malloc(sizeof *latencies * (size_t)(count_per_thread * threads));
    ids = calloc((size_t)threads, sizeof *ids);
    t0 = now_s();
    for (t = 0; t < threads; t++) pthread_create(&ids[t], NULL, dispatcher, NULL);
    for (t = 0; t < threads; t++) pthread_join(ids[t], NULL);
    t1 = now_s();
    printf("acked=%ld\nfailed=%ld\n", acked, failed);
    if (count > 0) printf("rate=%.0f\n", (double)acked / (t1 - t0));
    if (latencies && latency_count > 0) {
        qsort(latencies, (size_t)latency_count, sizeof *latencies, compare);
        printf("dispatch_p50_us=%.0f\ndispatch_p99_us=%.0f\n", latencies[latency_count / 2] * 1e6,
               latencies[(latency_count * 99) / 100] * 1e6);
    }
    fflush(stdout);

    if (total_file) {
        long long total = -1;
        double deadline;
        FILE *f;
        while (access(total_file, F_OK) != 0) usleep(5000);
        usleep(20000); /* the writer renames it into place; read it whole */
        f = fopen(total_file, "r");
        if (f == NULL || fscanf(f, "%lld", &total) != 1) {
            fprintf(stderr, "replica %s: cannot read %s\n", origin, total_file);
            return 1;
        }
        fclose(f);
        deadline = now_s() + 60;
        while (counter_of() < total && now_s() < deadline) usleep(5000);
        if (counter_of() != total) {
            fprintf(stderr, "replica %s: counter %lld, the stream holds %lld\n", origin, counter_of(), total);
        }
    }
    if (out) {
        char *text = NULL;
        FILE *f = fopen(out, "w");
        if (f == NULL || ts_store_get_state(store, NULL, &text) != TS_OK) return 1;
        fprintf(f, "%s\n", text);
        fclose(f);
        ts_free(text);
    }
    ts_store_destroy(store);
    if (history_file && write_lines(history_file, history, history_count) != 0) return 1;
    if (acked_file && write_lines(acked_file, acked_ids, acked) != 0) return 1;
    free(latencies);
    free(ids);
    return 0;
}
