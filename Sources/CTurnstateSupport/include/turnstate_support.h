/* Internal helpers of libturnstate (not installed, not exported: the
 * library's version script keeps only the ts_ functions of turnstate.h).
 *   - libffi closures that turn a (handler, userdata) pair into a plain C
 *     function pointer of one of the shapes the public API hands out;
 *   - the calling thread's last error message;
 *   - the version of Include/turnstate.h, for the Swift implementation (which
 *     cannot import a stringified macro);
 *   - ts_alloc / ts_strdup with their error messages, written without
 *     allocating;
 *   - the reducer calls under way on the calling thread, for ts_reducer_fail
 *     and ts_reducer_patch;
 *   - the JSON getters (ts_json_*), which recognise the texts that the
 *     reducer and middleware calls under way on the thread were given;
 *   - reducers' filters of action types. */
#ifndef TURNSTATE_SUPPORT_H
#define TURNSTATE_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* A libffi closure and the call interface it was prepared with. */
typedef struct tsi_closure tsi_closure;

/* int32_t f(const char *): the shape of ts_next_fn and ts_store_api.dispatch. */
typedef int32_t (*tsi_string_handler)(void *userdata, const char *text);
/* int32_t f(const char *, char **): the shape of ts_store_api.get_state. */
typedef int32_t (*tsi_string_out_handler)(void *userdata, const char *text, char **out);
/* int32_t f(int32_t (*fn)(void *), void *): the shape of ts_store_api.exclusive. */
typedef int32_t (*tsi_exclusive_fn)(void *context);
typedef int32_t (*tsi_exclusive_handler)(void *userdata, tsi_exclusive_fn fn, void *context);
/* int32_t f(const char *, uint32_t): the shape of ts_store_api.replace_state_from. */
typedef int32_t (*tsi_string_u32_handler)(void *userdata, const char *text, uint32_t number);

/* Makes a closure whose code, stored in *code, calls handler(userdata, ...).
 * Returns NULL when libffi cannot allocate executable memory. */
tsi_closure *tsi_closure_string(tsi_string_handler handler, void *userdata, void **code);
tsi_closure *tsi_closure_string_out(tsi_string_out_handler handler, void *userdata, void **code);
tsi_closure *tsi_closure_exclusive(tsi_exclusive_handler handler, void *userdata, void **code);
tsi_closure *tsi_closure_string_u32(tsi_string_u32_handler handler, void *userdata, void **code);
/* Frees a closure made above. NULL-safe. */
void tsi_closure_free(tsi_closure *closure);

/* The calling thread's last error message (copied; truncated at a UTF-8
 * boundary to fit a fixed buffer, so that nothing leaks at thread exit). */
void tsi_set_last_error(const char *message, size_t length);
const char *tsi_last_error(void);
/* Counts the errors set on the calling thread: tells whether a call in
 * between set one. */
uint64_t tsi_last_error_serial(void);

/* The reason a middleware gave for refusing the action it is running on the
 * calling thread (ts_store_api.fail), taken (and cleared) by the store when
 * the middleware returns. tsi_take_refusal returns NULL if none was given. */
void tsi_set_refusal(const char *message);
const char *tsi_take_refusal(void);

/* TS_VERSION and TS_VERSION_NUMBER of Include/turnstate.h. */
const char *tsi_version(void);
int tsi_version_number(void);

/* ts_alloc and ts_strdup: malloc'ed memory, or NULL with the last error set
 * (TS_E_NOMEM, or TS_E_ARGUMENT for a NULL text). */
void *tsi_alloc(size_t size);
char *tsi_strdup(const char *text);

/* One reducer call, on the stack of the code that calls the reducer:
 * tsi_call_reducer registers it for the length of the call (calls nest: a
 * reducer may dispatch to another store). A ts_reducer_fail during the call sets failed
 * and message (malloc'ed, at most TSI_REDUCER_MESSAGE_MAX bytes cut at a
 * UTF-8 boundary; NULL for no reason or when there was no memory for it, then
 * lost is 1). A ts_reducer_patch sets patched and appends its operations to
 * patch (malloc'ed "[op,op,..." without the closing bracket, see
 * tsi_reducer_patch_text). The caller reads them and frees both with
 * tsi_reducer_clear.
 * The caller sets slice_length and slice_owner before the call (zero for a
 * call with no slice): ts_json_at reads a slice it recognises through the
 * index that the function set with tsi_set_slice_index gives for
 * slice_owner (NULL: none). */
typedef struct tsi_reducer_call {
    struct tsi_reducer_call *outer;
    char *message;
    int failed;
    int lost;
    int patched;
    char *patch;
    size_t patch_length;
    size_t patch_capacity;
    /* What the reducer was called with (set by tsi_call_reducer). */
    const char *slice;
    const void *action;
    /* Set by the caller. */
    size_t slice_length;
    void *slice_owner;
    /* Set by the caller: the id of the slice passed (0 for the init call,
     * which has none), for ts_reducer_slice_id. */
    uint64_t slice_id;
    /* 0 until ts_reducer_answer_id reserves the id of the slice to be made
     * from this call's answer; the caller gives that slice this id. */
    uint64_t answer_id;
} tsi_reducer_call;

/* The function that gives the index of a slice (its owner as the caller set
 * it in tsi_reducer_call), for ts_json_at. Set once, before any reducer
 * call; later calls set the same function. */
