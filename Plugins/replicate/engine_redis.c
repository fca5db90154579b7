/*
 * engine_redis.c - engine.h on Redis Streams (Redis 6.2 or newer: exclusive
 * XRANGE ranges and XTRIM MINID).
 *
 * Keys, for a stream named S:
 *   S        the stream; each entry has the fields "n" (its sequence number)
 *            and "a" (the action's JSON text)
 *   S:seq    the last sequence number given out (INCR)
 *   S:snap   a hash: "state", "pos" (stream id), "n" (sequence number)
 * Appending is one Lua script (atomic on the server): INCR S:seq, XADD, and
 * XRANGE from the caller's position to the new entry, so that the caller
 * learns, in one round trip, everything it must apply before its own entry.
 * Durability is Redis's: with appendonly yes and appendfsync always, an
 * append that was answered is on disk.
 * A URL with user information (redis://USER:PASSWORD@HOST or
 * redis://:PASSWORD@HOST) sends AUTH after each connection; no message
 * ever includes the password.
 */
#define _POSIX_C_SOURCE 200809L

#include "engine.h"

#include <hiredis/hiredis.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rp_engine {
    char host[256];
    /* From redis://USER:PASSWORD@ or redis://:PASSWORD@ (NULL: no AUTH). */
    char *user, *password;
    int port;
    char *stream, *seq_key, *snap_key;
    int timeout_ms;
    int current_timeout_ms;
    redisContext *c;
    int backoff_ms;
    struct timespec next_attempt;
    char append_sha[41]; /* the append script's SHA1 once the server has it */
};

static const char APPEND_SCRIPT[] =
    "local n = redis.call('INCR', KEYS[2])\n"
    "local id = redis.call('XADD', KEYS[1], '*', 'n', n, 'a', ARGV[1])\n"
    "local from = '-'\n"
    "if ARGV[2] ~= '' then from = '(' .. ARGV[2] end\n"
    "return redis.call('XRANGE', KEYS[1], from, id)\n";

static const char SNAPSHOT_SCRIPT[] =
    "local current = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')\n"
    "if tonumber(ARGV[3]) <= current then return 0 end\n"
    "local previous = redis.call('HGET', KEYS[1], 'pos')\n"
    "redis.call('HSET', KEYS[1], 'state', ARGV[1], 'pos', ARGV[2], 'n', ARGV[3])\n"
    "if previous then redis.call('XTRIM', KEYS[2], 'MINID', previous) end\n"
    "return 1\n";

static void fail(char *err, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(err, RP_ERR_SIZE, format, args);
    va_end(args);
}

static char *concat(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *m = malloc(la + lb + 1);
    if (m == NULL) return NULL;
    memcpy(m, a, la);
    memcpy(m + la, b, lb + 1);
    return m;
}

/* A copy of `length` bytes of `text`, NUL-terminated (NULL: no memory). */
static char *copy_of(const char *text, size_t length) {
    char *m = malloc(length + 1);
    if (m == NULL) return NULL;
    memcpy(m, text, length);
    m[length] = '\0';
    return m;
}

/* Frees a secret after overwriting it (volatile: not optimized away). */
static void free_secret(char *secret) {
    if (secret == NULL) return;
    for (volatile char *p = secret; *p; p++) *p = 0;
    free(secret);
}

