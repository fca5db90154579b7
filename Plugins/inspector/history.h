/*
 * history.h - the inspector's model: the ring of the last `history` actions
 * (each with its status, timing, and the state after it when known), the
 * base state and the checkpoints that replays start from, the timeline's
 * place when travelling in time, and the feed that tells browsers what is
 * new. It knows nothing of HTTP and never changes the store: travel.c does
 * that, and tells the history what came of it through the functions below.
 *
 * Locking (history.c owns both):
 * - `lock` guards everything in the history but three atomics; every
 *   function below takes it itself, for a short section, and returns with
 *   it released. It is never held while calling the store, except the
 *   table's free and status_name, which do not take the store.
 * - Order: the store, then `lock`. run() is called with the store held;
 *   commands hold it (ts_store_api.exclusive); HTTP threads take `lock`
 *   without the store and never call the store while holding it.
 * - `wake` (a condition of `lock`): new records, a new status, or stopping;
 *   the event streams wait on it (history_feed).
 * - The gate (history_gate, below): what run() reads without the lock,
 *   atomics (the newest record number, the pause switch, the count of open
 *   event streams) and run()'s checkpoint countdown, which is run()'s alone
 *   (run() calls on a store are serialized). It is in this header so that
 *   run()'s checks inline; only the functions here and history.c use it.
 */
#ifndef TS_INSPECTOR_HISTORY_H
#define TS_INSPECTOR_HISTORY_H

#include "turnstate_plugin.h"

#include "config.h"
#include "text.h"
#include "ticks.h"

#include <stddef.h>
#include <stdint.h>

typedef struct history history;

/* A history of cfg->history records that starts from `initial` (a state
 * from get_state, taken over: the state when the plugin was loaded). The
 * store table, the config and the clock must outlive it. NULL when out of
 * memory (then `initial` is freed). */
history *history_create(const ts_store_api *store, const inspector_config *cfg, const ticks_origin *clock,
                        char *initial);

/* Ends every event stream (history_feed returns 1); destroy's first step. */
void history_stop(history *h);

/* Frees it, once nothing can call it any more (the server stopped). */
void history_destroy(history *h);

/* ---- Recording: run(), on the dispatching threads ------------------------ */

/* What run() reads and changes without the history's lock. */
typedef struct history_gate {
    uint64_t last_seq;         /* the newest number given to a record (0: none yet): __atomic;
                                  run() takes a number when an action arrives and writes
                                  its slot when next() returned */
    int paused;                /* __atomic */
    int watchers;              /* open event streams: __atomic */
    uint64_t until_checkpoint; /* run()'s countdown to the next checkpoint */
    uint64_t checkpoint_every;
} history_gate;

/* h's gate, which lives as long as h. */
history_gate *history_gate_of(history *h);

/* The number of the action that arrived, or 0 while recording is paused. */
static inline uint64_t history_begin(history_gate *g) {
    if (__atomic_load_n(&g->paused, __ATOMIC_RELAXED)) return 0;
    /* Its number now: a nested dispatch comes after it, as the reducers see
     * them; its slot when the chain returned (history_end). */
    return __atomic_add_fetch(&g->last_seq, 1, __ATOMIC_ACQ_REL);
}

/* A number for an action that is recorded whatever the pause (import). */
static inline uint64_t history_take_seq(history_gate *g) {
    return __atomic_add_fetch(&g->last_seq, 1, __ATOMIC_ACQ_REL);
}

/* Whether run() should read the state after an accepted action: while a
 * browser watches, and every history/4 actions (a checkpoint). */
static inline int history_state_due(history_gate *g) {
    if (__atomic_load_n(&g->watchers, __ATOMIC_RELAXED) > 0) return 1;
    if (--g->until_checkpoint != 0) return 0;
    g->until_checkpoint = g->checkpoint_every;
    return 1;
}

/* Records action `seq` (json: its text) once the chain returned: when it
 * started (ticks), how long it took, its status, the reason when refused
 * (malloc'ed, taken over) and the state after it (from get_state, taken
 * over; NULL: not read). verbatim: the text is JSON the store parsed (shown
 * as it is); 0: text the store refused, which may be anything (shown as a
 * JSON string). */
void history_end(history *h, uint64_t seq, const char *json, uint64_t start, uint64_t duration, ts_status status,
                 char *message, char *state, int verbatim);

/* ---- The page's view (JSON) -------------------------------------------------- */

void history_set_paused(history *h, int paused);

/* Tells the event streams that the status changed. */
void history_bump(history *h);

