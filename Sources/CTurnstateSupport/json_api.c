/* The C API's JSON: ts_reducer_patch's bookkeeping and the getters
 * (ts_json_*) of Include/turnstate.h, over the JSON layer (CTurnstateJSON).
 *
 * A ts_json is (text, length, kind) plus the library's own fields:
 *   doc_        the tsj_doc index of the document the value is in, or NULL;
 *   base_       with an index: the value's offset in that document;
 *   reserved_[0] with an index: the document's length;
 *   reserved_[1] flags: VALUE_MINIFIED when the value's text is minified
 *                (every tsj_ reader then works on it directly); VALUE_TREE
 *                for a split container of a slice kept as a tree (a patch
 *                reducer's slice): doc_ is its tsj_tree node, text NULL.
 * Without an index, a value is read as a text of its own: (text, length).
 * A value whose text has white space (from a text the caller wrote with
 * it) is read by minifying a copy for look-ups and counts, and by stepping
 * over white space for ts_json_next. */
#include "internal.h"
#include "turnstate_json.h"

#include "../../Include/turnstate.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ts_reducer_patch ---- */

/* Fails `call` with the message now in ts_last_error(). */
static void fail_call_with_last_error(void) { tsi_reducer_fail(tsi_last_error()); }

static int patch_reserve(tsi_reducer_call *call, size_t extra) {
    size_t need = call->patch_length + extra + 2; /* the closing bracket and a NUL */
    if (need <= call->patch_capacity) return 1;
    size_t capacity = call->patch_capacity ? call->patch_capacity : 64;
    while (capacity < need) capacity *= 2;
    char *grown = realloc(call->patch, capacity);
    if (grown == NULL) return 0;
    call->patch = grown;
    call->patch_capacity = capacity;
    return 1;
}

int32_t tsi_reducer_patch(const char *patch_json) {
    tsi_reducer_call *call = tsi_innermost_reducer();
    if (call == NULL) {
        tsi_set_last_errorf("ts_reducer_patch: called outside a reducer (no store is calling a reducer on this "
                            "thread); nothing was patched");
        return TS_E_MISUSE;
    }
    if (call->failed) return TS_OK; /* the failure holds */
    if (patch_json == NULL) {
        tsi_set_last_errorf("ts_reducer_patch: patch_json is NULL");
        fail_call_with_last_error();
        return TS_E_ARGUMENT;
    }
    if (call->slice == NULL) {
        tsi_set_last_errorf("ts_reducer_patch: the init call (\"@@turnstate/init\") has no slice to patch: "
                            "return the slice's first value instead");
        fail_call_with_last_error();
        return TS_E_MISUSE;
    }
    char *minified = NULL;
    size_t length = 0;
    tsj_error error;
    int code = tsj_minify(patch_json, strlen(patch_json), &minified, &length, &error);
    if (code != TSJ_OK) {
        if (code == TSJ_ERR_NOMEM) {
            tsi_set_last_errorf("ts_reducer_patch: no memory to check the patch");
        } else {
            tsi_set_last_errorf("ts_reducer_patch: the patch is not valid JSON: %s", error.message);
        }
        fail_call_with_last_error();
        return code == TSJ_ERR_NOMEM ? TS_E_NOMEM : TS_E_JSON;
    }
    if (minified[0] != '[') {
        const char *kind = minified[0] == '{' ? "object" : minified[0] == '"' ? "string"
                         : minified[0] == 't' || minified[0] == 'f' ? "boolean"
                         : minified[0] == 'n' ? "null" : "number";
        free(minified);
        tsi_set_last_errorf("ts_reducer_patch: a JSON Patch must be an array of operations, found %s", kind);
        fail_call_with_last_error();
        return TS_E_ARGUMENT;
    }
    /* "[a,b]" adds "a,b"; "[]" adds nothing (but still counts as a patch). */
    const char *ops = minified + 1;
    size_t ops_length = length - 2;
    if (ops_length > 0) {
        int first = call->patch_length == 0;
        if (!patch_reserve(call, ops_length + 1)) {
            free(minified);
            tsi_set_last_errorf("ts_reducer_patch: no memory for a patch of %zu bytes",
                                call->patch_length + ops_length);
            fail_call_with_last_error();
            return TS_E_NOMEM;
        }
        if (first) {
            call->patch[0] = '[';
            call->patch_length = 1;
        } else {
            call->patch[call->patch_length++] = ',';
        }
        memcpy(call->patch + call->patch_length, ops, ops_length);
        call->patch_length += ops_length;
    }
    free(minified);
    call->patched = 1;
    return TS_OK;
}

