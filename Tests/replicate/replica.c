/*
 * replica.c - one replica for Tests/replicate/run.sh, nats_run.py and the
 * benchmark: a C store with replicate.so, which dispatches actions and then
 * waits until it has applied the whole stream.
 *
 *   replica --plugin SO --url URL --stream NAME --origin a|b|c|d
 *           [--count N] [--threads T] [--snapshot-every N] [--go FILE]
 *           [--total-file FILE] [--out FILE] [--latency]
 *           [--timeout-ms N] [--extra ',"key":value...'] [--history FILE]
 *           [--acked FILE] [--mode ordered|optimistic] [--status-ms N]
 *           [--take-every K] [--stock N] [--rate N] [--big KB] [--state-version N]
 *   replica --fold FILE [--stock N] [--out FILE]
 *
 * State: {"counter": every action applied, "a".."d": those from that
 * origin, "order": a hash chain (FNV-1a) of the payloads in the order they
 * were applied, "stock": N minus the "take"s applied, "status": the last
 * "@@replicate/status" payload, "dropped": how many "@@replicate/dropped"}.
 * Each action is {"type":"inc","payload":"ORIGIN<number>","id":"ORIGIN.R.N"}
 * (the payload unique in the run; R: this run's random number, N: this
 * attempt's number: every attempt of a dispatch has an id of its own),
 * every K-th a "take" (--take-every K), which the "stock" reducer refuses at
 * 0. "status" and "dropped" are this replica's own; --out writes the other
 * keys. A dispatch that fails (TS_E_IO: the server is down, ordered mode)
 * is retried after 10 ms; one refused by a reducer (a take at 0) is counted
 * in "refused=" and not retried.
 * Prints "join_ms=X" (loading the plugin: snapshot + replay), "acked=N" (every
 * 1,000 and at the end; flushed; with --status-ms also "pending=N
 * confirmed=N"), "failed=N", with --latency "dispatch_p50_us",
 * "dispatch_p99_us" and "dispatch_max_us", and "rate=X" (dispatches/s);
 * --rate N paces each thread to N dispatches/s; --big KB adds a slice of KB
 * kilobytes that no reducer touches (a big state). Then, when --total-file
 * names a file, waits for it (the stream's total number of entries, written
 * by the test once every dispatcher is done) and until it has applied that
 * many (the counter in ordered mode; in optimistic mode the status's "seq",
 * with nothing pending), then prints "status=JSON" and writes --out.
 * --extra adds members to the plugin's config; --history writes every action
 * this replica applied, in the order it applied them, one a line (recorded
 * by a middleware after the plugin: it runs on every replica for every
 * entry; in optimistic mode it also sees pending actions and their replays,
 * so it is an ordered-mode tool); --acked writes the ids of the dispatches
 * that returned TS_OK; --state-version declares the state's version
 * (ts_store_set_version), which the plugin's snapshots carry ("VN ").
 * --fold FILE: no plugin: a fresh store folds the actions of FILE (one a
 * line, in order: as the log holds them, or a --history), prints the state
 * as --out would (and writes it to --out when given), "refused_ORIGIN=N" for
 * the takes the reducers refused and "folded=N".
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

static int counted(const ts_action *action) {
    return strcmp(action->type, "inc") == 0 || strcmp(action->type, "take") == 0;
}

static char *count_reducer(const char *slice, const ts_action *action, void *ctx) {
    const char *key = ctx;
    char *out;
    long long n;
    if (!counted(action)) return NULL;
    if (key[0] != '*') {
        /* Only this origin's: the payload is "\"a17\"". */
        if (action->payload == NULL || strlen(action->payload) < 3 || action->payload[1] != key[0]) return NULL;
    }
    n = atoll(slice) + 1;
    out = ts_alloc(24);
    if (out) snprintf(out, 24, "%lld", n);
    return out;
}

/* --patch: the same counts answered as RFC 6902 patches (ts_reducer_patch),
 * and a "log" slice that appends each action's origin, so that replicas
 * that applied the same actions in another order hold other states. */
