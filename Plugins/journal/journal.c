/*
 * journal - a Turnstate middleware plugin that records every action that
 * reached the reducers in an append-only file and, when a store loads it,
 * restores the state from that file (last snapshot + the actions after it).
 *
 * Config: {"path": "state.journal", "fsync": "always" | "never" | N,
 *          "snapshot_every": N (default 1000, 0 = never),
 *          "restore": true | false (default true; false: restore nothing and
 *          start the file anew from the store's state, for a journal behind
 *          replicate.so, whose log is the truth)}
 *
 * File format, one record per line:
 *     A <length> <crc32> <json>\n      an action that reached the reducers
 *     S <length> <crc32> <json>\n      a snapshot: the whole state after the
 *                                      action record before it
 *     V <length> <crc32> {"version":N}\n the version of the state (the
 *                                      store's ts_store_set_version) that the
 *                                      records after it were written with;
 *                                      none before a record: version 0
 * <length> is the decimal byte length of <json>; <crc32> is 8 lowercase hex
 * digits of the CRC-32 (IEEE 802.3) of the record letter followed by <json>.
 * <json> is minified, so it holds no newline. The records are written and
 * read by ../common/record.h, which the inspector's export and import use
 * too. See README.md.
 */
#define _POSIX_C_SOURCE 200809L

#include "turnstate_plugin.h"

#include "../common/pjson.h"
#include "../common/record.h"
#include "../common/store_api.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define JOURNAL_VERSION "1.0.0"
#define HEADER_ROOM TS_RECORD_HEADER_MAX /* the longest record header */

/* Taking the lock (see take_lock): how long create() waits for a holder that
 * is exiting, and for one that /proc/locks does not name; how often it looks. */
#define LOCK_WAIT_EXITING_MS 10000
#define LOCK_WAIT_UNKNOWN_MS 1000
#define LOCK_POLL_MS 10
#ifndef JOURNAL_PROC_LOCKS
#define JOURNAL_PROC_LOCKS "/proc/locks" /* the tests build a variant without it */
#endif

enum fsync_mode { FSYNC_NEVER, FSYNC_ALWAYS, FSYNC_EVERY };

typedef struct pending {
    const char *json; /* the action of a run() still on the stack */
    int written;
} pending;

typedef struct journal {
    const ts_store_api *store;
    char *path;
    int fd;
    enum fsync_mode fsync_mode;
    uint64_t fsync_every;
    uint64_t snapshot_every;
    int restore;             /* "restore": restore the state from the file when loaded */
    uint64_t since_snapshot; /* action records since the last snapshot */
    uint64_t unsynced;       /* records written since the last fsync */
    off_t end;               /* length of the file: the end of the last good record */
    int out_of_sync;         /* an action is missing from the file: a snapshot must come first */
    uint32_t version;        /* the store's state version when the journal was loaded */
    uint32_t file_version;   /* the version in force at the end of the file (its last V record; 0: none) */
    pending *stack;          /* run() calls in progress, outermost first */
    size_t depth, stack_capacity;
    char *record;            /* buffer for building records */
    size_t record_capacity;
} journal;

/* ---- Small helpers -------------------------------------------------------- */

static char *dup_text(const char *text) {
    size_t n = strlen(text) + 1;
    char *m = malloc(n);
    if (m) memcpy(m, text, n);
    return m;
}

/* Writes all of data[0..length) (append mode); 0 on success, else errno. */
static int write_all(int fd, const char *data, size_t length) {
    while (length > 0) {
        ssize_t n = write(fd, data, length);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return EIO;
        data += n;
        length -= (size_t)n;
    }
    return 0;
}

/* ---- Writing -------------------------------------------------------------- */

/* Appends one record. On failure the file is cut back to its last good end
 * (so that a partial record never stays in the middle) and errno-style code
 * is returned. */
