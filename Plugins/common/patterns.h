/*
 * patterns.h - the patterns the plugins' configs give for action types (and
 * the recorder's for state keys): a pattern ending in "*" matches every text
 * that starts with what comes before it ("*" alone matches every text); any
 * other pattern matches one text exactly. Shared by guard (allow, deny,
 * require), undo (include, exclude, group_by, clear_types, init_types) and
 * the recorder (allow/deny types and keys), so the three match alike.
 *
 * Each plugin reads its own config arrays and words its own messages; this
 * holds what they share: decoding one JSON string into a pattern, matching,
 * freeing. Header-only (every function is static inline, so a plugin that
 * includes it exports nothing new); C99, libc and pjson.h. These are helpers
 * for plugins, not functions of libturnstate.
 */
#ifndef TS_PLUGINS_PATTERNS_H
#define TS_PLUGINS_PATTERNS_H

#include "pjson.h"

#include <stdlib.h>
#include <string.h>

typedef struct ts_pattern {
    char *text;    /* decoded; without the trailing "*" when prefix */
    size_t length; /* of text */
    int prefix;    /* the pattern ended in "*": matches texts that start with text */
} ts_pattern;

typedef struct ts_pattern_list {
    ts_pattern *items;
    size_t count;
} ts_pattern_list;

/* Decodes the JSON string token at `token` (no leading whitespace) into
 * *out. 1; 0 when out of memory (*out untouched); -1 when the text holds
 * U+0000, which no action type can hold, so it could never match (*out is
 * filled: free it with the list). An empty pattern ("") comes out with
 * length 0 and prefix 0; a plugin that refuses it says so in its words. */
static inline int ts_pattern_make(const char *token, ts_pattern *out) {
    size_t length;
    char *text = pj_str_dup(token, &length);
    if (text == NULL) return 0;
    out->prefix = length > 0 && text[length - 1] == '*';
    if (out->prefix) text[--length] = '\0';
    out->text = text;
    out->length = length;
    return strlen(text) == length ? 1 : -1;
}

/* Whether `text` (length bytes) matches the pattern. */
static inline int ts_pattern_matches(const ts_pattern *pattern, const char *text, size_t length) {
    if (pattern->prefix) return length >= pattern->length && memcmp(text, pattern->text, pattern->length) == 0;
    return length == pattern->length && memcmp(text, pattern->text, length) == 0;
}

/* The first pattern of the list that `text` (length bytes) matches, or NULL. */
static inline const ts_pattern *ts_pattern_first(const ts_pattern_list *list, const char *text, size_t length) {
    size_t i;
    for (i = 0; i < list->count; i++)
        if (ts_pattern_matches(&list->items[i], text, length)) return &list->items[i];
    return NULL;
}

/* Frees the patterns and empties the list (safe on an empty one). */
static inline void ts_pattern_list_free(ts_pattern_list *list) {
    size_t i;
    for (i = 0; i < list->count; i++) free(list->items[i].text);
    free(list->items);
    list->items = NULL;
    list->count = 0;
}

#endif
