/*
 * test_dispatch.c - C API tests: dispatching: atomicity, invalid actions,
 * duplicate keys, the action view, payloads, 64-bit integers, keys.
 * Part of the C suite (check.h; `make test-c`; one test: build/tests/test_store -s TOPIC__RULE).
 */
#include "check.h"

void test_dispatch__failingReducerLeavesEarlierReducersChangesUnapplied(void) {
    /* The second reducer fails: the first one's change is not applied. */
    ts_store *store = new_store("{\"note\":\"x\"}");
    rstat a = {0}, b = {0};
    int notified = 0, pointer_notified = 0;
    uint64_t t1, t2;
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &a));
    CHECK_OK(ts_store_add_reducer(store, "broken", breaking_reducer, &b));
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &t1));
    CHECK_OK(ts_store_subscribe(store, "/count", count_listener, &pointer_notified, &t2));
    char *before = state_of(store, NULL);
    CHECK_STR(before, "{\"note\":\"x\",\"count\":0,\"broken\":{}}");

    /* The counter (first) changes on "break", then "broken" returns garbage. */
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"break\"}"), TS_E_REDUCER);
    CHECK_CONTAINS(ts_last_error(), "broken");
    CHECK_STATE(store, NULL, before);
    CHECK_INT(a.calls, 2); /* init and "break" */
    CHECK_INT(notified, 0);
    CHECK_INT(pointer_notified, 0);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STATE(store, "/count", "1");
    CHECK_INT(notified, 1);
    CHECK_INT(pointer_notified, 1);
    ts_free(before);
    ts_store_destroy(store);
    rstat_free(&a);
    rstat_free(&b);
}

/* Changes its slice on "both", then the second one returns garbage on it. */
static char *first_changes(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    if (slice == NULL) return xstrdup("0");
    if (strcmp(a->type, "both") == 0 || strcmp(a->type, "ok") == 0) return xprintf("%lld", strtoll(slice, NULL, 10) + 1);
    return NULL;
}
static char *second_fails(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    if (slice == NULL) return xstrdup("[]");
    if (strcmp(a->type, "both") == 0) return xstrdup("[1,2");
    if (strcmp(a->type, "ok") == 0) return xstrdup("[\"ok\"]");
    return NULL;
}

void test_dispatch__twoReducersApplyTogetherOrNotAtAll(void) {
    ts_store *store = new_store(NULL);
    int notified = 0, pointer_notified = 0, whole_notified = 0;
    uint64_t t1, t2, t3;
    CHECK_OK(ts_store_add_reducer(store, "first", first_changes, NULL));
    CHECK_OK(ts_store_add_reducer(store, "second", second_fails, NULL));
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &t1));
    CHECK_OK(ts_store_subscribe(store, "/first", count_listener, &pointer_notified, &t2));
    CHECK_OK(ts_store_subscribe(store, "", count_listener, &whole_notified, &t3));
    char *before = state_of(store, NULL);
    CHECK_STR(before, "{\"first\":0,\"second\":[]}");
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"both\"}"), TS_E_REDUCER);
    CHECK_CONTAINS(ts_last_error(), "\"second\"");
    CHECK_STATE(store, NULL, before);
    CHECK_STATE(store, "/first", "0");
    CHECK_INT(notified + pointer_notified + whole_notified, 0);
    /* The store works on: exactly one step is applied next. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"ok\"}"));
    CHECK_STATE(store, NULL, "{\"first\":1,\"second\":[\"ok\"]}");
    CHECK_INT(notified, 1);
    CHECK_INT(pointer_notified, 1);
    CHECK_INT(whole_notified, 1);
    ts_free(before);
    ts_store_destroy(store);

    /* The first reducer fails, the second's change is not applied either. */
    store = new_store(NULL);
    rstat b = {0};
    CHECK_OK(ts_store_add_reducer(store, "broken", breaking_reducer, &b));
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"break\"}"), TS_E_REDUCER);
    CHECK_CONTAINS(ts_last_error(), "broken");
    CHECK_STATE(store, NULL, "{\"broken\":{},\"count\":0}");
    ts_store_destroy(store);
    rstat_free(&b);
}

