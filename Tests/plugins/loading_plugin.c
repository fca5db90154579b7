/*
 * loading_plugin.c - a test plugin for ts_store_api.loading
 * (Tests/plugins/test_loading.c), built by run.sh as plugins/loading/loading.so.
 *
 * create() records what loading answers there (its own name, "loading").
 * run() records, for each action (up to LP_SEEN), its type and what loading
 * answered (the status, and the name or "" for NULL), then passes it on;
 * for "null-out" it records the status of loading(NULL) instead.
 * The records are in lp_report, which the test finds with dlsym.
 */
#include "turnstate_plugin.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "loading_plugin.h"

/* Exported for the test (visibility default): not part of the plugin ABI. */
lp_counters lp_report;

static int has_loading(const ts_store_api *store) {
    return store->struct_size >= offsetof(ts_store_api, loading) + sizeof store->loading && store->loading != NULL;
}

static ts_status create(const char *config, const ts_store_api *store, void **self, char **error) {
    const char *name = NULL;
    (void)config;
    (void)error;
    lp_report.create_status = has_loading(store) ? store->loading(&name) : TS_E_ABI;
    snprintf(lp_report.create_name, sizeof lp_report.create_name, "%s", name ? name : "");
    *self = NULL;
    return TS_OK;
}

static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
    const char *name = NULL;
    (void)self;
    if (!has_loading(store)) return next(action->json);
    if (strcmp(action->type, "null-out") == 0) {
        lp_report.null_status = store->loading(NULL);
    } else if (lp_report.count < LP_SEEN) {
        lp_seen *s = &lp_report.seen[lp_report.count++];
        s->status = store->loading(&name);
        snprintf(s->type, sizeof s->type, "%s", action->type);
        snprintf(s->name, sizeof s->name, "%s", name ? name : "");
    }
    return next(action->json);
}

static const ts_plugin descriptor = {TS_PLUGIN_ABI_VERSION, sizeof(ts_plugin), "loading", "1.0.0", create, run, NULL};

TS_API const ts_plugin *ts_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 1 ? &descriptor : NULL;
}
