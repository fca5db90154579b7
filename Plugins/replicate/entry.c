/*
 * entry.c - see entry.h. No I/O, no global state.
 */
#include "entry.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void damaged(char *err, const char *stream, const char *format, ...) {
    va_list args;
    int n = snprintf(err, RP_ERR_SIZE, "replicate: stream \"%.200s\" is damaged: ", stream);
    if (n < 0 || n >= RP_ERR_SIZE) return;
    va_start(args, format);
    vsnprintf(err + n, RP_ERR_SIZE - (size_t)n, format, args);
    va_end(args);
}

void rp_show(rp_text text, char *out, size_t size) {
    static const char hex[] = "0123456789abcdef";
    size_t i, o = 0;
    if (text.str == NULL) {
        snprintf(out, size, "(none)");
        return;
    }
    for (i = 0; i < text.len; i++) {
        unsigned char c = (unsigned char)text.str[i];
        /* Room for this byte (up to 4) and "..." and the NUL. */
        if (o + 4 + 3 + 1 > size || i == 40) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '"') {
            out[o++] = (char)c;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
}

/* Decimal digits without sign or leading zero, at most `max`. */
static int parse_decimal(const char *s, size_t len, uint64_t max, uint64_t *out) {
    uint64_t v = 0;
    size_t i;
    if (len == 0 || (s[0] == '0' && len > 1)) return 0;
    for (i = 0; i < len; i++) {
        unsigned d;
        if (s[i] < '0' || s[i] > '9') return 0;
        d = (unsigned)(s[i] - '0');
        if (v > (max - d) / 10) return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

int rp_parse_id(rp_text text, uint64_t *ms, uint64_t *seq) {
    const char *dash;
    uint64_t a, b;
    if (text.str == NULL || text.len >= RP_POS_SIZE) return 0;
    dash = memchr(text.str, '-', text.len);
    if (dash == NULL || !parse_decimal(text.str, (size_t)(dash - text.str), UINT64_MAX, &a) ||
        !parse_decimal(dash + 1, text.len - (size_t)(dash + 1 - text.str), UINT64_MAX, &b))
        return 0;
    if (ms) *ms = a;
    if (seq) *seq = b;
    return 1;
}

int rp_compare_pos(const char *a, const char *b) {
    uint64_t am = 0, as = 0, bm = 0, bs = 0;
    rp_text ta, tb;
    if (a[0] == '\0' || b[0] == '\0') return (a[0] != '\0') - (b[0] != '\0');
    ta.str = a;
    ta.len = strlen(a);
    tb.str = b;
    tb.len = strlen(b);
    /* JetStream sequences: plain decimals. */
    if (parse_decimal(a, ta.len, UINT64_MAX, &am) && parse_decimal(b, tb.len, UINT64_MAX, &bm))
        return am < bm ? -1 : am > bm;
    am = 0;
    bm = 0;
    if (!rp_parse_id(ta, &am, &as) || !rp_parse_id(tb, &bm, &bs)) return strcmp(a, b);
    if (am != bm) return am < bm ? -1 : 1;
    if (as != bs) return as < bs ? -1 : 1;
    return 0;
}

int rp_parse_seq(rp_text text, uint64_t *out) {
    uint64_t v;
    if (text.str == NULL || !parse_decimal(text.str, text.len, RP_SEQ_MAX, &v) || v == 0) return 0;
    *out = v;
    return 1;
}

static int is(rp_text t, const char *word) { return t.str != NULL && t.len == strlen(word) && memcmp(t.str, word, t.len) == 0; }

int rp_parse_entry(const char *stream, rp_text id, const rp_text *fields, size_t count, rp_entry *out, char *err) {
    char shown[200];
    memset(out, 0, sizeof *out);
    if (!rp_parse_id(id, NULL, NULL)) {
        rp_show(id, shown, sizeof shown);
        damaged(err, stream, "an entry's id \"%s\" is not a stream id", shown);
        return RP_DAMAGED;
    }
    memcpy(out->pos, id.str, id.len);
    out->pos[id.len] = '\0';
    if (count != 4 || !is(fields[0], "n") || !is(fields[2], "a") || fields[1].str == NULL || fields[3].str == NULL) {
        if (count == 0) {
            damaged(err, stream, "entry %s was not written by replicate.so: it has no field", out->pos);
        } else {
            rp_show(fields[0], shown, sizeof shown);
            damaged(err, stream,
                    "entry %s was not written by replicate.so: its fields are not \"n\" and \"a\" (%zu names and values, the "
                    "first \"%s\")",
                    out->pos, count, shown);
        }
        return RP_DAMAGED;
    }
    if (!rp_parse_seq(fields[1], &out->seq)) {
        rp_show(fields[1], shown, sizeof shown);
        damaged(err, stream,
                "entry %s was not written by replicate.so: its number \"%s\" is not an integer from 1 to %llu",
                out->pos, shown, (unsigned long long)RP_SEQ_MAX);
        out->seq = 0;
        return RP_DAMAGED;
    }
    if (fields[3].len == 0 || memchr(fields[3].str, '\0', fields[3].len) != NULL) {
        damaged(err, stream, "entry %s (number %llu) was not written by replicate.so: its action %s", out->pos,
                (unsigned long long)out->seq, fields[3].len == 0 ? "is empty" : "contains a NUL byte");
        out->seq = 0;
        return RP_DAMAGED;
    }
    out->action = malloc(fields[3].len + 1);
    if (out->action == NULL) {
        snprintf(err, RP_ERR_SIZE, "replicate: out of memory");
        return RP_FAILED;
    }
    memcpy(out->action, fields[3].str, fields[3].len);
    out->action[fields[3].len] = '\0';
    return 0;
}

int rp_parse_snapshot(const char *stream, rp_text state, rp_text pos, rp_text n, int *found, char **state_out,
                      char pos_out[RP_POS_SIZE], uint64_t *seq, char *err) {
    char shown[200];
    *found = 0;
    if (state.str == NULL && pos.str == NULL && n.str == NULL) return 0;
    if (state.str == NULL || pos.str == NULL || n.str == NULL) {
        damaged(err, stream, "its snapshot has no \"%s\"", state.str == NULL ? "state" : pos.str == NULL ? "pos" : "n");
        return RP_DAMAGED;
    }
    if (!rp_parse_id(pos, NULL, NULL)) {
        rp_show(pos, shown, sizeof shown);
        damaged(err, stream, "its snapshot's position \"%s\" is not a stream id", shown);
        return RP_DAMAGED;
    }
    if (!rp_parse_seq(n, seq)) {
        rp_show(n, shown, sizeof shown);
        damaged(err, stream, "its snapshot's number \"%s\" is not an integer from 1 to %llu", shown,
                (unsigned long long)RP_SEQ_MAX);
        return RP_DAMAGED;
    }
    if (state.len == 0 || memchr(state.str, '\0', state.len) != NULL) {
        damaged(err, stream, "its snapshot's state %s", state.len == 0 ? "is empty" : "contains a NUL byte");
        return RP_DAMAGED;
    }
    *state_out = malloc(state.len + 1);
    if (*state_out == NULL) {
        snprintf(err, RP_ERR_SIZE, "replicate: out of memory");
        return RP_FAILED;
    }
    memcpy(*state_out, state.str, state.len);
    (*state_out)[state.len] = '\0';
    memcpy(pos_out, pos.str, pos.len);
    pos_out[pos.len] = '\0';
    *found = 1;
    return 0;
}

/* The counter as a number: 1 when it is one, else 0 with a message. */
static int counter_of(const char *stream, rp_text counter, uint64_t *out, char *err) {
    char shown[200];
    if (counter.str == NULL) {
        damaged(err, stream, "its counter \"%.200s:seq\" is missing (deleted, or the log was reset)", stream);
        return 0;
    }
    if (!rp_parse_seq(counter, out)) {
        rp_show(counter, shown, sizeof shown);
        damaged(err, stream, "its counter \"%.200s:seq\" holds \"%s\", not an integer from 1 to %llu", stream, shown,
                (unsigned long long)RP_SEQ_MAX);
        return 0;
    }
    return 1;
}

int rp_check_snapshot(const char *stream, uint64_t seq, const char *pos, rp_text counter, const rp_entry *at,
                      const rp_entry *after, char *err) {
    uint64_t c;
    if (!counter_of(stream, counter, &c, err)) return RP_DAMAGED;
    if (c < seq) {
        damaged(err, stream,
                "its snapshot covers entry %llu but its counter \"%.200s:seq\" is at %llu (the snapshot's number was "
                "changed, or the log was reset)",
                (unsigned long long)seq, stream, (unsigned long long)c);
        return RP_DAMAGED;
    }
    if (at != NULL && at->seq != seq) {
        damaged(err, stream, "its snapshot covers entry %llu at %s, but the entry there is number %llu",
                (unsigned long long)seq, pos, (unsigned long long)at->seq);
        return RP_DAMAGED;
    }
    if (after != NULL && after->seq != seq + 1) {
        damaged(err, stream, "its snapshot covers entry %llu at %s, but the entry after it (%s) is number %llu",
                (unsigned long long)seq, pos, after->pos, (unsigned long long)after->seq);
        return RP_DAMAGED;
    }
    return 0;
}

/* Frees entries [from, count) and keeps the others. */
static void truncate_batch(rp_batch *b, size_t from) {
    size_t i;
    for (i = from; i < b->count; i++) {
        free(b->items[i].action);
        b->items[i].action = NULL;
    }
    if (from < b->count) b->count = from;
}

int rp_check_counter(const char *stream, rp_batch *batch, rp_text counter, char *err) {
    uint64_t c;
    size_t i;
    if (batch->count == 0) return 0;
    if (!counter_of(stream, counter, &c, err)) {
        truncate_batch(batch, 0);
        return RP_DAMAGED;
    }
    for (i = 0; i < batch->count; i++) {
        if (batch->items[i].seq > c) {
            damaged(err, stream,
                    "entry %s is number %llu, past its counter \"%.200s:seq\" (%llu): it was added without the counter",
                    batch->items[i].pos, (unsigned long long)batch->items[i].seq, stream, (unsigned long long)c);
            truncate_batch(batch, i);
            return RP_DAMAGED;
        }
    }
    return 0;
}

enum rp_step rp_step_of(const char *pos, uint64_t seq, const rp_entry *e) {
    if (rp_compare_pos(e->pos, pos) <= 0) return RP_SKIP;
    if (e->seq == seq + 1) return RP_APPLY;
    return e->seq > seq ? RP_GAP : RP_BACKWARD;
}

int rp_parse_message(const char *stream, uint64_t seq, rp_text log, uint64_t log_id, rp_text data, rp_entry *out,
                     char *err) {
    char shown[200];
    uint64_t id;
    memset(out, 0, sizeof *out);
    if (seq == 0 || seq > RP_SEQ_MAX) {
        damaged(err, stream, "a message's stream sequence %llu is not from 1 to %llu", (unsigned long long)seq,
                (unsigned long long)RP_SEQ_MAX);
        return RP_DAMAGED;
    }
    snprintf(out->pos, sizeof out->pos, "%llu", (unsigned long long)seq);
    if (log.str == NULL) {
        damaged(err, stream, "entry %llu was not written by replicate.so: it has no header \"Ts-Log\"",
                (unsigned long long)seq);
        return RP_DAMAGED;
    }
    if (!parse_decimal(log.str, log.len, UINT64_MAX, &id)) {
        rp_show(log, shown, sizeof shown);
        damaged(err, stream, "entry %llu was not written by replicate.so: its header \"Ts-Log\" is \"%s\", not a number",
                (unsigned long long)seq, shown);
        return RP_DAMAGED;
    }
    if (id != log_id) {
        damaged(err, stream,
                "entry %llu belongs to the log %llu, not to the log %llu this replica joined: the stream was deleted "
                "and made again (or the entry copied from another stream)",
                (unsigned long long)seq, (unsigned long long)id, (unsigned long long)log_id);
        return RP_DAMAGED;
    }
    if (data.str == NULL || data.len == 0 || memchr(data.str, '\0', data.len) != NULL) {
        damaged(err, stream, "entry %llu was not written by replicate.so: its action %s", (unsigned long long)seq,
                data.str == NULL || data.len == 0 ? "is empty" : "contains a NUL byte");
        return RP_DAMAGED;
    }
    out->seq = seq;
    out->action = malloc(data.len + 1);
    if (out->action == NULL) {
        out->seq = 0;
        snprintf(err, RP_ERR_SIZE, "replicate: out of memory");
        return RP_FAILED;
    }
    memcpy(out->action, data.str, data.len);
    out->action[data.len] = '\0';
    return 0;
}

int rp_count_parts(const char *stream, uint64_t seq, rp_text parts, rp_text data, size_t *count, char *err) {
    char shown[200];
    uint64_t want;
    size_t i, found = 1, length = 0;
    *count = 1;
    if (parts.str == NULL) return 0;
    if (!parse_decimal(parts.str, parts.len, RP_PARTS_MAX, &want) || want < 2) {
        rp_show(parts, shown, sizeof shown);
        damaged(err, stream, "entry %llu was not written by replicate.so: its header \"Ts-Parts\" is \"%s\", not a "
                             "count from 2 to %d", (unsigned long long)seq, shown, RP_PARTS_MAX);
        return RP_DAMAGED;
    }
    for (i = 0; data.str != NULL && i < data.len; i++) {
        if (data.str[i] != '\0') {
            length++;
            continue;
        }
        if (length == 0) break;
        found++;
        length = 0;
    }
    if (data.str == NULL || length == 0 || found != want) {
        damaged(err, stream, "entry %llu was not written by replicate.so: its header \"Ts-Parts\" says %llu actions, "
                             "but its data %s", (unsigned long long)seq, (unsigned long long)want,
                data.str == NULL || data.len == 0 ? "is empty" : found != want && length != 0 ? "holds another count"
                                                                                            : "holds an empty one");
        return RP_DAMAGED;
    }
    *count = (size_t)want;
    return 0;
}

int rp_parse_js_snapshot(const char *stream, rp_text value, uint64_t log_id, int *found, char **state_out,
                         char pos_out[RP_POS_SIZE], uint64_t *seq, char *err) {
    char shown[200];
    const char *space, *newline, *state;
    uint64_t id, n;
    size_t state_len;
    *found = 0;
    if (value.str == NULL) return 0;
    space = memchr(value.str, ' ', value.len);
    newline = memchr(value.str, '\n', value.len);
    if (space == NULL || newline == NULL || newline < space ||
        !parse_decimal(value.str, (size_t)(space - value.str), UINT64_MAX, &id) ||
        !parse_decimal(space + 1, (size_t)(newline - space - 1), RP_SEQ_MAX, &n) || n == 0) {
        rp_show(value, shown, sizeof shown);
        damaged(err, stream, "its snapshot \"%s\" was not written by replicate.so (not \"LOG SEQ\" and a line of state)",
                shown);
        return RP_DAMAGED;
    }
    if (id != log_id) {
        damaged(err, stream,
                "its snapshot belongs to the log %llu, not to the log %llu this replica joined: the stream was "
                "deleted and made again, and the snapshot kept",
                (unsigned long long)id, (unsigned long long)log_id);
        return RP_DAMAGED;
    }
    state = newline + 1;
    state_len = value.len - (size_t)(state - value.str);
    if (state_len == 0 || memchr(state, '\0', state_len) != NULL) {
        damaged(err, stream, "its snapshot's state %s", state_len == 0 ? "is empty" : "contains a NUL byte");
        return RP_DAMAGED;
    }
    *state_out = malloc(state_len + 1);
    if (*state_out == NULL) {
        snprintf(err, RP_ERR_SIZE, "replicate: out of memory");
        return RP_FAILED;
    }
    memcpy(*state_out, state, state_len);
    (*state_out)[state_len] = '\0';
    snprintf(pos_out, RP_POS_SIZE, "%llu", (unsigned long long)n);
    *seq = n;
    *found = 1;
    return 0;
}

void rp_batch_free(rp_batch *b) {
    size_t i;
    if (b == NULL || b->items == NULL) return;
    for (i = 0; i < b->count; i++) free(b->items[i].action);
    free(b->items);
    b->items = NULL;
    b->count = 0;
}
