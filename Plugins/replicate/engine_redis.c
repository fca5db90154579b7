/*
 * engine_redis.c - engine.h on Redis Streams (Redis 6.2 or newer: exclusive
 * XRANGE ranges and XTRIM MINID).
 *
 * Keys, for a stream named S:
 *   S        the stream; each entry has the fields "n" (its sequence number)
 *            and "a" (the action's JSON text)
 *   S:seq    the last sequence number given out (INCR)
 *   S:snap   a hash: "state", "pos" (stream id), "n" (sequence number)
 *   S:ids    a hash: each optimistic replica's last appended number, by
 *            its origin (rp_append_many: what makes a resend idempotent)
 * Appending is one Lua script (atomic on the server): it checks the log
 * (the keys' types; the counter against the last entry's number; the
 * caller's position and number against the stream; the entries after that
 * position, well formed and numbered on by one) and refuses to write into a
 * damaged log ("TSDAMAGED ..." error, RP_DAMAGED); then XADD, INCR S:seq (a
 * failed XADD uses no number), and XRANGE from the caller's position to the
 * new entry, so that the caller learns, in one round trip, everything it
 * must apply before its own entry. A batch (rp_append_batch) is appended by
 * the same script, its entries contiguous. Reads come with the counter
 * (pipelined after them): no entry may be numbered past it. A reply that
 * takes longer than the timeout is reported as such ("did not answer within
 * N ms"). Durability is Redis's: with appendonly yes and appendfsync always,
 * an append that was answered is on disk.
 * A URL with user information (redis://USER:PASSWORD@HOST or
 * redis://:PASSWORD@HOST) sends AUTH after each connection; no message
 * ever includes the password.
 * The connection is this file's own (a socket, with OpenSSL for rediss://):
 * hiredis (0.14 in Debian 12, which has no TLS) only formats the commands
 * and parses the replies (redisFormatCommandArgv, redisReader). rediss://
 * verifies the server's certificate against tls_ca (or the system's
 * authorities) and its name or IP address against the url's host, and
 * presents tls_cert and tls_key when they are given.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include "engine.h"

#include <hiredis/hiredis.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef struct redis_engine {
    rp_engine base;
    const char *scheme; /* "redis" or "rediss" */
    char host[256];
    /* From redis://USER:PASSWORD@ or redis://:PASSWORD@ (NULL: no AUTH). */
    char *user, *password;
    int port;
    char *stream, *seq_key, *snap_key, *ids_key;
    char *append_script; /* APPEND_HELPERS and APPEND_BODY */
    char *many_script;   /* APPEND_HELPERS and MANY_BODY */
    int timeout_ms;
    int current_timeout_ms;
    /* The connection: fd -1 when there is none. */
    int fd;
    SSL_CTX *tls; /* rediss:// */
    SSL *ssl;
    redisReader *reader;
    int answered;       /* the server has answered on this connection */
    int timed_out;      /* the last I/O error was a timeout */
    char errstr[256];   /* and what it was */
    int backoff_ms;
    struct timespec next_attempt;
    /* The scripts' SHA1s once the server has them (this connection). */
    char append_sha[41], snapshot_get_sha[41], many_sha[41];
    rp_engine_info info;
} rd;

/* KEYS: the stream, its counter, its snapshot. ARGV: the action, the
 * caller's position ('' = none), its number ('0' = none), 'append' or 'check', then the
 * other actions of a batch (appended after ARGV[1], in order). Lua numbers are
 * doubles: sequence numbers up to 2^53 - 1 are exact (RP_SEQ_MAX). */
/* In two parts (a C99 string literal holds at most 4095 characters), joined
 * by rp_open: the helpers, then the checks and the append. */
static const char APPEND_HELPERS[] =
    "local S, C, P, pos = KEYS[1], KEYS[2], KEYS[3], ARGV[2]\n"
    "local function damaged(m) return redis.error_reply('TSDAMAGED ' .. m) end\n"
    "local function show(v) if #v > 40 then v = string.sub(v, 1, 40) .. '...' end return '\"' .. v .. '\"' end\n"
    "local INT = 'not an integer from 1 to 9007199254740991'\n"
    "local function int(n) return string.format('%.0f', n) end\n"
    "local function num(v)\n"
    "  if type(v) ~= 'string' or #v > 16 or not string.match(v, '^[1-9]%d*$') then return nil end\n"
    "  local n = tonumber(v)\n"
    "  if n > 9007199254740991 then return nil end\n"
    "  return n\n"
    "end\n"
    "local function bad(e, why) return nil, 'entry ' .. e[1] .. ' was not written by replicate.so: ' .. why end\n"
    "local function number(e)\n"
    "  local f = e[2]\n"
    "  if type(f) ~= 'table' or #f ~= 4 or f[1] ~= 'n' or f[3] ~= 'a' then return bad(e, 'its fields are not \"n\" and \"a\"') end\n"
    "  local n = num(f[2])\n"
    "  if not n then return bad(e, 'its number ' .. show(f[2]) .. ' is ' .. INT) end\n"
    "  if #f[4] == 0 or string.find(f[4], '\\0', 1, true) then return bad(e, 'its action is empty or contains a NUL byte') end\n"
    "  return n\n"
    "end\n"
    /* A key of another type: WRONGTYPE, told with the type it holds. */
    "local function call(key, what, ...)\n"
    "  local r = redis.pcall(...)\n"
    "  if type(r) == 'table' and r.err then\n"
    "    if string.sub(r.err, 1, 9) ~= 'WRONGTYPE' then return nil, redis.error_reply(r.err) end\n"
    "    return nil, damaged('key \"' .. key .. '\" holds a ' .. redis.call('TYPE', key)['ok'] .. ', not ' .. what)\n"
    "  end\n"
    "  return r\n"
    "end\n";

/* Pieces shared by APPEND_BODY and MANY_BODY (Lua, pasted into both).
 * The counter C, read as `raw` and as the number `counter` (0 when absent). */
#define LUA_READ_COUNTER \
    "local raw, e = call(C, 'a number (its counter)', 'GET', C)\n" \
    "if e then return e end\n" \
    "local counter = 0\n" \
    "if raw then\n" \
    "  counter = num(raw)\n" \
    "  if not counter then\n" \
    "    return damaged('its counter \"' .. C .. '\" holds ' .. show(raw) .. ', ' .. INT) end\n" \
    "end\n"

/* The stream's last entry `last` (nil when it holds none) against the
 * counter C (`raw` as read, `counter` as a number). */
#define LUA_CHECK_LAST_AGAINST_COUNTER \
    "if not last then\n" \
    "  if counter ~= 0 then\n" \
    "    return damaged('it holds no entry but its counter \"' .. C .. '\" is at ' .. int(counter) .. ' (the stream was deleted)') end\n" \
    "else\n" \
    "  local n, why = number(last)\n" \
    "  if not n then return damaged(why) end\n" \
    "  if not raw then\n" \
    "    return damaged('its last entry ' .. last[1] .. ' is number ' .. int(n) .. ' but its counter \"' .. C ..\n" \
    "                   '\" is missing (deleted)') end\n" \
    "  if n ~= counter then\n" \
    "    return damaged('its last entry ' .. last[1] .. ' is number ' .. int(n) .. ' but its counter \"' .. C ..\n" \
    "                   '\" is at ' .. int(counter) .. ' (an entry was added without the counter, or the counter was changed)') end\n" \
    "end\n"

