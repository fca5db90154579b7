/*
 * consumer.c - a C program that knows Turnstate only through what
 * `make install` put on disk: built by Tests/pkgconfig/run.sh with nothing
 * but the flags of `pkg-config --cflags --libs turnstate`, and run without
 * LD_LIBRARY_PATH. Exits 0 only if every check passed.
 */
#include <turnstate.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

static void check(int ok, const char *what) {
    printf("  %s %s\n", ok ? "ok  " : "FAIL", what);
    if (!ok) failures++;
}

static int check_status(ts_status status, const char *what) {
    if (status != TS_OK) {
        printf("  FAIL %s: %s: %s\n", what, ts_status_name(status), ts_last_error());
        failures++;
        return 0;
    }
    printf("  ok   %s\n", what);
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

int main(void) {
    const int expected_version = TS_VERSION_MAJOR * 10000 + TS_VERSION_MINOR * 100 + TS_VERSION_PATCH;
    ts_store *store = NULL;
    char *state = NULL;
    char *count = NULL;

    printf("consumer: header %d.%d.%d, library %s\n", TS_VERSION_MAJOR, TS_VERSION_MINOR, TS_VERSION_PATCH,
           ts_version_string());
    check(ts_version_number() == expected_version, "ts_version_number() equals the header's version");

    if (!check_status(ts_store_create("{\"name\":\"consumer\"}", &store), "ts_store_create")) return 1;
    if (check_status(ts_store_add_reducer(store, "count", count_reducer, NULL), "ts_store_add_reducer(\"count\")") &&
        check_status(ts_store_dispatch(store, "{\"type\":\"count/add\",\"payload\":40}"), "dispatch count/add 40") &&
        check_status(ts_store_dispatch(store, "{\"type\":\"count/add\",\"payload\":2}"), "dispatch count/add 2") &&
        check_status(ts_store_get_state(store, NULL, &state), "ts_store_get_state(whole)") &&
        check_status(ts_store_get_state(store, "/count", &count), "ts_store_get_state(\"/count\")")) {
        printf("  state: %s\n", state);
        check(strcmp(state, "{\"name\":\"consumer\",\"count\":42}") == 0, "whole state is {\"name\":\"consumer\",\"count\":42}");
        check(strcmp(count, "42") == 0, "/count is 42");
    }
    check(ts_store_dispatch(store, "{\"payload\":1}") == TS_E_NOT_ACTION, "an action without \"type\" is TS_E_NOT_ACTION");
    check(strcmp(ts_status_name(TS_E_NOT_ACTION), "TS_E_NOT_ACTION") == 0, "ts_status_name(TS_E_NOT_ACTION)");
    ts_free(state);
    ts_free(count);
    ts_store_destroy(store);

    printf("consumer: %s\n", failures == 0 ? "all checks passed" : "FAILED");
    return failures == 0 ? 0 : 1;
}
