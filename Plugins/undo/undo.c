/*
 * undo - a Turnstate middleware plugin: undo and redo, with redux-undo's
 * vocabulary (past, present, future; limit, filter, groupBy, jump, clear
 * history, init types). See README.md and docs/undo.md.
 *
 * The history is kept in memory: a list of past states and a list of future
 * states, each the JSON text of the tracked keys (an object holding those
 * keys, or the whole state when no "keys" are configured), bounded by
 * "limit" (states) and "max_bytes" (bytes of text). `latest` is redux-undo's
 * _latestUnfiltered: the tracked state after the last recorded action, which
 * is what the next recorded action pushes onto the past.
 *
 * Undo is an ordinary action: @@undo, @@redo and the jumps are resolved
 * against the history into one self-contained action,
 *     {"type":"@@undo/apply","payload":{"action":"@@undo","state":{...},"past":N,"future":M}}
 * The plugin sets the tracked keys to payload.state (replace_state), then
 * passes that action on: the middleware after it (the journal) records it
 * and the reducers see it. Replayed later (a journal's restart), an
 * @@undo/apply needs no history: the plugin sets the state it carries and
 * starts a new, empty history. */
#define _POSIX_C_SOURCE 200809L

#include "turnstate_plugin.h"

#include "../common/patterns.h"
#include "../common/pjson.h"
#include "../common/store_api.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNDO_VERSION "1.1.0"
#define UNDO_DEFAULT_LIMIT 100u
#define UNDO_MAX_LIMIT 1000000u
#define UNDO_DEFAULT_MAX_BYTES (16u * 1024u * 1024u)
#define UNDO_MAX_MAX_BYTES (1ull << 40)
#define UNDO_MAX_KEYS 1024u
/* What the plugin dispatches when it loads (undo_create): a clear that says
 * it comes from a load. */
#define UNDO_LOADED_ACTION "{\"type\":\"@@undo/clear\",\"payload\":{\"loaded\":true}}"

typedef struct tracked_key {
    char *token;   /* the key as a minified JSON string token, quotes included */
    char *name;    /* decoded */
    char *pointer; /* "/name" as an RFC 6901 JSON Pointer */
} tracked_key;

typedef struct text_list {
    char **items;
    size_t count, capacity;
} text_list;

enum group_mode { GROUP_NONE, GROUP_TYPE, GROUP_FIELD, GROUP_TYPES };

typedef struct undo_plugin {
    /* config */
    tracked_key *keys;
    size_t key_count;
    uint64_t limit, max_bytes;
    ts_pattern_list include, exclude, group_types, clear_types, init_types;
    int has_include, sync_filter, status;
    enum group_mode group_mode;
    /* history */
    text_list past, future; /* past: oldest first; future: the next redo first */
    char *latest;           /* redux-undo's _latestUnfiltered */
    char *group;            /* the group of the last recorded action, or NULL */
    char *initial;          /* the tracked state when the plugin was created */
    char *present;          /* the tracked state as the plugin last left it */
    size_t bytes;           /* bytes of text in past and future */
    int depth;              /* run() calls under way (a listener's nested dispatch) */
    ts_next_fn last_next;   /* the `next` of the last run(): a new one means the chain after us changed */
} undo_plugin;

/* ---- small helpers ---- */

static char *strdup_(const char *s) {
    char *d = malloc(strlen(s) + 1);
    if (d != NULL) strcpy(d, s);
    return d;
}

/* Whether the action type matches one of the list's patterns. */
static int list_matches(const ts_pattern_list *list, const char *type) {
    return list->count > 0 && ts_pattern_first(list, type, strlen(type)) != NULL;
}

static void clear_list(text_list *list, size_t *bytes) {
    size_t i;
    for (i = 0; i < list->count; i++) {
        *bytes -= strlen(list->items[i]);
        free(list->items[i]);
    }
    list->count = 0;
}

/* Makes room for `need` items; 0 when there is no memory. */
static int reserve(text_list *list, size_t need) {
    char **items;
    size_t capacity;
    if (need <= list->capacity) return 1;
    capacity = list->capacity ? list->capacity : 8;
    while (capacity < need) capacity *= 2;
    items = realloc(list->items, capacity * sizeof *items);
    if (items == NULL) return 0;
    list->items = items;
    list->capacity = capacity;
    return 1;
}

static void clear_history(undo_plugin *u) {
    clear_list(&u->past, &u->bytes);
    clear_list(&u->future, &u->bytes);
    free(u->group);
    u->group = NULL;
}

/* Drops the oldest past states, then the farthest future ones, until the
 * past holds at most `limit` states and past and future at most max_bytes. */
static void trim(undo_plugin *u) {
    while (u->past.count > 0 && (u->past.count > u->limit || u->bytes > u->max_bytes)) {
        u->bytes -= strlen(u->past.items[0]);
        free(u->past.items[0]);
        memmove(u->past.items, u->past.items + 1, (u->past.count - 1) * sizeof *u->past.items);
        u->past.count--;
    }
    while (u->future.count > 0 && (u->future.count > u->limit || u->bytes > u->max_bytes)) {
        u->future.count--;
        u->bytes -= strlen(u->future.items[u->future.count]);
        free(u->future.items[u->future.count]);
    }
}

/* Appends text to a growing buffer; 0 when there is no memory. */
typedef struct buffer {
    char *data;
    size_t length, capacity;
} buffer;

static int put(buffer *b, const char *text, size_t n) {
    if (b->length + n + 1 > b->capacity) {
        size_t capacity = b->capacity ? b->capacity : 256;
        char *data;
        while (capacity < b->length + n + 1) capacity *= 2;
        data = realloc(b->data, capacity);
        if (data == NULL) return 0;
        b->data = data;
        b->capacity = capacity;
    }
    memcpy(b->data + b->length, text, n);
    b->length += n;
    b->data[b->length] = '\0';
    return 1;
}

