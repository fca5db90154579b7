/*
 * replicate - a Turnstate middleware plugin that makes the stores of several
 * processes (on one machine or several) one replicated store, on an existing
 * ordered log: Redis Streams or NATS JetStream, picked by the url's scheme
 * (engine.h, engine.c).
 *
 * Config: {"url": "redis://[USER:PASSWORD@]HOST[:PORT]" or rediss://, or
 *          "nats://[USER:PASSWORD@|TOKEN@]HOST[:PORT][,HOST[:PORT]...]" or tls://,
 *          "stream": "NAME", "timeout_ms": 2000, "snapshot_every": 10000,
 *          "replicas": 3 (NATS), "tls_ca": FILE, "tls_cert": FILE, "tls_key": FILE}
 *
 * Log first: run() does not pass a local action on with next. It appends it
 * to the stream and, in the same round trip, reads every entry between the
 * last one this replica applied and its own; it applies them in stream
 * order, its own last, from the plugin's place in the chain
 * (ts_store_api.dispatch_after: the middleware after the plugin, then the
 * reducers and listeners), and returns that status: the dispatcher reads its
 * own write. If the log does not answer within timeout_ms, the dispatch
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
#define _POSIX_C_SOURCE 200809L

#include "turnstate_plugin.h"

#include "../common/pjson.h"
#include "engine.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPLICATE_VERSION "1.0.0"
#define READ_BATCH 1000
#define WAIT_BLOCK_MS 250
/* How long the reader waits before it looks at a damaged log again. */
#define DAMAGED_RETRY_MS 1000

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
} replica;

/* What run() waits for: its own entry. */
typedef struct own_entry {
    const char *pos; /* NULL when applying for the reader */
    int done;
    ts_status status;
} own_entry;

static void publish(replica *r) {
    pthread_mutex_lock(&r->mutex);
    memcpy(r->shared_pos, r->pos, RP_POS_SIZE);
    pthread_mutex_unlock(&r->mutex);
}

/* The reader waits `ms`, or less when destroy() stops it. */
static void rest(replica *r, long ms) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&r->mutex);
    while (!r->stop && pthread_cond_timedwait(&r->wake, &r->mutex, &until) != ETIMEDOUT) {
    }
    pthread_mutex_unlock(&r->mutex);
}

/* The status a failure of the log gives: damage is not the log's silence. */
static ts_status status_of(int rc) { return rc == RP_DAMAGED ? TS_E_PLUGIN : TS_E_IO; }

/* Takes a snapshot (the state after entry r->seq) if this is the replica
 * that appended entry r->seq and it is a multiple of snapshot_every. Best
 * effort: a failed snapshot only makes joining slower. */
static void maybe_snapshot(replica *r) {
    char *state = NULL, err[RP_ERR_SIZE];
    int stored;
    if (r->snapshot_every == 0 || r->seq % r->snapshot_every != 0) return;
    if (r->store->get_state("", &state) != TS_OK) return;
    (void)rp_snapshot_put(r->log, state, r->pos, r->seq, &stored, err);
    r->store->free(state);
}

/* Loads the snapshot if it is ahead of this replica. 1 loaded, 0 none ahead,
 * RP_FAILED or RP_DAMAGED (message in err). With the store held. */