static void expect_dispatch_fails(ts_store *store, const char *action, ts_status want, const char *label,
                                  const char *file, int line) {
    char *before = state_of(store, NULL);
    ts_status st = ts_store_dispatch(store, action);
    check_status(st, want, file, line, label);
    ts_test_report(ts_last_error()[0] != '\0', file, line, "a message on failure", NULL);
    char *after = state_of(store, NULL);
    ts_test_check_str(after, before, file, line, "state unchanged");
    ts_free(before);
    ts_free(after);
}
#define CHECK_DISPATCH_FAILS(store, action, want) \
    expect_dispatch_fails((store), (action), (want), #action, __FILE__, __LINE__)

void test_dispatch__invalidActionsAreRefusedWithAMessage(void) {
    ts_store *store = new_store(NULL);
    rstat st = {0};
    int notified = 0;
    uint64_t token;
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &token));
    int calls = st.calls;

    /* Invalid JSON. */
    CHECK_DISPATCH_FAILS(store, "", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"inc\"", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{\"type\":inc}", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{'type':'inc'}", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"inc\",}", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"inc\"} x", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"inc\"}{}", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"inc\"}]", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"inc\xff\"}", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"inc\",\"payload\":\"\xc3\"}", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"\xed\xa0\x80\"}", TS_E_JSON); /* encoded surrogate */
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"inc\",\"payload\":\"\\udc00\"}", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"inc\",\"payload\":\"a\tb\"}", TS_E_JSON); /* raw control char */
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"inc\",\"payload\":\"\\x\"}", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"inc\",\"payload\":tru}", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"inc\",\"payload\":-}", TS_E_JSON);

    /* Too deep: 100,000 '[', and a syntactically fine action nested too deep. */
    char *deep = malloc(100001);
    if (deep == NULL) abort();
    memset(deep, '[', 100000);
    deep[100000] = '\0';
    CHECK_DISPATCH_FAILS(store, deep, TS_E_JSON);
    free(deep);
    deep = nested("", 100000, "", "");
    CHECK_DISPATCH_FAILS(store, deep, TS_E_JSON);
    free(deep);
    deep = nested("{\"type\":\"inc\",\"payload\":", TS_MAX_DEPTH, "", "}"); /* depth 257 */
    CHECK_DISPATCH_FAILS(store, deep, TS_E_JSON);
    free(deep);
    deep = nested("{\"type\":\"inc\",\"payload\":", 5000, "1", "}");
    CHECK_DISPATCH_FAILS(store, deep, TS_E_JSON);
    free(deep);

    /* Valid JSON that is not an action. */
    CHECK_DISPATCH_FAILS(store, "[]", TS_E_NOT_ACTION);
    CHECK_DISPATCH_FAILS(store, "[{\"type\":\"inc\"}]", TS_E_NOT_ACTION);
    CHECK_DISPATCH_FAILS(store, "\"inc\"", TS_E_NOT_ACTION);
    CHECK_DISPATCH_FAILS(store, "1", TS_E_NOT_ACTION);
    CHECK_DISPATCH_FAILS(store, "null", TS_E_NOT_ACTION);
    CHECK_DISPATCH_FAILS(store, "{}", TS_E_NOT_ACTION);
    CHECK_DISPATCH_FAILS(store, "{\"payload\":1}", TS_E_NOT_ACTION);
    CHECK_CONTAINS(ts_last_error(), "type");
    CHECK_DISPATCH_FAILS(store, "{\"Type\":\"inc\"}", TS_E_NOT_ACTION);
    CHECK_DISPATCH_FAILS(store, "{\"type\":1}", TS_E_NOT_ACTION);
    CHECK_DISPATCH_FAILS(store, "{\"type\":null}", TS_E_NOT_ACTION);
    CHECK_DISPATCH_FAILS(store, "{\"type\":true}", TS_E_NOT_ACTION);
    CHECK_DISPATCH_FAILS(store, "{\"type\":[\"inc\"]}", TS_E_NOT_ACTION);
    CHECK_DISPATCH_FAILS(store, "{\"type\":{\"a\":1}}", TS_E_NOT_ACTION);
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"\"}", TS_E_NOT_ACTION);
    CHECK_CONTAINS(ts_last_error(), "empty");

    /* NULL arguments. */
    CHECK_ST(ts_store_dispatch(NULL, "{\"type\":\"inc\"}"), TS_E_ARGUMENT);
    CHECK_ST(ts_store_dispatch(store, NULL), TS_E_ARGUMENT);

    CHECK_INT(st.calls, calls); /* no reducer saw any of them */
    CHECK_INT(notified, 0);
    CHECK_STATE(store, NULL, "{\"count\":0}");
    /* And the store still works. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STATE(store, NULL, "{\"count\":1}");
    CHECK_INT(notified, 1);
    ts_store_destroy(store);
    rstat_free(&st);
}

/* Returns a slice with a key twice on "dup" (nested), else unchanged; {} at init. */
static char *duplicating_reducer(const char *slice, const ts_action *a, void *ctx) {
    rstat_record(ctx, slice, a);
    if (slice == NULL) return xstrdup("{}");
    if (strcmp(a->type, "dup") == 0) return xstrdup("{\"x\":{\"deny\":[\"admin/wipe\"],\"deny\":[]}}");
    if (strcmp(a->type, "dup_escaped") == 0) return xstrdup("{\"k\":1,\"\\u006b\":2}");
    return NULL;
}

