/*
 * turnstate.h - the C API of Turnstate, a predictable state container.
 *
 * One store holds one state: a JSON object. The state changes only when an
 * action is dispatched: a tagged JSON object {"type": "todos/add",
 * "payload": {...}}. Middleware runs around every dispatch; reducers, each
 * owning one top-level key of the state, compute the next state; listeners
 * are told of changes. The same store is the typed Swift `Store` underneath,
 * so every rule of the Swift API holds here too.
 *
 * Conventions that hold for every function below:
 * - Functions that can fail return a ts_status: TS_OK (0) or a negative
 *   TS_E_* code. On failure ts_last_error() describes the fault and no
 *   output parameter has been written, and nothing has changed.
 * - Strings are NUL-terminated UTF-8. Text that the library returns through
 *   a `char **` parameter is new memory that the caller owns and frees with
 *   ts_free(). Pointers passed to callbacks are valid only during the call.
 * - Any thread may call any function. Calls on one store are serialized:
 *   a dispatch holds the store for its whole length (middleware, reducers,
 *   listeners); a callback may call back into the same store on the same
 *   thread, except from a reducer (see ts_reducer_fn). Do not block inside
 *   a callback waiting for another thread that uses the same store.
 * - JSON is parsed fully and strictly (RFC 8259): invalid UTF-8, trailing
 *   characters and nesting deeper than TS_MAX_DEPTH are refused with
 *   TS_E_JSON. So is an object with a key that appears twice, at any depth
 *   (keys compared after unescaping: {"a":1,"\u0061":2} is refused); the
 *   message names the key and its byte offset. This holds wherever the
 *   library reads JSON: initial states, actions (payloads included),
 *   reducer results and patches (there the dispatch fails with
 *   TS_E_REDUCER), replace_state, plugin configs (given to
 *   ts_store_load_plugin or read from NAME.json) and texts given to the
 *   getters (ts_json_at), so every reader of a text sees the same members.
 *   Integers up to 64 bits (signed or unsigned) survive exactly.
 *   Text that the library returns is minified (no insignificant white space).
 * - Out of memory: where the library itself allocates (parsing and copying
 *   JSON text, checking a reducer's output, copies of the state) a failed
 *   allocation returns TS_E_NOMEM and changes nothing. The library is
 *   written in Swift, and a failed allocation inside the Swift runtime (the
 *   small objects it makes for subscriptions, middleware and plugins, and a
 *   few per dispatch) ends the process, as it does in any Swift program.
 * - Memory: see "Memory" below for which allocator each pointer belongs to.
 *
 * This header is C99. Its only compiler-specific parts are the attributes
 * behind TS_API and TS_DEPRECATED (below), which are used only where the
 * compiler says it has them and are empty elsewhere; it compiles with
 * -std=c99 -pedantic -Werror.
 */
#ifndef TURNSTATE_H
#define TURNSTATE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Versions ----------------------------------------------------------- */

/* The version of this header, written here and nowhere else: the library's
 * ts_version_string() and ts_version_number(), the Makefile (file names,
 * SONAME), turnstate.pc and the packages all derive from these three lines. */
#define TS_VERSION_MAJOR 0
#define TS_VERSION_MINOR 2
#define TS_VERSION_PATCH 0

/* Turns a macro's value into a string literal (helpers of TS_VERSION). */
#define TS_STRINGIFY_(x) #x
#define TS_STRINGIFY(x) TS_STRINGIFY_(x)

/* The version of this header as a string literal, "MAJOR.MINOR.PATCH". */
#define TS_VERSION \
    TS_STRINGIFY(TS_VERSION_MAJOR) "." TS_STRINGIFY(TS_VERSION_MINOR) "." TS_STRINGIFY(TS_VERSION_PATCH)

/* The version of this header as one number, MAJOR * 10000 + MINOR * 100 +
 * PATCH (0.2.0 is 200), for #if TS_VERSION_NUMBER >= ... */
#define TS_VERSION_NUMBER (TS_VERSION_MAJOR * 10000 + TS_VERSION_MINOR * 100 + TS_VERSION_PATCH)

/* ---- Attributes --------------------------------------------------------- */

/* TS_API marks the functions that the library exports (and, in
 * turnstate_plugin.h, the entry function that a plugin exports): default
 * visibility, so that they stay visible in a program or plugin built with
 * -fvisibility=hidden. It is __attribute__((visibility("default"))) for
 * compilers that have it (GCC 4 and later, clang) and empty for others.
 * Define TS_API yourself before including this header to replace it (for
 * example empty, for a tool that parses declarations but not attributes:
 * cc -E -DTS_API= '-DTS_DEPRECATED(msg)=' turnstate.h). */
#ifndef TS_API
#  if defined(__GNUC__) && __GNUC__ >= 4
#    define TS_API __attribute__((visibility("default")))
#  else
#    define TS_API
#  endif
#endif

/* TS_DEPRECATED(msg) marks a declaration that a later version will remove:
 * a call to it warns, with `msg` (a string literal saying what to use
 * instead) where the compiler supports messages. It is
 * __attribute__((deprecated(msg))) for GCC 4.5 and later and for clang,
 * __attribute__((deprecated)) for older GCC, and empty for other compilers.
 * Define it yourself before including this header to replace it. */
#ifndef TS_DEPRECATED
#  if defined(__has_attribute)
#    if __has_attribute(deprecated)
#      if defined(__clang__) || (defined(__GNUC__) && (__GNUC__ > 4 || (__GNUC__ == 4 && __GNUC_MINOR__ >= 5)))
#        define TS_DEPRECATED(msg) __attribute__((deprecated(msg)))
#      else
#        define TS_DEPRECATED(msg) __attribute__((deprecated))
#      endif
#    endif
#  elif defined(__GNUC__) && (__GNUC__ > 4 || (__GNUC__ == 4 && __GNUC_MINOR__ >= 5))
#    define TS_DEPRECATED(msg) __attribute__((deprecated(msg)))
#  elif defined(__GNUC__) && (__GNUC__ > 3 || (__GNUC__ == 3 && __GNUC_MINOR__ >= 1))
#    define TS_DEPRECATED(msg) __attribute__((deprecated))
#  endif
#  ifndef TS_DEPRECATED
#    define TS_DEPRECATED(msg)
#  endif
#endif

/* The version of the library that is loaded, as MAJOR * 10000 + MINOR * 100
 * + PATCH: TS_VERSION_NUMBER of the header it was built from. Compare with
 * the TS_VERSION_NUMBER you compiled against. */
TS_API int ts_version_number(void);

/* The version of the loaded library as "MAJOR.MINOR.PATCH": TS_VERSION of
 * the header it was built from. Static text: do not free. */
TS_API const char *ts_version_string(void);

/* ---- Status codes and errors -------------------------------------------- */

typedef int32_t ts_status;

#define TS_OK                 0   /* success */
#define TS_E_ARGUMENT       (-1)  /* a NULL or malformed argument */
#define TS_E_JSON           (-2)  /* invalid JSON: syntax, bad UTF-8, nesting too deep, a key twice */
#define TS_E_NOT_ACTION     (-3)  /* valid JSON that is not a tagged action */
#define TS_E_REDUCER        (-4)  /* a reducer failed or returned invalid JSON */
#define TS_E_REENTRANT      (-5)  /* a reducer called back into its store */
#define TS_E_PLUGIN         (-6)  /* a plugin could not be loaded or failed */
#define TS_E_IO             (-7)  /* reading or writing a file failed */
#define TS_E_NOMEM          (-8)  /* out of memory */
#define TS_E_NOT_FOUND      (-9)  /* no value at a JSON Pointer, no such file */
#define TS_E_REJECTED      (-10)  /* a middleware refused the action */
#define TS_E_STORE_GONE    (-11)  /* a call reached a store that is being destroyed */
#define TS_E_ABI           (-12)  /* a plugin built for an ABI this library does not speak */
#define TS_E_UNKNOWN_ACTION (-13) /* a Swift store met an action type it cannot decode */
#define TS_E_MISUSE        (-14)  /* a function used against its rules: a middleware's
                                     next called twice, or outside its run() */

