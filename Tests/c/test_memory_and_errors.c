/*
 * test_memory_and_errors.c - the version macros, the memory functions and
 * the reducers' own failures of Include/turnstate.h:
 *   TS_VERSION, TS_VERSION_NUMBER, ts_version_string, ts_version_number,
 *   TS_API, TS_DEPRECATED, ts_alloc, ts_strdup, ts_free, ts_reducer_fail.
 *
 * Its own program (not in test_store: it redefines helpers of check.c), on
 * the harness of Tests/harness/ts_test.h; `make test-c` runs it directly and
 * under valgrind (--quick); valgrind also proves that memory from ts_alloc,
 * ts_strdup and malloc handed to the store is freed exactly once. Prints
 * "memory_and_errors: N passed, M failed"; each failure names its file, line,
 * test and ts_last_error().
 */
#include "ts_test.h"

#include "turnstate.h"
#include "turnstate_plugin.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Checks (Tests/harness/ts_test.h) ------------------------------------- */

/* Each failure shows ts_last_error() (the harness calls this first). */
static void show_last_error(FILE *out, int has_detail) {
    char error[200];
    (void)has_detail;
    fprintf(out, "    ts_last_error: %s\n", ts_test_quote(error, sizeof error, ts_last_error()));
}

void ts_test_suite_setup(void) { ts_test_on_failure = show_last_error; }

static void report(int ok, const char *file, int line, const char *expr) { ts_test_report(ok, file, line, expr, NULL); }

#define CHECK_STATUS(call, want)                                                                              \
    do {                                                                                                      \
        ts_status got_ = (call);                                                                              \
        ts_test_reportf(got_ == (want), __FILE__, __LINE__, #call " == " #want, "got %s, expected %s",        \
                        ts_status_name(got_), ts_status_name(want));                                          \
    } while (0)

/* The whole state (or the value at `pointer`) as text, in a static buffer. */
static const char *state_of(ts_store *store, const char *pointer) {
    static char buffer[4096];
    char *text = NULL;
    if (ts_store_get_state(store, pointer, &text) != TS_OK) return "(get_state failed)";
    snprintf(buffer, sizeof buffer, "%s", text);
    ts_free(text);
    return buffer;
}

/* ---- Versions and attributes ---------------------------------------------- */

/* The macros work in #if, and agree with each other at compile time. */
#if !defined(TS_VERSION_NUMBER) || TS_VERSION_NUMBER != TS_VERSION_MAJOR * 10000 + TS_VERSION_MINOR * 100 + TS_VERSION_PATCH
#error "TS_VERSION_NUMBER disagrees with TS_VERSION_MAJOR/MINOR/PATCH"
#endif

/* TS_VERSION is a string literal (this would not compile otherwise). */
static const char header_version[] = TS_VERSION;

/* TS_DEPRECATED compiles on a declaration; calling it warns (the Makefile
 * compiles this file with TS_TEST_DEPRECATED_CALL and -Werror and expects
 * the failure, with the message). */
TS_DEPRECATED("use ts_version_string instead") const char *test_deprecated_function(void);
TS_API int test_exported_function(void);

#ifdef TS_TEST_DEPRECATED_CALL
const char *test_deprecated_call(void);
const char *test_deprecated_call(void) { return test_deprecated_function(); }
#endif

void test_memory_and_errors__headerAndLibraryVersionsAgree(void) {
    char built[64];
    snprintf(built, sizeof built, "%d.%d.%d", TS_VERSION_MAJOR, TS_VERSION_MINOR, TS_VERSION_PATCH);
    CHECK_STR(TS_VERSION, built);
    CHECK_STR(header_version, built);
    CHECK_STR(ts_version_string(), TS_VERSION);
    CHECK(ts_version_number() == TS_VERSION_NUMBER);
    CHECK(TS_VERSION_NUMBER == TS_VERSION_MAJOR * 10000 + TS_VERSION_MINOR * 100 + TS_VERSION_PATCH);
    /* The loaded library's two answers agree with each other. */
    int major = -1, minor = -1, patch = -1;
    char rest = 0;
    CHECK(sscanf(ts_version_string(), "%d.%d.%d%c", &major, &minor, &patch, &rest) == 3);
    CHECK(ts_version_number() == major * 10000 + minor * 100 + patch);
    CHECK(ts_version_string() == ts_version_string()); /* static text */
}