static int puts_(buffer *b, const char *text) { return put(b, text, strlen(text)); }

/* ---- reading and setting the tracked state ---- */

/* The tracked state's text (malloc'ed) in *out: the whole state, or an object
 * of the tracked keys the state has. A status; the message is set. */
static ts_status read_tracked(undo_plugin *u, const ts_store_api *store, char **out) {
    buffer b = {NULL, 0, 0};
    size_t i;
    ts_status st;
    *out = NULL;
    if (u->key_count == 0) {
        char *state = NULL;
        st = store->get_state(NULL, &state);
        if (st != TS_OK) return store->fail(st, "undo: could not read the state");
        *out = malloc(strlen(state) + 1);
        if (*out == NULL) {
            store->free(state);
            return store->fail(TS_E_NOMEM, "undo: out of memory");
        }
        strcpy(*out, state);
        store->free(state);
        return TS_OK;
    }
    if (!puts_(&b, "{")) return store->fail(TS_E_NOMEM, "undo: out of memory");
    for (i = 0; i < u->key_count; i++) {
        char *value = NULL;
        st = store->get_state(u->keys[i].pointer, &value);
        if (st == TS_E_NOT_FOUND) continue;
        if (st != TS_OK) {
            free(b.data);
            return store->fail(st, "undo: could not read a tracked key of the state");
        }
        if ((b.length > 1 && !puts_(&b, ",")) || !puts_(&b, u->keys[i].token) || !puts_(&b, ":") ||
            !puts_(&b, value)) {
            store->free(value);
            free(b.data);
            return store->fail(TS_E_NOMEM, "undo: out of memory");
        }
        store->free(value);
    }
    if (!puts_(&b, "}")) {
        free(b.data);
        return store->fail(TS_E_NOMEM, "undo: out of memory");
    }
    *out = b.data;
    return TS_OK;
}

static int is_tracked(const undo_plugin *u, const char *key_token) {
    size_t i;
    for (i = 0; i < u->key_count; i++) {
        if (pj_str_eq(key_token, u->keys[i].name)) return 1;
    }
    return 0;
}

/* The whole state with the tracked keys set as in `target` (a tracked-state
 * object): members in the state's order, tracked keys that `target` lacks
 * left out, those only `target` has appended. NULL when out of memory. */
static char *merge_state(const undo_plugin *u, const char *state, const char *target) {
    buffer b = {NULL, 0, 0};
    pj_iter it;
    const char *k, *v, *end;
    int first = 1, r;
    if (!puts_(&b, "{")) return NULL;
    pj_begin(&it, state, '{');
    while ((r = pj_next_member(&it, &k, &v)) == 1) {
        if (is_tracked(u, k)) {
            const char *tv;
            /* the target's value for this key, if it has one */
            {
                pj_iter t;
                const char *tk, *tval;
                tv = NULL;
                pj_begin(&t, target, '{');
                while (pj_next_member(&t, &tk, &tval) == 1) {
                    const char *kend = pj_skip_string(k), *tkend = pj_skip_string(tk);
                    if (kend && tkend && (size_t)(kend - k) == (size_t)(tkend - tk) && memcmp(k, tk, (size_t)(kend - k)) == 0)
                        tv = tval;
                }
            }
            if (tv == NULL) continue;
            end = pj_skip(tv);
            if ((!first && !puts_(&b, ",")) || !put(&b, k, (size_t)(pj_skip_string(k) - k)) || !puts_(&b, ":") ||
                !put(&b, tv, (size_t)(end - tv)))
                goto oom;
        } else {
            end = pj_skip(v);
            if ((!first && !puts_(&b, ",")) || !put(&b, k, (size_t)(end - k))) goto oom;
        }
        first = 0;
    }
    /* keys of the target that the state does not have */
    {
        pj_iter t;
        const char *tk, *tval;
        pj_begin(&t, target, '{');
        while (pj_next_member(&t, &tk, &tval) == 1) {
            pj_iter s;
            const char *sk, *sv, *tkend = pj_skip_string(tk);
            int found = 0;
            pj_begin(&s, state, '{');
            while (pj_next_member(&s, &sk, &sv) == 1) {
                const char *skend = pj_skip_string(sk);
                if ((size_t)(skend - sk) == (size_t)(tkend - tk) && memcmp(sk, tk, (size_t)(skend - sk)) == 0) found = 1;
            }
            if (found) continue;
            end = pj_skip(tval);
            if ((!first && !puts_(&b, ",")) || !put(&b, tk, (size_t)(end - tk))) goto oom;
            first = 0;
        }
    }
    if (!puts_(&b, "}")) goto oom;
    return b.data;
oom:
    free(b.data);
    return NULL;
}

/* The counts, as the payload of @@undo/status. */
static void status_payload(const undo_plugin *u, size_t past, size_t future, char *out, size_t size) {
    snprintf(out, size, "{\"past\":%lu,\"future\":%lu,\"bytes\":%lu,\"limit\":%llu,\"max_bytes\":%llu}",
             (unsigned long)past, (unsigned long)future, (unsigned long)u->bytes, (unsigned long long)u->limit,
             (unsigned long long)u->max_bytes);
}

static void set_present(undo_plugin *u, char *now);

/* Takes the tracked state as it is now as the present, after an action that
 * is not a step of the history (@@undo/status: its reducer's key should not
 * be tracked, or undo takes the counts back too). */
static void resync(undo_plugin *u, const ts_store_api *store) {
    char *now = NULL;
    if (read_tracked(u, store, &now) == TS_OK) set_present(u, now);
}

/* Applies @@undo/status after a change of the history, when "status" is on. */
static void announce(undo_plugin *u, const ts_store_api *store) {
    char payload[256], action[320];
    if (!u->status || !TS_API_HAS(store, dispatch_after) ||
        store->dispatch_after == NULL)
        return;
    status_payload(u, u->past.count, u->future.count, payload, sizeof payload);
    snprintf(action, sizeof action, "{\"type\":\"@@undo/status\",\"payload\":%s}", payload);
    if (store->dispatch_after(action) == TS_OK) resync(u, store);
}

