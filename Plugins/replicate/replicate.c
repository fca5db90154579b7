/*
 * replicate - a Turnstate middleware plugin that makes the stores of several
 * processes (on one machine or several) one replicated store, on an existing
 * ordered log: Redis Streams or NATS JetStream, picked by the url's scheme
 * (engine.h, engine.c).
 *
 * Config: {"url": "redis://[USER:PASSWORD@]HOST[:PORT]" or rediss://, or
 *          "nats://[USER:PASSWORD@|TOKEN@]HOST[:PORT][,HOST[:PORT]...]" or tls://,
 *          "stream": "NAME", "timeout_ms": 2000, "snapshot_every": 10000,
 *          "replicas": 3 (NATS), "tls_ca": FILE, "tls_cert": FILE, "tls_key": FILE,
 *          "mode": "ordered", "max_pending": 100000, "max_pending_bytes": 67108864,
 *          "status_ms": 0, "abandon_ms": 30000}
 *
 * Optimistic mode ("mode": "optimistic"; README.md, "Modes"): run() passes
 * the action on at once and keeps it as pending; a sender thread appends
 * the pending actions in batches (rp_append_many: "#ORIGIN:N ACTION", each
 * number appended once however often it is sent); the reader thread
 * confirms them as they come back (nothing recomputed when they come in the
 * order they were applied) and otherwise rebases: the confirmed state's
 * text put back (replace_state), the tail of entries confirmed since then
 * and the new entries applied, then the pending actions again on top, all
 * inside exclusive. An own action that a reducer refuses where the log put
 * it is reported as "@@replicate/dropped". The status (both modes) is
 * applied as "@@replicate/status". Ordered mode applies
 * "@@replicate/checkpoint" after each entry numbered a multiple of
 * snapshot_every and after a snapshot loaded while running, for undo.so
 * (README.md, "With undo.so"), which optimistic mode refuses
 * (replicate_run). An optimistic replica's origin begins with 'p', and
 * every replica (either mode) applies such an entry only once the earlier
 * numbers of its origin are in ("Per-origin order" below: JetStream may
 * store pipelined appends out of order).
 *
 * Ordered mode, log first: run() does not pass a local action on with next. It queues it
 * ("#ORIGIN:N ACTION", N numbered once) and waits, on NATS with the store
 * let go (ts_store_api.unlocked; held where that is refused or missing, and
 * on Redis, whose round trip is shorter than taking turns at the store);
 * one of the waiting dispatchers appends everything queued by all threads
 * in one call: Redis, rp_append_batch, which in the same round trip reads
 * every entry between this replica's position and the last appended, and
 * the dispatchers apply them; NATS, rp_append_many (message ids ORIGIN:N),
 * and the reader thread applies the entries as its cursor brings them while
 * the dispatchers wait (after timeout_ms a dispatcher reads the log
 * itself). Entries are applied in stream order from the plugin's place in
 * the chain (ts_store_api.dispatch_after: the middleware after the plugin,
 * then the reducers and listeners); an entry is applied once, by whichever
 * thread reaches it first, and an own entry records its status in its
 * dispatcher's slot; run() returns that status once its entry is applied:
 * the dispatcher reads its own write. If the log does not answer within timeout_ms, the dispatch
 * fails with TS_E_IO and nothing was applied. Entries that other replicas
 * append are applied the same way by a reader thread, in order, inside
 * ts_store_api.exclusive (with the store held, so they never interleave with
 * a local dispatch's). Every entry carries its sequence number: a replica
 * applies entry N only right after N-1, so each entry is applied exactly
 * once; a gap (entries trimmed away) loads the snapshot instead. Middleware
 * before the plugin runs once, at the origin; after it, on every replica.
 * A damaged log (an entry replicate.so did not write, numbers that do not go
 * on by one, a counter or stream deleted or reset, a key of another type, a
 * snapshot that does not fit its entries) is refused, never applied: a
 * dispatch or a join fails with TS_E_PLUGIN and a message saying what is
 * wrong, and the reader applies what comes before the damage, writes one
 * line on stderr and looks again every second (it goes on once the log is
 * repaired). See README.md.
 */
#define _GNU_SOURCE /* SCHED_BATCH */

#include "turnstate_plugin.h"

#include "../common/pjson.h"
#include "../common/store_api.h"
#include "engine.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPLICATE_VERSION "1.3.0"
#define READ_BATCH 1000
/* Optimistic mode reads more at a time: every batch that holds another
 * replica's entry is one rebase, whose cost is the pending list's length. */
#define OPTIMISTIC_READ_BATCH 10000
#define WAIT_BLOCK_MS 250
/* How long the reader waits before it looks at a damaged log again. */
#define DAMAGED_RETRY_MS 1000
/* Optimistic mode: what one append (rp_append_many) carries at most. */
#define SEND_MAX_COUNT 4096
#define SEND_MAX_BYTES (4u << 20)
/* Ordered mode: what one append carries at most (one per dispatching
 * thread at a time; its lists are on the appending thread's stack). */
#define ORDERED_SEND_MAX 256
/* Ordered mode on NATS: how long the dispatcher about to append waits for
 * the dispatchers whose appends were just answered to queue their next
 * action, so that they go in the same append (0: it does not wait). */
#ifndef ORDERED_LINGER_US
#define ORDERED_LINGER_US 500
#endif
/* The confirmed tail (entries applied since the confirmed state's text was
 * taken) is folded into a new text when the pending list is empty and it
 * holds this many entries or bytes, and in any case past the hard bounds. */
#define TAIL_FOLD_COUNT 1000
#define TAIL_FOLD_BYTES (1u << 20)
#define TAIL_MAX_COUNT 100000
#define TAIL_MAX_BYTES (64u << 20)
/* An origin: 16 hexadecimal digits, random for each instance. */
#define ORIGIN_SIZE 17
#define STATUS_SIZE (RP_ERR_SIZE * 2 + 768) /* the longest status: 18 numbers of 20 digits and the error escaped */

/* One local action of optimistic mode, applied here and not yet read back
 * from the log. */
typedef struct pending {
    char *action;      /* its JSON text */
    size_t length;
    uint64_t n;        /* its number in the log ("#ORIGIN:N"), 0 until the sender numbers it */
    int ready;         /* run() kept it (its local dispatch succeeded) */
    ts_status outcome; /* its last local application: TS_OK or a refusal (a rebase's replay) */
    char *reason;      /* that refusal's message, or NULL */
} pending;

typedef struct replica {
    const ts_store_api *store;
    ts_status (*deliver)(const char *action_json); /* dispatch_after, or apply on an older table */
    char *url, *stream;
    uint64_t timeout_ms, snapshot_every;
    char *tls_ca, *tls_cert, *tls_key; /* file paths (engine.h's rp_options) */
    uint64_t replicas;                 /* NATS: of the stream it creates */
    /* Used only with the store held (run, create, the reader's exclusive step). */
    rp_engine *log;
    char pos[RP_POS_SIZE]; /* the last entry applied ("" before the first) */
    uint64_t seq;          /* its sequence number */
    /* The reader thread's own connection, and what it shares. */
    rp_engine *waiter;
    pthread_t reader;
    int reader_started;
    pthread_mutex_t mutex; /* guards shared_pos, stop and free_on_exit */
    pthread_cond_t wake;   /* signalled when stop is set */
    char shared_pos[RP_POS_SIZE];
    int stop;
    int free_on_exit; /* destroy() ran on the reader thread itself */
    char reported[RP_ERR_SIZE]; /* the reader's last line on stderr (its own) */
    uint64_t shared_seq; /* r->seq, for the sender and the reader (under mutex) */
    /* A message of several entries (NATS, entry.h) applied in part: the
     * next part to apply of entry r->seq + 1 (r->pos and r->seq move on
     * after its last part); 0: none under way. */
    uint32_t part_next;
    /* Ordered mode's abandon markers (ordered_mark): held_count as of the
     * last publish() (under mutex), the origin its markers go under ("p"
     * and 15 of its own digits: they follow the per-origin rule), the next
     * number, and the marker waiting to be appended (the reader's). */
    size_t shared_held;
    char mark_origin[ORIGIN_SIZE];
    uint64_t mark_next;
    char *mark_text;

    /* ---- Optimistic mode and the status (README.md, "Modes") ---- */
    int optimistic;
    uint64_t max_pending, max_pending_bytes, status_ms;
    uint64_t abandon_ms; /* held this long here: append an abandon marker (hold_mark) */
    char origin[ORIGIN_SIZE];
    const char *(*last_error)(void); /* ts_last_error, when dlsym finds it: reasons of refusals */
    uint32_t version;                /* the store's state version (0: none, or a table without versions) */
    int versioned;                   /* the table has state_version and replace_state_from */
    /* The pending list: changed by run() and the reader's steps (store held)
     * under qmutex; the sender reads it under qmutex. */
    pthread_mutex_t qmutex;
    pthread_cond_t qwake; /* new work for the sender, or stop */
    pending *pend;
    size_t pend_first, pend_count, pend_cap, pend_bytes;
    uint64_t next_n;  /* the next number the sender gives (under qmutex) */
    uint64_t acked_n; /* every number up to it is in the log (under qmutex) */
    uint64_t ack_head; /* ... at entry ack_head or before (under qmutex) */
    int sender_stop;  /* under qmutex */
    rp_engine *sender_log;
    pthread_t sender;
    int sender_started;
    /* With the store held: the confirmed state (the log up to entry
     * confirmed_seq, as text), then the tail applied since (confirmed up to
     * r->seq = confirmed + tail); the store shows confirmed + tail + pending. */
    char *confirmed;
    char **tail;
    size_t tail_count, tail_cap, tail_bytes;
    int in_sync;   /* the store shows exactly confirmed + tail + the pending list, in order */
    int rebasing;  /* a rebase runs: a nested dispatch is queued, and applied by the rebase */
    int snapshot_due;
    uint64_t snapshot_due_seq;
    /* A snapshot was loaded (optimistic mode): pending actions of this
     * replica before its next own entry may be behind it, trimmed. Cleared
     * by that entry (deliver_entry). */
    int snapshot_loaded;
    /* Per-origin order of optimistic entries (store held; see "Per-origin
     * order" below): each such origin's next number, and the entries held
     * back until the numbers before theirs are in, in log order. */
    struct hold_origin *ho;
    size_t ho_count, ho_cap, ho_last;
    struct held_entry *held;
    size_t held_count, held_cap;
    uint64_t held_total, abandoned_count, late_count, markers_count;
    /* Counts for the status (store held). */
    uint64_t confirmed_count, dropped_count, rebase_count, last_rebase_us, covered_count;
    struct timespec rebase_started;
    /* The status's shared part (under mutex). */
    uint64_t head, reader_connections, sender_connections;
    int reader_ok, sender_ok;
    char last_err[RP_ERR_SIZE];
    char last_status[STATUS_SIZE]; /* the last status applied (reader thread) */
    struct timespec last_status_at;

    /* ---- Ordered mode: the shared append queue (under qmutex) ---- */
    struct ordered_slot *oq_first, *oq_last; /* queued for the sender, in order */
    struct ordered_slot *o_waiting;        /* queued or sent, run() not yet returned */
    uint64_t o_next_n;                /* the next number */
    pthread_condattr_t o_clock;       /* the slots' condition variables: CLOCK_MONOTONIC */
    uint64_t o_batches, o_batched;    /* appends made, and the dispatches they carried */
    int can_unlock;                   /* the table has ts_store_api.unlocked */
    int reads_back;                   /* rp_reads_back_cheaply: Redis */
    int o_sending;                    /* a dispatcher is appending the queue (under qmutex) */
    size_t o_queued;                  /* dispatches in the queue (under qmutex) */
    size_t o_returning;               /* answered, in the log, their run() not returned yet (under qmutex) */
    struct ordered_slot *o_lingerer;  /* the dispatcher waiting for more to queue (under qmutex) */
} replica;

/* Ordered mode's shared append queue (README.md, "Ordered mode"): what one
 * sender's append answered, for the slots it carried (under qmutex; the
 * batch itself is read with the store held). */
typedef struct ordered_answer {
    int refs;       /* the slots that still use it */
    rp_batch batch; /* the entries after the sender's position up to its last own one */
} ordered_answer;

/* One ordered dispatch under way: its place in the queue, then its answer. */
typedef struct ordered_slot {
    char *text;                 /* "#ORIGIN:N ACTION" */
    size_t length;
    uint64_t n;                 /* its number (N) */
    struct ordered_slot *queued; /* the next one in the queue (under qmutex) */
    struct ordered_slot *next;  /* the next one under way (r->o_waiting, under qmutex) */
    /* Its dispatcher waits on `cond` (under qmutex), woken only when it has
     * something to do: its answer is a failure, its entry is applied, or
     * the queue it heads can be sent. `follow`: it waits for its entry to be
     * applied (without the store); else for the answer only. */
    pthread_cond_t cond;
    int follow;
    struct timespec apply_until; /* when it stops waiting for the reader (follow) */
    /* The sender's answer (under qmutex). */
    int answered, rc;
    char err[RP_ERR_SIZE];
    char pos[RP_POS_SIZE];      /* its entry's position, when rc is 0 */
    ordered_answer *answer;
    /* Its entry, once applied (with the store held, by whichever thread
     * reached it: the dispatcher, another one, or the reader). */
    int applied;
    ts_status status;
    char *reason;               /* a refusal's message, when another thread applied it */
    pthread_t applier;
} ordered_slot;

/* What run() waits for: its own entry. */
typedef struct own_entry {
    const char *pos; /* NULL when applying for the reader */
    int done;
    ts_status status;
} own_entry;

static void publish(replica *r) {
    pthread_mutex_lock(&r->mutex);
    memcpy(r->shared_pos, r->pos, RP_POS_SIZE);
    r->shared_seq = r->seq;
    r->shared_held = r->held_count;
    pthread_mutex_unlock(&r->mutex);
}

/* The CLOCK_MONOTONIC time `ms` from now (the waits' condition variables
 * use that clock). */
static struct timespec deadline_in(long ms) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    return until;
}

/* The CLOCK_MONOTONIC time `us` microseconds from now. */
static struct timespec deadline_in_us(long us) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += us * 1000L;
    while (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    return until;
}

/* The reader waits `ms`, or less when destroy() stops it. */
static void rest(replica *r, long ms) {
    struct timespec until = deadline_in(ms);
    pthread_mutex_lock(&r->mutex);
    while (!r->stop && pthread_cond_timedwait(&r->wake, &r->mutex, &until) != ETIMEDOUT) {
    }
    pthread_mutex_unlock(&r->mutex);
}

/* ---- Status: what the program can read ------------------------------------ */

/* An exchange with the log that went through, seen by the reader (0) or the
 * sender (1; ordered mode: run()), and what the engine saw (engine NULL:
 * nothing to count, run()'s connection is read with the store held). */
static void note_ok(replica *r, int sender, const rp_engine *engine) {
    rp_engine_info info = {0, 0, 0};
    if (engine) rp_info(engine, &info);
    pthread_mutex_lock(&r->mutex);
    if (sender) {
        r->sender_ok = 1;
        if (engine) r->sender_connections = info.connections;
    } else {
        r->reader_ok = 1;
        if (engine) r->reader_connections = info.connections;
    }
    if (info.head > r->head) r->head = info.head;
    pthread_mutex_unlock(&r->mutex);
}

