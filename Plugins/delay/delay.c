/*
 * delay - a Turnstate middleware plugin that dispatches an action later.
 *
 *   {"type": "@@delay", "payload": {"ms": 250, "action": {"type": "x", ...}}}
 *
 * is swallowed (not passed on) and its inner action is dispatched with
 * store->dispatch about `ms` milliseconds later, from the top of the chain,
 * by the instance's worker thread. The worker keeps a min-heap ordered by
 * due time (ties: the order they were queued) and sleeps on a condition
 * variable (CLOCK_MONOTONIC) until the earliest is due: no polling. Every
 * other action passes through unchanged. destroy() stops and joins the
 * worker; actions still pending then are dropped. See README.md.
 */
#define _POSIX_C_SOURCE 200809L

#include "turnstate_plugin.h"

#include "../common/pjson.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DELAY_VERSION "1.0.0"
#define DELAY_TYPE "@@delay"
#define DELAY_MAX_MS 2147483647LL
#define DELAY_DEFAULT_MAX_PENDING 100000LL

typedef struct item {
    uint64_t due_ns; /* CLOCK_MONOTONIC */
    uint64_t seq;
    char *json;
} item;

typedef struct delay {
    const ts_store_api *store;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    pthread_t worker;
    /* guarded by mutex */
    item *heap;
    size_t count, capacity;
    size_t max_pending;
    uint64_t next_seq;
    int stop;
    int destroyed_on_worker; /* destroy() ran on the worker: it frees itself */
} delay;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int earlier(const item *a, const item *b) {
    return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static void heap_push(delay *d, item it) {
    size_t i = d->count++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!earlier(&it, &d->heap[parent])) break;
        d->heap[i] = d->heap[parent];
        i = parent;
    }
    d->heap[i] = it;
}

static item heap_pop(delay *d) {
    item top = d->heap[0];
    item last = d->heap[--d->count];
    size_t i = 0, n = d->count;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const item *best = &last;
        if (l < n && earlier(&d->heap[l], best)) {
            m = l;
            best = &d->heap[l];
        }
        if (r < n && earlier(&d->heap[r], best)) m = r;
        if (m == i) break;
        d->heap[i] = d->heap[m];
        i = m;
    }
    if (n > 0) d->heap[i] = last;
    return top;
}

static void free_instance(delay *d) {
    size_t i;
    for (i = 0; i < d->count; i++) free(d->heap[i].json);
    free(d->heap);
    pthread_cond_destroy(&d->cond);
    pthread_mutex_destroy(&d->mutex);
    free(d);
}

static void *worker_main(void *arg) {
    delay *d = arg;
    int free_self;
    pthread_mutex_lock(&d->mutex);
    while (!d->stop) {
        uint64_t now;
        item it;
        ts_status status;
        if (d->count == 0) {
            pthread_cond_wait(&d->cond, &d->mutex);
            continue;
        }
        now = now_ns();
        if (d->heap[0].due_ns > now) {
            struct timespec until;
            until.tv_sec = (time_t)(d->heap[0].due_ns / 1000000000u);
            until.tv_nsec = (long)(d->heap[0].due_ns % 1000000000u);
            pthread_cond_timedwait(&d->cond, &d->mutex, &until);
            continue; /* re-check: stopped, new earlier item, or due */
        }
        it = heap_pop(d);
        pthread_mutex_unlock(&d->mutex);
        /* Dispatch without our lock: run() of this very instance takes it
         * when the inner action is itself a @@delay. */
        status = d->store->dispatch(it.json);
        /* TS_E_STORE_GONE: the store is closing and destroy() is about to
         * stop this worker; what is still pending is dropped, as documented. */
        if (status != TS_OK && status != TS_E_STORE_GONE) {
            fprintf(stderr, "turnstate delay: the delayed action %.300s failed with %s (%d)\n", it.json,
                    d->store->status_name(status), (int)status);
        }
        free(it.json);
        pthread_mutex_lock(&d->mutex);
    }
    free_self = d->destroyed_on_worker;
    pthread_mutex_unlock(&d->mutex);
    if (free_self) free_instance(d);
    return NULL;
}

