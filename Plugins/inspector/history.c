/*
 * history.c - the inspector's model (history.h): the ring of records, the
 * base state and checkpoints, the timeline when travelling, the JSON views
 * and the feed.
 *
 * Locking: this file owns `lock` and `wake`, and is the only one that takes
 * them. Every function of history.h takes `lock` for one short section;
 * the static functions below marked "under lock" are called only inside
 * one. Order: the store, then `lock` (run() and commands hold the store
 * when they call in; HTTP threads do not). Under `lock` the store is called
 * only through its table's free and status_name, which do not take it.
 * The gate's last_seq, paused and watchers are atomics that run() reads
 * without `lock`; its until_checkpoint is run()'s alone.
 */
#define _GNU_SOURCE 1

#include "history.h"

#include "../common/pjson.h"
#include "session.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct record {
    uint64_t seq;        /* 0: empty slot */
    char *action;        /* the action's JSON text as it reached the plugin */
    size_t action_capacity;
    uint64_t start;      /* ticks when it arrived */
    uint64_t duration;   /* ticks the rest of the chain (next()) took */
    ts_status status;    /* what next() returned */
    int done;            /* next() has returned */
    int skipped;         /* left out of replays */
    int verbatim;        /* action is JSON the store parsed (shown as it is);
                            0: an imported text the store refused, which may
                            be anything (shown as a JSON string) */
    char *message;       /* why it was refused (malloc'ed) or NULL */
    char *state;         /* the state after it in the current timeline, from
                            get_state (the table's free), or NULL: not known */
    char *changed;       /* JSON array of the top-level keys it changed, or NULL */
} record;

struct history {
    history_gate gate;         /* run()'s side, without `lock` (history.h) */
    const ts_store_api *store;
    const inspector_config *cfg;
    const ticks_origin *clock;
    size_t capacity;           /* cfg->history */

    pthread_mutex_t lock;      /* everything below */
    pthread_cond_t wake;       /* new records or status, or stopping: the event streams */
    record *ring;
    char *base_state;          /* the state after record base_seq (0: when loaded) */
    uint64_t base_seq;
    int travelling;            /* the store shows the past: the state after travel_seq */
    uint64_t travel_seq;
    char *present_state;       /* the present, saved when travelling began */
    uint64_t present_seq;
    uint64_t status_version;   /* bumped when paused, travel or the records' states change */
    uint64_t dropped;          /* records the event streams skipped (slow browsers) */
    int stopping;
};

/* ---- The ring (under lock, but newest) ------------------------------------ */

static uint64_t newest(const history *h) { return __atomic_load_n(&h->gate.last_seq, __ATOMIC_ACQUIRE); }

static record *find(history *h, uint64_t seq) {
    if (seq == 0 || seq > newest(h)) return NULL;
    record *r = &h->ring[(seq - 1) % h->capacity];
    return r->seq == seq ? r : NULL;
}

static uint64_t oldest_seq(const history *h) {
    uint64_t last = newest(h);
    return last >= h->capacity ? last - h->capacity + 1 : 1;
}

/* The state after record `seq` in the current timeline (borrowed), or NULL
 * if it is not known. Under lock. */
static const char *state_after(history *h, uint64_t seq) {
    for (;;) {
        if (seq == h->base_seq) return h->base_state;
        record *r = find(h, seq);
        if (r == NULL || !r->done) return NULL;
        if (r->state) return r->state;
        if (r->status == TS_OK && !r->skipped) return NULL;
        seq--; /* refused or skipped: the state is the one before it */
    }
}

/* The top-level keys whose values differ between two state objects, as a JSON
 * array (malloc'ed), or NULL. */
