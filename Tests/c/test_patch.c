/*
 * test_patch.c - C API tests: reducers that answer with an RFC 6902 JSON
 * Patch (ts_reducer_patch): every operation, every failure (TS_E_REDUCER,
 * its message, the state byte for byte as it was, no listener called),
 * several reducers all or nothing, pointer listeners under patches, misuse,
 * and threads.
 * Part of the C suite (check.h; `make test-c`; one test: build/tests/test_store -s TOPIC__RULE).
 */
#include "check.h"

/* The patch reducer: for "patch" it gives its payload to ts_reducer_patch;
 * for "patch/each" (payload: an array of patches) it gives each element in
 * turn; for "patch/both" it patches with the payload and returns text too;
 * for "patch/fail-first" it fails, then patches. At init it returns what ctx
 * (a string) says. The statuses of its ts_reducer_patch calls go to
 * patch_statuses. */
static ts_status patch_statuses[8];
static int patch_status_count;
static int patch_calls;

static void record_status(ts_status status) {
    if (patch_status_count < 8) patch_statuses[patch_status_count] = status;
    patch_status_count++;
}

static char *patch_reducer(const char *slice, const ts_action *a, void *ctx) {
    patch_calls++;
    if (slice == NULL) return xstrdup(ctx ? (const char *)ctx : "{}");
    if (strcmp(a->type, "patch") == 0) {
        record_status(ts_reducer_patch(a->payload));
    } else if (strcmp(a->type, "patch/each") == 0) {
        ts_json list, patch;
        size_t cursor = 0;
        if (ts_json_at(a->payload, "", &list) != TS_OK) return NULL;
        while (ts_json_next(&list, &cursor, NULL, &patch) == TS_OK) {
            char *text = xprintf("%.*s", (int)patch.length, patch.text);
            record_status(ts_reducer_patch(text));
            free(text); /* copied by ts_reducer_patch */
        }
    } else if (strcmp(a->type, "patch/both") == 0) {
        record_status(ts_reducer_patch(a->payload));
        return xstrdup(slice);
    } else if (strcmp(a->type, "patch/fail-first") == 0) {
        ts_reducer_fail("failed first");
        record_status(ts_reducer_patch(a->payload));
    } else if (strcmp(a->type, "patch/null") == 0) {
        record_status(ts_reducer_patch(NULL));
    } else if (strcmp(a->type, "patch/raw") == 0) {
        /* The payload is a JSON string holding the text to patch with. */
        const char *text;
        size_t length;
        if (ts_json_get_string(a->payload, "", &text, &length) != TS_OK) return NULL;
        char *copy = xprintf("%.*s", (int)length, text);
        record_status(ts_reducer_patch(copy));
        free(copy);
    }
    return NULL;
}

static void statuses_reset(void) {
    patch_status_count = 0;
    patch_calls = 0;
}

/* Dispatches {"type": TYPE, "payload": PAYLOAD}. */
static ts_status dispatch_with(ts_store *store, const char *type, const char *payload) {
    char *action = xprintf("{\"type\":\"%s\",\"payload\":%s}", type, payload);
    ts_status status = ts_store_dispatch(store, action);
    free(action);
    return status;
}

/* A store whose "doc" is owned by the patch reducer, starting at `doc`. */
static ts_store *doc_store(const char *doc) {
    char *state = xprintf("{\"doc\":%s,\"other\":[1,2]}", doc);
    ts_store *store = new_store(state);
    free(state);
    if (ts_store_add_reducer(store, "doc", patch_reducer, NULL) != TS_OK) abort();
    return store;
}

/* Applies `patch` to a store whose doc is `doc` and checks the doc after. */
static void expect_patch(const char *doc, const char *patch, const char *want, int line) {
    ts_store *store = doc_store(doc);
    statuses_reset();
    ts_status status = dispatch_with(store, "patch", patch);
    check_status(status, TS_OK, __FILE__, line, patch);
    check_status(patch_statuses[0], TS_OK, __FILE__, line, "ts_reducer_patch");
    check_state(store, "/doc", want, __FILE__, line);
    check_state(store, "/other", "[1,2]", __FILE__, line);
    ts_store_destroy(store);
}
#define EXPECT_PATCH(doc, patch, want) expect_patch((doc), (patch), (want), __LINE__)

