/* Tests of the delay plugin (Plugins/delay): delayed actions arrive later,
 * from the worker thread, in due order; bad payloads are refused; destroy
 * with pending items stops cleanly. Prints "N passed, M failed".
 * Run it under valgrind too (run.sh does). */
#include "plugin_test.h"

#include <pthread.h>

/* ---- A recorder after the delay plugin ------------------------------------ */

#define MAX_SEEN 4096

static struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int n;
    char payload[MAX_SEEN][32];
    double at[MAX_SEEN];
    int on_main[MAX_SEEN];
} seen;

static pthread_t main_thread;

static void seen_init(void) {
    pthread_condattr_t attr;
    pthread_mutex_init(&seen.mutex, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&seen.cond, &attr);
    pthread_condattr_destroy(&attr);
}

static void seen_reset(void) {
    pthread_mutex_lock(&seen.mutex);
    seen.n = 0;
    pthread_mutex_unlock(&seen.mutex);
}

static int seen_count(void) {
    int n;
    pthread_mutex_lock(&seen.mutex);
    n = seen.n;
    pthread_mutex_unlock(&seen.mutex);
    return n;
}

static ts_status record_mw(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)api;
    (void)ctx;
    if (strcmp(action->type, TP_CREATE_TYPE) == 0) return next(action->json);
    pthread_mutex_lock(&seen.mutex);
    if (seen.n < MAX_SEEN) {
        snprintf(seen.payload[seen.n], sizeof seen.payload[0], "%s", action->payload ? action->payload : "-");
        seen.at[seen.n] = tp_now();
        seen.on_main[seen.n] = pthread_equal(pthread_self(), main_thread);
        seen.n++;
    }
    pthread_cond_broadcast(&seen.cond);
    pthread_mutex_unlock(&seen.mutex);
    return next(action->json);
}

/* Waits (on the condition, no polling) until n actions were seen or the
 * deadline passes; returns the count seen. */
static int wait_seen(int n, double seconds) {
    struct timespec until;
    int got;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)seconds;
    pthread_mutex_lock(&seen.mutex);
    while (seen.n < n) {
        if (pthread_cond_timedwait(&seen.cond, &seen.mutex, &until) == ETIMEDOUT) break;
    }
    got = seen.n;
    pthread_mutex_unlock(&seen.mutex);
    return got;
}

/* A middleware after the recorder that refuses "nope". */
static ts_status refuse_mw(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)ctx;
    if (strcmp(action->type, "nope") == 0) return api->fail(TS_E_REJECTED, "nope is refused");
    return next(action->json);
}

/* A listener that makes dispatches slow, when slow_ms > 0. */
static volatile int slow_ms;
static void slow_listener(ts_store *store, void *ctx) {
    (void)store;
    (void)ctx;
    if (slow_ms > 0) tp_sleep_ms(slow_ms);
}

static ts_store *delayed(const char *config, ts_status *load_status) {
    ts_store *s = NULL;
    ts_status st;
    uint64_t token;
    if (ts_store_create(NULL, &s) != TS_OK) return NULL;
    ts_store_add_reducer(s, "counter", tp_counter_reducer, NULL);
    st = tp_load(s, tp_plugin("delay"), config);
    if (load_status) *load_status = st;
    ts_store_add_middleware(s, "record", record_mw, NULL);
    ts_store_add_middleware(s, "refuse", refuse_mw, NULL);
    ts_store_subscribe(s, NULL, slow_listener, NULL, &token);
    seen_reset();
    return s;
}

static ts_status delay_add(ts_store *s, long ms, int value) {
    char json[200];
    snprintf(json, sizeof json,
             "{\"type\":\"@@delay\",\"payload\":{\"ms\":%ld,\"action\":{\"type\":\"add\",\"payload\":%d}}}", ms, value);
    return ts_store_dispatch(s, json);
}

