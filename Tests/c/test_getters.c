/*
 * test_getters.c - C API tests: the JSON getters (ts_json_at, ts_json_find,
 * ts_json_int/uint/double/bool/is_null/string/count/next and the
 * ts_json_get_* shortcuts): every kind, every error, white space, and the
 * texts of callbacks under way (a reducer's slice, an action's payload and
 * json), which must give the same answers as any copy of the same text.
 * Part of the C suite (check.h; `make test-c`; one test: build/tests/test_store -s TOPIC__RULE).
 */
#include "check.h"

#include <math.h>

static const char *doc =
    "{\"null\":null,\"f\":false,\"t\":true,\"i\":42,\"neg\":-7,\"big\":18446744073709551615,"
    "\"min\":-9223372036854775808,\"over\":9223372036854775808,\"dbl\":1.5,\"exp\":2.50E1,\"huge\":1e400,"
    "\"tiny\":1e-400,\"negz\":-0,\"s\":\"plain\",\"esc\":\"a\\\"b\\\\c\\u00e9\\n\",\"nul\":\"x\\u0000y\","
    "\"empty\":\"\",\"arr\":[1,\"two\",[3],{\"four\":4}],\"emptyarr\":[],"
    "\"obj\":{\"a\":{\"b\":[10,20]},\"c/d\":1,\"e~f\":2,\"\":3},\"emptyobj\":{}}";

/* The same document with white space everywhere it may be. */
static const char *spaced =
    " {\n \"null\" : null , \"f\" : false , \"t\" :true,\"i\" : 42 ,\"neg\":\t-7,\"big\": 18446744073709551615 ,\r\n"
    " \"min\" : -9223372036854775808 , \"over\" : 9223372036854775808 , \"dbl\" : 1.5 , \"exp\" : 2.50E1 , \"huge\" : 1e400 ,"
    " \"tiny\" : 1e-400 , \"negz\" : -0 , \"s\" : \"plain\" , \"esc\" : \"a\\\"b\\\\c\\u00e9\\n\" , \"nul\" : \"x\\u0000y\" ,"
    " \"empty\" : \"\" , \"arr\" : [ 1 , \"two\" , [ 3 ] , { \"four\" : 4 } ] , \"emptyarr\" : [ ] ,"
    " \"obj\" : { \"a\" : { \"b\" : [ 10 , 20 ] } , \"c/d\" : 1 , \"e~f\" : 2 , \"\" : 3 } , \"emptyobj\" : { } }\n";

static const char *pointers[] = {
    "", "/null", "/f", "/t", "/i", "/neg", "/big", "/min", "/over", "/dbl", "/exp", "/huge", "/tiny", "/negz", "/s",
    "/esc", "/nul", "/empty", "/arr", "/arr/0", "/arr/1", "/arr/2", "/arr/2/0", "/arr/3/four", "/arr/4", "/arr/-",
    "/arr/01", "/emptyarr", "/emptyarr/0", "/obj", "/obj/a/b/1", "/obj/c~1d", "/obj/e~0f", "/obj/", "/emptyobj",
    "/missing", "/i/x", "/s/0", "x", "/~2", "/obj/a/b/x", "/obj/a/b/2", "/null/x",
};

/* Everything the getters say about one (text, pointer): statuses, values,
 * and the part of each message after the function's name. */
typedef struct answer {
    ts_status at;
    char message[512];
    int32_t kind;
    char text[512];
    ts_status st[8];
    char messages[8][256];
    int64_t i;
    uint64_t u;
    double d;
    int b, is_null;
    char str[64];
    size_t str_len;
    size_t count;
    char children[512];
} answer;

/* The message without its "ts_json_xxx: " prefix. */
static void keep_message(char *into, size_t size) {
    const char *m = ts_last_error();
    const char *colon = strstr(m, ": ");
    snprintf(into, size, "%s", colon ? colon + 2 : m);
}

/* Removes white space outside strings (the texts compared for a spaced
 * document are the values' minified texts). */
