/*
 * pjson.h - minimal, non-recursive JSON reading helpers for Turnstate plugins.
 *
 * Header-only (every function is static inline, so a plugin that includes it
 * exports nothing new and links against nothing but libc). Meant for JSON
 * text that the host already validated (configs, action payloads), but every
 * function stops at the terminating NUL and returns an error instead of
 * reading past it, whatever the input, and none of them recurses: nesting
 * depth costs nothing but a counter.
 *
 * Values are addressed by `const char *` pointing at their first byte (after
 * any white space). Strings are handled as tokens that start at the opening
 * quote; pj_str_dup / pj_str_eq decode their escapes (\uXXXX with surrogate
 * pairs included) to UTF-8.
 */
#ifndef TS_PLUGINS_PJSON_H
#define TS_PLUGINS_PJSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum pj_kind { PJ_BAD = 0, PJ_OBJECT, PJ_ARRAY, PJ_STRING, PJ_NUMBER, PJ_TRUE, PJ_FALSE, PJ_NULL };

static inline int pj_is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Skips insignificant white space. */
static inline const char *pj_ws(const char *p) {
    while (pj_is_ws(*p)) p++;
    return p;
}

/* The kind of the value that starts at p (white space allowed before it). */
static inline enum pj_kind pj_kind_of(const char *p) {
    p = pj_ws(p);
    switch (*p) {
    case '{': return PJ_OBJECT;
    case '[': return PJ_ARRAY;
    case '"': return PJ_STRING;
    case 't': return PJ_TRUE;
    case 'f': return PJ_FALSE;
    case 'n': return PJ_NULL;
    default: return (*p == '-' || (*p >= '0' && *p <= '9')) ? PJ_NUMBER : PJ_BAD;
    }
}

/* The name of a kind, for messages. */
static inline const char *pj_kind_name(enum pj_kind k) {
    switch (k) {
    case PJ_OBJECT: return "an object";
    case PJ_ARRAY: return "an array";
    case PJ_STRING: return "a string";
    case PJ_NUMBER: return "a number";
    case PJ_TRUE: case PJ_FALSE: return "a boolean";
    case PJ_NULL: return "null";
    default: return "invalid JSON";
    }
}

/* Skips a string token that starts at the opening quote; returns the byte
 * after the closing quote, or NULL if the text ends first. */
static inline const char *pj_skip_string(const char *p) {
    if (*p != '"') return NULL;
    p++;
    for (;;) {
        char c = *p;
        if (c == '\0') return NULL;
        if (c == '"') return p + 1;
        if (c == '\\') {
            if (p[1] == '\0') return NULL;
            p += 2;
        } else {
            p++;
        }
    }
}

/* Skips one scalar (number or literal); NULL if there is none. */
static inline const char *pj_skip_scalar(const char *p) {
    const char *start = p;
    if (*p == 't') return strncmp(p, "true", 4) == 0 ? p + 4 : NULL;
    if (*p == 'f') return strncmp(p, "false", 5) == 0 ? p + 5 : NULL;
    if (*p == 'n') return strncmp(p, "null", 4) == 0 ? p + 4 : NULL;
    while (*p == '-' || *p == '+' || *p == '.' || *p == 'e' || *p == 'E' || (*p >= '0' && *p <= '9')) p++;
    return p == start ? NULL : p;
}

/* Skips the whole value that starts at p (white space allowed before it),
 * however deeply nested, without recursion. Returns the byte after it, or
 * NULL on malformed text. */
static inline const char *pj_skip(const char *p) {
    size_t depth = 0;
    p = pj_ws(p);
    for (;;) {
        char c = *p;
        if (c == '\0') return NULL;
        if (c == '{' || c == '[') {
            depth++;
            p++;
        } else if (c == '}' || c == ']') {
            if (depth == 0) return NULL;
            depth--;
            p++;
        } else if (c == '"') {
            p = pj_skip_string(p);
            if (p == NULL) return NULL;
        } else if (c == ',' || c == ':') {
            if (depth == 0) return NULL;
            p++;
        } else {
            p = pj_skip_scalar(p);
            if (p == NULL) return NULL;
        }
        if (depth == 0) return p;
        p = pj_ws(p);
    }
}

/* Iterating an object's members or an array's elements. */
typedef struct pj_iter {
    const char *p;
    int first;
} pj_iter;

/* Starts iterating the object (or array) at p; 0 if p is not one. */
static inline int pj_begin(pj_iter *it, const char *p, char open) {
    p = pj_ws(p);
    it->first = 1;
    it->p = ""; /* iterating a non-container yields -1 (malformed) */
    if (*p != open) return 0;
    it->p = p + 1;
    it->first = 1;
    return 1;
}

