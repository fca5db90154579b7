/*
 * app.c - a C program that knows Turnstate only through an installed copy:
 * `make install` into a temporary prefix (Tests/install/run.sh) or the
 * Debian packages libturnstate0 and libturnstate-dev (Tests/deb/run.sh).
 * Built with nothing but `pkg-config --cflags --libs turnstate` (plus the
 * rpath a private prefix needs), and run with the Swift toolchain hidden.
 *
 *     app PLUGINSDIR WORKDIR
 *
 * Loads every NAME.so of PLUGINSDIR (`pkg-config --variable=pluginsdir
 * turnstate`) with a config for the shipped ones (the journal and the
 * logger write into WORKDIR; replicate.so, pointed at a closed port, must
 * load and refuse to start), dispatches through them, and checks what each
 * did; then that the process maps exactly one copy of each Swift runtime
 * library it uses, the installed one. Prints one "ok"/"FAIL" line per check
 * and "checks: N passed, M failed"; exits 0 only if every check passed.
 */
#define _POSIX_C_SOURCE 200809L

#include <turnstate.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int passed = 0, failures = 0;

static int check(int ok, const char *what) {
    printf("  %s %s\n", ok ? "ok  " : "FAIL", what);
    if (ok) passed++;
    else failures++;
    return ok;
}

static int check_status(ts_status status, ts_status expected, const char *what) {
    if (status != expected) {
        printf("  FAIL %s: %s (expected %s): %s\n", what, ts_status_name(status), ts_status_name(expected),
               ts_last_error());
        failures++;
        return 0;
    }
    printf("  ok   %s\n", what);
    passed++;
    return 1;
}

/* The slice "count": 0 at first, plus the payload of "count/add". */
static char *count_reducer(const char *slice_json, const ts_action *action, void *ctx) {
    char text[32];
    long long value;
    char *out;
    (void)ctx;
    if (slice_json == NULL) {
        value = 0;
    } else if (strcmp(action->type, "count/add") == 0 && action->payload != NULL) {
        value = strtoll(slice_json, NULL, 10) + strtoll(action->payload, NULL, 10);
    } else {
        return NULL; /* unchanged */
    }
    snprintf(text, sizeof text, "%lld", value);
    out = malloc(strlen(text) + 1); /* the store frees it */
    if (out != NULL) strcpy(out, text);
    return out;
}

/* Loads the plugin at `path` with `config`: it must load as code (dlopen
 * and its ABI accepted); then its create() must refuse with TS_E_PLUGIN, or,
 * when `may_start`, may also succeed. */
