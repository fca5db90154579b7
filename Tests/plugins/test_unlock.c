/*
 * test_unlock.c - ts_store_api.unlocked: a plugin's run() lets go of the
 * store while it waits (replicate.so's ordered mode waits for its log so).
 *
 * Uses plugins/unlock/unlock.so (unlock_plugin.c, built by run.sh), whose
 * "wait" action waits in unlocked() until the test opens a gate:
 * - other threads' dispatches go on meanwhile, through the same plugin;
 * - two runs can wait at once, and each one's `next` still works after;
 * - refused (TS_E_MISUSE, fn not called) where the store is held more than
 *   once or outside a run(): from create(), a listener's dispatch, exclusive's
 *   fn, the table of ts_store_add_middleware; TS_E_ARGUMENT for a NULL fn;
 * - ts_store_remove_middleware and ts_store_destroy wait until a run that
 *   let go of the store has finished (with the chain it started with; the
 *   plugin's destroy() after it).
 */
#include "plugin_test.h"

#include <pthread.h>

typedef struct ul_counters {
    int create_status, wait_status, exclusive_status, null_status, inside, waits_done, runs, destroyed,
        waits_done_at_destroy, gate_open;
} ul_counters;

static ul_counters *report;
static pthread_mutex_t *report_lock;
static pthread_cond_t *report_cond;

static void find_report(void) {
    char path[1100];
    snprintf(path, sizeof path, "%s/unlock/unlock.so", tp_plugin_dir());
    void *handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (handle == NULL) return;
    report = dlsym(handle, "ul_report");
    report_lock = dlsym(handle, "ul_lock");
    report_cond = dlsym(handle, "ul_cond");
    dlclose(handle); /* drops only this reference: the store's stays */
}

static int read_field(int *field) {
    pthread_mutex_lock(report_lock);
    int v = *field;
    pthread_mutex_unlock(report_lock);
    return v;
}

static void set_gate(int open) {
    pthread_mutex_lock(report_lock);
    report->gate_open = open;
    pthread_cond_broadcast(report_cond);
    pthread_mutex_unlock(report_lock);
}

/* Waits (up to 20 s, so that a failure does not hang the suite) until
 * `inside` fns are waiting. */
static int wait_inside(int inside) {
    for (int i = 0; i < 20000; i++) {
        if (read_field(&report->inside) == inside) return 1;
        tp_sleep_ms(1);
    }
    return 0;
}

/* "count": +1 for every "inc" and "wait". */
static char *count_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    long long n = slice ? atoll(slice) : 0;
    if (slice != NULL && strcmp(action->type, "inc") != 0 && strcmp(action->type, "wait") != 0) return NULL;
    char *out = malloc(32);
    if (out) snprintf(out, 32, "%lld", slice ? n + 1 : 0);
    return out;
}

typedef struct call {
    ts_store *store;
    const char *action;
    ts_status status;
    int done; /* under report_lock */
    pthread_t thread;
} call;

static void *dispatching(void *self) {
    call *c = self;
    c->status = ts_store_dispatch(c->store, c->action);
    pthread_mutex_lock(report_lock);
    c->done = 1;
    pthread_mutex_unlock(report_lock);
    return NULL;
}

static void start(call *c, ts_store *store, const char *action) {
    c->store = store;
    c->action = action;
    c->status = -999;
    c->done = 0;
    pthread_create(&c->thread, NULL, dispatching, c);
}

/* Waits up to 20 s for a call to return. */
static int finished(call *c) {
    for (int i = 0; i < 20000; i++) {
        if (read_field(&c->done)) return 1;
        tp_sleep_ms(1);
    }
    return 0;
}

static ts_store *new_store(void) {
    ts_store *store = NULL;
    TP_CHECK_STATUS("store", ts_store_create(NULL, &store), TS_OK);
    TP_CHECK_STATUS("reducer", ts_store_add_reducer(store, "count", count_reducer, NULL), TS_OK);
    char path[1100];
    snprintf(path, sizeof path, "%s/unlock/unlock.so", tp_plugin_dir());
    TP_CHECK_STATUS("load unlock.so", ts_store_load_plugin(store, path, NULL), TS_OK);
    if (report == NULL) find_report();
    return store;
}