/* The caller's last applied number `mine` not past the counter. */
#define LUA_CHECK_MINE_AGAINST_COUNTER \
    "if mine > counter then\n" \
    "  return damaged('this replica has applied entry ' .. int(mine) .. ' but its counter \"' .. C .. '\" is at ' ..\n" \
    "                 int(counter) .. ': the log was reset (FLUSHALL, or its keys deleted or rewritten)') end\n"

static const char APPEND_BODY[] =
    LUA_READ_COUNTER
    /* The entry at the caller's position (then the first of range), and what
     * follows it; the entry before a position that the stream does not hold. */
    "local from, at = '-', nil\n"
    "if pos ~= '' then from = pos end\n"
    "local range, e = call(S, 'a stream', 'XRANGE', S, from, '+')\n"
    "if e then return e end\n"
    "if pos ~= '' then\n"
    "  if range[1] and range[1][1] == pos then at = table.remove(range, 1)\n"
    "  else at = redis.call('XREVRANGE', S, pos, '-', 'COUNT', 1)[1] end\n"
    "end\n"
    "local last = range[#range] or at\n"
    LUA_CHECK_LAST_AGAINST_COUNTER
    "local mine = tonumber(ARGV[3])\n"
    "local reset = ': the log was reset (FLUSHALL, or its keys deleted) or a number was used twice'\n"
    LUA_CHECK_MINE_AGAINST_COUNTER
    /* Trimmed: the stream no longer holds the caller's entry nor any before it. */
    "local trimmed = true\n"
    "if at then\n"
    "  if at[1] ~= pos then\n"
    "    return damaged('entry ' .. pos .. ' (number ' .. int(mine) ..\n"
    "                   '), the last this replica applied, was deleted from the middle of the stream') end\n"
    "  local n, why = number(at)\n"
    "  if not n then return damaged(why) end\n"
    "  if n ~= mine then\n"
    "    return damaged('entry ' .. pos .. ' is number ' .. int(n) .. ' but this replica applied it as number ' ..\n"
    "                   int(mine) .. reset) end\n"
    "  trimmed = false\n"
    "end\n"
    "local expect = mine + 1\n"
    "for i, e in ipairs(range) do\n"
    "  local n, why = number(e)\n"
    "  if not n then return damaged(why) end\n"
    /* The oldest entries trimmed: the snapshot must cover those before it. */
    "  if n > expect and i == 1 and trimmed then\n"
    "    local covered, failed = call(P, 'a hash (its snapshot)', 'HGET', P, 'n')\n"
    "    if failed then return failed end\n"
    "    covered = num(covered)\n"
    "    if not covered or covered < n - 1 then\n"
    "      return damaged('it no longer holds entry ' .. int(expect) .. ' (trimmed before ' .. e[1] ..\n"
    "                     ') and no snapshot covers it') end\n"
    "  elseif n ~= expect then\n"
    "    return damaged('entry ' .. e[1] .. ' is number ' .. int(n) .. ' where number ' .. int(expect) ..\n"
    "                   ' comes next' .. (n < expect and reset or ' (entries are missing)')) end\n"
    "  expect = n + 1\n"
    "end\n"
    "if ARGV[4] == 'check' then return 0 end\n"
    /* The actions: ARGV[1], then ARGV[5] on (rp_append_batch). */
    "for i = 1, #ARGV do\n"
    "  if i == 1 or i > 4 then\n"
    "    counter = counter + 1\n"
    "    local n = int(counter)\n"
    "    local id = redis.call('XADD', S, '*', 'n', n, 'a', ARGV[i])\n"
    "    redis.call('INCR', C)\n"
    "    range[#range + 1] = {id, {'n', n, 'a', ARGV[i]}}\n"
    "  end\n"
    "end\n"
    "return range\n";

/* rp_append_many. KEYS: the stream, its counter, its snapshot, its ids.
 * ARGV: the origin, the first number, the caller's last applied sequence
 * number, then the entries' texts. The cheap checks (types, the counter
 * against the last entry, the caller not past the counter), then the
 * entries whose numbers S:ids does not hold. Returns {counter, appended}. */
static const char MANY_BODY[] =
    "local I, origin, first, mine = KEYS[4], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])\n"
    LUA_READ_COUNTER
    "local tail, e2 = call(S, 'a stream', 'XREVRANGE', S, '+', '-', 'COUNT', 1)\n"
    "if e2 then return e2 end\n"
    "local last = tail[1]\n"
    LUA_CHECK_LAST_AGAINST_COUNTER
    LUA_CHECK_MINE_AGAINST_COUNTER
    "local held, e3 = call(I, 'a hash (its ids)', 'HGET', I, origin)\n"
    "if e3 then return e3 end\n"
    "local have = 0\n"
    "if held then\n"
    "  have = num(held)\n"
    "  if not have then\n"
    "    return damaged('its ids \"' .. I .. '\" hold ' .. show(held) .. ' for replica ' .. origin .. ', ' .. INT) end\n"
    "end\n"
    "if first > have + 1 then\n"
    "  return damaged('its ids \"' .. I .. '\" hold number ' .. int(have) .. ' for replica ' .. origin ..\n"
    "                 ', which appended up to ' .. int(first - 1) .. ' (the ids were deleted or reset)') end\n"
    "local added = 0\n"
    "for i = 4, #ARGV do\n"
    "  if first + i - 4 > have then\n"
    "    counter = counter + 1\n"
    "    redis.call('XADD', S, '*', 'n', int(counter), 'a', ARGV[i])\n"
    "    added = added + 1\n"
    "  end\n"
    "end\n"
    "if added > 0 then\n"
    "  redis.call('SET', C, int(counter))\n"
    "  redis.call('HSET', I, origin, int(first + #ARGV - 4))\n"
    "end\n"
    "return {counter, added}\n";

/* KEYS: the snapshot, the stream, its counter. The snapshot's fields, the
 * counter, the entry at the snapshot's position and the one after it (empty
 * lists when there are none, or the position is not a stream id). */
static const char SNAPSHOT_GET_SCRIPT[] =
    "local s = redis.call('HMGET', KEYS[1], 'state', 'pos', 'n')\n"
    "local at, after = {}, {}\n"
    "if s[2] then\n"
    "  local r = redis.pcall('XRANGE', KEYS[2], s[2], s[2])\n"
    "  if type(r) == 'table' and r.err == nil then at = r end\n"
    "  r = redis.pcall('XRANGE', KEYS[2], '(' .. s[2], '+', 'COUNT', 1)\n"
    "  if type(r) == 'table' and r.err == nil then after = r end\n"
    "end\n"
    "return {s[1] or false, s[2] or false, s[3] or false, redis.call('GET', KEYS[3]) or false, at, after}\n";

