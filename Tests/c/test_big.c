/*
 * test_big.c - big slices: the index kept per slice for JSON Pointer reads
 * (right after the slice changes, bounded, shared by threads), and big
 * states, which are read in place (32 MiB and more) and split without a copy
 * of their biggest slice.
 */
#include "check.h"

/* An array of `n` strings "<prefix><i>" as JSON text (malloc'ed). */
static char *string_array(size_t n, const char *prefix) {
    size_t capacity = n * (strlen(prefix) + 24) + 16, at = 0;
    char *text = malloc(capacity);
    if (text == NULL) abort();
    text[at++] = '[';
    for (size_t i = 0; i < n; i++) at += (size_t)snprintf(text + at, capacity - at, "%s\"%s%zu\"", i ? "," : "", prefix, i);
    text[at++] = ']';
    text[at] = '\0';
    return text;
}

/* A read at `pointer` gives `want` (a JSON string literal "<prefix><i>"). */
static void check_item(ts_store *store, const char *pointer, const char *prefix, size_t i, const char *file, int line) {
    char want[64];
    snprintf(want, sizeof want, "\"%s%zu\"", prefix, i);
    check_state(store, pointer, want, file, line);
}
#define CHECK_ITEM(store, pointer, prefix, i) check_item((store), (pointer), (prefix), (i), __FILE__, __LINE__)

/* The index of a slice is the slice's: a changed slice is read afresh, a
 * slice that did not change keeps its (already built) index. */
void test_big__indexIsReadAfreshOnlyForChangedSlices(void) {
    char *items = string_array(20000, "old-");
    char *initial = xprintf("{\"count\":0,\"doc\":{\"items\":%s,\"tail\":1}}", items);
    ts_store *store = new_store(initial);
    static const char *next_doc;
    char *doc = xstrdup(initial + strlen("{\"count\":0,\"doc\":"));
    doc[strlen(doc) - 1] = '\0'; /* without the state's closing brace */
    next_doc = doc;
    CHECK_OK(ts_store_add_reducer(store, "doc", text_reducer, (void *)&next_doc));
    CHECK_ITEM(store, "/doc/items/0", "old-", (size_t)0);
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"set\"}")); /* the same text: a new slice */
    CHECK_ITEM(store, "/doc/items/19999", "old-", (size_t)19999);
    CHECK_ITEM(store, "/doc/items/7", "old-", (size_t)7);
    CHECK_STATE(store, "/doc/tail", "1");
    CHECK_GET_FAILS(store, "/doc/items/20000", TS_E_NOT_FOUND, "array of 20000 elements");

    /* change the slice: same shape, other values, one more item */
    char *items2 = string_array(20001, "new-");
    char *doc2 = xprintf("{\"items\":%s,\"tail\":3,\"added\":true}", items2);
    next_doc = doc2;
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"set\"}"));
    CHECK_ITEM(store, "/doc/items/19999", "new-", (size_t)19999);
    CHECK_ITEM(store, "/doc/items/20000", "new-", (size_t)20000);
    CHECK_STATE(store, "/doc/tail", "3");
    CHECK_STATE(store, "/doc/added", "true");
    /* another slice changes: the doc's index stays right */
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"other\"}"));
    CHECK_ITEM(store, "/doc/items/3", "new-", (size_t)3);
    /* the slice becomes a scalar, then small again */
    next_doc = "7";
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"set\"}"));
    CHECK_STATE(store, "/doc", "7");
    CHECK_GET_FAILS(store, "/doc/items", TS_E_NOT_FOUND, "in the number");
    next_doc = "{\"items\":[\"a\"]}";
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"set\"}"));
    CHECK_STATE(store, "/doc/items/0", "\"a\"");
    CHECK_GET_FAILS(store, "/doc/tail", TS_E_NOT_FOUND, "no member \"tail\"");
    ts_store_destroy(store);
    free(items);
    free(items2);
    free(initial);
    free(doc);
    free(doc2);
}

/* A slice whose index would be bigger than its text (a million empty
 * arrays: 24 bytes of index per 3 bytes of text) is read without an index:
 * same answers, and the read takes no memory to speak of. */
void test_big__sliceWhoseIndexWouldOutgrowItsTextIsReadWithoutOne(void) {
    size_t n = ts_test_quick ? 20000 : 1000000, at = 0;
    char *text = malloc(3 * n + 64);
    at += (size_t)sprintf(text, "{\"grid\":[");
    for (size_t i = 0; i < n; i++) {
        if (i) text[at++] = ',';
        text[at++] = '[';
        if (i == n - 1) text[at++] = '5';
        text[at++] = ']';
    }
    at += (size_t)sprintf(text + at, "]}");
    ts_store *store = new_store(text);
    struct rusage before, after;
    getrusage(RUSAGE_SELF, &before);
    char *pointer = xprintf("/grid/%zu/0", n - 1);
    for (int i = 0; i < 3; i++) CHECK_STATE(store, pointer, "5");
    free(pointer);
    pointer = xprintf("/grid/%zu", n - 2);
    CHECK_STATE(store, pointer, "[]");
    free(pointer);
    pointer = xprintf("/grid/%zu", n);
    char *count = xprintf("array of %zu elements", n);
    CHECK_GET_FAILS(store, pointer, TS_E_NOT_FOUND, count);
    free(pointer);
    free(count);
    getrusage(RUSAGE_SELF, &after);
    if (!ts_test_quick) {
        /* An index would take about 28 MB: reading took (far) less. */
        long grown_kb = after.ru_maxrss - before.ru_maxrss;
        char detail[96];
        snprintf(detail, sizeof detail, "peak RSS grew by %ld kB while reading", grown_kb);
        ts_test_report(grown_kb < 8 * 1024, __FILE__, __LINE__, "no index bigger than the slice", detail);
    }
    ts_store_destroy(store);
    free(text);
}

