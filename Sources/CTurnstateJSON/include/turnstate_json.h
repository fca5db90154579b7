/*
 * turnstate_json.h - a thin C API over simdjson for the Turnstate store.
 *
 * Plain C99. The implementation (turnstate_json.cpp) is C++17 and never lets
 * a C++ exception escape; it never aborts on any input.
 *
 * General rules
 * -------------
 * - Validation is full and strict (RFC 8259): any JSON value at top level,
 *   invalid UTF-8 anywhere in the input, unescaped control characters in
 *   strings, bad escapes, trailing characters after the value and nesting
 *   deeper than TSJ_MAX_DEPTH are all rejected. Escaped lone surrogates
 *   ("\ud800" without a following "\udc00".."\udfff", or a lone "\udc00")
 *   are rejected with TSJ_ERR_UTF8, since they denote no Unicode text.
 * - An object with a key that appears twice, at any depth, is invalid:
 *   TSJ_ERR_DUPLICATE_KEY, with a message that names the key and the byte
 *   offset of its second occurrence ("duplicate key \"id\" at byte 12").
 *   Keys are compared after unescaping ({"a":1,"\u0061":2} is refused).
 *   Every function that reads JSON checks it (tsj_minify, tsj_parse_action,
 *   tsj_for_each_member, tsj_doc_parse, and tsj_patch_apply for the patch),
 *   so every reader of the same text sees the same members. The check is O(n): objects with 16 keys or more
 *   are hashed.
 * - When a document has several faults, the error reports invalid UTF-8
 *   first (the whole input is checked for it up front), otherwise the first
 *   fault in document order.
 * - Text output ("minified text") is the input text with insignificant
 *   whitespace removed, nothing else: numbers keep their exact digits
 *   (18446744073709551615, -9223372036854775808, 1.0, 1e2, -0, 1E+2 and
 *   123456789012345678901234567890 all come back verbatim) and strings keep
 *   their original escapes ("\u0041" stays "\u0041", "\/" stays "\/").
 *   Numbers of any size and precision are accepted.
 * - Every tsj_error * parameter may be NULL. On success err->code is TSJ_OK,
 *   err->offset -1 and err->message "". On failure err->message is a single
 *   English line; err->offset is the byte offset of the fault in the input
 *   (for tsj_doc_at_pointer: in the pointer), or -1 when there is none.
 * - Inputs are (pointer, length) pairs; they need no NUL terminator and no
 *   padding, and are never read past their length. A NULL pointer is allowed
 *   only with length 0.
 * - All malloc'ed results are released with free().
 * - All functions are thread-safe. Each thread keeps a reusable simdjson
 *   parser and scratch buffers (inputs larger than 256 KiB use a temporary
 *   parser instead, so that threads do not hold on to big buffers).
 * - Inputs larger than 4 GiB - 1 bytes fail with TSJ_ERR_TOO_LARGE.
 * - Inputs of 32 MiB or more (tsj_minify, tsj_for_each_member,
 *   tsj_split_object) are validated in place by the strict checker, with no
 *   copy and no simdjson document (same verdicts and messages): reading a
 *   big state takes about its own size once more, not three times.
 */
#ifndef TURNSTATE_JSON_H
#define TURNSTATE_JSON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Documents nested deeper than this are rejected with TSJ_ERR_DEPTH.
 * Depth counts containers: "[[1]]" and "[[]]" have depth 2, "1" has depth 0;
 * a document with exactly TSJ_MAX_DEPTH nested arrays/objects is accepted. */
#define TSJ_MAX_DEPTH 256

