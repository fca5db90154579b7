/*
 * todo_reducers.c - the todo demo's reducers (Examples/todo.c) for
 * turnstate-testgen (docs/testgen.md): the setup function a generated test
 * calls on a fresh store, which adds the reducers the demo adds, in the same
 * order, and nothing else (no logger, no listeners: a test checks states).
 *
 * It includes the demo itself, with its main() renamed, so that the test
 * runs the very reducers the demo runs: change todos_reducer in todo.c and
 * the generated tests fail.
 *
 *   cc -std=c99 -IInclude -shared -fPIC Examples/testgen/todo_reducers.c -o todo_reducers.so -lturnstate
 */
#define main todo_demo_main
#include "../todo.c"
#undef main

ts_status ts_testgen_setup(ts_store *store);

ts_status ts_testgen_setup(ts_store *store) {
    ts_status status = ts_store_add_reducer_for(store, "todos", todos_types, todos_reducer, NULL);
    if (status != TS_OK) return status;
    return ts_store_add_reducer_for(store, "filter", filter_types, filter_reducer, NULL);
}