void test_patch__everyOperationApplies(void) {
    const char *doc = "{\"a\":1,\"list\":[\"x\",\"y\",\"z\"],\"o\":{\"k\":true}}";
    /* add */
    EXPECT_PATCH(doc, "[{\"op\":\"add\",\"path\":\"/b\",\"value\":{\"n\":[1, 2]}}]",
                 "{\"a\":1,\"list\":[\"x\",\"y\",\"z\"],\"o\":{\"k\":true},\"b\":{\"n\":[1,2]}}");
    EXPECT_PATCH(doc, "[{\"op\":\"add\",\"path\":\"/a\",\"value\":2}]",
                 "{\"a\":2,\"list\":[\"x\",\"y\",\"z\"],\"o\":{\"k\":true}}");
    EXPECT_PATCH(doc, "[{\"op\":\"add\",\"path\":\"/list/1\",\"value\":\"new\"}]",
                 "{\"a\":1,\"list\":[\"x\",\"new\",\"y\",\"z\"],\"o\":{\"k\":true}}");
    EXPECT_PATCH(doc, "[{\"op\":\"add\",\"path\":\"/list/3\",\"value\":\"end\"}]",
                 "{\"a\":1,\"list\":[\"x\",\"y\",\"z\",\"end\"],\"o\":{\"k\":true}}");
    EXPECT_PATCH(doc, "[{\"op\":\"add\",\"path\":\"/list/-\",\"value\":\"end\"}]",
                 "{\"a\":1,\"list\":[\"x\",\"y\",\"z\",\"end\"],\"o\":{\"k\":true}}");
    EXPECT_PATCH(doc, "[{\"op\":\"add\",\"path\":\"\",\"value\":[true]}]", "[true]");
    EXPECT_PATCH(doc, "[{\"op\":\"add\",\"path\":\"/a~1b~0c\",\"value\":0}]",
                 "{\"a\":1,\"list\":[\"x\",\"y\",\"z\"],\"o\":{\"k\":true},\"a/b~c\":0}");
    EXPECT_PATCH("[]", "[{\"op\":\"add\",\"path\":\"/-\",\"value\":1},{\"op\":\"add\",\"path\":\"/0\",\"value\":0}]",
                 "[0,1]");
    /* remove */
    EXPECT_PATCH(doc, "[{\"op\":\"remove\",\"path\":\"/a\"}]", "{\"list\":[\"x\",\"y\",\"z\"],\"o\":{\"k\":true}}");
    EXPECT_PATCH(doc, "[{\"op\":\"remove\",\"path\":\"/list/0\"}]",
                 "{\"a\":1,\"list\":[\"y\",\"z\"],\"o\":{\"k\":true}}");
    EXPECT_PATCH(doc, "[{\"op\":\"remove\",\"path\":\"/o/k\"}]", "{\"a\":1,\"list\":[\"x\",\"y\",\"z\"],\"o\":{}}");
    /* replace */
    EXPECT_PATCH(doc, "[{\"op\":\"replace\",\"path\":\"/list/2\",\"value\":null}]",
                 "{\"a\":1,\"list\":[\"x\",\"y\",null],\"o\":{\"k\":true}}");
    EXPECT_PATCH(doc, "[{\"op\":\"replace\",\"path\":\"/o\",\"value\":\"s\"}]",
                 "{\"a\":1,\"list\":[\"x\",\"y\",\"z\"],\"o\":\"s\"}");
    EXPECT_PATCH(doc, "[{\"op\":\"replace\",\"path\":\"\",\"value\":42}]", "42");
    /* move */
    EXPECT_PATCH(doc, "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/o/a\"}]",
                 "{\"list\":[\"x\",\"y\",\"z\"],\"o\":{\"k\":true,\"a\":1}}");
    EXPECT_PATCH(doc, "[{\"op\":\"move\",\"from\":\"/list/0\",\"path\":\"/list/2\"}]",
                 "{\"a\":1,\"list\":[\"y\",\"z\",\"x\"],\"o\":{\"k\":true}}");
    EXPECT_PATCH(doc, "[{\"op\":\"move\",\"from\":\"/a\",\"path\":\"/a\"}]",
                 "{\"a\":1,\"list\":[\"x\",\"y\",\"z\"],\"o\":{\"k\":true}}");
    /* copy */
    EXPECT_PATCH(doc, "[{\"op\":\"copy\",\"from\":\"/o\",\"path\":\"/list/0\"}]",
                 "{\"a\":1,\"list\":[{\"k\":true},\"x\",\"y\",\"z\"],\"o\":{\"k\":true}}");
    /* test, then a change */
    EXPECT_PATCH(doc, "[{\"op\":\"test\",\"path\":\"/a\",\"value\":1.0},{\"op\":\"test\",\"path\":\"/o\",\"value\":{\"k\":true}},"
                      "{\"op\":\"replace\",\"path\":\"/a\",\"value\":3}]",
                 "{\"a\":3,\"list\":[\"x\",\"y\",\"z\"],\"o\":{\"k\":true}}");
    /* Unknown members of an operation are ignored; white space is fine. */
    EXPECT_PATCH(doc, " [ { \"op\" : \"remove\", \"path\" : \"/o\", \"value\": 1, \"x\": [] } ] ",
                 "{\"a\":1,\"list\":[\"x\",\"y\",\"z\"]}");
    /* Numbers and escapes are kept as written. */
    EXPECT_PATCH(doc, "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":[1.50, 1e2, \"\\u0041\\n\", 18446744073709551615]}]",
                 "{\"a\":[1.50,1e2,\"\\u0041\\n\",18446744073709551615],\"list\":[\"x\",\"y\",\"z\"],\"o\":{\"k\":true}}");
}

/* A listener that counts its calls in *(int *)ctx. */
static int whole_calls, pointer_calls;

/* Dispatches a patch that must fail: TS_E_REDUCER, a message with `needle`,
 * the state byte for byte as it was, no listener called. */
static void expect_patch_fails(const char *doc, const char *type, const char *patch, const char *needle, int line) {
    ts_store *store = doc_store(doc);
    uint64_t t1, t2;
    whole_calls = pointer_calls = 0;
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &whole_calls, &t1));
    CHECK_OK(ts_store_subscribe(store, "/doc", count_listener, &pointer_calls, &t2));
    char *before = state_of(store, NULL);
    statuses_reset();
    ts_status status = dispatch_with(store, type, patch);
    check_status(status, TS_E_REDUCER, __FILE__, line, patch);
    ts_test_check_contains(ts_last_error(), needle, __FILE__, line, "message");
    char *after = state_of(store, NULL);
    ts_test_check_str(after, before, __FILE__, line, "state unchanged");
    ts_test_report(whole_calls == 0 && pointer_calls == 0, __FILE__, line, "no listener called", NULL);
    ts_free(before);
    ts_free(after);
    ts_store_destroy(store);
}
#define EXPECT_PATCH_FAILS(doc, patch, needle) expect_patch_fails((doc), "patch", (patch), (needle), __LINE__)