/* The deepest nesting of arrays and objects that JSON text may have. */
#define TS_MAX_DEPTH 256

/* The name of a status ("TS_OK", "TS_E_JSON", ...), or "TS_E_UNKNOWN" for a
 * value that is none of the above. Static text: do not free. */
TS_API const char *ts_status_name(ts_status status);

/* The message of the last failure on the calling thread, precise enough to
 * act on (which byte, which key, which file), or "" if there was none.
 * Success does not clear it. The text is owned by the library and stays
 * valid until the next failing call on the same thread: do not free it. */
TS_API const char *ts_last_error(void);

/* ---- Memory ------------------------------------------------------------- */

/* Memory crosses the API in two directions, and both sides use one heap: the
 * C library's malloc() and free() (the ones libturnstate itself links
 * against). That is a guarantee for as long as the SONAME is
 * libturnstate.so.0, not an accident of the implementation:
 * - What the library returns through a `char **` (ts_store_get_state, a
 *   ts_store_api's get_state) is malloc'ed; free it with ts_free(), which is
 *   free(). (In a plugin, which does not link the library, use the table's
 *   free function.)
 * - What the caller hands over to the store (the text a reducer returns,
 *   which the store frees with free()) must come from ts_alloc() or
 *   ts_strdup(), or from the C library's malloc(), calloc(), realloc() or
 *   strdup(): all four are the same heap. Use ts_alloc() and ts_strdup() from
 *   languages that do not call the C library's malloc (Python's ctypes, Rust's
 *   global allocator, Go) or when your malloc may not be the library's (a
 *   program with its own allocator, a statically linked C runtime).
 * - A plugin's create() hands its *error_message to the host, which frees it
 *   with free(): malloc it (turnstate_plugin.h). */

/* Allocates `size` bytes (not initialized) with the C library's malloc, for
 * text that the store will take over (a reducer's result) or any memory that
 * ts_free() will release. ts_alloc(0) returns a unique non-NULL pointer to
 * zero usable bytes (it allocates 1 byte), not the NULL that malloc(0) may
 * return, so that NULL always means failure. Returns NULL only when there is
 * no memory, with ts_last_error() of the calling thread saying so
 * (TS_E_NOMEM, and the size asked for). Any thread may call it. */
TS_API void *ts_alloc(size_t size);

/* Copies the NUL-terminated `text` (its bytes as they are, up to and
 * including the NUL; not checked as UTF-8) into new memory from ts_alloc().
 * The copy is the caller's: return it from a reducer, or release it with
 * ts_free(). Returns NULL when `text` is NULL (ts_last_error() says
 * TS_E_ARGUMENT) or when there is no memory (TS_E_NOMEM). Any thread may
 * call it. */
TS_API char *ts_strdup(const char *text);

/* Releases memory that the library returned (state text from
 * ts_store_get_state, ...) or that ts_alloc() and ts_strdup() made: free().
 * NULL-safe. Any thread may call it. */
TS_API void ts_free(void *pointer);

/* ---- Stores ------------------------------------------------------------- */

typedef struct ts_store ts_store;

/* Creates a store whose state is `initial_state_json`, a JSON object (NULL
 * means {}). On success *out is the new store, which the caller destroys with
 * ts_store_destroy().
 * Errors: TS_E_ARGUMENT (out is NULL), TS_E_JSON (invalid JSON, or not an
 * object, or an object with a key that appears twice at any depth),
 * TS_E_NOMEM. */
TS_API ts_status ts_store_create(const char *initial_state_json, ts_store **out);

/* Destroys a store, in two steps
 * (Sources/TurnstateC/PluginHost/ShutdownProtocol.pml models them, and
 * `make test` checks the model with spin):
 * 1. The store closes. Dispatches already under way finish first (on other
 *    threads: waited for; on this thread: the one this is called from).
 *    From then on every new call into the store - ts_store_* from any
 *    thread, the functions of a kept ts_store_api table, a call from a
 *    plugin's destroy() - returns TS_E_STORE_GONE and reaches no
 *    middleware, reducer or listener (a kept `next` returns TS_E_MISUSE, as
 *    it always does outside its run()).
 * 2. Each plugin's destroy() runs, last loaded first, on the calling thread
 *    and without the store held, so that a plugin can stop and join its own
 *    threads (their dispatches now return TS_E_STORE_GONE). No plugin's
 *    run() is called once its destroy() has begun.
 * Then the store's listeners, middleware and memory are freed. NULL-safe.
 * Called from inside one of the store's own callbacks, step 1 happens at
 * once (the dispatch under way still finishes: its remaining middleware,
 * reducers and listeners run) and step 2 when the outermost call into the
 * store returns.
 * The ts_store pointer and the ts_store_api table are freed when
 * ts_store_destroy returns: a thread that may still use them must be
 * stopped by then (a plugin in its destroy(); other code before calling
 * ts_store_destroy). Using either afterwards is undefined behaviour. */
TS_API void ts_store_destroy(ts_store *store);

/* ---- Actions ------------------------------------------------------------ */

/* The parsed view of an action that reducers and middleware receive. The
 * action is parsed once per dispatch; these pointers are valid only during
 * the callback.
 *   type:    the value of "type", unescaped ("todos/add").
 *   payload: the JSON text of "payload" (minified), or NULL if the action
 *            has none ("payload": null gives the text "null").
 *   json:    the whole action as it was dispatched. */
typedef struct ts_action {
    const char *type;
    const char *payload;
    const char *json;
} ts_action;

/* ---- Reducers ----------------------------------------------------------- */

/* A reducer owns one top-level key of the state (Redux's keyed
 * combineReducers). It is called for every action that reaches the reducers
 * (or, added with ts_store_add_reducer_for, for those of the types it names),
 * on the dispatching thread, with the JSON text of its slice, and returns one
 * of:
 * - NULL: "unchanged";
 * - NULL after ts_reducer_patch(): the change, as an RFC 6902 JSON Patch;
 * - the new slice as JSON text, in memory that the store takes over and frees
 *   with free(): from ts_alloc() or ts_strdup(), or from the C library's
 *   malloc() (see Memory above);
 * - failure: call ts_reducer_fail(message), then return NULL (or anything:
 *   once ts_reducer_fail was called, what the reducer returns is freed and
 *   ignored).
 *
 * A reducer must be pure: it may not dispatch, read the state, subscribe or
 * unsubscribe. Such a call returns TS_E_REENTRANT and the whole dispatch then
 * fails with TS_E_REENTRANT, leaving the state as it was. If a reducer fails
 * (ts_reducer_fail), returns text that is not valid JSON, or gives a patch
 * that does not apply (ts_reducer_patch), the dispatch
 * fails with TS_E_REDUCER and the state is exactly as it was before it: no
 * reducer's result is applied, and the reducers after it are not called.
 * Text with an object that has a key twice, at any depth, is invalid JSON
 * here too (TS_E_REDUCER). */
typedef char *(*ts_reducer_fn)(const char *slice_json, const ts_action *action, void *ctx);

/* Called by a reducer, while the store is calling it, to fail with its own
 * reason: the dispatch (or ts_store_add_reducer's init call, or a
 * replace_state that needed the reducer's first value) then fails with
 * TS_E_REDUCER, changes nothing, and ts_last_error() of the thread that made
 * that call reads
 *     the reducer for "KEY" failed for "ACTION TYPE": MESSAGE
 * `message` is copied (it may be freed as soon as this returns); its first
 * 1,024 bytes are kept (cut at a UTF-8 boundary), and bytes that are not
 * valid UTF-8 are replaced with U+FFFD. NULL or "" means no reason: the text
 * then ends with "(it gave no reason)".
 * The failure holds whatever the reducer then returns: return NULL; text it
 * returns anyway is freed without being read. Called again during the same
 * reducer call it changes nothing (the first reason is the one reported) and
 * returns TS_OK. A reducer that also called back into its store fails with
 * TS_E_REENTRANT instead. A reducer of another store that this reducer
 * dispatches to has its own failure: that inner dispatch fails, and this
 * reducer's call is unaffected unless it fails too.
 * Returns TS_OK once the failure is recorded (even if there was no memory to
 * copy the message: the text then says so). Called outside a reducer (on a
 * thread where no store is calling a reducer: from a middleware, a listener,
 * or after the reducer returned) it returns TS_E_MISUSE, sets
 * ts_last_error(), and fails nothing. */