/* Sets the tracked keys to `target` and passes on @@undo/apply (from the
 * action whose "type" token is `type_token`), with the counts past and
 * future that the history will have. On failure the state is put back. */
static ts_status apply_target(undo_plugin *u, const ts_store_api *store, ts_next_fn next, const char *type_token,
                              size_t type_length, const char *target, size_t past, size_t future) {
    char *original = NULL, *merged = NULL, counts[256];
    buffer action = {NULL, 0, 0};
    ts_status st = store->get_state(NULL, &original);
    if (st != TS_OK) return store->fail(st, "undo: could not read the state");
    if (u->key_count == 0) {
        merged = malloc(strlen(target) + 1);
        if (merged != NULL) strcpy(merged, target);
    } else {
        merged = merge_state(u, original, target);
    }
    snprintf(counts, sizeof counts, ",\"past\":%lu,\"future\":%lu}}", (unsigned long)past, (unsigned long)future);
    if (merged == NULL || !puts_(&action, "{\"type\":\"@@undo/apply\",\"payload\":{\"action\":") ||
        !put(&action, type_token, type_length) || !puts_(&action, ",\"state\":") || !puts_(&action, target) ||
        !puts_(&action, counts)) {
        free(merged);
        free(action.data);
        store->free(original);
        return store->fail(TS_E_NOMEM, "undo: out of memory");
    }
    st = store->replace_state(merged);
    free(merged);
    if (st != TS_OK) {
        free(action.data);
        store->free(original);
        return st; /* replace_state set the message */
    }
    st = next(action.data);
    free(action.data);
    if (st != TS_OK) (void)store->replace_state(original);
    store->free(original);
    return st;
}

/* Reads a jump's integer payload into *out; 0 (with a message) if it is not
 * one. */
static int read_index(const ts_action *action, long long *out, char *err, size_t err_size) {
    const char *p = action->payload;
    uint64_t n;
    int negative = 0, got;
    if (p == NULL) {
        snprintf(err, err_size, "undo: \"%s\" needs an integer \"payload\" (%s)", action->type,
                 strcmp(action->type, "@@undo/jump") == 0 ? "steps: negative back, positive forward"
                                                          : "an index into the list");
        return 0;
    }
    p = pj_ws(p);
    if (*p == '-') {
        negative = 1;
        p++;
    }
    got = pj_kind_of(p) == PJ_NUMBER ? pj_uint64(p, &n) : PJ_U64_NOT_INTEGER;
    if (got != PJ_U64_OK || n > 1000000000ull) {
        if (strcmp(action->type, "@@undo/jump") == 0)
            snprintf(err, err_size,
                     "undo: the \"payload\" of \"@@undo/jump\" must be an integer from -1000000000 to 1000000000, not %.200s",
                     action->payload);
        else
            snprintf(err, err_size, "undo: the \"payload\" of \"%s\" must be an integer from 0 to 1000000000, not %.200s",
                     action->type, action->payload);
        return 0;
    }
    *out = negative ? -(long long)n : (long long)n;
    return 1;
}

/* The "type" token of the action (its raw JSON string), for @@undo/apply. */
static const char *type_token(const ts_action *action, size_t *length) {
    const char *t = pj_get(action->json, "type");
    const char *end = t ? pj_skip_string(t) : NULL;
    if (end == NULL) return NULL;
    *length = (size_t)(end - t);
    return t;
}

/* Takes `now` (malloc'ed) as the present. */
static void set_present(undo_plugin *u, char *now) {
    free(u->present);
    u->present = now;
}

/* Reads the tracked state; when it is not what the plugin last left (another
 * plugin's replace_state, the inspector's time travel, a journal's restored
 * snapshot), the history no longer describes it and starts anew from it.
 * Returns the text read (malloc'ed) in *now. */
static ts_status check_present(undo_plugin *u, const ts_store_api *store, char **now) {
    ts_status st = read_tracked(u, store, now);
    if (st != TS_OK) return st;
    if (u->present == NULL || strcmp(u->present, *now) != 0) {
        char *a = malloc(strlen(*now) + 1), *b = malloc(strlen(*now) + 1);
        if (a == NULL || b == NULL) {
            free(a);
            free(b);
            free(*now);
            *now = NULL;
            return store->fail(TS_E_NOMEM, "undo: out of memory");
        }
        strcpy(a, *now);
        strcpy(b, *now);
        clear_history(u);
        free(u->latest);
        u->latest = a;
        set_present(u, b);
    }
    return TS_OK;
}

/* ---- the moves: undo, redo, jumps ---- */

enum move { MOVE_PAST, MOVE_FUTURE };

/* Jumps to past[index] (MOVE_PAST) or future[index] (MOVE_FUTURE), as
 * redux-undo's jumpToPast / jumpToFuture (undo is jumpToPast(past.length-1),
 * redo is jumpToFuture(0)). The index is in range. */
