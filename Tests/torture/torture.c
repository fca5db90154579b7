/*
 * torture.c - many threads on the C API at once, to be run under
 * ThreadSanitizer (and AddressSanitizer): Tests/torture/run.sh, make
 * test-torture.
 *
 *   torture [--threads N] [--ops N] [--rounds N] [--only shutdown] PLUGIN_DIR
 *
 * Phase "shared" (skipped with --only shutdown): N threads share one store
 * (a counter reducer, a C middleware that dispatches again from inside its
 * run(), the delay plugin) and each does --ops random operations: dispatch
 * "inc", dispatch {"type":"@@delay","payload":{"ms":0,"action":{"type":"inc"}}}
 * (the delay worker dispatches it later through its kept table), dispatch an
 * action whose middleware dispatches "inc" (nested), subscribe and
 * unsubscribe its own listeners, read /count (it never goes down), and make a
 * fresh store with the delay plugin, dispatch into it and destroy it. At the
 * end every delayed action is waited for (a last delayed "done" action comes
 * after all of them: ms 0 actions are dispatched in the order queued) and the
 * counter must equal the number of increments that returned TS_OK: no lost
 * updates, no doubled ones; a listener that saw every dispatch must have been
 * called once per dispatch that reached the reducers. The nesting middleware
 * also keeps its `next` ("keep"), which other threads then call: it must
 * answer TS_E_MISUSE; and calls it twice in one run() ("twice"): the second
 * call must answer TS_E_MISUSE.
 *
 * Phase "patch" (skipped with --only shutdown): N threads dispatch patch
 * reducers (ts_reducer_patch, reading with the getters) into one store with
 * a pointer listener, making fresh stores meanwhile; every patch lands once.
 *
 * Phase "tree" (skipped with --only shutdown): the same with a patch reducer
 * (ts_store_add_patch_reducer) whose slice is big enough to be kept as a tree
 * of texts, while the threads also read values of it and its whole text
 * (joined by whichever thread asks first) between their dispatches.
 *
 * Phase "shutdown": N threads each do --rounds times what crashed before the
 * shutdown protocol: a store with the delay plugin loaded and then the
 * journal (even rounds) or guard (odd rounds) plugin, a few hundred @@delay
 * ms 0 actions, and ts_store_destroy at once, while the delay worker is still
 * dispatching them. ts_store_destroy destroys the journal/guard first; a
 * delayed dispatch that still reached its run() read freed memory. Every
 * other round destroys the store from inside one of its callbacks (a
 * listener, or a middleware before it calls next) on the dispatching thread:
 * the store closes at once, the dispatch under way finishes, and the plugins
 * are destroyed when it returns, while the worker waits for the lock.
 *
 * Prints "torture: N operations, lost updates: N, extra updates: N" and
 * "N passed, M failed"; exit status 0 only if nothing failed.
 */
#define _POSIX_C_SOURCE 200809L

#include "turnstate.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64
#define MAX_TOKENS 4
#define SHUTDOWN_ACTIONS 300
#define INC "{\"type\":\"inc\"}"
#define DELAYED_INC "{\"type\":\"@@delay\",\"payload\":{\"ms\":0,\"action\":{\"type\":\"inc\"}}}"
#define DELAYED_DONE "{\"type\":\"@@delay\",\"payload\":{\"ms\":0,\"action\":{\"type\":\"done\"}}}"

static int threads = 6;
static long ops = 2000;
static long rounds = 20;
static int only_shutdown = 0;
static char plugin_dir[4096];
static char work_dir[4096];

static int passed = 0, failed = 0;
static pthread_mutex_t report_mutex = PTHREAD_MUTEX_INITIALIZER;

/* A failure, from any thread. */
static void failure(const char *what, ts_status status) {
    pthread_mutex_lock(&report_mutex);
    failed++;
    if (failed <= 20) {
        if (status != TS_OK)
            fprintf(stderr, "FAIL: %s: %s: %s\n", what, ts_status_name(status), ts_last_error());
        else
            fprintf(stderr, "FAIL: %s\n", what);
    }
    pthread_mutex_unlock(&report_mutex);
}

static void check(int ok, const char *what) {
    if (ok) {
        pthread_mutex_lock(&report_mutex);
        passed++;
        pthread_mutex_unlock(&report_mutex);
        printf("ok: %s\n", what);
    } else {
        failure(what, TS_OK);
    }
}

/* ---- Reducers, middleware, listeners ------------------------------------ */

