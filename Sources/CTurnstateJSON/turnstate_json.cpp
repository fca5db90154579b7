// turnstate_json.cpp - implementation of turnstate_json.h over simdjson (DOM API).
//
// Design
// ------
// * Validation: every input is copied into a per-thread padded buffer and
//   fully parsed with simdjson's DOM parser (max depth TSJ_MAX_DEPTH). The DOM
//   is used for validation only; everything we hand back is cut out of the
//   original text, so numbers and string escapes survive byte for byte.
// * Minification: simdjson::minify(const char *, size_t, char *, size_t &) on
//   the validated raw text (SIMD, non-recursive). simdjson's DOM serializer
//   (simdjson::minify(element) / to_string) is not used: it reformats doubles
//   (1e2 -> 100.0, -0 -> 0, 1.5e300 -> 1.5e+300), unescapes strings, and
//   recurses once per 16 levels of nesting.
// * Structure: after validation we walk the text with small iterative
//   scanners (explicit stacks, no recursion anywhere).
// * Errors: simdjson reports no positions, so on the error path (only) we
//   re-check the input with a strict iterative RFC 8259 checker that finds the
//   first fault and its byte offset. simdjson's DOM rejects two kinds of valid
//   documents: numbers out of its range (integers beyond 64 bits, doubles
//   beyond +-1.8e308) and documents whose innermost non-empty container sits
//   exactly at the depth limit (simdjson counts the scalar inside as a level).
//   When simdjson fails with NUMBER_ERROR or DEPTH_ERROR and the strict checker
//   finds no fault, the document is accepted (the text-based code below does
//   not need the DOM).
// * Duplicate keys: after simdjson's parse, one pass over its tape checks that
//   no object has a key twice (pairwise for small objects, hashed for large
//   ones). Only when one does, or when there is no tape (the NUMBER_ERROR /
//   DEPTH_ERROR cases above), the strict checker, which tracks keys too,
//   finds the first fault and its offset.
// * Per-thread state: a small stack of contexts (parser + buffers) per thread,
//   so a tsj_for_each_member callback may call back into this library. Inputs
//   above kLargeInput use a temporary context so threads do not keep large
//   buffers alive.
// * No exception escapes: every entry point catches everything (bad_alloc ->
//   TSJ_ERR_NOMEM).

#include "turnstate_json.h"

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <clocale>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <locale.h>
#include <memory>
#include <new>
#include <pthread.h>
#include <string>
#include <vector>

extern "C" {
size_t tsj_lean_input_bytes = 32 * 1024 * 1024;  // kLeanInput; tests lower it
}

namespace {

using u8 = unsigned char;

constexpr size_t kPadding = simdjson::SIMDJSON_PADDING;
constexpr size_t kMaxLen = 0xFFFFFFFFu;       // simdjson's SIMDJSON_MAXSIZE_BYTES
constexpr size_t kLargeInput = 256 * 1024;    // above: temporary context
constexpr size_t kInitialCapacity = 4096;
constexpr unsigned kMaxPooled = 4;            // nesting levels served from the per-thread pool
constexpr uint32_t kHashThreshold = 16;       // objects with this many members get a hash table
constexpr size_t kShowMax = 64;               // bytes of a key/token/path quoted in messages

// ---------------------------------------------------------------------------
// Error reporting

void clear_err(tsj_error *e) {
  if (e) {
    e->code = TSJ_OK;
    e->offset = -1;
    e->message[0] = '\0';
  }
}

// Cut a possibly truncated UTF-8 sequence off the end of s.
void trim_partial_utf8(char *s) {
  size_t n = std::strlen(s);
  size_t i = n;
  while (i > 0 && (u8(s[i - 1]) & 0xC0) == 0x80) i--;
  if (i == 0) return;
  u8 lead = u8(s[i - 1]);
  if (lead < 0x80) return;
  size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  if (n - (i - 1) < need) s[i - 1] = '\0';
}

__attribute__((format(printf, 4, 5))) int set_err(tsj_error *e, int code, long long offset,
                                                  const char *fmt, ...) {
  if (e) {
    e->code = code;
    e->offset = offset;
    va_list ap;
    va_start(ap, fmt);
    int w = std::vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    if (w < 0) e->message[0] = '\0';
    else if (size_t(w) >= sizeof e->message) trim_partial_utf8(e->message);
  }
  return code;
}

int nomem(tsj_error *e) { return set_err(e, TSJ_ERR_NOMEM, -1, "out of memory"); }

// Quote s[0..n) for a message: JSON-style escapes, at most kShowMax bytes of
// s (cut on a UTF-8 boundary, then "...").
struct Shown {
  char buf[kShowMax * 6 + 8];
  Shown(const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    buf[o++] = '"';
    size_t lim = n;
    bool cut = false;
    if (lim > kShowMax) {
      lim = kShowMax;
      while (lim > 0 && (u8(s[lim]) & 0xC0) == 0x80) lim--;
      cut = true;
    }
    for (size_t i = 0; i < lim; i++) {
      u8 c = u8(s[i]);
      if (c == '"' || c == '\\') {
        buf[o++] = '\\';
        buf[o++] = char(c);
      } else if (c < 0x20 || c == 0x7F) {
        buf[o++] = '\\';
        buf[o++] = 'u';
        buf[o++] = '0';
        buf[o++] = '0';
        buf[o++] = hex[c >> 4];
        buf[o++] = hex[c & 15];
      } else {
        buf[o++] = char(c);
      }
    }
    buf[o++] = '"';
    if (cut) {
      buf[o++] = '.';
      buf[o++] = '.';
      buf[o++] = '.';
    }
    buf[o] = '\0';
  }
};

// "'x'" for a printable ASCII byte, "byte 0xNN" otherwise, "end of input" past the end.
struct Found {
  char buf[24];
  Found(const u8 *s, size_t n, size_t i) {
    if (i >= n) std::snprintf(buf, sizeof buf, "end of input");
    else if (s[i] >= 0x20 && s[i] < 0x7F) std::snprintf(buf, sizeof buf, "'%c'", s[i]);
    else std::snprintf(buf, sizeof buf, "byte 0x%02X", s[i]);
  }
};

const char *kind_name(char c) {
  switch (c) {
    case '{': return "object";
    case '[': return "array";
    case '"': return "string";
    case 't':
    case 'f': return "boolean";
    case 'n': return "null";
    default: return "number";
  }
}

// ---------------------------------------------------------------------------
// UTF-8

// Offset of the first byte of the first invalid UTF-8 sequence, or -1.
long long first_invalid_utf8(const u8 *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    u8 c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t need;
    u8 lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c == 0xE0) need = 2, lo = 0xA0;            // no overlongs
    else if (c >= 0xE1 && c <= 0xEC) need = 2;
    else if (c == 0xED) need = 2, hi = 0x9F;            // no surrogates
    else if (c >= 0xEE && c <= 0xEF) need = 2;
    else if (c == 0xF0) need = 3, lo = 0x90;            // no overlongs
    else if (c >= 0xF1 && c <= 0xF3) need = 3;
    else if (c == 0xF4) need = 3, hi = 0x8F;            // <= U+10FFFF
    else return (long long)i;                           // 80..C1, F5..FF
    for (size_t k = 1; k <= need; k++) {
      if (i + k >= n) return (long long)i;
      u8 d = s[i + k];
      if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) return (long long)i;
    }
    i += need + 1;
  }
  return -1;
}

