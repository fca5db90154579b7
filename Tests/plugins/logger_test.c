/*
 * logger_test.c - tests of the logger plugin (Plugins/logger, written in
 * Swift) through the store's own loader, ts_store_load_plugin.
 *
 *     logger_test [-s TEST]... PATH/TO/logger.so
 *
 * On the C harness (Tests/harness/ts_test.h, its registry written by
 * gen_registry.py --suite logger): prints each failed check and ends with
 * "logger: N passed, M failed"; exits 0 only if nothing failed. Plain C99
 * (+ POSIX); Tests/plugins/logger_run.sh builds the plugin and this test and
 * runs it. The logs are in a temporary folder, removed unless a check failed.
 */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700 /* realpath */

#include "ts_test.h"
#include "turnstate.h"
#include "turnstate_plugin.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Sizes that keep every snprintf below provably untruncated. */
#define DIR_SIZE 512
#define PATH_SIZE 1024
#define CONFIG_SIZE 2048

static const char *plugin_path;
static char dir[DIR_SIZE];

static void path_in_dir(char out[PATH_SIZE], const char *name) {
    snprintf(out, PATH_SIZE, "%s/%s", dir, name);
}

/* ---- Reducers and a middleware that run after the logger ---------------- */

static char *copy(const char *text) {
    char *out = malloc(strlen(text) + 1);
    if (out) strcpy(out, text);
    return out;
}

static char *counter_reducer(const char *slice, const ts_action *action, void *ctx) {
    char buffer[32];
    (void)ctx;
    if (slice == NULL) return copy("0");
    if (strcmp(action->type, "counter/inc") == 0) {
        snprintf(buffer, sizeof buffer, "%lld", atoll(slice) + 1);
        return copy(buffer);
    }
    if (strcmp(action->type, "counter/set") == 0 && action->payload) return copy(action->payload);
    if (strcmp(action->type, "fail/reducer") == 0) return copy("{not json");
    return NULL;
}

static char *todos_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice == NULL) return copy("[]");
    if (strcmp(action->type, "todos/add") == 0 && action->payload) {
        size_t length = strlen(slice), extra = strlen(action->payload);
        char *out = malloc(length + extra + 2);
        if (!out) return NULL;
        memcpy(out, slice, length - 1); /* without the closing ] */
        out[length - 1] = '\0';
        if (length > 2) strcat(out, ",");
        strcat(out, action->payload);
        strcat(out, "]");
        return out;
    }
    return NULL;
}

/* Returns a slice equal to the one it got: a reducer ran, nothing changed. */
static char *settings_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice == NULL) return copy("{\"theme\":\"dark\"}");
    if (strcmp(action->type, "settings/same") == 0) return copy(slice);
    return NULL;
}

/* Added after the logger: refuses, swallows, replaces the state, dispatches. */
static ts_status guard_middleware(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)ctx;
    if (strcmp(action->type, "guard/refuse") == 0) return store->fail(TS_E_REJECTED, "refused by the test");
    if (strcmp(action->type, "guard/swallow") == 0) return TS_OK;
    if (strcmp(action->type, "test/replace") == 0)
        return store->replace_state("{\"counter\":100,\"todos\":[],\"settings\":{\"theme\":\"dark\"}}");
    if (strcmp(action->type, "fuzz/replace") == 0) return store->replace_state(action->payload);
    if (strcmp(action->type, "test/nested") == 0) {
        ts_status status = store->dispatch("{\"type\":\"counter/inc\"}");
        if (status != TS_OK) return status;
    }
    return next(action->json);
}

static ts_store *new_store(void) {
    ts_store *store = NULL;
    if (ts_store_create("{\"extra\":{\"k\":[1,2]}}", &store) != TS_OK) {
        fprintf(stdout, "ts_store_create failed: %s\n", ts_last_error());
        exit(2);
    }
    if (ts_store_add_reducer(store, "counter", counter_reducer, NULL) != TS_OK ||
        ts_store_add_reducer(store, "todos", todos_reducer, NULL) != TS_OK ||
        ts_store_add_reducer(store, "settings", settings_reducer, NULL) != TS_OK) {
        fprintf(stdout, "ts_store_add_reducer failed: %s\n", ts_last_error());
        exit(2);
    }
    return store;
}

/* A store with the logger (config `config`) and then the guard middleware. */
static ts_store *store_with_logger(const char *config) {
    ts_store *store = new_store();
    ts_status status = ts_store_load_plugin(store, plugin_path, config);
    if (!CHECK_MSG(status == TS_OK, "loading the logger with %s: %s: %s", config ? config : "NULL", ts_status_name(status),
               ts_last_error())) {
        ts_store_destroy(store);
        return NULL;
    }
    if (ts_store_add_middleware(store, "guard", guard_middleware, NULL) != TS_OK) {
        fprintf(stdout, "ts_store_add_middleware failed: %s\n", ts_last_error());
        exit(2);
    }
    return store;
}

/* ---- Reading the log ---------------------------------------------------- */

typedef struct {
    char *text;
    char **lines;
    size_t count;
    int ends_with_newline;
} log_file;

static log_file read_log(const char *path) {
    log_file log = {NULL, NULL, 0, 1};
    FILE *file = fopen(path, "rb");
    size_t size = 0, capacity = 0, i, start;
    char chunk[4096];
    size_t got;
    if (!file) return log;
    while ((got = fread(chunk, 1, sizeof chunk, file)) > 0) {
        if (size + got + 1 > capacity) {
            capacity = (size + got + 1) * 2;
            log.text = realloc(log.text, capacity);
        }
        memcpy(log.text + size, chunk, got);
        size += got;
    }
    fclose(file);
    if (!log.text) log.text = calloc(1, 1);
    log.text[size] = '\0';
    log.ends_with_newline = size == 0 || log.text[size - 1] == '\n';
    for (i = 0; i < size; i++)
        if (log.text[i] == '\n') log.count++;
    log.lines = calloc(log.count + 1, sizeof *log.lines);
    log.count = 0;
    for (i = 0, start = 0; i < size; i++) {
        if (log.text[i] == '\n') {
            log.text[i] = '\0';
            log.lines[log.count++] = log.text + start;
            start = i + 1;
        }
    }
    return log;
}