/* {"paused", "travelling", "travel", "read_only", "history", "dropped",
 * "newest", "base", "version"} */
void history_status_json(history *h, sb *out);

/* {"status": {...}, "records": [summary...]}: every record in the ring. */
void history_actions_json(history *h, sb *out);

/* {"seq", "action", "record", "state", "before"} of record seq (or of the
 * base). 0, or -1 when there is no such record in the history. */
int history_state_json(history *h, uint64_t seq, sb *out);

/* The session in the journal's format (session.h): a snapshot of the
 * earliest known state, then every accepted, unskipped action after it.
 * Malloc'ed, or NULL when out of memory at once (when memory runs out part
 * way, it holds what fit). */
char *history_export(history *h, size_t *length);

/* ---- The feed: the event streams (sse.c) ------------------------------------ */

/* One reader's place in the feed. */
typedef struct history_cursor {
    uint64_t seq;            /* the last record sent */
    uint64_t status_version; /* the last status sent */
    int hello;               /* the first status was sent */
} history_cursor;

/* A reader opens (from now on states are read after every action) at the
 * start of the ring; history_unwatch when it closes. */
void history_watch(history *h, history_cursor *cursor);
void history_unwatch(history *h);

/* What the feed gives a reader: an event with its name ("status", "action",
 * "dropped") and JSON data. Called with `lock` held: it must only append
 * the event somewhere, never block or call into the inspector. */
typedef void history_event_fn(void *ctx, const char *event, const char *json, size_t length);

/* Gives the reader at *cursor what it has not seen (a status when it
 * changed, "dropped" when it fell more than the ring behind, then up to
 * `batch` records), after waiting up to wait_seconds for something new if
 * there was nothing. Returns 0 (maybe with no event: time to say it is
 * alive), 1 when the history stops (the stream should end), -1 when out of
 * memory. */
int history_feed(history *h, history_cursor *cursor, size_t batch, int wait_seconds, history_event_fn *event, void *ctx);

/* ---- Time travel: travel.c, in a command, with the store held ---------------- */

typedef struct history_step {
    uint64_t seq;
    char *action; /* NULL: nothing to apply (refused, skipped) */
} history_step;

/* What to replay to reach the state after record `target`: the nearest
 * known state at or before it, and the records after that up to target. */
typedef struct history_plan {
    char *from;           /* that state (malloc'ed) */
    history_step *steps;
    size_t count;
} history_plan;

/* Fills *plan. 0, or -1 with the reason in why (no longer in the history,
 * no state known before it, out of memory). */
int history_plan_replay(history *h, uint64_t target, history_plan *plan, char *why, size_t size);
void history_plan_free(history_plan *plan);

/* What replaying record `seq` gave: TS_OK and the state after it (from
 * get_state, taken over; NULL: not read), or another status and the
 * store's reason (a reducer that is not pure?): the record says so. */
void history_replayed(history *h, uint64_t seq, ts_status status, char *state, const char *reason);

/* Jump, step 1: whether the store shows the past already, and the newest
 * record (*newest). */
int history_travel_begin(history *h, uint64_t *newest);

/* Jump, step 2 (from the present): the present state (from get_state,
 * taken over) and its newest record, kept to come back to. */
void history_travel_save(history *h, char *present, uint64_t newest);

/* Jump, step 3: arrived after record seq (ok), or not: then, if the jump
 * started in the present (!was_travelling), still in the present. */
void history_travel_end(history *h, int ok, uint64_t seq, int was_travelling);

/* Back to the present, step 1: 0 when not travelling; else 1 with the saved
 * present (*present, taken over, NULL if it was not kept), the newest
 * record when travelling began (*from) and the newest now (*newest). The
 * present's state is recorded on the last accepted action up to *from. */
int history_present_take(history *h, char **present, uint64_t *from, uint64_t *newest);

/* Back to the present, step 2: no longer travelling. */
void history_present_done(history *h);

/* Skips (skip 1) or takes back (0) record seq: every state from it on
 * belongs to the old timeline and is dropped, and so is a saved present.
 * 0 with the newest record in *newest (replay up to it), or -1 with the
 * reason in why (no such record, refused, no known state before it). */
int history_skip(history *h, uint64_t seq, int skip, uint64_t *newest, char *why, size_t size);

/* Import: a new base (`state`, from get_state, taken over; NULL if not
 * read) after which the imported records come; everything recorded so far
 * leaves the view, and travelling ends. */
void history_reset(history *h, char *state);

#endif /* TS_INSPECTOR_HISTORY_H */