typedef enum tsj_code {
  TSJ_OK = 0,
  TSJ_ERR_SYNTAX = 1,        /* not JSON (includes empty input) */
  TSJ_ERR_UTF8 = 2,          /* invalid UTF-8, or an escaped lone surrogate */
  TSJ_ERR_DEPTH = 3,         /* nested deeper than TSJ_MAX_DEPTH */
  TSJ_ERR_NOMEM = 4,         /* out of memory */
  TSJ_ERR_NOT_ACTION = 5,    /* tsj_parse_action: not a {"type": "...", ...} object */
  TSJ_ERR_NOT_OBJECT = 6,    /* tsj_for_each_member: top level is not an object */
  TSJ_ERR_POINTER = 7,       /* malformed JSON Pointer */
  TSJ_ERR_NOT_FOUND = 8,     /* JSON Pointer names no value */
  TSJ_ERR_DUPLICATE_KEY = 9, /* an object has a key twice (at any depth) */
  TSJ_ERR_TOO_LARGE = 10,    /* input of 4 GiB or more */
  TSJ_ERR_INVALID_ARG = 11,  /* NULL where a pointer is required, or arguments that do not belong together */
  TSJ_ERR_PATCH = 12,        /* tsj_patch_apply: not a valid JSON Patch, or an operation failed */
  TSJ_ERR_TYPE = 13,         /* getters: the value is not of the kind asked for */
  TSJ_ERR_RANGE = 14         /* getters: a number outside the range of the C type */
} tsj_code;

typedef struct tsj_error {
  int code;           /* a tsj_code (or a callback's return value, see tsj_for_each_member) */
  long long offset;   /* byte offset of the fault in the input, -1 if unknown */
  char message[256];  /* NUL-terminated, single line */
} tsj_error;

/* A short constant name for a code, e.g. "TSJ_ERR_SYNTAX"; "TSJ_UNKNOWN" for others. */
const char *tsj_code_name(int code);

/* Validate `buf[0..len)` fully and strictly and return its minified text,
 * malloc'ed and NUL-terminated, in *out (length in *out_len; out_len may be
 * NULL). Returns a tsj_code; on failure *out is NULL and err says why.
 * Error messages look like "invalid UTF-8 at byte 17",
 * "trailing characters after the JSON value at byte 12",
 * "nesting deeper than 256 at byte 256". */
int tsj_minify(const char *buf, size_t len, char **out, size_t *out_len, tsj_error *err);

/* Parse a tagged action {"type": <string>, "payload": <any>, ...other keys
 * allowed}. Keys are compared after unescaping ("typ\u0065" is "type").
 *
 * One allocation: on success *out_block is a malloc'ed block (free() it) that
 * holds
 *   - the unescaped type, NUL-terminated; *out_type points to it and
 *     *out_type_len is its byte length ("todos\/add" gives "todos/add");
 *   - the minified payload text, NUL-terminated; *out_payload points to it,
 *     or is NULL when the action has no "payload" key ("payload": null gives
 *     the text "null").
 * out_type_len and out_payload may be NULL if not wanted.
 *
 * Errors: not JSON / UTF-8 / depth / a key twice in an object (at any depth,
 * "type" and "payload" included: TSJ_ERR_DUPLICATE_KEY) as tsj_minify; then,
 * in this order, TSJ_ERR_NOT_ACTION when the top level is not an object
 * ("top level must be an object, found array"), "type" is missing
 * ("\"type\" is missing"), not a string ("\"type\" must be a string, found
 * number"), empty ("\"type\" must not be empty") or contains U+0000
 * ("\"type\" must not contain \u0000"). On failure *out_block, *out_type
 * and *out_payload are NULL and *out_type_len is 0. */
int tsj_parse_action(const char *buf, size_t len, char **out_block, const char **out_type,
                     size_t *out_type_len, const char **out_payload, tsj_error *err);