static void free_log(log_file *log) {
    free(log->text);
    free(log->lines);
}

/* UTC now as the logger writes it; such strings compare in time order. */
static void now_iso(char out[96]) {
    struct timespec now;
    struct tm parts;
    time_t seconds;
    clock_gettime(CLOCK_REALTIME, &now);
    seconds = now.tv_sec;
    gmtime_r(&seconds, &parts);
    snprintf(out, 96, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
             parts.tm_hour, parts.tm_min, parts.tm_sec, (long)(now.tv_nsec / 1000000));
}

/* What one line must say. type_json: the type as it appears between the
 * quotes (escaped). changed: NULL if the field must be absent, "null", or the
 * comma-separated set of keys, unescaped ("" for none); the order of keys is
 * free. */
typedef struct {
    const char *type_json;
    const char *status;
    const char *changed;
} expect;

static int take(const char **p, const char *literal) {
    size_t length = strlen(literal);
    if (strncmp(*p, literal, length) != 0) return 0;
    *p += length;
    return 1;
}

/* Reads the JSON string at `p` (its opening quote) into `out`, unescaped
 * (\uXXXX only for the BMP, which is all the test uses). Returns the byte
 * after the closing quote, or NULL. */
static const char *json_string(const char *p, char *out, size_t size) {
    size_t n = 0;
    if (*p++ != '"') return NULL;
    while (*p && *p != '"') {
        unsigned code = (unsigned char)*p++;
        if (code == '\\') {
            char escape = *p++;
            switch (escape) {
            case '"': case '\\': case '/': code = (unsigned char)escape; break;
            case 'b': code = '\b'; break;
            case 'f': code = '\f'; break;
            case 'n': code = '\n'; break;
            case 'r': code = '\r'; break;
            case 't': code = '\t'; break;
            case 'u':
                if (sscanf(p, "%4x", &code) != 1) return NULL;
                p += 4;
                if (code >= 0x80) {
                    if (n + 3 >= size) return NULL;
                    if (code >= 0x800) {
                        out[n++] = (char)(0xE0 | (code >> 12));
                        out[n++] = (char)(0x80 | ((code >> 6) & 0x3F));
                    } else {
                        out[n++] = (char)(0xC0 | (code >> 6));
                    }
                    code = 0x80 | (code & 0x3F);
                }
                break;
            default: return NULL;
            }
        }
        if (n + 1 >= size) return NULL;
        out[n++] = (char)code;
    }
    if (*p != '"') return NULL;
    out[n] = '\0';
    return p + 1;
}

/* Checks `line` against `e` and the time window [earliest, latest]; on a
 * mismatch writes the reason to `why`. */
static int line_matches(const char *line, const expect *e, const char *earliest, const char *latest, char *why,
                        size_t why_size) {
    const char *p = line;
    const char *pattern = "dddd-dd-ddTdd:dd:dd.dddZ";
    char time_text[32];
    size_t i;
    if (!take(&p, "{\"time\": \"")) return snprintf(why, why_size, "no {\"time\": \" at the start"), 0;
    for (i = 0; pattern[i]; i++) {
        if (pattern[i] == 'd' ? (p[i] < '0' || p[i] > '9') : p[i] != pattern[i])
            return snprintf(why, why_size, "time is not YYYY-MM-DDTHH:MM:SS.mmmZ"), 0;
    }
    memcpy(time_text, p, 24);
    time_text[24] = '\0';
    if (earliest && strcmp(time_text, earliest) < 0) return snprintf(why, why_size, "time %s before %s", time_text, earliest), 0;
    if (latest && strcmp(time_text, latest) > 0) return snprintf(why, why_size, "time %s after %s", time_text, latest), 0;
    p += 24;
    if (!take(&p, "\", \"type\": \"") || !take(&p, e->type_json) || !take(&p, "\", \"us\": "))
        return snprintf(why, why_size, "type is not \"%s\"", e->type_json), 0;
    if (*p < '0' || *p > '9') return snprintf(why, why_size, "us is not a number"), 0;
    while (*p >= '0' && *p <= '9') p++;
    if (!take(&p, ", \"status\": \"") || !take(&p, e->status) || !take(&p, "\""))
        return snprintf(why, why_size, "status is not %s", e->status), 0;
    if (e->changed == NULL) {
        if (strcmp(p, "}") != 0) return snprintf(why, why_size, "expected the end of the line after status"), 0;
        return 1;
    }
    if (!take(&p, ", \"changed\": ")) return snprintf(why, why_size, "no \"changed\" field"), 0;
    if (strcmp(e->changed, "null") == 0) {
        if (strcmp(p, "null}") != 0) return snprintf(why, why_size, "changed is not null"), 0;
        return 1;
    }
    {
        /* Parse ["a", "b"] and compare it as a set with "a,b". */
        char found[16][64];
        size_t count = 0, j, expected_count = 0;
        const char *q;
        if (!take(&p, "[")) return snprintf(why, why_size, "changed is not an array"), 0;
        while (*p == '"') {
            if (count == 16 || (p = json_string(p, found[count], sizeof found[0])) == NULL)
                return snprintf(why, why_size, "changed: bad key"), 0;
            for (j = 0; j < count; j++)
                if (strcmp(found[j], found[count]) == 0) return snprintf(why, why_size, "changed lists %.200s twice", found[j]), 0;
            count++;
            if (!take(&p, ", ")) break;
        }
        if (strcmp(p, "]}") != 0) return snprintf(why, why_size, "changed: expected ]} at \"%s\"", p), 0;
        for (q = e->changed; *q;) {
            const char *comma = strchr(q, ',');
            size_t length = comma ? (size_t)(comma - q) : strlen(q);
            int present = 0;
            for (j = 0; j < count; j++)
                if (strlen(found[j]) == length && strncmp(found[j], q, length) == 0) present = 1;
            if (!present) return snprintf(why, why_size, "changed lacks %.*s (want {%s})", (int)length, q, e->changed), 0;
            expected_count++;
            q += length;
            if (*q == ',') q++;
        }
        if (count != expected_count) return snprintf(why, why_size, "changed lists %zu keys, want {%s}", count, e->changed), 0;
    }
    return 1;
}

