/*
 * test_filters.c - C API tests: reducers that name the action types they
 * handle (ts_store_add_reducer_for, ts_store_replace_reducer_for): exact
 * types, prefix patterns, the store's own "@@turnstate/" actions, middleware
 * that rewrites the type, replacing, and refused patterns.
 * Part of the C suite (check.h; `make test-c`; one test: build/tests/test_store -s TOPIC__RULE).
 */
#include "check.h"

/* What a typed reducer saw: the types it was called with, space-separated. */
typedef struct seen {
    int calls;
    char types[1024];
} seen;

/* Records the type; "@@turnstate/init" gives 0; any other call adds 1 to
 * the number. */
static char *typed_reducer(const char *slice, const ts_action *a, void *ctx) {
    seen *s = ctx;
    s->calls++;
    size_t n = strlen(s->types);
    snprintf(s->types + n, sizeof s->types - n, "%s%s", n ? " " : "", a->type);
    if (slice == NULL) return xstrdup("0");
    return xprintf("%lld", strtoll(slice, NULL, 10) + 1);
}

static void seen_reset(seen *s) {
    s->calls = 0;
    s->types[0] = '\0';
}

static ts_status dispatch_type(ts_store *store, const char *type) {
    char *action = xprintf("{\"type\":\"%s\"}", type);
    ts_status status = ts_store_dispatch(store, action);
    free(action);
    return status;
}

void test_filters__exactTypesReachOnlyTheirReducer(void) {
    ts_store *store = new_store(NULL);
    seen s = {0};
    static const char *const types[] = {"todos/add", "todos/remove", NULL};
    CHECK_OK(ts_store_add_reducer_for(store, "todos", types, typed_reducer, &s));
    /* The init call is the store's own action: it reaches the reducer. */
    CHECK_STR(s.types, "@@turnstate/init");
    CHECK_STATE(store, NULL, "{\"todos\":0}");
    seen_reset(&s);

    int notified = 0, pointed = 0;
    uint64_t t1, t2;
    CHECK_OK(ts_store_subscribe(store, NULL, count_listener, &notified, &t1));
    CHECK_OK(ts_store_subscribe(store, "/todos", count_listener, &pointed, &t2));

    const char *others[] = {"todos", "todos/add/x", "todos/ad", "todos/addx", "Todos/add", "other", "todos/"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) CHECK_OK(dispatch_type(store, others[i]));
    CHECK_INT(s.calls, 0);
    CHECK_STATE(store, NULL, "{\"todos\":0}");
    /* Dispatches that reached the reducers still call plain listeners; the
     * value did not change, so the pointer listener is not called. */
    CHECK_INT(notified, 7);
    CHECK_INT(pointed, 0);

    CHECK_OK(dispatch_type(store, "todos/add"));
    CHECK_OK(dispatch_type(store, "todos/remove"));
    /* "\/" is "/": the type is matched unescaped. */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"todos\\/add\",\"payload\":1}"));
    CHECK_STR(s.types, "todos/add todos/remove todos/add");
    CHECK_STATE(store, NULL, "{\"todos\":3}");
    CHECK_INT(pointed, 3);
    ts_store_destroy(store);
}

void test_filters__prefixPatternsMatchWholeSegments(void) {
    ts_store *store = new_store(NULL);
    seen s = {0};
    static const char *const types[] = {"todos/" "*", "filter/set", NULL};
    CHECK_OK(ts_store_add_reducer_for(store, "todos", types, typed_reducer, &s));
    seen_reset(&s);
    const char *match[] = {"todos/add", "todos/x/y", "todos/*", "filter/set", "todos/\xc3\xa9"};
    const char *no[] = {"todos", "todos/", "todo/add", "todosx/add", "filter/set/x", "filter/", "x/todos/add"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) CHECK_OK(dispatch_type(store, no[i]));
    CHECK_INT(s.calls, 0);
    for (size_t i = 0; i < sizeof match / sizeof match[0]; i++) CHECK_OK(dispatch_type(store, match[i]));
    CHECK_STR(s.types, "todos/add todos/x/y todos/* filter/set todos/\xc3\xa9");
    CHECK_STATE(store, "/todos", "5");

    /* "/" then "*" alone: every type that starts with "/". */
    seen t = {0};
    static const char *const slash[] = {"/" "*", NULL};
    CHECK_OK(ts_store_add_reducer_for(store, "slash", slash, typed_reducer, &t));
    seen_reset(&t);
    CHECK_OK(dispatch_type(store, "/a"));
    CHECK_OK(dispatch_type(store, "a/b"));
    CHECK_OK(dispatch_type(store, "/"));
    CHECK_STR(t.types, "/a");
    ts_store_destroy(store);
}