/* Next object member: *key is the key's string token (at its quote), *value
 * the value. Returns 1 for a member, 0 at the end, -1 on malformed text. */
static inline int pj_next_member(pj_iter *it, const char **key, const char **value) {
    const char *p = pj_ws(it->p);
    if (*p == '}') return 0;
    if (!it->first) {
        if (*p != ',') return -1;
        p = pj_ws(p + 1);
    }
    if (*p != '"') return -1;
    *key = p;
    p = pj_skip_string(p);
    if (p == NULL) return -1;
    p = pj_ws(p);
    if (*p != ':') return -1;
    p = pj_ws(p + 1);
    *value = p;
    p = pj_skip(p);
    if (p == NULL) return -1;
    it->p = p;
    it->first = 0;
    return 1;
}

/* Next array element. Returns 1, 0 at the end, -1 on malformed text. */
static inline int pj_next_element(pj_iter *it, const char **value) {
    const char *p = pj_ws(it->p);
    if (*p == ']') return 0;
    if (!it->first) {
        if (*p != ',') return -1;
        p = pj_ws(p + 1);
    }
    *value = p;
    p = pj_skip(p);
    if (p == NULL) return -1;
    it->p = p;
    it->first = 0;
    return 1;
}

static inline int pj_hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    int i;
    for (i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0; /* also stops at a NUL */
    }
    *out = v;
    return 1;
}

/* Decodes the next character of a string token into UTF-8 bytes in out[4].
 * *pp points inside the token (after the opening quote at first). Returns the
 * number of bytes (1-4), 0 at the closing quote (*pp then points after it),
 * or -1 on malformed text. */
static inline int pj_str_char(const char **pp, unsigned char out[4]) {
    const char *p = *pp;
    unsigned cp;
    char c = *p;
    if (c == '\0') return -1;
    if (c == '"') {
        *pp = p + 1;
        return 0;
    }
    if (c != '\\') {
        out[0] = (unsigned char)c;
        *pp = p + 1;
        return 1;
    }
    c = p[1];
    p += 2;
    switch (c) {
    case '"': cp = '"'; break;
    case '\\': cp = '\\'; break;
    case '/': cp = '/'; break;
    case 'b': cp = '\b'; break;
    case 'f': cp = '\f'; break;
    case 'n': cp = '\n'; break;
    case 'r': cp = '\r'; break;
    case 't': cp = '\t'; break;
    case 'u':
        if (!pj_hex4(p, &cp)) return -1;
        p += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned low;
            if (p[0] != '\\' || p[1] != 'u' || !pj_hex4(p + 2, &low) || low < 0xDC00 || low > 0xDFFF) return -1;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            p += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return -1;
        }
        break;
    default: return -1;
    }
    *pp = p;
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the string token at tok into new malloc'ed, NUL-terminated UTF-8;
 * *length (if not NULL) gets its length in bytes (a "\u0000" in the text is
 * kept, so it may be less than strlen). NULL on malformed text or no memory. */
static inline char *pj_str_dup(const char *tok, size_t *length) {
    const char *end = pj_skip_string(tok);
    const char *p = tok + 1;
    char *out, *w;
    if (end == NULL) return NULL;
    /* Decoding never makes text longer than its escaped form. */
    out = (char *)malloc((size_t)(end - tok));
    if (out == NULL) return NULL;
    w = out;
    for (;;) {
        unsigned char buf[4];
        int n = pj_str_char(&p, buf);
        if (n < 0) {
            free(out);
            return NULL;
        }
        if (n == 0) break;
        memcpy(w, buf, (size_t)n);
        w += n;
    }
    *w = '\0';
    if (length) *length = (size_t)(w - out);
    return out;
}

/* True if the string token at tok decodes to exactly s[0..n). */
static inline int pj_str_eqn(const char *tok, const char *s, size_t n) {
    const char *p = tok + 1;
    size_t i = 0;
    if (*tok != '"') return 0;
    for (;;) {
        unsigned char buf[4];
        int k = pj_str_char(&p, buf);
        if (k < 0) return 0;
        if (k == 0) return i == n;
        if (n - i < (size_t)k || memcmp(s + i, buf, (size_t)k) != 0) return 0;
        i += (size_t)k;
    }
}

static inline int pj_str_eq(const char *tok, const char *s) { return pj_str_eqn(tok, s, strlen(s)); }

