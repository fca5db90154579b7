#include "turnstate_support.h"
#include "internal.h"

/* The public header, for its version macros only (it is not part of this
 * module's interface: Swift imports it through CTurnstate). */
#include "../../Include/turnstate.h"

#include <ffi.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tsi_closure {
    ffi_closure *closure;
    ffi_cif cif;
    ffi_type *arguments[2];
    void *handler;
    void *userdata;
};

static void call_string(ffi_cif *cif, void *result, void **arguments, void *data) {
    (void)cif;
    tsi_closure *c = data;
    int32_t status = ((tsi_string_handler)c->handler)(c->userdata, *(const char **)arguments[0]);
    *(ffi_sarg *)result = status; /* integral results are widened to ffi_arg */
}

static void call_string_out(ffi_cif *cif, void *result, void **arguments, void *data) {
    (void)cif;
    tsi_closure *c = data;
    int32_t status = ((tsi_string_out_handler)c->handler)(c->userdata, *(const char **)arguments[0],
                                                          *(char ***)arguments[1]);
    *(ffi_sarg *)result = status;
}

static void call_exclusive(ffi_cif *cif, void *result, void **arguments, void *data) {
    (void)cif;
    tsi_closure *c = data;
    int32_t status = ((tsi_exclusive_handler)c->handler)(c->userdata, *(tsi_exclusive_fn *)arguments[0],
                                                         *(void **)arguments[1]);
    *(ffi_sarg *)result = status;
}

static void call_string_u32(ffi_cif *cif, void *result, void **arguments, void *data) {
    (void)cif;
    tsi_closure *c = data;
    int32_t status = ((tsi_string_u32_handler)c->handler)(c->userdata, *(const char **)arguments[0],
                                                          *(uint32_t *)arguments[1]);
    *(ffi_sarg *)result = status;
}

static tsi_closure *make(void *handler, void *userdata, unsigned argument_count,
                         void (*trampoline)(ffi_cif *, void *, void **, void *), void **code) {
    tsi_closure *c = calloc(1, sizeof *c);
    if (c == NULL) return NULL;
    c->handler = handler;
    c->userdata = userdata;
    c->arguments[0] = &ffi_type_pointer;
    c->arguments[1] = trampoline == call_string_u32 ? &ffi_type_uint32 : &ffi_type_pointer;
    c->closure = ffi_closure_alloc(sizeof(ffi_closure), code);
    if (c->closure == NULL) {
        free(c);
        return NULL;
    }
    if (ffi_prep_cif(&c->cif, FFI_DEFAULT_ABI, argument_count, &ffi_type_sint32, c->arguments) != FFI_OK ||
        ffi_prep_closure_loc(c->closure, &c->cif, trampoline, c, *code) != FFI_OK) {
        ffi_closure_free(c->closure);
        free(c);
        return NULL;
    }
    return c;
}

tsi_closure *tsi_closure_string_u32(tsi_string_u32_handler handler, void *userdata, void **code) {
    tsi_closure *c = make((void *)handler, userdata, 2, call_string_u32, code);
    return c;
}

tsi_closure *tsi_closure_string(tsi_string_handler handler, void *userdata, void **code) {
    return make((void *)handler, userdata, 1, call_string, code);
}

tsi_closure *tsi_closure_string_out(tsi_string_out_handler handler, void *userdata, void **code) {
    return make((void *)handler, userdata, 2, call_string_out, code);
}

tsi_closure *tsi_closure_exclusive(tsi_exclusive_handler handler, void *userdata, void **code) {
    return make((void *)handler, userdata, 2, call_exclusive, code);
}

void tsi_closure_free(tsi_closure *c) {
    if (c == NULL) return;
    ffi_closure_free(c->closure);
    free(c);
}

static _Thread_local char last_error[2048];
static _Thread_local uint64_t last_error_serial;
static _Thread_local char refusal[1024];
static _Thread_local int has_refusal;

