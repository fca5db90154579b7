/*
 * passthrough_plugin.c - the smallest middleware plugin: passes every action
 * on unchanged. Built three times (pass-a.so, pass-b.so, pass-c.so, the name
 * from -DPASS_NAME) for C3 and once more for the start-up benchmark, so that
 * those measure only the plugin machinery of the host.
 */
#include "turnstate_plugin.h"

#include <stddef.h>

#ifndef PASS_NAME
#define PASS_NAME "pass"
#endif

static ts_status create(const char *config_json, const ts_store_api *store, void **self, char **error_message) {
    (void)config_json;
    (void)store;
    (void)error_message;
    *self = NULL;
    return TS_OK;
}

static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
    (void)store;
    (void)self;
    return next(action->json);
}

static const ts_plugin descriptor = {
    TS_PLUGIN_ABI_VERSION, sizeof(ts_plugin), PASS_NAME, "1.0.0", create, run, NULL,
};

const ts_plugin *ts_plugin_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &descriptor;
}