static char *changed_keys(const char *before, const char *after) {
    if (before == NULL || after == NULL) return NULL;
    sb out = {0};
    sb_str(&out, "[");
    int count = 0;
    const char *key, *value, *other_key, *other_value;
    pj_iter it, jt;
    /* Keys of `after` that are new or different. */
    pj_begin(&it, after, '{');
    while (pj_next_member(&it, &key, &value) == 1) {
        const char *end = pj_skip(value);
        const char *found = NULL, *found_end = NULL;
        pj_begin(&jt, before, '{');
        while (pj_next_member(&jt, &other_key, &other_value) == 1) {
            const char *k1 = pj_skip_string(key), *k2 = pj_skip_string(other_key);
            if (k1 - key == k2 - other_key && memcmp(key, other_key, (size_t)(k1 - key)) == 0) {
                found = other_value;
                found_end = pj_skip(other_value);
                break;
            }
        }
        if (found && end && found_end && end - value == found_end - found && memcmp(value, found, (size_t)(end - value)) == 0)
            continue;
        if (count++) sb_str(&out, ",");
        sb_add(&out, key, (size_t)(pj_skip_string(key) - key));
    }
    /* Keys of `before` that are gone. */
    pj_begin(&jt, before, '{');
    while (pj_next_member(&jt, &other_key, &other_value) == 1) {
        int present = 0;
        pj_begin(&it, after, '{');
        while (pj_next_member(&it, &key, &value) == 1) {
            const char *k1 = pj_skip_string(key), *k2 = pj_skip_string(other_key);
            if (k1 - key == k2 - other_key && memcmp(key, other_key, (size_t)(k1 - key)) == 0) {
                present = 1;
                break;
            }
        }
        if (present) continue;
        if (count++) sb_str(&out, ",");
        sb_add(&out, other_key, (size_t)(pj_skip_string(other_key) - other_key));
    }
    sb_str(&out, "]");
    if (out.failed) {
        free(out.text);
        return NULL;
    }
    return out.text;
}

/* Gives record r the state `state` (taken over), and works out which keys
 * it changed. Under lock. */
static void set_state(history *h, record *r, char *state) {
    if (r->state) h->store->free(r->state);
    r->state = state;
    free(r->changed);
    r->changed = changed_keys(state_after(h, r->seq - 1), state);
}

/* Forgets what record r knew of its timeline: its state and changed keys.
 * Under lock. */
static void forget_state(history *h, record *r) {
    if (r->state) {
        h->store->free(r->state);
        r->state = NULL;
    }
    free(r->changed);
    r->changed = NULL;
}

/* Empties a slot about to be reused. A known state becomes the base that
 * replays start from. Under lock. */
static void evict(history *h, record *r) {
    if (r->seq == 0) return;
    if (r->state && r->done && r->seq > h->base_seq) {
        if (h->base_state) h->store->free(h->base_state);
        h->base_state = r->state;
        h->base_seq = r->seq;
    } else if (r->state) {
        h->store->free(r->state);
    }
    r->state = NULL;
    if (r->message) { /* tests first: run() evicts a slot per action */
        free(r->message);
        r->message = NULL;
    }
    if (r->changed) {
        free(r->changed);
        r->changed = NULL;
    }
    r->seq = 0;
}

/* Writes the finished record `seq` into its slot; takes over message and
 * state. A slot that already holds a newer record (a tiny history and
 * nested dispatches) keeps it. Under lock. */
static void write_record(history *h, uint64_t seq, const char *json, uint64_t start, uint64_t duration,
                         ts_status status, char *message, char *state, int verbatim) {
    record *r = &h->ring[(seq - 1) % h->capacity];
    if (state && h->travelling && seq > h->present_seq) {
        /* Dispatched while the store shows the past: that state is of no
         * timeline the inspector keeps. Back in the present, the action is
         * applied again after the saved present and gets its real state. */
        h->store->free(state);
        state = NULL;
    }
    if (r->seq > seq) {
        free(message);
        if (state) h->store->free(state);
        return;
    }
    evict(h, r);
    size_t length = strlen(json);
    if (length + 1 > r->action_capacity) {
        size_t capacity = length + 1 < 128 ? 128 : length + 1;
        char *text = realloc(r->action, capacity);
        if (text == NULL) {
            length = 0; /* the slot is kept, its action text is lost */
        } else {
            r->action = text;
            r->action_capacity = capacity;
        }
    }
    if (r->action) {
        memcpy(r->action, json, length);
        r->action[length] = '\0';
    }
    r->seq = seq;
    r->start = start;
    r->duration = duration;
    r->status = status;
    r->skipped = 0;
    r->verbatim = verbatim;
    r->done = 1;
    r->message = message;
    if (state) set_state(h, r, state);
}

/* ---- Create, stop, destroy ------------------------------------------------ */