static char *text_of(long long value) {
    char *text = malloc(24);
    if (text) snprintf(text, 24, "%lld", value);
    return text;
}

/* "count": +1 for every "inc". */
static char *count_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice == NULL) return text_of(0);
    if (strcmp(action->type, "inc") != 0) return NULL;
    return text_of(strtoll(slice, NULL, 10) + 1);
}

/* "done": true after "done". */
static char *done_reducer(const char *slice, const ts_action *action, void *ctx) {
    char *text;
    (void)ctx;
    if (slice != NULL && strcmp(action->type, "done") != 0) return NULL;
    text = malloc(6);
    if (text) strcpy(text, slice == NULL ? "false" : "true");
    return text;
}

/* The `next` that the nesting middleware kept from a "keep" action, for
 * other threads to call after that run() returned (TS_E_MISUSE). */
static pthread_mutex_t kept_mutex = PTHREAD_MUTEX_INITIALIZER;
static ts_next_fn kept_next;
static long long twice_wrong;

/* A middleware that, for "nest", dispatches "inc" from inside its run()
 * (through the table, on the same thread) and then passes "nest" on; for
 * "keep", keeps its next; for "twice", calls next twice (the second call
 * must answer TS_E_MISUSE and change nothing). */
static ts_status nesting_mw(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)ctx;
    if (strcmp(action->type, "nest") == 0) {
        ts_status status = store->dispatch(INC);
        if (status != TS_OK) return status;
    } else if (strcmp(action->type, "keep") == 0) {
        pthread_mutex_lock(&kept_mutex);
        kept_next = next;
        pthread_mutex_unlock(&kept_mutex);
    } else if (strcmp(action->type, "twice") == 0) {
        ts_status first = next(action->json), second = next(INC);
        if (first == TS_OK && second != TS_E_MISUSE) {
            pthread_mutex_lock(&kept_mutex);
            twice_wrong++;
            pthread_mutex_unlock(&kept_mutex);
        }
        return first;
    }
    return next(action->json);
}

/* A counter that listeners bump (they run under the store's lock, but the
 * reader is another thread: a mutex of its own). */
typedef struct counter {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    long long n;
} counter;

static void counter_init(counter *c) {
    pthread_mutex_init(&c->mutex, NULL);
    pthread_cond_init(&c->cond, NULL);
    c->n = 0;
}

static long long counter_get(counter *c) {
    long long n;
    pthread_mutex_lock(&c->mutex);
    n = c->n;
    pthread_mutex_unlock(&c->mutex);
    return n;
}

static void count_listener(ts_store *store, void *ctx) {
    counter *c = ctx;
    (void)store;
    pthread_mutex_lock(&c->mutex);
    c->n++;
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->mutex);
}

/* ---- Phase "shared" ------------------------------------------------------- */

static ts_store *shared;
static counter every_dispatch; /* a listener for the whole phase */
static counter done_seen;      /* "/done" changed */
static counter thread_listeners;

typedef struct worker_state {
    int index;
    unsigned seed;
    long operations;
    long long inc_ok, delayed_ok, nest_ok, notify_expected, misuse_ok;
    uint64_t tokens[MAX_TOKENS];
    int token_count;
    long long last_count;
} worker_state;

static unsigned next_random(unsigned *seed) {
    *seed = *seed * 1103515245u + 12345u;
    return (*seed >> 16) & 0x7fff;
}

/* A store of its own with the delay plugin: dispatch into it, destroy it. */
static void fresh_store(worker_state *w) {
    char path[4200];
    ts_store *store;
    ts_status status;
    int i;
    status = ts_store_create(NULL, &store);
    if (status != TS_OK) {
        failure("fresh store: ts_store_create", status);
        return;
    }
    status = ts_store_add_reducer(store, "count", count_reducer, NULL);
    if (status != TS_OK) failure("fresh store: ts_store_add_reducer", status);
    snprintf(path, sizeof path, "%s/delay.so", plugin_dir);
    status = ts_store_load_plugin(store, path, NULL);
    if (status != TS_OK) failure("fresh store: load delay.so", status);
    for (i = 0; i < 10; i++) {
        status = ts_store_dispatch(store, (i & 1) ? INC : DELAYED_INC);
        if (status != TS_OK) failure("fresh store: dispatch", status);
    }
    ts_store_destroy(store);
    w->operations += 14;
}