TS_API ts_status ts_reducer_fail(const char *message);

/* Called by a reducer, while the store is calling it, to answer with a
 * change to its slice instead of the whole new slice: `patch_json` is an
 * RFC 6902 JSON Patch, an array of operations whose paths are JSON Pointers
 * relative to the slice ("" is the slice itself). The reducer then returns
 * NULL:
 *     ts_reducer_patch("[{\"op\":\"replace\",\"path\":\"/3/done\",\"value\":true}]");
 *     return NULL;
 * The six operations of RFC 6902 (add, remove, replace, move, copy, test),
 * with its rules: "-" appends to an array, "add" of an existing member
 * replaces it, "test" compares as JSON values (1 equals 1.0; members in any
 * order), unknown members of an operation are ignored.
 * `patch_json` is validated as JSON (strictly, as everywhere) and copied
 * when this is called; the operations themselves are checked when the patch
 * is applied. Several calls during one reducer call append their operations
 * in order, as one patch.
 * After the reducer returns, the store applies the patch to its slice: all
 * of it or nothing, before any reducer's result is applied. If the patch is
 * not a valid JSON Patch or an operation fails (a path that names nothing, a
 * "test" that does not hold, a result nested deeper than TS_MAX_DEPTH - 1
 * as a top-level value may be), the dispatch fails with TS_E_REDUCER as if
 * the reducer had failed: the state is exactly as it was, the reducers
 * after it are not called and no listener runs; ts_last_error() reads
 *     the reducer for "KEY" returned a patch that failed for "TYPE": op 2
 *     ("test" at "/items/3/done"): the value differs (found false)
 * (operations counted from 0). A patch that changes nothing (no operation,
 * or only "test" operations that hold) leaves the slice unchanged, as NULL
 * does. A reducer that patches and also returns text fails the dispatch
 * with TS_E_REDUCER ("returned both a patch and a new slice"; the text is
 * freed).
 * Cost: the slice is not parsed or validated again; the first changing
 * operation finds its target through the slice's index when the store has
 * one (see ts_json_at) and the new slice is the old one spliced: one copy
 * of its text. The slice of a patch reducer (ts_store_add_patch_reducer)
 * of 64 KiB or more is kept as a tree of texts instead: a patch then copies
 * only the path to what it changes.
 * Pointer listeners (ts_store_subscribe) whose pointer is
 * neither at, above nor below a path that the patch changed (for "move",
 * its "from" too; a path ending in an array index or "-" counts as its
 * array, since the elements after it move) are known unchanged without a
 * look at their value; the others are compared as after any change.
 * Thread-safety: only the thread the store calls the reducer on.
 * Errors (the status is returned at once; the failures marked * also fail
 * the reducer's call, as ts_reducer_fail would, so that a patch that was
 * refused is never taken for "unchanged": the dispatch fails with
 * TS_E_REDUCER and a message that begins "the reducer for "KEY" failed for
 * "TYPE": ts_reducer_patch: "):
 * - TS_E_JSON*: `patch_json` is not valid JSON;
 * - TS_E_ARGUMENT*: `patch_json` is NULL, or valid JSON that is not an array;
 * - TS_E_MISUSE*: called during the init call of a reducer, which has no
 *   slice to patch (slice_json is NULL: return the first value);
 * - TS_E_NOMEM*: no memory to copy the patch;
 * - TS_E_MISUSE: called outside a reducer (on a thread where no store is
 *   calling a reducer: from a middleware, a listener, or after the reducer
 *   returned); nothing fails.
 * After ts_reducer_fail in the same reducer call it records nothing and
 * returns TS_OK (the failure holds). */
TS_API ts_status ts_reducer_patch(const char *patch_json);

/* Called by a reducer, while the store is calling it: the identity of the
 * slice it was given, in *out. Two calls that were given the same id were
 * given identical text; an id is never given to another slice (ids are not
 * reused while the process runs, and no slice has id 0). A reducer that
 * keeps something it derived from its slice (a parsed copy, as the Python
 * package keeps the slice as Python values) can tell from the id whether
 * its slice changed since, without comparing texts (a pointer comparison
 * cannot: a freed slice's memory may hold the next one). The init call
 * (slice_json NULL) reads 0.
 * Errors: TS_E_ARGUMENT (out is NULL), TS_E_MISUSE (called outside a
 * reducer: on a thread where no store is calling a reducer); last error set,
 * *out untouched. */
TS_API ts_status ts_reducer_slice_id(uint64_t *out);

/* Called by a reducer, while the store is calling it: the id that the slice
 * made from this call's answer will have (as ts_reducer_slice_id will read it
 * in the reducer's next call), in *out, so that a reducer can keep what it
 * derived from its answer (a parsed value) and know it current then. The
 * id is reserved by the first call of this during a reducer call and stays
 * the same for that call. It is the new slice's id if the store applies the
 * answer (new text, or a patch that changes the slice); if nothing changes
 * (NULL, a patch that changes nothing) or the dispatch fails, no slice gets
 * it and it is never given to another, so a reducer that sees neither its
 * old id nor this one knows the slice changed otherwise (another reducer of
 * the key after a replace, ts_store_replace_state...).
 * Errors: TS_E_ARGUMENT (out is NULL), TS_E_MISUSE (outside a reducer); last
 * error set, *out untouched. */
TS_API ts_status ts_reducer_answer_id(uint64_t *out);

/* Adds the reducer that owns the top-level key `key`. Reducers run in the
 * order they were added. If the state has no `key` yet, the reducer is called
 * at once with slice_json NULL and the action {"type": "@@turnstate/init"} and
 * must return the slice's first value (listeners are not called for that).
 * Errors: TS_E_ARGUMENT (NULL store, key or fn; key already has a reducer;
 * key not valid UTF-8), TS_E_REDUCER (the init call returned NULL or invalid
 * JSON, or called ts_reducer_fail; nothing is added), TS_E_REENTRANT (called
 * from inside a reducer). */
TS_API ts_status ts_store_add_reducer(ts_store *store, const char *key, ts_reducer_fn fn, void *ctx);

/* Replaces the reducer that owns `key` with `fn` and `ctx` (hot reload), in
 * the same place in the order, keeping the state (the slice is not
 * re-initialized), then dispatches the action {"type": "@@turnstate/replace"}
 * (TS_REPLACE_ACTION_TYPE) through the middleware to every reducer, the new
 * one included, and the listeners: Redux's replaceReducer and its
 * "@@redux/REPLACE". One step: no dispatch from another thread runs between
 * the swap and that action. Atomic: if the replace action fails before the
 * state changed (a middleware refuses it, a reducer fails on it), the old
 * reducer is put back and the status is that failure; a middleware that
 * swallows the action does not undo the swap. Once this returns TS_OK (from
 * outside the store's callbacks), the old `fn` is not called again, and its
 * ctx may be freed. The new reducer is called for every action (whatever
 * the old one named with ts_store_add_reducer_for; ts_store_replace_reducer_for
 * gives it a filter).
 * Thread-safety: any thread; waits for dispatches under way on others.
 * Errors: TS_E_ARGUMENT (NULL store, key or fn; key not valid UTF-8),
 * TS_E_NOT_FOUND (key has no reducer: add it with ts_store_add_reducer),
 * TS_E_REENTRANT (called from inside a reducer), TS_E_STORE_GONE, or the
 * replace action's failure (TS_E_REDUCER, a middleware's status). */
