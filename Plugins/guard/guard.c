/*
 * guard - a Turnstate middleware plugin that refuses actions breaking
 * configured rules before they reach anything else (load it first).
 *
 * Config (every field optional; README.md has an example):
 *   "allow": [patterns], "deny": [patterns],
 *   "require": {pattern: [payload field names]},
 *   "max_bytes": integer 0..18446744073709551615
 *
 * A pattern ending in "*" matches every type that starts with what comes
 * before it ("*" alone matches every type); any other pattern matches one
 * type exactly. Checks, in this order, the first failing one refusing the
 * action with TS_E_REJECTED: deny, allow, max_bytes, require.
 */
#include "turnstate_plugin.h"

#include "../common/patterns.h"
#include "../common/pjson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD_VERSION "1.0.0"


typedef struct requirement {
    ts_pattern type;
    char **fields; /* decoded field names */
    size_t *field_lengths;
    size_t field_count;
} requirement;

typedef struct guard {
    int has_allow;
    ts_pattern_list allow;
    ts_pattern_list deny;
    int has_require;
    requirement *require;
    size_t require_count;
    int has_max_bytes;
    uint64_t max_bytes;
} guard;

static char *dup_message(const char *text) {
    size_t n = strlen(text) + 1;
    char *m = malloc(n);
    if (m) memcpy(m, text, n);
    return m;
}

static void guard_free(guard *g) {
    size_t i, j;
    if (g == NULL) return;
    ts_pattern_list_free(&g->allow);
    ts_pattern_list_free(&g->deny);
    for (i = 0; i < g->require_count; i++) {
        free(g->require[i].type.text);
        for (j = 0; j < g->require[i].field_count; j++) free(g->require[i].fields[j]);
        free(g->require[i].fields);
        free(g->require[i].field_lengths);
    }
    free(g->require);
    free(g);
}

/* Counts the elements of the array at p if every one is a string; -1 if one
 * is not (its index in *bad), -2 on malformed text. */
static long count_strings(const char *p, size_t *bad) {
    pj_iter it;
    const char *v;
    long n = 0;
    int r;
    if (!pj_begin(&it, p, '[')) return -2;
    while ((r = pj_next_element(&it, &v)) == 1) {
        if (pj_kind_of(v) != PJ_STRING) {
            *bad = (size_t)n;
            return -1;
        }
        n++;
    }
    return r == 0 ? n : -2;
}

/* Reads the array of strings at p ("allow", "deny") into list. On failure
 * writes a message into err and returns 0. */
static int read_pattern_list(const char *field, const char *p, ts_pattern_list *list, char *err, size_t err_size) {
    pj_iter it;
    const char *v;
    size_t bad = 0, i = 0;
    long n;
    if (pj_kind_of(p) != PJ_ARRAY) {
        snprintf(err, err_size, "guard: config field \"%s\" must be an array of strings (type patterns), not %s",
                 field, pj_kind_name(pj_kind_of(p)));
        return 0;
    }
    n = count_strings(p, &bad);
    if (n == -1) {
        snprintf(err, err_size, "guard: config field \"%s\": element %zu must be a string (a type pattern)", field, bad);
        return 0;
    }
    if (n < 0) {
        snprintf(err, err_size, "guard: config field \"%s\" is malformed JSON", field);
        return 0;
    }
    list->items = calloc((size_t)n + 1, sizeof *list->items);
    if (list->items == NULL) goto nomem;
    pj_begin(&it, p, '[');
    while (pj_next_element(&it, &v) == 1) {
        int made = ts_pattern_make(pj_ws(v), &list->items[i]);
        if (made == 0) goto nomem;
        if (made < 0) {
            list->count = i + 1;
            snprintf(err, err_size,
                     "guard: config field \"%s\": element %zu contains \\u0000 (NUL), which no action type can contain",
                     field, i);
            return 0;
        }
        if (list->items[i].length == 0 && !list->items[i].prefix) {
            list->count = i + 1;
            snprintf(err, err_size, "guard: config field \"%s\": element %zu is an empty pattern", field, i);
            return 0;
        }
        list->count = ++i;
    }
    return 1;
nomem:
    snprintf(err, err_size, "guard: out of memory reading config field \"%s\"", field);
    return 0;
}

