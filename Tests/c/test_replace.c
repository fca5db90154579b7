/*
 * test_replace.c - C API tests: replacing and removing reducers
 * (ts_store_replace_reducer, ts_store_remove_reducer: the state is kept, the
 * action "@@turnstate/replace" reaches middleware, reducers and listeners,
 * atomic, refused from inside a reducer) and removing middleware
 * (ts_store_remove_middleware).
 * Part of the C suite (check.h; `make test-c`; one test: build/tests/test_store -s TOPIC__RULE).
 */
#include "check.h"

/* Adds 10 on "inc" (the hot-reloaded counter); 0 at init. */
static char *tens_reducer(const char *slice, const ts_action *a, void *ctx) {
    rstat_record(ctx, slice, a);
    if (slice == NULL) return xstrdup("0");
    if (strcmp(a->type, "inc") == 0) return xprintf("%lld", strtoll(slice, NULL, 10) + 10);
    /* Marks that it saw the replace action: "replaced" goes to 1000. */
    if (strcmp(a->type, TS_REPLACE_ACTION_TYPE) == 0 && strtoll(slice, NULL, 10) < 1000) return xstrdup("1000");
    return NULL;
}

/* Fails on the replace action, else as counter_reducer. */
static char *failing_on_replace(const char *slice, const ts_action *a, void *ctx) {
    if (strcmp(a->type, TS_REPLACE_ACTION_TYPE) == 0) {
        ts_reducer_fail("not ready");
        return NULL;
    }
    return counter_reducer(slice, a, ctx);
}

/* Refuses the action whose type is ctx's text. */
static ts_status mw_refuse_type(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    if (strcmp(a->type, ctx) == 0) return api->fail(TS_E_REJECTED, "no replacing now");
    return next(a->json);
}

void test_replace__replacedReducerKeepsTheStateAndSeesTheReplaceAction(void) {
    ts_store *store = new_store(NULL);
    rstat old = {0}, other = {0}, fresh = {0};
    mw_ctx m = {0};
    int notified = 0;
    uint64_t token;
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &old));
    CHECK_OK(ts_store_add_reducer(store, "other", counter_reducer, &other));
    CHECK_OK(ts_store_add_middleware(store, "seen", mw_pass, &m));
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &token));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STATE(store, NULL, "{\"count\":1,\"other\":1}");
    int old_calls = old.calls;

    /* Replaced: the state is kept (no init call), the replace action goes
     * through the middleware to every reducer (the new one included) and the
     * listeners. */
    CHECK_OK(ts_store_replace_reducer(store, "count", tens_reducer, &fresh));
    CHECK_INT(fresh.init_calls, 0);
    CHECK_INT(fresh.calls, 1);
    CHECK_STR(fresh.last_type, "@@turnstate/replace");
    CHECK_STR(fresh.last_json, "{\"type\":\"@@turnstate/replace\"}");
    CHECK_STR(other.last_type, "@@turnstate/replace");
    CHECK_CONTAINS(m.types, "@@turnstate/replace");
    CHECK_INT(old.calls, old_calls); /* the old reducer is not called again */
    CHECK_INT(notified, 2);
    CHECK_STATE(store, NULL, "{\"count\":1000,\"other\":1}");
    /* The key keeps its place in the order; the new reducer reduces. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STATE(store, NULL, "{\"count\":1010,\"other\":2}");
    CHECK_INT(old.calls, old_calls);

    /* Errors: nothing changes. */
    CHECK_ST(ts_store_replace_reducer(NULL, "count", counter_reducer, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_replace_reducer(store, NULL, counter_reducer, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_replace_reducer(store, "count", NULL, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_replace_reducer(store, "bad\xff", counter_reducer, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_replace_reducer(store, "missing", counter_reducer, NULL), TS_E_NOT_FOUND);
    CHECK_CONTAINS(ts_last_error(), "\"missing\" has no reducer");
    CHECK_INT(notified, 3);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STATE(store, NULL, "{\"count\":1020,\"other\":3}");

    ts_store_destroy(store);
    rstat_free(&old);
    rstat_free(&other);
    rstat_free(&fresh);
}

/* Atomic: a replace action that fails before the state changed puts the old
 * reducer back. */
void test_replace__failedReplacePutsTheOldReducerBack(void) {
    ts_store *store = new_store(NULL);
    rstat st = {0};
    int notified = 0;
    uint64_t token;
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &token));

    /* The new reducer fails on the replace action. */
    CHECK_ST(ts_store_replace_reducer(store, "count", failing_on_replace, NULL), TS_E_REDUCER);
    CHECK_CONTAINS(ts_last_error(), "not ready");
    CHECK_INT(notified, 0);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STATE(store, NULL, "{\"count\":1}");
    CHECK_INT(st.calls, 2); /* init, inc: the old one is back */

    /* A middleware refuses the replace action. */
    CHECK_OK(ts_store_add_middleware(store, "no-replace", mw_refuse_type, (void *)TS_REPLACE_ACTION_TYPE));
    rstat fresh = {0};
    CHECK_ST(ts_store_replace_reducer(store, "count", tens_reducer, &fresh), TS_E_REJECTED);
    CHECK_CONTAINS(ts_last_error(), "no replacing now");
    CHECK_ST(ts_store_remove_reducer(store, "count"), TS_E_REJECTED);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STATE(store, NULL, "{\"count\":2}");
    CHECK_INT(fresh.calls, 0);
    CHECK_INT(notified, 2); /* the two incs only */

    ts_store_destroy(store);
    rstat_free(&st);
    rstat_free(&fresh);
}

/* A reducer that calls replace/remove on its store (ctx) and records the statuses. */
typedef struct reentrant_ctx {
    ts_store *store;
    ts_status replace, remove, remove_mw;
} reentrant_ctx;

static char *calling_reducer(const char *slice, const ts_action *a, void *ctx) {
    reentrant_ctx *r = ctx;
    if (slice == NULL) return xstrdup("0");
    if (strcmp(a->type, "call") == 0) {
        r->replace = ts_store_replace_reducer(r->store, "count", counter_reducer, NULL);
        r->remove = ts_store_remove_reducer(r->store, "count");
        r->remove_mw = ts_store_remove_middleware(r->store, "seen");
    }
    return NULL;
}

void test_replace__replaceInsideAReducerIsRefused(void) {
    ts_store *store = new_store(NULL);
    reentrant_ctx r = {store, TS_OK, TS_OK, TS_OK};
    mw_ctx m = {0};
    CHECK_OK(ts_store_add_reducer(store, "count", calling_reducer, &r));
    CHECK_OK(ts_store_add_middleware(store, "seen", mw_pass, &m));
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"call\"}"), TS_E_REENTRANT);
    CHECK_INT(r.replace, TS_E_REENTRANT);
    CHECK_INT(r.remove, TS_E_REENTRANT);
    CHECK_INT(r.remove_mw, TS_E_REENTRANT);
    /* Nothing changed: the reducer and the middleware are still there. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"other\"}"));
    CHECK_INT(m.runs, 2);
    CHECK_OK(ts_store_remove_middleware(store, "seen"));
    CHECK_OK(ts_store_remove_reducer(store, "count"));
    ts_store_destroy(store);
}

void test_replace__removedReducerNoLongerRuns(void) {
    ts_store *store = new_store(NULL);
    rstat gone = {0}, stays = {0};
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &gone));
    CHECK_OK(ts_store_add_reducer(store, "other", counter_reducer, &stays));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    int gone_calls = gone.calls;

    /* The slice stays; the others see the replace action; the removed one is not called. */
    CHECK_OK(ts_store_remove_reducer(store, "count"));
    CHECK_STR(stays.last_type, "@@turnstate/replace");
    CHECK_INT(gone.calls, gone_calls);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STATE(store, NULL, "{\"count\":1,\"other\":2}");
    CHECK_INT(gone.calls, gone_calls);

    /* Gone: removing or replacing it again is TS_E_NOT_FOUND. */
    CHECK_ST(ts_store_remove_reducer(store, "count"), TS_E_NOT_FOUND);
    CHECK_CONTAINS(ts_last_error(), "\"count\" has no reducer");
    CHECK_ST(ts_store_replace_reducer(store, "count", counter_reducer, NULL), TS_E_NOT_FOUND);
    CHECK_ST(ts_store_remove_reducer(NULL, "count"), TS_E_ARGUMENT);
    CHECK_ST(ts_store_remove_reducer(store, NULL), TS_E_ARGUMENT);

    /* Added again: it finds its slice (no init call). */
    rstat again = {0};
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &again));
    CHECK_INT(again.init_calls, 0);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_STATE(store, NULL, "{\"count\":2,\"other\":3}");

    ts_store_destroy(store);
    rstat_free(&gone);
    rstat_free(&stays);
    rstat_free(&again);
}

