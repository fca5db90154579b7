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
 * The reducers read the JSON they get with a few small helpers below (the
 * store hands them valid, minified JSON) and build their new slice with
 * snprintf into malloc'ed memory, which the store takes over. The store
 * checks what they return anyway: a reducer that returned broken JSON would
 * make the dispatch fail and leave the state as it was.
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

/* ---- Reading JSON ------------------------------------------------------------ */

static const char *skip_space(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    return p;
}

/* p is at any JSON value; returns the character after it (NULL if malformed). */
static const char *skip_value(const char *p) {
    int depth = 0;
    p = skip_space(p);
    do {
        if (*p == '"') {
            for (p++; *p != '"'; p++) {
                if (*p == '\0') return NULL;
                if (*p == '\\' && *++p == '\0') return NULL;
            }
            p++;
        } else if (*p == '[' || *p == '{') {
            depth++;
            p++;
        } else if (*p == ']' || *p == '}') {
            if (--depth < 0) return NULL;
            p++;
        } else if (*p == '\0') {
            return NULL;
        } else {
            p++; /* numbers, true/false/null, ',' and ':' inside containers */
            while (depth == 0 && *p != '\0' && strchr(",]} \t\r\n", *p) == NULL) p++;
        }
    } while (depth > 0);
    return p;
}

static unsigned hex_digit(char c) {
    if (c >= '0' && c <= '9') return (unsigned)(c - '0');
    if (c >= 'a' && c <= 'f') return (unsigned)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return (unsigned)(c - 'A' + 10);
    return 16;
}

static int read_hex4(const char *p, unsigned long *out) {
    int i;
    *out = 0;
    for (i = 0; i < 4; i++) {
        unsigned digit = hex_digit(p[i]);
        if (digit > 15) return 0;
        *out = *out * 16 + digit;
    }
    return 1;
}

static void append_utf8(text *t, unsigned long code) {
    char bytes[4];
    size_t count;
    if (code < 0x80) {
        bytes[0] = (char)code;
        count = 1;
    } else if (code < 0x800) {
        bytes[0] = (char)(0xC0 | (code >> 6));
        bytes[1] = (char)(0x80 | (code & 0x3F));
        count = 2;
    } else if (code < 0x10000) {
        bytes[0] = (char)(0xE0 | (code >> 12));
        bytes[1] = (char)(0x80 | ((code >> 6) & 0x3F));
        bytes[2] = (char)(0x80 | (code & 0x3F));
        count = 3;
    } else {
        bytes[0] = (char)(0xF0 | (code >> 18));
        bytes[1] = (char)(0x80 | ((code >> 12) & 0x3F));
        bytes[2] = (char)(0x80 | ((code >> 6) & 0x3F));
        bytes[3] = (char)(0x80 | (code & 0x3F));
        count = 4;
    }
    text_append(t, bytes, count);
}

/* p is at a JSON string: returns its value as malloc'ed UTF-8, or NULL if it
 * is not a string (or holds \u0000, which a C string cannot). */
static char *read_string(const char *p) {
    text t = {NULL, 0, 0, 0};
    if (p == NULL || *(p = skip_space(p)) != '"') return NULL;
    text_append(&t, "", 0); /* "" is a string too */
    for (p++; *p != '"'; p++) {
        unsigned long code, low;
        if (*p == '\0') goto bad;
        if (*p != '\\') {
            text_append(&t, p, 1);
            continue;
        }
        switch (*++p) {
        case '"': text_append(&t, "\"", 1); break;
        case '\\': text_append(&t, "\\", 1); break;
        case '/': text_append(&t, "/", 1); break;
        case 'b': text_append(&t, "\b", 1); break;
        case 'f': text_append(&t, "\f", 1); break;
        case 'n': text_append(&t, "\n", 1); break;
        case 'r': text_append(&t, "\r", 1); break;
        case 't': text_append(&t, "\t", 1); break;
        case 'u':
            if (!read_hex4(p + 1, &code) || code == 0) goto bad;
            p += 4;
            if (code >= 0xD800 && code <= 0xDBFF) { /* a surrogate pair */
                if (p[1] != '\\' || p[2] != 'u' || !read_hex4(p + 3, &low) || low < 0xDC00 || low > 0xDFFF) goto bad;
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                p += 6;
            } else if (code >= 0xDC00 && code <= 0xDFFF) {
                goto bad;
            }
            append_utf8(&t, code);
            break;
        default:
            goto bad;
        }
    }
    return text_finish(&t);
bad:
    free(t.data);
    return NULL;
}