/* ---- ts_alloc, ts_strdup, ts_free ----------------------------------------- */

void test_memory_and_errors__allocGivesWritableMemoryAndZeroBytesIsUnique(void) {
    unsigned char *a = ts_alloc(100);
    CHECK(a != NULL);
    if (a != NULL) {
        memset(a, 0xAB, 100);
        CHECK(a[0] == 0xAB && a[99] == 0xAB);
    }
    ts_free(a);

    /* 0 bytes: a unique non-NULL pointer, released with ts_free. */
    void *z1 = ts_alloc(0), *z2 = ts_alloc(0);
    CHECK(z1 != NULL);
    CHECK(z2 != NULL);
    CHECK(z1 != z2);
    ts_free(z1);
    ts_free(z2);

    /* Out of memory: NULL, and the calling thread's last error says so. */
    void *huge = ts_alloc(SIZE_MAX / 2);
    CHECK(huge == NULL);
    CHECK_CONTAINS(ts_last_error(), "ts_alloc: no memory for");
    CHECK_CONTAINS(ts_last_error(), "TS_E_NOMEM");
    ts_free(huge);

    ts_free(NULL); /* NULL-safe */

    /* ts_free is free: memory from malloc may be given to it. */
    ts_free(malloc(16));
}

void test_memory_and_errors__strdupCopiesTheBytes(void) {
    const char *text = "caf\xC3\xA9 \"quoted\"";
    char *copy = ts_strdup(text);
    CHECK(copy != NULL);
    CHECK(copy != text);
    CHECK_STR(copy, text);
    ts_free(copy);

    char *empty = ts_strdup("");
    CHECK_STR(empty, "");
    ts_free(empty);

    /* Bytes as they are, not checked as UTF-8. */
    char *raw = ts_strdup("\xFF\xFE");
    CHECK(raw != NULL && (unsigned char)raw[0] == 0xFF && (unsigned char)raw[1] == 0xFE && raw[2] == '\0');
    ts_free(raw);

    CHECK(ts_strdup(NULL) == NULL);
    CHECK_CONTAINS(ts_last_error(), "ts_strdup: text is NULL");
    CHECK_CONTAINS(ts_last_error(), "TS_E_ARGUMENT");
}

/* A reducer that returns memory from the allocator named by *ctx. */
static char *allocating_reducer(const char *slice, const ts_action *action, void *ctx) {
    const char *how = ctx;
    (void)action;
    const char *value = slice == NULL ? "1" : "[\"next\"]";
    if (strcmp(how, "ts_strdup") == 0) return ts_strdup(value);
    size_t size = strlen(value) + 1;
    char *out = strcmp(how, "ts_alloc") == 0 ? ts_alloc(size) : malloc(size);
    if (out != NULL) memcpy(out, value, size);
    return out;
}

void test_memory_and_errors__storeFreesWhatEveryAllocatorGaveIt(void) {
    static char how[3][16] = {"ts_strdup", "ts_alloc", "malloc"};
    ts_store *store = NULL;
    CHECK_STATUS(ts_store_create(NULL, &store), TS_OK);
    for (int i = 0; i < 3; i++) {
        char key[8];
        snprintf(key, sizeof key, "k%d", i);
        CHECK_STATUS(ts_store_add_reducer(store, key, allocating_reducer, how[i]), TS_OK);
    }
    CHECK_STR(state_of(store, NULL), "{\"k0\":1,\"k1\":1,\"k2\":1}");
    CHECK_STATUS(ts_store_dispatch(store, "{\"type\":\"go\"}"), TS_OK);
    CHECK_STR(state_of(store, NULL), "{\"k0\":[\"next\"],\"k1\":[\"next\"],\"k2\":[\"next\"]}");
    ts_store_destroy(store);
}

/* ---- ts_reducer_fail ------------------------------------------------------ */

/* What a failing reducer does, chosen by the action's type. */
static int reducer_calls, later_reducer_calls, listener_calls;
static ts_status second_fail_status;

