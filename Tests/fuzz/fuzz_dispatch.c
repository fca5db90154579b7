/*
 * fuzz_dispatch - actions (one per input line, at most 16) against a store
 * with reducers, a middleware and listeners (plain and JSON Pointer ones).
 *
 * The reducers own "a", "b", "c~/x" and "list"; for an action whose type is
 *   K=   the slice of K becomes the payload (unchanged if there is none),
 *   K!T  the slice of K becomes the raw text T (often invalid JSON),
 *   K+   the slice of K becomes [old, payload] (nests deeper each time),
 *   push / pop   append the payload to "list" / drop its last element,
 *   reenter      every reducer calls back into the store (TS_E_REENTRANT),
 * and returns NULL (unchanged) otherwise. The middleware refuses "deny*"
 * (store->fail), swallows "swallow", passes the payload instead for
 * "rewrite", dispatches the payload first for "nested" (two levels at most),
 * fails after its next succeeded for "after", reads the state at the pointer
 * given as payload for "get", and passes everything else on.
 *
 * Invariants per dispatch:
 * - the status is TS_OK or one of the documented ones, with a message;
 * - refused (and nothing was applied by a nested or passed-on action): the
 *   state text is byte-identical and no listener ran;
 * - accepted: the state is valid JSON that a new store accepts unchanged;
 * - a pointer listener runs only when its value changed since it last ran,
 *   and after every dispatch its value is the one it last saw (or it never
 *   missed a change); the plain listener ran once for an action passed on
 *   unchanged to the reducers.
 */
#include "fuzz_common.h"

#define MAX_LIST_BYTES 4096
#define MAX_SLICE_BYTES 16384

static ts_store *store;
static int in_reducer;
static int nested_depth;
static int applied;     /* a next() or nested dispatch succeeded in this call */
static int passed_on;   /* the middleware passed the action on unchanged */
static int plain_calls;

/* ---- Reducers ------------------------------------------------------------ */

static char *dup_text(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d == NULL) abort();
    memcpy(d, s, n);
    return d;
}

static void check_action(const ts_action *action) {
    FZ_CHECK(action != NULL && action->type != NULL && action->type[0] != '\0' && action->json != NULL,
             "a reducer got an action without type or json");
    FZ_CHECK(fz_json_valid(action->json, NULL), "a reducer got invalid action JSON: %.200s", action->json);
    FZ_CHECK(action->payload == NULL || fz_json_valid(action->payload, NULL), "a reducer got an invalid payload: %.200s",
             action->payload);
}

static char *keyed_reducer(const char *slice, const ts_action *action, void *ctx) {
    const char *key = ctx, *type;
    size_t klen = strlen(key);
    check_action(action);
    type = action->type;
    if (strcmp(type, "@@turnstate/init") == 0 && slice == NULL) return dup_text("0");
    FZ_CHECK(slice != NULL && fz_json_valid(slice, NULL), "reducer %s got an invalid slice: %.200s", key,
             slice ? slice : "NULL");
    if (strcmp(type, "reenter") == 0) {
        char *out = NULL;
        ts_status s;
        in_reducer = 1;
        s = ts_store_get_state(store, NULL, &out);
        in_reducer = 0;
        FZ_CHECK(s == TS_E_REENTRANT && out == NULL, "ts_store_get_state from a reducer gave %s", ts_status_name(s));
        return NULL;
    }
    if (strncmp(type, key, klen) != 0) return NULL;
    type += klen;
    if (strcmp(type, "=") == 0) return action->payload ? dup_text(action->payload) : NULL;
    if (type[0] == '!') return dup_text(type + 1);
    if (strcmp(type, "+") == 0 && action->payload) {
        size_t n = strlen(slice) + strlen(action->payload) + 4;
        char *out;
        if (n > MAX_SLICE_BYTES) return NULL;
        out = malloc(n);
        if (out == NULL) abort();
        snprintf(out, n, "[%s,%s]", slice, action->payload);
        return out;
    }
    return NULL;
}