void test_dispatch__duplicateKeysAreRefused(void) {
    ts_store *store = new_store("{\"note\":\"x\"}");
    rstat st = {0}, dst = {0};
    int notified = 0, pointer_notified = 0;
    uint64_t t1, t2;
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    CHECK_OK(ts_store_add_reducer(store, "d", duplicating_reducer, &dst));
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &t1));
    CHECK_OK(ts_store_subscribe(store, "", count_listener, &pointer_notified, &t2));
    int calls = st.calls;

    /* A payload with a key twice at depth 3: TS_E_JSON, no reducer or listener runs. */
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"set\",\"payload\":{\"a\":{\"b\":{\"c\":1,\"c\":2}}}}", TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "duplicate key \"c\" at byte 41");
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"set\",\"payload\":{\"a\":{\"b\":{\"c\":1,\"\\u0063\":2}}}}", TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "\"c\"");
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"inc\",\"type\":\"evil\"}", TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "duplicate key \"type\"");
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"add\",\"payload\":1,\"payload\":1000}", TS_E_JSON);
    CHECK_DISPATCH_FAILS(store, "{\"type\":\"inc\",\"meta\":{},\"meta\":{}}", TS_E_JSON);
    CHECK_INT(st.calls, calls);
    CHECK_INT(dst.calls, 1); /* init only */
    CHECK_INT(notified + pointer_notified, 0);

    /* A reducer that returns an object with a key twice: TS_E_REDUCER, state unchanged. */
    char *before = state_of(store, NULL);
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"dup\"}"), TS_E_REDUCER);
    CHECK_CONTAINS(ts_last_error(), "the reducer for \"d\"");
    CHECK_CONTAINS(ts_last_error(), "duplicate key \"deny\" at byte 28");
    CHECK_STATE(store, NULL, before);
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"dup_escaped\"}"), TS_E_REDUCER);
    CHECK_CONTAINS(ts_last_error(), "duplicate key \"k\"");
    CHECK_STATE(store, NULL, before);
    CHECK_INT(notified + pointer_notified, 0);

    ts_free(before);
    ts_store_destroy(store);
    rstat_free(&st);
    rstat_free(&dst);

    /* Plugin configs: a key twice at any depth is TS_E_JSON before any plugin
     * code is loaded (the file need not exist), and so is text that is not UTF-8. */
    store = new_store(NULL);
    CHECK_ST(ts_store_load_plugin(store, "/nonexistent/guard.so", "{\"deny\":[\"admin/wipe\"],\"deny\":[]}"), TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "duplicate key \"deny\" at byte 23");
    CHECK_CONTAINS(ts_last_error(), "config");
    CHECK_ST(ts_store_load_plugin(store, "/nonexistent/guard.so", "{\"require\":{\"a\":[\"x\"],\"b\":{\"c\":{\"d\":1,\"d\":2}}}}"),
             TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "duplicate key \"d\"");
    CHECK_ST(ts_store_load_plugin(store, "/nonexistent/journal.so", "{\"fsync\":\"always\",\"fsync\":\"never\"}"), TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "duplicate key \"fsync\"");
    CHECK_ST(ts_store_load_plugin(store, "/nonexistent/guard.so", "{\"deny\":[\"a\xff\"]}"), TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "UTF-8");
    CHECK_CONTAINS(ts_last_error(), "byte 11");
    CHECK_ST(ts_store_load_plugin(store, "/nonexistent/guard.so", "\xc0\xaf"), TS_E_JSON);
    /* A valid config: then the missing file is what fails. */
    CHECK_ST(ts_store_load_plugin(store, "/nonexistent/guard.so", "{\"deny\":[]}"), TS_E_NOT_FOUND);
    CHECK_STATE(store, NULL, "{}");
    ts_store_destroy(store);
}