/* Appends `s` (UTF-8) as a JSON string: quotes, backslashes and control
 * characters escaped. */
static void append_json_string(text *t, const char *s) {
    text_append(t, "\"", 1);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '"': text_append(t, "\\\"", 2); break;
        case '\\': text_append(t, "\\\\", 2); break;
        case '\n': text_append(t, "\\n", 2); break;
        case '\r': text_append(t, "\\r", 2); break;
        case '\t': text_append(t, "\\t", 2); break;
        default:
            if (c < 0x20) text_printf(t, "\\u%04x", c);
            else text_append(t, s, 1);
        }
    }
    text_append(t, "\"", 1);
}

/* The value of member `key` of the JSON object at `object`, or NULL. */
static const char *member(const char *object, const char *key) {
    const char *p;
    if (object == NULL || *(p = skip_space(object)) != '{') return NULL;
    p = skip_space(p + 1);
    while (*p == '"') {
        char *name = read_string(p);
        int found = name != NULL && strcmp(name, key) == 0;
        free(name);
        if ((p = skip_value(p)) == NULL) return NULL;
        p = skip_space(p);
        if (*p != ':') return NULL;
        p = skip_space(p + 1);
        if (found) return p;
        if ((p = skip_value(p)) == NULL) return NULL;
        p = skip_space(p);
        if (*p != ',') return NULL;
        p = skip_space(p + 1);
    }
    return NULL;
}

/* The integer at p (a JSON number without fraction), in *out; 0 if none. */
static int read_integer(const char *p, long long *out) {
    char *end;
    if (p == NULL) return 0;
    p = skip_space(p);
    if (*p != '-' && (*p < '0' || *p > '9')) return 0;
    *out = strtoll(p, &end, 10);
    return *end == '\0' || strchr(".eE", *end) == NULL;
}

static int is_true(const char *p) {
    return p != NULL && strncmp(skip_space(p), "true", 4) == 0;
}

/* Calls fn for each element of the JSON array at `array`; stops at the first
 * fn that returns 0. Returns 0 if the array is malformed. */
typedef int (*element_fn)(const char *element, size_t length, void *ctx);

static int for_each_element(const char *array, element_fn fn, void *ctx) {
    const char *p, *end;
    if (array == NULL || *(p = skip_space(array)) != '[') return 0;
    p = skip_space(p + 1);
    if (*p == ']') return 1;
    for (;;) {
        if ((end = skip_value(p)) == NULL) return 0;
        if (!fn(p, (size_t)(end - p), ctx)) return 1;
        p = skip_space(end);
        if (*p == ']') return 1;
        if (*p != ',') return 0;
        p = skip_space(p + 1);
    }
}

/* ---- The reducers -------------------------------------------------------------- */

static int is_type(const ts_action *action, const char *type) {
    return strcmp(action->type, type) == 0;
}

static int max_id(const char *todo, size_t length, void *ctx) {
    long long id;
    (void)length;
    if (read_integer(member(todo, "id"), &id) && id > *(long long *)ctx) *(long long *)ctx = id;
    return 1;
}

/* Appends one todo as JSON: {"id":1,"title":"...","done":false}. */
static void append_todo(text *t, long long id, const char *title, int done) {
    text_printf(t, "{\"id\":%lld,\"title\":", id);
    append_json_string(t, title);
    text_printf(t, ",\"done\":%s}", done ? "true" : "false");
}

typedef struct {
    text out;
    long long id;
    int count;
    int toggled;
} toggle_job;