void test_delay__otherActionsPassThroughAtOnce(void) {
    ts_status st;
    ts_store *s = delayed(NULL, &st);
    TP_CHECK_STATUS("load", st, TS_OK);
    TP_CHECK_STATUS("other actions pass", ts_store_dispatch(s, "{\"type\":\"inc\",\"payload\":7}"), TS_OK);
    TP_CHECK_INT("passed at once", seen_count(), 1);
    TP_CHECK("on the dispatching thread", seen.on_main[0]);
    TP_CHECK_STR("unchanged", seen.payload[0], "7");
    TP_CHECK_INT("reducers got it", tp_state_int(s, "/counter", -1), 1);
    TP_CHECK_STATUS("refusal after delay passes back", ts_store_dispatch(s, "{\"type\":\"nope\"}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("with its message", ts_last_error(), "nope is refused");
    tp_destroy(s);
}

void test_delay__delayedActionsArriveFromTheWorkerInDueOrder(void) {
    /* value: ms; values are powers of two so the counter shows all arrived */
    static const struct {
        int value;
        long ms;
    } plan[] = {{1, 600}, {2, 200}, {4, 400}, {8, 0}, {16, 200}, {32, 300}};
    static const char *order[] = {"8", "2", "16", "32", "4", "1"};
    double before[6], after[6], t0;
    int where[6]; /* plan index of each arrival */
    int i, k, n = 6, in_order = 1;
    ts_status st;
    ts_store *s = delayed("{}", &st);
    TP_CHECK_STATUS("load {}", st, TS_OK);
    t0 = tp_now();
    for (i = 0; i < n; i++) {
        before[i] = tp_now();
        TP_CHECK_STATUS("@@delay accepted (swallowed)", delay_add(s, plan[i].ms, plan[i].value), TS_OK);
        after[i] = tp_now();
    }
    TP_CHECK("dispatching @@delay does not wait for it", tp_now() - t0 < 0.2);
    TP_CHECK_INT("all arrive", wait_seen(n, 30.0), n);
    for (i = 0; i < n && i < seen.n; i++) {
        char name[96];
        where[i] = -1;
        for (k = 0; k < n; k++) {
            char v[16];
            snprintf(v, sizeof v, "%d", plan[k].value);
            if (strcmp(v, seen.payload[i]) == 0) where[i] = k;
        }
        TP_CHECK("an action that was queued", where[i] >= 0);
        if (where[i] < 0) return;
        TP_CHECK("from the worker thread, not the dispatcher", !seen.on_main[i]);
        snprintf(name, sizeof name, "value %d not before its %ld ms", plan[where[i]].value, plan[where[i]].ms);
        TP_CHECK(name, seen.at[i] - before[where[i]] >= (double)plan[where[i]].ms / 1000.0);
        if (strcmp(seen.payload[i], order[i]) != 0) in_order = 0;
    }
    /* Due order, robust to a slow machine: an action may arrive before
     * another only if its due time (between before+ms and after+ms) can be
     * no later than the other's. */
    for (i = 0; i < n; i++) {
        for (k = i + 1; k < n; k++) {
            int a = where[i], b = where[k];
            char name[96];
            snprintf(name, sizeof name, "value %d (due %ld ms) arrived before value %d (due %ld ms)", plan[a].value,
                     plan[a].ms, plan[b].value, plan[b].ms);
            TP_CHECK(name, before[a] + (double)plan[a].ms / 1000.0 <= after[b] + (double)plan[b].ms / 1000.0 ||
                               (plan[a].ms == plan[b].ms && a < b));
        }
    }
    /* When queueing was quick (well under the 100 ms between due times), the
     * order is exactly this. */
    if (after[n - 1] - before[0] < 0.09) TP_CHECK("the expected order 8 2 16 32 4 1", in_order);
    TP_CHECK_INT("the reducers got every one", tp_state_int(s, "/counter", -1), 63);
    tp_destroy(s);
}

void test_delay__nestedDelaysUnwrapAndTiesKeepQueueOrder(void) {
    ts_status st;
    double t0;
    int i;
    ts_store *s = delayed(NULL, &st);
    t0 = tp_now();
    TP_CHECK_STATUS("nested @@delay", ts_store_dispatch(s,
           "{\"type\":\"@@delay\",\"payload\":{\"action\":{\"type\":\"@@delay\",\"payload\":{\"ms\":60,\"action\":"
           "{\"type\":\"add\",\"payload\":100}}},\"ms\":60}}"), TS_OK);
    TP_CHECK_INT("nested arrives", wait_seen(1, 20.0), 1);
    TP_CHECK_STR("nested: the innermost action", seen.payload[0], "100");
    TP_CHECK("nested: after both delays", seen.at[0] - t0 >= 0.120);
    seen_reset();
    /* Same due time: the order they were queued. ms 0 with many at once. */
    for (i = 0; i < 50; i++) delay_add(s, 0, i);
    TP_CHECK_INT("ties arrive", wait_seen(50, 20.0), 50);
    for (i = 0; i < 50 && i < seen.n; i++) {
        char v[16];
        snprintf(v, sizeof v, "%d", i);
        if (strcmp(seen.payload[i], v) != 0) break;
    }
    TP_CHECK_INT("ties: first queued, first dispatched", i, 50);
    tp_destroy(s);
}

static void bad(ts_store *s, const char *payload, const char *expect) {
    char json[400], name[500];
    if (payload) snprintf(json, sizeof json, "{\"type\":\"@@delay\",\"payload\":%s}", payload);
    else snprintf(json, sizeof json, "{\"type\":\"@@delay\"}");
    snprintf(name, sizeof name, "refused: %s", json);
    TP_CHECK_STATUS(name, ts_store_dispatch(s, json), TS_E_REJECTED);
    snprintf(name, sizeof name, "message for %s", json);
    TP_CHECK_CONTAINS(name, ts_last_error(), expect);
}

void test_delay__badPayloadIsRefusedShowingTheExpectedShape(void) {
    ts_status st;
    ts_store *s = delayed(NULL, &st);
    bad(s, NULL, "it has no payload");
    bad(s, "null", "not an object");
    bad(s, "[250]", "not an object");
    bad(s, "{\"action\":{\"type\":\"inc\"}}", "payload.ms is missing");
    bad(s, "{\"ms\":-1,\"action\":{\"type\":\"inc\"}}", "payload.ms is negative");
    bad(s, "{\"ms\":\"250\",\"action\":{\"type\":\"inc\"}}", "payload.ms is not a number");
    bad(s, "{\"ms\":2.5,\"action\":{\"type\":\"inc\"}}", "not an integer");
    bad(s, "{\"ms\":99999999999,\"action\":{\"type\":\"inc\"}}", "too large");
    bad(s, "{\"ms\":18446744073709551616,\"action\":{\"type\":\"inc\"}}", "payload.ms is too large");
    bad(s, "{\"ms\":-99999999999999999999,\"action\":{\"type\":\"inc\"}}", "payload.ms is negative");
    bad(s, "{\"ms\":10,\"action\":{\"type\":\"inc\\u0000x\"}}", "contains \\u0000");
    bad(s, "{\"ms\":10}", "payload.action is missing");
    bad(s, "{\"ms\":10,\"action\":\"inc\"}", "payload.action is not an object");
    bad(s, "{\"ms\":10,\"action\":{}}", "no \"type\"");
    bad(s, "{\"ms\":10,\"action\":{\"type\":\"\"}}", "no \"type\"");
    bad(s, "{\"ms\":10,\"action\":{\"type\":7}}", "no \"type\"");
    TP_CHECK_CONTAINS("the message shows the expected shape", ts_last_error(), "\"ms\"");
    TP_CHECK_INT("nothing got through", seen_count(), 0);
    TP_CHECK_STATUS("a good one after bad ones", delay_add(s, 0, 5), TS_OK);
    TP_CHECK_INT("arrives", wait_seen(1, 20.0), 1);
    tp_destroy(s);
}

void test_delay__maxPendingBoundsTheQueueAndBadConfigIsRefused(void) {
    ts_status st;
    ts_store *s = delayed("{\"max_pending\": 2}", &st);
    TP_CHECK_STATUS("load max_pending", st, TS_OK);
    TP_CHECK_STATUS("pending 1", delay_add(s, 60000, 1), TS_OK);
    TP_CHECK_STATUS("pending 2", delay_add(s, 60000, 2), TS_OK);
    TP_CHECK_STATUS("pending 3 refused", delay_add(s, 60000, 3), TS_E_REJECTED);
    TP_CHECK_CONTAINS("max_pending named", ts_last_error(), "max_pending is 2");
    tp_destroy(s);

    s = delayed("{\"max_pending\": 0}", &st);
    TP_CHECK_STATUS("max_pending 0 refused", st, TS_E_PLUGIN);
    TP_CHECK_CONTAINS("field named", ts_last_error(), "\"max_pending\"");
    tp_destroy(s);
    s = delayed("{\"max_pending\": \"9\"}", &st);
    TP_CHECK_STATUS("max_pending string refused", st, TS_E_PLUGIN);
    TP_CHECK_CONTAINS("field named", ts_last_error(), "\"max_pending\"");
    tp_destroy(s);
    s = delayed("{\"max_pending\": 18446744073709551615}", &st);
    TP_CHECK_STATUS("max_pending at the top of the uint64 range", st, TS_OK);
    TP_CHECK_STATUS("max_pending max: pending 1", delay_add(s, 60000, 1), TS_OK);
    tp_destroy(s);
    s = delayed("{\"max_pending\": 18446744073709551616}", &st);
    TP_CHECK_STATUS("max_pending above uint64 refused", st, TS_E_PLUGIN);
    TP_CHECK_CONTAINS("says why", ts_last_error(), "above 18446744073709551615");
    tp_destroy(s);
    s = delayed("{\"max_pending\": 1e2}", &st);
    TP_CHECK_STATUS("max_pending 1e2 refused", st, TS_E_PLUGIN);
    TP_CHECK_CONTAINS("says why", ts_last_error(), "exponent");
    tp_destroy(s);
    s = delayed("{\"max_pending\\u0000\": 5}", &st);
    TP_CHECK_STATUS("a field name with NUL refused", st, TS_E_PLUGIN);
    TP_CHECK_CONTAINS("shown with the NUL", ts_last_error(), "unknown config field \"max_pending\\u0000\"");
    tp_destroy(s);
    s = delayed("{\"ms\": 5}", &st);
    TP_CHECK_STATUS("unknown field refused", st, TS_E_PLUGIN);
    TP_CHECK_CONTAINS("unknown field named", ts_last_error(), "\"ms\"");
    tp_destroy(s);
}

void test_delay__delayedActionThatFailsIsReportedOnStderr(void) {
    ts_status st;
    char *err;
    ts_store *s = delayed(NULL, &st);
    tp_capture_begin();
    TP_CHECK_STATUS("queue an action that will be refused",
                    ts_store_dispatch(s, "{\"type\":\"@@delay\",\"payload\":{\"ms\":0,\"action\":{\"type\":\"nope\"}}}"), TS_OK);
    TP_CHECK_INT("it reached the recorder", wait_seen(1, 20.0), 1);
    /* The worker writes the report after its dispatch returns. */
    TP_CHECK("the failure is reported on stderr", tp_capture_wait("failed with TS_E_REJECTED", 20.0));
    tp_destroy(s);
    err = tp_capture_end();
    TP_CHECK_CONTAINS("naming the action", err, "\"nope\"");
    free(err);
}

void test_delay__destroyWithPendingActionsReturnsAtOnce(void) {
    ts_status st;
    int i;
    double t0;
    ts_store *s = delayed(NULL, &st);
    for (i = 0; i < 500; i++) delay_add(s, 60000 + i, i);
    for (i = 0; i < 200; i++) delay_add(s, 0, i);
    TP_CHECK("some of the due ones ran", wait_seen(1, 20.0) >= 1);
    t0 = tp_now();
    tp_destroy(s); /* joins the worker, drops the 500 still pending */
    TP_CHECK("destroy with pending items returns at once", tp_now() - t0 < 5.0);
    TP_CHECK("the far ones never ran", seen_count() <= 200);
}

/* The store goes while the worker is inside a delayed dispatch: the library
 * then finishes the store (and calls destroy) on the worker thread when that
 * dispatch returns, or destroy joins it; either way nothing crashes. */
void test_delay__destroyDuringADelayedDispatchIsSafe(void) {
    ts_status st;
    ts_store *s = delayed(NULL, &st);
    slow_ms = 200;
    delay_add(s, 0, 1);
    delay_add(s, 0, 2);
    TP_CHECK_INT("the worker is dispatching", wait_seen(1, 20.0), 1);
    tp_destroy(s);
    slow_ms = 0;
    tp_sleep_ms(600); /* let a destroy that runs on the worker finish */
    TP_CHECK("survived destroy during a delayed dispatch", 1);
}

typedef struct {
    ts_store *store;
    int base;
} producer_arg;

static void *producer(void *arg) {
    producer_arg *p = arg;
    int i;
    for (i = 0; i < 250; i++) delay_add(p->store, (i * 7) % 23, 1);
    return NULL;
}

void test_delay__actionsFromManyThreadsAllArriveInSequence(void) {
    ts_status st;
    pthread_t threads[4];
    producer_arg args[4];
    int i;
    ts_store *s = delayed(NULL, &st);
    for (i = 0; i < 4; i++) {
        args[i].store = s;
        args[i].base = i * 1000;
        pthread_create(&threads[i], NULL, producer, &args[i]);
    }
    for (i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    TP_CHECK_INT("1000 from 4 threads arrive", wait_seen(1000, 60.0), 1000);
    TP_CHECK_INT("counter", tp_state_int(s, "/counter", -1), 1000);
    for (i = 1; i < seen.n; i++) {
        if (seen.at[i] < seen.at[i - 1]) break;
    }
    TP_CHECK_INT("one worker: arrivals in sequence", i, seen.n);
    tp_destroy(s);
}

void test_delay__descriptorAndDirectCreateFollowThePluginAbi(void) {
    const ts_plugin *p = tp_descriptor(tp_plugin("delay"), TS_PLUGIN_ABI_VERSION);
    ts_store_api api = tp_fake_api(sizeof(ts_store_api));
    void *self = NULL;
    char *err = NULL;
    TP_CHECK("descriptor", p != NULL);
    if (p == NULL) return;
    TP_CHECK_STR("name", p->name, "delay");
    TP_CHECK_INT("abi", p->abi_version, TS_PLUGIN_ABI_VERSION);
    TP_CHECK_STATUS("create with NULL config", p->create(NULL, &api, &self, &err), TS_OK);
    p->destroy(self);
    TP_CHECK_STATUS("create, destroy at once", p->create("{}", &api, &self, &err), TS_OK);
    p->destroy(self);
    TP_CHECK_STATUS("create with no table", p->create("{}", NULL, &self, &err), TS_E_ARGUMENT);
    /* Configs a host did not validate: refused with a message. */
    err = NULL;
    TP_CHECK_STATUS("config that is not an object", p->create("[1]", &api, &self, &err), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("not an object: named", err, "must be a JSON object, not an array");
    free(err);
    err = NULL;
    TP_CHECK_STATUS("malformed config", p->create("{\"max_pending\": 1,", &api, &self, &err), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("malformed: named", err, "malformed JSON");
    free(err);
    {
        static const char *const kinds[][2] = {
            {"true", "a boolean"}, {"null", "null"}, {"5", "a number"}, {"\"x\"", "a string"}, {"?", "invalid JSON"},
            {"{\"max_pending\": 1.5}", "\"max_pending\""}, {"{\"max_pending\": true}", "a boolean"},
            {" \t\r\n{ \t\r\n\"max_pending\" \t\r\n: \t\r\n0 \t\r\n}", "\"max_pending\""},
        };
        char name[200];
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
            err = NULL;
            snprintf(name, sizeof name, "config %s refused", kinds[i][0]);
            TP_CHECK_STATUS(name, p->create(kinds[i][0], &api, &self, &err), TS_E_PLUGIN);
            snprintf(name, sizeof name, "config %s: message", kinds[i][0]);
            TP_CHECK_CONTAINS(name, err, kinds[i][1]);
            free(err);
        }
    }
    TP_CHECK_STATUS("malformed config, NULL error_message", p->create("{\"max_pending\" 1}", &api, &self, NULL),
                    TS_E_PLUGIN);
}

int ts_test_suite_option(int argc, char **argv, int i) { return tp_option(argc, argv, i); }

void ts_test_suite_setup(void) {
    main_thread = pthread_self();
    seen_init();
    printf("delay: loading through %s\n", tp_loader_name());
}