static int read_require(const char *p, guard *g, char *err, size_t err_size) {
    pj_iter it, fields;
    const char *k, *v, *f;
    long count = 0;
    int r;
    if (pj_kind_of(p) != PJ_OBJECT) {
        snprintf(err, err_size,
                 "guard: config field \"require\" must be an object mapping type patterns to arrays of field names, not %s",
                 pj_kind_name(pj_kind_of(p)));
        return 0;
    }
    pj_begin(&it, p, '{');
    while ((r = pj_next_member(&it, &k, &v)) == 1) {
        size_t bad = 0;
        long n = count_strings(v, &bad);
        char key[200];
        pj_str_show(k, key, sizeof key);
        if (pj_kind_of(v) != PJ_ARRAY) {
            snprintf(err, err_size, "guard: config field \"require\" -> \"%s\" must be an array of field names, not %s",
                     key, pj_kind_name(pj_kind_of(v)));
            return 0;
        }
        if (n < 0) {
            snprintf(err, err_size, "guard: config field \"require\" -> \"%s\": element %zu must be a string (a payload field name)",
                     key, bad);
            return 0;
        }
        count++;
    }
    if (r < 0) {
        snprintf(err, err_size, "guard: config field \"require\" is malformed JSON");
        return 0;
    }
    g->require = calloc((size_t)count + 1, sizeof *g->require);
    if (g->require == NULL) goto nomem;
    pj_begin(&it, p, '{');
    while (pj_next_member(&it, &k, &v) == 1) {
        requirement *req = &g->require[g->require_count];
        size_t n = 0, bad = 0;
        long fc = count_strings(v, &bad);
        int made;
        g->require_count++;
        made = ts_pattern_make(k, &req->type);
        if (made == 0) goto nomem;
        if (made < 0) {
            char shown[200];
            pj_str_show(k, shown, sizeof shown);
            snprintf(err, err_size,
                     "guard: config field \"require\" has a type pattern \"%s\" that contains \\u0000 (NUL), "
                     "which no action type can contain",
                     shown);
            return 0;
        }
        if (req->type.length == 0 && !req->type.prefix) {
            snprintf(err, err_size, "guard: config field \"require\" has an empty type pattern \"\"");
            return 0;
        }
        req->fields = calloc((size_t)fc + 1, sizeof *req->fields);
        req->field_lengths = calloc((size_t)fc + 1, sizeof *req->field_lengths);
        if (req->fields == NULL || req->field_lengths == NULL) goto nomem;
        pj_begin(&fields, v, '[');
        while (pj_next_element(&fields, &f) == 1) {
            req->fields[n] = pj_str_dup(pj_ws(f), &req->field_lengths[n]);
            if (req->fields[n] == NULL) goto nomem;
            req->field_count = ++n;
        }
    }
    return 1;
nomem:
    snprintf(err, err_size, "guard: out of memory reading config field \"require\"");
    return 0;
}

static ts_status guard_create(const char *config_json, const ts_store_api *store, void **self, char **error_message) {
    char err[512];
    pj_iter it;
    const char *k, *v;
    int r, seen = 0;
    guard *g;
    (void)store;
    err[0] = '\0';
    if (self == NULL) return TS_E_ARGUMENT;
    if (config_json == NULL) config_json = "{}";
    if (pj_kind_of(config_json) != PJ_OBJECT) {
        snprintf(err, sizeof err, "guard: the config must be a JSON object, not %s", pj_kind_name(pj_kind_of(config_json)));
        goto fail_early;
    }
    g = calloc(1, sizeof *g);
    if (g == NULL) {
        snprintf(err, sizeof err, "guard: out of memory");
        goto fail_early;
    }
    pj_begin(&it, config_json, '{');
    while ((r = pj_next_member(&it, &k, &v)) == 1) {
        /* The host refuses a config with a key twice; a host that does not
         * (create() called directly) gets the same answer here, not a leak
         * or a last-one-wins policy. */
        enum { ALLOW = 1, DENY = 2, REQUIRE = 4, MAX_BYTES = 8 };
        int field = pj_str_eq(k, "allow") ? ALLOW : pj_str_eq(k, "deny") ? DENY : pj_str_eq(k, "require") ? REQUIRE
                  : pj_str_eq(k, "max_bytes") ? MAX_BYTES : 0;
        if (field & seen) {
            char name[200];
            pj_str_show(k, name, sizeof name);
            snprintf(err, sizeof err, "guard: config field \"%s\" appears twice", name);
            goto fail;
        }
        seen |= field;
        if (field == ALLOW) {
            g->has_allow = 1;
            if (!read_pattern_list("allow", v, &g->allow, err, sizeof err)) goto fail;
        } else if (field == DENY) {
            if (!read_pattern_list("deny", v, &g->deny, err, sizeof err)) goto fail;
        } else if (field == REQUIRE) {
            g->has_require = 1;
            if (!read_require(v, g, err, sizeof err)) goto fail;
        } else if (field == MAX_BYTES) {
            uint64_t n = 0;
            int got = pj_kind_of(v) == PJ_NUMBER ? pj_uint64(v, &n) : PJ_U64_NOT_INTEGER;
            if (got != PJ_U64_OK) {
                snprintf(err, sizeof err,
                         "guard: config field \"max_bytes\" must be an integer from 0 to 18446744073709551615 "
                         "(bytes of action JSON), not %s",
                         pj_uint64_why(pj_kind_of(v), got));
                goto fail;
            }
            g->has_max_bytes = 1;
            g->max_bytes = n;
        } else {
            char name[200];
            pj_str_show(k, name, sizeof name);
            snprintf(err, sizeof err,
                     "guard: unknown config field \"%s\" (known: \"allow\", \"deny\", \"require\", \"max_bytes\")", name);
            goto fail;
        }
    }
    if (r < 0) {
        snprintf(err, sizeof err, "guard: the config is malformed JSON");
        goto fail;
    }
    *self = g;
    return TS_OK;
fail:
    guard_free(g);
fail_early:
    if (error_message) *error_message = dup_message(err);
    return TS_E_PLUGIN;
}