/* The action {"type": TYPE, "payload": PAYLOAD} from its parts, without
 * parsing a text: `type` (type_len bytes, not escaped: UTF-8, non-empty, no
 * NUL) and `payload` (JSON text of payload_len bytes, or NULL for an action
 * without one: checked and minified as tsj_minify does; a minified number,
 * true, false, null or short escape-free ASCII string is taken as it is).
 * One allocation: on success *out_block is a malloc'ed block (free() it)
 * holding the type (NUL-terminated; *out_type), the minified payload
 * (NUL-terminated; *out_payload, NULL without one: may be NULL if not
 * wanted) and the action's minified JSON text {"type":"...","payload":...}
 * (*out_json). Errors: TSJ_ERR_INVALID_ARG (a NULL type or out pointer),
 * TSJ_ERR_NOT_ACTION (an empty type, or one with NUL), TSJ_ERR_UTF8 (a type
 * that is not UTF-8), or the payload's error as tsj_minify gives it. On
 * failure the out pointers are NULL. */
int tsj_make_action(const char *type, size_t type_len, const char *payload, size_t payload_len, char **out_block,
                    const char **out_json, const char **out_type, const char **out_payload, tsj_error *err);

/* Parse a JSON object and call `cb` once per top-level member in document
 * order with the member's key (unescaped, NUL-terminated, byte length given;
 * a key may contain NUL bytes from \u0000 escapes) and the minified text of
 * its value (NUL-terminated, length given). The pointers are valid only
 * during the callback. The callback may call any tsj_ function (including
 * tsj_for_each_member) on the same thread.
 *
 * The whole document is validated (duplicate keys at any depth included,
 * TSJ_ERR_DUPLICATE_KEY as everywhere) before the first call: on any error
 * cb is never called. Top level not an object -> TSJ_ERR_NOT_OBJECT.
 * If cb returns non-zero, iteration stops and that value is returned (and
 * stored in err->code, with offset -1). Returns TSJ_OK after the last member. */
typedef int (*tsj_member_cb)(const char *key, size_t key_len, const char *value, size_t value_len,
                             void *ctx);
int tsj_for_each_member(const char *buf, size_t len, tsj_member_cb cb, void *ctx, tsj_error *err);

/* As tsj_for_each_member, but each value is given to the callback to keep:
 * malloc'ed, minified, NUL-terminated; the callback owns it (free()) once
 * called, whatever it returns. The key is valid during the call only. For
 * a large input the largest value takes over the working buffer (moved to
 * its start and shrunk), so splitting a state into its slices does not copy
 * its biggest slice. */
/* Inputs of this many bytes or more are validated in place (default 32 MiB);
 * the JSON tests set it to 0 to run every case through that path too. */
extern size_t tsj_lean_input_bytes;

typedef int (*tsj_owned_member_cb)(const char *key, size_t key_len, char *value, size_t value_len, void *ctx);
int tsj_split_object(const char *buf, size_t len, tsj_owned_member_cb cb, void *ctx, tsj_error *err);

/* A parsed, immutable document kept for repeated JSON Pointer look-ups. It
 * holds the minified text plus a structural index (the start of every value,
 * and a hash table for objects with 16 or more members), so a look-up walks
 * only the pointer's tokens: array indices are O(1), members of large objects
 * are hashed, small objects are scanned, and finding a nested container is a
 * binary search (O(log containers)); a look-up in a 10 MB document takes a
 * few hundred nanoseconds. Memory: the minified text plus about 4 bytes per
 * value.
 * Thread-safe to read concurrently once made; the input buffer is not
 * referenced after tsj_doc_parse returns. */
typedef struct tsj_doc tsj_doc;

/* Validate as tsj_minify and build the document. NULL on failure (err says why). */
tsj_doc *tsj_doc_parse(const char *buf, size_t len, tsj_error *err);

/* Evaluate an RFC 6901 JSON Pointer ("" = whole document, "/a/0/b", with ~0
 * and ~1 escapes; array indices are decimal without leading zeros; "-" is
 * never found) and return the minified text of the value, malloc'ed,
 * NUL-terminated, in *out (length in *out_len; out_len may be NULL).
 * Bad pointer syntax (not empty and not starting with '/', '~' not followed
 * by '0' or '1', invalid UTF-8) -> TSJ_ERR_POINTER. No such value ->
 * TSJ_ERR_NOT_FOUND with a message that names the first token that was not
 * found and the path up to it, e.g.
 *   no member "x" in the object at "/a/b"
 *   index "7" is out of range for the array of 3 elements at "/a"
 *   "-" (the end of the array) is never found in the array at "/a"
 *   "01" is not an array index (leading zero) in the array at "/a"
 *   cannot look up "x" in the number at "/a/0"
 * err->offset is the offset in the pointer of the '/' that starts the
 * failing token. */
