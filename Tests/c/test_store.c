/*
 * test_store.c - tests of the C API of Turnstate (Include/turnstate.h).
 *
 * Every rule and error path of the header has its own test function. Run
 * with no argument for the full run, or with --quick (the valgrind run) for
 * smaller loop counts. Prints one line "N passed, M failed" at the end and
 * exits non-zero if anything failed; each failure is reported on stderr with
 * file:line, the expression, the status name and ts_last_error().
 */
#define _POSIX_C_SOURCE 200809L

#include "turnstate.h"

#include <limits.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Checks ------------------------------------------------------------- */

static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
static int passed, failed;
static const char *current_test = "";
static int quick;
/* The status of the latest CHECK_ST, printed with any failure. */
static ts_status last_status = TS_OK;

/* Prints at most 160 bytes of a possibly huge string. */
static void show(FILE *f, const char *label, const char *s) {
    if (s == NULL) {
        fprintf(f, "    %s: NULL\n", label);
        return;
    }
    size_t n = strlen(s);
    if (n > 160) fprintf(f, "    %s: \"%.160s\"... (%zu bytes)\n", label, s, n);
    else fprintf(f, "    %s: \"%s\"\n", label, s);
}

static void report(int ok, const char *file, int line, const char *expr, const char *detail) {
    pthread_mutex_lock(&check_lock);
    if (ok) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "%s:%d: [%s] FAILED: %s\n", file, line, current_test, expr);
        if (detail != NULL) fprintf(stderr, "    %s\n", detail);
        else fprintf(stderr, "    latest checked status: %s (%d)\n", ts_status_name(last_status), (int)last_status);
        show(stderr, "ts_last_error", ts_last_error());
    }
    pthread_mutex_unlock(&check_lock);
}

static void check_status(ts_status got, ts_status want, const char *file, int line, const char *expr) {
    char detail[160];
    snprintf(detail, sizeof detail, "status %s (%d), expected %s (%d)", ts_status_name(got), (int)got,
             ts_status_name(want), (int)want);
    pthread_mutex_lock(&check_lock);
    last_status = got;
    pthread_mutex_unlock(&check_lock);
    report(got == want, file, line, expr, detail);
}

static void check_str(const char *got, const char *want, const char *file, int line, const char *expr) {
    int ok = (got == NULL && want == NULL) || (got != NULL && want != NULL && strcmp(got, want) == 0);
    report(ok, file, line, expr, NULL);
    if (!ok) {
        pthread_mutex_lock(&check_lock);
        show(stderr, "got", got);
        show(stderr, "expected", want);
        pthread_mutex_unlock(&check_lock);
    }
}

static void check_contains(const char *hay, const char *needle, const char *file, int line, const char *expr) {
    int ok = hay != NULL && strstr(hay, needle) != NULL;
    report(ok, file, line, expr, NULL);
    if (!ok) {
        pthread_mutex_lock(&check_lock);
        show(stderr, "text", hay);
        show(stderr, "should contain", needle);
        pthread_mutex_unlock(&check_lock);
    }
}

#define CHECK(cond) report((cond) ? 1 : 0, __FILE__, __LINE__, #cond, NULL)
#define CHECK_ST(call, want) check_status((call), (want), __FILE__, __LINE__, #call)
#define CHECK_OK(call) CHECK_ST(call, TS_OK)
#define CHECK_STR(got, want) check_str((got), (want), __FILE__, __LINE__, #got " == " #want)
#define CHECK_CONTAINS(hay, needle) check_contains((hay), (needle), __FILE__, __LINE__, #hay " contains " #needle)
#define CHECK_INT(got, want)                                                                          \
    do {                                                                                              \
        long long got_ = (long long)(got), want_ = (long long)(want);                                  \
        char detail_[96];                                                                             \
        snprintf(detail_, sizeof detail_, "got %lld, expected %lld", got_, want_);                    \
        report(got_ == want_, __FILE__, __LINE__, #got " == " #want, detail_);                        \
    } while (0)

/* The state text at `pointer` equals `want` (and is freed). */
static void check_state(ts_store *store, const char *pointer, const char *want, const char *file, int line) {
    char *out = NULL;
    ts_status st = ts_store_get_state(store, pointer, &out);
    check_status(st, TS_OK, file, line, "ts_store_get_state");
    check_str(out, want, file, line, "state text");
    ts_free(out);
}
#define CHECK_STATE(store, pointer, want) check_state((store), (pointer), (want), __FILE__, __LINE__)

/* ---- Helpers ------------------------------------------------------------ */

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy == NULL) abort();
    memcpy(copy, s, n);
    return copy;
}

static char *xprintf(const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(NULL, 0, format, ap);
    va_end(ap);
    char *out = malloc((size_t)n + 1);
    if (out == NULL) abort();
    va_start(ap, format);
    vsnprintf(out, (size_t)n + 1, format, ap);
    va_end(ap);
    return out;
}

/* The whole state text (malloc'ed by the library; free with ts_free), or NULL. */
static char *state_of(ts_store *store, const char *pointer) {
    char *out = NULL;
    if (ts_store_get_state(store, pointer, &out) != TS_OK) return NULL;
    return out;
}

static long long count_of(ts_store *store, const char *pointer) {
    char *text = state_of(store, pointer);
    long long n = text ? strtoll(text, NULL, 10) : -1;
    ts_free(text);
    return n;
}

/* A call log, for checking the order of callbacks (single-threaded tests). */
static char call_log[4096];
static void log_reset(void) { call_log[0] = '\0'; }
static void log_add(const char *s) {
    size_t n = strlen(call_log);
    snprintf(call_log + n, sizeof call_log - n, "%s", s);
}

static ts_store *new_store(const char *json) {
    ts_store *store = NULL;
    ts_status st = ts_store_create(json, &store);
    check_status(st, TS_OK, __FILE__, __LINE__, "ts_store_create (helper)");
    if (store == NULL) {
        fprintf(stderr, "cannot create a store; giving up\n");
        exit(2);
    }
    return store;
}

/* A sentinel that an output parameter must keep on failure. */
static int sentinel_object;
#define SENTINEL_STORE ((ts_store *)(void *)&sentinel_object)
static char sentinel_text[] = "sentinel";

/* ---- Reducers and listeners used by many tests --------------------------- */

/* What a reducer saw. */
typedef struct rstat {
    int calls;
    int init_calls;
    int null_slice;
    char last_type[128];
    char *last_payload; /* malloc'ed copy, or NULL */
    char *last_json;    /* malloc'ed copy */
    const char *log;    /* appended to call_log on each call, if set */
} rstat;

static void rstat_record(rstat *st, const char *slice, const ts_action *a) {
    if (st == NULL) return;
    st->calls++;
    if (slice == NULL) st->null_slice++;
    snprintf(st->last_type, sizeof st->last_type, "%s", a->type);
    free(st->last_payload);
    free(st->last_json);
    st->last_payload = a->payload ? xstrdup(a->payload) : NULL;
    st->last_json = xstrdup(a->json);
    if (st->log) log_add(st->log);
}

static void rstat_free(rstat *st) {
    free(st->last_payload);
    free(st->last_json);
    st->last_payload = st->last_json = NULL;
}

/* A counter: 0 at init; "inc", "evil" and "break" add 1, "add" adds the payload,
 * "count/same" returns the same text, "count/same_ws" the same value with
 * white space, "set" returns the payload; everything else: unchanged. */
static char *counter_reducer(const char *slice, const ts_action *a, void *ctx) {
    rstat *st = ctx;
    rstat_record(st, slice, a);
    if (slice == NULL) {
        if (st) st->init_calls++;
        return xstrdup("0");
    }
    long long n = strtoll(slice, NULL, 10);
    if (strcmp(a->type, "inc") == 0 || strcmp(a->type, "evil") == 0 || strcmp(a->type, "break") == 0) return xprintf("%lld", n + 1);
    if (strcmp(a->type, "add") == 0 && a->payload != NULL) return xprintf("%lld", n + strtoll(a->payload, NULL, 10));
    if (strcmp(a->type, "count/same") == 0) return xstrdup(slice);
    if (strcmp(a->type, "count/same_ws") == 0) return xprintf(" \n%s\t ", slice);
    if (strcmp(a->type, "set") == 0 && a->payload != NULL) return xstrdup(a->payload);
    return NULL;
}

/* Returns invalid JSON for "break", else unchanged; "{}" at init. */
static char *breaking_reducer(const char *slice, const ts_action *a, void *ctx) {
    rstat_record(ctx, slice, a);
    if (slice == NULL) return xstrdup("{}");
    if (strcmp(a->type, "break") == 0) return xstrdup("{\"oops\":");
    return NULL;
}

/* Returns the payload as its slice on "store"; "null" at init. */
static char *payload_reducer(const char *slice, const ts_action *a, void *ctx) {
    rstat_record(ctx, slice, a);
    if (slice == NULL) return xstrdup("null");
    if (strcmp(a->type, "store") == 0 && a->payload != NULL) return xstrdup(a->payload);
    return NULL;
}

/* Never changes anything; at init returns what ctx (a string) says. */
static char *const_init_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)a;
    if (slice == NULL) return ctx ? xstrdup(ctx) : NULL;
    return NULL;
}

/* A listener that counts its calls in *(int *)ctx. */
static void count_listener(ts_store *store, void *ctx) {
    (void)store;
    ++*(int *)ctx;
}

/* A listener that appends its ctx (a string) to the call log. */
static void log_listener(ts_store *store, void *ctx) {
    (void)store;
    log_add(ctx);
}

/* ---- Versions, status names, last error ---------------------------------- */

static void test_versions(void) {
    CHECK_INT(ts_version_number(), TS_VERSION_MAJOR * 10000 + TS_VERSION_MINOR * 100 + TS_VERSION_PATCH);
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", TS_VERSION_MAJOR, TS_VERSION_MINOR, TS_VERSION_PATCH);
    CHECK_STR(ts_version_string(), want);
    CHECK(ts_version_string() == ts_version_string()); /* static text */
}

static void test_status_names(void) {
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

static void test_last_error(void) {
    /* A failure on this thread first: the new thread must not see it. */
    CHECK_ST(ts_store_create("nope", NULL), TS_E_ARGUMENT);
    CHECK(ts_last_error()[0] != '\0');
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, last_error_thread, NULL) == 0);
    pthread_join(thread, NULL);
}

/* ---- Creating stores ---------------------------------------------------- */

static void expect_create_fails(const char *json, ts_status want, const char *file, int line) {
    ts_store *store = SENTINEL_STORE;
    ts_status st = ts_store_create(json, &store);
    check_status(st, want, file, line, json ? json : "(NULL)");
    report(store == SENTINEL_STORE, file, line, "*out untouched on failure", NULL);
    report(ts_last_error()[0] != '\0', file, line, "a message on failure", NULL);
    if (store != SENTINEL_STORE) ts_store_destroy(store);
}
#define CHECK_CREATE_FAILS(json, want) expect_create_fails((json), (want), __FILE__, __LINE__)

static void test_create(void) {
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

    ts_store_destroy(NULL); /* safe */
    CHECK(1);
}

/* ---- Reducers ----------------------------------------------------------- */

