/*
 * engine.h - the log that replicate.so stands on, behind a small interface.
 *
 * An engine is an ordered, persistent, shared log of entries plus one
 * snapshot slot. Every entry has a position (text that sorts in log order as
 * rp_compare_pos compares it: a Redis stream id, or a JetStream stream
 * sequence in decimal; "" is "before the first entry") and a sequence number
 * (1, 2, 3 ... with no gap, given by the log when the entry is appended;
 * entry.h has the format and its checks). The snapshot slot holds a state
 * together with the position and sequence number of the last entry it
 * covers.
 *
 * Two engines implement it, chosen by the url's scheme (rp_open):
 *   redis:// rediss://  engine_redis.c, Redis Streams (one server; rediss://
 *                       over TLS)
 *   nats:// tls://      engine_nats.c, a NATS JetStream stream replicated on
 *                       a quorum of servers (tls:// over TLS), the snapshot
 *                       in a key-value bucket
 * One rp_engine is one connection; it is not thread-safe (replicate.c uses
 * one per thread).
 *
 * Every function returns 0 on success, or (message in err, RP_ERR_SIZE
 * bytes):
 *   RP_FAILED   the log did not answer within the timeout, could not be
 *               reached, or failed; after a failure that broke the connection
 *               the next call reconnects (Redis: not before a backoff delay,
 *               50 ms doubling to 2 s, has passed since the last failed
 *               attempt: calls in between fail at once, "reconnecting";
 *               NATS: the client library reconnects in the background, to
 *               any of the servers of the url);
 *   RP_DAMAGED  the log holds what replicate.so did not write there (entry.h:
 *               a malformed entry or snapshot, an entry numbered past the
 *               counter, a key of another type, a log that was reset under
 *               this replica). Redis: nothing was written. NATS: an append
 *               checks the entries it already received before it writes, but
 *               damage that shows only in the entries read back after the
 *               append leaves the action appended: the message then ends
 *               "(this action was appended as entry N, and is not applied
 *               here)".
 * A function that returns a batch returns, with RP_DAMAGED, the entries
 * before the damaged one (maybe none); free it in every case.
 */
#ifndef TS_REPLICATE_ENGINE_H
#define TS_REPLICATE_ENGINE_H

#include "entry.h"

typedef struct rp_engine rp_engine;

/* What rp_open needs. The files are read when the engine opens, after the
 * checks of rp_read_trusted_file (engine.c). */
typedef struct rp_options {
    const char *url;     /* redis://, rediss://, nats:// or tls:// (see README.md) */
    const char *stream;  /* the log's name */
    int timeout_ms;      /* bounds connecting and every command (an append's retries too) */
    const char *tls_ca;  /* PEM file of the certificate authorities to trust; NULL: the system's */
    const char *tls_cert;/* PEM file of this client's certificate chain; NULL: none */
    const char *tls_key; /* PEM file of its private key (with tls_cert) */
    int replicas;        /* NATS: the replicas of the stream and bucket it creates (1 to 5) */
} rp_options;

/* A connection to the log named options->stream at options->url; no I/O yet
 * for Redis (NATS connects here: its client library keeps the connection).
 * NULL on a malformed url, a refused file, a log that cannot be reached
 * (NATS) or no memory, with a message in err that never shows a password or
 * token. */
rp_engine *rp_open(const rp_options *options, char *err);
void rp_close(rp_engine *engine);

/* Appends `action` for a replica that has applied up to entry `seq` at
 * position `after` ("" and 0: nothing yet), and returns in *out every entry
 * after `after` up to and including the new one (its last item), in log
 * order: everything the replica must apply before its own entry. Redis
 * reads them atomically with the append, after checking the log (its keys'
 * types, its counter against its last entry, the replica's position against
 * it, the entries after that position), and writes nothing into a damaged
 * log. NATS appends with a message id of its own: when an attempt gets no
 * answer it sends the same message again, to whichever server answers,
 * until timeout_ms has passed, and the stream's de-duplication window keeps
 * it once. */