/* Checks the whole log: one check per line, or with `one_check` a single
 * check for all lines (reporting the first few bad ones). */
static void check_lines(const char *what, const char *path, const expect *lines, size_t count, const char *earliest,
                        const char *latest, int one_check) {
    log_file log = read_log(path);
    size_t i, bad = 0;
    char why[256];
    CHECK_MSG(log.text != NULL, "%s: the log %s was not created", what, path);
    CHECK_MSG(log.ends_with_newline, "%s: the log does not end with a newline", what);
    CHECK_MSG(log.count == count, "%s: %zu lines, want %zu", what, log.count, count);
    for (i = 0; i < log.count && i < count; i++) {
        int ok = line_matches(log.lines[i], &lines[i], earliest, latest, why, sizeof why);
        if (!ok) bad++;
        if (!one_check || (!ok && bad <= 3))
            CHECK_MSG(ok, "%s: line %zu: %s\n    %.300s", what, i + 1, ok ? "" : why, log.lines[i]);
    }
    if (one_check && bad == 0) CHECK_MSG(bad == 0, "%s: every line matches", what);
    free_log(&log);
}

/* How many of this process's open files are `path`. */
static int open_count(const char *path) {
    char wanted[PATH_MAX], link[PATH_MAX], target[PATH_MAX];
    DIR *fds = opendir("/proc/self/fd");
    struct dirent *entry;
    int count = 0;
    if (!realpath(path, wanted) || !fds) {
        if (fds) closedir(fds);
        return -1;
    }
    while ((entry = readdir(fds)) != NULL) {
        ssize_t length;
        if (entry->d_name[0] == '.') continue;
        snprintf(link, sizeof link, "/proc/self/fd/%s", entry->d_name);
        length = readlink(link, target, sizeof target - 1);
        if (length < 0) continue;
        target[length] = '\0';
        if (strcmp(target, wanted) == 0) count++;
    }
    closedir(fds);
    return count;
}

static void dispatch_expect(ts_store *store, const char *action, ts_status want) {
    ts_status status = ts_store_dispatch(store, action);
    CHECK_MSG(status == want, "dispatch %s: %s, want %s (%s)", action, ts_status_name(status), ts_status_name(want),
          status ? ts_last_error() : "");
}

/* ---- Tests -------------------------------------------------------------- */

void test_logger__descriptorFollowsThePluginAbi(void) {
    void *handle = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
    ts_plugin_entry_fn entry;
    const ts_plugin *plugin;
    void *symbol;
    if (!CHECK_MSG(handle != NULL, "dlopen %s: %s", plugin_path, dlerror())) return;
    symbol = dlsym(handle, TS_PLUGIN_ENTRY_SYMBOL);
    if (!CHECK_MSG(symbol != NULL, "no %s in the plugin", TS_PLUGIN_ENTRY_SYMBOL)) return;
    memcpy(&entry, &symbol, sizeof entry); /* object pointer to function pointer, the C99 way */
    CHECK_MSG(entry(0) == NULL, "ts_plugin_entry(0) should be NULL");
    plugin = entry(TS_PLUGIN_ABI_VERSION);
    if (!CHECK_MSG(plugin != NULL, "ts_plugin_entry(%u) is NULL", TS_PLUGIN_ABI_VERSION)) return;
    CHECK_MSG(plugin->abi_version == TS_PLUGIN_ABI_VERSION, "abi_version %u", plugin->abi_version);
    CHECK_MSG(plugin->struct_size == sizeof(ts_plugin), "struct_size %u, want %zu", plugin->struct_size, sizeof(ts_plugin));
    CHECK_MSG(plugin->name && strcmp(plugin->name, "logger") == 0, "name is %s", plugin->name ? plugin->name : "NULL");
    CHECK_MSG(plugin->version && plugin->version[0], "no version");
    CHECK_MSG(plugin->create && plugin->run && plugin->destroy, "create, run and destroy must all be set");
    CHECK_MSG(entry(TS_PLUGIN_ABI_VERSION + 1) == plugin, "a newer host gets the same ABI-1 descriptor");
    /* Never dlclose'd: Swift code must stay mapped (as the store does). */
}