static void test_reducer_init(void) {
    ts_store *store = new_store(NULL);
    int notified = 0;
    uint64_t token;
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &token));

    rstat st = {0};
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    CHECK_INT(st.calls, 1);
    CHECK_INT(st.null_slice, 1);
    CHECK_STR(st.last_type, "@@turnstate/init");
    CHECK_STR(st.last_payload, NULL);
    CHECK_STR(st.last_json, "{\"type\":\"@@turnstate/init\"}");
    CHECK_STATE(store, NULL, "{\"count\":0}");
    CHECK_INT(notified, 0); /* no listener for the init value */

    /* A second reducer for the same key is refused; the first stays. */
    rstat st2 = {0};
    CHECK_ST(ts_store_add_reducer(store, "count", counter_reducer, &st2), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "count");
    CHECK_INT(st2.calls, 0);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(st2.calls, 0);
    CHECK_INT(st.calls, 2);
    CHECK_STATE(store, NULL, "{\"count\":1}");
    CHECK_INT(notified, 1);

    /* New keys go at the end. */
    CHECK_OK(ts_store_add_reducer(store, "later", const_init_reducer, "[1, 2]"));
    CHECK_STATE(store, NULL, "{\"count\":1,\"later\":[1,2]}");

    /* Argument errors. */
    CHECK_ST(ts_store_add_reducer(NULL, "k", counter_reducer, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_add_reducer(store, NULL, counter_reducer, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_add_reducer(store, "k", NULL, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_add_reducer(store, "bad\xff", counter_reducer, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_add_reducer(store, "\xc0\xaf", counter_reducer, NULL), TS_E_ARGUMENT);
    CHECK_STATE(store, NULL, "{\"count\":1,\"later\":[1,2]}");
    CHECK_INT(notified, 1);

    ts_store_destroy(store);
    rstat_free(&st);
    rstat_free(&st2);
}

static void test_reducer_existing_key(void) {
    ts_store *store = new_store("{\"count\":5,\"other\":true}");
    rstat st = {0};
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    CHECK_INT(st.calls, 0); /* the key exists: no init call */
    CHECK_STATE(store, NULL, "{\"count\":5,\"other\":true}");
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(st.calls, 1);
    CHECK_INT(st.null_slice, 0);
    CHECK_STATE(store, "/count", "6");
    ts_store_destroy(store);
    rstat_free(&st);
}

static void test_reducer_init_fails(void) {
    ts_store *store = new_store("{\"a\":1}");
    const char *bad[] = {NULL, "", "{", "nope", "[1,]", "1 2", "\"\xff\""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_ST(ts_store_add_reducer(store, "k", const_init_reducer, (void *)bad[i]), TS_E_REDUCER);
        CHECK_CONTAINS(ts_last_error(), "k");
        CHECK_STATE(store, NULL, "{\"a\":1}");
    }
    /* Nothing was added: the key is free, and a good reducer takes it. */
    char *out = sentinel_text;
    CHECK_ST(ts_store_get_state(store, "/k", &out), TS_E_NOT_FOUND);
    CHECK(out == sentinel_text);
    CHECK_OK(ts_store_add_reducer(store, "k", const_init_reducer, "\"v\""));
    CHECK_STATE(store, NULL, "{\"a\":1,\"k\":\"v\"}");
    /* A failed reducer never runs on dispatch. */
    rstat st = {0};
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STATE(store, NULL, "{\"a\":1,\"k\":\"v\"}");
    ts_store_destroy(store);
    rstat_free(&st);
}

static void test_reducer_order(void) {
    ts_store *store = new_store(NULL);
    rstat a = {0}, b = {0}, c = {0};
    a.log = "a";
    b.log = "b";
    c.log = "c";
    log_reset();
    CHECK_OK(ts_store_add_reducer(store, "z", counter_reducer, &a));
    CHECK_OK(ts_store_add_reducer(store, "y", counter_reducer, &b));
    CHECK_OK(ts_store_add_reducer(store, "x", counter_reducer, &c));
    CHECK_STR(call_log, "abc"); /* the init calls */
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"noop\"}"));
    CHECK_STR(call_log, "abcabc");
    CHECK_STATE(store, NULL, "{\"z\":1,\"y\":1,\"x\":1}");
    ts_store_destroy(store);
    rstat_free(&a);
    rstat_free(&b);
    rstat_free(&c);
}

static void test_reducer_null_unchanged(void) {
    ts_store *store = new_store("{\"count\":3,\"keep\":{\"x\":[1,2,3]}}");
    rstat st = {0};
    int notified = 0;
    uint64_t token;
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &token));
    char *before = state_of(store, NULL);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"noop\"}"));
    CHECK_INT(st.calls, 1);
    CHECK_STATE(store, NULL, before);
    CHECK_INT(notified, 1); /* the dispatch reached the reducers */
    ts_free(before);
    ts_store_destroy(store);
    rstat_free(&st);
}

/* ---- Dispatching -------------------------------------------------------- */

