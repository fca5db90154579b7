/*
 * todo.c - the Turnstate demo: a todo list in C, driven through the store.
 *
 *   make run                 builds the library and this program, and runs it
 *                            (again: the journal restores the state first)
 *   build/bin/todo [DIR]     DIR: a folder of plugins to load (*.so)
 *
 * The state is one JSON object with two keys, each owned by a reducer:
 *   "todos":  [{"id": 1, "title": "...", "done": false}, ...]
 *   "filter": "all" | "active" | "done"
 * Actions: {"type": "todos/add",    "payload": {"title": "..."}}
 *          {"type": "todos/toggle", "payload": {"id": 2}}
 *          {"type": "filter/set",   "payload": {"filter": "active"}}
 *
 * The reducers read the JSON they get with the library's getters
 * (ts_json_get_int, ts_json_next, ...: no JSON parser here), and answer with
 * what changed, as an RFC 6902 JSON Patch (ts_reducer_patch), or with a new
 * slice in malloc'ed memory that the store takes over. The store checks
 * both: a patch that does not apply, or a slice that is not valid JSON, fails
 * the dispatch and leaves the state as it was. Each reducer names the action
 * types it handles (ts_store_add_reducer_for).
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <turnstate.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- A growing text buffer ------------------------------------------------- */

typedef struct {
    char *data;
    size_t length;
    size_t capacity;
    int failed; /* out of memory: text_finish() returns NULL */
} text;

static void text_reserve(text *t, size_t extra) {
    size_t capacity;
    char *data;
    if (t->failed || t->length + extra + 1 <= t->capacity) return;
    capacity = t->capacity ? t->capacity : 64;
    while (capacity < t->length + extra + 1) capacity *= 2;
    data = realloc(t->data, capacity);
    if (data == NULL) {
        t->failed = 1;
        return;
    }
    t->data = data;
    t->capacity = capacity;
}

static void text_append(text *t, const char *bytes, size_t count) {
    text_reserve(t, count);
    if (t->failed) return;
    memcpy(t->data + t->length, bytes, count);
    t->length += count;
    t->data[t->length] = '\0';
}

static void text_printf(text *t, const char *format, ...) {
    va_list args;
    int needed;
    va_start(args, format);
    needed = vsnprintf(NULL, 0, format, args);
    va_end(args);
    if (needed < 0) {
        t->failed = 1;
        return;
    }
    text_reserve(t, (size_t)needed);
    if (t->failed) return;
    va_start(args, format);
    vsnprintf(t->data + t->length, (size_t)needed + 1, format, args);
    va_end(args);
    t->length += (size_t)needed;
}

/* The malloc'ed text, or NULL if memory ran out (then nothing is leaked). */
static char *text_finish(text *t) {
    if (t->failed || t->data == NULL) {
        free(t->data);
        return NULL;
    }
    return t->data;
}

static char *copy_text(const char *s) {
    text t = {NULL, 0, 0, 0};
    text_append(&t, s, strlen(s));
    return text_finish(&t);
}

/* ---- Writing JSON ----------------------------------------------------------- */

/* Appends `bytes[0..length)` (UTF-8) as a JSON string: quotes, backslashes
 * and control characters escaped. */
static void append_json_string(text *t, const char *bytes, size_t length) {
    size_t i;
    text_append(t, "\"", 1);
    for (i = 0; i < length; i++) {
        unsigned char c = (unsigned char)bytes[i];
        switch (c) {
        case '"': text_append(t, "\\\"", 2); break;
        case '\\': text_append(t, "\\\\", 2); break;
        case '\n': text_append(t, "\\n", 2); break;
        case '\r': text_append(t, "\\r", 2); break;
        case '\t': text_append(t, "\\t", 2); break;
        default:
            if (c < 0x20) text_printf(t, "\\u%04x", c);
            else text_append(t, bytes + i, 1);
        }
    }
    text_append(t, "\"", 1);
}

/* Whether bytes[0..length) are `text`. */
static int is_text(const char *bytes, size_t length, const char *text) {
    return length == strlen(text) && memcmp(bytes, text, length) == 0;
}

/* ---- The reducers -------------------------------------------------------------- */

/* They read the JSON they get with the library's getters (ts_json_*: no
 * parser here) and answer with what changed: an RFC 6902 JSON Patch given
 * to ts_reducer_patch, which the store applies to the slice. Each is added
 * for the action types it handles (ts_store_add_reducer_for), so the store
 * does not call it for the others. */

static int is_type(const ts_action *action, const char *type) {
    return strcmp(action->type, type) == 0;
}

/* The position of the todo whose "id" is `id` in the list, or -1; and the
 * largest id in *max_id (0 for an empty list). */