const char *tsi_reducer_patch_text(tsi_reducer_call *call, size_t *length) {
    if (call->patch_length == 0) {
        *length = 2;
        return "[]";
    }
    /* patch_reserve kept room for the bracket and the NUL. */
    call->patch[call->patch_length] = ']';
    call->patch[call->patch_length + 1] = '\0';
    *length = call->patch_length + 1;
    return call->patch;
}

/* ---- Values ---- */

enum { VALUE_MINIFIED = 1, VALUE_TREE = 2 };

/* ts_json's kinds are the JSON layer's (a value's kind is copied). */
typedef char kinds_are_the_same[(TSJ_NULL == TS_JSON_NULL && TSJ_FALSE == TS_JSON_FALSE && TSJ_TRUE == TS_JSON_TRUE &&
                                 TSJ_NUMBER == TS_JSON_NUMBER && TSJ_STRING == TS_JSON_STRING &&
                                 TSJ_ARRAY == TS_JSON_ARRAY && TSJ_OBJECT == TS_JSON_OBJECT) ? 1 : -1];

/* Where a value is: the text its span is in, and how to read it. */
typedef struct place {
    const char *text;     /* the document (with an index) or the value's own text */
    size_t length;
    const tsj_doc *index; /* NULL: none */
    tsj_span span;        /* the value in `text` */
    int minified;
} place;

static int kind_of_byte(char c) {
    return c == '{' ? TSJ_OBJECT : c == '[' ? TSJ_ARRAY : c == '"' ? TSJ_STRING : c == 't' ? TSJ_TRUE
         : c == 'f' ? TSJ_FALSE : c == 'n' ? TSJ_NULL : TSJ_NUMBER;
}

static int32_t status_of(int code) {
    switch (code) {
    case TSJ_OK: return TS_OK;
    case TSJ_ERR_NOMEM: return TS_E_NOMEM;
    case TSJ_ERR_NOT_FOUND: return TS_E_NOT_FOUND;
    case TSJ_ERR_POINTER:
    case TSJ_ERR_TYPE:
    case TSJ_ERR_RANGE:
    case TSJ_ERR_INVALID_ARG: return TS_E_ARGUMENT;
    default: return TS_E_JSON;
    }
}

static void write_value(ts_json *out, const place *p, tsj_span span) {
    out->text = p->text + span.offset;
    out->length = span.length;
    out->kind = span.kind;
    out->doc_ = p->index;
    out->base_ = p->index ? span.offset : 0;
    out->reserved_[0] = p->index ? p->length : 0;
    out->reserved_[1] = p->minified ? VALUE_MINIFIED : 0;
}

static int recognise(const char *json, place *p);