/* Copies message[0..length) into buffer, cut at a UTF-8 boundary to fit. */
static void copy_message(char *buffer, size_t size, const char *message, size_t length) {
    if (length >= size) {
        length = size - 1;
        while (length > 0 && ((unsigned char)message[length] & 0xC0) == 0x80) length--;
    }
    memcpy(buffer, message, length);
    buffer[length] = '\0';
}

void tsi_set_last_error(const char *message, size_t length) {
    copy_message(last_error, sizeof last_error, message, length);
    last_error_serial++;
}

uint64_t tsi_last_error_serial(void) { return last_error_serial; }

/* The innermost middleware call under way on this thread, or NULL. */
static _Thread_local tsi_middleware_frame *current_middleware;

uint64_t tsi_begin_middleware_call(tsi_middleware_frame *frame, const void *action) {
    has_refusal = 0;
    frame->outer = current_middleware;
    frame->action = action;
    frame->innermost = &current_middleware;
    current_middleware = frame;
    return last_error_serial;
}

const tsi_middleware_frame *tsi_innermost_middleware(void) { return current_middleware; }

void tsi_set_refusal(const char *message) {
    if (message == NULL) message = "";
    copy_message(refusal, sizeof refusal, message, strlen(message));
    has_refusal = 1;
}

const char *tsi_take_refusal(void) {
    if (!has_refusal) return NULL;
    has_refusal = 0;
    return refusal;
}

const char *tsi_last_error(void) { return last_error; }

void tsi_set_last_errorf(const char *format, ...) {
    va_list args;
    va_start(args, format);
    int length = vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
    if (length < 0) {
        last_error[0] = '\0';
    } else if ((size_t)length >= sizeof last_error) {
        /* Cut before a UTF-8 sequence that did not fit whole. */
        size_t end = sizeof last_error - 1, lead = end;
        while (lead > 0 && ((unsigned char)last_error[lead - 1] & 0xC0) == 0x80) lead--;
        if (lead > 0) {
            unsigned char byte = (unsigned char)last_error[lead - 1];
            size_t need = byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
            if (lead - 1 + need > end) last_error[lead - 1] = '\0';
        }
    }
    last_error_serial++;
}

/* ---- Version ---- */

const char *tsi_version(void) { return TS_VERSION; }

int tsi_version_number(void) { return TS_VERSION_NUMBER; }

/* ---- ts_alloc, ts_strdup ---- */

/* The last error for a failed allocation, formatted in place: no allocation
 * on the way to reporting that there is no memory. */
static void set_nomem(const char *function, size_t size) {
    int length = snprintf(last_error, sizeof last_error, "%s: no memory for %" PRIu64 " bytes (TS_E_NOMEM)",
                          function, (uint64_t)size);
    if (length < 0) last_error[0] = '\0';
    last_error_serial++;
}

void *tsi_alloc(size_t size) {
    /* malloc(0) may return NULL; 1 byte keeps NULL for failure only. */
    void *pointer = malloc(size == 0 ? 1 : size);
    if (pointer == NULL) set_nomem("ts_alloc", size);
    return pointer;
}

char *tsi_strdup(const char *text) {
    if (text == NULL) {
        static const char message[] = "ts_strdup: text is NULL (TS_E_ARGUMENT)";
        tsi_set_last_error(message, sizeof message - 1);
        return NULL;
    }
    size_t size = strlen(text) + 1;
    char *copy = malloc(size);
    if (copy == NULL) {
        set_nomem("ts_strdup", size);
        return NULL;
    }
    memcpy(copy, text, size);
    return copy;
}

/* ---- Reducer calls ---- */

/* The innermost reducer call under way on this thread, or NULL. */
static _Thread_local tsi_reducer_call *current_reducer;

/* Starts `call` (nothing answered yet) as this thread's innermost reducer
 * call; the caller puts call->outer back when the reducer returned. */
static inline void begin_call(tsi_reducer_call *call, const char *slice, const void *action) {
    call->outer = current_reducer;
    call->message = NULL;
    call->failed = 0;
    call->lost = 0;
    call->patched = 0;
    call->patch = NULL;
    call->slice = slice;
    call->action = action;
    call->answer_id = 0;
    current_reducer = call;
}