static long find_todo(const char *todos_json, int64_t id, int64_t *max_id) {
    ts_json todos, todo, value;
    size_t cursor = 0;
    long position = 0, found = -1;
    int64_t todo_id;
    *max_id = 0;
    if (ts_json_at(todos_json, "", &todos) != TS_OK) return -1;
    while (ts_json_next(&todos, &cursor, NULL, &todo) == TS_OK) {
        if (ts_json_find(&todo, "/id", &value) == TS_OK && ts_json_int(&value, &todo_id) == TS_OK) {
            if (todo_id == id && found < 0) found = position;
            if (todo_id > *max_id) *max_id = todo_id;
        }
        position++;
    }
    return found;
}

/* "todos": an array of {id, title, done}; "todos/add" and "todos/toggle". */
static char *todos_reducer(const char *slice_json, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice_json == NULL) return copy_text("[]"); /* the first value */

    if (is_type(action, "todos/add")) {
        text patch = {NULL, 0, 0, 0};
        const char *title;
        size_t length;
        int64_t max_id;
        char *json;
        /* No title, an empty one, or one with a NUL (\u0000): nothing to add. */
        if (ts_json_get_string(action->payload, "/title", &title, &length) != TS_OK || length == 0 ||
            memchr(title, '\0', length) != NULL)
            return NULL;
        find_todo(slice_json, -1, &max_id);
        /* [{"op":"add","path":"/-","value":{"id":N,"title":"...","done":false}}] */
        text_printf(&patch, "[{\"op\":\"add\",\"path\":\"/-\",\"value\":{\"id\":%lld,\"title\":", (long long)max_id + 1);
        append_json_string(&patch, title, length);
        text_append(&patch, ",\"done\":false}}]", 16);
        if ((json = text_finish(&patch)) == NULL || ts_reducer_patch(json) != TS_OK)
            ts_reducer_fail(json ? ts_last_error() : "no memory for the patch");
        free(json);
        return NULL;
    }

    if (is_type(action, "todos/toggle")) {
        int64_t id, max_id;
        int done;
        long position;
        char pointer[64], patch[160];
        if (ts_json_get_int(action->payload, "/id", &id) != TS_OK) return NULL;
        if ((position = find_todo(slice_json, id, &max_id)) < 0) return NULL; /* no such todo: unchanged */
        snprintf(pointer, sizeof pointer, "/%ld/done", position);
        if (ts_json_get_bool(slice_json, pointer, &done) != TS_OK) done = 0;
        snprintf(patch, sizeof patch, "[{\"op\":\"replace\",\"path\":\"%s\",\"value\":%s}]", pointer,
                 done ? "false" : "true");
        if (ts_reducer_patch(patch) != TS_OK) ts_reducer_fail(ts_last_error());
        return NULL;
    }
    return NULL; /* not ours: unchanged */
}

static const char *const todos_types[] = {"todos/add", "todos/toggle", NULL};

/* "filter": which todos the list shows; "filter/set" only. */
static char *filter_reducer(const char *slice_json, const ts_action *action, void *ctx) {
    static const char *const filters[] = {"all", "active", "done"};
    const char *filter;
    size_t length, i;
    (void)ctx;
    if (slice_json == NULL) return copy_text("\"all\"");
    if (ts_json_get_string(action->payload, "/filter", &filter, &length) != TS_OK) return NULL;
    for (i = 0; i < sizeof filters / sizeof filters[0]; i++) {
        if (is_text(filter, length, filters[i])) {
            text t = {NULL, 0, 0, 0};
            append_json_string(&t, filter, length);
            return text_finish(&t);
        }
    }
    return NULL; /* an unknown filter: unchanged */
}

static const char *const filter_types[] = {"filter/set", NULL};

/* ---- The middleware ------------------------------------------------------------- */

/* Prints each action type, passes the action on, and reports a failure of the
 * rest of the dispatch. */
static ts_status logger(const ts_store_api *store, ts_next_fn next, const ts_action *action, void *ctx) {
    ts_status status;
    (void)store;
    (void)ctx;
    printf("  [log] action %s\n", action->type);
    status = next(action->json);
    if (status != TS_OK) printf("  [log] action %s failed: %s\n", action->type, ts_status_name(status));
    return status;
}

/* ---- The listeners --------------------------------------------------------------- */

static char *read_state(ts_store *store, const char *pointer) {
    char *json = NULL;
    ts_status status = ts_store_get_state(store, pointer, &json);
    if (status != TS_OK) {
        printf("  cannot read %s: %s: %s\n", pointer, ts_status_name(status), ts_last_error());
        return NULL;
    }
    return json;
}