static const char SNAPSHOT_SCRIPT[] =
    "local current = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')\n"
    "if tonumber(ARGV[3]) <= current then return 0 end\n"
    "local previous = redis.call('HGET', KEYS[1], 'pos')\n"
    "redis.call('HSET', KEYS[1], 'state', ARGV[1], 'pos', ARGV[2], 'n', ARGV[3])\n"
    "if previous then redis.call('XTRIM', KEYS[2], 'MINID', previous) end\n"
    "return 1\n";

#define fail rp_fail

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

static const rp_ops redis_ops;

/* The first error OpenSSL queued (and the queue cleared), or `otherwise`. */
static void tls_error(char *out, size_t size, const char *otherwise) {
    unsigned long code = ERR_get_error();
    if (code == 0) snprintf(out, size, "%s", otherwise);
    else ERR_error_string_n(code, out, size);
    ERR_clear_error();
}

/* The TLS context of rediss://: the authorities to trust, this client's
 * certificate and key. NULL with a message. */
static SSL_CTX *tls_context(const rp_options *o, char *err) {
    char *ca = NULL, *cert = NULL, *key = NULL, why[200];
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    BIO *bio = NULL;
    X509 *x = NULL;
    EVP_PKEY *pkey = NULL;
    int count = 0;
    if (ctx == NULL) {
        fail(err, "replicate: cannot make a TLS context (OpenSSL)");
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (o->tls_ca != NULL) {
        X509_STORE *store = SSL_CTX_get_cert_store(ctx);
        if (rp_read_trusted_file(o->tls_ca, "\"tls_ca\" file", 0, &ca, err) != 0) goto fail;
        bio = BIO_new_mem_buf(ca, -1);
        while (bio != NULL && (x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
            if (X509_STORE_add_cert(store, x) == 1) count++;
            X509_free(x);
        }
        ERR_clear_error();
        BIO_free(bio);
        bio = NULL;
        if (count == 0) {
            fail(err, "replicate: \"tls_ca\" file \"%.300s\" holds no PEM certificate", o->tls_ca);
            goto fail;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        fail(err, "replicate: cannot load the system's certificate authorities (give \"tls_ca\")");
        goto fail;
    }
    if ((o->tls_cert == NULL) != (o->tls_key == NULL)) {
        fail(err, "replicate: \"tls_cert\" and \"tls_key\" go together (a client certificate and its key)");
        goto fail;
    }
    if (o->tls_cert != NULL) {
        if (rp_read_trusted_file(o->tls_cert, "\"tls_cert\" file", 0, &cert, err) != 0) goto fail;
        if (rp_read_trusted_file(o->tls_key, "\"tls_key\" file", 1, &key, err) != 0) goto fail;
        bio = BIO_new_mem_buf(cert, -1);
        x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
        if (x == NULL || SSL_CTX_use_certificate(ctx, x) != 1) {
            tls_error(why, sizeof why, "no PEM certificate");
            fail(err, "replicate: \"tls_cert\" file \"%.300s\" cannot be used: %s", o->tls_cert, why);
            goto fail;
        }
        X509_free(x);
        /* The rest of the chain. */
        while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
            if (SSL_CTX_add0_chain_cert(ctx, x) != 1) X509_free(x);
        }
        ERR_clear_error();
        BIO_free(bio);
        bio = BIO_new_mem_buf(key, -1);
        pkey = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
        if (pkey == NULL || SSL_CTX_use_PrivateKey(ctx, pkey) != 1 || SSL_CTX_check_private_key(ctx) != 1) {
            tls_error(why, sizeof why, "no PEM private key");
            fail(err, "replicate: \"tls_key\" file \"%.300s\" cannot be used with \"tls_cert\": %s", o->tls_key, why);
            goto fail;
        }
        EVP_PKEY_free(pkey);
        pkey = NULL;
        BIO_free(bio);
        bio = NULL;
    }
    free(ca);
    free(cert);
    free_secret(key);
    return ctx;
fail:
    if (pkey) EVP_PKEY_free(pkey);
    if (bio) BIO_free(bio);
    free(ca);
    free(cert);
    free_secret(key);
    SSL_CTX_free(ctx);
    return NULL;
}

static void redis_close(rp_engine *base);

rp_engine *rp_redis_open(const rp_options *o, char *err) {
    const char *url = o->url, *rest, *colon, *at;
    size_t host_length, prefix;
    int secure = strncmp(url, "rediss://", 9) == 0;
    rd *e;
    /* Messages name the URL without its user information: never a password. */
    if (!secure && strncmp(url, "redis://", 8) != 0) {
        fail(err, "replicate: \"url\" must look like redis://[USER:PASSWORD@]HOST[:PORT], and does not start "
                  "with redis://");
        return NULL;
    }
    prefix = secure ? 9 : 8;
    rest = url + prefix;
    at = strrchr(rest, '@');
    if (at != NULL && memchr(rest, ':', (size_t)(at - rest)) == NULL) {
        fail(err, "replicate: the user information in \"url\" must be USER:PASSWORD or :PASSWORD (redis://:PASSWORD@HOST)");
        return NULL;
    }
    if (at != NULL) rest = at + 1;
    colon = strrchr(rest, ':');
    host_length = colon ? (size_t)(colon - rest) : strlen(rest);
    if (host_length == 0 || host_length >= 256 || strchr(rest, '/') != NULL || strchr(rest, ',') != NULL) {
        fail(err, "replicate: \"url\" must look like %s://[USER:PASSWORD@]HOST[:PORT], not \"%s://%s%.200s\"",
             secure ? "rediss" : "redis", secure ? "rediss" : "redis", at ? "***@" : "", rest);
        return NULL;
    }
    if (!secure && (o->tls_ca || o->tls_cert || o->tls_key)) {
        fail(err, "replicate: \"tls_ca\", \"tls_cert\" and \"tls_key\" need a TLS url (rediss://), not redis://");
        return NULL;
    }
    e = calloc(1, sizeof *e);
    if (e == NULL) {
        fail(err, "replicate: out of memory");
        return NULL;
    }
    e->base.ops = &redis_ops;
    e->fd = -1;
    e->scheme = secure ? "rediss" : "redis";
    if (at != NULL) {
        const char *info = url + prefix, *sep = memchr(info, ':', (size_t)(at - info));
        e->user = sep > info ? copy_of(info, (size_t)(sep - info)) : NULL;
        e->password = copy_of(sep + 1, (size_t)(at - sep - 1));
        if (e->password == NULL || (sep > info && e->user == NULL)) {
            fail(err, "replicate: out of memory");
            redis_close(&e->base);
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
            redis_close(&e->base); /* and the user and password copied above */
            return NULL;
        }
        e->port = (int)port;
    }
    e->stream = concat(o->stream, "");
    e->seq_key = concat(o->stream, ":seq");
    e->snap_key = concat(o->stream, ":snap");
    e->ids_key = concat(o->stream, ":ids");
    e->append_script = concat(APPEND_HELPERS, APPEND_BODY);
    e->many_script = concat(APPEND_HELPERS, MANY_BODY);
    if (!e->stream || !e->seq_key || !e->snap_key || !e->ids_key || !e->append_script || !e->many_script) {
        fail(err, "replicate: out of memory");
        redis_close(&e->base);
        return NULL;
    }
    if (secure && (e->tls = tls_context(o, err)) == NULL) {
        redis_close(&e->base);
        return NULL;
    }
    e->timeout_ms = o->timeout_ms;
    return &e->base;
}

static void drop(rd *e) {
    if (e->ssl) SSL_free(e->ssl); /* no close_notify: the connection is given up */
    if (e->fd >= 0) close(e->fd);
    if (e->reader) redisReaderFree(e->reader);
    e->ssl = NULL;
    e->fd = -1;
    e->reader = NULL;
}

static void redis_close(rp_engine *base) {
    rd *e = (rd *)base;
    if (e == NULL) return;
    drop(e);
    if (e->tls) SSL_CTX_free(e->tls);
    free(e->user);
    free_secret(e->password);
    free(e->stream);
    free(e->seq_key);
    free(e->snap_key);
    free(e->ids_key);
    free(e->append_script);
    free(e->many_script);
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

/* ---- The connection: a socket, maybe TLS, and hiredis's reply parser ------- */

/* Every read and write of the socket gives up after `ms` (then errno is
 * EAGAIN: a timeout). */
static void socket_timeout(int fd, int ms) {
    struct timeval tv = tv_of(ms);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* A TCP connection to host:port within timeout_ms: the socket, or -1 with
 * why in `why`. */
static int tcp_connect(const rd *e, char *why, size_t size) {
    struct addrinfo hints, *list = NULL, *a;
    char port[8];
    int fd = -1, rc;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof port, "%d", e->port);
    rc = getaddrinfo(e->host, port, &hints, &list);
    if (rc != 0) {
        snprintf(why, size, "%s", gai_strerror(rc));
        return -1;
    }
    snprintf(why, size, "no address");
    for (a = list; a != NULL; a = a->ai_next) {
        struct pollfd p;
        int so = 0, flags;
        socklen_t length = sizeof so;
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) {
            snprintf(why, size, "%s", strerror(errno));
            continue;
        }
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        flags = fcntl(fd, F_GETFL);
        fcntl(fd, F_SETFL, flags | O_NONBLOCK);
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            if (errno != EINPROGRESS) {
                snprintf(why, size, "%s", strerror(errno));
                close(fd);
                fd = -1;
                continue;
            }
            p.fd = fd;
            p.events = POLLOUT;
            p.revents = 0;
            do rc = poll(&p, 1, e->timeout_ms);
            while (rc < 0 && errno == EINTR);
            if (rc == 0) so = ETIMEDOUT;
            else if (rc < 0) so = errno;
            else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &length) != 0) so = errno;
            if (so != 0) {
                snprintf(why, size, "%s", strerror(so));
                close(fd);
                fd = -1;
                continue;
            }
        }
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
        rc = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &rc, sizeof rc);
        break;
    }
    freeaddrinfo(list);
    return fd;
}

