/*
 * travel.c - the commands that change the store (travel.h): jump, present,
 * skip, import and dispatch.
 *
 * Locking: this file owns `command_lock` (one command at a time). A body
 * runs with the store held (exclusive), and takes the history's lock only
 * inside history_* calls, so the order is command_lock, the store, the
 * history's lock: the order run() has for the last two. The gate's
 * `replaying` and `replay_thread` are written only by the body's thread,
 * under command_lock, and read by run() (travel_replaying_here): replaying
 * is __atomic, and replay_thread is written before replaying is set.
 */
#define _GNU_SOURCE 1

#include "travel.h"

#include "session.h"
#include "ticks.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct travel {
    travel_gate gate;                /* run()'s side (travel.h) */
    const ts_store_api *store;
    history *history;
    const char *(*last_error)(void); /* ts_last_error, if libturnstate is loaded where dlsym sees it */
    pthread_mutex_t command_lock;    /* one command that changes the store at a time */
};

travel *travel_create(const ts_store_api *store, history *h) {
    travel *t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->store = store;
    t->history = h;
    pthread_mutex_init(&t->command_lock, NULL);
    /* ts_last_error, for the reasons of refused actions, if the library is
     * where dlsym can see it (no link to it). */
    void *symbol = dlsym(RTLD_DEFAULT, "ts_last_error");
    if (symbol == NULL) {
        void *lib = dlopen("libturnstate.so.0", RTLD_LAZY | RTLD_NOLOAD);
        if (lib) symbol = dlsym(lib, "ts_last_error");
    }
    if (symbol) memcpy(&t->last_error, &symbol, sizeof symbol);
    return t;
}

void travel_destroy(travel *t) {
    if (t == NULL) return;
    pthread_mutex_destroy(&t->command_lock);
    free(t);
}

travel_gate *travel_gate_of(travel *t) { return &t->gate; }

const char *travel_reason(const travel *t, ts_status status) {
    const char *why = t->last_error ? t->last_error() : NULL;
    return why && *why ? why : t->store->status_name(status);
}

/* ---- Running a command ------------------------------------------------------- */

typedef struct command {
    travel *t;
    int (*body)(struct command *);
    uint64_t seq;     /* jump, skip: the record */
    int skip;         /* skip: skip (1) or take back (0) */
    const char *text; /* import: the session */
    size_t length;
    char *why;
    size_t size;
    int result; /* 0, or -1 with `why` */
} command;

static ts_status command_body(void *ctx) {
    command *c = ctx;
    travel *t = c->t;
    /* Actions that listeners dispatch on this thread while the command
     * changes the store are dropped (run()): their effect is recorded. */
    t->gate.replay_thread = pthread_self();
    __atomic_store_n(&t->gate.replaying, 1, __ATOMIC_RELEASE);
    c->result = c->body(c);
    __atomic_store_n(&t->gate.replaying, 0, __ATOMIC_RELEASE);
    return TS_OK;
}

static int run_command(command *c) {
    travel *t = c->t;
    pthread_mutex_lock(&t->command_lock);
    c->result = 0;
    /* exclusive came with apply (0.2.0); a table without it (a stand-in, as
     * the benchmark's) runs the body as it is. */
    if (TS_API_HAS(t->store, exclusive) &&
        t->store->exclusive != NULL) {
        ts_status status = t->store->exclusive(command_body, c);
        if (status != TS_OK)
            c->result = failf(c->why, c->size, "the store could not be held: %s", travel_reason(t, status));
    } else {
        command_body(c);
    }
    pthread_mutex_unlock(&t->command_lock);
    history_bump(t->history);
    return c->result;
}

/* ---- Bodies (the store held) ---------------------------------------------------- */

/* Puts the store in the state after record `target` of the current timeline:
 * replace_state with the nearest known state at or before it, then apply
 * (no middleware) every accepted, unskipped action up to it, keeping each
 * state. 0, or -1 with `why`. */
static int replay_to(travel *t, uint64_t target, char *why, size_t size) {
    history_plan plan;
    if (history_plan_replay(t->history, target, &plan, why, size) != 0) return -1;
    int result = 0;
    ts_status status = t->store->replace_state(plan.from);
    if (status != TS_OK) result = failf(why, size, "replace_state failed: %s", travel_reason(t, status));
    for (size_t i = 0; i < plan.count && result == 0; i++) {
        if (plan.steps[i].action == NULL) continue;
        status = t->store->apply(plan.steps[i].action);
        char *state = NULL;
        if (status == TS_OK && t->store->get_state(NULL, &state) != TS_OK) state = NULL;
        history_replayed(t->history, plan.steps[i].seq, status, state, status == TS_OK ? NULL : travel_reason(t, status));
    }
    history_plan_free(&plan);
    return result;
}

/* Time travel to the state after record c->seq. The first jump saves the
 * present (the state and the newest record); actions recorded after it while
 * travelling are applied to the past, so their states are not kept
 * (history_end): back in the present they are applied again after the saved
 * present. */
static int jump_body(command *c) {
    travel *t = c->t;
    uint64_t last;
    int travelling = history_travel_begin(t->history, &last);
    if (c->seq > last)
        return failf(c->why, c->size, "there is no record #%llu (the newest is #%llu)", (unsigned long long)c->seq,
                     (unsigned long long)last);
    if (!travelling) {
        char *present = NULL;
        ts_status status = t->store->get_state(NULL, &present);
        if (status != TS_OK) return failf(c->why, c->size, "get_state failed: %s", travel_reason(t, status));
        history_travel_save(t->history, present, last);
    }
    int result = replay_to(t, c->seq, c->why, c->size);
    history_travel_end(t->history, result == 0, c->seq, travelling);
    return result;
}