void test_logger__logHasOneLinePerDispatchWithItsStatusAndChangedKeys(void) {
    char log[PATH_SIZE], config[CONFIG_SIZE], earliest[96], latest[96];
    ts_store *store;
    static const expect lines[] = {
        {"counter/inc", "TS_OK", "counter"},
        {"todos/add", "TS_OK", "todos"},
        {"@@delayed", "TS_OK", ""},
        {"settings/same", "TS_OK", ""},
        {"guard/refuse", "TS_E_REJECTED", ""},
        {"guard/swallow", "TS_OK", ""},
        {"fail/reducer", "TS_E_REDUCER", ""},
        {"we\\\"ird\\\\\\n\\u0001\\t/\xc3\xbc", "TS_OK", ""},
        {"counter/inc", "TS_OK", "counter"}, /* dispatched by the guard inside test/nested: logged first */
        {"test/nested", "TS_OK", "counter"},
        {"debugger", "TS_OK", ""},
        {"test/replace", "TS_OK", "counter,todos,extra"},
        {"counter/set", "TS_OK", "counter"},
        {"todos/add", "TS_OK", "todos"},
    };
    path_in_dir(log, "main.log");
    snprintf(config, sizeof config, "{\"path\": \"%s\", \"exclude\": [\"@@delay\", \"debug/*\"], \"changed\": true}", log);
    now_iso(earliest);
    store = store_with_logger(config);
    if (!store) return;
    CHECK_MSG(open_count(log) == 1, "the log should be open once while the store lives (%d)", open_count(log));

    dispatch_expect(store, "{\"type\":\"counter/inc\"}", TS_OK);
    dispatch_expect(store, "{\"type\":\"todos/add\",\"payload\":{\"title\":\"a\"}}", TS_OK);
    dispatch_expect(store, "{\"type\":\"debug/a\"}", TS_OK);   /* excluded by prefix */
    dispatch_expect(store, "{\"type\":\"@@delay\"}", TS_OK);   /* excluded exactly */
    dispatch_expect(store, "{\"type\":\"@@delayed\"}", TS_OK); /* not a prefix pattern: logged */
    dispatch_expect(store, "{\"type\":\"settings/same\"}", TS_OK);
    dispatch_expect(store, "{\"type\":\"guard/refuse\"}", TS_E_REJECTED);
    CHECK_MSG(strstr(ts_last_error(), "refused by the test") != NULL, "the refusal's message got lost: %s", ts_last_error());
    dispatch_expect(store, "{\"type\":\"guard/swallow\"}", TS_OK);
    dispatch_expect(store, "{\"type\":\"fail/reducer\"}", TS_E_REDUCER);
    dispatch_expect(store, "{\"type\":\"we\\\"ird\\\\\\n\\u0001\\t/\\u00fc\"}", TS_OK);
    dispatch_expect(store, "{\"type\":\"test/nested\"}", TS_OK);
    dispatch_expect(store, "{\"type\":\"debug/\"}", TS_OK);
    dispatch_expect(store, "{\"type\":\"debugger\"}", TS_OK);
    dispatch_expect(store, "{\"type\":", TS_E_JSON);      /* never reaches middleware */
    dispatch_expect(store, "{\"payload\":1}", TS_E_NOT_ACTION);
    dispatch_expect(store, "{\"type\":\"test/replace\"}", TS_OK);
    dispatch_expect(store, "{\"type\":\"counter/set\",\"payload\":5}", TS_OK);
    dispatch_expect(store, "{\"type\":\"todos/add\",\"payload\":\"b\"}", TS_OK);
    now_iso(latest);

    {
        char *state = NULL;
        CHECK_MSG(ts_store_get_state(store, NULL, &state) == TS_OK &&
                  strcmp(state, "{\"counter\":5,\"todos\":[\"b\"],\"settings\":{\"theme\":\"dark\"}}") == 0,
              "unexpected final state %s", state ? state : ts_last_error());
        ts_free(state);
    }
    check_lines("main log", log, lines, sizeof lines / sizeof lines[0], earliest, latest, 0);
    ts_store_destroy(store);
    CHECK_MSG(open_count(log) == 0, "destroy should close the log (still open %d times)", open_count(log));
}

void test_logger__changedFalseAndExcludeAllLeaveOutTheKeys(void) {
    char log[PATH_SIZE], config[CONFIG_SIZE], all[PATH_SIZE];
    ts_store *store;
    static const expect lines[] = {
        {"counter/inc", "TS_OK", NULL},
        {"guard/refuse", "TS_E_REJECTED", NULL},
    };
    path_in_dir(log, "unchanged.log");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"changed\":false}", log);
    store = store_with_logger(config);
    if (!store) return;
    dispatch_expect(store, "{\"type\":\"counter/inc\"}", TS_OK);
    dispatch_expect(store, "{\"type\":\"guard/refuse\"}", TS_E_REJECTED);
    check_lines("\"changed\": false", log, lines, 2, NULL, NULL, 0);
    ts_store_destroy(store);

    /* "*" leaves out everything; the file is still created. */
    path_in_dir(all, "nothing.log");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"exclude\":[\"*\"]}", all);
    store = store_with_logger(config);
    if (!store) return;
    dispatch_expect(store, "{\"type\":\"counter/inc\"}", TS_OK);
    dispatch_expect(store, "{\"type\":\"x\"}", TS_OK);
    check_lines("\"exclude\": [\"*\"]", all, NULL, 0, NULL, NULL, 0);
    ts_store_destroy(store);

    /* Appending: a second store adds to the end of an existing log. */
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"changed\":false}", log);
    store = store_with_logger(config);
    if (!store) return;
    dispatch_expect(store, "{\"type\":\"counter/inc\"}", TS_OK);
    ts_store_destroy(store);
    {
        static const expect appended[] = {
            {"counter/inc", "TS_OK", NULL},
            {"guard/refuse", "TS_E_REJECTED", NULL},
            {"counter/inc", "TS_OK", NULL},
        };
        struct stat info;
        check_lines("append", log, appended, 3, NULL, NULL, 0);
        CHECK_MSG(stat(log, &info) == 0 && (info.st_mode & 0777) == (0644 & ~(mode_t)022 & 0777),
              "log mode %o", (unsigned)(info.st_mode & 0777));
    }
}

void test_logger__withNoPathTheLogGoesToStderr(void) {
    char log[PATH_SIZE];
    int saved, fd;
    ts_store *store;
    static const expect lines[] = {
        {"counter/inc", "TS_OK", "counter"},
        {"todos/add", "TS_OK", "todos"},
        {"x", "TS_OK", ""},
    };
    path_in_dir(log, "stderr.log");
    fflush(stderr);
    saved = dup(2);
    fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (!CHECK_MSG(saved >= 0 && fd >= 0, "cannot redirect stderr")) return;
    dup2(fd, 2);
    close(fd);
    store = store_with_logger(NULL); /* NULL config: {} */
    if (store) {
        dispatch_expect(store, "{\"type\":\"counter/inc\"}", TS_OK);
        dispatch_expect(store, "{\"type\":\"todos/add\",\"payload\":1}", TS_OK);
        ts_store_destroy(store);
    }
    store = store_with_logger("{}");
    if (store) {
        dispatch_expect(store, "{\"type\":\"x\"}", TS_OK);
        ts_store_destroy(store);
    }
    CHECK_MSG(fcntl(2, F_GETFD) != -1, "destroying a stderr logger must not close fd 2");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    check_lines("stderr", log, lines, 3, NULL, NULL, 0);
}