/* Runs an SSL call (writing: 0 SSL_read, 1 SSL_write, 2 SSL_connect) with SIGPIPE blocked on this thread (a write to a closed
 * connection must not kill the program) and any SIGPIPE it raised taken. */
static int no_sigpipe_ssl(rd *e, int writing, void *buffer, int length) {
    sigset_t pipe, old, pending;
    int n, was_pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigpending(&pending);
    was_pending = sigismember(&pending, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old);
    n = writing == 2 ? SSL_connect(e->ssl) : writing ? SSL_write(e->ssl, buffer, length) : SSL_read(e->ssl, buffer, length);
    if (!was_pending) {
        struct timespec zero = {0, 0};
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE)) sigtimedwait(&pipe, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return n;
}

/* An I/O error on the connection: timed_out and errstr. Always -1. */
static int io_error(rd *e, int ssl_result, int n) {
    int error = errno;
    e->timed_out = 0;
    if (e->ssl != NULL && n <= 0) {
        int code = SSL_get_error(e->ssl, ssl_result);
        if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE ||
            (code == SSL_ERROR_SYSCALL && (error == EAGAIN || error == EWOULDBLOCK))) {
            e->timed_out = 1;
            snprintf(e->errstr, sizeof e->errstr, "%s", strerror(EAGAIN));
        } else if (code == SSL_ERROR_ZERO_RETURN || (code == SSL_ERROR_SYSCALL && n == 0)) {
            snprintf(e->errstr, sizeof e->errstr, "Server closed the connection");
        } else if (code == SSL_ERROR_SSL) {
            tls_error(e->errstr, sizeof e->errstr, "TLS error");
        } else {
            snprintf(e->errstr, sizeof e->errstr, "%s", error ? strerror(error) : "connection lost");
        }
        ERR_clear_error();
        return -1;
    }
    if (n == 0) {
        snprintf(e->errstr, sizeof e->errstr, "Server closed the connection");
    } else {
        e->timed_out = error == EAGAIN || error == EWOULDBLOCK;
        snprintf(e->errstr, sizeof e->errstr, "%s", strerror(error));
    }
    return -1;
}

/* Writes all of buffer: 0, or -1 (io_error). */
static int write_all(rd *e, const char *buffer, size_t length) {
    while (length > 0) {
        int chunk = length > (1 << 30) ? (1 << 30) : (int)length;
        long n;
        errno = 0;
        if (e->ssl != NULL) {
            n = no_sigpipe_ssl(e, 1, (void *)buffer, chunk);
            if (n <= 0) return io_error(e, (int)n, (int)n);
        } else {
            n = send(e->fd, buffer, (size_t)chunk, MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) return io_error(e, 0, -1);
        }
        buffer += n;
        length -= (size_t)n;
    }
    return 0;
}

/* Sends one command (formatted by hiredis). 0 or -1. */
static int send_command(rd *e, int argc, const char **argv, const size_t *lengths) {
    char *command = NULL;
    int length = redisFormatCommandArgv(&command, argc, argv, lengths), rc;
    if (length < 0) {
        e->timed_out = 0;
        snprintf(e->errstr, sizeof e->errstr, "out of memory");
        return -1;
    }
    rc = write_all(e, command, (size_t)length);
    redisFreeCommand(command);
    return rc;
}

/* The next reply (a redisReply, freeReplyObject): 0, or -1 (io_error; a
 * malformed reply: "protocol error"). */