int rp_append(rp_engine *engine, const char *action, const char *after, uint64_t seq, rp_batch *out, char *err);
/* As rp_append for `count` actions (1 or more), appended in this order; the
 * entries of this call are the ones with `mine` set (1 + their index in
 * `actions`), the others are other replicas' entries between them. Redis
 * appends them in one step (contiguous); NATS sends them pipelined, each
 * with its own message id, and waits for every acknowledgement. On a failure
 * none of them is known to be in the log (some may be: they are applied when
 * read back). */
int rp_append_batch(rp_engine *engine, const char *const *actions, size_t count, const char *after, uint64_t seq,
                    rp_batch *out, char *err);
/* The same checks as rp_append, without appending: 0 or RP_DAMAGED. */
int rp_check(rp_engine *engine, const char *after, uint64_t seq, char *err);
/* Up to `max` entries after position `after` (none: count 0), checked
 * against the counter (rp_check_counter; NATS: against the stream). NATS:
 * a message of several actions gives one entry each (`part`, `parts`),
 * all of them in one batch (which may so hold up to RP_PARTS_MAX - 1 more
 * than `max`); a damaged one gives none. */
int rp_read(rp_engine *engine, const char *after, size_t max, rp_batch *out, char *err);
/* Blocks up to block_ms for entries after `after`; returns up to `max` of
 * them (count 0 when the time ran out), checked against the counter. */
int rp_wait(rp_engine *engine, const char *after, int block_ms, size_t max, rp_batch *out, char *err);
/* Optimistic mode's appends (replicate.c's sender thread): `count` entries,
 * their texts in `entries`, from the replica `origin` (1 to 64 characters
 * of [0-9a-z], no other replica's), numbered `first`, first + 1, ... in this
 * order. A replica numbers its appends 1, 2, 3 ... without a gap and sends
 * them in that order; after a failure it sends again from the first one it
 * does not know appended. Idempotent on Redis: the log keeps each number
 * of an origin once, so an entry whose number it holds already is skipped
 * (a resend after a lost answer appends nothing twice); on NATS see below
 * (a resend cut otherwise can store actions twice: readers skip the copies
 * of an optimistic origin as late). The engine may send
 * them as several commands, pipelined. No entry is returned: the reader
 * reads them. *done says how many of the `count` are known to be in the
 * log, a prefix: all of them when it returns 0.
 * Redis: each origin's last number in STREAM:ids, in the same script as
 * the append; one past a number it does not hold is refused (RP_DAMAGED:
 * the log lost that origin's numbers); `seq` is the last entry the replica
 * applied: a log whose counter is behind it was reset (RP_DAMAGED); the
 * script checks the keys' types and the counter against the last entry
 * before it writes (as rp_append), not the entries between the replica's
 * position and its end (the reader checks those as it reads them).
 * NATS: the entries go several to a message (entry.h: up to 256 actions
 * and 256 KiB a message, cut the same way from `first` on every call; a
 * message id "ORIGIN:N" for one action, "ORIGIN:N+K" for K from N),
 * published together and resent (same id) until acknowledged or
 * timeout_ms; *done counts the actions of the acknowledged messages; the
 * stream's de-duplication window (2 minutes) keeps an id once, so a resend
 * later than that after the entry reached the stream appends it again: the
 * window bounds how long a replica may stay offline before a resend could
 * duplicate. No per-origin counter: a gap is not refused, and an entry the
 * stream refused while a later one was stored lands after it when resent
 * (replicate.c then holds the later one back on every replica: its
 * "Per-origin order").
 * A new (not duplicate) entry numbered at or before `seq`: the stream was
 * reset (RP_DAMAGED). */
int rp_append_many(rp_engine *engine, const char *origin, uint64_t first, size_t count, const char *const *entries,
                   uint64_t seq, size_t *done, char *err);
/* Lets go of what the connection keeps for reading (NATS: its cursor, an
 * ordered consumer to which the servers push every new entry); the next
 * read makes it again. For a connection that reads rarely (replicate.so's
 * ordered mode on NATS after a join or a catch-up: its reader thread has
 * its own connection), so that the entries are not sent to it for nothing.
 * Redis: nothing to do. */