int tsj_doc_at_pointer(const tsj_doc *doc, const char *pointer, size_t pointer_len, char **out,
                       size_t *out_len, tsj_error *err);

/* Minified text of the whole document (NUL-terminated, owned by doc, or the
 * caller's text for tsj_doc_index). */
const char *tsj_doc_text(const tsj_doc *doc, size_t *len);

/* Builds the structural index of tsj_doc_parse over text that is ALREADY
 * validated and minified (tsj_minify's output, a slice of the state; not
 * checked) without copying or parsing it: one pass over the text, no
 * simdjson. The document borrows `minified[0..len)` (NUL-terminated): it
 * must stay unchanged and alive until tsj_doc_free. The index takes about
 * 4 bytes per value and 24 per container; if it would take more than
 * `max_index_bytes` (counted as it grows; vectors may briefly hold up to
 * twice that), or the text is 4 GiB or more (32-bit offsets), the result is
 * NULL with TSJ_ERR_TOO_LARGE: use tsj_text_at_pointer instead. No memory:
 * NULL with TSJ_ERR_NOMEM. */
tsj_doc *tsj_doc_index(const char *minified, size_t len, size_t max_index_bytes, tsj_error *err);

/* Bytes held by the document besides its text (the index), for tests. */
size_t tsj_doc_index_bytes(const tsj_doc *doc);

/* tsj_doc_at_pointer without an index, over validated minified text (not
 * checked): each token steps over the values before the one it names, so a
 * look-up costs up to the length of the text, and allocates nothing but the
 * result. Same results and messages as tsj_doc_at_pointer. */
int tsj_text_at_pointer(const char *minified, size_t len, const char *pointer, size_t pointer_len, char **out,
                        size_t *out_len, tsj_error *err);

void tsj_doc_free(tsj_doc *doc); /* NULL-safe */