static int get_reply(rd *e, void **reply) {
    char buffer[16384];
    *reply = NULL;
    for (;;) {
        long n;
        if (redisReaderGetReply(e->reader, reply) != REDIS_OK) {
            e->timed_out = 0;
            snprintf(e->errstr, sizeof e->errstr, "protocol error: %.200s", e->reader->errstr);
            return -1;
        }
        if (*reply != NULL) {
            e->answered = 1;
            return 0;
        }
        errno = 0;
        if (e->ssl != NULL) {
            n = no_sigpipe_ssl(e, 0, buffer, (int)sizeof buffer);
            if (n <= 0) return io_error(e, (int)n, (int)n);
        } else {
            n = recv(e->fd, buffer, sizeof buffer, 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return io_error(e, 0, (int)n);
        }
        if (redisReaderFeed(e->reader, buffer, (size_t)n) != REDIS_OK) {
            e->timed_out = 0;
            snprintf(e->errstr, sizeof e->errstr, "protocol error: %.200s", e->reader->errstr);
            return -1;
        }
    }
}

/* 1 when host is an IPv4 or IPv6 address. */
static int is_ip(const char *host) {
    unsigned char address[16];
    return inet_pton(AF_INET, host, address) == 1 || inet_pton(AF_INET6, host, address) == 1;
}

/* The TLS handshake on e->fd: 0, or -1 with a message. */
static int tls_handshake(rd *e, char *err) {
    char why[256];
    int rc;
    e->ssl = SSL_new(e->tls);
    if (e->ssl == NULL || SSL_set_fd(e->ssl, e->fd) != 1) {
        fail(err, "replicate: cannot start TLS to rediss://%s:%d (OpenSSL)", e->host, e->port);
        return -1;
    }
    /* The server's certificate must name the url's host (or hold its IP). */
    if (is_ip(e->host)) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(e->ssl), e->host);
    } else {
        SSL_set_tlsext_host_name(e->ssl, e->host);
        X509_VERIFY_PARAM_set1_host(SSL_get0_param(e->ssl), e->host, 0);
    }
    rc = no_sigpipe_ssl(e, 2, NULL, 0);
    if (rc == 1) return 0;
    if (SSL_get_verify_result(e->ssl) != X509_V_OK) {
        fail(err, "replicate: rediss://%s:%d: TLS: the server's certificate was refused: %s (is \"tls_ca\" the "
                  "authority that signed it?)",
             e->host, e->port, X509_verify_cert_error_string(SSL_get_verify_result(e->ssl)));
    } else {
        io_error(e, rc, rc);
        snprintf(why, sizeof why, "%s", e->errstr);
        fail(err, "replicate: rediss://%s:%d: the TLS handshake failed: %s%s", e->host, e->port,
             e->timed_out ? "no answer within timeout_ms" : why,
             e->timed_out ? " (does the server speak TLS on that port?)"
                          : " (does the server speak TLS on that port? redis:// is plain text)");
    }
    ERR_clear_error();
    return -1;
}

/* The next attempt to connect, pushed back (50 ms doubling to 2 s). */
static void back_off(rd *e) {
    e->backoff_ms = e->backoff_ms ? (e->backoff_ms * 2 > 2000 ? 2000 : e->backoff_ms * 2) : 50;
    clock_gettime(CLOCK_MONOTONIC, &e->next_attempt);
    e->next_attempt.tv_sec += e->backoff_ms / 1000;
    e->next_attempt.tv_nsec += (long)(e->backoff_ms % 1000) * 1000000L;
    if (e->next_attempt.tv_nsec >= 1000000000L) {
        e->next_attempt.tv_sec++;
        e->next_attempt.tv_nsec -= 1000000000L;
    }
}

/* Connected, or -1 with a message (and the next attempt pushed back). */
static int connected(rd *e, char *err) {
    char why[256];
    long wait;
    if (e->fd >= 0) return 0;
    wait = e->backoff_ms ? ms_until(&e->next_attempt) : 0;
    if (wait > 0) {
        fail(err, "replicate: %s://%s:%d is unreachable; reconnecting (next attempt in %ld ms)", e->scheme, e->host,
             e->port, wait);
        return -1;
    }
    e->fd = tcp_connect(e, why, sizeof why);
    if (e->fd < 0) {
        fail(err, "replicate: cannot connect to %s://%s:%d: %s", e->scheme, e->host, e->port, why);
        back_off(e);
        return -1;
    }
    socket_timeout(e->fd, e->timeout_ms);
    e->current_timeout_ms = e->timeout_ms;
    e->answered = 0;
    e->reader = redisReaderCreate();
    if (e->reader == NULL) {
        fail(err, "replicate: out of memory");
        drop(e);
        return -1;
    }
    if (e->tls != NULL && tls_handshake(e, err) != 0) {
        drop(e);
        back_off(e);
        return -1;
    }
    if (e->password != NULL) {
        /* AUTH [USER] PASSWORD: the server's ACL user, or requirepass. */
        const char *argv[3];
        size_t lengths[3];
        int argc = 0;
        void *reply = NULL;
        redisReply *r;
        argv[argc++] = "AUTH";
        if (e->user) argv[argc++] = e->user;
        argv[argc++] = e->password;
        for (int i = 0; i < argc; i++) lengths[i] = strlen(argv[i]);
        if (send_command(e, argc, argv, lengths) != 0 || get_reply(e, &reply) != 0) {
            fail(err, "replicate: %s://%s:%d did not answer AUTH: %s%s", e->scheme, e->host, e->port,
                 e->timed_out ? "no answer within timeout_ms" : e->errstr,
                 e->tls == NULL && !e->answered ? " (if the server speaks TLS only, use rediss://)" : "");
            drop(e);
            back_off(e);
            return -1;
        }
        r = reply;
        if (r->type == REDIS_REPLY_ERROR) {
            char text[300];
            snprintf(text, sizeof text, "%.200s", r->str ? r->str : "");
            for (char *c = text; *c; c++) if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) *c = '?';
            fail(err, "replicate: %s://%s:%d refused the credentials in \"url\" (AUTH%s): %s", e->scheme, e->host,
                 e->port, e->user ? " as that user" : "", text);
            freeReplyObject(r);
            drop(e);
            return -1;
        }
        freeReplyObject(r);
    }
    e->backoff_ms = 0;
    e->info.connections++;
    return 0;
}
/* Text from the server for a message: at most `max` bytes, bytes outside
 * printable ASCII as '?'. */