static char *dup_message(const char *text) {
    size_t n = strlen(text) + 1;
    char *m = malloc(n);
    if (m) memcpy(m, text, n);
    return m;
}

static ts_status delay_create(const char *config_json, const ts_store_api *store, void **self, char **error_message) {
    char err[300];
    pthread_condattr_t attr;
    uint64_t max_pending = DELAY_DEFAULT_MAX_PENDING;
    pj_iter it;
    const char *k, *v;
    int r;
    delay *d;
    if (self == NULL || store == NULL) return TS_E_ARGUMENT;
    if (config_json == NULL) config_json = "{}";
    if (!pj_begin(&it, config_json, '{')) {
        snprintf(err, sizeof err, "delay: the config must be a JSON object, not %s", pj_kind_name(pj_kind_of(config_json)));
        goto fail;
    }
    while ((r = pj_next_member(&it, &k, &v)) == 1) {
        if (pj_str_eq(k, "max_pending")) {
            int got = pj_kind_of(v) == PJ_NUMBER ? pj_uint64(v, &max_pending) : PJ_U64_NOT_INTEGER;
            if (got != PJ_U64_OK || max_pending < 1 || max_pending > SIZE_MAX) {
                snprintf(err, sizeof err,
                         "delay: config field \"max_pending\" must be an integer from 1 to %llu, not %s",
                         (unsigned long long)SIZE_MAX,
                         got != PJ_U64_OK ? pj_uint64_why(pj_kind_of(v), got) : max_pending < 1 ? "0" : "a larger number");
                goto fail;
            }
        } else {
            char name[200];
            pj_str_show(k, name, sizeof name);
            snprintf(err, sizeof err, "delay: unknown config field \"%s\" (known: \"max_pending\")", name);
            goto fail;
        }
    }
    if (r < 0) {
        snprintf(err, sizeof err, "delay: the config is malformed JSON");
        goto fail;
    }
    d = calloc(1, sizeof *d);
    if (d == NULL) {
        snprintf(err, sizeof err, "delay: out of memory");
        goto fail;
    }
    d->store = store;
    d->max_pending = (size_t)max_pending;
    if (pthread_mutex_init(&d->mutex, NULL) != 0) {
        free(d);
        snprintf(err, sizeof err, "delay: pthread_mutex_init failed");
        goto fail;
    }
    if (pthread_condattr_init(&attr) != 0 || pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&d->cond, &attr) != 0) {
        pthread_mutex_destroy(&d->mutex);
        free(d);
        snprintf(err, sizeof err, "delay: could not make a CLOCK_MONOTONIC condition variable");
        goto fail;
    }
    pthread_condattr_destroy(&attr);
    r = pthread_create(&d->worker, NULL, worker_main, d);
    if (r != 0) {
        pthread_cond_destroy(&d->cond);
        pthread_mutex_destroy(&d->mutex);
        free(d);
        snprintf(err, sizeof err, "delay: could not start the worker thread: %s", strerror(r));
        goto fail;
    }
    *self = d;
    return TS_OK;
fail:
    if (error_message) *error_message = dup_message(err);
    return TS_E_PLUGIN;
}

static ts_status refuse(const ts_store_api *store, const char *why) {
    char msg[400];
    snprintf(msg, sizeof msg,
             "delay: bad \"" DELAY_TYPE "\" action: %s (expected {\"type\": \"" DELAY_TYPE
             "\", \"payload\": {\"ms\": <0..%lld>, \"action\": {\"type\": ...}}})",
             why, DELAY_MAX_MS);
    return store->fail(TS_E_REJECTED, msg);
}