TS_API ts_status ts_store_replace_reducer(ts_store *store, const char *key, ts_reducer_fn fn, void *ctx);

/* Adds the reducer that owns `key`, as ts_store_add_reducer, but called
 * only for the action types it names (Redux Toolkit's case reducers).
 * `types` is an array of patterns ended by NULL, each of them either
 * - an action type, matched byte for byte ("todos/add"), or
 * - a prefix pattern: a prefix that ends in "/", then "*" (in C, the string
 *   "todos/edit/" "*"; this comment cannot spell it in one piece), which
 *   matches every type that starts with the prefix and has at least one
 *   byte more ("todos/edit/title", "todos/edit/x/y"; not "todos/edit" nor
 *   "todos/edit/").
 * The store's own actions, whose types start with "@@turnstate/" (the init
 * call, TS_REPLACE_ACTION_TYPE), reach the reducer whatever it names. For
 * any other action, a reducer whose patterns do not match its type is not
 * called and its slice stays as it is, as if it had returned NULL. The type
 * matched is that of the action that reaches the reducers, after the
 * middleware: a middleware that passes on another action to `next` (a
 * rewritten type) has that one matched. Matching costs one hash of the type
 * and one comparison per prefix pattern, however big the slice (the
 * patterns are checked and hashed here, once). NULL `types`, or an array
 * whose first element is NULL, means every action, as ts_store_add_reducer.
 * The patterns are copied: the array may be freed when this returns.
 * Thread-safety, order and the init call: as ts_store_add_reducer.
 * Errors: as ts_store_add_reducer, and TS_E_ARGUMENT for a pattern that is
 * empty, not valid UTF-8, or has a "*" anywhere but as its last character
 * right after a "/" (the message names its index in `types`); TS_E_NOMEM. */
TS_API ts_status ts_store_add_reducer_for(ts_store *store, const char *key, const char *const *types,
                                          ts_reducer_fn fn, void *ctx);

/* Replaces the reducer that owns `key`, as ts_store_replace_reducer, with
 * one called only for `types` (patterns as in ts_store_add_reducer_for; NULL
 * or an empty array: every action). The filter belongs to the new reducer:
 * ts_store_replace_reducer gives its new reducer every action, whatever the
 * old one named, and this one sets the new filter whatever the old one had.
 * The replace action that follows ("@@turnstate/replace") reaches the new
 * reducer either way. If that action fails, the old reducer comes back with
 * its old filter.
 * Thread-safety: as ts_store_replace_reducer.
 * Errors: as ts_store_replace_reducer, and the pattern errors of
 * ts_store_add_reducer_for (TS_E_ARGUMENT; nothing is replaced). */
TS_API ts_status ts_store_replace_reducer_for(ts_store *store, const char *key, const char *const *types,
                                              ts_reducer_fn fn, void *ctx);

/* Removes the reducer that owns `key`. Its slice stays in the state,
 * unchanged from then on (ts_store_add_reducer can give the key a reducer
 * again; it finds the slice and makes no init call). Then dispatches
 * {"type": "@@turnstate/replace"} to the remaining reducers, as
 * ts_store_replace_reducer does, with the same rules: one step, atomic (the
 * reducer is put back if that action fails before the state changed).
 * Once this returns TS_OK (from outside the store's callbacks) the removed
 * `fn` is not called again, and its ctx may be freed.
 * Thread-safety: any thread; waits for dispatches under way on others.
 * Errors: TS_E_ARGUMENT (NULL store or key; key not valid UTF-8),
 * TS_E_NOT_FOUND (key has no reducer), TS_E_REENTRANT (called from inside a
 * reducer), TS_E_STORE_GONE, or the replace action's failure. */
TS_API ts_status ts_store_remove_reducer(ts_store *store, const char *key);

/* The "type" of the action that ts_store_replace_reducer and
 * ts_store_remove_reducer dispatch. */
#define TS_REPLACE_ACTION_TYPE "@@turnstate/replace"

/* ---- Dispatching -------------------------------------------------------- */

/* Dispatches `action_json`, a tagged action {"type": "<non-empty string>",
 * "payload": <any JSON, optional>, ...other keys allowed}, through the
 * middleware to the reducers, then calls the listeners.
 * Atomic: if the action is invalid, a middleware refuses it (before passing
 * it on), or any reducer fails, the state is exactly what it was and no
 * listener is called. (A middleware that fails after its `next` succeeded,
 * such as a journal that cannot write, reports its status although the
 * action was applied.)
 * Errors: TS_E_ARGUMENT (NULL store or action), TS_E_JSON (also for an
 * object with a key twice anywhere in the action, "type" and "payload"
 * included), TS_E_NOT_ACTION, TS_E_REDUCER (a reducer called
 * ts_reducer_fail or returned invalid JSON), TS_E_REENTRANT (called from inside a reducer), or whatever
 * status a middleware returned (TS_E_REJECTED by convention). An action that a
 * middleware swallowed (did not pass on) returns TS_OK. */
TS_API ts_status ts_store_dispatch(ts_store *store, const char *action_json);

/* Reads the state: the whole state when json_pointer is NULL or "", else the
 * value at that RFC 6901 JSON Pointer ("/todos/0/title"). On success
 * *out_json is new minified JSON text that the caller frees with ts_free().
 * Reading one small value costs the same however large the rest of the state
 * is; the whole state is rebuilt only after it changed.
 * Errors: TS_E_ARGUMENT (NULL store or out_json, malformed pointer),
 * TS_E_NOT_FOUND (no value there; the message names the missing token),
 * TS_E_REENTRANT (called from inside a reducer). */
TS_API ts_status ts_store_get_state(ts_store *store, const char *json_pointer, char **out_json);

/* Dispatches the action {"type": TYPE, "payload": PAYLOAD} given as its
 * parts, exactly as ts_store_dispatch would dispatch that text, without the
 * cost of parsing an action text (for bindings that hold the type and the
 * payload apart, such as the Python package). `type` is the type itself,
 * not escaped ("todos/add"): non-empty UTF-8. `payload_json` is the
 * payload's JSON text, checked (a key twice at any depth is invalid, as
 * everywhere) and minified; NULL dispatches an action without "payload"
 * ("null" gives "payload": null). Reducers and middleware get the same
 * ts_action as for the text: action->type the type, action->payload the
 * minified payload, action->json the minified text
 * {"type":"...","payload":...} made from them.
 * Errors: as ts_store_dispatch: TS_E_ARGUMENT (NULL store or type),
 * TS_E_NOT_ACTION (an empty type), TS_E_JSON (a type that is not UTF-8, a
 * payload that is not valid JSON), TS_E_REDUCER, TS_E_REENTRANT, or a
 * middleware's status. */
TS_API ts_status ts_store_dispatch_parts(ts_store *store, const char *type, const char *payload_json);

/* ---- Listeners ---------------------------------------------------------- */

/* A listener; read the state with ts_store_get_state() if you need it. It
 * runs on the dispatching thread. It may dispatch (the nested dispatch runs
 * at once), subscribe and unsubscribe. */
typedef void (*ts_listener_fn)(ts_store *store, void *ctx);

/* Subscribes `fn`. With json_pointer NULL it runs after every dispatch that
 * reached the reducers; with a pointer ("" is the whole state), only when the
 * value there changed since the last time this listener was called (or since
 * it subscribed); a value that appears or disappears counts as a change.
 * Listeners run in the order they subscribed; the list is fixed when a
 * dispatch starts its notifications: one added during a dispatch is first
 * called by the next one, one removed during a dispatch is still called by
 * it. With a pointer, if the library has no memory to look at the value
 * after a dispatch, it calls the listener as if the value changed (it never
 * skips a change). *out_token identifies the subscription; tokens are never
 * reused. It is written before the listener can first run, so a listener
 * that another thread's dispatch calls at once can already read it (and
 * unsubscribe).
 * Errors: TS_E_ARGUMENT (NULL store, fn or out_token; malformed pointer),
 * TS_E_REENTRANT (called from inside a reducer). */