/* The place of a value that one of these functions wrote. */
static int32_t place_of(const char *function, const ts_json *value, place *p) {
    if (value == NULL) {
        tsi_set_last_errorf("%s: value is NULL", function);
        return TS_E_ARGUMENT;
    }
    if ((value->reserved_[1] & VALUE_TREE) && value->doc_ != NULL &&
        (value->kind == TS_JSON_ARRAY || value->kind == TS_JSON_OBJECT)) {
        /* A split container: the getters of scalars see its kind only. */
        p->text = value->kind == TS_JSON_ARRAY ? "[]" : "{}";
        p->length = 2;
        p->index = NULL;
        p->span = (tsj_span){0, 2, value->kind};
        p->minified = 1;
        return TS_OK;
    }
    if (value->text == NULL || value->length == 0 || value->kind < TS_JSON_NULL || value->kind > TS_JSON_OBJECT) {
        tsi_set_last_errorf("%s: the value is empty (a key of an array element, or not written by ts_json_at, "
                            "ts_json_find or ts_json_next)", function);
        return TS_E_ARGUMENT;
    }
    if (value->doc_ != NULL) {
        p->text = value->text - value->base_;
        p->length = value->reserved_[0];
        p->index = value->doc_;
        p->span = (tsj_span){value->base_, value->length, value->kind};
        p->minified = 1;
    } else {
        p->text = value->text;
        p->length = value->length;
        p->index = NULL;
        p->span = (tsj_span){0, value->length, value->kind};
        p->minified = (value->reserved_[1] & VALUE_MINIFIED) != 0;
        /* A patch reducer's slice (one text): read through the store's
         * index of it, as ts_json_at reads slice_json. */
        place slice;
        if (p->minified && recognise(value->text, &slice) && slice.length == value->length) p->index = slice.index;
    }
    return TS_OK;
}

/* Whether the valid JSON text[0..length) has no white space outside its
 * strings (is minified). */
static int is_minified(const char *text, size_t length) {
    int in_string = 0;
    for (size_t i = 0; i < length; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\') i++;
            else if (c == '"') in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
            return 0;
        }
    }
    return 1;
}

/* The texts the calling thread's callbacks under way were given, recognised
 * by address: a reducer's slice, an action's payload and json. */
static int recognise_action(const void *action, const char *json, place *p) {
    const ts_action *a = action;
    if (a == NULL) return 0;
    if (a->payload != NULL && json == a->payload) {
        p->text = json;
        p->length = strlen(json);
        p->index = NULL;
        p->minified = 1;
        return 1;
    }
    if (json == a->json) {
        p->text = json;
        p->length = strlen(json);
        p->index = NULL;
        p->minified = is_minified(json, p->length);
        return 1;
    }
    return 0;
}

static int recognise(const char *json, place *p) {
    for (const tsi_reducer_call *call = tsi_innermost_reducer(); call != NULL; call = call->outer) {
        if (call->slice != NULL && json == call->slice) {
            p->text = json;
            p->length = call->slice_length;
            const void *(*index)(void *) = tsi_slice_index();
            p->index = index != NULL && call->slice_owner != NULL ? index(call->slice_owner) : NULL;
            p->minified = 1;
            return 1;
        }
        if (recognise_action(call->action, json, p)) return 1;
    }
    for (const tsi_middleware_frame *frame = tsi_innermost_middleware(); frame != NULL; frame = frame->outer) {
        if (recognise_action(frame->action, json, p)) return 1;
    }
    return 0;
}

static int is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* The offsets in the valid JSON text[0..length) of the bytes that are at
 * offsets first and last of its minified form (first <= last). */
static void unminify_offsets(const char *text, size_t length, size_t first, size_t last, size_t *first_out,
                             size_t *last_out) {
    size_t at = 0; /* the offset in the minified form of text[i] */
    int in_string = 0;
    for (size_t i = 0; i < length; i++) {
        char c = text[i];
        if (!in_string && is_space(c)) continue;
        if (at == first) *first_out = i;
        if (at == last) {
            *last_out = i;
            return;
        }
        if (in_string) {
            if (c == '\\') {
                i++;
                at++;
                if (at == last) {
                    *last_out = i;
                    return;
                }
            } else if (c == '"') {
                in_string = 0;
            }
        } else if (c == '"') {
            in_string = 1;
        }
        at++;
    }
    *last_out = length - 1;
}

/* Finds `pointer` below the value at p (with white space in its text):
 * through a minified copy, mapped back to p's text. */
