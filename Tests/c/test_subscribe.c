/*
 * test_subscribe.c - C API tests: listeners: subscribing, unsubscribing,
 * snapshots, nesting, pointer listeners, threads, tokens.
 * Part of the C suite (check.h; `make test-c`; one test: build/tests/test_store -s TOPIC__RULE).
 */
#include "check.h"

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

void test_subscribe__listenersRunInSubscriptionOrderAfterEachDispatch(void) {
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

void test_subscribe__unsubscribedListenerIsNotCalled(void) {
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

void test_subscribe__listenersSubscribedOrRemovedDuringDispatchFollowTheSnapshot(void) {
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

void test_subscribe__nestedDispatchFromAListenerRunsAtOnce(void) {
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

typedef struct pointer_counts {
    int count, title, whole, all, later, todos;
} pointer_counts;

void test_subscribe__pointerListenerRunsOnlyWhenItsValueChanges(void) {
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
void test_subscribe__pointerListenerIsMeasuredFromItsSubscription(void) {
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

void test_subscribe__listenerRunsOnTheDispatchingThread(void) {
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

/* ts_store_subscribe writes the token before any listener can run: a
 * listener that a dispatch on another thread calls at once reads it. */
typedef struct token_slot {
    uint64_t token; /* written by ts_store_subscribe */
    int zero_seen;  /* calls that found no token yet */
} token_slot;

typedef struct token_race {
    ts_store *store;
    int stop; /* read and written with __atomic builtins (C99 has no atomics) */
} token_race;

static void *token_dispatcher(void *arg) {
    token_race *r = arg;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) ts_store_dispatch(r->store, "{\"type\":\"inc\"}");
    return NULL;
}

static void token_reading_listener(ts_store *store, void *ctx) {
    token_slot *slot = ctx;
    uint64_t token = __atomic_load_n(&slot->token, __ATOMIC_SEQ_CST);
    if (token == 0) slot->zero_seen++;
    else ts_store_unsubscribe(store, token);
}

void test_subscribe__tokenIsSetBeforeTheListenerCanRun(void) {
    token_race r;
    memset(&r, 0, sizeof r);
    r.store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(r.store, "count", counter_reducer, NULL));
    int rounds = ts_test_quick ? 200 : 2000, zero_seen = 0;
    token_slot *slots = calloc((size_t)rounds, sizeof *slots);
    pthread_t thread;
    CHECK_INT(pthread_create(&thread, NULL, token_dispatcher, &r), 0);
    for (int i = 0; i < rounds; i++) {
        CHECK_OK(ts_store_subscribe(r.store, NULL, token_reading_listener, &slots[i], &slots[i].token));
    }
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);
    ts_store_destroy(r.store);
    for (int i = 0; i < rounds; i++) zero_seen += slots[i].zero_seen;
    CHECK_INT(zero_seen, 0);
    free(slots);
}

