/*
 * fuzz_replicate_entry - replicate.so's reader of log entries and snapshots
 * (Plugins/replicate/entry.c: pure functions, compiled into this harness;
 * no Redis, no store).
 *
 * The input is lines; the first is the replica's position and number, "POS
 * SEQ" (anything else: nothing applied, "" and 0). Then one record a line,
 * columns separated by tabs (a column may hold any byte but tab and newline):
 *   E ID NAME VALUE ...   an entry as the log gives it (names and values
 *                         alternate, any number of columns)
 *   S STATE POS N         a snapshot; missing columns, and a column that is
 *                         the one byte 0xFF, are absent (a nil reply)
 *   C COUNTER             the counter's text for what follows (no column: absent)
 *   K                     rp_check_counter on the entries accepted so far
 *   P PARTS DATA          a NATS message's "Ts-Parts" header (0xFF: absent)
 *                         and its data (NUL bytes allowed): rp_count_parts
 *
 * Invariants (against a model written here, without entry.c's parsing):
 * - rp_parse_entry accepts exactly the entries entry.h describes (a stream
 *   id, the fields "n" and "a" in that order, n from 1 to 2^53 - 1 in
 *   canonical decimal, an action without NUL), and then gives back the id,
 *   the number and the action's bytes; a refusal is RP_DAMAGED with a
 *   message that names the stream, is printable ASCII and leaves no action;
 * - rp_step_of agrees with the model (ids compared as numbers: by length,
 *   then as text), and applying in its order only ever moves forward by one
 *   number and to a later position: a reader that follows it cannot loop;
 * - rp_parse_snapshot accepts all three values or none, each well formed;
 *   rp_check_snapshot and rp_check_counter agree with the model; the counter
 *   check keeps exactly the entries before the first one past the counter;
 * - rp_count_parts accepts a message of several actions exactly when its
 *   header is a count from 2 to RP_PARTS_MAX in canonical decimal and its
 *   data that many non-empty texts separated by NUL bytes (no header: one
 *   action), and gives that count; a refusal is RP_DAMAGED with a message;
 * - rp_show's output fits its buffer and is printable ASCII.
 * Leaks are checked (LeakSanitizer).
 */
#define _POSIX_C_SOURCE 200809L