static int find_in_spaced(const place *p, const char *pointer, size_t pointer_length, tsj_span *out,
                          tsj_error *error) {
    char *minified = NULL;
    size_t minified_length = 0;
    const char *value = p->text + p->span.offset;
    int code = tsj_minify(value, p->span.length, &minified, &minified_length, error);
    if (code != TSJ_OK) return code;
    tsj_span found;
    code = tsj_find(minified, minified_length, NULL, pointer, pointer_length, &found, error);
    free(minified);
    if (code != TSJ_OK) return code;
    size_t first = 0, last = 0;
    unminify_offsets(value, p->span.length, found.offset, found.offset + found.length - 1, &first, &last);
    out->offset = p->span.offset + first;
    out->length = last - first + 1;
    out->kind = found.kind;
    return TSJ_OK;
}

static int32_t find(const char *function, place *p, const char *pointer, ts_json *out) {
    if (pointer == NULL) pointer = "";
    size_t pointer_length = strlen(pointer);
    tsj_span found;
    tsj_error error;
    int code;
    if (!p->minified) {
        code = find_in_spaced(p, pointer, pointer_length, &found, &error);
    } else if (p->span.offset == 0 && p->span.length == p->length) {
        code = tsj_find(p->text, p->length, p->index, pointer, pointer_length, &found, &error);
    } else {
        code = tsj_find_in(p->text, p->length, p->index, p->span, pointer, pointer_length, &found, &error);
    }
    if (code != TSJ_OK) {
        if (code == TSJ_ERR_NOMEM) tsi_set_last_errorf("%s: no memory to look up \"%s\"", function, pointer);
        else tsi_set_last_errorf("%s: JSON Pointer \"%s\": %s", function, pointer, error.message);
        return status_of(code);
    }
    write_value(out, p, found);
    return TS_OK;
}

/* The place of the whole text `json`: recognised, or validated. */
static int32_t place_of_text(const char *function, const char *json, place *p) {
    if (recognise(json, p)) {
        p->span = (tsj_span){0, p->length, 0};
        return TS_OK;
    }
    size_t length = strlen(json);
    char *minified = NULL;
    size_t minified_length = 0;
    tsj_error error;
    int code = tsj_minify(json, length, &minified, &minified_length, &error);
    if (code != TSJ_OK) {
        if (code == TSJ_ERR_NOMEM) tsi_set_last_errorf("%s: no memory to check %zu bytes of JSON", function, length);
        else tsi_set_last_errorf("%s: invalid JSON: %s", function, error.message);
        return code == TSJ_ERR_NOMEM ? TS_E_NOMEM : TS_E_JSON;
    }
    free(minified);
    p->text = json;
    p->length = length;
    p->index = NULL;
    p->minified = minified_length == length;
    p->span = (tsj_span){0, length, 0};
    return TS_OK;
}

static int32_t json_at(const char *function, const char *json, const char *pointer, ts_json *out) {
    if (json == NULL) {
        tsi_set_last_errorf("%s: json is NULL", function);
        return TS_E_ARGUMENT;
    }
    if (out == NULL) {
        tsi_set_last_errorf("%s: out is NULL", function);
        return TS_E_ARGUMENT;
    }
    place p;
    int32_t status = place_of_text(function, json, &p);
    if (status != TS_OK) return status;
    /* The kind of the whole text: its first byte (it is valid JSON). */
    size_t first = 0;
    while (first < p.length && is_space(p.text[first])) first++;
    char c = p.text[first];
    p.span.kind = c == '{' ? TSJ_OBJECT : c == '[' ? TSJ_ARRAY : c == '"' ? TSJ_STRING : c == 't' ? TSJ_TRUE
                : c == 'f' ? TSJ_FALSE : c == 'n' ? TSJ_NULL : TSJ_NUMBER;
    if (!p.minified) {
        /* A spaced whole text: the span without its outer white space. */
        size_t end = p.length;
        while (end > first && is_space(p.text[end - 1])) end--;
        p.span.offset = first;
        p.span.length = end - first;
    }
    return find(function, &p, pointer, out);
}

int32_t tsi_json_at(const char *json, const char *pointer, void *out) {
    return json_at("ts_json_at", json, pointer, out);
}

/* ---- Values of a slice kept as a tree ---- */