static void minify_into(char *into, size_t size, const char *text, size_t length) {
    size_t at = 0;
    int in_string = 0;
    for (size_t i = 0; i < length && at + 1 < size; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\' && i + 1 < length) {
                into[at++] = c;
                c = text[++i];
            } else if (c == '"') {
                in_string = 0;
            }
        } else if (c == '"') {
            in_string = 1;
        } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
            continue;
        }
        if (at + 1 < size) into[at++] = c;
    }
    into[at] = '\0';
}

static void answer_of(const char *json, const char *pointer, answer *a) {
    memset(a, 0, sizeof *a);
    ts_json v;
    a->at = ts_json_at(json, pointer, &v);
    if (a->at != TS_OK) {
        keep_message(a->message, sizeof a->message);
        return;
    }
    a->kind = v.kind;
    minify_into(a->text, sizeof a->text, v.text, v.length);
    int n = 0;
    a->st[n] = ts_json_int(&v, &a->i);
    if (a->st[n] != TS_OK) keep_message(a->messages[n], sizeof a->messages[n]);
    n++;
    a->st[n] = ts_json_uint(&v, &a->u);
    if (a->st[n] != TS_OK) keep_message(a->messages[n], sizeof a->messages[n]);
    n++;
    a->st[n] = ts_json_double(&v, &a->d);
    if (a->st[n] != TS_OK) keep_message(a->messages[n], sizeof a->messages[n]);
    n++;
    a->st[n] = ts_json_bool(&v, &a->b);
    if (a->st[n] != TS_OK) keep_message(a->messages[n], sizeof a->messages[n]);
    n++;
    const char *s = NULL;
    a->st[n] = ts_json_string(&v, &s, &a->str_len);
    if (a->st[n] != TS_OK) keep_message(a->messages[n], sizeof a->messages[n]);
    else memcpy(a->str, s, a->str_len < sizeof a->str ? a->str_len : sizeof a->str - 1);
    n++;
    a->st[n] = ts_json_count(&v, &a->count);
    if (a->st[n] != TS_OK) keep_message(a->messages[n], sizeof a->messages[n]);
    n++;
    a->is_null = ts_json_is_null(&v);
    /* The children, as "key=kind:text" items. */
    size_t cursor = 0;
    ts_json key, child;
    ts_status st;
    while ((st = ts_json_next(&v, &cursor, &key, &child)) == TS_OK) {
        size_t used = strlen(a->children);
        char text[128];
        minify_into(text, sizeof text, child.text, child.length);
        const char *k = "";
        size_t klen = 0;
        if (key.text != NULL) ts_json_string(&key, &k, &klen);
        snprintf(a->children + used, sizeof a->children - used, "%.*s=%d:%s;", (int)klen, k, (int)child.kind, text);
    }
    a->st[n] = st;
    keep_message(a->messages[n], sizeof a->messages[n]);
}

/* The answers agree; `texts` also compares the values' texts. */
static void check_same(const answer *a, const answer *b, const char *what, const char *pointer, int line) {
    char detail[1024];
    snprintf(detail, sizeof detail, "%.40s, pointer \"%.40s\": ts_json_at %s vs %s, \"%.300s\" vs \"%.300s\"", what, pointer,
             ts_status_name(a->at), ts_status_name(b->at), a->message, b->message);
    int same = a->at == b->at && strcmp(a->message, b->message) == 0 && a->kind == b->kind &&
               strcmp(a->text, b->text) == 0 && a->i == b->i && a->u == b->u &&
               memcmp(&a->d, &b->d, sizeof a->d) == 0 && a->b == b->b && a->is_null == b->is_null &&
               a->str_len == b->str_len && memcmp(a->str, b->str, sizeof a->str) == 0 && a->count == b->count &&
               strcmp(a->children, b->children) == 0;
    for (int i = 0; i < 8; i++) same = same && a->st[i] == b->st[i] && strcmp(a->messages[i], b->messages[i]) == 0;
    ts_test_report(same, __FILE__, line, "same answers", detail);
}