/* A failure: the log did not answer (damaged 0), or answered that it is
 * damaged (1: the exchange itself went through). */
static void note_failure(replica *r, int sender, const char *err, int damaged) {
    pthread_mutex_lock(&r->mutex);
    if (sender) r->sender_ok = damaged;
    else r->reader_ok = damaged;
    snprintf(r->last_err, sizeof r->last_err, "%s", err);
    pthread_mutex_unlock(&r->mutex);
}

/* `text` as the inside of a JSON string (without the quotes), at most
 * size - 1 bytes, never cut inside an escape. */
static void json_escape(char *out, size_t size, const char *text) {
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (; *text; text++) {
        unsigned char c = (unsigned char)*text;
        char esc[8];
        size_t n;
        if (c == '"' || c == '\\') {
            esc[0] = '\\', esc[1] = (char)c, n = 2;
        } else if (c < 0x20 || c == 0x7f) {
            esc[0] = '\\', esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15], n = 6;
        } else {
            esc[0] = (char)c, n = 1;
        }
        if (o + n + 1 > size) break;
        memcpy(out + o, esc, n);
        o += n;
    }
    out[o] = '\0';
}

static size_t unsent_of(const replica *r);

/* The status as the payload of "@@replicate/status" (README.md, "Status").
 * With the store held. */
static void status_text(replica *r, char *out, size_t size) {
    char err[RP_ERR_SIZE * 2], error[RP_ERR_SIZE * 2 + 2];
    uint64_t head, reconnections = 0, connections;
    int connected;
    size_t unsent = 0, count, bytes;
    uint64_t appends, appended;
    rp_engine_info info;
    rp_info(r->log, &info);
    pthread_mutex_lock(&r->mutex);
    head = r->head > info.head ? r->head : info.head;
    connections = info.connections;
    reconnections += connections > 1 ? connections - 1 : 0;
    reconnections += r->reader_connections > 1 ? r->reader_connections - 1 : 0;
    reconnections += r->sender_connections > 1 ? r->sender_connections - 1 : 0;
    connected = r->reader_ok && r->sender_ok;
    json_escape(err, sizeof err, r->last_err);
    pthread_mutex_unlock(&r->mutex);
    if (err[0]) snprintf(error, sizeof error, "\"%s\"", err);
    else snprintf(error, sizeof error, "null");
    pthread_mutex_lock(&r->qmutex);
    count = r->pend_count;
    bytes = r->pend_bytes;
    if (r->optimistic) unsent = unsent_of(r);
    appends = r->o_batches;
    appended = r->o_batched;
    pthread_mutex_unlock(&r->qmutex);
    if (head < r->seq) head = r->seq;
    snprintf(out, size,
             "{\"mode\":\"%s\",\"seq\":%llu,\"head\":%llu,\"lag\":%llu,\"pending\":%zu,\"pending_bytes\":%zu,"
             "\"unsent\":%zu,\"confirmed\":%llu,\"dropped\":%llu,\"covered\":%llu,\"rebases\":%llu,\"last_rebase_us\":%llu,"
             "\"reconnections\":%llu,\"connected\":%s,\"last_error\":%s,\"appends\":%llu,\"appended\":%llu,"
             "\"held\":%zu,\"held_total\":%llu,\"abandoned\":%llu,\"late\":%llu,\"markers\":%llu}",
             r->optimistic ? "optimistic" : "ordered", (unsigned long long)r->seq, (unsigned long long)head,
             (unsigned long long)(head - r->seq), count, bytes, unsent, (unsigned long long)r->confirmed_count,
             (unsigned long long)r->dropped_count, (unsigned long long)r->covered_count, (unsigned long long)r->rebase_count,
             (unsigned long long)r->last_rebase_us, (unsigned long long)reconnections, connected ? "true" : "false",
             error, (unsigned long long)appends, (unsigned long long)appended, r->held_count,
             (unsigned long long)r->held_total, (unsigned long long)r->abandoned_count,
             (unsigned long long)r->late_count, (unsigned long long)r->markers_count);
}

/* The "@@replicate/status" action (size STATUS_SIZE + 64). */
static void status_action(replica *r, char *out, size_t size) {
    char payload[STATUS_SIZE];
    status_text(r, payload, sizeof payload);
    snprintf(out, size, "{\"type\":\"@@replicate/status\",\"payload\":%s}", payload);
}