static void check_loads(ts_store *store, const char *path, const char *config, int may_start) {
    char what[4400];
    ts_status status = ts_store_load_plugin(store, path, config);
    const char *message = status == TS_OK ? "" : ts_last_error();
    int loaded = status == TS_OK || (status == TS_E_PLUGIN && strstr(message, "could not be loaded") == NULL);
    if (status == TS_OK) {
        snprintf(what, sizeof what, "%s loads and starts", path);
        check(may_start, what);
    } else {
        snprintf(what, sizeof what, "%s loads, and its create() refuses %s: %s (%s)", path, config,
                 ts_status_name(status), message);
        check(loaded, what);
    }
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether the file at `path` contains `needle`. */
static int file_contains(const char *path, const char *needle) {
    static char text[1 << 16];
    size_t n;
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return strstr(text, needle) != NULL;
}

/* How many distinct files whose name ends with "/NAME" are mapped; the
 * first one's path in `first`. */
static int mapped_copies(const char *name, char *first, size_t size) {
    char line[4096], seen[8][1024];
    int n = 0, i;
    size_t name_length = strlen(name);
    FILE *maps = fopen("/proc/self/maps", "r");
    first[0] = '\0';
    if (maps == NULL) return -1;
    while (fgets(line, sizeof line, maps) != NULL) {
        char *path = strchr(line, '/');
        size_t length;
        if (path == NULL) continue;
        path[strcspn(path, "\n")] = '\0';
        length = strlen(path);
        if (length <= name_length || path[length - name_length - 1] != '/' ||
            strcmp(path + length - name_length, name) != 0)
            continue;
        for (i = 0; i < n && strcmp(seen[i], path) != 0; i++) {}
        if (i == n && n < 8) snprintf(seen[n++], sizeof seen[0], "%s", path);
    }
    fclose(maps);
    if (n > 0) snprintf(first, size, "%s", seen[0]);
    return n;
}

/* The count in the state, or -1. */
static long long current_count(ts_store *store) {
    char *count = NULL;
    long long value;
    if (ts_store_get_state(store, "/count", &count) != TS_OK) return -1;
    value = strtoll(count, NULL, 10);
    ts_free(count);
    return value;
}

int main(int argc, char **argv) {
    const char *plugins_dir, *work;
    char *names[64];
    size_t count = 0, i;
    int seen_guard = 0, seen_delay = 0, seen_journal = 0, seen_logger = 0;
    char journal_path[4096], log_path[4096], what[4200];
    ts_store *store = NULL;
    DIR *dir;
    struct dirent *entry;
    const char *runtime_libraries[] = {"libswiftCore.so", "libswift_Concurrency.so", "libswiftGlibc.so"};
    int waited;

    if (argc != 3) {
        fprintf(stderr, "usage: %s PLUGINSDIR WORKDIR\n", argv[0]);
        return 2;
    }
    plugins_dir = argv[1];
    work = argv[2];
    snprintf(journal_path, sizeof journal_path, "%s/app.journal", work);
    snprintf(log_path, sizeof log_path, "%s/actions.log", work);
    printf("app: header %s, library %s, plugins from %s\n", TS_VERSION, ts_version_string(), plugins_dir);
    check(ts_version_number() == TS_VERSION_NUMBER && strcmp(ts_version_string(), TS_VERSION) == 0,
          "the library is the header's version (TS_VERSION, TS_VERSION_NUMBER)");

    if (!check_status(ts_store_create("{\"name\":\"app\"}", &store), TS_OK, "ts_store_create")) return 1;
    /* Reducers first: the journal restores state when it is loaded. */
    if (!check_status(ts_store_add_reducer(store, "count", count_reducer, NULL), TS_OK, "ts_store_add_reducer")) {
        return 1;
    }

    /* Every NAME.so of the plugins folder, in name order. */
    dir = opendir(plugins_dir);
    if (!check(dir != NULL, "the plugins folder can be read")) return 1;
    while ((entry = readdir(dir)) != NULL && count < sizeof names / sizeof names[0]) {
        size_t n = strlen(entry->d_name);
        if (n > 3 && strcmp(entry->d_name + n - 3, ".so") == 0) names[count++] = strdup(entry->d_name);
    }
    closedir(dir);
    qsort(names, count, sizeof names[0], by_name);
    for (i = 0; i < count; i++) {
        char path[4096], config[4400];
        const char *name = names[i];
        snprintf(path, sizeof path, "%s/%s", plugins_dir, name);
        if (strcmp(name, "guard.so") == 0) {
            snprintf(config, sizeof config, "{\"allow\": [\"count/*\", \"@@delay\"], \"max_bytes\": 4096}");
            seen_guard = 1;
        } else if (strcmp(name, "delay.so") == 0) {
            snprintf(config, sizeof config, "{\"max_pending\": 8}");
            seen_delay = 1;
        } else if (strcmp(name, "journal.so") == 0) {
            snprintf(config, sizeof config, "{\"path\": \"%s\", \"fsync\": \"never\"}", journal_path);
            seen_journal = 1;
        } else if (strcmp(name, "logger.so") == 0) {
            snprintf(config, sizeof config, "{\"path\": \"%s\", \"changed\": true}", log_path);
            seen_logger = 1;
        } else if (strcmp(name, "replicate.so") == 0) {
            /* Its log is a Redis server, which this machine need not run:
             * pointed at a closed port, its create() must refuse to start.
             * That still proves the file loads (hiredis found, its symbols
             * bound) and runs. */
            snprintf(config, sizeof config,
                     "{\"url\": \"redis://127.0.0.1:1\", \"stream\": \"app-test\", \"timeout_ms\": 1000}");
            check_loads(store, path, config, 0);
            continue;
        } else {
            /* A plugin this test does not know: with {} it may start or
             * refuse its config, but it must load as code. */
            check_loads(store, path, "{}", 1);
            continue;
        }
        snprintf(what, sizeof what, "ts_store_load_plugin(%s)", path);
        check_status(ts_store_load_plugin(store, path, config), TS_OK, what);
    }
    check(seen_guard && seen_delay && seen_journal && seen_logger,
          "the plugins folder has guard.so, delay.so, journal.so and logger.so");

    /* Through every plugin to the reducer. */
    check_status(ts_store_dispatch(store, "{\"type\":\"count/add\",\"payload\":40}"), TS_OK, "dispatch count/add 40");
    check(current_count(store) == 40, "/count is 40");
    /* guard refuses what its allow list does not name. */
    if (seen_guard) {
        check_status(ts_store_dispatch(store, "{\"type\":\"other/thing\"}"), TS_E_REJECTED,
                     "guard refuses other/thing with TS_E_REJECTED");
    }
    /* delay dispatches the inner action later, from its thread. */
    if (seen_delay) {
        check_status(ts_store_dispatch(store, "{\"type\":\"@@delay\",\"payload\":{\"ms\":1,"
                                              "\"action\":{\"type\":\"count/add\",\"payload\":2}}}"),
                     TS_OK, "dispatch @@delay of count/add 2");
        /* Wait for the worker (10 ms steps; a bound, not a timing check). */
        for (waited = 0; waited < 3000 && current_count(store) != 42; waited++) {
            struct timespec step = {0, 10 * 1000 * 1000};
            nanosleep(&step, NULL);
        }
        check(current_count(store) == 42, "the delayed count/add 2 arrived: /count is 42");
    }

    /* One copy of each Swift runtime library: the installed private one. */
    for (i = 0; i < sizeof runtime_libraries / sizeof runtime_libraries[0]; i++) {
        char first[1024];
        int copies = mapped_copies(runtime_libraries[i], first, sizeof first);
        printf("  %s mapped from %s\n", runtime_libraries[i], copies > 0 ? first : "(nowhere)");
        snprintf(what, sizeof what, "exactly one %s is mapped (%d)", runtime_libraries[i], copies);
        check(copies == 1, what);
    }

    ts_store_destroy(store); /* stops delay's thread, closes the journal and the log */

    if (seen_journal) check(file_contains(journal_path, "count/add"), "the journal recorded count/add");
    if (seen_logger) {
        check(file_contains(log_path, "\"type\": \"count/add\"") || file_contains(log_path, "\"type\":\"count/add\""),
              "the logger wrote count/add to its file");
        /* Loaded in name order, guard runs before the logger: a refused
         * action never reaches it. */
        check(!file_contains(log_path, "other/thing"), "the logger never saw other/thing, which guard refused");
    }
    for (i = 0; i < count; i++) free(names[i]);

    printf("checks: %d passed, %d failed\n", passed, failures);
    return failures == 0 ? 0 : 1;
}