static void *shared_worker(void *arg) {
    worker_state *w = arg;
    long i;
    ts_status status;
    for (i = 0; i < ops; i++) {
        unsigned r = next_random(&w->seed) % 16;
        w->operations++;
        if (r < 5) {
            status = ts_store_dispatch(shared, INC);
            if (status == TS_OK) {
                w->inc_ok++;
                w->notify_expected++;
            } else {
                failure("dispatch inc", status);
            }
        } else if (r < 8) {
            status = ts_store_dispatch(shared, DELAYED_INC);
            if (status == TS_OK) {
                w->delayed_ok++;
                w->notify_expected++; /* when the worker dispatches it */
            } else {
                failure("dispatch @@delay inc", status);
            }
        } else if (r < 10) {
            status = ts_store_dispatch(shared, "{\"type\":\"nest\"}");
            if (status == TS_OK) {
                w->nest_ok++;
                w->notify_expected += 2; /* the nested "inc" and "nest" */
            } else {
                failure("dispatch nest", status);
            }
        } else if (r < 12) {
            uint64_t token;
            if (w->token_count == MAX_TOKENS) {
                status = ts_store_unsubscribe(shared, w->tokens[0]);
                if (status != TS_OK) failure("unsubscribe", status);
                memmove(w->tokens, w->tokens + 1, sizeof w->tokens[0] * (MAX_TOKENS - 1));
                w->token_count--;
            }
            status = ts_store_subscribe(shared, (r & 1) ? "/count" : NULL, count_listener, &thread_listeners, &token);
            if (status == TS_OK)
                w->tokens[w->token_count++] = token;
            else
                failure("subscribe", status);
        } else if (r < 13) {
            if (w->token_count > 0) {
                status = ts_store_unsubscribe(shared, w->tokens[--w->token_count]);
                if (status != TS_OK) failure("unsubscribe", status);
            }
        } else if (r < 15) {
            char *text = NULL;
            status = ts_store_get_state(shared, (r & 1) ? "/count" : NULL, &text);
            if (status != TS_OK) {
                failure("get_state", status);
            } else if (r & 1) {
                long long now = strtoll(text, NULL, 10);
                if (now < w->last_count) failure("/count went down", TS_OK);
                w->last_count = now;
            }
            ts_free(text);
        } else if (i % 8 == 0) {
            fresh_store(w);
        } else if (i % 8 < 4) {
            /* Two middleware rules: next only once, only during its run(). */
            ts_next_fn next;
            status = ts_store_dispatch(shared, (i & 1) ? "{\"type\":\"keep\"}" : "{\"type\":\"twice\"}");
            if (status == TS_OK)
                w->notify_expected++;
            else
                failure("dispatch keep/twice", status);
            pthread_mutex_lock(&kept_mutex);
            next = kept_next;
            pthread_mutex_unlock(&kept_mutex);
            if (next != NULL) {
                status = next(INC); /* from another thread, after that run() returned */
                if (status == TS_E_MISUSE)
                    w->misuse_ok++;
                else
                    failure("a kept next called after its run() returned did not answer TS_E_MISUSE", status);
            }
        }
    }
    while (w->token_count > 0) {
        status = ts_store_unsubscribe(shared, w->tokens[--w->token_count]);
        if (status != TS_OK) failure("unsubscribe", status);
    }
    return NULL;
}

