/*
 * recorder - a Turnstate middleware plugin: a flight recorder. It keeps the
 * last actions that reached the reducers, and the state before them, already
 * written in the journal's record format (Plugins/common/record.h), and dumps
 * them into a file when a reducer fails (TS_E_REDUCER) or the process gets a
 * fatal signal (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT). turnstate-testgen
 * turns the dump into a test that fails at that action (docs/testgen.md).
 *
 *   {"path": "crash.session", "actions": 100, "deny_types": ["secret"], "deny_keys": ["session"]}
 *
 * The signal handler only walks records that are already serialized and calls
 * open(2), write(2) and close(2), which are async-signal-safe; then it puts
 * back the handler that was there before and raises the signal again. A
 * thread that changes the records, or destroys the recorder, while another
 * thread's handler is writing a dump waits for that write to end. See
 * README.md.
 */
#define _XOPEN_SOURCE 700 /* SA_ONSTACK */

#include "turnstate_plugin.h"

#include "../common/patterns.h"
#include "../common/pjson.h"
#include "../common/record.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RECORDER_VERSION "1.0.0"
#define RECORDER_DEFAULT_ACTIONS 100u
#define RECORDER_MAX_ACTIONS 1000000u
#define RECORDER_MAX_INSTANCES 16

/* One record, header and newline included, ready for write(2). */
typedef struct rec {
    size_t length;
    char text[]; /* flexible array member (C99) */
} rec;

/* A snapshot and the actions after it, at most `capacity`. */
typedef struct segment {
    rec *snapshot;
    rec **actions;
    size_t count;
} segment;

typedef struct recorder {
    const ts_store_api *store;
    char *path;
    size_t capacity; /* "actions" */
    int signals, on_reducer_failure;
    ts_pattern_list deny_types, allow_types, deny_keys, allow_keys;
    int has_allow_types, has_allow_keys;
    pthread_mutex_t lock; /* the segments, against destroy; never taken in the signal handler */
    /* What the signal handler reads. `busy` is set while the segments change
     * (begin_change): a handler that starts then writes nothing (it would
     * read a half-made ring), and one already writing is waited for. */
    segment old, cur;
    /* The actions under way, outermost first (a listener's dispatch runs
     * inside its outer one): each one's record until it joins the ring, and
     * the snapshot taken before it when the newer segment was full. */
    struct pending {
        rec *record;
        rec *snapshot;
    } *stack;
    size_t depth, stack_capacity;
    volatile sig_atomic_t busy;
    unsigned long dumps;
} recorder;

/* ---- Config ------------------------------------------------------------------ */

static char *dup_text(const char *text) {
    size_t n = strlen(text) + 1;
    char *m = malloc(n);
    if (m) memcpy(m, text, n);
    return m;
}

/* Reads an array of non-empty strings; 0 with err filled on failure. */
static int read_patterns(const char *name, const char *v, ts_pattern_list *out, char *err, size_t err_size) {
    pj_iter it;
    const char *e;
    int r;
    if (!pj_begin(&it, v, '[')) {
        snprintf(err, err_size, "recorder: config field \"%s\" must be an array of strings, not %s", name,
                 pj_kind_name(pj_kind_of(v)));
        return 0;
    }
    while ((r = pj_next_element(&it, &e)) == 1) {
        ts_pattern *grown;
        int made;
        if (pj_kind_of(e) != PJ_STRING) {
            snprintf(err, err_size, "recorder: config field \"%s\" must hold only strings, not %s", name,
                     pj_kind_name(pj_kind_of(e)));
            return 0;
        }
        grown = realloc(out->items, (out->count + 1) * sizeof *grown);
        if (grown == NULL) {
            snprintf(err, err_size, "recorder: out of memory");
            return 0;
        }
        out->items = grown;
        made = ts_pattern_make(pj_ws(e), &out->items[out->count]);
        if (made == 0) {
            snprintf(err, err_size, "recorder: out of memory");
            return 0;
        }
        out->count++;
        if (made < 0 || (out->items[out->count - 1].length == 0 && !out->items[out->count - 1].prefix)) {
            snprintf(err, err_size, "recorder: config field \"%s\" holds %s", name,
                     made < 0 ? "a string with \\u0000 (NUL)" : "an empty string");
            return 0;
        }
    }
    if (r < 0) {
        snprintf(err, err_size, "recorder: config field \"%s\" is malformed", name);
        return 0;
    }
    return 1;
}