#include "../../Plugins/replicate/entry.c"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIL(...)                                                             \
    do {                                                                      \
        fprintf(stderr, "\nINVARIANT VIOLATED at %s:%d: ", __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                                         \
        fprintf(stderr, "\n");                                                \
        fflush(stderr);                                                       \
        __builtin_trap();                                                     \
    } while (0)
#define CHECK(cond, ...)                 \
    do {                                 \
        if (!(cond)) FAIL(__VA_ARGS__);  \
    } while (0)

#define MAX_COLUMNS 16
#define MAX_ENTRIES 64

/* ---- The model ------------------------------------------------------------ */

/* Canonical decimal digits (no sign, no leading zero; "0" allowed when
 * zero_ok) of at most the value `max` (given as its digits). */
static int model_decimal(const char *s, size_t len, const char *max, int zero_ok) {
    size_t i, mlen = strlen(max);
    if (len == 0) return 0;
    for (i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    if (s[0] == '0') return zero_ok && len == 1;
    if (len != mlen) return len < mlen;
    return memcmp(s, max, len) <= 0;
}

static int model_seq(rp_text t, uint64_t *out) {
    size_t i;
    uint64_t v = 0;
    if (t.str == NULL || !model_decimal(t.str, t.len, "9007199254740991", 0)) return 0;
    for (i = 0; i < t.len; i++) v = v * 10 + (uint64_t)(t.str[i] - '0');
    *out = v;
    return 1;
}

static int model_id(rp_text t) {
    const char *dash;
    if (t.str == NULL) return 0;
    dash = memchr(t.str, '-', t.len);
    return dash != NULL && model_decimal(t.str, (size_t)(dash - t.str), "18446744073709551615", 1) &&
           model_decimal(dash + 1, t.len - (size_t)(dash + 1 - t.str), "18446744073709551615", 1);
}

/* Compares two canonical digit strings. */
static int digits_cmp(const char *a, size_t la, const char *b, size_t lb) {
    if (la != lb) return la < lb ? -1 : 1;
    return memcmp(a, b, la) < 0 ? -1 : memcmp(a, b, la) > 0;
}

/* Orders positions ("" first; ids valid by model_id). */
static int model_cmp(const char *a, const char *b) {
    const char *da, *db;
    int c;
    if (!a[0] || !b[0]) return (a[0] != 0) - (b[0] != 0);
    da = strchr(a, '-');
    db = strchr(b, '-');
    c = digits_cmp(a, (size_t)(da - a), b, (size_t)(db - b));
    if (c) return c;
    return digits_cmp(da + 1, strlen(da + 1), db + 1, strlen(db + 1));
}

static int is_word(rp_text t, const char *w) { return t.str && t.len == strlen(w) && memcmp(t.str, w, t.len) == 0; }

static void check_message(const char *err, const char *what) {
    size_t i, n = strnlen(err, RP_ERR_SIZE);
    CHECK(n < RP_ERR_SIZE, "%s: the message is not NUL-terminated within RP_ERR_SIZE", what);
    CHECK(strncmp(err, "replicate: stream \"fz\" is damaged: ", 35) == 0, "%s: the message \"%s\" does not say so", what,
          err);
    for (i = 0; i < n; i++)
        CHECK(err[i] >= 0x20 && err[i] < 0x7f, "%s: the message has byte 0x%02x at %zu: \"%s\"", what,
              (unsigned char)err[i], i, err);
}

static void check_show(rp_text t, size_t size) {
    char out[80];
    size_t i, n;
    memset(out, 'Z', sizeof out);
    rp_show(t, out, size);
    n = strnlen(out, size);
    CHECK(n < size, "rp_show wrote past its buffer of %zu bytes", size);
    CHECK(out[size] == 'Z' || size == sizeof out, "rp_show wrote past its buffer of %zu bytes", size);
    for (i = 0; i < n; i++)
        CHECK(out[i] >= 0x20 && out[i] < 0x7f && out[i] != '"', "rp_show gave byte 0x%02x", (unsigned char)out[i]);
}

/* ---- Records ---------------------------------------------------------------- */

/* Splits a line (not NUL-terminated) at tabs. */
static size_t columns(const char *line, size_t len, rp_text *cols) {
    size_t n = 0, start = 0, i;
    for (i = 0; i <= len && n < MAX_COLUMNS; i++) {
        if (i == len || line[i] == '\t') {
            cols[n].str = line + start;
            cols[n].len = i - start;
            if (cols[n].len == 1 && (unsigned char)cols[n].str[0] == 0xff) cols[n].str = NULL, cols[n].len = 0;
            n++;
            start = i + 1;
        }
    }
    return n;
}

typedef struct world {
    char pos[RP_POS_SIZE];
    uint64_t seq;
    rp_batch batch;
    size_t cap;
    rp_text counter;
} world;

static void entry_record(world *w, const rp_text *cols, size_t n) {
    rp_entry e;
    char err[RP_ERR_SIZE];
    rp_text id = n > 1 ? cols[1] : (rp_text){NULL, 0};
    const rp_text *fields = cols + 2;
    size_t count = n > 2 ? n - 2 : 0;
    uint64_t seq = 0;
    int valid, rc;
    enum rp_step step, want;
    valid = model_id(id) && count == 4 && is_word(fields[0], "n") && is_word(fields[2], "a") &&
            model_seq(fields[1], &seq) && fields[3].str != NULL && fields[3].len > 0 &&
            memchr(fields[3].str, '\0', fields[3].len) == NULL;
    memset(err, 0, sizeof err);
    rc = rp_parse_entry("fz", id, fields, count, &e, err);
    if (count > 0) {
        check_show(fields[count - 1], 4 + fields[count - 1].len % 70);
    }
    if (!valid) {
        CHECK(rc == RP_DAMAGED, "an entry the model refuses was answered %d", rc);
        CHECK(e.action == NULL, "a refused entry left an action");
        check_message(err, "rp_parse_entry");
        return;
    }
    CHECK(rc == 0, "an entry the model accepts was refused: %s", err);
    CHECK(strlen(e.pos) == id.len && memcmp(e.pos, id.str, id.len) == 0, "the id read back differs");
    CHECK(e.seq == seq, "the number read back is %llu, not %llu", (unsigned long long)e.seq, (unsigned long long)seq);
    CHECK(strlen(e.action) == fields[3].len && memcmp(e.action, fields[3].str, fields[3].len) == 0,
          "the action read back differs");
    /* The step, against the model, from the replica's position. */
    step = rp_step_of(w->pos, w->seq, &e);
    if (model_cmp(e.pos, w->pos) <= 0) want = RP_SKIP;
    else if (e.seq == w->seq + 1) want = RP_APPLY;
    else if (e.seq > w->seq + 1) want = RP_GAP;
    else want = RP_BACKWARD;
    CHECK(step == want, "rp_step_of(%s, %llu, entry %s number %llu) is %d, not %d", w->pos[0] ? w->pos : "\"\"",
          (unsigned long long)w->seq, e.pos, (unsigned long long)e.seq, (int)step, (int)want);
    if (step == RP_APPLY) {
        CHECK(model_cmp(e.pos, w->pos) > 0 && e.seq == w->seq + 1, "applying does not move forward");
        memcpy(w->pos, e.pos, RP_POS_SIZE);
        w->seq = e.seq;
    }
    if (w->batch.count == MAX_ENTRIES) {
        free(e.action);
        return;
    }
    w->batch.items[w->batch.count++] = e;
}

static void snapshot_record(world *w, const rp_text *cols, size_t n) {
    rp_text none = {NULL, 0};
    rp_text state = n > 1 ? cols[1] : none, pos = n > 2 ? cols[2] : none, num = n > 3 ? cols[3] : none;
    char err[RP_ERR_SIZE], spos[RP_POS_SIZE];
    char *sstate = NULL;
    uint64_t seq = 0, mseq = 0, counter = 0;
    int found = -1, rc, valid, all_absent, counter_ok;
    const rp_entry *at = NULL, *after = NULL;
    size_t i;
    all_absent = state.str == NULL && pos.str == NULL && num.str == NULL;
    valid = state.str != NULL && pos.str != NULL && num.str != NULL && model_id(pos) && model_seq(num, &mseq) &&
            state.len > 0 && memchr(state.str, '\0', state.len) == NULL;
    memset(err, 0, sizeof err);
    rc = rp_parse_snapshot("fz", state, pos, num, &found, &sstate, spos, &seq, err);
    if (all_absent) {
        CHECK(rc == 0 && found == 0 && sstate == NULL, "no snapshot: rc %d, found %d", rc, found);
        return;
    }
    if (!valid) {
        CHECK(rc == RP_DAMAGED && found == 0 && sstate == NULL, "a snapshot the model refuses: rc %d, found %d", rc,
              found);
        check_message(err, "rp_parse_snapshot");
        return;
    }
    CHECK(rc == 0 && found == 1, "a snapshot the model accepts was refused: %s", err);
    CHECK(seq == mseq && strlen(spos) == pos.len && memcmp(spos, pos.str, pos.len) == 0 &&
              strlen(sstate) == state.len && memcmp(sstate, state.str, state.len) == 0,
          "the snapshot read back differs");
    free(sstate);
    /* Against the entries read so far and the counter. */
    for (i = 0; i < w->batch.count; i++) {
        const rp_entry *e = &w->batch.items[i];
        if (at == NULL && model_cmp(e->pos, spos) == 0) at = e;
        if (after == NULL && model_cmp(e->pos, spos) > 0) after = e;
    }
    counter_ok = model_seq(w->counter, &counter);
    valid = counter_ok && counter >= seq && (at == NULL || at->seq == seq) && (after == NULL || after->seq == seq + 1);
    memset(err, 0, sizeof err);
    rc = rp_check_snapshot("fz", seq, spos, w->counter, at, after, err);
    CHECK(rc == (valid ? 0 : RP_DAMAGED), "rp_check_snapshot answered %d where the model says %s (%s)", rc,
          valid ? "fits" : "damaged", err);
    if (rc != 0) check_message(err, "rp_check_snapshot");
}

static void parts_record(rp_text *cols, size_t n) {
    char err[RP_ERR_SIZE];
    rp_text header = n > 1 ? cols[1] : (rp_text){NULL, 0}, data = n > 2 ? cols[2] : (rp_text){NULL, 0};
    size_t count = 0, want = 0, found = 0, length = 0, i;
    int valid, rc;
    /* The model: the count, then the parts counted by hand. */
    if (header.str == NULL) {
        valid = 1;
        want = 1;
    } else {
        char limit[16];
        snprintf(limit, sizeof limit, "%d", RP_PARTS_MAX);
        valid = model_decimal(header.str, header.len, limit, 0) && !(header.len == 1 && header.str[0] == '1');
        for (i = 0; valid && i < header.len; i++) want = want * 10 + (size_t)(header.str[i] - '0');
        if (valid) {
            int empty = data.str == NULL || data.len == 0;
            for (i = 0; !empty && i <= data.len; i++) {
                if (i == data.len || data.str[i] == '\0') {
                    empty |= length == 0;
                    found++;
                    length = 0;
                } else {
                    length++;
                }
            }
            valid = !empty && found == want;
        }
    }
    memset(err, 0, sizeof err);
    rc = rp_count_parts("fz", 7, header, data, &count, err);
    if (!valid) {
        CHECK(rc == RP_DAMAGED, "rp_count_parts accepted what the model refuses (count %zu)", count);
        check_message(err, "rp_count_parts");
        return;
    }
    CHECK(rc == 0 && count == want, "rp_count_parts answered %d, count %zu, where the model says %zu (%s)", rc, count,
          want, err);
}

static void counter_check(world *w) {
    char err[RP_ERR_SIZE];
    uint64_t counter = 0;
    size_t before = w->batch.count, keep = before, i;
    int rc, counted = model_seq(w->counter, &counter);
    if (before > 0 && !counted) keep = 0;
    for (i = 0; counted && i < before; i++) {
        if (w->batch.items[i].seq > counter) {
            keep = i;
            break;
        }
    }
    memset(err, 0, sizeof err);
    rc = rp_check_counter("fz", &w->batch, w->counter, err);
    CHECK(rc == (keep == before ? 0 : RP_DAMAGED), "rp_check_counter answered %d (model keeps %zu of %zu)", rc, keep,
          before);
    CHECK(w->batch.count == keep, "rp_check_counter kept %zu entries, the model %zu", w->batch.count, keep);
    if (rc != 0) check_message(err, "rp_check_counter");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data, *end = text + size, *line = text;
    world w;
    int first = 1;
    memset(&w, 0, sizeof w);
    w.batch.items = calloc(MAX_ENTRIES, sizeof *w.batch.items);
    if (w.batch.items == NULL) abort();
    while (line <= end) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t len = nl ? (size_t)(nl - line) : (size_t)(end - line);
        rp_text cols[MAX_COLUMNS];
        size_t n;
        if (first) {
            /* "POS SEQ": a position the model accepts and a number. */
            const char *space = memchr(line, ' ', len);
            rp_text p = {line, space ? (size_t)(space - line) : 0}, s = {space ? space + 1 : NULL, 0};
            if (space) s.len = len - p.len - 1;
            if (space && model_id(p) && model_seq(s, &w.seq)) {
                memcpy(w.pos, p.str, p.len);
                w.pos[p.len] = '\0';
            } else {
                w.seq = 0;
            }
            first = 0;
        } else if (len > 0) {
            n = columns(line, len, cols);
            if (is_word(cols[0], "E")) entry_record(&w, cols, n);
            else if (is_word(cols[0], "S")) snapshot_record(&w, cols, n);
            else if (is_word(cols[0], "C")) w.counter = n > 1 ? cols[1] : (rp_text){NULL, 0};
            else if (is_word(cols[0], "K")) counter_check(&w);
            else if (is_word(cols[0], "P")) parts_record(cols, n);
        }
        if (nl == NULL) break;
        line = nl + 1;
    }
    rp_batch_free(&w.batch);
    return 0;
}
