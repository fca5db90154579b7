/*
 * unlock_plugin.c - a test plugin for ts_store_api.unlocked
 * (Tests/plugins/test_unlock.c), built by run.sh as plugins/unlock/unlock.so.
 *
 * run():
 * - "wait": lets go of the store with unlocked(); fn marks itself inside and
 *   waits until the test opens the gate; then run() passes the action on
 *   with next. The status of unlocked is recorded (ul_report.wait_status).
 * - "nested-exclusive": calls unlocked from inside exclusive's fn (the
 *   store held twice): records the status (ul_report.exclusive_status);
 * - "null-fn": records the status of unlocked(NULL, NULL).
 * - anything else: counted in ul_report.runs, passed on.
 * create() calls unlocked too (not inside run(): refused), and destroy()
 * records how many "wait" runs had finished when it began.
 * The counters are in ul_report, which the test finds with dlsym.
 */
#define _POSIX_C_SOURCE 200809L

#include "turnstate_plugin.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct ul_counters {
    int create_status;    /* unlocked from create() */
    int wait_status;      /* unlocked from run() of "wait", the last one */
    int exclusive_status; /* unlocked from inside exclusive's fn */
    int null_status;      /* unlocked(NULL, NULL) from run() of "null-fn" */
    int inside;           /* fns of "wait" running (without the store) */
    int waits_done;       /* "wait" runs that returned */
    int runs;             /* other runs */
    int destroyed;        /* destroy() ran */
    int waits_done_at_destroy;
    int gate_open;
} ul_counters;

/* Exported for the test (visibility default): not part of the plugin ABI. */
ul_counters ul_report;
pthread_mutex_t ul_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t ul_cond = PTHREAD_COND_INITIALIZER;

static ts_status nothing(void *ctx) {
    (void)ctx;
    return TS_OK;
}

static ts_status wait_for_gate(void *ctx) {
    (void)ctx;
    pthread_mutex_lock(&ul_lock);
    ul_report.inside++;
    pthread_cond_broadcast(&ul_cond);
    while (!ul_report.gate_open) pthread_cond_wait(&ul_cond, &ul_lock);
    ul_report.inside--;
    pthread_mutex_unlock(&ul_lock);
    return 7; /* fn's own value comes back from unlocked */
}

static ts_status unlock_in_exclusive(void *ctx) {
    const ts_store_api *store = ctx;
    return store->unlocked(nothing, NULL);
}

static ts_status create(const char *config, const ts_store_api *store, void **self, char **error) {
    (void)config;
    (void)error;
    ul_report.create_status = store->unlocked(nothing, NULL);
    *self = (void *)store;
    return TS_OK;
}

static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
    (void)self;
    if (strcmp(action->type, "wait") == 0) {
        ts_status status = store->unlocked(wait_for_gate, NULL), passed;
        pthread_mutex_lock(&ul_lock);
        ul_report.wait_status = status;
        pthread_mutex_unlock(&ul_lock);
        passed = next(action->json);
        pthread_mutex_lock(&ul_lock);
        ul_report.waits_done++;
        pthread_cond_broadcast(&ul_cond);
        pthread_mutex_unlock(&ul_lock);
        return passed;
    }
    if (strcmp(action->type, "null-fn") == 0) {
        ul_report.null_status = store->unlocked(NULL, NULL);
        return next(action->json);
    }
    if (strcmp(action->type, "nested-exclusive") == 0) {
        ul_report.exclusive_status = store->exclusive(unlock_in_exclusive, (void *)store);
        return next(action->json);
    }
    pthread_mutex_lock(&ul_lock);
    ul_report.runs++;
    pthread_mutex_unlock(&ul_lock);
    return next(action->json);
}

static void destroy(void *self) {
    (void)self;
    pthread_mutex_lock(&ul_lock);
    ul_report.destroyed = 1;
    ul_report.waits_done_at_destroy = ul_report.waits_done;
    pthread_mutex_unlock(&ul_lock);
}

static const ts_plugin descriptor = {TS_PLUGIN_ABI_VERSION, sizeof(ts_plugin), "unlock", "1.0.0", create, run, destroy};

TS_API const ts_plugin *ts_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 1 ? &descriptor : NULL;
}