/* Back to the present: the state saved when travelling began, then the
 * actions recorded since (the app's and the page's), applied again. */
static int present_body(command *c) {
    travel *t = c->t;
    char *present = NULL;
    uint64_t from, last;
    if (!history_present_take(t->history, &present, &from, &last)) return 0;
    int result = 0;
    if (present && last == from) {
        ts_status status = t->store->replace_state(present);
        if (status != TS_OK) result = failf(c->why, c->size, "replace_state failed: %s", travel_reason(t, status));
    } else {
        result = replay_to(t, last, c->why, c->size);
    }
    /* `present` came from get_state: the table's free (a strdup'ed copy went
     * into the record). */
    if (present) t->store->free(present);
    if (result == 0) history_present_done(t->history);
    return result;
}

/* Skips (or takes back) record c->seq, then recomputes the present by
 * replaying from the last known state before it. */
static int skip_body(command *c) {
    uint64_t last;
    if (history_skip(c->t->history, c->seq, c->skip, &last, c->why, c->size) != 0) return -1;
    return replay_to(c->t, last, c->why, c->size);
}

/* Replaces the history with a session in the journal's format (session.h):
 * every record is checked first, and nothing changes unless all are well
 * formed; then the first snapshot (S) is the state to start from, and each
 * action (A) after it is applied and recorded, as accepted or as refused
 * with the store's reason (a refused one changes nothing). */
static int import_body(command *c) {
    travel *t = c->t;
    session_info info;
    if (session_check(c->text, c->length, &info, c->why, c->size) != 0) return -1;
    char *base = malloc(info.base.length + 1);
    if (base == NULL) return failf(c->why, c->size, "out of memory");
    memcpy(base, info.base.json, info.base.length);
    base[info.base.length] = '\0';
    /* A session of another state version: migrated (replace_state_from),
     * or refused (a downgrade, a missing or failing step) with nothing changed. */
    uint32_t version = travel_store_version(t->store);
    ts_status status;
    if (info.version == version) {
        status = t->store->replace_state(base);
    } else if (version == 0 && !travel_store_versioned(t->store)) {
        free(base);
        return failf(c->why, c->size, "line %zu: the session is of state version %lu, and this library cannot migrate "
                     "state (its ts_store_api has no replace_state_from)", info.base.line, (unsigned long)info.version);
    } else {
        status = t->store->replace_state_from(base, info.version);
    }
    free(base);
    if (status != TS_OK && info.version != version)
        return failf(c->why, c->size, "line %zu: the session's state (state version %lu) was refused: %s: %s",
                     info.base.line, (unsigned long)info.version, t->store->status_name(status),
                     t->store->last_error());
    if (status != TS_OK)
        return failf(c->why, c->size, "line %zu: the session's state was refused: %s", info.base.line,
                     travel_reason(t, status));
    char *state = NULL;
    if (t->store->get_state(NULL, &state) != TS_OK) state = NULL;
    history_reset(t->history, state);
    /* The actions after the first snapshot (later snapshots are only read). */
    size_t offset = info.base_end, line = info.base_line;
    session_record r;
    while (session_next(c->text, c->length, &offset, &line, &r, c->why, c->size) == 1) {
        if (r.letter != 'A') continue;
        char *action = malloc(r.length + 1);
        if (action) {
            memcpy(action, r.json, r.length);
            action[r.length] = '\0';
        }
        uint64_t seq = history_take_seq(history_gate_of(t->history));
        uint64_t t0 = ticks_now();
        status = action ? t->store->apply(action) : TS_E_NOMEM;
        uint64_t t1 = ticks_now();
        char *message = NULL;
        state = NULL;
        if (status != TS_OK) message = strdup(travel_reason(t, status));
        else if (t->store->get_state(NULL, &state) != TS_OK) state = NULL;
        /* Text the store refused may be anything (not JSON, not UTF-8): it is
         * shown as a JSON string, never as JSON (verbatim 0). */
        history_end(t->history, seq, action ? action : "", t0, t1 - t0, status, message, state, status == TS_OK);
        free(action);
    }
    return 0;
}

/* ---- The commands ------------------------------------------------------------------ */

int travel_jump(travel *t, uint64_t seq, char *why, size_t size) {
    command c = {t, jump_body, seq, 0, NULL, 0, why, size, 0};
    return run_command(&c);
}

int travel_present(travel *t, char *why, size_t size) {
    command c = {t, present_body, 0, 0, NULL, 0, why, size, 0};
    return run_command(&c);
}

int travel_skip(travel *t, uint64_t seq, int skip, char *why, size_t size) {
    command c = {t, skip_body, seq, skip, NULL, 0, why, size, 0};
    return run_command(&c);
}

int travel_import(travel *t, const char *text, size_t length, char *why, size_t size) {
    command c = {t, import_body, 0, 0, text, length, why, size, 0};
    return run_command(&c);
}

int travel_dispatch(travel *t, const char *action, char *why, size_t size) {
    /* Through the whole chain, as the app's own dispatches; not a body (the
     * store is not held: the chain takes it). */
    pthread_mutex_lock(&t->command_lock);
    ts_status status = t->store->dispatch(action);
    if (status != TS_OK) snprintf(why, size, "%s: %s", t->store->status_name(status), travel_reason(t, status));
    pthread_mutex_unlock(&t->command_lock);
    return status == TS_OK ? 0 : -1;
}