void test_filters__manyExactTypesAndNearMissesAreToldApart(void) {
    /* Enough exact types to fill the hash table's probing, and types that
     * differ only in their last byte. */
    ts_store *store = new_store(NULL);
    seen s = {0};
    const char *types[202];
    char *texts[201];
    for (int i = 0; i < 200; i++) {
        texts[i] = xprintf("t/%d", i);
        types[i] = texts[i];
    }
    texts[200] = xstrdup("t/" "*" "x"); /* not a pattern: a "*" in the middle */
    types[200] = NULL;
    CHECK_OK(ts_store_add_reducer_for(store, "t", types, typed_reducer, &s));
    /* The patterns were copied: the caller's may go. */
    for (int i = 0; i < 200; i++) {
        memset(texts[i], 'z', strlen(texts[i]));
        free(texts[i]);
    }
    seen_reset(&s);
    int called = 0;
    for (int i = 0; i < 400; i++) {
        char *type = xprintf("t/%d", i);
        int before = s.calls;
        CHECK_OK(dispatch_type(store, type));
        if (s.calls != before) called++;
        CHECK_INT(s.calls - before, i < 200 ? 1 : 0);
        free(type);
    }
    CHECK_INT(called, 200);
    CHECK_STATE(store, "/t", "200");

    /* The same patterns given twice are one. */
    seen d = {0};
    static const char *const twice[] = {"a", "a", "b/" "*", "b/" "*", NULL};
    CHECK_OK(ts_store_add_reducer_for(store, "d", twice, typed_reducer, &d));
    seen_reset(&d);
    CHECK_OK(dispatch_type(store, "a"));
    CHECK_OK(dispatch_type(store, "b/c"));
    CHECK_INT(d.calls, 2);

    /* A pattern with "*" in the middle is refused, by index. */
    types[0] = texts[200];
    types[1] = NULL;
    CHECK_ST(ts_store_add_reducer_for(store, "x", types, typed_reducer, &s), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "types[0]");
    free(texts[200]);
    ts_store_destroy(store);
}

void test_filters__noFilterSeesEveryAction(void) {
    /* NULL and an empty array: every action, as ts_store_add_reducer. */
    ts_store *store = new_store(NULL);
    seen a = {0}, b = {0};
    static const char *const none[] = {NULL};
    CHECK_OK(ts_store_add_reducer_for(store, "a", NULL, typed_reducer, &a));
    CHECK_OK(ts_store_add_reducer_for(store, "b", none, typed_reducer, &b));
    CHECK_OK(dispatch_type(store, "anything"));
    CHECK_OK(dispatch_type(store, "x/y"));
    CHECK_STR(a.types, "@@turnstate/init anything x/y");
    CHECK_STR(b.types, "@@turnstate/init anything x/y");
    CHECK_STATE(store, NULL, "{\"a\":2,\"b\":2}");
    ts_store_destroy(store);
}

void test_filters__storeOwnReplaceReachesEveryReducer(void) {
    /* "@@turnstate/replace" reaches every reducer, whatever it names. */
    ts_store *store = new_store(NULL);
    seen a = {0}, b = {0};
    static const char *const only_add[] = {"todos/add", NULL};
    CHECK_OK(ts_store_add_reducer_for(store, "a", only_add, typed_reducer, &a));
    CHECK_OK(ts_store_add_reducer(store, "b", typed_reducer, &b));
    seen_reset(&a);
    seen_reset(&b);
    CHECK_OK(ts_store_replace_reducer(store, "b", typed_reducer, &b));
    CHECK_STR(a.types, TS_REPLACE_ACTION_TYPE);
    CHECK_STR(b.types, TS_REPLACE_ACTION_TYPE);
    CHECK_OK(ts_store_remove_reducer(store, "b"));
    CHECK_STR(a.types, TS_REPLACE_ACTION_TYPE " " TS_REPLACE_ACTION_TYPE);
    /* A dispatched "@@turnstate/..." action is the store's kind too. */
    CHECK_OK(dispatch_type(store, "@@turnstate/anything"));
    CHECK_INT(a.calls, 3);
    /* "@@turnstate" without its "/" is not. */
    CHECK_OK(dispatch_type(store, "@@turnstate"));
    CHECK_OK(dispatch_type(store, "@@turnstatex/a"));
    CHECK_INT(a.calls, 3);
    ts_store_destroy(store);
}

/* Rewrites "legacy/add" to "todos/add" and "todos/drop" to "other/drop". */
static ts_status rewriting_middleware(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    (void)api;
    (void)ctx;
    if (strcmp(a->type, "legacy/add") == 0) return next("{\"type\":\"todos/add\",\"payload\":1}");
    if (strcmp(a->type, "todos/drop") == 0) return next("{\"type\":\"other/drop\"}");
    return next(a->json);
}