static char *list_reducer(const char *slice, const ts_action *action, void *ctx) {
    size_t n;
    char *out;
    (void)ctx;
    check_action(action);
    if (slice == NULL) return dup_text("[]");
    n = strlen(slice);
    if (strcmp(action->type, "push") == 0 && action->payload) {
        size_t p = strlen(action->payload);
        if (n + p > MAX_LIST_BYTES) return NULL;
        out = malloc(n + p + 2);
        if (out == NULL) abort();
        memcpy(out, slice, n - 1);
        if (n > 2) out[n - 1] = ',';
        memcpy(out + n - (n > 2 ? 0 : 1), action->payload, p);
        strcpy(out + n - (n > 2 ? 0 : 1) + p, "]");
        return out;
    }
    if (strcmp(action->type, "pop") == 0 && n > 2) {
        /* Drop the last element: find the last top-level comma. */
        const char *p = slice + 1, *last_comma = NULL;
        while (*p != ']') {
            const char *after = fz_skip(p);
            if (*after == ',') last_comma = after;
            p = *after == ',' ? after + 1 : after;
        }
        if (last_comma == NULL) return dup_text("[]");
        out = fz_strndup(slice, (size_t)(last_comma - slice) + 1);
        out[last_comma - slice] = ']';
        return out;
    }
    return NULL;
}

/* ---- Middleware ---------------------------------------------------------- */

static ts_status middleware(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) {
    const char *type = action->type;
    ts_status s;
    (void)ctx;
    check_action(action);
    if (strncmp(type, "deny", 4) == 0) return api->fail(TS_E_REJECTED, "denied by the fuzz middleware");
    if (strcmp(type, "swallow") == 0) return TS_OK;
    if (strcmp(type, "rewrite") == 0 && action->payload) {
        s = next(action->payload);
        if (s == TS_OK) applied = 1;
        return s;
    }
    if (strcmp(type, "nested") == 0 && action->payload && nested_depth < 2) {
        nested_depth++;
        s = api->dispatch(action->payload);
        nested_depth--;
        if (s == TS_OK) applied = 1;
        else FZ_CHECK(fz_status_known(s) && ts_last_error()[0] != '\0', "a nested dispatch gave %d", (int)s);
    }
    if (strcmp(type, "after") == 0) {
        s = next(action->json);
        if (s == TS_OK) {
            applied = 1;
            return api->fail(TS_E_REJECTED, "failed after next succeeded");
        }
        return s;
    }
    if (strcmp(type, "get") == 0 && action->payload && action->payload[0] == '"') {
        char *ptr = fz_strndup(action->payload + 1, strlen(action->payload) - 2), *out = NULL;
        s = api->get_state(ptr, &out);
        FZ_CHECK(s == TS_OK || s == TS_E_ARGUMENT || s == TS_E_NOT_FOUND, "get_state in middleware gave %s",
                 ts_status_name(s));
        if (s == TS_OK) api->free(out);
        free(ptr);
    }
    if (nested_depth == 0) passed_on = 1;
    s = next(action->json);
    if (s == TS_OK) applied = 1;
    return s;
}

/* ---- Listeners ----------------------------------------------------------- */

typedef struct watcher {
    const char *pointer;
    uint64_t token;
    int had;     /* whether it last saw a value */
    char *seen;  /* the value it last saw */
    int calls;
} watcher;

static watcher watchers[] = {
    {"", 0, 0, NULL, 0},      {"/a", 0, 0, NULL, 0},      {"/b/0", 0, 0, NULL, 0}, {"/c~0~1x", 0, 0, NULL, 0},
    {"/list/0", 0, 0, NULL, 0}, {"/missing", 0, 0, NULL, 0}, {"/a/1/0", 0, 0, NULL, 0},
};
#define WATCHERS (sizeof watchers / sizeof watchers[0])

static void look(watcher *w, int *had, char **value) {
    ts_status s = ts_store_get_state(store, w->pointer, value);
    FZ_CHECK(s == TS_OK || s == TS_E_NOT_FOUND, "ts_store_get_state(\"%s\") gave %s", w->pointer, ts_status_name(s));
    *had = s == TS_OK;
    if (!*had) *value = NULL;
}

static int same(int had_a, const char *a, int had_b, const char *b) {
    return had_a == had_b && (!had_a || strcmp(a, b) == 0);
}

static void pointer_listener(ts_store *s, void *ctx) {
    watcher *w = ctx;
    int had;
    char *value;
    FZ_CHECK(s == store, "a listener got another store");
    look(w, &had, &value);
    FZ_CHECK(!same(had, value, w->had, w->seen), "listener on \"%s\" ran although its value did not change (%s)",
             w->pointer, had ? value : "absent");
    ts_free(w->seen);
    w->had = had;
    w->seen = value;
    w->calls++;
}