static int append_record(journal *j, char letter, const char *json) {
    size_t raw = strlen(json), length, header_length;
    char header[HEADER_ROOM + 1];
    char *start;
    int err;
    if (letter != 'V' && j->file_version != j->version) {
        /* The records from here on are of the store's version: say so first. */
        char version[32];
        snprintf(version, sizeof version, "{\"version\":%lu}", (unsigned long)j->version);
        if ((err = append_record(j, 'V', version)) != 0) return err;
        j->file_version = j->version;
    }
    if (raw > (size_t)-1 - HEADER_ROOM - 2) return ENOMEM;
    if (j->record_capacity < HEADER_ROOM + raw + 2) {
        char *grown = realloc(j->record, HEADER_ROOM + raw + 2);
        if (grown == NULL) return ENOMEM;
        j->record = grown;
        j->record_capacity = HEADER_ROOM + raw + 2;
    }
    length = pj_minify(json, json + raw, j->record + HEADER_ROOM);
    header_length = ts_record_header(header, letter, j->record + HEADER_ROOM, length);
    start = j->record + HEADER_ROOM - header_length;
    memcpy(start, header, header_length);
    j->record[HEADER_ROOM + length] = '\n';
    err = write_all(j->fd, start, header_length + length + 1);
    if (err != 0) {
        /* Remove a partial record; if even that fails, the next load will
         * treat it as a torn last record or (if more follows) refuse. */
        if (ftruncate(j->fd, j->end) != 0) {
            fprintf(stderr, "turnstate journal: %s: could not cut a partial record back to byte %lld: %s\n", j->path,
                    (long long)j->end, strerror(errno));
        }
        return err;
    }
    j->end += (off_t)(header_length + length + 1);
    j->unsynced++;
    return 0;
}

static int sync_now(journal *j) {
    if (j->unsynced == 0) return 0;
    if (fsync(j->fd) != 0) return errno;
    j->unsynced = 0;
    return 0;
}

/* Writes a snapshot of the whole state. 0 or an errno-style code. */
static int write_snapshot(journal *j) {
    char *state = NULL;
    ts_status status = j->store->get_state(NULL, &state);
    int err;
    if (status != TS_OK || state == NULL) return EIO;
    err = append_record(j, 'S', state);
    j->store->free(state);
    if (err == 0) j->since_snapshot = 0;
    return err;
}

/* Records one action that reached the reducers, then a snapshot when due.
 * 0 if the action's effect is in the file, else errno-style code. */
static int record_action(journal *j, const char *json) {
    int err = append_record(j, 'A', json);
    if (err != 0) {
        /* The state has the action but the file has not: try to catch up
         * with a snapshot at once, and keep trying before the next action. */
        j->out_of_sync = 1;
        if (write_snapshot(j) == 0) {
            j->out_of_sync = 0;
            return 0;
        }
        return err;
    }
    j->since_snapshot++;
    if (j->snapshot_every > 0 && j->since_snapshot >= j->snapshot_every) {
        int snap = write_snapshot(j);
        if (snap != 0) {
            fprintf(stderr, "turnstate journal: %s: could not write a snapshot (%s); will try again after the next action\n",
                    j->path, strerror(snap));
        }
    }
    return 0;
}

static int sync_by_policy(journal *j) {
    if (j->fsync_mode == FSYNC_ALWAYS) return sync_now(j);
    if (j->fsync_mode == FSYNC_EVERY && j->unsynced >= j->fsync_every) return sync_now(j);
    return 0;
}

static ts_status io_failure(journal *j, const char *what, const char *type, int err) {
    char msg[700];
    snprintf(msg, sizeof msg, "journal: %s \"%.200s\" in %.300s: %s", what, type, j->path, strerror(err));
    return j->store->fail(TS_E_IO, msg);
}

