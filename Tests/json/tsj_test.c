/* tsj_test.c - tests for the CTurnstateJSON C API (turnstate_json.h).
 *
 * Build and run with Tests/json/run.sh from the repository root.
 * Environment: TSJ_BENCH_ITERS (timing loop iterations, default 200000),
 * TSJ_BIG_MB (size of the big document in MB, default 10), TSJ_MANY_KEYS
 * (keys of the one-object duplicate-check documents, default 200000).
 * On the harness of Tests/harness/ts_test.h (the registry is generated from
 * this file; -s TOPIC or -s TOPIC__RULE runs part of it). Prints "N passed,
 * M failed" and exits non-zero if anything failed. */
#include "ts_test.h"

#include "turnstate_json.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A helper's check (the MINIFY_OK... helpers): its message is the failure's
 * description, formatted only when the check fails. */
static void check_at(int ok, const char *file, int line, const char *fmt, ...) {
  char what[1024] = "";
  if (!ok) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
  }
  ts_test_report(ok, file, line, what, NULL);
}

static int contains(const char *hay, const char *needle) { return strstr(hay, needle) != NULL; }

/* ------------------------------------------------------------------------ */
/* Helpers */

static void minify_ok_at(const char *file, int line, const char *in, size_t len, const char *want) {
  char *out = (char *)1;
  size_t out_len = 12345;
  tsj_error err;
  int rc = tsj_minify(in, len, &out, &out_len, &err);
  check_at(rc == TSJ_OK && out && out_len == strlen(want) && memcmp(out, want, out_len) == 0 &&
               out[out_len] == '\0' && err.code == 0 && err.offset == -1 && err.message[0] == '\0',
           file, line, "minify(%.60s): rc=%s out=%.80s want=%.80s msg=%s", in, tsj_code_name(rc),
           out ? out : "(null)", want, err.message);
  free(out);
}
#define MINIFY_OK(in, want) minify_ok_at(__FILE__, __LINE__, in, strlen(in), want)
#define MINIFY_OK_LEN(in, len, want) minify_ok_at(__FILE__, __LINE__, in, len, want)

static void minify_err_at(const char *file, int line, const char *in, size_t len, int code, long long offset,
                          const char *msg_part) {
  char *out = (char *)1;
  size_t out_len = 12345;
  tsj_error err;
  memset(&err, 0x55, sizeof err);
  int rc = tsj_minify(in, len, &out, &out_len, &err);
  check_at(rc == code && err.code == code && out == NULL && out_len == 0 && err.offset == offset &&
               (!msg_part || contains(err.message, msg_part)) && strlen(err.message) < sizeof err.message,
           file, line, "minify(%.60s): rc=%s (want %s) offset=%lld (want %lld) msg=\"%s\" (want \"%s\")", in,
           tsj_code_name(rc), tsj_code_name(code), err.offset, offset, err.message, msg_part ? msg_part : "");
  free(out);
}
#define MINIFY_ERR(in, code, off, part) minify_err_at(__FILE__, __LINE__, in, strlen(in), code, off, part)
#define MINIFY_ERR_LEN(in, len, code, off, part) minify_err_at(__FILE__, __LINE__, in, len, code, off, part)

static void action_ok_at(const char *file, int line, const char *in, const char *want_type, size_t want_type_len,
                         const char *want_payload) {
  char *block = NULL;
  const char *type = NULL, *payload = (const char *)1;
  size_t type_len = 999;
  tsj_error err;
  int rc = tsj_parse_action(in, strlen(in), &block, &type, &type_len, &payload, &err);
  int ok = rc == TSJ_OK && block && type == block && type_len == want_type_len &&
           memcmp(type, want_type, want_type_len) == 0 && type[type_len] == '\0';
  if (want_payload) ok = ok && payload && strcmp(payload, want_payload) == 0 && payload > type + type_len;
  else ok = ok && payload == NULL;
  check_at(ok, file, line, "parse_action(%.80s): rc=%s type=%.40s payload=%.80s msg=%s", in, tsj_code_name(rc),
           type ? type : "(null)", payload ? payload : "(null)", err.message);
  free(block);
}
#define ACTION_OK(in, type, payload) action_ok_at(__FILE__, __LINE__, in, type, strlen(type), payload)

static void action_err_at(const char *file, int line, const char *in, size_t len, int code, long long offset,
                          const char *msg_part) {
  char *block = (char *)1;
  const char *type = (const char *)1, *payload = (const char *)1;
  size_t type_len = 999;
  tsj_error err;
  int rc = tsj_parse_action(in, len, &block, &type, &type_len, &payload, &err);
  check_at(rc == code && err.code == code && block == NULL && type == NULL && payload == NULL && type_len == 0 &&
               err.offset == offset && (!msg_part || contains(err.message, msg_part)),
           file, line, "parse_action(%.60s): rc=%s (want %s) offset=%lld (want %lld) msg=\"%s\" (want \"%s\")", in,
           tsj_code_name(rc), tsj_code_name(code), err.offset, offset, err.message, msg_part ? msg_part : "");
}
#define ACTION_ERR(in, code, off, part) action_err_at(__FILE__, __LINE__, in, strlen(in), code, off, part)

/* for_each_member collector: "key=value;" for each member (NULs in keys shown as \0). */
typedef struct {
  char buf[8192];
  size_t len;
  int calls;
  int stop_at;     /* return 42 on this call number (1-based), 0 = never */
  int bad_termination;
} collector;

static void coll_append(collector *c, const char *s, size_t n) {
  if (c->len + n + 1 >= sizeof c->buf) n = sizeof c->buf - c->len - 1;
  memcpy(c->buf + c->len, s, n);
  c->len += n;
  c->buf[c->len] = '\0';
}

static int collect_cb(const char *key, size_t key_len, const char *value, size_t value_len, void *ctx) {
  collector *c = (collector *)ctx;
  c->calls++;
  if (key[key_len] != '\0' || value[value_len] != '\0' || strlen(value) != value_len) c->bad_termination = 1;
  for (size_t i = 0; i < key_len; i++) {
    if (key[i] == '\0') coll_append(c, "\\0", 2);
    else coll_append(c, key + i, 1);
  }
  coll_append(c, "=", 1);
  coll_append(c, value, value_len);
  coll_append(c, ";", 1);
  return (c->stop_at && c->calls == c->stop_at) ? 42 : 0;
}

static void members_ok_at(const char *file, int line, const char *in, const char *want, int want_calls) {
  collector c;
  memset(&c, 0, sizeof c);
  tsj_error err;
  int rc = tsj_for_each_member(in, strlen(in), collect_cb, &c, &err);
  check_at(rc == TSJ_OK && c.calls == want_calls && strcmp(c.buf, want) == 0 && !c.bad_termination && err.code == 0,
           file, line, "for_each_member(%.60s): rc=%s calls=%d got=%s want=%s msg=%s", in, tsj_code_name(rc), c.calls,
           c.buf, want, err.message);
}
#define MEMBERS_OK(in, want, calls) members_ok_at(__FILE__, __LINE__, in, want, calls)

static void members_err_at(const char *file, int line, const char *in, int code, long long offset,
                           const char *msg_part) {
  collector c;
  memset(&c, 0, sizeof c);
  tsj_error err;
  int rc = tsj_for_each_member(in, strlen(in), collect_cb, &c, &err);
  check_at(rc == code && err.code == code && c.calls == 0 && err.offset == offset &&
               (!msg_part || contains(err.message, msg_part)),
           file, line, "for_each_member(%.60s): rc=%s (want %s) calls=%d offset=%lld (want %lld) msg=\"%s\"", in,
           tsj_code_name(rc), tsj_code_name(code), c.calls, err.offset, offset, err.message);
}
#define MEMBERS_ERR(in, code, off, part) members_err_at(__FILE__, __LINE__, in, code, off, part)

/* Every pointer case runs three ways, which must agree: the parsed
 * document (tsj_doc_parse), an index over its text (tsj_doc_index, the
 * store's slices), and no index at all (tsj_text_at_pointer). */
static const char *const g_ways[] = {"doc_parse", "doc_index", "text_at_pointer"};

static int at_pointer_way(int way, const tsj_doc *d, const char *ptr, char **out, size_t *out_len, tsj_error *err) {
  size_t len = 0;
  const char *text = tsj_doc_text(d, &len);
  if (way == 0) return tsj_doc_at_pointer(d, ptr, strlen(ptr), out, out_len, err);
  if (way == 2) return tsj_text_at_pointer(text, len, ptr, strlen(ptr), out, out_len, err);
  tsj_error index_err;
  tsj_doc *index = tsj_doc_index(text, len, (size_t)-1, &index_err);
  if (!index) {
    *err = index_err;
    return -1;
  }
  int rc = tsj_doc_at_pointer(index, ptr, strlen(ptr), out, out_len, err);
  tsj_doc_free(index);
  return rc;
}

static void ptr_ok_at(const char *file, int line, const tsj_doc *d, const char *ptr, const char *want) {
  for (int way = 0; way < 3; way++) {
    char *out = NULL;
    size_t out_len = 0;
    tsj_error err;
    int rc = at_pointer_way(way, d, ptr, &out, &out_len, &err);
    check_at(rc == TSJ_OK && out && out_len == strlen(want) && strcmp(out, want) == 0, file, line,
             "%s(%s): rc=%s out=%.80s want=%.80s msg=%s", g_ways[way], ptr, tsj_code_name(rc), out ? out : "(null)",
             want, err.message);
    free(out);
  }
}
#define PTR_OK(d, ptr, want) ptr_ok_at(__FILE__, __LINE__, d, ptr, want)

static void ptr_err_at(const char *file, int line, const tsj_doc *d, const char *ptr, int code, long long offset,
                       const char *part1, const char *part2) {
  char first[256] = "";
  for (int way = 0; way < 3; way++) {
    char *out = (char *)1;
    size_t out_len = 77;
    tsj_error err;
    int rc = at_pointer_way(way, d, ptr, &out, &out_len, &err);
    check_at(rc == code && err.code == code && out == NULL && out_len == 0 && err.offset == offset &&
                 (!part1 || contains(err.message, part1)) && (!part2 || contains(err.message, part2)) &&
                 (way == 0 || strcmp(first, err.message) == 0),
             file, line,
             "%s(%s): rc=%s (want %s) offset=%lld (want %lld) msg=\"%s\" (want \"%s\" / \"%s\", first way \"%s\")",
             g_ways[way], ptr, tsj_code_name(rc), tsj_code_name(code), err.offset, offset, err.message,
             part1 ? part1 : "", part2 ? part2 : "", first);
    if (way == 0) snprintf(first, sizeof first, "%s", err.message);
  }
}
#define PTR_ERR(d, ptr, code, off, p1, p2) ptr_err_at(__FILE__, __LINE__, d, ptr, code, off, p1, p2)

static void quote_ok_at(const char *file, int line, const char *in, size_t len, const char *want) {
  char *out = NULL;
  size_t out_len = 0;
  tsj_error err;
  int rc = tsj_quote(in, len, &out, &out_len, &err);
  check_at(rc == TSJ_OK && out && out_len == strlen(want) && strcmp(out, want) == 0, file, line,
           "quote: rc=%s out=%s want=%s", tsj_code_name(rc), out ? out : "(null)", want);
  free(out);
}
#define QUOTE_OK(in, want) quote_ok_at(__FILE__, __LINE__, in, strlen(in), want)
#define QUOTE_OK_LEN(in, len, want) quote_ok_at(__FILE__, __LINE__, in, len, want)

static char *repeat_wrap(const char *open, const char *inner, const char *close, int times) {
  size_t lo = strlen(open), li = strlen(inner), lc = strlen(close);
  char *s = (char *)malloc(lo * times + li + lc * times + 1);
  char *p = s;
  for (int i = 0; i < times; i++) memcpy(p, open, lo), p += lo;
  memcpy(p, inner, li), p += li;
  for (int i = 0; i < times; i++) memcpy(p, close, lc), p += lc;
  *p = '\0';
  return s;
}

/* ------------------------------------------------------------------------ */

void test_minify__validDocumentsMinifyToTheirCanonicalText(void) {
  MINIFY_OK("{}", "{}");
  MINIFY_OK(" \t\r\n{ \"a\" : [ 1 , 2 , { } , [ ] ] , \"b\" : \"x y\\n\" } \n", "{\"a\":[1,2,{},[]],\"b\":\"x y\\n\"}");
  MINIFY_OK("1", "1");
  MINIFY_OK("  -12.5e-3  ", "-12.5e-3");
  MINIFY_OK("\"str\"", "\"str\"");
  MINIFY_OK("true", "true");
  MINIFY_OK(" false ", "false");
  MINIFY_OK("null", "null");
  MINIFY_OK("[]", "[]");
  MINIFY_OK("[ \"  spaces  inside  \" ]", "[\"  spaces  inside  \"]");
  /* escapes are preserved verbatim, not re-encoded */
  MINIFY_OK("\"\\u0041\\/\\\"\\\\\\b\\f\\n\\r\\t\\ud83d\\ude00\"", "\"\\u0041\\/\\\"\\\\\\b\\f\\n\\r\\t\\ud83d\\ude00\"");
  MINIFY_OK("\"a\\u0000b\"", "\"a\\u0000b\"");
  /* valid UTF-8 passes through */
  MINIFY_OK("[\"caf\xc3\xa9\", \"\xe2\x82\xac\", \"\xf0\x90\x8d\x88\", \"\xf4\x8f\xbf\xbf\", \"\x7f\"]",
            "[\"caf\xc3\xa9\",\"\xe2\x82\xac\",\"\xf0\x90\x8d\x88\",\"\xf4\x8f\xbf\xbf\",\"\x7f\"]");
  /* 64-bit integers and number text survive exactly */
  MINIFY_OK("{\"n\": 18446744073709551615}", "{\"n\":18446744073709551615}");
  MINIFY_OK("-9223372036854775808", "-9223372036854775808");
  MINIFY_OK("9223372036854775807", "9223372036854775807");
  MINIFY_OK("[1.0, 1e2, 1E+2, -0, -0.0, 0.1, 1.5e300, 1e-400, 3.141592653589793238462643383279]",
            "[1.0,1e2,1E+2,-0,-0.0,0.1,1.5e300,1e-400,3.141592653589793238462643383279]");
  /* numbers beyond simdjson's range are still valid JSON and kept verbatim */
  MINIFY_OK("18446744073709551616", "18446744073709551616");
  MINIFY_OK("[ 123456789012345678901234567890 , -1e400, 1e400 ]", "[123456789012345678901234567890,-1e400,1e400]");
  MINIFY_OK("{\"big\": 1e400, \"s\": \"a b\"}", "{\"big\":1e400,\"s\":\"a b\"}");
  /* an object with a key twice is invalid (more in test_duplicates) */
  MINIFY_ERR("{\"a\":1,\"a\":2}", TSJ_ERR_DUPLICATE_KEY, 7, "duplicate key \"a\" at byte 7");
  /* inputs need no NUL terminator: only len bytes are read */
  MINIFY_OK_LEN("[1, 2]garbage", 6, "[1,2]");
  char unterminated[4] = {'[', '7', ']', 'x'};
  MINIFY_OK_LEN(unterminated, 3, "[7]");
  /* out_len is optional */
  char *out = NULL;
  CHECK_MSG(tsj_minify("[ 1 ]", 5, &out, NULL, NULL) == TSJ_OK && out && strcmp(out, "[1]") == 0, "out_len NULL");
  free(out);
}

void test_minify__invalidDocumentsFailWithCodeOffsetAndMessage(void) {
  MINIFY_ERR("", TSJ_ERR_SYNTAX, 0, "empty input");
  MINIFY_ERR_LEN(NULL, 0, TSJ_ERR_SYNTAX, 0, "empty input");
  MINIFY_ERR("   ", TSJ_ERR_SYNTAX, 3, "expected a JSON value at byte 3");
  MINIFY_ERR("[1,]", TSJ_ERR_SYNTAX, 3, "expected a JSON value at byte 3, found ']'");
  MINIFY_ERR("{\"a\":1,}", TSJ_ERR_SYNTAX, 7, "expected a string key at byte 7");
  MINIFY_ERR("01", TSJ_ERR_SYNTAX, 1, "leading zeros");
  MINIFY_ERR("-01", TSJ_ERR_SYNTAX, 2, "invalid number at byte 2");
  MINIFY_ERR("1.", TSJ_ERR_SYNTAX, 2, "invalid number at byte 2");
  MINIFY_ERR("1.e5", TSJ_ERR_SYNTAX, 2, "invalid number");
  MINIFY_ERR("1e", TSJ_ERR_SYNTAX, 2, "exponent");
  MINIFY_ERR("1e+", TSJ_ERR_SYNTAX, 3, "exponent");
  MINIFY_ERR("-", TSJ_ERR_SYNTAX, 1, "invalid number at byte 1");
  MINIFY_ERR("+1", TSJ_ERR_SYNTAX, 0, "expected a JSON value at byte 0, found '+'");
  MINIFY_ERR(".5", TSJ_ERR_SYNTAX, 0, NULL);
  MINIFY_ERR("NaN", TSJ_ERR_SYNTAX, 0, NULL);
  MINIFY_ERR("Infinity", TSJ_ERR_SYNTAX, 0, NULL);
  MINIFY_ERR("'a'", TSJ_ERR_SYNTAX, 0, NULL);
  MINIFY_ERR("0x10", TSJ_ERR_SYNTAX, 1, "trailing characters after the JSON value at byte 1");
  MINIFY_ERR("tru", TSJ_ERR_SYNTAX, 3, "invalid literal at byte 3");
  MINIFY_ERR("nul", TSJ_ERR_SYNTAX, 3, "invalid literal");
  MINIFY_ERR("nulL", TSJ_ERR_SYNTAX, 3, "invalid literal");
  MINIFY_ERR("fals", TSJ_ERR_SYNTAX, 4, "invalid literal");
  MINIFY_ERR("truex", TSJ_ERR_SYNTAX, 4, "trailing characters");
  MINIFY_ERR("[1 2]", TSJ_ERR_SYNTAX, 3, "expected ',' or ']' at byte 3, found '2'");
  MINIFY_ERR("{\"a\":1 \"b\":2}", TSJ_ERR_SYNTAX, 7, "expected ',' or '}'");
  MINIFY_ERR("{\"a\" 1}", TSJ_ERR_SYNTAX, 5, "expected ':'");
  MINIFY_ERR("{1:2}", TSJ_ERR_SYNTAX, 1, "expected a string key");
  MINIFY_ERR("{\"a\":}", TSJ_ERR_SYNTAX, 5, "expected a JSON value");
  MINIFY_ERR("[", TSJ_ERR_SYNTAX, 1, "found end of input");
  MINIFY_ERR("[1,2", TSJ_ERR_SYNTAX, 4, "found end of input");
  MINIFY_ERR("{\"a\":1", TSJ_ERR_SYNTAX, 6, "expected ',' or '}'");
  MINIFY_ERR("]", TSJ_ERR_SYNTAX, 0, NULL);
  MINIFY_ERR("\"abc", TSJ_ERR_SYNTAX, 0, "unterminated string starting at byte 0");
  MINIFY_ERR("[\"a\\\"]", TSJ_ERR_SYNTAX, 1, "unterminated string");
  MINIFY_ERR("\"a\nb\"", TSJ_ERR_SYNTAX, 2, "unescaped control character 0x0A in string at byte 2");
  MINIFY_ERR("\"a\tb\"", TSJ_ERR_SYNTAX, 2, "control character");
  MINIFY_ERR_LEN("\"a\0b\"", 5, TSJ_ERR_SYNTAX, 2, "control character 0x00");
  MINIFY_ERR("\"\\x\"", TSJ_ERR_SYNTAX, 1, "invalid escape sequence at byte 1");
  MINIFY_ERR("\"\\u12G4\"", TSJ_ERR_SYNTAX, 1, "invalid \\u escape");
  MINIFY_ERR("\"\\u12\"", TSJ_ERR_SYNTAX, 1, "invalid \\u escape");
  MINIFY_ERR("\"\\ud800\"", TSJ_ERR_UTF8, 1, "unpaired surrogate");
  MINIFY_ERR("\"\\udc00\"", TSJ_ERR_UTF8, 1, "unpaired surrogate");
  MINIFY_ERR("\"\\ud800\\u0041\"", TSJ_ERR_UTF8, 1, "unpaired surrogate");
  MINIFY_ERR("\"\\ud800\\ud800\"", TSJ_ERR_UTF8, 1, "unpaired surrogate");
  MINIFY_ERR_LEN("[1]\0", 4, TSJ_ERR_SYNTAX, 3, "trailing characters after the JSON value at byte 3");
  /* a fault at every position of a long string (the checker skips plain
   * bytes eight at a time) */
  for (int pos = 0; pos < 40; pos++) {
    char str[64], want[80];
    memset(str, 'a', sizeof str);
    str[0] = '"';
    str[41] = '"';
    str[42] = '\0';
    str[1 + pos] = '\x01';
    snprintf(want, sizeof want, "unescaped control character 0x01 in string at byte %d", 1 + pos);
    MINIFY_ERR(str, TSJ_ERR_SYNTAX, 1 + pos, want);
    str[1 + pos] = '\\';
    if (pos < 39) {
      str[2 + pos] = 'x';
      snprintf(want, sizeof want, "invalid escape sequence at byte %d", 1 + pos);
      MINIFY_ERR(str, TSJ_ERR_SYNTAX, 1 + pos, want);
      str[2 + pos] = 'a';
    }
    str[1 + pos] = '"';
    MINIFY_ERR(str, TSJ_ERR_SYNTAX, 2 + pos, "trailing characters");
  }
  /* trailing garbage */
  MINIFY_ERR("{} {}", TSJ_ERR_SYNTAX, 3, "trailing characters after the JSON value at byte 3");
  MINIFY_ERR("1 2", TSJ_ERR_SYNTAX, 2, "trailing characters");
  MINIFY_ERR("{}x", TSJ_ERR_SYNTAX, 2, "trailing characters");
  MINIFY_ERR("[]]", TSJ_ERR_SYNTAX, 2, "trailing characters");
  MINIFY_ERR("{\"type\":\"x\"}   ,", TSJ_ERR_SYNTAX, 15, "trailing characters after the JSON value at byte 15");
  /* a number simdjson cannot represent does not hide a later error */
  MINIFY_ERR("[1e400, x]", TSJ_ERR_SYNTAX, 8, "expected a JSON value at byte 8");
  MINIFY_ERR("[123456789012345678901234567890,\"\\ud800\"]", TSJ_ERR_UTF8, 33, "unpaired surrogate");
  /* bad arguments */
  MINIFY_ERR_LEN(NULL, 3, TSJ_ERR_INVALID_ARG, -1, NULL);
  tsj_error err;
  CHECK_MSG(tsj_minify("1", 1, NULL, NULL, &err) == TSJ_ERR_INVALID_ARG, "out NULL");
  /* err may be NULL */
  char *out = (char *)1;
  CHECK_MSG(tsj_minify("[", 1, &out, NULL, NULL) == TSJ_ERR_SYNTAX && out == NULL, "err NULL");
}

