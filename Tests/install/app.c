/*
 * app.c - a C program that knows Turnstate only through an installed copy
 * (make install, or the Debian packages): built with nothing but
 * `pkg-config --cflags --libs turnstate` and run where the Swift toolchain
 * is hidden (Tests/install/run.sh, Tests/deb/run.sh).
 *
 *   app PLUGINSDIR SCRATCH
 *
 * Loads every shipped plugin from PLUGINSDIR (guard, logger, delay, journal,
 * each with a config that makes it act), dispatches through all of them,
 * checks what each did, then checks that the process maps exactly one copy
 * of the Swift runtime. Prints one line per check and "checks: N passed,
 * M failed"; exits 0 only if every check passed.
 */
#define _POSIX_C_SOURCE 200809L
#include <turnstate.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int passed = 0, failed = 0;

static int check(int ok, const char *what, const char *detail) {
    if (ok) {
        passed++;
        printf("  ok   %s\n", what);
    } else {
        failed++;
        printf("  FAIL %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    }
    return ok;
}

static int check_status(ts_status status, const char *what) {
    char detail[512];
    snprintf(detail, sizeof detail, "%s: %s", ts_status_name(status), status == TS_OK ? "" : ts_last_error());
    return check(status == TS_OK, what, detail);
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

static long long count_of(ts_store *store) {
    char *json = NULL;
    long long value = -1;
    if (ts_store_get_state(store, "/count", &json) == TS_OK) value = strtoll(json, NULL, 10);
    ts_free(json);
    return value;
}

/* The number of lines of a file that contain `needle`, or -1. */
static int lines_with(const char *path, const char *needle) {
    char line[4096];
    int n = 0;
    FILE *file = fopen(path, "r");
    if (file == NULL) return -1;
    while (fgets(line, sizeof line, file) != NULL)
        if (strstr(line, needle) != NULL) n++;
    fclose(file);
    return n;
}

/* The distinct files mapped whose name ends with `/NAME`: how many, and the first. */
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
        if (i == n && n < 8) {
            snprintf(seen[n++], sizeof seen[0], "%s", path);
        }
    }
    fclose(maps);
    if (n > 0) snprintf(first, size, "%s", seen[0]);
    return n;
}

int main(int argc, char **argv) {
    char path[2048], config[4096], detail[4096], *state = NULL;
    ts_store *store = NULL;
    int copies, i;
    const char *runtime[] = {"libswiftCore.so", "libswift_Concurrency.so", "libswiftGlibc.so"};

    if (argc != 3) {
        fprintf(stderr, "usage: %s PLUGINSDIR SCRATCH\n", argv[0]);
        return 2;
    }
    printf("app: header %s, library %s\n", TS_VERSION, ts_version_string());
    check(ts_version_number() == TS_VERSION_NUMBER && strcmp(ts_version_string(), TS_VERSION) == 0,
          "the library is the header's version", ts_version_string());

    if (!check_status(ts_store_create("{\"count\": 0}", &store), "ts_store_create")) return 1;
    check_status(ts_store_add_reducer(store, "count", count_reducer, NULL), "ts_store_add_reducer");

    /* Guard first: it refuses what it does not allow. */
    snprintf(path, sizeof path, "%s/guard.so", argv[1]);
    check_status(ts_store_load_plugin(store, path, "{\"allow\": [\"count/*\", \"@@delay\"]}"), "load guard.so");
    /* The logger (written in Swift): one line per action. */
    snprintf(path, sizeof path, "%s/logger.so", argv[1]);
    snprintf(config, sizeof config, "{\"path\": \"%s/actions.log\"}", argv[2]);
    check_status(ts_store_load_plugin(store, path, config), "load logger.so (Swift)");
    snprintf(path, sizeof path, "%s/delay.so", argv[1]);
    check_status(ts_store_load_plugin(store, path, NULL), "load delay.so");
    snprintf(path, sizeof path, "%s/journal.so", argv[1]);
    snprintf(config, sizeof config, "{\"path\": \"%s/count.journal\", \"fsync\": \"never\"}", argv[2]);
    check_status(ts_store_load_plugin(store, path, config), "load journal.so");

    check_status(ts_store_dispatch(store, "{\"type\": \"count/add\", \"payload\": 2}"), "dispatch count/add 2");
    check(ts_store_dispatch(store, "{\"type\": \"other/thing\"}") == TS_E_REJECTED,
          "guard rejects an action it does not allow", ts_last_error());
    check_status(ts_store_dispatch(store, "{\"type\": \"@@delay\", \"payload\": {\"ms\": 1, "
                                          "\"action\": {\"type\": \"count/add\", \"payload\": 40}}}"),
                 "dispatch @@delay of count/add 40");
    /* The delay plugin dispatches after 1 ms, from its own thread. */
    for (i = 0; i < 2000 && count_of(store) != 42; i++) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    snprintf(detail, sizeof detail, "count is %lld", count_of(store));
    check(count_of(store) == 42, "count is 42 after the delayed action arrives", detail);
    if (ts_store_get_state(store, NULL, &state) == TS_OK) printf("app: state %s\n", state);
    ts_free(state);

    /* Every Swift runtime library mapped once, from the installed private copy. */
    for (i = 0; i < (int)(sizeof runtime / sizeof runtime[0]); i++) {
        char what[256];
        copies = mapped_copies(runtime[i], path, sizeof path);
        snprintf(what, sizeof what, "one copy of %s mapped", runtime[i]);
        snprintf(detail, sizeof detail, "%d copies, first %s", copies, path);
        check(copies == 1, what, detail);
        if (copies >= 1) printf("app: %s from %s\n", runtime[i], path);
    }

    ts_store_destroy(store);

    snprintf(path, sizeof path, "%s/actions.log", argv[2]);
    snprintf(detail, sizeof detail, "%d lines", lines_with(path, "count/add"));
    check(lines_with(path, "count/add") == 2, "the logger wrote both count/add actions", detail);
    snprintf(path, sizeof path, "%s/count.journal", argv[2]);
    check(lines_with(path, "count/add") >= 2, "the journal recorded the count/add actions", path);

    printf("checks: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