/* Prints the todos that the current filter lets through. */
static void print_visible(ts_store *store) {
    char *todos_json = read_state(store, "/todos");
    char *filter_json = read_state(store, "/filter");
    const char *filter = "all";
    size_t filter_length = 3, cursor = 0;
    int shown = 0;
    ts_json todos, todo, title, value;
    if (filter_json != NULL) ts_json_get_string(filter_json, "", &filter, &filter_length);
    printf("    todos (%.*s):\n", (int)filter_length, filter);
    if (todos_json != NULL && ts_json_at(todos_json, "", &todos) == TS_OK) {
        while (ts_json_next(&todos, &cursor, NULL, &todo) == TS_OK) {
            int64_t id = 0;
            int done = 0;
            const char *text = "?";
            size_t length = 1;
            if (ts_json_find(&todo, "/done", &value) == TS_OK) ts_json_bool(&value, &done);
            if ((is_text(filter, filter_length, "active") && done) || (is_text(filter, filter_length, "done") && !done))
                continue;
            if (ts_json_find(&todo, "/id", &value) == TS_OK) ts_json_int(&value, &id);
            if (ts_json_find(&todo, "/title", &title) == TS_OK) ts_json_string(&title, &text, &length);
            printf("      [%c] #%lld %.*s\n", done ? 'x' : ' ', (long long)id, (int)length, text);
            shown++;
        }
    }
    if (shown == 0) printf("      (none)\n");
    ts_free(filter_json);
    ts_free(todos_json);
}

static void on_todos_changed(ts_store *store, void *ctx) {
    (void)ctx;
    printf("  [listener /todos] the list changed\n");
    print_visible(store);
}

static void on_filter_changed(ts_store *store, void *ctx) {
    char *filter = read_state(store, "/filter");
    (void)ctx;
    printf("  [listener /filter] the filter is now %s\n", filter ? filter : "?");
    ts_free(filter);
    print_visible(store);
}

/* ---- The program ------------------------------------------------------------------ */

static void step(const char *title) {
    printf("\n== %s\n", title);
}

/* Dispatches an action that should succeed; says so if it did not. */
static int dispatch(ts_store *store, const char *action_json) {
    ts_status status = ts_store_dispatch(store, action_json);
    if (status != TS_OK) printf("  dispatch failed: %s: %s\n", ts_status_name(status), ts_last_error());
    return status == TS_OK;
}

/* Dispatches {"type":"todos/add","payload":{"title":TITLE}}, TITLE escaped. */
static int add_todo(ts_store *store, const char *title) {
    text action = {NULL, 0, 0, 0};
    char *json;
    int ok;
    text_printf(&action, "{\"type\":\"todos/add\",\"payload\":{\"title\":");
    append_json_string(&action, title, strlen(title));
    text_append(&action, "}}", 2);
    if ((json = text_finish(&action)) == NULL) return 0;
    ok = dispatch(store, json);
    free(json);
    return ok;
}

/* Dispatches an action and shows what became of it. Returns its status. */
static ts_status try_action(ts_store *store, const char *action_json) {
    ts_status status;
    printf("  dispatch %s\n", action_json);
    status = ts_store_dispatch(store, action_json);
    if (status == TS_OK) printf("  -> TS_OK\n");
    else printf("  -> %s: %s\n", ts_status_name(status), ts_last_error());
    return status;
}

/* How many todos are titled `title` (the JSON text of the title, quoted). */
static int count_todos(ts_store *store, const char *quoted_title) {
    char *todos = read_state(store, "/todos");
    int count = 0;
    for (const char *at = todos; at != NULL && (at = strstr(at, quoted_title)) != NULL; at++) count++;
    ts_free(todos);
    return count;
}

/* Waits up to `ms` milliseconds for one more todo titled `title` than the
 * `before` there were (it is dispatched from the delay plugin's thread; a
 * state the journal restored may have one already). */
static int wait_for_todo(ts_store *store, const char *title, int before, int ms) {
    struct timespec tick = {0, 10 * 1000 * 1000};
    char quoted[128];
    snprintf(quoted, sizeof quoted, "\"%s\"", title);
    for (int waited = 0; waited <= ms; waited += 10) {
        int found = count_todos(store, quoted) > before;
        if (found) {
            printf("  \"%s\" arrived after about %d ms\n", title, waited);
            return 1;
        }
        nanosleep(&tick, NULL);
    }
    printf("  \"%s\" did not arrive within %d ms\n", title, ms);
    return 0;
}

static int fail(ts_store *store, const char *what, ts_status status) {
    printf("%s failed: %s: %s\n", what, ts_status_name(status), ts_last_error());
    ts_store_destroy(store);
    return 1;
}

