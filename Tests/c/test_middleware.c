/*
 * test_middleware.c - C API tests: middleware: order, the action view,
 * changing, swallowing and refusing actions, next, plugin arguments.
 * Part of the C suite (check.h; `make test-c`; one test: build/tests/test_store -s TOPIC__RULE).
 */
#include "check.h"

void test_middleware__runsInTheOrderAdded(void) {
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
void test_middleware__addedDuringDispatchRunsFromTheNextOne(void) {
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
void test_middleware__seesTheSameParsedViewAsReducers(void) {
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

void test_middleware__changedActionReachesTheRestOfTheChain(void) {
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

void test_middleware__swallowedOrRefusedActionChangesNothing(void) {
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
void test_middleware__refusalOfTheRestOfTheChainIsPassedBack(void) {
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

void test_middleware__dispatchFromMiddlewareStartsAtTheTop(void) {
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

void test_middleware__nextIsTheSameFunctionEveryRun(void) {
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

void test_middleware__nextCalledTwiceIsRefusedAndAppliesNothing(void) {
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

/* A next kept from an earlier run() and called during a later run() of the
 * same middleware, on the same thread: while the chain is unchanged it is
 * the very function that run() was given, so it cannot be told from that
 * run's own next (turnstate.h, ts_next_fn). It acts as that run's next and
 * uses up its one call; outside any run() it is refused. */
typedef struct kept_ctx {
    ts_next_fn kept;                 /* the next of the first run() */
    int runs;
    ts_status kept_status, own_status; /* of the later run(): the kept next, then its own */
    char own_error[300];
} kept_ctx;

static ts_status mw_call_kept_next(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    (void)api;
    kept_ctx *c = ctx;
    if (c->runs++ == 0) {
        c->kept = next;
        return next(a->json);
    }
    c->kept_status = c->kept(a->json);
    c->own_status = next(a->json);
    snprintf(c->own_error, sizeof c->own_error, "%s", ts_last_error());
    return c->kept_status;
}

void test_middleware__nextKeptIntoALaterRunIsRefused(void) {
    ts_store *store = new_store(NULL);
    kept_ctx c;
    int notified = 0;
    uint64_t token;
    memset(&c, 0, sizeof c);
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, NULL));
    CHECK_OK(ts_store_add_middleware(store, "kept", mw_call_kept_next, &c));
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &token));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK(c.kept != NULL);
    /* Outside any run(): refused, nothing applied. */
    CHECK_ST(c.kept("{\"type\":\"inc\"}"), TS_E_MISUSE);
    CHECK_CONTAINS(ts_last_error(), "after the run() it was given to returned");
    CHECK_STATE(store, "/count", "1");
    /* Inside the second run(): the kept next passes that run's action on,
     * and the run's own next is then its second call. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_OK(c.kept_status);
    CHECK_ST(c.own_status, TS_E_MISUSE);
    CHECK_CONTAINS(c.own_error, "next was called twice for \"inc\"");
    CHECK_STATE(store, "/count", "2");
    CHECK_INT(notified, 2);
    /* And again: every later run() the same. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_OK(c.kept_status);
    CHECK_ST(c.own_status, TS_E_MISUSE);
    CHECK_STATE(store, "/count", "3");
    CHECK_INT(notified, 3);
    ts_store_destroy(store);
}

/* Paths and configs of plugins must be UTF-8, like keys. */
/* ts_store_api.apply: the reducers and listeners run, no middleware does. */
typedef struct apply_ctx {
    const ts_store_api *api;
    ts_store *store;
    ts_status inner;  /* what apply returned inside the reducer or listener */
    int destroyed;
} apply_ctx;

/* A reducer that calls apply from inside on "reenter" (which it must not). */
static char *applying_reducer(const char *slice, const ts_action *a, void *ctx) {
    apply_ctx *c = ctx;
    if (slice == NULL) return xstrdup("0");
    if (strcmp(a->type, "reenter") == 0 && c->api) c->inner = c->api->apply("{\"type\":\"inc\"}");
    return NULL;
}

/* A listener that destroys its store (from inside, so it only closes now)
 * and then calls apply on the closed store. */
static void destroying_listener(ts_store *store, void *ctx) {
    apply_ctx *c = ctx;
    if (c->destroyed) return;
    c->destroyed = 1;
    ts_store_destroy(store);
    c->inner = c->api->apply("{\"type\":\"inc\"}");
}

void test_middleware__storeApiApplyRunsTheReducersWithoutTheMiddleware(void) {
    ts_store *store = new_store(NULL);
    rstat st = {0};
    st.log = "R";
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    apply_ctx ac;
    memset(&ac, 0, sizeof ac);
    CHECK_OK(ts_store_add_reducer(store, "other", applying_reducer, &ac));
    mw_ctx m;
    memset(&m, 0, sizeof m);
    m.name = "M";
    CHECK_OK(ts_store_add_middleware(store, "recorder", mw_pass, &m));
    int notified = 0;
    uint64_t t;
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &t));
    log_reset();
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    const ts_store_api *api = m.api;
    CHECK(api != NULL);
    if (api == NULL) goto done;
    /* Appended in 0.2.0: the table says it has it. */
    CHECK(api->struct_size >= offsetof(ts_store_api, apply) + sizeof api->apply);
    CHECK(api->apply != NULL);
    log_reset();
    CHECK_OK(api->apply("{\"type\":\"add\",\"payload\":5}"));
    CHECK_STR(call_log, "R"); /* the reducer ran; the middleware did not */
    CHECK_INT(m.runs, 1);
    CHECK_STATE(store, "/count", "6");
    CHECK_INT(notified, 2);
    CHECK_STR(st.last_type, "add");
    /* Bad input: a status and a message; nothing changes. */
    CHECK_ST(api->apply(NULL), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "apply");
    CHECK_ST(api->apply("{\"type\":"), TS_E_JSON);
    CHECK_ST(api->apply("[1]"), TS_E_NOT_ACTION);
    /* A reducer's failure: atomic, no listener. */
    CHECK_OK(ts_store_add_reducer(store, "broken", breaking_reducer, NULL));
    CHECK_ST(api->apply("{\"type\":\"break\"}"), TS_E_REDUCER);
    CHECK_STATE(store, "/count", "6");
    CHECK_INT(notified, 2);
    /* From inside a reducer: refused, and the dispatch fails with it. */
    ac.api = api;
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"reenter\"}"), TS_E_REENTRANT);
    CHECK_ST(ac.inner, TS_E_REENTRANT);
    CHECK_STATE(store, "/count", "6");
    CHECK_INT(m.runs, 2);
    ac.api = NULL;
    /* On a closed store (destroyed from inside a listener): TS_E_STORE_GONE. */
    apply_ctx closer;
    memset(&closer, 0, sizeof closer);
    closer.api = api;
    CHECK_OK(ts_store_subscribe(store, NULL, destroying_listener, &closer, &t));
    CHECK_OK(api->apply("{\"type\":\"inc\"}"));
    CHECK_INT(closer.destroyed, 1);
    CHECK_ST(closer.inner, TS_E_STORE_GONE);
    rstat_free(&st);
    return; /* the store went when apply returned */
done:
    ts_store_destroy(store);
    rstat_free(&st);
}

/* ts_store_api.exclusive: fn runs with the store held, its status comes back. */
typedef struct exclusive_ctx {
    const ts_store_api *api;
    ts_store *store;
    int calls;
    ts_status inner;         /* what exclusive returned inside a reducer or on a closed store */
    char *seen_in_fn;        /* /count read inside fn, after the other thread started */
    pthread_t other;
    int destroyed;
} exclusive_ctx;

static ts_status exclusive_fn(void *ctx) {
    exclusive_ctx *c = ctx;
    c->calls++;
    /* Calls into the table nest. */
    if (c->api->apply("{\"type\":\"add\",\"payload\":10}") != TS_OK) return TS_E_PLUGIN;
    return TS_E_REJECTED; /* whatever fn returns comes back */
}

static void *exclusive_dispatcher(void *ctx) {
    exclusive_ctx *c = ctx;
    (void)ts_store_dispatch(c->store, "{\"type\":\"inc\"}");
    return NULL;
}

/* Starts a thread that dispatches, gives it time, and reads the state: the
 * dispatch must still be waiting for the store. */
static ts_status exclusive_holding_fn(void *ctx) {
    exclusive_ctx *c = ctx;
    struct timespec pause = {0, 50 * 1000 * 1000};
    c->calls++;
    if (pthread_create(&c->other, NULL, exclusive_dispatcher, c) != 0) return TS_E_PLUGIN;
    nanosleep(&pause, NULL);
    return c->api->get_state("/count", &c->seen_in_fn);
}

static ts_status exclusive_noop(void *ctx) {
    ((exclusive_ctx *)ctx)->calls++;
    return TS_OK;
}

static char *exclusive_reducer(const char *slice, const ts_action *a, void *ctx) {
    exclusive_ctx *c = ctx;
    if (slice == NULL) return xstrdup("0");
    if (strcmp(a->type, "reenter") == 0 && c->api) c->inner = c->api->exclusive(exclusive_noop, c);
    return NULL;
}

static void exclusive_destroying_listener(ts_store *store, void *ctx) {
    exclusive_ctx *c = ctx;
    if (c->destroyed) return;
    c->destroyed = 1;
    ts_store_destroy(store);
    c->inner = c->api->exclusive(exclusive_noop, c);
}

void test_middleware__storeApiCallsRunExclusivelyOfDispatch(void) {
    ts_store *store = new_store(NULL);
    rstat st = {0};
    st.log = "R";
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    exclusive_ctx xc;
    memset(&xc, 0, sizeof xc);
    CHECK_OK(ts_store_add_reducer(store, "other", exclusive_reducer, &xc));
    mw_ctx m;
    memset(&m, 0, sizeof m);
    m.name = "M";
    CHECK_OK(ts_store_add_middleware(store, "recorder", mw_pass, &m));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    const ts_store_api *api = m.api;
    CHECK(api != NULL);
    if (api == NULL) goto done;
    /* Appended in 0.2.0, after apply. */
    CHECK(api->struct_size >= offsetof(ts_store_api, exclusive) + sizeof api->exclusive);
    CHECK(offsetof(ts_store_api, exclusive) > offsetof(ts_store_api, apply));
    xc.api = api;
    xc.store = store;
    /* dispatch_after (after exclusive): only a plugin's own table has a
     * place in the chain; this one (ts_store_add_middleware's) refuses. */
    CHECK(api->struct_size >= offsetof(ts_store_api, dispatch_after) + sizeof api->dispatch_after);
    CHECK(offsetof(ts_store_api, dispatch_after) > offsetof(ts_store_api, exclusive));
    CHECK_ST(api->dispatch_after("{\"type\":\"inc\"}"), TS_E_MISUSE);
    CHECK_CONTAINS(ts_last_error(), "dispatch_after");
    CHECK_ST(api->dispatch_after(NULL), TS_E_ARGUMENT);
    CHECK_STATE(store, "/count", "1");
    /* fn's status comes back; the table's calls nest inside it. */
    CHECK_ST(api->exclusive(exclusive_fn, &xc), TS_E_REJECTED);
    CHECK_INT(xc.calls, 1);
    CHECK_STATE(store, "/count", "11");
    CHECK_ST(api->exclusive(NULL, &xc), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "exclusive");
    CHECK_INT(xc.calls, 1);
    /* Another thread's dispatch waits until fn returns. */
    CHECK_OK(api->exclusive(exclusive_holding_fn, &xc));
    pthread_join(xc.other, NULL);
    CHECK_STR(xc.seen_in_fn ? xc.seen_in_fn : "(none)", "11");
    free(xc.seen_in_fn);
    CHECK_STATE(store, "/count", "12");
    /* From inside a reducer: refused, fn not called. */
    xc.calls = 0;
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"reenter\"}"), TS_E_REENTRANT);
    CHECK_ST(xc.inner, TS_E_REENTRANT);
    CHECK_INT(xc.calls, 0);
    xc.api = NULL;
    /* On a closed store: TS_E_STORE_GONE, fn not called. */
    exclusive_ctx closer;
    memset(&closer, 0, sizeof closer);
    closer.api = api;
    uint64_t t;
    CHECK_OK(ts_store_subscribe(store, NULL, exclusive_destroying_listener, &closer, &t));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(closer.destroyed, 1);
    CHECK_ST(closer.inner, TS_E_STORE_GONE);
    CHECK_INT(closer.calls, 0);
    rstat_free(&st);
    return; /* the store went when the dispatch returned */
done:
    ts_store_destroy(store);
    rstat_free(&st);
}

void test_middleware__badPluginArgumentsAreRefusedWithAMessage(void) {
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