history *history_create(const ts_store_api *store, const inspector_config *cfg, const ticks_origin *clock,
                        char *initial) {
    history *h = calloc(1, sizeof *h);
    record *ring = calloc(cfg->history, sizeof *ring);
    if (h == NULL || ring == NULL) {
        free(h);
        free(ring);
        if (initial) store->free(initial);
        return NULL;
    }
    h->store = store;
    h->cfg = cfg;
    h->clock = clock;
    h->capacity = cfg->history;
    h->gate.checkpoint_every = cfg->history / 4 ? cfg->history / 4 : 1;
    h->gate.until_checkpoint = h->gate.checkpoint_every;
    h->ring = ring;
    h->base_state = initial;
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->wake, NULL);
    return h;
}

void history_stop(history *h) {
    pthread_mutex_lock(&h->lock);
    h->stopping = 1;
    pthread_cond_broadcast(&h->wake);
    pthread_mutex_unlock(&h->lock);
}

void history_destroy(history *h) {
    if (h == NULL) return;
    for (size_t i = 0; i < h->capacity; i++) {
        record *r = &h->ring[i];
        free(r->action);
        free(r->message);
        free(r->changed);
        if (r->state) h->store->free(r->state);
    }
    free(h->ring);
    if (h->base_state) h->store->free(h->base_state);
    if (h->present_state) h->store->free(h->present_state);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->wake);
    free(h);
}

/* ---- Recording --------------------------------------------------------------- */

history_gate *history_gate_of(history *h) { return &h->gate; }

void history_end(history *h, uint64_t seq, const char *json, uint64_t start, uint64_t duration, ts_status status,
                 char *message, char *state, int verbatim) {
    pthread_mutex_lock(&h->lock);
    write_record(h, seq, json, start, duration, status, message, state, verbatim);
    /* Streams wait on `wake` only while they are counted (under lock). */
    if (__atomic_load_n(&h->gate.watchers, __ATOMIC_RELAXED) > 0) pthread_cond_broadcast(&h->wake);
    pthread_mutex_unlock(&h->lock);
}

/* ---- Views ----------------------------------------------------------------------- */

void history_set_paused(history *h, int paused) {
    __atomic_store_n(&h->gate.paused, paused, __ATOMIC_RELAXED);
    history_bump(h);
}

void history_bump(history *h) {
    pthread_mutex_lock(&h->lock);
    h->status_version++;
    pthread_cond_broadcast(&h->wake);
    pthread_mutex_unlock(&h->lock);
}

/* One record's summary: its number, type, time, duration, status, reason,
 * changed keys, and whether its state is known. Under lock. */
static void summary(history *h, sb *b, const record *r) {
    char *type = NULL;
    const char *t = r->action ? pj_get(r->action, "type") : NULL;
    if (t && pj_kind_of(t) == PJ_STRING) type = pj_str_dup(pj_ws(t), NULL);
    sb_printf(b, "{\"seq\":%llu,\"type\":", (unsigned long long)r->seq);
    sb_json_string(b, type ? type : "?");
    free(type);
    double npt = ticks_ns_per_tick(h->clock);
    double when = ticks_wall_ms(h->clock, r->start, npt);
    sb_printf(b, ",\"time\":%.3f,\"duration_us\":%.3f,\"status\":\"%s\",\"ok\":%s,\"skipped\":%s,\"done\":%s,\"message\":",
              when, (double)r->duration * npt / 1e3, h->store->status_name(r->status),
              r->status == TS_OK ? "true" : "false", r->skipped ? "true" : "false", r->done ? "true" : "false");
    sb_json_string(b, r->message);
    sb_str(b, ",\"changed\":");
    sb_str(b, r->changed ? r->changed : "null");
    sb_printf(b, ",\"known\":%s}", state_after(h, r->seq) ? "true" : "false");
}

/* Under lock. */
static void status_json(history *h, sb *b) {
    sb_printf(b, "{\"paused\":%s,\"travelling\":%s,\"travel\":%llu,\"read_only\":%s,\"history\":%zu,\"dropped\":%llu,\"newest\":%llu,"
              "\"base\":%llu,\"version\":\"%s\"}",
              __atomic_load_n(&h->gate.paused, __ATOMIC_RELAXED) ? "true" : "false", h->travelling ? "true" : "false",
              (unsigned long long)h->travel_seq,
              h->cfg->read_only ? "true" : "false", h->capacity, (unsigned long long)h->dropped,
              (unsigned long long)newest(h), (unsigned long long)h->base_seq, INSPECTOR_VERSION);
}

void history_status_json(history *h, sb *out) {
    pthread_mutex_lock(&h->lock);
    status_json(h, out);
    pthread_mutex_unlock(&h->lock);
}

