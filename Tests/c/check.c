/*
 * check.c - the C suite's checks of the C API (see check.h; the tally and
 * the runner are Tests/harness/ts_test.c's), and the helpers, reducers, listeners and middleware that several topic
 * files use.
 */
#include "check.h"

/* ---- Checks ------------------------------------------------------------- */

static pthread_mutex_t status_lock = PTHREAD_MUTEX_INITIALIZER;
/* The status of the latest CHECK_ST, printed with a failure that has no detail. */
static ts_status last_status = TS_OK;

/* Under each failure: the latest checked status (if the check gave no
 * detail) and ts_last_error() of the failing thread. */
static void show_failure_context(FILE *out, int has_detail) {
    char error[200];
    if (!has_detail) {
        pthread_mutex_lock(&status_lock);
        ts_status st = last_status;
        pthread_mutex_unlock(&status_lock);
        fprintf(out, "    latest checked status: %s (%d)\n", ts_status_name(st), (int)st);
    }
    fprintf(out, "    ts_last_error: %s\n", ts_test_quote(error, sizeof error, ts_last_error()));
}

void ts_test_suite_setup(void) { ts_test_on_failure = show_failure_context; }

void check_status(ts_status got, ts_status want, const char *file, int line, const char *expr) {
    pthread_mutex_lock(&status_lock);
    last_status = got;
    pthread_mutex_unlock(&status_lock);
    ts_test_reportf(got == want, file, line, expr, "status %s (%d), expected %s (%d)", ts_status_name(got), (int)got,
                    ts_status_name(want), (int)want);
}

/* The state text at `pointer` equals `want` (and is freed). */
void check_state(ts_store *store, const char *pointer, const char *want, const char *file, int line) {
    char *out = NULL;
    ts_status st = ts_store_get_state(store, pointer, &out);
    check_status(st, TS_OK, file, line, "ts_store_get_state");
    ts_test_check_str(out, want, file, line, "state text");
    ts_free(out);
}

/* ---- Helpers ------------------------------------------------------------ */

char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *copy = malloc(n);
    if (copy == NULL) abort();
    memcpy(copy, s, n);
    return copy;
}

char *xprintf(const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(NULL, 0, format, ap);
    va_end(ap);
    char *out = malloc((size_t)n + 1);
    if (out == NULL) abort();
    va_start(ap, format);
    vsnprintf(out, (size_t)n + 1, format, ap);
    va_end(ap);
    return out;
}

/* The whole state text (malloc'ed by the library; free with ts_free), or NULL. */
char *state_of(ts_store *store, const char *pointer) {
    char *out = NULL;
    if (ts_store_get_state(store, pointer, &out) != TS_OK) return NULL;
    return out;
}

long long count_of(ts_store *store, const char *pointer) {
    char *text = state_of(store, pointer);
    long long n = text ? strtoll(text, NULL, 10) : -1;
    ts_free(text);
    return n;
}

/* A call log, for checking the order of callbacks (single-threaded tests). */
char call_log[4096];
void log_reset(void) { call_log[0] = '\0'; }
void log_add(const char *s) {
    size_t n = strlen(call_log);
    snprintf(call_log + n, sizeof call_log - n, "%s", s);
}

ts_store *new_store(const char *json) {
    ts_store *store = NULL;
    ts_status st = ts_store_create(json, &store);
    check_status(st, TS_OK, __FILE__, __LINE__, "ts_store_create (helper)");
    if (store == NULL) {
        fprintf(stderr, "cannot create a store; giving up\n");
        exit(2);
    }
    return store;
}

/* A sentinel that an output parameter must keep on failure. */
int sentinel_object;
char sentinel_text[] = "sentinel";

/* ---- Reducers and listeners used by many tests --------------------------- */

void rstat_record(rstat *st, const char *slice, const ts_action *a) {
    if (st == NULL) return;
    st->calls++;
    if (slice == NULL) st->null_slice++;
    snprintf(st->last_type, sizeof st->last_type, "%s", a->type);
    free(st->last_payload);
    free(st->last_json);
    st->last_payload = a->payload ? xstrdup(a->payload) : NULL;
    st->last_json = xstrdup(a->json);
    if (st->log) log_add(st->log);
}

void rstat_free(rstat *st) {
    free(st->last_payload);
    free(st->last_json);
    st->last_payload = st->last_json = NULL;
}

/* A counter: 0 at init; "inc", "evil" and "break" add 1, "add" adds the payload,
 * "count/same" returns the same text, "count/same_ws" the same value with
 * white space, "set" returns the payload; everything else: unchanged. */
char *counter_reducer(const char *slice, const ts_action *a, void *ctx) {
    rstat *st = ctx;
    rstat_record(st, slice, a);
    if (slice == NULL) {
        if (st) st->init_calls++;
        return xstrdup("0");
    }
    long long n = strtoll(slice, NULL, 10);
    if (strcmp(a->type, "inc") == 0 || strcmp(a->type, "evil") == 0 || strcmp(a->type, "break") == 0) return xprintf("%lld", n + 1);
    if (strcmp(a->type, "add") == 0 && a->payload != NULL) return xprintf("%lld", n + strtoll(a->payload, NULL, 10));
    if (strcmp(a->type, "count/same") == 0) return xstrdup(slice);
    if (strcmp(a->type, "count/same_ws") == 0) return xprintf(" \n%s\t ", slice);
    if (strcmp(a->type, "set") == 0 && a->payload != NULL) return xstrdup(a->payload);
    return NULL;
}

