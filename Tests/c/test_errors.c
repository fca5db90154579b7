/*
 * test_errors.c - C API tests: out of memory, and the messages of failures
 * (keys named, long text cut at UTF-8 boundaries).
 * Part of the C suite (check.h; `make test-c`; one test: build/tests/test_store -s TOPIC__RULE).
 */
#include "check.h"

/* Out of memory where the library allocates: TS_E_NOMEM (not TS_E_REDUCER),
 * and the state is unchanged. In a child process with an address-space
 * limit that leaves room for the reducer's output but not for checking it. */
#define OOM_BIG (200u << 20)
static char *big_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    if (slice == NULL) return xstrdup("0");
    if (strcmp(a->type, "big") != 0) return NULL;
    char *out = malloc(OOM_BIG + 3);
    if (out == NULL) return NULL;
    out[0] = '"';
    memset(out + 1, 'a', OOM_BIG);
    out[OOM_BIG + 1] = '"';
    out[OOM_BIG + 2] = '\0';
    return out;
}

static long vm_size_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (f == NULL) return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %ld", &kb) == 1) break;
    fclose(f);
    return kb;
}

void test_errors__outOfMemoryIsNomemNotACrash(void) {
    if (ts_test_quick) {
        ts_test_skip("valgrind (--quick) keeps its own address space");
        return;
    }
    fflush(NULL);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        ts_store *store = NULL;
        int result = 0;
        if (ts_store_create(NULL, &store) != TS_OK) _exit(10);
        if (ts_store_add_reducer(store, "big", big_reducer, NULL) != TS_OK) _exit(11);
        if (ts_store_dispatch(store, "{\"type\":\"warm\"}") != TS_OK) _exit(12);
        long kb = vm_size_kb();
        if (kb < 0) _exit(13);
        struct rlimit limit;
        limit.rlim_cur = limit.rlim_max = (rlim_t)kb * 1024u + OOM_BIG + (100u << 20);
        if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(14);
        ts_status status = ts_store_dispatch(store, "{\"type\":\"big\"}");
        if (status != TS_E_NOMEM) result |= 1;
        if (strstr(ts_last_error(), "no memory") == NULL) result |= 2;
        char *out = NULL;
        if (ts_store_get_state(store, "/big", &out) != TS_OK || strcmp(out, "0") != 0) result |= 4;
        ts_free(out);
        _exit(result);
    }
    int wstatus = 0;
    CHECK(waitpid(child, &wstatus, 0) == child);
    CHECK(WIFEXITED(wstatus));
    CHECK_INT(WEXITSTATUS(wstatus), 0);
}

/* Messages name what the header promises: the key of ts_store_add_reducer. */
void test_errors__nullReducerMessageNamesTheKey(void) {
    ts_store *store = new_store(NULL);
    CHECK_ST(ts_store_add_reducer(store, "todos", NULL, NULL), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "fn is NULL");
    CHECK_CONTAINS(ts_last_error(), "\"todos\"");
    ts_store_destroy(store);
}

/* A message that quotes long text is cut to fit, never in the middle of a
 * UTF-8 character. */
void test_errors__longQuotedTextIsCutAtACharacterBoundary(void) {
    ts_store *store = new_store("{\"k\":{\"a\":{\"b\":1}}}");
    char pointer[1024] = "/k/a/";
    for (int i = 0; i < 200; i++) strcat(pointer, "\xc3\xa9");
    char *out = sentinel_text;
    CHECK_ST(ts_store_get_state(store, pointer, &out), TS_E_NOT_FOUND);
    CHECK(out == sentinel_text);
    CHECK(is_utf8(ts_last_error()));
    CHECK_CONTAINS(ts_last_error(), "\xc3\xa9\xc3\xa9");
    for (size_t cut = 0; cut < 4; cut++) {
        char key[700] = "/k/";
        for (int i = 0; i < 150; i++) strcat(key, "\xe2\x82\xac");
        for (size_t i = 0; i < cut; i++) strcat(key, "x");
        CHECK_ST(ts_store_get_state(store, key, &out), TS_E_NOT_FOUND);
        CHECK(is_utf8(ts_last_error()));
    }
    ts_store_destroy(store);
}

/* A middleware that refuses with the message in ctx (may be NULL). */
static ts_status refuse_with(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    (void)next;
    (void)a;
    return api->fail(TS_E_REJECTED, (const char *)ctx);
}

/* Messages longer than the library keeps (a refusal's, a failure's) are cut
 * at a UTF-8 character boundary; a NULL refusal message is allowed. */
void test_errors__longRefusalsAreCutAtACharacterBoundary(void) {
    char *message = malloc(3 * 4096 + 1), *key = malloc(3 * 1500 + 1);
    if (message == NULL || key == NULL) abort();
    message[0] = '\0';
    for (int i = 0; i < 4096; i++) strcat(message, "\xe2\x82\xac");
    key[0] = '\0';
    for (int i = 0; i < 1500; i++) strcat(key, "\xe2\x82\xac");

    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_middleware(store, "refuse", refuse_with, message));
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"x\"}"), TS_E_REJECTED);
    CHECK(is_utf8(ts_last_error()));
    CHECK(strlen(ts_last_error()) < strlen(message));
    CHECK_CONTAINS(ts_last_error(), "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac");
    ts_store_destroy(store);

    store = new_store(NULL);
    CHECK_OK(ts_store_add_middleware(store, "refuse", refuse_with, NULL));
    CHECK_ST(ts_store_dispatch(store, "{\"type\":\"x\"}"), TS_E_REJECTED);
    CHECK(is_utf8(ts_last_error()));
    ts_store_destroy(store);

    /* A failure message that quotes a 4500-byte key. */
    store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, key, counter_reducer, NULL));
    CHECK_ST(ts_store_add_reducer(store, key, counter_reducer, NULL), TS_E_ARGUMENT);
    CHECK(is_utf8(ts_last_error()));
    CHECK_CONTAINS(ts_last_error(), "ts_store_add_reducer");
    ts_store_destroy(store);
    free(message);
    free(key);
}