/* Writes the string token at tok, decoded, into out[size] for a message
 * (without quotes): '"', '\\' and control characters (U+0000 included) are
 * written as JSON escapes, so a key such as "deny\u0000x" is not shown as
 * "deny"; cut with "..." if it does not fit. Always NUL-terminates (size >= 4). */
static inline void pj_str_show(const char *tok, char *out, size_t size) {
    static const char hex[] = "0123456789abcdef";
    const char *p = tok + 1;
    size_t used = 0;
    out[0] = '\0';
    if (*tok != '"') return;
    for (;;) {
        unsigned char buf[4];
        char esc[7];
        const char *piece = (const char *)buf;
        size_t n;
        int k = pj_str_char(&p, buf);
        if (k <= 0) break;
        n = (size_t)k;
        if (k == 1 && (buf[0] < 0x20 || buf[0] == '"' || buf[0] == '\\')) {
            if (buf[0] < 0x20) {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[buf[0] >> 4];
                esc[5] = hex[buf[0] & 15];
                n = 6;
            } else {
                esc[0] = '\\';
                esc[1] = (char)buf[0];
                n = 2;
            }
            piece = esc;
        }
        if (used + n + 4 > size) {
            memcpy(out + used, "...", 4);
            return;
        }
        memcpy(out + used, piece, n);
        used += n;
        out[used] = '\0';
    }
}

/* The value of the member `key` of the object at obj, or NULL if there is
 * none or obj is not an object. (The host refuses JSON with a key twice in
 * an object, configs and actions alike, so there is at most one.) */
static inline const char *pj_get(const char *obj, const char *key) {
    pj_iter it;
    const char *k, *v, *found = NULL;
    int r;
    size_t n = strlen(key);
    if (!pj_begin(&it, obj, '{')) return NULL;
    while ((r = pj_next_member(&it, &k, &v)) == 1) {
        if (pj_str_eqn(k, key, n)) found = v;
    }
    return r == 0 ? found : NULL;
}

/* What pj_uint64 found. */
enum pj_uint64_result {
    PJ_U64_OK = 1,
    PJ_U64_NOT_INTEGER = 0, /* not a number, or a fraction or an exponent */
    PJ_U64_NEGATIVE = -1,
    PJ_U64_TOO_LARGE = -2   /* an integer above 18446744073709551615 */
};

/* Reads the number at p as an unsigned 64-bit integer, the whole range
 * 0..18446744073709551615 ("-0" is 0). Returns a pj_uint64_result. */
static inline int pj_uint64(const char *p, uint64_t *out) {
    int negative = 0, nonzero = 0;
    uint64_t v = 0;
    const char *start;
    p = pj_ws(p);
    if (*p == '-') {
        negative = 1;
        p++;
    }
    start = p;
    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (d) nonzero = 1;
        if (v > (UINT64_MAX - d) / 10u) {
            while (*p >= '0' && *p <= '9') p++;
            if (*p == '.' || *p == 'e' || *p == 'E') return PJ_U64_NOT_INTEGER;
            return negative ? PJ_U64_NEGATIVE : PJ_U64_TOO_LARGE;
        }
        v = v * 10u + d;
        p++;
    }
    if (p == start || *p == '.' || *p == 'e' || *p == 'E') return PJ_U64_NOT_INTEGER;
    if (negative && nonzero) return PJ_U64_NEGATIVE;
    *out = v;
    return PJ_U64_OK;
}

/* Why pj_uint64 refused a value of kind k, for messages ("not %s"). */
static inline const char *pj_uint64_why(enum pj_kind k, int result) {
    if (k != PJ_NUMBER) return pj_kind_name(k);
    switch (result) {
    case PJ_U64_NEGATIVE: return "a negative number";
    case PJ_U64_TOO_LARGE: return "a number above 18446744073709551615";
    default: return "a fraction or a number with an exponent (write a plain integer)";
    }
}

/* Copies the JSON text [p, end) into out without insignificant white space
 * (outside strings). out must have room for end - p + 1 bytes; returns the
 * length written (NUL-terminated). */
static inline size_t pj_minify(const char *p, const char *end, char *out) {
    char *w = out;
    int in_string = 0;
    while (p < end && *p) {
        char c = *p++;
        if (in_string) {
            *w++ = c;
            if (c == '\\' && p < end && *p) *w++ = *p++;
            else if (c == '"') in_string = 0;
        } else if (!pj_is_ws(c)) {
            *w++ = c;
            if (c == '"') in_string = 1;
        }
    }
    *w = '\0';
    return (size_t)(w - out);
}

#endif /* TS_PLUGINS_PJSON_H */