static char *todos_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    reducer_calls++;
    if (slice == NULL) return ts_strdup("[]");
    const char *type = action->type;
    if (strcmp(type, "todos/add") == 0) return ts_strdup("[\"one\"]");
    if (strcmp(type, "fail") == 0) {
        ts_reducer_fail("title is required");
        return NULL;
    }
    if (strcmp(type, "fail/null") == 0) {
        ts_reducer_fail(NULL);
        return NULL;
    }
    if (strcmp(type, "fail/empty") == 0) {
        ts_reducer_fail("");
        return NULL;
    }
    if (strcmp(type, "fail/twice") == 0) {
        ts_reducer_fail("the first reason");
        second_fail_status = ts_reducer_fail("the second reason");
        return NULL;
    }
    if (strcmp(type, "fail/then-json") == 0) {
        ts_reducer_fail("failed, then returned JSON");
        return ts_strdup("[\"must not be applied\"]"); /* freed by the store, never read */
    }
    if (strcmp(type, "fail/then-invalid") == 0) {
        ts_reducer_fail("failed, then returned garbage");
        return ts_strdup("{oops");
    }
    if (strcmp(type, "fail/not-utf8") == 0) {
        ts_reducer_fail("bad \xFF byte \xC3");
        return NULL;
    }
    if (strcmp(type, "fail/long") == 0) {
        /* 3,000 bytes of a 2-byte character, then an ASCII tail: cut at 1,024. */
        char *message = malloc(3000 + 8);
        if (message == NULL) return NULL;
        for (int i = 0; i < 3000; i += 2) memcpy(message + i, "\xC3\xA9", 2);
        memcpy(message + 3000, " tail", 6);
        ts_reducer_fail(message);
        free(message); /* copied: freeing it at once is fine */
        return NULL;
    }
    return NULL;
}

static char *later_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)action;
    (void)ctx;
    if (slice == NULL) return ts_strdup("0");
    later_reducer_calls++;
    return ts_strdup("1");
}

static char *earlier_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    (void)slice;
    (void)action;
    return ts_strdup("\"changed\""); /* would change on every action: must not apply when another fails */
}

static void count_listener(ts_store *store, void *ctx) {
    (void)store;
    (void)ctx;
    listener_calls++;
}

static ts_store *failing_store(void) {
    ts_store *store = NULL;
    uint64_t token = 0;
    ts_store_create("{\"first\":\"initial\"}", &store);
    ts_store_add_reducer(store, "first", earlier_reducer, NULL);
    ts_store_add_reducer(store, "todos", todos_reducer, NULL);
    ts_store_add_reducer(store, "later", later_reducer, NULL);
    ts_store_subscribe(store, NULL, count_listener, NULL, &token);
    return store;
}

/* Dispatches `type` to a fresh failing store, checks that it fails with
 * TS_E_REDUCER and changes nothing; returns with ts_last_error() set. */
static void dispatch_failure(const char *type, int line) {
    ts_store *store = failing_store();
    char action[128];
    snprintf(action, sizeof action, "{\"type\":\"%s\"}", type);
    listener_calls = later_reducer_calls = 0;
    ts_status status = ts_store_dispatch(store, action);
    report(status == TS_E_REDUCER, __FILE__, line, "dispatch fails with TS_E_REDUCER");
    /* Nothing changed: the earlier reducer's result is not applied, the later
     * reducer is not called, no listener runs. */
    char saved[2048];
    snprintf(saved, sizeof saved, "%s", ts_last_error());
    report(strcmp(state_of(store, NULL), "{\"first\":\"initial\",\"todos\":[],\"later\":0}") == 0, __FILE__, line,
           "the state is unchanged");
    report(later_reducer_calls == 0, __FILE__, line, "the reducers after the failing one are not called");
    report(listener_calls == 0, __FILE__, line, "no listener is called");
    ts_store_destroy(store);
    /* The dispatch's message is still the thread's last error, for the caller. */
    report(strcmp(ts_last_error(), saved) == 0, __FILE__, line, "nothing failed after the dispatch");
}