/* Threads read below a big slice (the first reads build its index at the
 * same time) while the slice changes under them: every read gives a value
 * of one of the slice's versions, never an error or a mix. */
typedef struct {
    ts_store *store;
    int reads, bad;
} big_reader;

static void *big_read_loop(void *argument) {
    big_reader *reader = argument;
    for (int i = 0; i < reader->reads; i++) {
        char *text = NULL;
        char pointer[48];
        int item = (i * 7919) % 5000;
        snprintf(pointer, sizeof pointer, "/doc/items/%d", item);
        ts_status status = ts_store_get_state(reader->store, pointer, &text);
        char want_a[32], want_b[32];
        snprintf(want_a, sizeof want_a, "\"a-%d\"", item);
        snprintf(want_b, sizeof want_b, "\"b-%d\"", item);
        if (status != TS_OK || (strcmp(text, want_a) != 0 && strcmp(text, want_b) != 0)) reader->bad++;
        ts_free(text);
    }
    return NULL;
}

void test_big__indexedSlicesReadSafelyFromManyThreads(void) {
    char *items_a = string_array(5000, "a-"), *items_b = string_array(5000, "b-");
    char *doc_a = xprintf("{\"items\":%s}", items_a), *doc_b = xprintf("{\"items\":%s}", items_b);
    char *initial = xprintf("{\"doc\":%s}", doc_a);
    ts_store *store = new_store(initial);
    static const char *next_doc;
    next_doc = doc_a;
    CHECK_OK(ts_store_add_reducer(store, "doc", text_reducer, (void *)&next_doc));
    enum { THREADS = 4 };
    pthread_t threads[THREADS];
    big_reader readers[THREADS];
    for (int t = 0; t < THREADS; t++) {
        readers[t] = (big_reader){store, ts_test_quick ? 200 : 5000, 0};
        CHECK(pthread_create(&threads[t], NULL, big_read_loop, &readers[t]) == 0);
    }
    for (int i = 0; i < (ts_test_quick ? 10 : 200); i++) {
        next_doc = (i % 2) ? doc_a : doc_b; /* read by the reducer under the store's lock */
        CHECK_OK(ts_store_dispatch(store, "{\"type\":\"set\"}"));
    }
    int bad = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        bad += readers[t].bad;
    }
    CHECK_INT(bad, 0);
    ts_store_destroy(store);
    free(items_a);
    free(items_b);
    free(doc_a);
    free(doc_b);
    free(initial);
}

/* A state of 32 MiB or more is validated in place and split without a copy
 * of its biggest slice: the same state, and the same errors, as a small one. */
void test_big__bigStateIsValidatedInPlaceWithSmallStateResults(void) {
    if (ts_test_quick) {
        ts_test_skip("40 MB under valgrind (--quick) takes minutes");
        return;
    }
    size_t n = 40u * 1024 * 1024 / 64;
    size_t capacity = n * 68 + 256, at = 0;
    char *text = malloc(capacity);
    if (text == NULL) abort();
    at += (size_t)sprintf(text, "{ \"small\" : [ 1 , 2 ] , \"big\" : [");
    for (size_t i = 0; i < n; i++) {
        at += (size_t)sprintf(text + at, "%s\"%010zu", i ? ", " : " ", i);
        memset(text + at, 'z', 50);
        at += 50;
        text[at++] = '"';
    }
    at += (size_t)sprintf(text + at, " ] , \"last\" : {\"k\": null} }");
    ts_store *store = NULL;
    CHECK_OK(ts_store_create(text, &store));
    if (store != NULL) {
        CHECK_STATE(store, "/small", "[1,2]");
        CHECK_STATE(store, "/last", "{\"k\":null}");
        char *value = state_of(store, "/big/0");
        CHECK(value != NULL && strlen(value) == 62 && strncmp(value, "\"0000000000zz", 13) == 0);
        ts_free(value);
        char *pointer = xprintf("/big/%zu", n - 1);
        value = state_of(store, pointer);
        char *want = xprintf("\"%010zu", n - 1);
        CHECK(value != NULL && strncmp(value, want, 11) == 0);
        ts_free(value);
        free(want);
        free(pointer);
        char *whole = state_of(store, NULL);
        CHECK(whole != NULL && strncmp(whole, "{\"small\":[1,2],\"big\":[\"0000000000z", 34) == 0 &&
              strcmp(whole + strlen(whole) - 21, "\"],\"last\":{\"k\":null}}") == 0);
        ts_free(whole);
        ts_store_destroy(store);
    }
    /* the same errors as a small state: a duplicate key after the big slice,
     * a bad byte in it, trailing garbage */
    char *dup = malloc(at + 16);
    memcpy(dup, text, at - 1);
    strcpy(dup + at - 1, ", \"small\": 1}");
    store = SENTINEL_STORE;
    CHECK_ST(ts_store_create(dup, &store), TS_E_JSON);
    CHECK(store == SENTINEL_STORE);
    CHECK_CONTAINS(ts_last_error(), "duplicate key \"small\"");
    free(dup);
    text[at / 2] = '\x01';
    CHECK_ST(ts_store_create(text, &store), TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "control character");
    free(text);
}