/* Whether `text` (length bytes) matches one of the patterns. */
static int matches(const ts_pattern_list *p, const char *text, size_t length) {
    return ts_pattern_first(p, text, length) != NULL;
}

/* ---- Records ------------------------------------------------------------------- */

static rec *make_record(char letter, const char *json, size_t length) {
    char header[TS_RECORD_HEADER_MAX + 1];
    size_t h = ts_record_header(header, letter, json, length);
    rec *r = malloc(sizeof *r + h + length + 1);
    if (r == NULL) return NULL;
    memcpy(r->text, header, h);
    memcpy(r->text + h, json, length);
    r->text[h + length] = '\n';
    r->length = h + length + 1;
    return r;
}

static void free_segment(segment *s) {
    for (size_t i = 0; i < s->count; i++) free(s->actions[i]);
    free(s->actions);
    free(s->snapshot);
    memset(s, 0, sizeof *s);
}

/* The state as the dump shows it: the top-level keys that deny_keys names (or
 * that allow_keys does not name) left out. A snapshot record, or NULL. */
static rec *snapshot_record(recorder *r) {
    char *state = NULL, *out;
    pj_iter it;
    const char *k, *v;
    size_t at = 0;
    int more;
    rec *made;
    if (r->store->get_state(NULL, &state) != TS_OK || state == NULL) return NULL;
    if (r->deny_keys.count == 0 && !r->has_allow_keys) {
        made = make_record('S', state, strlen(state));
        r->store->free(state);
        return made;
    }
    out = malloc(strlen(state) + 3);
    if (out == NULL || !pj_begin(&it, state, '{')) {
        free(out);
        r->store->free(state);
        return NULL;
    }
    out[at++] = '{';
    while ((more = pj_next_member(&it, &k, &v)) == 1) {
        const char *end = pj_skip(v);
        size_t key_length = 0;
        char *key = pj_str_dup(k, &key_length);
        int keep;
        if (key == NULL || end == NULL) {
            free(key);
            more = -1;
            break;
        }
        keep = r->has_allow_keys ? matches(&r->allow_keys, key, key_length)
                                 : !matches(&r->deny_keys, key, key_length);
        free(key);
        if (!keep) continue;
        if (at > 1) out[at++] = ',';
        memcpy(out + at, k, (size_t)(end - k)); /* "key":value, as the library wrote it (minified) */
        at += (size_t)(end - k);
    }
    out[at++] = '}';
    made = more < 0 ? NULL : make_record('S', out, at);
    free(out);
    r->store->free(state);
    return made;
}

/* ---- The dump ---------------------------------------------------------------------- */

static int write_all(int fd, const char *text, size_t length) {
    while (length > 0) {
        ssize_t n = write(fd, text, length);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        text += n;
        length -= (size_t)n;
    }
    return 0;
}

/* Writes the snapshot, the actions after it and the actions under way to fd.
 * Async-signal-safe: write(2) only, on records made beforehand. */
static int write_session(const recorder *r, int fd) {
    const segment *first = r->old.snapshot ? &r->old : &r->cur;
    if (first->snapshot == NULL || write_all(fd, first->snapshot->text, first->snapshot->length) != 0) return -1;
    for (size_t i = 0; r->old.snapshot && i < r->old.count; i++)
        if (write_all(fd, r->old.actions[i]->text, r->old.actions[i]->length) != 0) return -1;
    for (size_t i = 0; i < r->cur.count; i++)
        if (write_all(fd, r->cur.actions[i]->text, r->cur.actions[i]->length) != 0) return -1;
    for (size_t i = 0; i < r->depth; i++)
        if (r->stack[i].record && write_all(fd, r->stack[i].record->text, r->stack[i].record->length) != 0) return -1;
    return 0;
}