static ts_status jump(undo_plugin *u, const ts_store_api *store, ts_next_fn next, const ts_action *action, enum move m,
                      size_t index) {
    size_t tlen, new_past, new_future, i, total = u->past.count + u->future.count + 1;
    const char *tok = type_token(action, &tlen);
    const char *target;
    ts_status st;
    if (tok == NULL) return store->fail(TS_E_NOT_ACTION, "undo: the action has no \"type\" string");
    /* room first, so that nothing can fail once the state is set */
    if (!reserve(&u->past, total) || !reserve(&u->future, total))
        return store->fail(TS_E_NOMEM, "undo: out of memory");
    if (m == MOVE_PAST) {
        target = u->past.items[index];
        new_past = index;
        new_future = u->past.count - index - 1 + 1 + u->future.count;
    } else {
        target = u->future.items[index];
        new_past = u->past.count + 1 + index;
        new_future = u->future.count - index - 1;
    }
    st = apply_target(u, store, next, tok, tlen, target, new_past, new_future);
    if (st != TS_OK) return st;
    if (m == MOVE_PAST) {
        /* future = past[index+1..] + latest + future; present = past[index] */
        size_t moved = u->past.count - index - 1;
        char *present = u->past.items[index];
        memmove(u->future.items + moved + 1, u->future.items, u->future.count * sizeof(char *));
        for (i = 0; i < moved; i++) u->future.items[i] = u->past.items[index + 1 + i];
        u->future.items[moved] = u->latest;
        u->future.count += moved + 1;
        u->past.count = index;
        u->bytes += strlen(u->latest);
        u->bytes -= strlen(present);
        u->latest = present;
    } else {
        /* past = past + latest + future[..index); present = future[index] */
        char *present = u->future.items[index];
        u->past.items[u->past.count++] = u->latest;
        for (i = 0; i < index; i++) u->past.items[u->past.count++] = u->future.items[i];
        memmove(u->future.items, u->future.items + index + 1, (u->future.count - index - 1) * sizeof(char *));
        u->future.count -= index + 1;
        u->bytes += strlen(u->latest);
        u->bytes -= strlen(present);
        u->latest = present;
    }
    free(u->group);
    u->group = NULL;
    trim(u);
    {
        char *now = NULL;
        if (read_tracked(u, store, &now) == TS_OK) set_present(u, now);
    }
    announce(u, store);
    return TS_OK;
}

/* The group of a recorded action, or NULL (malloc'ed). *oom set when there
 * was no memory. */
static char *group_of(const undo_plugin *u, const ts_action *action, int *oom) {
    char *g = NULL;
    *oom = 0;
    if (u->group_mode == GROUP_TYPE || (u->group_mode == GROUP_TYPES && list_matches(&u->group_types, action->type))) {
        g = malloc(strlen(action->type) + 2);
        if (g == NULL) *oom = 1;
        else {
            g[0] = 't';
            strcpy(g + 1, action->type);
        }
    } else if (u->group_mode == GROUP_FIELD) {
        const char *v = pj_get(action->json, "group");
        if (v != NULL && pj_kind_of(v) == PJ_STRING) {
            size_t n;
            char *s = pj_str_dup(pj_ws(v), &n);
            if (s == NULL) *oom = 1;
            else {
                g = malloc(n + 2);
                if (g == NULL) *oom = 1;
                else {
                    g[0] = 'g';
                    memcpy(g + 1, s, n + 1);
                }
                free(s);
            }
        } else if (v != NULL && pj_kind_of(v) == PJ_NUMBER) {
            const char *end = pj_skip(v);
            g = malloc((size_t)(end - v) + 2);
            if (g == NULL) *oom = 1;
            else {
                g[0] = 'n';
                memcpy(g + 1, v, (size_t)(end - v));
                g[1 + (end - v)] = '\0';
            }
        }
    }
    return g;
}

/* An ordinary action: passed on; recorded when it changed the tracked state
 * and passes the filter. */
static ts_status record(undo_plugin *u, const ts_store_api *store, ts_next_fn next, const ts_action *action) {
    char *before = NULL, *after = NULL, *g;
    int recorded, oom;
    ts_status st = check_present(u, store, &before);
    if (st != TS_OK) return st;
    st = next(action->json);
    if (st != TS_OK) {
        free(before);
        return st;
    }
    st = read_tracked(u, store, &after);
    if (st != TS_OK) {
        free(before);
        /* the action was applied; the history cannot follow it: start anew */
        clear_history(u);
        set_present(u, NULL);
        return TS_OK;
    }
    if (strcmp(before, after) == 0) { /* not a change: not recorded */
        free(before);
        free(after);
        return TS_OK;
    }
    free(before);
    {
        char *copy = malloc(strlen(after) + 1);
        if (copy == NULL) {
            free(after);
            clear_history(u);
            set_present(u, NULL);
            return TS_OK;
        }
        strcpy(copy, after);
        set_present(u, copy);
    }
    recorded = (!u->has_include || list_matches(&u->include, action->type)) && !list_matches(&u->exclude, action->type);
    if (!recorded) {
        if (u->sync_filter) {
            free(u->latest);
            u->latest = after;
        } else {
            free(after);
        }
        return TS_OK;
    }
    g = group_of(u, action, &oom);
    if (g != NULL && u->group != NULL && strcmp(g, u->group) == 0) { /* the same group: one step */
        free(g);
        free(u->latest);
        u->latest = after;
        return TS_OK;
    }
    if (oom || !reserve(&u->past, u->past.count + 1)) {
        /* no room to record: the history starts anew from here */
        free(g);
        clear_history(u);
        free(u->latest);
        u->latest = after;
        announce(u, store);
        return TS_OK;
    }
    u->past.items[u->past.count++] = u->latest;
    u->bytes += strlen(u->latest);
    u->latest = after;
    clear_list(&u->future, &u->bytes);
    free(u->group);
    u->group = g;
    trim(u);
    announce(u, store);
    return TS_OK;
}

/* Sets the tracked keys to `target` (a foreign @@undo/apply, or an init
 * type's initial state) and starts a new, empty history there. */