void test_utf8__onlyWellFormedUtf8IsAccepted(void) {
  MINIFY_ERR("\"\xc0\x80\"", TSJ_ERR_UTF8, 1, "invalid UTF-8 at byte 1");            /* overlong NUL */
  MINIFY_ERR("\"\xc1\xbf\"", TSJ_ERR_UTF8, 1, "invalid UTF-8");                     /* overlong 2-byte */
  MINIFY_ERR("\"\xe0\x80\x80\"", TSJ_ERR_UTF8, 1, "invalid UTF-8");                 /* overlong 3-byte */
  MINIFY_ERR("\"\xe0\x9f\xbf\"", TSJ_ERR_UTF8, 1, "invalid UTF-8");                 /* overlong 3-byte */
  MINIFY_ERR("\"\xf0\x80\x80\x80\"", TSJ_ERR_UTF8, 1, "invalid UTF-8");             /* overlong 4-byte */
  MINIFY_ERR("\"\xed\xa0\x80\"", TSJ_ERR_UTF8, 1, "invalid UTF-8");                 /* U+D800 */
  MINIFY_ERR("\"\xed\xbf\xbf\"", TSJ_ERR_UTF8, 1, "invalid UTF-8");                 /* U+DFFF */
  MINIFY_ERR("\"\xed\xa0\xbd\xed\xb8\x80\"", TSJ_ERR_UTF8, 1, "invalid UTF-8");     /* CESU-8 pair */
  MINIFY_ERR("\"\xf4\x90\x80\x80\"", TSJ_ERR_UTF8, 1, "invalid UTF-8");             /* > U+10FFFF */
  MINIFY_ERR("\"\xf5\x80\x80\x80\"", TSJ_ERR_UTF8, 1, "invalid UTF-8");
  MINIFY_ERR("\"\xff\"", TSJ_ERR_UTF8, 1, "invalid UTF-8");
  MINIFY_ERR("\"\x80\"", TSJ_ERR_UTF8, 1, "invalid UTF-8");                         /* lone continuation */
  MINIFY_ERR("\"ab\xe2\x82\"", TSJ_ERR_UTF8, 3, "invalid UTF-8 at byte 3");         /* truncated */
  MINIFY_ERR("\"ab\xf0\x9f\x98\"", TSJ_ERR_UTF8, 3, "invalid UTF-8 at byte 3");     /* truncated 4-byte */
  MINIFY_ERR("[\"x\",\"\xe2\x82", TSJ_ERR_UTF8, 6, "invalid UTF-8 at byte 6");      /* truncated at end */
  MINIFY_ERR("\"\xe2\x82" "a\"", TSJ_ERR_UTF8, 1, "invalid UTF-8");                /* truncated + ASCII */
  MINIFY_ERR("{\"key\":\"abcdefghi\xff\"}", TSJ_ERR_UTF8, 17, "invalid UTF-8 at byte 17");
  MINIFY_ERR("\xc3\xa9", TSJ_ERR_SYNTAX, 0, "found byte 0xC3");                  /* valid UTF-8, not JSON */
}

void test_utf8__invalidUtf8IsReportedBeforeAnEarlierSyntaxError(void) {
  /* invalid UTF-8 is reported even when a syntax error comes first */
  MINIFY_ERR("[1,,\"\xff\"]", TSJ_ERR_UTF8, 5, "invalid UTF-8 at byte 5");
  /* valid UTF-8 outside strings is a syntax error */
  MINIFY_ERR("[\xc3\xa9]", TSJ_ERR_SYNTAX, 1, "byte 0xC3");
}

/* ------------------------------------------------------------------------ */
/* Depth, on a thread with a 128 KB stack */

typedef struct {
  int done;
} depth_result;

static void *depth_thread(void *arg) {
  depth_result *res = (depth_result *)arg;
  char *out = NULL;
  size_t out_len = 0;
  tsj_error err;

  /* exactly TSJ_MAX_DEPTH nested arrays, non-empty (simdjson alone rejects this one) */
  char *deep = repeat_wrap("[", "1", "]", TSJ_MAX_DEPTH);
  MINIFY_OK(deep, deep);
  char *spaced = repeat_wrap("[ ", "1", " ]", TSJ_MAX_DEPTH);
  MINIFY_OK(spaced, deep);
  /* exactly TSJ_MAX_DEPTH, empty innermost */
  char *deep_empty = repeat_wrap("[", "", "]", TSJ_MAX_DEPTH);
  MINIFY_OK(deep_empty, deep_empty);
  /* exactly TSJ_MAX_DEPTH nested objects */
  char *deep_obj = repeat_wrap("{\"a\":", "true", "}", TSJ_MAX_DEPTH);
  MINIFY_OK(deep_obj, deep_obj);
  char *deep_obj_empty = repeat_wrap("{\"a\":", "{}", "}", TSJ_MAX_DEPTH - 1);
  MINIFY_OK(deep_obj_empty, deep_obj_empty);

  /* TSJ_MAX_DEPTH + 1 */
  char *too_deep = repeat_wrap("[", "1", "]", TSJ_MAX_DEPTH + 1);
  MINIFY_ERR(too_deep, TSJ_ERR_DEPTH, TSJ_MAX_DEPTH, "nesting deeper than 256 at byte 256");
  char *too_deep_empty = repeat_wrap("[", "", "]", TSJ_MAX_DEPTH + 1);
  MINIFY_ERR(too_deep_empty, TSJ_ERR_DEPTH, TSJ_MAX_DEPTH, "nesting deeper");
  char *too_deep_obj = repeat_wrap("{\"a\":", "1", "}", TSJ_MAX_DEPTH + 1);
  MINIFY_ERR(too_deep_obj, TSJ_ERR_DEPTH, 5 * TSJ_MAX_DEPTH, "nesting deeper");
  /* 100,000 '[' */
  size_t many = 100000;
  char *brackets = (char *)malloc(many + 1);
  memset(brackets, '[', many);
  brackets[many] = '\0';
  MINIFY_ERR(brackets, TSJ_ERR_DEPTH, TSJ_MAX_DEPTH, "nesting deeper");
  ACTION_ERR(brackets, TSJ_ERR_DEPTH, TSJ_MAX_DEPTH, NULL);
  MEMBERS_ERR(brackets, TSJ_ERR_DEPTH, TSJ_MAX_DEPTH, NULL);
  CHECK_MSG(tsj_doc_parse(brackets, many, &err) == NULL && err.code == TSJ_ERR_DEPTH, "doc_parse 100000 [");
  /* 100,000 '{"a":' */
  char *objs = repeat_wrap("{\"a\":", "", "", 100000);
  MINIFY_ERR(objs, TSJ_ERR_DEPTH, 5 * TSJ_MAX_DEPTH, "nesting deeper");

  /* actions and members holding a payload at the depth limit */
  char *inner = repeat_wrap("[", "1", "]", TSJ_MAX_DEPTH - 1);
  size_t alen = strlen(inner) + 64;
  char *action = (char *)malloc(alen);
  snprintf(action, alen, "{\"type\":\"deep\",\"payload\":%s}", inner);
  ACTION_OK(action, "deep", inner);
  char *want = (char *)malloc(alen);
  snprintf(want, alen, "type=\"deep\";payload=%s;", inner);
  MEMBERS_OK(action, want, 2);
  char *action2 = repeat_wrap("[", "1", "]", TSJ_MAX_DEPTH);
  ACTION_ERR(action2, TSJ_ERR_NOT_ACTION, 0, "found array");
  char *wrapped = (char *)malloc(alen + 2);
  snprintf(wrapped, alen + 2, "{\"type\":\"deep\",\"payload\":[%s]}", inner);
  ACTION_ERR(wrapped, TSJ_ERR_DEPTH, 25 + TSJ_MAX_DEPTH - 1, "nesting deeper than 256 at byte 280");

  /* pointers at the depth limit */
  tsj_doc *d = tsj_doc_parse(deep, strlen(deep), &err);
  CHECK_MSG(d != NULL, "doc_parse deep: %s", err.message);
  if (d) {
    char *ptr = (char *)malloc(4 * TSJ_MAX_DEPTH + 1);
    ptr[0] = '\0';
    for (int i = 0; i < TSJ_MAX_DEPTH; i++) strcat(ptr, "/0");
    PTR_OK(d, ptr, "1");
    ptr[2 * (TSJ_MAX_DEPTH - 1)] = '\0';
    PTR_OK(d, ptr, "[1]");
    PTR_OK(d, "", deep);
    for (int i = 0; i < TSJ_MAX_DEPTH; i++) strcat(ptr, "/0");
    PTR_ERR(d, ptr, TSJ_ERR_NOT_FOUND, 2 * TSJ_MAX_DEPTH, "cannot look up \"0\" in the number", NULL);
    free(ptr);
    tsj_doc_free(d);
  }
  d = tsj_doc_parse(deep_obj, strlen(deep_obj), &err);
  CHECK_MSG(d != NULL, "doc_parse deep_obj: %s", err.message);
  if (d) {
    char *ptr = (char *)malloc(2 * TSJ_MAX_DEPTH + 1);
    ptr[0] = '\0';
    for (int i = 0; i < TSJ_MAX_DEPTH; i++) strcat(ptr, "/a");
    PTR_OK(d, ptr, "true");
    free(ptr);
    tsj_doc_free(d);
  }
  CHECK_MSG(tsj_doc_parse(too_deep, strlen(too_deep), &err) == NULL && err.code == TSJ_ERR_DEPTH &&
            err.offset == TSJ_MAX_DEPTH,
        "doc_parse too deep");

  (void)out;
  (void)out_len;
  free(deep), free(spaced), free(deep_empty), free(deep_obj), free(deep_obj_empty), free(too_deep);
  free(too_deep_empty), free(too_deep_obj), free(brackets), free(objs), free(inner), free(action), free(want);
  free(action2), free(wrapped);
  res->done = 1;
  return NULL;
}

void test_depth__deepDocumentsFailCleanlyOnASmallStack(void) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  int rc = pthread_attr_setstacksize(&attr, 128 * 1024);
  CHECK_MSG(rc == 0, "pthread_attr_setstacksize: %d", rc);
  pthread_t th;
  depth_result res = {0};
  rc = pthread_create(&th, &attr, depth_thread, &res);
  CHECK_MSG(rc == 0, "pthread_create: %d", rc);
  if (rc == 0) pthread_join(th, NULL);
  pthread_attr_destroy(&attr);
  CHECK_MSG(res.done, "depth thread finished");
}

/* ------------------------------------------------------------------------ */

void test_action__typeAndPayloadAreFoundOrRefusedWithAReason(void) {
  ACTION_OK("{\"type\":\"todos/add\",\"payload\":{\"id\":1,\"text\":\"hi\"}}", "todos/add", "{\"id\":1,\"text\":\"hi\"}");
  ACTION_OK(" { \"type\" : \"todos/add\" , \"payload\" : { \"id\" : 1 , \"text\" : \"hi there\" } } ", "todos/add",
            "{\"id\":1,\"text\":\"hi there\"}");
  ACTION_OK("{\"type\":\"todos\\/add\"}", "todos/add", NULL);
  ACTION_OK("{\"payload\":[1, 2],\"type\":\"a\\/b\"}", "a/b", "[1,2]");
  ACTION_OK("{\"type\":\"a\\/b\",\"payload\":[ 1 , \"x y\" ]}", "a/b", "[1,\"x y\"]");
  ACTION_OK("{\"ty\\u0070e\":\"x\",\"payload\":null}", "x", "null");
  ACTION_OK("{\"type\":\"x\",\"payload\": null }", "x", "null");
  ACTION_OK("{\"type\":\"x\",\"payload\":{}}", "x", "{}");
  ACTION_OK("{\"type\":\"x\",\"payload\":\"  a  b  \"}", "x", "\"  a  b  \"");
  ACTION_OK("{\"type\":\"x\",\"payload\":\"q\\\"r\\\\n\"}", "x", "\"q\\\"r\\\\n\"");
  ACTION_OK("{\"type\":\"x\",\"pay\\u006coad\":7}", "x", "7");
  ACTION_OK("{\"type\":\"caf\\u00e9 \\ud83d\\ude00\"}", "caf\xc3\xa9 \xf0\x9f\x98\x80", NULL);
  ACTION_OK("{\"type\":\"caf\xc3\xa9\"}", "caf\xc3\xa9", NULL);
  ACTION_OK("{\"type\":\"t\\n\\t\\\"\"}", "t\n\t\"", NULL);
  ACTION_OK("{\"meta\":{\"type\":1},\"type\":\"x\",\"payload\":{\"x\":[1, 2, {\"y\":\"z w\"}]},\"other\":[true]}", "x",
            "{\"x\":[1,2,{\"y\":\"z w\"}]}");
  ACTION_OK("{\"type\":\"n\",\"payload\":{\"u\":18446744073709551615,\"i\":-9223372036854775808,\"d\":1.0,\"e\":1E+2,"
            "\"z\":-0,\"h\":123456789012345678901234567890}}",
            "n",
            "{\"u\":18446744073709551615,\"i\":-9223372036854775808,\"d\":1.0,\"e\":1E+2,\"z\":-0,"
            "\"h\":123456789012345678901234567890}");
  ACTION_ERR("{\"type\":\"dup other keys\",\"meta\":1,\"meta\":2}", TSJ_ERR_DUPLICATE_KEY, 34,
             "duplicate key \"meta\" at byte 34");

  ACTION_ERR("{\"payload\":1}", TSJ_ERR_NOT_ACTION, -1, "\"type\" is missing");
  ACTION_ERR("{}", TSJ_ERR_NOT_ACTION, -1, "\"type\" is missing");
  ACTION_ERR("{\"Type\":\"x\"}", TSJ_ERR_NOT_ACTION, -1, "\"type\" is missing");
  ACTION_ERR("{\"type\":1}", TSJ_ERR_NOT_ACTION, 8, "\"type\" must be a string, found number");
  ACTION_ERR("{\"type\": null}", TSJ_ERR_NOT_ACTION, 9, "\"type\" must be a string, found null");
  ACTION_ERR("{\"type\":{}}", TSJ_ERR_NOT_ACTION, 8, "found object");
  ACTION_ERR("{\"type\":[\"a\"]}", TSJ_ERR_NOT_ACTION, 8, "found array");
  ACTION_ERR("{\"type\":true}", TSJ_ERR_NOT_ACTION, 8, "found boolean");
  ACTION_ERR("{\"type\":\"\"}", TSJ_ERR_NOT_ACTION, 8, "\"type\" must not be empty");
  ACTION_ERR("{\"type\":\"a\",\"type\":\"b\"}", TSJ_ERR_DUPLICATE_KEY, 12, "duplicate key \"type\" at byte 12");
  ACTION_ERR("{\"type\":\"a\",\"typ\\u0065\":\"b\"}", TSJ_ERR_DUPLICATE_KEY, 12, "duplicate key \"type\"");
  ACTION_ERR("{\"type\":1,\"type\":\"b\",\"type\":\"c\"}", TSJ_ERR_DUPLICATE_KEY, 10, "duplicate key \"type\"");
  ACTION_ERR("{\"type\":\"a\\u0000b\"}", TSJ_ERR_NOT_ACTION, 8, "\\u0000");
  ACTION_ERR("{\"type\":\"a\",\"payload\":1,\"payload\":2}", TSJ_ERR_DUPLICATE_KEY, 24, "duplicate key \"payload\"");
  ACTION_ERR("{\"type\":\"a\",\"payload\":1,\"p\\u0061yload\":2}", TSJ_ERR_DUPLICATE_KEY, 24, "\"payload\"");
  ACTION_ERR("[{\"type\":\"a\"}]", TSJ_ERR_NOT_ACTION, 0, "top level must be an object, found array");
  ACTION_ERR("  \"type\"", TSJ_ERR_NOT_ACTION, 2, "found string");
  ACTION_ERR("42", TSJ_ERR_NOT_ACTION, 0, "found number");
  ACTION_ERR("{\"type\":\"a\",}", TSJ_ERR_SYNTAX, 12, "expected a string key");
  ACTION_ERR("{\"type\":\"a\"", TSJ_ERR_SYNTAX, 11, NULL);
  ACTION_ERR("{\"type\":\"a\xff\"}", TSJ_ERR_UTF8, 10, "invalid UTF-8 at byte 10");
  ACTION_ERR("", TSJ_ERR_SYNTAX, 0, "empty input");
  action_err_at(__FILE__, __LINE__, "{\"type\":\"a\"}", 5, TSJ_ERR_SYNTAX, 1, "unterminated string starting at byte 1"); /* only len bytes are read */

  /* optional outputs */
  char *block = NULL;
  const char *type = NULL;
  CHECK_MSG(tsj_parse_action("{\"type\":\"x\",\"payload\":1}", 24, &block, &type, NULL, NULL, NULL) == TSJ_OK && block &&
            strcmp(type, "x") == 0,
        "parse_action optional outputs");
  free(block);
  tsj_error err;
  CHECK_MSG(tsj_parse_action("{}", 2, NULL, &type, NULL, NULL, &err) == TSJ_ERR_INVALID_ARG, "parse_action NULL block");

  /* the block really is one allocation holding type then payload */
  block = NULL;
  const char *payload = NULL;
  size_t tl = 0;
  const char *a = "{\"type\":\"abc\",\"payload\":[1]}";
  CHECK_MSG(tsj_parse_action(a, strlen(a), &block, &type, &tl, &payload, &err) == TSJ_OK && type == block && tl == 3 &&
            payload == block + 4 && strcmp(payload, "[1]") == 0,
        "block layout");
  free(block);
}

