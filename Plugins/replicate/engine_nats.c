/*
 * engine_nats.c - engine.h on NATS JetStream (nats-server 2.9 or newer, the
 * C client nats.c 3.4: Debian's nats-server and libnats-dev).
 *
 * For a log named S (letters, digits, '-' and '_'):
 *   the stream S       subject "replicate.S"; limits retention without any
 *                      limit, file storage, `replicas` replicas (3 by
 *                      default), a de-duplication window of 2 minutes, and
 *                      the description "replicate.so log ID", ID a random
 *                      number drawn by the replica that made it: the log's
 *                      id (a stream without it was not made by replicate.so
 *                      and is refused)
 *   an entry           a message: its position and number are its stream
 *                      sequence (entry.h), its data the action, its header
 *                      "Ts-Log" the log's id
 *   the bucket S_snap  a key-value bucket (history 1, the same replicas),
 *                      key "snapshot": "ID SEQ\n" and the state (entry.h)
 *
 * The order is the stream's: JetStream gives each message the next sequence
 * once a quorum of the stream's servers has stored it, and answers the
 * publisher then (an acknowledged entry survives the loss of a minority of
 * them). An append sends each action with a message id of its own
 * (Nats-Msg-Id, unique to this engine); when an attempt gets no answer (a
 * server died, a leader is being elected) it sends the same message again
 * until timeout_ms has passed, and the stream's de-duplication window keeps
 * it once: a retried append is applied once. Then the appender reads, from
 * its ordered consumer (a cursor on the stream that the client library
 * makes again after a failure), every entry from its position to its own.
 * The snapshot is stored by compare-and-set on the key's revision (never
 * over a newer one); the stream is then purged before the previous
 * snapshot's entry, as Redis trims.
 *
 * A damaged log: a message without the header, or with another log's id
 * (the stream deleted and made again under running replicas), an empty
 * action or one with a NUL byte, a stream whose last sequence is behind what
 * a replica applied (reset), entries deleted from the middle (the stream
 * counts them: NumDeleted), a snapshot of another log or ahead of the
 * stream, a stream of that name that replicate.so did not make: RP_DAMAGED.
 * JetStream keeps no counter apart from its sequence, and numbers messages
 * itself: the Redis rows about the counter and numbers used twice do not
 * arise. A message cannot be put back once deleted: a damaged JetStream log
 * is repaired by starting a new one (README.md).
 *
 * The url: nats://[USER:PASSWORD@|TOKEN@]HOST[:PORT][,HOST[:PORT]...] (port
 * 4222 by default), tls:// for TLS (tls_ca, tls_cert, tls_key; the server's
 * certificate must name the host when every server of the url has the same
 * host). The client connects to one of them and fails over to the others
 * (and to the servers the cluster tells it of). Messages never show the
 * user information.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include "engine.h"

#include <nats/nats.h>

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The ordered consumer's idle heartbeat: a consumer lost with its server is
 * made again after two of them are missed. */
#define HEARTBEAT_NS 500000000LL
/* A cursor further behind than this is made again at the position instead
 * of skipping what it holds. */
#define SKIP_MAX 20000
/* How long one attempt of an append waits for its acknowledgement, at most. */
#define ATTEMPT_MS 500
/* The most actions one append sends. */
#define BATCH_MAX 100000
/* Appends of several actions: the most actions, and bytes, one message
 * carries (entry.h; a larger action goes alone), and never more than the
 * server's max_payload less HEADER_ROOM (NATS's default is 1 MiB). */
#define PARTS_PER_MESSAGE 256
#define BYTES_PER_MESSAGE (256u << 10)
/* What a message's headers take at most (Nats-Msg-Id, Ts-Log, Ts-Parts,
 * Nats-Expected-Stream with a name of up to 200 bytes). */
#define HEADER_ROOM 1024u
#define SNAPSHOT_KEY "snapshot"
#define DESCRIPTION "replicate.so log "

typedef struct nats_engine {
    rp_engine base;
    char *stream, *subject, *bucket;
    char *shown; /* the url without user information, for messages */
    int timeout_ms, replicas;
    natsConnection *nc;
    jsCtx *js;
    kvStore *kv;
    uint64_t log_id;
    /* The cursor: an ordered consumer; `next` is the sequence after the
     * last message it gave (the first it can give). */
    natsSubscription *cursor;
    uint64_t next;
    /* Acknowledgements come to inbox.N. */
    natsInbox *inbox;
    natsSubscription *acks;
    char id_prefix[40];
    uint64_t id_counter, attempt;
    /* rp_wait looks at the stream itself when it has been quiet this long
     * (a stream deleted or purged gives the cursor nothing to tell). */
    int64_t looked_at;
    int looked_damaged;
    /* The highest sequence an acknowledgement or a read told (rp_info). */
    uint64_t head;
} nt;

#define QUIET_LOOK_MS 5000

static const rp_ops nats_ops;

static void nats_close(rp_engine *base);

/* ---- Time ------------------------------------------------------------------ */

static int64_t now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int64_t left_ms(int64_t deadline) {
    int64_t left = deadline - now_ms();
    return left > 0 ? left : 0;
}

/* ---- Messages ------------------------------------------------------------------ */

/* The last error of the client library, for a message (never credentials:
 * the library is given them apart from the servers' URLs). */
static const char *why(natsStatus s) {
    const char *text = nats_GetLastError(NULL);
    return text != NULL && text[0] != '\0' ? text : natsStatus_GetText(s);
}

static int failed(nt *e, char *err, natsStatus s, const char *what) {
    if (s == NATS_TIMEOUT) {
        rp_fail(err, "replicate: %s did not answer within %d ms (timeout_ms) (%s)", e->shown, e->timeout_ms, what);
    } else {
        rp_fail(err, "replicate: %s: %s: %.300s", e->shown, what, why(s));
    }
    return RP_FAILED;
}

static int damaged(nt *e, char *err, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int damaged(nt *e, char *err, const char *format, ...) {
    va_list args;
    int n = snprintf(err, RP_ERR_SIZE, "replicate: stream \"%.200s\" is damaged: ", e->stream);
    if (n > 0 && n < RP_ERR_SIZE) {
        va_start(args, format);
        vsnprintf(err + n, RP_ERR_SIZE - (size_t)n, format, args);
        va_end(args);
    }
    return RP_DAMAGED;
}

/* ---- Opening ------------------------------------------------------------------ */

/* A random 64-bit number (the log's id, message ids). */
static uint64_t random64(void) {
    uint64_t v = 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, &v, sizeof v) != (ssize_t)sizeof v) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        v = ((uint64_t)t.tv_sec * 1000000007ULL) ^ (uint64_t)t.tv_nsec ^ ((uint64_t)getpid() << 32);
    }
    if (fd >= 0) close(fd);
    return v;
}

static int valid_name(const char *name) {
    size_t i;
    if (name[0] == '\0' || strlen(name) > 200) return 0;
    for (i = 0; name[i]; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
            return 0;
    }
    return 1;
}

/* The url's servers: into servers[] ("nats://HOST:PORT" or tls://), the
 * user information into *user and *password (or *token), the shown url
 * into e->shown. 0, or -1 with a message. */