void test_patch__failedOperationFailsTheDispatchWithItsReason(void) {
    const char *doc = "{\"a\":1,\"list\":[\"x\",\"y\",\"z\"],\"items\":[{\"done\":false}]}";
    const char *prefix = "the reducer for \"doc\" returned a patch that failed for \"patch\": ";
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"test\",\"path\":\"/a\",\"value\":1},{\"op\":\"replace\",\"path\":\"/a\",\"value\":2},"
                            "{\"op\":\"test\",\"path\":\"/items/0/done\",\"value\":true}]",
                       prefix);
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"test\",\"path\":\"/a\",\"value\":1},{\"op\":\"replace\",\"path\":\"/a\",\"value\":2},"
                            "{\"op\":\"test\",\"path\":\"/items/0/done\",\"value\":true}]",
                       "op 2 (\"test\" at \"/items/0/done\"): ");
    /* Each operation's own failures. */
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"add\",\"path\":\"/missing/x\",\"value\":1}]", "op 0 (\"add\" at \"/missing/x\"): ");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"add\",\"path\":\"/list/4\",\"value\":1}]", "op 0 (\"add\" at \"/list/4\"): ");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"add\",\"path\":\"/a/x\",\"value\":1}]", "op 0 (\"add\" at \"/a/x\"): ");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"add\",\"path\":\"/list/01\",\"value\":1}]", "op 0 (\"add\" at \"/list/01\")");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"remove\",\"path\":\"/nope\"}]", "op 0 (\"remove\" at \"/nope\"): ");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"remove\",\"path\":\"/list/3\"}]", "op 0 (\"remove\" at \"/list/3\"): ");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"remove\",\"path\":\"/list/-\"}]", "op 0 (\"remove\" at \"/list/-\"): ");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"replace\",\"path\":\"/nope\",\"value\":1}]", "op 0 (\"replace\" at \"/nope\"): ");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"move\",\"from\":\"/nope\",\"path\":\"/b\"}]", "op 0 (\"move\" at \"/b\"): ");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"move\",\"from\":\"/items\",\"path\":\"/items/0/x\"}]", "op 0 (\"move\" at \"/items/0/x\"): ");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"copy\",\"from\":\"/nope\",\"path\":\"/b\"}]", "op 0 (\"copy\" at \"/b\"): ");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"copy\",\"from\":\"/a\",\"path\":\"/nope/b\"}]", "op 0 (\"copy\" at \"/nope/b\"): ");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"test\",\"path\":\"/a\",\"value\":\"1\"}]", "op 0 (\"test\" at \"/a\"): ");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"test\",\"path\":\"/nope\",\"value\":1}]", "op 0 (\"test\" at \"/nope\"): ");
    /* Malformed operations: checked before any applies. */
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":2},{\"op\":\"delete\",\"path\":\"/a\"}]",
                       "op 1: unknown op \"delete\"");
    EXPECT_PATCH_FAILS(doc, "[{\"path\":\"/a\"}]", "op 0: \"op\" is missing");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"add\",\"value\":1}]", "op 0");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"add\",\"path\":\"/b\"}]", "op 0");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"add\",\"path\":3,\"value\":1}]", "op 0");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"move\",\"path\":\"/b\"}]", "op 0");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"add\",\"path\":\"a\",\"value\":1}]", "op 0");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"add\",\"path\":\"/~2\",\"value\":1}]", "op 0");
    EXPECT_PATCH_FAILS(doc, "[1]", "op 0");
    EXPECT_PATCH_FAILS(doc, "[{\"op\":\"remove\",\"path\":\"\"}]", "op 0 (\"remove\" at \"\")");

    /* Refused by ts_reducer_patch itself: the reducer's call fails. */
    const char *refused = "the reducer for \"doc\" failed for \"patch/raw\": ts_reducer_patch: ";
    expect_patch_fails(doc, "patch/raw", "\"[{\\\"op\\\":\"", refused, __LINE__);
    expect_patch_fails(doc, "patch/raw", "\"[{\\\"op\\\":\\\"add\\\",\\\"path\\\":\\\"/b\\\",\\\"value\\\":1}] x\"",
                       "the patch is not valid JSON", __LINE__);
    CHECK_INT(patch_statuses[0], TS_E_JSON);
    expect_patch_fails(doc, "patch/raw", "\"[{\\\"a\\\":1,\\\"a\\\":2}]\"", "the patch is not valid JSON", __LINE__);
    CHECK_INT(patch_statuses[0], TS_E_JSON);
    expect_patch_fails(doc, "patch/raw", "\"\\u00ff\\\"\"", "the patch is not valid JSON", __LINE__);
    expect_patch_fails(doc, "patch", "{\"op\":\"add\"}",
                       "ts_reducer_patch: a JSON Patch must be an array of operations, found object", __LINE__);
    CHECK_INT(patch_statuses[0], TS_E_ARGUMENT);
    expect_patch_fails(doc, "patch", "\"x\"", "found string", __LINE__);
    expect_patch_fails(doc, "patch/null", "0", "ts_reducer_patch: patch_json is NULL", __LINE__);
    CHECK_INT(patch_statuses[0], TS_E_ARGUMENT);
    /* Patched and returned text: refused, the text freed (valgrind). */
    expect_patch_fails(doc, "patch/both", "[]", "returned both a patch and a new slice for \"patch/both\"", __LINE__);
    /* Failed first: the failure holds, the patch is not recorded. */
    expect_patch_fails(doc, "patch/fail-first", "[{\"op\":\"remove\",\"path\":\"/a\"}]",
                       "the reducer for \"doc\" failed for \"patch/fail-first\": failed first", __LINE__);
    CHECK_INT(patch_statuses[0], TS_OK);

    /* Too deep: a top-level value may be TS_MAX_DEPTH - 1 deep. The doc is
     * arrays nested TS_MAX_DEPTH - 2 deep; appending [[1]] to the innermost
     * one would make it TS_MAX_DEPTH deep, [1] makes it TS_MAX_DEPTH - 1. */
    char *deep_doc = nested("", TS_MAX_DEPTH - 2, "", "");
    char *path = calloc(1, 2 * TS_MAX_DEPTH + 8);
    for (int i = 0; i < TS_MAX_DEPTH - 3; i++) strcat(path, "/0");
    strcat(path, "/-");
    char *deep = xprintf("[{\"op\":\"add\",\"path\":\"%s\",\"value\":[[1]]}]", path);
    expect_patch_fails(deep_doc, "patch", deep, "op 0 (\"add\" at \"/0/0/0", __LINE__);
    free(deep);
    deep = xprintf("[{\"op\":\"add\",\"path\":\"%s\",\"value\":[1]}]", path);
    ts_store *store = doc_store(deep_doc);
    CHECK_OK(dispatch_with(store, "patch", deep));
    char *whole = state_of(store, NULL);
    CHECK(whole != NULL && strstr(whole, "[[1]]]]") != NULL);
    ts_free(whole);
    ts_store_destroy(store);
    free(deep);
    free(path);
    free(deep_doc);
}

void test_patch__emptyPatchLeavesTheSliceUnchangedAndCallsAppendInOrder(void) {
    ts_store *store = doc_store("{\"a\":1}");
    int whole = 0, pointed = 0;
    uint64_t t1, t2;
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &whole, &t1));
    CHECK_OK(ts_store_subscribe(store, "/doc", count_listener, &pointed, &t2));
    /* No operation, or tests only: unchanged (plain listeners still run). */
    CHECK_OK(dispatch_with(store, "patch", "[]"));
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"test\",\"path\":\"/a\",\"value\":1}]"));
    CHECK_INT(whole, 2);
    CHECK_INT(pointed, 0);
    CHECK_STATE(store, NULL, "{\"doc\":{\"a\":1},\"other\":[1,2]}");

    /* Several calls append their operations in order, as one patch: the
     * second sees what the first did. */
    statuses_reset();
    CHECK_OK(dispatch_with(store, "patch/each",
                           "[[{\"op\":\"add\",\"path\":\"/b\",\"value\":[]}],[],"
                           "[{\"op\":\"add\",\"path\":\"/b/-\",\"value\":1},{\"op\":\"add\",\"path\":\"/b/-\",\"value\":2}],"
                           "[{\"op\":\"test\",\"path\":\"/b\",\"value\":[1,2]},{\"op\":\"remove\",\"path\":\"/a\"}]]"));
    CHECK_INT(patch_status_count, 4);
    CHECK_INT(patch_statuses[3], TS_OK);
    CHECK_STATE(store, "/doc", "{\"b\":[1,2]}");
    CHECK_INT(pointed, 1);
    /* All or nothing across the calls: the last one's test fails. */
    CHECK_ST(dispatch_with(store, "patch/each",
                           "[[{\"op\":\"remove\",\"path\":\"/b\"}],[{\"op\":\"test\",\"path\":\"/b\",\"value\":1}]]"),
             TS_E_REDUCER);
    CHECK_CONTAINS(ts_last_error(), "op 1 (\"test\" at \"/b\")");
    CHECK_STATE(store, "/doc", "{\"b\":[1,2]}");
    /* The patched slice reads back as a whole and below. */
    CHECK_STATE(store, "/doc/b/1", "2");
    CHECK_STATE(store, NULL, "{\"doc\":{\"b\":[1,2]},\"other\":[1,2]}");
    ts_store_destroy(store);
}