void test_quote__quotedTextEscapesWhatJsonRequires(void) {
  QUOTE_OK("", "\"\"");
  QUOTE_OK_LEN(NULL, 0, "\"\"");
  QUOTE_OK("abc", "\"abc\"");
  QUOTE_OK("he said \"hi\"\n", "\"he said \\\"hi\\\"\\n\"");
  QUOTE_OK("a\\b/c", "\"a\\\\b/c\"");
  QUOTE_OK("\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\"");
  QUOTE_OK("\x01\x02\x0b\x0e\x1f\x7f", "\"\\u0001\\u0002\\u000b\\u000e\\u001f\x7f\"");
  QUOTE_OK_LEN("a\0b", 3, "\"a\\u0000b\"");
  QUOTE_OK("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
  QUOTE_OK("todos/add", "\"todos/add\"");

  const char *bad[] = {"\xff", "ab\xc0\x80", "\xed\xa0\x80", "x\xe2\x82", "\x80"};
  const long long bad_off[] = {0, 2, 0, 1, 0};
  for (int i = 0; i < 5; i++) {
    char *out = (char *)1;
    tsj_error err;
    int rc = tsj_quote(bad[i], strlen(bad[i]), &out, NULL, &err);
    CHECK_MSG(rc == TSJ_ERR_UTF8 && out == NULL && err.offset == bad_off[i] && contains(err.message, "invalid UTF-8"),
          "quote bad UTF-8 #%d: rc=%s offset=%lld msg=%s", i, tsj_code_name(rc), err.offset, err.message);
  }

  /* round trip: every byte 0x00..0x7f, quoted, parses back to itself */
  char raw[128];
  for (int i = 0; i < 128; i++) raw[i] = (char)i;
  char *q = NULL;
  size_t ql = 0;
  CHECK_MSG(tsj_quote(raw, 128, &q, &ql, NULL) == TSJ_OK, "quote all ASCII");
  if (q) {
    char *m = NULL;
    CHECK_MSG(tsj_minify(q, ql, &m, NULL, NULL) == TSJ_OK && m && strcmp(m, q) == 0, "quoted text is valid JSON");
    free(m);
    /* as an action type (without the NUL, which types reject) */
    char *q2 = NULL;
    size_t q2l = 0;
    CHECK_MSG(tsj_quote(raw + 1, 127, &q2, &q2l, NULL) == TSJ_OK, "quote 1..127");
    size_t alen = q2l + 16;
    char *action = (char *)malloc(alen);
    snprintf(action, alen, "{\"type\":%s}", q2);
    char *block = NULL;
    const char *type = NULL;
    size_t tl = 0;
    CHECK_MSG(tsj_parse_action(action, strlen(action), &block, &type, &tl, NULL, NULL) == TSJ_OK && tl == 127 &&
              memcmp(type, raw + 1, 127) == 0,
          "quote -> parse_action round trip");
    free(block);
    free(action);
    free(q2);
    /* and as a member key, including the NUL */
    size_t olen = ql + 16;
    char *obj = (char *)malloc(olen);
    snprintf(obj, olen, "{%s:1}", q);
    collector c;
    memset(&c, 0, sizeof c);
    CHECK_MSG(tsj_for_each_member(obj, strlen(obj), collect_cb, &c, NULL) == TSJ_OK && c.calls == 1 &&
              c.len == 128 + 1 /* \0 shown as 2 chars */ + 3,
          "quote -> for_each_member key round trip (len %zu)", c.len);
    free(obj);
  }
  free(q);
}

/* ------------------------------------------------------------------------ */

typedef struct {
  int calls;
  int ok;
  int depth;
} reent;

static int reentrant_cb(const char *key, size_t key_len, const char *value, size_t value_len, void *ctx) {
  reent *r = (reent *)ctx;
  r->calls++;
  char keycopy[64], valcopy[4096];
  snprintf(keycopy, sizeof keycopy, "%.*s", (int)key_len, key);
  snprintf(valcopy, sizeof valcopy, "%.*s", (int)value_len, value);
  /* nested calls on the same thread must not disturb our key/value */
  char *m = NULL;
  if (tsj_minify(value, value_len, &m, NULL, NULL) != TSJ_OK || strcmp(m, valcopy) != 0) r->ok = 0;
  free(m);
  char *block = NULL;
  const char *type = NULL;
  tsj_parse_action("{\"type\":\"inner\",\"payload\":[1, 2, 3]}", 36, &block, &type, NULL, NULL, NULL);
  free(block);
  if (value[0] == '{') {
    reent inner = {0, 1, r->depth + 1};
    if (tsj_for_each_member(value, value_len, reentrant_cb, &inner, NULL) != TSJ_OK || !inner.ok) r->ok = 0;
  }
  if (strncmp(key, keycopy, key_len) != 0 || strncmp(value, valcopy, value_len) != 0 || value[value_len] != '\0')
    r->ok = 0;
  return 0;
}

void test_members__eachMemberIsVisitedOnceInOrder(void) {
  MEMBERS_OK("{ \"a\" : 1 , \"b\" : [ 1 , 2 ] , \"c\\u0064\" : { \"x\" : \"y z\" }, \"e\": \"q\\\"r\", \"\": null }",
             "a=1;b=[1,2];cd={\"x\":\"y z\"};e=\"q\\\"r\";=null;", 5);
  MEMBERS_OK("{}", "", 0);
  MEMBERS_OK(" { } ", "", 0);
  MEMBERS_OK("{\"a\\u0000b\":1}", "a\\0b=1;", 1);
  MEMBERS_OK("{\"n\":18446744073709551615,\"m\":-9223372036854775808,\"f\":1e2,\"g\":1e400}",
             "n=18446744073709551615;m=-9223372036854775808;f=1e2;g=1e400;", 4);
  MEMBERS_OK("{\"x\\/y\":\"\\u0041\"}", "x/y=\"\\u0041\";", 1);
  MEMBERS_OK("{\"caf\\u00e9\":true,\"caf\xc3\xa9s\":false}", "caf\xc3\xa9=true;caf\xc3\xa9s=false;", 2);

  MEMBERS_ERR("[1]", TSJ_ERR_NOT_OBJECT, 0, "top level must be an object, found array");
  MEMBERS_ERR("  \"x\"", TSJ_ERR_NOT_OBJECT, 2, "found string");
  MEMBERS_ERR("{\"a\":1,\"b\":2,\"a\":3}", TSJ_ERR_DUPLICATE_KEY, 13, "duplicate key \"a\" at byte 13");
  MEMBERS_ERR("{ \"a\" : 1 ,\n \"a\" : 2 }", TSJ_ERR_DUPLICATE_KEY, 13, "duplicate key \"a\"");
  MEMBERS_ERR("{\"a\":1,\"\\u0061\":2}", TSJ_ERR_DUPLICATE_KEY, 7, "duplicate key \"a\"");
  MEMBERS_ERR("{\"k\\n\":1,\"k\\u000a\":2}", TSJ_ERR_DUPLICATE_KEY, 9, "duplicate key \"k\\u000a\"");
  MEMBERS_ERR("{\"a\":1,\"b\":2,}", TSJ_ERR_SYNTAX, 13, "expected a string key");
  MEMBERS_ERR("{\"a\":\"\xc0\xaf\"}", TSJ_ERR_UTF8, 6, "invalid UTF-8");

  /* many members (hashed duplicate check); the earliest second occurrence is reported */
  char big[4096];
  size_t n = 0;
  n += (size_t)snprintf(big + n, sizeof big - n, "{");
  for (int i = 0; i < 40; i++) n += (size_t)snprintf(big + n, sizeof big - n, "%s\"k%d\":%d", i ? "," : "", i, i);
  size_t before_dups = n;
  n += (size_t)snprintf(big + n, sizeof big - n, "}");
  {
    collector c;
    memset(&c, 0, sizeof c);
    CHECK_MSG(tsj_for_each_member(big, n, collect_cb, &c, NULL) == TSJ_OK && c.calls == 40 &&
              strncmp(c.buf, "k0=0;k1=1;k2=2;", 15) == 0 && contains(c.buf, "k39=39;"),
          "40 members: calls=%d", c.calls);
  }
  n = before_dups;
  n += (size_t)snprintf(big + n, sizeof big - n, ",\"zz\":0,\"k33\":1,\"k7\":2,\"k33\":3}");
  {
    collector c;
    memset(&c, 0, sizeof c);
    tsj_error err;
    int rc = tsj_for_each_member(big, n, collect_cb, &c, &err);
    long long want_off = (long long)(strstr(big, "\"k33\":1") - big);
    CHECK_MSG(rc == TSJ_ERR_DUPLICATE_KEY && c.calls == 0 && contains(err.message, "duplicate key \"k33\"") &&
              err.offset == want_off,
          "big dup: rc=%s msg=%s offset=%lld want %lld", tsj_code_name(rc), err.message, err.offset, want_off);
  }

  /* callback stop */
  {
    collector c;
    memset(&c, 0, sizeof c);
    c.stop_at = 2;
    tsj_error err;
    int rc = tsj_for_each_member("{\"a\":1,\"b\":2,\"c\":3}", 19, collect_cb, &c, &err);
    CHECK_MSG(rc == 42 && c.calls == 2 && err.code == 42 && strcmp(c.buf, "a=1;b=2;") == 0, "callback stop: rc=%d calls=%d",
          rc, c.calls);
  }
  tsj_error err;
  CHECK_MSG(tsj_for_each_member("{}", 2, NULL, NULL, &err) == TSJ_ERR_INVALID_ARG, "NULL callback");

  /* re-entrancy, deeper than the per-thread pool */
  {
    const char *doc = "{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":{\"f\":{\"g\":{\"h\":[1, 2]}}}}}}},\"z\": \"last one\",\"y\":{ }}";
    reent r = {0, 1, 0};
    int rc = tsj_for_each_member(doc, strlen(doc), reentrant_cb, &r, NULL);
    CHECK_MSG(rc == TSJ_OK && r.ok && r.calls == 3, "re-entrant for_each_member: rc=%d ok=%d calls=%d", rc, r.ok, r.calls);
  }
}

/* ------------------------------------------------------------------------ */

void test_pointer__pointersResolveOrFailWithCodeAndOffset(void) {
  const char *rfc =
      "{\"foo\": [\"bar\", \"baz\"], \"\": 0, \"a/b\": 1, \"c%d\": 2, \"e^f\": 3, \"g|h\": 4, \"i\\\\j\": 5, "
      "\"k\\\"l\": 6, \" \": 7, \"m~n\": 8}";
  tsj_error err;
  tsj_doc *d = tsj_doc_parse(rfc, strlen(rfc), &err);
  CHECK_MSG(d != NULL && err.code == 0, "doc_parse rfc: %s", err.message);
  if (d) {
    PTR_OK(d, "", "{\"foo\":[\"bar\",\"baz\"],\"\":0,\"a/b\":1,\"c%d\":2,\"e^f\":3,\"g|h\":4,\"i\\\\j\":5,\"k\\\"l\":6,"
                  "\" \":7,\"m~n\":8}");
    PTR_OK(d, "/foo", "[\"bar\",\"baz\"]");
    PTR_OK(d, "/foo/0", "\"bar\"");
    PTR_OK(d, "/foo/1", "\"baz\"");
    PTR_OK(d, "/", "0");
    PTR_OK(d, "/a~1b", "1");
    PTR_OK(d, "/c%d", "2");
    PTR_OK(d, "/e^f", "3");
    PTR_OK(d, "/g|h", "4");
    PTR_OK(d, "/i\\j", "5");
    PTR_OK(d, "/k\"l", "6");
    PTR_OK(d, "/ ", "7");
    PTR_OK(d, "/m~0n", "8");
    size_t tl = 0;
    CHECK_MSG(tsj_doc_text(d, &tl) != NULL && tl == strlen(tsj_doc_text(d, NULL)), "doc_text");

    PTR_ERR(d, "foo", TSJ_ERR_POINTER, 0, "must be empty or start with '/'", NULL);
    PTR_ERR(d, "/m~2n", TSJ_ERR_POINTER, 2, "'~' must be followed by '0' or '1'", NULL);
    PTR_ERR(d, "/m~", TSJ_ERR_POINTER, 2, NULL, NULL);
    PTR_ERR(d, "/foo/\xff", TSJ_ERR_POINTER, 5, "not valid UTF-8", NULL);
    PTR_ERR(d, "/foo/01", TSJ_ERR_NOT_FOUND, 4, "\"01\" is not an array index (leading zero)", "at \"/foo\"");
    PTR_ERR(d, "/foo/00", TSJ_ERR_NOT_FOUND, 4, "leading zero", NULL);
    PTR_ERR(d, "/foo/-", TSJ_ERR_NOT_FOUND, 4, "\"-\" (the end of the array) is never found", "at \"/foo\"");
    PTR_ERR(d, "/foo/2", TSJ_ERR_NOT_FOUND, 4, "index \"2\" is out of range for the array of 2 elements",
            "at \"/foo\"");
    PTR_ERR(d, "/foo/99999999999999999999", TSJ_ERR_NOT_FOUND, 4, "out of range", NULL);
    PTR_ERR(d, "/foo/4294967296", TSJ_ERR_NOT_FOUND, 4, "out of range", NULL);
    PTR_ERR(d, "/foo/", TSJ_ERR_NOT_FOUND, 4, "\"\" is not an array index", NULL);
    PTR_ERR(d, "/foo/-1", TSJ_ERR_NOT_FOUND, 4, "not an array index", NULL);
    PTR_ERR(d, "/foo/1x", TSJ_ERR_NOT_FOUND, 4, "not an array index", NULL);
    PTR_ERR(d, "/foo/+1", TSJ_ERR_NOT_FOUND, 4, "not an array index", NULL);
    PTR_ERR(d, "/nope", TSJ_ERR_NOT_FOUND, 0, "no member \"nope\" in the object at \"\"", NULL);
    PTR_ERR(d, "/nope/x", TSJ_ERR_NOT_FOUND, 0, "no member \"nope\"", NULL);
    PTR_ERR(d, "/a~0b", TSJ_ERR_NOT_FOUND, 0, "no member \"a~b\"", NULL);
    PTR_ERR(d, "/foo/0/x", TSJ_ERR_NOT_FOUND, 6, "cannot look up \"x\" in the string at \"/foo/0\"", NULL);
    PTR_ERR(d, "/a~1b/c", TSJ_ERR_NOT_FOUND, 5, "in the number at \"/a~1b\"", NULL);
    PTR_ERR(d, "/FOO", TSJ_ERR_NOT_FOUND, 0, "\"FOO\"", NULL);
    char *out = (char *)1;
    CHECK_MSG(tsj_doc_at_pointer(d, NULL, 0, &out, NULL, &err) == TSJ_OK && out && out[0] == '{', "NULL empty pointer");
    free(out);
    CHECK_MSG(tsj_doc_at_pointer(NULL, "", 0, &out, NULL, &err) == TSJ_ERR_INVALID_ARG && out == NULL, "NULL doc");
    tsj_doc_free(d);
  }
  tsj_doc_free(NULL);

  /* keys with escapes, nested values with whitespace */
  const char *esc = "{ \"\\u0061b\" : 1, \"x\\/y\": 2, \"t\\u00e9\": 3, \"\\ud83d\\ude00\": 4, \"a\": 1,"
                    " \"arr\" : [ 1 , { \"b\" : \"c d\" } , [ ] ], \"nul\\u0000l\": 5, \"\": { \"\": [ 10 ] } }";
  d = tsj_doc_parse(esc, strlen(esc), &err);
  CHECK_MSG(d != NULL, "doc_parse esc: %s", err.message);
  if (d) {
    PTR_OK(d, "/ab", "1");
    PTR_OK(d, "/x~1y", "2");
    PTR_OK(d, "/t\xc3\xa9", "3");
    PTR_OK(d, "/\xf0\x9f\x98\x80", "4");
    PTR_OK(d, "/a", "1");
    PTR_OK(d, "/arr", "[1,{\"b\":\"c d\"},[]]");
    PTR_OK(d, "/arr/1", "{\"b\":\"c d\"}");
    PTR_OK(d, "/arr/1/b", "\"c d\"");
    PTR_OK(d, "/arr/2", "[]");
    PTR_OK(d, "//", "[10]");
    PTR_OK(d, "///0", "10");
    PTR_ERR(d, "/arr/2/0", TSJ_ERR_NOT_FOUND, 6, "out of range for the array of 0 elements", "at \"/arr/2\"");
    char *out = NULL;
    size_t out_len = 0;
    CHECK_MSG(tsj_doc_at_pointer(d, "/nul\0l", 6, &out, &out_len, &err) == TSJ_OK && out && strcmp(out, "5") == 0,
          "pointer with NUL: %s", err.message);
    free(out);
    PTR_ERR(d, "/nul", TSJ_ERR_NOT_FOUND, 0, NULL, NULL);
    tsj_doc_free(d);
  }

  /* numbers come back exactly */
  const char *nums = "{\"n\": [18446744073709551615, -9223372036854775808, 1.0, 1e2, -0, 123456789012345678901234567890,"
                     " 1e400, 0.30000000000000004]}";
  d = tsj_doc_parse(nums, strlen(nums), &err);
  CHECK_MSG(d != NULL, "doc_parse nums: %s", err.message);
  if (d) {
    PTR_OK(d, "/n/0", "18446744073709551615");
    PTR_OK(d, "/n/1", "-9223372036854775808");
    PTR_OK(d, "/n/2", "1.0");
    PTR_OK(d, "/n/3", "1e2");
    PTR_OK(d, "/n/4", "-0");
    PTR_OK(d, "/n/5", "123456789012345678901234567890");
    PTR_OK(d, "/n/6", "1e400");
    PTR_OK(d, "/n/7", "0.30000000000000004");
    tsj_doc_free(d);
  }

  /* top-level scalar */
  d = tsj_doc_parse(" 42 ", 4, &err);
  CHECK_MSG(d != NULL, "doc_parse scalar");
  if (d) {
    PTR_OK(d, "", "42");
    PTR_ERR(d, "/0", TSJ_ERR_NOT_FOUND, 0, "cannot look up \"0\" in the number at \"\"", NULL);
    tsj_doc_free(d);
  }

  /* large object: hashed look-ups, escaped keys */
  size_t cap = 64 * 1024;
  char *obj = (char *)malloc(cap);
  size_t n = 0;
  n += (size_t)snprintf(obj + n, cap - n, "{\"e\\u0073c\":\"escaped\",\"k5\":\"first\"");
  for (int i = 0; i < 1000; i++)
    if (i != 5) n += (size_t)snprintf(obj + n, cap - n, ",\"k%d\":%d", i, i);
  n += (size_t)snprintf(obj + n, cap - n, ",\"sl\\/ash\":[1,2,3],\"\":\"empty\"}");
  d = tsj_doc_parse(obj, n, &err);
  CHECK_MSG(d != NULL, "doc_parse big object: %s", err.message);
  if (d) {
    PTR_OK(d, "/k0", "0");
    PTR_OK(d, "/k999", "999");
    PTR_OK(d, "/k500", "500");
    PTR_OK(d, "/k5", "\"first\"");
    PTR_OK(d, "/esc", "\"escaped\"");
    PTR_OK(d, "/sl~1ash/2", "3");
    PTR_OK(d, "/", "\"empty\"");
    PTR_ERR(d, "/k1000", TSJ_ERR_NOT_FOUND, 0, "no member \"k1000\"", NULL);
    PTR_ERR(d, "/k", TSJ_ERR_NOT_FOUND, 0, NULL, NULL);
    PTR_ERR(d, "/e\\u0073c", TSJ_ERR_NOT_FOUND, 0, NULL, NULL);
    int all = 1;
    for (int i = 0; i < 1000; i++) {
      char p[16], want[16], *out = NULL;
      snprintf(p, sizeof p, "/k%d", i);
      snprintf(want, sizeof want, "%d", i == 5 ? -1 : i);
      if (tsj_doc_at_pointer(d, p, strlen(p), &out, NULL, NULL) != TSJ_OK) all = 0;
      else if (i != 5 && strcmp(out, want) != 0) all = 0;
      free(out);
    }
    CHECK_MSG(all, "all 1000 hashed members found");
    tsj_doc_free(d);
  }
  free(obj);

  /* a long message stays within the buffer and ends on a UTF-8 boundary */
  d = tsj_doc_parse("{}", 2, &err);
  if (d) {
    char p[400];
    p[0] = '/';
    for (int i = 1; i < 399; i++) p[i] = (i % 3 == 1) ? '\xe2' : (i % 3 == 2) ? '\x82' : '\xac';
    p[399] = '\0';
    p[397] = 'x', p[398] = 'y';
    char *out = NULL;
    int rc = tsj_doc_at_pointer(d, p, 399, &out, NULL, &err);
    CHECK_MSG(rc == TSJ_ERR_NOT_FOUND && strlen(err.message) < 256 && contains(err.message, "...") &&
              contains(err.message, "\xe2\x82\xac\""),
          "long token message: %s", err.message);
    tsj_doc_free(d);
  }
  CHECK_MSG(tsj_doc_parse("{\"a\":", 5, &err) == NULL && err.code == TSJ_ERR_SYNTAX && err.offset == 5,
        "doc_parse invalid: %s", err.message);
  CHECK_MSG(tsj_doc_parse("[\"\xe0\x80\x80\"]", 6, &err) == NULL && err.code == TSJ_ERR_UTF8 && err.offset == 2,
        "doc_parse bad UTF-8");
}

/* ------------------------------------------------------------------------ */
/* Big document (~10 MB): correctness of the large-input paths, then timings */

static char *make_big_doc(size_t target, size_t *len_out, int *users_out, int *items_out) {
  size_t cap = target + (1 << 20);
  char *s = (char *)malloc(cap);
  size_t n = 0;
  n += (size_t)snprintf(s + n, cap - n, "{\n  \"users\": {");
  int users = 0;
  while (n < target * 6 / 10) {
    n += (size_t)snprintf(s + n, cap - n,
                          "%s\n    \"u%d\": {\"name\": \"User %d\", \"age\": %d, \"score\": %d.5, \"tags\": [\"a\", "
                          "\"b\\n\", \"c\"], \"bio\": \"Lorem ipsum dolor sit amet, consectetur adipiscing elit\"}",
                          users ? "," : "", users, users, users % 90, users);
    users++;
  }
  n += (size_t)snprintf(s + n, cap - n, "\n  },\n  \"items\": [");
  int items = 0;
  while (n < target) {
    n += (size_t)snprintf(s + n, cap - n, "%s{\"id\": %d, \"v\": [%d, %d, {\"deep\": true}]}", items ? ", " : "",
                          items, items * 2, items * 3);
    items++;
  }
  n += (size_t)snprintf(s + n, cap - n, "],\n  \"config\": {\"theme\": \"dark\", \"n\": 18446744073709551615}\n}\n");
  *len_out = n;
  *users_out = users;
  *items_out = items;
  return s;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

typedef struct {
  const tsj_doc *doc;
  int ok;
} reader_arg;

static void *reader_thread(void *arg) {
  reader_arg *a = (reader_arg *)arg;
  a->ok = 1;
  for (int i = 0; i < 200; i++) {
    char p[64], *out = NULL;
    snprintf(p, sizeof p, "/users/u%d/age", i * 7);
    char want[16];
    snprintf(want, sizeof want, "%d", (i * 7) % 90);
    if (tsj_doc_at_pointer(a->doc, p, strlen(p), &out, NULL, NULL) != TSJ_OK || strcmp(out, want) != 0) a->ok = 0;
    free(out);
    char *block = NULL;
    const char *type = NULL, *payload = NULL;
    char action[96];
    snprintf(action, sizeof action, "{\"type\": \"t%d\", \"payload\": [ %d ]}", i, i);
    char wt[16], wp[16];
    snprintf(wt, sizeof wt, "t%d", i);
    snprintf(wp, sizeof wp, "[%d]", i);
    if (tsj_parse_action(action, strlen(action), &block, &type, NULL, &payload, NULL) != TSJ_OK ||
        strcmp(type, wt) != 0 || strcmp(payload, wp) != 0)
      a->ok = 0;
    free(block);
  }
  return NULL;
}

static int count_cb(const char *key, size_t key_len, const char *value, size_t value_len, void *ctx) {
  (void)key, (void)key_len, (void)value, (void)value_len;
  ++*(int *)ctx;
  return 0;
}

void test_big__bigDocumentsParseAndMinifyWhole(void) {
  const char *env = getenv("TSJ_BIG_MB");
  size_t mb = env ? (size_t)atol(env) : 10;
  if (mb == 0) mb = 1;
  env = getenv("TSJ_BENCH_ITERS");
  long iters = env ? atol(env) : 200000;
  if (iters <= 0) iters = 1;

  size_t len = 0;
  int users = 0, items = 0;
  char *big = make_big_doc(mb * 1000 * 1000, &len, &users, &items);
  tsj_error err;
  double t0 = now_ns();
  tsj_doc *d = tsj_doc_parse(big, len, &err);
  double t_parse = now_ns() - t0;
  CHECK_MSG(d != NULL, "big doc_parse: %s", err.message);
  if (!d) {
    free(big);
    return;
  }
  size_t tl = 0;
  const char *text = tsj_doc_text(d, &tl);
  char *m = NULL;
  size_t ml = 0;
  t0 = now_ns();
  int rc = tsj_minify(big, len, &m, &ml, &err);
  double t_minify_big = now_ns() - t0;
  CHECK_MSG(rc == TSJ_OK && ml == tl && memcmp(m, text, tl) == 0 && ml < len, "big minify == doc text");
  free(m);

  PTR_OK(d, "/config/theme", "\"dark\"");
  PTR_OK(d, "/config/n", "18446744073709551615");
  PTR_OK(d, "/users/u0/name", "\"User 0\"");
  PTR_OK(d, "/users/u1234/tags", "[\"a\",\"b\\n\",\"c\"]");
  PTR_OK(d, "/users/u1234/tags/1", "\"b\\n\"");
  PTR_OK(d, "/users/u1234/score", "1234.5");
  PTR_OK(d, "/items/0/id", "0");
  PTR_OK(d, "/items/1000/v/2/deep", "true");
  PTR_OK(d, "/items/1000/v/1", "3000");
  PTR_ERR(d, "/users/u99999999/name", TSJ_ERR_NOT_FOUND, 6, "no member \"u99999999\" in the object at \"/users\"",
          NULL);

  int members = 0;
  CHECK_MSG(tsj_for_each_member(big, len, count_cb, &members, &err) == TSJ_OK && members == 3, "big for_each_member");

  /* big payload (> 256 KiB: temporary context path) */
  size_t alen = len + 64;
  char *action = (char *)malloc(alen);
  snprintf(action, alen, "{\"type\": \"load\", \"payload\": %s}", big);
  char *block = NULL;
  const char *type = NULL, *payload = NULL;
  rc = tsj_parse_action(action, strlen(action), &block, &type, NULL, &payload, &err);
  CHECK_MSG(rc == TSJ_OK && strcmp(type, "load") == 0 && payload && strlen(payload) == tl && memcmp(payload, text, tl) == 0,
        "big payload action: %s", err.message);
  free(block);
  free(action);

  /* concurrent readers of one doc, plus actions on each thread */
  {
    pthread_t th[4];
    reader_arg args[4];
    for (int i = 0; i < 4; i++) {
      args[i].doc = d;
      args[i].ok = 0;
      pthread_create(&th[i], NULL, reader_thread, &args[i]);
    }
    int ok = 1;
    for (int i = 0; i < 4; i++) {
      pthread_join(th[i], NULL);
      ok = ok && args[i].ok;
    }
    CHECK_MSG(ok, "concurrent readers");
  }

  /* timings (printed only) */
  const char *act = "{\"type\":\"todos/add\",\"payload\":{\"id\":1234,\"title\":\"Buy oat milk\",\"done\":false,\"v\":2}}";
  CHECK_MSG(strlen(act) == 84, "benchmark action is 84 bytes");
  size_t act_len = strlen(act);
  volatile size_t sink = 0;
  t0 = now_ns();
  for (long i = 0; i < iters; i++) {
    char *b = NULL;
    const char *ty = NULL, *pl = NULL;
    size_t tyl = 0;
    tsj_parse_action(act, act_len, &b, &ty, &tyl, &pl, NULL);
    sink += tyl;
    free(b);
  }
  double t_action = (now_ns() - t0) / (double)iters;
  t0 = now_ns();
  for (long i = 0; i < iters; i++) {
    char *o = NULL;
    size_t ol = 0;
    tsj_minify(act, act_len, &o, &ol, NULL);
    sink += ol;
    free(o);
  }
  double t_min = (now_ns() - t0) / (double)iters;
  char ptr[64], ptr2[64];
  snprintf(ptr, sizeof ptr, "/users/u%d/name", users / 2);
  size_t plen = strlen(ptr);
  t0 = now_ns();
  for (long i = 0; i < iters; i++) {
    char *o = NULL;
    size_t ol = 0;
    tsj_doc_at_pointer(d, ptr, plen, &o, &ol, NULL);
    sink += ol;
    free(o);
  }
  double t_ptr = (now_ns() - t0) / (double)iters;
  snprintf(ptr2, sizeof ptr2, "/items/%d/v/2/deep", items / 2);
  size_t plen2 = strlen(ptr2);
  t0 = now_ns();
  for (long i = 0; i < iters; i++) {
    char *o = NULL;
    size_t ol = 0;
    tsj_doc_at_pointer(d, ptr2, plen2, &o, &ol, NULL);
    sink += ol;
    free(o);
  }
  double t_ptr2 = (now_ns() - t0) / (double)iters;
  (void)sink;
  printf("timing: tsj_parse_action (%zu-byte action): %.0f ns/op\n", act_len, t_action);
  printf("timing: tsj_minify (%zu-byte action): %.0f ns/op\n", act_len, t_min);
  printf("timing: tsj_doc_at_pointer(\"%s\") in a %.1f MB document: %.0f ns/op\n", ptr, len / 1e6, t_ptr);
  printf("timing: tsj_doc_at_pointer(\"%s\") in a %.1f MB document: %.0f ns/op\n", ptr2, len / 1e6, t_ptr2);
  printf("timing: tsj_doc_parse of the %.1f MB document: %.1f ms, tsj_minify of it: %.1f ms\n", len / 1e6,
         t_parse / 1e6, t_minify_big / 1e6);

  tsj_doc_free(d);
  free(big);
}

/* ------------------------------------------------------------------------ */
/* Duplicate keys: an object with a key twice, at any depth, is invalid for
 * every entry point that reads JSON. */

/* in[0..len) must fail with TSJ_ERR_DUPLICATE_KEY at `offset` with a message
 * containing "duplicate key <shown> at byte <offset>", through tsj_minify,
 * tsj_doc_parse and (for objects) tsj_for_each_member and tsj_parse_action. */
static void dup_at(const char *file, int line, const char *in, size_t len, const char *shown, long long offset) {
  char want[256];
  snprintf(want, sizeof want, "duplicate key %s at byte %lld", shown, offset);
  tsj_error err;
  char *out = (char *)1;
  int rc = tsj_minify(in, len, &out, NULL, &err);
  check_at(rc == TSJ_ERR_DUPLICATE_KEY && out == NULL && err.offset == offset && contains(err.message, want), file,
           line, "minify(%.60s): rc=%s offset=%lld msg=\"%s\" (want \"%s\")", in, tsj_code_name(rc), err.offset,
           err.message, want);
  tsj_doc *d = tsj_doc_parse(in, len, &err);
  check_at(d == NULL && err.code == TSJ_ERR_DUPLICATE_KEY && err.offset == offset && contains(err.message, want),
           file, line, "doc_parse(%.60s): code=%s offset=%lld msg=\"%s\"", in, tsj_code_name(err.code), err.offset,
           err.message);
  tsj_doc_free(d);
  size_t i = 0;
  while (i < len && (in[i] == ' ' || in[i] == '\n')) i++;
  if (i < len && in[i] == '{') {
    collector c;
    memset(&c, 0, sizeof c);
    rc = tsj_for_each_member(in, len, collect_cb, &c, &err);
    check_at(rc == TSJ_ERR_DUPLICATE_KEY && c.calls == 0 && err.offset == offset && contains(err.message, want), file,
             line, "for_each_member(%.60s): rc=%s calls=%d offset=%lld msg=\"%s\"", in, tsj_code_name(rc), c.calls,
             err.offset, err.message);
    char *block = (char *)1;
    const char *type = NULL;
    rc = tsj_parse_action(in, len, &block, &type, NULL, NULL, &err);
    check_at(rc == TSJ_ERR_DUPLICATE_KEY && block == NULL && err.offset == offset && contains(err.message, want),
             file, line, "parse_action(%.60s): rc=%s offset=%lld msg=\"%s\"", in, tsj_code_name(rc), err.offset,
             err.message);
  }
}
#define DUP(in, shown, off) dup_at(__FILE__, __LINE__, in, strlen(in), shown, off)

/* in[0..len) is valid: minify and doc_parse accept it. */
static void nodup_at(const char *file, int line, const char *in, size_t len) {
  tsj_error err;
  char *out = NULL;
  int rc = tsj_minify(in, len, &out, NULL, &err);
  check_at(rc == TSJ_OK, file, line, "minify(%.60s): rc=%s msg=%s", in, tsj_code_name(rc), err.message);
  free(out);
  tsj_doc *d = tsj_doc_parse(in, len, &err);
  check_at(d != NULL, file, line, "doc_parse(%.60s): %s", in, err.message);
  tsj_doc_free(d);
}
#define NODUP(in) nodup_at(__FILE__, __LINE__, in, strlen(in))

/* {"k0":0,...,"k<n-1>":n-1<extra>} in a malloc'ed buffer; *len gets its length. */
static char *many_keys(int n, const char *extra, size_t *len) {
  size_t cap = (size_t)n * 24 + strlen(extra) + 16;
  char *b = (char *)malloc(cap);
  size_t o = 0;
  b[o++] = '{';
  for (int i = 0; i < n; i++) o += (size_t)snprintf(b + o, cap - o, "%s\"k%d\":%d", i ? "," : "", i, i);
  o += (size_t)snprintf(b + o, cap - o, "%s}", extra);
  *len = o;
  return b;
}

void test_duplicates__duplicateKeysAreRefusedAtTheSecondOccurrence(void) {
  /* depth 1, 2, deep; offsets are those of the second occurrence's quote */
  DUP("{\"a\":1,\"a\":2}", "\"a\"", 7);
  DUP("{\"a\":1,\"b\":{\"c\":1,\"c\":2}}", "\"c\"", 18);
  DUP("{\"a\" : [ { \"x\": 1 }, { \"y\": 2, \"y\": 3 } ] }", "\"y\"", 31);
  DUP("[{\"a\":1},{\"b\":[{\"c\":{\"d\":null,\"d\":null}}]}]", "\"d\"", 30);
  DUP("{\n  \"type\": \"t\",\n  \"payload\": {\"a\": {\"b\": {\"c\": 1, \"c\": 2}}}\n}", "\"c\"", 51);
  {
    /* 200 levels of objects, the duplicate in the innermost one */
    char deep[4096];
    size_t o = 0;
    for (int i = 0; i < 200; i++) o += (size_t)snprintf(deep + o, sizeof deep - o, "{\"k\":");
    size_t at = o + 7;
    o += (size_t)snprintf(deep + o, sizeof deep - o, "{\"z\":1,\"z\":2}");
    for (int i = 0; i < 200; i++) deep[o++] = '}';
    deep[o] = '\0';
    dup_at(__FILE__, __LINE__, deep, o, "\"z\"", (long long)at);
  }
  {
    /* exactly TSJ_MAX_DEPTH levels (simdjson refuses, the strict checker accepts) */
    char deep[4096];
    size_t o = 0;
    for (int i = 0; i < TSJ_MAX_DEPTH - 1; i++) o += (size_t)snprintf(deep + o, sizeof deep - o, "{\"k\":");
    size_t at = o + 7;
    o += (size_t)snprintf(deep + o, sizeof deep - o, "{\"z\":1,\"z\":2}");
    for (int i = 0; i < TSJ_MAX_DEPTH - 1; i++) deep[o++] = '}';
    deep[o] = '\0';
    dup_at(__FILE__, __LINE__, deep, o, "\"z\"", (long long)at);
    memcpy(deep + at, "\"y\"", 3); /* {"z":1,"y":2}: valid */
    nodup_at(__FILE__, __LINE__, deep, o);
  }
  /* numbers beyond simdjson's range (no DOM): the strict checker finds duplicates too */
  DUP("{\"n\":1e400,\"o\":{\"a\":1,\"a\":123456789012345678901234567890}}", "\"a\"", 22);
  NODUP("{\"n\":1e400,\"o\":{\"a\":1,\"ab\":123456789012345678901234567890}}");

  /* the same key in different objects is fine */
  NODUP("{\"a\":{\"a\":{\"a\":1}},\"b\":{\"a\":2},\"c\":[{\"a\":1},{\"a\":1}]}");
  NODUP("[{\"a\":1},{\"a\":1},{\"a\":{\"a\":[{\"a\":0}]}}]");
  /* keys that share a prefix, or a length, are different */
  NODUP("{\"a\":1,\"ab\":2,\"abc\":3,\"abd\":4,\"b\":5,\"\":6,\"k1\":7,\"k10\":8,\"k100\":9}");
  NODUP("{\"a\\u0000b\":1,\"a\\u0000c\":2,\"a\\u0000\":3,\"a\":4}");
  /* keys that differ only after an escape */
  NODUP("{\"a\\nb\":1,\"a\\nc\":2,\"\\u00e9x\":3,\"\\u00e9y\":4,\"\\ud83d\\ude00a\":5,\"\\ud83d\\ude00b\":6}");
  NODUP("{\"x\\\"y\":1,\"x\\\"z\":2,\"x\\\\y\":3,\"x/y\":4,\"x\\\\\\\"\":5}");
  NODUP("{\"a\":1,\"a \":2,\" a\":3,\"A\":4}");

  /* escaped duplicates: keys are compared after unescaping */
  DUP("{\"a\":1,\"\\u0061\":2}", "\"a\"", 7);
  DUP("{\"\\u0061\":1,\"a\":2}", "\"a\"", 12);
  DUP("{\"\\u0061\":1,\"\\u0061\":2}", "\"a\"", 12);
  DUP("{\"x/y\":1,\"x\\/y\":2}", "\"x/y\"", 9);
  DUP("{\"caf\xc3\xa9\":1,\"caf\\u00e9\":2}", "\"caf\xc3\xa9\"", 11);
  DUP("{\"\xf0\x9f\x98\x80\":1,\"\\ud83d\\ude00\":2}", "\"\xf0\x9f\x98\x80\"", 10);
  DUP("{\"k\\n\":1,\"k\\u000a\":2}", "\"k\\u000a\"", 9);
  DUP("{\"a\\u0000b\":1,\"a\\u0000b\":2}", "\"a\\u0000b\"", 14);
  DUP("{\"type\":\"t\",\"payload\":{\"p\":{\"q\":{\"typ\\u0065\":1,\"type\":2}}}}", "\"type\"", 47);

  /* the first fault in document order wins: a duplicate before a syntax error, and after one */
  DUP("{\"x\":{\"y\":1,\"y\":2},\"x\":3}", "\"y\"", 12);
  MINIFY_ERR("{\"a\":1,\"a\":2,}", TSJ_ERR_DUPLICATE_KEY, 7, "duplicate key \"a\" at byte 7");
  MINIFY_ERR("{\"a\":1,\"b\":[1,],\"a\":2}", TSJ_ERR_SYNTAX, 14, "expected a JSON value at byte 14");
  MINIFY_ERR("{\"a\":1,\"a\":\"\xff\"}", TSJ_ERR_UTF8, 12, "invalid UTF-8"); /* UTF-8 first, as always */

  /* a long key is cut in the message, which still names the offset */
  {
    char in[512];
    char key[201];
    memset(key, 'q', 200);
    key[200] = '\0';
    snprintf(in, sizeof in, "{\"%s\":1,\"%s\":2}", key, key);
    tsj_error err;
    char *out = NULL;
    int rc = tsj_minify(in, strlen(in), &out, NULL, &err);
    CHECK_MSG(rc == TSJ_ERR_DUPLICATE_KEY && err.offset == 206 && contains(err.message, "qqq\"... at byte 206") &&
              strlen(err.message) < sizeof err.message,
          "long key: %s", err.message);
  }

  /* objects around the pairwise/hashed threshold and beyond */
  for (int n = 2; n <= 40; n++) {
    size_t len;
    char *b = many_keys(n, "", &len);
    nodup_at(__FILE__, __LINE__, b, len);
    free(b);
    char extra[64], shown[32];
    for (int which = 0; which < n; which += (n > 8 ? n / 4 : 1)) {
      snprintf(extra, sizeof extra, ",\"k%d\":-1", which);
      b = many_keys(n, extra, &len);
      snprintf(shown, sizeof shown, "\"k%d\"", which);
      dup_at(__FILE__, __LINE__, b, len, shown, (long long)(len - strlen(extra) - 1 + 1));
      free(b);
    }
  }
  /* escaped keys in a hashed object */
  {
    size_t len;
    char *b = many_keys(50, ",\"\\u006b7\":0", &len);
    dup_at(__FILE__, __LINE__, b, len, "\"k7\"", (long long)(strstr(b, "\"\\u006b7\"") - b));
    free(b);
    b = many_keys(50, ",\"\\u006b50\":0,\"k\\u0035\\u0030\":1", &len);
    dup_at(__FILE__, __LINE__, b, len, "\"k50\"", (long long)(strstr(b, "\"k\\u0035") - b));
    free(b);
  }
  /* a hashed object inside a hashed object, the duplicate in the outer one after the inner closed */
  {
    size_t in_len, len;
    char *inner = many_keys(30, "", &in_len);
    char *extra = (char *)malloc(in_len + 64);
    snprintf(extra, in_len + 64, ",\"inner\":%s,\"k29\":0", inner);
    char *b = many_keys(30, extra, &len);
    dup_at(__FILE__, __LINE__, b, len, "\"k29\"", (long long)(len - 8));
    free(b);
    snprintf(extra, in_len + 64, ",\"inner\":%s,\"k30\":0", inner);
    b = many_keys(30, extra, &len);
    nodup_at(__FILE__, __LINE__, b, len);
    free(b);
    free(extra);
    free(inner);
  }
  /* 200,000 keys in one object: the check is O(n) (no timing threshold here;
   * it must simply finish). Fewer under valgrind (run.sh sets TSJ_MANY_KEYS). */
  {
    const char *env = getenv("TSJ_MANY_KEYS");
    int keys = env ? atoi(env) : 200000;
    if (keys < 100) keys = 100;
    char extra[64], shown[32];
    size_t len;
    char *b = many_keys(keys, "", &len);
    nodup_at(__FILE__, __LINE__, b, len);
    collector c;
    memset(&c, 0, sizeof c);
    CHECK_MSG(tsj_for_each_member(b, len, collect_cb, &c, NULL) == TSJ_OK && c.calls == keys, "%d members: %d", keys,
          c.calls);
    free(b);
    snprintf(extra, sizeof extra, ",\"k%d\":0", keys / 2 + 7);
    snprintf(shown, sizeof shown, "\"k%d\"", keys / 2 + 7);
    b = many_keys(keys, extra, &len);
    dup_at(__FILE__, __LINE__, b, len, shown, (long long)(len - strlen(extra)));
    free(b);
    /* and the strict checker (numbers beyond simdjson's range) on the same size */
    b = many_keys(keys, ",\"big\":1e400", &len);
    nodup_at(__FILE__, __LINE__, b, len);
    free(b);
    snprintf(extra, sizeof extra, ",\"big\":1e400,\"k%d\":0", keys - 1);
    snprintf(shown, sizeof shown, "\"k%d\"", keys - 1);
    b = many_keys(keys, extra, &len);
    dup_at(__FILE__, __LINE__, b, len, shown, (long long)(len - strlen(extra) + 12));
    free(b);
  }
}

/* tsj_split_object: each value is the callback's to keep. */
typedef struct {
  int calls, stop_at;
  char keys[8][16];
  char *values[8];
  size_t lengths[8];
} owned_collector;

static int owned_cb(const char *key, size_t key_len, char *value, size_t value_len, void *ctx) {
  owned_collector *c = (owned_collector *)ctx;
  if (c->calls < 8) {
    snprintf(c->keys[c->calls], sizeof c->keys[0], "%.*s", (int)key_len, key);
    c->values[c->calls] = value;
    c->lengths[c->calls] = value_len;
  } else {
    free(value);
  }
  c->calls++;
  return c->calls == c->stop_at ? 42 : 0;
}

static void owned_free(owned_collector *c) {
  for (int i = 0; i < c->calls && i < 8; i++) free(c->values[i]);
}

void test_split__splitAndIndexAgreeWithTheWholeDocument(void) {
  tsj_error err;
  owned_collector c;
  memset(&c, 0, sizeof c);
  const char *small = "{ \"a\" : 1 , \"b\\u0041\" : [ 1 , 2 ] , \"c\" : { } }";
  CHECK_MSG(tsj_split_object(small, strlen(small), owned_cb, &c, &err) == TSJ_OK && c.calls == 3 &&
            strcmp(c.keys[0], "a") == 0 && strcmp(c.values[0], "1") == 0 && c.lengths[0] == 1 &&
            strcmp(c.keys[1], "bA") == 0 && strcmp(c.values[1], "[1,2]") == 0 && strcmp(c.keys[2], "c") == 0 &&
            strcmp(c.values[2], "{}") == 0,
        "split small: %d calls, %s", c.calls, err.message);
  owned_free(&c);
  /* a callback that stops: its value is its own, the rest are freed (valgrind) */
  memset(&c, 0, sizeof c);
  c.stop_at = 2;
  CHECK_MSG(tsj_split_object(small, strlen(small), owned_cb, &c, &err) == 42 && c.calls == 2 && err.code == 42,
        "split stopped: %d calls", c.calls);
  owned_free(&c);
  memset(&c, 0, sizeof c);
  CHECK_MSG(tsj_split_object("{\"a\":1,\"a\":2}", 13, owned_cb, &c, &err) == TSJ_ERR_DUPLICATE_KEY && c.calls == 0,
        "split duplicate");
  CHECK_MSG(tsj_split_object("[1]", 3, owned_cb, &c, &err) == TSJ_ERR_NOT_OBJECT && c.calls == 0, "split array");
  CHECK_MSG(tsj_split_object("{}", 2, NULL, &c, &err) == TSJ_ERR_INVALID_ARG, "split NULL callback");

  /* large: the biggest value takes over the working buffer, in the middle */
  size_t big = 300 * 1024, at = 0;
  char *text = malloc(big + 64);
  at += (size_t)sprintf(text, "{\"x\": 1, \"big\": \"");
  memset(text + at, 'q', big);
  at += big;
  at += (size_t)sprintf(text + at, "\" , \"y\": [true]}");
  for (int lean = 0; lean < 2; lean++) {
    size_t saved = tsj_lean_input_bytes;
    if (lean) tsj_lean_input_bytes = 0;
    memset(&c, 0, sizeof c);
    int rc = tsj_split_object(text, at, owned_cb, &c, &err);
    CHECK_MSG(rc == TSJ_OK && c.calls == 3 && strcmp(c.values[0], "1") == 0 && strcmp(c.keys[1], "big") == 0 &&
              c.lengths[1] == big + 2 && c.values[1][0] == '"' && c.values[1][big] == 'q' &&
              c.values[1][big + 1] == '"' && c.values[1][big + 2] == '\0' && strcmp(c.values[2], "[true]") == 0,
          "split big (lean %d): %s", lean, err.message);
    owned_free(&c);
    /* stopped on the first value: the big one, not handed over yet, is freed */
    memset(&c, 0, sizeof c);
    c.stop_at = 1;
    CHECK_MSG(tsj_split_object(text, at, owned_cb, &c, &err) == 42 && c.calls == 1, "split big stopped");
    owned_free(&c);
    tsj_lean_input_bytes = saved;
  }
  free(text);

  /* tsj_doc_index: bounded; over the bound, TSJ_ERR_TOO_LARGE (and the
   * walk without an index gives the same answers) */
  size_t n = 100000;
  char *arrays = malloc(3 * n + 2);
  at = 0;
  arrays[at++] = '[';
  for (size_t i = 0; i < n; i++) {
    if (i) arrays[at++] = ',';
    arrays[at++] = '[';
    arrays[at++] = ']';
  }
  arrays[at++] = ']';
  arrays[at] = '\0';
  tsj_doc *d = tsj_doc_index(arrays, at, at + 64 * 1024, &err);
  CHECK_MSG(d == NULL && err.code == TSJ_ERR_TOO_LARGE && contains(err.message, "would take more than"),
        "index over its budget: %s", err.message);
  d = tsj_doc_index(arrays, at, (size_t)-1, &err);
  CHECK_MSG(d != NULL && tsj_doc_index_bytes(d) > at && tsj_doc_text(d, NULL) == arrays, "index unbounded: %s",
        err.message);
  char *out = NULL;
  CHECK_MSG(d && tsj_doc_at_pointer(d, "/99999", 6, &out, NULL, &err) == TSJ_OK && strcmp(out, "[]") == 0,
        "indexed look-up");
  free(out);
  out = NULL;
  CHECK_MSG(tsj_text_at_pointer(arrays, at, "/99999", 6, &out, NULL, &err) == TSJ_OK && strcmp(out, "[]") == 0,
        "look-up without index");
  free(out);
  CHECK_MSG(tsj_text_at_pointer(arrays, at, "/100000", 7, &out, NULL, &err) == TSJ_ERR_NOT_FOUND &&
            contains(err.message, "array of 100000 elements"),
        "out of range without index: %s", err.message);
  tsj_doc_free(d);
  free(arrays);
  /* a typical slice's index is far under its text (strings of 1 KB: 4 bytes each) */
  const char *one = "{\"k\":\"v\",\"list\":[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]}";
  d = tsj_doc_index(one, strlen(one), strlen(one), &err);
  CHECK_MSG(d != NULL && tsj_doc_index_bytes(d) <= strlen(one) + 256, "small index: %s", err.message);
  tsj_doc_free(d);
  CHECK_MSG(tsj_doc_index(NULL, 0, 100, &err) == NULL && err.code == TSJ_ERR_INVALID_ARG, "index NULL");
  CHECK_MSG(tsj_text_at_pointer(NULL, 0, "", 0, &out, NULL, &err) == TSJ_ERR_INVALID_ARG, "text_at_pointer NULL");
}

/* ------------------------------------------------------------------------ */
/* JSON Patch (tsj_patch_apply) */

/* Test strings are written with ' for ", which none of them needs literally. */
static char *sq_len(const char *s, size_t len) {
  char *r = (char *)malloc(len + 1);
  memcpy(r, s, len);
  r[len] = '\0';
  for (size_t i = 0; i < len; i++)
    if (r[i] == '\'') r[i] = '"';
  return r;
}
static char *sq(const char *s) { return sq_len(s, strlen(s)); }

typedef struct {
  char buf[2048];
  size_t len;
  int bad_termination;
} paths_seen;

static void paths_cb(const char *path, size_t path_len, void *ctx) {
  paths_seen *ps = (paths_seen *)ctx;
  if (path[path_len] != '\0') ps->bad_termination = 1;
  if (ps->len + path_len + 2 < sizeof ps->buf) {
    memcpy(ps->buf + ps->len, path, path_len);
    ps->len += path_len;
    ps->buf[ps->len++] = ';';
    ps->buf[ps->len] = '\0';
  }
}

/* Every patch runs three ways, which must agree: without an index, with
 * tsj_doc_index over the text (the store's slices), and over the text of
 * tsj_doc_parse's document with that document as the index. */
static const char *const g_patch_ways[] = {"no index", "doc_index", "doc_parse"};

static int patch_way(int way, const char *doc, size_t doc_len, const char *patch, size_t patch_len, size_t max_depth,
                     char **out, size_t *out_len, paths_seen *paths, tsj_error *err) {
  tsj_doc *index = NULL;
  const char *text = doc;
  size_t len = doc_len;
  if (way == 1) index = tsj_doc_index(doc, doc_len, (size_t)-1, err);
  if (way == 2) {
    index = tsj_doc_parse(doc, doc_len, err);
    if (index) text = tsj_doc_text(index, &len);
  }
  if (way && !index) return -1;
  memset(paths, 0, sizeof *paths);
  int rc = tsj_patch_apply(text, len, index, patch, patch_len, max_depth, out, out_len, paths_cb, paths, err);
  tsj_doc_free(index);
  return rc;
}

static void patch_ok_at(const char *file, int line, const char *doc_sq, const char *patch_sq, size_t max_depth,
                        const char *want_sq, const char *paths_sq) {
  char *doc = sq(doc_sq), *patch = sq(patch_sq), *want = want_sq ? sq(want_sq) : NULL;
  char *want_paths = paths_sq ? sq(paths_sq) : NULL;
  for (int way = 0; way < 3; way++) {
    char *out = (char *)1;
    size_t out_len = 777;
    paths_seen paths;
    tsj_error err;
    int rc = patch_way(way, doc, strlen(doc), patch, strlen(patch), max_depth, &out, &out_len, &paths, &err);
    int ok = rc == TSJ_OK && err.code == TSJ_OK && err.offset == -1 && err.message[0] == '\0' && !paths.bad_termination;
    if (want) {
      ok = ok && out && out_len == strlen(want) && strcmp(out, want) == 0;
      /* the result is minified JSON: tsj_minify gives it back unchanged */
      char *again = NULL;
      size_t again_len = 0;
      ok = ok && tsj_minify(out, out_len, &again, &again_len, NULL) == TSJ_OK && again_len == out_len &&
           memcmp(again, out, out_len) == 0;
      free(again);
    } else {
      ok = ok && out == NULL && out_len == 0;
    }
    if (want_paths) ok = ok && strcmp(paths.buf, want_paths) == 0;
    check_at(ok, file, line, "patch %s (%s) on %s: rc=%s out=%.200s want=%.200s paths=%s want=%s msg=%s", patch,
             g_patch_ways[way], doc, tsj_code_name(rc), out ? out : "(null)", want ? want : "(unchanged)", paths.buf,
             want_paths ? want_paths : "(any)", err.message);
    if (out != (char *)1) free(out);
  }
  free(doc), free(patch), free(want), free(want_paths);
}
#define PATCH_OK(doc, patch, want, paths) patch_ok_at(__FILE__, __LINE__, doc, patch, TSJ_MAX_DEPTH, want, paths)
#define PATCH_SAME(doc, patch) patch_ok_at(__FILE__, __LINE__, doc, patch, TSJ_MAX_DEPTH, NULL, "")

static void patch_err_at(const char *file, int line, const char *doc_sq, const char *patch_sq, size_t patch_len,
                         size_t max_depth, int code, long long offset, const char *part_sq) {
  if (patch_len == (size_t)-1) patch_len = strlen(patch_sq);
  char *doc = sq(doc_sq), *patch = sq_len(patch_sq, patch_len), *part = part_sq ? sq(part_sq) : NULL;
  char first[256] = "";
  for (int way = 0; way < 3; way++) {
    char *out = (char *)1;
    size_t out_len = 777;
    paths_seen paths;
    tsj_error err;
    memset(&err, 0x55, sizeof err);
    int rc = patch_way(way, doc, strlen(doc), patch, patch_len, max_depth, &out, &out_len, &paths, &err);
    check_at(rc == code && err.code == code && out == NULL && out_len == 0 && err.offset == offset &&
                 paths.len == 0 && (!part || contains(err.message, part)) &&
                 strlen(err.message) < sizeof err.message && (way == 0 || strcmp(first, err.message) == 0),
             file, line,
             "patch %s (%s) on %s: rc=%s (want %s) offset=%lld (want %lld) msg=\"%s\" (want \"%s\", first way \"%s\")",
             patch, g_patch_ways[way], doc, tsj_code_name(rc), tsj_code_name(code), err.offset, offset, err.message,
             part ? part : "", first);
    if (way == 0) snprintf(first, sizeof first, "%s", err.message);
    if (out != (char *)1) free(out);
  }
  free(doc), free(patch), free(part);
}
#define PATCH_ERR(doc, patch, code, off, part) \
  patch_err_at(__FILE__, __LINE__, doc, patch, (size_t)-1, TSJ_MAX_DEPTH, code, off, part)
#define PATCH_ERR_DEPTH(doc, patch, max_depth, off, part) \
  patch_err_at(__FILE__, __LINE__, doc, patch, (size_t)-1, max_depth, TSJ_ERR_DEPTH, off, part)

/* One operation, for short cases: OP1("add", "/a", "1") is [{"op":"add","path":"/a","value":1}]. */
static char g_op_buf[4][4096];
static int g_op_next;
static const char *op1(const char *op, const char *path, const char *value) {
  char *b = g_op_buf[g_op_next++ % 4];
  if (value) snprintf(b, sizeof g_op_buf[0], "[{'op':'%s','path':'%s','value':%s}]", op, path, value);
  else snprintf(b, sizeof g_op_buf[0], "[{'op':'%s','path':'%s'}]", op, path);
  return b;
}
static const char *op_from(const char *op, const char *from, const char *path) {
  char *b = g_op_buf[g_op_next++ % 4];
  snprintf(b, sizeof g_op_buf[0], "[{'op':'%s','from':'%s','path':'%s'}]", op, from, path);
  return b;
}

/* RFC 6902, Appendix A: every example, with its result. */
void test_patch__everyRfc6902ExampleGivesItsResult(void) {
  /* A.1 Adding an Object Member */
  PATCH_OK("{'foo':'bar'}", "[{'op':'add','path':'/baz','value':'qux'}]", "{'foo':'bar','baz':'qux'}", "/baz;");
  /* A.2 Adding an Array Element */
  PATCH_OK("{'foo':['bar','baz']}", "[{'op':'add','path':'/foo/1','value':'qux'}]", "{'foo':['bar','qux','baz']}",
           "/foo/1;");
  /* A.3 Removing an Object Member */
  PATCH_OK("{'baz':'qux','foo':'bar'}", "[{'op':'remove','path':'/baz'}]", "{'foo':'bar'}", "/baz;");
  /* A.4 Removing an Array Element */
  PATCH_OK("{'foo':['bar','qux','baz']}", "[{'op':'remove','path':'/foo/1'}]", "{'foo':['bar','baz']}", "/foo/1;");
  /* A.5 Replacing a Value */
  PATCH_OK("{'baz':'qux','foo':'bar'}", "[{'op':'replace','path':'/baz','value':'boo'}]", "{'baz':'boo','foo':'bar'}",
           "/baz;");
  /* A.6 Moving a Value */
  PATCH_OK("{'foo':{'bar':'baz','waldo':'fred'},'qux':{'corge':'grault'}}",
           "[{'op':'move','from':'/foo/waldo','path':'/qux/thud'}]",
           "{'foo':{'bar':'baz'},'qux':{'corge':'grault','thud':'fred'}}", "/foo/waldo;/qux/thud;");
  /* A.7 Moving an Array Element */
  PATCH_OK("{'foo':['all','grass','cows','eat']}", "[{'op':'move','from':'/foo/1','path':'/foo/3'}]",
           "{'foo':['all','cows','eat','grass']}", "/foo/1;/foo/3;");
  /* A.8 Testing a Value: Success (nothing changes, nothing is reported) */
  PATCH_SAME("{'baz':'qux','foo':['a',2,'c']}",
             "[{'op':'test','path':'/baz','value':'qux'},{'op':'test','path':'/foo/1','value':2}]");
  /* A.9 Testing a Value: Error */
  PATCH_ERR("{'baz':'qux'}", "[{'op':'test','path':'/baz','value':'bar'}]", TSJ_ERR_PATCH, 1,
            "op 0 ('test' at '/baz'): the value differs (found 'qux')");
  /* A.10 Adding a Nested Member Object */
  PATCH_OK("{'foo':'bar'}", "[{'op':'add','path':'/child','value':{'grandchild':{}}}]",
           "{'foo':'bar','child':{'grandchild':{}}}", "/child;");
  /* A.11 Ignoring Unrecognized Elements */
  PATCH_OK("{'foo':'bar'}", "[{'op':'add','path':'/baz','value':'qux','xyz':123}]", "{'foo':'bar','baz':'qux'}",
           "/baz;");
  /* A.12 Adding to a Nonexistent Target */
  PATCH_ERR("{'foo':'bar'}", "[{'op':'add','path':'/baz/bat','value':'qux'}]", TSJ_ERR_PATCH, 1,
            "op 0 ('add' at '/baz/bat'): no member 'baz' in the object at ''");
  /* A.13 Invalid JSON Patch Document: "op" twice is a duplicate key, as in every input */
  PATCH_ERR("{'foo':'bar'}", "[{'op':'add','path':'/baz','value':'qux','op':'remove'}]", TSJ_ERR_DUPLICATE_KEY, 41,
            "duplicate key 'op' at byte 41");
  /* A.14 ~ Escape Ordering */
  PATCH_SAME("{'/':9,'~1':10}", "[{'op':'test','path':'/~01','value':10}]");
  /* A.15 Comparing Strings and Numbers */
  PATCH_ERR("{'/':9,'~1':10}", "[{'op':'test','path':'/~01','value':'10'}]", TSJ_ERR_PATCH, 1,
            "op 0 ('test' at '/~01'): the value differs (found 10)");
  /* A.16 Adding an Array Value */
  PATCH_OK("{'foo':['bar']}", "[{'op':'add','path':'/foo/-','value':['abc','def']}]", "{'foo':['bar',['abc','def']]}",
           "/foo/-;");
}

/* Cases of the public JSON Patch conformance suite (json-patch-tests),
 * written again here from what they check. */
void test_patch__conformanceSuiteCasesGiveTheirResults(void) {
  PATCH_SAME("{}", "[]");
  PATCH_SAME("[]", "[]");
  PATCH_SAME("['foo']", "[]");
  PATCH_OK("{}", op1("add", "/foo", "'1'"), "{'foo':'1'}", "/foo;");
  PATCH_OK("{}", op1("add", "/foo", "1"), "{'foo':1}", "/foo;");
  PATCH_OK("[]", op1("add", "/0", "'foo'"), "['foo']", "/0;");
  PATCH_OK("{'foo':1}", op1("replace", "", "{'baz':'qux'}"), "{'baz':'qux'}", ";");
  PATCH_OK("{'foo':'bar'}", op1("add", "", "{'baz':'qux'}"), "{'baz':'qux'}", ";");
  PATCH_OK("{}", op1("add", "", "[]"), "[]", ";");
  PATCH_OK("'foo'", op1("replace", "", "'bar'"), "'bar'", ";");
  PATCH_OK("1", op1("add", "", "[1, 2]"), "[1,2]", ";");
  PATCH_OK("{}", op1("add", "/", "1"), "{'':1}", "/;");
  PATCH_OK("{'foo':{}}", op1("add", "/foo/", "1"), "{'foo':{'':1}}", "/foo/;");
  PATCH_OK("{'foo':1}", op1("add", "/bar", "[1,2]"), "{'foo':1,'bar':[1,2]}", NULL);
  PATCH_OK("{'foo':1,'baz':[{'qux':'hello'}]}", op1("add", "/baz/0/foo", "'world'"),
           "{'foo':1,'baz':[{'qux':'hello','foo':'world'}]}", NULL);
  PATCH_ERR("{'bar':[1,2]}", op1("add", "/bar/8", "'5'"), TSJ_ERR_PATCH, 1,
            "op 0 ('add' at '/bar/8'): index '8' is out of range for the array of 2 elements at '/bar'");
  PATCH_ERR("{'bar':[1,2]}", op1("add", "/bar/-1", "'5'"), TSJ_ERR_PATCH, 1,
            "'-1' is not an array index in the array at '/bar'");
  PATCH_OK("{'foo':1}", op1("add", "/bar", "true"), "{'foo':1,'bar':true}", NULL);
  PATCH_OK("{'foo':1}", op1("add", "/bar", "false"), "{'foo':1,'bar':false}", NULL);
  PATCH_OK("{'foo':1}", op1("add", "/bar", "null"), "{'foo':1,'bar':null}", NULL);
  PATCH_OK("{'foo':1}", op1("add", "/0", "'bar'"), "{'foo':1,'0':'bar'}", NULL);
  PATCH_OK("['foo']", op1("add", "/1", "'bar'"), "['foo','bar']", NULL);
  PATCH_OK("['foo','sil']", op1("add", "/1", "'bar'"), "['foo','bar','sil']", NULL);
  PATCH_OK("['foo','sil']", op1("add", "/0", "'bar'"), "['bar','foo','sil']", NULL);
  PATCH_OK("['foo','sil']", op1("add", "/2", "'bar'"), "['foo','sil','bar']", NULL);
  PATCH_SAME("{'1e0':'foo'}", op1("test", "/1e0", "'foo'"));
  PATCH_ERR("['foo','bar']", op1("test", "/00", "'foo'"), TSJ_ERR_PATCH, 1, "(leading zero)");
  PATCH_ERR("['foo','bar']", op1("test", "/01", "'bar'"), TSJ_ERR_PATCH, 1, "(leading zero)");
  PATCH_ERR("{'foo':'bar'}", op1("remove", "/baz", NULL), TSJ_ERR_PATCH, 1,
            "op 0 ('remove' at '/baz'): no member 'baz' in the object at ''");
  PATCH_ERR("{'foo':'bar'}", op1("remove", "/missing1/missing2", NULL), TSJ_ERR_PATCH, 1, "no member 'missing1'");
  PATCH_ERR("['foo','bar']", op1("remove", "/2", NULL), TSJ_ERR_PATCH, 1,
            "index '2' is out of range for the array of 2 elements at ''");
  PATCH_OK("{'foo':'bar'}", op1("add", "/FOO", "'BAR'"), "{'foo':'bar','FOO':'BAR'}", NULL);
  PATCH_OK("['foo','sil']", op1("add", "/1", "['bar','baz']"), "['foo',['bar','baz'],'sil']", NULL);
  PATCH_OK("{'foo':1,'bar':[1,2,3,4]}", op1("remove", "/bar", NULL), "{'foo':1}", NULL);
  PATCH_OK("{'foo':1,'baz':[{'qux':'hello'}]}", op1("remove", "/baz/0/qux", NULL), "{'foo':1,'baz':[{}]}", NULL);
  PATCH_OK("{'foo':1,'baz':[{'qux':'hello'}]}", op1("replace", "/foo", "[1,2,3,4]"),
           "{'foo':[1,2,3,4],'baz':[{'qux':'hello'}]}", NULL);
  PATCH_OK("{'foo':[1,2,3,4],'baz':[{'qux':'hello'}]}", op1("replace", "/baz/0/qux", "'world'"),
           "{'foo':[1,2,3,4],'baz':[{'qux':'world'}]}", NULL);
  PATCH_OK("['foo']", op1("replace", "/0", "'bar'"), "['bar']", NULL);
  PATCH_OK("['']", op1("replace", "/0", "0"), "[0]", NULL);
  PATCH_OK("['']", op1("replace", "/0", "true"), "[true]", NULL);
  PATCH_OK("['']", op1("replace", "/0", "false"), "[false]", NULL);
  PATCH_OK("['']", op1("replace", "/0", "null"), "[null]", NULL);
  PATCH_OK("['foo','sil']", op1("replace", "/1", "['bar','baz']"), "['foo',['bar','baz']]", NULL);
  PATCH_OK("[1,2]", op1("add", "/-", "{'foo':['bar','baz']}"), "[1,2,{'foo':['bar','baz']}]", NULL);
  PATCH_OK("[1,2,[3,[4,5]]]", op1("add", "/2/1/-", "{'foo':['bar','baz']}"), "[1,2,[3,[4,5,{'foo':['bar','baz']}]]]",
           NULL);
  PATCH_ERR("{'foo':1,'baz':[{'qux':'hello'}]}", op1("remove", "/baz/1e0/qux", NULL), TSJ_ERR_PATCH, 1,
            "'1e0' is not an array index in the array at '/baz'");
  PATCH_OK("[1,2,3,4]", op1("remove", "/0", NULL), "[2,3,4]", NULL);
  PATCH_OK("[1,2,3,4]", "[{'op':'remove','path':'/1'},{'op':'remove','path':'/2'}]", "[1,3]", "/1;/2;");
  PATCH_ERR("[1,2,3,4]", op1("remove", "/1e0", NULL), TSJ_ERR_PATCH, 1, "not an array index");
  PATCH_ERR("['']", op1("replace", "/1e0", "false"), TSJ_ERR_PATCH, 1, "not an array index");
  PATCH_ERR("{'baz':[1,2,3],'bar':1}", op_from("copy", "/baz/1e0", "/boo"), TSJ_ERR_PATCH, 1,
            "op 0 ('copy' at '/boo'): 'from': '1e0' is not an array index in the array at '/baz'");
  PATCH_ERR("{'foo':1,'baz':[1,2,3,4]}", op_from("move", "/baz/1e0", "/foo"), TSJ_ERR_PATCH, 1,
            "'from': '1e0' is not an array index");
  PATCH_ERR("['foo','sil']", op1("add", "/1e0", "'bar'"), TSJ_ERR_PATCH, 1, "not an array index");
  PATCH_ERR("[1]", "[{'op':'add','path':'/-'}]", TSJ_ERR_PATCH, 1, "op 0 ('add' at '/-'): 'value' is missing");
  PATCH_ERR("[1]", "[{'op':'replace','path':'/0'}]", TSJ_ERR_PATCH, 1, "'value' is missing");
  PATCH_ERR("[null]", "[{'op':'test','path':'/0'}]", TSJ_ERR_PATCH, 1, "'value' is missing");
  PATCH_ERR("[false]", "[{'op':'test','path':'/0'}]", TSJ_ERR_PATCH, 1, "'value' is missing");
  PATCH_ERR("[1]", "[{'op':'copy','path':'/-'}]", TSJ_ERR_PATCH, 1, "op 0 ('copy' at '/-'): 'from' is missing");
  PATCH_ERR("{'foo':1}", op_from("copy", "/bar", "/foo"), TSJ_ERR_PATCH, 1,
            "op 0 ('copy' at '/foo'): 'from': no member 'bar' in the object at ''");
  PATCH_ERR("{'foo':1}", "[{'op':'move','path':''}]", TSJ_ERR_PATCH, 1, "'from' is missing");
  PATCH_ERR("{'foo':1}", op_from("move", "/bar", "/foo"), TSJ_ERR_PATCH, 1, "'from': no member 'bar'");
  PATCH_ERR("{'foo':'bar'}", "[{'op':'add','path':'/baz','value':'qux','op':'move','from':'/foo'}]",
            TSJ_ERR_DUPLICATE_KEY, 41, "duplicate key 'op' at byte 41");
  PATCH_ERR("{'foo':1}", "[{'op':'spam','path':'/foo','value':1}]", TSJ_ERR_PATCH, 1,
            "op 0: unknown op 'spam' (expected add, remove, replace, move, copy or test)");
  PATCH_ERR("['foo','bar']", op1("test", "/1e0", "'bar'"), TSJ_ERR_PATCH, 1, "not an array index");
  PATCH_SAME("{'foo':null}", op1("test", "/foo", "null"));
  PATCH_OK("{'foo':null}", op1("replace", "/foo", "'truthy'"), "{'foo':'truthy'}", NULL);
  PATCH_OK("{'foo':null}", op_from("move", "/foo", "/bar"), "{'bar':null}", "/foo;/bar;");
  PATCH_OK("{'foo':null}", op_from("copy", "/foo", "/bar"), "{'foo':null,'bar':null}", "/bar;");
  PATCH_OK("{'foo':null}", op1("remove", "/foo", NULL), "{}", NULL);
  PATCH_OK("{'foo':'bar'}", op1("replace", "/foo", "null"), "{'foo':null}", NULL);
  PATCH_SAME("{'foo':{'foo':1,'bar':2}}", op1("test", "/foo", "{'bar':2,'foo':1}"));
  PATCH_SAME("{'foo':[{'foo':1,'bar':2}]}", op1("test", "/foo", "[{'bar':2,'foo':1}]"));
  PATCH_SAME("{'foo':{'bar':[1,2,5,4]}}", op1("test", "/foo", "{'bar':[1,2,5,4]}"));
  PATCH_ERR("{'foo':{'bar':[1,2,5,4]}}", op1("test", "/foo", "[1,2]"), TSJ_ERR_PATCH, 1,
            "the value differs (found {'bar':[1,2,5,4]})");
  PATCH_SAME("{'foo':1}", op1("test", "", "{'foo':1}"));
  PATCH_SAME("{'':1}", op1("test", "/", "1"));
  const char *escapes = "{'foo':['bar','baz'],'':0,'a/b':1,'c%d':2,'e^f':3,'g|h':4,'i\\\\j':5,'k\\'l':6,' ':7,'m~n':8}";
  /* the document has a literal '"' in key k"l: written with \' above, which sq() turns into \" */
  PATCH_SAME(escapes,
             "[{'op':'test','path':'/foo','value':['bar','baz']},{'op':'test','path':'/foo/0','value':'bar'},"
             "{'op':'test','path':'/','value':0},{'op':'test','path':'/a~1b','value':1},"
             "{'op':'test','path':'/c%d','value':2},{'op':'test','path':'/e^f','value':3},"
             "{'op':'test','path':'/g|h','value':4},{'op':'test','path':'/i\\\\j','value':5},"
             "{'op':'test','path':'/k\\'l','value':6},{'op':'test','path':'/ ','value':7},"
             "{'op':'test','path':'/m~0n','value':8}]");
  PATCH_OK("{'foo':1}", op_from("move", "/foo", "/foo"), NULL, "/foo;/foo;");  /* changes nothing, reported */
  PATCH_OK("{'foo':1,'baz':[{'qux':'hello'}]}", op_from("move", "/foo", "/bar"), "{'baz':[{'qux':'hello'}],'bar':1}",
           NULL);
  PATCH_OK("{'baz':[{'qux':'hello'}],'bar':1}", op_from("move", "/baz/0/qux", "/baz/1"),
           "{'baz':[{},'hello'],'bar':1}", NULL);
  PATCH_OK("{'baz':[{'qux':'hello'}],'bar':1}", op_from("copy", "/baz/0", "/boo"),
           "{'baz':[{'qux':'hello'}],'bar':1,'boo':{'qux':'hello'}}", NULL);
  PATCH_OK("{'foo':{}}", op1("add", "/foo/-", "1"), "{'foo':{'-':1}}", NULL); /* '-' is a key in an object */
}

/* Every operation, every way it can fail, and what the patch as a whole promises. */
void test_patch__everyOperationAndFailureKeepsThePatchAtomic(void) {
  /* add: members keep their place when replaced, new ones go last; escapes and digits verbatim */
  PATCH_OK("{'a':1,'b':2}", op1("add", "/a", "[ 1 , 2 ]"), "{'a':[1,2],'b':2}", "/a;");
  PATCH_OK("{'a':1}", op1("add", "/n", "1E+2"), "{'a':1,'n':1E+2}", NULL);
  PATCH_OK("{'a':1}", op1("add", "/n", "-0.0e-0"), "{'a':1,'n':-0.0e-0}", NULL);
  PATCH_OK("{'a':1}", op1("add", "/n", "123456789012345678901234567890"), "{'a':1,'n':123456789012345678901234567890}",
           NULL);
  PATCH_OK("{'a':1}", op1("add", "/s", "'\\u0041\\/ \\n'"), "{'a':1,'s':'\\u0041\\/ \\n'}", NULL);
  PATCH_OK("{}", op1("add", "/x", "{ 'k' : [ true , null , { } ] }"), "{'x':{'k':[true,null,{}]}}", NULL);
  /* a new member's key is written as tsj_quote writes the unescaped token */
  PATCH_OK("{}", op1("add", "/a~1b~0c", "1"), "{'a/b~c':1}", NULL);
  PATCH_OK("{}", op1("add", "/q\\'", "1"), "{'q\\'':1}", NULL);
  PATCH_OK("{}", op1("add", "/\\u00e9\\u0001\\t", "1"), "{'\xc3\xa9\\u0001\\t':1}", NULL);
  /* JSON unescapes first: "/\/" is the pointer "//" (two empty tokens); a key "/" is "~1" */
  PATCH_ERR("{}", op1("add", "/\\/", "1"), TSJ_ERR_PATCH, 1, "op 0 ('add' at '//'): no member '' in the object at ''");
  PATCH_OK("{}", op1("add", "/~1", "1"), "{'/':1}", "/~1;");
  PATCH_OK("{}", op1("add", "/\\u0000", "1"), "{'\\u0000':1}", NULL);
  /* members are found after unescaping, on both sides */
  PATCH_OK("{'\\u0041':1,'b':2}", op1("replace", "/A", "3"), "{'\\u0041':3,'b':2}", NULL);
  PATCH_OK("{'A':1}", op1("replace", "/\\u0041", "3"), "{'A':3}", NULL);
  PATCH_OK("{'A':1}", "[{'\\u006fp':'r\\u0065place','p\\u0061th':'/A','valu\\u0065':4}]", "{'A':4}", "/A;");
  /* arrays: insert at 0, middle, length; append with '-'; into empty arrays */
  PATCH_OK("[]", op1("add", "/-", "1"), "[1]", "/-;");
  PATCH_OK("[[]]", op1("add", "/0/0", "1"), "[[1]]", NULL);
  PATCH_OK("[1,2,3]", op1("add", "/3", "4"), "[1,2,3,4]", NULL);
  PATCH_OK("[1,2,3]", op1("add", "/0", "0"), "[0,1,2,3]", NULL);
  PATCH_ERR("[1,2,3]", op1("add", "/4", "0"), TSJ_ERR_PATCH, 1,
            "op 0 ('add' at '/4'): index '4' is out of range for the array of 3 elements at ''");
  PATCH_ERR("[]", op1("add", "/1", "0"), TSJ_ERR_PATCH, 1, "index '1' is out of range for the array of 0 elements");
  PATCH_ERR("[1]", op1("add", "/99999999999999999999", "0"), TSJ_ERR_PATCH, 1, "out of range");
  PATCH_ERR("[1]", op1("add", "/", "0"), TSJ_ERR_PATCH, 1, "'' is not an array index in the array at ''");
  PATCH_ERR("{'a':[1]}", op1("add", "/a/-/x", "0"), TSJ_ERR_PATCH, 1,
            "'-' (the end of the array) is never found in the array at '/a'");
  PATCH_ERR("{'a':1}", op1("add", "/a/b", "0"), TSJ_ERR_PATCH, 1,
            "op 0 ('add' at '/a/b'): cannot look up 'b' in the number at '/a'");
  PATCH_ERR("{'a':'s'}", op1("add", "/a/0", "0"), TSJ_ERR_PATCH, 1, "cannot look up '0' in the string at '/a'");
  PATCH_ERR("{'a':{}}", op1("add", "/a/b/c", "0"), TSJ_ERR_PATCH, 1, "no member 'b' in the object at '/a'");

  /* remove: first, middle, last, only member/element; nested */
  PATCH_OK("{'a':1,'b':2,'c':3}", op1("remove", "/a", NULL), "{'b':2,'c':3}", NULL);
  PATCH_OK("{'a':1,'b':2,'c':3}", op1("remove", "/b", NULL), "{'a':1,'c':3}", NULL);
  PATCH_OK("{'a':1,'b':2,'c':3}", op1("remove", "/c", NULL), "{'a':1,'b':2}", NULL);
  PATCH_OK("{'a':{'x':[1]}}", op1("remove", "/a/x", NULL), "{'a':{}}", NULL);
  PATCH_OK("[[1,2],3]", op1("remove", "/0/1", NULL), "[[1],3]", NULL);
  PATCH_OK("[[1,2],3]", op1("remove", "/1", NULL), "[[1,2]]", NULL);
  PATCH_OK("[{'a':'}'}]", op1("remove", "/0/a", NULL), "[{}]", NULL);
  PATCH_ERR("{'a':1}", op1("remove", "", NULL), TSJ_ERR_PATCH, 1,
            "op 0 ('remove' at ''): the whole document cannot be removed");
  PATCH_ERR("[1]", op1("remove", "/-", NULL), TSJ_ERR_PATCH, 1, "'-' (the end of the array) is never found");
  PATCH_ERR("[1]", op1("remove", "/1", NULL), TSJ_ERR_PATCH, 1, "index '1' is out of range for the array of 1 elements");
  PATCH_ERR("{'a':1}", op1("remove", "/a/b", NULL), TSJ_ERR_PATCH, 1, "cannot look up 'b' in the number at '/a'");

  /* replace */
  PATCH_OK("{'a':1,'b':2}", op1("replace", "/a", "{'x':[]}"), "{'a':{'x':[]},'b':2}", NULL);
  PATCH_OK("[1,2,3]", op1("replace", "/2", "'x'"), "[1,2,'x']", NULL);
  PATCH_ERR("{'a':1}", op1("replace", "/b", "1"), TSJ_ERR_PATCH, 1, "op 0 ('replace' at '/b'): no member 'b'");
  PATCH_ERR("[1]", op1("replace", "/-", "1"), TSJ_ERR_PATCH, 1, "'-' (the end of the array) is never found");
  PATCH_ERR("[1]", op1("replace", "/1", "1"), TSJ_ERR_PATCH, 1, "out of range");

  /* move */
  PATCH_OK("{'a':{'b':1},'c':2}", op_from("move", "/a/b", "/c"), "{'a':{},'c':1}", "/a/b;/c;");
  PATCH_ERR("{'a':{'b':1},'c':2}", op_from("move", "/a", "/c/x"), TSJ_ERR_PATCH, 1,
            "op 0 ('move' at '/c/x'): cannot look up 'x' in the number at '/c'");
  PATCH_OK("[1,2,3]", op_from("move", "/0", "/2"), "[2,3,1]", NULL);
  PATCH_OK("[1,2,3]", op_from("move", "/2", "/0"), "[3,1,2]", NULL);
  PATCH_OK("[1,2,3]", op_from("move", "/0", "/-"), "[2,3,1]", NULL);
  PATCH_OK("{'a':[1,2],'b':[]}", op_from("move", "/a/1", "/b/0"), "{'a':[1],'b':[2]}", NULL);
  PATCH_OK("{'a':1,'b':2}", op_from("move", "/a", "/a"), NULL, "/a;/a;");
  PATCH_OK("{'a':{'b':{}}}", op_from("move", "/a/b", "/a"), "{'a':{}}", NULL); /* into its own parent */
  PATCH_OK("{'x':1}", op_from("move", "", ""), NULL, ";;");
  PATCH_ERR("{'a':{'b':1}}", op_from("move", "/a", "/a/b"), TSJ_ERR_PATCH, 1,
            "op 0 ('move' at '/a/b'): 'from' ('/a') is a proper prefix of 'path': a value cannot move into itself");
  PATCH_ERR("{'a':{}}", op_from("move", "", "/a/x"), TSJ_ERR_PATCH, 1, "'from' ('') is a proper prefix");
  PATCH_OK("{'a':1,'ab':2}", op_from("move", "/a", "/ab"), "{'ab':1}", NULL); /* "/a" is no prefix of "/ab" */
  PATCH_ERR("{'a':1}", op_from("move", "/b", "/c"), TSJ_ERR_PATCH, 1, "op 0 ('move' at '/c'): 'from': no member 'b'");
  PATCH_ERR("{'a':1}", op_from("move", "/a", "/b/c"), TSJ_ERR_PATCH, 1, "op 0 ('move' at '/b/c'): no member 'b'");
  PATCH_ERR("[1,2]", op_from("move", "/0", "/2"), TSJ_ERR_PATCH, 1, /* after the removal the array has 1 element */
            "index '2' is out of range for the array of 1 elements");

  /* copy */
  PATCH_OK("{'a':{'b':[1,{'c':2}]}}", op_from("copy", "/a/b", "/d"), "{'a':{'b':[1,{'c':2}]},'d':[1,{'c':2}]}", "/d;");
  PATCH_OK("{'a':[1,2]}", op_from("copy", "/a/0", "/a/-"), "{'a':[1,2,1]}", NULL);
  PATCH_OK("{'a':[1,2]}", op_from("copy", "/a", "/a/0"), "{'a':[[1,2],1,2]}", NULL); /* copy into itself is fine */
  PATCH_OK("{'a':1}", op_from("copy", "", "/b"), "{'a':1,'b':{'a':1}}", NULL);
  PATCH_OK("{'a':1}", op_from("copy", "/a", ""), "1", NULL);
  PATCH_ERR("{'a':1}", op_from("copy", "/a", "/x/y"), TSJ_ERR_PATCH, 1, "op 0 ('copy' at '/x/y'): no member 'x'");
  PATCH_ERR("{'a':1}", op_from("copy", "/-", "/b"), TSJ_ERR_PATCH, 1, "'from': no member '-'");

  /* test */
  PATCH_ERR("{'a':1}", op1("test", "/b", "1"), TSJ_ERR_PATCH, 1, "op 0 ('test' at '/b'): no member 'b'");
  PATCH_ERR("[1]", op1("test", "/-", "1"), TSJ_ERR_PATCH, 1, "'-' (the end of the array) is never found");
  PATCH_ERR("{'a':'x'}", op1("test", "/a", "'y'"), TSJ_ERR_PATCH, 1, "the value differs (found 'x')");
  PATCH_ERR("{'a':'0123456789012345678901234567890123456789012345'}", op1("test", "/a", "1"), TSJ_ERR_PATCH, 1,
            "the value differs (found '012345678901234567890123456789012345678...)");

  /* operations apply in order, each to the result of the one before */
  PATCH_OK("{}", "[{'op':'add','path':'/a','value':[]},{'op':'add','path':'/a/-','value':1},"
                 "{'op':'test','path':'/a','value':[1]},{'op':'copy','from':'/a','path':'/b'},"
                 "{'op':'replace','path':'/a/0','value':2},{'op':'move','from':'/b','path':'/a/0'},"
                 "{'op':'remove','path':'/a/1'}]",
           "{'a':[[1]]}", "/a;/a/-;/b;/a/0;/b;/a/0;/a/1;");
  /* all or nothing: a failure at the end leaves no result and reports no path */
  PATCH_ERR("{'a':1}", "[{'op':'replace','path':'/a','value':2},{'op':'remove','path':'/a'},"
                       "{'op':'test','path':'/a','value':2}]",
            TSJ_ERR_PATCH, 68, "op 2 ('test' at '/a'): no member 'a' in the object at ''");
  PATCH_ERR("{'a':1}", "[{'op':'replace','path':'/a','value':2},{'op':'test','path':'/a','value':1}]", TSJ_ERR_PATCH,
            40, "op 1 ('test' at '/a'): the value differs (found 2)");
  /* every operation is checked before any applies */
  PATCH_ERR("{'a':1}", "[{'op':'remove','path':'/nope'},{'op':'bad','path':'/a'}]", TSJ_ERR_PATCH, 32,
            "op 1: unknown op 'bad'");

  /* err->offset is the operation's '{' in the patch as given (white space and all) */
  PATCH_ERR("{'a':1}", " [ \n {'op':'test','path':'/a','value':1} ,\r\n\t{ 'op' : 'test' , 'path' : '/a' , 'value' : 2 } ] ",
            TSJ_ERR_PATCH, 45, "op 1 ('test' at '/a'): the value differs (found 1)");
  PATCH_ERR("{'a':1}", "  {'op':'test'}", TSJ_ERR_PATCH, 2, "a JSON Patch must be an array of operations, found object");

  /* what is not a patch */
  PATCH_ERR("{}", "'add'", TSJ_ERR_PATCH, 0, "a JSON Patch must be an array of operations, found string");
  PATCH_ERR("{}", "null", TSJ_ERR_PATCH, 0, "found null");
  PATCH_ERR("{}", "[[]]", TSJ_ERR_PATCH, 1, "op 0: an operation must be an object, found array");
  PATCH_ERR("{}", "[{'op':'test','path':'','value':{}}, null]", TSJ_ERR_PATCH, 37,
            "op 1: an operation must be an object, found null");
  PATCH_ERR("{}", "[{}]", TSJ_ERR_PATCH, 1, "op 0: 'op' is missing");
  PATCH_ERR("{}", "[{'path':'/a','value':1}]", TSJ_ERR_PATCH, 1, "op 0: 'op' is missing");
  PATCH_ERR("{}", "[{'op':1,'path':'/a'}]", TSJ_ERR_PATCH, 1, "op 0: 'op' must be a string, found number");
  PATCH_ERR("{}", "[{'op':'ADD','path':'/a','value':1}]", TSJ_ERR_PATCH, 1, "unknown op 'ADD'");
  PATCH_ERR("{}", "[{'op':'add ','path':'/a','value':1}]", TSJ_ERR_PATCH, 1, "unknown op 'add '");
  PATCH_ERR("{}", "[{'op':'add','value':1}]", TSJ_ERR_PATCH, 1, "op 0 ('add'): 'path' is missing");
  PATCH_ERR("{}", "[{'op':'remove','path':null}]", TSJ_ERR_PATCH, 1, "op 0 ('remove'): 'path' must be a string, found null");
  PATCH_ERR("{}", "[{'op':'add','path':['/a'],'value':1}]", TSJ_ERR_PATCH, 1, "'path' must be a string, found array");
  PATCH_ERR("{}", "[{'op':'add','path':'a','value':1}]", TSJ_ERR_PATCH, 1,
            "op 0 ('add' at 'a'): 'path' is not a JSON pointer: JSON pointer must be empty or start with ");
  PATCH_ERR("{}", "[{'op':'add','path':'/a~2','value':1}]", TSJ_ERR_PATCH, 1,
            "'path' is not a JSON pointer: invalid escape in JSON pointer at byte 2");
  PATCH_ERR("{}", "[{'op':'add','path':'/a~','value':1}]", TSJ_ERR_PATCH, 1, "invalid escape");
  PATCH_ERR("{}", "[{'op':'copy','from':1,'path':'/a'}]", TSJ_ERR_PATCH, 1,
            "op 0 ('copy' at '/a'): 'from' must be a string, found number");
  PATCH_ERR("{}", "[{'op':'move','from':'x','path':'/a'}]", TSJ_ERR_PATCH, 1, "'from' is not a JSON pointer");
  PATCH_ERR("{}", "[{'op':'move','from':'/~','path':'/a'}]", TSJ_ERR_PATCH, 1, "'from' is not a JSON pointer");
  /* members that do not belong to an op are ignored, whatever their type */
  PATCH_OK("{'a':1}", "[{'op':'remove','path':'/a','value':{'x':1},'from':7}]", "{}", NULL);
  PATCH_OK("{'a':1}", "[{'op':'add','path':'/b','value':2,'from':null}]", "{'a':1,'b':2}", NULL);
  PATCH_SAME("{'a':1}", "[{'op':'test','path':'/a','value':1,'from':false}]");

  /* the patch is validated as every input: codes and offsets of the JSON layer */
  PATCH_ERR("{}", "[{'op':'add','path':'/a','value':01}]", TSJ_ERR_SYNTAX, 34, "invalid number at byte 34 (leading zeros are not allowed)");
  PATCH_ERR("{}", "[{'op':'add','path':'/a','value':1}", TSJ_ERR_SYNTAX, 35, "at byte 35, found end of input");
  PATCH_ERR("{}", "", TSJ_ERR_SYNTAX, 0, "empty input");
  PATCH_ERR("{}", "[{'op':'add','path':'/a','value':'\xff'}]", TSJ_ERR_UTF8, 34, "invalid UTF-8 at byte 34");
  PATCH_ERR("{}", "[{'op':'add','path':'/\\ud800','value':1}]", TSJ_ERR_UTF8, 22, "unpaired surrogate");
  PATCH_ERR("{}", "[{'op':'add','path':'/a','value':{'k':1,'k':2}}]", TSJ_ERR_DUPLICATE_KEY, 40, "duplicate key 'k'");
  PATCH_ERR("{}", "[{'op':'add','path':'/a','valu\\u0065':1,'value':2}]", TSJ_ERR_DUPLICATE_KEY, 40,
            "duplicate key 'value' at byte 40");
  patch_err_at(__FILE__, __LINE__, "{}", "[{'op':'add','path':'/a','value':1}]\0junk", 41, TSJ_MAX_DEPTH, TSJ_ERR_SYNTAX,
               36, "trailing characters");

  /* depth: tokens of the path + the value's own depth <= max_depth */
  PATCH_OK("{}", op1("add", "/a", "[[1]]"), "{'a':[[1]]}", NULL);
  patch_ok_at(__FILE__, __LINE__, "{'a':{}}", op1("add", "/a/b", "[1]"), 3, "{'a':{'b':[1]}}", NULL);
  PATCH_ERR_DEPTH("{'a':{}}", op1("add", "/a/b", "[[1]]"), 3, 1,
                  "op 0 ('add' at '/a/b'): the result would be nested 4 deep (a value 2 deep under 2 containers), "
                  "more than 3");
  PATCH_ERR_DEPTH("{'a':{}}", op1("replace", "/a", "[[[1]]]"), 3, 1, "op 0 ('replace' at '/a'): the result would be nested 4");
  PATCH_ERR_DEPTH("{'a':[[[]]]}", op_from("copy", "/a", "/b"), 3, 1, "op 0 ('copy' at '/b'): the result would be nested 4");
  PATCH_ERR_DEPTH("{'a':[[[]]],'b':{}}", op_from("move", "/a", "/b/c"), 4, 1, "op 0 ('move' at '/b/c')");
  patch_ok_at(__FILE__, __LINE__, "{'a':1}", op1("replace", "", "7"), 0, "7", NULL);
  PATCH_ERR_DEPTH("{'a':1}", op1("replace", "", "[]"), 0, 1, "nested 1 deep (a value 1 deep under 0 containers), more than 0");
  patch_ok_at(__FILE__, __LINE__, "[]", op1("add", "/-", "1"), 1, "[1]", NULL);
  PATCH_ERR_DEPTH("{'a':1}", "[{'op':'remove','path':'/a'},{'op':'add','path':'/b','value':[]}]", 1, 29,
                  "op 1 ('add' at '/b')");
  {
    /* a max_depth above TSJ_MAX_DEPTH counts as TSJ_MAX_DEPTH: results stay readable */
    char *inner = repeat_wrap("[", "", "]", TSJ_MAX_DEPTH - 2); /* the deepest value a patch can hold */
    size_t plen = strlen(inner) + 64;
    char *patch = (char *)malloc(plen);
    snprintf(patch, plen, "[{'op':'add','path':'/a/b','value':%s}]", inner);
    char *want = (char *)malloc(plen);
    snprintf(want, plen, "{'a':{'b':%s}}", inner);
    patch_ok_at(__FILE__, __LINE__, "{'a':{}}", patch, 100000, want, NULL);
    snprintf(patch, plen, "[{'op':'copy','from':'/a/b','path':'/a/b/0'}]");
    char *deepdoc = sq(want);
    patch_err_at(__FILE__, __LINE__, deepdoc, patch, (size_t)-1, 100000, TSJ_ERR_DEPTH, 1,
                 "nested 257 deep (a value 254 deep under 3 containers), more than 256");
    free(inner), free(patch), free(want), free(deepdoc);
  }

  /* arguments */
  tsj_error err;
  char *out = (char *)1;
  const char *p = "[]";
  CHECK_MSG(tsj_patch_apply("{}", 2, NULL, p, 2, 8, NULL, NULL, NULL, NULL, &err) == TSJ_ERR_INVALID_ARG, "out NULL");
  CHECK_MSG(tsj_patch_apply(NULL, 0, NULL, p, 2, 8, &out, NULL, NULL, NULL, &err) == TSJ_ERR_INVALID_ARG && !out,
        "doc NULL");
  CHECK_MSG(tsj_patch_apply("{}", 0, NULL, p, 2, 8, &out, NULL, NULL, NULL, &err) == TSJ_ERR_INVALID_ARG, "doc empty");
  CHECK_MSG(tsj_patch_apply("{}", 2, NULL, NULL, 2, 8, &out, NULL, NULL, NULL, &err) == TSJ_ERR_INVALID_ARG, "patch NULL");
  CHECK_MSG(tsj_patch_apply("{}", 2, NULL, NULL, 0, 8, &out, NULL, NULL, NULL, &err) == TSJ_ERR_SYNTAX, "patch empty");
  const char *d1 = "{\"a\":1}";
  tsj_doc *other = tsj_doc_index(d1, strlen(d1), (size_t)-1, &err);
  char copy[] = "{\"a\":1}";
  CHECK_MSG(tsj_patch_apply(copy, strlen(copy), other, p, 2, 8, &out, NULL, NULL, NULL, &err) == TSJ_ERR_INVALID_ARG &&
            contains(err.message, "the index is not over this document"),
        "index of other text: %s", err.message);
  CHECK_MSG(tsj_patch_apply(d1, 3, other, p, 2, 8, &out, NULL, NULL, NULL, &err) == TSJ_ERR_INVALID_ARG,
        "index of a longer text");
  tsj_doc_free(other);
  /* err may be NULL, on_path may be NULL, out_len may be NULL */
  const char *pa = "[{\"op\":\"add\",\"path\":\"/b\",\"value\":2}]";
  CHECK_MSG(tsj_patch_apply(d1, strlen(d1), NULL, pa, strlen(pa), 8, &out, NULL, NULL, NULL, NULL) == TSJ_OK && out &&
            strcmp(out, "{\"a\":1,\"b\":2}") == 0,
        "NULLs allowed: %s", out ? out : "(null)");
  free(out);
  CHECK_MSG(tsj_patch_apply(d1, strlen(d1), NULL, "[1]", 3, 8, &out, NULL, NULL, NULL, NULL) == TSJ_ERR_PATCH && !out,
        "err NULL on failure");
  CHECK_MSG(strcmp(tsj_code_name(TSJ_ERR_PATCH), "TSJ_ERR_PATCH") == 0 && strcmp(tsj_code_name(TSJ_ERR_TYPE), "TSJ_ERR_TYPE") == 0 &&
            strcmp(tsj_code_name(TSJ_ERR_RANGE), "TSJ_ERR_RANGE") == 0,
        "code names");
}

/* "test": JSON values compared by value */
void test_patch__testComparesJsonValuesByValue(void) {
  static const char *const same[][2] = {
      {"1", "1.0"}, {"1", "1e0"}, {"1", "10E-1"}, {"1", "0.1e1"}, {"100", "1e2"}, {"100", "1E+2"},
      {"0", "-0"}, {"0", "0.0"}, {"0", "-0e5"}, {"0", "0E-999999999999999999999"}, {"-12.5", "-125e-1"},
      {"123456789012345678901234567890", "1.2345678901234567890123456789e29"}, {"1e400", "10e399"},
      {"1e1234567890123456789", "1e1234567890123456789"}, {"1e1234567890123456789", "1e001234567890123456789"},
      {"'a'", "'\\u0061'"}, {"'\\/'", "'/'"}, {"'\xf0\x9f\x98\x80'", "'\\ud83d\\ude00'"}, {"''", "''"},
      {"'\\n'", "'\\u000a'"}, {"[]", "[]"}, {"{}", "{}"}, {"null", "null"}, {"true", "true"},
      {"[1,[2,{'a':[]}]]", "[1.0,[2e0,{'a':[]}]]"}, {"{'a':1,'b':2}", "{'b':2,'a':1}"},
      {"{'a':{'x':1,'y':[1,2]},'b':null}", "{'b':null,'a':{'y':[1,2],'x':1}}"},
      {"{'\\u0061':1}", "{'a':1}"},
      {"{'a':1,'b':2,'c':3,'d':4,'e':5,'f':6,'g':7,'h':8,'i':9,'j':10,'k':11,'l':12,'m':13,'n':14,'o':15,'p':16,'q':17}",
       "{'q':17,'p':16,'o':15,'n':14,'m':13,'l':12,'k':11,'j':10,'i':9,'h':8,'g':7,'f':6,'e':5,'d':4,'c':3,'b':2,'\\u0061':1}"},
  };
  static const char *const differ[][2] = {
      {"1", "2"}, {"1", "-1"}, {"1", "10"}, {"0.1", "0.10000000000000001"},
      {"9007199254740993", "9007199254740992"}, {"1e1234567890123456789", "1e1234567890123456788"},
      {"1e1234567890123456789", "-1e1234567890123456789"}, {"1e1234567890123456789", "1e-1234567890123456789"},
      {"true", "1"}, {"false", "0"}, {"null", "0"}, {"null", "false"}, {"true", "false"}, {"'1'", "1"},
      {"''", "null"}, {"[]", "{}"}, {"[]", "[null]"}, {"[1,2]", "[2,1]"}, {"[1]", "[1,1]"}, {"[[]]", "[[[]]]"},
      {"{'a':1}", "{'a':1,'b':2}"}, {"{'a':1,'b':2}", "{'a':1}"}, {"{'a':1}", "{'b':1}"}, {"{'a':1}", "{'a':2}"},
      {"'a'", "'A'"}, {"'a'", "'a '"}, {"'\\u0000'", "''"},
      {"{'a':1,'b':2,'c':3,'d':4,'e':5,'f':6,'g':7,'h':8,'i':9,'j':10,'k':11,'l':12,'m':13,'n':14,'o':15,'p':16,'q':17}",
       "{'q':17,'p':16,'o':15,'n':14,'m':13,'l':12,'k':11,'j':10,'i':9,'h':8,'g':7,'f':6,'e':5,'d':4,'c':3,'b':2,'z':1}"},
  };
  char doc[1024], patch[1024];
  for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
    for (int flip = 0; flip < 2; flip++) {
      snprintf(doc, sizeof doc, "{'v':%s}", same[i][flip]);
      snprintf(patch, sizeof patch, "[{'op':'test','path':'/v','value':%s}]", same[i][!flip]);
      PATCH_SAME(doc, patch);
    }
  }
  for (size_t i = 0; i < sizeof differ / sizeof differ[0]; i++) {
    for (int flip = 0; flip < 2; flip++) {
      snprintf(doc, sizeof doc, "{'v':%s}", differ[i][flip]);
      snprintf(patch, sizeof patch, "[{'op':'test','path':'/v','value':%s}]", differ[i][!flip]);
      PATCH_ERR(doc, patch, TSJ_ERR_PATCH, 1, "op 0 ('test' at '/v'): the value differs");
    }
  }
}

/* Large containers: hashed objects through the index, long arrays; every
 * way must give the same text as the others (patch_ok_at runs all three). */
void test_patch__largeContainersGiveTheSameTextEveryWay(void) {
  size_t cap = 64 * 1024;
  char *doc = (char *)malloc(cap), *want = (char *)malloc(cap);
  size_t n = 0;
  n += (size_t)snprintf(doc + n, cap - n, "{");
  for (int i = 0; i < 200; i++) n += (size_t)snprintf(doc + n, cap - n, "%s'k%d':[%d,{'v':%d}]", i ? "," : "", i, i, i);
  snprintf(doc + n, cap - n, "}");
  char *pdoc = doc; /* the big object's members are hashed in the index */
  /* replace in the middle */
  char *w = want;
  size_t wn = 0;
  wn += (size_t)snprintf(w + wn, cap - wn, "{");
  for (int i = 0; i < 200; i++) {
    if (i == 117) wn += (size_t)snprintf(w + wn, cap - wn, ",'k117':[117,{'v':'x'}]");
    else wn += (size_t)snprintf(w + wn, cap - wn, "%s'k%d':[%d,{'v':%d}]", i ? "," : "", i, i, i);
  }
  snprintf(w + wn, cap - wn, "}");
  PATCH_OK(pdoc, op1("replace", "/k117/1/v", "'x'"), want, "/k117/1/v;");
  /* remove the last member, then the first; add a new one at the end */
  wn = 0;
  wn += (size_t)snprintf(w + wn, cap - wn, "{");
  for (int i = 1; i < 199; i++) wn += (size_t)snprintf(w + wn, cap - wn, "%s'k%d':[%d,{'v':%d}]", i > 1 ? "," : "", i, i, i);
  snprintf(w + wn, cap - wn, ",'new':true}");
  PATCH_OK(pdoc, "[{'op':'remove','path':'/k199'},{'op':'remove','path':'/k0'},{'op':'add','path':'/new','value':true}]",
           want, "/k199;/k0;/new;");
  PATCH_SAME(pdoc, "[{'op':'test','path':'/k150/1','value':{'v':150}},{'op':'test','path':'/k3/0','value':3.0}]");
  PATCH_ERR(pdoc, op1("test", "/k200", "1"), TSJ_ERR_PATCH, 1, "no member 'k200' in the object at ''");
  /* a long array: insert before element 500, remove element 999 */
  n = 0;
  n += (size_t)snprintf(doc + n, cap - n, "[");
  for (int i = 0; i < 1000; i++) n += (size_t)snprintf(doc + n, cap - n, "%s%d", i ? "," : "", i);
  snprintf(doc + n, cap - n, "]");
  wn = 0;
  wn += (size_t)snprintf(w + wn, cap - wn, "[");
  for (int i = 0; i < 999; i++) {
    if (i == 500) wn += (size_t)snprintf(w + wn, cap - wn, ",'x'");
    wn += (size_t)snprintf(w + wn, cap - wn, "%s%d", i ? "," : "", i);
  }
  snprintf(w + wn, cap - wn, "]");
  PATCH_OK(doc, "[{'op':'remove','path':'/999'},{'op':'add','path':'/500','value':'x'}]", want, NULL);
  PATCH_ERR(doc, op1("add", "/1001", "1"), TSJ_ERR_PATCH, 1, "index '1001' is out of range for the array of 1000 elements at ''");
  free(doc), free(want);
}

/* ------------------------------------------------------------------------ */
/* Getters (tsj_find, tsj_span_*) */

/* Two ways: without and with an index over the text. */
static int find_way(int way, const char *text, const char *ptr, tsj_span *out, tsj_error *err) {
  tsj_doc *index = way ? tsj_doc_index(text, strlen(text), (size_t)-1, err) : NULL;
  if (way && !index) return -1;
  int rc = tsj_find(text, strlen(text), index, ptr, strlen(ptr), out, err);
  tsj_doc_free(index);
  return rc;
}

static void find_ok_at(const char *file, int line, const char *text, const char *ptr, int kind, const char *want) {
  for (int way = 0; way < 2; way++) {
    tsj_span v;
    tsj_error err;
    int rc = find_way(way, text, ptr, &v, &err);
    check_at(rc == TSJ_OK && v.kind == kind && v.length == strlen(want) && memcmp(text + v.offset, want, v.length) == 0 &&
                 err.code == TSJ_OK,
             file, line, "find(%s) way %d: rc=%s kind=%d (want %d) value=%.*s want=%s msg=%s", ptr, way,
             tsj_code_name(rc), v.kind, kind, (int)v.length, text + v.offset, want, err.message);
  }
}
#define FIND_OK(text, ptr, kind, want) find_ok_at(__FILE__, __LINE__, text, ptr, kind, want)

/* The span at ptr (which must exist), for the getter checks below. */
static tsj_span at(const char *text, const char *ptr) {
  tsj_span v = {0, 0, -1};
  tsj_error err;
  int rc = tsj_find(text, strlen(text), NULL, ptr, strlen(ptr), &v, &err);
  if (rc != TSJ_OK) {
    fprintf(stderr, "at(%s): %s\n", ptr, err.message);
    v.kind = -1;
  }
  return v;
}

static void int_at(const char *file, int line, const char *text, const char *ptr, int code, long long want,
                   const char *part) {
  int64_t got = 77;
  tsj_error err;
  int rc = tsj_span_int64(text, at(text, ptr), &got, &err);
  check_at(rc == code && err.code == code && (code ? got == 0 : got == want) && (!part || contains(err.message, part)),
           file, line, "int64 %s: rc=%s (want %s) got=%lld want=%lld msg=%s", ptr, tsj_code_name(rc),
           tsj_code_name(code), (long long)got, want, err.message);
}
#define INT_OK(text, ptr, want) int_at(__FILE__, __LINE__, text, ptr, TSJ_OK, want, NULL)
#define INT_ERR(text, ptr, code, part) int_at(__FILE__, __LINE__, text, ptr, code, 0, part)

static void uint_at(const char *file, int line, const char *text, const char *ptr, int code, unsigned long long want,
                    const char *part) {
  uint64_t got = 77;
  tsj_error err;
  int rc = tsj_span_uint64(text, at(text, ptr), &got, &err);
  check_at(rc == code && err.code == code && (code ? got == 0 : got == want) && (!part || contains(err.message, part)),
           file, line, "uint64 %s: rc=%s (want %s) got=%llu want=%llu msg=%s", ptr, tsj_code_name(rc),
           tsj_code_name(code), (unsigned long long)got, want, err.message);
}

static void dbl_at(const char *file, int line, const char *text, const char *ptr, int code, double want,
                   const char *part) {
  double got = 77;
  tsj_error err;
  int rc = tsj_span_double(text, at(text, ptr), &got, &err);
  check_at(rc == code && err.code == code && (code ? got == 0 : memcmp(&got, &want, sizeof got) == 0) &&
               (!part || contains(err.message, part)),
           file, line, "double %s: rc=%s (want %s) got=%.17g want=%.17g msg=%s", ptr, tsj_code_name(rc),
           tsj_code_name(code), got, want, err.message);
}

void test_getters__scalarsAndContainersReadAsTheirKinds(void) {
  const char *text =
      "{\"n\":null,\"f\":false,\"t\":true,\"i\":-42,\"s\":\"plain\",\"e\":\"a\\u0041\\n\\ud83d\\ude00\\/\","
      "\"z\":\"x\\u0000y\",\"a\":[1,[2,3],{}],\"o\":{\"k\":\"v\",\"\":[]},\"ea\":[],\"eo\":{},"
      "\"items\":[{\"id\":1,\"done\":false},{\"id\":2,\"done\":true}],\"\\u0071\":7}";
  FIND_OK(text, "", TSJ_OBJECT, text);
  FIND_OK(text, "/n", TSJ_NULL, "null");
  FIND_OK(text, "/f", TSJ_FALSE, "false");
  FIND_OK(text, "/t", TSJ_TRUE, "true");
  FIND_OK(text, "/i", TSJ_NUMBER, "-42");
  FIND_OK(text, "/s", TSJ_STRING, "\"plain\"");
  FIND_OK(text, "/a", TSJ_ARRAY, "[1,[2,3],{}]");
  FIND_OK(text, "/a/1/1", TSJ_NUMBER, "3");
  FIND_OK(text, "/a/2", TSJ_OBJECT, "{}");
  FIND_OK(text, "/o/", TSJ_ARRAY, "[]");
  FIND_OK(text, "/q", TSJ_NUMBER, "7");
  FIND_OK(text, "/items/1/done", TSJ_TRUE, "true");
  /* errors: the codes and messages of tsj_doc_at_pointer, both ways */
  for (int way = 0; way < 2; way++) {
    tsj_span v = {1, 1, 1};
    tsj_error err;
    int rc = find_way(way, text, "/a/3", &v, &err);
    CHECK_MSG(rc == TSJ_ERR_NOT_FOUND && err.offset == 2 && v.length == 0 &&
              strcmp(err.message, "index \"3\" is out of range for the array of 3 elements at \"/a\"") == 0,
          "find /a/3 way %d: %s", way, err.message);
    rc = find_way(way, text, "/i/x", &v, &err);
    CHECK_MSG(rc == TSJ_ERR_NOT_FOUND && contains(err.message, "cannot look up \"x\" in the number at \"/i\""),
          "find /i/x way %d: %s", way, err.message);
    rc = find_way(way, text, "x", &v, &err);
    CHECK_MSG(rc == TSJ_ERR_POINTER && err.offset == 0, "find x way %d: %s", way, err.message);
    rc = find_way(way, text, "/nope", &v, &err);
    CHECK_MSG(rc == TSJ_ERR_NOT_FOUND && contains(err.message, "no member \"nope\" in the object at \"\""),
          "find /nope way %d: %s", way, err.message);
  }
  {
    tsj_span v;
    tsj_error err;
    CHECK_MSG(tsj_find(NULL, 0, NULL, "", 0, &v, &err) == TSJ_ERR_INVALID_ARG, "find NULL text");
    CHECK_MSG(tsj_find(text, strlen(text), NULL, "", 0, NULL, &err) == TSJ_ERR_INVALID_ARG, "find NULL out");
    CHECK_MSG(tsj_find(text, strlen(text), NULL, NULL, 3, &v, &err) == TSJ_ERR_INVALID_ARG, "find NULL pointer");
    tsj_doc *other = tsj_doc_parse(text, strlen(text), &err);
    CHECK_MSG(tsj_find(text, strlen(text), other, "", 0, &v, &err) == TSJ_ERR_INVALID_ARG &&
              contains(err.message, "the index is not over this text"),
          "find with another text's index: %s", err.message);
    tsj_doc_free(other);
  }

  /* tsj_find_in: pointers relative to an element, as a reducer iterating a list uses them */
  for (int way = 0; way < 2; way++) {
    tsj_error err;
    tsj_doc *index = way ? tsj_doc_index(text, strlen(text), (size_t)-1, &err) : NULL;
    tsj_span items, el, key, v, last = {0, 0, -1};
    CHECK_MSG(tsj_find(text, strlen(text), index, "/items", 6, &items, &err) == TSJ_OK, "items");
    size_t cursor = 0;
    int seen = 0;
    long long ids = 0;
    while (tsj_span_next(text, items, &cursor, &key, &el, &err) == TSJ_OK) {
      int64_t id = 0;
      int done = -1;
      CHECK_MSG(key.length == 0 && el.kind == TSJ_OBJECT, "element kind");
      CHECK_MSG(tsj_find_in(text, strlen(text), index, el, "/id", 3, &v, &err) == TSJ_OK &&
                tsj_span_int64(text, v, &id, &err) == TSJ_OK,
            "find_in /id: %s", err.message);
      CHECK_MSG(tsj_find_in(text, strlen(text), index, el, "/done", 5, &v, &err) == TSJ_OK &&
                tsj_span_bool(text, v, &done, &err) == TSJ_OK && done == (id == 2),
            "find_in /done: %s", err.message);
      CHECK_MSG(tsj_find_in(text, strlen(text), index, el, "", 0, &v, &err) == TSJ_OK && v.offset == el.offset &&
                v.length == el.length,
            "find_in \"\"");
      ids += id;
      seen++;
      last = el;
    }
    CHECK_MSG(seen == 2 && ids == 3 && err.code == TSJ_ERR_NOT_FOUND && strcmp(err.message, "no more elements") == 0,
          "iterated %d items (ids %lld): %s", seen, ids, err.message);
    CHECK_MSG(el.length == 0 && el.offset == 0, "the end clears *value");
    el = last;
    CHECK_MSG(tsj_find_in(text, strlen(text), index, el, "/nope", 5, &v, &err) == TSJ_ERR_NOT_FOUND &&
              strcmp(err.message, "no member \"nope\" in the object at \"\"") == 0,
          "find_in messages are relative: %s", err.message);
    tsj_span bad = el;
    bad.kind = TSJ_ARRAY;
    CHECK_MSG(tsj_find_in(text, strlen(text), index, bad, "", 0, &v, &err) == TSJ_ERR_INVALID_ARG, "find_in bad kind");
    bad = el;
    bad.offset = strlen(text);
    CHECK_MSG(tsj_find_in(text, strlen(text), index, bad, "", 0, &v, &err) == TSJ_ERR_INVALID_ARG, "find_in bad offset");
    bad = el;
    bad.length = strlen(text);
    CHECK_MSG(tsj_find_in(text, strlen(text), index, bad, "", 0, &v, &err) == TSJ_ERR_INVALID_ARG, "find_in bad length");
    tsj_doc_free(index);
  }

  /* integers */
  const char *nums =
      "{\"zero\":0,\"mzero\":-0,\"i\":42,\"m\":-42,\"f1\":1.0,\"e2\":1e2,\"e25\":2.50E1,\"p\":100e-2,"
      "\"max\":9223372036854775807,\"min\":-9223372036854775808,\"over\":9223372036854775808,"
      "\"under\":-9223372036854775809,\"frac\":1.5,\"small\":1e-1,\"big\":1e30,\"huge\":1e1234567890123456789,"
      "\"tiny\":1e-1234567890123456789,\"z\":0e999999999999999999999,\"u\":18446744073709551615,"
      "\"u1\":18446744073709551616,\"ue\":1.8446744073709551615e19,\"m1\":-1,\"long\":"
      "100000000000000000000000000000000000000000000000000000000000000000000000000e-70,"
      "\"d\":0.1,\"dmax\":1.7976931348623157e308,\"dover\":1e309,\"dneg\":-1e309,\"dsub\":4.9e-324,\"dunder\":1e-400,"
      "\"dmz\":-0.0,\"dlong\":123456789012345678901234567890,\"s\":\"1\",\"b\":true,\"a\":[]}";
  INT_OK(nums, "/zero", 0);
  INT_OK(nums, "/mzero", 0);
  INT_OK(nums, "/i", 42);
  INT_OK(nums, "/m", -42);
  INT_OK(nums, "/f1", 1);
  INT_OK(nums, "/e2", 100);
  INT_OK(nums, "/e25", 25);
  INT_OK(nums, "/p", 1);
  INT_OK(nums, "/max", INT64_MAX);
  INT_OK(nums, "/min", INT64_MIN);
  INT_OK(nums, "/z", 0);
  INT_OK(nums, "/long", 10000);
  INT_ERR(nums, "/over", TSJ_ERR_RANGE, "the number 9223372036854775808 is out of range for int64");
  INT_ERR(nums, "/under", TSJ_ERR_RANGE, "out of range for int64");
  INT_ERR(nums, "/u", TSJ_ERR_RANGE, "out of range for int64");
  INT_ERR(nums, "/frac", TSJ_ERR_TYPE, "expected an integer, found the number 1.5");
  INT_ERR(nums, "/small", TSJ_ERR_TYPE, "expected an integer, found the number 1e-1");
  INT_ERR(nums, "/big", TSJ_ERR_RANGE, "the number 1e30 is out of range for int64");
  INT_ERR(nums, "/huge", TSJ_ERR_RANGE, "out of range");
  INT_ERR(nums, "/tiny", TSJ_ERR_TYPE, "expected an integer");
  INT_ERR(nums, "/s", TSJ_ERR_TYPE, "expected an integer, found string");
  INT_ERR(nums, "/b", TSJ_ERR_TYPE, "expected an integer, found boolean");
  INT_ERR(nums, "/a", TSJ_ERR_TYPE, "expected an integer, found array");
  uint_at(__FILE__, __LINE__, nums, "/u", TSJ_OK, 18446744073709551615ull, NULL);
  uint_at(__FILE__, __LINE__, nums, "/ue", TSJ_OK, 18446744073709551615ull, NULL);
  uint_at(__FILE__, __LINE__, nums, "/max", TSJ_OK, 9223372036854775807ull, NULL);
  uint_at(__FILE__, __LINE__, nums, "/over", TSJ_OK, 9223372036854775808ull, NULL);
  uint_at(__FILE__, __LINE__, nums, "/mzero", TSJ_OK, 0, NULL);
  uint_at(__FILE__, __LINE__, nums, "/u1", TSJ_ERR_RANGE, 0,
          "the number 18446744073709551616 is out of range for uint64");
  uint_at(__FILE__, __LINE__, nums, "/m1", TSJ_ERR_RANGE, 0, "the number -1 is out of range for uint64");
  uint_at(__FILE__, __LINE__, nums, "/frac", TSJ_ERR_TYPE, 0, "expected an integer, found the number 1.5");
  uint_at(__FILE__, __LINE__, nums, "/s", TSJ_ERR_TYPE, 0, "expected an integer, found string");
  /* doubles: correctly rounded; too large is an error, too small rounds */
  dbl_at(__FILE__, __LINE__, nums, "/d", TSJ_OK, 0.1, NULL);
  dbl_at(__FILE__, __LINE__, nums, "/i", TSJ_OK, 42.0, NULL);
  dbl_at(__FILE__, __LINE__, nums, "/dmax", TSJ_OK, 1.7976931348623157e308, NULL);
  dbl_at(__FILE__, __LINE__, nums, "/dsub", TSJ_OK, 4.9e-324, NULL);
  dbl_at(__FILE__, __LINE__, nums, "/dunder", TSJ_OK, 0.0, NULL);
  dbl_at(__FILE__, __LINE__, nums, "/dmz", TSJ_OK, -0.0, NULL);
  dbl_at(__FILE__, __LINE__, nums, "/dlong", TSJ_OK, 123456789012345678901234567890.0, NULL);
  dbl_at(__FILE__, __LINE__, nums, "/u1", TSJ_OK, 18446744073709551616.0, NULL);
  dbl_at(__FILE__, __LINE__, nums, "/dover", TSJ_ERR_RANGE, 0, "the number 1e309 is out of range for a double");
  dbl_at(__FILE__, __LINE__, nums, "/dneg", TSJ_ERR_RANGE, 0, "out of range for a double");
  dbl_at(__FILE__, __LINE__, nums, "/huge", TSJ_ERR_RANGE, 0, "out of range for a double");
  dbl_at(__FILE__, __LINE__, nums, "/s", TSJ_ERR_TYPE, 0, "expected a number, found string");
  {
    tsj_error err;
    int b = 5;
    CHECK_MSG(tsj_span_bool(text, at(text, "/t"), &b, &err) == TSJ_OK && b == 1, "bool true");
    CHECK_MSG(tsj_span_bool(text, at(text, "/f"), &b, &err) == TSJ_OK && b == 0, "bool false");
    CHECK_MSG(tsj_span_bool(text, at(text, "/n"), &b, &err) == TSJ_ERR_TYPE && b == 0 &&
              strcmp(err.message, "expected a boolean, found null") == 0,
          "bool null: %s", err.message);
    CHECK_MSG(tsj_span_bool(text, at(text, "/s"), &b, &err) == TSJ_ERR_TYPE, "bool string");
  }

  /* strings: borrowed without escapes, unescaped copy with them */
  {
    tsj_error err;
    const char *s = NULL;
    size_t n = 0;
    char *owned = (char *)1;
    tsj_span v = at(text, "/s");
    CHECK_MSG(tsj_span_string(text, v, &s, &n, &owned, &err) == TSJ_OK && owned == NULL && s == text + v.offset + 1 &&
              n == 5 && memcmp(s, "plain", 5) == 0,
          "string borrowed");
    v = at(text, "/e");
    CHECK_MSG(tsj_span_string(text, v, &s, &n, &owned, &err) == TSJ_OK && owned && s == owned && n == 8 &&
              memcmp(s, "aA\n\xf0\x9f\x98\x80/", 8) == 0 && s[n] == '\0',
          "string unescaped: %zu", n);
    free(owned);
    v = at(text, "/z");
    CHECK_MSG(tsj_span_string(text, v, &s, &n, &owned, &err) == TSJ_OK && owned && n == 3 && memcmp(s, "x\0y", 3) == 0,
          "string with NUL");
    free(owned);
    v = at(text, "/o/k");
    CHECK_MSG(tsj_span_string(text, v, &s, &n, &owned, &err) == TSJ_OK && !owned && n == 1 && s[0] == 'v', "string v");
    CHECK_MSG(tsj_span_string(text, at(text, "/i"), &s, &n, &owned, &err) == TSJ_ERR_TYPE && s == NULL && owned == NULL &&
              n == 0 && strcmp(err.message, "expected a string, found number") == 0,
          "string of a number: %s", err.message);
    CHECK_MSG(tsj_span_string(text, at(text, "/s"), &s, &n, NULL, &err) == TSJ_ERR_INVALID_ARG, "string owned NULL");
  }

  /* counts, with and without the index */
  for (int way = 0; way < 2; way++) {
    tsj_error err;
    tsj_doc *index = way ? tsj_doc_index(text, strlen(text), (size_t)-1, &err) : NULL;
    size_t c = 99;
    CHECK_MSG(tsj_span_count(text, index, at(text, "/a"), &c, &err) == TSJ_OK && c == 3, "count /a way %d: %zu", way, c);
    CHECK_MSG(tsj_span_count(text, index, at(text, "/o"), &c, &err) == TSJ_OK && c == 2, "count /o way %d", way);
    CHECK_MSG(tsj_span_count(text, index, at(text, "/ea"), &c, &err) == TSJ_OK && c == 0, "count /ea way %d", way);
    CHECK_MSG(tsj_span_count(text, index, at(text, "/eo"), &c, &err) == TSJ_OK && c == 0, "count /eo way %d", way);
    CHECK_MSG(tsj_span_count(text, index, at(text, ""), &c, &err) == TSJ_OK && c == 13, "count root way %d", way);
    CHECK_MSG(tsj_span_count(text, index, at(text, "/a/1"), &c, &err) == TSJ_OK && c == 2, "count /a/1 way %d", way);
    CHECK_MSG(tsj_span_count(text, index, at(text, "/s"), &c, &err) == TSJ_ERR_TYPE && c == 0 &&
              strcmp(err.message, "expected an array or an object, found string") == 0,
          "count string: %s", err.message);
    tsj_doc_free(index);
  }
  {
    tsj_error err;
    size_t c;
    tsj_doc *other = tsj_doc_parse(text, strlen(text), &err);
    CHECK_MSG(tsj_span_count(text, other, at(text, "/a"), &c, &err) == TSJ_ERR_INVALID_ARG, "count: index of other text");
    tsj_doc_free(other);
    tsj_span wrong = at(text, "/a");
    wrong.kind = TSJ_OBJECT;
    CHECK_MSG(tsj_span_count(text, NULL, wrong, &c, &err) == TSJ_ERR_INVALID_ARG &&
              strcmp(err.message, "the span does not match the text") == 0,
          "count: span kind differs from the text");
    wrong.kind = 99;
    CHECK_MSG(tsj_span_count(text, NULL, wrong, &c, &err) == TSJ_ERR_INVALID_ARG, "count: kind out of range");
    CHECK_MSG(tsj_span_count(NULL, NULL, at(text, "/a"), &c, &err) == TSJ_ERR_INVALID_ARG, "count: text NULL");
    CHECK_MSG(tsj_span_count(text, NULL, at(text, "/a"), NULL, &err) == TSJ_ERR_INVALID_ARG, "count: out NULL");
  }

  /* iteration: keys and values in order; the end; bad cursors */
  {
    tsj_error err;
    tsj_span key, v, o = at(text, "/o");
    size_t cursor = 0;
    CHECK_MSG(tsj_span_next(text, o, &cursor, &key, &v, &err) == TSJ_OK && key.kind == TSJ_STRING && key.length == 3 &&
              memcmp(text + key.offset, "\"k\"", 3) == 0 && v.kind == TSJ_STRING && v.length == 3,
          "next o #1");
    CHECK_MSG(tsj_span_next(text, o, &cursor, NULL, &v, &err) == TSJ_OK && v.kind == TSJ_ARRAY && v.length == 2,
          "next o #2 (key NULL)");
    CHECK_MSG(tsj_span_next(text, o, &cursor, &key, &v, &err) == TSJ_ERR_NOT_FOUND &&
              strcmp(err.message, "no more members") == 0 && v.length == 0,
          "next o end: %s", err.message);
    CHECK_MSG(tsj_span_next(text, o, &cursor, &key, &v, &err) == TSJ_ERR_NOT_FOUND, "next o end again");
    tsj_span a = at(text, "/a");
    const char *want[] = {"1", "[2,3]", "{}"};
    cursor = 0;
    for (int k = 0; k < 3; k++)
      CHECK_MSG(tsj_span_next(text, a, &cursor, &key, &v, &err) == TSJ_OK && v.length == strlen(want[k]) &&
                memcmp(text + v.offset, want[k], v.length) == 0 && key.length == 0,
            "next a #%d", k);
    CHECK_MSG(tsj_span_next(text, a, &cursor, NULL, &v, &err) == TSJ_ERR_NOT_FOUND && strcmp(err.message, "no more elements") == 0,
          "next a end");
    cursor = 0;
    CHECK_MSG(tsj_span_next(text, at(text, "/ea"), &cursor, NULL, &v, &err) == TSJ_ERR_NOT_FOUND, "next empty array");
    cursor = 0;
    CHECK_MSG(tsj_span_next(text, at(text, "/eo"), &cursor, &key, &v, &err) == TSJ_ERR_NOT_FOUND, "next empty object");
    cursor = a.offset;
    CHECK_MSG(tsj_span_next(text, a, &cursor, NULL, &v, &err) == TSJ_ERR_INVALID_ARG, "next: cursor before");
    cursor = a.offset + a.length;
    CHECK_MSG(tsj_span_next(text, a, &cursor, NULL, &v, &err) == TSJ_ERR_INVALID_ARG, "next: cursor after");
    cursor = o.offset + 2;
    CHECK_MSG(tsj_span_next(text, o, &cursor, NULL, &v, &err) == TSJ_ERR_INVALID_ARG, "next: cursor inside a key");
    cursor = 0;
    CHECK_MSG(tsj_span_next(text, at(text, "/i"), &cursor, NULL, &v, &err) == TSJ_ERR_TYPE &&
              strcmp(err.message, "expected an array or an object, found number") == 0,
          "next of a number");
    CHECK_MSG(tsj_span_next(text, a, NULL, NULL, &v, &err) == TSJ_ERR_INVALID_ARG, "next: cursor NULL");
    CHECK_MSG(tsj_span_next(text, a, &cursor, NULL, NULL, &err) == TSJ_ERR_INVALID_ARG, "next: value NULL");
  }
  CHECK_MSG(strcmp(tsj_kind_name(TSJ_NULL), "null") == 0 && strcmp(tsj_kind_name(TSJ_OBJECT), "object") == 0 &&
            strcmp(tsj_kind_name(TSJ_TRUE), "true") == 0 && strcmp(tsj_kind_name(42), "unknown") == 0,
        "kind names");
}

/* Patches and comparisons at the depth limit, on a small stack: nothing recurses. */
static void *patch_depth_thread(void *arg) {
  depth_result *res = (depth_result *)arg;
  char *deep = repeat_wrap("[", "1", "]", TSJ_MAX_DEPTH);
  char *ptr = (char *)malloc(2 * TSJ_MAX_DEPTH + 1);
  ptr[0] = '\0';
  for (int i = 0; i < TSJ_MAX_DEPTH; i++) strcat(ptr, "/0");
  /* a patch holds values up to TSJ_MAX_DEPTH - 2 deep (its array and the op object) */
  char *inner = repeat_wrap("[", "1", "]", TSJ_MAX_DEPTH - 2);
  size_t plen = 2 * strlen(deep) + 256;
  char *patch = (char *)malloc(plen);
  snprintf(patch, plen, "[{'op':'test','path':'/0/0','value':%s},{'op':'replace','path':'%s','value':2}]", inner, ptr);
  char *want = repeat_wrap("[", "2", "]", TSJ_MAX_DEPTH);
  PATCH_OK(deep, patch, want, NULL);
  ptr[2 * (TSJ_MAX_DEPTH - 1)] = '\0';
  snprintf(patch, plen, "[{'op':'add','path':'%s/0','value':[]}]", ptr);
  PATCH_ERR_DEPTH(deep, patch, TSJ_MAX_DEPTH, 1, "nested 257 deep");
  free(deep), free(ptr), free(patch), free(want), free(inner);
  res->done = 1;
  return NULL;
}

void test_patch__deepPatchesFailCleanlyOnASmallStack(void) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 128 * 1024);
  pthread_t th;
  depth_result res = {0};
  int rc = pthread_create(&th, &attr, patch_depth_thread, &res);
  CHECK_MSG(rc == 0, "pthread_create: %d", rc);
  if (rc == 0) pthread_join(th, NULL);
  pthread_attr_destroy(&attr);
  CHECK_MSG(res.done, "patch depth thread finished");
}