static double seconds_since(const struct timespec *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

/* Applies "@@replicate/status" from the plugin's place (local: never
 * appended) when it changed and status_ms has passed since the last one,
 * or at once with `force` (after a rebase, which put back an older one).
 * With the store held, on the reader thread. */
static void emit_status(replica *r, int force) {
    char action[STATUS_SIZE + 64];
    if (r->status_ms == 0) return;
    if (!force && seconds_since(&r->last_status_at) * 1000 < (double)r->status_ms) return;
    status_action(r, action, sizeof action);
    if (!force && strcmp(action, r->last_status) == 0) return;
    memcpy(r->last_status, action, sizeof r->last_status);
    clock_gettime(CLOCK_MONOTONIC, &r->last_status_at);
    (void)r->deliver(action);
}

/* ---- Entries: "#ORIGIN:N ACTION" or the action alone ---------------------- */

/* The action in an entry's text; *n and origin say whose it is ("" and 0:
 * an entry of ordered mode, or of an older replicate.so). */
static const char *split_entry(const char *text, char origin[ORIGIN_SIZE], uint64_t *n) {
    const char *p = text + 1, *colon;
    uint64_t v = 0;
    origin[0] = '\0';
    *n = 0;
    if (text[0] != '#') return text;
    colon = strchr(p, ':');
    if (colon == NULL || colon == p || colon - p >= ORIGIN_SIZE) return text;
    for (p = colon + 1; *p >= '0' && *p <= '9' && v < RP_SEQ_MAX; p++) v = v * 10 + (uint64_t)(*p - '0');
    if (*p != ' ' || p == colon + 1 || v == 0) return text;
    memcpy(origin, text + 1, (size_t)(colon - text - 1));
    origin[colon - text - 1] = '\0';
    *n = v;
    return p + 1;
}

/* ---- The pending list (optimistic mode) ----------------------------------- */

static pending *pend_at(replica *r, size_t i) { return &r->pend[r->pend_first + i]; }

/* Under qmutex. 0, or -1 without memory. */
static int pend_push(replica *r, char *action, size_t length, int ready) {
    pending *p;
    if (r->pend_first + r->pend_count == r->pend_cap) {
        if (r->pend_first > 0) {
            memmove(r->pend, r->pend + r->pend_first, r->pend_count * sizeof *r->pend);
            r->pend_first = 0;
        }
        if (r->pend_count == r->pend_cap) {
            size_t cap = r->pend_cap ? r->pend_cap * 2 : 256;
            pending *grown = realloc(r->pend, cap * sizeof *grown);
            if (grown == NULL) return -1;
            r->pend = grown;
            r->pend_cap = cap;
        }
    }
    p = &r->pend[r->pend_first + r->pend_count++];
    p->action = action;
    p->length = length;
    p->n = 0;
    p->ready = ready;
    p->outcome = TS_OK;
    p->reason = NULL;
    r->pend_bytes += length;
    return 0;
}

/* Takes item i out (its action and reason are the caller's). Under qmutex. */
static void pend_remove(replica *r, size_t i) {
    r->pend_bytes -= pend_at(r, i)->length;
    if (i == 0) {
        r->pend_first++;
    } else {
        memmove(pend_at(r, i), pend_at(r, i + 1), (r->pend_count - i - 1) * sizeof *r->pend);
    }
    if (--r->pend_count == 0) r->pend_first = 0;
}

/* How many pending actions the log has not acknowledged. Under qmutex. */
static size_t unsent_of(const replica *r) {
    size_t lo = 0, hi = r->pend_count;
    /* Numbered in list order (increasing; a gap where an action was
     * confirmed out of order, see confirm_out_of_order; 0: not numbered
     * yet): the acknowledged ones come first. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const pending *p = &r->pend[r->pend_first + mid];
        if (p->n != 0 && p->n <= r->acked_n) lo = mid + 1;
        else hi = mid;
    }
    return r->pend_count - lo;
}

/* ---- The confirmed tail (optimistic mode, store held) --------------------- */

/* Room for two more actions in the tail (an entry and its report), so that
 * tail_take cannot fail: 0, or -1 without memory (then nothing is applied). */
static int tail_reserve(replica *r) {
    if (r->tail_count + 2 > r->tail_cap) {
        size_t cap = r->tail_cap ? r->tail_cap * 2 : 1024;
        char **grown = realloc(r->tail, cap * sizeof *grown);
        if (grown == NULL) return -1;
        r->tail = grown;
        r->tail_cap = cap;
    }
    return 0;
}

/* Appends a text applied as confirmed (an entry's text, envelope included,
 * or an action), taken: freed with the tail. After tail_reserve. */
static void tail_take(replica *r, char *text) {
    r->tail[r->tail_count++] = text;
    r->tail_bytes += strlen(text);
}

static void tail_clear(replica *r) {
    size_t i;
    for (i = 0; i < r->tail_count; i++) free(r->tail[i]);
    r->tail_count = 0;
    r->tail_bytes = 0;
}

/* The reason of the refusal `status` that the store just gave on this
 * thread (ts_last_error, when dlsym found it), malloc'ed; NULL without memory. */
static char *reason_of(replica *r, ts_status status) {
    const char *why = r->last_error ? r->last_error() : NULL;
    const char *text = why && *why ? why : r->store->status_name(status);
    size_t n = strlen(text) + 1;
    char *copy = malloc(n);
    if (copy) memcpy(copy, text, n);
    return copy;
}

/* Tells the program that one of its actions was dropped: the log's order
 * put it where a reducer refused it (on every replica). Applied from the
 * plugin's place (local, never appended), and kept in the tail: a rebase
 * applies it again where it happened. Store held. */
static void report_dropped(replica *r, const char *action, ts_status status, const char *reason) {
    char why[RP_ERR_SIZE * 4];
    size_t size = strlen(action) + sizeof why + 128;
    char *report = malloc(size);
    r->dropped_count++;
    if (report == NULL) return;
    json_escape(why, sizeof why, reason ? reason : r->store->status_name(status));
    snprintf(report, size,
             "{\"type\":\"@@replicate/dropped\",\"payload\":{\"action\":%s,\"status\":\"%s\",\"reason\":\"%s\"}}",
             action, r->store->status_name(status), why);
    (void)r->deliver(report);
    if (r->tail_count < r->tail_cap) tail_take(r, report); /* tail_reserve made room */
    else free(report);
}

/* The pending list's first action is confirmed: the log holds it at r->seq,
 * where its outcome was `status` (reason: why it was refused). Store held,
 * after tail_reserve. */
static void confirm_head(replica *r, ts_status status, const char *reason) {
    pending p;
    int drained;
    pthread_mutex_lock(&r->qmutex);
    p = *pend_at(r, 0);
    pend_remove(r, 0);
    drained = r->pend_count == 0;
    pthread_mutex_unlock(&r->qmutex);
    if (drained) {
        /* Every append of this replica reached the log (some perhaps after
         * the sender gave up waiting for its answer, as on NATS when a
         * quorum comes back): the sender's side is not failing now. */
        pthread_mutex_lock(&r->mutex);
        r->sender_ok = 1;
        pthread_mutex_unlock(&r->mutex);
    }
    r->confirmed_count++;
    if (r->snapshot_every != 0 && r->seq % r->snapshot_every == 0 && r->part_next == 0 && !r->snapshot_due) {
        r->snapshot_due = 1;
        r->snapshot_due_seq = r->seq;
    }
    tail_take(r, p.action);
    if (status != TS_OK) report_dropped(r, p.action, status, reason);
    free(p.reason);
}

/* An entry of this replica, numbered n, that the log holds before some of
 * its earlier pending actions: their appends failed while this one's went
 * through (on NATS JetStream, pipelined appends while the stream changes
 * leader: the engine sends the failed ones again and they land after it).
 * It is applied where the log put it (the store shows the confirmed state:
 * deliver_entry during a rebase or a catch-up) and taken off the pending
 * list wherever it is; refused there, it is reported dropped. Returns 1,
 * or 0 when n is not pending (then nothing is done). Store held, after
 * tail_reserve. */
static int confirm_out_of_order(replica *r, rp_entry *e, const char *action, uint64_t n, ts_status *outcome) {
    size_t i;
    pending p;
    ts_status status;
    char *reason = NULL;
    pthread_mutex_lock(&r->qmutex);
    for (i = 1; i < r->pend_count && pend_at(r, i)->n != n; i++) {
    }
    if (i >= r->pend_count || n == 0) {
        pthread_mutex_unlock(&r->qmutex);
        return 0;
    }
    p = *pend_at(r, i);
    pend_remove(r, i);
    pthread_mutex_unlock(&r->qmutex);
    status = r->deliver(action);
    if (status != TS_OK) reason = reason_of(r, status);
    tail_take(r, e->action);
    e->action = NULL;
    r->confirmed_count++;
    if (r->snapshot_every != 0 && r->seq % r->snapshot_every == 0 && r->part_next == 0 && !r->snapshot_due) {
        r->snapshot_due = 1;
        r->snapshot_due_seq = r->seq;
    }
    if (status != TS_OK) report_dropped(r, p.action, status, reason);
    free(p.action);
    free(p.reason);
    free(reason);
    *outcome = status;
    return 1;
}

/* Whether entry text `action` of `origin` numbered n is the pending list's
 * first action. Store held. */
static int is_head(replica *r, const char *origin, uint64_t n) {
    int head;
    if (n == 0 || r->pend_count == 0 || strcmp(origin, r->origin) != 0) return 0;
    pthread_mutex_lock(&r->qmutex); /* the sender numbers it */
    head = pend_at(r, 0)->n == n;
    pthread_mutex_unlock(&r->qmutex);
    return head;
}

/* The pending actions numbered below `below` are in the log before what
 * this replica read after a snapshot: the snapshot covers them (its
 * entries were trimmed before this replica read them), with an outcome
 * this replica cannot know (no drop is reported for them). Taken off the
 * list, counted as confirmed and covered. 1 when any was. Store held. */
static int drop_covered(replica *r, uint64_t below) {
    int any = 0;
    pthread_mutex_lock(&r->qmutex);
    while (r->pend_count > 0 && pend_at(r, 0)->n != 0 && pend_at(r, 0)->n < below) {
        free(pend_at(r, 0)->action);
        free(pend_at(r, 0)->reason);
        pend_remove(r, 0);
        r->confirmed_count++;
        r->covered_count++;
        any = 1;
    }
    pthread_mutex_unlock(&r->qmutex);
    return any;
}

/* The same for the pending actions that the log acknowledged at entry
 * ack_head or before, when this replica applied up to there without
 * reading them (it loaded a snapshot past them). Store held. */
static int drop_covered_by_acks(replica *r) {
    uint64_t acked, head;
    pthread_mutex_lock(&r->qmutex);
    acked = r->acked_n;
    head = r->ack_head;
    pthread_mutex_unlock(&r->qmutex);
    if (acked == 0 || r->seq < head) return 0;
    return drop_covered(r, acked + 1);
}

static void maybe_snapshot(replica *r);

/* Ordered mode: applies "@@replicate/checkpoint" for entry r->seq (README.md,
 * "With undo.so") from the plugin's place (local, never appended): after
 * each entry whose number is a multiple of snapshot_every, where snapshots
 * are taken, and after loading a snapshot while running (a replica that
 * fell behind a trimmed log), so that every replica passes the same
 * checkpoints and the middleware after the plugin (undo.so empties its
 * history) does the same thing everywhere. After the entry, so that a
 * listener's nested dispatch comes after it; a refusal's message stays
 * (success does not clear ts_last_error). Store held. */
static void checkpoint(replica *r) {
    char mark[96];
    snprintf(mark, sizeof mark, "{\"type\":\"@@replicate/checkpoint\",\"payload\":{\"seq\":%llu}}",
             (unsigned long long)r->seq);
    (void)r->deliver(mark);
}

/* Ordered mode: applies `action`; when it is one of this replica's own
 * dispatches under way ("#ORIGIN:N" with this origin), records its status
 * in that dispatch's slot, whatever thread applies it. Store held. */
static ts_status ordered_deliver(replica *r, const char *action, const char *origin, uint64_t n) {
    ordered_slot *slot = NULL;
    ts_status status;
    if (n != 0 && strcmp(origin, r->origin) == 0) {
        pthread_mutex_lock(&r->qmutex);
        for (slot = r->o_waiting; slot && slot->n != n; slot = slot->next) {
        }
        pthread_mutex_unlock(&r->qmutex);
    }
    status = r->deliver(action);
    if (slot) {
        /* Read by its dispatcher (waiting for it without the store, or once
         * it holds the store again). */
        char *reason = status != TS_OK ? reason_of(r, status) : NULL;
        pthread_mutex_lock(&r->qmutex);
        slot->status = status;
        slot->applier = pthread_self();
        slot->reason = reason;
        slot->applied = 1;
        /* Not answered yet: its sender wakes it with the answer. */
        if (slot->answered) pthread_cond_signal(&slot->cond);
        pthread_mutex_unlock(&r->qmutex);
    }
    if (n != 0 && strcmp(origin, r->origin) == 0) {
        r->confirmed_count++;
        maybe_snapshot(r);
    }
    if (r->snapshot_every != 0 && r->seq % r->snapshot_every == 0 && r->part_next == 0) checkpoint(r);
    return status;
}

static int is_marker(const char *origin, uint64_t n, const char *action, char marked[ORIGIN_SIZE], uint64_t *below);
static void hold_abandon(replica *r, const char *origin, uint64_t below);
static int unchanged_by(ts_status status);
static ts_status deliver_entry(replica *r, rp_entry *e);

/* Applies entry e, the next in the log, from the plugin's place: ordered
 * mode, and optimistic mode's confirmed state (during a rebase, when the
 * store shows the confirmed state; after tail_reserve). Optimistic mode
 * takes e's text into the tail (e->action is then NULL). */
static ts_status deliver_entry_now(replica *r, rp_entry *e) {
    char origin[ORIGIN_SIZE];
    uint64_t n;
    const char *action = split_entry(e->action, origin, &n);
    ts_status status;
    char *reason = NULL;
    if (!r->optimistic) return ordered_deliver(r, action, origin, n);
    if (n != 0 && strcmp(origin, r->origin) == 0) {
        /* One of its own after pending ones it did not read, past a
         * snapshot it loaded: those came before the snapshot. */
        if (r->snapshot_loaded && r->pend_count > 0) (void)drop_covered(r, n);
        r->snapshot_loaded = 0;
        /* Otherwise those are not in the log yet: this one is confirmed
         * ahead of them. */
        if (r->pend_count > 1 && !is_head(r, origin, n) && confirm_out_of_order(r, e, action, n, &status))
            return status;
    }
    if (!is_head(r, origin, n)) {
        status = r->deliver(action);
        tail_take(r, e->action);
        e->action = NULL;
        return status;
    }
    status = r->deliver(action);
    if (status != TS_OK) reason = reason_of(r, status);
    confirm_head(r, status, reason);
    free(reason);
    return status;
}

/* ---- Per-origin order of optimistic entries (README.md, "Per-origin order")
 * An optimistic replica appends pipelined, and JetStream may store one of its
 * later entries before earlier ones (an append refused while the stream
 * changes leader lands after the later ones when sent again). Every replica
 * therefore applies an optimistic entry ("#pORIGIN:N", the origin of an
 * optimistic replica begins with 'p') only once every number of its origin
 * below N is applied or abandoned: an entry that comes early is held back
 * and applied right after the entry that completes its origin's numbers.
 * The rule reads nothing but the log, so every replica derives the same
 * order from it:
 *   - an origin's next number starts at 1 (snapshots carry each origin's
 *     next number: a replica that joins from one goes on from there);
 *   - N equal to the next number: applied, then the held entries of that
 *     origin that now follow are applied, in number order;
 *   - N above it: held (counted in the status's "held_total");
 *   - N below it (or held already): not applied ("late": a duplicate, or a
 *     number abandoned before it came);
 *   - when an entry was held while HOLD_WINDOW further entries came, the
 *     numbers of its origin below the lowest it holds are abandoned (the
 *     origin died before sending them again) and its held entries go on in
 *     number order, up to that one at least: a hold is bounded by the
 *     log's progress, never by a clock, which would differ between
 *     replicas;
 *   - on a quiet log, a replica that held an entry for abandon_ms appends
 *     an abandon marker (optimistic: hold_mark, as its own action; ordered:
 *     ordered_mark, under an origin "p..." of its own); where the log puts
 *     it, every replica abandons the missing numbers below it.
 * Entries without the 'p' (ordered mode, older replicas) are applied in log
 * order, as before: ordered mode never pipelines one thread's dispatches,
 * and its numbers may have gaps (a dispatch that timed out). */
#define HOLD_WINDOW 100000

typedef struct hold_origin {
    char origin[ORIGIN_SIZE];
    uint64_t next;          /* every number below it is applied or abandoned */
    uint64_t abandon_below; /* an abandon marker applied: the numbers below it that are not in are abandoned */
} hold_origin;

typedef struct held_entry {
    size_t origin;   /* index in r->ho */
    uint64_t n;
    uint64_t landed; /* the entry's sequence number */
    char *text;      /* the entry's text, envelope included */
    struct timespec since; /* held here since (this replica's clock: only whether to append a marker) */
    int marked;      /* this replica appended a marker for it */
} held_entry;

/* The abandon marker (hold_mark): an optimistic replica's own action. */
#define MARKER_PREFIX "{\"type\":\"@@replicate/abandon\",\"payload\":{\"origin\":\""

enum { HOLD_APPLY, HOLD_KEEP, HOLD_LATE };

static int pipelined(const char *origin, uint64_t n) { return n != 0 && origin[0] == 'p'; }

/* The index of origin's record, made (next number 1) when `add`; -1 when
 * missing (or no memory). Store held. */
static long ho_find(replica *r, const char *origin, int add) {
    size_t i;
    if (r->ho_last < r->ho_count && strcmp(r->ho[r->ho_last].origin, origin) == 0) return (long)r->ho_last;
    for (i = 0; i < r->ho_count; i++) {
        if (strcmp(r->ho[i].origin, origin) == 0) {
            r->ho_last = i;
            return (long)i;
        }
    }
    if (!add) return -1;
    if (r->ho_count == r->ho_cap) {
        size_t cap = r->ho_cap ? r->ho_cap * 2 : 16;
        hold_origin *grown = realloc(r->ho, cap * sizeof *grown);
        if (grown == NULL) return -1;
        r->ho = grown;
        r->ho_cap = cap;
    }
    snprintf(r->ho[r->ho_count].origin, ORIGIN_SIZE, "%s", origin);
    r->ho[r->ho_count].next = 1;
    r->ho[r->ho_count].abandon_below = 0;
    r->ho_last = r->ho_count;
    return (long)r->ho_count++;
}

/* What the rule says of entry (origin, n), without changing anything. */
static int hold_kind(replica *r, const char *origin, uint64_t n) {
    long o = ho_find(r, origin, 0);
    uint64_t next = o < 0 ? 1 : r->ho[o].next;
    size_t i;
    if (n < next) return HOLD_LATE;
    if (n == next) return HOLD_APPLY;
    for (i = 0; i < r->held_count; i++)
        if ((long)r->held[i].origin == o && r->held[i].n == n) return HOLD_LATE;
    return HOLD_KEEP;
}

/* Whether origin has entries held back. */
static int holds_of(replica *r, const char *origin) {
    long o = ho_find(r, origin, 0);
    size_t i;
    for (i = 0; o >= 0 && i < r->held_count; i++)
        if ((long)r->held[i].origin == o) return 1;
    return 0;
}

/* Whether a held entry's window ends at entry seq. */
static int hold_expires_at(replica *r, uint64_t seq) {
    size_t i;
    for (i = 0; i < r->held_count; i++)
        if (seq >= r->held[i].landed + HOLD_WINDOW) return 1;
    return 0;
}

/* Applies the rule to entry e (origin, n), the next in the log: HOLD_APPLY
 * (its origin's next number is now past it: the caller applies it),
 * HOLD_KEEP (held: e->action taken) or HOLD_LATE (not applied); -1 without
 * memory (nothing changed). Store held. */
static int hold_admit(replica *r, rp_entry *e, const char *origin, uint64_t n) {
    int kind = hold_kind(r, origin, n);
    long o = ho_find(r, origin, 1);
    if (o < 0) return -1;
    if (kind == HOLD_APPLY) {
        r->ho[o].next = n + 1;
    } else if (kind == HOLD_KEEP) {
        if (r->held_count == r->held_cap) {
            size_t cap = r->held_cap ? r->held_cap * 2 : 64;
            held_entry *grown = realloc(r->held, cap * sizeof *grown);
            if (grown == NULL) return -1;
            r->held = grown;
            r->held_cap = cap;
        }
        r->held[r->held_count].origin = (size_t)o;
        r->held[r->held_count].n = n;
        r->held[r->held_count].landed = e->seq;
        r->held[r->held_count].text = e->action;
        clock_gettime(CLOCK_MONOTONIC, &r->held[r->held_count].since);
        r->held[r->held_count].marked = 0;
        r->held_count++;
        r->held_total++;
        e->action = NULL;
    } else {
        r->late_count++;
    }
    return kind;
}

/* An entry of this replica that the rule did not apply (its number was
 * abandoned, or a copy of it was applied): still pending here, it is
 * dropped and reported ("@@replicate/dropped", TS_E_IO). Optimistic mode,
 * store held (the store shows the confirmed state, or is rebased next). */
static void hold_late_own(replica *r, uint64_t n) {
    size_t i;
    pending p;
    char *report = NULL;
    pthread_mutex_lock(&r->qmutex);
    for (i = 0; i < r->pend_count && pend_at(r, i)->n != n; i++) {
    }
    if (i == r->pend_count) {
        pthread_mutex_unlock(&r->qmutex);
        return;
    }
    p = *pend_at(r, i);
    pend_remove(r, i);
    pthread_mutex_unlock(&r->qmutex);
    r->in_sync = 0;
    if (tail_reserve(r) == 0) {
        size_t size = 200;
        if ((report = malloc(size)) != NULL)
            snprintf(report, size, "its entry (number %llu) came after the log had abandoned that number (a later "
                     "action of this replica was applied without it): not applied on any replica", (unsigned long long)n);
        report_dropped(r, p.action, TS_E_IO, report);
    }
    free(report);
    free(p.action);
    free(p.reason);
}

/* Applies the held entries whose turn came: their origin's next number, or
 * an entry's window ended at r->seq: then its origin's numbers below the
 * lowest it holds are abandoned and that one is applied (never a higher
 * one first: an origin's entries stay in its order; again until the
 * expired one is applied). In log order of their arrival, one at a time,
 * again until none is due: the same on every replica. Store held
 * (optimistic mode: the store shows the confirmed state). */
static void hold_release(replica *r) {
    size_t i = 0, j;
    int released = 0;
    while (i < r->held_count) {
        held_entry h = r->held[i];
        hold_origin *o = &r->ho[h.origin];
        rp_entry e;
        if (h.n != o->next) {
            if (r->seq < h.landed + HOLD_WINDOW && h.n > o->abandon_below) {
                i++;
                continue;
            }
            for (j = 0; j < r->held_count; j++) {
                if (r->held[j].origin == h.origin && r->held[j].n < h.n) {
                    i = j;
                    h = r->held[j];
                }
            }
            r->abandoned_count += h.n - o->next; /* held entries are past o->next */
        }
        if (r->optimistic && tail_reserve(r) != 0) return; /* no memory: the next step tries again */
        memmove(r->held + i, r->held + i + 1, (r->held_count - i - 1) * sizeof *r->held);
        r->held_count--;
        o->next = h.n + 1;
        memset(&e, 0, sizeof e);
        e.seq = h.landed;
        e.action = h.text;
        (void)deliver_entry(r, &e);
        free(e.action);
        i = 0;
        released = 1;
    }
    if (released) publish(r); /* shared_held: the reader's ordered_mark looks at it */
}

/* Whether `action` (of an entry of origin `origin`, numbered n) is an
 * abandon marker; then its origin and number. */
static int is_marker(const char *origin, uint64_t n, const char *action, char marked[ORIGIN_SIZE], uint64_t *below) {
    const char *p = action + sizeof MARKER_PREFIX - 1, *q;
    unsigned long long v;
    char *end;
    if (!pipelined(origin, n) || strncmp(action, MARKER_PREFIX, sizeof MARKER_PREFIX - 1) != 0) return 0;
    q = strchr(p, '"');
    if (q == NULL || q == p || q - p >= ORIGIN_SIZE || strncmp(q, "\",\"below\":", 10) != 0) return 0;
    v = strtoull(q + 10, &end, 10);
    if (end == q + 10 || strcmp(end, "}}") != 0) return 0;
    memcpy(marked, p, (size_t)(q - p));
    marked[q - p] = '\0';
    *below = v;
    return 1;
}

/* An abandon marker applied (in the common order, as any entry): the
 * numbers of `origin` below `below` that are not in are abandoned; its
 * held entries below it go on at the next hold_release. Store held. */
static void hold_abandon(replica *r, const char *origin, uint64_t below) {
    long o = ho_find(r, origin, 0);
    if (o >= 0 && below > r->ho[o].abandon_below) r->ho[o].abandon_below = below;
}

/* The marker due for the held entries of one origin held here for
 * abandon_ms (not marked yet; never this replica's own entries):
 * {"type":"@@replicate/abandon","payload":{"origin":ORIGIN,"below":N}} (N:
 * the lowest number held of that origin) in `text` (size MARK_SIZE), with
 * that origin's index and N; its length, or 0 when none is due. Store held. */
#define MARK_SIZE (sizeof MARKER_PREFIX + ORIGIN_SIZE + 40)
static size_t next_mark(replica *r, char *text, size_t *origin, uint64_t *below) {
    size_t i, j;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    for (i = 0; i < r->held_count; i++) {
        held_entry *h = &r->held[i];
        uint64_t lowest = h->n;
        double held_ms = (double)(now.tv_sec - h->since.tv_sec) * 1e3 + (double)(now.tv_nsec - h->since.tv_nsec) / 1e6;
        size_t o = h->origin;
        if (h->marked || held_ms < (double)r->abandon_ms || strcmp(r->ho[o].origin, r->origin) == 0) continue;
        for (j = 0; j < r->held_count; j++)
            if (r->held[j].origin == o && r->held[j].n < lowest) lowest = r->held[j].n;
        *origin = o;
        *below = lowest;
        return (size_t)snprintf(text, MARK_SIZE, MARKER_PREFIX "%s\",\"below\":%llu}}", r->ho[o].origin,
                                (unsigned long long)lowest);
    }
    return 0;
}

/* The held entries of `origin` up to `below` have their marker. */
static void set_marked(replica *r, size_t origin, uint64_t below) {
    size_t j;
    for (j = 0; j < r->held_count; j++)
        if (r->held[j].origin == origin && r->held[j].n <= below) r->held[j].marked = 1;
}

/* Ordered mode, store held (the reader's ordered_mark, when entries are
 * held): the next marker due, as an entry "#MARK_ORIGIN:N MARKER" in
 * r->mark_text for the reader to append. An ordered replica appends
 * markers too, so that a hold ends within about abandon_ms on a stream
 * whose surviving replicas are all in ordered mode. */
static ts_status mark_step(void *self) {
    replica *r = self;
    char text[MARK_SIZE];
    size_t size, origin;
    uint64_t below;
    if (r->mark_text != NULL || next_mark(r, text, &origin, &below) == 0) return TS_OK;
    /* Marked even when there is no memory to append it: another replica may. */
    set_marked(r, origin, below);
    size = ORIGIN_SIZE + 26 + strlen(text) + 1;
    if ((r->mark_text = malloc(size)) == NULL) return TS_OK;
    snprintf(r->mark_text, size, "#%s:%llu %s", r->mark_origin, (unsigned long long)r->mark_next, text);
    r->markers_count++;
    return TS_OK;
}

/* Optimistic mode, store held (tend): each marker due (next_mark) is
 * appended as one of this replica's actions: applied here at once, like a
 * dispatch, and pending. Where the log puts it, every replica abandons that
 * origin's numbers below N that are not in, and applies its held entries:
 * a hold ends within about abandon_ms on a quiet log too. */
static void hold_mark(replica *r) {
    char text[MARK_SIZE], *copy;
    size_t length, origin;
    uint64_t below;
    if (!r->optimistic) return;
    while (r->held_count > 0 && r->pend_count < r->max_pending &&
           (length = next_mark(r, text, &origin, &below)) > 0) {
        ts_status status;
        if ((copy = malloc(length + 1)) == NULL) return;
        memcpy(copy, text, length + 1);
        status = r->deliver(copy);
        pthread_mutex_lock(&r->qmutex);
        if (pend_push(r, copy, length, 1) != 0) {
            pthread_mutex_unlock(&r->qmutex);
            free(copy);
            if (!unchanged_by(status)) r->in_sync = 0;
            return;
        }
        pend_at(r, r->pend_count - 1)->outcome = status;
        pthread_mutex_unlock(&r->qmutex);
        pthread_cond_signal(&r->qwake);
        set_marked(r, origin, below);
        r->markers_count++;
    }
}

/* Forgets the holds (a snapshot replaces them). */
static void hold_clear(replica *r) {
    size_t i;
    for (i = 0; i < r->held_count; i++) free(r->held[i].text);
    r->held_count = 0;
    r->ho_count = 0;
    r->ho_last = 0;
}

/* The snapshot's prefix: "P" ORIGIN ":" NEXT ("," ORIGIN ":" NEXT)... " ",
 * malloc'ed ("" when no optimistic origin is known); NULL without memory. */
static char *hold_prefix(replica *r) {
    size_t i, used = 0, size = 2 + r->ho_count * (ORIGIN_SIZE + 22);
    char *out = malloc(size);
    if (out == NULL) return NULL;
    out[0] = '\0';
    for (i = 0; i < r->ho_count; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%s:%llu", i ? "," : "P", r->ho[i].origin,
                                 (unsigned long long)r->ho[i].next);
    if (used) snprintf(out + used, size - used, " ");
    return out;
}

/* Checks a snapshot's prefix (if it has one; *rest: what follows) and,
 * when `commit`, makes it the holds (none held; without a prefix: no
 * origin known). 0, or -1 when it is malformed (nothing changed) or no
 * memory. */
static int hold_load(replica *r, const char *text, const char **rest, int commit) {
    const char *p = text + 1;
    *rest = text;
    if (text[0] != 'P') {
        if (commit) hold_clear(r);
        return 0;
    }
    /* Checked first, then loaded. */
    for (;;) {
        const char *colon = p;
        while ((*colon >= '0' && *colon <= '9') || (*colon >= 'a' && *colon <= 'z')) colon++;
        if (colon == p || colon - p >= ORIGIN_SIZE || *colon != ':' || colon[1] < '0' || colon[1] > '9') return -1;
        for (p = colon + 1; *p >= '0' && *p <= '9'; p++) {
        }
        if (p - colon > 20) return -1;
        if (*p == ' ') break;
        if (*p != ',') return -1;
        p++;
    }
    if (!commit) {
        *rest = p + 1;
        return 0;
    }
    hold_clear(r);
    for (p = text + 1;;) {
        const char *colon = strchr(p, ':');
        char origin[ORIGIN_SIZE];
        long o;
        memcpy(origin, p, (size_t)(colon - p));
        origin[colon - p] = '\0';
        if ((o = ho_find(r, origin, 1)) < 0) return -1;
        r->ho[o].next = strtoull(colon + 1, (char **)&p, 10);
        if (*p++ == ' ') break;
    }
    *rest = p;
    return 0;
}

/* deliver_entry_now, and an abandon marker's effect once it is applied
 * (hold_mark): the same on every replica, where the common order puts it. */
static ts_status deliver_entry(replica *r, rp_entry *e) {
    char origin[ORIGIN_SIZE], marked[ORIGIN_SIZE];
    uint64_t n, below = 0;
    const char *action = split_entry(e->action, origin, &n);
    int marker = is_marker(origin, n, action, marked, &below);
    ts_status status;
    status = deliver_entry_now(r, e);
    if (marker) hold_abandon(r, marked, below);
    return status;
}

/* The status a failure of the log gives: damage is not the log's silence. */
static ts_status status_of(int rc) { return rc == RP_DAMAGED ? TS_E_PLUGIN : TS_E_IO; }

/* Stores `state` as the snapshot of entry r->seq. The snapshot carries the
 * state version of the replica that took it: a replica at version 0 stores
 * the state's JSON text as before; one at version N > 0 stores "VN " and
 * then the text (not JSON, so that a replica of before versions refuses it
 * instead of taking the prefix for state). */
static void snapshot_put(replica *r, const char *state) {
    char err[RP_ERR_SIZE], *text, *holds;
    size_t length;
    int stored;
    /* Per-origin order: not while entries are held back (a joiner could not
     * know them); else each optimistic origin's next number goes first,
     * "P" ORIGIN ":" NEXT ... " " (hold_prefix; none known: nothing). */
    if (r->held_count > 0) return;
    if ((holds = hold_prefix(r)) == NULL) return; /* best effort, as every snapshot */
    if (r->version == 0 && holds[0] == '\0') {
        (void)rp_snapshot_put(r->log, state, r->pos, r->seq, &stored, err);
        free(holds);
        return;
    }
    length = strlen(holds) + strlen(state) + 16;
    if ((text = malloc(length)) == NULL) {
        free(holds);
        return;
    }
    if (r->version == 0) snprintf(text, length, "%s%s", holds, state);
    else snprintf(text, length, "%sV%lu %s", holds, (unsigned long)r->version, state);
    (void)rp_snapshot_put(r->log, text, r->pos, r->seq, &stored, err);
    free(text);
    free(holds);
}

/* The version a snapshot's text carries ("VN " before the JSON; none: 0)
 * and where its JSON starts. 0, or -1 when "V" is not followed by a version
 * and a space. */
static int snapshot_version(const char *text, uint32_t *version, const char **json) {
    uint64_t v = 0;
    const char *p = text + 1;
    *version = 0;
    *json = text;
    if (text[0] != 'V') return 0;
    if (*p < '0' || *p > '9') return -1;
    while (*p >= '0' && *p <= '9') {
        v = v * 10u + (uint64_t)(*p++ - '0');
        if (v > 4294967295u) return -1;
    }
    if (*p != ' ') return -1;
    *version = (uint32_t)v;
    *json = p + 1;
    return 0;
}

/* Takes a snapshot (the state after entry r->seq) if this is the replica
 * that appended entry r->seq and it is a multiple of snapshot_every. Best
 * effort: a failed snapshot only makes joining slower. */
static void maybe_snapshot(replica *r) {
    char *state = NULL;
    if (r->snapshot_every == 0 || r->seq % r->snapshot_every != 0 || r->part_next != 0) return;
    if (r->store->get_state("", &state) != TS_OK) return;
    snapshot_put(r, state);
    r->store->free(state);
}

/* Loads the snapshot if it is ahead of this replica. 1 loaded, 0 none ahead,
 * RP_FAILED or RP_DAMAGED (message in err). With the store held. */
static int load_snapshot(replica *r, char *err) {
    int found, rc;
    char *state = NULL, *holds = NULL, pos[RP_POS_SIZE];
    const char *json;
    uint32_t version;
    uint64_t seq = 0;
    ts_status status;
    /* Checked against the log (rp_check_snapshot) before it replaces anything. */
    if ((rc = rp_snapshot_get(r->log, &found, &state, pos, &seq, err)) != 0) return rc;
    if (!found || seq <= r->seq) {
        free(state);
        return 0;
    }
    if (hold_load(r, state, &json, 0) != 0) {
        free(state);
        snprintf(err, RP_ERR_SIZE, "replicate: the snapshot of stream \"%.200s\" (entry %llu) starts with \"P\" but "
                 "not with the origins' next numbers (\"PORIGIN:N,... \"): it was not written by replicate.so",
                 r->stream, (unsigned long long)seq);
        return RP_DAMAGED;
    }
    holds = NULL;
    if (json != state) {
        /* The origins' numbers, loaded once the state is; then the state's
         * text (and its version). */
        size_t k = (size_t)(json - state);
        if ((holds = malloc(k + 1)) == NULL) {
            free(state);
            snprintf(err, RP_ERR_SIZE, "replicate: out of memory");
            return RP_FAILED;
        }
        memcpy(holds, state, k);
        holds[k] = '\0';
        memmove(state, json, strlen(json) + 1);
    }
    if (snapshot_version(state, &version, &json) != 0) {
        free(state);
        free(holds);
        snprintf(err, RP_ERR_SIZE, "replicate: the snapshot of stream \"%.200s\" (entry %llu) starts with \"V\" but "
                 "not with a state version (\"VN \"): it was not written by replicate.so", r->stream,
                 (unsigned long long)seq);
        return RP_DAMAGED;
    }
    if (json != state) {
        /* The state's JSON without its "VN " (optimistic mode keeps the
         * text as the confirmed state, which a rebase puts back). */
        memmove(state, json, strlen(json) + 1);
        json = state;
    }
    if (version != r->version && !r->versioned) {
        free(state);
        free(holds);
        snprintf(err, RP_ERR_SIZE, "replicate: the snapshot of stream \"%.200s\" (entry %llu) is of state version %lu, "
                 "and this library cannot migrate state (its ts_store_api has no replace_state_from)", r->stream,
                 (unsigned long long)seq, (unsigned long)version);
        return RP_FAILED;
    }
    /* A snapshot of an older version is migrated; a newer one is refused
     * (replace_state_from's rules), with nothing loaded. */
    status = version == r->version ? r->store->replace_state(json) : r->store->replace_state_from(json, version);
    if (status != TS_OK) {
        free(state);
        free(holds);
        snprintf(err, RP_ERR_SIZE, "replicate: the snapshot of stream \"%.200s\" (entry %llu, state version %lu) was "
                 "refused: %s: %.250s", r->stream, (unsigned long long)seq, (unsigned long)version,
                 r->store->status_name(status),
                 r->versioned ? r->store->last_error() : r->last_error ? r->last_error() : "");
        return RP_FAILED;
    }
    if (version != r->version) {
        /* The confirmed state is the migrated one (optimistic mode keeps it
         * as text): read it back. */
        free(state);
        state = NULL;
        if (r->store->get_state("", &state) != TS_OK) {
            snprintf(err, RP_ERR_SIZE, "replicate: cannot read the state migrated from the snapshot of stream \"%.200s\"",
                     r->stream);
            return RP_FAILED;
        }
    }
    if (r->optimistic) {
        /* Optimistic mode: the confirmed state is now the snapshot's (a
         * rebase loads it while the store shows the confirmed state). */
        free(r->confirmed);
        r->confirmed = state;
        tail_clear(r);
        r->snapshot_loaded = 1;
    } else {
        free(state);
    }
    {
        const char *rest;
        (void)hold_load(r, holds ? holds : "", &rest, 1); /* checked above; memory: best effort */
        free(holds);
    }
    memcpy(r->pos, pos, RP_POS_SIZE);
    r->seq = seq;
    r->part_next = 0;
    publish(r);
    /* Running (not joining: nothing is after the plugin yet), ordered. */
    if (r->reader_started && !r->optimistic) checkpoint(r);
    return 1;
}

static void damaged(replica *r, char *err, const char *format, ...) {
    va_list args;
    int n = snprintf(err, RP_ERR_SIZE, "replicate: stream \"%.200s\" is damaged: ", r->stream);
    if (n < 0 || n >= RP_ERR_SIZE) return;
    va_start(args, format);
    vsnprintf(err + n, RP_ERR_SIZE - (size_t)n, format, args);
    va_end(args);
}

/* The message for an entry left unapplied for want of memory. */
static void no_memory_for(char *err, const rp_entry *e) {
    snprintf(err, RP_ERR_SIZE, "replicate: out of memory (entry %s is not applied yet)", e->pos);
}

/* What to do with entry e: rp_step_of, and for a message of several
 * entries, its parts in order (those before part_next are applied). */
static enum rp_step step_of(const replica *r, const rp_entry *e) {
    enum rp_step step = rp_step_of(r->pos, r->seq, e);
    if (step != RP_APPLY) return step;
    if (e->part < r->part_next) return RP_SKIP;
    return e->part == r->part_next ? RP_APPLY : RP_GAP;
}

/* Entry e was taken (applied, held or late): this replica's position moves
 * past it, or past its message after the message's last part. */
static void advance(replica *r, const rp_entry *e) {
    if (e->parts > 1 && e->part + 1 < e->parts) {
        r->part_next = e->part + 1;
        return;
    }
    r->part_next = 0;
    memcpy(r->pos, e->pos, RP_POS_SIZE);
    r->seq = e->seq;
    publish(r);
}

/* Applies a batch in order (rp_step_of says what to do with each entry).
 * Returns 0; 1 when entries are missing before items[*gap_at] (the caller
 * tells trimming from damage: after_gap); RP_DAMAGED when an entry after
 * this replica's position is numbered at or below the last it applied
 * (nothing from it on is applied). */
static int apply_batch(replica *r, rp_batch *batch, own_entry *own, size_t *gap_at, char *err) {
    size_t i;
    for (i = 0; i < batch->count; i++) {
        rp_entry *e = &batch->items[i];
        ts_status status;
        int mine = own->pos != NULL && strcmp(e->pos, own->pos) == 0;
        switch (step_of(r, e)) {
        case RP_SKIP:
            /* Read before a dispatch nested in a listener applied it. */
            if (mine && !own->done) {
                own->done = 1;
                own->status = TS_OK;
            }
            continue;
        case RP_BACKWARD:
            damaged(r, err,
                    "entry %s is number %llu, after entry %llu (%s), the last this replica applied: the log was "
                    "reset (FLUSHALL, or its keys deleted) or a number was used twice",
                    e->pos, (unsigned long long)e->seq, (unsigned long long)r->seq, r->pos[0] ? r->pos : "none");
            return RP_DAMAGED;
        case RP_GAP:
            *gap_at = i;
            return 1;
        case RP_APPLY:
            break;
        }
        if (r->optimistic && tail_reserve(r) != 0) {
            no_memory_for(err, e);
            return RP_FAILED;
        }
        /* Counted before it runs: a listener's nested dispatch must see it as
         * applied, not apply it again. */
        {
            /* An optimistic entry waits for its origin's earlier numbers
             * (hold_admit): held, or not applied at all when late. */
            char origin[ORIGIN_SIZE];
            uint64_t n;
            int kind = HOLD_APPLY;
            (void)split_entry(e->action, origin, &n);
            if (pipelined(origin, n) && (kind = hold_admit(r, e, origin, n)) < 0) {
                no_memory_for(err, e);
                return RP_FAILED;
            }
            advance(r, e);
            if (kind != HOLD_APPLY) {
                if (kind == HOLD_LATE && r->optimistic && strcmp(origin, r->origin) == 0) hold_late_own(r, n);
                hold_release(r);
                continue;
            }
        }
        /* From the plugin's place in the chain: the middleware after it,
         * then the reducers and listeners, on every replica. A reducer that
         * refuses an entry refuses it on every replica (the reducers are
         * pure): it stays unapplied everywhere. */
        status = deliver_entry(r, e);
        if (mine) {
            r->confirmed_count++;
            own->done = 1;
            own->status = status;
            maybe_snapshot(r);
        }
        if (r->held_count > 0) hold_release(r);
    }
    return 0;
}

/* Entry e, after this replica's position, is numbered past r->seq + 1.
 * Trimmed (e is the stream's first entry: the entries before it went with a
 * snapshot, which is loaded) or damaged (entries deleted from the middle).
 * 0 when the snapshot was loaded, else RP_FAILED or RP_DAMAGED. */
static int after_gap(replica *r, const rp_entry *e, char *err) {
    rp_batch first;
    int rc = rp_read(r->log, "", 1, &first, err), trimmed, loaded;
    if (rc != 0) {
        rp_batch_free(&first);
        return rc;
    }
    /* (NATS: the first message may give several entries, its parts.) */
    trimmed = first.count > 0 && strcmp(first.items[0].pos, e->pos) == 0;
    rp_batch_free(&first);
    if (!trimmed) {
        if (e->seq == r->seq + 2) {
            damaged(r, err, "entry %llu is missing: entry %llu (%s) is followed by entry %llu (%s)",
                    (unsigned long long)(r->seq + 1), (unsigned long long)r->seq, r->pos, (unsigned long long)e->seq,
                    e->pos);
        } else {
            damaged(r, err, "entries %llu to %llu are missing: entry %llu (%s) is followed by entry %llu (%s)",
                    (unsigned long long)(r->seq + 1), (unsigned long long)(e->seq - 1), (unsigned long long)r->seq,
                    r->pos, (unsigned long long)e->seq, e->pos);
        }
        return RP_DAMAGED;
    }
    loaded = load_snapshot(r, err);
    if (loaded < 0) return loaded;
    if (loaded == 0) {
        damaged(r, err, "it no longer holds entry %llu (trimmed before %s) and no snapshot covers it",
                (unsigned long long)(r->seq + 1), e->pos);
        return RP_DAMAGED;
    }
    return 0;
}

/* Applies everything the log holds after r->pos. With the store held.
 * 0, RP_FAILED or RP_DAMAGED (what comes before the damage is applied).
 * Ends: every round applies an entry, loads a snapshot further on, or stops. */
static int catch_up(replica *r, own_entry *own, char *err) {
    for (;;) {
        rp_batch batch;
        char read_err[RP_ERR_SIZE];
        size_t at = 0;
        int rc, step;
        rc = rp_read(r->log, r->pos, READ_BATCH, &batch, read_err);
        if (rc == RP_FAILED || batch.count == 0) {
            rp_batch_free(&batch);
            if (rc != 0) memcpy(err, read_err, RP_ERR_SIZE);
            return rc;
        }
        step = apply_batch(r, &batch, own, &at, err);
        if (step == 1) step = after_gap(r, &batch.items[at], err);
        else if (step == 0 && rc == RP_DAMAGED) {
            /* Everything before the damage is applied: now the damage. */
            memcpy(err, read_err, RP_ERR_SIZE);
            step = RP_DAMAGED;
        }
        rp_batch_free(&batch);
        if (step != 0) return step;
    }
}

static ts_status optimistic_run(replica *r, ts_next_fn next, const ts_action *action);

/* ---- Ordered mode: the shared append queue ---------------------------------
 * run() takes a place in the queue (a number N, "#ORIGIN:N ACTION"), lets go
 * of the store (ts_store_api.unlocked) while the sender appends everything
 * queued, from every dispatching thread, in one rp_append_batch, and takes
 * the store again once that append answered. It then applies the entries
 * that append read back, in log order, up to its own (another dispatcher or
 * the reader may have applied them already: an entry is applied once, by
 * whichever thread reaches it, and a dispatch's own entry records its status
 * in its slot). Where unlocked is refused (a nested dispatch) or missing (an
 * older library), run() waits with the store held, as before. On NATS the
 * sender first waits (ORDERED_LINGER_US at most) for the threads whose
 * dispatches were just answered to queue their next ones: one append for
 * all of them instead of one for the half that queued meanwhile. */

static size_t envelope(char *out, const char *origin, uint64_t n);

typedef struct ordered_wait {
    replica *r;
    ordered_slot *slot;
    int follow; /* without the store: also wait for the reader to apply it */
} ordered_wait;

/* Appends what the dispatching threads queued, all of it (up to
 * ORDERED_SEND_MAX and SEND_MAX_BYTES) in one append, then hands each slot
 * its answer: Redis (rp_append_batch), its entry's position and the entries
 * the append read back (from this replica's position up to the last one
 * appended); NATS (rp_append_many), that it is in the log; or the failure.
 * Called by one waiting dispatcher at a time (o_sending), with qmutex held,
 * which it lets go of during the append. */
static void ordered_send(replica *r) {
    ordered_slot *slots[ORDERED_SEND_MAX];
    const char *texts[ORDERED_SEND_MAX];
    ordered_answer *answer;
    char after[RP_POS_SIZE], err[RP_ERR_SIZE];
    uint64_t seq;
    size_t k = 0, bytes = 0, i, done = 0;
    int rc;
    while (r->oq_first && k < ORDERED_SEND_MAX && (k == 0 || bytes + r->oq_first->length <= SEND_MAX_BYTES)) {
        ordered_slot *slot = r->oq_first;
        r->oq_first = slot->queued;
        if (r->oq_first == NULL) r->oq_last = NULL;
        slot->queued = NULL;
        r->o_queued--;
        bytes += slot->length;
        slots[k] = slot;
        texts[k] = slot->text;
        k++;
    }
    r->o_sending = 1;
    pthread_mutex_unlock(&r->qmutex);
    answer = calloc(1, sizeof *answer);
    if (answer == NULL) {
        rc = RP_FAILED;
        snprintf(err, sizeof err, "replicate: out of memory (nothing was appended)");
    } else {
        pthread_mutex_lock(&r->mutex);
        memcpy(after, r->shared_pos, RP_POS_SIZE);
        seq = r->shared_seq;
        pthread_mutex_unlock(&r->mutex);
        if (r->reads_back) {
            /* Redis: the dispatcher holds the store (below), so the
             * store's own connection serves. */
            rc = rp_append_batch(r->log, texts, k, after, seq, &answer->batch, err);
        } else {
            /* NATS: each entry with the message id ORIGIN:N, resent until
             * acknowledged; the reader thread's cursor brings them back. */
            rc = rp_append_many(r->sender_log, r->origin, slots[0]->n, k, texts, seq, &done, err);
        }
        if (rc != 0) note_failure(r, 1, err, rc == RP_DAMAGED);
        else note_ok(r, 1, r->sender_log);
    }
    pthread_mutex_lock(&r->qmutex);
    r->o_sending = 0;
    r->o_batches++;
    r->o_batched += k;
    for (i = 0; i < k; i++) {
        /* append_many: the first `done` are known to be in the log. */
        int failed = rc != 0 && (r->reads_back || i >= done);
        slots[i]->rc = failed ? rc : 0;
        if (failed) memcpy(slots[i]->err, err, RP_ERR_SIZE);
    }
    if (rc == 0 && r->reads_back) {
        for (i = 0; i < answer->batch.count; i++) {
            const rp_entry *e = &answer->batch.items[i];
            if (e->mine > 0 && (size_t)e->mine <= k) memcpy(slots[e->mine - 1]->pos, e->pos, RP_POS_SIZE);
        }
        answer->refs = (int)k;
        for (i = 0; i < k; i++) slots[i]->answer = answer;
    } else if (answer) {
        rp_batch_free(&answer->batch);
        free(answer);
    }
    for (i = 0; i < k; i++) {
        ordered_slot *slot = slots[i];
        slot->answered = 1;
        if (slot->rc == 0) r->o_returning++;
        slot->apply_until = deadline_in((long)r->timeout_ms);
        /* A dispatcher that follows its entry waits on for the reader
         * (woken by ordered_deliver) unless there is nothing to wait for. */
        if (!slot->follow || slot->rc != 0 || slot->applied || r->reads_back) pthread_cond_signal(&slot->cond);
    }
    /* The dispatcher at the head of the queue sends what queued meanwhile. */
    if (r->oq_first) pthread_cond_signal(&r->oq_first->cond);
}

/* 1 when `t` has passed (CLOCK_MONOTONIC). */
static int passed(const struct timespec *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

/* Waits for the append's answer to a slot (self: an ordered_wait). Without
 * the store, or with it when unlocked was refused. The waiting threads
 * share the sending: when no append is under way and the queue holds
 * actions, the dispatcher that sees it appends them all (its own and the
 * others', in queue order; on NATS, after waiting up to ORDERED_LINGER_US
 * for the threads just answered to queue theirs), so one round trip
 * carries every thread's dispatches queued then and no thread hands its
 * work to another. With `follow` (NATS, without the store), it then waits
 * for the reader thread to apply its entry, up to timeout_ms after the
 * answer (after that the dispatcher reads the log itself). */
static ts_status await_answer(void *self) {
    replica *r = ((ordered_wait *)self)->r;
    ordered_slot *slot = ((ordered_wait *)self)->slot;
    int follow = ((ordered_wait *)self)->follow && !r->reads_back, lingered = 0;
    pthread_mutex_lock(&r->qmutex);
    slot->follow = follow;
    for (;;) {
        struct timespec until;
        if (slot->answered) {
            if (!follow || slot->rc != 0 || slot->applied || passed(&slot->apply_until)) break;
            until = slot->apply_until;
        } else if (r->oq_first && !r->o_sending && !r->o_lingerer) {
            if (ORDERED_LINGER_US > 0 && follow && !lingered && r->o_returning > 0) {
                /* Threads whose dispatches were just answered are about to
                 * dispatch again: one append for them and the queue. */
                size_t expected = r->o_queued + r->o_returning;
                until = deadline_in_us(ORDERED_LINGER_US);
                lingered = 1;
                r->o_lingerer = slot;
                while (r->o_queued < expected && !passed(&until))
                    (void)pthread_cond_timedwait(&slot->cond, &r->qmutex, &until);
                r->o_lingerer = NULL;
            }
            ordered_send(r);
            continue;
        } else {
            /* Woken when answered (or applied, or its turn to send); the
             * time bound only guards the wait itself. */
            until = deadline_in(WAIT_BLOCK_MS);
        }
        (void)pthread_cond_timedwait(&slot->cond, &r->qmutex, &until);
    }
    pthread_mutex_unlock(&r->qmutex);
    return TS_OK;
}

/* Takes `slot` out of the list of dispatches under way and drops its hold on
 * the answer. */
static void ordered_done(replica *r, ordered_slot *slot) {
    ordered_slot **at;
    ordered_answer *answer = NULL;
    pthread_mutex_lock(&r->qmutex);
    for (at = &r->o_waiting; *at; at = &(*at)->next) {
        if (*at == slot) {
            *at = slot->next;
            break;
        }
    }
    if (slot->answered && slot->rc == 0) r->o_returning--;
    if (slot->answer && --slot->answer->refs == 0) answer = slot->answer;
    pthread_mutex_unlock(&r->qmutex);
    if (answer) {
        rp_batch_free(&answer->batch);
        free(answer);
    }
    pthread_cond_destroy(&slot->cond);
    free(slot->text);
    free(slot->reason);
    free(slot);
}

static ts_status ordered_run(replica *r, const ts_action *action) {
    const ts_store_api *store = r->store;
    ordered_slot *slot;
    char err[RP_ERR_SIZE];
    size_t length = strlen(action->json), at = 0;
    ts_status status;
    int rc = 0;
    slot = calloc(1, sizeof *slot);
    if (slot) slot->text = malloc(ORIGIN_SIZE + 26 + length + 1);
    if (slot == NULL || slot->text == NULL) {
        if (slot) free(slot);
        return store->fail(TS_E_NOMEM, "replicate: out of memory");
    }
    pthread_cond_init(&slot->cond, &r->o_clock);
    pthread_mutex_lock(&r->qmutex);
    slot->n = r->o_next_n++;
    slot->length = envelope(slot->text, r->origin, slot->n);
    memcpy(slot->text + slot->length, action->json, length + 1);
    slot->length += length;
    if (r->oq_last) r->oq_last->queued = slot;
    else r->oq_first = slot;
    r->oq_last = slot;
    r->o_queued++;
    if (r->o_lingerer) pthread_cond_signal(&r->o_lingerer->cond);
    slot->next = r->o_waiting;
    r->o_waiting = slot;
    pthread_mutex_unlock(&r->qmutex);
    /* The wait: with the store let go where the library allows it; where
     * it refuses (this dispatch is nested in another call into the store)
     * or cannot (an older library), with the store held. */
    {
        ordered_wait w;
        w.r = r;
        w.slot = slot;
        w.follow = 1;
        /* Redis answers in about 0.1 ms: letting the store go for that made
         * the reader thread and the dispatcher take turns at the store,
         * which cost more than the round trip (about 9,400 against 3,800
         * dispatches/s from three processes); there it is kept. */
        status = r->can_unlock && !r->reads_back ? store->unlocked(await_answer, &w) : TS_E_MISUSE;
        if (status != TS_OK) {
            /* The reader cannot apply anything while this thread holds the
             * store: only the append is waited for. */
            w.follow = 0;
            (void)await_answer(&w);
        }
    }
    /* The store is held again. */
    if (slot->rc != 0) {
        rc = slot->rc;
        memcpy(err, slot->err, RP_ERR_SIZE);
        ordered_done(r, slot);
        /* Nothing was appended (or, after a timeout, maybe it was: then it is
         * applied everywhere when it is read back, as any entry). */
        return store->fail(status_of(rc), err);
    }
    if (!slot->applied && !r->reads_back) {
        /* NATS, not applied by the reader yet (this dispatch is nested, or
         * the reader is slow): read the log to its end here. Not found
         * there: a snapshot this replica loaded covered it. */
        own_entry none = {NULL, 0, TS_OK};
        rc = catch_up(r, &none, err);
        rp_idle(r->log);
    } else if (!slot->applied) {
        own_entry none = {NULL, 0, TS_OK};
        rc = apply_batch(r, &slot->answer->batch, &none, &at, err);
        /* This replica was further behind than the log keeps: the
         * snapshot, then the rest (its own entry included). */
        if (rc == 1) rc = after_gap(r, &slot->answer->batch.items[at], err);
        if (rc == 0 && !slot->applied) rc = catch_up(r, &none, err);
        if (rc == 0 && !slot->applied && rp_compare_pos(slot->pos, r->pos) > 0) {
            /* Not read back, and not behind what this replica applied: gone. */
            damaged(r, err, "it no longer holds entry %s", slot->pos);
            rc = RP_DAMAGED;
        }
    }
    if (rc != 0) {
        size_t n = strlen(err);
        if (!slot->applied && slot->pos[0] && n + 80 < RP_ERR_SIZE) {
            snprintf(err + n, RP_ERR_SIZE - n, " (this action was appended as %s, and is not applied here)", slot->pos);
        }
        ordered_done(r, slot);
        return store->fail(status_of(rc), err);
    }
    if (!slot->applied) {
        ordered_done(r, slot);
        return TS_OK; /* the snapshot already covered it */
    }
    status = slot->status;
    if (status != TS_OK && !pthread_equal(slot->applier, pthread_self())) {
        /* Applied on another thread: its reason, told here. */
        snprintf(err, sizeof err, "%s", slot->reason ? slot->reason : store->status_name(status));
        ordered_done(r, slot);
        return store->fail(status, err);
    }
    ordered_done(r, slot);
    return status;
}

/* Whether the action under way was dispatched by journal.so's create(),
 * which replays its records from the top of the chain (ts_store_api's
 * loading; a host without it cannot tell: 0). */
static int journal_replay(replica *r) {
    const char *name = NULL;
    if (!TS_API_HAS(r->store, loading) || r->store->loading == NULL)
        return 0;
    return r->store->loading(&name) == TS_OK && name != NULL && strcmp(name, "journal") == 0;
}

static ts_status replicate_run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
    replica *r = self;
    (void)store; /* r->store is the same table */
    if (strcmp(action->type, "@@replicate/abandon") == 0)
        return r->store->fail(TS_E_ARGUMENT, "replicate: \"@@replicate/abandon\" is the plugin's own action (an abandon "
                                             "marker, README.md \"Per-origin order\"): a program cannot dispatch it");
    if (strcmp(action->type, "@@replicate/status") == 0) {
        /* The program asks for the status: filled in, applied here only. */
        char text[STATUS_SIZE + 64];
        ts_status status;
        status_action(r, text, sizeof text);
        status = next(text);
        if (r->optimistic && status == TS_OK && tail_reserve(r) == 0) {
            /* Kept with the confirmed state: a rebase applies it again. */
            size_t n = strlen(text) + 1;
            char *copy = malloc(n);
            if (copy) {
                memcpy(copy, text, n);
                tail_take(r, copy);
            }
        }
        return status;
    }
    if (journal_replay(r)) {
        /* A journal loaded after the plugin replays its records from the top
         * (README.md, "With a journal"): they are entries of the log already,
         * and the state the log brought would be overwritten. */
        return store->fail(TS_E_REJECTED,
                           "replicate: a journal.so loaded after replicate.so replays its records through it, which "
                           "would append them to the log again (every replica would apply them twice); behind "
                           "replicate.so the log is the truth: give the journal \"restore\": false (nothing was "
                           "appended or applied)");
    }
    if (r->optimistic && strcmp(action->type, "@@undo/clear") == 0 && action->payload != NULL &&
        pj_get(action->payload, "loaded") != NULL && pj_kind_of(pj_get(action->payload, "loaded")) == PJ_TRUE) {
        /* undo.so loading after it (README.md, "With undo.so"): refused, so
         * that undo.so does not load on any replica of this mode. */
        return store->fail(TS_E_REJECTED,
                           "replicate: undo.so cannot follow replicate.so in \"mode\": \"optimistic\": a rebase puts "
                           "an earlier state back and applies entries again, which each replica's undo.so would take "
                           "for a change behind its back at a different time, so the replicas' histories (and what "
                           "an @@undo undoes) would differ; use \"mode\": \"ordered\" (nothing was appended or "
                           "applied)");
    }
    if (r->optimistic) return optimistic_run(r, next, action);
    return ordered_run(r, action);
}

typedef struct reader_work {
    replica *r;
    rp_batch *batch;
    int read_rc;                 /* the read's result: 0 or RP_DAMAGED (after the batch) */
    const char *read_err;        /* its message */
    int rc;                      /* the step's result */
    char err[RP_ERR_SIZE];       /* its message */
} reader_work;

/* With the store held: what the reader read, then (after a gap: the entries
 * before them were trimmed, or came after it read) whatever the log holds. */
static ts_status reader_step(void *self) {
    reader_work *w = self;
    own_entry none = {NULL, 0, TS_OK};
    size_t at = 0;
    w->rc = apply_batch(w->r, w->batch, &none, &at, w->err);
    if (w->rc == 1) {
        w->rc = after_gap(w->r, &w->batch->items[at], w->err);
        if (w->rc == 0) w->rc = catch_up(w->r, &none, w->err);
    } else if (w->rc == 0 && w->read_rc != 0) {
        w->rc = w->read_rc;
        memcpy(w->err, w->read_err, RP_ERR_SIZE);
    }
    emit_status(w->r, 0);
    return TS_OK;
}

/* ---- Optimistic mode: the reader's side ------------------------------------ */

/* Keeps the text of the state the store shows as the confirmed state (the
 * log up to r->seq; the tail is then empty). 0, or -1 (no memory: the old
 * text and the tail stay, and are still right). Store held. The text comes
 * from get_state, malloc'ed (turnstate.h, Memory: free() is the table's
 * free), like the snapshot's that load_snapshot keeps. */
static int capture_confirmed(replica *r) {
    char *state = NULL;
    if (r->store->get_state("", &state) != TS_OK) return -1;
    free(r->confirmed);
    r->confirmed = state;
    tail_clear(r);
    return 0;
}

/* Stores the confirmed state as the snapshot, when one is due and the text
 * is the state at r->seq. Best effort, as in ordered mode. Store held. */
static void snapshot_confirmed(replica *r) {
    if (!r->snapshot_due || r->tail_count != 0 || r->confirmed == NULL || r->held_count > 0 || r->part_next != 0)
        return;
    snapshot_put(r, r->confirmed);
    r->snapshot_due = 0;
}

/* Puts the store back to the confirmed state: its text, then the tail
 * applied again. 0, or RP_FAILED with a message (the state is unchanged).
 * Store held. */
static int restore_confirmed(replica *r, char *err) {
    size_t i;
    ts_status status = r->store->replace_state(r->confirmed);
    if (status != TS_OK) {
        snprintf(err, RP_ERR_SIZE, "replicate: a rebase could not put back the confirmed state (replace_state: %s)",
                 r->store->status_name(status));
        return RP_FAILED;
    }
    for (i = 0; i < r->tail_count; i++) {
        char origin[ORIGIN_SIZE];
        uint64_t n;
        (void)r->deliver(split_entry(r->tail[i], origin, &n));
    }
    return 0;
}

/* Applies the pending actions again, in order, on top of the confirmed
 * state, and keeps each one's outcome (a refusal now is not yet a drop: the
 * action's place in the log decides). Actions that listeners dispatch
 * meanwhile join the list and are applied in turn. Store held. */
static void replay_pending(replica *r) {
    size_t i;
    for (i = 0;; i++) {
        char *action;
        int ready;
        ts_status status;
        char *reason = NULL;
        pthread_mutex_lock(&r->qmutex);
        if (i >= r->pend_count) {
            pthread_mutex_unlock(&r->qmutex);
            break;
        }
        action = pend_at(r, i)->action;
        ready = pend_at(r, i)->ready;
        pthread_mutex_unlock(&r->qmutex);
        if (!ready) continue;
        status = r->deliver(action);
        if (status != TS_OK) reason = reason_of(r, status);
        pthread_mutex_lock(&r->qmutex);
        pend_at(r, i)->outcome = status;
        free(pend_at(r, i)->reason);
        pend_at(r, i)->reason = reason;
        pthread_mutex_unlock(&r->qmutex);
    }
}

/* The end of a rebase: the store shows the confirmed state (the kept text
 * and the tail); its text is taken again when the tail grew long or a
 * snapshot is due (a get_state of the whole state: not at every rebase),
 * then the pending actions on top. */
static void finish_rebase(replica *r) {
    (void)drop_covered_by_acks(r);
    if ((r->snapshot_due || r->tail_count >= TAIL_FOLD_COUNT || r->tail_bytes >= TAIL_FOLD_BYTES) &&
        capture_confirmed(r) == 0)
        snapshot_confirmed(r);
    replay_pending(r);
    r->rebasing = 0;
    r->in_sync = 1;
    r->rebase_count++;
    r->last_rebase_us = (uint64_t)(seconds_since(&r->rebase_started) * 1e6);
    emit_status(r, 1);
}

/* A rebase begins: a nested dispatch is queued from now on. */
static void begin_rebase(replica *r) {
    r->rebasing = 1;
    clock_gettime(CLOCK_MONOTONIC, &r->rebase_started);
}

/* The log's order differs from what the store shows (another replica's
 * entry, or a snapshot, before this replica's pending actions): the
 * confirmed state back, the batch's entries from there on (and whatever the
 * log holds after a gap), then the pending actions again. Store held. */
static void rebase(reader_work *w) {
    replica *r = w->r;
    own_entry none = {NULL, 0, TS_OK};
    size_t at = 0;
    begin_rebase(r);
    if ((w->rc = restore_confirmed(r, w->err)) != 0) {
        r->rebasing = 0;
        return;
    }
    r->in_sync = 0;
    /* The entries applied already are skipped (rp_step_of). */
    w->rc = apply_batch(r, w->batch, &none, &at, w->err);
    if (w->rc == 1) {
        w->rc = after_gap(r, &w->batch->items[at], w->err);
        if (w->rc == 0) w->rc = catch_up(r, &none, w->err);
    } else if (w->rc == 0 && w->read_rc != 0) {
        w->rc = w->read_rc;
        memcpy(w->err, w->read_err, RP_ERR_SIZE);
    }
    finish_rebase(r);
}

/* What a step does after its entries: a store that does not show confirmed
 * + tail + pending is rebased (a local dispatch failed after changing it);
 * a long tail is folded into the confirmed text (at once when nothing is
 * pending: the store shows the confirmed state; past the hard bounds, by a
 * rebase); a due snapshot is stored; the status is applied. Store held. */
static void tend(replica *r) {
    int quiet, must;
    char err[RP_ERR_SIZE];
    /* Covered by a snapshot: the store shows them on top, once too many. */
    if (drop_covered_by_acks(r)) r->in_sync = 0;
    hold_mark(r);
    if (!r->in_sync) {
        begin_rebase(r);
        if (restore_confirmed(r, err) == 0) finish_rebase(r);
        else r->rebasing = 0;
    }
    quiet = r->pend_count == 0 && r->in_sync;
    must = r->tail_count >= TAIL_MAX_COUNT || r->tail_bytes >= TAIL_MAX_BYTES ||
           (r->snapshot_due && r->held_count == 0 && r->seq - r->snapshot_due_seq >= 4 * r->snapshot_every);
    if (quiet && (r->snapshot_due || r->tail_count >= TAIL_FOLD_COUNT || r->tail_bytes >= TAIL_FOLD_BYTES)) {
        if (capture_confirmed(r) == 0) snapshot_confirmed(r);
    } else if (must) {
        begin_rebase(r);
        if (restore_confirmed(r, err) == 0) finish_rebase(r);
        else r->rebasing = 0;
    }
    emit_status(r, 0);
}

/* Optimistic mode, with the store held: the entries the reader read. The
 * common case recomputes nothing: an entry that is this replica's first
 * pending action (the store shows it already, with its outcome) is only
 * counted as confirmed, and with nothing pending an entry is applied on
 * top, as in ordered mode. Any other entry (another replica's before this
 * one's pending actions, a gap) makes the rest of the batch a rebase. */
static ts_status optimistic_step(void *self) {
    reader_work *w = self;
    replica *r = w->r;
    size_t i;
    w->rc = 0;
    for (i = 0; i < w->batch->count; i++) {
        rp_entry *e = &w->batch->items[i];
        char origin[ORIGIN_SIZE];
        uint64_t n;
        const char *action;
        enum rp_step step = step_of(r, e);
        if (step == RP_SKIP) continue;
        if (step != RP_APPLY || !r->in_sync) break;
        action = split_entry(e->action, origin, &n);
        if (r->held_count > 0 && hold_expires_at(r, e->seq)) break;
        {
            /* An abandon marker's effect is deliver_entry's (the rebase's). */
            char marked[ORIGIN_SIZE];
            uint64_t below;
            if (is_marker(origin, n, action, marked, &below)) break;
        }
        if (pipelined(origin, n)) {
            /* Per-origin order (hold_admit): an entry held or late changes
             * nothing the store shows, unless it is one of this replica's
             * pending actions (late: dropped); one that lets held entries
             * go is left to the rebase. */
            int kind = hold_kind(r, origin, n);
            if (kind == HOLD_APPLY && holds_of(r, origin)) break;
            if (kind == HOLD_LATE && strcmp(origin, r->origin) == 0) break;
            if (kind != HOLD_APPLY) {
                if (hold_admit(r, e, origin, n) < 0) {
                    no_memory_for(w->err, e);
                    w->rc = RP_FAILED;
                    break;
                }
                advance(r, e);
                continue;
            }
        }
        if (r->pend_count > 0 && !is_head(r, origin, n)) break;
        if (tail_reserve(r) != 0) {
            no_memory_for(w->err, e);
            w->rc = RP_FAILED;
            break;
        }
        if (pipelined(origin, n) && hold_admit(r, e, origin, n) < 0) {
            no_memory_for(w->err, e);
            w->rc = RP_FAILED;
            break;
        }
        advance(r, e);
        if (r->pend_count > 0) {
            /* Its outcome where the log put it is the one the store shows. */
            pending *p = pend_at(r, 0);
            ts_status outcome = p->outcome;
            char *reason = p->reason;
            p->reason = NULL;
            confirm_head(r, outcome, reason);
            free(reason);
        } else {
            (void)r->deliver(action);
            tail_take(r, e->action);
            e->action = NULL;
        }
    }
    if (w->rc == 0) {
        if (i < w->batch->count) {
            rebase(w);
        } else if (w->read_rc != 0) {
            w->rc = w->read_rc;
            memcpy(w->err, w->read_err, RP_ERR_SIZE);
        }
    }
    tend(r);
    return TS_OK;
}

/* With the store held, when the reader read nothing: tend() (and the
 * status, in ordered mode too). */
static ts_status idle_step(void *self) {
    replica *r = self;
    if (r->optimistic) tend(r);
    else emit_status(r, 0);
    return TS_OK;
}

/* ---- Optimistic mode: the sender thread ------------------------------------ */

/* The sender yields to the program's threads: SCHED_BATCH (Linux) keeps it,
 * woken by a dispatch, from preempting the dispatching thread before its
 * dispatch returns. Best effort. (Not the reader: it holds the store for
 * its steps, and a dispatch would wait for it while it is preempted.) */
static void background_thread(void) {
#ifdef SCHED_BATCH
    struct sched_param param;
    memset(&param, 0, sizeof param);
    (void)pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
#endif
}

/* Writes "#ORIGIN:N " at out; returns its length. */
static size_t envelope(char *out, const char *origin, uint64_t n) {
    char digits[24];
    size_t o = 0, d = 0, olen = strlen(origin);
    out[o++] = '#';
    memcpy(out + o, origin, olen);
    o += olen;
    out[o++] = ':';
    do {
        digits[d++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    while (d) out[o++] = digits[--d];
    out[o++] = ' ';
    return o;
}

/* The sender waits `ms`, or less when destroy() stops it; new dispatches do
 * not cut it short (a log that is down is not asked more often). */
static void sender_rest(replica *r, long ms) {
    struct timespec until = deadline_in(ms);
    pthread_mutex_lock(&r->qmutex);
    while (!r->sender_stop && pthread_cond_timedwait(&r->qwake, &r->qmutex, &until) != ETIMEDOUT) {
    }
    pthread_mutex_unlock(&r->qmutex);
}

/* Appends the pending actions, in order, batched (everything that came
 * since the last append, up to SEND_MAX_COUNT and SEND_MAX_BYTES, as one
 * pipelined rp_append_many), numbering each one once: a resend after a
 * failure carries the same numbers, and the log keeps each number once.
 * On stop: one last attempt for what is not acknowledged, then out. */
static void *sender_main(void *self) {
    replica *r = self;
    size_t room = SEND_MAX_BYTES + SEND_MAX_COUNT * (ORIGIN_SIZE + 26);
    char *buffer = malloc(room);
    const char **texts = malloc(SEND_MAX_COUNT * sizeof *texts);
    size_t *offsets = malloc(SEND_MAX_COUNT * sizeof *offsets);
    background_thread();
    if (buffer == NULL || texts == NULL || offsets == NULL) {
        note_failure(r, 1, "replicate: out of memory: the sender thread stopped", 0);
        free(buffer);
        free(texts);
        free(offsets);
        return NULL;
    }
    for (;;) {
        size_t k = 0, used = 0, start, i, done = 0;
        uint64_t first = 0, seq;
        int stop, rc;
        char err[RP_ERR_SIZE];
        pthread_mutex_lock(&r->qmutex);
        for (;;) {
            start = r->pend_count - unsent_of(r);
            if ((start < r->pend_count && pend_at(r, start)->ready) || r->sender_stop) break;
            pthread_cond_wait(&r->qwake, &r->qmutex);
        }
        stop = r->sender_stop;
        /* Copied under the lock, into one buffer: a memcpy each. */
        for (i = start; i < r->pend_count && k < SEND_MAX_COUNT; i++) {
            pending *p = pend_at(r, i);
            size_t need = used + ORIGIN_SIZE + 26 + p->length + 1;
            if (!p->ready || (k > 0 && used + p->length > SEND_MAX_BYTES)) break;
            /* A batch is numbered first, first + 1 ... (the engines' ids):
             * it ends at a gap (an action confirmed out of order). */
            if (k > 0 && (p->n != 0 ? p->n : r->next_n) != first + k) break;
            if (need > room) {
                /* One action larger than a batch: it goes alone. */
                char *grown = realloc(buffer, need);
                if (grown == NULL) break;
                buffer = grown;
                room = need;
            }
            if (p->n == 0) p->n = r->next_n++;
            if (k == 0) first = p->n;
            offsets[k] = used;
            used += envelope(buffer + used, r->origin, p->n);
            memcpy(buffer + used, p->action, p->length + 1);
            used += p->length + 1;
            k++;
        }
        pthread_mutex_unlock(&r->qmutex);
        if (k == 0 && stop) break; /* stopped, nothing to send */
        if (k == 0) {
            note_failure(r, 1, "replicate: out of memory (the sender could not copy an action)", 0);
            sender_rest(r, 50);
            continue;
        }
        for (i = 0; i < k; i++) texts[i] = buffer + offsets[i];
        pthread_mutex_lock(&r->mutex);
        seq = r->shared_seq;
        pthread_mutex_unlock(&r->mutex);
        rc = rp_append_many(r->sender_log, r->origin, first, k, texts, seq, &done, err);
        pthread_mutex_lock(&r->qmutex);
        if (done > 0 && first + done - 1 > r->acked_n) {
            rp_engine_info info;
            rp_info(r->sender_log, &info);
            r->acked_n = first + done - 1;
            r->ack_head = info.head; /* the log's last number after the append: they are at or before it */
        }
        /* Confirmed meanwhile by the reader (they reached the log after
         * the answer's deadline): not a failure to show. */
        if (rc == RP_FAILED && r->pend_count == 0) rc = 0;
        pthread_mutex_unlock(&r->qmutex);
        if (rc == 0) note_ok(r, 1, r->sender_log);
        else note_failure(r, 1, err, rc == RP_DAMAGED);
        if (stop) break;
        if (rc != 0) sender_rest(r, rc == RP_DAMAGED ? DAMAGED_RETRY_MS : 50);
    }
    free(buffer);
    free(texts);
    free(offsets);
    return NULL;
}

/* ---- Optimistic mode: run() ------------------------------------------------ */

/* Statuses after which the store is as it was (the reducers refused, or the
 * text was refused before them): anything else may have changed it. */
static int unchanged_by(ts_status status) {
    return status == TS_E_REDUCER || status == TS_E_REENTRANT || status == TS_E_JSON || status == TS_E_NOT_ACTION ||
           status == TS_E_UNKNOWN_ACTION || status == TS_E_NOMEM || status == TS_E_ARGUMENT;
}

/* Applies the action here at once (the rest of the chain: the middleware
 * after the plugin, the reducers, the listeners) and keeps it as pending,
 * for the sender to append; returns without waiting for the log. Refused
 * here: not kept, never appended. With the store held. */
static ts_status optimistic_run(replica *r, ts_next_fn next, const ts_action *action) {
    size_t length = strlen(action->json), index;
    char *copy;
    ts_status status;
    if (r->pend_count >= r->max_pending || r->pend_bytes + length > r->max_pending_bytes) {
        char message[RP_ERR_SIZE * 2], last[RP_ERR_SIZE];
        pthread_mutex_lock(&r->mutex);
        snprintf(last, sizeof last, "%s", r->last_err[0] ? r->last_err : "no failure reported yet");
        pthread_mutex_unlock(&r->mutex);
        snprintf(message, sizeof message,
                 "replicate: %zu actions (%zu bytes) of this replica wait for the log, the most that \"%s\" (%llu) "
                 "allows; this one is refused and not applied (the log's last failure: %s)",
                 r->pend_count, r->pend_bytes, r->pend_count >= r->max_pending ? "max_pending" : "max_pending_bytes",
                 (unsigned long long)(r->pend_count >= r->max_pending ? r->max_pending : r->max_pending_bytes), last);
        return r->store->fail(TS_E_IO, message);
    }
    copy = malloc(length + 1);
    if (copy == NULL) return r->store->fail(TS_E_NOMEM, "replicate: out of memory");
    memcpy(copy, action->json, length + 1);
    pthread_mutex_lock(&r->qmutex);
    if (pend_push(r, copy, length, r->rebasing) != 0) {
        pthread_mutex_unlock(&r->qmutex);
        free(copy);
        return r->store->fail(TS_E_NOMEM, "replicate: out of memory");
    }
    /* From the list's head: only the reader's steps take actions off the
     * head, and none runs on this thread before next() returns. */
    index = r->pend_count - 1;
    if (r->rebasing) {
        /* Dispatched by a listener during a rebase: the rebase applies it
         * after the actions before it. */
        pthread_mutex_unlock(&r->qmutex);
        pthread_cond_signal(&r->qwake);
        return TS_OK;
    }
    pthread_mutex_unlock(&r->qmutex);
    /* Kept before it runs: an action a listener dispatches comes after it. */
    status = next(action->json);
    pthread_mutex_lock(&r->qmutex);
    if (status == TS_OK) {
        pend_at(r, index)->ready = 1;
    } else {
        /* Not numbered yet (the sender stops at the first action that is not
         * ready): taken out, never appended. */
        free(pend_at(r, index)->action);
        pend_remove(r, index);
    }
    pthread_mutex_unlock(&r->qmutex);
    if (status == TS_OK) pthread_cond_signal(&r->qwake); /* after the unlock: the sender does not wait for it */
    if (status != TS_OK && !unchanged_by(status)) r->in_sync = 0; /* the reader's next step puts it right */
    return status;
}

/* A damaged log, told once on stderr (the reader has no caller), until it
 * changes or the reader gets past it. */
static void report(replica *r, const char *err) {
    if (strcmp(r->reported, err) == 0) return;
    snprintf(r->reported, sizeof r->reported, "%s", err);
    fprintf(stderr, "%s (this replica's reader stops there and looks again every second)\n", err);
    fflush(stderr);
}

static void free_replica(replica *r);

/* 16 hexadecimal digits, random: this instance's origin in the log. */
static void new_origin(char origin[ORIGIN_SIZE]) {
    unsigned char bytes[8];
    uint64_t mix;
    size_t i;
    FILE *f = fopen("/dev/urandom", "rb");
    if (f == NULL || fread(bytes, 1, sizeof bytes, f) != sizeof bytes) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        mix = (uint64_t)t.tv_nsec * 6364136223846793005ULL ^ (uint64_t)t.tv_sec ^ (uint64_t)(uintptr_t)origin;
        memcpy(bytes, &mix, sizeof bytes);
    }
    if (f) fclose(f);
    for (i = 0; i < 8; i++) snprintf(origin + 2 * i, 3, "%02x", bytes[i]);
}

/* Ordered mode, on the reader thread: when entries are held (a hint from
 * publish()), takes the marker due (mark_step) and appends it on the
 * reader's connection, again on the next round until the log has it (the
 * same number: kept once). Where the log puts it, every replica, this one
 * too, abandons the missing numbers below it. */
static void ordered_mark(replica *r) {
    size_t held, done = 0;
    uint64_t seq;
    char err[RP_ERR_SIZE];
    const char *texts[1];
    pthread_mutex_lock(&r->mutex);
    held = r->shared_held;
    seq = r->shared_seq;
    pthread_mutex_unlock(&r->mutex);
    if (r->mark_text == NULL && held == 0) return;
    if (r->mark_text == NULL && r->store->exclusive(mark_step, r) != TS_OK) return;
    if (r->mark_text == NULL) return;
    texts[0] = r->mark_text;
    if (rp_append_many(r->waiter, r->mark_origin, r->mark_next, 1, texts, seq, &done, err) == 0 && done == 1) {
        free(r->mark_text);
        r->mark_text = NULL;
        r->mark_next++;
    } else {
        note_failure(r, 0, err, 0);
    }
}

static void *reader_main(void *self) {
    replica *r = self;
    int free_it;
    for (;;) {
        char pos[RP_POS_SIZE], err[RP_ERR_SIZE];
        int stop, rc;
        uint64_t seq;
        ts_status status;
        rp_batch batch;
        reader_work work;
        rp_engine_info info;
        pthread_mutex_lock(&r->mutex);
        stop = r->stop;
        memcpy(pos, r->shared_pos, RP_POS_SIZE);
        seq = r->shared_seq;
        pthread_mutex_unlock(&r->mutex);
        if (stop) break;
        rc = rp_wait(r->waiter, pos, WAIT_BLOCK_MS, r->optimistic ? OPTIMISTIC_READ_BATCH : READ_BATCH, &batch, err);
        rp_info(r->waiter, &info);
        if (rc == 0 && batch.count == 0 && info.waited_counter != 0 && info.waited_counter < seq) {
            /* A log made again whose entries sort before this replica's
             * position (the server's clock went back, or its ids were
             * chosen): no entry comes back to say so, its counter does. */
            damaged(r, err,
                    "its counter \"%.200s:seq\" is at %llu, behind entry %llu (%s), the last this replica applied: "
                    "the log was reset (FLUSHALL, or its keys deleted or rewritten)",
                    r->stream, (unsigned long long)info.waited_counter, (unsigned long long)seq, pos);
            rc = RP_DAMAGED;
        }
        if (rc == RP_FAILED) note_failure(r, 0, err, 0);
        else note_ok(r, 0, r->waiter);
        if (rc == RP_DAMAGED) note_failure(r, 0, err, 1);
        if (batch.count > 0) {
            work.r = r;
            work.batch = &batch;
            work.read_rc = rc;
            work.read_err = err;
            work.rc = 0;
            status = r->store->exclusive(r->optimistic ? optimistic_step : reader_step, &work);
            rp_batch_free(&batch);
            if (status == TS_E_STORE_GONE) break;
            if (status != TS_OK) {
                rest(r, 50);
                continue;
            }
            rc = work.rc;
            memcpy(err, work.err, RP_ERR_SIZE);
            if (rc == RP_FAILED) note_failure(r, 0, err, 0);
        } else if (r->optimistic || r->status_ms != 0) {
            if (r->store->exclusive(idle_step, r) == TS_E_STORE_GONE) break;
        }
        rp_batch_free(&batch);
        if (!r->optimistic && rc == 0) ordered_mark(r);
        if (rc == RP_DAMAGED) {
            report(r, err);
            rest(r, DAMAGED_RETRY_MS);
        } else if (rc != 0) {
            rest(r, 50); /* the engine backs off between reconnections */
        } else {
            r->reported[0] = '\0'; /* past the damage, if there was any */
        }
    }
    /* When a listener this thread called destroyed the store, destroy() ran
     * on this thread and left the instance to it. */
    pthread_mutex_lock(&r->mutex);
    free_it = r->free_on_exit;
    pthread_mutex_unlock(&r->mutex);
    if (free_it) free_replica(r);
    return NULL;
}

/* ---- Config, create, destroy --------------------------------------------- */

/* The fields of modes and the status (README.md, "Config"): 1 when `k` is
 * one of them (read, or refused: then *bad), 0 when it is not. */
static int parse_mode_field(replica *r, const char *k, const char *v, int *bad, char *err) {
    enum pj_kind kind = pj_kind_of(v);
    static const struct {
        const char *name, *range;
        uint64_t min, max;
    } numbers[] = {
        {"max_pending", "an integer from 1 to 100000000 (actions)", 1, 100000000},
        {"max_pending_bytes", "an integer from 1024 to 1099511627776 (bytes)", 1024, 1099511627776ULL},
        {"status_ms", "an integer from 0 to 3600000 (milliseconds; 0 = never)", 0, 3600000},
        {"abandon_ms", "an integer from 100 to 86400000 (milliseconds)", 100, 86400000},
    };
    size_t i;
    *bad = 0;
    if (pj_str_eq(k, "mode")) {
        if (kind == PJ_STRING && pj_str_eq(pj_ws(v), "ordered")) r->optimistic = 0;
        else if (kind == PJ_STRING && pj_str_eq(pj_ws(v), "optimistic")) r->optimistic = 1;
        else {
            char shown[100];
            if (kind == PJ_STRING) pj_str_show(pj_ws(v), shown, sizeof shown);
            snprintf(err, RP_ERR_SIZE, "replicate: config field \"mode\" must be \"ordered\" or \"optimistic\", not %s%s%s",
                     kind == PJ_STRING ? "\"" : pj_kind_name(kind), kind == PJ_STRING ? shown : "",
                     kind == PJ_STRING ? "\"" : "");
            *bad = 1;
        }
        return 1;
    }
    for (i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        uint64_t n = 0;
        int got;
        if (!pj_str_eq(k, numbers[i].name)) continue;
        got = kind == PJ_NUMBER ? pj_uint64(v, &n) : PJ_U64_NOT_INTEGER;
        if (got != PJ_U64_OK || n < numbers[i].min || n > numbers[i].max) {
            snprintf(err, RP_ERR_SIZE, "replicate: config field \"%s\" must be %s, not %s", numbers[i].name,
                     numbers[i].range, got == PJ_U64_OK ? "that number" : pj_uint64_why(kind, got));
            *bad = 1;
        } else if (i == 0) {
            r->max_pending = n;
        } else if (i == 1) {
            r->max_pending_bytes = n;
        } else if (i == 2) {
            r->status_ms = n;
        } else {
            r->abandon_ms = n;
        }
        return 1;
    }
    return 0;
}

static int parse_config(replica *r, const char *config, char *err) {
    pj_iter it;
    const char *k, *v;
    int m;
    if (!pj_begin(&it, config, '{')) {
        snprintf(err, RP_ERR_SIZE, "replicate: the config must be a JSON object, not %s",
                 pj_kind_name(pj_kind_of(config)));
        return 0;
    }
    while ((m = pj_next_member(&it, &k, &v)) == 1) {
        enum pj_kind kind = pj_kind_of(v);
        /* Text fields: the url, the stream's name, files for TLS. */
        static const char *const names[] = {"url", "stream", "tls_ca", "tls_cert", "tls_key"};
        char **fields[5];
        int text = -1, i, bad;
        fields[0] = &r->url;
        fields[1] = &r->stream;
        fields[2] = &r->tls_ca;
        fields[3] = &r->tls_cert;
        fields[4] = &r->tls_key;
        for (i = 0; i < 5; i++)
            if (pj_str_eq(k, names[i])) text = i;
        if (parse_mode_field(r, k, v, &bad, err)) {
            if (bad) return 0;
        } else if (text >= 0) {
            char **field = fields[text];
            size_t length;
            if (*field != NULL) {
                snprintf(err, RP_ERR_SIZE, "replicate: config field \"%s\" appears twice", names[text]);
                return 0;
            }
            if (kind != PJ_STRING) {
                snprintf(err, RP_ERR_SIZE, "replicate: config field \"%s\" must be a string, not %s", names[text],
                         pj_kind_name(kind));
                return 0;
            }
            *field = pj_str_dup(pj_ws(v), &length);
            if (*field == NULL) {
                snprintf(err, RP_ERR_SIZE, "replicate: out of memory");
                return 0;
            }
            if (length == 0 || strlen(*field) != length) {
                snprintf(err, RP_ERR_SIZE, "replicate: config field \"%s\" must be non-empty text without NUL",
                         names[text]);
                return 0;
            }
        } else if (pj_str_eq(k, "timeout_ms") || pj_str_eq(k, "snapshot_every") || pj_str_eq(k, "replicas")) {
            int timeout = pj_str_eq(k, "timeout_ms"), replicas = pj_str_eq(k, "replicas");
            uint64_t n = 0;
            int got = kind == PJ_NUMBER ? pj_uint64(v, &n) : PJ_U64_NOT_INTEGER;
            if (got != PJ_U64_OK || (timeout && (n < 1 || n > 3600000)) || (replicas && (n < 1 || n > 5))) {
                snprintf(err, RP_ERR_SIZE, "replicate: config field \"%s\" must be %s, not %s",
                         timeout ? "timeout_ms" : replicas ? "replicas" : "snapshot_every",
                         timeout    ? "an integer from 1 to 3600000 (milliseconds)"
                         : replicas ? "an integer from 1 to 5 (servers that keep the log: NATS)"
                                    : "an integer from 0 to 18446744073709551615 (actions; 0 = never)",
                         got == PJ_U64_OK ? "that number" : pj_uint64_why(kind, got));
                return 0;
            }
            if (timeout) r->timeout_ms = n;
            else if (replicas) r->replicas = n;
            else r->snapshot_every = n;
        } else {
            char name[200];
            pj_str_show(k, name, sizeof name);
            snprintf(err, RP_ERR_SIZE,
                     "replicate: unknown config field \"%s\" (known: \"url\", \"stream\", \"timeout_ms\", "
                     "\"snapshot_every\", \"tls_ca\", \"tls_cert\", \"tls_key\", \"replicas\", \"mode\", "
                     "\"max_pending\", \"max_pending_bytes\", \"status_ms\", \"abandon_ms\")",
                     name);
            return 0;
        }
    }
    if (m < 0) {
        snprintf(err, RP_ERR_SIZE, "replicate: the config is malformed JSON");
        return 0;
    }
    if (r->url == NULL || r->stream == NULL) {
        snprintf(err, RP_ERR_SIZE, "replicate: config field \"%s\" is required (e.g. %s)",
                 r->url == NULL ? "url" : "stream",
                 r->url == NULL ? "\"url\": \"redis://127.0.0.1:6379\"" : "\"stream\": \"orders\"");
        return 0;
    }
    return 1;
}

/* Stops the sender (after its last attempt, bounded by timeout_ms, for what
 * the log has not acknowledged) and waits for it. */
static void stop_sender(replica *r) {
    if (!r->sender_started) return;
    pthread_mutex_lock(&r->qmutex);
    r->sender_stop = 1;
    pthread_cond_broadcast(&r->qwake);
    pthread_mutex_unlock(&r->qmutex);
    pthread_join(r->sender, NULL);
    r->sender_started = 0;
}

static void free_replica(replica *r) {
    size_t i;
    if (r == NULL) return;
    stop_sender(r);
    for (i = 0; i < r->pend_count; i++) {
        free(pend_at(r, i)->action);
        free(pend_at(r, i)->reason);
    }
    free(r->pend);
    tail_clear(r);
    free(r->tail);
    free(r->confirmed);
    hold_clear(r);
    free(r->held);
    free(r->ho);
    free(r->mark_text);
    rp_close(r->sender_log);
    pthread_cond_destroy(&r->qwake);
    pthread_condattr_destroy(&r->o_clock);
    pthread_mutex_destroy(&r->qmutex);
    rp_close(r->log);
    rp_close(r->waiter);
    free(r->url);
    free(r->stream);
    free(r->tls_ca);
    free(r->tls_cert);
    free(r->tls_key);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->mutex);
    free(r);
}

static ts_status replicate_create(const char *config_json, const ts_store_api *store, void **self,
                                  char **error_message) {
    char err[RP_ERR_SIZE];
    replica *r;
    ts_status status = TS_E_PLUGIN;
    own_entry none = {NULL, 0, TS_OK};
    rp_options options;
    pthread_condattr_t clock;
    int rc;
    err[0] = '\0';
    if (store == NULL || self == NULL) return TS_E_ARGUMENT;
    if (!TS_API_HAS(store, exclusive)) {
        snprintf(err, sizeof err,
                 "replicate: this libturnstate is too old (its ts_store_api has no apply and exclusive; 0.2.0 or "
                 "newer is needed)");
        goto fail_early;
    }
    r = calloc(1, sizeof *r);
    if (r == NULL) {
        snprintf(err, sizeof err, "replicate: out of memory");
        status = TS_E_NOMEM;
        goto fail_early;
    }
    pthread_mutex_init(&r->mutex, NULL);
    pthread_mutex_init(&r->qmutex, NULL);
    /* rest() and sender_rest() wait on the monotonic clock. */
    pthread_condattr_init(&clock);
    pthread_condattr_setclock(&clock, CLOCK_MONOTONIC);
    pthread_cond_init(&r->wake, &clock);
    pthread_cond_init(&r->qwake, &clock);
    pthread_condattr_destroy(&clock);
    pthread_condattr_init(&r->o_clock);
    pthread_condattr_setclock(&r->o_clock, CLOCK_MONOTONIC);
    r->max_pending = 100000;
    r->max_pending_bytes = 64u << 20;
    r->abandon_ms = 30000;
    r->in_sync = 1;
    r->reader_ok = r->sender_ok = 1;
    r->next_n = 1;
    r->o_next_n = 1;
    new_origin(r->origin);
    {
        /* ts_last_error, for the reasons of refusals, where dlsym sees the
         * library (the plugin does not link it). */
        void *symbol = dlsym(RTLD_DEFAULT, "ts_last_error");
        if (symbol) memcpy(&r->last_error, &symbol, sizeof symbol);
    }
    r->store = store;
    /* dispatch_after: middleware after the plugin runs on every replica.
     * A table without it (not a plugin's own): apply, and nothing after. */
    r->deliver = TS_API_HAS(store, dispatch_after)
                     ? store->dispatch_after
                     : store->apply;
    /* unlocked: ordered mode's dispatches wait for the log without the store. */
    r->can_unlock = TS_API_HAS(store, unlocked);
    /* The store's state version: what its snapshots carry, and what the
     * snapshots it loads are migrated to. */
    if (TS_API_HAS(store, last_error) &&
        store->state_version != NULL && store->replace_state_from != NULL && store->last_error != NULL) {
        r->versioned = 1;
        if (store->state_version(&r->version) != TS_OK) {
            snprintf(err, RP_ERR_SIZE, "replicate: cannot read the store's state version");
            goto fail;
        }
    }
    r->timeout_ms = 2000;
    r->snapshot_every = 10000;
    r->replicas = 3;
    if (!parse_config(r, config_json ? config_json : "{}", err)) goto fail;
    /* An optimistic replica's entries are held to its own order on every
     * replica ("Per-origin order"): its origin says so by its first letter. */
    if (r->optimistic) r->origin[0] = 'p';
    memcpy(r->mark_origin, r->origin, ORIGIN_SIZE);
    r->mark_origin[0] = 'p';
    r->mark_next = 1;
    /* The engine: by the url's scheme (engine.c). */
    {
        options.url = r->url;
        options.stream = r->stream;
        options.timeout_ms = (int)r->timeout_ms;
        options.tls_ca = r->tls_ca;
        options.tls_cert = r->tls_cert;
        options.tls_key = r->tls_key;
        options.replicas = (int)r->replicas;
        r->log = rp_open(&options, err);
        if (r->log == NULL) goto fail;
        r->waiter = rp_open(&options, err);
        if (r->waiter == NULL) goto fail;
    }
    /* Join: the snapshot, then the log after it (the store is held), then
     * the log's own checks (rp_check): a damaged log is not joined. */
    rc = load_snapshot(r, err);
    if (rc >= 0) rc = catch_up(r, &none, err);
    if (rc == 0) rc = rp_check(r->log, r->pos, r->seq, err);
    if (rc != 0) {
        status = status_of(rc);
        goto fail;
    }
    r->reads_back = rp_reads_back_cheaply(r->log);
    publish(r);
    if (r->optimistic) {
        /* The confirmed state's text; the sender and its connection. */
        if (capture_confirmed(r) != 0) {
            snprintf(err, sizeof err, "replicate: out of memory");
            status = TS_E_NOMEM;
            goto fail;
        }
        r->sender_log = rp_open(&options, err);
        if (r->sender_log == NULL) goto fail;
        if (pthread_create(&r->sender, NULL, sender_main, r) != 0) {
            snprintf(err, sizeof err, "replicate: cannot start the sender thread");
            goto fail;
        }
        r->sender_started = 1;
    } else {
        /* Ordered mode's appends on NATS: their own connection, used by
         * one dispatcher at a time (o_sending), without the store; it never
         * reads, and the store's connection lets go of its cursor after the
         * join: the reader thread's connection is the one that receives the
         * entries. Redis: the store's connection, with the store held. */
        if (!r->reads_back) {
            r->sender_log = rp_open(&options, err);
            if (r->sender_log == NULL) goto fail;
            rp_idle(r->log);
        }
    }
    emit_status(r, 1);
    if (pthread_create(&r->reader, NULL, reader_main, r) != 0) {
        snprintf(err, sizeof err, "replicate: cannot start the reader thread");
        status = TS_E_PLUGIN;
        goto fail;
    }
    r->reader_started = 1;
    *self = r;
    return TS_OK;
fail:
    free_replica(r);
fail_early:
    if (error_message) {
        *error_message = malloc(strlen(err) + 1);
        if (*error_message) strcpy(*error_message, err);
    }
    return status;
}

static void replicate_destroy(void *self) {
    replica *r = self;
    if (r == NULL) return;
    if (r->reader_started && pthread_equal(pthread_self(), r->reader)) {
        /* The store was destroyed from a listener that the reader's apply
         * called: this is the reader thread, which cannot join itself. It
         * stops using the table now (it returns from exclusive and sees
         * stop) and frees the instance on its way out. */
        pthread_mutex_lock(&r->mutex);
        r->stop = 1;
        r->free_on_exit = 1;
        pthread_mutex_unlock(&r->mutex);
        pthread_detach(r->reader);
        return;
    }
    pthread_mutex_lock(&r->mutex);
    r->stop = 1;
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->mutex);
    /* The store is closed: the reader's exclusive step answers
     * TS_E_STORE_GONE, and a wait ends within WAIT_BLOCK_MS. */
    if (r->reader_started) pthread_join(r->reader, NULL);
    free_replica(r);
}

static const ts_plugin descriptor = {
    TS_PLUGIN_ABI_VERSION, sizeof(ts_plugin), "replicate", REPLICATE_VERSION, replicate_create, replicate_run,
    replicate_destroy,
};

TS_API const ts_plugin *ts_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 1 ? &descriptor : NULL;
}
