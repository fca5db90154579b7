/*
 * bench_callbacks.h - the reducer and listener of the C workloads (C1..C6,
 * P1, memory, start-up), shared by bench.c, startup.c and the ctypes helper
 * library (callbacks.c). Kept as cheap as possible so that the measurement is
 * the store, not the callbacks.
 */
#ifndef TS_BENCH_CALLBACKS_H
#define TS_BENCH_CALLBACKS_H

#include "turnstate.h"

#include <stdlib.h>
#include <string.h>

/* The action every counter workload dispatches. */
#define BENCH_ADD_ACTION "{\"type\":\"counter/add\",\"payload\":1}"

/* Parses a small decimal integer (the counter's slice, a payload). */
static inline long long bench_parse_ll(const char *text) {
    long long sign = 1, value = 0;
    if (*text == '-') {
        sign = -1;
        text++;
    }
    while (*text >= '0' && *text <= '9') value = value * 10 + (*text++ - '0');
    return sign * value;
}

/* The counter reducer (owns "count"): "0" at init, +payload on counter/add,
 * NULL ("unchanged") for anything else. Returns malloc'ed text, as the
 * header asks. */
static inline char *bench_counter_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice == NULL) {
        char *first = (char *)malloc(2);
        if (first != NULL) memcpy(first, "0", 2);
        return first;
    }
    if (strcmp(action->type, "counter/add") != 0) return NULL;
    long long value = bench_parse_ll(slice) + (action->payload ? bench_parse_ll(action->payload) : 1);
    char digits[24];
    int n = 0, negative = value < 0;
    unsigned long long magnitude = negative ? 0ULL - (unsigned long long)value : (unsigned long long)value;
    do {
        digits[n++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude != 0);
    char *out = (char *)malloc((size_t)n + 2);
    if (out == NULL) return NULL;
    int at = 0;
    if (negative) out[at++] = '-';
    while (n > 0) out[at++] = digits[--n];
    out[at] = '\0';
    return out;
}

/* A reducer for a slice that no benchmark action changes (the 10 MB
 * document of C4/C5): always "unchanged". */
static inline char *bench_unchanged_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)action;
    (void)ctx;
    if (slice == NULL) {
        char *first = (char *)malloc(3);
        if (first != NULL) memcpy(first, "{}", 3);
        return first;
    }
    return NULL;
}

/* The listener: counts its calls in *(unsigned long long *)ctx. Listeners run
 * with the store held, so a plain increment is safe even in C6. */
static inline void bench_counting_listener(ts_store *store, void *ctx) {
    (void)store;
    ++*(unsigned long long *)ctx;
}

#endif
