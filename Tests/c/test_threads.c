/*
 * test_threads.c - C API tests: many threads on one store, destroying from
 * callbacks, small stacks.
 * Part of the C suite (check.h; `make test-c`; one test: build/tests/test_store -s TOPIC__RULE).
 */
#include "check.h"

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

void test_threads__concurrentDispatchesAllApply(void) {
    /* Four threads dispatch with ts_store_dispatch, a fifth through the
     * ts_store_api table that the middleware kept. */
    enum { WORKERS = 5 };
    const int per_thread = ts_test_quick ? 500 : 20000;
    const int churn_rounds = ts_test_quick ? 500 : 20000;
    const int reader_rounds = ts_test_quick ? 500 : 20000;
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
    /* Read once, before any thread runs: the middleware writes pass.api on
     * every dispatch, from the workers' threads. */
    const ts_store_api *kept_api = pass.api;

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
        if (i == WORKERS - 1) workers[i].api = kept_api;
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

void test_threads__storeDestroyedInACallbackAnswersStoreGone(void) {
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

void test_threads__deepDocumentsOnASmallStackFailWithJsonNotACrash(void) {
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

