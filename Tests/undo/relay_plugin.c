/* relay_plugin.c - a test plugin for Tests/undo/relay.c: "relay" is
 * swallowed and an INCREMENT is applied from the plugin's place with
 * store->dispatch_after (as replicate.so applies other replicas' entries);
 * every other action is passed on with next. */
#include "turnstate_plugin.h"

#include <string.h>

static ts_status relay_create(const char *config, const ts_store_api *store, void **self, char **error) {
    (void)config;
    (void)store;
    (void)error;
    *self = NULL;
    return TS_OK;
}

static ts_status relay_run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
    (void)self;
    if (strcmp(action->type, "relay") == 0) return store->dispatch_after("{\"type\":\"INCREMENT\"}");
    return next(action->json);
}

static const ts_plugin descriptor = {
    TS_PLUGIN_ABI_VERSION, sizeof(ts_plugin), "relay", "1.0.0", relay_create, relay_run, NULL,
};

const ts_plugin *ts_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &descriptor;
}
