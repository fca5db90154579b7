/*
 * fuzz_patch - RFC 6902 JSON Patch in the JSON layer (tsj_patch_apply).
 *
 * Built from Sources/CTurnstateJSON/turnstate_json.cpp directly (the tsj_
 * functions are not exported by libturnstate.so): `make fuzz-json-build`.
 *
 * Input: line 1 is the document (used when tsj_minify accepts it, as its
 * minified text), line 2 up to the end is the patch. max_depth is the
 * document's own depth plus (patch length mod 4), or TSJ_MAX_DEPTH when the
 * patch length is a multiple of 5.
 *
 * Invariants:
 * - the patch gives the same answer without an index and with tsj_doc_index
 *   (same status, result bytes, message, offset and reported paths);
 * - a failure has *out NULL, *out_len 0, err.code equal to the status, a
 *   non-empty one-line message, and reports no path;
 * - a success gives *out NULL (nothing changed: the patch is [] or has only
 *   "test" operations) or text that tsj_minify gives back unchanged (valid
 *   and minified), NUL-terminated, nested at most max_depth deep;
 * - when the last operation of an accepted patch is "add" or "replace" at a
 *   path that does not end in "/-", the result has that operation's value,
 *   byte for byte, at that path (tsj_find);
 * - the document is never written to;
 * - the same patch on the document kept as a tree (tsj_tree_patch; split at
 *   0, 8 or 64 bytes by the patch's length, so that small documents split
 *   too) gives the same status, message, offset, reported paths and result
 *   text as tsj_patch_apply, and leaves the tree it was applied to reading
 *   as the document.
 */