rp_engine *rp_open(const char *url, const char *stream, int timeout_ms, char *err) {
    const char *rest, *colon, *at;
    size_t host_length;
    rp_engine *e;
    /* Messages name the URL without its user information: never a password. */
    if (strncmp(url, "redis://", 8) != 0) {
        fail(err, "replicate: \"url\" must look like redis://[USER:PASSWORD@]HOST[:PORT], and does not start "
                  "with redis://");
        return NULL;
    }
    rest = url + 8;
    at = strrchr(rest, '@');
    if (at != NULL && memchr(rest, ':', (size_t)(at - rest)) == NULL) {
        fail(err, "replicate: the user information in \"url\" must be USER:PASSWORD or :PASSWORD (redis://:PASSWORD@HOST)");
        return NULL;
    }
    if (at != NULL) rest = at + 1;
    colon = strrchr(rest, ':');
    host_length = colon ? (size_t)(colon - rest) : strlen(rest);
    if (host_length == 0 || host_length >= 256 || strchr(rest, '/') != NULL) {
        fail(err, "replicate: \"url\" must look like redis://[USER:PASSWORD@]HOST[:PORT], not \"redis://%s%.200s\"",
             at ? "***@" : "", rest);
        return NULL;
    }
    e = calloc(1, sizeof *e);
    if (e == NULL) {
        fail(err, "replicate: out of memory");
        return NULL;
    }
    if (at != NULL) {
        const char *info = url + 8, *sep = memchr(info, ':', (size_t)(at - info));
        e->user = sep > info ? copy_of(info, (size_t)(sep - info)) : NULL;
        e->password = copy_of(sep + 1, (size_t)(at - sep - 1));
        if (e->password == NULL || (sep > info && e->user == NULL)) {
            fail(err, "replicate: out of memory");
            rp_close(e);
            return NULL;
        }
    }
    memcpy(e->host, rest, host_length);
    e->host[host_length] = '\0';
    e->port = 6379;
    if (colon) {
        char *end;
        long port = strtol(colon + 1, &end, 10);
        if (*end != '\0' || end == colon + 1 || port < 1 || port > 65535) {
            fail(err, "replicate: the port in \"url\" must be a number from 1 to 65535, not \"%.50s\"", colon + 1);
            free(e);
            return NULL;
        }
        e->port = (int)port;
    }
    e->stream = concat(stream, "");
    e->seq_key = concat(stream, ":seq");
    e->snap_key = concat(stream, ":snap");
    if (!e->stream || !e->seq_key || !e->snap_key) {
        fail(err, "replicate: out of memory");
        rp_close(e);
        return NULL;
    }
    e->timeout_ms = timeout_ms;
    return e;
}

static void drop(rp_engine *e) {
    if (e->c) redisFree(e->c);
    e->c = NULL;
}

void rp_close(rp_engine *e) {
    if (e == NULL) return;
    drop(e);
    free(e->user);
    free_secret(e->password);
    free(e->stream);
    free(e->seq_key);
    free(e->snap_key);
    free(e);
}

static struct timeval tv_of(int ms) {
    struct timeval tv;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return tv;
}

static long ms_until(const struct timespec *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)(t->tv_sec - now.tv_sec) * 1000 + (t->tv_nsec - now.tv_nsec) / 1000000;
}

/* Connected, or -1 with a message (and the next attempt pushed back). */
static int connected(rp_engine *e, char *err) {
    long wait;
    if (e->c) return 0;
    wait = e->backoff_ms ? ms_until(&e->next_attempt) : 0;
    if (wait > 0) {
        fail(err, "replicate: redis://%s:%d is unreachable; reconnecting (next attempt in %ld ms)", e->host, e->port,
             wait);
        return -1;
    }
    e->c = redisConnectWithTimeout(e->host, e->port, tv_of(e->timeout_ms));
    if (e->c == NULL || e->c->err) {
        fail(err, "replicate: cannot connect to redis://%s:%d: %s", e->host, e->port,
             e->c ? e->c->errstr : "out of memory");
        drop(e);
        e->backoff_ms = e->backoff_ms ? (e->backoff_ms * 2 > 2000 ? 2000 : e->backoff_ms * 2) : 50;
        clock_gettime(CLOCK_MONOTONIC, &e->next_attempt);
        e->next_attempt.tv_sec += e->backoff_ms / 1000;
        e->next_attempt.tv_nsec += (long)(e->backoff_ms % 1000) * 1000000L;
        if (e->next_attempt.tv_nsec >= 1000000000L) {
            e->next_attempt.tv_sec++;
            e->next_attempt.tv_nsec -= 1000000000L;
        }
        return -1;
    }
    redisSetTimeout(e->c, tv_of(e->timeout_ms));
    if (e->password != NULL) {
        /* AUTH [USER] PASSWORD: the server's ACL user, or requirepass. */
        redisReply *r = e->user ? redisCommand(e->c, "AUTH %s %s", e->user, e->password)
                                : redisCommand(e->c, "AUTH %s", e->password);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            fail(err, "replicate: redis://%s:%d refused the credentials in \"url\" (AUTH%s): %.200s", e->host,
                 e->port, e->user ? " as that user" : "",
                 r ? r->str : (e->c->errstr[0] ? e->c->errstr : "no answer"));
            if (r) freeReplyObject(r);
            drop(e);
            return -1;
        }
        freeReplyObject(r);
    }
    e->backoff_ms = 0;
    e->current_timeout_ms = e->timeout_ms;
    return 0;
}