static long long phase_shared(void) {
    pthread_t ids[MAX_THREADS];
    worker_state states[MAX_THREADS];
    char path[4200], *text = NULL;
    long long expected = 0, notify_expected = 1 /* "done" */, operations = 0, count, lost, misuse = 0;
    uint64_t token;
    ts_status status;
    int i;
    struct timespec until;

    counter_init(&every_dispatch);
    counter_init(&done_seen);
    counter_init(&thread_listeners);
    if ((status = ts_store_create(NULL, &shared)) != TS_OK) {
        failure("ts_store_create", status);
        return 0;
    }
    snprintf(path, sizeof path, "%s/delay.so", plugin_dir);
    if ((status = ts_store_add_reducer(shared, "count", count_reducer, NULL)) != TS_OK ||
        (status = ts_store_add_reducer(shared, "done", done_reducer, NULL)) != TS_OK ||
        (status = ts_store_add_middleware(shared, "nesting", nesting_mw, NULL)) != TS_OK ||
        (status = ts_store_load_plugin(shared, path, NULL)) != TS_OK ||
        (status = ts_store_subscribe(shared, NULL, count_listener, &every_dispatch, &token)) != TS_OK ||
        (status = ts_store_subscribe(shared, "/done", count_listener, &done_seen, &token)) != TS_OK) {
        failure("setting up the shared store", status);
        ts_store_destroy(shared);
        return 0;
    }

    for (i = 0; i < threads; i++) {
        memset(&states[i], 0, sizeof states[i]);
        states[i].index = i;
        states[i].seed = 0x9e3779b9u * (unsigned)(i + 1);
        if (pthread_create(&ids[i], NULL, shared_worker, &states[i]) != 0) {
            failure("pthread_create", TS_OK);
            threads = i;
            break;
        }
    }
    for (i = 0; i < threads; i++) {
        pthread_join(ids[i], NULL);
        expected += states[i].inc_ok + states[i].delayed_ok + states[i].nest_ok;
        notify_expected += states[i].notify_expected;
        operations += states[i].operations;
        misuse += states[i].misuse_ok;
    }

    /* Every delayed "inc" was queued before this "done" with an earlier or
     * equal due time and an earlier sequence number: when "done" arrives, all
     * of them have been dispatched. The time limit only stops a hang. */
    status = ts_store_dispatch(shared, DELAYED_DONE);
    if (status != TS_OK) failure("dispatch @@delay done", status);
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 120;
    pthread_mutex_lock(&done_seen.mutex);
    while (done_seen.n == 0) {
        if (pthread_cond_timedwait(&done_seen.cond, &done_seen.mutex, &until) == ETIMEDOUT) break;
    }
    pthread_mutex_unlock(&done_seen.mutex);
    check(counter_get(&done_seen) == 1, "shared: the last delayed action arrived after all the others");

    status = ts_store_get_state(shared, "/count", &text);
    if (status != TS_OK) {
        failure("get_state /count", status);
        count = -1;
    } else {
        count = strtoll(text, NULL, 10);
    }
    ts_free(text);
    lost = expected > count ? expected - count : 0;
    printf("shared: %d threads, %lld increments acknowledged, count %lld\n", threads, expected, count);
    check(count == expected, "shared: count == increments acknowledged (no lost or doubled updates)");
    printf("shared: listener calls %lld, dispatches that reached the reducers %lld\n", counter_get(&every_dispatch),
           notify_expected);
    check(counter_get(&every_dispatch) == notify_expected, "shared: one listener call per dispatch that reached the reducers");
    printf("shared: %lld calls of a kept next after its run() answered TS_E_MISUSE\n", misuse);
    check(misuse > 0, "shared: a kept next called from another thread answers TS_E_MISUSE and changes nothing");
    check(twice_wrong == 0, "shared: a second call of next in one run() answers TS_E_MISUSE and changes nothing");
    ts_store_destroy(shared);
    printf("torture: %lld operations, lost updates: %lld, extra updates: %lld\n", operations, lost,
           count > expected ? count - expected : 0);
    return operations;
}

/* ---- Phase "shutdown" ----------------------------------------------------- */

typedef struct shutdown_state {
    int index;
    long operations;
} shutdown_state;

/* ts_store_destroy from inside one of the store's callbacks (a listener or
 * a middleware), on the thread that dispatched "bye", once: the store closes
 * at once and its plugins are destroyed when that dispatch returns. */
typedef struct bye {
    pthread_mutex_t mutex;
    pthread_t thread;
    ts_store *store;
    int armed, fired;
} bye;

static void bye_fire(bye *b) {
    int fire;
    pthread_mutex_lock(&b->mutex);
    fire = b->armed && !b->fired && pthread_equal(pthread_self(), b->thread);
    if (fire) b->fired = 1;
    pthread_mutex_unlock(&b->mutex);
    if (fire) ts_store_destroy(b->store);
}

static void bye_listener(ts_store *store, void *ctx) {
    (void)store;
    bye_fire(ctx);
}

static ts_status bye_mw(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)store;
    if (strcmp(action->type, "bye") == 0) bye_fire(ctx); /* then the dispatch under way goes on */
    return next(action->json);
}