void rp_idle(rp_engine *engine);
/* Whether an append reads back the entries before its own in the same
 * round trip at no extra cost (Redis: one script), so that the appender
 * applies them itself; NATS: the reader thread's cursor brings them. */
int rp_reads_back_cheaply(const rp_engine *engine);
/* What the engine saw, without I/O: for replicate.so's status. */
typedef struct rp_engine_info {
    uint64_t head;        /* the log's last sequence number at the last read or append that told it (0: none
                             yet; NATS: the highest PubAck or read sequence) */
    uint64_t connections; /* connections made so far (the first included; NATS: 1 + the client's reconnections) */
    uint64_t waited_counter; /* Redis: the counter the last rp_wait read with its entries (0: missing, or not
                                read; NATS: always 0). It never falls in a sound log: below what a replica
                                applied, the log was reset even when no entry comes back to say so */
} rp_engine_info;
void rp_info(const rp_engine *engine, rp_engine_info *out);
/* The snapshot: *found 0 when there is none; else *state (malloc'ed), the
 * position and sequence number of the last entry it covers, checked against
 * the log (rp_check_snapshot). */
int rp_snapshot_get(rp_engine *engine, int *found, char **state, char pos[RP_POS_SIZE], uint64_t *seq, char *err);
/* Stores a snapshot unless the slot already holds a newer one (*stored says),
 * and trims the log before the previous snapshot's position (entries that
 * neither snapshot needs). */
int rp_snapshot_put(rp_engine *engine, const char *state, const char *pos, uint64_t seq, int *stored, char *err);

/* ---- For the engines (engine.c) ------------------------------------------ */

/* Each engine's functions; its struct begins with `const rp_ops *ops`. */
typedef struct rp_ops {
    void (*close)(rp_engine *engine);
    int (*append_batch)(rp_engine *engine, const char *const *actions, size_t count, const char *after, uint64_t seq,
                        rp_batch *out, char *err);
    int (*check)(rp_engine *engine, const char *after, uint64_t seq, char *err);
    int (*read)(rp_engine *engine, const char *after, size_t max, rp_batch *out, char *err);
    int (*wait)(rp_engine *engine, const char *after, int block_ms, size_t max, rp_batch *out, char *err);
    int (*append_many)(rp_engine *engine, const char *origin, uint64_t first, size_t count, const char *const *entries,
                       uint64_t seq, size_t *done, char *err);
    void (*info)(const rp_engine *engine, rp_engine_info *out);
    void (*idle)(rp_engine *engine); /* NULL: nothing to let go */
    int reads_back_cheaply;
    int (*snapshot_get)(rp_engine *engine, int *found, char **state, char pos[RP_POS_SIZE], uint64_t *seq, char *err);
    int (*snapshot_put)(rp_engine *engine, const char *state, const char *pos, uint64_t seq, int *stored, char *err);
} rp_ops;

struct rp_engine {
    const rp_ops *ops;
};

rp_engine *rp_redis_open(const rp_options *options, char *err);
rp_engine *rp_nats_open(const rp_options *options, char *err);

/* Reads a file the plugin is given (a CA, a certificate, a key) as the
 * library's loader trusts its plugin files
 * (Sources/TurnstateC/PluginHost/TrustedFile.swift): with every link
 * resolved, a regular file owned by root or this process's effective user
 * and not writable by group or others, in folders
 * up to / that are owned by root or that user and not writable by group or
 * others (a sticky folder owned by root, like /tmp, excepted). A `secret`
 * (a private key) must also not be readable by group or others. The file is
 * opened once (O_NOFOLLOW) and checked through that descriptor. 0 with
 * *text (malloc'ed, NUL-terminated, without NUL bytes inside, at most 1 MiB)
 * or -1 with a message naming `what` and the config field. */
int rp_read_trusted_file(const char *path, const char *what, int secret, char **text, char *err);

/* A message: formatted into err (RP_ERR_SIZE bytes). */
void rp_fail(char *err, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
