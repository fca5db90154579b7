/*
 * fuzz_journal - the journal plugin's recovery from a damaged journal file.
 *
 * The input is written as the journal file, then the plugin is loaded into a
 * store with reducers. An input that starts with the line "#fix" is a list
 * of records "L json" (one per line) that the harness writes with correct
 * lengths and CRC-32s (ts_record_header of Plugins/common/record.h), so
 * that the fuzzer reaches the replay of well-formed records with any
 * content; other inputs are written as they are.
 *
 * Invariants:
 * - a refused load is TS_E_PLUGIN (or TS_E_NOMEM) with a message, and the
 *   state is byte-identical to the state before the load;
 * - an accepted load leaves a valid JSON state; the file it accepted (and
 *   maybe cut back) loads again into a new store with the same state; an
 *   action dispatched after the load is in the file: the next load gives
 *   the state the store had.
 */
#include "fuzz_common.h"

#include "../../Plugins/common/record.h" /* the "#fix" records: the journal's own writer */

#include <fcntl.h>
#include <sanitizer/common_interface_defs.h>
#include <sys/stat.h>

static char dir[256], journal_path[300], config[400], plugin[4200];
static int saved_stderr = -1, dev_null = -1;

/* The journal warns on stderr about every torn record: silence it during
 * loads (sanitizer reports go to the saved stderr). */
static void quiet(int on) {
    fflush(stderr);
    dup2(on ? dev_null : saved_stderr, 2);
}

static void cleanup(void) {
    if (dir[0]) {
        fz_empty_dir(dir);
        rmdir(dir);
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    const char *tmp = getenv("TMPDIR");
    (void)argc;
    (void)argv;
    snprintf(dir, sizeof dir, "%s/ts-fuzz-journal.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        abort();
    }
    atexit(cleanup);
    saved_stderr = dup(2);
    dev_null = open("/dev/null", O_WRONLY);
    if (saved_stderr < 0 || dev_null < 0) abort();
    __sanitizer_set_report_fd((void *)(intptr_t)saved_stderr);
    snprintf(journal_path, sizeof journal_path, "%s/state.journal", dir);
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"fsync\":\"never\",\"snapshot_every\":3}", journal_path);
    snprintf(plugin, sizeof plugin, "%s/journal.so", fz_plugin_dir());
    return 0;
}

static void write_file(const uint8_t *data, size_t size) {
    int fd = open(journal_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    FILE *f;
    if (fd < 0) abort();
    f = fdopen(fd, "wb");
    if (f == NULL) abort();
    if (size >= 5 && memcmp(data, "#fix\n", 5) == 0) {
        size_t p = 5;
        while (p < size) {
            const uint8_t *nl = memchr(data + p, '\n', size - p);
            size_t end = nl ? (size_t)(nl - data) : size;
            if (end - p >= 2 && data[p + 1] == ' ') {
                const char *json = (const char *)data + p + 2;
                size_t len = end - p - 2;
                char header[TS_RECORD_HEADER_MAX + 1];
                fwrite(header, 1, ts_record_header(header, (char)data[p], json, len), f);
                fwrite(json, 1, len, f);
            } else {
                fwrite(data + p, 1, end - p, f);
            }
            if (nl) fputc('\n', f);
            p = end + 1;
        }
    } else {
        fwrite(data, 1, size, f);
    }
    if (fclose(f) != 0) abort();
}

/* ---- The store ----------------------------------------------------------- */

static char *dup_text(const char *s) { return fz_strndup(s, strlen(s)); }

static char *keyed_reducer(const char *slice, const ts_action *action, void *ctx) {
    const char *key = ctx;
    size_t klen = strlen(key);
    if (slice == NULL) return dup_text("0");
    if (strncmp(action->type, key, klen) != 0) return NULL;
    if (strcmp(action->type + klen, "=") == 0) return action->payload ? dup_text(action->payload) : NULL;
    if (action->type[klen] == '!') return dup_text(action->type + klen + 1);
    if (strcmp(action->type + klen, "+") == 0 && action->payload && strlen(slice) < 4096) {
        size_t n = strlen(slice) + strlen(action->payload) + 4;
        char *out = malloc(n);
        if (out == NULL) abort();
        snprintf(out, n, "[%s,%s]", slice, action->payload);
        return out;
    }
    return NULL;
}

static int listener_calls;
static void listener(ts_store *store, void *ctx) {
    (void)store;
    (void)ctx;
    listener_calls++;
}

static ts_store *new_store(void) {
    ts_store *store = NULL;
    uint64_t token;
    FZ_CHECK(ts_store_create("{\"b\":[1,2]}", &store) == TS_OK, "ts_store_create");
    FZ_CHECK(ts_store_add_reducer(store, "a", keyed_reducer, (void *)"a") == TS_OK, "add_reducer a");
    FZ_CHECK(ts_store_add_reducer(store, "b", keyed_reducer, (void *)"b") == TS_OK, "add_reducer b");
    FZ_CHECK(ts_store_subscribe(store, NULL, listener, NULL, &token) == TS_OK, "subscribe");
    return store;
}

/* Loads the journal into a new store; TS_OK and the state in *state, or the
 * status (the state checked unchanged). */
static ts_status load(ts_store **out, char **state) {
    ts_store *store = new_store();
    char *before = fz_state(store), *after;
    ts_status s;
    quiet(1);
    s = ts_store_load_plugin(store, plugin, config);
    quiet(0);
    after = fz_state(store);
    if (s != TS_OK) {
        FZ_CHECK_FAILURE(s, "ts_store_load_plugin(journal)", TS_E_PLUGIN, TS_E_NOMEM);
        FZ_CHECK(strcmp(before, after) == 0, "a refused journal load changed the state:\n  before %.300s\n  after  %.300s",
                 before, after);
    } else {
        fz_check_state_text(after, "after loading the journal");
    }
    ts_free(before);
    *out = store;
    *state = after;
    return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ts_store *store;
    char *first, *second;
    ts_status s;

    write_file(data, size);
    s = load(&store, &first);
    ts_store_destroy(store);
    if (s == TS_OK) {
        /* What was accepted (and maybe cut back) loads again, the same. */
        s = load(&store, &second);
        FZ_CHECK(s == TS_OK, "the journal loaded once but not a second time (%s)", ts_status_name(s));
        FZ_CHECK(strcmp(first, second) == 0, "a second load gives another state:\n  first  %.300s\n  second %.300s", first,
                 second);
        ts_free(second);
        /* A new action is recorded. */
        s = ts_store_dispatch(store, "{\"type\":\"b=\",\"payload\":{\"k\":[true,null]}}");
        FZ_CHECK(s == TS_OK, "a dispatch after the load failed (%s)", ts_status_name(s));
        second = fz_state(store);
        ts_store_destroy(store);
        ts_free(first);
        s = load(&store, &first);
        FZ_CHECK(s == TS_OK, "the journal with one more action does not load (%s)", ts_status_name(s));
        FZ_CHECK(strcmp(first, second) == 0, "the reloaded state differs from the store's:\n  store  %.300s\n  loaded %.300s",
                 second, first);
        ts_free(second);
        ts_store_destroy(store);
    }
    ts_free(first);
    return 0;
}
