/*
 * plugin_test.h - the plugin tests' helpers (Tests/plugins), on the one C
 * harness (Tests/harness/ts_test.h: tests named test_<topic>__<rule>, the
 * registry and main() written by gen_registry.py, the summary line).
 *
 * Checks: TP_CHECK(name, condition), TP_CHECK_STATUS, TP_CHECK_INT,
 * TP_CHECK_STR, TP_CHECK_CONTAINS: ts_test.h's checks with a name that says
 * what is checked. Options: tp_option() reads --plugins DIR (tp_plugin_dir(),
 * tp_plugin(NAME)) for a program's ts_test_suite_option.
 *
 * Loading: tp_load(store, path, config) loads a plugin the way users do,
 * through ts_store_load_plugin, when the library exports it (looked up at
 * run time, so these tests build against a library that does not have it
 * yet). Otherwise, or with TP_FORCE_HARNESS=1 in the environment, it uses a
 * stand-in of the same shape: it dlopens the plugin, adds a middleware to the
 * end of the chain with ts_store_add_middleware, and calls the plugin's
 * create() from inside that middleware (the only place a test can get the
 * store's ts_store_api table), so create() sees the table it will run with
 * and is itself not yet in the chain. tp_destroy() then runs the plugins'
 * destroy() in reverse order before ts_store_destroy, as the library will.
 */
#ifndef TP_PLUGIN_TEST_H
#define TP_PLUGIN_TEST_H

#define _GNU_SOURCE 1

#include "ts_test.h"
#include "turnstate.h"
#include "turnstate_plugin.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- Checks ------------------------------------------------------------- */

/* Named checks on the harness (ts_test.h): `name` says what is checked and is
 * printed as the failed expression, the condition and the values below it.
 * Each returns whether it passed. */
#define TP_CHECK(name, cond) ts_test_reportf((cond) ? 1 : 0, __FILE__, __LINE__, (name), "%s", #cond)

#define TP_CHECK_STATUS(name, got, want) tp_check_status((got), (want), __FILE__, __LINE__, (name))
static inline int tp_check_status(ts_status got, ts_status want, const char *file, int line, const char *name) {
    return ts_test_reportf(got == want, file, line, name, "got %s (%d), want %s; last error: %s",
                           ts_status_name(got), (int)got, ts_status_name(want), ts_last_error());
}

#define TP_CHECK_CONTAINS(name, text, needle) tp_check_contains((text), (needle), __FILE__, __LINE__, (name))
static inline int tp_check_contains(const char *text, const char *needle, const char *file, int line,
                                    const char *name) {
    return ts_test_reportf(text != NULL && strstr(text, needle) != NULL, file, line, name,
                           "\"%.400s\" does not contain \"%s\"", text ? text : "(null)", needle);
}

#define TP_CHECK_STR(name, got, want) tp_check_str((got), (want), __FILE__, __LINE__, (name))
static inline int tp_check_str(const char *got, const char *want, const char *file, int line, const char *name) {
    return ts_test_reportf(got != NULL && strcmp(got, want) == 0, file, line, name, "got \"%.400s\", want \"%.400s\"",
                           got ? got : "(null)", want);
}

#define TP_CHECK_INT(name, got, want) tp_check_int((long long)(got), (long long)(want), __FILE__, __LINE__, (name))
static inline int tp_check_int(long long got, long long want, const char *file, int line, const char *name) {
    return ts_test_reportf(got == want, file, line, name, "got %lld, want %lld", got, want);
}

/* ---- Time ----------------------------------------------------------------- */

