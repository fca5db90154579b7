/*
 * fuzz_create - ts_store_create with any initial state.
 *
 * Invariants (differential, against the JSON model in fuzz_common.h):
 * - the store is created exactly when the text is valid JSON (RFC 8259,
 *   strict UTF-8, no escaped lone surrogate, nesting <= TS_MAX_DEPTH), an
 *   object, and has no top-level key twice (compared after unescaping);
 * - a refusal is TS_E_JSON (or TS_E_NOMEM) with a message, and *out is not
 *   written;
 * - an accepted state reads back as "{" + the members in order, each key
 *   re-quoted the library's way and each value minified verbatim + "}", and
 *   survives a second round trip; each member reads back through its JSON
 *   Pointer.
 */
#include "fuzz_common.h"

static int has_duplicate_key(const fz_member *m, size_t n) {
    size_t i, k;
    for (i = 0; i < n; i++)
        for (k = 0; k < i; k++)
            if (m[i].key_len == m[k].key_len && memcmp(m[i].key, m[k].key, m[i].key_len) == 0) return 1;
    return 0;
}

/* "/" + key with ~ and / escaped, or NULL if the key holds a NUL byte. */
static char *pointer_to(const fz_member *m) {
    char *p = malloc(2 * m->key_len + 2);
    size_t n = 0, i;
    if (p == NULL) abort();
    p[n++] = '/';
    for (i = 0; i < m->key_len; i++) {
        char c = m->key[i];
        if (c == '\0') {
            free(p);
            return NULL;
        }
        if (c == '~') {
            p[n++] = '~';
            p[n++] = '0';
        } else if (c == '/') {
            p[n++] = '~';
            p[n++] = '1';
        } else {
            p[n++] = c;
        }
    }
    p[n] = '\0';
    return p;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = fz_cstring(data, size), *minified = NULL, *state, *expected;
    ts_store *store = (ts_store *)(uintptr_t)0x1;
    fz_member *members = NULL;
    size_t count = 0, i, n;
    int valid = fz_json_valid(text, &minified);
    int want_ok = 0;
    ts_status s;

    if (valid && minified[0] == '{') {
        members = fz_members(minified, &count);
        want_ok = !has_duplicate_key(members, count);
    }
    s = ts_store_create(text, &store);
    if (s != TS_OK) {
        FZ_CHECK_FAILURE(s, "ts_store_create", TS_E_JSON, TS_E_NOMEM);
        FZ_CHECK(store == (ts_store *)(uintptr_t)0x1, "ts_store_create failed but wrote *out");
        FZ_CHECK(!want_ok, "ts_store_create refused a valid object (%s): %.300s", ts_status_name(s), text);
        goto done;
    }
    FZ_CHECK(want_ok, "ts_store_create accepted %s: %.300s",
             !valid ? "invalid JSON" : minified[0] != '{' ? "a non-object" : "a duplicate top-level key", text);

    /* The expected whole state text. */
    expected = malloc(8 * strlen(minified) + 3);
    if (expected == NULL) abort();
    n = 0;
    expected[n++] = '{';
    for (i = 0; i < count; i++) {
        if (i) expected[n++] = ',';
        n += fz_quote(expected + n, members[i].key, members[i].key_len);
        expected[n++] = ':';
        memcpy(expected + n, members[i].value, members[i].value_len);
        n += members[i].value_len;
    }
    expected[n++] = '}';
    expected[n] = '\0';
    state = fz_state(store);
    if (strcmp(state, expected) != 0 && fz_known("unicode-keys")) {
        /* Open fault "unicode-keys": canonically equivalent keys collapse. */
        for (i = 0; i < count; i++) {
            if (fz_has_non_ascii(members[i].key, members[i].key_len)) {
                ts_free(state);
                free(expected);
                ts_store_destroy(store);
                goto done;
            }
        }
    }
    FZ_CHECK(strcmp(state, expected) == 0, "the state does not read back as given:\n  given    %.300s\n  expected %.300s\n  got      %.300s",
             text, expected, state);
    fz_check_state_text(state, "after ts_store_create");

    /* Each member through its pointer (a few, for speed). */
    for (i = 0; i < count && i < 8; i++) {
        char *ptr = pointer_to(&members[i]), *value = NULL;
        if (ptr == NULL) continue;
        s = ts_store_get_state(store, ptr, &value);
        if (s != TS_OK && fz_known("unicode-keys") && fz_has_non_ascii(ptr, strlen(ptr))) {
            /* Open fault "unicode-keys": a pointer token that starts with a
             * combining mark is not split at its "/". */
            free(ptr);
            continue;
        }
        FZ_CHECK(s == TS_OK, "member %zu: ts_store_get_state(\"%.100s\") gave %s", i, ptr, ts_status_name(s));
        FZ_CHECK(strlen(value) == members[i].value_len && memcmp(value, members[i].value, members[i].value_len) == 0,
                 "member %zu: pointer \"%.100s\" reads %.200s, expected %.*s", i, ptr, value,
                 (int)(members[i].value_len > 200 ? 200 : members[i].value_len), members[i].value);
        ts_free(value);
        free(ptr);
    }
    ts_free(state);
    free(expected);
    ts_store_destroy(store);
done:
    fz_members_free(members, count);
    free(minified);
    free(text);
    return 0;
}
