/*
 * engine.h - the log that replicate.so stands on, behind a small interface.
 *
 * An engine is an ordered, persistent, shared log of entries plus one
 * snapshot slot. Every entry has a position (an opaque text that sorts in
 * log order; "" is "before the first entry") and a sequence number (1, 2, 3
 * ... with no gap, assigned by the log when the entry is appended). The
 * snapshot slot holds a state together with the position and sequence number
 * of the last entry it covers.
 *
 * engine_redis.c implements it on Redis Streams; another log (NATS
 * JetStream: a stream, a KV bucket for the snapshot) would implement the
 * same functions. One rp_engine is one connection; it is not thread-safe
 * (replicate.c uses one per thread). Every function returns 0 on success and
 * -1 on failure with a message in err (RP_ERR_SIZE bytes); after a failure
 * that broke the connection the next call reconnects, but not before a
 * backoff delay (50 ms doubling to 2 s) has passed since the last failed
 * attempt: calls in between fail at once ("reconnecting").
 */
#ifndef TS_REPLICATE_ENGINE_H
#define TS_REPLICATE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#define RP_POS_SIZE 48
#define RP_ERR_SIZE 512

typedef struct rp_entry {
    char pos[RP_POS_SIZE];
    uint64_t seq;
    char *action; /* malloc'ed */
} rp_entry;

typedef struct rp_batch {
    rp_entry *items;
    size_t count;
} rp_batch;

typedef struct rp_engine rp_engine;

/* A connection to the log `stream` at `url` ("redis://HOST[:PORT]"); no I/O
 * yet. timeout_ms bounds connecting and every command. NULL on a malformed
 * url (message in err) or no memory. */
rp_engine *rp_open(const char *url, const char *stream, int timeout_ms, char *err);
void rp_close(rp_engine *engine);

/* Appends `action` and returns in *out every entry after position `after`
 * up to and including the new one (its last item), read atomically with the
 * append: nothing else can come in between. */
int rp_append(rp_engine *engine, const char *action, const char *after, rp_batch *out, char *err);
/* Up to `max` entries after position `after` (none: count 0). */
int rp_read(rp_engine *engine, const char *after, size_t max, rp_batch *out, char *err);
/* Blocks up to block_ms for entries after `after`; returns up to `max` of
 * them (count 0 when the time ran out). */
int rp_wait(rp_engine *engine, const char *after, int block_ms, size_t max, rp_batch *out, char *err);
/* The snapshot: *found 0 when there is none; else *state (malloc'ed), the
 * position and sequence number of the last entry it covers. */
int rp_snapshot_get(rp_engine *engine, int *found, char **state, char pos[RP_POS_SIZE], uint64_t *seq, char *err);
/* Stores a snapshot unless the slot already holds a newer one (*stored says),
 * and trims the log before the previous snapshot's position (entries that
 * neither snapshot needs). */
int rp_snapshot_put(rp_engine *engine, const char *state, const char *pos, uint64_t seq, int *stored, char *err);

void rp_batch_free(rp_batch *batch);

#endif