TS_API ts_status ts_store_subscribe(ts_store *store, const char *json_pointer, ts_listener_fn fn, void *ctx,
                                    uint64_t *out_token);

/* Ends the subscription `token`. Idempotent: an unknown or already ended
 * token is not an error. Errors: TS_E_ARGUMENT (NULL store), TS_E_REENTRANT. */
TS_API ts_status ts_store_unsubscribe(ts_store *store, uint64_t token);

/* ---- Middleware --------------------------------------------------------- */

/* Passes an action on to the rest of the chain (and at its end to the
 * reducers). Pass the action you received (action->json) or new tagged JSON
 * text to change it; passing action->json itself costs no new parse. Call it
 * at most once per action, and only during the run() it was given to (on
 * that thread); not calling it swallows the action. Returns the status of
 * the rest of the dispatch. A second call for the same action returns
 * TS_E_MISUSE and changes nothing. Do not keep `next`: to act later,
 * dispatch through the table. A kept `next` called when no run() of that
 * middleware is under way on the calling thread (after the dispatch, from a
 * listener of a later one, from another thread: that call first waits for
 * the dispatch under way to end) returns TS_E_MISUSE and changes nothing.
 * But a kept `next` called during a later run() of the same middleware on
 * the same thread is not refused: `next` is one function per place in the
 * chain (the same pointer in every run() while the chain is unchanged), so
 * it cannot be told from that run's own. It acts as that run's `next` and
 * uses up that run's one call. Text that is not a tagged action is refused
 * (TS_E_JSON, TS_E_NOT_ACTION) without using up the one call. After the
 * store is destroyed a kept `next` must not be called at all (it is freed
 * with the store). */
typedef ts_status (*ts_next_fn)(const char *action_json);

/* The store as middleware sees it: plain C functions bound to one store.
 * Check struct_size before using a field that a later version added.
 * The table may be kept and used from any thread until the store is
 * destroyed: once ts_store_destroy has begun, its functions return
 * TS_E_STORE_GONE (see ts_store_destroy); after ts_store_destroy returned
 * the table is freed and must not be used. */
typedef struct ts_store_api {
    /* sizeof(ts_store_api) of the library that made the table. */
    uint32_t struct_size;
    /* Dispatches from the top of the middleware chain; as ts_store_dispatch. */
    ts_status (*dispatch)(const char *action_json);
    /* Reads the state; as ts_store_get_state. Free *out_json with `free` below. */
    ts_status (*get_state)(const char *json_pointer, char **out_json);
    /* Frees memory that get_state returned; as ts_free. */
    void (*free)(void *pointer);
    /* Records `message` as the reason for refusing the current action and
     * returns `status`, so that a middleware can write
     *     return store->fail(TS_E_REJECTED, "\"title\" is required");
     * The dispatcher then reads the message in ts_last_error(). */
    ts_status (*fail)(ts_status status, const char *message);
    /* Replaces the whole state with `state_json` (a JSON object) without
     * going through middleware or reducers, then calls the listeners: for
     * restoring a saved state (the journal plugin). A key that has a reducer
     * but is missing from the new state gets its first value from that
     * reducer, as in ts_store_add_reducer. Atomic: on failure the state is
     * unchanged. Errors: TS_E_ARGUMENT, TS_E_JSON (also a key twice at any
     * depth), TS_E_REDUCER, TS_E_REENTRANT (from inside a reducer). */
    ts_status (*replace_state)(const char *state_json);
    /* The name of a status, as ts_status_name: for plugins, which do not link
     * the library. Static text: do not free. */
    const char *(*status_name)(ts_status status);
    /* Since 0.2.0 (check struct_size first). Runs the reducers and then the
     * listeners for `action_json` (tagged JSON, as for dispatch), as a
     * dispatch that skips every middleware: for replaying recorded actions
     * (time travel, replication). Atomic like a dispatch: if a reducer
     * fails the state is unchanged. Errors: as ts_store_dispatch without the
     * middleware's (TS_E_ARGUMENT, TS_E_JSON, TS_E_NOT_ACTION, TS_E_REDUCER,
     * TS_E_UNKNOWN_ACTION on a typed Swift store), TS_E_REENTRANT (from
     * inside a reducer), TS_E_STORE_GONE (on a closed store). */
    ts_status (*apply)(const char *action_json);
    /* Runs fn(ctx) on the calling thread with the store held, as one step that
     * no dispatch on another thread interleaves with, and returns what fn
     * returns. For a plugin's own thread that must apply work in order with
     * the store's dispatches (replicate.so applies entries read from a log).
     * fn may call the other functions of this table (they nest, as calls from
     * middleware do); it must not wait for another thread that uses the
     * store. Errors (fn not called): TS_E_ARGUMENT (fn is NULL),
     * TS_E_STORE_GONE (the store is closing), TS_E_REENTRANT (from inside a
     * reducer). Since 0.2.0, after apply (check struct_size first). */
    ts_status (*exclusive)(ts_status (*fn)(void *ctx), void *ctx);
    /* Since 0.2.0, after exclusive (check struct_size first). Only in the
     * table a plugin's create() and run() get, which is that plugin's own:
     * dispatches `action_json` from the plugin's place in the chain, that is
     * through the middleware after the plugin, then the reducers and the
     * listeners (what `next` would do, but usable outside run(), from any
     * thread, any number of times). For a plugin that applies actions on
     * behalf of others (replicate.so applies the entries of other processes,
     * so that middleware after it runs on every replica). Before the plugin
     * has joined the chain (in create()) nothing comes after it: the reducers
     * and listeners. Errors: as ts_store_dispatch; TS_E_MISUSE in the table
     * of middleware added with ts_store_add_middleware (it has no place of
     * its own) and once the plugin is no longer in the chain. */
    ts_status (*dispatch_after)(const char *action_json);
    /* Since 0.2.0, after dispatch_after (check struct_size first). Writes
     * the version of the state this store's program makes
     * (ts_store_set_version; 0 when none was declared) to *out: what a
     * plugin that saves state records with it (the journal, replicate).
     * Errors: TS_E_ARGUMENT (out is NULL), TS_E_REENTRANT (from inside a
     * reducer), TS_E_STORE_GONE. */
    ts_status (*state_version)(uint32_t *out);
    /* Since 0.2.0, after state_version (check struct_size first). As
     * replace_state, for state saved at `version`: migrated to the store's
     * version first, as ts_store_replace_state_from does (its rules and
     * errors). For a plugin that brings saved state in (the journal,
     * replicate, the inspector's import). */
    ts_status (*replace_state_from)(const char *state_json, uint32_t version);
    /* Since 0.2.0, after replace_state_from (check struct_size first). The
     * message of the last failure on the calling thread, as ts_last_error:
     * for a plugin, which does not link the library, to pass on why a call
     * through this table failed ("migration 2->3 failed: ..."). Static
     * text of the library's: do not free; valid until the next failing call
     * on the same thread. */
    const char *(*last_error)(void);
    /* Added after 0.2.0, after last_error (check struct_size first). Only in
     * the table a plugin's create() and run() get, and only from inside that
     * plugin's run(): runs fn(ctx) on the calling thread with the store let
     * go, then takes the store again and returns what fn returns. For a
     * run() that waits (on the network: replicate.so's ordered mode waits
     * for the log's acknowledgement), so that other threads' dispatches,
     * reads and exclusive steps go on meanwhile instead of waiting too.
     * While fn runs, other dispatches may change the state, and may run
     * this plugin's run() on their threads; when unlocked returns the run()
     * goes on holding the store, with the state as it is then, and may call
     * `next` (once, as always). fn must not use the store's functions of
     * this run (next) nor destroy the store; it may call the table's other
     * functions as any thread may (they take the store as such a call does).
     * ts_store_destroy and ts_store_remove_middleware (called from outside
     * the store's callbacks) wait until every run() that let go of the store
     * has taken it again and finished, so fn must end in bounded time.
     * Refused, with fn not called and the store kept (the call's status and
     * ts_last_error() say why):
     *   TS_E_MISUSE  the calling thread holds the store more than once or in
     *                a step that must not be split: the dispatch is nested
     *                (made from a listener, from exclusive's fn, from another
     *                middleware's run() or a plugin placed after another C
     *                middleware, whose `next` holds the store again), or is
     *                a replaced reducer's announcement; or the call is not
     *                from inside this plugin's run() (from create(), from
     *                another thread, from the table of middleware added with
     *                ts_store_add_middleware);
     *   TS_E_REENTRANT from inside a reducer;
     *   TS_E_ARGUMENT fn is NULL;
     *   TS_E_STORE_GONE the store was destroyed.
     * A plugin that is refused waits with the store held instead (what it
     * did before this call existed). */
    ts_status (*unlocked)(ts_status (*fn)(void *ctx), void *ctx);
    /* Added after 0.2.0, after unlocked (check struct_size first). Only in
     * the table a plugin's create() and run() get. Writes to *out_name the
     * name (its ts_plugin name: "journal") of the plugin whose create() is
     * under way on this store, when called from inside that create(): from
     * create() itself or from the middleware and listeners its dispatches
     * reach (a plugin is loaded with the store held, and later plugins go
     * after the plugins already in the chain, so a middleware's run() that
     * sees a name is handling an action that a plugin loaded after it
     * dispatched while being created). NULL otherwise, and from another
     * thread, which waits for the store until the create() is over. The text
     * is the plugin's (do not free); valid while that create() runs. For a
     * middleware that must treat such actions apart (replicate.so refuses
     * the records a journal loaded after it replays: they are in its log
     * already). Errors: TS_E_ARGUMENT (out_name is NULL), TS_E_REENTRANT
     * (from inside a reducer), TS_E_STORE_GONE; TS_E_MISUSE in the table of
     * middleware added with ts_store_add_middleware. */
    ts_status (*loading)(const char **out_name);
} ts_store_api;