void history_actions_json(history *h, sb *out) {
    pthread_mutex_lock(&h->lock);
    sb_str(out, "{\"status\":");
    status_json(h, out);
    sb_str(out, ",\"records\":[");
    int n = 0;
    for (uint64_t k = oldest_seq(h); k <= newest(h); k++) {
        record *r = find(h, k);
        if (r == NULL || k <= h->base_seq) continue;
        if (n++) sb_str(out, ",");
        summary(h, out, r);
    }
    sb_str(out, "]}");
    pthread_mutex_unlock(&h->lock);
}

int history_state_json(history *h, uint64_t seq, sb *out) {
    pthread_mutex_lock(&h->lock);
    record *r = find(h, seq);
    if (r == NULL && seq != h->base_seq) {
        pthread_mutex_unlock(&h->lock);
        return -1;
    }
    const char *after = state_after(h, seq), *before = seq ? state_after(h, seq - 1) : NULL;
    sb_printf(out, "{\"seq\":%llu,\"action\":", (unsigned long long)seq);
    if (r == NULL || r->action == NULL || (r->verbatim && *r->action == '\0')) sb_str(out, "null");
    else if (r->verbatim) sb_str(out, r->action);
    else sb_json_string(out, r->action); /* refused imported text: any bytes */
    sb_str(out, ",\"record\":");
    if (r) summary(h, out, r);
    else sb_str(out, "null");
    sb_str(out, ",\"state\":");
    sb_str(out, after ? after : "null");
    sb_str(out, ",\"before\":");
    sb_str(out, before ? before : "null");
    sb_str(out, "}");
    pthread_mutex_unlock(&h->lock);
    return 0;
}

char *history_export(history *h, size_t *length) {
    sb out = {0};
    pthread_mutex_lock(&h->lock);
    uint64_t start = h->base_seq;
    const char *known = NULL;
    if (h->base_seq + 1 >= oldest_seq(h)) known = h->base_state;
    if (known == NULL) {
        for (start = oldest_seq(h); start <= newest(h); start++) {
            record *r = find(h, start);
            if (r && r->done && r->state) {
                known = r->state;
                break;
            }
        }
    }
    if (known) {
        sb_record(&out, 'S', known);
        for (uint64_t k = start + 1; k <= newest(h); k++) {
            record *r = find(h, k);
            if (r && r->done && r->status == TS_OK && !r->skipped && r->action) sb_record(&out, 'A', r->action);
        }
    }
    pthread_mutex_unlock(&h->lock);
    if (out.text == NULL) sb_str(&out, "");
    *length = out.length;
    return out.text;
}

/* ---- The feed ----------------------------------------------------------------- */

void history_watch(history *h, history_cursor *cursor) {
    memset(cursor, 0, sizeof *cursor);
    pthread_mutex_lock(&h->lock);
    __atomic_add_fetch(&h->gate.watchers, 1, __ATOMIC_RELAXED);
    /* The stream starts with the whole ring. */
    cursor->seq = oldest_seq(h) - 1;
    if (cursor->seq < h->base_seq) cursor->seq = h->base_seq;
    pthread_mutex_unlock(&h->lock);
}

void history_unwatch(history *h) {
    pthread_mutex_lock(&h->lock);
    __atomic_sub_fetch(&h->gate.watchers, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&h->lock);
}

/* Whether the reader at *c has a record to be sent: the next one is written
 * (not still in the chain), or it fell behind the ring. With h->lock. */
static int record_ready(const history *h, const history_cursor *c) {
    if (c->seq >= newest(h)) return 0;
    return h->ring[c->seq % h->capacity].seq >= c->seq + 1;
}

