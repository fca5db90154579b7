/*
 * fuzz_common.h - shared pieces of the libFuzzer harnesses (Tests/fuzz).
 *
 * The harnesses check invariants of the C API, not only "no crash"; a
 * violation calls FZ_FAIL, which prints what was wrong and traps, so that
 * libFuzzer reports it and saves the input.
 *
 * This header holds an independent model of the JSON rules the library
 * promises (RFC 8259, strict UTF-8, no escaped lone surrogates, nesting at
 * most TS_MAX_DEPTH) and of RFC 6901 JSON Pointers, written without looking
 * at the library's parser, so that the harnesses can compare the library's
 * answers with it (differential checks). It works on NUL-terminated text.
 */
#ifndef TS_FUZZ_COMMON_H
#define TS_FUZZ_COMMON_H

#define _GNU_SOURCE 1

#include "turnstate.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Failing ------------------------------------------------------------ */

#define FZ_FAIL(...)                                                                   \
    do {                                                                               \
        fprintf(stderr, "\nINVARIANT VIOLATED at %s:%d: ", __FILE__, __LINE__);       \
        fprintf(stderr, __VA_ARGS__);                                                  \
        fprintf(stderr, "\n  ts_last_error: \"%.300s\"\n", ts_last_error());         \
        fflush(stderr);                                                                \
        __builtin_trap();                                                              \
    } while (0)

#define FZ_CHECK(cond, ...)                         \
    do {                                            \
        if (!(cond)) FZ_FAIL(__VA_ARGS__);          \
    } while (0)