/* A middleware: the shape of Swift's run(store:next:action:). Return TS_OK to
 * accept (whether or not you called next: return next's status to report the
 * rest of the dispatch), or a negative status (TS_E_REJECTED by convention)
 * to refuse the action; that status is what the dispatcher gets. The table,
 * `next` and the action are valid only during the call, except that `store`
 * (the table) may be kept and used from other threads until the store is
 * destroyed (see ts_store_api and ts_store_destroy for when its functions
 * answer TS_E_STORE_GONE and when it is freed). */
typedef ts_status (*ts_middleware_fn)(const ts_store_api *store, ts_next_fn next, const ts_action *action,
                                      void *ctx);

/* Appends a middleware to the end of the chain: the first added runs first.
 * `name` (for messages) is copied. Errors: TS_E_ARGUMENT (NULL store, name or
 * fn), TS_E_NOMEM (no executable memory for its closures), TS_E_REENTRANT. */
TS_API ts_status ts_store_add_middleware(ts_store *store, const char *name, ts_middleware_fn fn, void *ctx);

/* Removes the middleware that ts_store_add_middleware added last under
 * `name` (names are compared byte for byte; when several were added under
 * one name, the newest goes first). Plugins' middleware is not removed this
 * way. Dispatches that start after this do not run it; one under way on
 * this thread (this called from inside a middleware or listener) finishes
 * with the chain it started with; dispatches on other threads are waited
 * for. Once this returns TS_OK from outside the store's callbacks, its `fn`
 * is not called again, and its ctx may be freed.
 * Thread-safety: any thread.
 * Errors: TS_E_ARGUMENT (NULL store or name), TS_E_NOT_FOUND (no middleware
 * of that name, or it was removed already), TS_E_REENTRANT (called from
 * inside a reducer), TS_E_STORE_GONE. */
TS_API ts_status ts_store_remove_middleware(ts_store *store, const char *name);

/* ---- Plugins ------------------------------------------------------------ */

/* Loads the middleware plugin at `path` (a shared object written against
 * turnstate_plugin.h) and appends it to the end of the middleware chain, as
 * ts_store_add_middleware does: a plugin runs after the middleware and
 * plugins added before it and before those added after it. `config_json` is
 * the plugin's configuration (NULL means {}). Add reducers before loading a
 * plugin that restores state (the journal plugin).
 * The file must be trusted: with every symbolic link resolved (realpath), it
 * must be a regular file, and it and every folder from it up to "/" must
 * belong to root or to the process's effective user and must not be writable
 * by group or others. The one exception: a folder that is sticky (S_ISVTX)
 * and owned by root, like /tmp (mode 1777), may be writable by others (they
 * cannot rename or remove what is not theirs; the file itself must still
 * pass). The file is opened once (O_NOFOLLOW on its real path), checked
 * through that descriptor (fstat), and the descriptor's file is what is
 * loaded (dlopen of /proc/self/fd/N; where /proc/self/fd is missing, of the
 * real path once it is seen to be the same st_dev and st_ino), so a path
 * changed after the check cannot slip in another file. A file loaded before
 * (same st_dev and st_ino) is not dlopen()ed again; loading it again makes
 * another instance of it.
 * Refused, with the store unchanged: a file that is missing (TS_E_NOT_FOUND;
 * for a relative path the message says where it looked); a file that is not
 * trusted (TS_E_PLUGIN; the message names the file or folder at fault, its
 * owner or mode, and the command that fixes it, e.g. chmod go-w FOLDER); a
 * file that cannot be read (TS_E_IO); a file that is not a shared object
 * (TS_E_PLUGIN; the message gives the path given, the real path if it
 * differs, and dlopen's reason), or that has no ts_plugin_entry symbol
 * (TS_E_PLUGIN); a plugin built for an ABI this library does not
 * speak (TS_E_ABI, the message names both versions); config text that is
 * not valid JSON, not UTF-8, or has an object with a key twice (TS_E_JSON;
 * the config is checked before the file is opened, so such a load runs no
 * plugin code); a plugin whose create() failed (TS_E_PLUGIN, with the
 * plugin's own message). "Unchanged" is the state and the chain: a plugin
 * whose create() restored a state (the journal) has notified the listeners
 * of it, and when the load then fails they are notified again of the state
 * put back.
 * The plugin's create() runs with the store held (dispatches from other
 * threads wait), so no action slips past a plugin that is being added.
 * Plugins are never unloaded (dlclose): their destroy() runs in
 * ts_store_destroy after the store closed, on the calling thread, in reverse
 * order of loading (called from inside one of the store's callbacks, when
 * that call returns); see ts_store_destroy. */
TS_API ts_status ts_store_load_plugin(ts_store *store, const char *path, const char *config_json);

/* Loads every "*.so" file in the folder `dir`, in byte order of their names
 * (10-guard.so before 20-logger.so), each with its configuration from the
 * file NAME.json beside it when there is one (10-guard.json for
 * 10-guard.so). All or nothing: if one plugin is refused, none of the folder
 * is added, and the status and message are those of the refused one (the
 * message names its file). The folder must be trusted as a plugin file is
 * (its real path, it and every folder above it; TS_E_PLUGIN otherwise), and
 * so must each NAME.json, which is opened once and read from the descriptor
 * that was checked: whoever could write a config could change the plugin's
 * policy. A NAME.json that is missing means {}; one that is a symbolic link
 * to nothing is TS_E_NOT_FOUND; one that is not valid UTF-8 or not JSON is
 * TS_E_JSON.
 * Errors: as ts_store_load_plugin, and TS_E_NOT_FOUND / TS_E_IO for the
 * folder itself. */
TS_API ts_status ts_store_load_plugins(ts_store *store, const char *dir);

/* ---- Reading JSON ------------------------------------------------------- */