static void test_dispatch_atomic(void) {
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

static void test_dispatch_atomic_two_reducers(void) {
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
    report(ts_last_error()[0] != '\0', file, line, "a message on failure", NULL);
    char *after = state_of(store, NULL);
    check_str(after, before, file, line, "state unchanged");
    ts_free(before);
    ts_free(after);
}
#define CHECK_DISPATCH_FAILS(store, action, want) \
    expect_dispatch_fails((store), (action), (want), #action, __FILE__, __LINE__)

static char *nested(const char *prefix, size_t depth, const char *inner, const char *suffix) {
    size_t np = strlen(prefix), ni = strlen(inner), ns = strlen(suffix);
    char *text = malloc(np + 2 * depth + ni + ns + 1);
    if (text == NULL) abort();
    memcpy(text, prefix, np);
    memset(text + np, '[', depth);
    memcpy(text + np + depth, inner, ni);
    memset(text + np + depth + ni, ']', depth);
    memcpy(text + np + 2 * depth + ni, suffix, ns + 1);
    return text;
}

static void test_dispatch_invalid(void) {
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

static void test_duplicate_keys(void) {
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

static void test_action_view(void) {
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

static void test_huge_payload(void) {
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

/* ---- 64-bit integers ---------------------------------------------------- */

static void test_int64(void) {
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

/* ---- Reading the state -------------------------------------------------- */

static void expect_get_fails(ts_store *store, const char *pointer, ts_status want, const char *needle,
                             const char *file, int line) {
    char *out = sentinel_text;
    ts_status st = ts_store_get_state(store, pointer, &out);
    check_status(st, want, file, line, pointer ? pointer : "(NULL)");
    report(out == sentinel_text, file, line, "*out_json untouched on failure", NULL);
    if (needle) check_contains(ts_last_error(), needle, file, line, "message names the token");
    if (out != sentinel_text) ts_free(out);
}
#define CHECK_GET_FAILS(store, pointer, want, needle) \
    expect_get_fails((store), (pointer), (want), (needle), __FILE__, __LINE__)

static void test_get_state(void) {
    const char *initial = "{\"count\":1,\"todos\":[{\"title\":\"a\",\"done\":false},{\"title\":\"b\"}],"
                          "\"a/b\":\"slash\",\"m~n\":\"tilde\",\"\":\"empty\",\"x\":{\"y/z\":{\"~\":4,\"~1\":5}}}";
    ts_store *store = new_store(initial);
    CHECK_STATE(store, NULL, initial);
    CHECK_STATE(store, "", initial);
    CHECK_STATE(store, "/count", "1");
    CHECK_STATE(store, "/todos", "[{\"title\":\"a\",\"done\":false},{\"title\":\"b\"}]");
    CHECK_STATE(store, "/todos/0/title", "\"a\"");
    CHECK_STATE(store, "/todos/0/done", "false");
    CHECK_STATE(store, "/todos/1", "{\"title\":\"b\"}");
    CHECK_STATE(store, "/a~1b", "\"slash\"");
    CHECK_STATE(store, "/m~0n", "\"tilde\"");
    CHECK_STATE(store, "/", "\"empty\"");
    CHECK_STATE(store, "/x/y~1z/~0", "4");
    CHECK_STATE(store, "/x/y~1z/~01", "5"); /* "~01" is "~1", not "/" */
    ts_store *keys = new_store("{\"a\\\"b\":1,\"\\u0041\":2,\"c\\u0000d\":3,\"t\\tab\":4,\"\\u00e9\":5}");
    CHECK_STATE(keys, "/a\"b", "1");
    CHECK_STATE(keys, "/A", "2");
    CHECK_STATE(keys, "/t\tab", "4");
    CHECK_STATE(keys, "/\xc3\xa9", "5");
    /* The whole state is valid JSON with the same keys, escaped as needed. */
    CHECK_STATE(keys, NULL, "{\"a\\\"b\":1,\"A\":2,\"c\\u0000d\":3,\"t\\tab\":4,\"\xc3\xa9\":5}");
    ts_store_destroy(keys);

    /* Not found: the message names the missing token. */
    CHECK_GET_FAILS(store, "/nope", TS_E_NOT_FOUND, "nope");
    CHECK_GET_FAILS(store, "/todos/5", TS_E_NOT_FOUND, "5");
    CHECK_GET_FAILS(store, "/todos/0/missing", TS_E_NOT_FOUND, "missing");
    CHECK_GET_FAILS(store, "/todos/-", TS_E_NOT_FOUND, "-");
    CHECK_GET_FAILS(store, "/todos/01", TS_E_NOT_FOUND, "01");
    CHECK_GET_FAILS(store, "/todos/x", TS_E_NOT_FOUND, "x");
    CHECK_GET_FAILS(store, "/count/x", TS_E_NOT_FOUND, "x");
    CHECK_GET_FAILS(store, "/a/b", TS_E_NOT_FOUND, "a");
    CHECK_GET_FAILS(store, "/x/y~1z/~1", TS_E_NOT_FOUND, NULL);
    CHECK_GET_FAILS(store, "/nope/deeper", TS_E_NOT_FOUND, "nope");

    /* Malformed pointers. */
    CHECK_GET_FAILS(store, "abc", TS_E_ARGUMENT, NULL);
    CHECK_GET_FAILS(store, "count", TS_E_ARGUMENT, NULL);
    CHECK_GET_FAILS(store, "/a~2", TS_E_ARGUMENT, NULL);
    CHECK_GET_FAILS(store, "/todos/~", TS_E_ARGUMENT, NULL);
    CHECK_GET_FAILS(store, "/nope/~x", TS_E_ARGUMENT, NULL);
    CHECK_GET_FAILS(store, "/\xff", TS_E_ARGUMENT, NULL);

    /* NULL arguments. */
    CHECK_GET_FAILS(NULL, "/count", TS_E_ARGUMENT, NULL);
    CHECK_ST(ts_store_get_state(store, NULL, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_get_state(store, "/count", NULL), TS_E_ARGUMENT);

    /* Each call returns new memory. */
    char *one = state_of(store, NULL), *two = state_of(store, NULL);
    CHECK(one != NULL && two != NULL && one != two);
    ts_free(one);
    ts_free(two);
    ts_free(NULL);

    /* The whole state is rebuilt after a change. */
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    one = state_of(store, NULL);
    CHECK(one != NULL && strncmp(one, "{\"count\":2,", 11) == 0);
    ts_free(one);
    ts_store_destroy(store);
}

/* ---- Reducer re-entrancy ------------------------------------------------ */

enum {
    RE_DISPATCH,
    RE_GET,
    RE_GET_POINTER,
    RE_SUBSCRIBE,
    RE_SUBSCRIBE_POINTER,
    RE_UNSUBSCRIBE,
    RE_ADD_REDUCER,
    RE_ADD_MIDDLEWARE,
    RE_MODES
};
static const char *const re_names[RE_MODES] = {"dispatch", "get_state", "get_state(pointer)", "subscribe",
                                               "subscribe(pointer)", "unsubscribe", "add_reducer", "add_middleware"};

typedef struct re_ctx {
    ts_store *store;
    int mode;
    ts_status inner;
    int calls;
    int output_written;
    int return_null; /* return NULL (no change) after the call */
    uint64_t token;
    int side_listener; /* counts calls of a listener that must never be added */
    int mw_runs;
    char inner_message[512]; /* ts_last_error() right after the refused call */
} re_ctx;

/* The C function each refusal must name (C users see C names, not Swift's). */
static const char *const re_c_names[RE_MODES] = {
    "ts_store_dispatch",  "ts_store_get_state",   "ts_store_get_state",    "ts_store_subscribe",
    "ts_store_subscribe", "ts_store_unsubscribe", "ts_store_add_reducer", "ts_store_add_middleware"};

static ts_status never_middleware(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    (void)api;
    ++((re_ctx *)ctx)->mw_runs;
    return next(a->json);
}

static void re_call(re_ctx *c) {
    char *out = NULL;
    uint64_t token = 777;
    switch (c->mode) {
    case RE_DISPATCH: c->inner = ts_store_dispatch(c->store, "{\"type\":\"inc\"}"); break;
    case RE_GET:
        c->inner = ts_store_get_state(c->store, NULL, &out);
        c->output_written = out != NULL;
        break;
    case RE_GET_POINTER:
        c->inner = ts_store_get_state(c->store, "/count", &out);
        c->output_written = out != NULL;
        break;
    case RE_SUBSCRIBE:
        c->inner = ts_store_subscribe(c->store, NULL, count_listener, &c->side_listener, &token);
        c->output_written = token != 777;
        break;
    case RE_SUBSCRIBE_POINTER:
        c->inner = ts_store_subscribe(c->store, "/count", count_listener, &c->side_listener, &token);
        c->output_written = token != 777;
        break;
    case RE_UNSUBSCRIBE: c->inner = ts_store_unsubscribe(c->store, c->token); break;
    case RE_ADD_REDUCER: c->inner = ts_store_add_reducer(c->store, "sneaky", const_init_reducer, "1"); break;
    case RE_ADD_MIDDLEWARE: c->inner = ts_store_add_middleware(c->store, "sneaky", never_middleware, c); break;
    }
    snprintf(c->inner_message, sizeof c->inner_message, "%s", ts_last_error());
    if (out != NULL) ts_free(out);
}

/* On "evil", calls into its own store (c->mode), then returns a change. */
static char *reentrant_reducer(const char *slice, const ts_action *a, void *ctx) {
    re_ctx *c = ctx;
    if (slice == NULL) return xstrdup("0");
    if (strcmp(a->type, "evil") != 0) return NULL;
    c->calls++;
    re_call(c);
    if (c->return_null) return NULL;
    return xprintf("%lld", strtoll(slice, NULL, 10) + 1);
}

static void reentrancy_case(int mode, int reentrant_first, int return_null) {
    ts_store *store = new_store(NULL);
    re_ctx c;
    memset(&c, 0, sizeof c);
    c.store = store;
    c.mode = mode;
    c.inner = 12345;
    c.return_null = return_null;
    int notified = 0;
    uint64_t token;
    if (reentrant_first) CHECK_OK(ts_store_add_reducer(store, "evil", reentrant_reducer, &c));
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    if (!reentrant_first) CHECK_OK(ts_store_add_reducer(store, "evil", reentrant_reducer, &c));
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &token));
    c.token = token;
    char *before = state_of(store, NULL);

    ts_status st = ts_store_dispatch(store, "{\"type\":\"evil\"}");
    if (st != TS_E_REENTRANT || c.inner != TS_E_REENTRANT)
        fprintf(stderr, "    (re-entrant call from a reducer: %s, reducer first: %d, returns NULL: %d)\n",
                re_names[mode], reentrant_first, return_null);
    CHECK_INT(c.calls, 1);
    CHECK_ST(c.inner, TS_E_REENTRANT);
    CHECK_ST(st, TS_E_REENTRANT);
    CHECK(ts_last_error()[0] != '\0');
    CHECK_CONTAINS(c.inner_message, re_c_names[mode]);
    CHECK(strstr(c.inner_message, "JSONAction") == NULL);
    CHECK(strstr(c.inner_message, "()") == NULL);
    CHECK_CONTAINS(ts_last_error(), re_c_names[mode]);
    CHECK_INT(c.output_written, 0);
    CHECK_STATE(store, NULL, before);
    CHECK_INT(notified, 0);

    /* Nothing happened, nothing is locked: the store works on. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STATE(store, "/count", "1");
    CHECK_INT(notified, 1);             /* the unsubscribe did not happen */
    CHECK_INT(c.side_listener, 0);      /* the subscribe did not happen */
    CHECK_INT(c.mw_runs, 0);            /* the middleware was not added */
    CHECK_GET_FAILS(store, "/sneaky", TS_E_NOT_FOUND, NULL); /* the reducer was not added */
    ts_free(before);
    ts_store_destroy(store);
}

/* Calls into another store from a reducer: allowed (only its own store is off limits). */
typedef struct other_ctx {
    ts_store *other;
    ts_status dispatch_status, get_status;
    char *seen;
} other_ctx;

static char *other_store_reducer(const char *slice, const ts_action *a, void *ctx) {
    other_ctx *c = ctx;
    if (slice == NULL) return xstrdup("0");
    if (strcmp(a->type, "inc") != 0) return NULL;
    c->dispatch_status = ts_store_dispatch(c->other, "{\"type\":\"inc\"}");
    char *out = NULL;
    c->get_status = ts_store_get_state(c->other, "/count", &out);
    free(c->seen);
    c->seen = out ? xstrdup(out) : NULL;
    ts_free(out);
    return xprintf("%lld", strtoll(slice, NULL, 10) + 1);
}

static void test_reducer_uses_other_store(void) {
    ts_store *a = new_store(NULL), *b = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(b, "count", counter_reducer, NULL));
    other_ctx c;
    memset(&c, 0, sizeof c);
    c.other = b;
    CHECK_OK(ts_store_add_reducer(a, "mirror", other_store_reducer, &c));
    CHECK_OK(ts_store_dispatch(a, "{\"type\":\"inc\"}"));
    CHECK_OK(c.dispatch_status);
    CHECK_OK(c.get_status);
    CHECK_STR(c.seen, "1");
    CHECK_STATE(a, NULL, "{\"mirror\":1}");
    CHECK_STATE(b, NULL, "{\"count\":1}");
    free(c.seen);
    ts_store_destroy(a);
    ts_store_destroy(b);
}

static void test_reducer_reentrancy(void) {
    for (int mode = 0; mode < RE_MODES; mode++) {
        reentrancy_case(mode, 0, 0);
        reentrancy_case(mode, 1, 0);
        reentrancy_case(mode, 0, 1);
    }
}

/* A reducer whose init call calls into the store: add_reducer fails. */
static char *reentrant_init_reducer(const char *slice, const ts_action *a, void *ctx) {
    re_ctx *c = ctx;
    (void)a;
    if (slice == NULL) {
        c->calls++;
        re_call(c);
        return xstrdup("0");
    }
    return NULL;
}

static void test_reducer_reentrancy_at_init(void) {
    for (int mode = 0; mode < RE_MODES; mode++) {
        ts_store *store = new_store("{\"a\":1}");
        re_ctx c;
        memset(&c, 0, sizeof c);
        c.store = store;
        c.mode = mode;
        c.inner = 12345;
        CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
        ts_status st = ts_store_add_reducer(store, "k", reentrant_init_reducer, &c);
        if (st != TS_E_REENTRANT || c.inner != TS_E_REENTRANT)
            fprintf(stderr, "    (re-entrant call from an init reducer: %s)\n", re_names[mode]);
        CHECK_ST(c.inner, TS_E_REENTRANT);
        CHECK_ST(st, TS_E_REENTRANT);
        CHECK_STATE(store, NULL, "{\"a\":1,\"count\":0}");
        /* Nothing added: the key is still free. */
        CHECK_OK(ts_store_add_reducer(store, "k", const_init_reducer, "2"));
        CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
        CHECK_STATE(store, NULL, "{\"a\":1,\"count\":1,\"k\":2}");
        CHECK_INT(c.side_listener, 0);
        CHECK_INT(c.mw_runs, 0);
        ts_store_destroy(store);
    }
}

/* ---- Listeners ---------------------------------------------------------- */

typedef struct store_check {
    ts_store *expected;
    void *expected_ctx;
    int ok;
    int calls;
} store_check;

static void checking_listener(ts_store *store, void *ctx) {
    store_check *c = ctx;
    c->calls++;
    if (store == c->expected && ctx == c->expected_ctx) c->ok++;
}

static void test_listeners_basic(void) {
    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    uint64_t t1 = 0, t2 = 0, t3 = 0;
    log_reset();
    CHECK_OK(ts_store_subscribe(store, NULL, log_listener, "1", &t1));
    CHECK_OK(ts_store_subscribe(store, NULL, log_listener, "2", &t2));
    CHECK_OK(ts_store_subscribe(store, NULL, log_listener, "3", &t3));
    CHECK_STR(call_log, ""); /* not called at subscribe */
    CHECK(t1 != t2 && t2 != t3 && t1 != t3);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STR(call_log, "123");
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"noop\"}"));
    CHECK_STR(call_log, "123123");

    /* The listener gets its store and ctx. */
    store_check sc = {store, NULL, 0, 0};
    sc.expected_ctx = &sc;
    uint64_t t4;
    CHECK_OK(ts_store_subscribe(store, NULL, checking_listener, &sc, &t4));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(sc.calls, 1);
    CHECK_INT(sc.ok, 1);
    CHECK_OK(ts_store_unsubscribe(store, t4));

    /* Argument errors: nothing written, nothing subscribed. */
    uint64_t token = 4242;
    int never = 0;
    CHECK_ST(ts_store_subscribe(NULL, NULL, count_listener, &never, &token), TS_E_ARGUMENT);
    CHECK_ST(ts_store_subscribe(store, NULL, NULL, &never, &token), TS_E_ARGUMENT);
    CHECK_ST(ts_store_subscribe(store, NULL, count_listener, &never, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_subscribe(store, "count", count_listener, &never, &token), TS_E_ARGUMENT);
    CHECK_ST(ts_store_subscribe(store, "/a~2", count_listener, &never, &token), TS_E_ARGUMENT);
    CHECK_ST(ts_store_subscribe(store, "/\xff", count_listener, &never, &token), TS_E_ARGUMENT);
    CHECK_INT(token, 4242);
    CHECK_ST(ts_store_unsubscribe(NULL, t1), TS_E_ARGUMENT);
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(never, 0);
    CHECK_STR(call_log, "123");
    ts_store_destroy(store);
}

static void test_unsubscribe(void) {
    ts_store *store = new_store(NULL);
    uint64_t t1, t2, t3;
    log_reset();
    CHECK_OK(ts_store_subscribe(store, NULL, log_listener, "1", &t1));
    CHECK_OK(ts_store_subscribe(store, NULL, log_listener, "2", &t2));
    CHECK_OK(ts_store_subscribe(store, NULL, log_listener, "3", &t3));
    CHECK_OK(ts_store_unsubscribe(store, t2));
    CHECK_OK(ts_store_unsubscribe(store, t2)); /* idempotent */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"a\"}"));
    CHECK_STR(call_log, "13");

    /* Unknown tokens are fine and remove nothing. */
    uint64_t max = t1 > t3 ? t1 : t3;
    CHECK_OK(ts_store_unsubscribe(store, 0));
    CHECK_OK(ts_store_unsubscribe(store, max + 1));
    CHECK_OK(ts_store_unsubscribe(store, max + 1000));
    CHECK_OK(ts_store_unsubscribe(store, UINT64_MAX));
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"a\"}"));
    CHECK_STR(call_log, "13");

    /* Tokens are never reused: a new subscription gets a new token, and
     * unsubscribing the old one again does not end the new one. */
    uint64_t t4;
    CHECK_OK(ts_store_subscribe(store, NULL, log_listener, "4", &t4));
    CHECK(t4 != t1 && t4 != t2 && t4 != t3);
    CHECK_OK(ts_store_unsubscribe(store, t2));
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"a\"}"));
    CHECK_STR(call_log, "134");
    uint64_t seen[64];
    size_t nseen = 0;
    seen[nseen++] = t1;
    seen[nseen++] = t2;
    seen[nseen++] = t3;
    seen[nseen++] = t4;
    int distinct = 1;
    for (int i = 0; i < 40; i++) {
        uint64_t t;
        CHECK_OK(ts_store_subscribe(store, NULL, log_listener, "x", &t));
        for (size_t k = 0; k < nseen; k++)
            if (seen[k] == t) distinct = 0;
        seen[nseen++] = t;
        CHECK_OK(ts_store_unsubscribe(store, t));
    }
    CHECK(distinct);
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"a\"}"));
    CHECK_STR(call_log, "134");

    /* The same fn and ctx twice: two independent subscriptions. */
    int twice = 0;
    uint64_t ta, tb;
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &twice, &ta));
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &twice, &tb));
    CHECK(ta != tb);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"a\"}"));
    CHECK_INT(twice, 2);
    CHECK_OK(ts_store_unsubscribe(store, ta));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"a\"}"));
    CHECK_INT(twice, 3);
    CHECK_OK(ts_store_unsubscribe(store, tb));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"a\"}"));
    CHECK_INT(twice, 3);

    /* Many subscriptions come and go (compaction keeps the order). */
    uint64_t many[100];
    int hits[100];
    memset(hits, 0, sizeof hits);
    for (int i = 0; i < 100; i++) CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &hits[i], &many[i]));
    for (int i = 0; i < 100; i++)
        if (i % 3 != 0) CHECK_OK(ts_store_unsubscribe(store, many[i]));
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"a\"}"));
    CHECK_STR(call_log, "134");
    int right = 1;
    for (int i = 0; i < 100; i++)
        if (hits[i] != (i % 3 == 0)) right = 0;
    CHECK(right);
    for (int i = 0; i < 100; i += 3) CHECK_OK(ts_store_unsubscribe(store, many[i]));
    ts_store_destroy(store);
}

/* L1 unsubscribes L2 and subscribes LN during the first dispatch. */
typedef struct snapshot_ctx {
    ts_store *store;
    uint64_t victim;
    uint64_t added;
    int done;
    ts_status unsub_status, sub_status;
} snapshot_ctx;

static snapshot_ctx snap;

static void snapshot_first(ts_store *store, void *ctx) {
    (void)ctx;
    log_add("1");
    if (!snap.done) {
        snap.done = 1;
        snap.unsub_status = ts_store_unsubscribe(store, snap.victim);
        snap.sub_status = ts_store_subscribe(store, NULL, log_listener, "N", &snap.added);
    }
}

static uint64_t self_token;
static void self_unsubscribing(ts_store *store, void *ctx) {
    log_add(ctx);
    ts_store_unsubscribe(store, self_token);
}

static void test_listener_snapshot(void) {
    ts_store *store = new_store(NULL);
    memset(&snap, 0, sizeof snap);
    snap.store = store;
    uint64_t t1;
    CHECK_OK(ts_store_subscribe(store, NULL, snapshot_first, NULL, &t1));
    CHECK_OK(ts_store_subscribe(store, NULL, log_listener, "2", &snap.victim));
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"a\"}"));
    CHECK_OK(snap.unsub_status);
    CHECK_OK(snap.sub_status);
    CHECK_STR(call_log, "12"); /* 2 still called, N not yet */
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"a\"}"));
    CHECK_STR(call_log, "1N"); /* 2 gone, N called */

    /* A listener that ends its own subscription: the others still run. */
    CHECK_OK(ts_store_subscribe(store, NULL, self_unsubscribing, "S", &self_token));
    CHECK_OK(ts_store_subscribe(store, NULL, log_listener, "L", &t1));
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"a\"}"));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"a\"}"));
    CHECK_STR(call_log, "1NSL1NL");
    ts_store_destroy(store);
}