/* ------------------------------------------------------------------------
 * JSON Patch (RFC 6902)
 *
 * Applies `patch[0..patch_len)` to `doc[0..len)`, which must be validated,
 * minified JSON text (tsj_minify's output, a slice of the state; it is not
 * checked), and returns the new document's minified text in *out
 * (malloc'ed, NUL-terminated, length in *out_len; out_len may be NULL).
 * `index` is NULL or a tsj_doc over exactly this text (tsj_doc_index(doc,
 * len, ...), or tsj_doc_parse's document with doc = tsj_doc_text(index));
 * an index over other text is refused with TSJ_ERR_INVALID_ARG.
 *
 * The patch is untrusted JSON text, validated fully and strictly like every
 * input (invalid JSON, UTF-8, nesting deeper than TSJ_MAX_DEPTH and keys
 * that appear twice keep their codes: TSJ_ERR_SYNTAX, TSJ_ERR_UTF8,
 * TSJ_ERR_DEPTH, TSJ_ERR_DUPLICATE_KEY). It must be an array of operation
 * objects; every operation is checked before the first one is applied:
 *   {"op":"add",     "path":P, "value":V}
 *   {"op":"remove",  "path":P}
 *   {"op":"replace", "path":P, "value":V}
 *   {"op":"move",    "from":F, "path":P}   F must not be a proper prefix of P
 *   {"op":"copy",    "from":F, "path":P}
 *   {"op":"test",    "path":P, "value":V}
 * "op", "path" and "from" are strings (member names and the op name are
 * compared after unescaping: "\u006fp" is "op"); P and F are RFC 6901 JSON
 * Pointers relative to the document. Other members are ignored (RFC 6902
 * section 4), e.g. "value" in a remove or "from" in an add.
 * Anything else (not an array, an operation that is not an object, "op"
 * missing, not a string or unknown, a member missing or of the wrong type, a
 * malformed pointer, a move into its own child) is TSJ_ERR_PATCH.
 *
 * Operations apply in order, each to the result of the one before; the
 * whole patch applies or nothing does: on any failure *out is NULL. The
 * semantics are RFC 6902's:
 * - add: "" replaces the whole document; a new member is appended at the end
 *   of its object; an existing member's value is replaced in place (its
 *   position is kept); in an array, index i (0 <= i <= length) inserts
 *   before element i, and i == length or "-" appends; i > length fails.
 *   The parent of the target must exist.
 * - remove: the member or element must exist ("" cannot be removed).
 * - replace: the target must exist; its value is replaced in place ("" is
 *   the whole document).
 * - move: remove at F, then add at P (P is evaluated after the removal, so
 *   moving element 0 to "/arr/2" of a 3-element array appends it). F must
 *   exist. A move with F == P changes nothing (the member keeps its place).
 * - copy: add at P of the value at F (which must exist).
 * - test: the value at P must equal V as JSON values: same kind; strings
 *   equal after unescaping ("\u0041" == "A"); numbers equal by exact
 *   decimal value, never through a double (1 == 1.0 == 1e0 == 10E-1,
 *   0 == -0 == 0.0, but 0.1 != 0.10000000000000001 and
 *   9007199254740993 != 9007199254740992; exponents of more than 18
 *   digits compare by their digits); arrays element by element; objects
 *   with the same members, in any order. true is not 1, null is not 0.
 * Failures are TSJ_ERR_PATCH with a message that names the operation (its
 * index from 0), its name and path, and what went wrong; err->offset is the
 * byte offset in the patch text of the failing operation (its '{'), or -1
 * when the patch itself is not an array of operations. For example:
 *   op 2 ("test" at "/items/3/done"): the value differs (found false)
 *   op 0 ("remove" at "/a/x"): no member "x" in the object at "/a"
 *   op 1 ("add" at "/list/9"): index "9" is out of range for the array of 3 elements at "/list"
 *   op 1: "op" is missing
 *   op 0: unknown op "delete" (expected add, remove, replace, move, copy or test)
 *   op 3 ("move" at "/a/b"): "from" ("/a") is a proper prefix of "path": a value cannot move into itself
 *   a JSON Patch must be an array of operations, found object
 *
 * The result is the new document's minified text, exactly as tsj_minify
 * would give it: bytes that no operation touched are kept as they are, and
 * inserted values are the patch's values minified verbatim (numbers keep
 * their digits, strings their escapes). A new member's key is written as
 * tsj_quote writes it (from the unescaped pointer token). No operation may
 * make the result nest deeper than `max_depth` (values larger than
 * TSJ_MAX_DEPTH count as TSJ_MAX_DEPTH, so that every function here can read
 * the result): an inserted value's depth plus the number of tokens of its
 * path is checked; the document's own depth is taken to be within
 * max_depth. Too deep is TSJ_ERR_DEPTH with a message that names the
 * operation.
 *
 * Success with nothing to change: when the patch has no operation that
 * changes the document (it is [] or has only "test" operations), the result
 * is TSJ_OK with *out NULL and *out_len 0: the document is unchanged, keep
 * using `doc` (no copy is made).
 *
 * Cost: the patch and the values it inserts are validated (O(patch)); the
 * document is never parsed or validated again. The first operation that
 * changes the document finds its target through `index` when given (the
 * pointer's tokens, each O(1) or O(log containers)), otherwise by stepping
 * through the text, and builds the result by splicing: prefix, new bytes,
 * suffix (one copy of the document). Every later operation works on that
 * result, without an index (its target by stepping through the text, its
 * splice in place). "test" operations before the first change read `doc`
 * through `index`, so a patch whose first "test" fails costs O(patch + path),
 * never O(document).
 *
 * on_path (may be NULL) is called only when the whole patch succeeded,
 * before tsj_patch_apply returns, once per changing operation in patch
 * order, with the pointer (unescaped from its JSON string, still in RFC 6901
 * form, NUL-terminated, valid during the call) of what it changed: add,
 * remove, replace and copy with "path"; move with "from" and then "path".
 * "test" operations are not reported. `ctx` is passed through.
 *
 * TSJ_ERR_INVALID_ARG for doc NULL or len 0, out NULL, or patch NULL with
 * patch_len > 0. */