static void *shutdown_worker(void *arg) {
    shutdown_state *s = arg;
    char delay_path[4200], other_path[4200], journal_file[4200], config[4400];
    long round;
    int i;
    ts_status status;
    snprintf(delay_path, sizeof delay_path, "%s/delay.so", plugin_dir);
    snprintf(journal_file, sizeof journal_file, "%s/journal-%d", work_dir, s->index);
    /* Rounds: 0 journal, 1 guard, destroyed from this thread; 2 journal,
     * destroyed from a listener; 3 guard, from a middleware before next. */
    for (round = 0; round < rounds; round++) {
        ts_store *store;
        int journal = (round % 2) == 0, mode = (int)(round % 4);
        uint64_t token;
        bye b;
        if ((status = ts_store_create(NULL, &store)) != TS_OK) {
            failure("shutdown: ts_store_create", status);
            continue;
        }
        pthread_mutex_init(&b.mutex, NULL);
        b.thread = pthread_self();
        b.store = store;
        b.armed = b.fired = 0;
        if ((status = ts_store_add_reducer(store, "count", count_reducer, NULL)) != TS_OK)
            failure("shutdown: ts_store_add_reducer", status);
        if (mode == 2 && (status = ts_store_subscribe(store, NULL, bye_listener, &b, &token)) != TS_OK)
            failure("shutdown: ts_store_subscribe", status);
        if (mode == 3 && (status = ts_store_add_middleware(store, "bye", bye_mw, &b)) != TS_OK)
            failure("shutdown: ts_store_add_middleware", status);
        if ((status = ts_store_load_plugin(store, delay_path, NULL)) != TS_OK)
            failure("shutdown: load delay.so", status);
        if (journal) {
            unlink(journal_file);
            snprintf(other_path, sizeof other_path, "%s/journal.so", plugin_dir);
            snprintf(config, sizeof config, "{\"path\":\"%s\",\"fsync\":\"never\",\"snapshot_every\":50}", journal_file);
        } else {
            snprintf(other_path, sizeof other_path, "%s/guard.so", plugin_dir);
            snprintf(config, sizeof config, "{\"deny\":[\"admin/*\"],\"require\":{\"todos/add\":[\"title\"]}}");
        }
        if ((status = ts_store_load_plugin(store, other_path, config)) != TS_OK)
            failure(journal ? "shutdown: load journal.so" : "shutdown: load guard.so", status);
        for (i = 0; i < SHUTDOWN_ACTIONS; i++) {
            status = ts_store_dispatch(store, DELAYED_INC);
            if (status != TS_OK) failure("shutdown: dispatch @@delay", status);
        }
        /* The delay worker is still dispatching them. */
        if (mode < 2) {
            ts_store_destroy(store);
        } else {
            pthread_mutex_lock(&b.mutex);
            b.armed = 1;
            pthread_mutex_unlock(&b.mutex);
            /* Destroyed during this dispatch, which still finishes. */
            status = ts_store_dispatch(store, "{\"type\":\"bye\"}");
            if (status != TS_OK) failure("shutdown: dispatch bye (destroyed inside)", status);
            if (!b.fired) {
                failure(mode == 2 ? "shutdown: the listener did not destroy the store"
                                  : "shutdown: the middleware did not destroy the store", TS_OK);
                ts_store_destroy(store);
            }
        }
        pthread_mutex_destroy(&b.mutex);
        s->operations += SHUTDOWN_ACTIONS + 6;
    }
    unlink(journal_file);
    return NULL;
}

static long long phase_shutdown(void) {
    pthread_t ids[MAX_THREADS];
    shutdown_state states[MAX_THREADS];
    long long operations = 0;
    int i, started = 0;
    int failed_before, failed_after;
    pthread_mutex_lock(&report_mutex);
    failed_before = failed;
    pthread_mutex_unlock(&report_mutex);
    for (i = 0; i < threads; i++) {
        states[i].index = i;
        states[i].operations = 0;
        if (pthread_create(&ids[i], NULL, shutdown_worker, &states[i]) != 0) {
            failure("pthread_create", TS_OK);
            break;
        }
        started++;
    }
    for (i = 0; i < started; i++) {
        pthread_join(ids[i], NULL);
        operations += states[i].operations;
    }
    pthread_mutex_lock(&report_mutex);
    failed_after = failed;
    pthread_mutex_unlock(&report_mutex);
    printf("shutdown: %d threads x %ld rounds: stores destroyed while the delay worker dispatched (%lld operations)\n",
           started, rounds, operations);
    check(failed_after == failed_before, "shutdown: every call answered as documented, nothing crashed");
    return operations;
}

/* ---- Main ----------------------------------------------------------------- */

/* ---- Phase 3: the token of a new subscription ----------------------------- */

/* ts_store_subscribe writes *out_token before the listener can first run. A
 * listener that another thread's dispatch calls at once reads the token its
 * subscriber is given; under ThreadSanitizer a token written after the
 * store's lock was released is a reported race, however the threads ran. */