static int load_snapshot(replica *r, char *err) {
    int found, rc;
    char *state = NULL, pos[RP_POS_SIZE];
    uint64_t seq = 0;
    ts_status status;
    /* Checked against the log (rp_check_snapshot) before it replaces anything. */
    if ((rc = rp_snapshot_get(r->log, &found, &state, pos, &seq, err)) != 0) return rc;
    if (!found || seq <= r->seq) {
        free(state);
        return 0;
    }
    status = r->store->replace_state(state);
    free(state);
    if (status != TS_OK) {
        snprintf(err, RP_ERR_SIZE, "replicate: the snapshot of stream \"%.200s\" (entry %llu) was refused: %s",
                 r->stream, (unsigned long long)seq, r->store->status_name(status));
        return RP_FAILED;
    }
    memcpy(r->pos, pos, RP_POS_SIZE);
    r->seq = seq;
    publish(r);
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

/* Applies a batch in order (rp_step_of says what to do with each entry).
 * Returns 0; 1 when entries are missing before items[*gap_at] (the caller
 * tells trimming from damage: after_gap); RP_DAMAGED when an entry after
 * this replica's position is numbered at or below the last it applied
 * (nothing from it on is applied). */
static int apply_batch(replica *r, const rp_batch *batch, own_entry *own, size_t *gap_at, char *err) {
    size_t i;
    for (i = 0; i < batch->count; i++) {
        const rp_entry *e = &batch->items[i];
        ts_status status;
        int mine = own->pos != NULL && strcmp(e->pos, own->pos) == 0;
        switch (rp_step_of(r->pos, r->seq, e)) {
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
        /* Counted before it runs: a listener's nested dispatch must see it as
         * applied, not apply it again. */
        memcpy(r->pos, e->pos, RP_POS_SIZE);
        r->seq = e->seq;
        publish(r);
        /* From the plugin's place in the chain: the middleware after it,
         * then the reducers and listeners, on every replica. A reducer that
         * refuses an entry refuses it on every replica (the reducers are
         * pure): it stays unapplied everywhere. */
        status = r->deliver(e->action);
        if (mine) {
            own->done = 1;
            own->status = status;
            maybe_snapshot(r);
        }
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
    trimmed = first.count == 1 && strcmp(first.items[0].pos, e->pos) == 0;
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

static ts_status replicate_run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
    replica *r = self;
    rp_batch batch;
    own_entry own;
    char err[RP_ERR_SIZE], own_pos[RP_POS_SIZE];
    size_t at = 0;
    int rc;
    (void)next; /* log first: the action reaches the reducers through apply */
    rc = rp_append(r->log, action->json, r->pos, r->seq, &batch, err);
    if (rc != 0) {
        /* Nothing was appended (or, after a timeout, maybe it was: then it is
         * applied everywhere when it is read back). */
        rp_batch_free(&batch);
        return store->fail(status_of(rc), err);
    }
    memcpy(own_pos, batch.items[batch.count - 1].pos, RP_POS_SIZE);
    own.pos = own_pos;
    own.done = 0;
    own.status = TS_OK;
    rc = apply_batch(r, &batch, &own, &at, err);
    /* This replica was further behind than the log keeps: the snapshot,
     * then the rest (its own entry included). */
    if (rc == 1) rc = after_gap(r, &batch.items[at], err);
    rp_batch_free(&batch);
    if (rc == 0 && !own.done) rc = catch_up(r, &own, err);
    if (rc == 0 && !own.done && rp_compare_pos(own_pos, r->pos) > 0) {
        /* Not read back, and not behind what this replica applied: gone. */
        damaged(r, err, "it no longer holds entry %s", own_pos);
        rc = RP_DAMAGED;
    }
    if (rc != 0) {
        size_t n = strlen(err);
        if (!own.done && n + 80 < RP_ERR_SIZE) {
            snprintf(err + n, RP_ERR_SIZE - n, " (this action was appended as %s, and is not applied here)", own_pos);
        }
        return store->fail(status_of(rc), err);
    }
    if (!own.done) return TS_OK; /* the snapshot already covered it */
    return own.status;
}

typedef struct reader_work {
    replica *r;
    const rp_batch *batch;
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
    return TS_OK;
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

static void *reader_main(void *self) {
    replica *r = self;
    int free_it;
    for (;;) {
        char pos[RP_POS_SIZE], err[RP_ERR_SIZE];
        int stop, rc;
        ts_status status;
        rp_batch batch;
        reader_work work;
        pthread_mutex_lock(&r->mutex);
        stop = r->stop;
        memcpy(pos, r->shared_pos, RP_POS_SIZE);
        pthread_mutex_unlock(&r->mutex);
        if (stop) break;
        rc = rp_wait(r->waiter, pos, WAIT_BLOCK_MS, READ_BATCH, &batch, err);
        if (batch.count > 0) {
            work.r = r;
            work.batch = &batch;
            work.read_rc = rc;
            work.read_err = err;
            work.rc = 0;
            status = r->store->exclusive(reader_step, &work);
            rp_batch_free(&batch);
            if (status == TS_E_STORE_GONE) break;
            if (status != TS_OK) {
                rest(r, 50);
                continue;
            }
            rc = work.rc;
            memcpy(err, work.err, RP_ERR_SIZE);
        }
        rp_batch_free(&batch);
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
        int text = -1, i;
        fields[0] = &r->url;
        fields[1] = &r->stream;
        fields[2] = &r->tls_ca;
        fields[3] = &r->tls_cert;
        fields[4] = &r->tls_key;
        for (i = 0; i < 5; i++)
            if (pj_str_eq(k, names[i])) text = i;
        if (text >= 0) {
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
                     "\"snapshot_every\", \"tls_ca\", \"tls_cert\", \"tls_key\", \"replicas\")",
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

static void free_replica(replica *r) {
    if (r == NULL) return;
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
    pthread_condattr_t clock;
    int rc;
    err[0] = '\0';
    if (store == NULL || self == NULL) return TS_E_ARGUMENT;
    if (store->struct_size < offsetof(ts_store_api, exclusive) + sizeof store->exclusive) {
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
    /* rest() waits on the monotonic clock. */
    pthread_condattr_init(&clock);
    pthread_condattr_setclock(&clock, CLOCK_MONOTONIC);
    pthread_cond_init(&r->wake, &clock);
    pthread_condattr_destroy(&clock);
    r->store = store;
    /* dispatch_after: middleware after the plugin runs on every replica.
     * A table without it (not a plugin's own): apply, and nothing after. */
    r->deliver = store->struct_size >= offsetof(ts_store_api, dispatch_after) + sizeof store->dispatch_after
                     ? store->dispatch_after
                     : store->apply;
    r->timeout_ms = 2000;
    r->snapshot_every = 10000;
    r->replicas = 3;
    if (!parse_config(r, config_json ? config_json : "{}", err)) goto fail;
    {
        /* The engine: by the url's scheme (engine.c). */
        rp_options options;
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
    publish(r);
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