static ts_status journal_run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
    journal *j = self;
    ts_status status;
    pending mine;
    size_t i;
    int err;

    if (j->out_of_sync) {
        /* An earlier action is missing from the file: refuse (before it
         * changes anything) until a snapshot brings the file up to date. */
        err = write_snapshot(j);
        if (err == 0) err = sync_by_policy(j);
        if (err != 0) return io_failure(j, "the journal is behind the state after a failed write; refused", action->type, err);
        j->out_of_sync = 0;
    }

    /* A nested run: the journal is last in the chain, so an outer action
     * still on the stack has reached the reducers already (we are called
     * from its listeners). Record it first, to keep the file in the order
     * the reducers saw. */
    for (i = 0; i < j->depth; i++) {
        if (j->stack[i].written) continue;
        err = record_action(j, j->stack[i].json);
        if (err != 0) return io_failure(j, "could not append an earlier action before", action->type, err);
        j->stack[i].written = 1;
    }
    if (j->depth == j->stack_capacity) {
        size_t capacity = j->stack_capacity ? j->stack_capacity * 2 : 8;
        pending *grown = realloc(j->stack, capacity * sizeof *grown);
        if (grown == NULL) return store->fail(TS_E_NOMEM, "journal: out of memory");
        j->stack = grown;
        j->stack_capacity = capacity;
    }
    j->stack[j->depth].json = action->json;
    j->stack[j->depth].written = 0;
    j->depth++;

    status = next(action->json);

    mine = j->stack[--j->depth];
    if (status != TS_OK) {
        if (mine.written) {
            fprintf(stderr, "turnstate journal: %s: \"%.200s\" was recorded but then failed with %s: load the journal last\n",
                    j->path, action->type, store->status_name(status));
        }
        return status;
    }
    if (!mine.written) {
        err = record_action(j, action->json);
        if (err != 0) return io_failure(j, "the state changed, but could not append", action->type, err);
    }
    err = sync_by_policy(j);
    if (err != 0) return io_failure(j, "could not fsync after", action->type, err);
    return TS_OK;
}

/* ---- The lock ------------------------------------------------------------- */

/* Who holds the flock of the journal, as far as /proc (Linux) tells. */
enum holder { HOLDER_UNKNOWN, HOLDER_EXITING, HOLDER_LIVE, HOLDER_SELF };

/* Whether process pid is on its way out: gone already, a zombie (its other
 * threads may still be closing its files), exiting (PF_EXITING), or with
 * SIGKILL pending (a fatal signal was delivered; the kernel marks every
 * thread so, even one that finishes an fsync first). */