/* ts_reducer_patch outside a reducer. */
static ts_status patch_status_in_listener;
static void patching_listener(ts_store *store, void *ctx) {
    (void)store;
    (void)ctx;
    patch_status_in_listener = ts_reducer_patch("[]");
}
static ts_status patching_middleware(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    (void)api;
    *(ts_status *)ctx = ts_reducer_patch("[]");
    return next(a->json);
}

void test_patch__patchOutsideAReducerIsMisuse(void) {
    CHECK_ST(ts_reducer_patch("[]"), TS_E_MISUSE);
    CHECK_CONTAINS(ts_last_error(), "ts_reducer_patch: called outside a reducer");
    CHECK_ST(ts_reducer_patch(NULL), TS_E_MISUSE);

    ts_store *store = doc_store("{}");
    ts_status in_middleware = TS_OK;
    uint64_t token;
    CHECK_OK(ts_store_subscribe(store, NULL, patching_listener, NULL, &token));
    CHECK_OK(ts_store_add_middleware(store, "patcher", patching_middleware, &in_middleware));
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"add\",\"path\":\"/x\",\"value\":1}]"));
    CHECK_INT(patch_status_in_listener, TS_E_MISUSE);
    CHECK_INT(in_middleware, TS_E_MISUSE);
    CHECK_STATE(store, "/doc", "{\"x\":1}");
    ts_store_destroy(store);
}

/* Patches at init (slice_json NULL). */
static char *init_patch_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)a;
    (void)ctx;
    if (slice == NULL) {
        record_status(ts_reducer_patch("[{\"op\":\"add\",\"path\":\"\",\"value\":1}]"));
        return xstrdup("1");
    }
    return NULL;
}

void test_patch__patchAtInitIsMisuseAndFailsTheRegistration(void) {
    ts_store *store = new_store("{\"a\":1}");
    statuses_reset();
    CHECK_ST(ts_store_add_reducer(store, "k", init_patch_reducer, NULL), TS_E_REDUCER);
    CHECK_INT(patch_statuses[0], TS_E_MISUSE);
    CHECK_CONTAINS(ts_last_error(), "the reducer for \"k\" failed for \"@@turnstate/init\": ts_reducer_patch: the init call");
    CHECK_STATE(store, NULL, "{\"a\":1}");
    ts_store_destroy(store);
}

/* Owns "full": returns a whole new slice for "all". */
static char *full_reducer(const char *slice, const ts_action *a, void *ctx) {
    ++*(int *)ctx;
    if (slice == NULL) return xstrdup("0");
    if (strcmp(a->type, "all") == 0) return xprintf("%lld", strtoll(slice, NULL, 10) + 1);
    return NULL;
}

/* Patches with the payload's "/first" (or "/second") member. */
static char *member_patch_reducer(const char *slice, const ts_action *a, void *ctx) {
    ++*(int *)((void **)ctx)[0];
    if (slice == NULL) return xstrdup("{\"n\":0}");
    ts_json patch;
    if (strcmp(a->type, "all") == 0 && ts_json_at(a->payload, (const char *)((void **)ctx)[1], &patch) == TS_OK) {
        char *text = xprintf("%.*s", (int)patch.length, patch.text);
        ts_reducer_patch(text);
        free(text);
    }
    return NULL;
}

void test_patch__patchesApplyAllOrNothing(void) {
    ts_store *store = new_store(NULL);
    int full_calls = 0, first_calls = 0, second_calls = 0, last_calls = 0;
    void *first[] = {&first_calls, "/first"}, *second[] = {&second_calls, "/second"};
    CHECK_OK(ts_store_add_reducer(store, "full", full_reducer, &full_calls));
    CHECK_OK(ts_store_add_reducer(store, "first", member_patch_reducer, first));
    CHECK_OK(ts_store_add_reducer(store, "second", member_patch_reducer, second));
    CHECK_OK(ts_store_add_reducer(store, "last", full_reducer, &last_calls));
    int whole = 0, pointed = 0;
    uint64_t t1, t2;
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &whole, &t1));
    CHECK_OK(ts_store_subscribe(store, "/first/n", count_listener, &pointed, &t2));
    char *before = state_of(store, NULL);
    full_calls = first_calls = second_calls = last_calls = 0;
    /* The first patch applies, the second fails: nothing changes, and the
     * reducer after the failing one is not called. */
    CHECK_ST(dispatch_with(store, "all", "{\"first\":[{\"op\":\"replace\",\"path\":\"/n\",\"value\":1}],"
                                         "\"second\":[{\"op\":\"remove\",\"path\":\"/x\"}]}"),
             TS_E_REDUCER);
    CHECK_CONTAINS(ts_last_error(), "the reducer for \"second\" returned a patch that failed for \"all\": op 0 (\"remove\" at \"/x\")");
    char *after = state_of(store, NULL);
    CHECK_STR(after, before);
    ts_free(after);
    CHECK_INT(full_calls, 1);
    CHECK_INT(first_calls, 1);
    CHECK_INT(second_calls, 1);
    CHECK_INT(last_calls, 0);
    CHECK_INT(whole, 0);
    CHECK_INT(pointed, 0);
    /* All succeed: all applied, in one step. */
    CHECK_OK(dispatch_with(store, "all", "{\"first\":[{\"op\":\"replace\",\"path\":\"/n\",\"value\":1}],"
                                         "\"second\":[{\"op\":\"add\",\"path\":\"/x\",\"value\":true}]}"));
    CHECK_STATE(store, NULL, "{\"full\":1,\"first\":{\"n\":1},\"second\":{\"n\":0,\"x\":true},\"last\":1}");
    CHECK_INT(whole, 1);
    CHECK_INT(pointed, 1);
    ts_free(before);
    ts_store_destroy(store);
}

/* Pointer listeners: called exactly when their value changed. */
typedef struct watch {
    const char *pointer;
    int calls;
} watch;

