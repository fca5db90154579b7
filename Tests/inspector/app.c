/*
 * app.c - the program the inspector's browser test drives (run.py): a store
 * with a counter and a todo list, the inspector plugin and then the guard
 * plugin loaded (so the inspector sees guard's refusals), and commands on
 * stdin, one per line, each answered with one line on stdout:
 *     d <action json>   dispatch; answers "status <TS_NAME> <ts_last_error()>"
 *     n <count> <json>  dispatch it count times; answers "status <TS_NAME> <how many>"
 *     s                 answers "state <ts_store_get_state(NULL)>"
 *     q                 destroys the store (the plugin's destroy()) and exits
 * Usage: app INSPECTOR.so CONFIG_JSON GUARD.so [patch]
 * "counter/slow" with a payload of N milliseconds (up to 5000) keeps the
 * counter's reducer busy that long and changes nothing: an action that
 * stays in the chain while run.py watches the event stream.
 * With "patch", the same reducers answer with RFC 6902 patches
 * (ts_reducer_patch), the counter's added with ts_store_add_reducer_for for
 * "counter/" "*" only: the inspector's time travel must give the same states
 * (run.py's patch_checks).
 */
#define _POSIX_C_SOURCE 200809L
#include "turnstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *counter(const char *slice, const ts_action *a, void *ctx) {
    char buffer[64];
    (void)ctx;
    if (slice == NULL) return ts_strdup("0");
    long long n = strtoll(slice, NULL, 10);
    if (strcmp(a->type, "counter/inc") == 0) n++;
    else if (strcmp(a->type, "counter/add") == 0 && a->payload) n += strtoll(a->payload, NULL, 10);
    else if (strcmp(a->type, "counter/slow") == 0 && a->payload) {
        long long ms = strtoll(a->payload, NULL, 10);
        struct timespec t;
        if (ms < 0) ms = 0;
        if (ms > 5000) ms = 5000;
        t.tv_sec = (time_t)(ms / 1000);
        t.tv_nsec = (long)(ms % 1000) * 1000000L;
        nanosleep(&t, NULL);
        return NULL;
    } else return NULL;
    snprintf(buffer, sizeof buffer, "%lld", n);
    return ts_strdup(buffer);
}

/* todos/add {"title": "..."} appends the payload to the array. */
static char *todos(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    if (slice == NULL) return ts_strdup("[]");
    if (strcmp(a->type, "todos/add") != 0 || a->payload == NULL) return NULL;
    size_t n = strlen(slice), m = strlen(a->payload);
    char *out = ts_alloc(n + m + 2);
    if (out == NULL) return NULL;
    memcpy(out, slice, n - 1); /* without the closing ] */
    size_t at = n - 1;
    if (n > 2) out[at++] = ',';
    memcpy(out + at, a->payload, m);
    at += m;
    out[at++] = ']';
    out[at] = '\0';
    return out;
}

/* The counter as a patch: the value it read, tested, then replaced. */
static char *counter_patch(const char *slice, const ts_action *a, void *ctx) {
    char patch[160];
    (void)ctx;
    if (slice == NULL) return ts_strdup("0");
    long long n = strtoll(slice, NULL, 10), to = n;
    if (strcmp(a->type, "counter/inc") == 0) to = n + 1;
    else if (strcmp(a->type, "counter/add") == 0 && a->payload) to = n + strtoll(a->payload, NULL, 10);
    else return NULL;
    snprintf(patch, sizeof patch, "[{\"op\":\"test\",\"path\":\"\",\"value\":%lld},"
             "{\"op\":\"replace\",\"path\":\"\",\"value\":%lld}]", n, to);
    ts_reducer_patch(patch);
    return NULL;
}

/* todos/add as a patch: the payload appended ("/-"). */
static char *todos_patch(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    if (slice == NULL) return ts_strdup("[]");
    if (strcmp(a->type, "todos/add") != 0 || a->payload == NULL) return NULL;
    size_t m = strlen(a->payload);
    char *patch = malloc(m + 64);
    if (patch == NULL) return NULL;
    snprintf(patch, m + 64, "[{\"op\":\"add\",\"path\":\"/-\",\"value\":%s}]", a->payload);
    ts_reducer_patch(patch);
    free(patch);
    return NULL;
}

static const char *const counter_types[] = {"counter/*", NULL};

int main(int argc, char **argv) {
    if (argc != 4 && !(argc == 5 && strcmp(argv[4], "patch") == 0)) {
        fprintf(stderr, "usage: %s INSPECTOR.so CONFIG_JSON GUARD.so [patch]\n", argv[0]);
        return 2;
    }
    int patches = argc == 5;
    ts_store *store;
    if (ts_store_create("{\"user\":{\"name\":\"ada\",\"theme\":\"dark\"}}", &store) != TS_OK ||
        (patches ? ts_store_add_reducer_for(store, "count", counter_types, counter_patch, NULL)
                 : ts_store_add_reducer(store, "count", counter, NULL)) != TS_OK ||
        ts_store_add_reducer(store, "todos", patches ? todos_patch : todos, NULL) != TS_OK) {
        fprintf(stderr, "app: %s\n", ts_last_error());
        return 1;
    }
    if (ts_store_load_plugin(store, argv[1], argv[2]) != TS_OK) {
        printf("load-failed %s\n", ts_last_error());
        fflush(stdout);
        ts_store_destroy(store);
        return 3;
    }
    if (ts_store_load_plugin(store, argv[3], "{\"require\":{\"todos/add\":[\"title\"]}}") != TS_OK) {
        fprintf(stderr, "app: guard: %s\n", ts_last_error());
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    char *line = NULL;
    size_t capacity = 0;
    ssize_t length;
    while ((length = getline(&line, &capacity, stdin)) > 0) {
        if (line[length - 1] == '\n') line[--length] = '\0';
        if (line[0] == 'd' && line[1] == ' ') {
            ts_status status = ts_store_dispatch(store, line + 2);
            printf("status %s %s\n", ts_status_name(status), status == TS_OK ? "" : ts_last_error());
        } else if (line[0] == 'n' && line[1] == ' ') {
            /* n COUNT ACTION: dispatches ACTION COUNT times. */
            char *rest;
            long count = strtol(line + 2, &rest, 10);
            ts_status status = TS_OK;
            long done = 0;
            while (done < count && (status = ts_store_dispatch(store, rest + 1)) == TS_OK) done++;
            printf("status %s %ld\n", ts_status_name(status), done);
        } else if (line[0] == 's') {
            char *state = NULL;
            ts_status status = ts_store_get_state(store, NULL, &state);
            printf("state %s\n", status == TS_OK ? state : ts_last_error());
            ts_free(state);
        } else if (line[0] == 'q') {
            break;
        } else {
            printf("error unknown command\n");
        }
        fflush(stdout);
    }
    free(line);
    ts_store_destroy(store);
    printf("bye\n");
    return 0;
}