static const tsj_tree *tree_of_value(const ts_json *value) {
    if (value == NULL || !(value->reserved_[1] & VALUE_TREE)) return NULL;
    if (value->kind != TS_JSON_ARRAY && value->kind != TS_JSON_OBJECT) return NULL;
    return value->doc_;
}

static void write_tree_node(ts_json *out, const tsj_tree *node) {
    out->text = NULL;
    out->length = tsj_tree_length(node);
    out->kind = tsj_tree_kind(node);
    out->doc_ = node;
    out->base_ = 0;
    out->reserved_[0] = 0;
    out->reserved_[1] = VALUE_TREE;
}

/* A value a tree look-up found: a node, or a value in a leaf's text. */
static void write_ref(ts_json *out, const tsj_tree_ref *ref) {
    if (ref->node != NULL) {
        write_tree_node(out, ref->node);
        return;
    }
    out->text = ref->text + ref->span.offset;
    out->length = ref->span.length;
    out->kind = ref->span.kind;
    out->doc_ = NULL;
    out->base_ = 0;
    out->reserved_[0] = 0;
    out->reserved_[1] = VALUE_MINIFIED;
}

void tsi_slice_value(void *out, const char *text, size_t length, const void *tree, const void *index) {
    ts_json *v = out;
    if (tree != NULL) {
        write_tree_node(v, tree);
        return;
    }
    v->text = text;
    v->length = length;
    v->kind = kind_of_byte(text[0]);
    v->doc_ = index;
    v->base_ = 0;
    v->reserved_[0] = index != NULL ? length : 0;
    v->reserved_[1] = VALUE_MINIFIED;
}

static int32_t find_in_tree(const char *function, const tsj_tree *node, const char *pointer, ts_json *out) {
    if (pointer == NULL) pointer = "";
    tsj_tree_ref ref;
    tsj_error error;
    int code = tsj_tree_find(node, pointer, strlen(pointer), &ref, &error);
    if (code != TSJ_OK) {
        if (code == TSJ_ERR_NOMEM) tsi_set_last_errorf("%s: no memory to look up \"%s\"", function, pointer);
        else tsi_set_last_errorf("%s: JSON Pointer \"%s\": %s", function, pointer, error.message);
        return status_of(code);
    }
    write_ref(out, &ref);
    return TS_OK;
}

int32_t tsi_json_find(const void *value, const char *pointer, void *out) {
    const tsj_tree *node = tree_of_value(value);
    if (node != NULL) {
        if (out == NULL) {
            tsi_set_last_errorf("ts_json_find: out is NULL");
            return TS_E_ARGUMENT;
        }
        return find_in_tree("ts_json_find", node, pointer, out);
    }
    place p;
    int32_t status = place_of("ts_json_find", value, &p);
    if (status != TS_OK) return status;
    if (out == NULL) {
        tsi_set_last_errorf("ts_json_find: out is NULL");
        return TS_E_ARGUMENT;
    }
    return find("ts_json_find", &p, pointer, out);
}

/* Reports a failed getter: "FUNCTION: [the value at "P": ]MESSAGE". */
static int32_t getter_failed(const char *function, const char *pointer, int code, const tsj_error *error) {
    if (pointer != NULL) tsi_set_last_errorf("%s: the value at \"%s\": %s", function, pointer, error->message);
    else tsi_set_last_errorf("%s: %s", function, error->message);
    return status_of(code);
}

static int32_t scalar_place(const char *function, const ts_json *value, const void *out, place *p) {
    int32_t status = place_of(function, value, p);
    if (status != TS_OK) return status;
    if (out == NULL) {
        tsi_set_last_errorf("%s: out is NULL", function);
        return TS_E_ARGUMENT;
    }
    return TS_OK;
}

static int32_t get_int(const char *function, const char *pointer, const ts_json *value, int64_t *out) {
    place p;
    int32_t status = scalar_place(function, value, out, &p);
    if (status != TS_OK) return status;
    tsj_error error;
    int64_t result;
    int code = tsj_span_int64(p.text, p.span, &result, &error);
    if (code != TSJ_OK) return getter_failed(function, pointer, code, &error);
    *out = result;
    return TS_OK;
}