void test_memory_and_errors__reducerFailReachesTheDispatcher(void) {
    dispatch_failure("fail", __LINE__);
    CHECK_STR(ts_last_error(), "the reducer for \"todos\" failed for \"fail\": title is required");

    dispatch_failure("fail/null", __LINE__);
    CHECK_STR(ts_last_error(), "the reducer for \"todos\" failed for \"fail/null\" (it gave no reason)");

    dispatch_failure("fail/empty", __LINE__);
    CHECK_STR(ts_last_error(), "the reducer for \"todos\" failed for \"fail/empty\" (it gave no reason)");
}

void test_memory_and_errors__reducerFailTwiceKeepsTheFirstReason(void) {
    second_fail_status = -999;
    dispatch_failure("fail/twice", __LINE__);
    CHECK_STR(ts_last_error(), "the reducer for \"todos\" failed for \"fail/twice\": the first reason");
    CHECK(second_fail_status == TS_OK);
}

void test_memory_and_errors__reducerFailWinsOverWhatTheReducerReturns(void) {
    dispatch_failure("fail/then-json", __LINE__);
    CHECK_STR(ts_last_error(), "the reducer for \"todos\" failed for \"fail/then-json\": failed, then returned JSON");
    dispatch_failure("fail/then-invalid", __LINE__);
    CHECK_STR(ts_last_error(),
              "the reducer for \"todos\" failed for \"fail/then-invalid\": failed, then returned garbage");
}

void test_memory_and_errors__reducerFailMessageIsUtf8AndBounded(void) {
    dispatch_failure("fail/not-utf8", __LINE__);
    /* Each bad byte becomes U+FFFD (EF BF BD). */
    CHECK_STR(ts_last_error(), "the reducer for \"todos\" failed for \"fail/not-utf8\": bad \xEF\xBF\xBD byte \xEF\xBF\xBD");

    dispatch_failure("fail/long", __LINE__);
    const char *prefix = "the reducer for \"todos\" failed for \"fail/long\": ";
    const char *error = ts_last_error();
    CHECK(strncmp(error, prefix, strlen(prefix)) == 0);
    const char *reason = error + strlen(prefix);
    CHECK(strlen(reason) == 1024); /* 512 whole characters: the cut is at a boundary */
    CHECK(strstr(reason, "\xEF\xBF\xBD") == NULL);
    CHECK(strstr(reason, "tail") == NULL);
}

void test_memory_and_errors__failedDispatchLeavesNoFailureBehind(void) {
    ts_store *store = failing_store();
    CHECK_STATUS(ts_store_dispatch(store, "{\"type\":\"fail\"}"), TS_E_REDUCER);
    /* The next dispatch is not failed by the earlier call. */
    CHECK_STATUS(ts_store_dispatch(store, "{\"type\":\"todos/add\"}"), TS_OK);
    CHECK_STR(state_of(store, "/todos"), "[\"one\"]");
    CHECK_STR(state_of(store, "/first"), "\"changed\"");
    /* And outside the reducer, ts_reducer_fail is a misuse again. */
    CHECK_STATUS(ts_reducer_fail("late"), TS_E_MISUSE);
    ts_store_destroy(store);
}

/* Outside a reducer: from the main thread, a listener and a middleware. */
static ts_status listener_fail_status, middleware_fail_status;

static void failing_listener(ts_store *store, void *ctx) {
    (void)store;
    (void)ctx;
    listener_fail_status = ts_reducer_fail("from a listener");
}

static ts_status failing_middleware(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)api;
    (void)ctx;
    middleware_fail_status = ts_reducer_fail("from a middleware");
    return next(action->json);
}

void test_memory_and_errors__reducerFailOutsideAReducerIsMisuse(void) {
    CHECK_STATUS(ts_reducer_fail("no reducer here"), TS_E_MISUSE);
    CHECK_CONTAINS(ts_last_error(), "ts_reducer_fail: called outside a reducer");
    CHECK_STATUS(ts_reducer_fail(NULL), TS_E_MISUSE);

    ts_store *store = NULL;
    uint64_t token = 0;
    CHECK_STATUS(ts_store_create(NULL, &store), TS_OK);
    CHECK_STATUS(ts_store_add_reducer(store, "todos", todos_reducer, NULL), TS_OK);
    CHECK_STATUS(ts_store_add_middleware(store, "m", failing_middleware, NULL), TS_OK);
    CHECK_STATUS(ts_store_subscribe(store, NULL, failing_listener, NULL, &token), TS_OK);
    listener_fail_status = middleware_fail_status = TS_OK;
    /* The dispatch itself succeeds: the misplaced calls failed nothing. */
    CHECK_STATUS(ts_store_dispatch(store, "{\"type\":\"todos/add\"}"), TS_OK);
    CHECK(middleware_fail_status == TS_E_MISUSE);
    CHECK(listener_fail_status == TS_E_MISUSE);
    CHECK_STR(state_of(store, NULL), "{\"todos\":[\"one\"]}");
    ts_store_destroy(store);
}