void test_dispatch__reducersSeeTheParsedActionView(void) {
    ts_store *store = new_store(NULL);
    rstat st = {0};
    CHECK_OK(ts_store_add_reducer(store, "r", payload_reducer, &st));

    const char *a1 = " { \"type\" : \"todos\\/add\" , \"payload\" : { \"title\" : \"a b\" , \"n\" : [ 1 , 2.50 , -0 , 1E+2 ] } , "
                     "\"meta\" : 1 } ";
    CHECK_OK(ts_store_dispatch(store, a1));
    CHECK_STR(st.last_type, "todos/add");
    CHECK_STR(st.last_payload, "{\"title\":\"a b\",\"n\":[1,2.50,-0,1E+2]}");
    CHECK_STR(st.last_json, a1);

    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"a\\u0062c\\n\"}"));
    CHECK_STR(st.last_type, "abc\n");
    CHECK_STR(st.last_payload, NULL);

    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"caf\\u00e9 \\ud83d\\ude00\"}"));
    CHECK_STR(st.last_type, "caf\xc3\xa9 \xf0\x9f\x98\x80");

    CHECK_OK(ts_store_dispatch(store, "{\"payload\":null,\"type\":\"x\"}"));
    CHECK_STR(st.last_type, "x");
    CHECK_STR(st.last_payload, "null");

    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"x\",\"payload\":\"s\\u0041\\/\"}"));
    CHECK_STR(st.last_payload, "\"s\\u0041\\/\""); /* escapes kept */

    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"x\",\"payload\":0}"));
    CHECK_STR(st.last_payload, "0");
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"x\",\"payload\":[ ]}"));
    CHECK_STR(st.last_payload, "[]");

    /* The payload reaches the state as minified text. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"store\",\"payload\": [ {\"a\" : true} , \"\\u00e9\" ] }"));
    CHECK_STATE(store, "/r", "[{\"a\":true},\"\\u00e9\"]");
    ts_store_destroy(store);
    rstat_free(&st);
}

void test_dispatch__hugePayloadReachesTheReducerWhole(void) {
    const size_t size = 5u * 1024u * 1024u;
    const char *prefix = "{\"type\":\"store\",\"payload\":\"";
    size_t np = strlen(prefix);
    char *action = malloc(np + size + 3);
    if (action == NULL) abort();
    memcpy(action, prefix, np);
    for (size_t i = 0; i < size; i++) action[np + i] = (char)('a' + i % 26);
    memcpy(action + np + size, "\"}", 3);

    ts_store *store = new_store(NULL);
    rstat st = {0};
    CHECK_OK(ts_store_add_reducer(store, "big", payload_reducer, &st));
    CHECK_OK(ts_store_dispatch(store, action));
    CHECK(st.last_payload != NULL && strlen(st.last_payload) == size + 2);
    CHECK(st.last_payload != NULL && memcmp(st.last_payload, action + np - 1, size + 2) == 0);
    char *out = state_of(store, "/big");
    CHECK(out != NULL && strlen(out) == size + 2 && memcmp(out, action + np - 1, size + 2) == 0);
    ts_free(out);
    out = state_of(store, NULL);
    CHECK(out != NULL && strlen(out) == size + 2 + strlen("{\"big\":}"));
    ts_free(out);
    /* A small read next to the big value. */
    CHECK_OK(ts_store_add_reducer(store, "small", const_init_reducer, "7"));
    CHECK_STATE(store, "/small", "7");
    ts_store_destroy(store);
    rstat_free(&st);
    free(action);
}

