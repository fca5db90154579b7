/*
 * startup.c - one whole process of a C program using Turnstate: the dynamic
 * loader loads libturnstate (linked normally), then main creates a store,
 * adds the counter reducer, loads one pass-through plugin (argv[1]),
 * dispatches one action and destroys the store. bench.c times this process
 * with its own fork/exec loop. Exit status 0 only if every step succeeded.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_callbacks.h"

#include <stdio.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s PLUGIN.so\n", argv[0]);
        return 2;
    }
    ts_store *store;
    if (ts_store_create(NULL, &store) != TS_OK) return 1;
    int ok = ts_store_add_reducer(store, "count", bench_counter_reducer, NULL) == TS_OK &&
             ts_store_load_plugin(store, argv[1], NULL) == TS_OK &&
             ts_store_dispatch(store, BENCH_ADD_ACTION) == TS_OK;
    if (!ok) fprintf(stderr, "startup: %s\n", ts_last_error());
    ts_store_destroy(store);
    return ok ? 0 : 1;
}