static int toggle_one(const char *todo, size_t length, void *ctx) {
    toggle_job *job = ctx;
    long long id;
    if (job->count++ > 0) text_append(&job->out, ",", 1);
    if (read_integer(member(todo, "id"), &id) && id == job->id) {
        char *title = read_string(member(todo, "title"));
        append_todo(&job->out, id, title ? title : "", !is_true(member(todo, "done")));
        free(title);
        job->toggled = 1;
    } else {
        text_append(&job->out, todo, length); /* the other todos, as they were */
    }
    return 1;
}

/* "todos": an array of {id, title, done}. */
static char *todos_reducer(const char *slice_json, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice_json == NULL) return copy_text("[]"); /* the first value */

    if (is_type(action, "todos/add")) {
        text out = {NULL, 0, 0, 0};
        long long id = 0;
        const char *end = strrchr(slice_json, ']');
        char *title = read_string(member(action->payload, "title"));
        if (title == NULL || title[0] == '\0' || end == NULL) { /* no title: nothing to add */
            free(title);
            return NULL;
        }
        for_each_element(slice_json, max_id, &id);
        text_append(&out, slice_json, (size_t)(end - slice_json)); /* "[...", without the "]" */
        if (*skip_space(skip_space(slice_json) + 1) != ']') text_append(&out, ",", 1);
        append_todo(&out, id + 1, title, 0);
        text_append(&out, "]", 1);
        free(title);
        return text_finish(&out);
    }

    if (is_type(action, "todos/toggle")) {
        toggle_job job = {{NULL, 0, 0, 0}, 0, 0, 0};
        if (!read_integer(member(action->payload, "id"), &job.id)) return NULL;
        text_append(&job.out, "[", 1);
        for_each_element(slice_json, toggle_one, &job);
        text_append(&job.out, "]", 1);
        if (!job.toggled) { /* no such todo: unchanged */
            free(job.out.data);
            return NULL;
        }
        return text_finish(&job.out);
    }
    return NULL; /* not ours: unchanged */
}

static int is_filter(const char *name) {
    return strcmp(name, "all") == 0 || strcmp(name, "active") == 0 || strcmp(name, "done") == 0;
}

/* "filter": which todos the list shows. */
static char *filter_reducer(const char *slice_json, const ts_action *action, void *ctx) {
    char *filter, *out = NULL;
    (void)ctx;
    if (slice_json == NULL) return copy_text("\"all\"");
    if (!is_type(action, "filter/set")) return NULL;
    filter = read_string(member(action->payload, "filter"));
    if (filter != NULL && is_filter(filter)) {
        text t = {NULL, 0, 0, 0};
        append_json_string(&t, filter);
        out = text_finish(&t);
    }
    free(filter); /* an unknown filter: unchanged */
    return out;
}

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

typedef struct {
    const char *filter;
    int shown;
} print_job;

static int print_todo(const char *todo, size_t length, void *ctx) {
    print_job *job = ctx;
    long long id = 0;
    int done = is_true(member(todo, "done"));
    char *title;
    (void)length;
    if ((strcmp(job->filter, "active") == 0 && done) || (strcmp(job->filter, "done") == 0 && !done)) return 1;
    title = read_string(member(todo, "title"));
    read_integer(member(todo, "id"), &id);
    printf("      [%c] #%lld %s\n", done ? 'x' : ' ', id, title ? title : "?");
    free(title);
    job->shown++;
    return 1;
}

/* Prints the todos that the current filter lets through. */
static void print_visible(ts_store *store) {
    char *todos = read_state(store, "/todos");
    char *filter_json = read_state(store, "/filter");
    char *filter = read_string(filter_json);
    print_job job;
    job.filter = filter ? filter : "all";
    job.shown = 0;
    printf("    todos (%s):\n", job.filter);
    if (todos != NULL) for_each_element(todos, print_todo, &job);
    if (job.shown == 0) printf("      (none)\n");
    free(filter);
    ts_free(filter_json);
    ts_free(todos);
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
    append_json_string(&action, title);
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
    if ((status = ts_store_add_reducer(store, "todos", todos_reducer, NULL)) != TS_OK)
        return fail(store, "ts_store_add_reducer(\"todos\")", status);
    if ((status = ts_store_add_reducer(store, "filter", filter_reducer, NULL)) != TS_OK)
        return fail(store, "ts_store_add_reducer(\"filter\")", status);

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