size_t encode_utf8(uint32_t cp, char *out) {
  if (cp < 0x80) {
    out[0] = char(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = char(0xC0 | (cp >> 6));
    out[1] = char(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = char(0xE0 | (cp >> 12));
    out[1] = char(0x80 | ((cp >> 6) & 0x3F));
    out[2] = char(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = char(0xF0 | (cp >> 18));
  out[1] = char(0x80 | ((cp >> 12) & 0x3F));
  out[2] = char(0x80 | ((cp >> 6) & 0x3F));
  out[3] = char(0x80 | (cp & 0x3F));
  return 4;
}

int hexval(u8 c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Four hex digits at s[i..i+4) (bounds-checked).
bool hex4(const u8 *s, size_t n, size_t i, uint32_t &cp) {
  if (i + 4 > n) return false;
  cp = 0;
  for (size_t k = 0; k < 4; k++) {
    int v = hexval(s[i + k]);
    if (v < 0) return false;
    cp = (cp << 4) | uint32_t(v);
  }
  return true;
}

// Four hex digits known to be valid.
uint32_t hex4_valid(const char *p) {
  return uint32_t(hexval(u8(p[0])) << 12 | hexval(u8(p[1])) << 8 | hexval(u8(p[2])) << 4 |
                  hexval(u8(p[3])));
}

// ---------------------------------------------------------------------------
// Strict checker, used on the error path only: finds the first fault.

struct Fault {
  int code;
  size_t off;
  char msg[224];
};

__attribute__((format(printf, 4, 5))) bool fault(Fault &f, int code, size_t off, const char *fmt,
                                                 ...) {
  f.code = code;
  f.off = off;
  va_list ap;
  va_start(ap, fmt);
  int w = std::vsnprintf(f.msg, sizeof f.msg, fmt, ap);
  va_end(ap);
  if (w < 0) f.msg[0] = '\0';
  else if (size_t(w) >= sizeof f.msg) trim_partial_utf8(f.msg);
  return false;
}

inline bool is_ws(u8 c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
inline bool is_digit(u8 c) { return c >= '0' && c <= '9'; }

inline size_t skip_ws(const u8 *s, size_t i, size_t n) {
  while (i < n && is_ws(s[i])) i++;
  return i;
}
inline size_t skip_ws(const char *s, size_t i, size_t n) {
  return skip_ws(reinterpret_cast<const u8 *>(s), i, n);
}

bool expected(Fault &f, const u8 *s, size_t n, size_t i, const char *what) {
  Found got(s, n, i);
  return fault(f, TSJ_ERR_SYNTAX, i, "expected %s at byte %zu, found %s", what, i, got.buf);
}

bool check_string(const u8 *s, size_t n, size_t &i, Fault &f) {
  const size_t start = i++;
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  for (;;) {
    // Eight bytes at a time while none is '"', '\\' or a control character
    // (the usual "has a zero byte / a byte less than" bit tricks, exact for
    // whether there is one): big states are mostly string contents.
    while (i + 8 <= n) {
      uint64_t x;
      std::memcpy(&x, s + i, 8);
      const uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
      if ((((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs) break;
      i += 8;
    }
    if (i >= n) return fault(f, TSJ_ERR_SYNTAX, start, "unterminated string starting at byte %zu", start);
    u8 c = s[i];
    if (c == '"') {
      i++;
      return true;
    }
    if (c < 0x20)
      return fault(f, TSJ_ERR_SYNTAX, i, "unescaped control character 0x%02X in string at byte %zu", c, i);
    if (c != '\\') {
      i++;
      continue;
    }
    if (i + 1 >= n) return fault(f, TSJ_ERR_SYNTAX, start, "unterminated string starting at byte %zu", start);
    u8 e = s[i + 1];
    switch (e) {
      case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        i += 2;
        continue;
      case 'u':
        break;
      default: {
        Found got(s, n, i + 1);
        return fault(f, TSJ_ERR_SYNTAX, i, "invalid escape sequence at byte %zu: '\\' followed by %s", i, got.buf);
      }
    }
    uint32_t cp, lo;
    if (!hex4(s, n, i + 2, cp))
      return fault(f, TSJ_ERR_SYNTAX, i, "invalid \\u escape at byte %zu (expected 4 hex digits)", i);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (i + 7 < n && s[i + 6] == '\\' && s[i + 7] == 'u') {
        if (!hex4(s, n, i + 8, lo))
          return fault(f, TSJ_ERR_SYNTAX, i + 6, "invalid \\u escape at byte %zu (expected 4 hex digits)", i + 6);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
          i += 12;
          continue;
        }
      }
      return fault(f, TSJ_ERR_UTF8, i, "unpaired surrogate \\u%04X in string at byte %zu", unsigned(cp), i);
    }
    if (cp >= 0xDC00 && cp <= 0xDFFF)
      return fault(f, TSJ_ERR_UTF8, i, "unpaired surrogate \\u%04X in string at byte %zu", unsigned(cp), i);
    i += 6;
  }
}

bool check_number(const u8 *s, size_t n, size_t &i, Fault &f) {
  if (s[i] == '-') i++;
  if (i >= n || !is_digit(s[i]))
    return fault(f, TSJ_ERR_SYNTAX, i, "invalid number at byte %zu (expected a digit)", i);
  if (s[i] == '0') {
    i++;
    if (i < n && is_digit(s[i]))
      return fault(f, TSJ_ERR_SYNTAX, i, "invalid number at byte %zu (leading zeros are not allowed)", i);
  } else {
    while (i < n && is_digit(s[i])) i++;
  }
  if (i < n && s[i] == '.') {
    i++;
    if (i >= n || !is_digit(s[i]))
      return fault(f, TSJ_ERR_SYNTAX, i, "invalid number at byte %zu (expected a digit after '.')", i);
    while (i < n && is_digit(s[i])) i++;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    if (i >= n || !is_digit(s[i]))
      return fault(f, TSJ_ERR_SYNTAX, i, "invalid number at byte %zu (expected a digit in the exponent)", i);
    while (i < n && is_digit(s[i])) i++;
  }
  return true;
}

// Defined with the scanners below.
size_t unescape(const char *b, const char *e, char *out);
bool raw_keys_equal(const char *s, size_t a, size_t b);
uint64_t hash_bytes(const char *p, size_t n);
uint64_t hash_key(const char *s, size_t q);

// The keys of the objects that check_json has open, to find the first key
// that appears twice in one object (compared after unescaping). Objects with
// kHashThreshold keys or more get a hash table (per nesting level), so the
// check stays O(n) for objects of any size.
class KeyTracker {
 public:
  explicit KeyTracker(const char *s) : s_(s) {}

  void open(size_t d) {
    first_[d] = keys_.size();
    if (d < tables_.size()) tables_[d].clear();
  }
  void close(size_t d) { keys_.resize(first_[d]); }

  // Adds the key whose opening quote is at q (raw content s[q+1 .. q+1+raw))
  // to the object at level d. False if the object already has it.
  bool add(size_t d, size_t q, size_t raw) {
    const Key k{q, raw, std::memchr(s_ + q + 1, '\\', raw) != nullptr};
    const size_t b = first_[d];
    const size_t count = keys_.size() - b;
    if (count < kHashThreshold) {
      for (size_t j = b; j < keys_.size(); j++)
        if (same(keys_[j], k)) return false;
      keys_.push_back(k);
      if (count + 1 == kHashThreshold) rebuild(d, 4 * kHashThreshold);
      return true;
    }
    if ((count + 1) * 2 > tables_[d].size()) rebuild(d, tables_[d].size() * 2);
    std::vector<uint32_t> &t = tables_[d];
    const size_t mask = t.size() - 1;
    for (size_t j = hash(k) & mask;; j = (j + 1) & mask) {
      if (t[j] == 0) {
        t[j] = uint32_t(count + 1);
        keys_.push_back(k);
        return true;
      }
      if (same(keys_[b + t[j] - 1], k)) return false;
    }
  }

 private:
  struct Key {
    size_t q, raw;
    bool esc;
  };
  const char *s_;
  std::vector<Key> keys_;  // keys of every open object, innermost object last
  size_t first_[TSJ_MAX_DEPTH + 1] = {};
  std::vector<std::vector<uint32_t>> tables_;  // per level: key index + 1, 0 = empty

  bool same(const Key &a, const Key &b) const {
    if (!a.esc && !b.esc) return a.raw == b.raw && std::memcmp(s_ + a.q + 1, s_ + b.q + 1, a.raw) == 0;
    return raw_keys_equal(s_, a.q, b.q);
  }
  uint64_t hash(const Key &k) const { return k.esc ? hash_key(s_, k.q) : hash_bytes(s_ + k.q + 1, k.raw); }
  void rebuild(size_t d, size_t size) {
    if (tables_.size() <= d) tables_.resize(d + 1);
    std::vector<uint32_t> &t = tables_[d];
    t.assign(size, 0);
    const size_t mask = size - 1;
    for (size_t i = first_[d]; i < keys_.size(); i++) {
      size_t j = hash(keys_[i]) & mask;
      while (t[j]) j = (j + 1) & mask;
      t[j] = uint32_t(i - first_[d] + 1);
    }
  }
};

bool duplicate_key(Fault &f, const u8 *s, size_t q, size_t raw) {
  std::string key(raw, '\0');
  const char *b = reinterpret_cast<const char *>(s) + q + 1;
  key.resize(unescape(b, b + raw, &key[0]));
  Shown shown(key.data(), key.size());
  return fault(f, TSJ_ERR_DUPLICATE_KEY, q, "duplicate key %s at byte %zu", shown.buf, q);
}

// Returns true if s[0..n) is a valid JSON text (UTF-8 is assumed checked)
// whose objects have no key twice.
bool check_json(const u8 *s, size_t n, Fault &f) {
  bool is_obj[TSJ_MAX_DEPTH + 1];
  KeyTracker keys(reinterpret_cast<const char *>(s));
  size_t depth = 0;
  size_t i = skip_ws(s, 0, n);
  if (i >= n) {
    if (n == 0) return fault(f, TSJ_ERR_SYNTAX, 0, "empty input");
    return fault(f, TSJ_ERR_SYNTAX, n, "expected a JSON value at byte %zu, found end of input", n);
  }
  enum { VALUE, KEY, AFTER } st = VALUE;
  for (;;) {
    switch (st) {
      case VALUE: {
        if (i >= n) return expected(f, s, n, i, "a JSON value");
        u8 c = s[i];
        if (c == '{' || c == '[') {
          if (depth == TSJ_MAX_DEPTH)
            return fault(f, TSJ_ERR_DEPTH, i, "nesting deeper than %d at byte %zu", TSJ_MAX_DEPTH, i);
          is_obj[depth++] = (c == '{');
          if (c == '{') keys.open(depth - 1);
          i = skip_ws(s, i + 1, n);
          if (i < n && s[i] == (c == '{' ? '}' : ']')) {
            depth--;
            i++;
            st = AFTER;
          } else {
            st = (c == '{') ? KEY : VALUE;
          }
        } else if (c == '"') {
          if (!check_string(s, n, i, f)) return false;
          st = AFTER;
        } else if (c == '-' || is_digit(c)) {
          if (!check_number(s, n, i, f)) return false;
          st = AFTER;
        } else if (c == 't' || c == 'f' || c == 'n') {
          const char *lit = c == 't' ? "true" : c == 'f' ? "false" : "null";
          for (size_t k = 0; lit[k]; k++) {
            if (i + k >= n || s[i + k] != u8(lit[k]))
              return fault(f, TSJ_ERR_SYNTAX, i + k, "invalid literal at byte %zu (expected '%s')", i + k, lit);
          }
          i += std::strlen(lit);
          st = AFTER;
        } else {
          return expected(f, s, n, i, "a JSON value");
        }
        break;
      }
      case KEY: {
        if (i >= n || s[i] != '"') return expected(f, s, n, i, "a string key");
        const size_t q = i;
        if (!check_string(s, n, i, f)) return false;
        if (!keys.add(depth - 1, q, i - q - 2)) return duplicate_key(f, s, q, i - q - 2);
        i = skip_ws(s, i, n);
        if (i >= n || s[i] != ':') return expected(f, s, n, i, "':' after the object key");
        i = skip_ws(s, i + 1, n);
        st = VALUE;
        break;
      }
      case AFTER: {
        i = skip_ws(s, i, n);
        if (depth == 0) {
          if (i == n) return true;
          return fault(f, TSJ_ERR_SYNTAX, i, "trailing characters after the JSON value at byte %zu", i);
        }
        bool obj = is_obj[depth - 1];
        if (i < n && s[i] == ',') {
          i = skip_ws(s, i + 1, n);
          st = obj ? KEY : VALUE;
        } else if (i < n && s[i] == (obj ? '}' : ']')) {
          depth--;
          if (obj) keys.close(depth);
          i++;
        } else {
          return expected(f, s, n, i, obj ? "',' or '}'" : "',' or ']'");
        }
        break;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Scanners over validated JSON text (whitespace allowed, may be minified).

// i is at an opening quote; returns the index of the closing quote.
inline size_t string_end(const char *s, size_t i, size_t n) {
  // memchr (vectorized) for the next quote, then count the backslashes before
  // it; measured faster than a byte loop even for short strings, whose
  // data-dependent exits mispredict.
  const char *p = s + i + 1;
  const char *end = s + n;
  for (;;) {
    const char *q = static_cast<const char *>(std::memchr(p, '"', size_t(end - p)));
    if (!q) return n;  // cannot happen on validated text
    const char *r = q;
    while (r[-1] == '\\') r--;  // stops at the opening quote at the latest
    if (((q - r) & 1) == 0) return size_t(q - s);
    p = q + 1;
  }
}

// i is at the first byte of a value; returns the index just past it.
// Sets *has_ws if the value contains insignificant whitespace.
size_t value_end(const char *s, size_t i, size_t n, bool *has_ws) {
  char c = s[i];
  if (c == '"') return string_end(s, i, n) + 1;
  if (c == '{' || c == '[') {
    size_t depth = 0;
    while (i < n) {
      char d = s[i];
      if (d == '"') {
        i = string_end(s, i, n) + 1;
        continue;
      }
      if (d == '{' || d == '[') {
        depth++;
      } else if (d == '}' || d == ']') {
        if (--depth == 0) return i + 1;
      } else if (is_ws(u8(d))) {
        *has_ws = true;
      }
      i++;
    }
    return n;
  }
  while (i < n) {
    char d = s[i];
    if (d == ',' || d == '}' || d == ']' || is_ws(u8(d))) break;
    i++;
  }
  return i;
}

// Decode one unit of validated string content at p (not the closing quote)
// into out (1..4 bytes); advances p.
inline size_t decode_unit(const char *&p, char *out) {
  char c = *p;
  if (c != '\\') {
    out[0] = c;
    p++;
    return 1;
  }
  char e = p[1];
  switch (e) {
    case 'b': out[0] = '\b'; p += 2; return 1;
    case 'f': out[0] = '\f'; p += 2; return 1;
    case 'n': out[0] = '\n'; p += 2; return 1;
    case 'r': out[0] = '\r'; p += 2; return 1;
    case 't': out[0] = '\t'; p += 2; return 1;
    case 'u': break;
    default: out[0] = e; p += 2; return 1;  // '"', '\\', '/'
  }
  uint32_t cp = hex4_valid(p + 2);
  p += 6;
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    uint32_t lo = hex4_valid(p + 2);
    p += 6;
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  }
  return encode_utf8(cp, out);
}

// Unescape the validated string content [b, e) into out (which needs e - b
// bytes at most); returns the length written.
size_t unescape(const char *b, const char *e, char *out) {
  char *o = out;
  while (b < e) {
    const char *bs = static_cast<const char *>(std::memchr(b, '\\', size_t(e - b)));
    const char *run_end = bs ? bs : e;
    std::memcpy(o, b, size_t(run_end - b));
    o += run_end - b;
    b = run_end;
    if (b < e) o += decode_unit(b, o);
  }
  return size_t(o - out);
}

// Does the string at s[q] (opening quote) unescape to tok[0..tlen)?
bool key_equals(const char *s, size_t q, const char *tok, size_t tlen) {
  const char *p = s + q + 1;
  size_t k = 0;
  for (;;) {
    char c = *p;
    if (c == '"') return k == tlen;
    if (c != '\\') {
      if (k >= tlen || tok[k] != c) return false;
      k++;
      p++;
      continue;
    }
    char u[4];
    size_t m = decode_unit(p, u);
    if (k + m > tlen || std::memcmp(tok + k, u, m) != 0) return false;
    k += m;
  }
}

// Byte stream of the unescaped string at s[q] (opening quote).
struct KeyReader {
  const char *p;
  char buf[4];
  unsigned bi = 0, bn = 0;
  KeyReader(const char *s, size_t q) : p(s + q + 1) {}
  int next() {
    if (bi < bn) return u8(buf[bi++]);
    char c = *p;
    if (c == '"') return -1;
    if (c != '\\') {
      p++;
      return u8(c);
    }
    bn = unsigned(decode_unit(p, buf));
    bi = 1;
    return u8(buf[0]);
  }
};

bool raw_keys_equal(const char *s, size_t a, size_t b) {
  KeyReader x(s, a), y(s, b);
  for (;;) {
    int c = x.next(), d = y.next();
    if (c != d) return false;
    if (c < 0) return true;
  }
}

inline uint64_t hash_step(uint64_t h, u8 c) { return (h ^ c) * 0x100000001b3ULL; }
inline uint64_t hash_finish(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}
constexpr uint64_t kHashSeed = 0xcbf29ce484222325ULL;

uint64_t hash_bytes(const char *p, size_t n) {
  uint64_t h = kHashSeed;
  for (size_t i = 0; i < n; i++) h = hash_step(h, u8(p[i]));
  return hash_finish(h);
}

uint64_t hash_key(const char *s, size_t q) {
  KeyReader r(s, q);
  uint64_t h = kHashSeed;
  for (int c; (c = r.next()) >= 0;) h = hash_step(h, u8(c));
  return hash_finish(h);
}

// ---------------------------------------------------------------------------
// Per-thread contexts

struct Member {
  uint32_t kq, ke, vs, ve;  // opening/closing quote of the key, value span (minified text)
  uint32_t koff, klen;      // key: arena offset (escaped keys) and unescaped length
  bool esc;
  const char *key;          // resolved after the arena is complete
};

bool grow(char *&p, size_t &cap, size_t need, bool exact) {
  if (cap >= need) return true;
  size_t nc = exact ? need : std::max(need, cap * 2);
  char *q = static_cast<char *>(std::malloc(nc));
  if (!q) return false;
  std::free(p);
  p = q;
  cap = nc;
  return true;
}

// A key as simdjson unescaped it, for the duplicate check of large objects.
struct TapeKey {
  const char *p;
  uint32_t len;
  uint64_t hash;
};

struct Ctx {
  simdjson::dom::parser parser;
  simdjson::dom::document doc;
  size_t cap = 0;  // capacity parser and doc are allocated for
  char *in = nullptr;
  size_t in_cap = 0;
  char *out = nullptr;
  size_t out_cap = 0;
  std::string arena;
  std::vector<Member> members;
  std::vector<TapeKey> keys;    // duplicate check: the keys of one large object
  std::vector<uint32_t> slots;  // and its hash table (key index + 1, 0 = empty)
  std::vector<uint32_t> todo;   // duplicate check: containers still to walk

  Ctx() = default;
  Ctx(const Ctx &) = delete;
  Ctx &operator=(const Ctx &) = delete;
  ~Ctx() {
    std::free(in);
    std::free(out);
  }
};

struct Pool {
  Ctx *ctx[kMaxPooled] = {};
  unsigned depth = 0;
  ~Pool() {
    for (Ctx *c : ctx) delete c;
  }
};

// The thread's pool: a plain pointer in thread-local storage, freed by a
// pthread key's destructor when the thread ends. Not a thread_local Pool: a
// thread_local with a destructor is registered on first use with
// __cxa_thread_atexit, which glibc makes abort the process when it cannot
// allocate (found by make test-faults).
pthread_key_t g_pool_key;
pthread_once_t g_pool_once = PTHREAD_ONCE_INIT;
bool g_pool_key_made = false;
thread_local Pool *t_pool = nullptr;

void delete_pool(void *pool) { delete static_cast<Pool *>(pool); }
void make_pool_key() { g_pool_key_made = pthread_key_create(&g_pool_key, delete_pool) == 0; }

// The calling thread's pool, made on first use, or nullptr when no key could
// be made (every call then uses a temporary context). Throws std::bad_alloc.
Pool *thread_pool() {
  if (t_pool) return t_pool;
  pthread_once(&g_pool_once, make_pool_key);
  if (!g_pool_key_made) return nullptr;
  Pool *pool = new Pool();
  if (pthread_setspecific(g_pool_key, pool) != 0) {
    delete pool;
    throw std::bad_alloc();
  }
  t_pool = pool;
  return pool;
}

// Borrows the thread's next free context, or a temporary one for large inputs
// (and for nesting deeper than kMaxPooled). May throw std::bad_alloc.
class Lease {
 public:
  explicit Lease(size_t len) {
    Pool *pooled = len <= kLargeInput ? thread_pool() : nullptr;
    if (pooled && pooled->depth < kMaxPooled) {
      Pool &pool = *pooled;
      Ctx *&slot = pool.ctx[pool.depth];
      if (!slot) slot = new Ctx();
      ctx_ = slot;
      pool_ = &pool;
      pool.depth++;
    } else {
      ctx_ = new Ctx();
    }
  }
  ~Lease() {
    if (pool_) pool_->depth--;
    else delete ctx_;
  }
  Lease(const Lease &) = delete;
  Lease &operator=(const Lease &) = delete;
  Ctx &ctx() { return *ctx_; }
  bool temporary() const { return pool_ == nullptr; }

 private:
  Ctx *ctx_ = nullptr;
  Pool *pool_ = nullptr;
};

// ---------------------------------------------------------------------------
// Duplicate keys, on the document simdjson parsed (the hot path)
//
// The tape (simdjson's doc/tape.md) holds every value in document order as
// 64-bit words, the type in the top byte: '{' and '[' carry the index just
// past their closing word in the low 32 bits and the (saturated) member count
// in bits 32..55; a string carries the offset of its unescaped text in the
// string buffer (a 32-bit length, then the bytes); numbers take two words.
// The walk visits the members of every container once and jumps over scalar
// values, so it is O(n), and for a small action only a few words. Keys are
// compared as simdjson unescaped them ("\u0061" and "a" are the same key):
// pairwise in objects with fewer than kPairwiseKeys keys, hashed in others.

constexpr size_t kPairwiseKeys = 16;

inline unsigned tape_type(uint64_t w) { return unsigned(w >> 56); }

inline TapeKey tape_key(const uint8_t *sb, uint64_t w) {
  const uint8_t *at = sb + (w & simdjson::internal::JSON_VALUE_MASK);
  uint32_t len;
  std::memcpy(&len, at, sizeof len);
  return TapeKey{reinterpret_cast<const char *>(at + sizeof len), len, 0};
}

inline bool same_tape_key(const TapeKey &a, const TapeKey &b) {
  return a.len == b.len && std::memcmp(a.p, b.p, a.len) == 0;
}

// The hashed key set of one large object, in c.keys / c.slots.
class TapeKeySet {
 public:
  TapeKeySet(Ctx &c, size_t expected) : keys_(c.keys), slots_(c.slots) {
    size_t size = 4 * kPairwiseKeys;
    while (size < 2 * expected) size *= 2;
    keys_.clear();
    slots_.assign(size, 0);
  }
  // False if the set already has the key.
  bool insert(TapeKey key) {
    key.hash = hash_bytes(key.p, key.len);
    if (2 * (keys_.size() + 1) > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    size_t j = key.hash & mask;
    for (; slots_[j]; j = (j + 1) & mask)
      if (same_tape_key(keys_[slots_[j] - 1], key)) return false;
    keys_.push_back(key);
    slots_[j] = uint32_t(keys_.size());
    return true;
  }

 private:
  std::vector<TapeKey> &keys_;
  std::vector<uint32_t> &slots_;
  void grow() {  // only for a count that simdjson saturated
    const size_t size = slots_.size() * 2, mask = size - 1;
    slots_.assign(size, 0);
    for (size_t i = 0; i < keys_.size(); i++) {
      size_t j = keys_[i].hash & mask;
      while (slots_[j]) j = (j + 1) & mask;
      slots_[j] = uint32_t(i + 1);
    }
  }
};

// True if an object of the parsed document has a key twice.
bool tape_has_duplicate(Ctx &c) {
  const uint64_t *t = c.doc.tape.get();
  const uint8_t *sb = c.doc.string_buf.get();
  std::vector<uint32_t> &todo = c.todo;  // containers still to walk
  todo.clear();
  // Steps over the value at v: containers are queued, scalars skipped.
  auto next_after = [&](size_t v) -> size_t {
    const unsigned vt = tape_type(t[v]);
    if (vt == '{' || vt == '[') {
      todo.push_back(uint32_t(v));
      return size_t(uint32_t(t[v]));
    }
    return v + ((vt == 'l' || vt == 'u' || vt == 'd') ? 2 : 1);
  };
  size_t x = 1;  // the root value
  for (;;) {
    const uint64_t w = t[x];
    const unsigned type = tape_type(w);
    if (type == '{') {
      const size_t count = size_t((w >> 32) & simdjson::internal::JSON_COUNT_MASK);
      if (count < kPairwiseKeys) {
        TapeKey seen[kPairwiseKeys];
        size_t n = 0;
        for (size_t k = x + 1; tape_type(t[k]) != '}'; k = next_after(k + 1)) {
          const TapeKey key = tape_key(sb, t[k]);
          for (size_t j = 0; j < n; j++)
            if (same_tape_key(seen[j], key)) return true;
          if (n == kPairwiseKeys) return true;  // a count simdjson got wrong: the checker decides
          seen[n++] = key;
        }
      } else {
        TapeKeySet set(c, count);
        for (size_t k = x + 1; tape_type(t[k]) != '}'; k = next_after(k + 1))
          if (!set.insert(tape_key(sb, t[k]))) return true;
      }
    } else if (type == '[') {
      for (size_t e = x + 1; tape_type(t[e]) != ']';) e = next_after(e);
    }
    if (todo.empty()) return false;
    x = todo.back();
    todo.pop_back();
  }
}

// The tape walk found a duplicate key: the strict checker finds the first
// one in document order and its byte offset (and has the last word).
int report_duplicate(const char *s, size_t n, tsj_error *err) {
  Fault f;
  if (!check_json(reinterpret_cast<const u8 *>(s), n, f)) return set_err(err, f.code, (long long)f.off, "%s", f.msg);
  return TSJ_OK;
}

int diagnose(const char *s, size_t n, simdjson::error_code e, tsj_error *err) {
  using namespace simdjson;
  if (e == MEMALLOC) return nomem(err);
  if (e == CAPACITY) return set_err(err, TSJ_ERR_TOO_LARGE, -1, "input of %zu bytes is too large", n);
  const u8 *u = reinterpret_cast<const u8 *>(s);
  long long bad = first_invalid_utf8(u, n);
  if (bad >= 0) return set_err(err, TSJ_ERR_UTF8, bad, "invalid UTF-8 at byte %lld", bad);
  if (e == UTF8_ERROR) return set_err(err, TSJ_ERR_UTF8, -1, "invalid UTF-8");
  Fault f;
  if (!check_json(u, n, f)) return set_err(err, f.code, (long long)f.off, "%s", f.msg);
  // Valid RFC 8259 text beyond simdjson's number range or depth counting.
  if (e == NUMBER_ERROR || e == DEPTH_ERROR) return TSJ_OK;
  return set_err(err, TSJ_ERR_SYNTAX, -1, "invalid JSON (%s)", error_message(e));
}

// Copy buf[0..len) into c.in (padded) and validate it: strict RFC 8259, and
// no object with a key twice (at any depth). Every entry point that reads
// JSON goes through here. On TSJ_OK, c.in holds the text (followed by
// kPadding zero bytes).
int load(Ctx &c, const char *buf, size_t len, bool exact, tsj_error *err) {
  if (!buf && len) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "input pointer is NULL");
  if (len > kMaxLen)
    return set_err(err, TSJ_ERR_TOO_LARGE, -1, "input of %zu bytes exceeds the limit of %zu bytes", len, kMaxLen);
  if (!grow(c.in, c.in_cap, len + kPadding, exact)) return nomem(err);
  if (len) std::memcpy(c.in, buf, len);
  std::memset(c.in + len, 0, kPadding);
  size_t need = len < 64 ? 64 : len;
  if (c.cap < need) {
    size_t nc = need;
    if (!exact) nc = std::min(std::max({need, c.cap * 2, kInitialCapacity}), std::max(need, kLargeInput));
    if (c.parser.allocate(nc, TSJ_MAX_DEPTH) != simdjson::SUCCESS || c.doc.allocate(nc) != simdjson::SUCCESS) {
      c.cap = 0;
      return nomem(err);
    }
    c.cap = nc;
  }
  auto r = c.parser.parse_into_document(c.doc, c.in, len, false);
  if (!r.error()) return tape_has_duplicate(c) ? report_duplicate(c.in, len, err) : TSJ_OK;
  return diagnose(c.in, len, r.error(), err);
}

// Validates buf[0..len) as load() does (same verdict, same first fault and
// message: load() itself ends with the strict checker whenever simdjson
// disagrees), but in place: no padded copy of the input and no simdjson
// document, whose string buffer alone is as big as the strings of the input.
// For large inputs (tsj_lean_input_bytes and up): a state of 1 GB would otherwise need
// 2 GB more while it is read. The strict checker is scalar code (slower per
// byte than simdjson) and holds only the keys of the open objects.
int validate_lean(const char *buf, size_t len, tsj_error *err) {
  if (!buf && len) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "input pointer is NULL");
  if (len > kMaxLen)
    return set_err(err, TSJ_ERR_TOO_LARGE, -1, "input of %zu bytes exceeds the limit of %zu bytes", len, kMaxLen);
  const u8 *u = reinterpret_cast<const u8 *>(buf);
  if (!simdjson::validate_utf8(buf, len)) {
    long long bad = first_invalid_utf8(u, len);
    return set_err(err, TSJ_ERR_UTF8, bad, bad >= 0 ? "invalid UTF-8 at byte %lld" : "invalid UTF-8", bad);
  }
  Fault f;
  if (!check_json(u, len, f)) return set_err(err, f.code, (long long)f.off, "%s", f.msg);
  return TSJ_OK;
}

// The simdjson kernel used for minification. simdjson's "icelake" (AVX-512)
// minifier compresses with vpcompressb to memory, which is several times
// slower than the AVX2 ("haswell") kernel on some CPUs (measured on AMD Zen 4:
// 157 ns vs 41 ns for a 91-byte action, 9.3 ms vs 1.5 ms for 10 MB), so the
// AVX2 kernel is preferred whenever the CPU supports it. Parsing still uses
// simdjson's own choice.
const simdjson::implementation *minifier() {
  static const simdjson::implementation *const impl = [] {
    const simdjson::implementation *h = simdjson::get_available_implementations()["haswell"];
    if (h && h->supported_by_runtime_system()) return h;
    return static_cast<const simdjson::implementation *>(simdjson::get_active_implementation());
  }();
  return impl;
}

// simdjson picks its kernel on first use and then builds its list of
// kernels, with operator new inside noexcept functions: a bad_alloc there
// ends the process (std::terminate; found by make test-faults). So it is
// done while the library loads, where a failure ends the process as the
// loader's own would, and never in the middle of a call.
__attribute__((constructor)) void warm_up_simdjson() {
  (void)minifier();
  (void)simdjson::get_active_implementation()->name();
}

// Minify validated text s[0..n) into dst (capacity >= n + kPadding).
bool minify_into(const char *s, size_t n, char *dst, size_t &out_len) {
  if (n == 0) {
    out_len = 0;
    return true;
  }
  return minifier()->minify(reinterpret_cast<const uint8_t *>(s), n, reinterpret_cast<uint8_t *>(dst), out_len) ==
         simdjson::SUCCESS;
}

// ---------------------------------------------------------------------------
// Quoting (tsj_quote, and new keys in tsj_patch_apply)

// Extra output bytes per input byte: 1 for \" \\ \b \f \n \r \t, 5 for \u00XX.
const u8 kQuoteExtra[256] = {
    5, 5, 5, 5, 5, 5, 5, 5, 1, 1, 1, 5, 1, 1, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0};

// Length of s[0..len) written as a JSON string literal (quotes included).
size_t quoted_len(const char *s, size_t len) {
  size_t olen = len + 2;
  for (size_t i = 0; i < len; i++) olen += kQuoteExtra[u8(s[i])];
  return olen;
}

// Writes s[0..len) as a JSON string literal at o (quoted_len bytes); returns its end.
char *quote_into(const char *s, size_t len, char *o) {
  static const char hex[] = "0123456789abcdef";
  *o++ = '"';
  size_t i = 0;
  while (i < len) {
    size_t run = i;
    while (run < len && kQuoteExtra[u8(s[run])] == 0) run++;
    std::memcpy(o, s + i, run - i);
    o += run - i;
    if (run == len) break;
    u8 c = u8(s[run]);
    *o++ = '\\';
    switch (c) {
      case '"': *o++ = '"'; break;
      case '\\': *o++ = '\\'; break;
      case '\b': *o++ = 'b'; break;
      case '\f': *o++ = 'f'; break;
      case '\n': *o++ = 'n'; break;
      case '\r': *o++ = 'r'; break;
      case '\t': *o++ = 't'; break;
      default:
        *o++ = 'u';
        *o++ = '0';
        *o++ = '0';
        *o++ = hex[c >> 4];
        *o++ = hex[c & 15];
    }
    i = run + 1;
  }
  *o++ = '"';
  return o;
}

int internal_error(tsj_error *err, const char *what) {
  return set_err(err, TSJ_ERR_SYNTAX, -1, "internal error: %s", what);
}

}  // namespace

// ---------------------------------------------------------------------------
// Documents

namespace {
struct Container {
  uint32_t start;   // offset of '{' / '['
  uint32_t end;     // offset of the matching '}' / ']'
  uint32_t first;   // index of the first child in tsj_doc::children
  uint32_t count;   // number of children
  uint32_t hfirst;  // index of the first hash slot (objects with >= kHashThreshold members)
  uint32_t hsize;   // number of hash slots (power of two), 0 if none
};
}  // namespace

struct tsj_doc {
  char *text = nullptr;  // minified, NUL-terminated
  size_t len = 0;
  bool owned = true;     // text is freed with the document (not for tsj_doc_index)
  std::vector<Container> containers;  // in document order (sorted by start)
  std::vector<uint32_t> children;     // per container: start of each element / key's opening quote
  std::vector<uint32_t> slots;        // hash slots: member index + 1, 0 = empty
  ~tsj_doc() {
    if (owned) std::free(text);
  }
  size_t index_bytes() const {
    return containers.capacity() * sizeof(Container) + (children.capacity() + slots.capacity()) * sizeof(uint32_t);
  }
};

namespace {

void build_hash(tsj_doc &d, Container &c) {
  uint32_t size = 1;
  while (size < c.count * 2u) size <<= 1;
  c.hfirst = uint32_t(d.slots.size());
  c.hsize = size;
  d.slots.resize(d.slots.size() + size, 0);
  uint32_t *slots = d.slots.data() + c.hfirst;
  const uint32_t *kids = d.children.data() + c.first;
  for (uint32_t k = 0; k < c.count; k++) {
    uint32_t j = uint32_t(hash_key(d.text, kids[k])) & (size - 1);
    for (;;) {
      uint32_t s = slots[j];
      if (s == 0) {
        slots[j] = k + 1;
        break;
      }
      if (raw_keys_equal(d.text, kids[s - 1], kids[k])) break;  // duplicate key: the first one wins
      j = (j + 1) & (size - 1);
    }
  }
}

// Builds containers/children/slots over d.text (validated, minified). Iterative.
// Gives up (false, *over_budget set) as soon as the index would take more
// than `budget` bytes (containers, children, pending children and hash slots
// counted by their sizes; vectors may hold up to twice that while growing).
bool build_index(tsj_doc &d, size_t budget = SIZE_MAX, bool *over_budget = nullptr) {
  const char *m = d.text;
  const size_t n = d.len;
  struct Frame {
    uint32_t ci, mark;
    bool obj;
  };
  std::vector<Frame> stack;
  std::vector<uint32_t> pending;
  size_t i = 0;
  for (;;) {
    // A value starts at i.
    char c = m[i];
    if (c == '{' || c == '[') {
      if (budget != SIZE_MAX &&
          (d.containers.size() + 1) * sizeof(Container) +
                  (d.children.size() + pending.size() + d.slots.size() + 1) * sizeof(uint32_t) >
              budget) {
        if (over_budget) *over_budget = true;
        return false;
      }
      d.containers.push_back(Container{uint32_t(i), 0, 0, 0, 0, 0});
      stack.push_back(Frame{uint32_t(d.containers.size() - 1), uint32_t(pending.size()), c == '{'});
      i++;
      if (m[i] != '}' && m[i] != ']') {
        pending.push_back(uint32_t(i));
        if (c == '{') i = string_end(m, i, n) + 2;  // past the key and ':'
        continue;
      }
    } else if (c == '"') {
      i = string_end(m, i, n) + 1;
    } else {
      while (i < n && m[i] != ',' && m[i] != '}' && m[i] != ']') i++;
    }
    // After a value: ',' or closing brackets.
    for (;;) {
      if (stack.empty()) return i == n;
      if (i >= n) return false;
      Frame f = stack.back();
      if (m[i] == ',') {
        i++;
        pending.push_back(uint32_t(i));
        if (budget != SIZE_MAX && (pending.size() & 1023) == 0 &&
            d.containers.size() * sizeof(Container) +
                    (d.children.size() + pending.size() + d.slots.size()) * sizeof(uint32_t) >
                budget) {
          if (over_budget) *over_budget = true;
          return false;
        }
        if (f.obj) i = string_end(m, i, n) + 2;
        break;
      }
      Container &ct = d.containers[f.ci];
      ct.end = uint32_t(i);
      ct.first = uint32_t(d.children.size());
      ct.count = uint32_t(pending.size() - f.mark);
      d.children.insert(d.children.end(), pending.begin() + f.mark, pending.end());
      pending.resize(f.mark);
      if (f.obj && ct.count >= kHashThreshold) build_hash(d, ct);
      if (budget != SIZE_MAX && d.containers.size() * sizeof(Container) +
                                        (d.children.size() + pending.size() + d.slots.size()) * sizeof(uint32_t) >
                                    budget) {
        if (over_budget) *over_budget = true;
        return false;
      }
      stack.pop_back();
      i++;
    }
  }
}

const Container *find_container(const tsj_doc &d, uint32_t start) {
  auto it = std::lower_bound(d.containers.begin(), d.containers.end(), start,
                             [](const Container &c, uint32_t s) { return c.start < s; });
  if (it == d.containers.end() || it->start != start) return nullptr;
  return &*it;
}

// Member index of tok in the object, or -1.
long long find_member(const tsj_doc &d, const Container &c, const char *tok, size_t tlen) {
  const uint32_t *kids = d.children.data() + c.first;
  if (c.hsize) {
    const uint32_t *slots = d.slots.data() + c.hfirst;
    uint32_t j = uint32_t(hash_bytes(tok, tlen)) & (c.hsize - 1);
    for (;;) {
      uint32_t s = slots[j];
      if (s == 0) return -1;
      if (key_equals(d.text, kids[s - 1], tok, tlen)) return s - 1;
      j = (j + 1) & (c.hsize - 1);
    }
  }
  for (uint32_t k = 0; k < c.count; k++)
    if (key_equals(d.text, kids[k], tok, tlen)) return k;
  return -1;
}

// "No such position" for the scanners below.
constexpr size_t kNone = SIZE_MAX;

}  // namespace

namespace {
// tsj_for_each_member (cb: values lent during the call) and tsj_split_object
// (owned: each value malloc'ed for the callback to keep).
int for_each_member(const char *buf, size_t len, tsj_member_cb cb, tsj_owned_member_cb owned, void *user,
                    tsj_error *err) {
  char **values = nullptr;  // tsj_split_object: the values not yet handed over
  size_t handed = 0, count = 0;
  auto release = [&] {
    if (!values) return;
    for (size_t k = handed; k < count; k++) std::free(values[k]);
    std::free(values);
    values = nullptr;
  };
  try {
    Lease lease(len);
    Ctx &c = lease.ctx();
    const bool lean = len >= tsj_lean_input_bytes;  // a temporary context: its buffers are ours
    const char *in;
    if (lean) {
      int rc = validate_lean(buf, len, err);
      if (rc) return rc;
      in = buf;  // minify reads buf[0..len) only
    } else {
      int rc = load(c, buf, len, lease.temporary(), err);
      if (rc) return rc;
      in = c.in;
    }
    if (!grow(c.out, c.out_cap, len + kPadding + 1, lease.temporary())) return nomem(err);
    size_t n = 0;
    if (!minify_into(in, len, c.out, n)) return internal_error(err, "minify failed");
    char *m = c.out;
    m[n] = '\0';
    if (m[0] != '{')
      return set_err(err, TSJ_ERR_NOT_OBJECT, (long long)skip_ws(buf, 0, len),
                     "top level must be an object, found %s", kind_name(m[0]));

    std::vector<Member> &mem = c.members;
    mem.clear();
    c.arena.clear();
    size_t i = 1;
    if (m[i] != '}') {
      for (;;) {
        Member mb;
        mb.kq = uint32_t(i);
        mb.ke = uint32_t(string_end(m, i, n));
        mb.vs = mb.ke + 2;
        bool ws = false;
        mb.ve = uint32_t(value_end(m, mb.vs, n, &ws));
        // tsj_split_object may move the text: every key goes to the arena.
        mb.esc = owned || std::memchr(m + mb.kq + 1, '\\', mb.ke - mb.kq - 1) != nullptr;
        mb.key = nullptr;
        if (mb.esc) {
          size_t raw = mb.ke - mb.kq - 1;
          mb.koff = uint32_t(c.arena.size());
          c.arena.resize(mb.koff + raw + 1);
          mb.klen = uint32_t(unescape(m + mb.kq + 1, m + mb.ke, &c.arena[mb.koff]));
          c.arena.resize(mb.koff + mb.klen + 1);
          c.arena[mb.koff + mb.klen] = '\0';
        } else {
          mb.koff = 0;
          mb.klen = mb.ke - mb.kq - 1;
        }
        mem.push_back(mb);
        i = mb.ve;
        if (m[i] == ',') {
          i++;
          continue;
        }
        break;
      }
    }
    for (Member &mb : mem) mb.key = mb.esc ? c.arena.data() + mb.koff : m + mb.kq + 1;

    // load() refused objects with a key twice.

    if (owned) {
      // Each value in its own block. A temporary context's buffer is given
      // to the largest one (moved to its start and shrunk: no copy of the
      // biggest slice of a big state); the others are copied.
      count = mem.size();
      values = static_cast<char **>(std::calloc(count ? count : 1, sizeof(char *)));
      if (!values) return nomem(err);
      size_t largest = count;
      if (lease.temporary())
        for (size_t k = 0; k < count; k++)
          if (largest == count || mem[k].ve - mem[k].vs > mem[largest].ve - mem[largest].vs) largest = k;
      for (size_t k = 0; k < count; k++) {
        if (k == largest) continue;
        size_t vlen = mem[k].ve - mem[k].vs;
        values[k] = static_cast<char *>(std::malloc(vlen + 1));
        if (!values[k]) {
          release();
          return nomem(err);
        }
        std::memcpy(values[k], m + mem[k].vs, vlen);
        values[k][vlen] = '\0';
      }
      if (largest < count) {
        size_t vlen = mem[largest].ve - mem[largest].vs;
        std::memmove(m, m + mem[largest].vs, vlen);
        m[vlen] = '\0';
        char *shrunk = static_cast<char *>(std::realloc(m, vlen + 1));
        values[largest] = shrunk ? shrunk : m;
        c.out = nullptr;
        c.out_cap = 0;
      }
      for (; handed < count; handed++) {
        const Member &mb = mem[handed];
        int r = owned(mb.key, mb.klen, values[handed], mb.ve - mb.vs, user);
        if (r != 0) {
          handed++;  // the callback owns the value it was given
          release();
          set_err(err, r, -1, "stopped by the callback (it returned %d)", r);
          return r;
        }
      }
      release();
      clear_err(err);
      return TSJ_OK;
    }

    for (const Member &mb : mem) {
      char *kend = m + mb.ke;
      char *vend = m + mb.ve;
      char saved = *vend;
      if (!mb.esc) *kend = '\0';
      *vend = '\0';
      int r = cb(mb.key, mb.klen, m + mb.vs, mb.ve - mb.vs, user);
      *vend = saved;
      if (!mb.esc) *kend = '"';
      if (r != 0) {
        set_err(err, r, -1, "stopped by the callback (it returned %d)", r);
        return r;
      }
    }
    clear_err(err);
    return TSJ_OK;
  } catch (const std::bad_alloc &) {
    release();
    return nomem(err);
  } catch (...) {
    release();
    return internal_error(err, "unexpected exception");
  }
}
}  // namespace

// ---------------------------------------------------------------------------
// Public API

extern "C" {

const char *tsj_code_name(int code) {
  switch (code) {
    case TSJ_OK: return "TSJ_OK";
    case TSJ_ERR_SYNTAX: return "TSJ_ERR_SYNTAX";
    case TSJ_ERR_UTF8: return "TSJ_ERR_UTF8";
    case TSJ_ERR_DEPTH: return "TSJ_ERR_DEPTH";
    case TSJ_ERR_NOMEM: return "TSJ_ERR_NOMEM";
    case TSJ_ERR_NOT_ACTION: return "TSJ_ERR_NOT_ACTION";
    case TSJ_ERR_NOT_OBJECT: return "TSJ_ERR_NOT_OBJECT";
    case TSJ_ERR_POINTER: return "TSJ_ERR_POINTER";
    case TSJ_ERR_NOT_FOUND: return "TSJ_ERR_NOT_FOUND";
    case TSJ_ERR_DUPLICATE_KEY: return "TSJ_ERR_DUPLICATE_KEY";
    case TSJ_ERR_TOO_LARGE: return "TSJ_ERR_TOO_LARGE";
    case TSJ_ERR_INVALID_ARG: return "TSJ_ERR_INVALID_ARG";
    case TSJ_ERR_PATCH: return "TSJ_ERR_PATCH";
    case TSJ_ERR_TYPE: return "TSJ_ERR_TYPE";
    case TSJ_ERR_RANGE: return "TSJ_ERR_RANGE";
    default: return "TSJ_UNKNOWN";
  }
}

// Hands a finished, NUL-terminated result to the caller.
static int give_text(char *text, size_t length, char **out, size_t *out_len, tsj_error *err) {
  text[length] = '\0';
  *out = text;
  if (out_len) *out_len = length;
  clear_err(err);
  return TSJ_OK;
}

// A JSON number or literal exactly as RFC 8259 spells it, with no white
// space: text that is already minified. Reducers of counters and flags
// return such text on every dispatch, so it skips the full parse.
static bool is_minified_scalar(const char *s, size_t len) {
  if (len == 0 || len > 32) return false;
  if ((len == 4 && (std::memcmp(s, "true", 4) == 0 || std::memcmp(s, "null", 4) == 0)) ||
      (len == 5 && std::memcmp(s, "false", 5) == 0))
    return true;
  size_t i = 0;
  auto digit = [&](size_t k) { return k < len && s[k] >= '0' && s[k] <= '9'; };
  if (s[i] == '-') i++;
  if (!digit(i)) return false;
  if (s[i] == '0') {
    i++;
  } else {
    while (digit(i)) i++;
  }
  if (i < len && s[i] == '.') {
    i++;
    if (!digit(i)) return false;
    while (digit(i)) i++;
  }
  if (i < len && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < len && (s[i] == '+' || s[i] == '-')) i++;
    if (!digit(i)) return false;
    while (digit(i)) i++;
  }
  return i == len;
}

int tsj_minify(const char *buf, size_t len, char **out, size_t *out_len, tsj_error *err) {
  if (out) *out = nullptr;
  if (out_len) *out_len = 0;
  if (!out) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "out is NULL");
  if (buf && is_minified_scalar(buf, len)) {
    char *res = static_cast<char *>(std::malloc(len + 1));
    if (!res) return nomem(err);
    std::memcpy(res, buf, len);
    return give_text(res, len, out, out_len, err);
  }
  try {
    if (len >= tsj_lean_input_bytes) {
      int rc = validate_lean(buf, len, err);
      if (rc) return rc;
      char *res = static_cast<char *>(std::malloc(len + kPadding + 1));
      if (!res) return nomem(err);
      size_t mlen = 0;
      if (!minify_into(buf, len, res, mlen)) {  // reads buf[0..len) only
        std::free(res);
        return internal_error(err, "minify failed");
      }
      if (char *shrunk = static_cast<char *>(std::realloc(res, mlen + 1))) res = shrunk;
      return give_text(res, mlen, out, out_len, err);
    }
    Lease lease(len);
    Ctx &c = lease.ctx();
    int rc = load(c, buf, len, lease.temporary(), err);
    if (rc) return rc;
    char *res;
    size_t mlen = 0;
    if (!lease.temporary()) {
      if (!grow(c.out, c.out_cap, len + kPadding + 1, false)) return nomem(err);
      if (!minify_into(c.in, len, c.out, mlen)) return internal_error(err, "minify failed");
      res = static_cast<char *>(std::malloc(mlen + 1));
      if (!res) return nomem(err);
      std::memcpy(res, c.out, mlen);
    } else {
      res = static_cast<char *>(std::malloc(len + kPadding + 1));
      if (!res) return nomem(err);
      if (!minify_into(c.in, len, res, mlen)) {
        std::free(res);
        return internal_error(err, "minify failed");
      }
      if (char *shrunk = static_cast<char *>(std::realloc(res, mlen + 1))) res = shrunk;
    }
    return give_text(res, mlen, out, out_len, err);
  } catch (const std::bad_alloc &) {
    return nomem(err);
  } catch (...) {
    return internal_error(err, "unexpected exception");
  }
}

int tsj_parse_action(const char *buf, size_t len, char **out_block, const char **out_type,
                     size_t *out_type_len, const char **out_payload, tsj_error *err) {
  if (out_block) *out_block = nullptr;
  if (out_type) *out_type = nullptr;
  if (out_type_len) *out_type_len = 0;
  if (out_payload) *out_payload = nullptr;
  if (!out_block || !out_type) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "out_block or out_type is NULL");
  try {
    Lease lease(len);
    Ctx &c = lease.ctx();
    int rc = load(c, buf, len, lease.temporary(), err);
    if (rc) return rc;
    const char *s = c.in;
    const size_t n = len;
    size_t i = skip_ws(s, 0, n);
    if (s[i] != '{')
      return set_err(err, TSJ_ERR_NOT_ACTION, (long long)i, "top level must be an object, found %s", kind_name(s[i]));

    struct Span {
      size_t key, vs, ve;
      bool ws;
    } type{0, 0, 0, false}, payload{0, 0, 0, false};
    // load() refused objects with a key twice: at most one of each.
    bool has_type = false, has_payload = false;
    i = skip_ws(s, i + 1, n);
    if (s[i] != '}') {
      for (;;) {
        size_t kq = i;
        size_t ke = string_end(s, kq, n);
        size_t vs = skip_ws(s, skip_ws(s, ke + 1, n) + 1, n);  // past ':'
        bool ws = false;
        size_t ve = value_end(s, vs, n, &ws);
        if (key_equals(s, kq, "type", 4)) {
          type = Span{kq, vs, ve, ws};
          has_type = true;
        } else if (key_equals(s, kq, "payload", 7)) {
          payload = Span{kq, vs, ve, ws};
          has_payload = true;
        }
        i = skip_ws(s, ve, n);
        if (i < n && s[i] == ',') {
          i = skip_ws(s, i + 1, n);
          continue;
        }
        break;
      }
    }

    if (!has_type) return set_err(err, TSJ_ERR_NOT_ACTION, -1, "\"type\" is missing");
    if (s[type.vs] != '"')
      return set_err(err, TSJ_ERR_NOT_ACTION, (long long)type.vs, "\"type\" must be a string, found %s",
                     kind_name(s[type.vs]));
    const char *tb = s + type.vs + 1;
    const char *te = s + type.ve - 1;
    if (tb == te) return set_err(err, TSJ_ERR_NOT_ACTION, (long long)type.vs, "\"type\" must not be empty");
    const size_t traw = size_t(te - tb);
    const bool tesc = std::memchr(tb, '\\', traw) != nullptr;
    const bool pws = has_payload && payload.ws;
    // Scratch layout in c.out: [unescaped type][minified payload + padding].
    if ((tesc || pws) && !grow(c.out, c.out_cap, traw + 1 + (pws ? payload.ve - payload.vs + kPadding : 0), false))
      return nomem(err);
    const char *tptr = tb;
    size_t tlen = traw;
    if (tesc) {
      tlen = unescape(tb, te, c.out);
      tptr = c.out;
      if (std::memchr(tptr, '\0', tlen))
        return set_err(err, TSJ_ERR_NOT_ACTION, (long long)type.vs, "\"type\" must not contain \\u0000");
    }

    const char *pptr = nullptr;
    size_t plen = 0;
    if (has_payload) {
      pptr = s + payload.vs;
      plen = payload.ve - payload.vs;
      if (pws) {
        char *dst = c.out + traw + 1;
        size_t mini_len = 0;
        if (!minify_into(pptr, plen, dst, mini_len)) return internal_error(err, "minify failed");
        pptr = dst;
        plen = mini_len;
      }
    }

    size_t total = tlen + 1 + (has_payload ? plen + 1 : 0);
    char *block = static_cast<char *>(std::malloc(total));
    if (!block) return nomem(err);
    std::memcpy(block, tptr, tlen);
    block[tlen] = '\0';
    if (has_payload) {
      std::memcpy(block + tlen + 1, pptr, plen);
      block[tlen + 1 + plen] = '\0';
    }
    *out_block = block;
    *out_type = block;
    if (out_type_len) *out_type_len = tlen;
    if (out_payload) *out_payload = has_payload ? block + tlen + 1 : nullptr;
    clear_err(err);
    return TSJ_OK;
  } catch (const std::bad_alloc &) {
    return nomem(err);
  } catch (...) {
    return internal_error(err, "unexpected exception");
  }
}

// A short string literal of printable ASCII with no escape: valid and
// minified as it is.
static bool is_plain_string(const char *s, size_t len) {
  if (len < 2 || len > 256 || s[0] != '"' || s[len - 1] != '"') return false;
  for (size_t i = 1; i + 1 < len; i++) {
    unsigned char ch = static_cast<unsigned char>(s[i]);
    if (ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\') return false;
  }
  return true;
}

int tsj_make_action(const char *type, size_t type_len, const char *payload, size_t payload_len, char **out_block,
                    const char **out_json, const char **out_type, const char **out_payload, tsj_error *err) {
  if (out_block) *out_block = nullptr;
  if (out_json) *out_json = nullptr;
  if (out_type) *out_type = nullptr;
  if (out_payload) *out_payload = nullptr;
  if (!out_block || !out_json || !out_type) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "an out pointer is NULL");
  if (!type) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "type is NULL");
  if (type_len == 0) return set_err(err, TSJ_ERR_NOT_ACTION, -1, "\"type\" must not be empty");
  if (std::memchr(type, '\0', type_len))
    return set_err(err, TSJ_ERR_NOT_ACTION, -1, "\"type\" must not contain \\u0000");
  if (!simdjson::validate_utf8(type, type_len)) {
    long long bad = first_invalid_utf8(reinterpret_cast<const u8 *>(type), type_len);
    return set_err(err, TSJ_ERR_UTF8, bad, "\"type\": invalid UTF-8 at byte %lld", bad);
  }
  // The payload: a minified scalar or plain string as it is, else checked and
  // minified as tsj_minify does (same errors).
  char *minified = nullptr;
  const char *p = payload;
  size_t plen = payload_len;
  if (payload && !is_minified_scalar(payload, payload_len) && !is_plain_string(payload, payload_len)) {
    int rc = tsj_minify(payload, payload_len, &minified, &plen, err);
    if (rc) return rc;
    p = minified;
  }
  // One block: [type NUL][payload NUL][{"type":"...","payload":...} NUL].
  static const char kType[] = "{\"type\":", kPayload[] = ",\"payload\":";
  const size_t qlen = quoted_len(type, type_len);
  const size_t jlen = sizeof kType - 1 + qlen + (payload ? sizeof kPayload - 1 + plen : 0) + 1;
  const size_t total = type_len + 1 + (payload ? plen + 1 : 0) + jlen + 1;
  char *block = static_cast<char *>(std::malloc(total));
  if (!block) {
    std::free(minified);
    return nomem(err);
  }
  char *o = block;
  std::memcpy(o, type, type_len);
  o[type_len] = '\0';
  o += type_len + 1;
  char *payload_copy = nullptr;
  if (payload) {
    payload_copy = o;
    std::memcpy(o, p, plen);
    o[plen] = '\0';
    o += plen + 1;
  }
  char *json = o;
  std::memcpy(o, kType, sizeof kType - 1);
  o = quote_into(type, type_len, o + sizeof kType - 1);
  if (payload) {
    std::memcpy(o, kPayload, sizeof kPayload - 1);
    o += sizeof kPayload - 1;
    std::memcpy(o, p, plen);
    o += plen;
  }
  *o++ = '}';
  *o = '\0';
  std::free(minified);
  *out_block = block;
  *out_type = block;
  *out_json = json;
  if (out_payload) *out_payload = payload_copy;
  clear_err(err);
  return TSJ_OK;
}

int tsj_for_each_member(const char *buf, size_t len, tsj_member_cb cb, void *user, tsj_error *err) {
  if (!cb) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "callback is NULL");
  return for_each_member(buf, len, cb, nullptr, user, err);
}

int tsj_split_object(const char *buf, size_t len, tsj_owned_member_cb cb, void *user, tsj_error *err) {
  if (!cb) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "callback is NULL");
  return for_each_member(buf, len, nullptr, cb, user, err);
}

tsj_doc *tsj_doc_parse(const char *buf, size_t len, tsj_error *err) {
  try {
    Lease lease(len);
    Ctx &c = lease.ctx();
    if (load(c, buf, len, lease.temporary(), err)) return nullptr;
    std::unique_ptr<tsj_doc> d(new tsj_doc());
    d->text = static_cast<char *>(std::malloc(len + kPadding + 1));
    if (!d->text) {
      nomem(err);
      return nullptr;
    }
    size_t mlen = 0;
    if (!minify_into(c.in, len, d->text, mlen)) {
      internal_error(err, "minify failed");
      return nullptr;
    }
    if (char *shrunk = static_cast<char *>(std::realloc(d->text, mlen + 1))) d->text = shrunk;
    d->text[mlen] = '\0';
    d->len = mlen;
    if (!build_index(*d)) {
      internal_error(err, "index build failed");
      return nullptr;
    }
    d->containers.shrink_to_fit();
    d->children.shrink_to_fit();
    d->slots.shrink_to_fit();
    clear_err(err);
    return d.release();
  } catch (const std::bad_alloc &) {
    nomem(err);
    return nullptr;
  } catch (...) {
    internal_error(err, "unexpected exception");
    return nullptr;
  }
}

}  // extern "C"

namespace {
// ---------------------------------------------------------------------------
// JSON Pointer walk, shared by tsj_doc_at_pointer, tsj_text_at_pointer,
// tsj_find, tsj_find_in and tsj_patch_apply, over minified text m[0..n).
// With an index (doc), each child is found through it (array indices O(1),
// large objects hashed, each container by binary search); without one, by
// stepping over the values before it.

enum class Want {
  Value,  // the pointer must name a value
  Add     // RFC 6902 "add": the last token may name a new member, or an array index up to the length, or "-"
};

// Where a pointer leads.
struct Target {
  size_t vs = 0, ve = 0;  // the value [vs, ve) (found)
  size_t ps = kNone;      // the container of the last token; kNone for the pointer ""
  size_t pe = kNone;      // its closing bracket (append), or kNone when not known
  size_t ks = 0;          // start of the member (its key's quote) or element named by the last token
  size_t tokens = 0;      // tokens in the pointer: the containers around the value
  bool found = false;     // the last token names an existing member or element
  bool append = false;    // Want::Add: insert before pe (a new member, or at the end of an array)
  std::string key;        // Want::Add of a new member: its key (unescaped)
};

// End of the value that starts at m[v].
size_t end_of(const tsj_doc *doc, const char *m, size_t n, size_t v) {
  if (doc && (m[v] == '{' || m[v] == '[')) {
    if (const Container *ct = find_container(*doc, uint32_t(v))) return size_t(ct->end) + 1;
  }
  bool ws = false;
  return value_end(m, v, n, &ws);
}

// Checks the syntax of a JSON Pointer (RFC 6901): TSJ_ERR_POINTER, offset in the pointer.
int check_pointer(const char *p, size_t plen, tsj_error *err) {
  if (plen && p[0] != '/') return set_err(err, TSJ_ERR_POINTER, 0, "JSON pointer must be empty or start with '/'");
  for (size_t i = 0; i < plen; i++) {
    if (p[i] == '~' && (i + 1 >= plen || (p[i + 1] != '0' && p[i + 1] != '1')))
      return set_err(err, TSJ_ERR_POINTER, (long long)i,
                     "invalid escape in JSON pointer at byte %zu ('~' must be followed by '0' or '1')", i);
  }
  long long bad = first_invalid_utf8(reinterpret_cast<const u8 *>(p), plen);
  if (bad >= 0) return set_err(err, TSJ_ERR_POINTER, bad, "JSON pointer is not valid UTF-8 at byte %lld", bad);
  return TSJ_OK;
}

// Walks pointer p[0..plen) from the value at m[v0]. TSJ_ERR_POINTER (bad
// syntax) or TSJ_ERR_NOT_FOUND (messages name the token and the path up to
// it, offset = its '/' in the pointer); t says where the pointer leads.
// `start` (a token's '/' in p, or plen) is where to begin: the tokens
// before it were followed already (to the value at m[v0]); messages and
// offsets still name the whole pointer.
int walk(const tsj_doc *doc, const char *m, size_t n, size_t v0, const char *p, size_t plen, Want want, Target &t,
         tsj_error *err, size_t start = 0) {
  if (int rc = check_pointer(p, plen, err)) return rc;
  std::string tokbuf;  // a token with ~0 / ~1 escapes, unescaped
  size_t v = v0;       // start of the current value in m
  size_t pos = start;
  t = Target();
  if (plen == start) {
    t.vs = v0;
    t.ve = end_of(doc, m, n, v0);
    t.found = true;
    return TSJ_OK;
  }
  while (pos < plen) {
    size_t ts = pos + 1;
    const char *slash = static_cast<const char *>(std::memchr(p + ts, '/', plen - ts));
    size_t te = slash ? size_t(slash - p) : plen;
    const bool last = te == plen;
    const char *tok = p + ts;
    size_t tlen = te - ts;
    t.tokens++;
    if (std::memchr(tok, '~', tlen)) {
      tokbuf.clear();
      for (size_t k = 0; k < tlen; k++) {
        if (tok[k] == '~') {
          tokbuf.push_back(tok[k + 1] == '1' ? '/' : '~');
          k++;
        } else {
          tokbuf.push_back(tok[k]);
        }
      }
      tok = tokbuf.data();
      tlen = tokbuf.size();
    }
    const char c = m[v];
    if (c != '{' && c != '[') {
      Shown tk(tok, tlen), at(p, pos);
      return set_err(err, TSJ_ERR_NOT_FOUND, (long long)pos, "cannot look up %s in the %s at %s", tk.buf,
                     kind_name(c), at.buf);
    }
    const Container *ct = nullptr;
    if (doc) {
      ct = find_container(*doc, uint32_t(v));
      if (!ct) return internal_error(err, "container not indexed");
    }
    size_t ks = kNone, ve = kNone, pe = kNone;  // the child (member or element) and its end; the closing bracket
    if (c == '{') {
      size_t vs = kNone;
      if (ct) {
        pe = ct->end;
        long long k = find_member(*doc, *ct, tok, tlen);
        if (k >= 0) {
          const uint32_t *kids = doc->children.data() + ct->first;
          ks = kids[k];
          vs = string_end(m, ks, n) + 2;
          ve = uint32_t(k) + 1 < ct->count ? size_t(kids[k + 1]) - 1 : size_t(ct->end);
        }
      } else if (m[v + 1] == '}') {
        pe = v + 1;
      } else {
        for (size_t i = v + 1;;) {
          size_t ke = string_end(m, i, n);
          bool ws = false;
          size_t e = value_end(m, ke + 2, n, &ws);
          if (key_equals(m, i, tok, tlen)) {
            ks = i, vs = ke + 2, ve = e;
            break;
          }
          if (e >= n || m[e] != ',') {
            pe = e;
            break;
          }
          i = e + 1;
        }
      }
      if (ks == kNone) {
        if (last && want == Want::Add) {
          t.ps = v, t.pe = pe, t.append = true;
          t.key.assign(tok, tlen);
          return TSJ_OK;
        }
        Shown tk(tok, tlen), at(p, pos);
        return set_err(err, TSJ_ERR_NOT_FOUND, (long long)pos, "no member %s in the object at %s", tk.buf, at.buf);
      }
      if (last) {
        t.ps = v, t.pe = pe, t.ks = ks, t.vs = vs, t.ve = ve, t.found = true;
        return TSJ_OK;
      }
      v = vs;
    } else {
      const bool dash = tlen == 1 && tok[0] == '-';
      uint64_t idx = UINT64_MAX;  // "-", or too big for any array
      if (!dash) {
        Shown tk(tok, tlen), at(p, pos);
        bool digits = tlen > 0;
        for (size_t k = 0; k < tlen && digits; k++) digits = is_digit(u8(tok[k]));
        if (!digits)
          return set_err(err, TSJ_ERR_NOT_FOUND, (long long)pos, "%s is not an array index in the array at %s",
                         tk.buf, at.buf);
        if (tlen > 1 && tok[0] == '0')
          return set_err(err, TSJ_ERR_NOT_FOUND, (long long)pos,
                         "%s is not an array index (leading zero) in the array at %s", tk.buf, at.buf);
        if (tlen <= 10) {
          idx = 0;
          for (size_t k = 0; k < tlen; k++) idx = idx * 10 + uint64_t(tok[k] - '0');
        }
      } else if (!(last && want == Want::Add)) {
        Shown at(p, pos);
        return set_err(err, TSJ_ERR_NOT_FOUND, (long long)pos,
                       "\"-\" (the end of the array) is never found in the array at %s", at.buf);
      }
      size_t count = 0;
      if (ct) {
        pe = ct->end;
        count = ct->count;
        if (idx < count) {
          const uint32_t *kids = doc->children.data() + ct->first;
          ks = kids[idx];
          ve = idx + 1 < count ? size_t(kids[idx + 1]) - 1 : size_t(ct->end);
        }
      } else if (m[v + 1] == ']') {
        pe = v + 1;
      } else {
        size_t i = v + 1;
        for (uint64_t k = 0;; k++) {
          bool ws = false;
          size_t e = value_end(m, i, n, &ws);
          if (k == idx) {
            ks = i, ve = e;
            break;
          }
          if (e >= n || m[e] != ',') {
            count = size_t(k + 1);
            pe = e;
            break;
          }
          i = e + 1;
        }
      }
      if (ks == kNone) {
        if (last && want == Want::Add && (dash || idx == count)) {
          t.ps = v, t.pe = pe, t.append = true;
          return TSJ_OK;
        }
        Shown tk(tok, tlen), at(p, pos);
        return set_err(err, TSJ_ERR_NOT_FOUND, (long long)pos,
                       "index %s is out of range for the array of %zu elements at %s", tk.buf, count, at.buf);
      }
      if (last) {
        t.ps = v, t.pe = pe, t.ks = ks, t.vs = ks, t.ve = ve, t.found = true;
        return TSJ_OK;
      }
      v = ks;
    }
    pos = te;
  }
  return internal_error(err, "pointer walk");  // not reached: the last token returns
}

// tsj_doc_at_pointer and tsj_text_at_pointer: the value's text, copied.
int walk_pointer(const tsj_doc *doc, const char *m, size_t n, const char *pointer, size_t pointer_len, char **out,
                 size_t *out_len, tsj_error *err) {
  try {
    Target t;
    if (int rc = walk(doc, m, n, 0, pointer, pointer_len, Want::Value, t, err)) return rc;
    size_t vlen = t.ve - t.vs;
    char *res = static_cast<char *>(std::malloc(vlen + 1));
    if (!res) return nomem(err);
    std::memcpy(res, m + t.vs, vlen);
    return give_text(res, vlen, out, out_len, err);
  } catch (const std::bad_alloc &) {
    return nomem(err);
  } catch (...) {
    return internal_error(err, "unexpected exception");
  }
}
}  // namespace

extern "C" {

int tsj_doc_at_pointer(const tsj_doc *doc, const char *pointer, size_t pointer_len, char **out,
                       size_t *out_len, tsj_error *err) {
  if (out) *out = nullptr;
  if (out_len) *out_len = 0;
  if (!doc || !out) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "doc or out is NULL");
  if (!pointer && pointer_len) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "pointer is NULL");
  return walk_pointer(doc, doc->text, doc->len, pointer, pointer_len, out, out_len, err);
}

int tsj_text_at_pointer(const char *minified, size_t len, const char *pointer, size_t pointer_len, char **out,
                        size_t *out_len, tsj_error *err) {
  if (out) *out = nullptr;
  if (out_len) *out_len = 0;
  if (!minified || !len || !out) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "text or out is NULL");
  if (!pointer && pointer_len) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "pointer is NULL");
  return walk_pointer(nullptr, minified, len, pointer, pointer_len, out, out_len, err);
}