typedef void (*tsj_path_cb)(const char *path, size_t path_len, void *ctx);
int tsj_patch_apply(const char *doc, size_t len, const tsj_doc *index, const char *patch, size_t patch_len,
                    size_t max_depth, char **out, size_t *out_len, tsj_path_cb on_path, void *ctx,
                    tsj_error *err);

/* ------------------------------------------------------------------------
 * Reading values without copies
 *
 * Over validated minified text (as tsj_patch_apply's `doc`), optionally with
 * its index, a value is a span: its bytes in the text and its kind. Spans
 * come from tsj_find, tsj_find_in and tsj_span_next over the same text; the
 * functions taking a span trust it (they check only that its kind matches
 * the text's byte at its offset, TSJ_ERR_INVALID_ARG otherwise), so a span
 * must be used with the text it came from, unchanged.
 *
 * Wrong kinds are TSJ_ERR_TYPE with a message such as
 * "expected an integer, found string"; numbers outside a C type's range are
 * TSJ_ERR_RANGE ("the number 1e30 is out of range for int64"). */
typedef enum tsj_kind { TSJ_NULL, TSJ_FALSE, TSJ_TRUE, TSJ_NUMBER, TSJ_STRING, TSJ_ARRAY, TSJ_OBJECT } tsj_kind;
typedef struct tsj_span {
  size_t offset; /* first byte of the value in the text */
  size_t length; /* its length in bytes (a string's includes its quotes) */
  int kind;      /* a tsj_kind */
} tsj_span;

/* "null", "false", "true", "number", "string", "array", "object"; "unknown" for others. */
const char *tsj_kind_name(int kind);

/* The value at JSON Pointer `pointer` (same syntax, errors and messages as
 * tsj_doc_at_pointer) in text[0..len), found through `index` when given (a
 * tsj_doc over exactly this text, else TSJ_ERR_INVALID_ARG), otherwise by
 * stepping through the text. Copies nothing. */
int tsj_find(const char *text, size_t len, const tsj_doc *index, const char *pointer, size_t pointer_len,
             tsj_span *out, tsj_error *err);

/* As tsj_find, with the pointer relative to the value `base` (a span of the
 * same text, e.g. an element from tsj_span_next): "" is base itself, and
 * messages name paths relative to base. A base that does not lie within
 * text[0..len) or whose kind is not the text's at its offset is
 * TSJ_ERR_INVALID_ARG. On failure *out is {0, 0, TSJ_NULL}. */
int tsj_find_in(const char *text, size_t len, const tsj_doc *index, tsj_span base, const char *pointer,
                size_t pointer_len, tsj_span *out, tsj_error *err);

/* Numbers. A number is an integer when its exact decimal value is one:
 * 42, -0, 1.0, 1e2 and 2.50E1 are integers (42, 0, 1, 100, 25); 1.5 and
 * 1e-1 are not (TSJ_ERR_TYPE, "expected an integer, found the number 1.5").
 * Integers outside int64 / uint64 are TSJ_ERR_RANGE (uint64: any negative
 * integer but -0). */
int tsj_span_int64(const char *text, tsj_span v, int64_t *out, tsj_error *err);
int tsj_span_uint64(const char *text, tsj_span v, uint64_t *out, tsj_error *err);
/* The double nearest to the number (correctly rounded, whatever the C
 * locale). A number too large for a double is TSJ_ERR_RANGE (never inf);
 * one too small rounds to a subnormal or to (signed) zero. */
