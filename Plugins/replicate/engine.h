/*
 * engine.h - the log that replicate.so stands on, behind a small interface.
 *
 * An engine is an ordered, persistent, shared log of entries plus one
 * snapshot slot. Every entry has a position (text that sorts in log order as
 * rp_compare_pos compares it: a Redis stream id; "" is "before the first
 * entry") and a sequence number (1, 2, 3 ... with no gap, assigned by the log
 * when the entry is appended; entry.h has the format and its checks). The
 * snapshot slot holds a state together with the position and sequence number
 * of the last entry it covers.
 *
 * engine_redis.c implements it on Redis Streams; another log (NATS
 * JetStream: a stream, a KV bucket for the snapshot) would implement the
 * same functions. One rp_engine is one connection; it is not thread-safe
 * (replicate.c uses one per thread).
 *
 * Every function returns 0 on success, or (message in err, RP_ERR_SIZE
 * bytes):
 *   RP_FAILED   the log did not answer within the timeout, could not be
 *               reached, or failed; after a failure that broke the connection
 *               the next call reconnects, but not before a backoff delay (50 ms
 *               doubling to 2 s) has passed since the last failed attempt:
 *               calls in between fail at once ("reconnecting");
 *   RP_DAMAGED  the log holds what replicate.so did not write there (entry.h:
 *               a malformed entry or snapshot, an entry numbered past the
 *               counter, a key of another type, a log that was reset under
 *               this replica). Nothing was written.
 * A function that returns a batch returns, with RP_DAMAGED, the entries
 * before the damaged one (maybe none); free it in every case.
 */
#ifndef TS_REPLICATE_ENGINE_H
#define TS_REPLICATE_ENGINE_H

#include "entry.h"

typedef struct rp_engine rp_engine;

/* A connection to the log `stream` at `url` ("redis://HOST[:PORT]"); no I/O
 * yet. timeout_ms bounds connecting and every command. NULL on a malformed
 * url (message in err) or no memory. */
rp_engine *rp_open(const char *url, const char *stream, int timeout_ms, char *err);
void rp_close(rp_engine *engine);

/* Appends `action` for a replica that has applied up to entry `seq` at
 * position `after` ("" and 0: nothing yet), and returns in *out every entry
 * after `after` up to and including the new one (its last item), read
 * atomically with the append: nothing else can come in between. Before it
 * writes, the log checks itself (its keys' types, its counter against its
 * last entry, the replica's position against it, the entries after that
 * position): on damage it writes nothing and answers RP_DAMAGED. */
int rp_append(rp_engine *engine, const char *action, const char *after, uint64_t seq, rp_batch *out, char *err);
/* The same checks as rp_append, without appending: 0 or RP_DAMAGED. */
int rp_check(rp_engine *engine, const char *after, uint64_t seq, char *err);
/* Up to `max` entries after position `after` (none: count 0), checked
 * against the counter (rp_check_counter). */
int rp_read(rp_engine *engine, const char *after, size_t max, rp_batch *out, char *err);
/* Blocks up to block_ms for entries after `after`; returns up to `max` of
 * them (count 0 when the time ran out), checked against the counter. */
int rp_wait(rp_engine *engine, const char *after, int block_ms, size_t max, rp_batch *out, char *err);
/* Optimistic mode's appends (replicate.c's sender thread): `count` entries,
 * their texts in `entries`, from the replica `origin` (1 to 64 characters
 * of [0-9a-z], no other replica's), numbered `first`, first + 1, ... in this
 * order. A replica numbers its appends 1, 2, 3 ... without a gap and sends
 * them in that order; after a failure it sends again from the first one it
 * does not know appended. Idempotent: the log keeps each number of an
 * origin once, so an entry whose number it holds already is skipped (a
 * resend after a lost answer appends nothing twice), and one past a number
 * it does not hold is refused (RP_DAMAGED: the log lost that origin's
 * numbers). The engine may send them as several commands, pipelined.
 * `seq` is the last entry the replica applied: a log whose counter is behind
 * it was reset (RP_DAMAGED). The log checks its keys' types and its counter
 * against its last entry before it writes (as rp_append), not the entries
 * between the replica's position and its end (the reader checks those as it
 * reads them). No entry is returned: the reader reads them. *done says how
 * many of the `count` are known to be in the log, a prefix: all of them
 * when it returns 0. */
int rp_append_many(rp_engine *engine, const char *origin, uint64_t first, size_t count, const char *const *entries,
                   uint64_t seq, size_t *done, char *err);
/* What the engine saw, without I/O: for replicate.so's status. */
typedef struct rp_engine_info {
    uint64_t head;        /* the log's last sequence number at the last read or append that told it (0: none yet) */
    uint64_t connections; /* connections made so far (the first included) */
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

#endif