static int parse_url(nt *e, const char *url, char ***servers, int *count, char **user, char **password, char **token,
                     char **host_of_all, char *err) {
    int secure = strncmp(url, "tls://", 6) == 0;
    const char *scheme = secure ? "tls://" : "nats://", *rest = url + strlen(scheme), *at;
    size_t shown_length = 0, capacity = 8;
    char *copy, *item, *save = NULL;
    int first = 1, same_host = 1;
    *servers = NULL;
    *count = 0;
    *user = *password = *token = *host_of_all = NULL;
    /* User information: before the first '@' of the first server. */
    at = strchr(rest, '@');
    if (at != NULL && (memchr(rest, ',', (size_t)(at - rest)) != NULL || memchr(rest, '/', (size_t)(at - rest)))) at = NULL;
    if (at != NULL) {
        const char *colon = memchr(rest, ':', (size_t)(at - rest));
        if (at == rest || (colon != NULL && (colon == rest || colon + 1 == at))) {
            rp_fail(err, "replicate: the user information in \"url\" must be USER:PASSWORD or TOKEN "
                         "(%sUSER:PASSWORD@HOST)",
                    scheme);
            return -1;
        }
        if (colon != NULL) {
            *user = strndup(rest, (size_t)(colon - rest));
            *password = strndup(colon + 1, (size_t)(at - colon - 1));
        } else {
            *token = strndup(rest, (size_t)(at - rest));
        }
        rest = at + 1;
    }
    copy = strdup(rest);
    *servers = calloc(capacity, sizeof **servers);
    e->shown = malloc(strlen(url) + 16);
    if (copy == NULL || *servers == NULL || e->shown == NULL) {
        free(copy);
        rp_fail(err, "replicate: out of memory");
        return -1;
    }
    shown_length = (size_t)sprintf(e->shown, "%s%s", scheme, at ? "***@" : "");
    for (item = strtok_r(copy, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        char *colon, host[256], *server;
        long port = 4222;
        size_t host_length;
        /* Each server may repeat the scheme. */
        if (strncmp(item, scheme, strlen(scheme)) == 0) item += strlen(scheme);
        colon = strrchr(item, ':');
        host_length = colon ? (size_t)(colon - item) : strlen(item);
        if (host_length == 0 || host_length >= sizeof host || strpbrk(item, "/@ ") != NULL ||
            (colon != NULL && item[0] == '[' && colon[-1] != ']')) {
            rp_fail(err, "replicate: \"url\" must look like %s[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...], not "
                         "\"%s%s%.200s\"",
                    scheme, scheme, at ? "***@" : "", rest);
            free(copy);
            return -1;
        }
        if (colon) {
            char *end;
            port = strtol(colon + 1, &end, 10);
            if (*end != '\0' || end == colon + 1 || port < 1 || port > 65535) {
                rp_fail(err, "replicate: the port in \"url\" must be a number from 1 to 65535, not \"%.50s\"",
                        colon + 1);
                free(copy);
                return -1;
            }
        }
        memcpy(host, item, host_length);
        host[host_length] = '\0';
        if (*count == (int)capacity) {
            char **more = realloc(*servers, sizeof **servers * capacity * 2);
            if (more == NULL) {
                free(copy);
                rp_fail(err, "replicate: out of memory");
                return -1;
            }
            *servers = more;
            capacity *= 2;
        }
        server = malloc(strlen(scheme) + host_length + 8);
        if (server == NULL) {
            free(copy);
            rp_fail(err, "replicate: out of memory");
            return -1;
        }
        sprintf(server, "%s%s:%ld", scheme, host, port);
        (*servers)[(*count)++] = server;
        if (first) {
            *host_of_all = strdup(host);
        } else if (*host_of_all == NULL || strcmp(*host_of_all, host) != 0) {
            same_host = 0;
        }
        shown_length += (size_t)sprintf(e->shown + shown_length, "%s%s:%ld", first ? "" : ",", host, port);
        first = 0;
    }
    free(copy);
    if (*count == 0) {
        rp_fail(err, "replicate: \"url\" must name at least one server (%sHOST[:PORT][,HOST[:PORT]...])", scheme);
        return -1;
    }
    if (!same_host) {
        free(*host_of_all);
        *host_of_all = NULL;
    }
    return 0;
}

static void free_secret(char *secret) {
    if (secret == NULL) return;
    for (volatile char *p = secret; *p; p++) *p = 0;
    free(secret);
}

/* How long opening may take to make the stream and the bucket and see them
 * served (a new R3 stream elects its leader first): timeout_ms, at least 10 s. */
#define OPEN_MIN_MS 10000

/* Info of the stream, asked again while it has no leader yet (just made,
 * or electing one) until `deadline`. */
static natsStatus stream_info_by(nt *e, jsStreamInfo **si, int64_t deadline, jsErrCode *code) {
    for (;;) {
        natsStatus s;
        *si = NULL;
        s = js_GetStreamInfo(si, e->js, e->stream, NULL, code);
        if ((s != NATS_TIMEOUT && s != NATS_NO_RESPONDERS) || left_ms(deadline) == 0) return s;
        usleep(50000);
    }
}

/* The log's subject: replicate.STREAM.ID. A replica of an earlier stream of
 * that name publishes to its own log's subject, which the new stream does
 * not take: it cannot write into another log. */
static int set_subject(nt *e, char *err) {
    char subject[300];
    snprintf(subject, sizeof subject, "replicate.%s.%llu", e->stream, (unsigned long long)e->log_id);
    free(e->subject);
    e->subject = strdup(subject);
    if (e->subject == NULL) {
        rp_fail(err, "replicate: out of memory");
        return RP_FAILED;
    }
    return 0;
}

/* The log's id in a stream's description (0: not made by replicate.so). */
static uint64_t id_of(const jsStreamInfo *si) {
    const char *description = si->Config != NULL ? si->Config->Description : NULL;
    unsigned long long id = 0;
    char tail;
    if (description == NULL || strncmp(description, DESCRIPTION, strlen(DESCRIPTION)) != 0 ||
        sscanf(description + strlen(DESCRIPTION), "%llu%c", &id, &tail) != 1)
        return 0;
    return id;
}

/* The stream: made if it is missing; its description gives the log's id.
 * 0, or RP_FAILED / RP_DAMAGED (a stream replicate.so did not make). */
static int open_stream(nt *e, int64_t deadline, char *err) {
    jsStreamInfo *si = NULL;
    jsErrCode code = 0;
    natsStatus s = stream_info_by(e, &si, deadline, &code);
    char made[64];
    if (s == NATS_NOT_FOUND) {
        jsStreamConfig config;
        const char *subjects[1];
        jsStreamConfig_Init(&config);
        /* A new log: an id of its own (never 0). */
        e->log_id = (random64() >> 1) | 1;
        if (set_subject(e, err) != 0) return RP_FAILED;
        subjects[0] = e->subject;
        config.Name = e->stream;
        snprintf(made, sizeof made, DESCRIPTION "%llu", (unsigned long long)e->log_id);
        config.Description = made;
        config.Subjects = subjects;
        config.SubjectsLen = 1;
        config.Retention = js_LimitsPolicy;
        config.Storage = js_FileStorage;
        config.Replicas = e->replicas;
        config.Duplicates = 120LL * 1000000000LL;
        s = js_AddStream(&si, e->js, &config, NULL, &code);
        if (s != NATS_OK && (code == JSStreamNameExistErr || s == NATS_TIMEOUT)) {
            /* Another replica made it first, with another id; or the answer
             * was slow: ask what is there. */
            s = stream_info_by(e, &si, deadline, &code);
        }
        if (s != NATS_OK) {
            rp_fail(err, "replicate: %s: cannot make the stream \"%.200s\" (replicas %d): %.300s", e->shown, e->stream,
                    e->replicas, why(s));
            return RP_FAILED;
        }
    } else if (s != NATS_OK) {
        return failed(e, err, s, "stream info");
    }
    e->log_id = id_of(si);
    if (e->log_id == 0) {
        jsStreamInfo_Destroy(si);
        return damaged(e, err, "the stream was not made by replicate.so (its description is not \"" DESCRIPTION
                               "ID\"): use another \"stream\"");
    }
    if (set_subject(e, err) != 0) {
        jsStreamInfo_Destroy(si);
        return RP_FAILED;
    }
    if (si->Config->SubjectsLen != 1 || strcmp(si->Config->Subjects[0], e->subject) != 0 ||
        si->Config->Retention != js_LimitsPolicy || si->Config->MaxMsgs > 0 || si->Config->MaxBytes > 0 ||
        si->Config->MaxAge > 0 || si->Config->MaxMsgsPerSubject > 0) {
        jsStreamInfo_Destroy(si);
        return damaged(e, err, "its configuration was changed: replicate.so needs the one subject \"%.200s\", limits "
                               "retention and no limit on messages, bytes or age",
                       e->subject);
    }
    jsStreamInfo_Destroy(si);
    return 0;
}

static int open_bucket(nt *e, int64_t deadline, char *err) {
    natsStatus s;
    kvEntry *entry = NULL;
    do {
        s = js_KeyValue(&e->kv, e->js, e->bucket);
    } while ((s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS) && left_ms(deadline) > 0 && usleep(50000) == 0);
    if (s == NATS_NOT_FOUND) {
        kvConfig config;
        kvConfig_Init(&config);
        config.Bucket = e->bucket;
        config.History = 1;
        config.StorageType = js_FileStorage;
        config.Replicas = e->replicas;
        s = js_CreateKeyValue(&e->kv, e->js, &config);
        if (s != NATS_OK) {
            s = js_KeyValue(&e->kv, e->js, e->bucket); /* made by another replica meanwhile */
        }
    }
    if (s != NATS_OK) {
        e->kv = NULL;
        rp_fail(err, "replicate: %s: cannot open the key-value bucket \"%.200s\": %.300s", e->shown, e->bucket, why(s));
        return RP_FAILED;
    }
    /* Served: a read answers (a bucket just made elects its leader first). */
    for (;;) {
        s = kvStore_Get(&entry, e->kv, SNAPSHOT_KEY);
        if (entry != NULL) kvEntry_Destroy(entry);
        entry = NULL;
        if (s == NATS_OK || s == NATS_NOT_FOUND || left_ms(deadline) == 0) break;
        usleep(50000);
    }
    return 0;
}

/* The message of a connection that failed. */
static void connect_failure(nt *e, natsStatus s, char *err) {
    const char *text = why(s);
    if (s == NATS_CONNECTION_AUTH_FAILED || strstr(text, "Authorization") != NULL) {
        rp_fail(err, "replicate: %s refused the credentials in \"url\": %.300s", e->shown, text);
    } else if (s == NATS_SECURE_CONNECTION_REQUIRED) {
        rp_fail(err, "replicate: cannot connect to %s: the server requires TLS (use tls://, with \"tls_ca\")", e->shown);
    } else if (s == NATS_SSL_ERROR && strncmp(e->shown, "nats://", 7) == 0) {
        rp_fail(err, "replicate: cannot connect to %s: the server requires TLS (use tls://, with \"tls_ca\"): %.300s",
                e->shown, text);
    } else if (s == NATS_SSL_ERROR) {
        rp_fail(err, "replicate: cannot connect to %s: TLS: %.300s (is \"tls_ca\" the authority that signed the "
                     "server's certificate, and does the server speak TLS?)",
                e->shown, text);
    } else if (strncmp(e->shown, "tls://", 6) == 0 && (s == NATS_NO_SERVER || s == NATS_IO_ERROR || s == NATS_TIMEOUT)) {
        rp_fail(err, "replicate: cannot connect to %s: %.300s (does the server speak TLS on that port?)", e->shown, text);
    } else {
        rp_fail(err, "replicate: cannot connect to %s: %.300s", e->shown, text);
    }
}

rp_engine *rp_nats_open(const rp_options *o, char *err) {
    char **servers = NULL, *user = NULL, *password = NULL, *token = NULL, *host = NULL, *ca = NULL, *cert = NULL,
         *key = NULL, subject[300];
    int count = 0, i, secure = strncmp(o->url, "tls://", 6) == 0;
    natsOptions *options = NULL;
    natsStatus s;
    jsOptions jo;
    nt *e;
    rp_engine *opened = NULL;
    if (!valid_name(o->stream)) {
        rp_fail(err, "replicate: with NATS, \"stream\" must be 1 to 200 letters, digits, '-' or '_' (a JetStream "
                     "stream's name), not \"%.200s\"",
                o->stream);
        return NULL;
    }
    if (!secure && (o->tls_ca || o->tls_cert || o->tls_key)) {
        rp_fail(err, "replicate: \"tls_ca\", \"tls_cert\" and \"tls_key\" need a TLS url (tls://), not nats://");
        return NULL;
    }
    if ((o->tls_cert == NULL) != (o->tls_key == NULL)) {
        rp_fail(err, "replicate: \"tls_cert\" and \"tls_key\" go together (a client certificate and its key)");
        return NULL;
    }
    e = calloc(1, sizeof *e);
    if (e == NULL) {
        rp_fail(err, "replicate: out of memory");
        return NULL;
    }
    e->base.ops = &nats_ops;
    e->timeout_ms = o->timeout_ms;
    e->replicas = o->replicas > 0 ? o->replicas : 3;
    e->stream = strdup(o->stream);
    snprintf(subject, sizeof subject, "%s_snap", o->stream);
    e->bucket = strdup(subject);
    snprintf(e->id_prefix, sizeof e->id_prefix, "%016llx", (unsigned long long)random64());
    if (e->stream == NULL || e->bucket == NULL) {
        rp_fail(err, "replicate: out of memory");
        goto out;
    }
    if (parse_url(e, o->url, &servers, &count, &user, &password, &token, &host, err) != 0) goto out;
    if (secure) {
        if (o->tls_ca != NULL && rp_read_trusted_file(o->tls_ca, "\"tls_ca\" file", 0, &ca, err) != 0) goto out;
        if (o->tls_cert != NULL && (rp_read_trusted_file(o->tls_cert, "\"tls_cert\" file", 0, &cert, err) != 0 ||
                                    rp_read_trusted_file(o->tls_key, "\"tls_key\" file", 1, &key, err) != 0))
            goto out;
    }
    s = natsOptions_Create(&options);
    if (s == NATS_OK) s = natsOptions_SetServers(options, (const char **)servers, count);
    if (s == NATS_OK) s = natsOptions_SetName(options, "replicate.so");
    if (s == NATS_OK) s = natsOptions_SetTimeout(options, o->timeout_ms);
    if (s == NATS_OK) s = natsOptions_SetAllowReconnect(options, true);
    if (s == NATS_OK) s = natsOptions_SetMaxReconnect(options, -1);
    if (s == NATS_OK) s = natsOptions_SetReconnectWait(options, 100);
    if (s == NATS_OK) s = natsOptions_SetReconnectJitter(options, 100, 200);
    /* A server that died without closing the connection: found within ~3 s. */
    if (s == NATS_OK) s = natsOptions_SetPingInterval(options, 1000);
    if (s == NATS_OK) s = natsOptions_SetMaxPingsOut(options, 2);
    /* Publish now (an append waits for its answer). */
    if (s == NATS_OK) s = natsOptions_SetSendAsap(options, true);
    if (s == NATS_OK && user != NULL) s = natsOptions_SetUserInfo(options, user, password);
    if (s == NATS_OK && token != NULL) s = natsOptions_SetToken(options, token);
    if (s == NATS_OK && secure) s = natsOptions_SetSecure(options, true);
    if (s == NATS_OK && ca != NULL) s = natsOptions_SetCATrustedCertificates(options, ca);
    if (s == NATS_OK && cert != NULL) s = natsOptions_SetCertificatesChain(options, cert, key);
    /* The server's certificate must name the host (when one host serves them all). */
    if (s == NATS_OK && secure && host != NULL) s = natsOptions_SetExpectedHostname(options, host);
    if (s != NATS_OK) {
        rp_fail(err, "replicate: %s: %s%.300s", e->shown,
                ca != NULL || cert != NULL ? "the TLS files cannot be used: " : "", why(s));
        goto out;
    }
    s = natsConnection_Connect(&e->nc, options);
    if (s != NATS_OK) {
        e->nc = NULL;
        connect_failure(e, s, err);
        goto out;
    }
    jsOptions_Init(&jo);
    jo.Wait = o->timeout_ms;
    s = natsConnection_JetStream(&e->js, e->nc, &jo);
    if (s == NATS_OK) s = natsInbox_Create(&e->inbox);
    if (s == NATS_OK) {
        snprintf(subject, sizeof subject, "%s.*", e->inbox);
        s = natsConnection_SubscribeSync(&e->acks, e->nc, subject);
    }
    if (s == NATS_OK) s = natsSubscription_SetPendingLimits(e->acks, -1, -1);
    if (s != NATS_OK) {
        failed(e, err, s, "JetStream");
        goto out;
    }
    {
        int64_t deadline = now_ms() + (o->timeout_ms > OPEN_MIN_MS ? o->timeout_ms : OPEN_MIN_MS);
        if (open_stream(e, deadline, err) != 0 || open_bucket(e, deadline, err) != 0) goto out;
    }
    opened = &e->base;
out: /* failed, or opened (`opened`): free what only the opening needed */
    for (i = 0; i < count; i++) free(servers[i]);
    free(servers);
    free(user);
    free_secret(password);
    free_secret(token);
    free(host);
    free(ca);
    free(cert);
    free_secret(key);
    if (options) natsOptions_Destroy(options);
    if (opened == NULL) nats_close(&e->base);
    return opened;
}

static void drop_cursor(nt *e) {
    if (e->cursor != NULL) {
        natsSubscription_Unsubscribe(e->cursor);
        natsSubscription_Destroy(e->cursor);
        e->cursor = NULL;
    }
}

static void nats_close(rp_engine *base) {
    nt *e = (nt *)base;
    if (e == NULL) return;
    drop_cursor(e);
    if (e->acks) natsSubscription_Destroy(e->acks);
    if (e->kv) kvStore_Destroy(e->kv);
    if (e->js) jsCtx_Destroy(e->js);
    if (e->nc) {
        natsConnection_Close(e->nc);
        natsConnection_Destroy(e->nc);
    }
    if (e->inbox) natsInbox_Destroy(e->inbox);
    free(e->stream);
    free(e->subject);
    free(e->bucket);
    free(e->shown);
    free(e);
}

/* ---- The cursor --------------------------------------------------------------- */

/* A new ordered consumer from sequence `start`. */
static int open_cursor(nt *e, uint64_t start, char *err) {
    jsSubOptions so;
    jsOptions jo;
    jsErrCode code = 0;
    natsStatus s;
    drop_cursor(e);
    jsSubOptions_Init(&so);
    jsOptions_Init(&jo);
    jo.Wait = e->timeout_ms;
    so.Stream = e->stream;
    so.Ordered = true;
    so.Config.DeliverPolicy = js_DeliverByStartSequence;
    so.Config.OptStartSeq = start > 0 ? start : 1;
    so.Config.Heartbeat = HEARTBEAT_NS;
    s = js_SubscribeSync(&e->cursor, e->js, e->subject, &jo, &so, &code);
    if (s != NATS_OK) {
        e->cursor = NULL;
        return failed(e, err, s, "ordered consumer");
    }
    natsSubscription_SetPendingLimits(e->cursor, -1, 256 * 1024 * 1024);
    e->next = so.Config.OptStartSeq;
    return 0;
}

/* The cursor gives, next, the entries after sequence `after` (skipping what
 * it holds before them, or made again). */
static int seek(nt *e, uint64_t after, char *err) {
    if (e->cursor == NULL || e->next > after + 1 || after + 1 - e->next > SKIP_MAX) return open_cursor(e, after + 1, err);
    return 0;
}

/* The next message of the cursor within `wait_ms` (0: what it holds now):
 * 1 with *msg and *seq, 0 when none came, or RP_FAILED. */
static int cursor_next(nt *e, int64_t wait_ms, natsMsg **msg, uint64_t *seq, char *err) {
    for (;;) {
        jsMsgMetaData *meta = NULL;
        natsStatus s = natsSubscription_NextMsg(msg, e->cursor, wait_ms > 0 ? wait_ms : 0);
        if (s == NATS_TIMEOUT) {
            return 0;
        }
        if (s != NATS_OK) {
            drop_cursor(e);
            return failed(e, err, s, "reading the stream");
        }
        /* Heartbeats and flow control (no reply subject) are the library's. */
        if (natsMsg_GetReply(*msg) == NULL || natsMsg_GetMetaData(&meta, *msg) != NATS_OK) {
            natsMsg_Destroy(*msg);
            wait_ms = 0;
            continue;
        }
        *seq = meta->Sequence.Stream;
        jsMsgMetaData_Destroy(meta);
        e->next = *seq + 1;
        return 1;
    }
}

/* Adds a message to a batch as an entry (checked). 0, RP_DAMAGED (not
 * added) or RP_FAILED. */
static int add_entry(nt *e, rp_batch *out, size_t *capacity, natsMsg *msg, uint64_t seq, char *err) {
    rp_text log = {NULL, 0}, parts = {NULL, 0}, data;
    const char *value = NULL;
    size_t count = 1, i;
    int rc;
    if (natsMsgHeader_Get(msg, "Ts-Log", &value) == NATS_OK && value != NULL) {
        log.str = value;
        log.len = strlen(value);
    }
    value = NULL;
    if (natsMsgHeader_Get(msg, "Ts-Parts", &value) == NATS_OK && value != NULL) {
        parts.str = value;
        parts.len = strlen(value);
    }
    data.str = natsMsg_GetData(msg);
    data.len = (size_t)natsMsg_GetDataLength(msg);
    /* A message of several actions: checked whole, then one entry each. */
    if ((rc = rp_count_parts(e->stream, seq, parts, data, &count, err)) != 0) return rc;
    if (out->count + count > *capacity) {
        size_t more = *capacity ? *capacity * 2 : 16;
        rp_entry *items;
        while (more < out->count + count) more *= 2;
        if ((items = realloc(out->items, sizeof *items * more)) == NULL) {
            rp_fail(err, "replicate: out of memory");
            return RP_FAILED;
        }
        out->items = items;
        *capacity = more;
    }
    for (i = 0; i < count; i++) {
        rp_text part = data;
        const char *end = count > 1 ? memchr(data.str, '\0', data.len) : NULL;
        if (end != NULL) part.len = (size_t)(end - data.str);
        rc = rp_parse_message(e->stream, seq, log, e->log_id, part, &out->items[out->count + i], err);
        if (rc != 0) {
            /* None of the message's entries: it is applied whole or not. */
            while (i > 0) free(out->items[out->count + --i].action);
            return rc;
        }
        out->items[out->count + i].part = (uint32_t)i;
        out->items[out->count + i].parts = (uint32_t)count;
        if (end != NULL) {
            data.str = end + 1;
            data.len -= part.len + 1;
        }
    }
    out->count += count;
    if (seq > e->head) e->head = seq;
    return 0;
}

/* Entries after `after` from the cursor into *out: at most `max`, until
 * sequence `until` has been given (0: none awaited), waiting for the first
 * up to `first_ms` and for each further one `more_ms` (until set: up to the
 * deadline). 0, RP_DAMAGED (*out: the entries before the damage) or
 * RP_FAILED (*out freed). */
static int take(nt *e, uint64_t after, uint64_t until, size_t max, int64_t first_ms, int64_t deadline, rp_batch *out,
                size_t *capacity, char *err) {
    int rc = seek(e, after, err);
    if (rc != 0) return rc;
    while (out->count < max && (until == 0 || e->next <= until)) {
        natsMsg *msg = NULL;
        uint64_t seq = 0;
        int64_t wait = until ? left_ms(deadline) : (out->count == 0 ? first_ms : 0);
        rc = cursor_next(e, wait, &msg, &seq, err);
        if (rc == 0) {
            if (until != 0) return failed(e, err, NATS_TIMEOUT, "reading the stream back");
            return 0;
        }
        if (rc < 0) return rc;
        rc = seq > after ? add_entry(e, out, capacity, msg, seq, err) : 0; /* at or before `after`: applied */
        natsMsg_Destroy(msg);
        if (rc != 0) return rc;
    }
    return 0;
}

static uint64_t seq_of(const char *pos) {
    return pos[0] ? strtoull(pos, NULL, 10) : 0;
}

/* The stream's state: its first and last sequences, checked (the log's id,
 * no entry deleted from the middle, not behind `applied`). */
static int stream_state(nt *e, uint64_t applied, uint64_t *first, uint64_t *last, char *err) {
    jsStreamInfo *si = NULL;
    jsErrCode code = 0;
    uint64_t id = 0;
    natsStatus s = js_GetStreamInfo(&si, e->js, e->stream, NULL, &code);
    if (s == NATS_NOT_FOUND) {
        return damaged(e, err, "the stream was deleted (this replica has applied entry %llu)",
                       (unsigned long long)applied);
    }
    if (s != NATS_OK) return failed(e, err, s, "stream info");
    id = id_of(si);
    if (id != e->log_id) {
        jsStreamInfo_Destroy(si);
        return damaged(e, err, "the stream is not the log %llu this replica joined (it was deleted and made again%s)",
                       (unsigned long long)e->log_id, id ? "" : ", not by replicate.so");
    }
    *first = si->State.FirstSeq;
    *last = si->State.LastSeq;
    if (*last > e->head) e->head = *last;
    if (si->State.NumDeleted > 0) {
        uint64_t deleted = si->State.NumDeleted;
        jsStreamInfo_Destroy(si);
        return damaged(e, err, "%llu of its entries were deleted from the middle (between %llu and %llu): a JetStream "
                               "log cannot be repaired in place; start a new log",
                       (unsigned long long)deleted, (unsigned long long)*first, (unsigned long long)*last);
    }
    jsStreamInfo_Destroy(si);
    if (applied > *last) {
        return damaged(e, err, "this replica has applied entry %llu but the stream's last entry is %llu: the log was "
                               "reset (purged, or deleted and made again)",
                       (unsigned long long)applied, (unsigned long long)*last);
    }
    return 0;
}

/* ---- The engine's functions ------------------------------------------------------ */

/* Parses an acknowledgement ({"stream":"S","seq":N[,"duplicate":true]} or
 * {"error":{...,"description":"..."}}): 1 with *seq, 0 with a message. */
static int parse_ack(natsMsg *msg, uint64_t *seq, char *why_out, size_t size) {
    const char *data = natsMsg_GetData(msg), *p;
    int length = natsMsg_GetDataLength(msg);
    char text[512];
    if (natsMsg_IsNoResponders(msg)) {
        snprintf(why_out, size, "no responders (no server of the stream is reachable)");
        return 0;
    }
    snprintf(text, sizeof text, "%.*s", length > 500 ? 500 : length, data ? data : "");
    if ((p = strstr(text, "\"description\":\"")) != NULL) {
        const char *end = strchr(p + 15, '"');
        snprintf(why_out, size, "%.*s", end ? (int)(end - p - 15) : 200, p + 15);
        return 0;
    }
    if ((p = strstr(text, "\"seq\":")) == NULL || sscanf(p + 6, "%llu", (unsigned long long *)seq) != 1 || *seq == 0) {
        snprintf(why_out, size, "an answer that is no acknowledgement: %.100s", text);
        return 0;
    }
    return 1;
}

/* Sends an entry with message id `msg_id` (attempt number in the reply
 * subject): `length` bytes of data, carrying `parts` actions (more than 1:
 * the header "Ts-Parts", entry.h). */
static natsStatus send_with_id(nt *e, const char *data, size_t length, size_t parts, const char *msg_id,
                               uint64_t attempt) {
    char reply[200], log[24], count[24];
    natsMsg *msg = NULL;
    natsStatus s;
    snprintf(reply, sizeof reply, "%s.%llu", e->inbox, (unsigned long long)attempt);
    snprintf(log, sizeof log, "%llu", (unsigned long long)e->log_id);
    s = natsMsg_Create(&msg, e->subject, reply, data, (int)length);
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Nats-Msg-Id", msg_id);
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Ts-Log", log);
    if (s == NATS_OK && parts > 1) {
        snprintf(count, sizeof count, "%zu", parts);
        s = natsMsgHeader_Set(msg, "Ts-Parts", count);
    }
    if (s == NATS_OK) s = natsMsgHeader_Set(msg, "Nats-Expected-Stream", e->stream);
    if (s == NATS_OK) s = natsConnection_PublishMsg(e->nc, msg);
    natsMsg_Destroy(msg);
    return s;
}

/* What an append sends: `count` messages, message i holding texts[i]
 * (lengths[i] bytes; lengths NULL: a C string) with the message id
 * "<prefix><sep><first + i>", or, with `numbers`, the actions numbered
 * numbers[i] to numbers[i] + parts[i] - 1 with the id "<prefix>:<N>" (one
 * action) or "<prefix>:<N>+<parts>" (several: Ts-Parts). */
typedef struct outgoing {
    const char *const *texts;
    const size_t *lengths;
    const uint64_t *numbers;
    const size_t *parts;
    size_t count;
    const char *prefix;
    char sep;
    uint64_t first;
} outgoing;

/* One attempt of an append (nats_append_batch, nats_append_many): sends
 * each message that has no sequence number yet, as a new attempt. Stops at
 * the first send that fails and returns its status. */
static natsStatus send_round(nt *e, const outgoing *o, const uint64_t *seqs, uint64_t *attempts) {
    natsStatus s = NATS_OK;
    char msg_id[100];
    size_t i;
    for (i = 0; i < o->count && s == NATS_OK; i++) {
        size_t parts = o->parts ? o->parts[i] : 1;
        if (seqs[i] != 0) continue;
        attempts[i] = ++e->attempt;
        if (o->numbers == NULL)
            snprintf(msg_id, sizeof msg_id, "%s%c%llu", o->prefix, o->sep, (unsigned long long)(o->first + i));
        else if (parts == 1)
            snprintf(msg_id, sizeof msg_id, "%s:%llu", o->prefix, (unsigned long long)o->numbers[i]);
        else
            snprintf(msg_id, sizeof msg_id, "%s:%llu+%zu", o->prefix, (unsigned long long)o->numbers[i], parts);
        s = send_with_id(e, o->texts[i], o->lengths ? o->lengths[i] : strlen(o->texts[i]), parts, msg_id,
                         attempts[i]);
    }
    return s;
}

/* What next_ack() took. */
enum { ACK_STOP, ACK_OTHER, ACK_STORED, ACK_REFUSED, ACK_FATAL };

/* Takes the next acknowledgement of an attempt, waiting until attempt_end.
 * ACK_STOP: none came in time (send again what is missing), or no server
 * takes the subject now (a stream leader is being elected, or the stream is
 * gone): `reason` says so, after a pause. Otherwise *index is the entry it
 * answers (`count`: none of those waiting, ACK_OTHER); ACK_STORED: stored as
 * number *n, *duplicate when the stream held its id already; ACK_REFUSED:
 * refused (`reason`), the entry's attempt cleared so that it is sent again;
 * ACK_FATAL: the same, but sending again cannot help (too large, or another
 * stream). */
static int next_ack(nt *e, int64_t attempt_end, size_t count, const uint64_t *seqs, uint64_t *attempts,
                    size_t *index, uint64_t *n, int *duplicate, char *reason, size_t reason_size) {
    natsMsg *msg = NULL;
    uint64_t which;
    size_t i;
    int got = ACK_OTHER;
    natsStatus s = natsSubscription_NextMsg(&msg, e->acks, left_ms(attempt_end));
    if (s == NATS_NO_RESPONDERS) {
        snprintf(reason, reason_size, "no responders (no server of the stream is reachable)");
        usleep(50000);
        return ACK_STOP;
    }
    if (s != NATS_OK) return ACK_STOP;
    which = strtoull(natsMsg_GetSubject(msg) + strlen(e->inbox) + 1, NULL, 10);
    /* Attempt numbers grow with the index within one round. */
    for (i = 0; i < count; i++)
        if (attempts[i] == which && seqs[i] == 0) break;
    if (i < count) {
        if (parse_ack(msg, n, reason, reason_size)) {
            const char *data = natsMsg_GetData(msg);
            *duplicate = data != NULL && strstr(data, "\"duplicate\":true") != NULL;
            got = ACK_STORED;
        } else {
            attempts[i] = 0;
            got = strstr(reason, "maximum payload") || strstr(reason, "expected stream") ? ACK_FATAL : ACK_REFUSED;
        }
    }
    natsMsg_Destroy(msg);
    *index = i;
    return got;
}

/* Sends the messages of `o` and takes
 * their acknowledgements, attempt after attempt (each ATTEMPT_MS at most),
 * sending again what an attempt left without one, until each has its
 * sequence number in seqs[] or `deadline` has passed. *acked counts those
 * acknowledged; stored() is told each acknowledgement as it comes, with its
 * number and whether the stream held its id already. Returns 1 when an entry
 * was refused for good (`reason` says why), else 0 (`reason`: the last
 * failure, if any). */
static int append_rounds(nt *e, const outgoing *o, int64_t deadline, uint64_t *seqs, uint64_t *attempts,
                         size_t *acked, void (*stored)(void *ctx, uint64_t n, int duplicate), void *ctx, char *reason,
                         size_t reason_size) {
    size_t count = o->count;
    size_t i;
    while (*acked < count) {
        int64_t attempt_end;
        natsStatus s = NATS_OK;
        if (left_ms(deadline) == 0) break;
        s = send_round(e, o, seqs, attempts);
        if (s != NATS_OK) {
            snprintf(reason, reason_size, "%.280s", why(s));
            if (s == NATS_MAX_PAYLOAD || s == NATS_INVALID_ARG) break;
            usleep(20000);
            continue;
        }
        attempt_end = now_ms() + ATTEMPT_MS;
        if (attempt_end > deadline) attempt_end = deadline;
        while (*acked < count) {
            uint64_t n = 0;
            int duplicate = 0;
            int got = next_ack(e, attempt_end, count, seqs, attempts, &i, &n, &duplicate, reason, reason_size);
            if (got == ACK_STOP) break; /* send again what is missing */
            if (got == ACK_FATAL) return 1;
            if (got == ACK_STORED) {
                seqs[i] = n;
                (*acked)++;
                if (n > e->head) e->head = n;
                stored(ctx, n, duplicate);
            }
            /* A refusal (no leader yet): pause before the next attempt. */
            if (i < count && attempts[i] == 0) {
                usleep(20000);
                break;
            }
        }
    }
    return 0;
}

/* nats_append_batch's stored(): the highest number acknowledged. */
static void batch_stored(void *ctx, uint64_t n, int duplicate) {
    uint64_t *top = ctx;
    (void)duplicate;
    if (n > *top) *top = n;
}

/* nats_append_many's stored(): the first new entry numbered at or before
 * what this replica applied (a reset log). */
typedef struct {
    uint64_t seq_applied, behind;
    int fresh_behind;
} many_acks;

static void many_stored(void *ctx, uint64_t n, int duplicate) {
    many_acks *m = ctx;
    if (!duplicate && n <= m->seq_applied && !m->fresh_behind) {
        m->fresh_behind = 1;
        m->behind = n;
    }
}

/* After an append that no server took ("no responders"): the stream may be
 * gone, or made again (with another subject). One short look: RP_DAMAGED
 * (message in err) when it is, else 0. */
static int stream_replaced(nt *e, char *err) {
    jsStreamInfo *si = NULL;
    jsOptions jo;
    int rc = 0;
    jsOptions_Init(&jo);
    jo.Wait = e->timeout_ms < 500 ? e->timeout_ms : 500;
    if (js_GetStreamInfo(&si, e->js, e->stream, &jo, NULL) == NATS_NOT_FOUND) {
        rc = damaged(e, err, "the stream was deleted (nothing was appended)");
    } else if (si != NULL && id_of(si) != e->log_id) {
        rc = damaged(e, err, "the stream is not the log %llu this replica joined (it was deleted and made again; "
                             "nothing was appended)",
                     (unsigned long long)e->log_id);
    }
    if (si) jsStreamInfo_Destroy(si);
    return rc;
}

static int nats_append_batch(rp_engine *base, const char *const *actions, size_t count, const char *after_pos,
                             uint64_t seq_applied, rp_batch *out, char *err) {
    nt *e = (nt *)base;
    int64_t deadline = now_ms() + e->timeout_ms;
    uint64_t after = seq_of(after_pos), *seqs = NULL, *attempts = NULL, first_id, top = 0;
    size_t capacity = 0, done = 0, i;
    char reason[300] = "";
    int rc = 0;
    (void)seq_applied;
    out->items = NULL;
    out->count = 0;
    if (count > BATCH_MAX) {
        rp_fail(err, "replicate: an append of more than %d actions at once", BATCH_MAX);
        return RP_FAILED;
    }
    /* The entries already at hand, checked before anything is written. */
    rc = take(e, after, 0, (size_t)-1, 0, 0, out, &capacity, err);
    if (rc != 0) {
        if (rc == RP_FAILED) rp_batch_free(out);
        return rc;
    }
    seqs = calloc(count, sizeof *seqs);
    attempts = calloc(count, sizeof *attempts);
    if (seqs == NULL || attempts == NULL) {
        rp_fail(err, "replicate: out of memory");
        rc = RP_FAILED;
        goto end;
    }
    first_id = e->id_counter + 1;
    e->id_counter += count;
    /* Send them all; then, until each is acknowledged or the time is up,
     * take acknowledgements and send again what an attempt left without one. */
    {
        outgoing o = {actions, NULL, NULL, NULL, count, e->id_prefix, '-', first_id};
        if (append_rounds(e, &o, deadline, seqs, attempts, &done, batch_stored, &top, reason, sizeof reason))
            goto refused;
    }
    if (done < count && strstr(reason, "no responders") != NULL) {
        rc = stream_replaced(e, err);
        if (rc != 0) {
            rp_batch_free(out);
            goto end;
        }
    }
    if (done < count) {
    refused:
        rp_fail(err, "replicate: %s did not acknowledge the append within %d ms (timeout_ms)%s%.300s", e->shown,
                e->timeout_ms, reason[0] ? ": " : "", reason);
        rc = RP_FAILED;
        rp_batch_free(out);
        goto end;
    }
    if (top <= after) {
        rc = damaged(e, err, "this replica has applied entry %llu but the stream gave the new entry number %llu: "
                             "the log was reset (this action was appended as entry %llu, and is not applied here)",
                     (unsigned long long)after, (unsigned long long)top, (unsigned long long)top);
        goto end;
    }
    /* Everything up to the last new entry: from the cursor, the entries of
     * others before it (they were committed before it: they are there or on
     * their way); this call's own entries after the last of those are made
     * here (this engine knows their sequences and actions) rather than
     * waited for. */
    {
        uint64_t need = top, have;
        for (;;) {
            for (i = 0; i < count && seqs[i] != need; i++) {
            }
            if (i == count || need <= after) break;
            need--;
        }
        have = out->count ? out->items[out->count - 1].seq : after;
        rc = need > have ? take(e, have, need, (size_t)-1, 0, deadline, out, &capacity, err) : 0;
        have = out->count ? out->items[out->count - 1].seq : after;
        while (rc == 0) {
            /* The smallest own sequence past what the batch holds. */
            size_t next = count;
            for (i = 0; i < count; i++)
                if (seqs[i] > have && (next == count || seqs[i] < seqs[next])) next = i;
            if (next == count) break;
            if (out->count == capacity) {
                size_t more = capacity ? capacity * 2 : 16;
                rp_entry *items = realloc(out->items, sizeof *items * more);
                if (items == NULL) {
                    rp_fail(err, "replicate: out of memory");
                    rc = RP_FAILED;
                    break;
                }
                out->items = items;
                capacity = more;
            }
            memset(&out->items[out->count], 0, sizeof out->items[0]);
            snprintf(out->items[out->count].pos, RP_POS_SIZE, "%llu", (unsigned long long)seqs[next]);
            out->items[out->count].seq = seqs[next];
            out->items[out->count].action = strdup(actions[next]);
            if (out->items[out->count].action == NULL) {
                rp_fail(err, "replicate: out of memory");
                rc = RP_FAILED;
                break;
            }
            out->count++;
            have = seqs[next];
        }
    }
    if (rc == RP_FAILED) {
        size_t n = strlen(err);
        rp_batch_free(out);
        snprintf(err + n, RP_ERR_SIZE - n, " (the action was appended as entry %llu)", (unsigned long long)top);
        goto end;
    }
    if (rc == RP_DAMAGED) {
        size_t n = strlen(err);
        snprintf(err + n, RP_ERR_SIZE - n, " (this action was appended as entry %llu, and is not applied here)",
                 (unsigned long long)top);
        goto end;
    }
    for (i = 0; i < out->count; i++) {
        size_t k;
        for (k = 0; k < count; k++)
            if (seqs[k] == out->items[i].seq) out->items[i].mine = (int)k + 1;
    }
end:
    free(seqs);
    free(attempts);
    return rc;
}

/* Optimistic mode's appends: each entry with the message id "ORIGIN:N", all
 * of them published at once (pipelined), then their acknowledgements taken;
 * what an attempt left without one (ATTEMPT_MS) is sent again, with the same
 * id, until timeout_ms has passed. The stream's de-duplication window (2
 * minutes) keeps each id once: a resend of an entry the stream holds is
 * answered "duplicate" with its first sequence, and counts as appended.
 * Past the window the stream no longer knows the id: an entry resent after
 * that (a replica offline for longer, holding entries whose answers it never
 * got) would be appended a second time. Unlike Redis, JetStream keeps no
 * per-origin counter: a number past one the log lacks is not refused, and an
 * entry refused by the stream (no leader yet) while a later one of the same
 * call was stored lands after it when sent again. *done is the prefix of the
 * `count` that were acknowledged. */
static int nats_append_many(rp_engine *base, const char *origin, uint64_t first, size_t count,
                            const char *const *entries, uint64_t seq_applied, size_t *done, char *err) {
    nt *e = (nt *)base;
    int64_t deadline = now_ms() + e->timeout_ms;
    uint64_t *seqs = NULL, *attempts = NULL, *numbers = NULL;
    size_t acked = 0, *parts = NULL, *lengths = NULL, messages = 0, i, j;
    char reason[300] = "", **bundles = NULL;
    int rc = 0;
    many_acks many = {0, 0, 0};
    outgoing o = {entries, NULL, NULL, NULL, count, origin, ':', first};
    *done = 0;
    if (count > BATCH_MAX) {
        rp_fail(err, "replicate: an append of more than %d actions at once", BATCH_MAX);
        return RP_FAILED;
    }
    seqs = calloc(count, sizeof *seqs);
    attempts = calloc(count, sizeof *attempts);
    if (seqs == NULL || attempts == NULL) goto no_memory;
    if (count > 1) {
        /* Several actions a message (entry.h): the stream's servers work
         * per message. Cut the same way from `first` on every call, so that
         * a resend of the same actions (optimistic mode's sender, after a
         * failure) carries the same message ids; a message cut otherwise
         * (the last of a call, longer when sent again) leaves copies of
         * actions in the stream, which the per-origin rule skips. */
        numbers = calloc(count, sizeof *numbers);
        parts = calloc(count, sizeof *parts);
        lengths = calloc(count, sizeof *lengths);
        bundles = calloc(count, sizeof *bundles);
        if (numbers == NULL || parts == NULL || lengths == NULL || bundles == NULL) goto no_memory;
        /* Within the server's max_payload (headers included), which may
         * be below BYTES_PER_MESSAGE. */
        size_t limit = BYTES_PER_MESSAGE;
        int64_t server_max = natsConnection_GetMaxPayload(e->nc);
        if (server_max > 0 && (uint64_t)server_max < (uint64_t)limit + HEADER_ROOM)
            limit = (uint64_t)server_max > 2 * HEADER_ROOM ? (size_t)server_max - HEADER_ROOM : (size_t)server_max / 2;
        for (i = 0; i < count;) {
            size_t k = 0, bytes = 0, at = 0;
            for (; i + k < count && k < PARTS_PER_MESSAGE; k++) {
                size_t n = strlen(entries[i + k]) + 1;
                if (k > 0 && bytes + n > limit) break;
                bytes += n;
            }
            if ((bundles[messages] = malloc(bytes)) == NULL) goto no_memory;
            for (j = 0; j < k; j++) { /* each with its NUL: the separator */
                size_t n = strlen(entries[i + j]) + 1;
                memcpy(bundles[messages] + at, entries[i + j], n);
                at += n;
            }
            numbers[messages] = first + i;
            parts[messages] = k;
            lengths[messages] = bytes - 1;
            messages++;
            i += k;
        }
        o.texts = (const char *const *)bundles;
        o.lengths = lengths;
        o.numbers = numbers;
        o.parts = parts;
        o.count = messages;
    }
    many.seq_applied = seq_applied;
    /* Refused for good or not, what follows is the same (`reason` tells). */
    (void)append_rounds(e, &o, deadline, seqs, attempts, &acked, many_stored, &many, reason, sizeof reason);
    for (i = 0; i < o.count && seqs[i] != 0; i++) *done += parts ? parts[i] : 1;
    if (many.fresh_behind) {
        rc = damaged(e, err, "this replica has applied entry %llu but the stream gave a new entry number %llu: the "
                             "log was reset",
                     (unsigned long long)seq_applied, (unsigned long long)many.behind);
    } else if (*done == 0 && strstr(reason, "no responders") != NULL && (rc = stream_replaced(e, err)) != 0) {
        /* Nothing was appended: the stream is gone or another one. */
    } else if (*done < count) {
        rp_fail(err, "replicate: %s did not acknowledge the append within %d ms (timeout_ms)%s%.300s", e->shown,
                e->timeout_ms, reason[0] ? ": " : "", reason);
        rc = RP_FAILED;
    }
    goto end;
no_memory:
    rp_fail(err, "replicate: out of memory");
    rc = RP_FAILED;
end:
    for (i = 0; bundles != NULL && i < messages; i++) free(bundles[i]);
    free(bundles);
    free(numbers);
    free(parts);
    free(lengths);
    free(seqs);
    free(attempts);
    return rc;
}

/* What the engine saw, without I/O: the highest sequence an acknowledgement
 * or a read told, and the connections made (the first, and the client
 * library's reconnections, from its local counters). */
static void nats_info(const rp_engine *base, rp_engine_info *out) {
    const nt *e = (const nt *)base;
    natsStatistics *stats = NULL;
    uint64_t reconnects = 0;
    out->head = e->head;
    out->connections = e->nc != NULL ? 1 : 0;
    out->waited_counter = 0; /* JetStream numbers its own entries: no counter to read */
    if (e->nc != NULL && natsStatistics_Create(&stats) == NATS_OK) {
        if (natsConnection_GetStats(e->nc, stats) == NATS_OK &&
            natsStatistics_GetCounts(stats, NULL, NULL, NULL, NULL, &reconnects) == NATS_OK)
            out->connections += reconnects;
        natsStatistics_Destroy(stats);
    }
}

static int nats_check(rp_engine *base, const char *after, uint64_t seq, char *err) {
    nt *e = (nt *)base;
    uint64_t first, last;
    (void)seq;
    return stream_state(e, seq_of(after), &first, &last, err);
}

static int nats_read(rp_engine *base, const char *after_pos, size_t max, rp_batch *out, char *err) {
    nt *e = (nt *)base;
    uint64_t after = seq_of(after_pos), first = 0, last = 0;
    size_t capacity = 0;
    int rc;
    out->items = NULL;
    out->count = 0;
    rc = stream_state(e, after, &first, &last, err);
    if (rc == 0 && first > last && first > after + 1) {
        /* No entry left, and those after this replica's position gone. */
        return damaged(e, err, "it no longer holds entry %llu (the stream was purged up to %llu) and no snapshot "
                               "covers it",
                       (unsigned long long)(after + 1), (unsigned long long)last);
    }
    if (rc != 0 || last <= after || max == 0 || last == 0) return rc;
    if (after + max < last) last = after + max;
    rc = take(e, after, last < first ? first : last, max, 0, now_ms() + e->timeout_ms, out, &capacity, err);
    if (rc == RP_FAILED) rp_batch_free(out);
    return rc;
}

static int nats_wait(rp_engine *base, const char *after_pos, int block_ms, size_t max, rp_batch *out, char *err) {
    nt *e = (nt *)base;
    size_t capacity = 0;
    int rc;
    out->items = NULL;
    out->count = 0;
    rc = take(e, seq_of(after_pos), 0, max, block_ms, 0, out, &capacity, err);
    if (rc == RP_FAILED) rp_batch_free(out);
    if (rc == RP_FAILED) usleep(50000); /* no spin while the servers are away */
    if (rc == 0 && out->count == 0 && (e->looked_damaged || now_ms() - e->looked_at >= QUIET_LOOK_MS)) {
        uint64_t first, last;
        e->looked_at = now_ms();
        rc = stream_state(e, seq_of(after_pos), &first, &last, err);
        if (rc == RP_FAILED) rc = 0; /* the servers away: the next look tells */
        e->looked_damaged = rc == RP_DAMAGED;
    }
    return rc;
}

/* The snapshot's value and revision: 0 (value NULL: none), or a failure. */
static int snapshot_value(nt *e, kvEntry **entry, char *err) {
    natsStatus s = kvStore_Get(entry, e->kv, SNAPSHOT_KEY);
    if (s == NATS_NOT_FOUND) {
        *entry = NULL;
        return 0;
    }
    if (s != NATS_OK) {
        *entry = NULL;
        return failed(e, err, s, "the snapshot");
    }
    return 0;
}

static int nats_snapshot_get(rp_engine *base, int *found, char **state, char pos[RP_POS_SIZE], uint64_t *seq,
                             char *err) {
    nt *e = (nt *)base;
    kvEntry *entry = NULL;
    rp_text value = {NULL, 0};
    uint64_t first, last;
    int rc;
    *found = 0;
    *state = NULL;
    rc = snapshot_value(e, &entry, err);
    if (rc != 0) return rc;
    if (entry != NULL) {
        value.str = kvEntry_Value(entry);
        value.len = (size_t)kvEntry_ValueLen(entry);
        if (value.str == NULL) value.str = "";
    }
    rc = rp_parse_js_snapshot(e->stream, value, e->log_id, found, state, pos, seq, err);
    if (entry) kvEntry_Destroy(entry);
    if (rc == 0 && *found) {
        rc = stream_state(e, 0, &first, &last, err);
        if (rc == 0 && *seq > last) {
            rc = damaged(e, err, "its snapshot covers entry %llu but the stream's last entry is %llu (the snapshot "
                                 "was changed, or the log was reset)",
                         (unsigned long long)*seq, (unsigned long long)last);
        }
    }
    if (rc != 0) {
        free(*state);
        *state = NULL;
        *found = 0;
    }
    return rc;
}

static int nats_snapshot_put(rp_engine *base, const char *state, const char *pos, uint64_t seq, int *stored,
                             char *err) {
    nt *e = (nt *)base;
    kvEntry *entry = NULL;
    uint64_t revision = 0, previous = 0;
    size_t length = strlen(state);
    char *value;
    natsStatus s;
    int rc;
    (void)pos;
    *stored = 0;
    rc = snapshot_value(e, &entry, err);
    if (rc != 0) return rc;
    if (entry != NULL) {
        rp_text text;
        char *old = NULL, old_pos[RP_POS_SIZE];
        int found = 0;
        text.str = kvEntry_Value(entry) ? kvEntry_Value(entry) : "";
        text.len = (size_t)kvEntry_ValueLen(entry);
        revision = kvEntry_Revision(entry);
        /* A value that is not a snapshot of this log is replaced. */
        if (rp_parse_js_snapshot(e->stream, text, e->log_id, &found, &old, old_pos, &previous, err) != 0) previous = 0;
        free(old);
        kvEntry_Destroy(entry);
        if (previous >= seq) return 0;
    }
    value = malloc(length + 64);
    if (value == NULL) {
        rp_fail(err, "replicate: out of memory");
        return RP_FAILED;
    }
    length = (size_t)sprintf(value, "%llu %llu\n", (unsigned long long)e->log_id, (unsigned long long)seq) + length;
    strcat(value, state);
    /* Compare-and-set: never over a snapshot stored since it was read. */
    s = revision ? kvStore_Update(&revision, e->kv, SNAPSHOT_KEY, value, (int)length, revision)
                 : kvStore_Create(&revision, e->kv, SNAPSHOT_KEY, value, (int)length);
    free(value);
    if (s != NATS_OK) {
        return 0; /* another replica stored one first, or the servers are away: best effort */
    }
    *stored = 1;
    if (previous > 0) {
        /* Trim: the entries before the previous snapshot's. */
        jsOptions jo;
        jsErrCode code = 0;
        jsOptions_Init(&jo);
        jo.Wait = e->timeout_ms;
        jo.Stream.Purge.Sequence = previous;
        s = js_PurgeStream(e->js, e->stream, &jo, &code);
        if (s != NATS_OK) return failed(e, err, s, "trimming the stream");
    }
    return 0;
}

static void nats_idle(rp_engine *base) { drop_cursor((nt *)base); }

static const rp_ops nats_ops = {
    nats_close, nats_append_batch, nats_check, nats_read, nats_wait, nats_append_many, nats_info, nats_idle, 0,
    nats_snapshot_get, nats_snapshot_put,
};
