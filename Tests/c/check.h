/*
 * check.h - the C suite's checks of the C API (Tests/c/test_*.c, run by
 * `make test-c`), on the harness of Tests/harness/ts_test.h (CHECK,
 * CHECK_INT, CHECK_STR, CHECK_CONTAINS, the runner, -s TOPIC / -s TEST).
 *
 * Include it first. A failed check prints, on stderr:
 *
 *     Tests/c/test_dispatch.c:123: [test_dispatch__invalidActionsAreRefusedWithAMessage] FAILED: <expression>
 *         <detail: the statuses, the numbers, or the latest checked status>
 *         ts_last_error: "..."
 *
 * A test is `void test_<topic>__<rule>(void)` in Tests/c/test_<topic>.c:
 * the Makefile's generated registry finds it (nothing to register by hand).
 * A new topic file Tests/c/test_<topic>.c joins the program by itself.
 */
#ifndef TS_TEST_CHECK_H
#define TS_TEST_CHECK_H

#include "ts_test.h"

#include "turnstate.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- Checks of the C API (beyond ts_test.h's) -------------------------- */

void check_status(ts_status got, ts_status want, const char *file, int line, const char *expr);
/* The state text at `pointer` equals `want` (and is freed). */
void check_state(ts_store *store, const char *pointer, const char *want, const char *file, int line);

#define CHECK_ST(call, want) check_status((call), (want), __FILE__, __LINE__, #call)
#define CHECK_OK(call) CHECK_ST(call, TS_OK)
#define CHECK_STATE(store, pointer, want) check_state((store), (pointer), (want), __FILE__, __LINE__)

/* ts_store_create(json) fails with `want`, leaves *out alone and sets a message. */
void expect_create_fails(const char *json, ts_status want, const char *file, int line);
#define CHECK_CREATE_FAILS(json, want) expect_create_fails((json), (want), __FILE__, __LINE__)
/* ts_store_get_state(pointer) fails with `want`, leaves *out_json alone, and
 * the message contains `needle` (if not NULL). */
void expect_get_fails(ts_store *store, const char *pointer, ts_status want, const char *needle,
                      const char *file, int line);
#define CHECK_GET_FAILS(store, pointer, want, needle) \
    expect_get_fails((store), (pointer), (want), (needle), __FILE__, __LINE__)

/* ---- Helpers ------------------------------------------------------------ */

char *xstrdup(const char *s);
char *xprintf(const char *format, ...);
/* The whole state text (malloc'ed by the library; free with ts_free), or NULL. */
char *state_of(ts_store *store, const char *pointer);
long long count_of(ts_store *store, const char *pointer);
/* A call log, for checking the order of callbacks (single-threaded tests). */
extern char call_log[4096];
void log_reset(void);
void log_add(const char *s);
/* A new store from `json` (NULL: {}); exits if that fails. */
ts_store *new_store(const char *json);
/* `prefix`, depth '[', `inner`, depth ']', `suffix` (malloc'ed). */
char *nested(const char *prefix, size_t depth, const char *inner, const char *suffix);
/* True if s is well-formed UTF-8 (no cut sequence at the end). */
int is_utf8(const char *s);

/* A sentinel that an output parameter must keep on failure. */
extern int sentinel_object;
#define SENTINEL_STORE ((ts_store *)(void *)&sentinel_object)
extern char sentinel_text[];

/* ---- Reducers, listeners and middleware used by many tests --------------- */

/* What a reducer saw. */
typedef struct rstat {
    int calls;
    int init_calls;
    int null_slice;
    char last_type[128];
    char *last_payload; /* malloc'ed copy, or NULL */
    char *last_json;    /* malloc'ed copy */
    const char *log;    /* appended to call_log on each call, if set */
} rstat;
void rstat_record(rstat *st, const char *slice, const ts_action *a);
void rstat_free(rstat *st);

/* A counter: 0 at init; "inc", "evil" and "break" add 1, "add" adds the payload,
 * "count/same" returns the same text, "count/same_ws" the same value with
 * white space, "set" returns the payload; everything else: unchanged. */
char *counter_reducer(const char *slice, const ts_action *a, void *ctx);
/* Returns invalid JSON for "break", else unchanged; "{}" at init. */
char *breaking_reducer(const char *slice, const ts_action *a, void *ctx);
/* Returns the payload as its slice on "store"; "null" at init. */
char *payload_reducer(const char *slice, const ts_action *a, void *ctx);
/* Never changes anything; at init returns what ctx (a string) says. */
char *const_init_reducer(const char *slice, const ts_action *a, void *ctx);
/* Todos: see check.c. */
char *todos_reducer(const char *slice, const ts_action *a, void *ctx);
/* Owns its key; returns a copy of *(const char **)ctx at init and for "set". */
char *text_reducer(const char *slice, const ts_action *a, void *ctx);
/* A listener that counts its calls in *(int *)ctx. */
void count_listener(ts_store *store, void *ctx);
/* A listener that appends its ctx (a string) to the call log. */
void log_listener(ts_store *store, void *ctx);

/* A recording middleware (mw_pass): what it saw, in ctx. */
typedef struct mw_ctx {
    const char *name;    /* logged on each run */
    int runs;
    char types[512];     /* the types it saw, space-separated */
    ts_next_fn nexts[8]; /* the `next` of each run (first 8) */
    const ts_store_api *api;
    ts_status next_status;
    uint32_t struct_size;
} mw_ctx;
void mw_record(mw_ctx *c, const ts_store_api *api, ts_next_fn next, const ts_action *a);
ts_status mw_pass(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx);

#endif