tsj_doc *tsj_doc_index(const char *minified, size_t len, size_t max_index_bytes, tsj_error *err) {
  if (!minified || !len) {
    set_err(err, TSJ_ERR_INVALID_ARG, -1, "text is NULL or empty");
    return nullptr;
  }
  if (len >= kMaxLen) {  // offsets are 32-bit
    set_err(err, TSJ_ERR_TOO_LARGE, -1, "text of %zu bytes is too large to index", len);
    return nullptr;
  }
  try {
    std::unique_ptr<tsj_doc> d(new tsj_doc());
    d->text = const_cast<char *>(minified);
    d->len = len;
    d->owned = false;
    bool over = false;
    if (!build_index(*d, max_index_bytes, &over)) {
      if (over) {
        set_err(err, TSJ_ERR_TOO_LARGE, -1, "the index of %zu bytes of text would take more than %zu bytes", len,
                max_index_bytes);
      } else {
        internal_error(err, "index build failed");
      }
      return nullptr;
    }
    d->containers.shrink_to_fit();
    d->children.shrink_to_fit();
    d->slots.shrink_to_fit();
    clear_err(err);
    return d.release();
  } catch (const std::bad_alloc &) {
    nomem(err);
    return nullptr;
  } catch (...) {
    internal_error(err, "unexpected exception");
    return nullptr;
  }
}