void test_unlock__otherThreadsDispatchWhileARunWaitsAndItsNextWorksAfter(void) {
    ts_store *store = new_store();
    if (report == NULL) {
        TP_CHECK("ul_report found", 0);
        return;
    }
    TP_CHECK_STATUS("from create(): refused", report->create_status, TS_E_MISUSE);
    set_gate(0);
    call a, b;
    start(&a, store, "{\"type\":\"wait\"}");
    TP_CHECK("the run waits in unlocked's fn", wait_inside(1));
    /* The store is free: another thread's dispatch (through the same
     * plugin) and a read go on while the first run waits. */
    start(&b, store, "{\"type\":\"inc\"}");
    TP_CHECK("another thread's dispatch returns while a run waits without the store", finished(&b));
    TP_CHECK_STATUS("its status", b.status, TS_OK);
    TP_CHECK("the state shows it", tp_state_int(store, "/count", -1) == 1);
    TP_CHECK("the first still waits", read_field(&report->inside) == 1);
    set_gate(1);
    pthread_join(a.thread, NULL);
    pthread_join(b.thread, NULL);
    TP_CHECK_STATUS("the waiting dispatch, once fn returned", a.status, TS_OK);
    TP_CHECK("unlocked returned fn's value", read_field(&report->wait_status) == 7);
    TP_CHECK("its next applied it", tp_state_int(store, "/count", -1) == 2);

    /* Two runs wait at once; each one's next works after. */
    set_gate(0);
    start(&a, store, "{\"type\":\"wait\"}");
    start(&b, store, "{\"type\":\"wait\"}");
    TP_CHECK("two runs wait at once", wait_inside(2));
    set_gate(1);
    pthread_join(a.thread, NULL);
    pthread_join(b.thread, NULL);
    TP_CHECK_STATUS("first of two", a.status, TS_OK);
    TP_CHECK_STATUS("second of two", b.status, TS_OK);
    TP_CHECK("both applied", tp_state_int(store, "/count", -1) == 4);
    ts_store_destroy(store);
}

static ts_status listener_inner = -999;
static void dispatching_listener(ts_store *store, void *ctx) {
    (void)ctx;
    if (listener_inner == -999) {
        listener_inner = -998; /* only the first notification dispatches */
        listener_inner = ts_store_dispatch(store, "{\"type\":\"wait\"}");
    }
}

static ts_status nothing(void *ctx) {
    (void)ctx;
    return TS_OK;
}

static ts_status unlocking_middleware(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) {
    if (strcmp(action->type, "try-unlock") == 0) *(ts_status *)ctx = api->unlocked(nothing, NULL);
    return next(action->json);
}

void test_unlock__refusedWhereTheStoreIsHeldMoreThanOnceOrOutsideARun(void) {
    ts_store *store = new_store();
    if (report == NULL) return;
    /* The gate is open: a fn that was called would return at once. */
    set_gate(1);
    uint64_t token;
    TP_CHECK_STATUS("subscribe", ts_store_subscribe(store, NULL, dispatching_listener, NULL, &token), TS_OK);
    pthread_mutex_lock(report_lock);
    report->wait_status = -999;
    pthread_mutex_unlock(report_lock);
    TP_CHECK_STATUS("a dispatch whose listener dispatches", ts_store_dispatch(store, "{\"type\":\"inc\"}"), TS_OK);
    TP_CHECK_STATUS("the listener's dispatch went on (with the store held)", listener_inner, TS_OK);
    TP_CHECK_STATUS("unlocked from a listener's dispatch: refused", read_field(&report->wait_status), TS_E_MISUSE);
    TP_CHECK("both applied", tp_state_int(store, "/count", -1) == 2);
    TP_CHECK_STATUS("unsubscribe", ts_store_unsubscribe(store, token), TS_OK);

    TP_CHECK_STATUS("nested-exclusive", ts_store_dispatch(store, "{\"type\":\"nested-exclusive\"}"), TS_OK);
    TP_CHECK_STATUS("unlocked from exclusive's fn: refused", report->exclusive_status, TS_E_MISUSE);
    TP_CHECK_STATUS("null-fn", ts_store_dispatch(store, "{\"type\":\"null-fn\"}"), TS_OK);
    TP_CHECK_STATUS("unlocked(NULL): refused", report->null_status, TS_E_ARGUMENT);

    /* The table of ts_store_add_middleware has no plugin's run. */
    ts_status from_middleware = -999;
    TP_CHECK_STATUS("add middleware", ts_store_add_middleware(store, "try", unlocking_middleware, &from_middleware), TS_OK);
    TP_CHECK_STATUS("try-unlock", ts_store_dispatch(store, "{\"type\":\"try-unlock\"}"), TS_OK);
    TP_CHECK_STATUS("unlocked from ts_store_add_middleware's table: refused", from_middleware, TS_E_MISUSE);
    ts_store_destroy(store);
}