/* One command; NULL with a message on failure (an error reply is freed). */
static redisReply *command(rp_engine *e, int timeout_ms, int argc, const char **argv, const size_t *lengths,
                           char *err) {
    redisReply *r;
    if (connected(e, err) != 0) return NULL;
    if (timeout_ms != e->current_timeout_ms) {
        redisSetTimeout(e->c, tv_of(timeout_ms));
        e->current_timeout_ms = timeout_ms;
    }
    r = redisCommandArgv(e->c, argc, argv, lengths);
    if (r == NULL) {
        fail(err, "replicate: redis://%s:%d: %s", e->host, e->port,
             e->c->err == REDIS_ERR_IO || e->c->err == REDIS_ERR_EOF ? (e->c->errstr[0] ? e->c->errstr : "connection lost")
                                                                   : e->c->errstr);
        drop(e);
        /* Reconnect at once on the next call; backoff only if that fails. */
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        fail(err, "replicate: redis://%s:%d answered: %.300s", e->host, e->port, r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* Entries of an XRANGE reply into *out. */
static int parse_entries(rp_engine *e, redisReply *r, rp_batch *out, char *err) {
    size_t i, k;
    out->items = NULL;
    out->count = 0;
    if (r->type == REDIS_REPLY_NIL) return 0;
    if (r->type != REDIS_REPLY_ARRAY) goto malformed;
    if (r->elements == 0) return 0;
    out->items = calloc(r->elements, sizeof *out->items);
    if (out->items == NULL) {
        fail(err, "replicate: out of memory");
        return -1;
    }
    for (i = 0; i < r->elements; i++) {
        redisReply *entry = r->element[i], *fields;
        rp_entry *item = &out->items[out->count];
        if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2 || entry->element[0]->type != REDIS_REPLY_STRING ||
            entry->element[0]->len >= RP_POS_SIZE || entry->element[1]->type != REDIS_REPLY_ARRAY)
            goto malformed;
        memcpy(item->pos, entry->element[0]->str, entry->element[0]->len + 1);
        fields = entry->element[1];
        for (k = 0; k + 1 < fields->elements; k += 2) {
            redisReply *key = fields->element[k], *value = fields->element[k + 1];
            if (key->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING) goto malformed;
            if (strcmp(key->str, "n") == 0) {
                item->seq = strtoull(value->str, NULL, 10);
            } else if (strcmp(key->str, "a") == 0) {
                item->action = malloc(value->len + 1);
                if (item->action == NULL) {
                    fail(err, "replicate: out of memory");
                    out->count++; /* this one too */
                    rp_batch_free(out);
                    return -1;
                }
                memcpy(item->action, value->str, value->len + 1);
            }
        }
        if (item->action == NULL || item->seq == 0) goto malformed;
        out->count++;
    }
    return 0;
malformed:
    fail(err, "replicate: stream \"%.200s\" holds an entry that replicate.so did not write", e->stream);
    if (out->items && out->count < r->elements) out->count++; /* a half-read entry (calloc'ed) */
    rp_batch_free(out);
    return -1;
}

/* Loads the append script (SCRIPT LOAD) once per connection: then EVALSHA
 * sends 40 bytes instead of the script. */
static int load_append_script(rp_engine *e, char *err) {
    const char *argv[3] = {"SCRIPT", "LOAD", APPEND_SCRIPT};
    size_t lengths[3];
    int i;
    redisReply *r;
    for (i = 0; i < 3; i++) lengths[i] = strlen(argv[i]);
    r = command(e, e->timeout_ms, 3, argv, lengths, err);
    if (r == NULL) return -1;
    if (r->type != REDIS_REPLY_STRING || r->len != 40) {
        fail(err, "replicate: unexpected answer to SCRIPT LOAD");
        freeReplyObject(r);
        return -1;
    }
    memcpy(e->append_sha, r->str, 41);
    freeReplyObject(r);
    return 0;
}

int rp_append(rp_engine *e, const char *action, const char *after, rp_batch *out, char *err) {
    const char *argv[7] = {"EVALSHA", NULL, "2", e->stream, e->seq_key, action, after};
    size_t lengths[7];
    int i, rc;
    redisReply *r;
    if (e->c == NULL) e->append_sha[0] = '\0'; /* a new connection: maybe a new server */
    if (e->append_sha[0] == '\0' && load_append_script(e, err) != 0) return -1;
    argv[1] = e->append_sha;
    for (i = 0; i < 7; i++) lengths[i] = strlen(argv[i]);
    r = command(e, e->timeout_ms, 7, argv, lengths, err);
    if (r == NULL) {
        /* NOSCRIPT (the server restarted without its script cache): load it
         * again next time. Not retried here: the caller sees the failure. */
        if (strstr(err, "NOSCRIPT")) e->append_sha[0] = '\0';
        return -1;
    }
    rc = parse_entries(e, r, out, err);
    freeReplyObject(r);
    if (rc == 0 && out->count == 0) {
        fail(err, "replicate: the append script returned no entry");
        return -1;
    }
    return rc;
}

int rp_read(rp_engine *e, const char *after, size_t max, rp_batch *out, char *err) {
    char from[RP_POS_SIZE + 1], count[24];
    const char *argv[6];
    size_t lengths[6];
    int i, rc;
    redisReply *r;
    if (after[0]) snprintf(from, sizeof from, "(%s", after);
    else snprintf(from, sizeof from, "-");
    snprintf(count, sizeof count, "%zu", max);
    argv[0] = "XRANGE"; argv[1] = e->stream; argv[2] = from; argv[3] = "+"; argv[4] = "COUNT"; argv[5] = count;
    for (i = 0; i < 6; i++) lengths[i] = strlen(argv[i]);
    r = command(e, e->timeout_ms, 6, argv, lengths, err);
    if (r == NULL) return -1;
    rc = parse_entries(e, r, out, err);
    freeReplyObject(r);
    return rc;
}

int rp_wait(rp_engine *e, const char *after, int block_ms, size_t max, rp_batch *out, char *err) {
    char block[24], count[24];
    const char *argv[8];
    size_t lengths[8];
    int i, rc = 0;
    redisReply *r;
    out->items = NULL;
    out->count = 0;
    snprintf(block, sizeof block, "%d", block_ms);
    snprintf(count, sizeof count, "%zu", max);
    argv[0] = "XREAD"; argv[1] = "COUNT"; argv[2] = count; argv[3] = "BLOCK"; argv[4] = block;
    argv[5] = "STREAMS"; argv[6] = e->stream; argv[7] = after[0] ? after : "0-0";
    for (i = 0; i < 8; i++) lengths[i] = strlen(argv[i]);
    r = command(e, block_ms + e->timeout_ms, 8, argv, lengths, err);
    if (r == NULL) return -1;
    /* [[stream, entries]] or nil when the time ran out. */
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 && r->element[0]->type == REDIS_REPLY_ARRAY &&
        r->element[0]->elements == 2) {
        rc = parse_entries(e, r->element[0]->element[1], out, err);
    } else if (r->type != REDIS_REPLY_NIL) {
        fail(err, "replicate: unexpected answer to XREAD");
        rc = -1;
    }
    freeReplyObject(r);
    return rc;
}

int rp_snapshot_get(rp_engine *e, int *found, char **state, char pos[RP_POS_SIZE], uint64_t *seq, char *err) {
    const char *argv[5] = {"HMGET", e->snap_key, "state", "pos", "n"};
    size_t lengths[5];
    int i;
    redisReply *r;
    for (i = 0; i < 5; i++) lengths[i] = strlen(argv[i]);
    r = command(e, e->timeout_ms, 5, argv, lengths, err);
    if (r == NULL) return -1;
    *found = 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
        fail(err, "replicate: unexpected answer to HMGET %.200s", e->snap_key);
        freeReplyObject(r);
        return -1;
    }
    if (r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING &&
        r->element[2]->type == REDIS_REPLY_STRING && r->element[1]->len < RP_POS_SIZE) {
        *state = malloc(r->element[0]->len + 1);
        if (*state == NULL) {
            fail(err, "replicate: out of memory");
            freeReplyObject(r);
            return -1;
        }
        memcpy(*state, r->element[0]->str, r->element[0]->len + 1);
        memcpy(pos, r->element[1]->str, r->element[1]->len + 1);
        *seq = strtoull(r->element[2]->str, NULL, 10);
        *found = 1;
    }
    freeReplyObject(r);
    return 0;
}

int rp_snapshot_put(rp_engine *e, const char *state, const char *pos, uint64_t seq, int *stored, char *err) {
    char n[24];
    const char *argv[8];
    size_t lengths[8];
    int i;
    redisReply *r;
    snprintf(n, sizeof n, "%llu", (unsigned long long)seq);
    argv[0] = "EVAL"; argv[1] = SNAPSHOT_SCRIPT; argv[2] = "2"; argv[3] = e->snap_key; argv[4] = e->stream;
    argv[5] = state; argv[6] = pos; argv[7] = n;
    for (i = 0; i < 8; i++) lengths[i] = strlen(argv[i]);
    r = command(e, e->timeout_ms, 8, argv, lengths, err);
    if (r == NULL) return -1;
    *stored = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return 0;
}

void rp_batch_free(rp_batch *b) {
    size_t i;
    if (b == NULL || b->items == NULL) return;
    for (i = 0; i < b->count; i++) free(b->items[i].action);
    free(b->items);
    b->items = NULL;
    b->count = 0;
}