/* Typed getters by JSON Pointer, so that a reducer or middleware reads its
 * slice and its action's payload without a parser of its own:
 *
 *     int64_t id;
 *     if (ts_json_get_int(action->payload, "/id", &id) != TS_OK) { ... }
 *
 *     ts_json items, item;
 *     size_t cursor = 0;
 *     ts_json_at(slice_json, "/items", &items);
 *     while (ts_json_next(&items, &cursor, NULL, &item) == TS_OK) { ... }
 *
 * A ts_json is a value inside a JSON text: `text` points at its first byte
 * in that text (no copy is made) and `length` is the length of its JSON
 * text there (a string's includes its quotes; text[length] is not a NUL).
 * It is valid as long as the text it points into, unchanged: for the
 * texts a callback gets, during the callback. It is a plain struct: copy it
 * freely. The fields after `kind` are the library's; do not change them.
 *
 * Which texts, and what it costs. `json` may be any NUL-terminated JSON
 * text; ts_json_at and the ts_json_get_* shortcuts then validate it fully
 * and strictly first, as everywhere (O(its size); TS_E_JSON). But the
 * texts the library hands to the calling thread's callbacks under way are
 * known valid, and are recognised (by their address, not their content)
 * and read without validation:
 * - slice_json of a reducer that the store is calling: read through the
 *   index the store keeps of the slice (made on the first look-up of a
 *   slice, in one pass over it, and kept while the slice is unchanged), so
 *   each later look-up costs O(tokens of the pointer x log(size)), however
 *   large the slice (a slice whose index would take more memory than its
 *   text is read by stepping through it instead);
 * - action->payload of a reducer or middleware call under way: minified,
 *   read by stepping over the values before the one named;
 * - action->json of such a call: read as the payload when it has no white
 *   space, else through a minified copy, as any text with white space.
 * A pointer into such a text (slice_json + 1) is not recognised. Answers
 * never depend on recognition: the same text elsewhere gives the same
 * values, statuses and messages. On text with white space between its
 * tokens, a value's `text` keeps that white space, and ts_json_find and
 * ts_json_count on such a value cost its size each call.
 *
 * Errors (each sets ts_last_error(), naming the function and, for a
 * missing value, the token that was not found and the path up to it, as
 * ts_store_get_state does):
 * - TS_E_ARGUMENT: a NULL argument, a malformed JSON Pointer; a value of
 *   another kind than the getter reads ("ts_json_int: expected an integer,
 *   found string"); a number outside the range of the C type (an integer
 *   beyond int64_t or uint64_t, a negative one for uint64_t, a number too
 *   large for a double: never a wrapped value, a cut one or an infinity);
 * - TS_E_NOT_FOUND: no value at the pointer (and at the end of ts_json_next);
 * - TS_E_JSON: `json` is not valid JSON (not for recognised texts);
 * - TS_E_NOMEM.
 * On failure nothing is written to the output parameters. Any thread may
 * call any of them; a ts_json may be read from several threads at once. */

/* The kinds of JSON values (ts_json.kind). */
#define TS_JSON_NULL   0
#define TS_JSON_FALSE  1
#define TS_JSON_TRUE   2
#define TS_JSON_NUMBER 3
#define TS_JSON_STRING 4
#define TS_JSON_ARRAY  5
#define TS_JSON_OBJECT 6

typedef struct ts_json {
    const char *text; /* the value's first byte in the text it was found in */
    size_t length;    /* the length of its JSON text */
    int32_t kind;     /* TS_JSON_NULL ... TS_JSON_OBJECT */
    /* The library's own, for look-ups below this value: do not change. */
    const void *doc_;
    size_t base_;
    size_t reserved_[2];
} ts_json;

/* Finds the value at the RFC 6901 JSON Pointer `pointer` ("" or NULL: the
 * whole text; "/items/0/title") in the JSON text `json` and writes it to
 * *out. Array indices are decimal without leading zeros; "-" names nothing.
 * Errors: TS_E_ARGUMENT (json or out NULL, malformed pointer),
 * TS_E_NOT_FOUND, TS_E_JSON, TS_E_NOMEM. */
TS_API ts_status ts_json_at(const char *json, const char *pointer, ts_json *out);

/* As ts_json_at, with `pointer` relative to `value` (a value that one of
 * these functions wrote): "" or NULL is `value` itself. The text is not
 * validated again. Messages name paths relative to `value`. */
TS_API ts_status ts_json_find(const ts_json *value, const char *pointer, ts_json *out);

/* The integer `value` holds. A number is an integer when its exact decimal
 * value is one: 42, -0, 1.0, 1e2 and 2.50E1 are (42, 0, 1, 100, 25); 1.5
 * and 1e-1 are not (TS_E_ARGUMENT). Out of the range of int64_t:
 * TS_E_ARGUMENT. */
TS_API ts_status ts_json_int(const ts_json *value, int64_t *out);

/* As ts_json_int, for uint64_t (up to 18446744073709551615; a negative
 * integer other than -0 is out of range). */
TS_API ts_status ts_json_uint(const ts_json *value, uint64_t *out);

/* The double nearest to the number `value` holds (correctly rounded,
 * whatever the C locale). A number too large for a double is
 * TS_E_ARGUMENT (never an infinity); one too small rounds to a subnormal or
 * to a (signed) zero. */
TS_API ts_status ts_json_double(const ts_json *value, double *out);

/* 1 for true, 0 for false; another kind is TS_E_ARGUMENT. */
TS_API ts_status ts_json_bool(const ts_json *value, int *out);

/* 1 if `value` is JSON null, 0 otherwise (also for a NULL `value`).
 * Sets no error. */
TS_API int ts_json_is_null(const ts_json *value);

/* The content of the string `value`, unescaped, UTF-8, with its byte length
 * in *out_len; it is NOT NUL-terminated when it points into the text, and
 * may hold NUL bytes (from \u0000). When the string has no escapes, *out
 * points into the JSON text (no copy: valid as long as the text). When it
 * has escapes, *out is an unescaped copy that the library keeps for the
 * calling thread until its next call of ts_json_string or
 * ts_json_get_string (then NUL-terminated too); copy it to keep it longer.
 * Do not free it. out_len may be NULL. Another kind is TS_E_ARGUMENT. */
TS_API ts_status ts_json_string(const ts_json *value, const char **out, size_t *out_len);

/* The number of elements of an array or members of an object. Another kind
 * is TS_E_ARGUMENT. O(log size) for a recognised slice; otherwise one pass
 * over the container's text. */
TS_API ts_status ts_json_count(const ts_json *value, size_t *out);

/* Iterates the elements of an array or the members of an object, in order:
 * set *cursor to 0, then call until it returns TS_E_NOT_FOUND (after the
 * last child; not an error to report). Each TS_OK writes the next child to
 * *value and, for an object, its key (a TS_JSON_STRING value; read it with
 * ts_json_string) to *key; for an array *key is set to {NULL, 0,
 * TS_JSON_NULL}. key may be NULL. *cursor is an opaque position: pass back
 * what the call before wrote; a cursor that cannot belong to the
 * container is TS_E_ARGUMENT. Each call costs the size of the child it
 * steps over. Another kind than array or object is TS_E_ARGUMENT. */
TS_API ts_status ts_json_next(const ts_json *container, size_t *cursor, ts_json *key, ts_json *value);

/* Shortcuts: ts_json_at(json, pointer), then the getter of that name. The
 * message names the pointer: "ts_json_get_int: the value at \"/id\":
 * expected an integer, found string". */
TS_API ts_status ts_json_get_int(const char *json, const char *pointer, int64_t *out);
TS_API ts_status ts_json_get_uint(const char *json, const char *pointer, uint64_t *out);
TS_API ts_status ts_json_get_double(const char *json, const char *pointer, double *out);
TS_API ts_status ts_json_get_bool(const char *json, const char *pointer, int *out);
TS_API ts_status ts_json_get_string(const char *json, const char *pointer, const char **out, size_t *out_len);

/* ---- Patch reducers ----------------------------------------------------- */

