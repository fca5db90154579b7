/*
 * callbacks.c - the C1 reducer and listener as a shared object, for the
 * Python benchmark (P1): Python drives the dispatch loop through ctypes
 * while the callbacks are the same C code as in bench.c.
 */
#include "bench_callbacks.h"

char *tsb_counter_reducer(const char *slice, const ts_action *action, void *ctx) {
    return bench_counter_reducer(slice, action, ctx);
}

void tsb_counting_listener(ts_store *store, void *ctx) { bench_counting_listener(store, ctx); }