static ts_status reset_to(undo_plugin *u, const ts_store_api *store, ts_next_fn next, const ts_action *action,
                          const char *target, int pass_as_is) {
    char *copy = malloc(strlen(target) + 1);
    ts_status st;
    if (copy == NULL) return store->fail(TS_E_NOMEM, "undo: out of memory");
    strcpy(copy, target);
    if (pass_as_is) {
        char *original = NULL, *merged;
        st = store->get_state(NULL, &original);
        if (st != TS_OK) {
            free(copy);
            return store->fail(st, "undo: could not read the state");
        }
        merged = u->key_count == 0 ? NULL : merge_state(u, original, target);
        if (u->key_count != 0 && merged == NULL) {
            store->free(original);
            free(copy);
            return store->fail(TS_E_NOMEM, "undo: out of memory");
        }
        st = store->replace_state(merged ? merged : target);
        free(merged);
        if (st == TS_OK) {
            st = next(action->json);
            if (st != TS_OK) (void)store->replace_state(original);
        }
        store->free(original);
    } else {
        size_t tlen;
        const char *tok = type_token(action, &tlen);
        st = tok == NULL ? store->fail(TS_E_NOT_ACTION, "undo: the action has no \"type\" string")
                         : apply_target(u, store, next, tok, tlen, target, 0, 0);
    }
    if (st != TS_OK) {
        free(copy);
        return st;
    }
    clear_history(u);
    free(u->latest);
    u->latest = copy;
    {
        char *now = NULL;
        if (read_tracked(u, store, &now) == TS_OK) {
            set_present(u, now);
            if (strcmp(now, u->latest) != 0 && (copy = malloc(strlen(now) + 1)) != NULL) {
                strcpy(copy, now);
                free(u->latest);
                u->latest = copy;
            }
        }
    }
    announce(u, store);
    return TS_OK;
}

/* Checks the payload of an @@undo/apply: {"state": OBJECT, ...} with only
 * tracked keys in the state. Returns the state or NULL with a message. */
static const char *apply_state(const undo_plugin *u, const ts_action *action, char *err, size_t err_size) {
    const char *state = action->payload ? pj_get(action->payload, "state") : NULL;
    pj_iter it;
    const char *k, *v;
    if (state == NULL || pj_kind_of(state) != PJ_OBJECT) {
        snprintf(err, err_size,
                 "undo: \"@@undo/apply\" needs a payload {\"state\": {...}} (the tracked keys' values to set), "
                 "not %.200s",
                 action->payload ? action->payload : "no payload");
        return NULL;
    }
    if (u->key_count == 0) return state;
    pj_begin(&it, state, '{');
    while (pj_next_member(&it, &k, &v) == 1) {
        if (!is_tracked(u, k)) {
            char name[200];
            pj_str_show(k, name, sizeof name);
            snprintf(err, err_size, "undo: \"@@undo/apply\" sets \"%s\", which is not a tracked key (see \"keys\")",
                     name);
            return NULL;
        }
    }
    return state;
}

/* Whether `action` is the @@undo/clear an undo.so dispatches when it loads
 * (UNDO_LOADED_ACTION): its payload has "loaded": true. */
static int loaded_clear(const ts_action *action) {
    const char *v = action->payload ? pj_get(action->payload, "loaded") : NULL;
    return v != NULL && pj_kind_of(v) == PJ_TRUE;
}

static ts_status handle(undo_plugin *u, const ts_store_api *store, ts_next_fn next, const ts_action *action) {
    const char *type = action->type;
    char err[512];
    if (strcmp(type, "@@undo") == 0 || strcmp(type, "@@redo") == 0 || strncmp(type, "@@undo/jump", 11) == 0) {
        /* the moves need a history that describes the state */
        char *now = NULL;
        ts_status st = check_present(u, store, &now);
        if (st != TS_OK) return st;
        free(now);
    }
    if (strcmp(type, "@@undo") == 0) {
        if (u->past.count == 0) return TS_OK; /* nothing to undo: nothing happens */
        return jump(u, store, next, action, MOVE_PAST, u->past.count - 1);
    }
    if (strcmp(type, "@@redo") == 0) {
        if (u->future.count == 0) return TS_OK;
        return jump(u, store, next, action, MOVE_FUTURE, 0);
    }
    if (strcmp(type, "@@undo/jump") == 0 || strcmp(type, "@@undo/jump_to_past") == 0 ||
        strcmp(type, "@@undo/jump_to_future") == 0) {
        long long n;
        if (!read_index(action, &n, err, sizeof err)) return store->fail(TS_E_REJECTED, err);
        if (strcmp(type, "@@undo/jump") == 0) {
            if (n == 0) return TS_OK;
            if (n > 0 && (unsigned long long)n <= u->future.count)
                return jump(u, store, next, action, MOVE_FUTURE, (size_t)(n - 1));
            if (n < 0 && (unsigned long long)(-n) <= u->past.count)
                return jump(u, store, next, action, MOVE_PAST, u->past.count - (size_t)(-n));
            snprintf(err, sizeof err,
                     "undo: cannot jump %lld step%s %s: the history has %lu past and %lu future state%s", n > 0 ? n : -n,
                     (n == 1 || n == -1) ? "" : "s", n > 0 ? "forward" : "back", (unsigned long)u->past.count,
                     (unsigned long)u->future.count, u->future.count == 1 ? "" : "s");
            return store->fail(TS_E_REJECTED, err);
        }
        {
            int to_past = strcmp(type, "@@undo/jump_to_past") == 0;
            size_t count = to_past ? u->past.count : u->future.count;
            if (n < 0 || (unsigned long long)n >= count) {
                snprintf(err, sizeof err, "undo: \"%s\" index %lld is out of range: the %s holds %lu state%s%s", type, n,
                         to_past ? "past" : "future", (unsigned long)count, count == 1 ? "" : "s",
                         count == 0 ? "" : " (indexes from 0)");
                return store->fail(TS_E_REJECTED, err);
            }
            return jump(u, store, next, action, to_past ? MOVE_PAST : MOVE_FUTURE, (size_t)n);
        }
    }
    if (strcmp(type, "@@undo/apply") == 0) {
        const char *state = apply_state(u, action, err, sizeof err);
        char *text;
        ts_status st;
        if (state == NULL) return store->fail(TS_E_REJECTED, err);
        text = malloc((size_t)(pj_skip(state) - state) + 1);
        if (text == NULL) return store->fail(TS_E_NOMEM, "undo: out of memory");
        pj_minify(state, pj_skip(state), text);
        st = reset_to(u, store, next, action, text, 1);
        free(text);
        return st;
    }
    if (strcmp(type, "@@undo/status") == 0) {
        char payload[256], json[320];
        if (u->depth == 1) {
            /* Not nested: the counts of a history that describes the state.
             * One changed behind its back is emptied first (resync below
             * would take the new state as the present and keep the old
             * history). */
            char *now = NULL;
            ts_status st = check_present(u, store, &now);
            if (st != TS_OK) return st;
            free(now);
        }
        status_payload(u, u->past.count, u->future.count, payload, sizeof payload);
        snprintf(json, sizeof json, "{\"type\":\"@@undo/status\",\"payload\":%s}", payload);
        {
            ts_status st = next(json);
            if (st == TS_OK && u->depth <= 1) resync(u, store);
            return st;
        }
    }
    /* @@replicate/checkpoint: replicate.so (ordered mode) applies it after
     * each entry numbered a multiple of "snapshot_every", and after a
     * snapshot (of such an entry) it loads while running: every replica
     * passes it at the same place in the log, and the history starts anew
     * there on every replica alike. */
    if (strcmp(type, "@@undo/clear") == 0 || strcmp(type, "@@replicate/checkpoint") == 0 ||
        list_matches(&u->clear_types, type)) {
        char *now = NULL;
        ts_status st = next(action->json);
        if (st != TS_OK) return st;
        if (read_tracked(u, store, &now) != TS_OK) return TS_OK; /* keeps the old latest */
        clear_history(u);
        if (loaded_clear(action)) {
            /* Another replica's undo.so loaded: the init types go back to
             * the state here, on every replica alike. */
            char *copy = strdup_(now);
            if (copy != NULL) {
                free(u->initial);
                u->initial = copy;
            }
        }
        free(u->latest);
        u->latest = now;
        set_present(u, strdup_(now));
        announce(u, store);
        return TS_OK;
    }
    if (strncmp(type, "@@undo/", 7) == 0) {
        snprintf(err, sizeof err,
                 "undo: unknown action \"%.200s\" (known: \"@@undo\", \"@@redo\", \"@@undo/jump\", "
                 "\"@@undo/jump_to_past\", \"@@undo/jump_to_future\", \"@@undo/clear\", \"@@undo/status\", "
                 "\"@@undo/apply\")",
                 type);
        return store->fail(TS_E_REJECTED, err);
    }
    if (list_matches(&u->init_types, type)) return reset_to(u, store, next, action, u->initial, 0);
    return record(u, store, next, action);
}