static inline double tp_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline void tp_sleep_ms(long ms) {
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- Paths ---------------------------------------------------------------- */

/* The folder of the plugins: --plugins DIR, else $TP_PLUGIN_DIR, else build/plugins. */
static const char *tp_plugin_dir_option;
static inline const char *tp_plugin_dir(void) {
    const char *env = getenv("TP_PLUGIN_DIR");
    if (tp_plugin_dir_option != NULL) return tp_plugin_dir_option;
    return env != NULL && *env != '\0' ? env : "build/plugins";
}

static inline const char *tp_plugin(const char *name) {
    static char paths[8][1024];
    static int turn;
    char *p = paths[turn++ % 8];
    snprintf(p, 1024, "%s/%s.so", tp_plugin_dir(), name);
    return p;
}

/* The option every plugin test program takes, --plugins DIR: its
 * ts_test_suite_option (ts_test.h) returns tp_option(argc, argv, i). */
static inline int tp_option(int argc, char **argv, int i) {
    if (strcmp(argv[i], "--plugins") == 0 && i + 1 < argc) {
        tp_plugin_dir_option = argv[i + 1];
        return 2;
    }
    return 0;
}

/* A failed check's last line: ts_last_error() (ts_test_on_failure). */
static inline void tp_show_last_error(FILE *out, int has_detail) {
    (void)has_detail;
    fprintf(out, "    last error: %s\n", ts_last_error());
}

/* ---- State helpers ------------------------------------------------------------ */

/* The value at pointer as a new string (free with free), or NULL. */
static inline char *tp_state(ts_store *store, const char *pointer) {
    char *json = NULL, *copy;
    if (ts_store_get_state(store, pointer, &json) != TS_OK) return NULL;
    copy = malloc(strlen(json) + 1);
    if (copy) strcpy(copy, json);
    ts_free(json);
    return copy;
}

/* The integer at pointer, or fallback. */
static inline long long tp_state_int(ts_store *store, const char *pointer, long long fallback) {
    char *text = tp_state(store, pointer);
    long long v = fallback;
    if (text) {
        char *end;
        long long parsed = strtoll(text, &end, 10);
        if (end != text && *end == '\0') v = parsed;
        free(text);
    }
    return v;
}

/* A reducer for "counter": +1 for "inc", +N for {"type":"add","payload":N},
 * invalid JSON (a reducer failure) for "boom". */
static inline char *tp_counter_reducer(const char *slice, const ts_action *action, void *ctx) {
    char *out;
    long long v;
    (void)ctx;
    if (slice == NULL) {
        out = malloc(2);
        if (out) strcpy(out, "0");
        return out;
    }
    if (strcmp(action->type, "boom") == 0) {
        out = malloc(8);
        if (out) strcpy(out, "{oops");
        return out;
    }
    v = strtoll(slice, NULL, 10);
    if (strcmp(action->type, "inc") == 0) v += 1;
    else if (strcmp(action->type, "add") == 0 && action->payload) v += strtoll(action->payload, NULL, 10);
    else return NULL;
    out = malloc(32);
    if (out) snprintf(out, 32, "%lld", v);
    return out;
}

/* ---- Capturing stderr ----------------------------------------------------- */

static int tp_saved_stderr = -1;
static FILE *tp_capture_file;

static inline void tp_capture_begin(void) {
    fflush(stderr);
    tp_capture_file = tmpfile();
    tp_saved_stderr = dup(2);
    if (tp_capture_file) dup2(fileno(tp_capture_file), 2);
}

/* True if the captured text so far contains needle (capture still on). */
static inline int tp_capture_has(const char *needle) {
    char buf[65536];
    ssize_t n;
    fflush(stderr);
    if (tp_capture_file == NULL) return 0;
    n = pread(fileno(tp_capture_file), buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

/* Waits (polling every 10 ms, up to seconds) until the captured text
 * contains needle: for text that another thread writes. */
static inline int tp_capture_wait(const char *needle, double seconds) {
    double deadline = tp_now() + seconds;
    while (!tp_capture_has(needle)) {
        if (tp_now() > deadline) return 0;
        tp_sleep_ms(10);
    }
    return 1;
}

/* Ends the capture; returns what was written (free with free). */
static inline char *tp_capture_end(void) {
    char *text;
    long size;
    fflush(stderr);
    if (tp_saved_stderr >= 0) {
        dup2(tp_saved_stderr, 2);
        close(tp_saved_stderr);
        tp_saved_stderr = -1;
    }
    if (tp_capture_file == NULL) return NULL;
    fseek(tp_capture_file, 0, SEEK_END);
    size = ftell(tp_capture_file);
    rewind(tp_capture_file);
    text = malloc((size_t)size + 1);
    if (text) {
        size_t got = fread(text, 1, (size_t)size, tp_capture_file);
        text[got] = '\0';
    }
    fclose(tp_capture_file);
    tp_capture_file = NULL;
    return text;
}

/* ---- Loading plugins -------------------------------------------------------- */

typedef ts_status (*tp_load_fn)(ts_store *store, const char *path, const char *config_json);

static inline tp_load_fn tp_real_loader(void) {
    const char *force = getenv("TP_FORCE_HARNESS");
    void *sym;
    tp_load_fn fn = NULL;
    if (force && strcmp(force, "1") == 0) return NULL;
    sym = dlsym(RTLD_DEFAULT, "ts_store_load_plugin");
    if (sym) memcpy(&fn, &sym, sizeof fn);
    return fn;
}

static inline const char *tp_loader_name(void) {
    return tp_real_loader() ? "ts_store_load_plugin" : "the test harness (ts_store_add_middleware + create)";
}

#define TP_CREATE_TYPE "@@harness/create"
#define TP_MAX_ADAPTERS 256

typedef struct tp_adapter {
    ts_store *store;
    const ts_plugin *plugin;
    void *self;
    const char *config;
    int created, failed, creating;
} tp_adapter;

static tp_adapter *tp_adapters[TP_MAX_ADAPTERS];
static int tp_adapter_count;

static inline ts_status tp_adapter_run(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) {
    tp_adapter *ad = ctx;
    if (strcmp(action->type, TP_CREATE_TYPE) == 0) {
        char *error = NULL;
        char message[1024];
        ts_status status;
        if (ad->created || ad->failed || ad->creating) return next(action->json);
        ad->creating = 1;
        status = ad->plugin->create(ad->config, api, &ad->self, &error);
        ad->creating = 0;
        if (status == TS_OK) {
            ad->created = 1;
            free(error);
            return TS_OK;
        }
        ad->failed = 1;
        snprintf(message, sizeof message, "plugin \"%s\": create failed with %s: %s", ad->plugin->name,
                 ts_status_name(status), error ? error : "(no message)");
        free(error);
        return api->fail(TS_E_PLUGIN, message);
    }
    if (!ad->created) return next(action->json);
    return ad->plugin->run(api, next, action, ad->self);
}

static inline ts_status tp_harness_load(ts_store *store, const char *path, const char *config) {
    void *handle, *sym;
    ts_plugin_entry_fn entry;
    const ts_plugin *plugin;
    tp_adapter *ad;
    ts_status status;
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        fprintf(stderr, "harness: dlopen %s: %s\n", path, dlerror());
        return TS_E_PLUGIN;
    }
    sym = dlsym(handle, TS_PLUGIN_ENTRY_SYMBOL);
    if (sym == NULL) return TS_E_PLUGIN;
    memcpy(&entry, &sym, sizeof entry);
    plugin = entry(TS_PLUGIN_ABI_VERSION);
    if (plugin == NULL || plugin->abi_version != TS_PLUGIN_ABI_VERSION || plugin->struct_size < sizeof(ts_plugin))
        return TS_E_ABI;
    if (tp_adapter_count == TP_MAX_ADAPTERS) return TS_E_NOMEM;
    ad = calloc(1, sizeof *ad);
    if (ad == NULL) return TS_E_NOMEM;
    ad->store = store;
    ad->plugin = plugin;
    ad->config = config ? config : "{}";
    status = ts_store_add_middleware(store, plugin->name, tp_adapter_run, ad);
    if (status != TS_OK) {
        free(ad);
        return status;
    }
    tp_adapters[tp_adapter_count++] = ad;
    status = ts_store_dispatch(store, "{\"type\":\"" TP_CREATE_TYPE "\"}");
    return status;
}

/* Loads the plugin at path into store (see the top of this file). */
static inline ts_status tp_load(ts_store *store, const char *path, const char *config) {
    tp_load_fn real = tp_real_loader();
    if (real) return real(store, path, config);
    return tp_harness_load(store, path, config);
}

/* Destroys store and (for the harness) its plugin instances, last first. */
static inline void tp_destroy(ts_store *store) {
    int i, kept = 0;
    for (i = tp_adapter_count - 1; i >= 0; i--) {
        tp_adapter *ad = tp_adapters[i];
        if (ad->store == store && ad->created && ad->plugin->destroy) ad->plugin->destroy(ad->self);
    }
    ts_store_destroy(store);
    for (i = 0; i < tp_adapter_count; i++) {
        if (tp_adapters[i]->store == store) free(tp_adapters[i]);
        else tp_adapters[kept++] = tp_adapters[i];
    }
    tp_adapter_count = kept;
}

/* The descriptor of a plugin, by dlopen (for tests that call it directly). */
static inline const ts_plugin *tp_descriptor(const char *path, uint32_t host_abi) {
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL), *sym;
    ts_plugin_entry_fn entry;
    if (handle == NULL) return NULL;
    sym = dlsym(handle, TS_PLUGIN_ENTRY_SYMBOL);
    if (sym == NULL) return NULL;
    memcpy(&entry, &sym, sizeof entry);
    return entry(host_abi);
}

/* A ts_store_api table with no store behind it, for direct create() calls. */
static inline ts_status tp_fake_dispatch(const char *json) {
    (void)json;
    return TS_OK;
}
static inline ts_status tp_fake_get_state(const char *pointer, char **out) {
    (void)pointer;
    *out = malloc(3);
    if (*out) strcpy(*out, "{}");
    return TS_OK;
}
static inline void tp_fake_free(void *p) { free(p); }
static inline ts_status tp_fake_fail(ts_status status, const char *message) {
    (void)message;
    return status;
}
static inline ts_status tp_fake_replace_state(const char *json) {
    (void)json;
    return TS_OK;
}
static inline ts_store_api tp_fake_api(uint32_t struct_size) {
    ts_store_api api;
    memset(&api, 0, sizeof api);
    api.struct_size = struct_size;
    api.dispatch = tp_fake_dispatch;
    api.get_state = tp_fake_get_state;
    api.free = tp_fake_free;
    api.fail = tp_fake_fail;
    api.replace_state = tp_fake_replace_state;
    return api;
}

#endif /* TP_PLUGIN_TEST_H */