static void clean(char *out, size_t size, const char *text, size_t max) {
    size_t i;
    for (i = 0; text[i] && i < max && i + 1 < size; i++) {
        unsigned char c = (unsigned char)text[i];
        out[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    out[i] = '\0';
}

/* The message and result of a failed exchange (no reply). */
static int failure(rd *e, int timeout_ms, char *err) {
    if (e->timed_out) {
        fail(err, "replicate: %s://%s:%d did not answer within %d ms (timeout_ms)", e->scheme, e->host, e->port,
             timeout_ms);
    } else {
        fail(err, "replicate: %s://%s:%d: %s%s", e->scheme, e->host, e->port, e->errstr[0] ? e->errstr : "connection lost",
             e->tls == NULL && !e->answered ? " (if the server speaks TLS only, use rediss://)" : "");
    }
    /* The reply may still come: drop the connection. Reconnect at once on
     * the next call; backoff only if that fails. */
    drop(e);
    return RP_FAILED;
}

/* An error reply: RP_DAMAGED for the scripts' "TSDAMAGED ..." and for
 * WRONGTYPE (a key of the log holds another type), else RP_FAILED. */
static int error_reply(rd *e, const redisReply *r, char *err) {
    char text[400];
    clean(text, sizeof text, r->str ? r->str : "", 380);
    if (strncmp(text, "TSDAMAGED ", 10) == 0) {
        fail(err, "replicate: stream \"%.200s\" is damaged: %s", e->stream, text + 10);
        return RP_DAMAGED;
    }
    if (strncmp(text, "WRONGTYPE", 9) == 0) {
        fail(err, "replicate: stream \"%.200s\" is damaged: a key of it (\"%.100s\", \"%.100s\" or \"%.100s\") holds "
                  "another type (%s://%s:%d answered: %.200s)",
             e->stream, e->stream, e->seq_key, e->snap_key, e->scheme, e->host, e->port, text);
        return RP_DAMAGED;
    }
    fail(err, "replicate: %s://%s:%d answered: %s", e->scheme, e->host, e->port, text);
    return RP_FAILED;
}

static void set_timeout(rd *e, int timeout_ms) {
    if (timeout_ms != e->current_timeout_ms) {
        socket_timeout(e->fd, timeout_ms);
        e->current_timeout_ms = timeout_ms;
    }
}

/* One command; NULL with *rc and a message on failure (an error reply is
 * freed). */
static redisReply *command(rd *e, int timeout_ms, int argc, const char **argv, const size_t *lengths, int *rc,
                           char *err) {
    void *reply = NULL;
    redisReply *r;
    *rc = RP_FAILED;
    if (connected(e, err) != 0) return NULL;
    set_timeout(e, timeout_ms);
    if (send_command(e, argc, argv, lengths) != 0 || get_reply(e, &reply) != 0) {
        failure(e, timeout_ms, err);
        return NULL;
    }
    r = reply;
    if (r->type == REDIS_REPLY_ERROR) {
        *rc = error_reply(e, r, err);
        freeReplyObject(r);
        return NULL;
    }
    *rc = 0;
    return r;
}

/* A command and then GET of the counter, pipelined: the server runs the GET
 * right after the command (after a blocking command, once it returns). 0 with
 * both replies (*counter may be an error reply), or a failure. */
static int with_counter(rd *e, int timeout_ms, int argc, const char **argv, const size_t *lengths,
                        redisReply **reply, redisReply **counter, char *err) {
    const char *get[2] = {"GET", e->seq_key};
    size_t get_lengths[2] = {3, strlen(e->seq_key)};
    void *r = NULL, *c = NULL;
    int rc;
    *reply = *counter = NULL;
    if (connected(e, err) != 0) return RP_FAILED;
    set_timeout(e, timeout_ms);
    if (send_command(e, argc, argv, lengths) != 0 || send_command(e, 2, get, get_lengths) != 0 ||
        get_reply(e, &r) != 0 || get_reply(e, &c) != 0) {
        if (r) freeReplyObject(r);
        return failure(e, timeout_ms, err);
    }
    *reply = r;
    *counter = c;
    if ((*reply)->type == REDIS_REPLY_ERROR || (*counter)->type == REDIS_REPLY_ERROR) {
        rc = error_reply(e, (*reply)->type == REDIS_REPLY_ERROR ? *reply : *counter, err);
        freeReplyObject(*reply);
        freeReplyObject(*counter);
        *reply = *counter = NULL;
        return rc;
    }
    return 0;
}

static int unexpected(rd *e, const char *what, char *err) {
    fail(err, "replicate: %s://%s:%d: unexpected answer to %s", e->scheme, e->host, e->port, what);
    return RP_FAILED;
}

/* Entries of an XRANGE reply into *out (entry.h checks each). On RP_DAMAGED
 * *out keeps the entries before the damaged one; on RP_FAILED it is empty. */
static int parse_entries(rd *e, const redisReply *r, rp_batch *out, char *err) {
    size_t i, k;
    out->items = NULL;
    out->count = 0;
    if (r->type == REDIS_REPLY_NIL) return 0;
    if (r->type != REDIS_REPLY_ARRAY) return unexpected(e, "XRANGE", err);
    if (r->elements == 0) return 0;
    out->items = calloc(r->elements, sizeof *out->items);
    if (out->items == NULL) {
        fail(err, "replicate: out of memory");
        return RP_FAILED;
    }
    for (i = 0; i < r->elements; i++) {
        const redisReply *entry = r->element[i], *fields;
        rp_text id, *texts = NULL;
        size_t count = 0;
        int rc;
        if (entry->type != REDIS_REPLY_ARRAY || entry->elements != 2 || entry->element[0]->type != REDIS_REPLY_STRING) {
            rp_batch_free(out);
            return unexpected(e, "XRANGE", err);
        }
        id.str = entry->element[0]->str;
        id.len = entry->element[0]->len;
        fields = entry->element[1];
        if (fields->type == REDIS_REPLY_ARRAY && fields->elements > 0) {
            count = fields->elements;
            texts = calloc(count, sizeof *texts);
            if (texts == NULL) {
                rp_batch_free(out);
                fail(err, "replicate: out of memory");
                return RP_FAILED;
            }
            for (k = 0; k < count; k++) {
                if (fields->element[k]->type != REDIS_REPLY_STRING) continue; /* str NULL: not text */
                texts[k].str = fields->element[k]->str;
                texts[k].len = fields->element[k]->len;
            }
        }
        rc = rp_parse_entry(e->stream, id, texts, count, &out->items[out->count], err);
        free(texts);
        if (rc == RP_FAILED) rp_batch_free(out);
        if (rc != 0) return rc;
        out->count++;
    }
    return 0;
}

/* parse_entries, then rp_check_counter: the earlier damage is the one told. */
static int parse_counted(rd *e, const redisReply *r, const redisReply *counter, rp_batch *out, char *err) {
    char counter_err[RP_ERR_SIZE];
    rp_text c = {NULL, 0};
    int rc = parse_entries(e, r, out, err);
    if (rc == RP_FAILED) return rc;
    if (counter->type == REDIS_REPLY_STRING) {
        c.str = counter->str;
        c.len = counter->len;
    } else if (counter->type != REDIS_REPLY_NIL) {
        rp_batch_free(out);
        return unexpected(e, "GET", err);
    }
    if (c.str != NULL) {
        uint64_t head;
        if (rp_parse_seq(c, &head)) e->info.head = head;
    }
    if (rp_check_counter(e->stream, out, c, counter_err) != 0) {
        memcpy(err, counter_err, RP_ERR_SIZE);
        return RP_DAMAGED;
    }
    return rc;
}

/* Loads a script (SCRIPT LOAD) once per connection: then EVALSHA sends 40
 * bytes instead of the script. */
static int load_script(rd *e, const char *script, char sha[41], char *err) {
    const char *argv[3] = {"SCRIPT", "LOAD", script};
    size_t lengths[3];
    int i, rc;
    redisReply *r;
    for (i = 0; i < 3; i++) lengths[i] = strlen(argv[i]);
    r = command(e, e->timeout_ms, 3, argv, lengths, &rc, err);
    if (r == NULL) return rc;
    if (r->type != REDIS_REPLY_STRING || r->len != 40) {
        freeReplyObject(r);
        return unexpected(e, "SCRIPT LOAD", err);
    }
    memcpy(sha, r->str, 41);
    freeReplyObject(r);
    return 0;
}

/* EVALSHA of a script (argv[1] is filled in). */
static redisReply *script(rd *e, const char *text, char sha[41], int argc, const char **argv, int *rc,
                          char *err) {
    size_t *lengths;
    int i;
    redisReply *r;
    if (e->fd < 0) e->append_sha[0] = e->snapshot_get_sha[0] = e->many_sha[0] = '\0'; /* a new connection: maybe a new server */
    if (sha[0] == '\0' && (*rc = load_script(e, text, sha, err)) != 0) return NULL;
    argv[1] = sha;
    lengths = malloc(sizeof *lengths * (size_t)argc);
    if (lengths == NULL) {
        fail(err, "replicate: out of memory");
        *rc = RP_FAILED;
        return NULL;
    }
    for (i = 0; i < argc; i++) lengths[i] = strlen(argv[i]);
    r = command(e, e->timeout_ms, argc, argv, lengths, rc, err);
    free(lengths);
    /* NOSCRIPT (the server restarted without its script cache): load it
     * again next time. Not retried here: the caller sees the failure. */
    if (r == NULL && strstr(err, "NOSCRIPT")) sha[0] = '\0';
    return r;
}

/* The append script: "check", or "append" of actions[0..count-1]. */
static int append_or_check(rd *e, const char *const *actions, size_t count, const char *after, uint64_t seq,
                           const char *mode, rp_batch *out, char *err) {
    char n[24];
    const char **argv;
    size_t i;
    int rc;
    redisReply *r;
    out->items = NULL;
    out->count = 0;
    if (count > 100000) {
        fail(err, "replicate: an append of more than 100,000 actions at once");
        return RP_FAILED;
    }
    argv = malloc(sizeof *argv * (10 + count));
    if (argv == NULL) {
        fail(err, "replicate: out of memory");
        return RP_FAILED;
    }
    snprintf(n, sizeof n, "%llu", (unsigned long long)seq);
    argv[0] = "EVALSHA"; argv[1] = NULL; argv[2] = "3"; argv[3] = e->stream; argv[4] = e->seq_key;
    argv[5] = e->snap_key; argv[6] = count > 0 ? actions[0] : ""; argv[7] = after; argv[8] = n; argv[9] = mode;
    for (i = 1; i < count; i++) argv[9 + i] = actions[i];
    r = script(e, e->append_script, e->append_sha, (int)(count > 1 ? 9 + count : 10), argv, &rc, err);
    free(argv);
    if (r == NULL) return rc;
    if (strcmp(mode, "check") == 0) {
        rc = r->type == REDIS_REPLY_INTEGER && r->integer == 0 ? 0 : unexpected(e, "the check script", err);
    } else {
        rc = parse_entries(e, r, out, err);
        if (rc == 0 && out->count < count) rc = unexpected(e, "the append script (too few entries)", err);
        /* This call's entries: the last `count`, contiguous. */
        for (i = 0; rc == 0 && i < count; i++) out->items[out->count - count + i].mine = (int)i + 1;
        if (rc == 0) e->info.head = out->items[out->count - 1].seq;
        if (rc != 0) rp_batch_free(out);
    }
    freeReplyObject(r);
    return rc;
}

static int redis_append_batch(rp_engine *base, const char *const *actions, size_t count, const char *after,
                              uint64_t seq, rp_batch *out, char *err) {
    return append_or_check((rd *)base, actions, count, after, seq, "append", out, err);
}

static int redis_check(rp_engine *base, const char *after, uint64_t seq, char *err) {
    rp_batch none;
    return append_or_check((rd *)base, NULL, 0, after, seq, "check", &none, err);
}

/* Entries per script call of rp_append_many (the calls of one batch are
 * pipelined: sent together, then their answers read in order). */
#define MANY_CHUNK 256

static int redis_append_many(rp_engine *base, const char *origin, uint64_t first, size_t count,
                             const char *const *entries, uint64_t seq, size_t *done, char *err) {
    rd *e = (rd *)base;
    char n[24], mine[24];
    const char **argv;
    size_t *lengths, off, chunks = 0;
    int rc = 0, loaded;
    *done = 0;
    if (count == 0) return 0;
    if (e->fd < 0) e->append_sha[0] = e->snapshot_get_sha[0] = e->many_sha[0] = '\0'; /* a new connection */
    if (e->many_sha[0] == '\0' && (loaded = load_script(e, e->many_script, e->many_sha, err)) != 0) return loaded;
    if (connected(e, err) != 0) return RP_FAILED;
    argv = malloc((MANY_CHUNK + 10) * sizeof *argv);
    lengths = malloc((MANY_CHUNK + 10) * sizeof *lengths);
    if (argv == NULL || lengths == NULL) {
        free(argv);
        free(lengths);
        fail(err, "replicate: out of memory");
        return RP_FAILED;
    }
    snprintf(mine, sizeof mine, "%llu", (unsigned long long)seq);
    set_timeout(e, e->timeout_ms);
    /* Send every chunk, then read the answers (each a short array: the
     * server's output cannot fill while this side is still writing). */
    for (off = 0; off < count; off += MANY_CHUNK) {
        size_t k = count - off < MANY_CHUNK ? count - off : MANY_CHUNK, i;
        snprintf(n, sizeof n, "%llu", (unsigned long long)(first + off));
        argv[0] = "EVALSHA"; argv[1] = e->many_sha; argv[2] = "4"; argv[3] = e->stream; argv[4] = e->seq_key;
        argv[5] = e->snap_key; argv[6] = e->ids_key; argv[7] = origin; argv[8] = n; argv[9] = mine;
        for (i = 0; i < 10; i++) lengths[i] = strlen(argv[i]);
        for (i = 0; i < k; i++) {
            argv[10 + i] = entries[off + i];
            lengths[10 + i] = strlen(entries[off + i]);
        }
        if (send_command(e, (int)(10 + k), argv, lengths) != 0) {
            free(argv);
            free(lengths);
            return failure(e, e->timeout_ms, err);
        }
        chunks++;
    }
    free(argv);
    free(lengths);
    for (off = 0; off < chunks; off++) {
        void *reply = NULL;
        redisReply *r;
        size_t k = count - off * MANY_CHUNK < MANY_CHUNK ? count - off * MANY_CHUNK : MANY_CHUNK;
        if (get_reply(e, &reply) != 0) return failure(e, e->timeout_ms, err);
        r = reply;
        /* After a failed chunk the next ones are refused too (their first
         * number is past what the log holds): the first failure is told. */
        if (rc == 0) {
            if (r->type == REDIS_REPLY_ERROR) {
                rc = error_reply(e, r, err);
                if (strstr(err, "NOSCRIPT")) e->many_sha[0] = '\0';
            } else if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 && r->element[0]->type == REDIS_REPLY_INTEGER) {
                e->info.head = (uint64_t)r->element[0]->integer;
                *done += k;
            } else {
                rc = unexpected(e, "the append script", err);
            }
        }
        freeReplyObject(r);
    }
    return rc;
}

static void redis_info(const rp_engine *base, rp_engine_info *out) { *out = ((const rd *)base)->info; }

static int redis_read(rp_engine *base, const char *after, size_t max, rp_batch *out, char *err) {
    rd *e = (rd *)base;
    char from[RP_POS_SIZE + 1], count[24];
    const char *argv[6];
    size_t lengths[6];
    int i, rc;
    redisReply *r, *counter;
    out->items = NULL;
    out->count = 0;
    if (after[0]) snprintf(from, sizeof from, "(%s", after);
    else snprintf(from, sizeof from, "-");
    snprintf(count, sizeof count, "%zu", max);
    argv[0] = "XRANGE"; argv[1] = e->stream; argv[2] = from; argv[3] = "+"; argv[4] = "COUNT"; argv[5] = count;
    for (i = 0; i < 6; i++) lengths[i] = strlen(argv[i]);
    rc = with_counter(e, e->timeout_ms, 6, argv, lengths, &r, &counter, err);
    if (rc != 0) return rc;
    rc = parse_counted(e, r, counter, out, err);
    freeReplyObject(r);
    freeReplyObject(counter);
    return rc;
}

static int redis_wait(rp_engine *base, const char *after, int block_ms, size_t max, rp_batch *out, char *err) {
    rd *e = (rd *)base;
    char block[24], count[24];
    const char *argv[8];
    size_t lengths[8];
    int i, rc = 0;
    redisReply *r, *counter;
    out->items = NULL;
    out->count = 0;
    snprintf(block, sizeof block, "%d", block_ms);
    snprintf(count, sizeof count, "%zu", max);
    argv[0] = "XREAD"; argv[1] = "COUNT"; argv[2] = count; argv[3] = "BLOCK"; argv[4] = block;
    argv[5] = "STREAMS"; argv[6] = e->stream; argv[7] = after[0] ? after : "0-0";
    for (i = 0; i < 8; i++) lengths[i] = strlen(argv[i]);
    rc = with_counter(e, block_ms + e->timeout_ms, 8, argv, lengths, &r, &counter, err);
    if (rc != 0) return rc;
    e->info.waited_counter = 0;
    if (counter->type == REDIS_REPLY_STRING) {
        rp_text c;
        c.str = counter->str;
        c.len = counter->len;
        if (!rp_parse_seq(c, &e->info.waited_counter)) e->info.waited_counter = 0;
    }
    /* [[stream, entries]] or nil when the time ran out. */
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 && r->element[0]->type == REDIS_REPLY_ARRAY &&
        r->element[0]->elements == 2) {
        rc = parse_counted(e, r->element[0]->element[1], counter, out, err);
    } else if (r->type != REDIS_REPLY_NIL) {
        rc = unexpected(e, "XREAD", err);
    }
    freeReplyObject(r);
    freeReplyObject(counter);
    return rc;
}

