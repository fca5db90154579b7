/*
 * engine.c - engine.h's functions: the engine chosen by the url's scheme,
 * and the checks of the files an engine reads (a CA, a certificate, a key).
 */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700

#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void rp_fail(char *err, const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(err, RP_ERR_SIZE, format, args);
    va_end(args);
}

rp_engine *rp_open(const rp_options *options, char *err) {
    const char *url = options->url;
    if (strncmp(url, "redis://", 8) == 0 || strncmp(url, "rediss://", 9) == 0) return rp_redis_open(options, err);
    if (strncmp(url, "nats://", 7) == 0 || strncmp(url, "tls://", 6) == 0) return rp_nats_open(options, err);
    rp_fail(err, "replicate: \"url\" must start with redis:// or rediss:// (Redis Streams), or nats:// or tls:// "
                 "(NATS JetStream)");
    return NULL;
}

void rp_close(rp_engine *e) {
    if (e != NULL) e->ops->close(e);
}

int rp_append(rp_engine *e, const char *action, const char *after, uint64_t seq, rp_batch *out, char *err) {
    const char *actions[1];
    actions[0] = action;
    return e->ops->append_batch(e, actions, 1, after, seq, out, err);
}

int rp_append_batch(rp_engine *e, const char *const *actions, size_t count, const char *after, uint64_t seq,
                    rp_batch *out, char *err) {
    if (count == 0) {
        out->items = NULL;
        out->count = 0;
        rp_fail(err, "replicate: an append of no action");
        return RP_FAILED;
    }
    return e->ops->append_batch(e, actions, count, after, seq, out, err);
}

int rp_check(rp_engine *e, const char *after, uint64_t seq, char *err) { return e->ops->check(e, after, seq, err); }

int rp_read(rp_engine *e, const char *after, size_t max, rp_batch *out, char *err) {
    return e->ops->read(e, after, max, out, err);
}

int rp_wait(rp_engine *e, const char *after, int block_ms, size_t max, rp_batch *out, char *err) {
    return e->ops->wait(e, after, block_ms, max, out, err);
}

int rp_append_many(rp_engine *e, const char *origin, uint64_t first, size_t count, const char *const *entries,
                   uint64_t seq, size_t *done, char *err) {
    *done = 0;
    if (count == 0) return 0;
    return e->ops->append_many(e, origin, first, count, entries, seq, done, err);
}

void rp_idle(rp_engine *e) {
    if (e && e->ops->idle) e->ops->idle(e);
}

int rp_reads_back_cheaply(const rp_engine *e) { return e->ops->reads_back_cheaply; }

void rp_info(const rp_engine *e, rp_engine_info *out) {
    out->head = 0;
    out->connections = 0;
    e->ops->info(e, out);
}

int rp_snapshot_get(rp_engine *e, int *found, char **state, char pos[RP_POS_SIZE], uint64_t *seq, char *err) {
    return e->ops->snapshot_get(e, found, state, pos, seq, err);
}

int rp_snapshot_put(rp_engine *e, const char *state, const char *pos, uint64_t seq, int *stored, char *err) {
    return e->ops->snapshot_put(e, state, pos, seq, stored, err);
}

/* ---- Trusted files ---------------------------------------------------------- */

#define TRUSTED_MAX (1024 * 1024)

/* Owner root or this user, not writable by group or others (a sticky folder
 * owned by root excepted when `folder`); a secret not readable by them
 * either. 0, or -1 with a message. */
