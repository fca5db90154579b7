/*
 * travel.h - the commands that change the store: time travel (jump, back to
 * the present, skip), import, and dispatch from the page. They read the
 * timeline from the history (history.h) and change the store only through
 * its table (replace_state, apply, dispatch).
 *
 * Locking (travel.c owns `command_lock`):
 * - Commands run one at a time, under `command_lock`, on the HTTP thread
 *   that asked. Jump, present, skip and import run their body with the
 *   store held (ts_store_api.exclusive), so no dispatch of another thread
 *   lands between reading the timeline and changing the store; dispatch
 *   goes through the whole chain, as the app's own dispatches do.
 * - Order: `command_lock`, then the store, then the history's lock (taken
 *   inside the history's functions, never held here).
 * - While a body runs, its thread is published in the gate (travel_gate,
 *   below: `replaying` is __atomic, `replay_thread` is written before it is
 *   set), so that run() can drop what listeners dispatch on that thread
 *   during a replay (travel_replaying_here, inlined in run()).
 */
#ifndef TS_INSPECTOR_TRAVEL_H
#define TS_INSPECTOR_TRAVEL_H

#include "turnstate_plugin.h"

#include "history.h"
#include "../common/store_api.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct travel travel;

/* Whether the store's table has state versions (state_version,
 * replace_state_from, last_error: libturnstate 0.2.0 with versions). */
static inline int travel_store_versioned(const ts_store_api *store) {
    return TS_API_HAS(store, last_error) &&
           store->state_version != NULL && store->replace_state_from != NULL && store->last_error != NULL;
}

/* The store's state version: what an export records and an import migrates
 * to (0 for a table without versions, or when it cannot be read). */
static inline uint32_t travel_store_version(const ts_store_api *store) {
    uint32_t version = 0;
    if (!travel_store_versioned(store) || store->state_version(&version) != TS_OK) return 0;
    return version;
}

/* What run() reads of the commands without a lock. */
typedef struct travel_gate {
    int replaying;           /* a command replays on replay_thread: __atomic */
    pthread_t replay_thread; /* written only by that command's thread */
} travel_gate;

/* Commands on `store` that keep `h` up to date; both must outlive it. Also
 * finds ts_last_error (for the store's reasons) if the library is where
 * dlsym sees it. NULL when out of memory. */
travel *travel_create(const ts_store_api *store, history *h);
void travel_destroy(travel *t);

/* t's gate, which lives as long as t. */
travel_gate *travel_gate_of(travel *t);

/* run(): whether this thread is replaying for a command (the action a
 * listener dispatches then is in the recorded history already). */
static inline int travel_replaying_here(const travel_gate *g) {
    return __atomic_load_n(&g->replaying, __ATOMIC_ACQUIRE) && pthread_equal(pthread_self(), g->replay_thread);
}

/* The store's reason for `status` on this thread (ts_last_error when it
 * says something, else the status's name). */
const char *travel_reason(const travel *t, ts_status status);

/* Each returns 0, or -1 with the reason in why (size bytes). */

/* Time travel to the state after record seq. */
int travel_jump(travel *t, uint64_t seq, char *why, size_t size);
/* Back to the present (nothing to do when not travelling). */
int travel_present(travel *t, char *why, size_t size);
/* Skips (skip 1) or takes back (0) record seq, and recomputes the present. */
int travel_skip(travel *t, uint64_t seq, int skip, char *why, size_t size);
/* Replaces the history with a session in the journal's format (session.h). */
int travel_import(travel *t, const char *text, size_t length, char *why, size_t size);
/* Dispatches an action through the whole chain. */
int travel_dispatch(travel *t, const char *action, char *why, size_t size);

#endif /* TS_INSPECTOR_TRAVEL_H */