void test_dispatch__int64ExtremesKeepTheirDigits(void) {
    ts_store *store = new_store("{\"u\":18446744073709551615,\"i\":-9223372036854775808,\"f\":1.0e2,"
                                "\"huge\":123456789012345678901234567890}");
    CHECK_STATE(store, NULL,
                "{\"u\":18446744073709551615,\"i\":-9223372036854775808,\"f\":1.0e2,"
                "\"huge\":123456789012345678901234567890}");
    CHECK_STATE(store, "/u", "18446744073709551615");
    CHECK_STATE(store, "/i", "-9223372036854775808");

    /* Through a reducer, and below the top level. */
    CHECK_OK(ts_store_add_reducer(store, "n", payload_reducer, NULL));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"store\",\"payload\":18446744073709551615}"));
    CHECK_STATE(store, "/n", "18446744073709551615");
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"store\",\"payload\":-9223372036854775808}"));
    CHECK_STATE(store, "/n", "-9223372036854775808");
    CHECK_OK(ts_store_dispatch(store,
                               "{\"type\":\"store\",\"payload\":{\"max\":[18446744073709551615,9223372036854775807],"
                               "\"min\":-9223372036854775808}}"));
    CHECK_STATE(store, "/n/max/0", "18446744073709551615");
    CHECK_STATE(store, "/n/max/1", "9223372036854775807");
    CHECK_STATE(store, "/n/min", "-9223372036854775808");
    ts_store_destroy(store);
}

/* Keys and JSON Pointer tokens are byte strings, as in every JSON parser:
 * "é" as U+00E9 and as e + U+0301 are two keys (Swift's String would call
 * them equal), and a token may start with a combining mark. */
void test_dispatch__keysAndPointersAreByteStrings(void) {
    const char *state = "{\"\xc3\xa9\":1,\"e\xcc\x81\":2,\"a\":{\"\xcc\x81x\":5}}";
    ts_store *store = new_store(state);
    CHECK_STATE(store, NULL, state);
    CHECK_STATE(store, "/\xc3\xa9", "1");
    CHECK_STATE(store, "/e\xcc\x81", "2");
    CHECK_STATE(store, "/a/\xcc\x81x", "5");
    CHECK_GET_FAILS(store, "/\xcc\x81", TS_E_NOT_FOUND, NULL);
    CHECK_GET_FAILS(store, "/e", TS_E_NOT_FOUND, NULL);
    /* One reducer each: the keys are not "the same key". */
    CHECK_OK(ts_store_add_reducer(store, "\xc3\xa9", counter_reducer, NULL));
    CHECK_OK(ts_store_add_reducer(store, "e\xcc\x81", counter_reducer, NULL));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STATE(store, "/\xc3\xa9", "2");
    CHECK_STATE(store, "/e\xcc\x81", "3");
    uint64_t token;
    int calls = 0;
    CHECK_OK(ts_store_subscribe(store, "/\xcc\x81", count_listener, &calls, &token));
    ts_store_destroy(store);
    /* A key twice by bytes is still a key twice. */
    CHECK_CREATE_FAILS("{\"e\xcc\x81\":1,\"e\xcc\x81\":2}", TS_E_JSON);
}

/* Keys written with escapes (\uXXXX of 2, 3 and 4 UTF-8 bytes, surrogate
 * pairs, \t \n \" \\ \/) are found by pointers that spell them unescaped. */
void test_dispatch__escapedKeysAreFoundByUnescapedPointers(void) {
    ts_store *store = new_store("{\"k\":{\"\\u20ac\":1,\"a\\u00e9b\":2,\"\\ud83d\\ude00\":3,\"t\\tx\":4,\"q\\\"\":5,"
                                "\"b\\\\s\":6,\"n\\n\":7,\"\\/\":8,\"\\u0041\":9}}");
    CHECK_STATE(store, "/k/\xe2\x82\xac", "1");
    CHECK_STATE(store, "/k/a\xc3\xa9" "b", "2");
    CHECK_STATE(store, "/k/\xf0\x9f\x98\x80", "3");
    CHECK_STATE(store, "/k/t\tx", "4");
    CHECK_STATE(store, "/k/q\"", "5");
    CHECK_STATE(store, "/k/b\\s", "6");
    CHECK_STATE(store, "/k/n\n", "7");
    CHECK_STATE(store, "/k/~1", "8");
    CHECK_STATE(store, "/k/A", "9");
    CHECK_GET_FAILS(store, "/k/\xe2\x82", TS_E_ARGUMENT, "UTF-8"); /* a cut character: malformed */
    ts_store_destroy(store);

    /* A top-level key written with escapes is the slice of its unescaped name. */
    store = new_store("{\"\\u20ac\\ud83d\\ude00\":{\"x\":1}}");
    CHECK_STATE(store, "/\xe2\x82\xac\xf0\x9f\x98\x80/x", "1");
    ts_store_destroy(store);
}