static int32_t get_uint(const char *function, const char *pointer, const ts_json *value, uint64_t *out) {
    place p;
    int32_t status = scalar_place(function, value, out, &p);
    if (status != TS_OK) return status;
    tsj_error error;
    uint64_t result;
    int code = tsj_span_uint64(p.text, p.span, &result, &error);
    if (code != TSJ_OK) return getter_failed(function, pointer, code, &error);
    *out = result;
    return TS_OK;
}

static int32_t get_double(const char *function, const char *pointer, const ts_json *value, double *out) {
    place p;
    int32_t status = scalar_place(function, value, out, &p);
    if (status != TS_OK) return status;
    tsj_error error;
    double result;
    int code = tsj_span_double(p.text, p.span, &result, &error);
    if (code != TSJ_OK) return getter_failed(function, pointer, code, &error);
    *out = result;
    return TS_OK;
}

static int32_t get_bool(const char *function, const char *pointer, const ts_json *value, int *out) {
    place p;
    int32_t status = scalar_place(function, value, out, &p);
    if (status != TS_OK) return status;
    tsj_error error;
    int result;
    int code = tsj_span_bool(p.text, p.span, &result, &error);
    if (code != TSJ_OK) return getter_failed(function, pointer, code, &error);
    *out = result;
    return TS_OK;
}

/* The unescaped copy that ts_json_string last made on this thread, freed by
 * the next call (and when the thread exits). */
static pthread_key_t string_key;
static pthread_once_t string_once = PTHREAD_ONCE_INIT;
static int string_key_made;

static void make_string_key(void) { string_key_made = pthread_key_create(&string_key, free) == 0; }

static int32_t get_string(const char *function, const char *pointer, const ts_json *value, const char **out,
                          size_t *out_length) {
    place p;
    int32_t status = scalar_place(function, value, out, &p);
    if (status != TS_OK) return status;
    pthread_once(&string_once, make_string_key);
    if (!string_key_made) {
        tsi_set_last_errorf("%s: no thread-specific key for the string's copy", function);
        return TS_E_NOMEM;
    }
    /* The copy of the call before goes now, whatever this call returns. */
    free(pthread_getspecific(string_key));
    pthread_setspecific(string_key, NULL);
    tsj_error error;
    const char *result = NULL;
    size_t length = 0;
    char *owned = NULL;
    int code = tsj_span_string(p.text, p.span, &result, &length, &owned, &error);
    if (code != TSJ_OK) return getter_failed(function, pointer, code, &error);
    if (owned != NULL && pthread_setspecific(string_key, owned) != 0) {
        free(owned);
        tsi_set_last_errorf("%s: no memory to keep the string's unescaped copy", function);
        return TS_E_NOMEM;
    }
    *out = result;
    if (out_length != NULL) *out_length = length;
    return TS_OK;
}

int32_t tsi_json_int(const void *value, int64_t *out) { return get_int("ts_json_int", NULL, value, out); }
int32_t tsi_json_uint(const void *value, uint64_t *out) { return get_uint("ts_json_uint", NULL, value, out); }
int32_t tsi_json_double(const void *value, double *out) { return get_double("ts_json_double", NULL, value, out); }
int32_t tsi_json_bool(const void *value, int *out) { return get_bool("ts_json_bool", NULL, value, out); }

int tsi_json_is_null(const void *value) {
    const ts_json *v = value;
    return v != NULL && v->text != NULL && v->kind == TS_JSON_NULL && v->length == 4;
}

int32_t tsi_json_string(const void *value, const char **out, size_t *out_length) {
    return get_string("ts_json_string", NULL, value, out, out_length);
}

