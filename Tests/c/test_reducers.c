/*
 * test_reducers.c - C API tests: adding reducers, their init call, order,
 * results, re-entrancy, slice depth.
 * Part of the C suite (check.h; `make test-c`; one test: build/tests/test_store -s TOPIC__RULE).
 */
#include "check.h"

void test_reducers__newKeyGetsAnInitCall(void) {
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

void test_reducers__existingKeyGetsNoInitCall(void) {
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

void test_reducers__badInitResultIsRefusedAndAddsNothing(void) {
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

void test_reducers__reducersRunInTheOrderAdded(void) {
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

void test_reducers__nullResultLeavesTheSliceUnchanged(void) {
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

void test_reducers__reducerMayUseAnotherStore(void) {
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

void test_reducers__reentrantCallsAreRefused(void) {
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

void test_reducers__reentrantCallsAtInitAreRefused(void) {
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

/* What a reducer returns is checked as JSON before it is applied: escapes
 * and surrogate pairs, numbers (the fast path for scalars), nesting. */
void test_reducers__resultsAreCheckedAsJsonBeforeApplied(void) {
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
void test_reducers__sliceDeeperThanMaxDepthFailsTheDispatch(void) {
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

