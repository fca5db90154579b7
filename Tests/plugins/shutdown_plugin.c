/*
 * shutdown_plugin.c - a test plugin that watches the store's shutdown
 * protocol from inside (Tests/plugins/test_shutdown.c).
 *
 * Config: {"id": N, "dispatch_in_destroy": bool, "thread": bool}
 * - run() counts a call that comes once the instance's destroy() has begun
 *   (the fault: a plugin run after its destroy);
 * - destroy() marks the instance destroyed first, then, with
 *   "dispatch_in_destroy", dispatches through its kept table and records the
 *   status; with "thread", stops and joins a thread that dispatches through
 *   the table in a loop and counts the dispatches that started after
 *   destroy() began yet returned TS_OK (the fault: applied after close).
 * The counters are in sp_report, which the test finds with dlsym (the
 * plugin is never unloaded, so the test's dlopen gets the same object).
 */
#define _POSIX_C_SOURCE 200809L

#include "turnstate_plugin.h"
#include "shutdown_plugin.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>


/* Exported for the test (visibility default): not part of the plugin ABI. */
sp_counters sp_report;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct instance {
    const ts_store_api *store;
    int id;
    int dispatch_in_destroy;
    int has_thread;
    pthread_t thread;
    pthread_mutex_t mutex;
    int destroying; /* guarded by mutex */
    int stop;       /* guarded by mutex */
    int free_on_exit; /* destroy() ran on the thread itself: it frees the instance */
} instance;

static int config_flag(const char *config, const char *name) {
    const char *at = strstr(config, name);
    return at != NULL && strncmp(at + strlen(name) + 1, "true", 4) == 0; /* "name":true (minified) */
}

static int config_id(const char *config) {
    const char *at = strstr(config, "\"id\":");
    return at ? atoi(at + 5) : 0;
}

static void *dispatcher(void *arg) {
    instance *in = arg;
    for (;;) {
        int destroying, stop;
        pthread_mutex_lock(&in->mutex);
        destroying = in->destroying;
        stop = in->stop;
        pthread_mutex_unlock(&in->mutex);
        if (stop) break;
        ts_status status = in->store->dispatch("{\"type\":\"tick\"}");
        pthread_mutex_lock(&report_lock);
        sp_report.thread_dispatches++;
        if (destroying && status == TS_OK) sp_report.ok_after_destroy_began++;
        if (destroying && status == TS_E_STORE_GONE) sp_report.gone_after_destroy_began++;
        pthread_mutex_unlock(&report_lock);
        if (destroying && status == TS_E_STORE_GONE) {
            /* Wait to be stopped: dispatching again would only spin. */
            pthread_mutex_lock(&in->mutex);
            stop = in->stop;
            pthread_mutex_unlock(&in->mutex);
            if (stop) break;
        }
    }
    pthread_mutex_lock(&in->mutex);
    int free_self = in->free_on_exit;
    pthread_mutex_unlock(&in->mutex);
    if (free_self) {
        pthread_mutex_destroy(&in->mutex);
        free(in);
    }
    return NULL;
}

static ts_status sp_create(const char *config, const ts_store_api *store, void **self, char **error_message) {
    (void)error_message;
    instance *in = calloc(1, sizeof *in);
    if (in == NULL) return TS_E_NOMEM;
    in->store = store;
    in->id = config_id(config);
    in->dispatch_in_destroy = config_flag(config, "\"dispatch_in_destroy\"");
    in->has_thread = config_flag(config, "\"thread\"");
    pthread_mutex_init(&in->mutex, NULL);
    if (in->has_thread && pthread_create(&in->thread, NULL, dispatcher, in) != 0) {
        pthread_mutex_destroy(&in->mutex);
        free(in);
        return TS_E_PLUGIN;
    }
    pthread_mutex_lock(&report_lock);
    sp_report.created++;
    pthread_mutex_unlock(&report_lock);
    *self = in;
    return TS_OK;
}

static ts_status sp_run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
    instance *in = self;
    (void)store;
    pthread_mutex_lock(&in->mutex);
    int destroying = in->destroying;
    pthread_mutex_unlock(&in->mutex);
    if (destroying) {
        pthread_mutex_lock(&report_lock);
        sp_report.run_after_destroy++;
        pthread_mutex_unlock(&report_lock);
    }
    return next(action->json);
}

static void sp_destroy(void *self) {
    instance *in = self;
    pthread_mutex_lock(&in->mutex);
    in->destroying = 1;
    pthread_mutex_unlock(&in->mutex);
    pthread_mutex_lock(&report_lock);
    if (sp_report.destroyed < 16) sp_report.destroy_order[sp_report.destroyed] = in->id;
    sp_report.destroyed++;
    pthread_mutex_unlock(&report_lock);
    if (in->dispatch_in_destroy) {
        ts_status status = in->store->dispatch("{\"type\":\"from-destroy\"}");
        pthread_mutex_lock(&report_lock);
        sp_report.destroy_dispatch_status = status;
        pthread_mutex_unlock(&report_lock);
    }
    if (in->has_thread) {
        pthread_mutex_lock(&in->mutex);
        in->stop = 1;
        if (pthread_equal(pthread_self(), in->thread)) {
            /* The last reference to a typed store was dropped while this
             * thread's dispatch held it: the store went on this thread. It
             * cannot join itself; it frees the instance on its way out. */
            in->free_on_exit = 1;
            pthread_mutex_unlock(&in->mutex);
            pthread_detach(in->thread);
            return;
        }
        pthread_mutex_unlock(&in->mutex);
        pthread_join(in->thread, NULL);
    }
    pthread_mutex_destroy(&in->mutex);
    free(in);
}

static const ts_plugin descriptor = {
    TS_PLUGIN_ABI_VERSION, sizeof(ts_plugin), "shutdown-watch", "1.0.0", sp_create, sp_run, sp_destroy,
};

const ts_plugin *ts_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 1u ? &descriptor : NULL;
}
