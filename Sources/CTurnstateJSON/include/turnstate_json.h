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
 *   tsj_for_each_member, tsj_doc_parse), so every reader of the same text
 *   sees the same members. The check is O(n): objects with 16 keys or more
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
  TSJ_ERR_INVALID_ARG = 11   /* NULL where a pointer is required */
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