static int tail_saw_wait, tail_saw_after_remove;
static int remove_returned; /* under report_lock */
static ts_status tail_middleware(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)api;
    (void)ctx;
    if (strcmp(action->type, "wait") == 0) {
        tail_saw_wait++;
        if (read_field(&remove_returned)) tail_saw_after_remove++;
    }
    return next(action->json);
}

typedef struct remover {
    ts_store *store;
    ts_status status;
    pthread_t thread;
} remover;

static void *removing(void *self) {
    remover *r = self;
    r->status = ts_store_remove_middleware(r->store, "tail");
    pthread_mutex_lock(report_lock);
    remove_returned = 1;
    pthread_mutex_unlock(report_lock);
    return NULL;
}

static void *destroying(void *self) {
    remover *r = self;
    ts_store_destroy(r->store);
    pthread_mutex_lock(report_lock);
    remove_returned = 1;
    pthread_mutex_unlock(report_lock);
    return NULL;
}

void test_unlock__removeMiddlewareAndDestroyWaitForARunThatLetGo(void) {
    ts_store *store = new_store();
    if (report == NULL) return;
    TP_CHECK_STATUS("add tail", ts_store_add_middleware(store, "tail", tail_middleware, NULL), TS_OK);
    set_gate(0);
    call a;
    start(&a, store, "{\"type\":\"wait\"}");
    TP_CHECK("the run waits", wait_inside(1));
    remover r = {store, -999, 0};
    remove_returned = 0;
    pthread_create(&r.thread, NULL, removing, &r);
    tp_sleep_ms(200);
    TP_CHECK("ts_store_remove_middleware waits for the run that let go of the store", !read_field(&remove_returned));
    set_gate(1);
    pthread_join(a.thread, NULL);
    pthread_join(r.thread, NULL);
    TP_CHECK_STATUS("remove", r.status, TS_OK);
    TP_CHECK_STATUS("the waiting dispatch", a.status, TS_OK);
    TP_CHECK("it ran through the chain it started with", tail_saw_wait == 1);
    TP_CHECK("never after ts_store_remove_middleware returned", tail_saw_after_remove == 0);

    /* ts_store_destroy: the run finishes before the plugin's destroy(). */
    set_gate(0);
    int before = read_field(&report->waits_done);
    pthread_mutex_lock(report_lock);
    report->destroyed = 0; /* the stores before this one were destroyed */
    pthread_mutex_unlock(report_lock);
    start(&a, store, "{\"type\":\"wait\"}");
    TP_CHECK("the run waits", wait_inside(1));
    remover d = {store, TS_OK, 0};
    remove_returned = 0;
    pthread_create(&d.thread, NULL, destroying, &d);
    tp_sleep_ms(200);
    TP_CHECK("ts_store_destroy waits for the run that let go of the store", !read_field(&report->destroyed));
    set_gate(1);
    pthread_join(a.thread, NULL);
    pthread_join(d.thread, NULL);
    TP_CHECK_STATUS("the dispatch under way finished", a.status, TS_OK);
    TP_CHECK("the plugin's destroy() came after it", report->destroyed && report->waits_done_at_destroy == before + 1);
}

int ts_test_suite_option(int argc, char **argv, int i) { return tp_option(argc, argv, i); }
