/*
 * fuzz_pointer - JSON Pointers in ts_store_get_state and ts_store_subscribe.
 *
 * Input: line 1 is the pointer; line 2, if it is a JSON object the store
 * accepts, is the state (else a fixed state is used); line 3, if valid JSON,
 * is the new value that a reducer gives the pointer's top-level key.
 *
 * Invariants (differential, against the pointer model in fuzz_common.h):
 * - ts_store_get_state gives TS_OK with exactly the model's value text,
 *   TS_E_ARGUMENT for a malformed pointer, or TS_E_NOT_FOUND, as the model
 *   says; on failure a message and *out_json untouched;
 * - ts_store_subscribe accepts exactly the pointers that are not malformed;
 * - after a dispatch that changes the key, the listener ran exactly when the
 *   value at the pointer (or its presence) changed, and a refused
 *   subscription never runs.
 */
#include "fuzz_common.h"

static const char *const default_state =
    "{\"a\":{\"b\":[1,{\"c\":\"d\"},[]],\"\":0,\"~/\":1,\"x/y\":{\"~0\":2}},\"list\":[0,1,2,3,4,5,6,7,8,9,10],"
    "\"\\u00e9\":\"e\",\"s\":\"\\\"q\\\"\",\"n\":null,\"t\":true}";

static int calls;
static int skip_input; /* an open fault was met (TS_FUZZ_KNOWN): stop checking */
static const char *new_value;

static void listener(ts_store *store, void *ctx) {
    (void)store;
    (void)ctx;
    calls++;
}

static char *setter(const char *slice, const ts_action *action, void *ctx) {
    char *out;
    (void)slice;
    (void)ctx;
    if (strcmp(action->type, "set") != 0) return slice ? NULL : fz_strndup("null", 4);
    out = fz_strndup(new_value, strlen(new_value));
    return out;
}

/* Looks the pointer up in the store and checks the answer against the model. */
static ts_status check_lookup(ts_store *store, const char *ptr, char **copy) {
    char *state = fz_state(store), *out = (char *)(uintptr_t)0x1;
    const char *want = NULL;
    size_t want_len = 0;
    ts_status expected = fz_pointer_eval(state, ptr, &want, &want_len);
    ts_status s = ts_store_get_state(store, ptr, &out);
    if (fz_known("unicode-keys") && fz_has_non_ascii(ptr, strlen(ptr)) &&
        (s != expected || (s == TS_OK && (strlen(out) != want_len || memcmp(out, want, want_len) != 0)))) {
        /* Open fault "unicode-keys": a key matches a canonically equivalent one. */
        if (s == TS_OK) ts_free(out);
        ts_free(state);
        *copy = NULL;
        skip_input = 1;
        return s;
    }
    FZ_CHECK(s == expected, "pointer \"%.200s\" gave %s, the model says %s (state %.300s)", ptr, ts_status_name(s),
             ts_status_name(expected), state);
    *copy = NULL;
    if (s == TS_OK) {
        FZ_CHECK(strlen(out) == want_len && memcmp(out, want, want_len) == 0,
                 "pointer \"%.200s\" reads %.200s, the model says %.*s", ptr, out, (int)(want_len > 200 ? 200 : want_len),
                 want);
        *copy = out;
    } else {
        FZ_CHECK_FAILURE(s, "ts_store_get_state", TS_E_ARGUMENT, TS_E_NOT_FOUND);
        FZ_CHECK(out == (char *)(uintptr_t)0x1, "ts_store_get_state failed but wrote *out_json");
    }
    ts_free(state);
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fz_cstring(data, size), *lines[3] = {NULL, NULL, NULL}, *before = NULL, *after = NULL, *key = NULL;
    size_t n = fz_lines(text, lines, 3);
    ts_store *store = NULL;
    ts_status s, s_before, s_after;
    uint64_t token = 0;
    const char *ptr = lines[0];

    if (n < 2 || ts_store_create(lines[1], &store) != TS_OK) {
        s = ts_store_create(default_state, &store);
        FZ_CHECK(s == TS_OK, "the default state is refused");
    }
    skip_input = 0;
    s_before = check_lookup(store, ptr, &before);
    if (skip_input) goto out;

    /* The pointer's top-level key, decoded, gets a reducer that can set it. */
    new_value = n >= 3 && fz_json_valid(lines[2], NULL) ? lines[2] : "[\"new\"]";
    if (ptr[0] == '/' && s_before != TS_E_ARGUMENT) {
        const char *end = strchr(ptr + 1, '/');
        size_t len = end ? (size_t)(end - ptr - 1) : strlen(ptr + 1), i, k = 0;
        key = malloc(len + 1);
        if (key == NULL) abort();
        for (i = 0; i < len; i++) {
            if (ptr[1 + i] == '~') {
                key[k++] = ptr[2 + i] == '0' ? '~' : '/';
                i++;
            } else {
                key[k++] = ptr[1 + i];
            }
        }
        key[k] = '\0';
        s = ts_store_add_reducer(store, key, setter, NULL);
        FZ_CHECK(s == TS_OK, "ts_store_add_reducer(\"%.100s\") gave %s", key, ts_status_name(s));
        /* Adding a reducer to a missing key sets it to null: look again. */
        ts_free(before);
        s_before = check_lookup(store, ptr, &before);
        if (skip_input) goto out;
    }

    calls = 0;
    s = ts_store_subscribe(store, ptr, listener, NULL, &token);
    if (s_before == TS_E_ARGUMENT) {
        FZ_CHECK_FAILURE(s, "ts_store_subscribe", TS_E_ARGUMENT);
        FZ_CHECK(token == 0, "a refused subscription wrote its token");
    } else {
        FZ_CHECK(s == TS_OK, "ts_store_subscribe(\"%.200s\") gave %s but get_state did not call it malformed", ptr,
                 ts_status_name(s));
    }
    s = ts_store_dispatch(store, "{\"type\":\"set\"}");
    if (s == TS_OK) {
        char *whole = fz_state(store);
        fz_check_state_text(whole, "after set");
        ts_free(whole);
    } else {
        FZ_CHECK_FAILURE(s, "ts_store_dispatch", TS_E_REDUCER);
    }
    s_after = check_lookup(store, ptr, &after);
    if (skip_input) goto out;
    if (s_before != TS_E_ARGUMENT) {
        int changed = s_before != s_after || (s_before == TS_OK && strcmp(before, after) != 0);
        FZ_CHECK(calls == changed, "the listener on \"%.200s\" ran %d times; the value %s", ptr, calls,
                 changed ? "changed" : "did not change");
    } else {
        FZ_CHECK(calls == 0, "a refused subscription ran");
    }
out:
    ts_free(before);
    ts_free(after);
    free(key);
    ts_store_destroy(store);
    free(text);
    return 0;
}