typedef struct token_slot {
    ts_store *store;
    uint64_t token;
} token_slot;

static counter tokens_missing;
static volatile int token_phase_done;

static void token_listener(ts_store *store, void *ctx) {
    token_slot *slot = ctx;
    if (slot->token == 0) {
        count_listener(store, &tokens_missing);
        return;
    }
    ts_store_unsubscribe(store, slot->token);
}

static void *token_dispatcher(void *arg) {
    while (!__atomic_load_n(&token_phase_done, __ATOMIC_ACQUIRE)) {
        ts_status status = ts_store_dispatch((ts_store *)arg, INC);
        if (status != TS_OK) failure("token phase: dispatch", status);
    }
    return NULL;
}

static long long phase_token(void) {
    ts_store *store = NULL;
    pthread_t dispatcher;
    long n = ops, i;
    token_slot *slots = calloc((size_t)n, sizeof *slots);
    ts_status status;
    counter_init(&tokens_missing);
    if (slots == NULL || (status = ts_store_create(NULL, &store)) != TS_OK ||
        (status = ts_store_add_reducer(store, "count", count_reducer, NULL)) != TS_OK) {
        failure("token phase: set-up", TS_OK);
        free(slots);
        return 0;
    }
    token_phase_done = 0;
    pthread_create(&dispatcher, NULL, token_dispatcher, store);
    for (i = 0; i < n; i++) {
        slots[i].store = store;
        status = ts_store_subscribe(store, NULL, token_listener, &slots[i], &slots[i].token);
        if (status != TS_OK) failure("token phase: subscribe", status);
    }
    __atomic_store_n(&token_phase_done, 1, __ATOMIC_RELEASE);
    pthread_join(dispatcher, NULL);
    ts_store_destroy(store);
    free(slots);
    printf("token: %ld subscriptions while another thread dispatched\n", n);
    check(counter_get(&tokens_missing) == 0, "every listener found its subscription's token");
    return n;
}

/* ---- Phase "patch" ---------------------------------------------------------- */

/* ts_reducer_patch and the getters from many threads on one store: a patch
 * reducer that reads its slice and its payload with the getters (the slice's
 * index made by whichever thread reads it first), a pointer listener under
 * patches, and fresh stores made and destroyed meanwhile (each creation sets
 * the getters' slice-index function that the other threads read). */
static char *patch_reducer(const char *slice, const ts_action *action, void *ctx) {
    int64_t slot, n, value;
    char pointer[32], patch[256];
    (void)ctx;
    if (slice == NULL) {
        char *first = malloc(32 + 2 * MAX_THREADS);
        size_t at;
        int t;
        if (first == NULL) return NULL;
        at = (size_t)sprintf(first, "{\"n\":0,\"slots\":[");
        for (t = 0; t < MAX_THREADS; t++) at += (size_t)sprintf(first + at, t ? ",0" : "0");
        sprintf(first + at, "]}");
        return first;
    }
    if (strcmp(action->type, "patch/inc") != 0) return NULL;
    if (ts_json_get_int(action->payload, "/slot", &slot) != TS_OK || ts_json_get_int(slice, "/n", &n) != TS_OK) {
        ts_reducer_fail(ts_last_error());
        return NULL;
    }
    snprintf(pointer, sizeof pointer, "/slots/%lld", (long long)slot);
    if (ts_json_get_int(slice, pointer, &value) != TS_OK) {
        ts_reducer_fail(ts_last_error());
        return NULL;
    }
    snprintf(patch, sizeof patch,
             "[{\"op\":\"test\",\"path\":\"/n\",\"value\":%lld},{\"op\":\"replace\",\"path\":\"/n\",\"value\":%lld},"
             "{\"op\":\"replace\",\"path\":\"%s\",\"value\":%lld}]",
             (long long)n, (long long)n + 1, pointer, (long long)value + 1);
    if (ts_reducer_patch(patch) != TS_OK) ts_reducer_fail(ts_last_error());
    return NULL;
}

static ts_store *patched;
static counter slot0_changes;
/* Patch dispatches per thread: a tenth of --ops (a patch dispatch does more
 * work than the other phases' operations), at least 100. */
static long patch_ops;

