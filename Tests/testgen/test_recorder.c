/*
 * test_recorder.c - the flight recorder plugin (Plugins/recorder): its config
 * refusals, a dump on a reducer failure (TS_E_REDUCER) with the deny rules for
 * action types and state keys applied and only the last actions kept, a dump
 * on a fatal signal (SIGSEGV, in a forked child), and the signal handlers put
 * back when the last recorder goes. On the one C harness (Tests/harness/
 * ts_test.h; run.py writes the registry with gen_registry.py). Usage:
 *     test_recorder [--quick] [-l] [-s NAME]... RECORDER.so WORK_DIR
 * Leaves WORK_DIR/reducer.session and WORK_DIR/crash.session for run.py,
 * which makes tests of them with turnstate-testgen. Prints "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L
#include "ts_test.h"

#include "bug_reducers.c"

#include "../../Plugins/common/record.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Under AddressSanitizer, ASan's own SIGSEGV handler was there before the
 * recorder's: the recorder dumps, then gives the signal to it, and the child
 * ends as ASan ends it (its report, exit status 1), as it would without the
 * recorder. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifndef UNDER_ASAN
#define UNDER_ASAN 0
#endif

/* The suite's arguments (ts_test_suite_option): the plugin and the folder
 * its dumps go to. */
static const char *plugin, *work;

/* A check named by what it guards (printed as the failed expression), with
 * the condition and `detail` (the error, the dump's text; may be NULL) below. */
#define RC_CHECK(name, cond, detail) rc_check((cond) ? 1 : 0, __FILE__, __LINE__, (name), #cond, (detail))
static int rc_check(int ok, const char *file, int line, const char *name, const char *cond, const char *detail) {
    return ts_test_reportf(ok, file, line, name, "%s%s%.600s", cond, detail ? "\n" : "", detail ? detail : "");
}

int ts_test_suite_option(int argc, char **argv, int i) {
    (void)argc;
    if (argv[i][0] == '-') return 0;
    if (plugin == NULL) plugin = argv[i];
    else if (work == NULL) work = argv[i];
    else return 0;
    return 1;
}

void ts_test_suite_setup(void) {
    if (plugin == NULL || work == NULL) {
        fprintf(stderr, "usage: %s [--quick] [-l] [-s NAME]... RECORDER.so WORK_DIR\n", ts_test_program);
        exit(2);
    }
}

static char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    char *data;
    long n;
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc((size_t)n + 1);
    if (data && fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    if (data) data[n] = '\0';
    fclose(f);
    *size = (size_t)n;
    return data;
}

/* The records of a dump: how many actions, the snapshot's text, the last
 * action's type text; 0 if a record is bad or the shape is not S A... */
typedef struct dump {
    size_t actions;
    char snapshot[512];
    char last[256];
    long incs; /* "counter/inc" actions */
} dump;

static int read_dump(const char *path, dump *d, char *why, size_t why_size) {
    size_t size = 0, offset = 0;
    char *text = read_file(path, &size);
    ts_record r;
    memset(d, 0, sizeof *d);
    if (text == NULL) {
        snprintf(why, why_size, "cannot read %s", path);
        return 0;
    }
    while (offset < size) {
        if (!ts_record_read(text, size, offset, &r, why, why_size)) {
            free(text);
            return 0;
        }
        if (offset == 0 && r.letter != 'S') {
            snprintf(why, why_size, "the first record is not a snapshot");
            free(text);
            return 0;
        }
        if (offset == 0) {
            snprintf(d->snapshot, sizeof d->snapshot, "%.*s", (int)r.length, text + r.json);
        } else if (r.letter == 'A') {
            d->actions++;
            snprintf(d->last, sizeof d->last, "%.*s", (int)r.length, text + r.json);
            if (strstr(d->last, "\"counter/inc\"")) d->incs++;
        } else {
            snprintf(why, why_size, "a snapshot after an action");
            free(text);
            return 0;
        }
        offset = r.end;
    }
    free(text);
    return 1;
}

static ts_store *new_store(void) {
    ts_store *store = NULL;
    if (ts_store_create("{}", &store) != TS_OK || ts_testgen_setup(store) != TS_OK) {
        RC_CHECK("the store with bug_reducers.c's reducers is made", 0, ts_last_error());
        ts_store_destroy(store);
        return NULL;
    }
    return store;
}