size_t tsj_doc_index_bytes(const tsj_doc *doc) { return doc ? sizeof(tsj_doc) + doc->index_bytes() : 0; }

const char *tsj_doc_text(const tsj_doc *doc, size_t *len) {
  if (!doc) {
    if (len) *len = 0;
    return nullptr;
  }
  if (len) *len = doc->len;
  return doc->text;
}

void tsj_doc_free(tsj_doc *doc) { delete doc; }

int tsj_quote(const char *s, size_t len, char **out, size_t *out_len, tsj_error *err) {
  if (out) *out = nullptr;
  if (out_len) *out_len = 0;
  if (!out) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "out is NULL");
  if (!s && len) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "input pointer is NULL");
  if (len && !simdjson::validate_utf8(s, len)) {
    long long bad = first_invalid_utf8(reinterpret_cast<const u8 *>(s), len);
    return set_err(err, TSJ_ERR_UTF8, bad, "invalid UTF-8 at byte %lld", bad);
  }
  const size_t olen = quoted_len(s, len);
  char *res = static_cast<char *>(std::malloc(olen + 1));
  if (!res) return nomem(err);
  return give_text(res, size_t(quote_into(s, len, res) - res), out, out_len, err);
}

size_t tsj_depth(const char *text, size_t len) {
  // Text is already validated: only brackets outside strings matter.
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < len; i++) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') i++;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
    } else if (c == ']' || c == '}') {
      depth--;
    }
  }
  return deepest;
}

}  // extern "C"