void test_patch__pointerListenersSeePatchedPaths(void) {
    ts_store *store = doc_store("{\"items\":[{\"id\":0,\"done\":false},{\"id\":1,\"done\":false},{\"id\":2,\"done\":true}],"
                                "\"meta\":{\"n\":3}}");
    watch w[] = {
        {"", 0},                     /* 0: the whole state */
        {"/doc", 0},                 /* 1: the slice */
        {"/doc/items", 0},           /* 2 */
        {"/doc/items/1", 0},         /* 3 */
        {"/doc/items/1/done", 0},    /* 4 */
        {"/doc/items/2/done", 0},    /* 5 */
        {"/doc/meta", 0},            /* 6 */
        {"/doc/meta/n", 0},          /* 7 */
        {"/doc/items/10", 0},        /* 8: a sibling whose name starts like "/doc/items/1" */
        {"/doc/new", 0},             /* 9: missing until added */
        {"/other", 0},               /* 10: another slice */
        {"/doc/items/0/id", 0},      /* 11 */
    };
    const size_t n = sizeof w / sizeof w[0];
    for (size_t i = 0; i < n; i++) {
        uint64_t token;
        CHECK_OK(ts_store_subscribe(store, w[i].pointer, count_listener, &w[i].calls, &token));
    }
#define CALLS(...)                                                                     \
    do {                                                                               \
        int want_[] = {__VA_ARGS__};                                                   \
        for (size_t i_ = 0; i_ < n; i_++) {                                            \
            char detail_[160];                                                         \
            snprintf(detail_, sizeof detail_, "%s: %d calls, expected %d", w[i_].pointer, \
                     w[i_].calls, want_[i_]);                                          \
            ts_test_report(w[i_].calls == want_[i_], __FILE__, __LINE__, "pointer listener", detail_); \
        }                                                                              \
    } while (0)
    /* A leaf: its parents are called, siblings and other branches not. */
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"replace\",\"path\":\"/items/1/done\",\"value\":true}]"));
    CALLS(1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0);
    /* The same value again: paths touched, values equal: nobody. */
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"replace\",\"path\":\"/items/1/done\",\"value\":true}]"));
    CALLS(1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0);
    /* Above a watched pointer: it may change, and does. */
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"replace\",\"path\":\"/meta\",\"value\":{\"n\":4}}]"));
    CALLS(2, 2, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0);
    /* Above, but the value below stays: not called. */
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"replace\",\"path\":\"/meta\",\"value\":{\"n\":4,\"m\":0}}]"));
    CALLS(3, 3, 1, 1, 1, 0, 2, 1, 0, 0, 0, 0);
    /* An insertion at the front moves every element after it. */
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"add\",\"path\":\"/items/0\",\"value\":{\"id\":9,\"done\":true}}]"));
    /* items/1 was {1,true} and is now {0,false}; items/2/done was true and
     * is now true (old items/1): not called; items/0/id 0 -> 9. */
    CALLS(4, 4, 2, 2, 2, 0, 2, 1, 0, 0, 0, 1);
    /* A removal moves them back. */
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"remove\",\"path\":\"/items/0\"}]"));
    CALLS(5, 5, 3, 3, 3, 0, 2, 1, 0, 0, 0, 2);
    /* Appending with "-" changes the array, not its elements. */
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"add\",\"path\":\"/items/-\",\"value\":{\"id\":3}}]"));
    CALLS(6, 6, 4, 3, 3, 0, 2, 1, 0, 0, 0, 2);
    /* A value that appears. */
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"add\",\"path\":\"/new\",\"value\":1}]"));
    CALLS(7, 7, 4, 3, 3, 0, 2, 1, 0, 1, 0, 2);
    /* A move: both ends. */
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"move\",\"from\":\"/new\",\"path\":\"/meta/n\"}]"));
    CALLS(8, 8, 4, 3, 3, 0, 3, 2, 0, 2, 0, 2);
    /* Elements up to 10 exist now: "/items/10" appears (its own path). */
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"add\",\"path\":\"/items/-\",\"value\":4},{\"op\":\"add\",\"path\":\"/items/-\",\"value\":5},"
                                           "{\"op\":\"add\",\"path\":\"/items/-\",\"value\":6},{\"op\":\"add\",\"path\":\"/items/-\",\"value\":7},"
                                           "{\"op\":\"add\",\"path\":\"/items/-\",\"value\":8},{\"op\":\"add\",\"path\":\"/items/-\",\"value\":9},"
                                           "{\"op\":\"add\",\"path\":\"/items/-\",\"value\":10}]"));
    CALLS(9, 9, 5, 3, 3, 0, 3, 2, 1, 2, 0, 2);
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"replace\",\"path\":\"/items/10\",\"value\":\"ten\"}]"));
    CALLS(10, 10, 6, 3, 3, 0, 3, 2, 2, 2, 0, 2);
    /* The whole slice replaced. */
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"replace\",\"path\":\"\",\"value\":{\"meta\":{\"n\":1,\"m\":0}}}]"));
    /* meta's text is the same as before: meta and meta/n are not called. */
    CALLS(11, 11, 7, 4, 4, 1, 3, 2, 3, 2, 0, 3);
    /* A dispatch that changes nothing calls no pointer listener. */
    CHECK_OK(dispatch_with(store, "noop", "0"));
    CALLS(11, 11, 7, 4, 4, 1, 3, 2, 3, 2, 0, 3);
    CHECK_STATE(store, "/doc", "{\"meta\":{\"n\":1,\"m\":0}}");
#undef CALLS
    ts_store_destroy(store);
}

/* A listener that patches again from inside the notification (a nested
 * dispatch), once: watchers then see two patches since their last look. */
static int nested_done;
static void nesting_listener(ts_store *store, void *ctx) {
    (void)ctx;
    if (nested_done) return;
    nested_done = 1;
    dispatch_with(store, "patch", "[{\"op\":\"replace\",\"path\":\"/b\",\"value\":2}]");
}

void test_patch__nestedDispatchFromAPatchReducerApplies(void) {
    ts_store *store = doc_store("{\"a\":0,\"b\":0}");
    int a = 0, b = 0;
    uint64_t t0, t1, t2;
    nested_done = 0;
    CHECK_OK(ts_store_subscribe(store, NULL, nesting_listener, NULL, &t0));
    CHECK_OK(ts_store_subscribe(store, "/doc/a", count_listener, &a, &t1));
    CHECK_OK(ts_store_subscribe(store, "/doc/b", count_listener, &b, &t2));
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"replace\",\"path\":\"/a\",\"value\":1}]"));
    /* The nested dispatch changed b; a changed in the outer one. */
    CHECK_INT(a, 1);
    CHECK_INT(b, 1);
    CHECK_STATE(store, "/doc", "{\"a\":1,\"b\":2}");
    ts_store_destroy(store);
}

/* Reads the slice with the getters and patches from what it read: appends
 * the payload to "/list" and counts in "/n". */
static char *appending_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    if (slice == NULL) return xstrdup("{\"n\":0,\"list\":[]}");
    if (strcmp(a->type, "append") != 0) return NULL;
    int64_t n, value;
    if (ts_json_get_int(slice, "/n", &n) != TS_OK || ts_json_get_int(a->payload, "/v", &value) != TS_OK) {
        ts_reducer_fail(ts_last_error());
        return NULL;
    }
    char patch[256];
    snprintf(patch, sizeof patch,
             "[{\"op\":\"test\",\"path\":\"/n\",\"value\":%lld},{\"op\":\"replace\",\"path\":\"/n\",\"value\":%lld},"
             "{\"op\":\"add\",\"path\":\"/list/-\",\"value\":%lld}]",
             (long long)n, (long long)n + 1, (long long)value);
    if (ts_reducer_patch(patch) != TS_OK) abort();
    return NULL;
}