/* ts_store_dispatch_parts: the action made of its type and payload, as if
 * its text had been dispatched; every bad part refused, nothing changed. */
void test_dispatch__partsDispatchAsTheirTextWouldAndBadPartsAreRefused(void) {
    ts_store *store = new_store(NULL);
    rstat st = {0};
    CHECK_OK(ts_store_add_reducer(store, "r", payload_reducer, &st));

    CHECK_OK(ts_store_dispatch_parts(store, "todos/add", " { \"title\" : \"a b\" , \"n\" : [ 1 , 2.50 , -0 ] } "));
    CHECK_STR(st.last_type, "todos/add");
    CHECK_STR(st.last_payload, "{\"title\":\"a b\",\"n\":[1,2.50,-0]}");
    CHECK_STR(st.last_json, "{\"type\":\"todos/add\",\"payload\":{\"title\":\"a b\",\"n\":[1,2.50,-0]}}");

    CHECK_OK(ts_store_dispatch_parts(store, "x", NULL)); /* no payload */
    CHECK_STR(st.last_payload, NULL);
    CHECK_STR(st.last_json, "{\"type\":\"x\"}");
    CHECK_OK(ts_store_dispatch_parts(store, "x", "null"));
    CHECK_STR(st.last_payload, "null");
    CHECK_OK(ts_store_dispatch_parts(store, "x", "-12"));
    CHECK_STR(st.last_payload, "-12");
    CHECK_OK(ts_store_dispatch_parts(store, "x", "\"plain\""));
    CHECK_STR(st.last_json, "{\"type\":\"x\",\"payload\":\"plain\"}");
    CHECK_OK(ts_store_dispatch_parts(store, "x", "\"s\\u0041\""));
    CHECK_STR(st.last_payload, "\"s\\u0041\""); /* escapes kept, as in a text */

    /* The type is the type itself: quotes, backslashes, control and non-ASCII
     * characters are escaped into the action's text, not read as escapes. */
    CHECK_OK(ts_store_dispatch_parts(store, "q\"b\\s\n\xc3\xa9/\\u0041", "1"));
    CHECK_STR(st.last_type, "q\"b\\s\n\xc3\xa9/\\u0041");
    CHECK_STR(st.last_json, "{\"type\":\"q\\\"b\\\\s\\n\xc3\xa9/\\\\u0041\",\"payload\":1}");

    /* The payload reaches the state as minified text. */
    CHECK_OK(ts_store_dispatch_parts(store, "store", " [ {\"a\" : true} , \"\\u00e9\" ] "));
    CHECK_STATE(store, "/r", "[{\"a\":true},\"\\u00e9\"]");

    /* Refusals: the status and message ts_store_dispatch gives, state unchanged. */
    char *before = state_of(store, NULL);
    int calls = st.calls;
    CHECK_ST(ts_store_dispatch_parts(NULL, "x", "1"), TS_E_ARGUMENT);
    CHECK_ST(ts_store_dispatch_parts(store, NULL, "1"), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "type");
    CHECK_ST(ts_store_dispatch_parts(store, "", "1"), TS_E_NOT_ACTION);
    CHECK_CONTAINS(ts_last_error(), "must not be empty");
    CHECK_ST(ts_store_dispatch_parts(store, "bad\xff", "1"), TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "UTF-8");
    CHECK_ST(ts_store_dispatch_parts(store, "store", "[1,"), TS_E_JSON);
    CHECK_ST(ts_store_dispatch_parts(store, "store", ""), TS_E_JSON);
    CHECK_ST(ts_store_dispatch_parts(store, "store", "1 2"), TS_E_JSON);
    CHECK_ST(ts_store_dispatch_parts(store, "store", "{\"a\":1,\"a\":2}"), TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "duplicate key");
    CHECK_ST(ts_store_dispatch_parts(store, "store", "\"a\x01\""), TS_E_JSON); /* a raw control character */
    CHECK_ST(ts_store_dispatch_parts(store, "store", "01"), TS_E_JSON);
    CHECK_STATE(store, NULL, before);
    CHECK_INT(st.calls, calls);
    ts_free(before);
    ts_store_destroy(store);
    rstat_free(&st);
}
