/* A test plugin for the loader (test_loader.c), built in several variants by
 * run.sh with -D flags: TP_ABI, TP_SIZE (descriptor fields), TP_FAIL_CREATE,
 * TP_NO_ENTRY (no ts_plugin_entry symbol), TP_NULL_ENTRY (entry returns NULL),
 * TP_NO_RUN (a descriptor without run), TP_NO_NAME (a descriptor without name).
 * Config: {"tag": "a", "marker": "/path"}. run() appends its tag to the
 * string payload of "trace" actions (so the state shows the chain's order);
 * destroy() appends its tag to the marker file (so a test sees the order of
 * destruction). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "turnstate_plugin.h"

#ifndef TP_ABI
#define TP_ABI TS_PLUGIN_ABI_VERSION
#endif
#ifndef TP_SIZE
#define TP_SIZE sizeof(ts_plugin)
#endif

typedef struct {
    char tag[32];
    char marker[512];
} test_plugin;

/* The string value of "key" in a flat config object (no escapes needed here). */
static void string_field(const char *json, const char *key, char *out, size_t size) {
    char pattern[64];
    const char *at, *end;
    out[0] = '\0';
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    if ((at = strstr(json, pattern)) == NULL) return;
    at += strlen(pattern);
    if ((end = strchr(at, '"')) == NULL || (size_t)(end - at) >= size) return;
    memcpy(out, at, (size_t)(end - at));
    out[end - at] = '\0';
}

static ts_status create(const char *config, const ts_store_api *store, void **self, char **error) {
    test_plugin *plugin;
    (void)store;
    if ((plugin = calloc(1, sizeof *plugin)) == NULL) return TS_E_NOMEM;
    string_field(config, "tag", plugin->tag, sizeof plugin->tag);
    string_field(config, "marker", plugin->marker, sizeof plugin->marker);
#ifdef TP_FAIL_CREATE
    (void)self;
    free(plugin);
    *error = strdup("refusing on purpose");
    return TS_E_PLUGIN;
#else
    (void)error;
    *self = plugin;
    return TS_OK;
#endif
}

#ifndef TP_NO_RUN
static ts_status run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
    test_plugin *plugin = self;
    char changed[256];
    size_t length;
    (void)store;
    if (strcmp(action->type, "trace") != 0 || action->payload == NULL) return next(action->json);
    length = strlen(action->payload); /* a JSON string: "..." */
    snprintf(changed, sizeof changed, "{\"type\":\"trace\",\"payload\":\"%.*s%s\"}", (int)(length - 2),
             action->payload + 1, plugin->tag);
    return next(changed);
}
#endif

static void destroy(void *self) {
    test_plugin *plugin = self;
    FILE *file;
    if (plugin == NULL) return;
    if (plugin->marker[0] != '\0' && (file = fopen(plugin->marker, "a")) != NULL) {
        fputs(plugin->tag, file);
        fclose(file);
    }
    free(plugin);
}

#ifdef TP_NO_RUN
#define TP_RUN NULL
#else
#define TP_RUN run
#endif
#ifdef TP_NO_NAME
#define TP_NAME NULL
#else
#define TP_NAME "loader-test"
#endif
static const ts_plugin descriptor = {TP_ABI, TP_SIZE, TP_NAME, "1.0", create, TP_RUN, destroy};

#ifndef TP_NO_ENTRY
const ts_plugin *ts_plugin_entry(uint32_t host_abi_version) {
#ifdef TP_NULL_ENTRY
    return host_abi_version == 0xFFFFFFFFu ? &descriptor : NULL; /* never: this host speaks 1 */
#else
    (void)host_abi_version;
    return &descriptor;
#endif
}
#else
const ts_plugin *not_the_entry(uint32_t host_abi_version);
const ts_plugin *not_the_entry(uint32_t host_abi_version) {
    (void)host_abi_version;
    return &descriptor;
}
#endif