/* A patch on a big document: the result is the document with the one
 * change, with and without the index; a failing first "test" leaves it. */
void test_patch__bigDocumentGetsOnlyTheOneChange(void) {
  const int items = 100000;
  size_t cap = (size_t)items * 64 + 64;
  char *doc = (char *)malloc(cap), *want = (char *)malloc(cap);
  size_t n = 0, wn = 0;
  n += (size_t)snprintf(doc + n, cap - n, "{\"todos\":[");
  wn += (size_t)snprintf(want + wn, cap - wn, "{\"todos\":[");
  for (int i = 0; i < items; i++) {
    n += (size_t)snprintf(doc + n, cap - n, "%s{\"id\":%d,\"text\":\"item %d\",\"done\":false}", i ? "," : "", i, i);
    wn += (size_t)snprintf(want + wn, cap - wn, "%s{\"id\":%d,\"text\":\"item %d\",\"done\":%s}", i ? "," : "", i, i,
                           i == 54321 ? "true" : "false");
  }
  n += (size_t)snprintf(doc + n, cap - n, "]}");
  wn += (size_t)snprintf(want + wn, cap - wn, ",{\"id\":-1}]}");
  const char *patch =
      "[{\"op\":\"test\",\"path\":\"/todos/54321/id\",\"value\":54321},"
      "{\"op\":\"replace\",\"path\":\"/todos/54321/done\",\"value\":true},"
      "{\"op\":\"add\",\"path\":\"/todos/-\",\"value\":{\"id\":-1}}]";
  tsj_error err;
  tsj_doc *index = tsj_doc_index(doc, n, (size_t)-1, &err);
  for (int way = 0; way < 2; way++) {
    char *out = NULL;
    size_t out_len = 0;
    int rc = tsj_patch_apply(doc, n, way ? index : NULL, patch, strlen(patch), TSJ_MAX_DEPTH, &out, &out_len, NULL,
                             NULL, &err);
    CHECK_MSG(rc == TSJ_OK && out && out_len == wn && memcmp(out, want, wn) == 0, "big patch way %d: %s", way,
          err.message);
    free(out);
    const char *fail = "[{\"op\":\"test\",\"path\":\"/todos/99999/done\",\"value\":true}]";
    out = (char *)1;
    rc = tsj_patch_apply(doc, n, way ? index : NULL, fail, strlen(fail), TSJ_MAX_DEPTH, &out, &out_len, NULL, NULL,
                         &err);
    CHECK_MSG(rc == TSJ_ERR_PATCH && out == NULL &&
              strcmp(err.message, "op 0 (\"test\" at \"/todos/99999/done\"): the value differs (found false)") == 0,
          "big failing test way %d: %s", way, err.message);
  }
  tsj_doc_free(index);
  free(doc), free(want);
}