static int owner_and_mode(const struct stat *info, const char *path, const char *subject, int folder, int secret,
                          char *err) {
    uid_t user = geteuid();
    mode_t writable = info->st_mode & 022;
    if (info->st_uid != 0 && info->st_uid != user) {
        rp_fail(err, "replicate: %s%s%s belongs to user %u, neither this process's user (%u) nor root: refusing "
                     "to read it; run chown %u %s",
                folder ? "folder \"" : "", folder ? path : subject, folder ? "\" above it" : "",
                (unsigned)info->st_uid, (unsigned)user, (unsigned)user, path);
        return -1;
    }
    if (writable != 0 && !(folder && (info->st_mode & S_ISVTX) && info->st_uid == 0)) {
        rp_fail(err, "replicate: %s%s%s can be written by other users (mode %04o: writable by %s): refusing to "
                     "read it; run chmod go-w %s",
                folder ? "folder \"" : "", folder ? path : subject, folder ? "\" above it" : "",
                (unsigned)(info->st_mode & 07777),
                writable == 022 ? "group and others" : writable == 020 ? "group" : "others", path);
        return -1;
    }
    if (secret && !folder && (info->st_mode & 077) != 0) {
        rp_fail(err, "replicate: %s can be read by other users (mode %04o): a private key must be readable by its "
                     "owner alone; run chmod go-rwx %s",
                subject, (unsigned)(info->st_mode & 07777), path);
        return -1;
    }
    return 0;
}

int rp_read_trusted_file(const char *path, const char *what, int secret, char **text, char *err) {
    char subject[PATH_MAX + 200], *real, *folder, *slash, *buffer = NULL;
    struct stat info;
    int fd = -1;
    size_t length = 0;
    *text = NULL;
    real = realpath(path, NULL);
    if (real == NULL) {
        rp_fail(err, "replicate: %s \"%.300s\" cannot be read: %s", what, path, strerror(errno));
        return -1;
    }
    snprintf(subject, sizeof subject, "%s \"%.300s\"%s%.300s%s", what, path, strcmp(real, path) ? " (real path " : "",
             strcmp(real, path) ? real : "", strcmp(real, path) ? ")" : "");
    /* Every folder from the file's up to "/". */
    folder = malloc(strlen(real) + 2);
    if (folder == NULL) {
        free(real);
        rp_fail(err, "replicate: out of memory");
        return -1;
    }
    strcpy(folder, real);
    for (;;) {
        slash = strrchr(folder, '/');
        if (slash == NULL) break;
        if (slash == folder) slash[1] = '\0';
        else *slash = '\0';
        if (lstat(folder, &info) != 0) {
            rp_fail(err, "replicate: folder \"%.300s\" above %s cannot be checked: %s", folder, subject,
                    strerror(errno));
            goto fail;
        }
        if (!S_ISDIR(info.st_mode)) {
            rp_fail(err, "replicate: \"%.300s\" above %s is no longer a folder", folder, subject);
            goto fail;
        }
        if (owner_and_mode(&info, folder, subject, 1, 0, err) != 0) goto fail;
        if (strcmp(folder, "/") == 0) break;
    }
    if (lstat(real, &info) != 0 || !S_ISREG(info.st_mode)) {
        rp_fail(err, "replicate: %s is not a regular file: refusing to read it", subject);
        goto fail;
    }
    fd = open(real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        rp_fail(err, "replicate: %s cannot be opened: %s", subject, strerror(errno));
        goto fail;
    }
    if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        rp_fail(err, "replicate: %s is not a regular file: refusing to read it", subject);
        goto fail;
    }
    if (owner_and_mode(&info, real, subject, 0, secret, err) != 0) goto fail;
    if (info.st_size > TRUSTED_MAX) {
        rp_fail(err, "replicate: %s is larger than 1 MiB", subject);
        goto fail;
    }
    buffer = malloc((size_t)info.st_size + 1);
    if (buffer == NULL) {
        rp_fail(err, "replicate: out of memory");
        goto fail;
    }
    while (length < (size_t)info.st_size) {
        ssize_t n = read(fd, buffer + length, (size_t)info.st_size - length);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            rp_fail(err, "replicate: %s cannot be read: %s", subject, n < 0 ? strerror(errno) : "it became shorter");
            goto fail;
        }
        length += (size_t)n;
    }
    buffer[length] = '\0';
    if (length == 0 || memchr(buffer, '\0', length) != NULL) {
        rp_fail(err, "replicate: %s is %s, not PEM text", subject, length == 0 ? "empty" : "binary");
        goto fail;
    }
    close(fd);
    free(folder);
    free(real);
    *text = buffer;
    return 0;
fail:
    if (buffer != NULL) {
        memset(buffer, 0, length);
        free(buffer);
    }
    if (fd >= 0) close(fd);
    free(folder);
    free(real);
    return -1;
}