void tsi_set_slice_index(const void *(*index)(void *owner));

#define TSI_REDUCER_MESSAGE_MAX 1024

/* A ts_reducer_fn, with the action as a plain pointer (this header does not
 * include turnstate.h: Swift imports that through CTurnstate). */
typedef char *(*tsi_reducer_fn)(const char *slice_json, const void *action, void *ctx);

/* Calls fn(slice_json, action, ctx) with `call` as the calling thread's
 * innermost reducer call (one thread-local look-up for both ends). */
char *tsi_call_reducer(tsi_reducer_fn fn, const char *slice_json, const void *action, void *ctx,
                       tsi_reducer_call *call);
/* As tsi_call_reducer, for a ts_patch_reducer_fn (stored as a
 * tsi_reducer_fn): its slice is given as a ts_json made from `tree` (a
 * split tsj_tree: the reducer reads it without its text) when not NULL,
 * else from the minified slice_json[0..slice_length) and `index` (a
 * tsj_doc over it, or NULL). Both NULL: the init call (the reducer gets
 * NULL). */
char *tsi_call_patch_reducer(tsi_reducer_fn fn, const char *slice_json, size_t slice_length, const void *tree,
                             const void *index, const void *action, void *ctx, tsi_reducer_call *call);
void tsi_reducer_clear(tsi_reducer_call *call);
/* ts_reducer_slice_id and ts_reducer_answer_id: a ts_status, with the last
 * error set on failure. `reserve` gives a new slice id (the answer id is
 * reserved with it on the first call during a reducer call). */
int32_t tsi_reducer_slice_id(uint64_t *out);
int32_t tsi_reducer_answer_id(uint64_t *out, uint64_t (*reserve)(void));
/* ts_reducer_fail: 0 once recorded, -1 when no reducer call is under way on
 * this thread (the caller reports TS_E_MISUSE). */
int tsi_reducer_fail(const char *message);
/* ts_reducer_patch: a ts_status, with the last error set on failure. */
int32_t tsi_reducer_patch(const char *patch_json);
/* The patch of `call` as one JSON array (the closing bracket added), or NULL
 * when there is no memory for it. Owned by `call`. */
const char *tsi_reducer_patch_text(tsi_reducer_call *call, size_t *length);

/* One middleware call, on the stack of its caller: between
 * tsi_begin_middleware_call and tsi_end_middleware_call its action is
 * registered for ts_json_at (its payload and json are recognised). */
typedef struct tsi_middleware_frame {
    struct tsi_middleware_frame *outer;
    const void *action; /* a ts_action */
    /* The calling thread's innermost-frame variable, so that ending the call
     * needs no thread-local look-up. */
    struct tsi_middleware_frame **innermost;
} tsi_middleware_frame;
/* Before a middleware runs: registers `frame` for `action`, forgets a
 * refusal left over from an earlier call and returns tsi_last_error_serial()
 * (one thread-local access for the three). */
uint64_t tsi_begin_middleware_call(tsi_middleware_frame *frame, const void *action);
/* After it returned: unregisters `frame`. */
static inline void tsi_end_middleware_call(tsi_middleware_frame *frame) { *frame->innermost = frame->outer; }

/* The JSON getters of turnstate.h (ts_json_*), with ts_json as a plain
 * pointer: each returns a ts_status and sets the last error on failure. */
int32_t tsi_json_at(const char *json, const char *pointer, void *out);
int32_t tsi_json_find(const void *value, const char *pointer, void *out);
int32_t tsi_json_int(const void *value, int64_t *out);
int32_t tsi_json_uint(const void *value, uint64_t *out);
int32_t tsi_json_double(const void *value, double *out);
int32_t tsi_json_bool(const void *value, int *out);
int tsi_json_is_null(const void *value);
int32_t tsi_json_string(const void *value, const char **out, size_t *out_length);
int32_t tsi_json_count(const void *value, size_t *out);
int32_t tsi_json_next(const void *container, size_t *cursor, void *key, void *value);
int32_t tsi_json_get_int(const char *json, const char *pointer, int64_t *out);
int32_t tsi_json_get_uint(const char *json, const char *pointer, uint64_t *out);
int32_t tsi_json_get_double(const char *json, const char *pointer, double *out);
int32_t tsi_json_get_bool(const char *json, const char *pointer, int *out);
int32_t tsi_json_get_string(const char *json, const char *pointer, const char **out, size_t *out_length);

/* A reducer's filter of action types (ts_store_add_reducer_for): exact
 * types, hashed by their bytes, and prefix patterns ("todos/" then "*": every
 * type that starts with "todos/" and has more after it). The patterns must
 * have been checked (non-empty UTF-8, '*' only last, right after a '/'). The filter
 * copies them. NULL when there is no memory. */
typedef struct tsi_type_filter tsi_type_filter;
tsi_type_filter *tsi_type_filter_make(const char *const *patterns, size_t count);
/* 1 if `type[0..length)` matches a pattern or is one of the store's own
 * ("@@turnstate/..."), else 0. */
int tsi_type_filter_match(const tsi_type_filter *filter, const char *type, size_t length);
void tsi_type_filter_free(tsi_type_filter *filter); /* NULL-safe */

#endif