/* The init call of ts_store_add_reducer, and replace_state's. */
static char *failing_init(const char *slice, const ts_action *action, void *ctx) {
    (void)action;
    (void)ctx;
    if (slice == NULL) {
        ts_reducer_fail("no settings file");
        return NULL;
    }
    return NULL;
}

static int init_fails;
static char *sometimes_failing_init(const char *slice, const ts_action *action, void *ctx) {
    (void)action;
    (void)ctx;
    if (slice == NULL && init_fails) {
        ts_reducer_fail("cannot start over");
        return ts_strdup("42"); /* ignored: the failure holds */
    }
    return slice == NULL ? ts_strdup("1") : NULL;
}

static ts_status replace_status;
static char replace_error[512];
static ts_status replacing_middleware(const ts_store_api *api, ts_next_fn next, const ts_action *action,
                                      void *ctx) {
    (void)ctx;
    if (strcmp(action->type, "restore") != 0) return next(action->json);
    /* "settings" is missing from the new state: its reducer's init call runs. */
    replace_status = api->replace_state("{\"other\":true}");
    snprintf(replace_error, sizeof replace_error, "%s", ts_last_error());
    return replace_status;
}

void test_memory_and_errors__reducerFailInInitCallsFailsTheRegistration(void) {
    ts_store *store = NULL;
    CHECK_STATUS(ts_store_create(NULL, &store), TS_OK);
    CHECK_STATUS(ts_store_add_reducer(store, "settings", failing_init, NULL), TS_E_REDUCER);
    CHECK_STR(ts_last_error(), "the reducer for \"settings\" failed for \"@@turnstate/init\": no settings file");
    CHECK_STR(state_of(store, NULL), "{}"); /* nothing added */

    init_fails = 0;
    CHECK_STATUS(ts_store_add_reducer(store, "settings", sometimes_failing_init, NULL), TS_OK);
    CHECK_STATUS(ts_store_add_middleware(store, "restore", replacing_middleware, NULL), TS_OK);
    init_fails = 1;
    replace_status = TS_OK;
    CHECK_STATUS(ts_store_dispatch(store, "{\"type\":\"restore\"}"), TS_E_REDUCER);
    CHECK(replace_status == TS_E_REDUCER);
    CHECK_STR(replace_error, "the reducer for \"settings\" failed for \"@@turnstate/init\": cannot start over");
    CHECK_STR(state_of(store, NULL), "{\"settings\":1}"); /* replace_state changed nothing */
    init_fails = 0;
    CHECK_STATUS(ts_store_dispatch(store, "{\"type\":\"restore\"}"), TS_OK);
    CHECK_STR(state_of(store, NULL), "{\"other\":true,\"settings\":1}");
    ts_store_destroy(store);
}

/* A reducer that dispatches into another store: each reducer call has its
 * own failure. */
static ts_store *inner_store;
static ts_status inner_status;
static char inner_error[512];

static char *inner_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice == NULL) return ts_strdup("0");
    if (strcmp(action->type, "inner/fail") == 0) ts_reducer_fail("inner reason");
    return NULL;
}

static char *outer_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice == NULL) return ts_strdup("0");
    if (strcmp(action->type, "outer/ok") == 0) {
        inner_status = ts_store_dispatch(inner_store, "{\"type\":\"inner/fail\"}");
        snprintf(inner_error, sizeof inner_error, "%s", ts_last_error());
        return ts_strdup("1"); /* the inner failure is not this reducer's */
    }
    if (strcmp(action->type, "outer/fail") == 0) {
        ts_reducer_fail("outer reason");
        inner_status = ts_store_dispatch(inner_store, "{\"type\":\"inner/fail\"}");
        return NULL;
    }
    return NULL;
}