/* Writes the patterns of list as "\"a\", \"b*\"" into buf, cut to fit. */
static void describe_list(const ts_pattern_list *list, char *buf, size_t size) {
    size_t i, used = 0;
    buf[0] = '\0';
    for (i = 0; i < list->count && used + 1 < size; i++) {
        int n = snprintf(buf + used, size - used, "%s\"%.60s%s\"", i ? ", " : "", list->items[i].text,
                         list->items[i].prefix ? "*" : "");
        if (n < 0) break;
        if ((size_t)n >= size - used) {
            /* cut: end with an ellipsis */
            if (size >= 4) memcpy(buf + size - 4, "...", 4);
            return;
        }
        used += (size_t)n;
    }
}

/* True if the payload object has a member named field[0..length). */
static int payload_has(const char *payload, const char *field, size_t length) {
    pj_iter it;
    const char *k, *v;
    if (payload == NULL || !pj_begin(&it, payload, '{')) return 0;
    while (pj_next_member(&it, &k, &v) == 1) {
        if (pj_str_eqn(k, field, length)) return 1;
    }
    return 0;
}

static ts_status guard_run(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *self) {
    const guard *g = self;
    const char *type = action->type;
    size_t type_length = strlen(type);
    const ts_pattern *hit;
    char msg[900];
    size_t i, j;

    hit = ts_pattern_first(&g->deny, type, type_length);
    if (hit) {
        snprintf(msg, sizeof msg, "guard: action type \"%.200s\" is denied by the deny rule \"%.200s%s\"", type,
                 hit->text, hit->prefix ? "*" : "");
        return store->fail(TS_E_REJECTED, msg);
    }
    if (g->has_allow && ts_pattern_first(&g->allow, type, type_length) == NULL) {
        char list[400];
        describe_list(&g->allow, list, sizeof list);
        snprintf(msg, sizeof msg, "guard: action type \"%.200s\" is not allowed: it matches no allow rule (allow: [%s])",
                 type, list);
        return store->fail(TS_E_REJECTED, msg);
    }
    if (g->has_max_bytes) {
        size_t bytes = strlen(action->json);
        if ((uint64_t)bytes > g->max_bytes) {
            snprintf(msg, sizeof msg, "guard: action \"%.200s\" is %zu bytes of JSON, over the max_bytes rule (%llu)", type,
                     bytes, (unsigned long long)g->max_bytes);
            return store->fail(TS_E_REJECTED, msg);
        }
    }
    for (i = 0; i < g->require_count; i++) {
        const requirement *req = &g->require[i];
        if (!ts_pattern_matches(&req->type, type, type_length)) continue;
        for (j = 0; j < req->field_count; j++) {
            if (!payload_has(action->payload, req->fields[j], req->field_lengths[j])) {
                snprintf(msg, sizeof msg,
                         "guard: action \"%.200s\" lacks the payload field \"%.100s\" required by the require rule \"%.200s%s\"%s",
                         type, req->fields[j], req->type.text, req->type.prefix ? "*" : "",
                         action->payload == NULL                     ? " (the action has no payload)"
                         : pj_kind_of(action->payload) != PJ_OBJECT ? " (the payload is not an object)"
                                                                     : "");
                return store->fail(TS_E_REJECTED, msg);
            }
        }
    }
    return next(action->json);
}

static void guard_destroy(void *self) { guard_free(self); }

static const ts_plugin descriptor = {
    TS_PLUGIN_ABI_VERSION, sizeof(ts_plugin), "guard", GUARD_VERSION, guard_create, guard_run, guard_destroy,
};

const ts_plugin *ts_plugin_entry(uint32_t host_abi_version) {
    return host_abi_version >= 1u ? &descriptor : NULL;
}