int32_t tsi_json_count(const void *value, size_t *out) {
    const tsj_tree *node = tree_of_value(value);
    if (node != NULL) {
        if (out == NULL) {
            tsi_set_last_errorf("ts_json_count: out is NULL");
            return TS_E_ARGUMENT;
        }
        *out = tsj_tree_count(node);
        return TS_OK;
    }
    place p;
    int32_t status = scalar_place("ts_json_count", value, out, &p);
    if (status != TS_OK) return status;
    tsj_error error;
    size_t count = 0;
    int code;
    if (p.minified) {
        code = tsj_span_count(p.text, p.index, p.span, &count, &error);
    } else {
        char *minified = NULL;
        size_t minified_length = 0;
        code = tsj_minify(p.text + p.span.offset, p.span.length, &minified, &minified_length, &error);
        if (code == TSJ_OK) {
            code = tsj_span_count(minified, NULL, (tsj_span){0, minified_length, p.span.kind}, &count, &error);
            free(minified);
        }
    }
    if (code != TSJ_OK) return getter_failed("ts_json_count", NULL, code, &error);
    *out = count;
    return TS_OK;
}

/* ts_json_next over a container with white space in its text: the cursor
 * is the offset (in the container's text) after the last child read. */
static size_t skip_space(const char *text, size_t at, size_t end) {
    while (at < end && is_space(text[at])) at++;
    return at;
}

/* The end of the valid JSON value that starts at `at`. */
static size_t skip_value(const char *text, size_t at, size_t end) {
    size_t depth = 0;
    do {
        char c = text[at];
        if (c == '"') {
            for (at++; at < end && text[at] != '"'; at++) {
                if (text[at] == '\\') at++;
            }
            at++;
        } else if (c == '[' || c == '{') {
            depth++;
            at++;
        } else if (c == ']' || c == '}') {
            depth--;
            at++;
        } else if (depth > 0) {
            at++; /* white space, ',' and ':' and scalars inside a container */
        } else {
            while (at < end && strchr(",]}: \t\r\n", text[at]) == NULL) at++;
        }
    } while (depth > 0 && at < end);
    return at;
}

static int kind_at(char c) {
    return c == '{' ? TSJ_OBJECT : c == '[' ? TSJ_ARRAY : c == '"' ? TSJ_STRING : c == 't' ? TSJ_TRUE
         : c == 'f' ? TSJ_FALSE : c == 'n' ? TSJ_NULL : TSJ_NUMBER;
}

static int next_spaced(const place *p, size_t *cursor, tsj_span *key, tsj_span *value, tsj_error *error) {
    const char *text = p->text + p->span.offset;
    size_t end = p->span.length - 1; /* the closing bracket */
    int object = p->span.kind == TSJ_OBJECT;
    size_t at;
    if (*cursor == 0) {
        at = skip_space(text, 1, end);
    } else {
        if (*cursor > end) goto bad_cursor;
        at = skip_space(text, *cursor, end);
        if (at < end) {
            if (text[at] != ',') goto bad_cursor;
            at = skip_space(text, at + 1, end);
        }
    }
    if (at >= end) {
        error->code = TSJ_ERR_NOT_FOUND;
        snprintf(error->message, sizeof error->message, object ? "no more members" : "no more elements");
        return TSJ_ERR_NOT_FOUND;
    }
    if (object) {
        if (text[at] != '"') goto bad_cursor;
        size_t key_end = skip_value(text, at, end);
        *key = (tsj_span){p->span.offset + at, key_end - at, TSJ_STRING};
        at = skip_space(text, key_end, end);
        if (at >= end || text[at] != ':') goto bad_cursor;
        at = skip_space(text, at + 1, end);
    } else {
        *key = (tsj_span){0, 0, TSJ_NULL};
    }
    if (at >= end || strchr(",:]}", text[at]) != NULL) goto bad_cursor;
    size_t value_end = skip_value(text, at, end);
    *value = (tsj_span){p->span.offset + at, value_end - at, kind_at(text[at])};
    *cursor = value_end;
    return TSJ_OK;
bad_cursor:
    error->code = TSJ_ERR_INVALID_ARG;
    snprintf(error->message, sizeof error->message, "the cursor %zu does not belong to this %s", *cursor,
             object ? "object" : "array");
    return TSJ_ERR_INVALID_ARG;
}