int tsj_span_double(const char *text, tsj_span v, double *out, tsj_error *err);
/* true -> 1, false -> 0; anything else is TSJ_ERR_TYPE. */
int tsj_span_bool(const char *text, tsj_span v, int *out, tsj_error *err);

/* A string's content, unescaped. When the string has no escapes, *out
 * points into text (just past the opening quote; not NUL-terminated) and
 * *owned is NULL. Otherwise *owned is a malloc'ed NUL-terminated copy
 * (free() it) and *out == *owned. *out_len is the byte length; a string
 * with \u0000 has NUL bytes inside. On failure *out and *owned are NULL. */
int tsj_span_string(const char *text, tsj_span v, const char **out, size_t *out_len, char **owned,
                    tsj_error *err);

/* Elements of an array or members of an object: O(log containers) with
 * `index` (NULL or a tsj_doc over this text), else one pass over the
 * container's text. */
int tsj_span_count(const char *text, const tsj_doc *index, tsj_span v, size_t *out, tsj_error *err);

/* Iterates the children of an array or object in order. *cursor starts at
 * 0 and is advanced by each call (an opaque position; pass back what you
 * got). Returns TSJ_OK with the next child in *value (and for objects its
 * key, a string span with quotes, in *key; key may be NULL; for arrays *key
 * is set to {0, 0, TSJ_NULL}), or TSJ_ERR_NOT_FOUND after the last child
 * (message "no more elements" / "no more members"; *value is then
 * {0, 0, TSJ_NULL}, and so on every failure). A cursor that cannot
 * belong to the container is TSJ_ERR_INVALID_ARG. Each call costs the size
 * of the child it steps over. */
int tsj_span_next(const char *text, tsj_span container, size_t *cursor, tsj_span *key, tsj_span *value,
                  tsj_error *err);

/* ------------------------------------------------------------------------
 * Trees: a document kept in parts, so that a patch costs what it changes
 *
 * A tsj_tree holds validated minified JSON text (as tsj_patch_apply's `doc`;
 * not checked) split where that pays: every array or object whose text is
 * tsj_tree_split_bytes or more (default 4096) is a node (an array's
 * elements in a B-tree, an object's members in a list; objects of more than
 * 256 members stay one text), and every other value is a leaf of text. A
 * tree is immutable and thread-safe to read; versions made by
 * tsj_tree_patch share every part the patch did not touch (reference
 * counted: each tree handle is released with tsj_tree_free, in any order).
 *
 * Cost: tsj_tree_make is O(text); tsj_tree_patch of an operation whose path
 * goes through nodes costs its path (O(tokens x log elements) plus the size
 * of the leaf it ends in, and O(members) per object node), not O(text).
 * The results, refusals, error codes, messages and on_path calls are
 * exactly tsj_patch_apply's on the whole text: whatever the tree cannot do
 * in place (a failing operation, "remove" of ""), it does by applying the
 * patch to the whole text (joined once, see tsj_tree_text). */
typedef struct tsj_tree tsj_tree;

/* Containers of this many bytes or more are split (tests set it small). */
extern size_t tsj_tree_split_bytes;
/* How many tsj_tree_patch calls were answered through the whole text (for
 * tests; counted atomically). */
extern size_t tsj_tree_fallbacks;

/* The tree of minified[0..len) (copied; the caller keeps its text). NULL on
 * failure: TSJ_ERR_INVALID_ARG (NULL or empty), TSJ_ERR_NOMEM. */
tsj_tree *tsj_tree_make(const char *minified, size_t len, tsj_error *err);

/* Releases this handle (NULL-safe). */
void tsj_tree_free(tsj_tree *tree);

/* The length of the document's minified text. */
size_t tsj_tree_length(const tsj_tree *tree);