/* L_A dispatches again (once) from inside; L_B records. */
typedef struct nest_ctx {
    ts_store *store;
    int dispatched;
    ts_status nested_status;
} nest_ctx;

static void nest_a(ts_store *store, void *ctx) {
    nest_ctx *c = ctx;
    char buf[32];
    snprintf(buf, sizeof buf, "A%lld ", count_of(store, "/count"));
    log_add(buf);
    if (!c->dispatched) {
        c->dispatched = 1;
        c->nested_status = ts_store_dispatch(store, "{\"type\":\"inc\"}");
        log_add("| ");
    }
}

static void nest_b(ts_store *store, void *ctx) {
    (void)ctx;
    char buf[32];
    snprintf(buf, sizeof buf, "B%lld ", count_of(store, "/count"));
    log_add(buf);
}

static void test_listener_nested_dispatch(void) {
    ts_store *store = new_store(NULL);
    rstat st = {0};
    st.log = "R ";
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    nest_ctx c = {store, 0, 12345};
    uint64_t ta, tb;
    CHECK_OK(ts_store_subscribe(store, NULL, nest_a, &c, &ta));
    CHECK_OK(ts_store_subscribe(store, NULL, nest_b, &c, &tb));
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    log_add("done");
    CHECK_OK(c.nested_status);
    /* The nested dispatch runs at once with all listeners; then the outer one
     * finishes, its remaining listener seeing the newest state. */
    CHECK_STR(call_log, "R A1 R A2 B2 | B2 done");
    CHECK_STATE(store, "/count", "2");
    ts_store_destroy(store);
    rstat_free(&st);
}

/* Todos: "todo/add" appends the payload, "todo/remove" drops the first,
 * "todo/rename" sets the first's title to the payload, "todo/same" returns
 * the same text, "todo/same_ws" the same value reformatted. */
static char *todos_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    if (slice == NULL) return xstrdup("[]");
    size_t n = strlen(slice);
    if (strcmp(a->type, "todo/add") == 0 && a->payload) {
        if (n == 2) return xprintf("[%s]", a->payload);
        return xprintf("%.*s,%s]", (int)(n - 1), slice, a->payload);
    }
    if (strcmp(a->type, "todo/remove") == 0) {
        if (n == 2) return NULL;
        /* Items are flat objects: the first ends at the first '}'. */
        const char *end = strchr(slice, '}');
        if (end[1] == ']') return xstrdup("[]");
        return xprintf("[%s", end + 2);
    }
    if (strcmp(a->type, "todo/rename") == 0 && a->payload && n > 2) {
        const char *end = strchr(slice, '}');
        return xprintf("[{\"title\":%s}%s", a->payload, end + 1);
    }
    if (strcmp(a->type, "todo/same") == 0) return xstrdup(slice);
    if (strcmp(a->type, "todo/same_ws") == 0) return xprintf("  %s\n", slice);
    return NULL;
}

typedef struct pointer_counts {
    int count, title, whole, all, later, todos;
} pointer_counts;

static void test_pointer_listeners(void) {
    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    CHECK_OK(ts_store_add_reducer(store, "todos", todos_reducer, NULL));
    CHECK_OK(ts_store_add_reducer(store, "broken", breaking_reducer, NULL));
    pointer_counts n;
    memset(&n, 0, sizeof n);
    uint64_t t[6];
    CHECK_OK(ts_store_subscribe(store, "/count", count_listener, &n.count, &t[0]));
    CHECK_OK(ts_store_subscribe(store, "/todos/0/title", count_listener, &n.title, &t[1]));
    CHECK_OK(ts_store_subscribe(store, "", count_listener, &n.whole, &t[2]));
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &n.all, &t[3]));
    CHECK_OK(ts_store_subscribe(store, "/later", count_listener, &n.later, &t[4]));
    CHECK_OK(ts_store_subscribe(store, "/todos", count_listener, &n.todos, &t[5]));
#define EXPECT_COUNTS(c, ti, w, a, l, to)  \
    do {                                   \
        CHECK_INT(n.count, c);             \
        CHECK_INT(n.title, ti);            \
        CHECK_INT(n.whole, w);             \
        CHECK_INT(n.all, a);               \
        CHECK_INT(n.later, l);             \
        CHECK_INT(n.todos, to);            \
    } while (0)
    EXPECT_COUNTS(0, 0, 0, 0, 0, 0); /* none at subscribe */

    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    EXPECT_COUNTS(1, 0, 1, 1, 0, 0);
    /* Identical text for a slice: no pointer listener runs. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"count/same\"}"));
    EXPECT_COUNTS(1, 0, 1, 2, 0, 0);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"count/same_ws\"}"));
    EXPECT_COUNTS(1, 0, 1, 3, 0, 0);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"todo/same\"}"));
    EXPECT_COUNTS(1, 0, 1, 4, 0, 0);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"todo/same_ws\"}"));
    EXPECT_COUNTS(1, 0, 1, 5, 0, 0);
    /* Nothing changed at all. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"noop\"}"));
    EXPECT_COUNTS(1, 0, 1, 6, 0, 0);
    /* The title appears. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"todo/add\",\"payload\":{\"title\":\"x\"}}"));
    EXPECT_COUNTS(1, 1, 2, 7, 0, 1);
    /* A change elsewhere in the array: the first title is still "x". */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"todo/add\",\"payload\":{\"title\":\"y\"}}"));
    EXPECT_COUNTS(1, 1, 3, 8, 0, 2);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"todo/rename\",\"payload\":\"z\"}"));
    EXPECT_COUNTS(1, 2, 4, 9, 0, 3);
    /* Same title again (a new slice, same value at the pointer). */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"todo/rename\",\"payload\":\"z\"}"));
    EXPECT_COUNTS(1, 2, 4, 10, 0, 3);
    CHECK_STATE(store, "/todos", "[{\"title\":\"z\"},{\"title\":\"y\"}]");
    /* The first is removed: the title changes to "y", then disappears. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"todo/remove\"}"));
    EXPECT_COUNTS(1, 3, 5, 11, 0, 4);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"todo/remove\"}"));
    EXPECT_COUNTS(1, 4, 6, 12, 0, 5);
    CHECK_STATE(store, "/todos", "[]");
    /* Still missing: no change. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"todo/remove\"}"));
    EXPECT_COUNTS(1, 4, 6, 13, 0, 5);
    /* A change of another key. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"add\",\"payload\":0}"));
    EXPECT_COUNTS(1, 4, 6, 14, 0, 5);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"add\",\"payload\":2}"));
    EXPECT_COUNTS(2, 4, 7, 15, 0, 5);

    /* Refused or failed dispatches call nobody, not even NULL-pointer listeners. */
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"break\"}"), TS_E_REDUCER);
    CHECK_ST(ts_store_dispatch(store, "{\"type\":"), TS_E_JSON);
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"\"}"), TS_E_NOT_ACTION);
    EXPECT_COUNTS(2, 4, 7, 15, 0, 5);

    /* A top-level key that appears (added without notification): the
     * pointer listener runs at the next dispatch, once. */
    CHECK_OK(ts_store_add_reducer(store, "later", const_init_reducer, "{\"v\":1}"));
    EXPECT_COUNTS(2, 4, 7, 15, 0, 5);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"noop\"}"));
    EXPECT_COUNTS(2, 4, 8, 16, 1, 5);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"noop\"}"));
    EXPECT_COUNTS(2, 4, 8, 17, 1, 5);

    /* Unsubscribed pointer listeners stay quiet. */
    for (int i = 0; i < 6; i++) CHECK_OK(ts_store_unsubscribe(store, t[i]));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    EXPECT_COUNTS(2, 4, 8, 17, 1, 5);
#undef EXPECT_COUNTS
    ts_store_destroy(store);
}

/* A pointer listener subscribed while the value differs from what it was
 * when the listener last ran is measured from its subscription. */
static void test_pointer_listener_baseline(void) {
    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    int n = 0;
    uint64_t t;
    CHECK_OK(ts_store_subscribe(store, "/count", count_listener, &n, &t));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"noop\"}"));
    CHECK_INT(n, 0); /* value at subscribe is the baseline */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(n, 1);
    /* Change and change back between dispatches is seen per dispatch. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"add\",\"payload\":-1}"));
    CHECK_INT(n, 2);
    /* A pointer to a key that never exists never fires. */
    int never = 0;
    uint64_t t2;
    CHECK_OK(ts_store_subscribe(store, "/nothing/here", count_listener, &never, &t2));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(never, 0);
    ts_store_destroy(store);
}

/* Listeners run on the thread that dispatches. */
typedef struct thread_seen {
    pthread_t thread;
    int calls;
} thread_seen;

static void thread_recording_listener(ts_store *store, void *ctx) {
    (void)store;
    thread_seen *s = ctx;
    s->thread = pthread_self();
    s->calls++;
}

static void *dispatch_once_thread(void *arg) {
    ts_store *store = arg;
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    return NULL;
}

static void test_listener_thread(void) {
    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    thread_seen seen;
    memset(&seen, 0, sizeof seen);
    uint64_t t;
    CHECK_OK(ts_store_subscribe(store, NULL, thread_recording_listener, &seen, &t));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(seen.calls, 1);
    CHECK(pthread_equal(seen.thread, pthread_self()));
    pthread_t other;
    CHECK(pthread_create(&other, NULL, dispatch_once_thread, store) == 0);
    pthread_join(other, NULL);
    CHECK_INT(seen.calls, 2);
    CHECK(pthread_equal(seen.thread, other));
    CHECK(!pthread_equal(seen.thread, pthread_self()));
    ts_store_destroy(store);
}

/* ---- Middleware --------------------------------------------------------- */

typedef struct mw_ctx {
    const char *name;    /* logged on each run */
    int runs;
    char types[512];     /* the types it saw, space-separated */
    ts_next_fn nexts[8]; /* the `next` of each run (first 8) */
    const ts_store_api *api;
    ts_status next_status;
    uint32_t struct_size;
} mw_ctx;

static void mw_record(mw_ctx *c, const ts_store_api *api, ts_next_fn next, const ts_action *a) {
    if (c->runs < 8) c->nexts[c->runs] = next;
    c->runs++;
    c->api = api;
    c->struct_size = api->struct_size;
    size_t n = strlen(c->types);
    snprintf(c->types + n, sizeof c->types - n, "%s%s", n ? " " : "", a->type);
    if (c->name) log_add(c->name);
}

static ts_status mw_pass(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    mw_ctx *c = ctx;
    mw_record(c, api, next, a);
    c->next_status = next(a->json);
    return c->next_status;
}

static void test_middleware_order(void) {
    ts_store *store = new_store(NULL);
    rstat st = {0};
    st.log = "R";
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    int notified = 0;
    uint64_t t;
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &t));
    /* Same fn, different ctx: both run, the first added first. */
    mw_ctx m1, m2, m3;
    memset(&m1, 0, sizeof m1);
    memset(&m2, 0, sizeof m2);
    memset(&m3, 0, sizeof m3);
    m1.name = "1";
    m2.name = "2";
    m3.name = "3";
    CHECK_OK(ts_store_add_middleware(store, "one", mw_pass, &m1));
    CHECK_OK(ts_store_add_middleware(store, "two", mw_pass, &m2));
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STR(call_log, "12R12R");
    CHECK_INT(m1.struct_size, sizeof(ts_store_api));
    CHECK_OK(m1.next_status);
    /* Added after some dispatches: runs from then on, last. */
    CHECK_OK(ts_store_add_middleware(store, "three", mw_pass, &m3));
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STR(call_log, "123R");
    CHECK_STATE(store, "/count", "3");
    CHECK_INT(notified, 3);
    CHECK_INT(m3.runs, 1);
    /* Argument errors. */
    CHECK_ST(ts_store_add_middleware(NULL, "x", mw_pass, &m3), TS_E_ARGUMENT);
    CHECK_ST(ts_store_add_middleware(store, NULL, mw_pass, &m3), TS_E_ARGUMENT);
    CHECK_ST(ts_store_add_middleware(store, "x", NULL, &m3), TS_E_ARGUMENT);
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STR(call_log, "123R");
    ts_store_destroy(store);
    rstat_free(&st);
}

/* A middleware that, on "grow", adds another middleware (ctx) and passes on. */
typedef struct grow_ctx {
    ts_store *store;
    mw_ctx added;
    ts_status add_status;
    int done;
} grow_ctx;