void test_recorder__badConfigsAreRefusedNamingTheField(void) {
    static const struct {
        const char *config, *message;
    } cases[] = {
        {"{}", "recorder: config field \"path\" (the dump's file) is required"},
        {"{\"path\":3}", "recorder: config field \"path\" must be a string, not a number"},
        {"{\"path\":\"\"}", "recorder: config field \"path\" must be a non-empty file name"},
        {"{\"path\":\"x\",\"actions\":0}", "recorder: config field \"actions\" must be an integer from 1 to 1000000, not 0"},
        {"{\"path\":\"x\",\"actions\":1.5}", "recorder: config field \"actions\" must be an integer from 1 to 1000000"},
        {"{\"path\":\"x\",\"signals\":1}", "recorder: config field \"signals\" must be true or false, not a number"},
        {"{\"path\":\"x\",\"deny_keys\":\"user\"}", "recorder: config field \"deny_keys\" must be an array of strings, not a string"},
        {"{\"path\":\"x\",\"deny_types\":[\"a\",2]}", "recorder: config field \"deny_types\" must hold only strings"},
        {"{\"path\":\"x\",\"allow_keys\":[\"\"]}", "recorder: config field \"allow_keys\" holds an empty string"},
        {"{\"path\":\"x\",\"deny_types\":[\"a\"],\"allow_types\":[\"b\"]}", "recorder: give \"deny_types\" or \"allow_types\", not both"},
        {"{\"path\":\"x\",\"deny_keys\":[\"a\"],\"allow_keys\":[\"b\"]}", "recorder: give \"deny_keys\" or \"allow_keys\", not both"},
        {"{\"path\":\"x\",\"colour\":1}", "recorder: unknown config field \"colour\""},
        {"[]", "recorder: the config must be a JSON object, not an array"},
    };
    ts_store *store = new_store();
    char what[400];
    if (store == NULL) return;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ts_status status = ts_store_load_plugin(store, plugin, cases[i].config);
        snprintf(what, sizeof what, "config %s is refused: %s", cases[i].config, cases[i].message);
        RC_CHECK(what, status == TS_E_PLUGIN && strstr(ts_last_error(), cases[i].message) != NULL,
                 ts_last_error());
    }
    RC_CHECK("the store works after the refusals", ts_store_dispatch(store, "{\"type\":\"counter/inc\"}") == TS_OK,
             NULL);
    ts_store_destroy(store);
}

/* Leaves WORK_DIR/reducer.session: run.py makes a test of it. */
void test_recorder__reducerFailureDumpsTheLastActionsWithoutDeniedTypesOrKeys(void) {
    char path[1024], config[1400], why[300];
    ts_store *store = new_store();
    dump d;
    char *state = NULL;
    long count = 0;
    if (store == NULL) return;
    snprintf(path, sizeof path, "%s/reducer.session", work);
    unlink(path);
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"actions\":3,\"signals\":false,"
             "\"deny_types\":[\"secret/*\"],\"deny_keys\":[\"session\"]}", path);
    RC_CHECK("the recorder loads", ts_store_load_plugin(store, plugin, config) == TS_OK, ts_last_error());
    ts_store_dispatch(store, "{\"type\":\"counter/inc\"}");
    ts_store_dispatch(store, "{\"type\":\"secret/login\",\"payload\":{\"token\":\"hunter2\"}}");
    ts_store_dispatch(store, "{\"type\":\"items/add\",\"payload\":{\"n\":1}}");
    RC_CHECK("no dump while the reducers succeed", access(path, F_OK) != 0, NULL);
    for (int i = 0; i < 7; i++) ts_store_dispatch(store, "{\"type\":\"counter/inc\"}");
    ts_store_dispatch(store, "{\"type\":\"items/add\",\"payload\":{\"n\":2}}");
    RC_CHECK("items/boom fails (TS_E_REDUCER)",
             ts_store_dispatch(store, "{\"type\":\"items/boom\"}") == TS_E_REDUCER, NULL);
    RC_CHECK("a reducer failure dumps a session of good records", read_dump(path, &d, why, sizeof why), why);
    RC_CHECK("its last action is the one that failed", strstr(d.last, "\"items/boom\"") != NULL, d.last);
    RC_CHECK("it holds the last 3 to 6 recorded actions and the failed one", d.actions >= 4 && d.actions <= 7, NULL);
    RC_CHECK("deny_keys: the snapshot has no \"session\" key, and the others",
             strstr(d.snapshot, "\"session\"") == NULL && strstr(d.snapshot, "\"count\"") != NULL, d.snapshot);
    ts_store_get_state(store, "/count", &state);
    if (state) count = strtol(state, NULL, 10);
    ts_free(state);
    {
        long before = strtol(strstr(d.snapshot, "\"count\":") ? strstr(d.snapshot, "\"count\":") + 8 : "-1", NULL, 10);
        RC_CHECK("the snapshot is the state before the first action of the dump (count + its incs = the count now)",
                 before >= 0 && before + d.incs == count, d.snapshot);
    }
    {
        size_t size = 0;
        char *text = read_file(path, &size);
        RC_CHECK("deny_types: no secret/login action, no token in the dump",
                 text && strstr(text, "hunter2") == NULL && strstr(text, "secret/login") == NULL, NULL);
        free(text);
    }
    ts_store_destroy(store);
}

