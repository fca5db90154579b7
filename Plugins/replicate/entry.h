/*
 * entry.h - replicate.so's log entries and snapshot, parsed and checked
 * without any I/O: pure functions (engine_redis.c and replicate.c use them;
 * Tests/fuzz/fuzz_replicate_entry.c fuzzes them).
 *
 * An entry as Redis holds it:
 *   id  a Redis stream id, "MS-SEQ": two decimal integers from 0 to
 *       18446744073709551615 without sign or leading zero
 *   fields, exactly two and in this order:
 *     "n"  its sequence number: decimal digits without sign or leading zero,
 *          from 1 to RP_SEQ_MAX (2^53 - 1: what the append script, in Lua,
 *          counts exactly)
 *     "a"  the action's JSON text, without a NUL byte
 * The snapshot (a hash) holds "state" (JSON text without a NUL byte), "pos"
 * (the id of the last entry it covers) and "n" (that entry's number): all
 * three, or none (no snapshot).
 * Anything else was not written by replicate.so: the log is damaged, and the
 * functions say so (RP_DAMAGED, with a message). Messages show a value from
 * the log clipped to 40 bytes, with bytes outside printable ASCII as \xHH.
 */
#ifndef TS_REPLICATE_ENTRY_H
#define TS_REPLICATE_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#define RP_POS_SIZE 48
#define RP_ERR_SIZE 512
#define RP_SEQ_MAX 9007199254740991ULL

/* Results: 0, or one of these. */
#define RP_FAILED (-1)  /* the log did not answer, or failed; or no memory */
#define RP_DAMAGED (-2) /* the log holds what replicate.so did not write there */

typedef struct rp_entry {
    char pos[RP_POS_SIZE]; /* its id */
    uint64_t seq;          /* its number */
    char *action;          /* malloc'ed */
    int mine;              /* rp_append_batch: 1 + the index of this call's action; else 0 */
    uint32_t part;         /* NATS: its place in a message that carries several actions (0, 1, ...); else 0 */
    uint32_t parts;        /* how many the message carries (0 or 1: this entry alone) */
} rp_entry;

typedef struct rp_batch {
    rp_entry *items;
    size_t count;
} rp_batch;

/* Bytes from the log; str NULL: absent (a nil reply). */
typedef struct rp_text {
    const char *str;
    size_t len;
} rp_text;

/* 1 when text is a stream id (then *ms and *seq, either may be NULL), else 0. */
int rp_parse_id(rp_text text, uint64_t *ms, uint64_t *seq);
/* Orders two positions: "" (before the first entry), stream ids (which
 * rp_parse_id accepts) or JetStream sequences (decimal integers without
 * sign or leading zero, as numbers); <0, 0, >0 as strcmp. Anything else (and
 * a stream id against a sequence) as strcmp. */
int rp_compare_pos(const char *a, const char *b);
/* 1 when text is a sequence number (1 to RP_SEQ_MAX), else 0. */
int rp_parse_seq(rp_text text, uint64_t *out);
/* `text` shown in `out` (size >= 4): clipped, printable ASCII, \xHH. */
void rp_show(rp_text text, char *out, size_t size);

/* One entry: its id and its fields as names and values, alternating
 * (`count` texts). 0 with *out filled (out->action malloc'ed), RP_DAMAGED
 * with a message naming the entry and what is wrong, or RP_FAILED (no
 * memory). `stream` names the log in messages. */
int rp_parse_entry(const char *stream, rp_text id, const rp_text *fields, size_t count, rp_entry *out, char *err);

/* The snapshot's three values. 0 with *found 0 (none of them: no snapshot)
 * or 1 (*state malloc'ed, pos, *seq); RP_DAMAGED with a message; RP_FAILED. */
int rp_parse_snapshot(const char *stream, rp_text state, rp_text pos, rp_text n, int *found, char **state_out,
                      char pos_out[RP_POS_SIZE], uint64_t *seq, char *err);