static ts_status mw_grow(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    grow_ctx *g = ctx;
    (void)api;
    log_add("G");
    if (!g->done && strcmp(a->type, "grow") == 0) {
        g->done = 1;
        g->add_status = ts_store_add_middleware(g->store, "added", mw_pass, &g->added);
    }
    return next(a->json);
}

/* Added during a dispatch: that dispatch finishes with its chain, the next
 * one runs the new middleware. */
static void test_middleware_added_during_dispatch(void) {
    ts_store *store = new_store(NULL);
    rstat st = {0};
    st.log = "R";
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    grow_ctx g;
    memset(&g, 0, sizeof g);
    g.store = store;
    g.added.name = "A";
    CHECK_OK(ts_store_add_middleware(store, "grow", mw_grow, &g));
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"grow\"}"));
    CHECK_OK(g.add_status);
    CHECK_STR(call_log, "GR");
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STR(call_log, "GAR");
    CHECK_INT(g.added.runs, 1);
    CHECK_STATE(store, "/count", "1");
    ts_store_destroy(store);
    rstat_free(&st);
}

/* Middleware sees the same parsed view as reducers. */
static void test_middleware_action_view(void) {
    ts_store *store = new_store(NULL);
    mw_ctx m;
    memset(&m, 0, sizeof m);
    CHECK_OK(ts_store_add_middleware(store, "view", mw_pass, &m));
    rstat st = {0};
    CHECK_OK(ts_store_add_reducer(store, "r", payload_reducer, &st));
    const char *text = "{ \"type\":\"a\\/b\", \"payload\" : [ 1 ] }";
    CHECK_OK(ts_store_dispatch(store, text));
    CHECK_STR(m.types, "a/b");
    CHECK_STR(st.last_type, "a/b");
    CHECK_STR(st.last_payload, "[1]");
    CHECK_STR(st.last_json, text); /* passed on unchanged */
    ts_store_destroy(store);
    rstat_free(&st);
}

/* Changes "double" into {"type":"add","payload":5}; "garbage" into invalid
 * JSON, "notaction" into a non-action, "nullnext" calls next(NULL). */
static ts_status mw_change(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    mw_ctx *c = ctx;
    mw_record(c, api, next, a);
    if (strcmp(a->type, "double") == 0) {
        char text[64];
        snprintf(text, sizeof text, "{\"type\":\"add\",\"payload\":%d}", 5);
        c->next_status = next(text);
    } else if (strcmp(a->type, "garbage") == 0) {
        c->next_status = next("{\"type\":");
    } else if (strcmp(a->type, "notaction") == 0) {
        c->next_status = next("[1]");
    } else if (strcmp(a->type, "nullnext") == 0) {
        c->next_status = next(NULL);
    } else {
        c->next_status = next(a->json);
    }
    return c->next_status;
}

static void test_middleware_change_action(void) {
    /* The first middleware changes it: the second and the reducers see the new one. */
    ts_store *store = new_store(NULL);
    rstat st = {0};
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    mw_ctx changer, after;
    memset(&changer, 0, sizeof changer);
    memset(&after, 0, sizeof after);
    CHECK_OK(ts_store_add_middleware(store, "changer", mw_change, &changer));
    CHECK_OK(ts_store_add_middleware(store, "after", mw_pass, &after));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"double\"}"));
    CHECK_STR(changer.types, "double");
    CHECK_STR(after.types, "add");
    CHECK_STR(st.last_type, "add");
    CHECK_STR(st.last_payload, "5");
    CHECK_STR(st.last_json, "{\"type\":\"add\",\"payload\":5}");
    CHECK_STATE(store, "/count", "5");
    ts_store_destroy(store);
    rstat_free(&st);

    /* The last middleware changes it. */
    store = new_store(NULL);
    memset(&st, 0, sizeof st);
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    memset(&changer, 0, sizeof changer);
    memset(&after, 0, sizeof after);
    CHECK_OK(ts_store_add_middleware(store, "first", mw_pass, &after));
    CHECK_OK(ts_store_add_middleware(store, "changer", mw_change, &changer));
    int notified = 0;
    uint64_t t;
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &t));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"double\"}"));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"double\"}"));
    CHECK_STR(st.last_type, "add");
    CHECK_STATE(store, "/count", "10");
    CHECK_INT(notified, 2);

    /* Invalid replacements: next reports the error, the dispatch fails. */
    char *before = state_of(store, NULL);
    int calls = st.calls;
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"garbage\"}"), TS_E_JSON);
    CHECK_ST(changer.next_status, TS_E_JSON);
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"notaction\"}"), TS_E_NOT_ACTION);
    CHECK_ST(changer.next_status, TS_E_NOT_ACTION);
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"nullnext\"}"), TS_E_ARGUMENT);
    CHECK_ST(changer.next_status, TS_E_ARGUMENT);
    CHECK_INT(st.calls, calls);
    CHECK_INT(notified, 2);
    CHECK_STATE(store, NULL, before);
    ts_free(before);
    ts_store_destroy(store);
    rstat_free(&st);
}

/* Swallows "secret"; refuses "bad" with a reason, "bad2" without one,
 * "bad3" with TS_E_NOT_FOUND, "bad4" with a custom status -100. */
static ts_status mw_gate(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    mw_ctx *c = ctx;
    mw_record(c, api, next, a);
    if (strcmp(a->type, "secret") == 0) return TS_OK;
    if (strcmp(a->type, "bad") == 0) return api->fail(TS_E_REJECTED, "\"title\" is required");
    if (strcmp(a->type, "bad2") == 0) return TS_E_REJECTED;
    if (strcmp(a->type, "bad3") == 0) return api->fail(TS_E_NOT_FOUND, "no such todo");
    if (strcmp(a->type, "bad4") == 0) return api->fail(-100, "custom status");
    return next(a->json);
}

static void test_middleware_swallow_and_refuse(void) {
    ts_store *store = new_store(NULL);
    rstat st = {0};
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    mw_ctx gate, later;
    memset(&gate, 0, sizeof gate);
    memset(&later, 0, sizeof later);
    CHECK_OK(ts_store_add_middleware(store, "gate", mw_gate, &gate));
    CHECK_OK(ts_store_add_middleware(store, "later", mw_pass, &later));
    int notified = 0, pointer_notified = 0;
    uint64_t t1, t2;
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &t1));
    CHECK_OK(ts_store_subscribe(store, "/count", count_listener, &pointer_notified, &t2));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    int calls = st.calls;

    /* Swallowed: TS_OK, no reducer, no listener, no later middleware. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"secret\"}"));
    CHECK_INT(st.calls, calls);
    CHECK_INT(notified, 1);
    CHECK_INT(later.runs, 1);

    /* Refused with a reason. */
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"bad\"}"), TS_E_REJECTED);
    CHECK_CONTAINS(ts_last_error(), "\"title\" is required");
    char *saved = xstrdup(ts_last_error());
    /* Refused without one: the old reason does not come back. */
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"bad2\"}"), TS_E_REJECTED);
    CHECK(ts_last_error()[0] != '\0');
    CHECK(strstr(ts_last_error(), "\"title\" is required") == NULL);
    free(saved);
    /* Another status is passed through as it is. */
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"bad3\"}"), TS_E_NOT_FOUND);
    CHECK_CONTAINS(ts_last_error(), "no such todo");
    /* "whatever status a middleware returned": also one the header does not name. */
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"bad4\"}"), -100);
    CHECK_CONTAINS(ts_last_error(), "custom status");

    CHECK_INT(st.calls, calls);
    CHECK_INT(notified, 1);
    CHECK_INT(pointer_notified, 1);
    CHECK_INT(later.runs, 1);
    CHECK_STATE(store, NULL, "{\"count\":1}");

    /* A swallowed action that comes after a refused one still returns TS_OK. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"secret\"}"));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(notified, 2);
    CHECK_STATE(store, NULL, "{\"count\":2}");
    ts_store_destroy(store);
    rstat_free(&st);
}

/* The rest of the chain refuses: the outer middleware passes that status back. */
static void test_middleware_next_error(void) {
    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    CHECK_OK(ts_store_add_reducer(store, "broken", breaking_reducer, NULL));
    mw_ctx outer, gate;
    memset(&outer, 0, sizeof outer);
    memset(&gate, 0, sizeof gate);
    CHECK_OK(ts_store_add_middleware(store, "outer", mw_pass, &outer));
    int notified = 0;
    uint64_t t;
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &t));

    /* A reducer fails behind next. */
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"break\"}"), TS_E_REDUCER);
    CHECK_ST(outer.next_status, TS_E_REDUCER);
    CHECK_CONTAINS(ts_last_error(), "broken");
    CHECK_INT(notified, 0);

    /* A later middleware refuses behind next. */
    CHECK_OK(ts_store_add_middleware(store, "gate", mw_gate, &gate));
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"bad\"}"), TS_E_REJECTED);
    CHECK_ST(outer.next_status, TS_E_REJECTED);
    CHECK_CONTAINS(ts_last_error(), "\"title\" is required");
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"break\"}"), TS_E_REDUCER);
    CHECK_ST(outer.next_status, TS_E_REDUCER);
    CHECK_CONTAINS(ts_last_error(), "broken");
    /* A swallow behind next is TS_OK. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"secret\"}"));
    CHECK_OK(outer.next_status);
    CHECK_INT(notified, 0);
    CHECK_STATE(store, NULL, "{\"count\":0,\"broken\":{}}");
    ts_store_destroy(store);
}

/* On "outer": dispatches "inner" through the table, reads the state, passes on. */
typedef struct top_ctx {
    mw_ctx rec;
    char inner_message[512]; /* ts_last_error() after a failed api->dispatch */
    ts_status inner_status;
    ts_status get_status;
    char *count_in_mw;
    ts_status get_null_out_status;
} top_ctx;

static ts_status mw_dispatching(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    top_ctx *c = ctx;
    mw_record(&c->rec, api, next, a);
    if (strcmp(a->type, "outer") == 0) {
        c->inner_status = api->dispatch("{\"type\":\"inner\"}");
        char *out = NULL;
        c->get_status = api->get_state("/count", &out);
        free(c->count_in_mw);
        c->count_in_mw = out ? xstrdup(out) : NULL;
        api->free(out);
        c->get_null_out_status = api->get_state("/count", NULL);
    }
    if (strcmp(a->type, "outer_bad") == 0) {
        /* A nested dispatch fails: report its status as this action's. */
        c->inner_status = api->dispatch("{\"type\":\"inner\",\"payload\":[1,}");
        snprintf(c->inner_message, sizeof c->inner_message, "%s", ts_last_error());
        return c->inner_status;
    }
    return next(a->json);
}

/* A reducer that counts "inner" and "outer" into {"inner":n,"outer":m}-ish text. */
static char *inner_outer_reducer(const char *slice, const ts_action *a, void *ctx) {
    rstat_record(ctx, slice, a);
    if (slice == NULL) return xstrdup("0");
    if (strcmp(a->type, "inner") == 0 || strcmp(a->type, "outer") == 0)
        return xprintf("%lld", strtoll(slice, NULL, 10) + 1);
    return NULL;
}

static void test_middleware_dispatch_from_top(void) {
    ts_store *store = new_store(NULL);
    rstat st = {0};
    st.log = "R";
    CHECK_OK(ts_store_add_reducer(store, "count", inner_outer_reducer, &st));
    mw_ctx first;
    memset(&first, 0, sizeof first);
    first.name = "1";
    top_ctx second;
    memset(&second, 0, sizeof second);
    second.rec.name = "2";
    CHECK_OK(ts_store_add_middleware(store, "first", mw_pass, &first));
    CHECK_OK(ts_store_add_middleware(store, "second", mw_dispatching, &second));
    int notified = 0;
    uint64_t t;
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &t));
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"outer\"}"));
    CHECK_OK(second.inner_status);
    /* Each middleware saw each action once; the inner one went through the
     * whole chain (from the top) first. */
    CHECK_STR(first.types, "outer inner");
    CHECK_STR(second.rec.types, "outer inner");
    CHECK_STR(call_log, "1212RR");
    CHECK_STR(st.last_type, "outer");
    CHECK_OK(second.get_status);
    CHECK_STR(second.count_in_mw, "1"); /* after the inner dispatch */
    CHECK_ST(second.get_null_out_status, TS_E_ARGUMENT);
    CHECK_STATE(store, "/count", "2");
    CHECK_INT(notified, 2);
    CHECK_INT(second.rec.struct_size, sizeof(ts_store_api));

    /* A failed nested dispatch whose status the middleware returns. */
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"outer_bad\"}"), TS_E_JSON);
    CHECK_ST(second.inner_status, TS_E_JSON);
    CHECK(second.inner_message[0] != '\0');
    CHECK_CONTAINS(ts_last_error(), second.inner_message); /* the fault, not "no reason given" */
    CHECK_STATE(store, "/count", "2");
    CHECK_INT(notified, 2);
    ts_store_destroy(store);
    free(second.count_in_mw);
    rstat_free(&st);
}