// ---------------------------------------------------------------------------
// JSON Patch (RFC 6902) and getters over validated minified text

namespace {

int kind_of(char c) {
  switch (c) {
    case '{': return TSJ_OBJECT;
    case '[': return TSJ_ARRAY;
    case '"': return TSJ_STRING;
    case 't': return TSJ_TRUE;
    case 'f': return TSJ_FALSE;
    case 'n': return TSJ_NULL;
    default: return TSJ_NUMBER;
  }
}

// A validated JSON number s[0..n) as sign, significant digits and exponent:
// value = (-1)^neg * digits * 10^exp, where digits has no leading or
// trailing zeros (positions first..last of the integer digits followed by
// the fraction digits). Exponents written with more than 18 digits (after
// leading zeros) are kept as text (big_exp; exp then holds only the
// adjustment for fraction and trailing zeros).
struct Decimal {
  bool neg = false, zero = true, big_exp = false, eneg = false;
  const char *ip = nullptr, *fp = nullptr, *ep = nullptr;
  size_t il = 0, fl = 0, el = 0, first = 0, last = 0;
  long long exp = 0;
  char digit(size_t k) const { return k < il ? ip[k] : fp[k - il]; }
  size_t ndigits() const { return zero ? 0 : last - first + 1; }
};

Decimal parse_decimal(const char *s, size_t n) {
  Decimal d;
  size_t i = 0;
  if (i < n && s[i] == '-') d.neg = true, i++;
  d.ip = s + i;
  while (i < n && is_digit(u8(s[i]))) i++;
  d.il = size_t(s + i - d.ip);
  d.fp = s + i;
  if (i < n && s[i] == '.') {
    d.fp = s + ++i;
    while (i < n && is_digit(u8(s[i]))) i++;
    d.fl = size_t(s + i - d.fp);
  }
  long long e = 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) d.eneg = s[i++] == '-';
    while (i < n && s[i] == '0') i++;
    d.ep = s + i;
    d.el = n - i;
    if (d.el > 18) d.big_exp = true;
    else
      for (size_t k = 0; k < d.el; k++) e = e * 10 + (d.ep[k] - '0');
  }
  const size_t total = d.il + d.fl;
  size_t k = 0;
  while (k < total && d.digit(k) == '0') k++;
  if (k == total) return d;  // zero (of any sign, fraction or exponent)
  d.zero = false;
  d.first = k;
  d.last = total - 1;
  while (d.digit(d.last) == '0') d.last--;
  d.exp = (d.big_exp ? 0 : (d.eneg ? -e : e)) - (long long)d.fl + (long long)(total - 1 - d.last);
  return d;
}

bool decimal_equal(const Decimal &a, const Decimal &b) {
  if (a.zero || b.zero) return a.zero && b.zero;
  if (a.neg != b.neg || a.big_exp != b.big_exp || a.exp != b.exp || a.ndigits() != b.ndigits()) return false;
  if (a.big_exp && (a.eneg != b.eneg || a.el != b.el || std::memcmp(a.ep, b.ep, a.el) != 0)) return false;
  for (size_t k = 0; k < a.ndigits(); k++)
    if (a.digit(a.first + k) != b.digit(b.first + k)) return false;
  return true;
}

// Do the strings with opening quotes at a[x] and b[y] unescape to the same bytes?
bool strings_equal(const char *a, size_t x, const char *b, size_t y) {
  KeyReader r(a, x), q(b, y);
  for (;;) {
    int c = r.next(), d = q.next();
    if (c != d) return false;
    if (c < 0) return true;
  }
}

// RFC 6902 "test": are the values at a[x] (text a[0..an)) and b[y] (text
// b[0..bn)), both validated and minified, equal as JSON values? Iterative:
// pairs still to compare wait in a stack.
bool json_equal(const char *a, size_t an, size_t x0, const char *b, size_t bn, size_t y0) {
  struct Member {
    uint64_t hash;
    size_t kq, vs;
  };
  std::vector<std::pair<size_t, size_t>> todo{{x0, y0}};
  std::vector<Member> mem;
  while (!todo.empty()) {
    const size_t x = todo.back().first, y = todo.back().second;
    todo.pop_back();
    const int kind = kind_of(a[x]);
    if (kind != kind_of(b[y])) return false;
    bool ws = false;
    switch (kind) {
      case TSJ_NUMBER: {
        const size_t xe = value_end(a, x, an, &ws), ye = value_end(b, y, bn, &ws);
        if (!decimal_equal(parse_decimal(a + x, xe - x), parse_decimal(b + y, ye - y))) return false;
        break;
      }
      case TSJ_STRING:
        if (!strings_equal(a, x, b, y)) return false;
        break;
      case TSJ_ARRAY: {
        size_t i = x + 1, j = y + 1;
        if (a[i] == ']' || b[j] == ']') {
          if (a[i] != b[j]) return false;
          break;
        }
        for (;;) {
          todo.emplace_back(i, j);
          i = value_end(a, i, an, &ws);
          j = value_end(b, j, bn, &ws);
          if (a[i] != b[j]) return false;  // one array has more elements
          if (a[i] == ']') break;
          i++, j++;
        }
        break;
      }
      case TSJ_OBJECT: {
        mem.clear();
        size_t j = y + 1;
        if (b[j] != '}') {
          for (;;) {
            const size_t ke = string_end(b, j, bn);
            mem.push_back(Member{0, j, ke + 2});
            j = value_end(b, ke + 2, bn, &ws);
            if (b[j] != ',') break;
            j++;
          }
        }
        const bool hashed = mem.size() >= kHashThreshold;
        if (hashed) {
          for (Member &m : mem) m.hash = hash_key(b, m.kq);
          std::sort(mem.begin(), mem.end(), [](const Member &p, const Member &q) { return p.hash < q.hash; });
        }
        size_t count = 0, i = x + 1;
        if (a[i] != '}') {
          for (;;) {
            if (++count > mem.size()) return false;
            const size_t ke = string_end(a, i, an);
            const Member *match = nullptr;
            if (hashed) {
              const uint64_t h = hash_key(a, i);
              auto it = std::lower_bound(mem.begin(), mem.end(), h,
                                         [](const Member &m, uint64_t v) { return m.hash < v; });
              for (; it != mem.end() && it->hash == h && !match; ++it)
                if (strings_equal(a, i, b, it->kq)) match = &*it;
            } else {
              for (const Member &m : mem)
                if (strings_equal(a, i, b, m.kq)) {
                  match = &m;
                  break;
                }
            }
            if (!match) return false;
            todo.emplace_back(ke + 2, match->vs);
            i = value_end(a, ke + 2, an, &ws);
            if (a[i] != ',') break;
            i++;
          }
        }
        if (count != mem.size()) return false;
        break;
      }
      default:  // null, true, false: the kind says it all
        break;
    }
  }
  return true;
}

// Up to 40 bytes of a value's text for a message (cut on a UTF-8 boundary, then "...").
struct Excerpt {
  char buf[48];
  Excerpt(const char *s, size_t n) {
    size_t lim = n;
    bool cut = false;
    if (lim > 40) {
      lim = 40;
      while (lim > 0 && (u8(s[lim]) & 0xC0) == 0x80) lim--;
      cut = true;
    }
    std::memcpy(buf, s, lim);
    std::memcpy(buf + lim, cut ? "..." : "", cut ? 4 : 1);
  }
};

// The document being patched: the caller's text until the first change,
// then a buffer of ours that later changes splice in place.
struct Piece {
  const char *p;
  size_t n;
};

class Work {
 public:
  Work(const char *base, size_t len) : base_(base), base_len_(len) {}
  ~Work() { std::free(buf_); }
  Work(const Work &) = delete;
  Work &operator=(const Work &) = delete;
  const char *text() const { return buf_ ? buf_ : base_; }
  size_t size() const { return buf_ ? len_ : base_len_; }
  bool changed() const { return buf_ != nullptr; }
  char *release(size_t *len) {
    char *b = buf_;
    *len = len_;
    buf_ = nullptr;
    if (cap_ > len_ + 1 + len_ / 8)
      if (char *shrunk = static_cast<char *>(std::realloc(b, len_ + 1))) b = shrunk;
    return b;
  }
  // Replaces [off, off + del) with the pieces (which must not point into
  // our buffer). False when out of memory (nothing changed then).
  bool splice(size_t off, size_t del, std::initializer_list<Piece> pieces) {
    size_t ins = 0;
    for (const Piece &pc : pieces) ins += pc.n;
    const size_t old = size(), nl = old - del + ins, tail = old - off - del;
    char *o;
    if (!buf_) {
      char *nb = static_cast<char *>(std::malloc(nl + 1));
      if (!nb) return false;
      std::memcpy(nb, base_, off);
      std::memcpy(nb + off + ins, base_ + off + del, tail);
      buf_ = nb, cap_ = nl + 1;
      o = nb + off;
    } else {
      if (nl + 1 > cap_) {
        size_t nc = std::max(nl + 1, cap_ + cap_ / 2);
        char *nb = static_cast<char *>(std::realloc(buf_, nc));
        if (!nb) return false;
        buf_ = nb, cap_ = nc;
      }
      std::memmove(buf_ + off + ins, buf_ + off + del, tail);
      o = buf_ + off;
    }
    for (const Piece &pc : pieces) {
      if (pc.n) std::memcpy(o, pc.p, pc.n);
      o += pc.n;
    }
    len_ = nl;
    buf_[len_] = '\0';
    return true;
  }

 private:
  const char *base_;
  size_t base_len_;
  char *buf_ = nullptr;
  size_t len_ = 0, cap_ = 0;
};

enum OpKind { OP_ADD, OP_REMOVE, OP_REPLACE, OP_MOVE, OP_COPY, OP_TEST };
const char *const kOpNames[] = {"add", "remove", "replace", "move", "copy", "test"};

struct PatchOp {
  int kind = -1;
  size_t index = 0;      // position in the patch
  long long off = -1;    // byte offset of the operation in the caller's patch text
  std::string path, from;
  size_t vs = 0, ve = 0; // "value" in the minified patch
};

// An error about operation op: "op N (\"name\" at \"path\"): detail".
__attribute__((format(printf, 4, 5))) int op_err(tsj_error *err, int code, const PatchOp &op, const char *fmt, ...) {
  char detail[sizeof err->message];
  va_list ap;
  va_start(ap, fmt);
  int w = std::vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  if (w < 0) detail[0] = '\0';
  if (op.kind < 0) return set_err(err, code, op.off, "op %zu: %s", op.index, detail);
  Shown path(op.path.data(), op.path.size());
  return set_err(err, code, op.off, "op %zu (\"%s\" at %s): %s", op.index, kOpNames[op.kind], path.buf, detail);
}

// The same, with the name known but no path yet.
__attribute__((format(printf, 4, 5))) int op_err_nopath(tsj_error *err, int code, const PatchOp &op, const char *fmt,
                                                        ...) {
  char detail[sizeof err->message];
  va_list ap;
  va_start(ap, fmt);
  int w = std::vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  if (w < 0) detail[0] = '\0';
  return set_err(err, code, op.off, "op %zu (\"%s\"): %s", op.index, kOpNames[op.kind], detail);
}