void test_getters__everyKindIsReadInPlaceWithoutACopy(void) {
    ts_json v;
    CHECK_OK(ts_json_at(doc, "", &v));
    CHECK_INT(v.kind, TS_JSON_OBJECT);
    CHECK(v.text == doc && v.length == strlen(doc));
    const struct {
        const char *pointer;
        int32_t kind;
        const char *text;
    } kinds[] = {
        {"/null", TS_JSON_NULL, "null"}, {"/f", TS_JSON_FALSE, "false"}, {"/t", TS_JSON_TRUE, "true"},
        {"/i", TS_JSON_NUMBER, "42"}, {"/exp", TS_JSON_NUMBER, "2.50E1"}, {"/s", TS_JSON_STRING, "\"plain\""},
        {"/arr", TS_JSON_ARRAY, "[1,\"two\",[3],{\"four\":4}]"}, {"/obj/a", TS_JSON_OBJECT, "{\"b\":[10,20]}"},
        {"/emptyarr", TS_JSON_ARRAY, "[]"}, {"/emptyobj", TS_JSON_OBJECT, "{}"}, {"/obj/c~1d", TS_JSON_NUMBER, "1"},
        {"/obj/e~0f", TS_JSON_NUMBER, "2"}, {"/obj/", TS_JSON_NUMBER, "3"}, {"/arr/3/four", TS_JSON_NUMBER, "4"},
    };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        ts_json value;
        CHECK_OK(ts_json_at(doc, kinds[i].pointer, &value));
        CHECK_INT(value.kind, kinds[i].kind);
        /* No copy: the value is in the text. */
        CHECK(value.text > doc && value.text < doc + strlen(doc));
        CHECK_INT(value.length, strlen(kinds[i].text));
        CHECK(strncmp(value.text, kinds[i].text, value.length) == 0);
    }
    /* A NULL pointer is "": the whole text. A scalar text works too. */
    CHECK_OK(ts_json_at(doc, NULL, &v));
    CHECK_INT(v.kind, TS_JSON_OBJECT);
    CHECK_OK(ts_json_at(" 12 ", "", &v));
    CHECK_INT(v.kind, TS_JSON_NUMBER);
    CHECK_INT(v.length, 2);
    int64_t i = 0;
    CHECK_OK(ts_json_int(&v, &i));
    CHECK_INT(i, 12);
    CHECK_OK(ts_json_at("\"x\"", "", &v));
    CHECK_INT(v.kind, TS_JSON_STRING);
}