/* A middleware that removes itself (by its name, ctx) on "leave". */
typedef struct leaving_ctx {
    ts_store *store;
    int runs;
    ts_status status;
} leaving_ctx;

static ts_status mw_leaving(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    (void)api;
    leaving_ctx *l = ctx;
    l->runs++;
    if (strcmp(a->type, "leave") == 0) l->status = ts_store_remove_middleware(l->store, "leaving");
    return next(a->json);
}

void test_replace__removedMiddlewareNoLongerRuns(void) {
    ts_store *store = new_store(NULL);
    rstat st = {0};
    mw_ctx a = {0}, b = {0}, x1 = {0}, x2 = {0};
    CHECK_OK(ts_store_add_reducer(store, "count", counter_reducer, &st));
    CHECK_OK(ts_store_add_middleware(store, "a", mw_pass, &a));
    CHECK_OK(ts_store_add_middleware(store, "b", mw_pass, &b));
    CHECK_OK(ts_store_remove_middleware(store, "a"));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(a.runs, 0);
    CHECK_INT(b.runs, 1);
    CHECK_STATE(store, "/count", "1");
    CHECK_ST(ts_store_remove_middleware(store, "a"), TS_E_NOT_FOUND);
    CHECK_CONTAINS(ts_last_error(), "no middleware named \"a\"");

    /* Two under one name: the newest goes first. */
    CHECK_OK(ts_store_add_middleware(store, "x", mw_pass, &x1));
    CHECK_OK(ts_store_add_middleware(store, "x", mw_pass, &x2));
    CHECK_OK(ts_store_remove_middleware(store, "x"));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(x1.runs, 1);
    CHECK_INT(x2.runs, 0);
    CHECK_OK(ts_store_remove_middleware(store, "x"));
    CHECK_ST(ts_store_remove_middleware(store, "x"), TS_E_NOT_FOUND);

    /* Removed from inside its own run: that dispatch finishes, the next does not run it. */
    leaving_ctx l = {store, 0, TS_E_ARGUMENT};
    CHECK_OK(ts_store_add_middleware(store, "leaving", mw_leaving, &l));
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"leave\"}"));
    CHECK_INT(l.status, TS_OK);
    CHECK_INT(l.runs, 1);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"inc\"}"));
    CHECK_INT(l.runs, 1);
    CHECK_STATE(store, "/count", "3");

    CHECK_ST(ts_store_remove_middleware(NULL, "b"), TS_E_ARGUMENT);
    CHECK_ST(ts_store_remove_middleware(store, NULL), TS_E_ARGUMENT);
    ts_store_destroy(store);
    rstat_free(&st);
}

