/*
 * fuzz_plugin_config - the config of every shipped plugin.
 *
 * The first byte of the input picks the plugin ('g' guard, 'd' delay,
 * 'j' journal, 'l' logger, 'u' undo; other bytes modulo 4), the rest is its config
 * text. The harness works in a temporary folder, and refuses (skips) config
 * text that could name a file outside it (any '/', "\/" or "\u002f"): the
 * journal and the logger create the file their "path" names.
 *
 * Invariants:
 * - config text that is not valid JSON is refused with TS_E_JSON, valid JSON
 *   never is; a plugin's refusal is TS_E_PLUGIN (or TS_E_NOMEM); every
 *   refusal has a message, leaves the state byte-identical and calls no
 *   listener;
 * - with an accepted plugin, a few actions dispatch with documented
 *   statuses and leave a valid state; destroying the store is clean.
 */
#include "fuzz_common.h"

#include <ctype.h>
#include <fcntl.h>
#include <sanitizer/common_interface_defs.h>

static char dir[256], plugins[5][4200];
static int saved_stderr = -1, dev_null = -1;
static int listener_calls;

static void cleanup(void) {
    if (dir[0]) {
        fz_empty_dir(dir);
        rmdir(dir);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    const char *tmp = getenv("TMPDIR");
    static const char *const names[5] = {"guard", "delay", "journal", "logger", "undo"};
    int i;
    (void)argc;
    (void)argv;
    for (i = 0; i < 5; i++) snprintf(plugins[i], sizeof plugins[i], "%s/%s.so", fz_plugin_dir(), names[i]);
    snprintf(dir, sizeof dir, "%s/ts-fuzz-config.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL || chdir(dir) != 0) {
        perror(dir);
        abort();
    }
    atexit(cleanup);
    saved_stderr = dup(2);
    dev_null = open("/dev/null", O_WRONLY);
    if (saved_stderr < 0 || dev_null < 0) abort();
    __sanitizer_set_report_fd((void *)(intptr_t)saved_stderr);
    return 0;
}

/* The logger logs to stderr without "path", the journal warns there. */
static void quiet(int on) {
    fflush(stderr);
    dup2(on ? dev_null : saved_stderr, 2);
}

static int names_outside(const char *config) {
    const char *p;
    if (strchr(config, '/')) return 1;
    for (p = config; (p = strstr(p, "\\u")) != NULL; p += 2) {
        if (strncmp(p + 2, "002", 3) == 0 && tolower((unsigned char)p[5]) == 'f') return 1;
    }
    return 0;
}

static void listener(ts_store *store, void *ctx) {
    (void)store;
    (void)ctx;
    listener_calls++;
}

static char *counter(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice == NULL) return fz_strndup("0", 1);
    if (strcmp(action->type, "inc") == 0) return fz_strndup("1", 1);
    return NULL;
}

static const char *const actions[] = {
    "{\"type\":\"inc\",\"payload\":{\"title\":\"t\"}}",
    "{\"type\":\"todos\\/add\",\"payload\":{\"title\":\"x\",\"id\":1}}",
    "{\"type\":\"@@delay\",\"payload\":{\"ms\":0,\"action\":{\"type\":\"inc\"}}}",
    "{\"type\":\"debug\\/x\"}",
    "{\"type\":\"@@undo\"}",
    "{\"type\":\"@@undo/jump\",\"payload\":1}",
    "{\"type\":\"@@undo/status\"}",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *config, *before, *after;
    const char *plugin;
    ts_store *store = NULL;
    uint64_t token;
    ts_status s;
    int which, valid;
    size_t i;

    if (size < 1) return 0;
    switch (data[0]) {
    case 'g': which = 0; break;
    case 'd': which = 1; break;
    case 'j': which = 2; break;
    case 'l': which = 3; break;
    case 'u': which = 4; break;
    default: which = data[0] % 4;
    }
    plugin = plugins[which];
    config = fz_cstring(data + 1, size - 1);
    if (names_outside(config)) {
        free(config);
        return -1; /* not added to the corpus */
    }
    valid = fz_json_valid(config, NULL);

    FZ_CHECK(ts_store_create("{\"n\":0}", &store) == TS_OK, "ts_store_create");
    FZ_CHECK(ts_store_add_reducer(store, "n", counter, NULL) == TS_OK, "add_reducer");
    FZ_CHECK(ts_store_subscribe(store, NULL, listener, NULL, &token) == TS_OK, "subscribe");
    before = fz_state(store);
    listener_calls = 0;
    quiet(1);
    s = ts_store_load_plugin(store, plugin, config);
    quiet(0);
    after = fz_state(store);
    if (s != TS_OK) {
        FZ_CHECK_FAILURE(s, plugin, TS_E_JSON, TS_E_PLUGIN, TS_E_NOMEM);
        FZ_CHECK((s == TS_E_JSON) == !valid, "%s: config %s JSON was refused with %s: %.300s", plugin,
                 valid ? "valid" : "invalid", ts_status_name(s), config);
        FZ_CHECK(strcmp(before, after) == 0, "a refused plugin changed the state: %.300s -> %.300s", before, after);
        FZ_CHECK(listener_calls == 0, "a refused plugin load called a listener");
    } else {
        FZ_CHECK(valid, "%s accepted invalid config JSON: %.300s", plugin, config);
        quiet(1);
        for (i = 0; i < sizeof actions / sizeof actions[0]; i++) {
            s = ts_store_dispatch(store, actions[i]);
            if (s != TS_OK) {
                quiet(0);
                FZ_CHECK_FAILURE(s, "ts_store_dispatch", TS_E_REJECTED, TS_E_IO, TS_E_NOMEM);
                quiet(1);
            }
        }
        quiet(0);
        ts_free(after);
        after = fz_state(store);
        fz_check_state_text(after, "after dispatching through the plugin");
    }
    quiet(1);
    ts_store_destroy(store);
    quiet(0);
    ts_free(before);
    ts_free(after);
    free(config);
    fz_empty_dir(dir);
    return 0;
}