static void plain_listener(ts_store *s, void *ctx) {
    (void)ctx;
    FZ_CHECK(s == store, "a listener got another store");
    plain_calls++;
}

/* ---- The target ---------------------------------------------------------- */

static const char *const keys[] = {"a", "b", "c~/x"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fz_cstring(data, size), *lines[16];
    size_t n = fz_lines(text, lines, 16), i, k;
    uint64_t token;
    ts_status s;

    s = ts_store_create("{\"b\":[1,2],\"list\":[]}", &store);
    FZ_CHECK(s == TS_OK, "ts_store_create failed");
    for (k = 0; k < 3; k++) FZ_CHECK(ts_store_add_reducer(store, keys[k], keyed_reducer, (void *)keys[k]) == TS_OK, "add_reducer");
    FZ_CHECK(ts_store_add_reducer(store, "list", list_reducer, NULL) == TS_OK, "add_reducer list");
    FZ_CHECK(ts_store_add_middleware(store, "fuzz", middleware, NULL) == TS_OK, "add_middleware");
    FZ_CHECK(ts_store_subscribe(store, NULL, plain_listener, NULL, &token) == TS_OK, "subscribe");
    for (k = 0; k < WATCHERS; k++) {
        watchers[k].calls = 0;
        look(&watchers[k], &watchers[k].had, &watchers[k].seen);
        FZ_CHECK(ts_store_subscribe(store, watchers[k].pointer, pointer_listener, &watchers[k], &watchers[k].token) == TS_OK,
                 "subscribe %s", watchers[k].pointer);
    }

    for (i = 0; i < n; i++) {
        char *before = fz_state(store), *after;
        int calls_before = 0;
        for (k = 0; k < WATCHERS; k++) calls_before += watchers[k].calls;
        plain_calls = 0;
        applied = 0;
        passed_on = 0;
        s = ts_store_dispatch(store, lines[i]);
        after = fz_state(store);
        if (s != TS_OK) {
            FZ_CHECK(fz_status_known(s) && ts_last_error()[0] != '\0', "dispatch gave %d with message \"%s\"", (int)s,
                     ts_last_error());
            FZ_CHECK(s == TS_E_JSON || s == TS_E_NOT_ACTION || s == TS_E_REDUCER || s == TS_E_REENTRANT ||
                         s == TS_E_REJECTED || s == TS_E_NOMEM,
                     "dispatch returned %s, not a documented status", ts_status_name(s));
            if (!applied) {
                int calls_after = 0;
                for (k = 0; k < WATCHERS; k++) calls_after += watchers[k].calls;
                FZ_CHECK(strcmp(before, after) == 0, "a refused dispatch (%s) changed the state:\n  action %.200s\n  before %.300s\n  after  %.300s",
                         ts_status_name(s), lines[i], before, after);
                FZ_CHECK(plain_calls == 0 && calls_after == calls_before,
                         "a refused dispatch (%s) called listeners: %.200s", ts_status_name(s), lines[i]);
            }
        } else {
            fz_check_state_text(after, "after an accepted dispatch");
            if (passed_on && !applied) FZ_FAIL("next() succeeded but was not seen as such");
        }
        if (s == TS_OK && passed_on && strcmp(before, after) != 0)
            FZ_CHECK(plain_calls >= 1, "the state changed but the plain listener did not run: %.200s", lines[i]);
        /* No pointer listener missed a change. */
        for (k = 0; k < WATCHERS; k++) {
            int had;
            char *value;
            look(&watchers[k], &had, &value);
            FZ_CHECK(same(had, value, watchers[k].had, watchers[k].seen),
                     "listener on \"%s\" missed a change: it last saw %.200s, the value is %.200s (action %.200s)",
                     watchers[k].pointer, watchers[k].had ? watchers[k].seen : "absent", had ? value : "absent", lines[i]);
            ts_free(value);
        }
        ts_free(before);
        ts_free(after);
    }
    ts_store_destroy(store);
    store = NULL;
    for (k = 0; k < WATCHERS; k++) {
        ts_free(watchers[k].seen);
        watchers[k].seen = NULL;
    }
    free(text);
    return 0;
}