/* A dump outside a signal handler: written beside the file, then renamed
 * over it, so the file is always a whole session. */
static void dump_now(recorder *r, const char *why) {
    size_t n = strlen(r->path) + 16;
    char *temp = malloc(n);
    int fd, ok;
    if (temp == NULL) return;
    snprintf(temp, n, "%s.tmp", r->path);
    fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    ok = fd >= 0 && write_session(r, fd) == 0;
    if (fd >= 0 && close(fd) != 0) ok = 0;
    if (ok && rename(temp, r->path) == 0) {
        r->dumps++;
        fprintf(stderr, "turnstate recorder: %s: the last actions and the state before them are in %s "
                "(turnstate-testgen makes a test of it)\n", why, r->path);
    } else {
        fprintf(stderr, "turnstate recorder: %s, but writing %s failed: %s\n", why, r->path, strerror(errno));
        unlink(temp);
    }
    free(temp);
}

/* ---- Fatal signals ---------------------------------------------------------------- */

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define FATAL_COUNT (sizeof fatal_signals / sizeof fatal_signals[0])
static struct sigaction previous[FATAL_COUNT];
static recorder *instances[RECORDER_MAX_INSTANCES]; /* __atomic: read by the handler */
static int installed; /* guarded by registry */
static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;
/* How many threads are in on_fatal now (__atomic). Whoever frees what the
 * handler reads (a record, a recorder) first makes it unreachable for a
 * handler that starts later (`busy`, or the slot emptied), then waits for
 * this to be 0, so a handler already writing never reads freed memory. */
static int in_handler;

/* Waits until no thread is in on_fatal. Called after making the records or
 * the recorder unreachable; a handler that starts after that finds nothing
 * to read. A handler writes a dump and ends, so the wait is as long as one
 * dump's write(2) calls (and a handler never takes a lock). */
static void wait_for_handlers(void) {
    struct timespec pause = {0, 100000}; /* 0.1 ms */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    while (__atomic_load_n(&in_handler, __ATOMIC_SEQ_CST) != 0) nanosleep(&pause, NULL);
}

static void say(const char *text) {
    ssize_t ignored = write(2, text, strlen(text));
    (void)ignored;
}

static void on_fatal(int sig) {
    size_t i;
    __atomic_add_fetch(&in_handler, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < RECORDER_MAX_INSTANCES; i++) {
        recorder *r = __atomic_load_n(&instances[i], __ATOMIC_SEQ_CST);
        int fd;
        if (r == NULL) continue;
        if (__atomic_load_n(&r->busy, __ATOMIC_SEQ_CST)) {
            say("turnstate recorder: a fatal signal while the recorder was updating its records: no dump\n");
            continue;
        }
        fd = open(r->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0 || write_session(r, fd) != 0) {
            say("turnstate recorder: a fatal signal, and writing the dump failed: ");
            say(r->path);
            say("\n");
        } else {
            say("turnstate recorder: a fatal signal: the last actions and the state before them are in ");
            say(r->path);
            say("\n");
        }
        if (fd >= 0) close(fd);
    }
    __atomic_sub_fetch(&in_handler, 1, __ATOMIC_SEQ_CST);
    /* The handler that was there before (the default: the process ends with
     * this signal), when this one returns. */
    for (i = 0; i < FATAL_COUNT; i++)
        if (fatal_signals[i] == sig) sigaction(sig, &previous[i], NULL);
    raise(sig);
}

static int register_instance(recorder *r) {
    int slot = -1;
    pthread_mutex_lock(&registry);
    for (int i = 0; i < RECORDER_MAX_INSTANCES; i++)
        if (instances[i] == NULL) {
            slot = i;
            break;
        }
    if (slot >= 0) {
        if (!installed) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_fatal;
            sigemptyset(&sa.sa_mask);
            sa.sa_flags = SA_ONSTACK;
            for (size_t i = 0; i < FATAL_COUNT; i++) sigaction(fatal_signals[i], &sa, &previous[i]);
            installed = 1;
        }
        __atomic_store_n(&instances[slot], r, __ATOMIC_SEQ_CST);
    }
    pthread_mutex_unlock(&registry);
    return slot >= 0;
}