/* Several threads, two stores, one file: every line whole. */
#define THREADS 4
#define PER_THREAD 250
static char bulk_type[2100];

typedef struct {
    ts_store *store;
    int failures;
} worker;

static void *work(void *argument) {
    worker *w = argument;
    char action[2200];
    int i;
    snprintf(action, sizeof action, "{\"type\":\"%s\"}", bulk_type);
    for (i = 0; i < PER_THREAD; i++)
        if (ts_store_dispatch(w->store, action) != TS_OK) w->failures++;
    return NULL;
}

void test_logger__storesOnManyThreadsShareOneLogWithWholeLines(void) {
    char log[PATH_SIZE], config[CONFIG_SIZE];
    ts_store *stores[2];
    pthread_t threads[THREADS];
    worker workers[THREADS];
    expect *lines;
    int i, failures = 0;
    memset(bulk_type, 0, sizeof bulk_type);
    memcpy(bulk_type, "bulk/", 5);
    memset(bulk_type + 5, 'x', 2000); /* lines of ~2.1 kB */
    path_in_dir(log, "threads.log");
    snprintf(config, sizeof config, "{\"path\":\"%s\"}", log);
    stores[0] = store_with_logger(config);
    stores[1] = store_with_logger(config);
    if (!stores[0] || !stores[1]) return;
    for (i = 0; i < THREADS; i++) {
        workers[i].store = stores[i % 2];
        workers[i].failures = 0;
        pthread_create(&threads[i], NULL, work, &workers[i]);
    }
    for (i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        failures += workers[i].failures;
    }
    CHECK_MSG(failures == 0, "%d threaded dispatches failed", failures);
    ts_store_destroy(stores[0]);
    ts_store_destroy(stores[1]);
    lines = malloc(sizeof *lines * THREADS * PER_THREAD);
    for (i = 0; i < THREADS * PER_THREAD; i++) {
        lines[i].type_json = bulk_type;
        lines[i].status = "TS_OK";
        lines[i].changed = "";
    }
    check_lines("threads", log, lines, THREADS * PER_THREAD, NULL, NULL, 1);
    free(lines);
}

/* Random changes to a state with awkward keys and values, each line's
 * "changed" checked against the store's own reads of every key by JSON
 * Pointer (an oracle that shares no code with the plugin's splitter). */
#define FUZZ_STEPS 400
#define FUZZ_REDUCED 8 /* the first keys have reducers; the others appear through replace_state */
#define FUZZ_KEYS 10
static const char *fuzz_keys[FUZZ_KEYS] = {"k0", "k1", "k2", "k\"q", "k\\b", "k5", "k6", "k7", "k/s", "\xc3\xa9t\xc3\xa9"};
static const char *fuzz_keys_json[FUZZ_KEYS] = {"\"k0\"", "\"k1\"", "\"k2\"", "\"k\\\"q\"", "\"k\\\\b\"",
                                                "\"k5\"", "\"k6\"", "\"k7\"", "\"k/s\"", "\"\xc3\xa9t\xc3\xa9\""};
static const char *fuzz_pointers[FUZZ_KEYS] = {"/k0", "/k1", "/k2", "/k\"q", "/k\\b", "/k5", "/k6", "/k7", "/k~1s", "/\xc3\xa9t\xc3\xa9"};
static const char *fuzz_next[FUZZ_REDUCED]; /* what each reducer returns for fuzz/set, or NULL */
static int fuzz_index[FUZZ_REDUCED];

static char *fuzz_reducer(const char *slice, const ts_action *action, void *ctx) {
    int index = *(const int *)ctx;
    if (slice == NULL) return copy("0");
    if (strcmp(action->type, "fuzz/set") == 0 && fuzz_next[index]) return copy(fuzz_next[index]);
    return NULL;
}

/* The value of every key (NULL if absent), as the store reads it. */
static void fuzz_read(ts_store *store, char *values[FUZZ_KEYS]) {
    int i;
    for (i = 0; i < FUZZ_KEYS; i++) {
        values[i] = NULL;
        if (ts_store_get_state(store, fuzz_pointers[i], &values[i]) != TS_OK) values[i] = NULL;
    }
}