/* Returns invalid JSON for "break", else unchanged; "{}" at init. */
char *breaking_reducer(const char *slice, const ts_action *a, void *ctx) {
    rstat_record(ctx, slice, a);
    if (slice == NULL) return xstrdup("{}");
    if (strcmp(a->type, "break") == 0) return xstrdup("{\"oops\":");
    return NULL;
}

/* Returns the payload as its slice on "store"; "null" at init. */
char *payload_reducer(const char *slice, const ts_action *a, void *ctx) {
    rstat_record(ctx, slice, a);
    if (slice == NULL) return xstrdup("null");
    if (strcmp(a->type, "store") == 0 && a->payload != NULL) return xstrdup(a->payload);
    return NULL;
}

/* Never changes anything; at init returns what ctx (a string) says. */
char *const_init_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)a;
    if (slice == NULL) return ctx ? xstrdup(ctx) : NULL;
    return NULL;
}

/* A listener that counts its calls in *(int *)ctx. */
void count_listener(ts_store *store, void *ctx) {
    (void)store;
    ++*(int *)ctx;
}

/* A listener that appends its ctx (a string) to the call log. */
void log_listener(ts_store *store, void *ctx) {
    (void)store;
    log_add(ctx);
}

/* ---- Shared by several topics ------------------------------------------ */

void expect_create_fails(const char *json, ts_status want, const char *file, int line) {
    ts_store *store = SENTINEL_STORE;
    ts_status st = ts_store_create(json, &store);
    check_status(st, want, file, line, json ? json : "(NULL)");
    ts_test_report(store == SENTINEL_STORE, file, line, "*out untouched on failure", NULL);
    ts_test_report(ts_last_error()[0] != '\0', file, line, "a message on failure", NULL);
    if (store != SENTINEL_STORE) ts_store_destroy(store);
}

char *nested(const char *prefix, size_t depth, const char *inner, const char *suffix) {
    size_t np = strlen(prefix), ni = strlen(inner), ns = strlen(suffix);
    char *text = malloc(np + 2 * depth + ni + ns + 1);
    if (text == NULL) abort();
    memcpy(text, prefix, np);
    memset(text + np, '[', depth);
    memcpy(text + np + depth, inner, ni);
    memset(text + np + depth + ni, ']', depth);
    memcpy(text + np + 2 * depth + ni, suffix, ns + 1);
    return text;
}

void expect_get_fails(ts_store *store, const char *pointer, ts_status want, const char *needle,
                      const char *file, int line) {
    char *out = sentinel_text;
    ts_status st = ts_store_get_state(store, pointer, &out);
    check_status(st, want, file, line, pointer ? pointer : "(NULL)");
    ts_test_report(out == sentinel_text, file, line, "*out_json untouched on failure", NULL);
    if (needle) ts_test_check_contains(ts_last_error(), needle, file, line, "message names the token");
    if (out != sentinel_text) ts_free(out);
}

/* Todos: "todo/add" appends the payload, "todo/remove" drops the first,
 * "todo/rename" sets the first's title to the payload, "todo/same" returns
 * the same text, "todo/same_ws" the same value reformatted. */
char *todos_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    if (slice == NULL) return xstrdup("[]");
    size_t n = strlen(slice);
    if (strcmp(a->type, "todo/add") == 0 && a->payload) {
        if (n == 2) return xprintf("[%s]", a->payload);
        return xprintf("%.*s,%s]", (int)(n - 1), slice, a->payload);
    }
    if (strcmp(a->type, "todo/remove") == 0) {
        if (n == 2) return NULL;
        /* Items are flat objects: the first ends at the first '}'. */
        const char *end = strchr(slice, '}');
        if (end[1] == ']') return xstrdup("[]");
        return xprintf("[%s", end + 2);
    }
    if (strcmp(a->type, "todo/rename") == 0 && a->payload && n > 2) {
        const char *end = strchr(slice, '}');
        return xprintf("[{\"title\":%s}%s", a->payload, end + 1);
    }
    if (strcmp(a->type, "todo/same") == 0) return xstrdup(slice);
    if (strcmp(a->type, "todo/same_ws") == 0) return xprintf("  %s\n", slice);
    return NULL;
}

void mw_record(mw_ctx *c, const ts_store_api *api, ts_next_fn next, const ts_action *a) {
    if (c->runs < 8) c->nexts[c->runs] = next;
    c->runs++;
    c->api = api;
    c->struct_size = api->struct_size;
    size_t n = strlen(c->types);
    snprintf(c->types + n, sizeof c->types - n, "%s%s", n ? " " : "", a->type);
    if (c->name) log_add(c->name);
}

ts_status mw_pass(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    mw_ctx *c = ctx;
    mw_record(c, api, next, a);
    c->next_status = next(a->json);
    return c->next_status;
}

/* Owns its key; returns a copy of *(const char **)ctx at init and for "set". */
char *text_reducer(const char *slice, const ts_action *a, void *ctx) {
    if (slice != NULL && strcmp(a->type, "set") != 0) return NULL;
    return xstrdup(*(const char **)ctx);
}

/* True if s is well-formed UTF-8 (no cut sequence at the end). */
int is_utf8(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2 : (*p & 0xF8) == 0xF0 ? 3 : -1;
        if (n < 0) return 0;
        p++;
        while (n-- > 0) {
            if ((*p & 0xC0) != 0x80) return 0;
            p++;
        }
    }
    return 1;
}