void test_getters__numbersReadExactlyOrRefuseOverflow(void) {
    int64_t i = 0;
    uint64_t u = 0;
    double d = 0;
    CHECK_OK(ts_json_get_int(doc, "/i", &i));
    CHECK_INT(i, 42);
    CHECK_OK(ts_json_get_int(doc, "/neg", &i));
    CHECK_INT(i, -7);
    CHECK_OK(ts_json_get_int(doc, "/min", &i));
    CHECK(i == INT64_MIN);
    CHECK_OK(ts_json_get_int(doc, "/exp", &i));
    CHECK_INT(i, 25);
    CHECK_OK(ts_json_get_int(doc, "/negz", &i));
    CHECK_INT(i, 0);
    CHECK_OK(ts_json_get_uint(doc, "/big", &u));
    CHECK(u == UINT64_MAX);
    CHECK_OK(ts_json_get_uint(doc, "/negz", &u));
    CHECK(u == 0);
    CHECK_OK(ts_json_get_uint(doc, "/over", &u));
    CHECK(u == 9223372036854775808u);
    CHECK_OK(ts_json_get_double(doc, "/dbl", &d));
    CHECK(d == 1.5);
    CHECK_OK(ts_json_get_double(doc, "/i", &d));
    CHECK(d == 42.0);
    CHECK_OK(ts_json_get_double(doc, "/tiny", &d));
    CHECK(d == 0.0);
    CHECK_OK(ts_json_get_double(doc, "/negz", &d));
    CHECK(d == 0.0 && signbit(d));
    CHECK_OK(ts_json_get_double(doc, "/big", &d));
    CHECK(d == 18446744073709551615.0);
    /* Refused, nothing written: never a wrapped, cut or infinite value. */
    i = 77;
    u = 77;
    d = 77;
    CHECK_ST(ts_json_get_int(doc, "/over", &i), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "ts_json_get_int: the value at \"/over\": ");
    CHECK_CONTAINS(ts_last_error(), "out of range");
    CHECK_ST(ts_json_get_int(doc, "/big", &i), TS_E_ARGUMENT);
    CHECK_ST(ts_json_get_int(doc, "/dbl", &i), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "expected an integer, found the number 1.5");
    CHECK_ST(ts_json_get_int(doc, "/huge", &i), TS_E_ARGUMENT);
    CHECK_ST(ts_json_get_int(doc, "/s", &i), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "ts_json_get_int: the value at \"/s\": expected an integer, found string");
    CHECK_ST(ts_json_get_uint(doc, "/neg", &u), TS_E_ARGUMENT);
    CHECK_ST(ts_json_get_uint(doc, "/min", &u), TS_E_ARGUMENT);
    CHECK_ST(ts_json_get_uint(doc, "/t", &u), TS_E_ARGUMENT);
    CHECK_ST(ts_json_get_double(doc, "/huge", &d), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "ts_json_get_double: the value at \"/huge\": ");
    CHECK_ST(ts_json_get_double(doc, "/null", &d), TS_E_ARGUMENT);
    CHECK_ST(ts_json_get_double(doc, "/arr", &d), TS_E_ARGUMENT);
    CHECK_INT(i, 77);
    CHECK(u == 77);
    CHECK(d == 77);
    /* Integers with fractions and exponents that are whole. */
    CHECK_OK(ts_json_get_int("[1.0,1e2,-2.50E1,100e-2]", "/0", &i));
    CHECK_INT(i, 1);
    CHECK_OK(ts_json_get_int("[1.0,1e2,-2.50E1,100e-2]", "/1", &i));
    CHECK_INT(i, 100);
    CHECK_OK(ts_json_get_int("[1.0,1e2,-2.50E1,100e-2]", "/2", &i));
    CHECK_INT(i, -25);
    CHECK_OK(ts_json_get_int("[1.0,1e2,-2.50E1,100e-2]", "/3", &i));
    CHECK_INT(i, 1);
    CHECK_ST(ts_json_get_int("[1e-1]", "/0", &i), TS_E_ARGUMENT);
}

void test_getters__boolAndNullReadAsThemselves(void) {
    int b = 9;
    CHECK_OK(ts_json_get_bool(doc, "/t", &b));
    CHECK_INT(b, 1);
    CHECK_OK(ts_json_get_bool(doc, "/f", &b));
    CHECK_INT(b, 0);
    b = 9;
    CHECK_ST(ts_json_get_bool(doc, "/null", &b), TS_E_ARGUMENT);
    CHECK_ST(ts_json_get_bool(doc, "/i", &b), TS_E_ARGUMENT);
    CHECK_ST(ts_json_get_bool(doc, "/s", &b), TS_E_ARGUMENT);
    CHECK_INT(b, 9);
    ts_json v;
    CHECK_OK(ts_json_at(doc, "/null", &v));
    CHECK_INT(ts_json_is_null(&v), 1);
    CHECK_OK(ts_json_at(doc, "/f", &v));
    CHECK_INT(ts_json_is_null(&v), 0);
    CHECK_OK(ts_json_at(doc, "/empty", &v));
    CHECK_INT(ts_json_is_null(&v), 0);
    CHECK_INT(ts_json_is_null(NULL), 0);
}