static int patch_mode;

static char *count_patch_reducer(const char *slice, const ts_action *action, void *ctx) {
    const char *key = ctx;
    char patch[96];
    if (!counted(action)) return NULL;
    if (key[0] != '*') {
        /* Only this origin's: the payload is "\"a17\"". */
        if (action->payload == NULL || strlen(action->payload) < 3 || action->payload[1] != key[0]) return NULL;
    }
    snprintf(patch, sizeof patch, "[{\"op\":\"test\",\"path\":\"\",\"value\":%lld},"
             "{\"op\":\"replace\",\"path\":\"\",\"value\":%lld}]", atoll(slice), atoll(slice) + 1);
    ts_reducer_patch(patch);
    return NULL;
}

static char *log_patch_reducer(const char *slice, const ts_action *action, void *ctx) {
    char patch[96];
    (void)ctx;
    if (slice == NULL) return ts_strdup("[]");
    if (!counted(action) || action->payload == NULL) return NULL;
    snprintf(patch, sizeof patch, "[{\"op\":\"add\",\"path\":\"/-\",\"value\":%s}]", action->payload);
    ts_reducer_patch(patch);
    return NULL;
}

/* A hash chain of the payloads in the order applied: equal chains, equal
 * orders (but for a 64-bit collision). */
static char *order_reducer(const char *slice, const ts_action *action, void *ctx) {
    unsigned long long h = strtoull(slice, NULL, 10);
    const char *p;
    char *out;
    (void)ctx;
    if (!counted(action) || action->payload == NULL) return NULL;
    for (p = action->payload; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 1099511628211ULL;
    }
    h ^= 0xff;
    h *= 1099511628211ULL;
    out = ts_alloc(24);
    if (out) snprintf(out, 24, "%llu", h);
    return out;
}

static char *stock_reducer(const char *slice, const ts_action *action, void *ctx) {
    long long n = atoll(slice);
    char *out;
    (void)ctx;
    if (strcmp(action->type, "take") != 0) return NULL;
    if (n <= 0) {
        ts_reducer_fail("out of stock");
        return NULL;
    }
    out = ts_alloc(24);
    if (out) snprintf(out, 24, "%lld", n - 1);
    return out;
}

static char *status_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)slice;
    (void)ctx;
    if (strcmp(action->type, "@@replicate/status") != 0 || action->payload == NULL) return NULL;
    return ts_strdup(action->payload);
}

static char *dropped_reducer(const char *slice, const ts_action *action, void *ctx) {
    char *out;
    (void)ctx;
    if (strcmp(action->type, "@@replicate/dropped") != 0) return NULL;
    out = ts_alloc(24);
    if (out) snprintf(out, 24, "%lld", atoll(slice) + 1);
    return out;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static ts_store *store;
static const char *origin = "a";
static long count_per_thread, take_every, rate;
static int optimistic;
static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static long acked, failed, refused, thread_index;
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

/* After the plugin: every entry applied here, in order (the store is held);
 * not the plugin's own "@@replicate/..." actions (the status this program
 * asks for, drops): they are this replica's, never in the log. */
static ts_status recorder(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)api;
    (void)ctx;
    if (strncmp(action->type, "@@replicate/", 12) != 0) keep(&history, &history_count, &history_capacity, action->json);
    return next(action->json);
}

static int write_lines(const char *path, char **lines, long count) {
    FILE *f = fopen(path, "w");
    long i;
    if (f == NULL) return 1;
    for (i = 0; i < count; i++) fprintf(f, "%s\n", lines[i]);
    return fclose(f) != 0;
}

static long long number_at(const char *pointer) {
    char *text = NULL;
    long long n = -1;
    if (ts_store_get_state(store, pointer, &text) == TS_OK) n = atoll(text);
    ts_free(text);
    return n;
}

/* Asks the plugin for its status (applied to "status" here). */
static void ask_status(void) { (void)ts_store_dispatch(store, "{\"type\":\"@@replicate/status\"}"); }