static const ts_store_api *kept_api;
static ts_status keep_api(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    (void)ctx;
    kept_api = api;
    return next(a->json);
}

void test_filters__filterMatchesTheTypeMiddlewarePassedOn(void) {
    ts_store *store = new_store(NULL);
    seen s = {0};
    static const char *const types[] = {"todos/" "*", NULL};
    CHECK_OK(ts_store_add_middleware(store, "keep", keep_api, NULL));
    CHECK_OK(ts_store_add_middleware(store, "rewrite", rewriting_middleware, NULL));
    CHECK_OK(ts_store_add_reducer_for(store, "todos", types, typed_reducer, &s));
    seen_reset(&s);
    /* Matched: the type the middleware passed on, not the one dispatched. */
    CHECK_OK(dispatch_type(store, "legacy/add"));
    CHECK_STR(s.types, "todos/add");
    CHECK_OK(dispatch_type(store, "todos/drop"));
    CHECK_STR(s.types, "todos/add");
    CHECK_OK(dispatch_type(store, "todos/keep"));
    CHECK_STR(s.types, "todos/add todos/keep");
    /* Without the middleware (apply): the type as given. */
    CHECK(kept_api != NULL);
    CHECK_OK(kept_api->apply("{\"type\":\"todos/drop\"}"));
    CHECK_OK(kept_api->apply("{\"type\":\"legacy/add\"}"));
    CHECK_STR(s.types, "todos/add todos/keep todos/drop");
    CHECK_STATE(store, "/todos", "3");
    ts_store_destroy(store);
    kept_api = NULL;
}

/* Refuses the replace action: the replacement is undone. */
static ts_status refuse_replace(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    int *refuse = ctx;
    if (*refuse && strcmp(a->type, TS_REPLACE_ACTION_TYPE) == 0) return api->fail(TS_E_REJECTED, "not now");
    return next(a->json);
}

void test_filters__replaceSwapsTheFilterAndFailureRestoresIt(void) {
    ts_store *store = new_store(NULL);
    seen old = {0}, fresh = {0}, plain = {0}, kept = {0};
    int refuse = 0;
    CHECK_OK(ts_store_add_middleware(store, "refuse", refuse_replace, &refuse));
    static const char *const adds[] = {"todos/add", NULL};
    static const char *const removes[] = {"todos/remove", NULL};
    CHECK_OK(ts_store_add_reducer_for(store, "todos", adds, typed_reducer, &old));

    /* replace_reducer_for sets the new filter. */
    CHECK_OK(ts_store_replace_reducer_for(store, "todos", removes, typed_reducer, &fresh));
    CHECK_STR(fresh.types, TS_REPLACE_ACTION_TYPE);
    seen_reset(&old);
    seen_reset(&fresh);
    CHECK_OK(dispatch_type(store, "todos/add"));
    CHECK_OK(dispatch_type(store, "todos/remove"));
    CHECK_INT(old.calls, 0);
    CHECK_STR(fresh.types, "todos/remove");

    /* A failed replace puts back the old reducer with its old filter. */
    refuse = 1;
    CHECK_ST(ts_store_replace_reducer_for(store, "todos", adds, typed_reducer, &kept), TS_E_REJECTED);
    CHECK_ST(ts_store_replace_reducer(store, "todos", typed_reducer, &kept), TS_E_REJECTED);
    refuse = 0;
    seen_reset(&fresh);
    CHECK_OK(dispatch_type(store, "todos/add"));
    CHECK_OK(dispatch_type(store, "todos/remove"));
    CHECK_STR(fresh.types, "todos/remove");
    CHECK_INT(kept.calls, 0);

    /* ts_store_replace_reducer: every action again. */
    CHECK_OK(ts_store_replace_reducer(store, "todos", typed_reducer, &plain));
    seen_reset(&plain);
    CHECK_OK(dispatch_type(store, "todos/add"));
    CHECK_OK(dispatch_type(store, "x"));
    CHECK_STR(plain.types, "todos/add x");

    /* And back to a filter; NULL types: every action. */
    CHECK_OK(ts_store_replace_reducer_for(store, "todos", adds, typed_reducer, &kept));
    seen_reset(&kept);
    CHECK_OK(dispatch_type(store, "x"));
    CHECK_OK(dispatch_type(store, "todos/add"));
    CHECK_STR(kept.types, "todos/add");
    CHECK_OK(ts_store_replace_reducer_for(store, "todos", NULL, typed_reducer, &kept));
    seen_reset(&kept);
    CHECK_OK(dispatch_type(store, "x"));
    CHECK_STR(kept.types, "x");

    /* Errors: nothing replaced. */
    static const char *const bad[] = {"ok", "", NULL};
    CHECK_ST(ts_store_replace_reducer_for(store, "todos", bad, typed_reducer, &old), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "ts_store_replace_reducer_for: types[1] is empty");
    CHECK_ST(ts_store_replace_reducer_for(store, "nope", adds, typed_reducer, &old), TS_E_NOT_FOUND);
    CHECK_CONTAINS(ts_last_error(), "ts_store_replace_reducer_for");
    CHECK_ST(ts_store_replace_reducer_for(NULL, "todos", adds, typed_reducer, &old), TS_E_ARGUMENT);
    CHECK_ST(ts_store_replace_reducer_for(store, NULL, adds, typed_reducer, &old), TS_E_ARGUMENT);
    CHECK_ST(ts_store_replace_reducer_for(store, "todos", adds, NULL, &old), TS_E_ARGUMENT);
    seen_reset(&kept);
    CHECK_OK(dispatch_type(store, "y"));
    CHECK_STR(kept.types, "y");
    CHECK_INT(old.calls, 0);
    ts_store_destroy(store);
}

