/*
 * session.h - a session in the journal's record format, as the inspector
 * exports it (GET /api/export) and imports it (POST /api/import): the
 * records themselves are read and written by Plugins/common/record.h, the
 * journal's own code; this adds what a session is on top of them (line
 * numbers in the reasons, a snapshot before the first action). history.c
 * writes sessions, travel.c reads them, and so does the fuzz harness
 * Tests/fuzz/fuzz_inspector_import.c, which runs this very code without a
 * server or a store. Header-only (static inline): the plugin still exports
 * only ts_plugin_entry. C99 and libc only; no locks (it reads and writes
 * text it is given).
 */
#ifndef TS_INSPECTOR_SESSION_H
#define TS_INSPECTOR_SESSION_H

#include "../common/record.h"
#include "text.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Appends the record `letter` + json (a C string) to b. */
static inline void sb_record(sb *b, char letter, const char *json) {
    char header[TS_RECORD_HEADER_MAX + 1];
    size_t length = strlen(json);
    sb_add(b, header, ts_record_header(header, letter, json, length));
    sb_add(b, json, length);
    sb_add(b, "\n", 1);
}

/* One record of a session: its JSON stays in the text (not NUL-terminated). */
typedef struct session_record {
    char letter;      /* 'A', 'S' or 'V' */
    size_t line;      /* the line it starts on, from 1 */
    const char *json; /* text + its offset */
    size_t length;
} session_record;

/* Reads the record at text[*offset] (size bytes in all; text need not be
 * NUL-terminated). *line is the line it starts on. Returns 1 with *record
 * filled and *offset and *line moved past it, 0 at the end of the text, or
 * -1 with the reason in why ("line N: ..."), reading nothing outside
 * text[0..size). */
static inline int session_next(const char *text, size_t size, size_t *offset, size_t *line, session_record *record,
                               char *why, size_t why_size) {
    ts_record r;
    char reason[256];
    if (*offset >= size) return 0;
    record->line = *line;
    if (!ts_record_read(text, size, *offset, &r, reason, sizeof reason)) {
        record->letter = text[*offset];
        snprintf(why, why_size, "line %zu: %s", *line, reason);
        return -1;
    }
    record->letter = r.letter;
    record->json = text + r.json;
    record->length = r.length;
    for (size_t i = 0; i < r.length; i++) *line += text[r.json + i] == '\n';
    *line += 1;
    *offset = r.end;
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
    uint32_t version;    /* the state version of base: that of the last V record before it, 0 without one */
} session_info;

/* Checks a whole session before anything is changed: every record well
 * formed (session_next), at least one snapshot, no action before the first
 * snapshot. 0 with *info filled, or -1 with the reason in why. */
static inline int session_check(const char *text, size_t size, session_info *info, char *why, size_t why_size) {
    size_t offset = 0, line = 1;
    session_record r;
    int found = 0, more;
    memset(info, 0, sizeof *info);
    uint32_t version = 0;
    while ((more = session_next(text, size, &offset, &line, &r, why, why_size)) == 1) {
        info->records++;
        if (r.letter == 'V') {
            char reason[160];
            if (!ts_record_version(r.json, r.length, &version, reason, sizeof reason)) {
                snprintf(why, why_size, "line %zu: %s", r.line, reason);
                return -1;
            }
        } else if (r.letter == 'S' && !found) {
            info->version = version;
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