/* An action dispatched while another is under way here (by a listener, or
 * middleware after this plugin) is part of that action's step: passed on,
 * not recorded. Moving through the history then is refused: the outer
 * action's step is not complete. */
static ts_status undo_run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
    undo_plugin *u = self;
    ts_status st;
    if (u->depth > 0) {
        if (strcmp(action->type, "@@undo/status") == 0) {
            /* Counted as nested (depth 2 or more): the outer action's step
             * is under way, its state is not a change behind our back. */
            u->depth++;
            st = handle(u, store, next, action);
            u->depth--;
            return st;
        }
        if (strncmp(action->type, "@@undo", 6) == 0 || strcmp(action->type, "@@redo") == 0 ||
            list_matches(&u->clear_types, action->type) || list_matches(&u->init_types, action->type)) {
            char err[512];
            snprintf(err, sizeof err,
                     "undo: \"%.200s\" was dispatched while another action is being dispatched (from a listener or "
                     "middleware): dispatch it once that dispatch has returned",
                     action->type);
            return store->fail(TS_E_REJECTED, err);
        }
        return next(action->json);
    }
    /* turnstate.h promises the same `next` while the chain is unchanged, so
     * a new one means middleware was added after this plugin (or removed):
     * a journal loaded after it has replayed its records through it while
     * loading. The history starts anew from the state as it is. */
    if (u->last_next != NULL && next != u->last_next) {
        char *now = NULL;
        if (read_tracked(u, store, &now) == TS_OK) {
            char *copy = strdup_(now);
            if (copy != NULL) {
                clear_history(u);
                free(u->latest);
                u->latest = copy;
                set_present(u, now);
            } else {
                free(now);
            }
        }
    }
    u->last_next = next;
    u->depth++;
    st = handle(u, store, next, action);
    u->depth--;
    return st;
}

/* ---- config ---- */

/* Reads an array of action type patterns. 0 with a message on failure. */
static int read_patterns(const char *field, const char *v, ts_pattern_list *out, char *err, size_t err_size) {
    pj_iter it;
    const char *e;
    size_t count = 0, i = 0;
    int r;
    if (!pj_begin(&it, v, '[')) {
        snprintf(err, err_size,
                 "undo: config field \"%s\" must be an array of action types (a type, or a prefix ending in \"*\"), "
                 "not %s",
                 field, pj_kind_name(pj_kind_of(v)));
        return 0;
    }
    while ((r = pj_next_element(&it, &e)) == 1) {
        if (pj_kind_of(e) != PJ_STRING) {
            snprintf(err, err_size, "undo: config field \"%s\": element %lu must be a string (an action type), not %s",
                     field, (unsigned long)count, pj_kind_name(pj_kind_of(e)));
            return 0;
        }
        count++;
    }
    if (r < 0) {
        snprintf(err, err_size, "undo: config field \"%s\" is malformed JSON", field);
        return 0;
    }
    out->items = calloc(count ? count : 1, sizeof *out->items);
    if (out->items == NULL) {
        snprintf(err, err_size, "undo: out of memory");
        return 0;
    }
    pj_begin(&it, v, '[');
    while (pj_next_element(&it, &e) == 1) {
        int made = ts_pattern_make(pj_ws(e), &out->items[i]);
        if (made == 0) {
            snprintf(err, err_size, "undo: out of memory");
            return 0;
        }
        out->count = ++i;
        if (made < 0 || (out->items[i - 1].length == 0 && !out->items[i - 1].prefix)) {
            snprintf(err, err_size, "undo: config field \"%s\": element %lu must be a non-empty action type without NUL",
                     field, (unsigned long)(i - 1));
            return 0;
        }
    }
    return 1;
}