static int process_exiting(long pid) {
    char name[64], text[1024], *p;
    unsigned long flags = 0;
    char state = '?';
    FILE *f;
    size_t n;
    snprintf(name, sizeof name, "/proc/%ld/stat", pid);
    f = fopen(name, "r");
    if (f == NULL) return 1;
    n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    p = strrchr(text, ')'); /* after the command name, which may hold anything */
    if (p == NULL || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %lu", &state, &flags) != 2) return 1;
    if (state == 'Z' || state == 'X' || state == 'x' || (flags & 0x4ul) != 0) return 1;
    snprintf(name, sizeof name, "/proc/%ld/status", pid);
    f = fopen(name, "r");
    if (f == NULL) return 1;
    while (fgets(text, sizeof text, f) != NULL) {
        unsigned long long pending;
        if ((sscanf(text, "SigPnd: %llx", &pending) == 1 || sscanf(text, "ShdPnd: %llx", &pending) == 1) &&
            (pending & (1ull << (9 - 1))) != 0) { /* SIGKILL is 9 on Linux */
            fclose(f);
            return 1;
        }
    }
    fclose(f);
    return 0;
}

/* Looks up the holders of a flock on inode `inode` in /proc/locks. Any live
 * holder wins (*pid names it); else an exiting one; else unknown (no
 * /proc/locks, a holder outside our PID namespace, or the lock just went).
 * Only the inode is compared, not the device (whose numbers some file
 * systems show differently): a lock on another file with the same inode
 * number can only make the answer "live", that is refuse sooner. */
static enum holder find_holder(unsigned long long inode, long *pid) {
    char line[256];
    enum holder found = HOLDER_UNKNOWN;
    FILE *f = fopen(JOURNAL_PROC_LOCKS, "r");
    if (f == NULL) return HOLDER_UNKNOWN;
    while (fgets(line, sizeof line, f) != NULL) {
        /* "1: FLOCK  ADVISORY  WRITE 1234 fe:00:16221093 0 EOF"; a waiter's
         * line has "->" after the number. */
        char type[16], mode[16], access[16];
        long holder_pid;
        unsigned int major, minor;
        unsigned long long holder_inode;
        char *p = strchr(line, ':');
        if (p == NULL || strstr(line, "->") != NULL) continue;
        if (sscanf(p + 1, "%15s %15s %15s %ld %x:%x:%llu", type, mode, access, &holder_pid, &major, &minor,
                   &holder_inode) != 7)
            continue;
        if (strcmp(type, "FLOCK") != 0 || holder_inode != inode || holder_pid <= 0) continue;
        if (holder_pid == (long)getpid()) {
            found = HOLDER_SELF;
            *pid = holder_pid;
            break;
        }
        if (!process_exiting(holder_pid)) {
            found = HOLDER_LIVE;
            *pid = holder_pid;
            break;
        }
        found = HOLDER_EXITING;
        *pid = holder_pid;
    }
    fclose(f);
    return found;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1000.0 + (double)t.tv_nsec / 1e6;
}

/* Takes the exclusive flock of j->fd. A store that holds it is refused at
 * once; a process that is exiting (killed mid-dispatch: it keeps the lock
 * until the kernel has closed its files, which can be after its parent, or
 * `timeout -s KILL`, has already gone on) is waited for, up to
 * LOCK_WAIT_EXITING_MS; a holder /proc/locks does not name, up to
 * LOCK_WAIT_UNKNOWN_MS. 0, or the reason in why[] and -1. */
static int take_lock(journal *j, char *why, size_t why_size) {
    struct stat st;
    double start = now_ms();
    if (fstat(j->fd, &st) != 0) {
        snprintf(why, why_size, "cannot be locked (fstat failed: %s)", strerror(errno));
        return -1;
    }
    for (;;) {
        long pid = 0;
        enum holder holder;
        double waited;
        struct timespec tick = {0, LOCK_POLL_MS * 1000000L};
        if (flock(j->fd, LOCK_EX | LOCK_NB) == 0) return 0;
        if (errno == EINTR) continue;
        if (errno != EWOULDBLOCK) {
            snprintf(why, why_size, "cannot be locked: %s", strerror(errno));
            return -1;
        }
        holder = find_holder((unsigned long long)st.st_ino, &pid);
        waited = now_ms() - start;
        if (holder == HOLDER_SELF) {
            snprintf(why, why_size, "is in use by another store of this process (it is locked): one journal, one store");
            return -1;
        }
        if (holder == HOLDER_LIVE) {
            snprintf(why, why_size, "is in use by another store (process %ld holds its lock): one journal, one store",
                     pid);
            return -1;
        }
        if (holder == HOLDER_EXITING && waited >= LOCK_WAIT_EXITING_MS) {
            snprintf(why, why_size,
                     "is in use by another store (process %ld, which is exiting, still held its lock after %d s)", pid,
                     LOCK_WAIT_EXITING_MS / 1000);
            return -1;
        }
        if (holder == HOLDER_UNKNOWN && waited >= LOCK_WAIT_UNKNOWN_MS) {
            snprintf(why, why_size,
                     "is in use by another store (it stayed locked for %d s, and %s does not say by whom): one journal, "
                     "one store",
                     LOCK_WAIT_UNKNOWN_MS / 1000, JOURNAL_PROC_LOCKS);
            return -1;
        }
        nanosleep(&tick, NULL);
    }
}

/* ---- Loading -------------------------------------------------------------- */

/* A record found in the file: where it starts, and what record.h read. */
typedef struct record_ref {
    size_t offset;    /* of the record */
    ts_record r;      /* its letter, and its JSON and end as offsets in the file */
    uint32_t version; /* the state version it was written with (the V record before it; 0: none) */
} record_ref;

/* The offset of the first well-formed record that starts after off, or 0 if
 * there is none: then the bad record at off is the torn tail of the file. */
static size_t valid_record_after(const char *buf, size_t size, size_t off) {
    size_t q;
    char why[256];
    for (q = off + 1; q + 1 < size; q++) {
        ts_record r;
        if ((buf[q] == 'A' || buf[q] == 'S' || buf[q] == 'V') && buf[q + 1] == ' ' && ts_record_read(buf, size, q, &r, why, sizeof why))
            return q;
    }
    return 0;
}

/* Fails create: formats the message into *error_message. */
static ts_status create_error(char **error_message, ts_status status, const char *format, const char *path,
                              const char *detail) {
    char msg[1200];
    snprintf(msg, sizeof msg, format, path, detail);
    if (error_message) *error_message = dup_text(msg);
    return status;
}

static void journal_free(journal *j) {
    if (j == NULL) return;
    if (j->fd >= 0) close(j->fd);
    free(j->path);
    free(j->stack);
    free(j->record);
    free(j);
}

/* Reads the whole file. 0 or errno. */
static int read_file(int fd, char **out, size_t *out_size) {
    struct stat st;
    char *buf;
    size_t size, got = 0;
    if (fstat(fd, &st) != 0) return errno;
    if (!S_ISREG(st.st_mode)) return EINVAL;
    if ((uint64_t)st.st_size >= (uint64_t)((size_t)-1 / 2)) return EFBIG;
    size = (size_t)st.st_size;
    buf = malloc(size + 1);
    if (buf == NULL) return ENOMEM;
    while (got < size) {
        ssize_t n = pread(fd, buf + got, size - got, (off_t)got);
        if (n < 0) {
            if (errno == EINTR) continue;
            free(buf);
            return errno;
        }
        if (n == 0) break; /* shrank meanwhile: take what is there */
        got += (size_t)n;
    }
    buf[got] = '\0';
    *out = buf;
    *out_size = got;
    return 0;
}

/* Parses the config into j. 0 on success, else a message in err. */
static int parse_config(journal *j, const char *config, char *err, size_t err_size) {
    pj_iter it;
    const char *k, *v;
    int r, seen = 0;
    if (!pj_begin(&it, config, '{')) {
        snprintf(err, err_size, "journal: the config must be a JSON object, not %s", pj_kind_name(pj_kind_of(config)));
        return 0;
    }
    /* The host refuses a config with a key twice; a host that does not
     * (create() called directly) gets the same answer here. */
    while ((r = pj_next_member(&it, &k, &v)) == 1) {
        enum pj_kind kind = pj_kind_of(v);
        enum { PATH = 1, FSYNC = 2, SNAPSHOT_EVERY = 4, RESTORE = 8 };
        int field = pj_str_eq(k, "path") ? PATH : pj_str_eq(k, "fsync") ? FSYNC
                  : pj_str_eq(k, "snapshot_every") ? SNAPSHOT_EVERY : pj_str_eq(k, "restore") ? RESTORE : 0;
        if (field & seen) {
            char name[200];
            pj_str_show(k, name, sizeof name);
            snprintf(err, err_size, "journal: config field \"%s\" appears twice", name);
            return 0;
        }
        seen |= field;
        uint64_t n = 0;
        int got = kind == PJ_NUMBER ? pj_uint64(v, &n) : PJ_U64_NOT_INTEGER;
        if (field == PATH) {
            size_t length;
            if (kind != PJ_STRING) {
                snprintf(err, err_size, "journal: config field \"path\" must be a string (the journal file), not %s",
                         pj_kind_name(kind));
                return 0;
            }
            j->path = pj_str_dup(pj_ws(v), &length);
            if (j->path == NULL) {
                snprintf(err, err_size, "journal: out of memory");
                return 0;
            }
            if (length == 0 || strlen(j->path) != length) {
                snprintf(err, err_size, "journal: config field \"path\" must be a non-empty file name without NUL");
                return 0;
            }
        } else if (field == FSYNC) {
            if (kind == PJ_STRING && pj_str_eq(pj_ws(v), "always")) {
                j->fsync_mode = FSYNC_ALWAYS;
            } else if (kind == PJ_STRING && pj_str_eq(pj_ws(v), "never")) {
                j->fsync_mode = FSYNC_NEVER;
            } else if (got == PJ_U64_OK && n >= 1) {
                j->fsync_mode = FSYNC_EVERY;
                j->fsync_every = n;
            } else {
                snprintf(err, err_size,
                         "journal: config field \"fsync\" must be \"always\", \"never\" or an integer from 1 to "
                         "18446744073709551615 (fsync every N actions), not %s",
                         kind == PJ_STRING ? "that string" : got == PJ_U64_OK ? "0" : pj_uint64_why(kind, got));
                return 0;
            }
        } else if (field == SNAPSHOT_EVERY) {
            if (got != PJ_U64_OK) {
                snprintf(err, err_size,
                         "journal: config field \"snapshot_every\" must be an integer from 0 to 18446744073709551615 "
                         "(actions; 0 = never), not %s",
                         pj_uint64_why(kind, got));
                return 0;
            }
            j->snapshot_every = n;
        } else if (field == RESTORE) {
            if (kind != PJ_TRUE && kind != PJ_FALSE) {
                snprintf(err, err_size, "journal: config field \"restore\" must be true or false, not %s",
                         pj_kind_name(kind));
                return 0;
            }
            j->restore = kind == PJ_TRUE;
        } else {
            char name[200];
            pj_str_show(k, name, sizeof name);
            snprintf(err, err_size, "journal: unknown config field \"%s\" (known: \"path\", \"fsync\", \"snapshot_every\", "
                     "\"restore\")",
                     name);
            return 0;
        }
    }
    if (r < 0) {
        snprintf(err, err_size, "journal: the config is malformed JSON");
        return 0;
    }
    if (j->path == NULL) {
        snprintf(err, err_size, "journal: config field \"path\" (the journal file) is required");
        return 0;
    }
    return 1;
}

/* fsyncs the folder that holds path, so that a new file's name is durable. */
static void sync_parent(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir;
    int fd;
    if (slash == NULL) {
        dir = dup_text(".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        dir = malloc(n + 1);
        if (dir) {
            memcpy(dir, path, n);
            dir[n] = '\0';
        }
    }
    if (dir == NULL) return;
    fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

static ts_status journal_create(const char *config_json, const ts_store_api *store, void **self, char **error_message) {
    char err[600], why[256], detail[600];
    journal *j;
    char *buf = NULL, *original = NULL;
    size_t size = 0, off = 0, good_end = 0, count = 0, capacity = 0, i, last_snapshot = (size_t)-1;
    record_ref *records = NULL;
    int torn = 0, e, restored = 0;
    uint32_t version = 0, newest = 0; /* the version in force while scanning; the newest seen */
    size_t newest_at = 0;
    ts_status status = TS_E_PLUGIN;

    if (self == NULL || store == NULL) return TS_E_ARGUMENT;
    if (config_json == NULL) config_json = "{}";
    if (!TS_API_HAS(store, status_name) ||
        store->replace_state == NULL) {
        snprintf(err, sizeof err,
                 "journal: the host's ts_store_api (struct_size %lu) has no replace_state and status_name (needs "
                 "struct_size >= %lu): this Turnstate library is too old for the journal plugin",
                 (unsigned long)store->struct_size,
                 (unsigned long)(offsetof(ts_store_api, status_name) + sizeof store->status_name));
        if (error_message) *error_message = dup_text(err);
        return TS_E_ABI;
    }
    j = calloc(1, sizeof *j);
    if (j == NULL) {
        if (error_message) *error_message = dup_text("journal: out of memory");
        return TS_E_NOMEM;
    }
    j->fd = -1;
    j->store = store;
    /* The store's state version (0 from a library without versions). */
    if (TS_API_HAS(store, last_error) &&
        store->state_version != NULL && store->replace_state_from != NULL && store->last_error != NULL) {
        status = store->state_version(&j->version);
        if (status != TS_OK) {
            if (error_message) *error_message = dup_text("journal: cannot read the store's state version");
            journal_free(j);
            return status;
        }
    }
    j->fsync_mode = FSYNC_ALWAYS;
    j->snapshot_every = 1000;
    j->restore = 1;
    if (!parse_config(j, config_json, err, sizeof err)) {
        journal_free(j);
        if (error_message) *error_message = dup_text(err);
        return TS_E_PLUGIN;
    }

    j->fd = open(j->path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (j->fd < 0) {
        status = create_error(error_message, TS_E_IO, "journal: cannot open \"%.300s\": %s", j->path, strerror(errno));
        goto fail;
    }
    if (take_lock(j, detail, sizeof detail) != 0) {
        status = create_error(error_message, TS_E_IO, "journal: \"%.300s\" %s", j->path, detail);
        goto fail;
    }
    if (!j->restore) {
        /* "restore": false (behind replicate.so, whose log is the truth and
         * has brought the state already): nothing is read or restored; the
         * file starts anew with a snapshot of the state as it is, so that it
         * stays a whole journal (a version record first when the store has
         * a version, as append_record writes). */
        if (ftruncate(j->fd, 0) != 0) {
            status = create_error(error_message, TS_E_IO, "journal: cannot start \"%.300s\" anew (\"restore\": false): %s",
                                  j->path, strerror(errno));
            goto fail;
        }
        j->end = 0;
        j->file_version = 0;
        e = write_snapshot(j);
        if (e == 0) e = sync_by_policy(j);
        if (e == 0 && j->fsync_mode != FSYNC_NEVER) sync_parent(j->path);
        if (e != 0) {
            status = create_error(error_message, TS_E_IO,
                                  "journal: cannot write the first snapshot of \"%.300s\" (\"restore\": false): %s",
                                  j->path, strerror(e));
            goto fail;
        }
        *self = j;
        return TS_OK;
    }
    e = read_file(j->fd, &buf, &size);
    if (e != 0) {
        status = create_error(error_message, TS_E_IO, "journal: cannot read \"%.300s\": %s", j->path,
                              e == EINVAL ? "not a regular file" : strerror(e));
        goto fail;
    }

    /* Scan the records. */
    while (off < size) {
        record_ref r;
        r.offset = off;
        if (!ts_record_read(buf, size, off, &r.r, why, sizeof why)) {
            size_t later = valid_record_after(buf, size, off);
            if (later == 0) {
                torn = 1; /* the last record: a write that did not finish */
                break;
            }
            snprintf(detail, sizeof detail, "corrupt record at byte %zu (%s), with a good record after it at byte %zu",
                     off, why, later);
            status = create_error(error_message, TS_E_IO,
                                  "journal: \"%.300s\": %s: refusing to load a journal damaged in the middle", j->path,
                                  detail);
            goto fail;
        }
        if (r.r.letter == 'V') {
            /* Not a record to restore: the version of those after it. */
            if (!ts_record_version(buf + r.r.json, r.r.length, &version, why, sizeof why)) {
                snprintf(detail, sizeof detail, "bad version record at byte %zu: %s", off, why);
                status = create_error(error_message, TS_E_IO, "journal: \"%.300s\": %s", j->path, detail);
                goto fail;
            }
            if (version > newest) {
                newest = version;
                newest_at = off;
            }
            off = r.r.end;
            good_end = off;
            continue;
        }
        r.version = version;
        if (count == capacity) {
            size_t c = capacity ? capacity * 2 : 64;
            record_ref *grown = realloc(records, c * sizeof *grown);
            if (grown == NULL) {
                status = create_error(error_message, TS_E_NOMEM, "journal: \"%.300s\": %s", j->path, "out of memory");
                goto fail;
            }
            records = grown;
            capacity = c;
        }
        if (r.r.letter == 'S') last_snapshot = count;
        records[count++] = r;
        off = r.r.end;
        good_end = off;
    }

    /* A file written by a newer program is refused before anything is
     * restored: its records are of a version this program cannot read. */
    if (newest > j->version) {
        snprintf(detail, sizeof detail,
                 "it was written with state version %lu (the version record at byte %zu), newer than this program's "
                 "version %lu: a downgrade is refused, nothing was loaded",
                 (unsigned long)newest, newest_at, (unsigned long)j->version);
        status = create_error(error_message, TS_E_PLUGIN, "journal: \"%.300s\": %s", j->path, detail);
        goto fail;
    }
    j->file_version = version;

    /* A torn last record is cut off before anything is restored, so that a
     * failure to cut leaves the state as it was (found by make test-faults). */
    if (torn) {
        fprintf(stderr,
                "turnstate journal: warning: %s: the last record (byte %zu, %zu bytes) is incomplete or corrupt (%s), "
                "as after a crash mid-write: skipped; the file is cut back to %zu bytes\n",
                j->path, good_end, size - good_end, why, good_end);
        if (ftruncate(j->fd, (off_t)good_end) != 0 || fsync(j->fd) != 0) {
            status = create_error(error_message, TS_E_IO, "journal: cannot cut \"%.300s\" back after a torn record: %s",
                                  j->path, strerror(errno));
            goto fail;
        }
    }

    /* Restore: the last snapshot, then the actions after it. Keep the state
     * as it was first, to put it back if the restore fails halfway; without
     * that copy nothing is restored (found by make test-faults). */
    if (count > 0) {
        status = store->get_state(NULL, &original);
        if (status != TS_OK) {
            original = NULL;
            snprintf(detail, sizeof detail, "cannot keep a copy of the state before restoring it: %s",
                     store->status_name(status));
            status = create_error(error_message, status == TS_E_NOMEM ? TS_E_NOMEM : TS_E_PLUGIN, "journal: \"%.300s\": %s",
                                  j->path, detail);
            goto fail;
        }
    }
    if (last_snapshot != (size_t)-1) {
        record_ref *r = &records[last_snapshot];
        buf[r->r.json + r->r.length] = '\0';
        /* A snapshot of an older version is migrated (replace_state_from). */
        status = r->version == j->version ? store->replace_state(buf + r->r.json)
                                          : store->replace_state_from(buf + r->r.json, r->version);
        if (status != TS_OK && r->version != j->version) {
            snprintf(detail, sizeof detail, "restoring the snapshot at byte %zu (state version %lu) failed with %s: %.300s",
                     r->offset, (unsigned long)r->version, store->status_name(status), store->last_error());
        } else if (status != TS_OK) {
            snprintf(detail, sizeof detail, "restoring the snapshot at byte %zu failed with %s", r->offset,
                     store->status_name(status));
        }
        if (status != TS_OK) {
            status = create_error(error_message, TS_E_PLUGIN, "journal: \"%.300s\": %s", j->path, detail);
            goto fail;
        }
        restored = 1;
    }
    for (i = last_snapshot == (size_t)-1 ? 0 : last_snapshot + 1; i < count; i++) {
        record_ref *r = &records[i];
        buf[r->r.json + r->r.length] = '\0';
        status = store->dispatch(buf + r->r.json);
        restored = 1;
        if (status != TS_OK) {
            /* The reason, when the host's table can say it (a middleware
             * before the journal that refused: replicate.so names the fix). */
            const char *reason =
                TS_API_HAS(store, last_error) &&
                        store->last_error != NULL
                    ? store->last_error()
                    : NULL;
            snprintf(detail, sizeof detail,
                     "replaying the action record at byte %zu failed with %s: the journal does not fit this store's "
                     "reducers and middleware%s%.400s",
                     r->offset, store->status_name(status), reason && *reason ? ": " : "", reason ? reason : "");
            status = create_error(error_message, TS_E_PLUGIN, "journal: \"%.300s\": %s", j->path, detail);
            goto fail;
        }
        j->since_snapshot++;
    }

    if (size == 0 && j->fsync_mode != FSYNC_NEVER) sync_parent(j->path);
    j->end = (off_t)good_end;
    if (count > 0 && j->file_version != j->version) {
        /* Loaded from an older version: a version record and a snapshot of
         * the migrated state, so that the next load starts from it. Best
         * effort: without it the next load migrates again and replays the
         * same actions, to the same state. */
        e = write_snapshot(j);
        if (e == 0) e = sync_by_policy(j);
        if (e != 0) {
            fprintf(stderr, "turnstate journal: %s: could not write a snapshot of the state migrated to version %lu (%s)\n",
                    j->path, (unsigned long)j->version, strerror(e));
        }
    }
    free(records);
    free(buf);
    if (original) store->free(original);
    *self = j;
    return TS_OK;

fail:
    if (restored && original) {
        /* Put the state back as it was before create (best effort). */
        (void)store->replace_state(original);
    }
    if (original) store->free(original);
    free(records);
    free(buf);
    journal_free(j);
    return status == TS_OK ? TS_E_PLUGIN : status;
}

static void journal_destroy(void *self) {
    journal *j = self;
    if (j == NULL) return;
    if (j->fsync_mode != FSYNC_NEVER && j->unsynced > 0 && fsync(j->fd) != 0) {
        fprintf(stderr, "turnstate journal: %s: fsync at close failed: %s\n", j->path, strerror(errno));
    }
    journal_free(j);
}

static const ts_plugin descriptor = {
    TS_PLUGIN_ABI_VERSION, sizeof(ts_plugin), "journal", JOURNAL_VERSION, journal_create, journal_run, journal_destroy,
};

const ts_plugin *ts_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 1u ? &descriptor : NULL;
}