static void *patch_worker(void *arg) {
    long slot = (long)(intptr_t)arg, i;
    char action[96];
    snprintf(action, sizeof action, "{\"type\":\"patch/inc\",\"payload\":{\"slot\":%ld}}", slot);
    for (i = 0; i < patch_ops; i++) {
        ts_status status = ts_store_dispatch(patched, action);
        if (status != TS_OK) failure("patch phase: dispatch", status);
        if (i % 64 == 0) {
            ts_store *fresh = NULL;
            status = ts_store_create(NULL, &fresh);
            if (status == TS_OK) status = ts_store_add_reducer(fresh, "p", patch_reducer, NULL);
            if (status == TS_OK) status = ts_store_dispatch(fresh, action);
            if (status != TS_OK) failure("patch phase: a fresh store", status);
            ts_store_destroy(fresh);
        }
    }
    return NULL;
}

static long long phase_patch(void) {
    pthread_t workers[MAX_THREADS];
    uint64_t token;
    int t;
    ts_status status;
    char *text = NULL;
    int64_t n = -1, value;
    counter_init(&slot0_changes);
    patch_ops = ops / 10 < 100 ? 100 : ops / 10;
    if ((status = ts_store_create(NULL, &patched)) != TS_OK ||
        (status = ts_store_add_reducer(patched, "p", patch_reducer, NULL)) != TS_OK ||
        (status = ts_store_subscribe(patched, "/p/slots/0", count_listener, &slot0_changes, &token)) != TS_OK) {
        failure("patch phase: set-up", status);
        return 0;
    }
    for (t = 0; t < threads; t++) pthread_create(&workers[t], NULL, patch_worker, (void *)(intptr_t)t);
    for (t = 0; t < threads; t++) pthread_join(workers[t], NULL);
    status = ts_store_get_state(patched, "/p", &text);
    check(status == TS_OK && ts_json_get_int(text, "/n", &n) == TS_OK && n == (int64_t)threads * patch_ops,
          "every patch applied once: /p/n is threads x patches");
    for (t = 0; t < threads && text != NULL; t++) {
        char pointer[32];
        snprintf(pointer, sizeof pointer, "/slots/%d", t);
        check(ts_json_get_int(text, pointer, &value) == TS_OK && value == patch_ops, "each thread's slot is its number of patches");
    }
    /* Only thread 0's patches change /p/slots/0: the listener skipped the others. */
    check(counter_get(&slot0_changes) == patch_ops, "the pointer listener ran once per change of its value");
    ts_free(text);
    ts_store_destroy(patched);
    printf("patch: %d threads x %ld patch dispatches, /p/n %lld\n", threads, patch_ops, (long long)n);
    return (long long)threads * patch_ops;
}

/* ---- Phase "tree" ----------------------------------------------------------- */

enum { TREE_PAD = 3000 }; /* padding items: the slice is about 85 KB, kept as a tree */

static char *tree_reducer(const ts_json *slice, const ts_action *action, void *ctx) {
    int64_t slot, n, value;
    ts_json found;
    char pointer[32], patch[256];
    (void)ctx;
    if (slice == NULL) {
        size_t cap = 64 + 4 * MAX_THREADS + 48 * TREE_PAD, at;
        char *first = malloc(cap);
        int t;
        if (first == NULL) return NULL;
        at = (size_t)sprintf(first, "{\"n\":0,\"slots\":[");
        for (t = 0; t < MAX_THREADS; t++) at += (size_t)sprintf(first + at, t ? ",0" : "0");
        at += (size_t)sprintf(first + at, "],\"pad\":[");
        for (t = 0; t < TREE_PAD; t++) at += (size_t)sprintf(first + at, "%s\"padding item number %d\"", t ? "," : "", t);
        sprintf(first + at, "]}");
        return first;
    }
    if (strcmp(action->type, "patch/inc") != 0) return NULL;
    if (ts_json_get_int(action->payload, "/slot", &slot) != TS_OK || ts_json_find(slice, "/n", &found) != TS_OK ||
        ts_json_int(&found, &n) != TS_OK) {
        ts_reducer_fail(ts_last_error());
        return NULL;
    }
    snprintf(pointer, sizeof pointer, "/slots/%lld", (long long)slot);
    if (ts_json_find(slice, pointer, &found) != TS_OK || ts_json_int(&found, &value) != TS_OK) {
        ts_reducer_fail(ts_last_error());
        return NULL;
    }
    snprintf(patch, sizeof patch,
             "[{\"op\":\"test\",\"path\":\"/n\",\"value\":%lld},{\"op\":\"replace\",\"path\":\"/n\",\"value\":%lld},"
             "{\"op\":\"replace\",\"path\":\"%s\",\"value\":%lld}]",
             (long long)n, (long long)n + 1, pointer, (long long)value + 1);
    if (ts_reducer_patch(patch) != TS_OK) ts_reducer_fail(ts_last_error());
    return NULL;
}