typedef struct appender {
    ts_store *store;
    int base;
    int count;
    int failures;
} appender;

static void *append_thread(void *arg) {
    appender *ap = arg;
    for (int i = 0; i < ap->count; i++) {
        char action[96];
        snprintf(action, sizeof action, "{\"type\":\"append\",\"payload\":{\"v\":%d}}", ap->base + i);
        if (ts_store_dispatch(ap->store, action) != TS_OK) ap->failures++;
    }
    return NULL;
}

void test_patch__patchesFromManyThreadsAllApply(void) {
    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "log", appending_reducer, NULL));
    enum { THREADS = 4 };
    int per_thread = ts_test_quick ? 50 : 500;
    pthread_t threads[THREADS];
    appender ap[THREADS];
    for (int t = 0; t < THREADS; t++) {
        ap[t] = (appender){store, t * 100000, per_thread, 0};
        CHECK(pthread_create(&threads[t], NULL, append_thread, &ap[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        CHECK_INT(ap[t].failures, 0);
    }
    /* Every append landed once; each thread's in its order. */
    char *state = state_of(store, "/log");
    CHECK(state != NULL);
    int64_t n = -1;
    size_t count = 0;
    CHECK_OK(ts_json_get_int(state, "/n", &n));
    CHECK_INT(n, THREADS * per_thread);
    ts_json list, item;
    CHECK_OK(ts_json_at(state, "/list", &list));
    CHECK_OK(ts_json_count(&list, &count));
    CHECK_INT(count, THREADS * per_thread);
    int64_t next[THREADS] = {0};
    size_t cursor = 0;
    int in_order = 1;
    while (ts_json_next(&list, &cursor, NULL, &item) == TS_OK) {
        int64_t v;
        if (ts_json_int(&item, &v) != TS_OK) in_order = 0;
        int t = (int)(v / 100000);
        if (t < 0 || t >= THREADS || v % 100000 != next[t]) in_order = 0;
        else next[t]++;
    }
    CHECK(in_order);
    ts_free(state);
    ts_store_destroy(store);
}

/* A big slice under patches, against a model of it: {"items":[{"id":I,
 * "done":B}, ...]} of 3,000 items (about 70 KB: the store keeps a slice
 * that big as a tree of texts once a patch changed it). Random replaces,
 * appends, inserts, removes, moves, copies, tests that hold and patches
 * that fail; after each dispatch the slice reads as the model's text, a
 * few values read as the model says, and pointer listeners were called
 * exactly when their value changed. */
typedef struct model_item {
    long id;
    int done;
} model_item;

static char *model_text(const model_item *items, size_t n) {
    size_t cap = n * 40 + 16, at = 0;
    char *text = malloc(cap);
    if (text == NULL) abort();
    at += (size_t)snprintf(text + at, cap - at, "{\"items\":[");
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(text + at, cap - at, "%s{\"id\":%ld,\"done\":%s}", i ? "," : "", items[i].id,
                               items[i].done ? "true" : "false");
    snprintf(text + at, cap - at, "]}");
    return text;
}

static unsigned long long model_seed = 0x9E3779B97F4A7C15ULL;
static size_t model_rand(size_t n) {
    model_seed ^= model_seed << 13;
    model_seed ^= model_seed >> 7;
    model_seed ^= model_seed << 17;
    return (size_t)(model_seed % n);
}

static void run_big_model(ts_store *store, const char *key, model_item *items, size_t n, int steps) {
    enum { WATCHED = 3 };
    const size_t watched_index[WATCHED] = {0, 1500, 2999};
    watch w[WATCHED];
    char *pointers[WATCHED];
    for (int k = 0; k < WATCHED; k++) {
        pointers[k] = xprintf("/%s/items/%zu/done", key, watched_index[k]);
        w[k].pointer = pointers[k];
        w[k].calls = 0;
        uint64_t token;
        CHECK_OK(ts_store_subscribe(store, w[k].pointer, count_listener, &w[k].calls, &token));
    }
    int mismatches = 0, listener_mismatches = 0, refused = 0;
    model_item *before = malloc(sizeof *items * (n + steps + 1));
    if (before == NULL) abort();
    for (int step = 0; step < steps; step++) {
        size_t old_n = n;
        memcpy(before, items, sizeof *items * n);
        int calls_before[WATCHED];
        for (int k = 0; k < WATCHED; k++) calls_before[k] = w[k].calls;
        char *patch = NULL;
        int fails = 0;
        size_t i = model_rand(n), j = model_rand(n);
        switch (step % 10) {
        case 0:
        case 1:
        case 2: /* toggle */
            patch = xprintf("[{\"op\":\"replace\",\"path\":\"/items/%zu/done\",\"value\":%s}]", i,
                            items[i].done ? "false" : "true");
            items[i].done = !items[i].done;
            break;
        case 3: /* append */
            patch = xprintf("[{\"op\":\"add\",\"path\":\"/items/-\",\"value\":{\"id\":%d,\"done\":false}}]", 10000 + step);
            items[n++] = (model_item){10000 + step, 0};
            break;
        case 4: /* insert */
            patch = xprintf("[{\"op\":\"add\",\"path\":\"/items/%zu\",\"value\":{\"id\":%d,\"done\":true}}]", i, 20000 + step);
            memmove(items + i + 1, items + i, sizeof *items * (n - i));
            items[i] = (model_item){20000 + step, 1};
            n++;
            break;
        case 5: /* remove, after a test that holds */
            patch = xprintf("[{\"op\":\"test\",\"path\":\"/items/%zu/id\",\"value\":%ld},{\"op\":\"remove\",\"path\":\"/items/%zu\"}]",
                            i, items[i].id, i);
            memmove(items + i, items + i + 1, sizeof *items * (n - i - 1));
            n--;
            break;
        case 6: { /* move i to j (j counted after the removal) */
            patch = xprintf("[{\"op\":\"move\",\"from\":\"/items/%zu\",\"path\":\"/items/%zu\"}]", i, j);
            model_item moved = items[i];
            memmove(items + i, items + i + 1, sizeof *items * (n - i - 1));
            memmove(items + j + 1, items + j, sizeof *items * (n - 1 - j));
            items[j] = moved;
            break;
        }
        case 7: /* copy i before j */
            patch = xprintf("[{\"op\":\"copy\",\"from\":\"/items/%zu\",\"path\":\"/items/%zu\"}]", i, j);
            {
                model_item copied = items[i];
                memmove(items + j + 1, items + j, sizeof *items * (n - j));
                items[j] = copied;
                n++;
            }
            break;
        case 8: /* a change, then a test that fails: nothing changes */
            patch = xprintf("[{\"op\":\"replace\",\"path\":\"/items/%zu/done\",\"value\":true},"
                            "{\"op\":\"test\",\"path\":\"/items/%zu/id\",\"value\":-1}]", i, j);
            fails = 1;
            break;
        default: /* out of range */
            patch = xprintf("[{\"op\":\"remove\",\"path\":\"/items/%zu\"}]", n + 5);
            fails = 1;
            break;
        }
        ts_status status = dispatch_with(store, "patch", patch);
        if (fails) {
            refused++;
            if (status != TS_E_REDUCER || strstr(ts_last_error(), "returned a patch that failed") == NULL) mismatches++;
        } else if (status != TS_OK) {
            mismatches++;
        }
        char *want = model_text(items, n);
        char *pointer = xprintf("/%s", key);
        char *got = state_of(store, pointer);
        if (got == NULL || strcmp(got, want) != 0) {
            if (mismatches++ < 3) ts_test_report(0, __FILE__, __LINE__, "big slice reads as its model", patch);
        }
        free(got);
        free(pointer);
        size_t probe = model_rand(n);
        pointer = xprintf("/%s/items/%zu/id", key, probe);
        got = state_of(store, pointer);
        char *id = xprintf("%ld", items[probe].id);
        if (got == NULL || strcmp(got, id) != 0) mismatches++;
        free(got);
        free(id);
        free(pointer);
        for (int k = 0; k < WATCHED; k++) {
            const size_t at = watched_index[k];
            const char *was = at < old_n ? (before[at].done ? "true" : "false") : "missing";
            const char *is = at < n ? (items[at].done ? "true" : "false") : "missing";
            int want_calls = strcmp(was, is) != 0;
            if (w[k].calls - calls_before[k] != want_calls) listener_mismatches++;
        }
        free(want);
        free(patch);
    }
    free(before);
    CHECK_INT(mismatches, 0);
    CHECK_INT(listener_mismatches, 0);
    CHECK(refused > 0);
    for (int k = 0; k < WATCHED; k++) free(pointers[k]);
}

void test_patch__bigSliceAgreesWithTheModel(void) {
    const size_t n = 3000;
    int steps = ts_test_quick ? 60 : 400;
    model_item *items = malloc(sizeof *items * (n + (size_t)steps + 1));
    if (items == NULL) abort();
    for (size_t i = 0; i < n; i++) items[i] = (model_item){(long)i, (int)(i % 3 == 0)};
    char *doc = model_text(items, n);
    CHECK(strlen(doc) >= 64 * 1024);
    ts_store *store = doc_store(doc);
    free(doc);
    run_big_model(store, "doc", items, n, steps);
    CHECK_STATE(store, "/other", "[1,2]");
    ts_store_destroy(store);
    free(items);
}

/* ---- Patch reducers (ts_store_add_patch_reducer) ---- */

/* What the patch reducer saw of its slice, for the checks after the dispatch. */
static struct {
    int calls;
    int had_slice;
    int text_null;
    size_t length;
    int kind;
    char *text;             /* a copy of slice->text, when it has one */
    int items_split;        /* /items has no text (a node of the tree) */
    size_t items_count;
    long long id5;          /* /items/5/id */
    long long first_ids[3]; /* the first three elements through ts_json_next */
    ts_status int_of_slice; /* ts_json_int on the slice */
    char *int_error;
    ts_status missing;      /* ts_json_find of /nope */
    char *missing_error;
    ts_status keys;         /* ts_json_next with keys over the slice */
    char *first_key;
} seen;

static void seen_reset(void) {
    free(seen.text);
    free(seen.int_error);
    free(seen.missing_error);
    free(seen.first_key);
    memset(&seen, 0, sizeof seen);
}

/* init: ctx's text; "look": records what it reads; "patch": patches with
 * the payload (as patch_reducer does). */
static char *value_reducer(const ts_json *slice, const ts_action *a, void *ctx) {
    seen.calls++;
    if (slice == NULL) {
        seen.had_slice = 0;
        return xstrdup(ctx ? (const char *)ctx : "{}");
    }
    seen.had_slice = 1;
    if (strcmp(a->type, "patch") == 0) {
        record_status(ts_reducer_patch(a->payload));
        return NULL;
    }
    if (strcmp(a->type, "set") == 0) return xprintf("%s", a->payload); /* the whole slice, as text */
    if (strcmp(a->type, "look") != 0) return NULL;
    seen_reset();
    seen.had_slice = 1;
    seen.text_null = slice->text == NULL;
    seen.length = slice->length;
    seen.kind = slice->kind;
    if (slice->text != NULL) seen.text = xprintf("%.*s", (int)slice->length, slice->text);
    ts_json items, value;
    if (ts_json_find(slice, "/items", &items) == TS_OK) {
        seen.items_split = items.text == NULL;
        ts_json_count(&items, &seen.items_count);
        int64_t id;
        if (ts_json_find(&items, "/5/id", &value) == TS_OK && ts_json_int(&value, &id) == TS_OK) seen.id5 = id;
        size_t cursor = 0;
        for (int i = 0; i < 3 && ts_json_next(&items, &cursor, NULL, &value) == TS_OK; i++) {
            ts_json idv;
            if (ts_json_find(&value, "/id", &idv) == TS_OK && ts_json_int(&idv, &id) == TS_OK) seen.first_ids[i] = id;
        }
    }
    int64_t ignored;
    seen.int_of_slice = ts_json_int(slice, &ignored);
    seen.int_error = xstrdup(ts_last_error());
    seen.missing = ts_json_find(slice, "/nope/0", &value);
    seen.missing_error = xstrdup(ts_last_error());
    size_t cursor = 0;
    ts_json key;
    seen.keys = ts_json_next(slice, &cursor, &key, &value);
    if (seen.keys == TS_OK) {
        const char *k;
        size_t kl;
        if (ts_json_string(&key, &k, &kl) == TS_OK) seen.first_key = xprintf("%.*s", (int)kl, k);
    }
    return NULL;
}

/* A store whose "doc" is owned by value_reducer, starting at `doc`. */
static ts_store *value_store(const char *doc, const char *const *types) {
    ts_store *store = new_store("{\"other\":[1,2]}");
    if (ts_store_add_patch_reducer(store, "doc", types, value_reducer, (void *)doc) != TS_OK) abort();
    return store;
}

/* What a patch reducer reads of a slice, small (one text) and big (a tree):
 * the same values the text has; a split value has no text but its length
 * and kind; the getters' failures name the same things. */
static void check_value_reads(size_t n) {
    model_item *items = malloc(sizeof *items * n);
    if (items == NULL) abort();
    for (size_t i = 0; i < n; i++) items[i] = (model_item){(long)i * 7, 0};
    char *doc = model_text(items, n);
    ts_store *store = value_store(doc, NULL);
    seen_reset();
    CHECK_OK(dispatch_with(store, "look", "null"));
    CHECK(seen.had_slice);
    CHECK(seen.length == strlen(doc));
    CHECK_INT(seen.kind, TS_JSON_OBJECT);
    if (n >= 1000) {
        /* Big: the slice and its list are split, nothing was joined for the reducer. */
        CHECK(seen.text_null);
        CHECK(seen.items_split);
    } else {
        CHECK(!seen.text_null && seen.text != NULL && strcmp(seen.text, doc) == 0);
        CHECK(!seen.items_split);
    }
    CHECK(seen.items_count == n);
    CHECK(seen.id5 == 35);
    CHECK(seen.first_ids[0] == 0 && seen.first_ids[1] == 7 && seen.first_ids[2] == 14);
    CHECK_INT(seen.int_of_slice, TS_E_ARGUMENT);
    CHECK_CONTAINS(seen.int_error, "ts_json_int: expected an integer, found object");
    CHECK_INT(seen.missing, TS_E_NOT_FOUND);
    CHECK_CONTAINS(seen.missing_error, "ts_json_find: JSON Pointer \"/nope/0\": no member \"nope\" in the object at \"\"");
    CHECK_INT(seen.keys, TS_OK);
    CHECK(seen.first_key != NULL && strcmp(seen.first_key, "items") == 0);
    /* Patched, then read again: the state is the text, and the reducer sees the change. */
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"replace\",\"path\":\"/items/5/id\",\"value\":-5}]"));
    CHECK_OK(dispatch_with(store, "look", "null"));
    CHECK(seen.id5 == -5);
    items[5].id = -5;
    char *want = model_text(items, n);
    CHECK_STATE(store, "/doc", want);
    CHECK_STATE(store, "/doc/items/5", "{\"id\":-5,\"done\":false}");
    free(want);
    /* Set as text (one text again), then patched: a tree again from that patch on. */
    CHECK_OK(dispatch_with(store, "set", doc));
    CHECK_OK(dispatch_with(store, "look", "null"));
    CHECK(!seen.text_null && seen.text != NULL && strcmp(seen.text, doc) == 0);
    CHECK(seen.id5 == 35);
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"replace\",\"path\":\"/items/5/id\",\"value\":-5}]"));
    CHECK_OK(dispatch_with(store, "look", "null"));
    CHECK(seen.text_null == (n >= 1000));
    CHECK(seen.id5 == -5);
    /* The same patches through a ts_reducer_fn: its slice is one text again. */
    CHECK_OK(ts_store_replace_reducer(store, "doc", patch_reducer, NULL));
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"replace\",\"path\":\"/items/5/id\",\"value\":5}]"));
    CHECK_STATE(store, "/doc/items/5/id", "5");
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"replace\",\"path\":\"/items/5/id\",\"value\":35}]"));
    CHECK_STATE(store, "/doc", doc);
    ts_store_destroy(store);
    seen_reset();
    free(doc);
    free(items);
}