static void unregister_instance(recorder *r) {
    int left = 0;
    pthread_mutex_lock(&registry);
    for (int i = 0; i < RECORDER_MAX_INSTANCES; i++) {
        if (instances[i] == r) __atomic_store_n(&instances[i], NULL, __ATOMIC_SEQ_CST);
        left += instances[i] != NULL;
    }
    if (installed && left == 0) {
        /* Put back the handlers that were there before, where ours is still set. */
        for (size_t i = 0; i < FATAL_COUNT; i++) {
            struct sigaction now;
            if (sigaction(fatal_signals[i], NULL, &now) == 0 && now.sa_handler == on_fatal)
                sigaction(fatal_signals[i], &previous[i], NULL);
        }
        installed = 0;
    }
    pthread_mutex_unlock(&registry);
    wait_for_handlers(); /* one that found r before its slot was emptied */
}

/* ---- The plugin --------------------------------------------------------------------- */

/* Around every change of the segments or the stack (with the lock held): a
 * handler that starts now writes nothing, and one that started before has
 * ended before anything it may be reading is freed or moved. */
static void begin_change(recorder *r) {
    __atomic_store_n(&r->busy, 1, __ATOMIC_SEQ_CST);
    wait_for_handlers();
}

static void end_change(recorder *r) { __atomic_store_n(&r->busy, 0, __ATOMIC_SEQ_CST); }

static void free_recorder(recorder *r) {
    free_segment(&r->old);
    free_segment(&r->cur);
    for (size_t i = 0; i < r->depth; i++) {
        free(r->stack[i].record);
        free(r->stack[i].snapshot);
    }
    free(r->stack);
    free(r->path);
    ts_pattern_list_free(&r->deny_types);
    ts_pattern_list_free(&r->allow_types);
    ts_pattern_list_free(&r->deny_keys);
    ts_pattern_list_free(&r->allow_keys);
    free(r);
}

static int read_bool(const char *name, const char *v, int *out, char *err, size_t err_size) {
    enum pj_kind k = pj_kind_of(v);
    if (k != PJ_TRUE && k != PJ_FALSE) {
        snprintf(err, err_size, "recorder: config field \"%s\" must be true or false, not %s", name, pj_kind_name(k));
        return 0;
    }
    *out = k == PJ_TRUE;
    return 1;
}