static rp_text text_of(const redisReply *r) {
    rp_text t = {NULL, 0};
    if (r->type == REDIS_REPLY_STRING) {
        t.str = r->str;
        t.len = r->len;
    }
    return t;
}

/* The first entry of a list reply (XRANGE), parsed into *out: 1, 0 when the
 * list is empty, or a failure. */
static int first_entry(rd *e, const redisReply *list, rp_entry *out, char *err) {
    rp_batch b;
    int rc = parse_entries(e, list, &b, err);
    if (rc != 0) {
        rp_batch_free(&b);
        return rc;
    }
    if (b.count == 0) return 0;
    *out = b.items[0];
    b.items[0].action = NULL;
    rp_batch_free(&b);
    return 1;
}

static int redis_snapshot_get(rp_engine *base, int *found, char **state, char pos[RP_POS_SIZE], uint64_t *seq,
                              char *err) {
    rd *e = (rd *)base;
    const char *argv[6] = {"EVALSHA", NULL, "3", e->snap_key, e->stream, e->seq_key};
    rp_entry at, after;
    int rc, has_at = 0, has_after = 0;
    redisReply *r;
    *found = 0;
    *state = NULL;
    r = script(e, SNAPSHOT_GET_SCRIPT, e->snapshot_get_sha, 6, argv, &rc, err);
    if (r == NULL) return rc;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 6) {
        freeReplyObject(r);
        return unexpected(e, "the snapshot script", err);
    }
    rc = rp_parse_snapshot(e->stream, text_of(r->element[0]), text_of(r->element[1]), text_of(r->element[2]), found,
                           state, pos, seq, err);
    if (rc == 0 && *found) {
        has_at = first_entry(e, r->element[4], &at, err);
        has_after = has_at < 0 ? 0 : first_entry(e, r->element[5], &after, err);
        if (has_at < 0 || has_after < 0) rc = has_at < 0 ? has_at : has_after;
        else rc = rp_check_snapshot(e->stream, *seq, pos, text_of(r->element[3]), has_at ? &at : NULL,
                                    has_after ? &after : NULL, err);
        if (has_at > 0) free(at.action);
        if (has_after > 0) free(after.action);
    }
    freeReplyObject(r);
    if (rc != 0) {
        free(*state);
        *state = NULL;
        *found = 0;
    }
    return rc;
}

static int redis_snapshot_put(rp_engine *base, const char *state, const char *pos, uint64_t seq, int *stored,
                              char *err) {
    rd *e = (rd *)base;
    char n[24];
    const char *argv[8];
    size_t lengths[8];
    int i, rc;
    redisReply *r;
    snprintf(n, sizeof n, "%llu", (unsigned long long)seq);
    argv[0] = "EVAL"; argv[1] = SNAPSHOT_SCRIPT; argv[2] = "2"; argv[3] = e->snap_key; argv[4] = e->stream;
    argv[5] = state; argv[6] = pos; argv[7] = n;
    for (i = 0; i < 8; i++) lengths[i] = strlen(argv[i]);
    r = command(e, e->timeout_ms, 8, argv, lengths, &rc, err);
    if (r == NULL) return rc;
    *stored = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    freeReplyObject(r);
    return 0;
}

static const rp_ops redis_ops = {
    redis_close,  redis_append_batch, redis_check,        redis_read,         redis_wait,
    redis_append_many, redis_info, redis_snapshot_get, redis_snapshot_put,
};