void test_logger__changedNamesExactlyTheKeysWhoseValueChanged(void) {
    enum { LONG = 6000 };
    static char long_a[LONG + 3], long_b[LONG + 3], long_array[8 * 1000 + 3];
    const char *pool[] = {
        "0", "1", "12", "123", "-1.5e3", "true", "false", "null", "\"\"", "\"a\\\"b\"", "\"\\\\\"", "\"\\\\\\\"\"",
        "\"}\"", "\"]\"", "\",\\\"k1\\\":\"", "[1,\"]\",{\"a\":\"}\"}]", "{\"k1\":\"x\",\"k2\":[]}", "{}", "[]",
        "[[[[[]]]]]", "{\"\":{\"\":\"\"}}", "\"\\u00e9\"", long_a, long_b, long_array,
        /* escapes inside arrays and objects: a quote or bracket that does not count */
        "[\"\\\"]\",1]", "{\"a\":\"\\\\\"}", "{\"q\":\"\\\"}\",\"r\":[\"\\\\\"]}",
    };
    const size_t pool_size = sizeof pool / sizeof pool[0];
    char log[PATH_SIZE], config[CONFIG_SIZE];
    expect *lines = calloc(FUZZ_STEPS, sizeof *lines);
    char **changed_texts = calloc(FUZZ_STEPS, sizeof *changed_texts);
    char *payload = malloc(FUZZ_KEYS * (sizeof long_array + 32) + 64);
    char *action = malloc(FUZZ_KEYS * (sizeof long_array + 32) + 128);
    ts_store *store = NULL;
    int step, i, problems = 0;
    size_t j;

    /* Long values that differ in one byte in the middle: memcmp blocks. */
    long_a[0] = long_b[0] = '"';
    memset(long_a + 1, 'a', LONG);
    memset(long_b + 1, 'a', LONG);
    long_b[1 + LONG / 2] = 'b';
    long_a[LONG + 1] = long_b[LONG + 1] = '"';
    long_a[LONG + 2] = long_b[LONG + 2] = '\0';
    long_array[0] = '[';
    for (i = 0, j = 1; i < 1000; i++) j += (size_t)sprintf(long_array + j, i ? ",%d" : "%d", i * 7);
    strcpy(long_array + j, "]");

    path_in_dir(log, "fuzz.log");
    snprintf(config, sizeof config, "{\"path\":\"%s\"}", log);
    if (ts_store_create("{\"k/s\":[1],\"\xc3\xa9t\xc3\xa9\":\"x\"}", &store) != TS_OK) exit(2);
    for (i = 0; i < FUZZ_REDUCED; i++) {
        fuzz_index[i] = i;
        if (ts_store_add_reducer(store, fuzz_keys[i], fuzz_reducer, &fuzz_index[i]) != TS_OK) {
            fprintf(stdout, "ts_store_add_reducer %s: %s\n", fuzz_keys[i], ts_last_error());
            exit(2);
        }
    }
    if (!CHECK_MSG(ts_store_load_plugin(store, plugin_path, config) == TS_OK, "fuzz: load: %s", ts_last_error()) ||
        ts_store_add_middleware(store, "guard", guard_middleware, NULL) != TS_OK) {
        ts_store_destroy(store);
        return;
    }
    srand(20251122);
    for (step = 0; step < FUZZ_STEPS; step++) {
        char *before[FUZZ_KEYS], *after[FUZZ_KEYS];
        size_t length = 0;
        ts_status status;
        fuzz_read(store, before);
        if (rand() % 100 < 85) {
            for (i = 0; i < FUZZ_REDUCED; i++) fuzz_next[i] = rand() % 100 < 30 ? pool[(size_t)rand() % pool_size] : NULL;
            strcpy(action, "{\"type\":\"fuzz/set\"}");
            lines[step].type_json = "fuzz/set";
        } else {
            /* A whole new state: keys left out disappear (or, with a
             * reducer, come back with their first value). */
            int first = 1;
            length = (size_t)sprintf(payload, "{");
            for (i = 0; i < FUZZ_KEYS; i++) {
                if (rand() % 100 >= 70) continue;
                length += (size_t)sprintf(payload + length, "%s%s:%s", first ? "" : ",", fuzz_keys_json[i],
                                          pool[(size_t)rand() % pool_size]);
                first = 0;
            }
            strcpy(payload + length, "}");
            sprintf(action, "{\"type\":\"fuzz/replace\",\"payload\":%s}", payload);
            lines[step].type_json = "fuzz/replace";
        }
        status = ts_store_dispatch(store, action);
        if (status != TS_OK && problems++ < 3)
            CHECK_MSG(0, "fuzz step %d: %s: %s", step, ts_status_name(status), ts_last_error());
        fuzz_read(store, after);
        {
            char *text = malloc(256);
            size_t n = 0;
            text[0] = '\0';
            for (i = 0; i < FUZZ_KEYS; i++) {
                int differ = (before[i] == NULL) != (after[i] == NULL) ||
                             (before[i] && after[i] && strcmp(before[i], after[i]) != 0);
                if (differ) n += (size_t)sprintf(text + n, "%s%s", n ? "," : "", fuzz_keys[i]);
                ts_free(before[i]);
                ts_free(after[i]);
            }
            changed_texts[step] = text;
            lines[step].status = "TS_OK";
            lines[step].changed = text;
        }
    }
    CHECK_MSG(problems == 0, "fuzz: %d dispatches failed", problems);
    ts_store_destroy(store);
    check_lines("fuzz", log, lines, FUZZ_STEPS, NULL, NULL, 1);
    for (step = 0; step < FUZZ_STEPS; step++) free(changed_texts[step]);
    free(changed_texts);
    free(lines);
    free(payload);
    free(action);
}

/* Strings in the config are JSON strings: every escape decodes (\" \\ \/ \b
 * \f \n \r \t, \uXXXX and surrogate pairs), in "path" and in "exclude". */
void test_logger__escapedConfigStringsDecode(void) {
    char log[PATH_SIZE], escaped[2 * PATH_SIZE], config[2 * PATH_SIZE + 256];
    const char *from;
    char *to = escaped;
    ts_store *store;
    log_file lines;
    path_in_dir(log, "escaped.log");
    for (from = log; *from; from++) { /* every "/" of the path as "\/" */
        if (*from == '/') *to++ = '\\';
        *to++ = *from;
    }
    *to = '\0';
    snprintf(config, sizeof config,
             "{\"path\": \"%s\", \"changed\": false, \"exclude\": [\"\\u00e9t\\u00E9\", \"tab\\there\", "
             "\"q\\\"uote\\\\back\\/slash\", \"ctl\\b\\f\\n\\r\", \"\\ud83d\\ude00*\", \"\\u20ac\"]}",
             escaped);
    store = store_with_logger(config);
    if (!store) return;
    dispatch_expect(store, "{\"type\":\"\xc3\xa9t\xc3\xa9\"}", TS_OK);                 /* été: excluded */
    dispatch_expect(store, "{\"type\":\"tab\\there\"}", TS_OK);                         /* excluded */
    dispatch_expect(store, "{\"type\":\"q\\\"uote\\\\back/slash\"}", TS_OK);            /* excluded */
    dispatch_expect(store, "{\"type\":\"ctl\\b\\f\\n\\r\"}", TS_OK);                     /* excluded */
    dispatch_expect(store, "{\"type\":\"\xf0\x9f\x98\x80/grin\"}", TS_OK);              /* prefix U+1F600: excluded */
    dispatch_expect(store, "{\"type\":\"\xe2\x82\xac\"}", TS_OK);                       /* U+20AC: excluded */
    dispatch_expect(store, "{\"type\":\"counter/inc\"}", TS_OK);                        /* logged */
    dispatch_expect(store, "{\"type\":\"\xc3\xa9\"}", TS_OK);                           /* é alone: logged */
    ts_store_destroy(store);
    lines = read_log(log);
    CHECK_MSG(lines.text != NULL, "the escaped path %s was not written", escaped);
    CHECK_MSG(lines.count == 2, "the log at the unescaped path has %zu lines, want 2 (escaped exclude patterns must match)",
          lines.count);
    if (lines.count == 2) {
        CHECK_MSG(strstr(lines.lines[0], "counter/inc") != NULL, "first line: %s", lines.lines[0]);
        CHECK_MSG(strstr(lines.lines[1], "\"type\": \"\xc3\xa9\"") != NULL || strstr(lines.lines[1], "\\u00e9") != NULL,
              "second line: %s", lines.lines[1]);
    }
    free_log(&lines);
}