static ts_store *treed;
static counter tree_slot0_changes;

static void *tree_worker(void *arg) {
    long slot = (long)(intptr_t)arg, i;
    char action[96], pointer[32];
    snprintf(action, sizeof action, "{\"type\":\"patch/inc\",\"payload\":{\"slot\":%ld}}", slot);
    snprintf(pointer, sizeof pointer, "/p/slots/%ld", slot);
    for (i = 0; i < patch_ops; i++) {
        char *text = NULL;
        ts_status status = ts_store_dispatch(treed, action);
        if (status != TS_OK) failure("tree phase: dispatch", status);
        /* Reads between dispatches: a value, and now and then the whole slice. */
        status = ts_store_get_state(treed, (i % 32 == 0) ? "/p" : pointer, &text);
        if (status != TS_OK) failure("tree phase: get_state", status);
        ts_free(text);
    }
    return NULL;
}

static long long phase_tree(void) {
    pthread_t workers[MAX_THREADS];
    uint64_t token;
    int t;
    ts_status status;
    char *text = NULL;
    int64_t n = -1, value;
    counter_init(&tree_slot0_changes);
    patch_ops = ops / 10 < 100 ? 100 : ops / 10;
    if ((status = ts_store_create(NULL, &treed)) != TS_OK ||
        (status = ts_store_add_patch_reducer(treed, "p", NULL, tree_reducer, NULL)) != TS_OK ||
        (status = ts_store_subscribe(treed, "/p/slots/0", count_listener, &tree_slot0_changes, &token)) != TS_OK) {
        failure("tree phase: set-up", status);
        return 0;
    }
    for (t = 0; t < threads; t++) pthread_create(&workers[t], NULL, tree_worker, (void *)(intptr_t)t);
    for (t = 0; t < threads; t++) pthread_join(workers[t], NULL);
    status = ts_store_get_state(treed, "/p", &text);
    check(status == TS_OK && text != NULL && strlen(text) > 64 * 1024, "the tree phase's slice is big (kept as a tree)");
    check(status == TS_OK && ts_json_get_int(text, "/n", &n) == TS_OK && n == (int64_t)threads * patch_ops,
          "tree: every patch applied once: /p/n is threads x patches");
    for (t = 0; t < threads && text != NULL; t++) {
        char pointer[32];
        snprintf(pointer, sizeof pointer, "/slots/%d", t);
        check(ts_json_get_int(text, pointer, &value) == TS_OK && value == patch_ops,
              "tree: each thread's slot is its number of patches");
    }
    check(counter_get(&tree_slot0_changes) == patch_ops, "tree: the pointer listener ran once per change of its value");
    ts_free(text);
    ts_store_destroy(treed);
    printf("tree: %d threads x %ld patch dispatches with reads, /p/n %lld\n", threads, patch_ops, (long long)n);
    return (long long)threads * patch_ops;
}

static void usage(void) {
    fprintf(stderr, "usage: torture [--threads N] [--ops N] [--rounds N] [--only shutdown] PLUGIN_DIR\n");
    exit(2);
}

int main(int argc, char **argv) {
    int i;
    long long operations = 0;
    struct timespec t0, t1;
    const char *tmp = getenv("TMPDIR");
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
            if (threads < 1 || threads > MAX_THREADS) usage();
        } else if (strcmp(argv[i], "--ops") == 0 && i + 1 < argc) {
            ops = atol(argv[++i]);
        } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = atol(argv[++i]);
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc && strcmp(argv[i + 1], "shutdown") == 0) {
            only_shutdown = 1;
            i++;
        } else if (argv[i][0] != '-' && plugin_dir[0] == '\0') {
            snprintf(plugin_dir, sizeof plugin_dir, "%s", argv[i]);
        } else {
            usage();
        }
    }
    if (plugin_dir[0] == '\0') usage();
    snprintf(work_dir, sizeof work_dir, "%s/turnstate-torture-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(work_dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!only_shutdown) operations += phase_shared();
    if (!only_shutdown) operations += phase_token();
    if (!only_shutdown) operations += phase_patch();
    if (!only_shutdown) operations += phase_tree();
    operations += phase_shutdown();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    rmdir(work_dir);
    printf("torture: %lld operations in all, %d threads, %.1f s\n", operations, threads,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