/* "/name" with "~" as "~0" and "/" as "~1" (RFC 6901). */
static char *pointer_of(const char *name) {
    size_t n = 1, i;
    char *p, *w;
    for (i = 0; name[i]; i++) n += (name[i] == '~' || name[i] == '/') ? 2 : 1;
    p = malloc(n + 1);
    if (p == NULL) return NULL;
    w = p;
    *w++ = '/';
    for (i = 0; name[i]; i++) {
        if (name[i] == '~') { *w++ = '~'; *w++ = '0'; }
        else if (name[i] == '/') { *w++ = '~'; *w++ = '1'; }
        else *w++ = name[i];
    }
    *w = '\0';
    return p;
}

static int read_keys(undo_plugin *u, const char *v, char *err, size_t err_size) {
    pj_iter it;
    const char *e;
    size_t count = 0, i;
    int r;
    if (!pj_begin(&it, v, '[')) {
        snprintf(err, err_size, "undo: config field \"keys\" must be an array of top-level state keys, not %s",
                 pj_kind_name(pj_kind_of(v)));
        return 0;
    }
    while ((r = pj_next_element(&it, &e)) == 1) {
        if (pj_kind_of(e) != PJ_STRING) {
            snprintf(err, err_size, "undo: config field \"keys\": element %lu must be a string (a top-level key), not %s",
                     (unsigned long)count, pj_kind_name(pj_kind_of(e)));
            return 0;
        }
        count++;
    }
    if (r < 0 || count == 0 || count > UNDO_MAX_KEYS) {
        snprintf(err, err_size,
                 "undo: config field \"keys\" must hold 1 to %u keys (leave it out to track the whole state)%s",
                 UNDO_MAX_KEYS, r < 0 ? " (malformed JSON)" : "");
        return 0;
    }
    u->keys = calloc(count, sizeof *u->keys);
    if (u->keys == NULL) {
        snprintf(err, err_size, "undo: out of memory");
        return 0;
    }
    pj_begin(&it, v, '[');
    while (pj_next_element(&it, &e) == 1) {
        tracked_key *k = &u->keys[u->key_count];
        size_t length, tlen = (size_t)(pj_skip_string(e) - e);
        k->name = pj_str_dup(e, &length);
        k->token = malloc(tlen + 1);
        if (k->name == NULL || k->token == NULL) {
            u->key_count++;
            snprintf(err, err_size, "undo: out of memory");
            return 0;
        }
        memcpy(k->token, e, tlen);
        k->token[tlen] = '\0';
        u->key_count++;
        if (length == 0 || strlen(k->name) != length) {
            snprintf(err, err_size, "undo: config field \"keys\": element %lu must be a non-empty key without NUL",
                     (unsigned long)(u->key_count - 1));
            return 0;
        }
        for (i = 0; i + 1 < u->key_count; i++) {
            if (strcmp(u->keys[i].name, k->name) == 0) {
                snprintf(err, err_size, "undo: config field \"keys\" names \"%.200s\" twice", k->name);
                return 0;
            }
        }
        k->pointer = pointer_of(k->name);
        if (k->pointer == NULL) {
            snprintf(err, err_size, "undo: out of memory");
            return 0;
        }
    }
    return 1;
}

static const char known_fields[] = "\"keys\", \"limit\", \"max_bytes\", \"include\", \"exclude\", \"group_by\", "
                                   "\"clear_types\", \"init_types\", \"sync_filter\", \"status\"";