/* create() called directly, as a host that does not check the config JSON
 * first would: malformed text, bad escapes and wrong fields are refused with
 * TS_E_PLUGIN (as the other plugins refuse a config they cannot use) and a
 * message naming the field, never a crash; a host table too small for
 * get_state is refused (TS_E_ABI) when "changed" is on. */
void test_logger__directCreateRefusesBadConfigsAndSmallHostTables(void) {
    static const struct {
        const char *config;
        ts_status status;
        const char *message_part;
    } cases[] = {
        {"{\"path\" \"x\"}", TS_E_PLUGIN, "not valid JSON"},
        {"{5: 1}", TS_E_PLUGIN, "not valid JSON"},
        {"{\"changed\": false \"path\": \"x\"}", TS_E_PLUGIN, "not valid JSON"},
        {"{\"changed\": false} x", TS_E_PLUGIN, "trailing text"},
        {"{\"exclude\": [\"a\" \"b\"]}", TS_E_PLUGIN, "\"exclude\""},
        {"{\"exclude\": [\"\\ud800\"]}", TS_E_PLUGIN, "\"exclude\"[0]"},        /* lone high surrogate */
        {"{\"exclude\": [\"\\ud800\\u0041\"]}", TS_E_PLUGIN, "\"exclude\"[0]"}, /* not followed by a low one */
        {"{\"exclude\": [\"\\udc00\"]}", TS_E_PLUGIN, "\"exclude\"[0]"},        /* lone low surrogate */
        {"{\"exclude\": [\"\\u12G4\"]}", TS_E_PLUGIN, "\"exclude\"[0]"},        /* not hex */
        {"{\"exclude\": [\"\\u12\"]}", TS_E_PLUGIN, "\"exclude\"[0]"},          /* cut short */
        {"{\"exclude\": [\"\\x\"]}", TS_E_PLUGIN, "\"exclude\"[0]"},            /* unknown escape */
        {"{\"exclude\": [\"abc", TS_E_PLUGIN, "\"exclude\"[0]"},                 /* unterminated */
        {"{\"exclude\": [\"abc\\", TS_E_PLUGIN, "\"exclude\"[0]"},               /* ends inside an escape */
        {"{\"path\": \"a\\u0000b\"}", TS_E_PLUGIN, "NUL"},
        {"{\"path\": 5}", TS_E_PLUGIN, "\"path\" must be a string"},
        {"{\"changed\": \"yes\"}", TS_E_PLUGIN, "\"changed\""},
        {"{\"colour\": true}", TS_E_PLUGIN, "\"colour\": unknown field"},
        {"[]", TS_E_PLUGIN, "must be a JSON object"},
        {"{\"path\": \"/nonexistent-folder/x.log\"}", TS_E_IO, "cannot open"},
    };
    void *handle = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
    ts_plugin_entry_fn entry;
    const ts_plugin *plugin;
    void *symbol, *self;
    ts_store_api api;
    char *message;
    size_t i;
    ts_status status;
    if (!CHECK_MSG(handle != NULL, "dlopen %s: %s", plugin_path, dlerror())) return;
    symbol = dlsym(handle, TS_PLUGIN_ENTRY_SYMBOL);
    if (!CHECK_MSG(symbol != NULL, "no %s in the plugin", TS_PLUGIN_ENTRY_SYMBOL)) return;
    memcpy(&entry, &symbol, sizeof entry);
    plugin = entry(TS_PLUGIN_ABI_VERSION);
    if (!CHECK_MSG(plugin != NULL, "no descriptor")) return;
    memset(&api, 0, sizeof api);
    api.struct_size = sizeof api;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        self = NULL;
        message = NULL;
        status = plugin->create(cases[i].config, &api, &self, &message);
        CHECK_MSG(status == cases[i].status, "create(%s): %s, want %s (%s)", cases[i].config, ts_status_name(status),
              ts_status_name(cases[i].status), message ? message : "no message");
        CHECK_MSG(message != NULL && strstr(message, cases[i].message_part) != NULL, "create(%s): message %s does not name %s",
              cases[i].config, message ? message : "NULL", cases[i].message_part);
        CHECK_MSG(self == NULL, "create(%s) failed but set self", cases[i].config);
        free(message);
    }
    /* A table that ends before get_state: "changed" (on by default) cannot work. */
    api.struct_size = (uint32_t)offsetof(ts_store_api, get_state);
    message = NULL;
    self = NULL;
    status = plugin->create("{}", &api, &self, &message);
    CHECK_MSG(status == TS_E_ABI && message != NULL && strstr(message, "get_state") != NULL,
          "create with a short table: %s, want TS_E_ABI (%s)", ts_status_name(status), message ? message : "no message");
    free(message);
    status = plugin->create("{\"changed\": false}", &api, &self, NULL);
    CHECK_MSG(status == TS_OK && self != NULL, "create with a short table and \"changed\": false: %s", ts_status_name(status));
    if (status == TS_OK) plugin->destroy(self);
    /* No table at all, "changed": false: logs to stderr; NULL self is refused. */
    CHECK_MSG(plugin->create("{\"changed\": false}", NULL, NULL, NULL) == TS_E_ARGUMENT, "create with NULL self must fail");
    message = NULL;
    self = NULL;
    status = plugin->create("{}", NULL, &self, &message);
    CHECK_MSG(status == TS_E_ARGUMENT && self == NULL, "create with no table and \"changed\" on: %s, want TS_E_ARGUMENT (%s)",
          ts_status_name(status), message ? message : "no message");
    free(message);
}