/* ---- Trees (tsj_tree) against the flat text --------------------------- */

/* A small deterministic generator (xorshift), so failures replay. */
static unsigned long long g_tree_rng = 88172645463325252ULL;
static unsigned tree_rand(unsigned n) {
  g_tree_rng ^= g_tree_rng << 13;
  g_tree_rng ^= g_tree_rng >> 7;
  g_tree_rng ^= g_tree_rng << 17;
  return (unsigned)(g_tree_rng % n);
}

typedef struct tbuf {
  char *p;
  size_t n, cap;
} tbuf;

static void tb_put(tbuf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->p = realloc(b->p, b->cap);
    if (!b->p) abort();
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}
static void tb_str(tbuf *b, const char *s) { tb_put(b, s, strlen(s)); }

/* Keys as written in JSON (raw, escapes included): "\u0061" is the key "a". */
static const char *const g_tree_keys[] = {"\"a\"", "\"b\"", "\"c d\"", "\"~x\"", "\"a/b\"", "\"\\u0061b\"",
                                          "\"items\"", "\"\xc3\xa9\"", "\"done\"", "\"0\""};
enum { TREE_KEYS = sizeof g_tree_keys / sizeof g_tree_keys[0] };
static const char *const g_tree_scalars[] = {"0", "1", "-0", "1.0", "1e2", "12345", "true", "false", "null",
                                             "\"x\"", "\"line\\nbreak\"", "\"\\u0041\"", "\"some longer text here\""};