void test_getters__stringsAreUnescapedAndSized(void) {
    const char *s = NULL;
    size_t n = 0;
    /* No escapes: the bytes in the text, not NUL-terminated there. */
    CHECK_OK(ts_json_get_string(doc, "/s", &s, &n));
    CHECK_INT(n, 5);
    CHECK(s > doc && s < doc + strlen(doc));
    CHECK(strncmp(s, "plain", n) == 0 && s[n] == '"');
    CHECK_OK(ts_json_get_string(doc, "/empty", &s, &n));
    CHECK_INT(n, 0);
    /* Escapes: an unescaped copy (NUL-terminated). */
    CHECK_OK(ts_json_get_string(doc, "/esc", &s, &n));
    CHECK_STR(s, "a\"b\\c\xc3\xa9\n");
    CHECK_INT(n, 8);
    CHECK(s < doc || s > doc + strlen(doc));
    CHECK_OK(ts_json_get_string(doc, "/nul", &s, &n));
    CHECK_INT(n, 3);
    CHECK(memcmp(s, "x\0y", 3) == 0);
    /* out_len may be NULL. */
    CHECK_OK(ts_json_get_string(doc, "/s", &s, NULL));
    /* Keys are strings. */
    ts_json obj, key, value;
    size_t cursor = 0;
    CHECK_OK(ts_json_at(doc, "/obj", &obj));
    CHECK_OK(ts_json_next(&obj, &cursor, &key, &value));
    CHECK_INT(key.kind, TS_JSON_STRING);
    CHECK_OK(ts_json_string(&key, &s, &n));
    CHECK(n == 1 && s[0] == 'a');
    /* Other kinds. */
    s = "kept";
    n = 99;
    CHECK_ST(ts_json_get_string(doc, "/i", &s, &n), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "ts_json_get_string: the value at \"/i\": expected a string, found number");
    CHECK_ST(ts_json_get_string(doc, "/null", &s, &n), TS_E_ARGUMENT);
    CHECK_ST(ts_json_string(&obj, &s, &n), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "ts_json_string: ");
    CHECK_STR(s, "kept");
    CHECK_INT(n, 99);
}

void test_getters__containersGiveTheirCount(void) {
    ts_json arr, obj, v, key;
    size_t count = 0, cursor = 0;
    CHECK_OK(ts_json_at(doc, "/arr", &arr));
    CHECK_OK(ts_json_count(&arr, &count));
    CHECK_INT(count, 4);
    CHECK_OK(ts_json_at(doc, "/obj", &obj));
    CHECK_OK(ts_json_count(&obj, &count));
    CHECK_INT(count, 4);
    CHECK_OK(ts_json_at(doc, "/emptyarr", &v));
    CHECK_OK(ts_json_count(&v, &count));
    CHECK_INT(count, 0);
    cursor = 0;
    CHECK_ST(ts_json_next(&v, &cursor, NULL, &key), TS_E_NOT_FOUND);
    CHECK_OK(ts_json_at(doc, "/emptyobj", &v));
    CHECK_OK(ts_json_count(&v, &count));
    CHECK_INT(count, 0);
    cursor = 0;
    CHECK_ST(ts_json_next(&v, &cursor, &key, &v), TS_E_NOT_FOUND);
    count = 5;
    CHECK_OK(ts_json_at(doc, "/s", &v));
    CHECK_ST(ts_json_count(&v, &count), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "ts_json_count: ");
    CHECK_INT(count, 5);
    CHECK_ST(ts_json_next(&v, &cursor, NULL, &key), TS_E_ARGUMENT);

    /* Elements in order; an array's key is {NULL, 0, TS_JSON_NULL}. */
    const int32_t kinds[] = {TS_JSON_NUMBER, TS_JSON_STRING, TS_JSON_ARRAY, TS_JSON_OBJECT};
    int seen = 0;
    cursor = 0;
    key.text = "x";
    while (ts_json_next(&arr, &cursor, &key, &v) == TS_OK) {
        if (seen < 4) CHECK_INT(v.kind, kinds[seen]);
        CHECK(key.text == NULL && key.length == 0 && key.kind == TS_JSON_NULL);
        seen++;
    }
    CHECK_INT(seen, 4);
    CHECK_CONTAINS(ts_last_error(), "no more elements");
    /* Again at the end: still the end. */
    CHECK_ST(ts_json_next(&arr, &cursor, NULL, &v), TS_E_NOT_FOUND);
    /* Members in order, with their keys; a child read further with find. */
    const char *keys[] = {"a", "c/d", "e~f", ""};
    seen = 0;
    cursor = 0;
    while (ts_json_next(&obj, &cursor, &key, &v) == TS_OK) {
        const char *k;
        size_t n;
        CHECK_OK(ts_json_string(&key, &k, &n));
        if (seen < 4) CHECK(n == strlen(keys[seen]) && strncmp(k, keys[seen], n) == 0);
        if (seen == 0) {
            ts_json b;
            int64_t i;
            CHECK_OK(ts_json_find(&v, "/b/1", &b));
            CHECK_OK(ts_json_int(&b, &i));
            CHECK_INT(i, 20);
        }
        seen++;
    }
    CHECK_INT(seen, 4);
    CHECK_CONTAINS(ts_last_error(), "no more members");
    /* A cursor that is not one of this container's. */
    cursor = 12345;
    CHECK_ST(ts_json_next(&obj, &cursor, NULL, &v), TS_E_ARGUMENT);
    CHECK_INT(cursor, 12345);
}