/* The crash in a forked child (the test program goes on); leaves
 * WORK_DIR/crash.session for run.py. */
void test_recorder__fatalSignalDumpsAndTheChildDiesAsWithoutTheRecorder(void) {
    char path[1024], config[1200], why[300];
    pid_t child;
    int status = 0;
    dump d;
    snprintf(path, sizeof path, "%s/crash.session", work);
    unlink(path);
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"actions\":10}", path);
    fflush(stdout);
    fflush(stderr);
    child = fork();
    if (child < 0) {
        RC_CHECK("the child is forked", 0, strerror(errno));
        return;
    }
    if (child == 0) {
        ts_store *store = new_store();
        if (store == NULL || ts_store_load_plugin(store, plugin, config) != TS_OK) _exit(3);
        ts_store_dispatch(store, "{\"type\":\"counter/inc\"}");
        ts_store_dispatch(store, "{\"type\":\"items/add\",\"payload\":{\"n\":1}}");
        ts_store_dispatch(store, "{\"type\":\"items/crash\"}");
        _exit(4); /* not reached */
    }
    waitpid(child, &status, 0);
    if (UNDER_ASAN)
        RC_CHECK("the child ends as AddressSanitizer ends it (the handler that was there before)",
                 WIFEXITED(status) && WEXITSTATUS(status) == 1, NULL);
    else
        RC_CHECK("the child dies of SIGSEGV, as it would without the recorder",
                 WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV, NULL);
    RC_CHECK("the fatal signal dumps a session of good records", read_dump(path, &d, why, sizeof why), why);
    RC_CHECK("it holds the actions and, last, the one that crashed",
             d.actions == 3 && strstr(d.last, "\"items/crash\"") != NULL, d.last);
}

static void on_count(ts_store *store, void *ctx) {
    int *fired = ctx;
    if ((*fired)++ == 0) ts_store_dispatch(store, "{\"type\":\"items/add\",\"payload\":{\"from\":\"listener\"}}");
}

/* A listener's dispatch runs inside the outer one, after the outer action
 * reached the reducers: the dump must list the outer action first. */
void test_recorder__listenerDispatchIsRecordedAfterTheActionWhoseListenerMadeIt(void) {
    char path[1024], config[1200];
    size_t size = 0;
    int fired = 0;
    uint64_t token;
    ts_store *store = new_store();
    char *text;
    const char *inc, *add;
    if (store == NULL) return;
    snprintf(path, sizeof path, "%s/nested.session", work);
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"signals\":false}", path);
    ts_store_subscribe(store, "/count", on_count, &fired, &token);
    RC_CHECK("a recorder for the nested dispatch loads", ts_store_load_plugin(store, plugin, config) == TS_OK,
             ts_last_error());
    ts_store_dispatch(store, "{\"type\":\"counter/inc\"}");
    ts_store_dispatch(store, "{\"type\":\"items/boom\"}");
    text = read_file(path, &size);
    inc = text ? strstr(text, "counter/inc") : NULL;
    add = text ? strstr(text, "items/add") : NULL;
    RC_CHECK("a listener's dispatch is recorded after the action whose listener made it", inc && add && inc < add,
             text ? text : "no dump");
    free(text);
    ts_store_destroy(store);
}

static void on_user(int sig) { (void)sig; }

void test_recorder__destroyingTheLastRecorderPutsBackTheSignalHandler(void) {
    struct sigaction mine, now;
    char config[1200];
    ts_store *store = new_store();
    if (store == NULL) return;
    memset(&mine, 0, sizeof mine);
    mine.sa_handler = on_user;
    sigemptyset(&mine.sa_mask);
    sigaction(SIGBUS, &mine, NULL);
    snprintf(config, sizeof config, "{\"path\":\"%s/unused.session\"}", work);
    ts_store_load_plugin(store, plugin, config);
    sigaction(SIGBUS, NULL, &now);
    RC_CHECK("a recorder with signals sets its handler", now.sa_handler != on_user, NULL);
    ts_store_destroy(store);
    sigaction(SIGBUS, NULL, &now);
    RC_CHECK("destroying the last recorder puts back the handler that was there", now.sa_handler == on_user, NULL);
    signal(SIGBUS, SIG_DFL);
}

static volatile sig_atomic_t abort_seen;
static void on_abort_return(int sig) {
    (void)sig;
    abort_seen = 1;
}