static void test_middleware_next_stable(void) {
    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    mw_ctx a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    CHECK_OK(ts_store_add_middleware(store, "a", mw_pass, &a));
    for (int i = 0; i < 3; i++) CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK(a.nexts[0] != NULL);
    CHECK(a.nexts[0] == a.nexts[1]);
    CHECK(a.nexts[1] == a.nexts[2]);
    /* The chain changes; from then on the new `next`s are stable again. */
    CHECK_OK(ts_store_add_middleware(store, "b", mw_pass, &b));
    for (int i = 0; i < 3; i++) CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK(a.nexts[3] != NULL && a.nexts[3] == a.nexts[4] && a.nexts[4] == a.nexts[5]);
    CHECK(b.nexts[0] != NULL && b.nexts[0] == b.nexts[1] && b.nexts[1] == b.nexts[2]);
    CHECK(a.nexts[3] != b.nexts[0]);
    /* The table stays the same too. */
    const ts_store_api *api = a.api;
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK(a.api == api && b.api == api);
    CHECK_STATE(store, "/count", "7");
    ts_store_destroy(store);
}

/* ---- next misuse --------------------------------------------------------- */

typedef struct misuse_ctx {
    ts_next_fn kept;          /* next, kept past its run() */
    ts_status first, second;  /* the statuses of two calls of next in one run() */
    int nest;                 /* dispatch "inc" from inside run() before calling next */
    ts_store *store;
} misuse_ctx;

static ts_status mw_next_twice(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    (void)api;
    misuse_ctx *c = ctx;
    c->first = next(a->json);
    c->second = next(a->json);
    return c->first;
}

static ts_status mw_keep_next(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    misuse_ctx *c = ctx;
    c->kept = next;
    if (c->nest && strcmp(a->type, "outer") == 0) {
        /* The nested dispatch runs this middleware again with the same next:
         * its run() and this one each call next once, which is allowed. */
        c->second = api->dispatch("{\"type\":\"inc\"}");
    }
    return next(a->json);
}

static void *call_kept_next(void *arg) {
    misuse_ctx *c = arg;
    c->second = c->kept("{\"type\":\"inc\"}");
    return NULL;
}

static void test_next_misuse(void) {
    /* Twice in one run(): the second call is refused and applies nothing. */
    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    misuse_ctx c;
    memset(&c, 0, sizeof c);
    int notified = 0;
    uint64_t token;
    CHECK_OK(ts_store_add_middleware(store, "twice", mw_next_twice, &c));
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &token));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_OK(c.first);
    CHECK_ST(c.second, TS_E_MISUSE);
    CHECK_CONTAINS(ts_last_error(), "next was called twice");
    CHECK_STATE(store, "/count", "1");
    CHECK_INT(notified, 1);
    ts_store_destroy(store);

    /* Kept past its run(), called on the same thread or another: refused,
     * nothing applied, no listener called. */
    store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    memset(&c, 0, sizeof c);
    notified = 0;
    CHECK_OK(ts_store_add_middleware(store, "keeper", mw_keep_next, &c));
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &token));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK(c.kept != NULL);
    CHECK_ST(c.kept("{\"type\":\"inc\"}"), TS_E_MISUSE);
    CHECK_CONTAINS(ts_last_error(), "after the run() it was given to returned");
    pthread_t thread;
    c.second = 12345;
    CHECK_INT(pthread_create(&thread, NULL, call_kept_next, &c), 0);
    pthread_join(thread, NULL);
    CHECK_ST(c.second, TS_E_MISUSE);
    CHECK_STATE(store, "/count", "1");
    CHECK_INT(notified, 1);
    /* The store works on, and a nested run() through the same place has its
     * own once-only next. */
    c.nest = 1;
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"outer\"}"));
    CHECK_OK(c.second);
    CHECK_STATE(store, "/count", "2");
    /* A kept next of a store that is closing: refused the same way. */
    ts_store_destroy(store);
}

/* ts_store_subscribe writes the token before any listener can run: a
 * listener that a dispatch on another thread calls at once reads it. */
typedef struct token_slot {
    uint64_t token; /* written by ts_store_subscribe */
    int zero_seen;  /* calls that found no token yet */
} token_slot;

typedef struct token_race {
    ts_store *store;
    volatile int stop;
} token_race;

static void *token_dispatcher(void *arg) {
    token_race *r = arg;
    while (!r->stop) ts_store_dispatch(r->store, "{\"type\":\"inc\"}");
    return NULL;
}

static void token_reading_listener(ts_store *store, void *ctx) {
    token_slot *slot = ctx;
    uint64_t token = __atomic_load_n(&slot->token, __ATOMIC_SEQ_CST);
    if (token == 0) slot->zero_seen++;
    else ts_store_unsubscribe(store, token);
}

static void test_subscribe_token_before_listener(void) {
    token_race r;
    memset(&r, 0, sizeof r);
    r.store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(r.store, "count", counter_reducer, NULL));
    int rounds = quick ? 200 : 2000, zero_seen = 0;
    token_slot *slots = calloc((size_t)rounds, sizeof *slots);
    pthread_t thread;
    CHECK_INT(pthread_create(&thread, NULL, token_dispatcher, &r), 0);
    for (int i = 0; i < rounds; i++) {
        CHECK_OK(ts_store_subscribe(r.store, NULL, token_reading_listener, &slots[i], &slots[i].token));
    }
    r.stop = 1;
    pthread_join(thread, NULL);
    ts_store_destroy(r.store);
    for (int i = 0; i < rounds; i++) zero_seen += slots[i].zero_seen;
    CHECK_INT(zero_seen, 0);
    free(slots);
}

/* Out of memory where the library allocates: TS_E_NOMEM (not TS_E_REDUCER),
 * and the state is unchanged. In a child process with an address-space
 * limit that leaves room for the reducer's output but not for checking it. */
#define OOM_BIG (200u << 20)
static char *big_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    if (slice == NULL) return xstrdup("0");
    if (strcmp(a->type, "big") != 0) return NULL;
    char *out = malloc(OOM_BIG + 3);
    if (out == NULL) return NULL;
    out[0] = '"';
    memset(out + 1, 'a', OOM_BIG);
    out[OOM_BIG + 1] = '"';
    out[OOM_BIG + 2] = '\0';
    return out;
}

static long vm_size_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (f == NULL) return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %ld", &kb) == 1) break;
    fclose(f);
    return kb;
}

static void test_out_of_memory_is_nomem(void) {
    if (quick) return; /* valgrind keeps its own address space */
    fflush(NULL);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        ts_store *store = NULL;
        int result = 0;
        if (ts_store_create(NULL, &store) != TS_OK) _exit(10);
        if (ts_store_add_reducer(store, "big", big_reducer, NULL) != TS_OK) _exit(11);
        if (ts_store_dispatch(store, "{\"type\":\"warm\"}") != TS_OK) _exit(12);
        long kb = vm_size_kb();
        if (kb < 0) _exit(13);
        struct rlimit limit;
        limit.rlim_cur = limit.rlim_max = (rlim_t)kb * 1024u + OOM_BIG + (100u << 20);
        if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(14);
        ts_status status = ts_store_dispatch(store, "{\"type\":\"big\"}");
        if (status != TS_E_NOMEM) result |= 1;
        if (strstr(ts_last_error(), "no memory") == NULL) result |= 2;
        char *out = NULL;
        if (ts_store_get_state(store, "/big", &out) != TS_OK || strcmp(out, "0") != 0) result |= 4;
        ts_free(out);
        _exit(result);
    }
    int wstatus = 0;
    CHECK(waitpid(child, &wstatus, 0) == child);
    CHECK(WIFEXITED(wstatus));
    CHECK_INT(WEXITSTATUS(wstatus), 0);
}

/* Keys and JSON Pointer tokens are byte strings, as in every JSON parser:
 * "é" as U+00E9 and as e + U+0301 are two keys (Swift's String would call
 * them equal), and a token may start with a combining mark. */
static void test_keys_are_bytes(void) {
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

/* Messages name what the header promises: the key of ts_store_add_reducer. */
static void test_add_reducer_null_fn_names_key(void) {
    ts_store *store = new_store(NULL);
    CHECK_ST(ts_store_add_reducer(store, "todos", NULL, NULL), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "fn is NULL");
    CHECK_CONTAINS(ts_last_error(), "\"todos\"");
    ts_store_destroy(store);
}

/* On "restore": replace_state(payload), swallow. On "restore_bad": replace
 * with the payload's "text" string is not possible in C simply, so the
 * tests pass fixed texts by type. */
typedef struct restore_ctx {
    const ts_store_api *api;
    ts_status status;
    const char *text;  /* what to replace with on "restore_text" */
    char message[512]; /* ts_last_error() right after a failed replace_state */
} restore_ctx;

static ts_status mw_restore(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    restore_ctx *c = ctx;
    c->api = api;
    if (strcmp(a->type, "restore") == 0) {
        c->status = api->replace_state(a->payload);
        return c->status;
    }
    if (strcmp(a->type, "restore_text") == 0) {
        c->status = api->replace_state(c->text);
        snprintf(c->message, sizeof c->message, "%s", c->status == TS_OK ? "" : ts_last_error());
        return c->status;
    }
    return next(a->json);
}

/* Returns NULL at init when *(int *)ctx is set. */
static char *flaky_init_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)a;
    if (slice == NULL) return *(int *)ctx ? NULL : xstrdup("\"fresh\"");
    return NULL;
}

static void test_replace_state(void) {
    ts_store *store = new_store(NULL);
    rstat st = {0};
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    CHECK_OK(ts_store_add_reducer(store, "todos", todos_reducer, NULL));
    restore_ctx rc;
    memset(&rc, 0, sizeof rc);
    CHECK_OK(ts_store_add_middleware(store, "restore", mw_restore, &rc));
    int notified = 0, count_changed = 0, todos_changed = 0;
    uint64_t t1, t2, t3;
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &t1));
    CHECK_OK(ts_store_subscribe(store, "/count", count_listener, &count_changed, &t2));
    CHECK_OK(ts_store_subscribe(store, "/todos", count_listener, &todos_changed, &t3));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"todo/add\",\"payload\":{\"title\":\"t\"}}"));
    CHECK_INT(notified, 1);
    CHECK_INT(todos_changed, 1);
    int calls = st.calls;

    /* "todos" is missing: its reducer gives the first value. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"restore\",\"payload\":{ \"count\" : 42, \"extra\" : [true] }}"));
    CHECK_OK(rc.status);
    CHECK_STATE(store, NULL, "{\"count\":42,\"extra\":[true],\"todos\":[]}");
    CHECK_INT(notified, 2);
    CHECK_INT(count_changed, 1);
    CHECK_INT(todos_changed, 2);
    CHECK_INT(st.calls, calls); /* count was present: its reducer did not run */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STATE(store, "/count", "43");
    CHECK_INT(notified, 3);

    /* Invalid replacements: nothing changes, nobody is told. */
    char *before = state_of(store, NULL);
    const char *bad[] = {"{\"count\":", "[]", "1", "null", "{\"a\":1,\"a\":2}", "{\"a\":\"\xff\"}", "{} x", "",
                         "{\"a\":{\"b\":[{\"c\":1,\"c\":2}]}}", "{\"count\":{\"x\":1,\"\\u0078\":1}}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        rc.text = bad[i];
        CHECK_ST(ts_store_dispatch(store, "{\"type\":\"restore_text\"}"), TS_E_JSON);
        CHECK_ST(rc.status, TS_E_JSON);
        CHECK_STATE(store, NULL, before);
    }
    rc.text = NULL;
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"restore_text\"}"), TS_E_ARGUMENT);
    CHECK_ST(rc.status, TS_E_ARGUMENT);
    CHECK_STATE(store, NULL, before);
    CHECK_INT(notified, 3);

    /* A reducer that cannot give a first value: TS_E_REDUCER, nothing changes. */
    int refuse = 0;
    CHECK_OK(ts_store_add_reducer(store, "flaky", flaky_init_reducer, &refuse));
    ts_free(before);
    before = state_of(store, NULL);
    refuse = 1;
    rc.text = "{\"count\":1}";
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"restore_text\"}"), TS_E_REDUCER);
    CHECK_CONTAINS(rc.message, "flaky"); /* replace_state's own message names the key */
    /* The middleware returned replace_state's status: the dispatcher's
     * message must still describe the fault, not "no reason given". */
    CHECK_CONTAINS(ts_last_error(), "flaky");
    CHECK_STATE(store, NULL, before);
    CHECK_INT(notified, 3);
    refuse = 0;
    ts_free(before);

    /* The table outlives the middleware call: replace and dispatch from outside. */
    const ts_store_api *api = rc.api;
    CHECK(api != NULL);
    CHECK_OK(api->replace_state("{\"count\":7,\"todos\":[],\"flaky\":\"x\"}"));
    CHECK_STATE(store, NULL, "{\"count\":7,\"todos\":[],\"flaky\":\"x\"}");
    CHECK_INT(notified, 4);
    CHECK_OK(api->dispatch("{\"type\":\"inc\"}"));
    CHECK_STATE(store, "/count", "8");
    CHECK_INT(notified, 5);
    char *out = NULL;
    CHECK_OK(api->get_state("", &out));
    CHECK_STR(out, "{\"count\":8,\"todos\":[],\"flaky\":\"x\"}");
    api->free(out);
    /* Same state again is still a replacement: listeners are called, pointer
     * listeners only if their value changed. */
    int c_before = count_changed, t_before = todos_changed;
    CHECK_OK(api->replace_state("{\"count\":8,\"todos\":[],\"flaky\":\"x\"}"));
    CHECK_INT(notified, 6);
    CHECK_INT(count_changed, c_before);
    CHECK_INT(todos_changed, t_before);
    ts_store_destroy(store);
    rstat_free(&st);
}