int history_feed(history *h, history_cursor *c, size_t batch, int wait_seconds, history_event_fn *event, void *ctx) {
    sb data = {0};
    pthread_mutex_lock(&h->lock);
    /* Nothing to send, or only an action still in the chain (its number is
     * taken, its slot written when it returns; history_end wakes us then). */
    if (!h->stopping && c->hello && !record_ready(h, c) && h->status_version == c->status_version) {
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += wait_seconds;
        pthread_cond_timedwait(&h->wake, &h->lock, &deadline);
    }
    if (h->stopping) {
        pthread_mutex_unlock(&h->lock);
        return 1;
    }
    if (!c->hello || h->status_version != c->status_version) {
        c->hello = 1;
        c->status_version = h->status_version;
        status_json(h, &data);
        if (!data.failed) event(ctx, "status", data.text, data.length);
    }
    uint64_t oldest = oldest_seq(h);
    if (c->seq + 1 < oldest) {
        /* This reader fell behind the ring: what it missed is dropped. */
        h->dropped += oldest - 1 - c->seq;
        c->seq = oldest - 1;
        /* Every page shows the count (a status event). */
        h->status_version++;
        c->status_version = h->status_version;
        pthread_cond_broadcast(&h->wake);
        data.length = 0;
        sb_printf(&data, "{\"dropped\":%llu}", (unsigned long long)h->dropped);
        if (!data.failed) event(ctx, "dropped", data.text, data.length);
    }
    size_t sent = 0;
    while (c->seq < newest(h) && sent < batch && !data.failed) {
        const record *slot = &h->ring[c->seq % h->capacity];
        if (slot->seq < c->seq + 1) break; /* still in the chain: sent when it is done */
        c->seq++;
        record *r = find(h, c->seq);
        if (r == NULL) continue;
        data.length = 0;
        summary(h, &data, r);
        if (!data.failed) event(ctx, "action", data.text, data.length);
        sent++;
    }
    pthread_mutex_unlock(&h->lock);
    int failed = data.failed;
    free(data.text);
    return failed ? -1 : 0;
}

/* ---- Time travel --------------------------------------------------------------- */

int history_plan_replay(history *h, uint64_t target, history_plan *plan, char *why, size_t size) {
    memset(plan, 0, sizeof *plan);
    pthread_mutex_lock(&h->lock);
    uint64_t start = target;
    const char *known = NULL;
    uint64_t lowest = oldest_seq(h) - 1;
    if (target < h->base_seq) {
        snprintf(why, size, "#%llu is no longer in the history (the oldest is #%llu)", (unsigned long long)target,
                 (unsigned long long)oldest_seq(h));
        pthread_mutex_unlock(&h->lock);
        return -1;
    }
    for (;;) {
        if (start == h->base_seq) {
            known = h->base_state;
        } else {
            record *r = find(h, start);
            if (r && r->done && r->state) known = r->state;
        }
        if (known || start == 0 || start <= lowest) break;
        start--;
    }
    if (known == NULL) {
        pthread_mutex_unlock(&h->lock);
        snprintf(why, size, "the state before #%llu is not known: it was recorded before the oldest checkpoint that is "
                 "still in the history", (unsigned long long)target);
        return -1;
    }
    plan->from = strdup(known);
    plan->count = (size_t)(target - start);
    plan->steps = calloc(plan->count ? plan->count : 1, sizeof *plan->steps);
    int nomem = plan->from == NULL || plan->steps == NULL;
    for (size_t i = 0; i < plan->count && !nomem; i++) {
        record *r = find(h, start + 1 + i);
        plan->steps[i].seq = start + 1 + i;
        if (r && r->done && r->status == TS_OK && !r->skipped && r->action) {
            plan->steps[i].action = strdup(r->action);
            if (plan->steps[i].action == NULL) nomem = 1;
        }
    }
    pthread_mutex_unlock(&h->lock);
    if (nomem) {
        history_plan_free(plan);
        snprintf(why, size, "out of memory");
        return -1;
    }
    return 0;
}

void history_plan_free(history_plan *plan) {
    free(plan->from);
    for (size_t i = 0; plan->steps && i < plan->count; i++) free(plan->steps[i].action);
    free(plan->steps);
    memset(plan, 0, sizeof *plan);
}

void history_replayed(history *h, uint64_t seq, ts_status status, char *state, const char *reason) {
    pthread_mutex_lock(&h->lock);
    record *r = find(h, seq);
    if (r && status == TS_OK && state) {
        set_state(h, r, state);
        state = NULL;
    } else if (r && status != TS_OK) {
        /* Replayed differently (a reducer that is not pure?): say so. */
        free(r->message);
        r->message = strdup(reason);
        r->status = status;
    }
    pthread_mutex_unlock(&h->lock);
    if (state) h->store->free(state);
}

int history_travel_begin(history *h, uint64_t *last) {
    pthread_mutex_lock(&h->lock);
    int travelling = h->travelling;
    *last = newest(h);
    pthread_mutex_unlock(&h->lock);
    return travelling;
}