static ts_status recorder_create(const char *config_json, const ts_store_api *store, void **self,
                                 char **error_message) {
    char err[400];
    pj_iter it;
    const char *k, *v;
    int r, has_deny_types = 0, has_deny_keys = 0;
    uint64_t actions = RECORDER_DEFAULT_ACTIONS;
    recorder *rec_ = NULL;
    if (self == NULL || store == NULL) return TS_E_ARGUMENT;
    if (config_json == NULL) config_json = "{}";
    rec_ = calloc(1, sizeof *rec_);
    if (rec_ == NULL) {
        snprintf(err, sizeof err, "recorder: out of memory");
        goto fail;
    }
    rec_->store = store;
    rec_->signals = 1;
    rec_->on_reducer_failure = 1;
    if (!pj_begin(&it, config_json, '{')) {
        snprintf(err, sizeof err, "recorder: the config must be a JSON object, not %s",
                 pj_kind_name(pj_kind_of(config_json)));
        goto fail;
    }
    while ((r = pj_next_member(&it, &k, &v)) == 1) {
        if (pj_str_eq(k, "path")) {
            size_t length = 0;
            if (pj_kind_of(v) != PJ_STRING) {
                snprintf(err, sizeof err, "recorder: config field \"path\" must be a string, not %s",
                         pj_kind_name(pj_kind_of(v)));
                goto fail;
            }
            rec_->path = pj_str_dup(pj_ws(v), &length);
            if (rec_->path == NULL || length == 0 || strlen(rec_->path) != length) {
                snprintf(err, sizeof err, "recorder: config field \"path\" must be a non-empty file name without "
                         "\\u0000");
                goto fail;
            }
        } else if (pj_str_eq(k, "actions")) {
            int got = pj_kind_of(v) == PJ_NUMBER ? pj_uint64(v, &actions) : PJ_U64_NOT_INTEGER;
            if (got != PJ_U64_OK || actions < 1 || actions > RECORDER_MAX_ACTIONS) {
                snprintf(err, sizeof err, "recorder: config field \"actions\" must be an integer from 1 to %u, not %s",
                         RECORDER_MAX_ACTIONS,
                         got != PJ_U64_OK ? pj_uint64_why(pj_kind_of(v), got) : actions < 1 ? "0" : "a larger number");
                goto fail;
            }
        } else if (pj_str_eq(k, "signals")) {
            if (!read_bool("signals", v, &rec_->signals, err, sizeof err)) goto fail;
        } else if (pj_str_eq(k, "on_reducer_failure")) {
            if (!read_bool("on_reducer_failure", v, &rec_->on_reducer_failure, err, sizeof err)) goto fail;
        } else if (pj_str_eq(k, "deny_types")) {
            if (!read_patterns("deny_types", v, &rec_->deny_types, err, sizeof err)) goto fail;
            has_deny_types = 1;
        } else if (pj_str_eq(k, "allow_types")) {
            if (!read_patterns("allow_types", v, &rec_->allow_types, err, sizeof err)) goto fail;
            rec_->has_allow_types = 1;
        } else if (pj_str_eq(k, "deny_keys")) {
            if (!read_patterns("deny_keys", v, &rec_->deny_keys, err, sizeof err)) goto fail;
            has_deny_keys = 1;
        } else if (pj_str_eq(k, "allow_keys")) {
            if (!read_patterns("allow_keys", v, &rec_->allow_keys, err, sizeof err)) goto fail;
            rec_->has_allow_keys = 1;
        } else {
            char name[200];
            pj_str_show(k, name, sizeof name);
            snprintf(err, sizeof err, "recorder: unknown config field \"%s\" (known: \"path\", \"actions\", "
                     "\"signals\", \"on_reducer_failure\", \"deny_types\", \"allow_types\", \"deny_keys\", "
                     "\"allow_keys\")", name);
            goto fail;
        }
    }
    if (r < 0) {
        snprintf(err, sizeof err, "recorder: the config is malformed JSON");
        goto fail;
    }
    if (rec_->path == NULL) {
        snprintf(err, sizeof err, "recorder: config field \"path\" (the dump's file) is required");
        goto fail;
    }
    if (has_deny_types && rec_->has_allow_types) {
        snprintf(err, sizeof err, "recorder: give \"deny_types\" or \"allow_types\", not both");
        goto fail;
    }
    if (has_deny_keys && rec_->has_allow_keys) {
        snprintf(err, sizeof err, "recorder: give \"deny_keys\" or \"allow_keys\", not both");
        goto fail;
    }
    rec_->capacity = (size_t)actions;
    rec_->old.actions = NULL;
    rec_->cur.actions = malloc(rec_->capacity * sizeof *rec_->cur.actions);
    if (rec_->cur.actions == NULL || pthread_mutex_init(&rec_->lock, NULL) != 0) {
        snprintf(err, sizeof err, "recorder: out of memory");
        goto fail;
    }
    rec_->cur.snapshot = snapshot_record(rec_);
    if (rec_->cur.snapshot == NULL) {
        pthread_mutex_destroy(&rec_->lock);
        snprintf(err, sizeof err, "recorder: could not read the store's state");
        goto fail;
    }
    if (rec_->signals && !register_instance(rec_)) {
        pthread_mutex_destroy(&rec_->lock);
        snprintf(err, sizeof err, "recorder: at most %d recorders with \"signals\" in one process",
                 RECORDER_MAX_INSTANCES);
        goto fail;
    }
    *self = rec_;
    return TS_OK;
fail:
    if (rec_) free_recorder(rec_);
    if (error_message) *error_message = dup_text(err);
    return TS_E_PLUGIN;
}

