/* todo_versions.h - one small program at three state versions, for the tests
 * of migrations through the plugins (Tests/plugins/test_migrate.c: the
 * journal; Tests/replicate/migrate.c: replicate's snapshot).
 * Needs turnstate.h, stdio.h, stdlib.h and string.h. */
#ifndef TS_TEST_TODO_VERSIONS_H
#define TS_TEST_TODO_VERSIONS_H

#define CHECK_SETUP(what, call) do { if ((call) != TS_OK) { fprintf(stderr, "FAIL setup: %s: %s\n", what, ts_last_error()); exit(2); } } while (0)

/* ---- The program at three versions -----------------------------------------
 * 1: "todos" is ["a","b"]; 2: [{"title":"a"},...]; 3: {"items":[{"title":"a","done":false},...]}.
 * Every version has the action {"type":"add","payload":"TITLE"}. */

static const char *title_of(const ts_action *action, size_t *length) {
    const char *title = NULL;
    if (strcmp(action->type, "add") != 0 || ts_json_get_string(action->payload, "", &title, length) != TS_OK) return NULL;
    return title;
}

static char *todos_v1(const char *slice, const ts_action *action, void *ctx) {
    size_t length, n;
    const char *title;
    char *out;
    (void)ctx;
    if (slice == NULL) return ts_strdup("[]");
    if ((title = title_of(action, &length)) == NULL) return NULL;
    n = strlen(slice);
    out = ts_alloc(n + length + 4);
    snprintf(out, n + length + 4, "%.*s%s\"%.*s\"]", (int)(n - 1), slice, n > 2 ? "," : "", (int)length, title);
    return out;
}

static char *todos_v3(const char *slice, const ts_action *action, void *ctx) {
    size_t length, n;
    const char *title;
    char *out;
    (void)ctx;
    if (slice == NULL) return ts_strdup("{\"items\":[]}");
    if ((title = title_of(action, &length)) == NULL) return NULL;
    n = strlen(slice); /* ...]} */
    out = ts_alloc(n + length + 40);
    snprintf(out, n + length + 40, "%.*s%s{\"title\":\"%.*s\",\"done\":false}]}", (int)(n - 2), slice,
             slice[n - 3] == '[' ? "" : ",", (int)length, title);
    return out;
}

/* Text transformations of the minified state, enough for these inputs. */
static char *v1_to_v2(const char *state, void *ctx, char **error) {
    char *out = ts_alloc(strlen(state) * 4 + 64), *w = out;
    const char *p = state;
    int in_array = 0;
    (void)ctx, (void)error;
    while (*p) {
        if (strncmp(p, "\"todos\":[", 9) == 0) {
            memcpy(w, p, 9), w += 9, p += 9, in_array = 1;
        } else if (in_array && *p == '"') {
            const char *end = strchr(p + 1, '"');
            w += sprintf(w, "{\"title\":%.*s}", (int)(end - p + 1), p);
            p = end + 1;
        } else {
            if (in_array && *p == ']') in_array = 0;
            *w++ = *p++;
        }
    }
    *w = '\0';
    return out;
}

static char *v2_to_v3(const char *state, void *ctx, char **error) {
    char *out = ts_alloc(strlen(state) * 3 + 64), *w = out;
    const char *p = state;
    int in_array = 0;
    (void)ctx, (void)error;
    while (*p) {
        if (strncmp(p, "\"todos\":[", 9) == 0) {
            w += sprintf(w, "\"todos\":{\"items\":["), p += 9, in_array = 1;
        } else if (in_array && *p == '}') {
            w += sprintf(w, ",\"done\":false}"), p++;
        } else if (in_array && *p == ']') {
            w += sprintf(w, "]}"), p++, in_array = 0;
        } else {
            *w++ = *p++;
        }
    }
    *w = '\0';
    return out;
}

static char *v2_to_v3_fails(const char *state, void *ctx, char **error) {
    (void)state, (void)ctx;
    *error = ts_strdup("a todo has no title");
    return NULL;
}

/* A store of the program at `version` (1 or 3; 0: version 1's reducers, no
 * version declared), with the migrations `steps` ("12" for 1->2, "23" for
 * 2->3, "2x" for a failing 2->3). */
static ts_store *program(uint32_t version, const char *steps) {
    ts_store *store = NULL;
    if (ts_store_create(NULL, &store) != TS_OK) return NULL;
    if (version > 0) CHECK_SETUP("set_version", ts_store_set_version(store, version));
    if (strstr(steps, "01")) CHECK_SETUP("migration 0->1", ts_store_add_migration(store, 0, v1_to_v2, NULL));
    if (strstr(steps, "12")) CHECK_SETUP("migration 1->2", ts_store_add_migration(store, 1, v1_to_v2, NULL));
    if (strstr(steps, "23")) CHECK_SETUP("migration 2->3", ts_store_add_migration(store, 2, v2_to_v3, NULL));
    if (strstr(steps, "2x")) CHECK_SETUP("migration 2->3", ts_store_add_migration(store, 2, v2_to_v3_fails, NULL));
    CHECK_SETUP("add_reducer", ts_store_add_reducer(store, "todos", version == 3 ? todos_v3 : todos_v1, NULL));
    return store;
}

static const char *v3_abc =
    "{\"todos\":{\"items\":[{\"title\":\"a\",\"done\":false},{\"title\":\"b\",\"done\":false},"
    "{\"title\":\"c\",\"done\":false}]}}";

#endif