// Reads the string member value at m[vs] (a string: the caller checked) into out (unescaped).
void read_string(const char *m, size_t n, size_t vs, std::string &out) {
  const size_t e = string_end(m, vs, n);
  out.resize(e - vs - 1);
  out.resize(unescape(m + vs + 1, m + e, &out[0]));
}

// Parses the minified patch m[0..n) into ops (offsets from the caller's
// text t[0..tn), which may have white space). TSJ_ERR_PATCH on any fault.
int parse_patch(const char *m, size_t n, const char *t, size_t tn, std::vector<PatchOp> &ops, tsj_error *err) {
  const size_t t0 = skip_ws(t, 0, tn);
  if (m[0] != '[')
    return set_err(err, TSJ_ERR_PATCH, (long long)t0, "a JSON Patch must be an array of operations, found %s",
                   kind_name(m[0]));
  // The offset of each operation in the caller's text.
  std::vector<size_t> offs;
  size_t i = skip_ws(t, t0 + 1, tn);
  if (t[i] != ']') {
    for (;;) {
      offs.push_back(i);
      bool ws = false;
      i = skip_ws(t, value_end(t, i, tn, &ws), tn);
      if (t[i] != ',') break;
      i = skip_ws(t, i + 1, tn);
    }
  }
  i = 1;
  if (m[i] == ']') return TSJ_OK;
  for (size_t k = 0;; k++) {
    PatchOp op;
    op.index = k;
    op.off = k < offs.size() ? (long long)offs[k] : -1;
    bool ws = false;
    const size_t end = value_end(m, i, n, &ws);
    if (m[i] != '{')
      return op_err(err, TSJ_ERR_PATCH, op, "an operation must be an object, found %s", kind_name(m[i]));
    size_t at_op = kNone, at_path = kNone, at_value = kNone, at_from = kNone;
    if (m[i + 1] != '}') {
      for (size_t j = i + 1;;) {
        const size_t ke = string_end(m, j, n), vs = ke + 2;
        if (key_equals(m, j, "op", 2)) at_op = vs;
        else if (key_equals(m, j, "path", 4)) at_path = vs;
        else if (key_equals(m, j, "value", 5)) at_value = vs;
        else if (key_equals(m, j, "from", 4)) at_from = vs;
        j = value_end(m, vs, n, &ws);
        if (m[j] != ',') break;
        j++;
      }
    }
    if (at_op == kNone) return op_err(err, TSJ_ERR_PATCH, op, "\"op\" is missing");
    if (m[at_op] != '"')
      return op_err(err, TSJ_ERR_PATCH, op, "\"op\" must be a string, found %s", kind_name(m[at_op]));
    for (int kd = OP_ADD; kd <= OP_TEST; kd++)
      if (key_equals(m, at_op, kOpNames[kd], std::strlen(kOpNames[kd]))) op.kind = kd;
    if (op.kind < 0) {
      std::string name;
      read_string(m, n, at_op, name);
      Shown shown(name.data(), name.size());
      return op_err(err, TSJ_ERR_PATCH, op,
                    "unknown op %s (expected add, remove, replace, move, copy or test)", shown.buf);
    }
    if (at_path == kNone) return op_err_nopath(err, TSJ_ERR_PATCH, op, "\"path\" is missing");
    if (m[at_path] != '"')
      return op_err_nopath(err, TSJ_ERR_PATCH, op, "\"path\" must be a string, found %s", kind_name(m[at_path]));
    read_string(m, n, at_path, op.path);
    tsj_error perr;
    if (check_pointer(op.path.data(), op.path.size(), &perr))
      return op_err(err, TSJ_ERR_PATCH, op, "\"path\" is not a JSON pointer: %s", perr.message);
    if (op.kind == OP_ADD || op.kind == OP_REPLACE || op.kind == OP_TEST) {
      if (at_value == kNone) return op_err(err, TSJ_ERR_PATCH, op, "\"value\" is missing");
      op.vs = at_value;
      op.ve = value_end(m, at_value, n, &ws);
    }
    if (op.kind == OP_MOVE || op.kind == OP_COPY) {
      if (at_from == kNone) return op_err(err, TSJ_ERR_PATCH, op, "\"from\" is missing");
      if (m[at_from] != '"')
        return op_err(err, TSJ_ERR_PATCH, op, "\"from\" must be a string, found %s", kind_name(m[at_from]));
      read_string(m, n, at_from, op.from);
      if (check_pointer(op.from.data(), op.from.size(), &perr))
        return op_err(err, TSJ_ERR_PATCH, op, "\"from\" is not a JSON pointer: %s", perr.message);
      if (op.kind == OP_MOVE && op.path.size() > op.from.size() && op.path[op.from.size()] == '/' &&
          op.path.compare(0, op.from.size(), op.from) == 0) {
        Shown from(op.from.data(), op.from.size());
        return op_err(err, TSJ_ERR_PATCH, op,
                      "\"from\" (%s) is a proper prefix of \"path\": a value cannot move into itself", from.buf);
      }
    }
    ops.push_back(std::move(op));
    if (m[end] != ',') break;
    i = end + 1;
  }
  return TSJ_OK;
}

// Walks op's pointer over the current document, as an error about op.
int op_walk(const Work &w, const tsj_doc *index, const PatchOp &op, const std::string &ptr, Want want, Target &t,
            tsj_error *err) {
  const tsj_doc *doc = w.changed() ? nullptr : index;  // the index describes the caller's text only
  tsj_error werr;
  int rc = walk(doc, w.text(), w.size(), 0, ptr.data(), ptr.size(), want, t, &werr);
  if (rc == TSJ_ERR_NOT_FOUND || rc == TSJ_ERR_POINTER) {
    if (&ptr == &op.from) return op_err(err, TSJ_ERR_PATCH, op, "\"from\": %s", werr.message);
    return op_err(err, TSJ_ERR_PATCH, op, "%s", werr.message);
  }
  if (rc && err) *err = werr;
  return rc;
}

// Adds value v[0..vn) at op.path (RFC 6902 "add").
int patch_add(Work &w, const tsj_doc *index, const PatchOp &op, const char *v, size_t vn, tsj_error *err) {
  if (op.path.empty()) return w.splice(0, w.size(), {{v, vn}}) ? TSJ_OK : nomem(err);
  Target t;
  if (int rc = op_walk(w, index, op, op.path, Want::Add, t, err)) return rc;
  const char *m = w.text();
  if (m[t.ps] == '{') {
    if (t.found) return w.splice(t.vs, t.ve - t.vs, {{v, vn}}) ? TSJ_OK : nomem(err);
    if (t.pe == kNone) t.pe = end_of(nullptr, m, w.size(), t.ps) - 1;
    std::string key(quoted_len(t.key.data(), t.key.size()), '\0');
    quote_into(t.key.data(), t.key.size(), &key[0]);
    const bool empty = m[t.ps + 1] == '}';
    return w.splice(t.pe, 0, {{",", empty ? 0u : 1u}, {key.data(), key.size()}, {":", 1}, {v, vn}}) ? TSJ_OK
                                                                                                    : nomem(err);
  }
  if (t.found) return w.splice(t.ks, 0, {{v, vn}, {",", 1}}) ? TSJ_OK : nomem(err);
  const bool empty = m[t.ps + 1] == ']';
  return w.splice(t.pe, 0, {{",", empty ? 0u : 1u}, {v, vn}}) ? TSJ_OK : nomem(err);
}

// Removes the value at ptr (must exist; not "").
int patch_remove(Work &w, const tsj_doc *index, const PatchOp &op, const std::string &ptr, tsj_error *err) {
  Target t;
  if (int rc = op_walk(w, index, op, ptr, Want::Value, t, err)) return rc;
  const char *m = w.text();
  size_t from = t.ks, to = t.ve;
  if (m[t.ve] == ',') to++;                   // and the comma after it
  else if (t.ks > t.ps + 1) from--;           // or the one before it (the last child)
  return w.splice(from, to - from, {}) ? TSJ_OK : nomem(err);
}

int too_deep(tsj_error *err, const PatchOp &op, size_t tokens, size_t vdepth, size_t max_depth) {
  return op_err(err, TSJ_ERR_DEPTH, op, "the result would be nested %zu deep (a value %zu deep under %zu containers), more than %zu",
                tokens + vdepth, vdepth, tokens, max_depth);
}

size_t pointer_tokens(const std::string &p) { return size_t(std::count(p.begin(), p.end(), '/')); }

// Checks the patch text and reads its operations, for patch_apply and
// tree_patch: pm is the patch minified (pn bytes, in the lease's buffer, so
// kept as long as the lease is), where the operations' values are.
int read_patch(Lease &lease, const char *patch, size_t patch_len, const char *&pm, size_t &pn,
               std::vector<PatchOp> &ops, tsj_error *err) {
  Ctx &c = lease.ctx();
  const char *in;
  if (patch_len >= tsj_lean_input_bytes) {
    if (int rc = validate_lean(patch, patch_len, err)) return rc;
    in = patch;
  } else {
    if (int rc = load(c, patch, patch_len, lease.temporary(), err)) return rc;
    in = c.in;
  }
  if (!grow(c.out, c.out_cap, patch_len + kPadding + 1, lease.temporary())) return nomem(err);
  pn = 0;
  if (!minify_into(in, patch_len, c.out, pn)) return internal_error(err, "minify failed");
  pm = c.out;
  c.out[pn] = '\0';
  return parse_patch(pm, pn, in, patch_len, ops, err);
}

// Tells on_path (when given) the paths a successful patch changed, in op
// order: "from" then "path" for a move (a move onto itself too), "path" for
// the others; "test" changes nothing.
void report_paths(const std::vector<PatchOp> &ops, tsj_path_cb on_path, void *ctx) {
  if (!on_path) return;
  for (const PatchOp &op : ops) {
    if (op.kind == OP_TEST) continue;
    if (op.kind == OP_MOVE) on_path(op.from.c_str(), op.from.size(), ctx);
    on_path(op.path.c_str(), op.path.size(), ctx);
  }
}

int patch_apply(const char *doc, size_t len, const tsj_doc *index, const char *patch, size_t patch_len,
                size_t max_depth, char **out, size_t *out_len, tsj_path_cb on_path, void *ctx, tsj_error *err) {
  Lease lease(patch_len);
  const char *pm = nullptr;
  size_t pn = 0;
  std::vector<PatchOp> ops;
  if (int rc = read_patch(lease, patch, patch_len, pm, pn, ops, err)) return rc;
  if (max_depth > TSJ_MAX_DEPTH) max_depth = TSJ_MAX_DEPTH;

  Work w(doc, len);
  std::string moved;  // move / copy: the value at "from"
  for (const PatchOp &op : ops) {
    Target t;
    switch (op.kind) {
      case OP_TEST: {
        if (int rc = op_walk(w, index, op, op.path, Want::Value, t, err)) return rc;
        if (!json_equal(w.text(), w.size(), t.vs, pm, pn, op.vs)) {
          Excerpt found(w.text() + t.vs, t.ve - t.vs);
          return op_err(err, TSJ_ERR_PATCH, op, "the value differs (found %s)", found.buf);
        }
        break;
      }
      case OP_REMOVE:
        if (op.path.empty()) return op_err(err, TSJ_ERR_PATCH, op, "the whole document cannot be removed");
        if (int rc = patch_remove(w, index, op, op.path, err)) return rc;
        break;
      case OP_REPLACE: {
        const size_t tokens = pointer_tokens(op.path), vd = tsj_depth(pm + op.vs, op.ve - op.vs);
        if (tokens + vd > max_depth) return too_deep(err, op, tokens, vd, max_depth);
        if (int rc = op_walk(w, index, op, op.path, Want::Value, t, err)) return rc;
        if (!w.splice(t.vs, t.ve - t.vs, {{pm + op.vs, op.ve - op.vs}})) return nomem(err);
        break;
      }
      case OP_ADD: {
        const size_t tokens = pointer_tokens(op.path), vd = tsj_depth(pm + op.vs, op.ve - op.vs);
        if (tokens + vd > max_depth) return too_deep(err, op, tokens, vd, max_depth);
        if (int rc = patch_add(w, index, op, pm + op.vs, op.ve - op.vs, err)) return rc;
        break;
      }
      case OP_MOVE:
      case OP_COPY: {
        if (int rc = op_walk(w, index, op, op.from, Want::Value, t, err)) return rc;
        if (op.kind == OP_MOVE && op.from == op.path) break;  // moves nothing
        moved.assign(w.text() + t.vs, t.ve - t.vs);
        const size_t tokens = pointer_tokens(op.path), vd = tsj_depth(moved.data(), moved.size());
        if (tokens + vd > max_depth) return too_deep(err, op, tokens, vd, max_depth);
        // ("from" "" moves into its own child unless "path" is "" too: refused above.)
        if (op.kind == OP_MOVE)
          if (int rc = patch_remove(w, index, op, op.from, err)) return rc;
        if (int rc = patch_add(w, index, op, moved.data(), moved.size(), err)) return rc;
        break;
      }
    }
  }
  report_paths(ops, on_path, ctx);
  clear_err(err);
  if (!w.changed()) return TSJ_OK;  // nothing changed: *out stays NULL
  *out = w.release(out_len ? out_len : &pn);
  return TSJ_OK;
}

const char *const kKindNames[] = {"null", "false", "true", "number", "string", "array", "object"};

// "an integer", "a string", ... for "expected X, found Y" messages.
const char *found_name(int kind) {
  switch (kind) {
    case TSJ_FALSE:
    case TSJ_TRUE: return "boolean";
    default: return kKindNames[kind];
  }
}

// Checks that v's kind matches the text (TSJ_ERR_INVALID_ARG) and is one of
// the wanted kinds (TSJ_ERR_TYPE, "expected <what>, found <kind>").
int check_span(const char *text, const tsj_span &v, unsigned kinds, const char *what, tsj_error *err) {
  if (!text) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "text is NULL");
  if (v.length == 0 || v.kind < TSJ_NULL || v.kind > TSJ_OBJECT || kind_of(text[v.offset]) != v.kind)
    return set_err(err, TSJ_ERR_INVALID_ARG, (long long)v.offset, "the span does not match the text");
  if (!(kinds & (1u << v.kind)))
    return set_err(err, TSJ_ERR_TYPE, (long long)v.offset, "expected %s, found %s", what, found_name(v.kind));
  return TSJ_OK;
}

// An integer's magnitude (at most UINT64_MAX), or a TSJ_ERR_TYPE / TSJ_ERR_RANGE error.
int span_integer(const char *text, const tsj_span &v, const char *type, bool *neg, uint64_t *mag, tsj_error *err) {
  if (int rc = check_span(text, v, 1u << TSJ_NUMBER, "an integer", err)) return rc;
  const char *s = text + v.offset;
  const Decimal d = parse_decimal(s, v.length);
  Excerpt shown(s, v.length);
  *neg = d.neg && !d.zero;
  *mag = 0;
  if (d.zero) return TSJ_OK;
  if ((d.big_exp && d.eneg) || (!d.big_exp && d.exp < 0))
    return set_err(err, TSJ_ERR_TYPE, (long long)v.offset, "expected an integer, found the number %s", shown.buf);
  if (d.big_exp || d.ndigits() + size_t(d.exp) > 20)
    return set_err(err, TSJ_ERR_RANGE, (long long)v.offset, "the number %s is out of range for %s", shown.buf, type);
  uint64_t x = 0;
  for (size_t k = 0; k < d.ndigits() + size_t(d.exp); k++) {
    const unsigned dg = k < d.ndigits() ? unsigned(d.digit(d.first + k) - '0') : 0;
    if (x > (UINT64_MAX - dg) / 10)
      return set_err(err, TSJ_ERR_RANGE, (long long)v.offset, "the number %s is out of range for %s", shown.buf,
                     type);
    x = x * 10 + dg;
  }
  *mag = x;
  return TSJ_OK;
}

}  // namespace

extern "C" {

int tsj_patch_apply(const char *doc, size_t len, const tsj_doc *index, const char *patch, size_t patch_len,
                    size_t max_depth, char **out, size_t *out_len, tsj_path_cb on_path, void *ctx,
                    tsj_error *err) {
  if (out) *out = nullptr;
  if (out_len) *out_len = 0;
  if (!out) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "out is NULL");
  if (!doc || !len) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "the document is NULL or empty");
  if (!patch && patch_len) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "patch is NULL");
  if (index && (index->text != doc || index->len != len))
    return set_err(err, TSJ_ERR_INVALID_ARG, -1, "the index is not over this document");
  try {
    return patch_apply(doc, len, index, patch, patch_len, max_depth, out, out_len, on_path, ctx, err);
  } catch (const std::bad_alloc &) {
    return nomem(err);
  } catch (...) {
    return internal_error(err, "unexpected exception");
  }
}

const char *tsj_kind_name(int kind) { return kind >= TSJ_NULL && kind <= TSJ_OBJECT ? kKindNames[kind] : "unknown"; }

int tsj_find_in(const char *text, size_t len, const tsj_doc *index, tsj_span base, const char *pointer,
                size_t pointer_len, tsj_span *out, tsj_error *err) {
  if (out) *out = tsj_span{0, 0, TSJ_NULL};
  if (!text || !len || !out) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "text or out is NULL");
  if (!pointer && pointer_len) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "pointer is NULL");
  if (index && (index->text != text || index->len != len))
    return set_err(err, TSJ_ERR_INVALID_ARG, -1, "the index is not over this text");
  if (base.length == 0 || base.offset >= len || base.length > len - base.offset ||
      base.kind != kind_of(text[base.offset]))
    return set_err(err, TSJ_ERR_INVALID_ARG, -1, "the base span does not match the text");
  try {
    Target t;
    if (int rc = walk(index, text, len, base.offset, pointer, pointer_len, Want::Value, t, err)) return rc;
    *out = tsj_span{t.vs, t.ve - t.vs, kind_of(text[t.vs])};
    clear_err(err);
    return TSJ_OK;
  } catch (const std::bad_alloc &) {
    return nomem(err);
  } catch (...) {
    return internal_error(err, "unexpected exception");
  }
}

int tsj_find(const char *text, size_t len, const tsj_doc *index, const char *pointer, size_t pointer_len,
             tsj_span *out, tsj_error *err) {
  if (!text || !len) {
    if (out) *out = tsj_span{0, 0, TSJ_NULL};
    return set_err(err, TSJ_ERR_INVALID_ARG, -1, "text or out is NULL");
  }
  return tsj_find_in(text, len, index, tsj_span{0, len, kind_of(text[0])}, pointer, pointer_len, out, err);
}