/* The document's whole minified text, NUL-terminated, owned by the tree:
 * joined on the first call (O(text)) and kept until tsj_tree_free; later
 * calls return it at once. Thread-safe. NULL if there is no memory (or
 * tree is NULL); *len (may be NULL) is the length either way. */
const char *tsj_tree_text(const tsj_tree *tree, size_t *len);

/* 1 if the tree has nodes (its top-level value was split), 0 if it is one text. */
int tsj_tree_is_split(const tsj_tree *tree);

/* tsj_patch_apply on the tree's document: the same patch rules, results,
 * codes, messages and on_path calls (max_depth as there). On success *out
 * is a new tree (release it with tsj_tree_free), or NULL when the patch
 * changes nothing. On failure *out is NULL and `tree` is unchanged.
 * TSJ_ERR_INVALID_ARG for tree or out NULL, or patch NULL with
 * patch_len > 0. */
int tsj_tree_patch(const tsj_tree *tree, const char *patch, size_t patch_len, size_t max_depth, tsj_tree **out,
                   tsj_path_cb on_path, void *ctx, tsj_error *err);

/* tsj_doc_at_pointer on the tree's document (same results, codes and
 * messages), found as tsj_tree_find finds it; the value's text is copied
 * (joined, for a node). */
int tsj_tree_at_pointer(const tsj_tree *tree, const char *pointer, size_t pointer_len, char **out, size_t *out_len,
                        tsj_error *err);

/* Reading a tree without joining it. A value in a tree is either a split
 * container (node: a tsj_tree handle borrowed from the tree, valid while
 * the tree is; text NULL; span {0, its length, its kind}), or a value in
 * the text of a leaf (node NULL; span as tsj_find's, in text[0..text_len),
 * which the tree owns). */
typedef struct tsj_tree_ref {
  const tsj_tree *node;
  const char *text;
  size_t text_len;
  tsj_span span;
} tsj_tree_ref;

/* The kind (tsj_kind) of the tree's value. */
int tsj_tree_kind(const tsj_tree *tree);

/* The value at `pointer` below `tree` (a tree or a node from a
 * tsj_tree_ref): the same values, codes and messages as tsj_find on its
 * text. Through the nodes (O(log elements) per array, O(members) per
 * object), then by stepping through the text of the leaf it reaches; a
 * pointer that names nothing costs the same (messages are made as
 * tsj_find makes them, naming the whole pointer). */
int tsj_tree_find(const tsj_tree *tree, const char *pointer, size_t pointer_len, tsj_tree_ref *out,
                  tsj_error *err);

/* Elements of a split array or members of a split object (0 for a tree that is not split). */
size_t tsj_tree_count(const tsj_tree *tree);

/* Child i of a split container (O(log elements)): *value, and for an
 * object its key in *key (a string: text is the key with its quotes; key
 * may be NULL). TSJ_ERR_NOT_FOUND past the last child ("no more elements"
 * / "no more members"), TSJ_ERR_INVALID_ARG for a tree that is not split. */
int tsj_tree_child(const tsj_tree *tree, size_t i, tsj_tree_ref *key, tsj_tree_ref *value, tsj_error *err);

/* Write `s[0..len)` as a JSON string literal (with quotes) into a malloc'ed
 * NUL-terminated buffer (*out, length in *out_len; out_len may be NULL).
 * Escapes '"' and '\\' and all control characters U+0000..U+001F (\b \f \n
 * \r \t, others as \u00XX); everything else, including '/' and non-ASCII
 * UTF-8, is copied verbatim. Returns TSJ_ERR_UTF8 if s is not valid UTF-8. */
int tsj_quote(const char *s, size_t len, char **out, size_t *out_len, tsj_error *err);

/* The deepest nesting of arrays and objects in `text[0..len)`, which must
 * already be valid JSON (it is not checked): "1" is 0, "[[1]]" is 2. */
size_t tsj_depth(const char *text, size_t len);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TURNSTATE_JSON_H */
