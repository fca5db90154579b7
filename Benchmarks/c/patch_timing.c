/*
 * patch_timing.c - what one JSON Patch costs in the JSON layer, on a
 * 100,000-item list (about 8 MB) and on a 10-item one. A measurement, not a
 * test (no thresholds); not part of `make bench`. From the repository root:
 *
 *   g++ -O2 -std=c++17 -ISources/CTurnstateJSON/include -c Sources/CTurnstateJSON/turnstate_json.cpp -o /tmp/tsj.o
 *   gcc -O2 -std=c99 -ISources/CTurnstateJSON/include Benchmarks/c/patch_timing.c /tmp/tsj.o -lsimdjson -lstdc++ -o /tmp/patch_timing
 *   /tmp/patch_timing
 *
 * Rows (median of 7 rounds, each round the mean of many calls):
 *   replace (index)     toggle "done" of the middle item, the index given
 *   replace (no index)  the same, the target found by stepping through the text
 *   append (index)      add at "/todos/-"
 *   test fails (index)  a first "test" op that fails: no copy of the document
 *   test ok (index)     only "test" ops: unchanged, no copy
 *   memcpy              a copy of the document (what the splice costs at least)
 *   tsj_doc_index       indexing the document (what a store pays to look up
 *                       the result again through an index)
 */
#define _POSIX_C_SOURCE 200809L
#include "turnstate_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static char *make_doc(int items, size_t *len) {
    size_t cap = (size_t)items * 96 + 64, n = 0;
    char *d = malloc(cap);
    n += (size_t)snprintf(d + n, cap - n, "{\"todos\":[");
    for (int i = 0; i < items; i++)
        n += (size_t)snprintf(d + n, cap - n, "%s{\"id\":%d,\"text\":\"buy item number %d of the list, soon\",\"done\":false}",
                              i ? "," : "", i, i);
    n += (size_t)snprintf(d + n, cap - n, "],\"count\":%d}", items);
    *len = n;
    return d;
}

typedef int (*op_fn)(void *ctx);

struct patch_ctx {
    const char *doc;
    size_t len;
    const tsj_doc *index;
    const char *patch;
    int expect;
};

static int run_patch(void *p) {
    struct patch_ctx *c = p;
    char *out = NULL;
    size_t out_len = 0;
    tsj_error err;
    int rc = tsj_patch_apply(c->doc, c->len, c->index, c->patch, strlen(c->patch), TSJ_MAX_DEPTH, &out, &out_len, NULL,
                             NULL, &err);
    if (rc != c->expect) {
        fprintf(stderr, "unexpected %s: %s\n", tsj_code_name(rc), err.message);
        exit(1);
    }
    free(out);
    return rc;
}

static int run_memcpy(void *p) {
    struct patch_ctx *c = p;
    char *out = malloc(c->len + 1);
    memcpy(out, c->doc, c->len);
    out[c->len] = '\0';
    volatile char sink = out[c->len / 2];
    (void)sink;
    free(out);
    return 0;
}

static int run_index(void *p) {
    struct patch_ctx *c = p;
    tsj_doc *d = tsj_doc_index(c->doc, c->len, (size_t)-1, NULL);
    tsj_doc_free(d);
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median over 7 rounds of the mean time of one call, in ns. */
static double measure(op_fn fn, void *ctx) {
    double t0 = now_ns();
    int calls = 0;
    while (now_ns() - t0 < 2e7) fn(ctx), calls++;  /* warm up ~20 ms, and size the rounds */
    int per_round = calls / 2 + 1;
    double rounds[7];
    for (int r = 0; r < 7; r++) {
        double s = now_ns();
        for (int i = 0; i < per_round; i++) fn(ctx);
        rounds[r] = (now_ns() - s) / per_round;
    }
    qsort(rounds, 7, sizeof rounds[0], cmp_double);
    return rounds[3];
}

int main(void) {
    const int sizes[2] = {10, 100000};
    double t[2][7];
    size_t lens[2];
    for (int k = 0; k < 2; k++) {
        size_t len;
        char *doc = make_doc(sizes[k], &len);
        lens[k] = len;
        tsj_error err;
        tsj_doc *index = tsj_doc_index(doc, len, (size_t)-1, &err);
        char replace[128], test_fail[128], test_ok[160];
        int mid = sizes[k] / 2;
        snprintf(replace, sizeof replace, "[{\"op\":\"replace\",\"path\":\"/todos/%d/done\",\"value\":true}]", mid);
        snprintf(test_fail, sizeof test_fail, "[{\"op\":\"test\",\"path\":\"/todos/%d/done\",\"value\":true}]", mid);
        snprintf(test_ok, sizeof test_ok,
                 "[{\"op\":\"test\",\"path\":\"/todos/%d/done\",\"value\":false},{\"op\":\"test\",\"path\":\"/count\",\"value\":%d}]",
                 mid, sizes[k]);
        const char *append = "[{\"op\":\"add\",\"path\":\"/todos/-\",\"value\":{\"id\":-1,\"text\":\"new\",\"done\":false}}]";
        struct patch_ctx c[5] = {{doc, len, index, replace, TSJ_OK},
                                 {doc, len, NULL, replace, TSJ_OK},
                                 {doc, len, index, append, TSJ_OK},
                                 {doc, len, index, test_fail, TSJ_ERR_PATCH},
                                 {doc, len, index, test_ok, TSJ_OK}};
        for (int r = 0; r < 5; r++) t[k][r] = measure(run_patch, &c[r]);
        t[k][5] = measure(run_memcpy, &c[0]);
        t[k][6] = measure(run_index, &c[0]);
        tsj_doc_free(index);
        free(doc);
    }
    static const char *const rows[7] = {"replace (index)", "replace (no index)", "append (index)", "test fails (index)",
                                         "test ok (index)",  "memcpy of the document", "tsj_doc_index"};
    printf("%-24s %14s %14s %10s\n", "", "10 items", "100,000 items", "ratio");
    printf("%-24s %11zu B  %11zu B\n", "document", lens[0], lens[1]);
    for (int r = 0; r < 7; r++)
        printf("%-24s %11.0f ns %11.0f ns %9.1fx\n", rows[r], t[0][r], t[1][r], t[1][r] / t[0][r]);
    return 0;
}