/* A copy of data[0..size) as a C string (up to the first NUL byte). */
static inline char *fz_cstring(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (s == NULL) abort();
    memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

static inline char *fz_strndup(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (d == NULL) abort();
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Splits text (modified in place) at '\n' into at most max lines. */
static inline size_t fz_lines(char *text, char **lines, size_t max) {
    size_t n = 0;
    char *p = text;
    while (n < max) {
        char *nl = strchr(p, '\n');
        lines[n++] = p;
        if (nl == NULL) break;
        *nl = '\0';
        p = nl + 1;
    }
    return n;
}

/* Known open faults (Tests/fuzz/README.md) that the harnesses step over
 * when TS_FUZZ_KNOWN names them (a comma-separated list), so that a long
 * fuzzing run finds new faults instead of the same one again; the replay of
 * the committed corpus runs without it. */
static inline int fz_known(const char *name) {
    const char *list = getenv("TS_FUZZ_KNOWN");
    return list != NULL && strstr(list, name) != NULL;
}

static inline int fz_has_non_ascii(const char *s, size_t n) {
    size_t i;
    for (i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return 1;
    return 0;
}

/* ---- Statuses ----------------------------------------------------------- */

#ifdef TS_E_MISUSE
#define FZ_LAST_STATUS TS_E_MISUSE
#else
#define FZ_LAST_STATUS TS_E_UNKNOWN_ACTION
#endif
static inline int fz_status_known(ts_status s) { return s <= 0 && s >= FZ_LAST_STATUS; }

/* After a failing call: a documented status and a message. */
#define FZ_CHECK_FAILURE(status, what, ...)                                                             \
    do {                                                                                                \
        ts_status fz_s_ = (status);                                                                     \
        static const ts_status fz_allowed_[] = {__VA_ARGS__};                                           \
        size_t fz_i_;                                                                                   \
        int fz_ok_ = 0;                                                                                 \
        for (fz_i_ = 0; fz_i_ < sizeof fz_allowed_ / sizeof fz_allowed_[0]; fz_i_++)                   \
            if (fz_allowed_[fz_i_] == fz_s_) fz_ok_ = 1;                                               \
        FZ_CHECK(fz_ok_, "%s returned %s (%d), not one of its documented statuses", (what),            \
                 ts_status_name(fz_s_), (int)fz_s_);                                                    \
        FZ_CHECK(ts_last_error() != NULL && ts_last_error()[0] != '\0', "%s failed with %s but ts_last_error() is empty", \
                 (what), ts_status_name(fz_s_));                                                        \
    } while (0)

/* The whole state; traps if it cannot be read. */
static inline char *fz_state(ts_store *store) {
    char *text = NULL;
    ts_status s = ts_store_get_state(store, NULL, &text);
    FZ_CHECK(s == TS_OK && text != NULL, "ts_store_get_state(NULL) failed with %s", ts_status_name(s));
    return text;
}

/* ---- An independent JSON model ------------------------------------------ */

typedef struct fz_json {
    const unsigned char *p;
    int depth;
    int max_depth;
    int error;
    /* The minified text, when out is not NULL (room for strlen(input) + 1). */
    char *out;
    size_t out_len;
} fz_json;

static inline void fz_put(fz_json *j, const unsigned char *from, size_t n) {
    if (j->out) memcpy(j->out + j->out_len, from, n);
    j->out_len += n;
}

static inline void fz_ws(fz_json *j) {
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r') j->p++;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0. */
static inline int fz_utf8_len(const unsigned char *p) {
    unsigned c = p[0];
    if (c < 0x80) return c ? 1 : 0;
    if (c >= 0xC2 && c <= 0xDF) return (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

static inline int fz_hex4(const unsigned char *p, unsigned *v) {
    int i;
    *v = 0;
    for (i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return 0;
        *v = *v * 16 + d;
    }
    return 1;
}

static inline void fz_put_utf8(char *dst, size_t *n, unsigned cp) {
    if (cp < 0x80) {
        dst[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        dst[(*n)++] = (char)(0xC0 | (cp >> 6));
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        dst[(*n)++] = (char)(0xE0 | (cp >> 12));
        dst[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        dst[(*n)++] = (char)(0xF0 | (cp >> 18));
        dst[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        dst[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        dst[(*n)++] = (char)(0x80 | (cp & 0x3F));
    }
}

/* A string at j->p (on '"'). When decoded is not NULL, the unescaped bytes
 * go there (room for the string's length) and *dlen gets their count. */
static inline int fz_string(fz_json *j, char *decoded, size_t *dlen) {
    const unsigned char *start = j->p;
    size_t n = 0;
    if (*j->p != '"') return 0;
    j->p++;
    for (;;) {
        unsigned c = *j->p;
        if (c == '"') break;
        if (c < 0x20) return 0;
        if (c == '\\') {
            unsigned e = j->p[1], cp;
            j->p += 2;
            switch (e) {
            case '"': cp = '"'; break;
            case '\\': cp = '\\'; break;
            case '/': cp = '/'; break;
            case 'b': cp = '\b'; break;
            case 'f': cp = '\f'; break;
            case 'n': cp = '\n'; break;
            case 'r': cp = '\r'; break;
            case 't': cp = '\t'; break;
            case 'u':
                if (!fz_hex4(j->p, &cp)) return 0;
                j->p += 4;
                if (cp >= 0xDC00 && cp <= 0xDFFF) return 0; /* a lone low surrogate */
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;
                    if (j->p[0] != '\\' || j->p[1] != 'u' || !fz_hex4(j->p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                        return 0;
                    j->p += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                break;
            default: return 0;
            }
            if (decoded) fz_put_utf8(decoded, &n, cp);
            continue;
        }
        {
            int len = fz_utf8_len(j->p);
            if (len == 0) return 0;
            if (decoded) memcpy(decoded + n, j->p, (size_t)len);
            n += (size_t)len;
            j->p += len;
        }
    }
    j->p++;
    fz_put(j, start, (size_t)(j->p - start));
    if (dlen) *dlen = n;
    return 1;
}

static inline int fz_number(fz_json *j) {
    const unsigned char *start = j->p;
    if (*j->p == '-') j->p++;
    if (*j->p == '0') {
        j->p++;
    } else if (*j->p >= '1' && *j->p <= '9') {
        while (*j->p >= '0' && *j->p <= '9') j->p++;
    } else {
        return 0;
    }
    if (*j->p == '.') {
        j->p++;
        if (!(*j->p >= '0' && *j->p <= '9')) return 0;
        while (*j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (*j->p == 'e' || *j->p == 'E') {
        j->p++;
        if (*j->p == '+' || *j->p == '-') j->p++;
        if (!(*j->p >= '0' && *j->p <= '9')) return 0;
        while (*j->p >= '0' && *j->p <= '9') j->p++;
    }
    fz_put(j, start, (size_t)(j->p - start));
    return 1;
}

/* The keys of one object, decoded, to find one that appears twice. */
typedef struct fz_key {
    char *bytes;
    size_t len;
} fz_key;

static int fz_key_cmp(const void *a, const void *b) {
    const fz_key *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->bytes, y->bytes, n);
    if (c != 0) return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

/* Byte length of the string literal at p (on '"'), quotes included, as far
 * as the closing quote or the end of the text. */
static inline size_t fz_raw_string_len(const unsigned char *p) {
    const unsigned char *q = p + 1;
    while (*q && *q != '"') q += (*q == '\\' && q[1]) ? 2 : 1;
    return (size_t)(q - p) + (*q == '"');
}

static int fz_value(fz_json *j);

/* The members of an object (j->p just after '{', white space skipped, not
 * on '}'); 0 if malformed or a key appears twice (after unescaping). */
static inline int fz_object_members(fz_json *j) {
    fz_key *keys = NULL;
    size_t n = 0, cap = 0, i;
    int ok = 0, first = 1;
    for (;;) {
        if (!first) {
            fz_ws(j);
            if (*j->p != ',') break;
            fz_put(j, j->p, 1);
            j->p++;
        }
        first = 0;
        fz_ws(j);
        if (*j->p != '"') goto out;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            keys = realloc(keys, cap * sizeof *keys);
            if (keys == NULL) abort();
        }
        keys[n].bytes = malloc(fz_raw_string_len(j->p) + 1);
        if (keys[n].bytes == NULL) abort();
        if (!fz_string(j, keys[n].bytes, &keys[n].len)) {
            free(keys[n].bytes);
            goto out;
        }
        n++;
        fz_ws(j);
        if (*j->p != ':') goto out;
        fz_put(j, j->p, 1);
        j->p++;
        if (!fz_value(j)) goto out;
    }
    if (*j->p != '}') goto out;
    qsort(keys, n, sizeof *keys, fz_key_cmp);
    ok = 1;
    for (i = 1; i < n; i++)
        if (fz_key_cmp(&keys[i - 1], &keys[i]) == 0) ok = 0;
out:
    for (i = 0; i < n; i++) free(keys[i].bytes);
    free(keys);
    return ok;
}

static int fz_value(fz_json *j) {
    fz_ws(j);
    switch (*j->p) {
    case '{':
    case '[': {
        unsigned char open = *j->p, close = open == '{' ? '}' : ']';
        int first = 1;
        if (++j->depth > j->max_depth) j->max_depth = j->depth;
        if (j->depth > TS_MAX_DEPTH) return 0;
        fz_put(j, j->p, 1);
        j->p++;
        fz_ws(j);
        if (*j->p == close) {
            fz_put(j, j->p, 1);
            j->p++;
            j->depth--;
            return 1;
        }
        if (open == '{') {
            if (!fz_object_members(j)) return 0;
        } else {
            for (;;) {
                if (!first) {
                    fz_ws(j);
                    if (*j->p != ',') break;
                    fz_put(j, j->p, 1);
                    j->p++;
                }
                first = 0;
                if (!fz_value(j)) return 0;
            }
        }
        if (*j->p != close) return 0;
        fz_put(j, j->p, 1);
        j->p++;
        j->depth--;
        return 1;
    }
    case '"': return fz_string(j, NULL, NULL);
    case 't':
        if (strncmp((const char *)j->p, "true", 4)) return 0;
        fz_put(j, j->p, 4);
        j->p += 4;
        return 1;
    case 'f':
        if (strncmp((const char *)j->p, "false", 5)) return 0;
        fz_put(j, j->p, 5);
        j->p += 5;
        return 1;
    case 'n':
        if (strncmp((const char *)j->p, "null", 4)) return 0;
        fz_put(j, j->p, 4);
        j->p += 4;
        return 1;
    default: return fz_number(j);
    }
}

/* Whether text is one valid JSON value (with optional white space around);
 * if minified is not NULL, *minified gets the minified text (malloc'ed). */
static inline int fz_json_valid(const char *text, char **minified) {
    fz_json j;
    const unsigned char *q;
    memset(&j, 0, sizeof j);
    /* Invalid UTF-8 anywhere is invalid. */
    for (q = (const unsigned char *)text; *q;) {
        int len = fz_utf8_len(q);
        if (len == 0) return 0;
        q += len;
    }
    j.p = (const unsigned char *)text;
    if (minified) {
        j.out = malloc(strlen(text) + 1);
        if (j.out == NULL) abort();
    }
    if (!fz_value(&j)) goto bad;
    fz_ws(&j);
    if (*j.p != '\0') goto bad;
    if (minified) {
        j.out[j.out_len] = '\0';
        *minified = j.out;
    }
    return 1;
bad:
    free(j.out);
    return 0;
}

/* ---- Top-level members and pointers over minified valid text ------------- */

/* Skips the (valid, minified) value at p; returns the byte after it. */
static inline const char *fz_skip(const char *p) {
    fz_json j;
    memset(&j, 0, sizeof j);
    j.p = (const unsigned char *)p;
    if (!fz_value(&j)) abort(); /* only called on valid text */
    return (const char *)j.p;
}

typedef struct fz_member {
    char *key; /* decoded bytes (may hold NUL bytes), malloc'ed */
    size_t key_len;
    const char *value; /* into the text */
    size_t value_len;
} fz_member;

/* The members of the valid minified object text (NULL and 0 if it is not an
 * object); free with fz_members_free. */
static inline fz_member *fz_members(const char *text, size_t *count) {
    fz_member *m = NULL;
    size_t n = 0, cap = 0;
    const char *p = text;
    *count = 0;
    if (*p != '{') return NULL;
    p++;
    while (*p != '}') {
        fz_json j;
        const char *after;
        if (*p == ',') p++;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            m = realloc(m, cap * sizeof *m);
            if (m == NULL) abort();
        }
        memset(&j, 0, sizeof j);
        j.p = (const unsigned char *)p;
        m[n].key = malloc(strlen(p) + 1);
        if (m[n].key == NULL) abort();
        if (!fz_string(&j, m[n].key, &m[n].key_len)) abort();
        p = (const char *)j.p + 1; /* ':' */
        after = fz_skip(p);
        m[n].value = p;
        m[n].value_len = (size_t)(after - p);
        n++;
        p = after;
    }
    *count = n;
    return m;
}

static inline void fz_members_free(fz_member *m, size_t count) {
    size_t i;
    for (i = 0; i < count; i++) free(m[i].key);
    free(m);
}

/* Writes key[0..len) as the library quotes keys: '"' '\\' and control
 * characters escaped (\b \f \n \r \t, others \u00xx), the rest verbatim. */
static inline size_t fz_quote(char *dst, const char *key, size_t len) {
    size_t n = 0, i;
    dst[n++] = '"';
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)key[i];
        if (c == '"' || c == '\\') {
            dst[n++] = '\\';
            dst[n++] = (char)c;
        } else if (c < 0x20) {
            const char *short_form = c == '\b' ? "b" : c == '\f' ? "f" : c == '\n' ? "n" : c == '\r' ? "r" : c == '\t' ? "t" : NULL;
            dst[n++] = '\\';
            if (short_form) {
                dst[n++] = short_form[0];
            } else {
                n += (size_t)sprintf(dst + n, "u%04x", c);
            }
        } else {
            dst[n++] = (char)c;
        }
    }
    dst[n++] = '"';
    return n;
}

/* The pointer model: the outcome ts_store_get_state should have for the
 * pointer `ptr` in the (valid, minified) whole-state text `state`.
 * Returns TS_OK (with *value, *value_len set), TS_E_ARGUMENT (malformed) or
 * TS_E_NOT_FOUND. */
static inline ts_status fz_pointer_eval(const char *state, const char *ptr, const char **value, size_t *value_len) {
    const unsigned char *q;
    const char *cur = state, *tok;
    char *key;
    /* Syntax: valid UTF-8, "" or "/...", '~' followed by '0' or '1'. */
    for (q = (const unsigned char *)ptr; *q;) {
        int len = fz_utf8_len(q);
        if (len == 0) return TS_E_ARGUMENT;
        q += len;
    }
    if (*ptr != '\0' && *ptr != '/') return TS_E_ARGUMENT;
    for (q = (const unsigned char *)ptr; *q; q++) {
        if (*q == '~' && q[1] != '0' && q[1] != '1') return TS_E_ARGUMENT;
    }
    key = malloc(strlen(ptr) + 1);
    if (key == NULL) abort();
    tok = ptr;
    while (*tok == '/') {
        size_t klen = 0;
        tok++;
        while (*tok && *tok != '/') {
            if (*tok == '~') {
                key[klen++] = tok[1] == '0' ? '~' : '/';
                tok += 2;
            } else {
                key[klen++] = *tok++;
            }
        }
        if (*cur == '{') {
            const char *p = cur + 1, *found = NULL;
            char *dk = malloc(strlen(cur) + 1);
            if (dk == NULL) abort();
            while (*p != '}') {
                fz_json j;
                size_t dlen;
                if (*p == ',') p++;
                memset(&j, 0, sizeof j);
                j.p = (const unsigned char *)p;
                if (!fz_string(&j, dk, &dlen)) abort();
                p = (const char *)j.p + 1;
                if (found == NULL && dlen == klen && memcmp(dk, key, klen) == 0) found = p;
                p = fz_skip(p);
            }
            free(dk);
            if (found == NULL) goto not_found;
            cur = found;
        } else if (*cur == '[') {
            size_t index = 0, i;
            const char *p = cur + 1;
            if (klen == 0 || (klen > 1 && key[0] == '0') || klen > 18) goto not_found;
            for (i = 0; i < klen; i++) {
                if (key[i] < '0' || key[i] > '9') goto not_found;
                index = index * 10 + (size_t)(key[i] - '0');
            }
            if (*p == ']') goto not_found;
            for (i = 0; i < index; i++) {
                p = fz_skip(p);
                if (*p == ']') goto not_found;
                p++; /* ',' */
            }
            cur = p;
        } else {
            goto not_found;
        }
    }
    free(key);
    *value = cur;
    *value_len = (size_t)(fz_skip(cur) - cur);
    return TS_OK;
not_found:
    free(key);
    return TS_E_NOT_FOUND;
}

/* Checks that the store's whole state is a valid JSON object whose text a
 * new store accepts and gives back unchanged. */
static inline void fz_check_state_text(const char *text, const char *context) {
    ts_store *copy = NULL;
    char *again;
    ts_status s;
    FZ_CHECK(text[0] == '{' && fz_json_valid(text, NULL), "%s: the state is not valid JSON: %.300s", context, text);
    s = ts_store_create(text, &copy);
    FZ_CHECK(s == TS_OK, "%s: a new store refuses the state text (%s): %.300s", context, ts_status_name(s), text);
    again = fz_state(copy);
    FZ_CHECK(strcmp(again, text) == 0, "%s: the state text does not survive a round trip:\n  %.300s\n  %.300s", context,
             text, again);
    ts_free(again);
    ts_store_destroy(copy);
}

/* ---- A sandbox folder for files that plugins write ------------------------ */

/* Removes every entry of the folder dir (not recursive). */
static inline void fz_empty_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    if (d == NULL) return;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        (void)unlink(path);
    }
    closedir(d);
}

/* The folder of plugins built for fuzzing: $TS_FUZZ_PLUGINS, else
 * ../plugins beside this executable (build/asan/bin -> build/asan/plugins). */
static inline const char *fz_plugin_dir(void) {
    static char dir[4096];
    const char *env = getenv("TS_FUZZ_PLUGINS");
    ssize_t n;
    char *slash;
    if (env && *env) return env;
    if (dir[0]) return dir;
    n = readlink("/proc/self/exe", dir, sizeof dir - 20);
    if (n <= 0) abort();
    dir[n] = '\0';
    slash = strrchr(dir, '/');
    if (slash == NULL) abort();
    *slash = '\0';
    slash = strrchr(dir, '/');
    if (slash == NULL) abort();
    strcpy(slash, "/plugins");
    return dir;
}

#endif /* TS_FUZZ_COMMON_H */