void test_patch__patchReducerReadsItsSliceValues(void) {
    check_value_reads(10);
    check_value_reads(4000); /* about 100 KB */
}

/* The model test of the big slice, through a patch reducer (whose slice is
 * a tree from its init call on). */
void test_patch__patchReducerBigSliceAgreesWithTheModel(void) {
    const size_t n = 3000;
    int steps = ts_test_quick ? 60 : 400;
    model_item *items = malloc(sizeof *items * (n + (size_t)steps + 1));
    if (items == NULL) abort();
    for (size_t i = 0; i < n; i++) items[i] = (model_item){(long)i, (int)(i % 3 == 0)};
    char *doc = model_text(items, n);
    ts_store *store = value_store(doc, NULL);
    free(doc);
    run_big_model(store, "doc", items, n, steps);
    CHECK_STATE(store, "/other", "[1,2]");
    ts_store_destroy(store);
    free(items);
}

static char *null_init_value_reducer(const ts_json *slice, const ts_action *a, void *ctx) {
    (void)a;
    (void)ctx;
    if (slice == NULL) record_status(ts_reducer_patch("[]"));
    return NULL;
}

/* Registration: its errors, the init call, the type filter, replace and remove. */
void test_patch__patchReducerRegistrationRefusesAndReplaces(void) {
    ts_store *store = new_store("{}");
    const char *const bad[] = {"todos/*x", NULL};
    const char *const todos[] = {"todos/*", NULL};
    CHECK_ST(ts_store_add_patch_reducer(NULL, "doc", NULL, value_reducer, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_add_patch_reducer(store, NULL, NULL, value_reducer, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_add_patch_reducer(store, "doc", NULL, NULL, NULL), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "ts_store_add_patch_reducer: fn is NULL");
    CHECK_ST(ts_store_add_patch_reducer(store, "doc", bad, value_reducer, NULL), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "ts_store_add_patch_reducer: types[0]");
    /* The init call: no slice; a patch there is misuse, and NULL is no first value. */
    statuses_reset();
    CHECK_ST(ts_store_add_patch_reducer(store, "n", NULL, null_init_value_reducer, NULL), TS_E_REDUCER);
    CHECK_INT(patch_statuses[0], TS_E_MISUSE);
    CHECK_GET_FAILS(store, "/n", TS_E_NOT_FOUND, "no key");
    seen_reset();
    CHECK_OK(ts_store_add_patch_reducer(store, "doc", todos, value_reducer, "{\"items\":[]}"));
    CHECK(seen.calls == 1 && !seen.had_slice);
    CHECK_STATE(store, "/doc", "{\"items\":[]}");
    CHECK_ST(ts_store_add_patch_reducer(store, "doc", NULL, value_reducer, NULL), TS_E_ARGUMENT);
    /* Only its types (and the store's own actions). */
    seen.calls = 0;
    CHECK_OK(dispatch_with(store, "other/x", "null"));
    CHECK_INT(seen.calls, 0);
    CHECK_OK(dispatch_with(store, "todos/x", "null"));
    CHECK_INT(seen.calls, 1);
    /* Replaced by a text reducer, then removed: the slice stays. */
    CHECK_OK(ts_store_replace_reducer(store, "doc", patch_reducer, NULL));
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"add\",\"path\":\"/items/-\",\"value\":1}]"));
    CHECK_STATE(store, "/doc", "{\"items\":[1]}");
    CHECK_OK(ts_store_remove_reducer(store, "doc"));
    CHECK_STATE(store, "/doc", "{\"items\":[1]}");
    ts_store_destroy(store);
    seen_reset();
}