/* ---- Threads ------------------------------------------------------------ */

static pthread_key_t worker_key;

typedef struct worker {
    ts_store *store;
    const ts_store_api *api; /* dispatch through this kept table instead, if set */
    int dispatches;
    int failures;
    int own_listener_calls; /* listener calls on this thread */
    pthread_t self;
    int wrong_thread;
} worker;

static int stress_listener_calls;   /* under the store's lock */
static int stress_pointer_calls;
static int stress_foreign_calls;

static void stress_listener(ts_store *store, void *ctx) {
    (void)store;
    (void)ctx;
    stress_listener_calls++;
    worker *w = pthread_getspecific(worker_key);
    if (w == NULL) {
        stress_foreign_calls++;
        return;
    }
    w->own_listener_calls++;
    if (!pthread_equal(w->self, pthread_self())) w->wrong_thread++;
}

static void stress_pointer_listener(ts_store *store, void *ctx) {
    (void)store;
    (void)ctx;
    stress_pointer_calls++;
}

static void *worker_main(void *arg) {
    worker *w = arg;
    w->self = pthread_self();
    pthread_setspecific(worker_key, w);
    for (int i = 0; i < w->dispatches; i++) {
        ts_status st = w->api ? w->api->dispatch("{\"type\":\"inc\"}") : ts_store_dispatch(w->store, "{\"type\":\"inc\"}");
        if (st != TS_OK) w->failures++;
    }
    pthread_setspecific(worker_key, NULL);
    return NULL;
}

typedef struct churn {
    ts_store *store;
    int rounds;
    int failures;
    uint64_t *tokens;
    int calls;
} churn;

static void churn_listener(ts_store *store, void *ctx) {
    (void)store;
    ++((churn *)ctx)->calls;
}

static void *churn_main(void *arg) {
    churn *c = arg;
    for (int i = 0; i < c->rounds; i++) {
        uint64_t token;
        ts_status st = ts_store_subscribe(c->store, i % 2 ? "/count" : NULL, churn_listener, c, &token);
        if (st != TS_OK) {
            c->failures++;
            continue;
        }
        c->tokens[i] = token;
        if (ts_store_unsubscribe(c->store, token) != TS_OK) c->failures++;
    }
    return NULL;
}

typedef struct reader {
    ts_store *store;
    int rounds;
    int failures;
    int went_back;
    long long last;
    long long max;
} reader;

static void *reader_main(void *arg) {
    reader *r = arg;
    for (int i = 0; i < r->rounds; i++) {
        char *out = NULL;
        if (ts_store_get_state(r->store, i % 2 ? "/count" : NULL, &out) != TS_OK || out == NULL) {
            r->failures++;
            continue;
        }
        const char *digits = out[0] == '{' ? strchr(out, ':') + 1 : out;
        long long n = strtoll(digits, NULL, 10);
        if (n < r->last) r->went_back++;
        if (n < 0 || n > r->max) r->failures++;
        r->last = n;
        ts_free(out);
    }
    return NULL;
}

static int compare_tokens(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_threads(void) {
    /* Four threads dispatch with ts_store_dispatch, a fifth through the
     * ts_store_api table that the middleware kept. */
    enum { WORKERS = 5 };
    const int per_thread = quick ? 500 : 20000;
    const int churn_rounds = quick ? 500 : 20000;
    const int reader_rounds = quick ? 500 : 20000;
    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    mw_ctx pass;
    memset(&pass, 0, sizeof pass);
    CHECK_OK(ts_store_add_middleware(store, "pass", mw_pass, &pass));
    stress_listener_calls = stress_pointer_calls = stress_foreign_calls = 0;
    uint64_t t1, t2;
    CHECK_OK(ts_store_subscribe(store, NULL, stress_listener, NULL, &t1));
    CHECK_OK(ts_store_subscribe(store, "/count", stress_pointer_listener, NULL, &t2));
    CHECK(pthread_key_create(&worker_key, NULL) == 0);
    /* One dispatch first, so that the middleware has seen the table. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK(pass.api != NULL);

    worker workers[WORKERS];
    pthread_t threads[WORKERS];
    churn ch;
    memset(&ch, 0, sizeof ch);
    ch.store = store;
    ch.rounds = churn_rounds;
    ch.tokens = calloc((size_t)churn_rounds, sizeof(uint64_t));
    reader rd;
    memset(&rd, 0, sizeof rd);
    rd.store = store;
    rd.rounds = reader_rounds;
    rd.max = (long long)WORKERS * per_thread + 1;
    pthread_t churn_thread, reader_thread;
    CHECK(pthread_create(&churn_thread, NULL, churn_main, &ch) == 0);
    CHECK(pthread_create(&reader_thread, NULL, reader_main, &rd) == 0);
    for (int i = 0; i < WORKERS; i++) {
        memset(&workers[i], 0, sizeof workers[i]);
        workers[i].store = store;
        workers[i].dispatches = per_thread;
        if (i == WORKERS - 1) workers[i].api = pass.api;
        CHECK(pthread_create(&threads[i], NULL, worker_main, &workers[i]) == 0);
    }
    for (int i = 0; i < WORKERS; i++) pthread_join(threads[i], NULL);
    pthread_join(churn_thread, NULL);
    pthread_join(reader_thread, NULL);

    const int total = WORKERS * per_thread + 1;
    char want[32];
    snprintf(want, sizeof want, "%d", total);
    CHECK_STATE(store, "/count", want);
    CHECK_INT(stress_listener_calls, total);
    CHECK_INT(stress_pointer_calls, total);
    CHECK_INT(pass.runs, total);
    CHECK_INT(stress_foreign_calls, 1); /* the first dispatch, from this thread */
    for (int i = 0; i < WORKERS; i++) {
        CHECK_INT(workers[i].failures, 0);
        CHECK_INT(workers[i].own_listener_calls, per_thread); /* on the dispatching thread */
        CHECK_INT(workers[i].wrong_thread, 0);
    }
    CHECK_INT(ch.failures, 0);
    CHECK_INT(rd.failures, 0);
    CHECK_INT(rd.went_back, 0);
    /* Tokens are never reused, also under churn. */
    qsort(ch.tokens, (size_t)churn_rounds, sizeof(uint64_t), compare_tokens);
    int duplicates = 0;
    for (int i = 1; i < churn_rounds; i++)
        if (ch.tokens[i] == ch.tokens[i - 1]) duplicates++;
    CHECK_INT(duplicates, 0);
    for (int i = 0; i < churn_rounds; i++)
        if (ch.tokens[i] == t1 || ch.tokens[i] == t2) duplicates++;
    CHECK_INT(duplicates, 0);
    free(ch.tokens);
    pthread_key_delete(worker_key);
    ts_store_destroy(store);
}

/* ---- Destroying from inside callbacks ------------------------------------ */

typedef struct destroy_ctx {
    int destroyed;
    int after_calls;
    ts_status after_status;
    char *after_text;
    int when_count; /* destroy when /count has this value */
} destroy_ctx;

static void destroying_listener(ts_store *store, void *ctx) {
    destroy_ctx *c = ctx;
    if (!c->destroyed && count_of(store, "/count") == c->when_count) {
        c->destroyed = 1;
        ts_store_destroy(store);
    }
}

static void after_destroy_listener(ts_store *store, void *ctx) {
    destroy_ctx *c = ctx;
    c->after_calls++;
    char *out = NULL;
    c->after_status = ts_store_get_state(store, "/count", &out);
    free(c->after_text);
    c->after_text = out ? xstrdup(out) : NULL;
    ts_free(out);
}

static void nesting_listener(ts_store *store, void *ctx) {
    int *once = ctx;
    if (!*once) {
        *once = 1;
        ts_store_dispatch(store, "{\"type\":\"inc\"}");
    }
}

static ts_status mw_destroying(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    (void)api;
    ts_store_destroy(ctx);
    return next(a->json);
}

static void test_destroy_in_callbacks(void) {
    /* A listener destroys the store: the dispatch under way finishes (the
     * next listeners are still called), but the store is closed, so their
     * new calls into it answer TS_E_STORE_GONE. */
    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    destroy_ctx c;
    memset(&c, 0, sizeof c);
    c.when_count = 1;
    uint64_t t;
    int whole = 0;
    CHECK_OK(ts_store_subscribe(store, NULL, destroying_listener, &c, &t));
    CHECK_OK(ts_store_subscribe(store, "", count_listener, &whole, &t));
    CHECK_OK(ts_store_subscribe(store, "/count", after_destroy_listener, &c, &t));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(c.destroyed, 1);
    CHECK_INT(c.after_calls, 1);
    CHECK_INT(c.after_status, TS_E_STORE_GONE);
    CHECK(c.after_text == NULL);
    CHECK(strstr(ts_last_error(), "ts_store_get_state") != NULL);
    CHECK(strstr(ts_last_error(), "closed") != NULL);
    CHECK_INT(whole, 1);
    free(c.after_text);
    /* the store is gone now */

    /* Destroyed in a nested dispatch's listener: the outer dispatch finishes. */
    store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    memset(&c, 0, sizeof c);
    c.when_count = 2;
    int once = 0;
    CHECK_OK(ts_store_subscribe(store, NULL, nesting_listener, &once, &t));
    CHECK_OK(ts_store_subscribe(store, NULL, destroying_listener, &c, &t));
    CHECK_OK(ts_store_subscribe(store, NULL, after_destroy_listener, &c, &t));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(c.destroyed, 1);
    CHECK_INT(c.after_calls, 2); /* nested, then outer */
    CHECK_INT(c.after_status, TS_E_STORE_GONE);
    CHECK(c.after_text == NULL);
    free(c.after_text);

    /* A middleware destroys the store and passes the action on: next is the
     * rest of the dispatch under way, so the action is applied and the
     * listeners are called; their new calls are refused. */
    store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    CHECK_OK(ts_store_add_middleware(store, "destroyer", mw_destroying, store));
    memset(&c, 0, sizeof c);
    CHECK_OK(ts_store_subscribe(store, NULL, after_destroy_listener, &c, &t));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(c.after_calls, 1);
    CHECK_INT(c.after_status, TS_E_STORE_GONE);
    CHECK(c.after_text == NULL);
    free(c.after_text);
}

/* ---- Small stacks and deep JSON ----------------------------------------- */

typedef struct deep_result {
    ts_status create_status, ok_status, ok_inner_status, too_deep_status, very_deep_status, state_status,
        create_deep_status, create_too_deep_status;
    size_t state_length;
    int done;
} deep_result;

static void *small_stack_main(void *arg) {
    deep_result *r = arg;
    ts_store *store = NULL;
    r->create_status = ts_store_create(NULL, &store);
    if (r->create_status != TS_OK) return NULL;
    ts_store_add_reducer(store, "deep", payload_reducer, NULL);
    /* The action object is one level: the payload adds TS_MAX_DEPTH - 1. */
    char *ok = nested("{\"type\":\"store\",\"payload\":", TS_MAX_DEPTH - 1, "", "}");
    char *ok_inner = nested("{\"type\":\"store\",\"payload\":", TS_MAX_DEPTH - 1, "1", "}");
    char *too_deep = nested("{\"type\":\"store\",\"payload\":", TS_MAX_DEPTH, "", "}");
    char *very_deep = nested("{\"type\":\"store\",\"payload\":", 100000, "", "}");
    r->ok_status = ts_store_dispatch(store, ok);
    r->ok_inner_status = ts_store_dispatch(store, ok_inner);
    r->too_deep_status = ts_store_dispatch(store, too_deep);
    r->very_deep_status = ts_store_dispatch(store, very_deep);
    char *out = NULL;
    r->state_status = ts_store_get_state(store, NULL, &out); /* {"deep":[[...1...]]}: depth TS_MAX_DEPTH */
    r->state_length = out ? strlen(out) : 0;
    ts_free(out);
    ts_store_destroy(store);
    /* An initial state at the limit, and past it. */
    char *state_ok = nested("{\"a\":", TS_MAX_DEPTH - 1, "", "}");
    char *state_deep = nested("{\"a\":", TS_MAX_DEPTH, "", "}");
    store = NULL;
    r->create_deep_status = ts_store_create(state_ok, &store);
    ts_store_destroy(store);
    store = NULL;
    r->create_too_deep_status = ts_store_create(state_deep, &store);
    ts_store_destroy(store);
    free(ok);
    free(ok_inner);
    free(too_deep);
    free(very_deep);
    free(state_ok);
    free(state_deep);
    r->done = 1;
    return NULL;
}

static void test_small_stack(void) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    CHECK(pthread_attr_setstacksize(&attr, 128 * 1024) == 0);
    deep_result r;
    memset(&r, 0, sizeof r);
    pthread_t thread;
    CHECK(pthread_create(&thread, &attr, small_stack_main, &r) == 0);
    pthread_join(thread, NULL);
    pthread_attr_destroy(&attr);
    CHECK_INT(r.done, 1);
    CHECK_OK(r.create_status);
    CHECK_OK(r.ok_status);
    CHECK_OK(r.ok_inner_status);
    CHECK_ST(r.too_deep_status, TS_E_JSON);
    CHECK_ST(r.very_deep_status, TS_E_JSON);
    CHECK_OK(r.state_status);
    CHECK_INT(r.state_length, strlen("{\"deep\":}") + 2 * (TS_MAX_DEPTH - 1) + 1);
    CHECK_OK(r.create_deep_status);
    CHECK_ST(r.create_too_deep_status, TS_E_JSON);
}