enum { TREE_SCALARS = sizeof g_tree_scalars / sizeof g_tree_scalars[0] };

static void tree_gen(tbuf *b, int depth) {
  unsigned r = tree_rand(10);
  if (depth >= 4 || r < 4) {
    tb_str(b, g_tree_scalars[tree_rand(TREE_SCALARS)]);
    return;
  }
  if (r < 7) {
    unsigned n = tree_rand(8) == 0 ? 20 + tree_rand(30) : tree_rand(6);
    tb_str(b, "[");
    for (unsigned i = 0; i < n; i++) {
      if (i) tb_str(b, ",");
      tree_gen(b, depth + 1);
    }
    tb_str(b, "]");
    return;
  }
  /* Distinct keys: a random subset in random order ("a" and "\u0061b" differ). */
  unsigned used = 0, n = tree_rand(6);
  tb_str(b, "{");
  for (unsigned i = 0; i < n; i++) {
    unsigned k = tree_rand(TREE_KEYS);
    if (used & (1u << k)) continue;
    if (used) tb_str(b, ",");
    used |= 1u << k;
    tb_str(b, g_tree_keys[k]);
    tb_str(b, ":");
    tree_gen(b, depth + 1);
  }
  tb_str(b, "}");
}

/* Every pointer of a value (its own first), escaped as RFC 6901 wants. */
static void tree_paths(const char *text, size_t len, tsj_span v, tbuf *prefix, char ***paths, size_t *count) {
  *paths = realloc(*paths, (*count + 1) * sizeof **paths);
  (*paths)[(*count)++] = strdup(prefix->p ? prefix->p : "");
  if (v.kind != TSJ_ARRAY && v.kind != TSJ_OBJECT) return;
  size_t cursor = 0, index = 0, mark = prefix->n;
  tsj_span key, child;
  while (tsj_span_next(text, v, &cursor, &key, &child, NULL) == TSJ_OK) {
    tb_str(prefix, "/");
    if (v.kind == TSJ_ARRAY) {
      char num[32];
      snprintf(num, sizeof num, "%zu", index);
      tb_str(prefix, num);
    } else {
      const char *k;
      size_t kl;
      char *owned = NULL;
      tsj_span_string(text, key, &k, &kl, &owned, NULL);
      for (size_t i = 0; i < kl; i++) {
        if (k[i] == '~') tb_str(prefix, "~0");
        else if (k[i] == '/') tb_str(prefix, "~1");
        else tb_put(prefix, k + i, 1);
      }
      free(owned);
    }
    tree_paths(text, len, child, prefix, paths, count);
    prefix->n = mark;
    if (prefix->p) prefix->p[mark] = '\0';
    index++;
  }
}

