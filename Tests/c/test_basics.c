/*
 * test_basics.c - C API tests: versions, status names, ts_last_error, creating
 * stores.
 * Part of the C suite (check.h; `make test-c`; one test: build/tests/test_store -s TOPIC__RULE).
 */
#include "check.h"

/* The first test of the program (basics sorts first): nothing has failed on
 * this thread yet. */
void test_basics__lastErrorIsEmptyBeforeAnyFailure(void) { CHECK_STR(ts_last_error(), ""); }

void test_basics__versionNumberMatchesTheVersionMacros(void) {
    CHECK_INT(ts_version_number(), TS_VERSION_MAJOR * 10000 + TS_VERSION_MINOR * 100 + TS_VERSION_PATCH);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", TS_VERSION_MAJOR, TS_VERSION_MINOR, TS_VERSION_PATCH);
    CHECK_STR(ts_version_string(), want);
    CHECK(ts_version_string() == ts_version_string()); /* static text */
}

void test_basics__everyStatusHasItsName(void) {
    static const struct {
        ts_status status;
        const char *name;
    } names[] = {
        {TS_OK, "TS_OK"},
        {TS_E_ARGUMENT, "TS_E_ARGUMENT"},
        {TS_E_JSON, "TS_E_JSON"},
        {TS_E_NOT_ACTION, "TS_E_NOT_ACTION"},
        {TS_E_REDUCER, "TS_E_REDUCER"},
        {TS_E_REENTRANT, "TS_E_REENTRANT"},
        {TS_E_PLUGIN, "TS_E_PLUGIN"},
        {TS_E_IO, "TS_E_IO"},
        {TS_E_NOMEM, "TS_E_NOMEM"},
        {TS_E_NOT_FOUND, "TS_E_NOT_FOUND"},
        {TS_E_REJECTED, "TS_E_REJECTED"},
        {TS_E_STORE_GONE, "TS_E_STORE_GONE"},
        {TS_E_ABI, "TS_E_ABI"},
        {TS_E_UNKNOWN_ACTION, "TS_E_UNKNOWN_ACTION"},
        {TS_E_MISUSE, "TS_E_MISUSE"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) CHECK_STR(ts_status_name(names[i].status), names[i].name);
    CHECK_STR(ts_status_name(1), "TS_E_UNKNOWN");
    CHECK_STR(ts_status_name(-15), "TS_E_UNKNOWN");
    CHECK_STR(ts_status_name(12345), "TS_E_UNKNOWN");
    CHECK_STR(ts_status_name(INT32_MIN), "TS_E_UNKNOWN");
    CHECK_STR(ts_status_name(INT32_MAX), "TS_E_UNKNOWN");
}

/* ts_last_error is per thread, "" before any failure, and not cleared by success. */
static void *last_error_thread(void *arg) {
    (void)arg;
    CHECK(ts_last_error() != NULL);
    CHECK_STR(ts_last_error(), "");
    ts_store *store = NULL;
    CHECK_ST(ts_store_create("[1]", &store), TS_E_JSON);
    CHECK(store == NULL);
    char *message = xstrdup(ts_last_error());
    CHECK(message[0] != '\0');
    CHECK_OK(ts_store_create(NULL, &store));
    CHECK_STR(ts_last_error(), message); /* success does not clear it */
    ts_store_destroy(store);
    free(message);
    return NULL;
}

void test_basics__lastErrorIsPerThread(void) {
    /* A failure on this thread first: the new thread must not see it. */
    CHECK_ST(ts_store_create("nope", NULL), TS_E_ARGUMENT);
    CHECK(ts_last_error()[0] != '\0');
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, last_error_thread, NULL) == 0);
    pthread_join(thread, NULL);
}

void test_basics__createStartsFromTheGivenStateOrRefusesIt(void) {
    ts_store *store = NULL;
    CHECK_OK(ts_store_create(NULL, &store));
    CHECK(store != NULL);
    CHECK_STATE(store, NULL, "{}");
    ts_store_destroy(store);

    store = new_store("{}");
    CHECK_STATE(store, "", "{}");
    ts_store_destroy(store);

    /* White space goes, key order and number text stay. */
    store = new_store(" { \"b\" : [ 1 , 2.50 , { } ] ,\n\t\"a\" : \"x y\" , \"c\" : null } ");
    CHECK_STATE(store, NULL, "{\"b\":[1,2.50,{}],\"a\":\"x y\",\"c\":null}");
    ts_store_destroy(store);

    /* Not an object. */
    CHECK_CREATE_FAILS("[]", TS_E_JSON);
    CHECK_CREATE_FAILS("1", TS_E_JSON);
    CHECK_CREATE_FAILS("\"s\"", TS_E_JSON);
    CHECK_CREATE_FAILS("null", TS_E_JSON);
    CHECK_CREATE_FAILS("true", TS_E_JSON);
    /* Invalid JSON. */
    CHECK_CREATE_FAILS("", TS_E_JSON);
    CHECK_CREATE_FAILS("   ", TS_E_JSON);
    CHECK_CREATE_FAILS("{", TS_E_JSON);
    CHECK_CREATE_FAILS("{\"a\":}", TS_E_JSON);
    CHECK_CREATE_FAILS("{\"a\":1,}", TS_E_JSON);
    CHECK_CREATE_FAILS("{'a':1}", TS_E_JSON);
    CHECK_CREATE_FAILS("{\"a\":1} x", TS_E_JSON);
    CHECK_CREATE_FAILS("{\"a\":1}{}", TS_E_JSON);
    CHECK_CREATE_FAILS("{\"a\":\"\xff\"}", TS_E_JSON);
    CHECK_CREATE_FAILS("{\"a\":\"\xc0\xaf\"}", TS_E_JSON); /* overlong */
    CHECK_CREATE_FAILS("{\"a\":\"\\ud800\"}", TS_E_JSON);  /* lone surrogate */
    CHECK_CREATE_FAILS("{\"a\":01}", TS_E_JSON);
    /* Duplicate keys, also when spelled differently. */
    CHECK_CREATE_FAILS("{\"a\":1,\"a\":2}", TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "\"a\"");
    CHECK_CREATE_FAILS("{\"id\":1,\"x\":0,\"\\u0069d\":2}", TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "id");
    /* Duplicates at any depth: the message names the key and its byte offset. */
    CHECK_CREATE_FAILS("{\"a\":{\"b\":1,\"b\":2}}", TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "duplicate key \"b\" at byte 12");
    CHECK_CREATE_FAILS("{\"a\":[{\"x\":{\"y\":0,\"\\u0079\":1}}]}", TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "duplicate key \"y\" at byte 18");
    /* The same key in different objects is fine. */
    store = new_store("{\"a\":{\"a\":1},\"b\":{\"a\":{\"a\":2}},\"c\":[{\"a\":3},{\"a\":3}]}");
    CHECK_STATE(store, "/b/a/a", "2");
    ts_store_destroy(store);

    /* out NULL. */
    CHECK_ST(ts_store_create(NULL, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_create("{}", NULL), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "out");

    /* destroy(NULL) does nothing; the library goes on (the next store works). */
    ts_store_destroy(NULL);
    store = new_store("{\"after\":1}");
    CHECK_STATE(store, "/after", "1");
    ts_store_destroy(store);
}