char *tsi_call_reducer(tsi_reducer_fn fn, const char *slice_json, const void *action, void *ctx,
                       tsi_reducer_call *call) {
    begin_call(call, slice_json, action);
    /* Back to the type the reducer was defined with before calling it. */
    char *output = ((ts_reducer_fn)fn)(slice_json, (const ts_action *)action, ctx);
    current_reducer = call->outer;
    return output;
}

/* Stands for the slice of a patch reducer kept as a tree (it has no text):
 * call->slice is never NULL for a call with a slice, and no text the
 * reducer holds can be at this address. */
static const char tree_slice_marker[1] = {0};

char *tsi_call_patch_reducer(tsi_reducer_fn fn, const char *slice_json, size_t slice_length, const void *tree,
                             const void *index, const void *action, void *ctx, tsi_reducer_call *call) {
    ts_json slice;
    const ts_json *given = NULL;
    if (tree != NULL || slice_json != NULL) {
        tsi_slice_value(&slice, slice_json, slice_length, tree, index);
        given = &slice;
    }
    begin_call(call, tree != NULL ? tree_slice_marker : slice_json, action);
    char *output = ((ts_patch_reducer_fn)(void (*)(void))fn)(given, (const ts_action *)action, ctx);
    current_reducer = call->outer;
    return output;
}

tsi_reducer_call *tsi_innermost_reducer(void) { return current_reducer; }

/* Set by every store's creation (the same function each time), read by
 * ts_json_at on any thread: atomic, so that neither is a data race. */
typedef const void *(*slice_index_fn)(void *owner);
static _Atomic(slice_index_fn) slice_index;

void tsi_set_slice_index(const void *(*index)(void *owner)) {
    atomic_store_explicit(&slice_index, index, memory_order_release);
}

const void *(*tsi_slice_index(void))(void *owner) { return atomic_load_explicit(&slice_index, memory_order_acquire); }

void tsi_reducer_clear(tsi_reducer_call *call) {
    free(call->message);
    call->message = NULL;
    free(call->patch);
    call->patch = NULL;
    call->patch_length = call->patch_capacity = 0;
}

/* The reducer call running on this thread, for `name` (a ts_reducer_*_id
 * function): TS_OK, or its refusal of a NULL `out` or of a call outside a
 * reducer, with the message set. */
static int32_t reducer_call_for(const char *name, const uint64_t *out, tsi_reducer_call **call) {
    *call = current_reducer;
    if (out == NULL) {
        tsi_set_last_errorf("%s: out is NULL", name);
        return TS_E_ARGUMENT;
    }
    if (*call == NULL) {
        tsi_set_last_errorf("%s: called outside a reducer (no store is calling a reducer on this thread)", name);
        return TS_E_MISUSE;
    }
    return TS_OK;
}

int32_t tsi_reducer_slice_id(uint64_t *out) {
    tsi_reducer_call *call;
    int32_t status = reducer_call_for("ts_reducer_slice_id", out, &call);
    if (status != TS_OK) return status;
    *out = call->slice_id;
    return TS_OK;
}

int32_t tsi_reducer_answer_id(uint64_t *out, uint64_t (*reserve)(void)) {
    tsi_reducer_call *call;
    int32_t status = reducer_call_for("ts_reducer_answer_id", out, &call);
    if (status != TS_OK) return status;
    if (call->answer_id == 0) call->answer_id = reserve();
    *out = call->answer_id;
    return TS_OK;
}

int tsi_reducer_fail(const char *message) {
    tsi_reducer_call *call = current_reducer;
    if (call == NULL) return -1;
    if (call->failed) return 0; /* the first reason stands */
    call->failed = 1;
    if (message == NULL || message[0] == '\0') return 0;
    size_t length = strlen(message);
    if (length > TSI_REDUCER_MESSAGE_MAX) {
        length = TSI_REDUCER_MESSAGE_MAX;
        while (length > 0 && ((unsigned char)message[length] & 0xC0) == 0x80) length--;
    }
    call->message = malloc(length + 1);
    if (call->message == NULL) {
        call->lost = 1;
        return 0;
    }
    memcpy(call->message, message, length);
    call->message[length] = '\0';
    return 0;
}