static ts_status delay_run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
    delay *d = self;
    const char *payload = action->payload, *ms_value, *inner, *inner_end, *inner_type;
    uint64_t ms = 0;
    int got;
    char *type_text;
    size_t type_length = 0;
    item it;
    size_t length;

    if (strcmp(action->type, DELAY_TYPE) != 0) return next(action->json);

    if (payload == NULL) return refuse(store, "it has no payload");
    if (pj_kind_of(payload) != PJ_OBJECT) return refuse(store, "the payload is not an object");
    ms_value = pj_get(payload, "ms");
    if (ms_value == NULL) return refuse(store, "payload.ms is missing");
    if (pj_kind_of(ms_value) != PJ_NUMBER) return refuse(store, "payload.ms is not a number");
    got = pj_uint64(ms_value, &ms);
    if (got == PJ_U64_NEGATIVE) return refuse(store, "payload.ms is negative");
    if (got == PJ_U64_NOT_INTEGER) return refuse(store, "payload.ms is not an integer number of milliseconds");
    if (got == PJ_U64_TOO_LARGE || ms > (uint64_t)DELAY_MAX_MS) return refuse(store, "payload.ms is too large");
    inner = pj_get(payload, "action");
    if (inner == NULL) return refuse(store, "payload.action is missing");
    if (pj_kind_of(inner) != PJ_OBJECT) return refuse(store, "payload.action is not an object");
    inner_type = pj_get(inner, "type");
    if (inner_type == NULL || pj_kind_of(inner_type) != PJ_STRING || pj_ws(inner_type)[1] == '"')
        return refuse(store, "payload.action has no \"type\" (a non-empty string)");
    /* Refused now rather than when it is due: the host refuses such a type. */
    type_text = pj_str_dup(pj_ws(inner_type), &type_length);
    if (type_text == NULL) return store->fail(TS_E_NOMEM, "delay: out of memory");
    if (strlen(type_text) != type_length) {
        free(type_text);
        return refuse(store, "payload.action's \"type\" contains \\u0000 (NUL)");
    }
    free(type_text);
    inner = pj_ws(inner);
    inner_end = pj_skip(inner);
    if (inner_end == NULL) return refuse(store, "payload.action is malformed");

    length = (size_t)(inner_end - inner);
    it.json = malloc(length + 1);
    if (it.json == NULL) return store->fail(TS_E_NOMEM, "delay: out of memory");
    memcpy(it.json, inner, length);
    it.json[length] = '\0';
    it.due_ns = now_ns() + (uint64_t)ms * 1000000u;

    pthread_mutex_lock(&d->mutex);
    if (d->count >= d->max_pending) {
        char msg[200];
        pthread_mutex_unlock(&d->mutex);
        free(it.json);
        snprintf(msg, sizeof msg, "delay: too many pending actions (max_pending is %zu); \"" DELAY_TYPE "\" refused",
                 d->max_pending);
        return store->fail(TS_E_REJECTED, msg);
    }
    if (d->count == d->capacity) {
        size_t capacity = d->capacity ? d->capacity * 2 : 16;
        item *grown = realloc(d->heap, capacity * sizeof *grown);
        if (grown == NULL) {
            pthread_mutex_unlock(&d->mutex);
            free(it.json);
            return store->fail(TS_E_NOMEM, "delay: out of memory");
        }
        d->heap = grown;
        d->capacity = capacity;
    }
    it.seq = d->next_seq++;
    heap_push(d, it);
    pthread_cond_signal(&d->cond);
    pthread_mutex_unlock(&d->mutex);
    return TS_OK; /* swallowed */
}

static void delay_destroy(void *self) {
    delay *d = self;
    if (d == NULL) return;
    pthread_mutex_lock(&d->mutex);
    d->stop = 1;
    if (pthread_equal(pthread_self(), d->worker)) {
        /* The store is being destroyed from inside a delayed dispatch, on the
         * worker itself: it cannot join itself, so it frees the instance when
         * that dispatch returns (it will not touch the store again). */
        d->destroyed_on_worker = 1;
        pthread_mutex_unlock(&d->mutex);
        pthread_detach(d->worker);
        return;
    }
    pthread_cond_signal(&d->cond);
    pthread_mutex_unlock(&d->mutex);
    pthread_join(d->worker, NULL);
    free_instance(d); /* drops what was still pending */
}

static const ts_plugin descriptor = {
    TS_PLUGIN_ABI_VERSION, sizeof(ts_plugin), "delay", DELAY_VERSION, delay_create, delay_run, delay_destroy,
};

const ts_plugin *ts_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 1u ? &descriptor : NULL;
}
