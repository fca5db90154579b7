/*
 * text.h - the inspector's text buffers: a growing buffer (sb) that every
 * JSON answer, event and exported session is built in, the function that
 * makes any bytes into a valid JSON string, and failf (a reason, then -1). Header-only (static inline):
 * every file of the plugin includes it, and so does the fuzz harness
 * Tests/fuzz/fuzz_inspector_import.c (through session.h). C99 and libc only.
 * No locks: a buffer belongs to whoever builds it.
 */
#ifndef TS_INSPECTOR_TEXT_H
#define TS_INSPECTOR_TEXT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Growing text buffers ------------------------------------------------ */

typedef struct sb {
    char *text;
    size_t length, capacity;
    int failed; /* out of memory: everything after is dropped */
} sb;

static inline int sb_reserve(sb *b, size_t more) {
    if (b->failed) return 0;
    if (more > SIZE_MAX / 4 - b->length) {
        b->failed = 1;
        return 0;
    }
    if (b->length + more + 1 <= b->capacity) return 1;
    size_t capacity = b->capacity ? b->capacity : 256;
    while (capacity < b->length + more + 1) capacity *= 2;
    char *text = realloc(b->text, capacity);
    if (text == NULL) {
        b->failed = 1;
        return 0;
    }
    b->text = text;
    b->capacity = capacity;
    return 1;
}

static inline void sb_add(sb *b, const char *text, size_t length) {
    if (!sb_reserve(b, length)) return;
    memcpy(b->text + b->length, text, length);
    b->length += length;
    b->text[b->length] = '\0';
}

static inline void sb_str(sb *b, const char *text) { sb_add(b, text, strlen(text)); }

static inline void sb_printf(sb *b, const char *format, ...) {
    char small[256];
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(small, sizeof small, format, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        sb_add(b, small, (size_t)n);
        return;
    }
    if (!sb_reserve(b, (size_t)n)) return;
    va_start(ap, format);
    vsnprintf(b->text + b->length, (size_t)n + 1, format, ap);
    va_end(ap);
    b->length += (size_t)n;
}

/* The length of the well-formed UTF-8 sequence at p (1 to 4), or 0 if the
 * bytes there are not one (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF). p is NUL-terminated: a NUL is never a
 * continuation byte, so nothing past it is read. */
static inline int utf8_sequence(const unsigned char *p) {
    unsigned char c = p[0];
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80 ? 4 : 0;
    }
    return 0;
}

/* `text` as a JSON string (quoted, escaped); NULL gives null. Whatever the
 * bytes, the result is valid JSON: control characters, '"' and '\' are
 * escaped, well-formed UTF-8 is kept, and each byte that is not part of
 * well-formed UTF-8 becomes U+FFFD. */
static inline void sb_json_string(sb *b, const char *text) {
    if (text == NULL) {
        sb_str(b, "null");
        return;
    }
    sb_add(b, "\"", 1);
    const unsigned char *p = (const unsigned char *)text, *run = p;
    while (*p) {
        unsigned char c = *p;
        int n = c >= 0x20 && c != '"' && c != '\\' ? utf8_sequence(p) : 0;
        if (n > 0) {
            p += n;
            continue;
        }
        sb_add(b, (const char *)run, (size_t)(p - run));
        if (c == '"') sb_str(b, "\\\"");
        else if (c == '\\') sb_str(b, "\\\\");
        else if (c == '\n') sb_str(b, "\\n");
        else if (c == '\t') sb_str(b, "\\t");
        else if (c < 0x20) sb_printf(b, "\\u%04x", c);
        else sb_str(b, "\\ufffd");
        run = ++p;
    }
    sb_add(b, (const char *)run, (size_t)(p - run));
    sb_add(b, "\"", 1);
}

/* Fills why (size bytes) from format and returns -1: how the inspector's
 * functions fail with a reason. */
static inline int failf(char *why, size_t size, const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    vsnprintf(why, size, format, ap);
    va_end(ap);
    return -1;
}

#endif /* TS_INSPECTOR_TEXT_H */