static int parse_config(undo_plugin *u, const char *config, char *err, size_t err_size) {
    pj_iter it;
    const char *k, *v;
    int r;
    if (!pj_begin(&it, config, '{')) {
        snprintf(err, err_size, "undo: the config must be a JSON object, not %s", pj_kind_name(pj_kind_of(config)));
        return 0;
    }
    static const char *const fields[] = {"keys",    "limit",      "max_bytes",  "include",     "exclude",
                                         "group_by", "clear_types", "init_types", "sync_filter", "status"};
    unsigned seen = 0, f;
    while ((r = pj_next_member(&it, &k, &v)) == 1) {
        enum pj_kind kind = pj_kind_of(v);
        uint64_t n = 0;
        int got = kind == PJ_NUMBER ? pj_uint64(v, &n) : PJ_U64_NOT_INTEGER;
        /* The host refuses a config with a key twice; a host that does not
         * (create() called directly) gets the same answer here. */
        for (f = 0; f < sizeof fields / sizeof fields[0]; f++) {
            if (!pj_str_eq(k, fields[f])) continue;
            if (seen & (1u << f)) {
                snprintf(err, err_size, "undo: config field \"%s\" appears twice", fields[f]);
                return 0;
            }
            seen |= 1u << f;
        }
        if (pj_str_eq(k, "keys")) {
            if (!read_keys(u, v, err, err_size)) return 0;
        } else if (pj_str_eq(k, "limit")) {
            if (got != PJ_U64_OK || n < 1 || n > UNDO_MAX_LIMIT) {
                snprintf(err, err_size,
                         "undo: config field \"limit\" must be an integer from 1 to %u (past states kept), not %s",
                         UNDO_MAX_LIMIT, got == PJ_U64_OK ? "that number" : pj_uint64_why(kind, got));
                return 0;
            }
            u->limit = n;
        } else if (pj_str_eq(k, "max_bytes")) {
            if (got != PJ_U64_OK || n < 1 || n > UNDO_MAX_MAX_BYTES) {
                snprintf(err, err_size,
                         "undo: config field \"max_bytes\" must be an integer from 1 to 1099511627776 (bytes of state "
                         "text kept in the past and future), not %s",
                         got == PJ_U64_OK ? "that number" : pj_uint64_why(kind, got));
                return 0;
            }
            u->max_bytes = n;
        } else if (pj_str_eq(k, "include")) {
            if (!read_patterns("include", v, &u->include, err, err_size)) return 0;
            u->has_include = 1;
        } else if (pj_str_eq(k, "exclude")) {
            if (!read_patterns("exclude", v, &u->exclude, err, err_size)) return 0;
        } else if (pj_str_eq(k, "clear_types")) {
            if (!read_patterns("clear_types", v, &u->clear_types, err, err_size)) return 0;
        } else if (pj_str_eq(k, "init_types")) {
            if (!read_patterns("init_types", v, &u->init_types, err, err_size)) return 0;
        } else if (pj_str_eq(k, "group_by")) {
            if (kind == PJ_STRING && pj_str_eq(v, "type")) u->group_mode = GROUP_TYPE;
            else if (kind == PJ_STRING && pj_str_eq(v, "field")) u->group_mode = GROUP_FIELD;
            else if (kind == PJ_ARRAY) {
                if (!read_patterns("group_by", v, &u->group_types, err, err_size)) return 0;
                u->group_mode = GROUP_TYPES;
            } else {
                snprintf(err, err_size,
                         "undo: config field \"group_by\" must be \"type\" (consecutive actions of one type are one "
                         "step), \"field\" (consecutive actions with the same \"group\" member are one step) or an "
                         "array of action types (consecutive actions of one of these types are one step), not %s",
                         kind == PJ_STRING ? "that string" : pj_kind_name(kind));
                return 0;
            }
        } else if (pj_str_eq(k, "sync_filter") || pj_str_eq(k, "status")) {
            int is_sync = pj_str_eq(k, "sync_filter");
            if (kind != PJ_TRUE && kind != PJ_FALSE) {
                snprintf(err, err_size, "undo: config field \"%s\" must be true or false, not %s",
                         is_sync ? "sync_filter" : "status", pj_kind_name(kind));
                return 0;
            }
            if (is_sync) u->sync_filter = kind == PJ_TRUE;
            else u->status = kind == PJ_TRUE;
        } else {
            char name[200];
            pj_str_show(k, name, sizeof name);
            snprintf(err, err_size, "undo: unknown config field \"%s\" (known: %s)", name, known_fields);
            return 0;
        }
    }
    if (r < 0) {
        snprintf(err, err_size, "undo: the config is malformed JSON");
        return 0;
    }
    return 1;
}

static void undo_destroy(void *self) {
    undo_plugin *u = self;
    size_t i;
    if (u == NULL) return;
    for (i = 0; i < u->key_count; i++) {
        free(u->keys[i].name);
        free(u->keys[i].token);
        free(u->keys[i].pointer);
    }
    free(u->keys);
    ts_pattern_list_free(&u->include);
    ts_pattern_list_free(&u->exclude);
    ts_pattern_list_free(&u->group_types);
    ts_pattern_list_free(&u->clear_types);
    ts_pattern_list_free(&u->init_types);
    clear_history(u);
    free(u->past.items);
    free(u->future.items);
    free(u->latest);
    free(u->initial);
    free(u->present);
    free(u);
}


static ts_status undo_create(const char *config_json, const ts_store_api *store, void **self, char **error_message) {
    char err[768];
    undo_plugin *u;
    ts_status st;
    if (!TS_API_HAS(store, status_name) ||
        store->replace_state == NULL) {
        snprintf(err, sizeof err, "undo: the host's ts_store_api (struct_size %lu) has no replace_state",
                 (unsigned long)store->struct_size);
        *error_message = strdup_(err);
        return TS_E_ABI;
    }
    u = calloc(1, sizeof *u);
    if (u == NULL) return TS_E_NOMEM;
    u->limit = UNDO_DEFAULT_LIMIT;
    u->max_bytes = UNDO_DEFAULT_MAX_BYTES;
    if (!parse_config(u, config_json ? config_json : "{}", err, sizeof err)) {
        undo_destroy(u);
        *error_message = strdup_(err);
        return TS_E_PLUGIN;
    }
    /* The load is an action (the plugin is not in the chain yet, so it
     * reaches the middleware before it and the reducers): after replicate.so
     * it is an entry of the log, and every replica's undo.so empties its
     * history there, so that a replica that joins a running log (whose
     * history starts here) has the same history as the others from then on.
     * Refused (a guard; replicate.so in optimistic mode; a log that does
     * not answer), the plugin does not load. */
    st = store->dispatch(UNDO_LOADED_ACTION);
    if (st != TS_OK) {
        const char *why = TS_API_HAS(store, last_error) &&
                                  store->last_error != NULL
                              ? store->last_error()
                              : NULL;
        snprintf(err, sizeof err,
                 "undo: loading dispatches %s (so that every replica behind replicate.so empties its history at "
                 "the same entry) and the chain before the plugin refused it: %s: %.500s",
                 UNDO_LOADED_ACTION, store->status_name(st), why && *why ? why : "no reason given");
        undo_destroy(u);
        *error_message = strdup_(err);
        return st;
    }
    /* Read after it: with replicate.so, the dispatch applied the entries
     * before it too. */
    st = read_tracked(u, store, &u->initial);
    if (st != TS_OK) {
        undo_destroy(u);
        *error_message = strdup_("undo: could not read the state");
        return st;
    }
    u->latest = strdup_(u->initial);
    u->present = strdup_(u->initial);
    if (u->latest == NULL || u->present == NULL) {
        undo_destroy(u);
        return TS_E_NOMEM;
    }
    *self = u;
    return TS_OK;
}

static const ts_plugin descriptor = {
    TS_PLUGIN_ABI_VERSION, sizeof(ts_plugin), "undo", UNDO_VERSION, undo_create, undo_run, undo_destroy,
};

const ts_plugin *ts_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 1u ? &descriptor : NULL;
}