void test_getters__findResolvesPointersWithinAValue(void) {
    ts_json obj, v;
    int64_t i = 0;
    CHECK_OK(ts_json_at(doc, "/obj", &obj));
    CHECK_OK(ts_json_find(&obj, "/a/b/0", &v));
    CHECK_OK(ts_json_int(&v, &i));
    CHECK_INT(i, 10);
    CHECK_OK(ts_json_find(&obj, "", &v));
    CHECK(v.text == obj.text && v.length == obj.length && v.kind == obj.kind);
    CHECK_OK(ts_json_find(&obj, NULL, &v));
    CHECK(v.text == obj.text);
    /* Paths in messages are relative to the value. */
    CHECK_ST(ts_json_find(&obj, "/a/x", &v), TS_E_NOT_FOUND);
    CHECK_STR(ts_last_error(), "ts_json_find: JSON Pointer \"/a/x\": no member \"x\" in the object at \"/a\"");
    CHECK_ST(ts_json_find(&obj, "a", &v), TS_E_ARGUMENT);
    CHECK_ST(ts_json_find(NULL, "/a", &v), TS_E_ARGUMENT);
    CHECK_ST(ts_json_find(&obj, "/a", NULL), TS_E_ARGUMENT);
}

void test_getters__wrongKindOrMissingPathIsRefusedWithMessage(void) {
    ts_json v, sentinel;
    memset(&sentinel, 0x5a, sizeof sentinel);
    v = sentinel;
    int64_t i = 7;
    CHECK_ST(ts_json_at(NULL, "", &v), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "ts_json_at: json is NULL");
    CHECK_ST(ts_json_at(doc, "", NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_json_at(doc, "i", &v), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "ts_json_at: JSON Pointer \"i\": ");
    CHECK_ST(ts_json_at(doc, "/a~2", &v), TS_E_ARGUMENT);
    CHECK_ST(ts_json_at(doc, "/\xff", &v), TS_E_ARGUMENT);
    /* Not found: the message names the token and the path up to it. */
    CHECK_ST(ts_json_at(doc, "/obj/a/x", &v), TS_E_NOT_FOUND);
    CHECK_STR(ts_last_error(), "ts_json_at: JSON Pointer \"/obj/a/x\": no member \"x\" in the object at \"/obj/a\"");
    CHECK_ST(ts_json_at(doc, "/arr/9", &v), TS_E_NOT_FOUND);
    CHECK_CONTAINS(ts_last_error(), "index \"9\" is out of range for the array of 4 elements at \"/arr\"");
    CHECK_ST(ts_json_at(doc, "/arr/-", &v), TS_E_NOT_FOUND);
    CHECK_ST(ts_json_at(doc, "/arr/01", &v), TS_E_NOT_FOUND);
    CHECK_ST(ts_json_at(doc, "/i/0", &v), TS_E_NOT_FOUND);
    /* Invalid JSON: strict, as everywhere. */
    const char *bad[] = {"", "{", "{\"a\":}", "{\"a\":1,\"a\":2}", "[1] x", "\"\xff\"", "[01]", "{'a':1}"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        CHECK_ST(ts_json_at(bad[k], "", &v), TS_E_JSON);
        CHECK_CONTAINS(ts_last_error(), "ts_json_at: invalid JSON: ");
        CHECK_ST(ts_json_get_int(bad[k], "/a", &i), TS_E_JSON);
    }
    char *too_deep = nested("", TS_MAX_DEPTH + 1, "", "");
    CHECK_ST(ts_json_at(too_deep, "", &v), TS_E_JSON);
    free(too_deep);
    CHECK(memcmp(&v, &sentinel, sizeof v) == 0);
    CHECK_INT(i, 7);
    /* NULL outputs and values. */
    CHECK_ST(ts_json_get_int(doc, "/i", NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_json_get_uint(doc, "/i", NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_json_get_double(doc, "/i", NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_json_get_bool(doc, "/t", NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_json_get_string(doc, "/s", NULL, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_json_int(NULL, &i), TS_E_ARGUMENT);
    CHECK_ST(ts_json_count(NULL, NULL), TS_E_ARGUMENT);
    CHECK_OK(ts_json_at(doc, "/arr", &v));
    size_t cursor = 0;
    CHECK_ST(ts_json_next(&v, NULL, NULL, &v), TS_E_ARGUMENT);
    CHECK_ST(ts_json_next(&v, &cursor, NULL, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_json_int(&v, NULL), TS_E_ARGUMENT);
    /* A zeroed value (an array element's key) is no value. */
    ts_json empty;
    memset(&empty, 0, sizeof empty);
    CHECK_ST(ts_json_int(&empty, &i), TS_E_ARGUMENT);
    CHECK_ST(ts_json_find(&empty, "", &v), TS_E_ARGUMENT);
}

void test_getters__whiteSpaceAroundValuesIsIgnored(void) {
    /* A spaced text answers as its minified form, every pointer. */
    for (size_t k = 0; k < sizeof pointers / sizeof pointers[0]; k++) {
        answer a, b;
        answer_of(doc, pointers[k], &a);
        answer_of(spaced, pointers[k], &b);
        check_same(&a, &b, "spaced", pointers[k], __LINE__);
    }
    /* Values keep their white space; find and next below them work. */
    ts_json obj, v, key;
    CHECK_OK(ts_json_at(spaced, "/obj", &obj));
    CHECK(obj.text[obj.length - 1] == '}' && obj.text[0] == '{');
    CHECK_OK(ts_json_find(&obj, "/a/b/1", &v));
    CHECK(v.length == 2 && strncmp(v.text, "20", 2) == 0);
    CHECK_OK(ts_json_at(spaced, "/arr", &v));
    size_t cursor = 0, n = 0;
    while (ts_json_next(&v, &cursor, &key, &obj) == TS_OK) n++;
    CHECK_INT(n, 4);
    CHECK_ST(ts_json_at(spaced, "/obj/zz", &v), TS_E_NOT_FOUND);
    CHECK_STR(ts_last_error(), "ts_json_at: JSON Pointer \"/obj/zz\": no member \"zz\" in the object at \"/obj\"");
}

/* ---- Recognised texts ---------------------------------------------------- */

/* What the recognising reducer and middleware found wrong: counted here. */
static int recognition_failures;
static int recognition_checks;

static void compare_texts(const char *given, const char *what) {
    /* The copy is another address with the same text: never recognised. */
    char *copy = xstrdup(given);
    for (size_t k = 0; k < sizeof pointers / sizeof pointers[0]; k++) {
        answer a, b;
        answer_of(given, pointers[k], &a);
        answer_of(copy, pointers[k], &b);
        int before = ts_test_failed();
        check_same(&a, &b, what, pointers[k], __LINE__);
        if (ts_test_failed() != before) recognition_failures++;
        recognition_checks++;
    }
    /* Values are in the given text, not in a copy of it. */
    ts_json v;
    if (ts_json_at(given, "/s", &v) == TS_OK) {
        CHECK(v.text > given && v.text < given + strlen(given));
    }
    free(copy);
}

static char *recognising_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    if (slice == NULL) return xstrdup(doc);
    if (strcmp(a->type, "read") != 0) return NULL;
    compare_texts(slice, "slice_json");
    compare_texts(a->payload, "payload");
    compare_texts(a->json, "action json");
    /* A pointer into the slice is not the slice: validated, and refused. */
    ts_json v;
    CHECK_ST(ts_json_at(slice + 1, "", &v), TS_E_JSON);
    return NULL;
}

static ts_status recognising_middleware(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    (void)api;
    (void)ctx;
    if (strcmp(a->type, "read") == 0) {
        compare_texts(a->payload, "middleware payload");
        compare_texts(a->json, "middleware json");
    }
    return next(a->json);
}

void test_getters__readsAgreeOnWhiteSpacedAndMinifiedActions(void) {
    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_middleware(store, "reader", recognising_middleware, NULL));
    CHECK_OK(ts_store_add_reducer(store, "doc", recognising_reducer, NULL));
    recognition_failures = recognition_checks = 0;
    /* The payload is the document; the action json has white space. */
    char *action = xprintf("{ \"type\" : \"read\" , \"payload\" : %s }", spaced);
    CHECK_OK(ts_store_dispatch(store, action));
    CHECK_INT(recognition_checks, 5 * (int)(sizeof pointers / sizeof pointers[0]));
    CHECK_INT(recognition_failures, 0);
    free(action);
    /* And minified action json. */
    action = xprintf("{\"type\":\"read\",\"payload\":%s}", doc);
    recognition_failures = recognition_checks = 0;
    CHECK_OK(ts_store_dispatch(store, action));
    CHECK_INT(recognition_failures, 0);
    CHECK(recognition_checks > 0);
    free(action);
    /* Twice on the same slice (its index made once and kept). */
    recognition_failures = recognition_checks = 0;
    CHECK_OK(ts_store_dispatch(store, "{\"type\":\"read\",\"payload\":{\"s\":\"x\"}}"));
    CHECK_INT(recognition_failures, 0);
    ts_store_destroy(store);
}

/* Reads "/items/N/id" of a big slice through the getters. */
static int big_reads_ok;
static char *big_reader(const char *slice, const ts_action *a, void *ctx) {
    size_t items = *(size_t *)ctx;
    if (slice == NULL) {
        size_t size = items * 40 + 32;
        char *text = malloc(size);
        size_t at = (size_t)snprintf(text, size, "{\"items\":[");
        for (size_t k = 0; k < items; k++) {
            at += (size_t)snprintf(text + at, size - at, "%s{\"id\":%zu,\"done\":false}", k ? "," : "", k);
        }
        snprintf(text + at, size - at, "]}");
        return text;
    }
    int64_t want, id;
    char pointer[64];
    if (ts_json_get_int(a->payload, "/n", &want) != TS_OK) return NULL;
    snprintf(pointer, sizeof pointer, "/items/%lld/id", (long long)want);
    ts_json items_value;
    size_t count = 0;
    if (ts_json_get_int(slice, pointer, &id) == TS_OK && id == want && ts_json_at(slice, "/items", &items_value) == TS_OK &&
        ts_json_count(&items_value, &count) == TS_OK && count == items) {
        big_reads_ok++;
    }
    return NULL;
}

void test_getters__bigSliceReadsAsASmallOne(void) {
    size_t items = ts_test_quick ? 2000 : 100000;
    ts_store *store = new_store(NULL);
    CHECK_OK(ts_store_add_reducer(store, "big", big_reader, &items));
    big_reads_ok = 0;
    int reads = ts_test_quick ? 20 : 200;
    for (int k = 0; k < reads; k++) {
        char *action = xprintf("{\"type\":\"read\",\"payload\":{\"n\":%zu}}", (size_t)k * 7919 % items);
        CHECK_OK(ts_store_dispatch(store, action));
        free(action);
    }
    CHECK_INT(big_reads_ok, reads);
    ts_store_destroy(store);
}

/* Threads: each reads escaped strings (the thread's own copies). */
static void *string_reader(void *arg) {
    int *bad = arg;
    char text[64];
    for (int k = 0; k < (ts_test_quick ? 200 : 5000); k++) {
        snprintf(text, sizeof text, "{\"s\":\"v\\u0041%d\"}", k);
        const char *s;
        size_t n;
        char want[32];
        snprintf(want, sizeof want, "vA%d", k);
        if (ts_json_get_string(text, "/s", &s, &n) != TS_OK || n != strlen(want) || memcmp(s, want, n) != 0) (*bad)++;
    }
    return NULL;
}

void test_getters__readsFromManyThreadsAgree(void) {
    enum { THREADS = 4 };
    pthread_t threads[THREADS];
    int bad[THREADS] = {0};
    for (int t = 0; t < THREADS; t++) CHECK(pthread_create(&threads[t], NULL, string_reader, &bad[t]) == 0);
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        CHECK_INT(bad[t], 0);
    }
}