static void *dispatcher(void *arg) {
    char action[160], id[64];
    long i, t;
    double start = now_s();
    (void)arg;
    pthread_mutex_lock(&mutex);
    t = thread_index++;
    pthread_mutex_unlock(&mutex);
    for (i = 0; i < count_per_thread; i++) {
        long k = t * count_per_thread + i + 1;
        int take = take_every > 0 && k % take_every == 0;
        snprintf(action, sizeof action, "{\"type\":\"%s\",\"payload\":\"%s%ld\"}", take ? "take" : "inc", origin, k);
        if (rate > 0) {
            double due = start + (double)i / (double)rate;
            while (now_s() < due) usleep(50);
        }
        for (;;) {
            double t0, t1;
            ts_status status;
            pthread_mutex_lock(&mutex);
            snprintf(id, sizeof id, "%s.%lu.%ld", origin, run_id, ++attempts);
            pthread_mutex_unlock(&mutex);
            snprintf(action, sizeof action, "{\"type\":\"%s\",\"payload\":\"%s%ld\",\"id\":\"%s\"}",
                     take ? "take" : "inc", origin, k, id);
            t0 = now_s();
            status = ts_store_dispatch(store, action);
            t1 = now_s();
            if (status == TS_OK || status == TS_E_REDUCER) {
                int print;
                pthread_mutex_lock(&mutex);
                if (latencies) latencies[latency_count++] = t1 - t0;
                if (status == TS_OK && acked_capacity >= 0) keep(&acked_ids, &acked, &acked_capacity, id);
                else if (status == TS_OK) acked++;
                else refused++;
                print = status == TS_OK && acked % 1000 == 0;
                if (print) printf("acked=%ld\n", acked);
                pthread_mutex_unlock(&mutex);
                if (print && optimistic) {
                    ask_status();
                    printf("pending=%lld confirmed=%lld\n", number_at("/status/pending"), number_at("/status/confirmed"));
                }
                if (print) fflush(stdout);
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

static long long counter_of(void) { return number_at("/counter"); }

/* The replicated keys (not "status" and "dropped", this replica's own; with
 * --patch also "log"). */
static char *replicated_state(void) {
    static const char *keys[] = {"counter", "a", "b", "c", "d", "order", "stock", "log"};
    size_t i, used = 0, size = 512, count = sizeof keys / sizeof keys[0] - (patch_mode ? 0 : 1);
    char *out = malloc(size);
    if (out == NULL) return NULL;
    out[used++] = '{';
    for (i = 0; i < count; i++) {
        char pointer[16], *text = NULL, *grown;
        size_t need;
        snprintf(pointer, sizeof pointer, "/%s", keys[i]);
        if (ts_store_get_state(store, pointer, &text) != TS_OK) {
            free(out);
            return NULL;
        }
        need = used + strlen(keys[i]) + strlen(text) + 8;
        if (need > size) {
            size = need * 2;
            grown = realloc(out, size);
            if (grown == NULL) {
                ts_free(text);
                free(out);
                return NULL;
            }
            out = grown;
        }
        used += (size_t)snprintf(out + used, size - used, "%s\"%s\":%s", i ? "," : "", keys[i], text);
        ts_free(text);
    }
    snprintf(out + used, size - used, "}");
    return out;
}

static long big_kb;

static int make_store(long long stock) {
    char head[256];
    char *initial;
    size_t n, i, length;
    int ok;
    snprintf(head, sizeof head,
             "{\"counter\":0,\"a\":0,\"b\":0,\"c\":0,\"d\":0,\"order\":0,\"stock\":%lld,\"status\":null,\"dropped\":0",
             stock);
    /* --big KB: a slice no reducer touches, KB strings of 1,000 bytes. */
    n = (size_t)big_kb;
    length = strlen(head);
    initial = malloc(length + n * 1003 + 16);
    if (initial == NULL) return 0;
    memcpy(initial, head, length);
    if (n > 0) {
        memcpy(initial + length, ",\"big\":[", 8);
        length += 8;
        for (i = 0; i < n; i++) {
            if (i) initial[length++] = ',';
            initial[length++] = '"';
            memset(initial + length, 'x', 1000);
            length += 1000;
            initial[length++] = '"';
        }
        initial[length++] = ']';
    }
    initial[length++] = '}';
    initial[length] = '\0';
    ok = ts_store_create(initial, &store) == TS_OK;
    free(initial);
    if (!ok) return 0;
    if (ts_store_add_reducer(store, "counter", patch_mode ? count_patch_reducer : count_reducer, "*") != TS_OK) return 0;
    for (i = 0; i < 4; i++) {
        if (ts_store_add_reducer(store, origins[i], patch_mode ? count_patch_reducer : count_reducer,
                                 (void *)origins[i]) != TS_OK) return 0;
    }
    if (patch_mode && ts_store_add_reducer(store, "log", log_patch_reducer, NULL) != TS_OK) return 0;
    return ts_store_add_reducer(store, "order", order_reducer, NULL) == TS_OK &&
           ts_store_add_reducer(store, "stock", stock_reducer, NULL) == TS_OK &&
           ts_store_add_reducer(store, "status", status_reducer, NULL) == TS_OK &&
           ts_store_add_reducer(store, "dropped", dropped_reducer, NULL) == TS_OK;
}

/* --fold FILE: the log's actions (or a --history) folded by a fresh store. */
static int fold(const char *file, long long stock, const char *out) {
    char *line = NULL, *state;
    size_t size = 0;
    ssize_t n;
    long refused_by[4] = {0, 0, 0, 0}, lines = 0;
    int i;
    FILE *f = fopen(file, "r");
    if (f == NULL || !make_store(stock)) {
        fprintf(stderr, "replica: cannot read %s or make a store\n", file);
        return 1;
    }
    while ((n = getline(&line, &size, f)) > 0) {
        ts_status status;
        if (line[n - 1] == '\n') line[n - 1] = '\0';
        if (line[0] == '\0') continue;
        lines++;
        status = ts_store_dispatch(store, line);
        if (status != TS_OK) {
            const char *p = strstr(line, "\"payload\":\"");
            if (status != TS_E_REDUCER || p == NULL || p[11] < 'a' || p[11] > 'd') {
                fprintf(stderr, "replica: fold: line %ld refused: %s: %s\n", lines, line, ts_last_error());
                return 1;
            }
            refused_by[p[11] - 'a']++;
        }
    }
    free(line);
    fclose(f);
    state = replicated_state();
    printf("%s\n", state ? state : "null");
    for (i = 0; i < 4; i++) printf("refused_%s=%ld\n", origins[i], refused_by[i]);
    printf("folded=%ld\n", lines);
    if (out != NULL && state != NULL) {
        f = fopen(out, "w");
        if (f == NULL) return 1;
        fprintf(f, "%s\n", state);
        if (fclose(f) != 0) return 1;
    }
    if (state == NULL) return 1;
    free(state);
    ts_store_destroy(store);
    return 0;
}

int main(int argc, char **argv) {
    const char *plugin = NULL, *url = NULL, *stream = NULL, *go = NULL, *total_file = NULL, *out = NULL,
               *mode = "ordered", *fold_file = NULL;
    const char *extra = "", *history_file = NULL, *acked_file = NULL;
    long count = 0, threads = 1, snapshot_every = 10000, status_ms = 0, timeout_ms = 2000, state_version = 0, t;
    long long stock = 1000000000LL;
    int latency = 0, i;
    char config[4096];
    pthread_t *ids;
    double t0, t1;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--latency") == 0) { latency = 1; continue; }
        if (strcmp(a, "--patch") == 0) { patch_mode = 1; continue; }
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
        else if (strcmp(a, "--mode") == 0) mode = v;
        else if (strcmp(a, "--status-ms") == 0) status_ms = atol(v);
        else if (strcmp(a, "--take-every") == 0) take_every = atol(v);
        else if (strcmp(a, "--stock") == 0) stock = atoll(v);
        else if (strcmp(a, "--timeout-ms") == 0) timeout_ms = atol(v);
        else if (strcmp(a, "--rate") == 0) rate = atol(v);
        else if (strcmp(a, "--fold") == 0) fold_file = v;
        else if (strcmp(a, "--big") == 0) big_kb = atol(v);
        else if (strcmp(a, "--extra") == 0) extra = v;
        else if (strcmp(a, "--history") == 0) history_file = v;
        else if (strcmp(a, "--acked") == 0) acked_file = v;
        else if (strcmp(a, "--state-version") == 0) state_version = atol(v);
        else { fprintf(stderr, "replica: unknown option %s\n", a); return 2; }
    }
    if (fold_file) return fold(fold_file, stock, out);
    acked_capacity = acked_file ? 0 : -1;
    {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        run_id = (unsigned long)now.tv_nsec ^ ((unsigned long)getpid() << 16);
    }
    if (!plugin || !url || !stream || threads < 1 || strlen(origin) != 1 || origin[0] < 'a' || origin[0] > 'd') {
        fprintf(stderr, "replica: --plugin, --url, --stream and --origin a|b|c|d are required\n");
        return 2;
    }
    optimistic = strcmp(mode, "optimistic") == 0;
    if (!make_store(stock)) return 1;
    if (state_version > 0 && ts_store_set_version(store, (uint32_t)state_version) != TS_OK) {
        fprintf(stderr, "replica %s: ts_store_set_version: %s\n", origin, ts_last_error());
        return 1;
    }
    snprintf(config, sizeof config,
             "{\"url\":\"%s\",\"stream\":\"%s\",\"timeout_ms\":%ld,\"snapshot_every\":%ld,\"mode\":\"%s\","
             "\"status_ms\":%ld%s}",
             url, stream, timeout_ms, snapshot_every, mode, status_ms, extra);
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
    printf("acked=%ld\nrefused=%ld\nfailed=%ld\n", acked, refused, failed);
    if (count > 0) printf("rate=%.0f\n", (double)(acked + refused) / (t1 - t0));
    if (latencies && latency_count > 0) {
        qsort(latencies, (size_t)latency_count, sizeof *latencies, compare);
        printf("dispatch_p50_us=%.1f\ndispatch_p99_us=%.1f\ndispatch_max_us=%.1f\n", latencies[latency_count / 2] * 1e6,
               latencies[(latency_count * 99) / 100] * 1e6, latencies[latency_count - 1] * 1e6);
    }
    if (optimistic && count > 0) {
        /* Until the log has confirmed every action of this replica. */
        double deadline = now_s() + 60;
        do {
            ask_status();
            if (number_at("/status/pending") == 0) break;
            usleep(1000);
        } while (now_s() < deadline);
        printf("confirmed_s=%.3f\n", now_s() - t0);
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
        for (;;) {
            long long applied;
            if (optimistic) {
                ask_status();
                applied = number_at("/status/pending") == 0 ? number_at("/status/seq") : -1;
            } else {
                applied = counter_of();
            }
            if (applied >= total || now_s() > deadline) {
                if (applied != total) fprintf(stderr, "replica %s: applied %lld, the stream holds %lld\n", origin, applied, total);
                break;
            }
            usleep(5000);
        }
    }
    {
        char *text = NULL;
        ask_status();
        if (ts_store_get_state(store, "/status", &text) == TS_OK) printf("status=%s\n", text);
        ts_free(text);
        printf("dropped=%lld\n", number_at("/dropped"));
        fflush(stdout);
    }
    if (out) {
        char *text = replicated_state();
        FILE *f = fopen(out, "w");
        if (f == NULL || text == NULL) return 1;
        fprintf(f, "%s\n", text);
        fclose(f);
        free(text);
    }
    ts_store_destroy(store);
    if (history_file && write_lines(history_file, history, history_count) != 0) return 1;
    if (acked_file && write_lines(acked_file, acked_ids, acked) != 0) return 1;
    free(latencies);
    free(ids);
    return 0;
}
