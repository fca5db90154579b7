/*
 * test_shutdown.c - the store's shutdown protocol, seen from plugins.
 *
 * The rule (turnstate.h, ts_store_destroy): when ts_store_destroy begins the
 * store closes; dispatches under way finish; every new call, from any
 * thread, through a kept ts_store_api table or from a plugin's destroy(),
 * answers TS_E_STORE_GONE and reaches no middleware, reducer or listener.
 * Then each plugin's destroy() runs, last loaded first, and no plugin's
 * run() is called once its destroy() has begun.
 *
 * Uses shutdown-watch (shutdown_plugin.c, built by run.sh as
 * plugins/shutdown/watch.so), which counts violations from inside, and the
 * shipped delay, guard and journal plugins in the order that crashed before
 * the protocol existed.
 */
#include "plugin_test.h"
#include "shutdown_plugin.h"

#include <pthread.h>

static char *count_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    long long n = slice ? atoll(slice) : 0;
    if (slice != NULL && strcmp(action->type, "tick") != 0 && strcmp(action->type, "from-destroy") != 0 &&
        strcmp(action->type, "inc") != 0)
        return NULL;
    char *out = malloc(32);
    if (out) snprintf(out, 32, "%lld", slice ? n + 1 : 0);
    return out;
}

static void counting_listener(ts_store *store, void *ctx) {
    (void)store;
    __atomic_add_fetch((int *)ctx, 1, __ATOMIC_SEQ_CST);
}

static sp_counters *report(void) {
    char path[1100];
    snprintf(path, sizeof path, "%s/shutdown/watch.so", tp_plugin_dir());
    void *handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
    if (handle == NULL) return NULL;
    sp_counters *r = dlsym(handle, "sp_report");
    dlclose(handle); /* drops only this reference: the store's stays */
    return r;
}

static const char *watch_path(void) {
    static char path[1100];
    snprintf(path, sizeof path, "%s/shutdown/watch.so", tp_plugin_dir());
    return path;
}

/* A plugin's destroy() dispatches through its kept table: the plugins
 * destroyed before it (loaded after it) must not run, and the dispatch
 * answers TS_E_STORE_GONE. Before the protocol it reached them every time. */
void test_shutdown__dispatchFromDestroyReachesNoDestroyedPlugin(void) {
    ts_store *store = NULL;
    int notified = 0;
    uint64_t token;
    TP_CHECK_STATUS("create", ts_store_create(NULL, &store), TS_OK);
    TP_CHECK_STATUS("reducer", ts_store_add_reducer(store, "count", count_reducer, NULL), TS_OK);
    TP_CHECK_STATUS("load first", ts_store_load_plugin(store, watch_path(), "{\"id\":1,\"dispatch_in_destroy\":true}"), TS_OK);
    TP_CHECK_STATUS("load second", ts_store_load_plugin(store, watch_path(), "{\"id\":2}"), TS_OK);
    TP_CHECK_STATUS("load third", ts_store_load_plugin(store, watch_path(), "{\"id\":3}"), TS_OK);
    sp_counters *r = report();
    TP_CHECK("sp_report found", r != NULL);
    if (r == NULL) return;
    memset(r, 0, sizeof *r);
    r->destroy_dispatch_status = 12345;
    TP_CHECK_STATUS("dispatch", ts_store_dispatch(store, "{\"type\":\"inc\"}"), TS_OK);
    TP_CHECK_STATUS("subscribe", ts_store_subscribe(store, NULL, counting_listener, &notified, &token), TS_OK);
    ts_store_destroy(store);
    TP_CHECK_INT("three destroyed", r->destroyed, 3);
    TP_CHECK_INT("last loaded destroyed first", r->destroy_order[0], 3);
    TP_CHECK_INT("then the second", r->destroy_order[1], 2);
    TP_CHECK_INT("first loaded destroyed last", r->destroy_order[2], 1);
    TP_CHECK_INT("no run() after its destroy()", r->run_after_destroy, 0);
    TP_CHECK_STATUS("dispatch from destroy() answers TS_E_STORE_GONE", r->destroy_dispatch_status, TS_E_STORE_GONE);
    TP_CHECK_INT("no listener called by it", notified, 0);
}

/* A plugin thread dispatches in a loop while the store is destroyed, with
 * another plugin after it in the chain: no dispatch that starts after
 * destroy() began is applied, and no plugin runs after its destroy(). */