/* Appends a record to the ring (called with the lock held and busy set). When
 * the newer segment is full, it becomes the older one and `*snapshot` (the
 * state before this action) starts the next; without one (out of memory) the
 * record is dropped. Takes the record and, if used, the snapshot. */
static void commit(recorder *r, rec *record, rec **snapshot) {
    if (r->cur.count == r->capacity) {
        rec **spare;
        if (*snapshot == NULL ||
            (r->old.actions == NULL && (r->old.actions = malloc(r->capacity * sizeof *r->old.actions)) == NULL)) {
            free(record);
            return;
        }
        spare = r->old.actions;
        for (size_t i = 0; i < r->old.count; i++) free(r->old.actions[i]);
        free(r->old.snapshot);
        r->old = r->cur;
        r->cur.actions = spare;
        r->cur.count = 0;
        r->cur.snapshot = *snapshot;
        *snapshot = NULL;
    }
    r->cur.actions[r->cur.count++] = record;
}

static ts_status recorder_run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
    recorder *r = self;
    size_t type_length = strlen(action->type);
    int kept = r->has_allow_types ? matches(&r->allow_types, action->type, type_length)
                                  : !matches(&r->deny_types, action->type, type_length);
    struct pending mine;
    ts_status status;
    (void)store;
    if (!kept) return next(action->json);
    mine.record = make_record('A', action->json, strlen(action->json));
    if (mine.record == NULL) return next(action->json); /* out of memory: this action is not recorded */
    pthread_mutex_lock(&r->lock);
    begin_change(r);
    /* A nested run (a listener dispatches): the outer actions under way have
     * reached the reducers already; they join the ring first, in the order the
     * reducers saw them (as the journal records them). */
    for (size_t i = 0; i < r->depth; i++) {
        if (r->stack[i].record == NULL) continue;
        commit(r, r->stack[i].record, &r->stack[i].snapshot);
        r->stack[i].record = NULL;
    }
    if (r->depth == r->stack_capacity) {
        size_t capacity = r->stack_capacity ? r->stack_capacity * 2 : 4;
        struct pending *grown = realloc(r->stack, capacity * sizeof *grown);
        if (grown == NULL) {
            end_change(r);
            pthread_mutex_unlock(&r->lock);
            free(mine.record);
            return next(action->json); /* out of memory: this action is not recorded */
        }
        r->stack = grown;
        r->stack_capacity = capacity;
    }
    /* The newer segment is full: the state before this action starts the next. */
    mine.snapshot = r->cur.count == r->capacity ? snapshot_record(r) : NULL;
    r->stack[r->depth++] = mine;
    end_change(r);
    pthread_mutex_unlock(&r->lock);

    status = next(action->json);

    pthread_mutex_lock(&r->lock);
    if (status == TS_E_REDUCER && r->on_reducer_failure) {
        char why[300];
        snprintf(why, sizeof why, "a reducer failed (TS_E_REDUCER) for \"%.200s\"", action->type);
        dump_now(r, why); /* this action still under way: the last record */
    }
    begin_change(r);
    mine = r->stack[--r->depth];
    if (mine.record != NULL) {
        if (status == TS_OK) commit(r, mine.record, &mine.snapshot);
        else free(mine.record);
    }
    end_change(r);
    pthread_mutex_unlock(&r->lock);
    free(mine.snapshot);
    return status;
}

static void recorder_destroy(void *self) {
    recorder *r = self;
    if (r == NULL) return;
    if (r->signals) unregister_instance(r);
    pthread_mutex_destroy(&r->lock);
    free_recorder(r);
}

static const ts_plugin descriptor = {
    TS_PLUGIN_ABI_VERSION, sizeof(ts_plugin), "recorder", RECORDER_VERSION, recorder_create, recorder_run,
    recorder_destroy,
};

const ts_plugin *ts_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 1u ? &descriptor : NULL;
}