#include "turnstate_json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...)                                                          \
    do {                                                                   \
        fprintf(stderr, "\nINVARIANT VIOLATED at %s:%d: ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                                      \
        fprintf(stderr, "\n");                                             \
        fflush(stderr);                                                    \
        __builtin_trap();                                                  \
    } while (0)
#define CHECK(cond, ...)              \
    do {                              \
        if (!(cond)) FAIL(__VA_ARGS__); \
    } while (0)

typedef struct {
    char buf[4096];
    size_t len;
    int count;
} paths_seen;

static void on_path(const char *path, size_t path_len, void *ctx) {
    paths_seen *p = (paths_seen *)ctx;
    CHECK(path[path_len] == '\0', "a reported path is not NUL-terminated");
    p->count++;
    if (p->len + path_len + 1 < sizeof p->buf) {
        memcpy(p->buf + p->len, path, path_len);
        p->len += path_len;
        p->buf[p->len++] = '\n';
    }
}

typedef struct {
    int rc;
    char *out;
    size_t out_len;
    tsj_error err;
    paths_seen paths;
} outcome;

static void apply(const char *doc, size_t len, const tsj_doc *index, const char *patch, size_t patch_len,
                  size_t max_depth, outcome *o) {
    memset(o, 0, sizeof *o);
    o->out = (char *)(uintptr_t)1;
    o->out_len = 77;
    o->rc = tsj_patch_apply(doc, len, index, patch, patch_len, max_depth, &o->out, &o->out_len, on_path, &o->paths,
                            &o->err);
}

/* When the patch's last operation is add or replace at a path without a
 * trailing "/-", the result must have the operation's value there. */
static void check_last_value(const char *result, size_t result_len, const char *patch, size_t patch_len) {
    char *mp = NULL;
    size_t mlen = 0;
    if (tsj_minify(patch, patch_len, &mp, &mlen, NULL) != TSJ_OK) FAIL("an accepted patch is not valid JSON");
    tsj_span root, last, op, path, value;
    size_t n = 0;
    char ptr[32];
    if (tsj_find(mp, mlen, NULL, "", 0, &root, NULL) == TSJ_OK && tsj_span_count(mp, NULL, root, &n, NULL) == TSJ_OK &&
        n > 0) {
        snprintf(ptr, sizeof ptr, "/%zu", n - 1);
        const char *name = NULL, *p = NULL;
        size_t name_len = 0, p_len = 0;
        char *name_owned = NULL, *p_owned = NULL;
        if (tsj_find(mp, mlen, NULL, ptr, strlen(ptr), &last, NULL) == TSJ_OK &&
            tsj_find_in(mp, mlen, NULL, last, "/op", 3, &op, NULL) == TSJ_OK &&
            tsj_span_string(mp, op, &name, &name_len, &name_owned, NULL) == TSJ_OK &&
            ((name_len == 3 && memcmp(name, "add", 3) == 0) || (name_len == 7 && memcmp(name, "replace", 7) == 0)) &&
            tsj_find_in(mp, mlen, NULL, last, "/path", 5, &path, NULL) == TSJ_OK &&
            tsj_span_string(mp, path, &p, &p_len, &p_owned, NULL) == TSJ_OK &&
            !(p_len >= 2 && memcmp(p + p_len - 2, "/-", 2) == 0) &&
            tsj_find_in(mp, mlen, NULL, last, "/value", 6, &value, NULL) == TSJ_OK) {
            tsj_span got;
            tsj_error err;
            int rc = tsj_find(result, result_len, NULL, p, p_len, &got, &err);
            CHECK(rc == TSJ_OK, "the value added/replaced at \"%.*s\" is not found in the result: %s", (int)p_len, p,
                  err.message);
            CHECK(got.length == value.length && memcmp(result + got.offset, mp + value.offset, got.length) == 0,
                  "at \"%.*s\" the result has %.*s, the patch's value is %.*s", (int)p_len, p, (int)got.length,
                  result + got.offset, (int)value.length, mp + value.offset);
        }
        free(name_owned);
        free(p_owned);
    }
    free(mp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *in = (const char *)data;
    const char *nl = memchr(in, '\n', size);
    if (!nl) return 0;
    size_t doc_raw_len = (size_t)(nl - in);
    const char *patch = nl + 1;
    size_t patch_len = size - doc_raw_len - 1;

    char *doc = NULL;
    size_t len = 0;
    if (tsj_minify(in, doc_raw_len, &doc, &len, NULL) != TSJ_OK) return 0;
    char *saved = malloc(len + 1);
    memcpy(saved, doc, len + 1);
    size_t doc_depth = tsj_depth(doc, len);
    size_t max_depth = patch_len % 5 == 0 ? TSJ_MAX_DEPTH : doc_depth + patch_len % 4;

    tsj_error err;
    tsj_doc *index = tsj_doc_index(doc, len, (size_t)-1, &err);
    CHECK(index != NULL, "tsj_doc_index refused minified text: %s", err.message);

    outcome a, b;
    apply(doc, len, NULL, patch, patch_len, max_depth, &a);
    apply(doc, len, index, patch, patch_len, max_depth, &b);

    CHECK(memcmp(doc, saved, len + 1) == 0, "the document was written to");
    CHECK(a.rc == b.rc, "without an index %s (%s), with one %s (%s)", tsj_code_name(a.rc), a.err.message,
          tsj_code_name(b.rc), b.err.message);
    CHECK(strcmp(a.err.message, b.err.message) == 0 && a.err.offset == b.err.offset && a.err.code == b.err.code,
          "messages differ: \"%s\" at %lld / \"%s\" at %lld", a.err.message, a.err.offset, b.err.message,
          b.err.offset);
    CHECK(a.paths.count == b.paths.count && a.paths.len == b.paths.len &&
              memcmp(a.paths.buf, b.paths.buf, a.paths.len) == 0,
          "reported paths differ");
    for (int k = 0; k < 2; k++) {
        outcome *o = k ? &b : &a;
        if (o->rc != TSJ_OK) {
            CHECK(o->out == NULL && o->out_len == 0, "a failure (%s) left a result", tsj_code_name(o->rc));
            CHECK(o->err.code == o->rc && o->err.message[0] != '\0' && strchr(o->err.message, '\n') == NULL &&
                      strlen(o->err.message) < sizeof o->err.message,
                  "a failure (%s) without a proper message: \"%s\"", tsj_code_name(o->rc), o->err.message);
            CHECK(o->paths.count == 0, "a failed patch reported %d paths", o->paths.count);
            continue;
        }
        CHECK(o->err.code == TSJ_OK && o->err.offset == -1 && o->err.message[0] == '\0', "success with an error set");
        if (o->out == NULL) {
            CHECK(o->out_len == 0, "unchanged with a length");
            continue;
        }
        CHECK(o->out[o->out_len] == '\0', "the result is not NUL-terminated");
        char *again = NULL;
        size_t again_len = 0;
        int rc = tsj_minify(o->out, o->out_len, &again, &again_len, &err);
        CHECK(rc == TSJ_OK, "the result is not valid JSON (%s): %.300s", err.message, o->out);
        CHECK(again_len == o->out_len && memcmp(again, o->out, again_len) == 0, "the result is not minified: %.300s",
              o->out);
        free(again);
        CHECK(tsj_depth(o->out, o->out_len) <= max_depth, "the result nests %zu deep, max_depth %zu",
              tsj_depth(o->out, o->out_len), max_depth);
    }
    if (a.rc == TSJ_OK) {
        CHECK((a.out == NULL) == (b.out == NULL) &&
                  (a.out == NULL || (a.out_len == b.out_len && memcmp(a.out, b.out, a.out_len) == 0)),
              "results differ: %.200s / %.200s", a.out ? a.out : "(unchanged)", b.out ? b.out : "(unchanged)");
        check_last_value(a.out ? a.out : doc, a.out ? a.out_len : len, patch, patch_len);
    }
    /* The same through a tree. */
    static const size_t splits[] = {0, 8, 64};
    size_t saved_split = tsj_tree_split_bytes;
    tsj_tree_split_bytes = splits[patch_len % 3];
    tsj_tree *tree = tsj_tree_make(doc, len, &err);
    CHECK(tree != NULL, "tsj_tree_make refused minified text: %s", err.message);
    tsj_tree *next = NULL;
    outcome t;
    memset(&t, 0, sizeof t);
    t.rc = tsj_tree_patch(tree, patch, patch_len, max_depth, &next, on_path, &t.paths, &t.err);
    CHECK(t.rc == a.rc && strcmp(t.err.message, a.err.message) == 0 && t.err.offset == a.err.offset,
          "tree: %s \"%s\" at %lld, text: %s \"%s\" at %lld", tsj_code_name(t.rc), t.err.message, t.err.offset,
          tsj_code_name(a.rc), a.err.message, a.err.offset);
    CHECK(t.paths.count == a.paths.count && t.paths.len == a.paths.len &&
              memcmp(t.paths.buf, a.paths.buf, a.paths.len) == 0,
          "tree: reported paths differ");
    if (a.rc == TSJ_OK) {
        size_t next_len = 0;
        const char *next_text = next ? tsj_tree_text(next, &next_len) : NULL;
        CHECK((next == NULL) == (a.out == NULL) &&
                  (a.out == NULL || (next_text != NULL && next_len == a.out_len &&
                                     memcmp(next_text, a.out, a.out_len) == 0)),
              "tree: results differ: %.200s / %.200s", next_text ? next_text : "(unchanged)",
              a.out ? a.out : "(unchanged)");
    } else {
        CHECK(next == NULL, "tree: a failure left a result");
    }
    char *old_text = NULL;
    size_t old_len = 0;
    CHECK(tsj_tree_at_pointer(tree, "", 0, &old_text, &old_len, &err) == TSJ_OK && old_len == len &&
              memcmp(old_text, doc, len) == 0,
          "tree: the tree patched no longer reads as the document");
    free(old_text);
    tsj_tree_free(next);
    tsj_tree_free(tree);
    tsj_tree_split_bytes = saved_split;
    if (a.rc == TSJ_OK) free(a.out);
    if (b.rc == TSJ_OK) free(b.out);
    tsj_doc_free(index);
    free(saved);
    free(doc);
    return 0;
}
