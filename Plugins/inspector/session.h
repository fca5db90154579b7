/*
 * session.h - the parts of the inspector that read text from outside, apart
 * from its HTTP server: the reader of an imported session (the journal's
 * record format, Plugins/journal/README.md) and the text buffers that turn
 * any bytes into JSON strings. inspector.c includes it, and so does the
 * fuzz harness Tests/fuzz/fuzz_inspector_import.c, which runs this very code
 * without a server or a store. Every function is static: the plugin still
 * exports only ts_plugin_entry. C99 and libc only.
 *
 * A record is, exactly as the journal writes it and reads it back:
 *
 *     L <length> <crc32> <json>\n
 *
 * L is 'A' (an action) or 'S' (a snapshot of the state); <length> is 1 to 18
 * decimal digits (the bytes of <json>); <crc32> is 8 lower-case hex digits,
 * the CRC-32 (IEEE) of L followed by <json>; each part is separated by one
 * space, and the <length> bytes of <json> are followed by a newline. <json>
 * is taken by its length, whatever bytes it holds, but a NUL byte is
 * refused (the store takes C strings).
 */
#ifndef TS_INSPECTOR_SESSION_H
#define TS_INSPECTOR_SESSION_H

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

static int sb_reserve(sb *b, size_t more) {
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

static void sb_add(sb *b, const char *text, size_t length) {
    if (!sb_reserve(b, length)) return;
    memcpy(b->text + b->length, text, length);
    b->length += length;
    b->text[b->length] = '\0';
}

static void sb_str(sb *b, const char *text) { sb_add(b, text, strlen(text)); }

static void sb_printf(sb *b, const char *format, ...) {
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
static int utf8_sequence(const unsigned char *p) {
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
static void sb_json_string(sb *b, const char *text) {
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

/* ---- The journal's record format ------------------------------------------ */

static uint32_t crc_table[256];

/* Fills crc_table; once, before any record_crc (pthread_once in the plugin). */
static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

/* CRC-32 of the record letter followed by json[0..length). */
static uint32_t record_crc(char letter, const char *json, size_t length) {
    uint32_t c = 0xFFFFFFFFu;
    c = crc_table[(c ^ (unsigned char)letter) & 0xFFu] ^ (c >> 8);
    for (size_t i = 0; i < length; i++) c = crc_table[(c ^ (unsigned char)json[i]) & 0xFFu] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static void sb_record(sb *b, char letter, const char *json) {
    size_t length = strlen(json);
    sb_printf(b, "%c %zu %08x ", letter, length, (unsigned)record_crc(letter, json, length));
    sb_add(b, json, length);
    sb_add(b, "\n", 1);
}

/* One record of a session: its JSON stays in the text (not NUL-terminated). */
typedef struct session_record {
    char letter;      /* 'A' or 'S' */
    size_t line;      /* the line it starts on, from 1 */
    const char *json; /* text + its offset */
    size_t length;
} session_record;

#define SESSION_MAX_DIGITS 18 /* a length of at most 10^18 - 1: no overflow */

/* Reads the record at text[*offset] (size bytes in all; text need not be
 * NUL-terminated). *line is the line it starts on. Returns 1 with *record
 * filled and *offset and *line moved past it, 0 at the end of the text, or
 * -1 with the reason in why ("line N: ..."), reading nothing outside
 * text[0..size). */
static int session_next(const char *text, size_t size, size_t *offset, size_t *line, session_record *record,
                        char *why, size_t why_size) {
    size_t p = *offset, length = 0, digits = 0;
    uint32_t stored = 0;
    if (p >= size) return 0;
    record->letter = text[p];
    record->line = *line;
    if ((text[p] != 'A' && text[p] != 'S') || p + 1 >= size || text[p + 1] != ' ') {
        snprintf(why, why_size, "line %zu: not a journal record (\"A|S <length> <crc32> <json>\"): it does not start "
                 "with \"A \" or \"S \"", *line);
        return -1;
    }
    p += 2;
    while (p < size && text[p] >= '0' && text[p] <= '9') {
        if (++digits > SESSION_MAX_DIGITS) break;
        length = length * 10 + (size_t)(text[p] - '0');
        p++;
    }
    if (digits == 0 || digits > SESSION_MAX_DIGITS || p >= size || text[p] != ' ') {
        snprintf(why, why_size, "line %zu: not a journal record (\"A|S <length> <crc32> <json>\"): the length must be "
                 "1 to %d decimal digits followed by one space", *line, SESSION_MAX_DIGITS);
        return -1;
    }
    p++;
    for (int k = 0; k < 8; k++, p++) {
        char c = p < size ? text[p] : '\0';
        stored <<= 4;
        if (c >= '0' && c <= '9') stored |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') stored |= (uint32_t)(c - 'a' + 10);
        else {
            snprintf(why, why_size, "line %zu: not a journal record (\"A|S <length> <crc32> <json>\"): the CRC-32 "
                     "must be 8 lower-case hex digits followed by one space", *line);
            return -1;
        }
    }
    if (p >= size || text[p] != ' ') {
        snprintf(why, why_size, "line %zu: not a journal record (\"A|S <length> <crc32> <json>\"): the CRC-32 must be "
                 "8 lower-case hex digits followed by one space", *line);
        return -1;
    }
    p++;
    if (length >= size - p) { /* the JSON and its newline must fit */
        snprintf(why, why_size, "line %zu: the length says %zu bytes, but only %zu follow (with the newline)", *line,
                 length, size - p);
        return -1;
    }
    if (text[p + length] != '\n') {
        snprintf(why, why_size, "line %zu: the length says %zu bytes, and no newline follows them", *line, length);
        return -1;
    }
    if (memchr(text + p, '\0', length) != NULL) {
        snprintf(why, why_size, "line %zu: a NUL byte in the record's JSON", *line);
        return -1;
    }
    uint32_t computed = record_crc(record->letter, text + p, length);
    if (computed != stored) {
        snprintf(why, why_size, "line %zu: wrong CRC-32 (recorded %08lx, computed %08lx)", *line,
                 (unsigned long)stored, (unsigned long)computed);
        return -1;
    }
    record->json = text + p;
    record->length = length;
    for (size_t i = 0; i < length; i++) *line += text[p + i] == '\n';
    *line += 1;
    *offset = p + length + 1;
    return 1;
}

/* What an import starts from: the first snapshot, and how many actions
 * follow it. */
typedef struct session_info {
    session_record base; /* the first S record */
    size_t base_end;     /* the offset just after it: the actions come after */
    size_t base_line;    /* the line after it */
    size_t records;      /* every record of the text */
    size_t actions;      /* the A records after base */
} session_info;

/* Checks a whole session before anything is changed: every record well
 * formed (session_next), at least one snapshot, no action before the first
 * snapshot. 0 with *info filled, or -1 with the reason in why. */
static int session_check(const char *text, size_t size, session_info *info, char *why, size_t why_size) {
    size_t offset = 0, line = 1;
    session_record r;
    int found = 0, more;
    memset(info, 0, sizeof *info);
    while ((more = session_next(text, size, &offset, &line, &r, why, why_size)) == 1) {
        info->records++;
        if (r.letter == 'S' && !found) {
            found = 1;
            info->base = r;
            info->base_end = offset;
            info->base_line = line;
        } else if (r.letter == 'A') {
            if (!found) {
                snprintf(why, why_size, "line %zu: an action before the first snapshot (S): the session has no state "
                         "to start from", r.line);
                return -1;
            }
            info->actions++;
        }
    }
    if (more < 0) return -1;
    if (!found) {
        snprintf(why, why_size, "no snapshot (S record) in the session");
        return -1;
    }
    return 0;
}

#endif /* TS_INSPECTOR_SESSION_H */
