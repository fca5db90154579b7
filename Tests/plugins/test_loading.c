/*
 * test_loading.c - ts_store_api.loading: the name of the plugin whose
 * create() is under way, from inside that create() (its own calls, and the
 * middleware its dispatches reach), NULL otherwise.
 *
 * Uses plugins/loading/loading.so (loading_plugin.c, built by run.sh), which
 * records what loading answers in its create() and for each action its run()
 * sees, and the shipped undo.so (whose create() dispatches @@undo/clear) and
 * journal.so (whose create() replays its records).
 */
#include "plugin_test.h"

#include "loading_plugin.h"

static lp_counters *report;

static ts_store *new_store(void) {
    ts_store *store = NULL;
    char path[1100];
    TP_CHECK_STATUS("store", ts_store_create(NULL, &store), TS_OK);
    TP_CHECK_STATUS("reducer", ts_store_add_reducer(store, "count", tp_counter_reducer, NULL), TS_OK);
    snprintf(path, sizeof path, "%s/loading/loading.so", tp_plugin_dir());
    TP_CHECK_STATUS("load loading.so", ts_store_load_plugin(store, path, NULL), TS_OK);
    if (report == NULL) {
        void *handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        if (handle != NULL) {
            report = dlsym(handle, "lp_report");
            dlclose(handle); /* drops only this reference: the store's stays */
        }
    }
    if (report != NULL) {
        memset(report->seen, 0, sizeof report->seen);
        report->count = 0;
    }
    return store;
}

static ts_status from_middleware = -999;
static ts_status asking_middleware(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) {
    const char *name = NULL;
    (void)ctx;
    if (strcmp(action->type, "ask") == 0) from_middleware = api->loading(&name);
    return next(action->json);
}

void test_loading__namesThePluginBeingCreatedToTheMiddlewareBeforeIt(void) {
    ts_store *store = new_store();
    if (report == NULL) {
        TP_CHECK("lp_report found", 0);
        return;
    }
    TP_CHECK_STATUS("from its own create()", report->create_status, TS_OK);
    TP_CHECK_STR("its own name", report->create_name, "loading");

    TP_CHECK_STATUS("a dispatch", ts_store_dispatch(store, "{\"type\":\"inc\"}"), TS_OK);
    TP_CHECK_STATUS("undo.so loads", ts_store_load_plugin(store, tp_plugin("undo"), NULL), TS_OK);
    TP_CHECK_STATUS("a dispatch after", ts_store_dispatch(store, "{\"type\":\"inc\"}"), TS_OK);
    TP_CHECK_INT("three actions seen", report->count, 3);
    TP_CHECK_STR("first: inc", report->seen[0].type, "inc");
    TP_CHECK_STATUS("answered", report->seen[0].status, TS_OK);
    TP_CHECK_STR("no plugin being created: NULL", report->seen[0].name, "");
    TP_CHECK_STR("second: undo's load", report->seen[1].type, "@@undo/clear");
    TP_CHECK_STATUS("answered", report->seen[1].status, TS_OK);
    TP_CHECK_STR("dispatched by undo.so's create(): \"undo\"", report->seen[1].name, "undo");
    TP_CHECK_STR("third: inc", report->seen[2].type, "inc");
    TP_CHECK_STR("undo.so in the chain, nothing being created: NULL", report->seen[2].name, "");

    TP_CHECK_STATUS("null-out", ts_store_dispatch(store, "{\"type\":\"null-out\"}"), TS_OK);
    TP_CHECK_STATUS("loading(NULL): refused", report->null_status, TS_E_ARGUMENT);
    TP_CHECK_STATUS("add middleware", ts_store_add_middleware(store, "ask", asking_middleware, NULL), TS_OK);
    TP_CHECK_STATUS("ask", ts_store_dispatch(store, "{\"type\":\"ask\"}"), TS_OK);
    TP_CHECK_STATUS("from ts_store_add_middleware's table: refused", from_middleware, TS_E_MISUSE);
    ts_store_destroy(store);
}

void test_loading__aJournalsReplayIsSeenAsTheJournals(void) {
    char path[512], config[600];
    snprintf(path, sizeof path, "%s/loading-%ld.journal", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
    remove(path);
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"fsync\":\"never\"}", path);
    ts_store *store = new_store();
    TP_CHECK_STATUS("journal.so loads", ts_store_load_plugin(store, tp_plugin("journal"), config), TS_OK);
    TP_CHECK_STATUS("inc", ts_store_dispatch(store, "{\"type\":\"inc\"}"), TS_OK);
    TP_CHECK_STATUS("inc", ts_store_dispatch(store, "{\"type\":\"inc\"}"), TS_OK);
    ts_store_destroy(store);

    store = new_store();
    if (report == NULL) return;
    TP_CHECK_STATUS("journal.so loads again", ts_store_load_plugin(store, tp_plugin("journal"), config), TS_OK);
    TP_CHECK_INT("restored", tp_state_int(store, "/count", -1), 2);
    TP_CHECK_INT("two replayed records seen", report->count, 2);
    TP_CHECK_STR("the first, while journal.so is created", report->seen[0].name, "journal");
    TP_CHECK_STR("the second too", report->seen[1].name, "journal");
    ts_store_destroy(store);
    remove(path);
}

int ts_test_suite_option(int argc, char **argv, int i) { return tp_option(argc, argv, i); }