/* ---- Type filters ---- */

/* The store's own actions ("@@turnstate/init", "@@turnstate/replace") reach
 * every reducer, whatever its filter. */
static const char own_prefix[] = "@@turnstate/";

typedef struct {
    uint64_t hash;
    const char *bytes;
    size_t length;
} filter_word;

struct tsi_type_filter {
    /* Exact types: open addressing, a power of two, at most half full; a
     * NULL `bytes` is an empty slot. */
    filter_word *exact;
    size_t exact_mask;
    /* Prefix patterns ("todos/" then "*"), kept without their "*". */
    filter_word *prefixes;
    size_t prefix_count;
    /* The patterns' bytes, one block. */
    char *text;
};

static uint64_t filter_hash(const char *bytes, size_t length) {
    /* FNV-1a, 64 bits: enough for a few dozen short types. */
    uint64_t hash = 14695981039346656037u;
    for (size_t i = 0; i < length; i++) {
        hash ^= (unsigned char)bytes[i];
        hash *= 1099511628211u;
    }
    return hash;
}

tsi_type_filter *tsi_type_filter_make(const char *const *patterns, size_t count) {
    size_t bytes = 0, exact_count = 0, prefix_count = 0;
    for (size_t i = 0; i < count; i++) {
        size_t length = strlen(patterns[i]);
        bytes += length + 1;
        if (length >= 2 && patterns[i][length - 1] == '*') prefix_count++;
        else exact_count++;
    }
    size_t slots = 4;
    while (slots < 2 * exact_count) slots *= 2;
    tsi_type_filter *filter = calloc(1, sizeof *filter);
    if (filter == NULL) return NULL;
    filter->exact = calloc(slots, sizeof *filter->exact);
    filter->prefixes = calloc(prefix_count ? prefix_count : 1, sizeof *filter->prefixes);
    filter->text = malloc(bytes ? bytes : 1);
    if (filter->exact == NULL || filter->prefixes == NULL || filter->text == NULL) {
        tsi_type_filter_free(filter);
        return NULL;
    }
    filter->exact_mask = slots - 1;
    char *at = filter->text;
    for (size_t i = 0; i < count; i++) {
        size_t length = strlen(patterns[i]);
        memcpy(at, patterns[i], length + 1);
        if (length >= 2 && patterns[i][length - 1] == '*') {
            /* The pattern matches what starts with "todos/" and has more. */
            filter->prefixes[filter->prefix_count++] = (filter_word){0, at, length - 1};
        } else {
            uint64_t hash = filter_hash(at, length);
            size_t slot = (size_t)hash & filter->exact_mask;
            for (;;) {
                filter_word *word = &filter->exact[slot];
                if (word->bytes == NULL) {
                    *word = (filter_word){hash, at, length};
                    break;
                }
                if (word->hash == hash && word->length == length && memcmp(word->bytes, at, length) == 0) break;
                slot = (slot + 1) & filter->exact_mask;
            }
        }
        at += length + 1;
    }
    return filter;
}

int tsi_type_filter_match(const tsi_type_filter *filter, const char *type, size_t length) {
    if (length >= sizeof own_prefix - 1 && memcmp(type, own_prefix, sizeof own_prefix - 1) == 0) return 1;
    for (size_t i = 0; i < filter->prefix_count; i++) {
        const filter_word *prefix = &filter->prefixes[i];
        if (length > prefix->length && memcmp(type, prefix->bytes, prefix->length) == 0) return 1;
    }
    uint64_t hash = filter_hash(type, length);
    size_t slot = (size_t)hash & filter->exact_mask;
    for (;;) {
        const filter_word *word = &filter->exact[slot];
        if (word->bytes == NULL) return 0;
        if (word->hash == hash && word->length == length && memcmp(word->bytes, type, length) == 0) return 1;
        slot = (slot + 1) & filter->exact_mask;
    }
}

void tsi_type_filter_free(tsi_type_filter *filter) {
    if (filter == NULL) return;
    free(filter->exact);
    free(filter->prefixes);
    free(filter->text);
    free(filter);
}
