/*
 * app_reducers.c - the reducers of the inspector's test program
 * (Tests/inspector/app.c) for turnstate-testgen: a session recorded with the
 * inspector and exported (GET /api/export) becomes a test of these reducers.
 * It includes app.c itself, main() renamed, so the test runs the reducers the
 * program ran (the whole-slice ones; app.c's "patch" mode gives the same
 * states). The guard plugin app.c loads is not added: the export holds only
 * the actions that reached the reducers.
 */
#define main inspector_app_main
#include "../inspector/app.c"
#undef main

ts_status ts_testgen_setup(ts_store *store);

ts_status ts_testgen_setup(ts_store *store) {
    ts_status status = ts_store_add_reducer(store, "count", counter, NULL);
    if (status != TS_OK) return status;
    return ts_store_add_reducer(store, "todos", todos, NULL);
}