/* ---- Main --------------------------------------------------------------- */

/* ---- JSON text in keys, pointers and reducer results -------------------- */

/* Owns its key; returns a copy of *(const char **)ctx at init and for "set". */
static char *text_reducer(const char *slice, const ts_action *a, void *ctx) {
    if (slice != NULL && strcmp(a->type, "set") != 0) return NULL;
    return xstrdup(*(const char **)ctx);
}

/* True if s is well-formed UTF-8 (no cut sequence at the end). */
static int is_utf8(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2 : (*p & 0xF8) == 0xF0 ? 3 : -1;
        if (n < 0) return 0;
        p++;
        while (n-- > 0) {
            if ((*p & 0xC0) != 0x80) return 0;
            p++;
        }
    }
    return 1;
}

/* Keys written with escapes (\uXXXX of 2, 3 and 4 UTF-8 bytes, surrogate
 * pairs, \t \n \" \\ \/) are found by pointers that spell them unescaped. */
static void test_escaped_keys(void) {
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

/* What a reducer returns is checked as JSON before it is applied: escapes
 * and surrogate pairs, numbers (the fast path for scalars), nesting. */
static void test_reducer_results(void) {
    static const char *const good[][2] = {
        {"\"\\u20ac\\ud83d\\ude00\\n\\/\"", "\"\\u20ac\\ud83d\\ude00\\n\\/\""},
        {"1.25", "1.25"},
        {"-0.5e+10", "-0.5e+10"},
        {"2E-3", "2E-3"},
        {"123e4", "123e4"},
        {"-0", "-0"},
        {" 7 ", "7"},
    };
    static const char *const bad[][2] = {
        {"\"\\ud83d\\uZZZZ\"", "\\u"},    /* the low half is not hex */
        {"\"\\ud83d\"", "surrogate"},      /* a high half alone */
        {"\"\\ud83dx\"", "surrogate"},     /* a high half, then no \u */
        {"\"\\ud83d\\u0041\"", "surrogate"}, /* a high half, then no low half */
        {"\"\\udc00\"", "surrogate"},      /* a low half alone */
        {"\"\\u12\"", "\\u"},              /* too few hex digits */
        {"1.", "number"},
        {"1e", "number"},
        {"1.e5", "number"},
        {"-", "number"},
        {"01", NULL},
        /* Valid escapes before the fault: the precise message walks them. */
        {"[\"\\u20ac\\ud83d\\ude00\\n\", }", "at byte 25, found"},
        /* Every escape, exponents with signs, 3- and 4-byte UTF-8, then a fault. */
        {"{\"a\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\uABCD\",\"b\":1.5e+3,\"c\":-2E-2,"
         "\"d\":\"\xee\x80\x80\xef\xbf\xbd\xf1\x80\x80\x80\xf3\xbf\xbf\xbf\",x}", "expected"},
        {"{\"a\" 1}", "':'"},
        {"[1e+]", "number"},
    };
    const char *next = "0";
    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "v", text_reducer, &next));
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        next = good[i][0];
        CHECK_OK(ts_store_dispatch(store, "{\"type\":\"set\"}"));
        CHECK_STATE(store, "/v", good[i][1]);
    }
    CHECK_STATE(store, "", "{\"v\":7}");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        next = bad[i][0];
        CHECK_ST(ts_store_dispatch(store, "{\"type\":\"set\"}"), TS_E_REDUCER);
        if (bad[i][1] != NULL) CHECK_CONTAINS(ts_last_error(), bad[i][1]);
        CHECK_STATE(store, "/v", "7");
    }
    ts_store_destroy(store);
}

/* A top-level value may be TS_MAX_DEPTH - 1 deep (the state object is one
 * more level); a reducer that returns a deeper one fails the dispatch.
 * Brackets and quotes inside strings do not count. */
static void test_slice_depth(void) {
    const char *inner = "\"]]}{[\\\"[\"";
    const char *next = "0";
    size_t deepest = TS_MAX_DEPTH - 1;
    char *ok = malloc(2 * TS_MAX_DEPTH + 32), *deep = malloc(2 * TS_MAX_DEPTH + 32);
    if (ok == NULL || deep == NULL) abort();
    for (size_t i = 0; i < deepest; i++) ok[i] = '[';
    strcpy(ok + deepest, inner);
    for (size_t i = 0, at = deepest + strlen(inner); i < deepest; i++) ok[at + i] = ']';
    ok[2 * deepest + strlen(inner)] = '\0';
    deep[0] = '[';
    strcpy(deep + 1, ok);
    strcat(deep, "]");

    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "v", text_reducer, &next));
    next = ok;
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"set\"}"));
    char *whole = NULL;
    CHECK_OK(ts_store_get_state(store, NULL, &whole));
    CHECK(whole != NULL && strlen(whole) == strlen(ok) + 6);
    ts_free(whole);
    next = deep;
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"set\"}"), TS_E_REDUCER);
    CHECK_CONTAINS(ts_last_error(), "deep");
    CHECK_STATE(store, "/v", ok);
    ts_store_destroy(store);
    free(ok);
    free(deep);
}

/* A message that quotes long text is cut to fit, never in the middle of a
 * UTF-8 character. */
static void test_long_messages(void) {
    ts_store *store = new_store("{\"k\":{\"a\":{\"b\":1}}}");
    char pointer[1024] = "/k/a/";
    for (int i = 0; i < 200; i++) strcat(pointer, "\xc3\xa9");
    char *out = sentinel_text;
    CHECK_ST(ts_store_get_state(store, pointer, &out), TS_E_NOT_FOUND);
    CHECK(out == sentinel_text);
    CHECK(is_utf8(ts_last_error()));
    CHECK_CONTAINS(ts_last_error(), "\xc3\xa9\xc3\xa9");
    for (size_t cut = 0; cut < 4; cut++) {
        char key[700] = "/k/";
        for (int i = 0; i < 150; i++) strcat(key, "\xe2\x82\xac");
        for (size_t i = 0; i < cut; i++) strcat(key, "x");
        CHECK_ST(ts_store_get_state(store, key, &out), TS_E_NOT_FOUND);
        CHECK(is_utf8(ts_last_error()));
    }
    ts_store_destroy(store);
}

/* Paths and configs of plugins must be UTF-8, like keys. */
static void test_plugin_arguments(void) {
    ts_store *store = new_store(NULL);
    CHECK_ST(ts_store_load_plugin(store, "/nonexistent/\xff.so", NULL), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "UTF-8");
    CHECK_ST(ts_store_load_plugin(store, "/nonexistent/x.so", "{\"a\":\"\xff\"}"), TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "UTF-8");
    CHECK_ST(ts_store_load_plugins(store, "/nonexistent/\xff"), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "UTF-8");
    CHECK_ST(ts_store_load_plugins(NULL, "/tmp"), TS_E_ARGUMENT);
    CHECK_ST(ts_store_load_plugin(store, "/nonexistent/x.so", NULL), TS_E_NOT_FOUND);
    ts_store_destroy(store);
}

/* A middleware that refuses with the message in ctx (may be NULL). */
static ts_status refuse_with(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    (void)next;
    (void)a;
    return api->fail(TS_E_REJECTED, (const char *)ctx);
}

/* Messages longer than the library keeps (a refusal's, a failure's) are cut
 * at a UTF-8 character boundary; a NULL refusal message is allowed. */
static void test_long_refusals(void) {
    char *message = malloc(3 * 4096 + 1), *key = malloc(3 * 1500 + 1);
    if (message == NULL || key == NULL) abort();
    message[0] = '\0';
    for (int i = 0; i < 4096; i++) strcat(message, "\xe2\x82\xac");
    key[0] = '\0';
    for (int i = 0; i < 1500; i++) strcat(key, "\xe2\x82\xac");

    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_middleware(store, "refuse", refuse_with, message));
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"x\"}"), TS_E_REJECTED);
    CHECK(is_utf8(ts_last_error()));
    CHECK(strlen(ts_last_error()) < strlen(message));
    CHECK_CONTAINS(ts_last_error(), "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac");
    ts_store_destroy(store);

    store = new_store(NULL);
    CHECK_OK(ts_store_add_middleware(store, "refuse", refuse_with, NULL));
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"x\"}"), TS_E_REJECTED);
    CHECK(is_utf8(ts_last_error()));
    ts_store_destroy(store);

    /* A failure message that quotes a 4500-byte key. */
    store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, key, counter_reducer, NULL));
    CHECK_ST(ts_store_add_reducer(store, key, counter_reducer, NULL), TS_E_ARGUMENT);
    CHECK(is_utf8(ts_last_error()));
    CHECK_CONTAINS(ts_last_error(), "ts_store_add_reducer");
    ts_store_destroy(store);
    free(message);
    free(key);
}

#define RUN(test)                                 \
    do {                                          \
        current_test = #test;                     \
        int failed_before_ = failed;              \
        test();                                   \
        if (failed != failed_before_)             \
            fprintf(stderr, "-- %s: %d failed\n", #test, failed - failed_before_); \
    } while (0)

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else {
            fprintf(stderr, "usage: %s [--quick]\n", argv[0]);
            return 2;
        }
    }
    /* Before anything failed on this thread. */
    current_test = "initial last error";
    CHECK_STR(ts_last_error(), "");

    RUN(test_versions);
    RUN(test_status_names);
    RUN(test_last_error);
    RUN(test_create);
    RUN(test_reducer_init);
    RUN(test_reducer_existing_key);
    RUN(test_reducer_init_fails);
    RUN(test_reducer_order);
    RUN(test_reducer_null_unchanged);
    RUN(test_dispatch_atomic);
    RUN(test_dispatch_atomic_two_reducers);
    RUN(test_dispatch_invalid);
    RUN(test_duplicate_keys);
    RUN(test_action_view);
    RUN(test_huge_payload);
    RUN(test_int64);
    RUN(test_get_state);
    RUN(test_reducer_reentrancy);
    RUN(test_reducer_reentrancy_at_init);
    RUN(test_reducer_uses_other_store);
    RUN(test_listeners_basic);
    RUN(test_unsubscribe);
    RUN(test_listener_snapshot);
    RUN(test_listener_nested_dispatch);
    RUN(test_pointer_listeners);
    RUN(test_pointer_listener_baseline);
    RUN(test_listener_thread);
    RUN(test_middleware_order);
    RUN(test_middleware_added_during_dispatch);
    RUN(test_middleware_action_view);
    RUN(test_middleware_change_action);
    RUN(test_middleware_swallow_and_refuse);
    RUN(test_middleware_next_error);
    RUN(test_middleware_dispatch_from_top);
    RUN(test_middleware_next_stable);
    RUN(test_replace_state);
    RUN(test_threads);
    RUN(test_destroy_in_callbacks);
    RUN(test_next_misuse);
    RUN(test_subscribe_token_before_listener);
    RUN(test_add_reducer_null_fn_names_key);
    RUN(test_out_of_memory_is_nomem);
    RUN(test_keys_are_bytes);
    RUN(test_small_stack);
    RUN(test_escaped_keys);
    RUN(test_reducer_results);
    RUN(test_slice_depth);
    RUN(test_long_messages);
    RUN(test_plugin_arguments);
    RUN(test_long_refusals);

    printf("%d passed, %d failed\n", passed, failed);
    return failed > 0 ? 1 : 0;
}