/* A pointer to use in a patch: mostly one that exists, else a variation
 * (a child that may not exist, "-", a leading zero, an index past the end). */
static void tree_pick(char **paths, size_t count, tbuf *out) {
  out->n = 0;
  tb_str(out, "");
  tb_str(out, paths[tree_rand((unsigned)count)]);
  static const char *const tails[] = {"/-", "/0", "/01", "/99", "/zz", "/a", "/~1x", "/done", "/3"};
  if (tree_rand(3) == 0) tb_str(out, tails[tree_rand(sizeof tails / sizeof tails[0])]);
}

static void json_string_of(tbuf *b, const char *s) {
  tb_str(b, "\"");
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') tb_put(b, "\\", 1);
    tb_put(b, s, 1);
  }
  tb_str(b, "\"");
}

static void tree_patch_gen(const char *doc, size_t len, tbuf *patch) {
  char **paths = NULL;
  size_t count = 0;
  tbuf prefix = {0};
  tb_str(&prefix, "");
  tree_paths(doc, len, (tsj_span){0, len, doc[0] == '{' ? TSJ_OBJECT : doc[0] == '[' ? TSJ_ARRAY : TSJ_NULL},
             &prefix, &paths, &count);
  static const char *const ops[] = {"add", "remove", "replace", "move", "copy", "test", "add", "replace"};
  unsigned n = 1 + tree_rand(3);
  tbuf p = {0}, from = {0}, value = {0};
  patch->n = 0;
  tb_str(patch, "[");
  for (unsigned i = 0; i < n; i++) {
    const char *op = ops[tree_rand(sizeof ops / sizeof ops[0])];
    tree_pick(paths, count, &p);
    if (i) tb_str(patch, ",");
    tb_str(patch, "{\"op\":\"");
    tb_str(patch, op);
    tb_str(patch, "\",\"path\":");
    json_string_of(patch, p.p);
    if (!strcmp(op, "move") || !strcmp(op, "copy")) {
      tree_pick(paths, count, &from);
      tb_str(patch, ",\"from\":");
      json_string_of(patch, from.p);
    }
    if (!strcmp(op, "add") || !strcmp(op, "replace") || !strcmp(op, "test")) {
      value.n = 0;
      tb_str(&value, "");
      char *found = NULL;
      if (!strcmp(op, "test") && tree_rand(2) == 0 &&
          tsj_text_at_pointer(doc, len, p.p, strlen(p.p), &found, NULL, NULL) == TSJ_OK) {
        tb_str(&value, found); /* a test that holds */
        free(found);
      } else {
        tree_gen(&value, 2);
      }
      tb_str(patch, ",\"value\":");
      tb_str(patch, value.p);
    }
    tb_str(patch, "}");
  }
  tb_str(patch, "]");
  for (size_t i = 0; i < count; i++) free(paths[i]);
  free(paths);
  free(prefix.p);
  free(p.p);
  free(from.p);
  free(value.p);
}