static void *raise_abort(void *unused) {
    (void)unused;
    raise(SIGABRT); /* the recorder's handler dumps into the pipe, then ours returns */
    return NULL;
}

typedef struct destroyer {
    ts_store *store;
    int done; /* __atomic */
} destroyer;

static void *destroy_store(void *arg) {
    destroyer *d = arg;
    ts_store_destroy(d->store);
    __atomic_store_n(&d->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* A store destroyed on one thread while another thread's fatal-signal
 * handler is still writing the recorder's dump: the destroy waits for the
 * handler, which never reads a freed record (without the wait, ASan reports
 * a heap-use-after-free in write_session, and natively the freed 150 KB
 * records are unmapped: write(2) fails). The dump goes into a FIFO that this
 * test drains only after the destroy has had its chance, so the handler is
 * known to be mid-write. */
void test_recorder__destroyWaitsForAHandlerStillWritingItsDump(void) {
    enum { BIG = 150000 };
    char path[1024], copy[1100], config[1200], why[300];
    struct sigaction mine, before;
    struct timespec tick = {0, 1000000};
    pthread_t crasher, killer;
    destroyer d = {NULL, 0};
    char *action = malloc(BIG + 64), *text = NULL;
    size_t length = 0, capacity = 0;
    int fd, queued = 0, finished = 0;
    dump got;
    FILE *out;
    if (action == NULL) return;
    snprintf(path, sizeof path, "%s/fifo.session", work);
    unlink(path);
    RC_CHECK("the FIFO is made", mkfifo(path, 0600) == 0, strerror(errno));
    memset(&mine, 0, sizeof mine);
    mine.sa_handler = on_abort_return;
    sigemptyset(&mine.sa_mask);
    sigaction(SIGABRT, &mine, &before);
    abort_seen = 0;
    d.store = new_store();
    if (d.store == NULL) goto out;
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"actions\":4}", path);
    RC_CHECK("a recorder with signals loads", ts_store_load_plugin(d.store, plugin, config) == TS_OK,
             ts_last_error());
    memcpy(action, "{\"type\":\"items/add\",\"payload\":\"", 31);
    memset(action + 31, 'x', BIG);
    strcpy(action + 31 + BIG, "\"}");
    for (int i = 0; i < 2; i++)
        RC_CHECK("a 150 KB action is dispatched", ts_store_dispatch(d.store, action) == TS_OK, ts_last_error());
    fd = open(path, O_RDONLY | O_NONBLOCK);
    if (!RC_CHECK("the FIFO opens for reading", fd >= 0, strerror(errno))) goto out;
    pthread_create(&crasher, NULL, raise_abort, NULL);
    /* 32 KiB in the pipe: the handler is inside its 300 KB dump, and blocks
     * once the pipe (64 KiB) is full. */
    for (int i = 0; i < 20000 && queued < 32768; i++) {
        if (ioctl(fd, FIONREAD, &queued) != 0) queued = 0;
        if (queued < 32768) nanosleep(&tick, NULL);
    }
    RC_CHECK("the handler is writing its dump", queued >= 32768, NULL);
    pthread_create(&killer, NULL, destroy_store, &d);
    /* Time for a destroy that does not wait to free the recorder; nothing is
     * checked about how long the destroy takes. */
    for (int i = 0; i < 2000 && !__atomic_load_n(&d.done, __ATOMIC_SEQ_CST); i++) nanosleep(&tick, NULL);
    for (int i = 0; i < 20000 && !finished; i++) {
        ssize_t n;
        if (capacity - length < 65536) {
            char *grown = realloc(text, capacity + 262144);
            if (grown == NULL) break;
            text = grown;
            capacity += 262144;
        }
        n = read(fd, text + length, capacity - length);
        if (n > 0) length += (size_t)n;
        else if (n == 0) finished = 1; /* the handler closed its end */
        else nanosleep(&tick, NULL);
    }
    close(fd);
    pthread_join(crasher, NULL);
    pthread_join(killer, NULL);
    RC_CHECK("the handler finished its dump", finished, NULL);
    RC_CHECK("the signal then reached the handler that was there before", abort_seen, NULL);
    snprintf(copy, sizeof copy, "%s/fifo-copy.session", work);
    out = fopen(copy, "wb");
    if (out) {
        fwrite(text, 1, length, out);
        fclose(out);
    }
    RC_CHECK("the dump read from the pipe is a whole session", read_dump(copy, &got, why, sizeof why), why);
    RC_CHECK("it holds the two big actions", got.actions == 2, got.last);
out:
    sigaction(SIGABRT, &before, NULL);
    unlink(path);
    free(text);
    free(action);
}