void history_travel_save(history *h, char *present, uint64_t last) {
    pthread_mutex_lock(&h->lock);
    h->present_state = present;
    h->present_seq = last;
    h->travelling = 1;
    h->travel_seq = last;
    pthread_mutex_unlock(&h->lock);
}

void history_travel_end(history *h, int ok, uint64_t seq, int was_travelling) {
    pthread_mutex_lock(&h->lock);
    if (ok) {
        h->travel_seq = seq;
    } else if (!was_travelling) { /* the store did not change: still in the present */
        h->travelling = 0;
        h->store->free(h->present_state);
        h->present_state = NULL;
    }
    pthread_mutex_unlock(&h->lock);
}

int history_present_take(history *h, char **present, uint64_t *from, uint64_t *last) {
    pthread_mutex_lock(&h->lock);
    if (!h->travelling) {
        pthread_mutex_unlock(&h->lock);
        return 0;
    }
    uint64_t from_seq = h->present_seq;
    *from = from_seq;
    *last = newest(h);
    *present = h->present_state;
    h->present_state = NULL;
    /* The saved present is the state after from_seq: record it on the last
     * accepted action up to there (it is not known when nobody watched). */
    uint64_t at = from_seq;
    record *r = find(h, at);
    while (r && r->done && (r->status != TS_OK || r->skipped) && at > h->base_seq + 1) r = find(h, --at);
    if (r && r->done && r->status == TS_OK && !r->skipped && r->state == NULL && *present) {
        char *copy = strdup(*present);
        if (copy) set_state(h, r, copy);
    } else if (from_seq == h->base_seq && h->base_state == NULL && *present) {
        h->base_state = strdup(*present);
    }
    pthread_mutex_unlock(&h->lock);
    return 1;
}

void history_present_done(history *h) {
    pthread_mutex_lock(&h->lock);
    h->travelling = 0;
    pthread_mutex_unlock(&h->lock);
}

int history_skip(history *h, uint64_t seq, int skip, uint64_t *last, char *why, size_t size) {
    pthread_mutex_lock(&h->lock);
    record *r = find(h, seq);
    if (r == NULL || !r->done) {
        pthread_mutex_unlock(&h->lock);
        snprintf(why, size, "there is no finished record #%llu in the history", (unsigned long long)seq);
        return -1;
    }
    if (r->status != TS_OK) {
        snprintf(why, size, "#%llu was refused (%s): it changed nothing, so there is nothing to skip",
                 (unsigned long long)seq, h->store->status_name(r->status));
        pthread_mutex_unlock(&h->lock);
        return -1;
    }
    /* Replays start from a known state before it: make sure there is one. */
    uint64_t s = seq - 1;
    int known = 0;
    for (;; s--) {
        if (s == h->base_seq) {
            known = h->base_state != NULL;
            break;
        }
        record *q = find(h, s);
        if (q == NULL) break;
        if (q->done && q->state) {
            known = 1;
            break;
        }
        if (s == 0) break;
    }
    if (!known) {
        pthread_mutex_unlock(&h->lock);
        snprintf(why, size, "cannot replay around #%llu: no state before it is known (it is older than the oldest "
                 "checkpoint)", (unsigned long long)seq);
        return -1;
    }
    r->skipped = skip;
    /* Every state from it on belongs to the old timeline. */
    for (uint64_t k = seq; k <= newest(h); k++) {
        record *q = find(h, k);
        if (q) forget_state(h, q);
    }
    /* The recomputed present replaces the saved one. */
    if (h->present_state) h->store->free(h->present_state);
    h->present_state = NULL;
    h->travelling = 0;
    *last = newest(h);
    pthread_mutex_unlock(&h->lock);
    return 0;
}

void history_reset(history *h, char *state) {
    pthread_mutex_lock(&h->lock);
    /* The imported records start after a new base. */
    if (h->base_state) h->store->free(h->base_state);
    h->base_state = state;
    /* Everything recorded so far leaves the view: the base is newer. */
    for (size_t i = 0; i < h->capacity; i++) {
        record *q = &h->ring[i];
        if (q->seq) {
            forget_state(h, q);
            free(q->message);
            q->message = NULL;
            q->seq = 0;
        }
    }
    h->base_seq = newest(h);
    h->travelling = 0;
    if (h->present_state) h->store->free(h->present_state);
    h->present_state = NULL;
    pthread_mutex_unlock(&h->lock);
}