void test_shutdown__noDispatchAppliedOrRunAfterDestroyBegan(void) {
    int rounds = ts_test_quick ? 10 : 60, i;
    sp_counters *r = NULL;
    for (i = 0; i < rounds; i++) {
        ts_store *store = NULL;
        TP_CHECK_STATUS("create", ts_store_create(NULL, &store), TS_OK);
        ts_store_add_reducer(store, "count", count_reducer, NULL);
        TP_CHECK_STATUS("load thread", ts_store_load_plugin(store, watch_path(), "{\"id\":1,\"thread\":true}"), TS_OK);
        TP_CHECK_STATUS("load after", ts_store_load_plugin(store, watch_path(), "{\"id\":2}"), TS_OK);
        if (r == NULL) {
            r = report();
            if (r == NULL) {
                TP_CHECK("sp_report found", 0);
                ts_store_destroy(store);
                return;
            }
            memset(r, 0, sizeof *r);
        }
        tp_sleep_ms(i % 3); /* let the thread get going, sometimes */
        ts_store_destroy(store);
    }
    TP_CHECK_INT("every instance destroyed", r->destroyed, 2 * rounds);
    TP_CHECK_INT("no run() after its destroy()", r->run_after_destroy, 0);
    TP_CHECK_INT("no dispatch applied after destroy() began", r->ok_after_destroy_began, 0);
    TP_CHECK("the threads did dispatch", r->thread_dispatches > 0);
}

/* The shipped plugins in docs/plugins.md's order: delay, then journal or guard.
 * Delayed actions are dispatched by delay's worker while the store is
 * destroyed. Before the protocol the worker ran journal_run on a freed
 * instance (a crash in 1-3% of runs, every run under ASan). */
static void shipped_plugins(const char *second, const char *config) {
    int rounds = ts_test_quick ? 3 : 20, i, j, queued = 0;
    char folder[] = "/tmp/ts-shutdown-XXXXXX", journal_config[200], journal_path[100];
    if (config == NULL) {
        TP_CHECK("temporary folder", mkdtemp(folder) != NULL);
        snprintf(journal_path, sizeof journal_path, "%s/state.journal", folder);
        snprintf(journal_config, sizeof journal_config, "{\"path\":\"%s\",\"fsync\":\"never\"}", journal_path);
        config = journal_config;
    }
    for (i = 0; i < rounds; i++) {
        ts_store *store = NULL;
        if (config == journal_config) unlink(journal_path);
        TP_CHECK_STATUS("create", ts_store_create(NULL, &store), TS_OK);
        ts_store_add_reducer(store, "count", count_reducer, NULL);
        TP_CHECK_STATUS("load delay", ts_store_load_plugin(store, tp_plugin("delay"), NULL), TS_OK);
        TP_CHECK_STATUS("load second", ts_store_load_plugin(store, tp_plugin(second), config), TS_OK);
        for (j = 0; j < 300; j++) {
            if (ts_store_dispatch(store, "{\"type\":\"@@delay\",\"payload\":{\"ms\":0,\"action\":{\"type\":\"inc\"}}}") == TS_OK)
                queued++;
        }
        ts_store_destroy(store); /* before the protocol: a crash here, in journal_run or guard_run */
    }
    if (config == journal_config) {
        unlink(journal_path);
        rmdir(folder);
    }
    TP_CHECK_INT("every @@delay was queued (delay swallows it)", queued, 300 * rounds);
}

/* A store closed by ts_store_destroy refuses what a plugin's destroy()
 * dispatches through its kept table, and calls no listener for it. */
void test_shutdown__closedStoreRefusesDispatchFromDestroyAndNotifiesNoListener(void) {
    ts_store *store = NULL;
    int notified = 0;
    uint64_t token;
    TP_CHECK_STATUS("create", ts_store_create("{\"count\":0}", &store), TS_OK);
    TP_CHECK_STATUS("reducer", ts_store_add_reducer(store, "count", count_reducer, NULL), TS_OK);
    TP_CHECK_STATUS("subscribe", ts_store_subscribe(store, NULL, counting_listener, &notified, &token), TS_OK);
    TP_CHECK_STATUS("dispatch", ts_store_dispatch(store, "{\"type\":\"inc\"}"), TS_OK);
    TP_CHECK_INT("notified once", notified, 1);
    /* The store as a plugin's destroy() sees it: closed, not yet freed (its
     * table is valid until destroy() returns). */
    TP_CHECK_STATUS("load watch", ts_store_load_plugin(store, watch_path(), "{\"id\":9,\"dispatch_in_destroy\":true}"), TS_OK);
    sp_counters *r = report();
    if (r) memset(r, 0, sizeof *r);
    ts_store_destroy(store);
    if (r) TP_CHECK_STATUS("destroy's dispatch refused", r->destroy_dispatch_status, TS_E_STORE_GONE);
    TP_CHECK_INT("no listener after close", notified, 1);
    TP_CHECK_CONTAINS("the message says why", ts_last_error(), "closed");
}

/* The shipped plugins: delay, then the journal (in a temporary folder). */
void test_shutdown__delayWorkerNeverRunsADestroyedJournal(void) { shipped_plugins("journal", NULL); }

/* The shipped plugins: delay, then the guard. */
void test_shutdown__delayWorkerNeverRunsADestroyedGuard(void) { shipped_plugins("guard", "{\"deny\":[\"nothing/*\"]}"); }

int ts_test_suite_option(int argc, char **argv, int i) { return tp_option(argc, argv, i); }