int tsj_span_int64(const char *text, tsj_span v, int64_t *out, tsj_error *err) {
  if (!out) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "out is NULL");
  *out = 0;
  bool neg;
  uint64_t mag;
  if (int rc = span_integer(text, v, "int64", &neg, &mag, err)) return rc;
  if (mag > (neg ? uint64_t(INT64_MAX) + 1 : uint64_t(INT64_MAX))) {
    Excerpt shown(text + v.offset, v.length);
    return set_err(err, TSJ_ERR_RANGE, (long long)v.offset, "the number %s is out of range for int64", shown.buf);
  }
  *out = neg ? int64_t(0 - mag) : int64_t(mag);
  clear_err(err);
  return TSJ_OK;
}

int tsj_span_uint64(const char *text, tsj_span v, uint64_t *out, tsj_error *err) {
  if (!out) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "out is NULL");
  *out = 0;
  bool neg;
  uint64_t mag;
  if (int rc = span_integer(text, v, "uint64", &neg, &mag, err)) return rc;
  if (neg) {
    Excerpt shown(text + v.offset, v.length);
    return set_err(err, TSJ_ERR_RANGE, (long long)v.offset, "the number %s is out of range for uint64", shown.buf);
  }
  *out = mag;
  clear_err(err);
  return TSJ_OK;
}

int tsj_span_double(const char *text, tsj_span v, double *out, tsj_error *err) {
  if (!out) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "out is NULL");
  *out = 0;
  if (int rc = check_span(text, v, 1u << TSJ_NUMBER, "a number", err)) return rc;
  try {
    static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", locale_t(0));
    if (!c_locale) return nomem(err);
    std::string num(text + v.offset, v.length);  // strtod needs a NUL
    double d = strtod_l(num.c_str(), nullptr, c_locale);
    if (std::isinf(d)) {
      Excerpt shown(text + v.offset, v.length);
      return set_err(err, TSJ_ERR_RANGE, (long long)v.offset, "the number %s is out of range for a double",
                     shown.buf);
    }
    *out = d;
    clear_err(err);
    return TSJ_OK;
  } catch (const std::bad_alloc &) {
    return nomem(err);
  }
}

int tsj_span_bool(const char *text, tsj_span v, int *out, tsj_error *err) {
  if (!out) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "out is NULL");
  *out = 0;
  if (int rc = check_span(text, v, 1u << TSJ_TRUE | 1u << TSJ_FALSE, "a boolean", err)) return rc;
  *out = v.kind == TSJ_TRUE;
  clear_err(err);
  return TSJ_OK;
}

int tsj_span_string(const char *text, tsj_span v, const char **out, size_t *out_len, char **owned,
                    tsj_error *err) {
  if (out) *out = nullptr;
  if (out_len) *out_len = 0;
  if (owned) *owned = nullptr;
  if (!out || !out_len || !owned) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "out, out_len or owned is NULL");
  if (int rc = check_span(text, v, 1u << TSJ_STRING, "a string", err)) return rc;
  const char *b = text + v.offset + 1, *e = text + v.offset + v.length - 1;
  if (!std::memchr(b, '\\', size_t(e - b))) {
    *out = b;
    *out_len = size_t(e - b);
    clear_err(err);
    return TSJ_OK;
  }
  char *res = static_cast<char *>(std::malloc(size_t(e - b) + 1));
  if (!res) return nomem(err);
  const size_t n = unescape(b, e, res);
  res[n] = '\0';
  *out = *owned = res;
  *out_len = n;
  clear_err(err);
  return TSJ_OK;
}

int tsj_span_count(const char *text, const tsj_doc *index, tsj_span v, size_t *out, tsj_error *err) {
  if (!out) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "out is NULL");
  *out = 0;
  if (int rc = check_span(text, v, 1u << TSJ_ARRAY | 1u << TSJ_OBJECT, "an array or an object", err)) return rc;
  if (index && index->text != text) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "the index is not over this text");
  const size_t n = v.offset + v.length;
  if (index) {
    const Container *ct = find_container(*index, uint32_t(v.offset));
    if (!ct) return set_err(err, TSJ_ERR_INVALID_ARG, (long long)v.offset, "the span does not match the index");
    *out = ct->count;
    clear_err(err);
    return TSJ_OK;
  }
  size_t count = 0, i = v.offset + 1;
  const bool obj = v.kind == TSJ_OBJECT;
  if (text[i] != ']' && text[i] != '}') {
    for (;;) {
      count++;
      bool ws = false;
      if (obj) i = string_end(text, i, n) + 2;
      i = value_end(text, i, n, &ws);
      if (text[i] != ',') break;
      i++;
    }
  }
  *out = count;
  clear_err(err);
  return TSJ_OK;
}

int tsj_span_next(const char *text, tsj_span container, size_t *cursor, tsj_span *key, tsj_span *value,
                  tsj_error *err) {
  if (key) *key = tsj_span{0, 0, TSJ_NULL};
  if (value) *value = tsj_span{0, 0, TSJ_NULL};
  if (!cursor || !value) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "cursor or value is NULL");
  if (int rc = check_span(text, container, 1u << TSJ_ARRAY | 1u << TSJ_OBJECT, "an array or an object", err))
    return rc;
  const size_t n = container.offset + container.length;
  size_t i = *cursor ? *cursor : container.offset + 1;
  if (i <= container.offset || i >= n) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "the cursor is not in the container");
  const bool obj = container.kind == TSJ_OBJECT;
  if (i == n - 1) {
    *cursor = i;
    return set_err(err, TSJ_ERR_NOT_FOUND, -1, obj ? "no more members" : "no more elements");
  }
  bool ws = false;
  if (obj) {
    if (text[i] != '"') return set_err(err, TSJ_ERR_INVALID_ARG, -1, "the cursor is not in the container");
    const size_t ke = string_end(text, i, n);
    if (key) *key = tsj_span{i, ke + 1 - i, TSJ_STRING};
    i = ke + 2;
  }
  const size_t e = value_end(text, i, n, &ws);
  *value = tsj_span{i, e - i, kind_of(text[i])};
  *cursor = text[e] == ',' ? e + 1 : e;
  clear_err(err);
  return TSJ_OK;
}

}  // extern "C"

// ---------------------------------------------------------------------------
// Trees (tsj_tree): a document kept in parts, so that a patch costs what it
// changes. Big containers are nodes: an array's elements in a persistent
// B-tree of up to kSeqMax per node, an object's members in a vector; every
// other value is a leaf of minified text. Nodes are immutable and shared
// between versions (reference counted): a patch copies the path to what it
// changes. Values inside a leaf are patched with patch_apply on the leaf's
// text. Anything the tree code does not do itself, and every failure, is
// left to patch_apply on the whole text (joined once and kept), so results,
// refusals and messages are exactly tsj_patch_apply's.

size_t tsj_tree_split_bytes = 4096;
size_t tsj_tree_fallbacks = 0;