void test_memory_and_errors__nestedReducerCallsFailSeparately(void) {
    ts_store *outer = NULL;
    CHECK_STATUS(ts_store_create(NULL, &outer), TS_OK);
    CHECK_STATUS(ts_store_create(NULL, &inner_store), TS_OK);
    CHECK_STATUS(ts_store_add_reducer(outer, "o", outer_reducer, NULL), TS_OK);
    CHECK_STATUS(ts_store_add_reducer(inner_store, "i", inner_reducer, NULL), TS_OK);

    CHECK_STATUS(ts_store_dispatch(outer, "{\"type\":\"outer/ok\"}"), TS_OK);
    CHECK(inner_status == TS_E_REDUCER);
    CHECK_STR(inner_error, "the reducer for \"i\" failed for \"inner/fail\": inner reason");
    CHECK_STR(state_of(outer, NULL), "{\"o\":1}");

    CHECK_STATUS(ts_store_dispatch(outer, "{\"type\":\"outer/fail\"}"), TS_E_REDUCER);
    CHECK(inner_status == TS_E_REDUCER);
    CHECK_STR(ts_last_error(), "the reducer for \"o\" failed for \"outer/fail\": outer reason");
    CHECK_STR(state_of(outer, NULL), "{\"o\":1}");
    ts_store_destroy(inner_store);
    ts_store_destroy(outer);
}

/* A reducer that also called back into its store: TS_E_REENTRANT wins. */
static ts_store *impure_store;
static char *impure_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)action;
    (void)ctx;
    if (slice == NULL) return ts_strdup("0");
    char *text = NULL;
    if (ts_store_get_state(impure_store, NULL, &text) == TS_OK) ts_free(text);
    ts_reducer_fail("also failed");
    return NULL;
}

void test_memory_and_errors__reentrancyIsReportedBeforeTheReason(void) {
    CHECK_STATUS(ts_store_create(NULL, &impure_store), TS_OK);
    CHECK_STATUS(ts_store_add_reducer(impure_store, "n", impure_reducer, NULL), TS_OK);
    CHECK_STATUS(ts_store_dispatch(impure_store, "{\"type\":\"x\"}"), TS_E_REENTRANT);
    CHECK_STR(state_of(impure_store, NULL), "{\"n\":0}");
    ts_store_destroy(impure_store);
}

/* The reason reaches the thread that dispatched, and only that thread. */
struct thread_result {
    ts_store *store;
    ts_status status;
    char error[512];
};

static void *dispatch_on_a_thread(void *argument) {
    struct thread_result *result = argument;
    result->status = ts_store_dispatch(result->store, "{\"type\":\"fail\"}");
    snprintf(result->error, sizeof result->error, "%s", ts_last_error());
    return NULL;
}

void test_memory_and_errors__reasonReachesTheDispatchingThread(void) {
    struct thread_result result;
    memset(&result, 0, sizeof result);
    result.store = failing_store();
    CHECK(ts_reducer_fail("marker on the main thread") == TS_E_MISUSE);
    char main_error[512];
    snprintf(main_error, sizeof main_error, "%s", ts_last_error());
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, dispatch_on_a_thread, &result) == 0);
    pthread_join(thread, NULL);
    CHECK(result.status == TS_E_REDUCER);
    CHECK_STR(result.error, "the reducer for \"todos\" failed for \"fail\": title is required");
    CHECK_STR(ts_last_error(), main_error); /* this thread's message is its own */
    ts_store_destroy(result.store);
}

/* ---- TS_API ---------------------------------------------------------------- */

int test_exported_function(void) { return 7; }

void test_memory_and_errors__apiMacroLeavesFunctionsCallable(void) {
    /* Declared with TS_API, defined here: callable like any function (the
     * Makefile checks with nm that a plugin built with -fvisibility=hidden
     * still exports ts_plugin_entry). */
    CHECK(test_exported_function() == 7);
    CHECK(TS_PLUGIN_ABI_VERSION >= 1u);
}