/* Checks a snapshot (entry `seq` at `pos`) against the log: `counter` (the
 * log's counter, as text), `at` (the entry at pos, NULL when the stream does
 * not hold it) and `after` (the first entry after pos, NULL when none). 0
 * when they agree (counter >= seq, at numbered seq, after numbered seq + 1),
 * else RP_DAMAGED with a message. */
int rp_check_snapshot(const char *stream, uint64_t seq, const char *pos, rp_text counter, const rp_entry *at,
                      const rp_entry *after, char *err);

/* Checks what was read against the log's counter, read after it: no entry
 * can be numbered past it (replicate.so numbers an entry and counts it in one
 * step). 0, or RP_DAMAGED with a message about the first entry that is not
 * counted, which is dropped from the batch with those after it (the batch
 * keeps what comes before the damage). */
int rp_check_counter(const char *stream, rp_batch *batch, rp_text counter, char *err);

/* What a replica that has applied up to entry `seq` at `pos` does with entry
 * e read from the log. */
enum rp_step {
    RP_SKIP,     /* e is at or before pos: applied already */
    RP_APPLY,    /* e is after pos and numbered seq + 1: the next one */
    RP_GAP,      /* after pos and numbered past seq + 1: entries are missing before it */
    RP_BACKWARD, /* after pos and numbered seq or less: the log is damaged */
};
enum rp_step rp_step_of(const char *pos, uint64_t seq, const rp_entry *e);

/* ---- NATS JetStream (engine_nats.c) ------------------------------------------
 * An entry is a message on the log's stream: its position is the stream
 * sequence in decimal, and its number is that same sequence (JetStream gives
 * them, one by one, to the messages of a stream). It carries the header
 * "Ts-Log" with the log's id (the stream's creation time in nanoseconds,
 * in decimal): a message without it was not written by replicate.so, one
 * with another id was written into an earlier stream of that name (the
 * stream was deleted and made again under a replica). Its data is the
 * action's JSON text, without a NUL byte.
 * A message may carry several actions of one append of one replica (ordered
 * mode: what its threads queued; optimistic mode: what was pending; each
 * "#ORIGIN:N ACTION", numbered one after the other): it
 * then has the header "Ts-Parts" with their count (2 to RP_PARTS_MAX, in
 * decimal) and its data is their texts separated by NUL bytes, each
 * non-empty. Its entries share the message's position and number (the
 * stream sequence) and are told apart by `part`; a replica applies them in
 * order, and counts the message applied after the last. Replicas older than
 * 1.3.0 refuse such a message (an action with a NUL byte: RP_DAMAGED).
 * The snapshot is the value of the key "snapshot" in the key-value bucket
 * STREAM_snap: "LOG SEQ\n" then the state's JSON text (LOG and SEQ decimal,
 * SEQ the last entry it covers). */

/* One message as an entry: `seq` its stream sequence, `log` the Ts-Log
 * header (str NULL: absent), `data` its data; `log_id` the log this replica
 * joined. 0 with *out filled, RP_DAMAGED with a message, or RP_FAILED. */
int rp_parse_message(const char *stream, uint64_t seq, rp_text log, uint64_t log_id, rp_text data, rp_entry *out,
                     char *err);
/* The most actions one message carries. */
#define RP_PARTS_MAX 1024
/* A message's "Ts-Parts" header (str NULL: absent) against its data: 0 with
 * *count (1 when the header is absent: the data is one action, which
 * rp_parse_message checks), or RP_DAMAGED with a message naming entry
 * `seq`: a header that is not a count from 2 to RP_PARTS_MAX, or data that
 * is not that many non-empty texts separated by NUL bytes. */
int rp_count_parts(const char *stream, uint64_t seq, rp_text parts, rp_text data, size_t *count, char *err);

/* The snapshot's value (str NULL: no snapshot): *found 0 or 1 (*state_out
 * malloc'ed, pos_out the sequence in decimal, *seq); RP_DAMAGED when it is
 * malformed or of another log; RP_FAILED. */
int rp_parse_js_snapshot(const char *stream, rp_text value, uint64_t log_id, int *found, char **state_out,
                         char pos_out[RP_POS_SIZE], uint64_t *seq, char *err);

void rp_batch_free(rp_batch *batch);

#endif