/* ts_json_next over a split container: the cursor is the index of the next child. */
static int32_t next_in_tree(const tsj_tree *node, size_t *cursor, void *key, void *value) {
    if (cursor == NULL) {
        tsi_set_last_errorf("ts_json_next: cursor is NULL");
        return TS_E_ARGUMENT;
    }
    if (value == NULL) {
        tsi_set_last_errorf("ts_json_next: out is NULL");
        return TS_E_ARGUMENT;
    }
    const int object = tsj_tree_kind(node) == TSJ_OBJECT;
    if (*cursor > tsj_tree_count(node)) {
        tsi_set_last_errorf("ts_json_next: the cursor %zu does not belong to this %s", *cursor,
                            object ? "object" : "array");
        return TS_E_ARGUMENT;
    }
    tsj_tree_ref key_ref, value_ref;
    tsj_error error;
    int code = tsj_tree_child(node, *cursor, &key_ref, &value_ref, &error);
    if (code != TSJ_OK) return getter_failed("ts_json_next", NULL, code, &error);
    *cursor += 1;
    write_ref(value, &value_ref);
    if (key != NULL) {
        ts_json *k = key;
        if (object) {
            write_ref(k, &key_ref);
        } else {
            memset(k, 0, sizeof *k);
            k->kind = TS_JSON_NULL;
        }
    }
    return TS_OK;
}

int32_t tsi_json_next(const void *container, size_t *cursor, void *key, void *value) {
    const tsj_tree *node = tree_of_value(container);
    if (node != NULL) return next_in_tree(node, cursor, key, value);
    place p;
    int32_t status = scalar_place("ts_json_next", container, value, &p);
    if (status != TS_OK) return status;
    if (cursor == NULL) {
        tsi_set_last_errorf("ts_json_next: cursor is NULL");
        return TS_E_ARGUMENT;
    }
    if (p.span.kind != TSJ_ARRAY && p.span.kind != TSJ_OBJECT) {
        tsi_set_last_errorf("ts_json_next: expected an array or an object, found %s", tsj_kind_name(p.span.kind));
        return TS_E_ARGUMENT;
    }
    tsj_error error;
    tsj_span key_span, value_span;
    size_t next = *cursor;
    int code = p.minified ? tsj_span_next(p.text, p.span, &next, &key_span, &value_span, &error)
                          : next_spaced(&p, &next, &key_span, &value_span, &error);
    if (code != TSJ_OK) return getter_failed("ts_json_next", NULL, code, &error);
    *cursor = next;
    write_value(value, &p, value_span);
    if (key != NULL) {
        ts_json *k = key;
        if (p.span.kind == TSJ_OBJECT) {
            write_value(k, &p, key_span);
        } else {
            memset(k, 0, sizeof *k);
            k->kind = TS_JSON_NULL;
        }
    }
    return TS_OK;
}

/* ---- Shortcuts ---- */

#define SHORTCUT(name, getter, type)                                                   \
    int32_t tsi_json_get_##name(const char *json, const char *pointer, type *out) {    \
        ts_json value;                                                                \
        if (out == NULL) {                                                            \
            tsi_set_last_errorf("ts_json_get_" #name ": out is NULL");                \
            return TS_E_ARGUMENT;                                                     \
        }                                                                             \
        int32_t status = json_at("ts_json_get_" #name, json, pointer, &value);       \
        if (status != TS_OK) return status;                                           \
        return getter("ts_json_get_" #name, pointer ? pointer : "", &value, out);     \
    }

SHORTCUT(int, get_int, int64_t)
SHORTCUT(uint, get_uint, uint64_t)
SHORTCUT(double, get_double, double)
SHORTCUT(bool, get_bool, int)

int32_t tsi_json_get_string(const char *json, const char *pointer, const char **out, size_t *out_length) {
    ts_json value;
    if (out == NULL) {
        tsi_set_last_errorf("ts_json_get_string: out is NULL");
        return TS_E_ARGUMENT;
    }
    int32_t status = json_at("ts_json_get_string", json, pointer, &value);
    if (status != TS_OK) return status;
    return get_string("ts_json_get_string", pointer ? pointer : "", &value, out, out_length);
}