void test_filters__badPatternsAreRefused(void) {
    ts_store *store = new_store("{\"a\":1}");
    seen s = {0};
    struct {
        const char *pattern;
        const char *message;
    } bad[] = {
        {"", "types[1] is empty"},
        {"*", "types[1] \"*\" is neither"},
        {"todos*", "types[1] \"todos*\" is neither"},
        {"todos/" "*" "/x", "is neither"},
        {"todos/" "**", "is neither"},
        {"*/a", "is neither"},
        {"bad\xff", "types[1] is not valid UTF-8"},
        {"\xc0\xaf", "types[1] is not valid UTF-8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *types[] = {"fine", bad[i].pattern, NULL};
        CHECK_ST(ts_store_add_reducer_for(store, "k", types, typed_reducer, &s), TS_E_ARGUMENT);
        CHECK_CONTAINS(ts_last_error(), "ts_store_add_reducer_for: ");
        CHECK_CONTAINS(ts_last_error(), bad[i].message);
    }
    /* Nothing was added and no init call was made. */
    CHECK_INT(s.calls, 0);
    CHECK_STATE(store, NULL, "{\"a\":1}");
    static const char *const fine[] = {"x", NULL};
    CHECK_ST(ts_store_add_reducer_for(NULL, "k", fine, typed_reducer, &s), TS_E_ARGUMENT);
    CHECK_ST(ts_store_add_reducer_for(store, NULL, fine, typed_reducer, &s), TS_E_ARGUMENT);
    CHECK_ST(ts_store_add_reducer_for(store, "k", fine, NULL, &s), TS_E_ARGUMENT);
    CHECK_ST(ts_store_add_reducer_for(store, "k\xff", fine, typed_reducer, &s), TS_E_ARGUMENT);
    CHECK_ST(ts_store_add_reducer_for(store, "a", fine, typed_reducer, &s), TS_OK);
    CHECK_ST(ts_store_add_reducer_for(store, "a", fine, typed_reducer, &s), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "ts_store_add_reducer_for: the key \"a\" already has a reducer");
    CHECK_INT(s.calls, 0); /* "a" existed: no init call */
    ts_store_destroy(store);
}

/* Counts its calls; returns NULL (unchanged). */
static char *counting_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)a;
    ++*(int *)ctx;
    return slice == NULL ? xstrdup("[]") : NULL;
}

void test_filters__eachReducerKeepsItsOwnFilter(void) {
    /* Reducers that skip an action do not stop the others, and a failing
     * reducer that was not called cannot fail the dispatch. */
    ts_store *store = new_store(NULL);
    seen s = {0};
    int n_calls = 0;
    static const char *const breaks[] = {"break", NULL};
    static const char *const incs[] = {"inc", NULL};
    CHECK_OK(ts_store_add_reducer_for(store, "b", breaks, breaking_reducer, NULL));
    CHECK_OK(ts_store_add_reducer_for(store, "c", incs, counter_reducer, NULL));
    CHECK_OK(ts_store_add_reducer_for(store, "n", incs, counting_reducer, &n_calls));
    CHECK_OK(ts_store_add_reducer(store, "t", typed_reducer, &s));
    CHECK_OK(dispatch_type(store, "inc"));
    CHECK_STATE(store, NULL, "{\"b\":{},\"c\":1,\"n\":[],\"t\":1}");
    CHECK_ST(dispatch_type(store, "break"), TS_E_REDUCER);
    CHECK_CONTAINS(ts_last_error(), "\"b\"");
    CHECK_STATE(store, NULL, "{\"b\":{},\"c\":1,\"n\":[],\"t\":1}");
    CHECK_INT(n_calls, 2); /* its init call and "inc" */
    ts_store_destroy(store);
}