/* A reducer that reads its slice with the getters above instead of as
 * text, so that the store never has to make the text of a big slice for
 * it. `slice` is the slice as a ts_json, valid during the call (NULL for
 * the init call, which must return the slice's first value as text, as
 * for ts_reducer_fn). It answers as a ts_reducer_fn does: NULL
 * ("unchanged"), NULL after ts_reducer_patch() (a change: what keeps a big
 * slice cheap), the new slice as text (ts_alloc, ts_strdup or malloc), or
 * ts_reducer_fail(). The same rules as for ts_reducer_fn: pure, called on
 * the dispatching thread, all or nothing.
 *
 *     static char *todos(const ts_json *slice, const ts_action *action, void *ctx) {
 *         if (slice == NULL) return ts_strdup("{\"items\":[]}");
 *         ts_json done;
 *         int64_t id;
 *         char pointer[64], patch[128];
 *         if (ts_json_get_int(action->payload, "/id", &id) != TS_OK) return NULL;
 *         snprintf(pointer, sizeof pointer, "/items/%lld/done", (long long)id);
 *         if (ts_json_find(slice, pointer, &done) != TS_OK) return NULL;
 *         snprintf(patch, sizeof patch, "[{\"op\":\"replace\",\"path\":\"%s\",\"value\":%s}]",
 *                  pointer, done.kind == TS_JSON_TRUE ? "false" : "true");
 *         ts_reducer_patch(patch);
 *         return NULL;
 *     }
 *
 * Big slices. A patch reducer's slice of 64 KiB or more is kept as a tree
 * of texts when its init call made it, and from the first patch of the
 * reducer that changes it (a ts_reducer_fn's patches keep its slice one
 * text, which it gets on every call anyway): each of its arrays and
 * objects of 4 KiB or more (objects
 * of at most 256 members) is split into its elements or members, and a
 * patch copies only the path to what it changes, so that toggling one item
 * of a 100,000-item list costs about what it costs in a 10-item one, and
 * so does appending. The text of such a slice is joined only when
 * something asks for it (ts_store_get_state of the slice or the state, a
 * reducer added with ts_store_add_reducer for it, a middleware, a plugin)
 * and is then kept until the slice changes.
 * A value of such a slice that is split (the slice itself, its big arrays
 * and objects) has `text` NULL, with `length` (the length of its JSON
 * text) and `kind` set: read it with ts_json_find (O(tokens x log size)),
 * ts_json_count (O(1)) and ts_json_next (O(log size) per child); the
 * getters of scalars answer TS_E_ARGUMENT for it as for any array or
 * object. Every other value (each element, member, or smaller container)
 * has its text, as from ts_json_at. Statuses and messages are those the
 * slice's text would give. A slice that is one text (one smaller than 64 KiB, one
 * with nothing to split, or one set another way that no patch of this
 * reducer changed since) has its text, and is read through the index the
 * store keeps of it, as slice_json is (see "Which texts" above). */
typedef char *(*ts_patch_reducer_fn)(const ts_json *slice, const ts_action *action, void *ctx);

/* Adds the patch reducer that owns the top-level key `key`, called for the
 * action types `types` names (as ts_store_add_reducer_for; NULL or an
 * empty array: every action). Otherwise as ts_store_add_reducer: the init
 * call (slice NULL, {"type": "@@turnstate/init"}) when the state has no
 * `key` yet, the order of reducers, its errors and thread-safety.
 * ts_store_replace_reducer and ts_store_replace_reducer_for replace it
 * with a ts_reducer_fn; ts_store_remove_reducer removes it. */
TS_API ts_status ts_store_add_patch_reducer(ts_store *store, const char *key, const char *const *types,
                                            ts_patch_reducer_fn fn, void *ctx);

/* ---- Versions of the state and migrations -------------------------------- */

/* Saved state outlives the program that saved it: a journal, a replicate
 * snapshot, an exported inspector session may be read by a newer program
 * whose reducers expect another shape. A store declares the version of the
 * state its reducers make (ts_store_set_version) and the migrations from
 * each older version (ts_store_add_migration), and every place that brings
 * saved state in migrates it first: ts_store_replace_state_from, and the
 * table's replace_state_from, which the journal, replicate and inspector
 * plugins use with the version they find recorded (docs/migrations.md).
 * The rules (one core: the Swift StateMigrations, for every face):
 * - Versions are integers from 0. A store that declared none is at version
 *   0, and state saved without a version (by a program that declared none,
 *   or before versions existed) is of version 0.
 * - A migration goes from one version to the next. State of version v below
 *   the store's version V runs the migrations from v, v+1, ..., V-1, in
 *   order, each on what the one before returned; state of version V runs
 *   none.
 * - State of a version newer than V (a downgrade) is refused: TS_E_ARGUMENT,
 *   "the state is of version 5, newer than this program's version 3: a
 *   downgrade is refused, nothing was loaded". No migration runs.
 * - A missing step is refused before any migration runs: TS_E_NOT_FOUND,
 *   "... there is no migration from version 2 to 3: nothing was loaded".
 * - A migration that fails (returns NULL) stops the chain: TS_E_REDUCER,
 *   "migration 2->3 failed: MESSAGE"; one that returns text that is not a
 *   JSON object: TS_E_JSON, "migration 2->3 failed: ...". The state is
 *   unchanged and no listener runs. */

/* A migration from version `from` to `from + 1` (ts_store_add_migration):
 * given the whole state of version `from` as minified JSON text (valid
 * during the call), it returns the state of version `from + 1`, a JSON
 * object, as text in memory that the store takes over and frees with free()
 * (ts_alloc, ts_strdup or malloc, as a reducer's result). To fail, return
 * NULL, and set *error_message to a message the store takes over and frees
 * (ts_strdup, or malloc), or leave it NULL ("it returned NULL (it gave no
 * reason)"). It runs on the thread that brings the state in, with the store
 * held, as a reducer: it must not call into the store (such a call returns
 * TS_E_REENTRANT). */
typedef char *(*ts_migration_fn)(const char *state_json, void *ctx, char **error_message);

/* Declares that the state this store's reducers make is of version
 * `version` (0 when never called). Call it, and add the migrations, before
 * loading a plugin that restores state (the journal): the plugin reads the
 * version when it is created. It may be changed at any time; what is
 * brought in later is migrated to the version of then.
 * Thread-safety: any thread. Errors: TS_E_ARGUMENT (NULL store),
 * TS_E_REENTRANT (from inside a reducer or migration), TS_E_STORE_GONE. */
TS_API ts_status ts_store_set_version(ts_store *store, uint32_t version);

/* Writes the version declared with ts_store_set_version (0 if none) to
 * *out. Errors: TS_E_ARGUMENT (NULL store or out), TS_E_REENTRANT,
 * TS_E_STORE_GONE. */
TS_API ts_status ts_store_get_version(ts_store *store, uint32_t *out);

/* Adds the migration from version `from_version` to `from_version + 1`,
 * called with `ctx`. Migrations may be added in any order, before or after
 * ts_store_set_version; which ones are needed is checked when state is
 * brought in. Errors: TS_E_ARGUMENT (NULL store or fn; a migration from
 * that version was added already; from_version is 4294967295),
 * TS_E_REENTRANT, TS_E_STORE_GONE. */
TS_API ts_status ts_store_add_migration(ts_store *store, uint32_t from_version, ts_migration_fn fn, void *ctx);

/* Replaces the whole state with `state_json` (a JSON object) saved at
 * `version`: migrated to the store's version by the rules above, then put
 * in place as the table's replace_state does (a key that has a reducer but
 * is missing gets its first value), then the listeners run. All or
 * nothing: on any failure the state is unchanged and no listener runs.
 * With `version` equal to the store's, no migration runs.
 * Errors: TS_E_ARGUMENT (NULL store or state_json; a downgrade),
 * TS_E_JSON (state_json or a migration's result is not a JSON object),
 * TS_E_NOT_FOUND (a missing step), TS_E_REDUCER (a migration failed; a
 * reducer's first value failed), TS_E_REENTRANT, TS_E_STORE_GONE. */
TS_API ts_status ts_store_replace_state_from(ts_store *store, const char *state_json, uint32_t version);

#ifdef __cplusplus
}
#endif

#endif /* TURNSTATE_H */