void test_logger__badConfigIsRefusedNamingTheFieldAndCreatesNoFile(void) {
    /* started: how the loader's message names create()'s status (the
     * logger's own: TS_E_PLUGIN for a config it cannot use, as the other
     * plugins; TS_E_IO for a file it cannot open). */
    static const struct {
        const char *config_format; /* %s: a path that must not be created */
        ts_status status;
        const char *message_part;
        const char *started;
    } cases[] = {
        {"{\"path\": 5}", TS_E_PLUGIN, "\"path\"", "failed to start with TS_E_PLUGIN: "},
        {"{\"path\": \"\"}", TS_E_PLUGIN, "\"path\"", "failed to start with TS_E_PLUGIN: "},
        {"{\"path\": [\"%s\"]}", TS_E_PLUGIN, "\"path\"", "failed to start with TS_E_PLUGIN: "},
        {"{\"path\": \"/nonexistent-folder/%s\"}", TS_E_PLUGIN, "\"path\"", "failed to start with TS_E_IO: "},
        {"{\"path\": \"%s\", \"exclude\": \"debug/*\"}", TS_E_PLUGIN, "\"exclude\"", "failed to start with TS_E_PLUGIN: "},
        {"{\"path\": \"%s\", \"exclude\": [\"ok\", 3]}", TS_E_PLUGIN, "\"exclude\"[1]", "failed to start with TS_E_PLUGIN: "},
        {"{\"path\": \"%s\", \"exclude\": [\"\"]}", TS_E_PLUGIN, "\"exclude\"[0]", "failed to start with TS_E_PLUGIN: "},
        {"{\"path\": \"%s\", \"exclude\": [\"ok\", \"debug\\u0000*\"]}", TS_E_PLUGIN, "\"exclude\"[1] contains \\u0000",
         "failed to start with TS_E_PLUGIN: "},
        {"{\"path\": \"%s\", \"changed\": \"yes\"}", TS_E_PLUGIN, "\"changed\"", "failed to start with TS_E_PLUGIN: "},
        {"{\"path\": \"%s\", \"changed\": 1}", TS_E_PLUGIN, "\"changed\"", "failed to start with TS_E_PLUGIN: "},
        {"{\"path\": \"%s\", \"colour\": true}", TS_E_PLUGIN, "\"colour\"", "failed to start with TS_E_PLUGIN: "},
        {"[\"%s\"]", TS_E_PLUGIN, "object", "failed to start with TS_E_PLUGIN: "},
        {"{\"path\": \"%s\"", TS_E_JSON, "", ""}, /* the host refuses invalid JSON itself */
    };
    size_t i;
    char never[PATH_SIZE], config[CONFIG_SIZE];
    path_in_dir(never, "never.log");
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ts_store *store = new_store();
        ts_status status;
        snprintf(config, sizeof config, cases[i].config_format, never);
        status = ts_store_load_plugin(store, plugin_path, config);
        CHECK_MSG(status == cases[i].status, "config %s: %s, want %s (%s)", config, ts_status_name(status),
              ts_status_name(cases[i].status), ts_last_error());
        CHECK_MSG(strstr(ts_last_error(), cases[i].message_part) != NULL, "config %s: the message does not name %s: %s", config,
              cases[i].message_part, ts_last_error());
        CHECK_MSG(strstr(ts_last_error(), cases[i].started) != NULL, "config %s: the message does not say \"%s\": %s", config,
              cases[i].started, ts_last_error());
        /* The store is unchanged: no logger in its chain. */
        dispatch_expect(store, "{\"type\":\"counter/inc\"}", TS_OK);
        CHECK_MSG(access(never, F_OK) != 0, "config %s: %s was created", config, never);
        ts_store_destroy(store);
    }
    {
        /* A field given twice: refused by the host's JSON check, before the plugin sees it. */
        ts_store *store = new_store();
        ts_status status;
        snprintf(config, sizeof config, "{\"changed\": true, \"changed\": false, \"path\": \"%s\"}", never);
        status = ts_store_load_plugin(store, plugin_path, config);
        CHECK_MSG(status == TS_E_JSON && strstr(ts_last_error(), "duplicate key \"changed\" at byte 18"),
              "a repeated field: %s %s", ts_status_name(status), ts_last_error());
        CHECK_MSG(access(never, F_OK) != 0, "%s was created", never);
        ts_store_destroy(store);
    }
}

/* The one argument besides the harness's: the plugin's path. */
int ts_test_suite_option(int argc, char **argv, int i) {
    (void)argc;
    if (plugin_path != NULL || argv[i][0] == '-') return 0;
    plugin_path = argv[i];
    return 1;
}

void ts_test_suite_setup(void) {
    const char *tmp = getenv("TMPDIR");
    if (plugin_path == NULL) {
        fprintf(stderr, "usage: %s [--quick] [-l] [-s NAME]... PATH/TO/logger.so\n", ts_test_program);
        exit(2);
    }
    snprintf(dir, sizeof dir, "%s/logger-test.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(2);
    }
    umask(022);
}

/* Cleans up only after success: a failure leaves the logs to look at. */
void ts_test_suite_teardown(void) {
    if (ts_test_failed() == 0) {
        DIR *folder = opendir(dir);
        struct dirent *entry;
        char path[DIR_SIZE + 256];
        while (folder && (entry = readdir(folder)) != NULL) {
            if (entry->d_name[0] == '.') continue;
            snprintf(path, sizeof path, "%s/%s", dir, entry->d_name);
            unlink(path);
        }
        if (folder) closedir(folder);
        rmdir(dir);
    } else {
        printf("logs kept in %s\n", dir);
    }
}