int main(int argc, char **argv) {
    ts_store *store = NULL;
    ts_status status;
    uint64_t token;
    char *state;
    int ok = 1;

    printf("Turnstate %s: a todo list in C\n", ts_version_string());

    step("Create the store, with a logging middleware and two reducers");
    if ((status = ts_store_create("{}", &store)) != TS_OK) return fail(NULL, "ts_store_create", status);
    if ((status = ts_store_add_middleware(store, "logger", logger, NULL)) != TS_OK)
        return fail(store, "ts_store_add_middleware", status);
    if ((status = ts_store_add_reducer_for(store, "todos", todos_types, todos_reducer, NULL)) != TS_OK)
        return fail(store, "ts_store_add_reducer_for(\"todos\")", status);
    if ((status = ts_store_add_reducer_for(store, "filter", filter_types, filter_reducer, NULL)) != TS_OK)
        return fail(store, "ts_store_add_reducer_for(\"filter\")", status);

    if (argc > 1) {
        /* After the reducers: a plugin that restores a saved state needs them. */
        step("Load the plugins of a folder");
        printf("  ts_store_load_plugins(store, \"%s\")\n", argv[1]);
        if ((status = ts_store_load_plugins(store, argv[1])) != TS_OK) return fail(store, "  loading plugins", status);
        printf("  loaded: they run after the logger, in the order of their file names\n");
    } else {
        printf("  (no plugin folder given: `%s DIR` loads the plugins in DIR)\n", argv[0]);
    }

    if ((state = read_state(store, NULL)) == NULL) return fail(store, "ts_store_get_state", TS_E_NOT_FOUND);
    printf("  initial state: %s\n", state);
    if (strcmp(state, "{\"todos\":[],\"filter\":\"all\"}") != 0)
        printf("  (not empty: a plugin restored a saved state)\n");
    ts_free(state);

    step("Subscribe listeners to /todos and /filter");
    if ((status = ts_store_subscribe(store, "/todos", on_todos_changed, NULL, &token)) != TS_OK)
        return fail(store, "ts_store_subscribe(\"/todos\")", status);
    if ((status = ts_store_subscribe(store, "/filter", on_filter_changed, NULL, &token)) != TS_OK)
        return fail(store, "ts_store_subscribe(\"/filter\")", status);
    printf("  subscribed\n");

    step("Add three todos");
    ok &= add_todo(store, "Buy milk");
    ok &= add_todo(store, "Read \"The C Programming Language\"");
    ok &= dispatch(store, "{\"type\":\"todos/add\",\"payload\":{\"title\":\"Book the caf\\u00e9\"}}");

    step("Toggle todo #2 (done)");
    ok &= dispatch(store, "{\"type\":\"todos/toggle\",\"payload\":{\"id\":2}}");

    step("Show only the active todos");
    ok &= dispatch(store, "{\"type\":\"filter/set\",\"payload\":{\"filter\":\"active\"}}");

    step("Show only the done todos");
    ok &= dispatch(store, "{\"type\":\"filter/set\",\"payload\":{\"filter\":\"done\"}}");

    if (argc > 1) {
        int before = count_todos(store, "\"Water the plants\"");
        step("Add a todo 200 ms from now, through the delay plugin");
        ok &= dispatch(store, "{\"type\":\"@@delay\",\"payload\":{\"ms\":200,\"action\":"
                              "{\"type\":\"todos/add\",\"payload\":{\"title\":\"Water the plants\"}}}}");
        printf("  dispatch returned at once; waiting for the delayed action...\n");
        ok &= wait_for_todo(store, "Water the plants", before, 3000);
    }

    step("Try invalid actions (refused: the state does not change)");
    ok &= try_action(store, "{\"payload\":{\"title\":\"no type\"}}") == TS_E_NOT_ACTION;
    ok &= try_action(store, "{\"type\":\"todos/add\",\"payload\":{\"title\":\"Oops\"}") == TS_E_JSON;
    /* A tagged action, but without a title: the reducer ignores it (TS_OK), or
     * a guard middleware, if a plugin put one in the chain, refuses it. */
    status = try_action(store, "{\"type\":\"todos/add\",\"payload\":{}}");
    ok &= status == TS_OK || status == TS_E_REJECTED;

    step("Final state");
    if ((state = read_state(store, NULL)) == NULL) return fail(store, "ts_store_get_state", TS_E_NOT_FOUND);
    printf("  %s\n", state);
    ts_free(state);

    ts_store_destroy(store);
    if (argc > 1) {
        printf("\n  The logger plugin wrote one JSON line per action to the file named in its\n"
               "  20-logger.json; the journal plugin recorded them in the file named in its\n"
               "  90-journal.json. Run the demo again with the same folder (`make run` keeps\n"
               "  that file, build/demo/todo.journal) and the journal restores this state\n"
               "  before it starts; rm -rf build/demo to start afresh.\n");
    }
    printf("\n%s\n", ok ? "done." : "some steps failed.");
    return ok ? 0 : 1;
}