static void collect_path(const char *path, size_t path_len, void *ctx) {
  tb_put(ctx, path, path_len);
  tb_put(ctx, "\n", 1);
}

/* Whether ref names the value at span fs of flat: same kind and text. */
static int tree_ref_matches(const tsj_tree_ref *ref, const char *flat, tsj_span fs) {
  if (ref->span.kind != fs.kind || ref->span.length != fs.length) return 0;
  if (!ref->node) return ref->text && memcmp(ref->text + ref->span.offset, flat + fs.offset, fs.length) == 0;
  char *joined = NULL;
  size_t jl = 0;
  int ok = tsj_tree_at_pointer(ref->node, "", 0, &joined, &jl, NULL) == TSJ_OK && jl == fs.length &&
           memcmp(joined, flat + fs.offset, jl) == 0 && tsj_tree_kind(ref->node) == fs.kind;
  free(joined);
  return ok;
}

/* Whether the children of a node (tsj_tree_count, tsj_tree_child) are those of span fs (tsj_span_next). */
static int tree_children_match(const tsj_tree *node, const char *flat, tsj_span fs) {
  size_t cursor = 0, i = 0;
  tsj_span key, child;
  while (tsj_span_next(flat, fs, &cursor, &key, &child, NULL) == TSJ_OK) {
    tsj_tree_ref k, v;
    if (tsj_tree_child(node, i, &k, &v, NULL) != TSJ_OK || !tree_ref_matches(&v, flat, child)) return 0;
    if (fs.kind == TSJ_OBJECT && (!k.text || k.span.length != key.length ||
                                  memcmp(k.text, flat + key.offset, key.length) != 0))
      return 0;
    i++;
  }
  tsj_tree_ref k, v;
  tsj_error e;
  return tsj_tree_count(node) == i && tsj_tree_child(node, i, &k, &v, &e) == TSJ_ERR_NOT_FOUND && v.node == NULL &&
         v.text == NULL;
}

/* Random documents, each patched 12 times in a chain, through the flat
 * text (tsj_patch_apply) and through a tree (tsj_tree_patch) split at
 * several sizes: the same codes, messages, offsets, paths reported and
 * texts; look-ups (tsj_tree_at_pointer against tsj_text_at_pointer) the
 * same; and the tree a patch was applied to still reads as before. */
void test_tree__treePatchesAgreeWithTextPatches(void) {
  static const size_t splits[] = {0, 8, 40, 4096};
  size_t saved = tsj_tree_split_bytes;
  int cases = 0, mismatches = 0, changed = 0, refused = 0, split_trees = 0;
  int done_flat = 0; /* patches that applied, but through the whole text */
  for (size_t si = 0; si < sizeof splits / sizeof splits[0]; si++) {
    tsj_tree_split_bytes = splits[si];
    for (int d = 0; d < 150; d++) {
      tbuf b = {0};
      tree_gen(&b, tree_rand(2));
      char *doc = NULL;
      size_t len = 0;
      if (tsj_minify(b.p, b.n, &doc, &len, NULL) != TSJ_OK) {
        CHECK_MSG(0, "generated document is not JSON: %s", b.p);
        free(b.p);
        continue;
      }
      free(b.p);
      tsj_error err;
      tsj_tree *tree = tsj_tree_make(doc, len, &err);
      CHECK_MSG(tree != NULL && tsj_tree_length(tree) == len, "tsj_tree_make: %s", err.message);
      if (!tree) {
        free(doc);
        continue;
      }
      split_trees += tsj_tree_is_split(tree);
      for (int step = 0; step < 12; step++) {
        tbuf patch = {0}, flat_paths = {0}, tree_paths_seen = {0};
        tb_str(&flat_paths, "");
        tb_str(&tree_paths_seen, "");
        tree_patch_gen(doc, len, &patch);
        char *flat = NULL;
        size_t flat_len = 0;
        tsj_error ferr, terr;
        int frc = tsj_patch_apply(doc, len, NULL, patch.p, patch.n, TSJ_MAX_DEPTH - 1, &flat, &flat_len,
                                  collect_path, &flat_paths, &ferr);
        tsj_tree *next = NULL;
        const size_t before = tsj_tree_fallbacks;
        int trc = tsj_tree_patch(tree, patch.p, patch.n, TSJ_MAX_DEPTH - 1, &next, collect_path,
                                 &tree_paths_seen, &terr);
        cases++;
        int same = frc == trc && strcmp(ferr.message, terr.message) == 0 && ferr.offset == terr.offset &&
                   strcmp(flat_paths.p, tree_paths_seen.p) == 0 && (flat == NULL) == (next == NULL);
        size_t next_len = 0;
        const char *next_text = next ? tsj_tree_text(next, &next_len) : NULL;
        if (same && flat) same = next_text && next_len == flat_len && memcmp(next_text, flat, flat_len) == 0;
        /* The tree patched is unchanged: its parts still read as before. */
        char *old = NULL;
        size_t old_len = 0;
        if (same) same = tsj_tree_at_pointer(tree, "", 0, &old, &old_len, NULL) == TSJ_OK && old_len == len &&
                         memcmp(old, doc, len) == 0;
        free(old);
        if (!same && mismatches++ < 5)
          CHECK_MSG(0, "tree vs flat (split %zu): doc %.200s patch %.300s: flat %d \"%s\" %.200s / tree %d \"%s\" %.200s", splits[si],
                doc, patch.p, frc, ferr.message, flat ? flat : "(none)", trc, terr.message,
                next_text ? next_text : "(none)");
        if (frc) refused++;
        else if (tsj_tree_fallbacks != before) done_flat++;
        /* Look-ups: every path of the document and some that are not there. */
        if (same && next) {
          char **paths = NULL;
          size_t count = 0;
          tbuf prefix = {0};
          tb_str(&prefix, "");
          tree_paths(flat, flat_len,
                     (tsj_span){0, flat_len, flat[0] == '{' ? TSJ_OBJECT : flat[0] == '[' ? TSJ_ARRAY : TSJ_NULL},
                     &prefix, &paths, &count);
          for (size_t i = 0; i < count + 3; i++) {
            tbuf ptr = {0};
            tb_str(&ptr, "");
            if (i < count) tb_str(&ptr, paths[i]);
            else tree_pick(paths, count, &ptr);
            if (i == count + 2) tb_str(&ptr, "/~2");
            char *a = NULL, *t = NULL;
            size_t al = 0, tl = 0;
            tsj_error ae, te;
            int arc = tsj_text_at_pointer(flat, flat_len, ptr.p, ptr.n, &a, &al, &ae);
            int trc2 = tsj_tree_at_pointer(next, ptr.p, ptr.n, &t, &tl, &te);
            int ok = arc == trc2 && strcmp(ae.message, te.message) == 0 && ae.offset == te.offset &&
                     (a == NULL) == (t == NULL) && (!a || (al == tl && memcmp(a, t, al) == 0));
            /* tsj_tree_find: the same value (joined when it is a node), code and message as tsj_find. */
            tsj_span fs;
            tsj_tree_ref ref;
            tsj_error fe, re;
            int frc2 = tsj_find(flat, flat_len, NULL, ptr.p, ptr.n, &fs, &fe);
            int rrc = tsj_tree_find(next, ptr.p, ptr.n, &ref, &re);
            ok &= frc2 == rrc && strcmp(fe.message, re.message) == 0 && fe.offset == re.offset;
            if (ok && rrc == TSJ_OK) ok &= tree_ref_matches(&ref, flat, fs);
            if (ok && rrc == TSJ_OK && ref.node) ok &= tree_children_match(ref.node, flat, fs);
            if (!ok && mismatches++ < 5)
              CHECK_MSG(0, "tree look-up %s in %.200s: flat %d %.100s \"%s\" / tree %d %.100s \"%s\"", ptr.p, flat, arc,
                    a ? a : "-", ae.message, trc2, t ? t : "-", te.message);
            free(a);
            free(t);
            free(ptr.p);
          }
          for (size_t i = 0; i < count; i++) free(paths[i]);
          free(paths);
          free(prefix.p);
        }
        if (flat) {
          changed++;
          free(doc);
          doc = flat;
          len = flat_len;
          tsj_tree_free(tree);
          tree = next;
        } else {
          tsj_tree_free(next);
        }
        free(patch.p);
        free(flat_paths.p);
        free(tree_paths_seen.p);
      }
      tsj_tree_free(tree);
      free(doc);
    }
  }
  tsj_tree_split_bytes = saved;
  CHECK_MSG(mismatches == 0, "tree differential: %d of %d patches differ", mismatches, cases);
  /* Refusals are answered through the whole text; every patch that applies, in the tree. */
  CHECK_MSG(changed > cases / 5 && refused > cases / 10 && split_trees > 100 && done_flat == 0,
        "tree differential covers changes (%d), refusals (%d), split trees (%d); patches that applied through the "
        "whole text: %d (expected none) of %d", changed, refused, split_trees, done_flat, cases);
  printf("tree differential: %d patches (%d changed the document, %d refused), %d split trees\n", cases, changed,
         refused, split_trees);
}

/* Sharing: a big array patched many times; every version reads its own
 * values, and freeing them in any order is clean (valgrind run). */
void test_tree__everyVersionReadsItsOwnValuesAndFreesCleanly(void) {
  tbuf b = {0};
  tb_str(&b, "{\"items\":[");
  for (int i = 0; i < 3000; i++) {
    char item[96];
    snprintf(item, sizeof item, "%s{\"id\":%d,\"done\":false}", i ? "," : "", i);
    tb_str(&b, item);
  }
  tb_str(&b, "]}");
  tsj_error err;
  tsj_tree *versions[40];
  versions[0] = tsj_tree_make(b.p, b.n, &err);
  CHECK_MSG(versions[0] && tsj_tree_is_split(versions[0]), "a 3000-item list is split: %s", err.message);
  int ok = 1;
  for (int v = 1; v < 40; v++) {
    char patch[160];
    if (v % 3 == 0) snprintf(patch, sizeof patch, "[{\"op\":\"add\",\"path\":\"/items/-\",\"value\":{\"id\":%d}}]", -v);
    else if (v % 3 == 1) snprintf(patch, sizeof patch, "[{\"op\":\"replace\",\"path\":\"/items/%d/done\",\"value\":true}]", v * 70);
    else snprintf(patch, sizeof patch, "[{\"op\":\"remove\",\"path\":\"/items/%d\"}]", v);
    versions[v] = NULL;
    ok &= tsj_tree_patch(versions[v - 1], patch, strlen(patch), TSJ_MAX_DEPTH, &versions[v], NULL, NULL, &err) ==
              TSJ_OK && versions[v] != NULL;
  }
  CHECK_MSG(ok, "40 versions made");
  /* Version 1 toggled item 70; version 0 did not. */
  char *out = NULL;
  CHECK_MSG(tsj_tree_at_pointer(versions[1], "/items/70/done", 14, &out, NULL, NULL) == TSJ_OK && out &&
            strcmp(out, "true") == 0, "version 1 reads its change");
  free(out);
  out = NULL;
  CHECK_MSG(tsj_tree_at_pointer(versions[0], "/items/70/done", 14, &out, NULL, NULL) == TSJ_OK && out &&
            strcmp(out, "false") == 0, "version 0 does not see it");
  free(out);
  size_t n0 = 0;
  const char *t0 = tsj_tree_text(versions[0], &n0);
  CHECK_MSG(t0 && n0 == b.n && memcmp(t0, b.p, b.n) == 0, "version 0 joins to its text");
  CHECK_MSG(tsj_tree_text(versions[0], NULL) == t0, "the joined text is kept");
  for (int v = 0; v < 40; v += 2) tsj_tree_free(versions[v]);
  for (int v = 1; v < 40; v += 2) tsj_tree_free(versions[v]);
  tsj_tree_free(NULL);
  CHECK_MSG(tsj_tree_make(NULL, 0, &err) == NULL && err.code == TSJ_ERR_INVALID_ARG, "tsj_tree_make NULL");
  free(b.p);
}

/* Every validation case again through the in-place path that inputs of
 * 32 MiB and more take (validate_lean): same verdicts, same messages. */
void test_lean__inPlaceValidationGivesTheSameVerdictsAndMessages(void) {
  size_t saved = tsj_lean_input_bytes;
  tsj_lean_input_bytes = 0;
  test_minify__validDocumentsMinifyToTheirCanonicalText();
  test_minify__invalidDocumentsFailWithCodeOffsetAndMessage();
  test_utf8__onlyWellFormedUtf8IsAccepted();
  test_utf8__invalidUtf8IsReportedBeforeAnEarlierSyntaxError();
  test_members__eachMemberIsVisitedOnceInOrder();
  test_duplicates__duplicateKeysAreRefusedAtTheSecondOccurrence();
  test_patch__everyRfc6902ExampleGivesItsResult(); /* patches are validated in place too */
  test_patch__everyOperationAndFailureKeepsThePatchAtomic();
  tsj_lean_input_bytes = saved;
}
