/*
 * ticks.h - the inspector's clock: a cheap tick counter for run(), and the
 * calibration that turns ticks into times when the page asks (never in
 * run()). On x86 a tick is the time-stamp counter (a few ns to read, where
 * clock_gettime costs tens); elsewhere it is CLOCK_MONOTONIC in ns. Ticks
 * are converted by comparing them with CLOCK_MONOTONIC over the plugin's
 * lifetime so far. Header-only (static inline), C99 and POSIX.
 *
 * Locking: none. The origin is set once in create() (ticks_start), before
 * any other thread sees it, and only read after.
 */
#ifndef TS_INSPECTOR_TICKS_H
#define TS_INSPECTOR_TICKS_H

#include <stdint.h>
#include <time.h>

/* When the plugin was created, on the three clocks. */
typedef struct ticks_origin {
    uint64_t tick0;  /* ticks_now() */
    uint64_t mono0;  /* CLOCK_MONOTONIC, ns */
    double wall0_ms; /* CLOCK_REALTIME, ms since the epoch */
} ticks_origin;

static inline uint64_t ticks_monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static inline uint64_t ticks_now(void) {
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    return ticks_monotonic_ns();
#endif
}

static inline void ticks_start(ticks_origin *o) {
    struct timespec wall;
    o->tick0 = ticks_now();
    o->mono0 = ticks_monotonic_ns();
    clock_gettime(CLOCK_REALTIME, &wall);
    o->wall0_ms = (double)wall.tv_sec * 1e3 + (double)wall.tv_nsec / 1e6;
}

/* Nanoseconds per tick, as measured since the origin. */
static inline double ticks_ns_per_tick(const ticks_origin *o) {
#if defined(__x86_64__) || defined(__i386__)
    uint64_t t = ticks_now(), ns = ticks_monotonic_ns();
    if (t <= o->tick0 + 1000000u || ns <= o->mono0) return 1.0 / 2.5; /* under 1 ms in: assume 2.5 GHz */
    return (double)(ns - o->mono0) / (double)(t - o->tick0);
#else
    (void)o;
    return 1.0;
#endif
}

/* The wall-clock time (ms since the epoch) of tick t, at ns_per_tick. */
static inline double ticks_wall_ms(const ticks_origin *o, uint64_t t, double ns_per_tick) {
    return o->wall0_ms + ((double)t - (double)o->tick0) * ns_per_tick / 1e6;
}

#endif /* TS_INSPECTOR_TICKS_H */