namespace {

struct TRef {
  mutable std::atomic<uint32_t> refs{1};
  virtual ~TRef() = default;
};

template <class T>
class P {  // an intrusive reference
 public:
  P() = default;
  explicit P(T *t) : p_(t) {}  // adopts the first reference
  P(const P &o) : p_(o.p_) {
    if (p_) p_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  P(P &&o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  P &operator=(P o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~P() {
    if (p_ && p_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
  }
  T *get() const { return p_; }
  T *operator->() const { return p_; }
  T &operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  T *leak() {
    T *t = p_;
    p_ = nullptr;
    return t;
  }

 private:
  T *p_ = nullptr;
};

enum TreeKind : uint8_t { T_LEAF, T_ARRAY, T_OBJECT };

struct Seq;
struct TNode : TRef {
  uint8_t kind = T_LEAF;
  size_t len = 0;    // bytes of the value's minified text
  std::string text;  // T_LEAF: the minified text
  P<Seq> seq;        // T_ARRAY: the elements (null when there are none)
  struct Member {
    std::string qkey;  // the key as written, with its quotes
    std::string key;   // unescaped
    P<TNode> v;
  };
  std::vector<Member> members;         // T_OBJECT
  mutable std::atomic<char *> flat{nullptr};  // the whole text, once joined (tsj_tree_text)
  ~TNode() override { std::free(flat.load(std::memory_order_relaxed)); }
};

// A persistent B-tree of array elements.
constexpr size_t kSeqMax = 32;
struct Seq : TRef {
  bool leaf = true;
  size_t count = 0;  // elements below
  size_t bytes = 0;  // their texts' bytes
  std::vector<P<TNode>> items;  // leaf
  std::vector<P<Seq>> kids;     // inner
  void sum() {
    count = bytes = 0;
    if (leaf) {
      count = items.size();
      for (const auto &it : items) bytes += it->len;
    } else {
      for (const auto &k : kids) count += k->count, bytes += k->bytes;
    }
  }
};

P<Seq> seq_leaf(std::vector<P<TNode>> items) {
  P<Seq> s(new Seq);
  s->items = std::move(items);
  s->sum();
  return s;
}

P<Seq> seq_inner(std::vector<P<Seq>> kids) {
  P<Seq> s(new Seq);
  s->leaf = false;
  s->kids = std::move(kids);
  s->sum();
  return s;
}

P<Seq> seq_build(std::vector<P<TNode>> &&all) {
  if (all.empty()) return P<Seq>();
  std::vector<P<Seq>> level;
  for (size_t i = 0; i < all.size(); i += kSeqMax) {
    size_t e = std::min(all.size(), i + kSeqMax);
    level.push_back(seq_leaf(std::vector<P<TNode>>(std::make_move_iterator(all.begin() + i),
                                                   std::make_move_iterator(all.begin() + e))));
  }
  while (level.size() > 1) {
    std::vector<P<Seq>> up;
    for (size_t i = 0; i < level.size(); i += kSeqMax) {
      size_t e = std::min(level.size(), i + kSeqMax);
      up.push_back(seq_inner(std::vector<P<Seq>>(level.begin() + i, level.begin() + e)));
    }
    level.swap(up);
  }
  return level[0];
}

const P<TNode> &seq_get(const Seq *s, size_t i) {
  while (!s->leaf) {
    for (const auto &k : s->kids) {
      if (i < k->count) {
        s = k.get();
        break;
      }
      i -= k->count;
    }
  }
  return s->items[i];
}

// Which kid holds position i (for insert: i may equal the count: the last kid).
size_t seq_kid(const Seq *s, size_t &i, bool insert) {
  for (size_t k = 0; k < s->kids.size(); k++) {
    const size_t c = s->kids[k]->count;
    if (i < c || (insert && i == c && k + 1 == s->kids.size())) return k;
    i -= c;
  }
  return s->kids.size() - 1;
}

P<Seq> seq_set(const P<Seq> &s, size_t i, P<TNode> v) {
  if (s->leaf) {
    std::vector<P<TNode>> items = s->items;
    items[i] = std::move(v);
    return seq_leaf(std::move(items));
  }
  size_t k = seq_kid(s.get(), i, false);
  std::vector<P<Seq>> kids = s->kids;
  kids[k] = seq_set(kids[k], i, std::move(v));
  return seq_inner(std::move(kids));
}

// Inserts v before position i; a node that grows past 2 * kSeqMax is split
// in two (*right gets the second half).
P<Seq> seq_insert_at(const P<Seq> &s, size_t i, P<TNode> v, P<Seq> *right) {
  if (s->leaf) {
    std::vector<P<TNode>> items;
    items.reserve(s->items.size() + 1);
    items.insert(items.end(), s->items.begin(), s->items.begin() + i);
    items.push_back(std::move(v));
    items.insert(items.end(), s->items.begin() + i, s->items.end());
    if (items.size() > 2 * kSeqMax) {
      const size_t h = items.size() / 2;
      *right = seq_leaf(std::vector<P<TNode>>(items.begin() + h, items.end()));
      items.resize(h);
    }
    return seq_leaf(std::move(items));
  }
  size_t k = seq_kid(s.get(), i, true);
  std::vector<P<Seq>> kids = s->kids;
  P<Seq> split;
  kids[k] = seq_insert_at(kids[k], i, std::move(v), &split);
  if (split) kids.insert(kids.begin() + k + 1, std::move(split));
  if (kids.size() > 2 * kSeqMax) {
    const size_t h = kids.size() / 2;
    *right = seq_inner(std::vector<P<Seq>>(kids.begin() + h, kids.end()));
    kids.resize(h);
  }
  return seq_inner(std::move(kids));
}

P<Seq> seq_insert(const P<Seq> &s, size_t i, P<TNode> v) {
  if (!s) return seq_leaf({std::move(v)});
  P<Seq> right;
  P<Seq> left = seq_insert_at(s, i, std::move(v), &right);
  if (!right) return left;
  return seq_inner({std::move(left), std::move(right)});
}

// Removes position i; null when nothing is left (empty nodes are dropped).
P<Seq> seq_erase_at(const P<Seq> &s, size_t i) {
  if (s->leaf) {
    if (s->items.size() == 1) return P<Seq>();
    std::vector<P<TNode>> items = s->items;
    items.erase(items.begin() + i);
    return seq_leaf(std::move(items));
  }
  size_t k = seq_kid(s.get(), i, false);
  std::vector<P<Seq>> kids = s->kids;
  P<Seq> kid = seq_erase_at(kids[k], i);
  if (kid) kids[k] = std::move(kid);
  else kids.erase(kids.begin() + k);
  if (kids.empty()) return P<Seq>();
  return seq_inner(std::move(kids));
}

P<Seq> seq_erase(const P<Seq> &s, size_t i) {
  P<Seq> r = seq_erase_at(s, i);
  while (r && !r->leaf && r->kids.size() == 1) r = P<Seq>(r->kids[0]);
  return r;
}

template <class F>
void seq_each(const Seq *s, F &&f) {
  if (!s) return;
  if (s->leaf) {
    for (const auto &it : s->items) f(it.get());
  } else {
    for (const auto &k : s->kids) seq_each(k.get(), f);
  }
}

void node_sum(TNode &n) {
  if (n.kind == T_ARRAY) {
    const size_t c = n.seq ? n.seq->count : 0;
    n.len = 2 + (n.seq ? n.seq->bytes : 0) + (c ? c - 1 : 0);
  } else if (n.kind == T_OBJECT) {
    n.len = 2 + (n.members.empty() ? 0 : n.members.size() - 1);
    for (const auto &m : n.members) n.len += m.qkey.size() + 1 + m.v->len;
  }
}

P<TNode> make_leaf(const char *s, size_t n) {
  P<TNode> t(new TNode);
  t->text.assign(s, n);
  t->len = n;
  return t;
}

constexpr size_t kTreeMaxMembers = 256;  // bigger objects stay text: their member vector would be copied per patch

// The tree of the validated minified value m[s, e) (m is n bytes).
P<TNode> tree_build(const char *m, size_t n, size_t s, size_t e) {
  const size_t len = e - s;
  bool ws = false;
  if (len >= tsj_tree_split_bytes && len > 2 && m[s] == '[') {
    std::vector<P<TNode>> all;
    for (size_t i = s + 1;;) {
      const size_t ve = value_end(m, i, n, &ws);
      all.push_back(tree_build(m, n, i, ve));
      if (m[ve] != ',') break;
      i = ve + 1;
    }
    P<TNode> t(new TNode);
    t->kind = T_ARRAY;
    t->seq = seq_build(std::move(all));
    node_sum(*t);
    return t;
  }
  if (len >= tsj_tree_split_bytes && len > 2 && m[s] == '{') {
    std::vector<TNode::Member> members;
    for (size_t i = s + 1;;) {
      if (members.size() >= kTreeMaxMembers) return make_leaf(m + s, len);
      const size_t ke = string_end(m, i, n), vs = ke + 2, ve = value_end(m, vs, n, &ws);
      TNode::Member mb;
      mb.qkey.assign(m + i, ke + 1 - i);
      mb.key.resize(ke - i - 1);
      mb.key.resize(unescape(m + i + 1, m + ke, &mb.key[0]));
      mb.v = tree_build(m, n, vs, ve);
      members.push_back(std::move(mb));
      if (m[ve] != ',') break;
      i = ve + 1;
    }
    P<TNode> t(new TNode);
    t->kind = T_OBJECT;
    t->members = std::move(members);
    node_sum(*t);
    return t;
  }
  return make_leaf(m + s, len);
}

P<TNode> tree_of(const char *v, size_t vn) { return tree_build(v, vn, 0, vn); }

char *tree_write(const TNode *t, char *o) {
  switch (t->kind) {
    case T_LEAF:
      std::memcpy(o, t->text.data(), t->text.size());
      return o + t->text.size();
    case T_ARRAY: {
      *o++ = '[';
      bool first = true;
      seq_each(t->seq.get(), [&](const TNode *c) {
        if (!first) *o++ = ',';
        first = false;
        o = tree_write(c, o);
      });
      *o++ = ']';
      return o;
    }
    default: {
      *o++ = '{';
      for (size_t k = 0; k < t->members.size(); k++) {
        if (k) *o++ = ',';
        const auto &mb = t->members[k];
        std::memcpy(o, mb.qkey.data(), mb.qkey.size());
        o += mb.qkey.size();
        *o++ = ':';
        o = tree_write(mb.v.get(), o);
      }
      *o++ = '}';
      return o;
    }
  }
}

std::string tree_string(const TNode *t) {
  if (t->kind == T_LEAF) return t->text;
  std::string s(t->len, '\0');
  tree_write(t, &s[0]);
  return s;
}

// The tokens of a valid RFC 6901 pointer, unescaped, and where each starts
// (its '/') in the pointer.
struct Tokens {
  std::vector<std::string> tok;
  std::vector<size_t> at;
};

void split_pointer(const std::string &p, Tokens &t) {
  for (size_t i = 0; i < p.size();) {
    t.at.push_back(i);
    std::string s;
    size_t j = i + 1;
    for (; j < p.size() && p[j] != '/'; j++) {
      if (p[j] == '~') {
        s += p[j + 1] == '1' ? '/' : '~';
        j++;
      } else {
        s += p[j];
      }
    }
    t.tok.push_back(std::move(s));
    i = j;
  }
}

// An array index token (decimal, no leading zero) below `limit`; kNone otherwise.
size_t array_index(const std::string &tok, size_t limit) {
  if (tok.empty() || tok.size() > 18 || (tok.size() > 1 && tok[0] == '0')) return kNone;
  size_t x = 0;
  for (char c : tok) {
    if (c < '0' || c > '9') return kNone;
    x = x * 10 + size_t(c - '0');
  }
  return x < limit ? x : kNone;
}

long long member_of(const TNode *t, const std::string &key) {
  for (size_t k = 0; k < t->members.size(); k++)
    if (t->members[k].key == key) return (long long)k;
  return -1;
}

// The child of node t named by tok, or null.
const TNode *tree_child(const TNode *t, const std::string &tok) {
  if (t->kind == T_ARRAY) {
    const size_t i = array_index(tok, t->seq ? t->seq->count : 0);
    return i == kNone ? nullptr : seq_get(t->seq.get(), i).get();
  }
  const long long k = member_of(t, tok);
  return k < 0 ? nullptr : t->members[size_t(k)].v.get();
}

// The pointer relative to token k of p: p from token k's '/'.
std::string rest_of(const std::string &p, const Tokens &tk, size_t k) { return k < tk.tok.size() ? p.substr(tk.at[k]) : std::string(); }

// The minified text of the value at pointer p in the tree; false if there is none.
bool tree_value(const TNode *t, const std::string &p, std::string &out) {
  Tokens tk;
  split_pointer(p, tk);
  size_t k = 0;
  for (; k < tk.tok.size() && t->kind != T_LEAF; k++) {
    t = tree_child(t, tk.tok[k]);
    if (!t) return false;
  }
  if (k == tk.tok.size()) {
    out = tree_string(t);
    return true;
  }
  const std::string rel = rest_of(p, tk, k);
  Target tg;
  tsj_error e;
  if (walk(nullptr, t->text.data(), t->text.size(), 0, rel.data(), rel.size(), Want::Value, tg, &e)) return false;
  out.assign(t->text.data() + tg.vs, tg.ve - tg.vs);
  return true;
}

// The result of a change below a node: the new node, or "not done here".
enum { kTreeDone = 0, kTreeFallback = -1 };

// Appends a JSON string of s to o.
void quote_append(std::string &o, const std::string &s) {
  const size_t at = o.size();
  o.resize(at + quoted_len(s.data(), s.size()));
  quote_into(s.data(), s.size(), &o[at]);
}

// One operation (add, remove or replace; v the value's text for add and
// replace) at token k and below of node t; *out is the new node.
int tree_op(const P<TNode> &t, int kind, const std::string &path, const Tokens &tk, size_t k, const char *v,
            size_t vn, P<TNode> &out) {
  const size_t last = tk.tok.size() - 1;
  if (t->kind == T_LEAF) {
    // The rest of the path inside the leaf's text: a one-operation patch.
    std::string patch = "[{\"op\":\"";
    patch += kOpNames[kind];
    patch += "\",\"path\":";
    quote_append(patch, rest_of(path, tk, k));
    if (kind != OP_REMOVE) {
      patch += ",\"value\":";
      patch.append(v, vn);
    }
    patch += "}]";
    char *res = nullptr;
    size_t rn = 0;
    tsj_error e;
    if (patch_apply(t->text.data(), t->text.size(), nullptr, patch.data(), patch.size(), TSJ_MAX_DEPTH, &res, &rn,
                    nullptr, nullptr, &e))
      return kTreeFallback;
    if (!res) {
      out = t;
      return kTreeDone;
    }
    struct Freer {
      char *p;
      ~Freer() { std::free(p); }
    } freer{res};
    out = tree_of(res, rn);
    return kTreeDone;
  }
  P<TNode> n(new TNode);
  n->kind = t->kind;
  if (t->kind == T_ARRAY) {
    const size_t count = t->seq ? t->seq->count : 0;
    const std::string &tok = tk.tok[k];
    if (k < last) {
      const size_t i = array_index(tok, count);
      if (i == kNone) return kTreeFallback;
      P<TNode> child;
      if (int rc = tree_op(seq_get(t->seq.get(), i), kind, path, tk, k + 1, v, vn, child)) return rc;
      n->seq = seq_set(t->seq, i, std::move(child));
    } else if (kind == OP_ADD) {
      const size_t i = tok == "-" ? count : array_index(tok, count + 1);
      if (i == kNone) return kTreeFallback;
      n->seq = seq_insert(t->seq, i, tree_of(v, vn));
    } else {
      const size_t i = array_index(tok, count);
      if (i == kNone) return kTreeFallback;
      n->seq = kind == OP_REMOVE ? seq_erase(t->seq, i) : seq_set(t->seq, i, tree_of(v, vn));
    }
  } else {
    n->members = t->members;
    const long long m = member_of(t.get(), tk.tok[k]);
    if (k < last) {
      if (m < 0) return kTreeFallback;
      P<TNode> child;
      if (int rc = tree_op(t->members[size_t(m)].v, kind, path, tk, k + 1, v, vn, child)) return rc;
      n->members[size_t(m)].v = std::move(child);
    } else if (m >= 0) {
      if (kind == OP_REMOVE) n->members.erase(n->members.begin() + m);
      else n->members[size_t(m)].v = tree_of(v, vn);
    } else {
      if (kind != OP_ADD) return kTreeFallback;
      TNode::Member mb;
      quote_append(mb.qkey, tk.tok[k]);
      mb.key = tk.tok[k];
      mb.v = tree_of(v, vn);
      n->members.push_back(std::move(mb));
    }
  }
  node_sum(*n);
  out = std::move(n);
  return kTreeDone;
}

int tree_apply(P<TNode> &root, int kind, const std::string &path, const char *v, size_t vn) {
  if (path.empty()) {
    if (kind == OP_REMOVE) return kTreeFallback;
    root = tree_of(v, vn);
    return kTreeDone;
  }
  Tokens tk;
  split_pointer(path, tk);
  P<TNode> out;
  if (int rc = tree_op(root, kind, path, tk, 0, v, vn, out)) return rc;
  root = std::move(out);
  return kTreeDone;
}

// Applies the patch to the tree: TSJ_OK (*out the new root, or null when
// nothing changed), kTreeFallback, or an error about the patch itself.
int tree_patch(const P<TNode> &root, const char *patch, size_t patch_len, size_t max_depth, P<TNode> &out,
               tsj_path_cb on_path, void *ctx, tsj_error *err) {
  Lease lease(patch_len);
  const char *pm = nullptr;
  size_t pn = 0;
  std::vector<PatchOp> ops;
  if (int rc = read_patch(lease, patch, patch_len, pm, pn, ops, err)) return rc;
  if (max_depth > TSJ_MAX_DEPTH) max_depth = TSJ_MAX_DEPTH;
  P<TNode> t = root;
  bool changed = false;
  std::string moved;
  for (const PatchOp &op : ops) {
    switch (op.kind) {
      case OP_TEST:
        if (!tree_value(t.get(), op.path, moved) || !json_equal(moved.data(), moved.size(), 0, pm, pn, op.vs))
          return kTreeFallback;
        break;
      case OP_REMOVE:
        if (tree_apply(t, OP_REMOVE, op.path, nullptr, 0)) return kTreeFallback;
        changed = true;
        break;
      case OP_ADD:
      case OP_REPLACE: {
        const size_t vd = tsj_depth(pm + op.vs, op.ve - op.vs);
        if (pointer_tokens(op.path) + vd > max_depth) return kTreeFallback;
        if (tree_apply(t, op.kind, op.path, pm + op.vs, op.ve - op.vs)) return kTreeFallback;
        changed = true;
        break;
      }
      case OP_MOVE:
      case OP_COPY: {
        if (!tree_value(t.get(), op.from, moved)) return kTreeFallback;
        if (op.kind == OP_MOVE && op.from == op.path) break;
        if (pointer_tokens(op.path) + tsj_depth(moved.data(), moved.size()) > max_depth) return kTreeFallback;
        if (op.kind == OP_MOVE && tree_apply(t, OP_REMOVE, op.from, nullptr, 0)) return kTreeFallback;
        if (tree_apply(t, OP_ADD, op.path, moved.data(), moved.size())) return kTreeFallback;
        changed = true;
        break;
      }
    }
  }
  report_paths(ops, on_path, ctx);
  clear_err(err);
  if (changed) out = std::move(t);
  return TSJ_OK;
}

const TNode *as_node(const tsj_tree *t) { return reinterpret_cast<const TNode *>(t); }
tsj_tree *as_tree(TNode *t) { return reinterpret_cast<tsj_tree *>(t); }


int tree_kind(const TNode *t) {
  if (t->kind == T_ARRAY) return TSJ_ARRAY;
  if (t->kind == T_OBJECT) return TSJ_OBJECT;
  return kind_of(t->text[0]);
}

void ref_of(const TNode *t, tsj_tree_ref *out) {
  if (t->kind == T_LEAF) {
    out->node = nullptr;
    out->text = t->text.data();
    out->text_len = t->text.size();
  } else {
    out->node = reinterpret_cast<const tsj_tree *>(t);
    out->text = nullptr;
    out->text_len = 0;
  }
  out->span = tsj_span{0, t->len, tree_kind(t)};
}

void ref_clear(tsj_tree_ref *r) {
  if (r) *r = tsj_tree_ref{nullptr, nullptr, 0, tsj_span{0, 0, TSJ_NULL}};
}

// The value at p[0..plen) below t, found as walk() finds it in t's text,
// with walk()'s codes, messages and offsets: through the nodes token by
// token, then walk() itself inside the leaf it reaches.
int tree_locate(const TNode *t, const char *p, size_t plen, tsj_tree_ref *out, tsj_error *err) {
  if (int rc = check_pointer(p, plen, err)) return rc;
  const std::string ptr(p, plen);
  Tokens tk;
  split_pointer(ptr, tk);
  for (size_t k = 0; k < tk.tok.size(); k++) {
    if (t->kind == T_LEAF) {
      Target tg;
      if (int rc = walk(nullptr, t->text.data(), t->text.size(), 0, p, plen, Want::Value, tg, err, tk.at[k])) return rc;
      ref_of(t, out);
      out->span = tsj_span{tg.vs, tg.ve - tg.vs, kind_of(t->text[tg.vs])};
      clear_err(err);
      return TSJ_OK;
    }
    const std::string &tok = tk.tok[k];
    const size_t pos = tk.at[k];
    if (t->kind == T_OBJECT) {
      const long long m = member_of(t, tok);
      if (m < 0) {
        Shown shown(tok.data(), tok.size()), at(p, pos);
        return set_err(err, TSJ_ERR_NOT_FOUND, (long long)pos, "no member %s in the object at %s", shown.buf, at.buf);
      }
      t = t->members[size_t(m)].v.get();
      continue;
    }
    // An array node: walk()'s checks, in its order.
    const size_t count = t->seq ? t->seq->count : 0;
    Shown shown(tok.data(), tok.size()), at(p, pos);
    if (tok == "-")
      return set_err(err, TSJ_ERR_NOT_FOUND, (long long)pos,
                     "\"-\" (the end of the array) is never found in the array at %s", at.buf);
    bool digits = !tok.empty();
    for (size_t j = 0; j < tok.size() && digits; j++) digits = is_digit(u8(tok[j]));
    if (!digits)
      return set_err(err, TSJ_ERR_NOT_FOUND, (long long)pos, "%s is not an array index in the array at %s", shown.buf,
                     at.buf);
    if (tok.size() > 1 && tok[0] == '0')
      return set_err(err, TSJ_ERR_NOT_FOUND, (long long)pos,
                     "%s is not an array index (leading zero) in the array at %s", shown.buf, at.buf);
    const size_t i = array_index(tok, count);
    if (i == kNone)
      return set_err(err, TSJ_ERR_NOT_FOUND, (long long)pos,
                     "index %s is out of range for the array of %zu elements at %s", shown.buf, count, at.buf);
    t = seq_get(t->seq.get(), i).get();
  }
  ref_of(t, out);
  clear_err(err);
  return TSJ_OK;
}

}  // namespace

extern "C" {

int tsj_tree_kind(const tsj_tree *tree) { return tree ? tree_kind(as_node(tree)) : TSJ_NULL; }

int tsj_tree_find(const tsj_tree *tree, const char *pointer, size_t pointer_len, tsj_tree_ref *out, tsj_error *err) {
  ref_clear(out);
  if (!tree || !out) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "tree or out is NULL");
  if (!pointer && pointer_len) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "pointer is NULL");
  try {
    return tree_locate(as_node(tree), pointer ? pointer : "", pointer_len, out, err);
  } catch (const std::bad_alloc &) {
    return nomem(err);
  } catch (...) {
    return internal_error(err, "unexpected exception");
  }
}

size_t tsj_tree_count(const tsj_tree *tree) {
  if (!tree) return 0;
  const TNode *t = as_node(tree);
  if (t->kind == T_ARRAY) return t->seq ? t->seq->count : 0;
  if (t->kind == T_OBJECT) return t->members.size();
  return 0;
}

int tsj_tree_child(const tsj_tree *tree, size_t i, tsj_tree_ref *key, tsj_tree_ref *value, tsj_error *err) {
  ref_clear(key);
  ref_clear(value);
  if (!tree || !value) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "tree or value is NULL");
  const TNode *t = as_node(tree);
  if (t->kind == T_LEAF) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "the tree is not split");
  const bool obj = t->kind == T_OBJECT;
  if (i >= tsj_tree_count(tree)) return set_err(err, TSJ_ERR_NOT_FOUND, -1, obj ? "no more members" : "no more elements");
  if (obj) {
    const TNode::Member &m = t->members[i];
    ref_of(m.v.get(), value);
    if (key) *key = tsj_tree_ref{nullptr, m.qkey.data(), m.qkey.size(), tsj_span{0, m.qkey.size(), TSJ_STRING}};
  } else {
    ref_of(seq_get(t->seq.get(), i).get(), value);
  }
  clear_err(err);
  return TSJ_OK;
}

}  // extern "C"

namespace {
}  // namespace

extern "C" {

tsj_tree *tsj_tree_make(const char *minified, size_t len, tsj_error *err) {
  if (!minified || !len) {
    set_err(err, TSJ_ERR_INVALID_ARG, -1, "the document is NULL or empty");
    return nullptr;
  }
  try {
    P<TNode> t = tree_of(minified, len);
    clear_err(err);
    return as_tree(t.leak());
  } catch (const std::bad_alloc &) {
    nomem(err);
    return nullptr;
  } catch (...) {
    internal_error(err, "unexpected exception");
    return nullptr;
  }
}

void tsj_tree_free(tsj_tree *tree) {
  if (tree) P<TNode> adopt(const_cast<TNode *>(as_node(tree)));
}

size_t tsj_tree_length(const tsj_tree *tree) { return tree ? as_node(tree)->len : 0; }

const char *tsj_tree_text(const tsj_tree *tree, size_t *len) {
  if (len) *len = 0;
  if (!tree) return nullptr;
  const TNode *t = as_node(tree);
  if (len) *len = t->len;
  if (char *f = t->flat.load(std::memory_order_acquire)) return f;
  char *f = static_cast<char *>(std::malloc(t->len + 1));
  if (!f) return nullptr;
  if (t->kind == T_LEAF) std::memcpy(f, t->text.data(), t->len);
  else tree_write(t, f);
  f[t->len] = '\0';
  char *expected = nullptr;
  if (t->flat.compare_exchange_strong(expected, f, std::memory_order_acq_rel)) return f;
  std::free(f);
  return expected;
}

int tsj_tree_is_split(const tsj_tree *tree) { return tree && as_node(tree)->kind != T_LEAF; }

int tsj_tree_patch(const tsj_tree *tree, const char *patch, size_t patch_len, size_t max_depth, tsj_tree **out,
                   tsj_path_cb on_path, void *ctx, tsj_error *err) {
  if (out) *out = nullptr;
  if (!out) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "out is NULL");
  if (!tree) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "the tree is NULL");
  if (!patch && patch_len) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "patch is NULL");
  try {
    P<TNode> root(const_cast<TNode *>(as_node(tree)));
    root->refs.fetch_add(1, std::memory_order_relaxed);  // root holds its own reference
    P<TNode> result;
    int rc = tree_patch(root, patch, patch_len, max_depth, result, on_path, ctx, err);
    if (rc == kTreeFallback) {
      __atomic_add_fetch(&tsj_tree_fallbacks, 1, __ATOMIC_RELAXED);
      // Not done here (or a failure, whose message tsj_patch_apply gives).
      size_t n = 0;
      const char *text = tsj_tree_text(tree, &n);
      if (!text) return nomem(err);
      char *res = nullptr;
      size_t rn = 0;
      rc = patch_apply(text, n, nullptr, patch, patch_len, max_depth, &res, &rn, on_path, ctx, err);
      if (rc) return rc;
      if (!res) return TSJ_OK;
      struct Freer {
        char *p;
        ~Freer() { std::free(p); }
      } freer{res};
      result = tree_of(res, rn);
    }
    if (rc) return rc;
    if (result) *out = as_tree(result.leak());
    return TSJ_OK;
  } catch (const std::bad_alloc &) {
    return nomem(err);
  } catch (...) {
    return internal_error(err, "unexpected exception");
  }
}

int tsj_tree_at_pointer(const tsj_tree *tree, const char *pointer, size_t pointer_len, char **out, size_t *out_len,
                        tsj_error *err) {
  if (out) *out = nullptr;
  if (out_len) *out_len = 0;
  if (!tree || !out) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "tree or out is NULL");
  if (!pointer && pointer_len) return set_err(err, TSJ_ERR_INVALID_ARG, -1, "pointer is NULL");
  try {
    tsj_tree_ref ref;
    if (int rc = tree_locate(as_node(tree), pointer ? pointer : "", pointer_len, &ref, err)) return rc;
    std::string whole;
    const char *v;
    size_t vn;
    if (ref.node) {
      whole = tree_string(as_node(ref.node));
      v = whole.data();
      vn = whole.size();
    } else {
      v = ref.text + ref.span.offset;
      vn = ref.span.length;
    }
    char *r = static_cast<char *>(std::malloc(vn + 1));
    if (!r) return nomem(err);
    std::memcpy(r, v, vn);
    r[vn] = '\0';
    *out = r;
    if (out_len) *out_len = vn;
    return TSJ_OK;
  } catch (const std::bad_alloc &) {
    return nomem(err);
  } catch (...) {
    return internal_error(err, "unexpected exception");
  }
}

}  // extern "C"
