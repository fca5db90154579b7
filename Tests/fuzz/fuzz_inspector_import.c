/*
 * fuzz_inspector_import - the inspector's reader of an imported session
 * (POST /api/import): Plugins/inspector/session.h over
 * Plugins/common/record.h (the journal's own record reader), the very code
 * the plugin runs before it changes anything, without its HTTP server or a
 * store; and the JSON strings the plugin makes of what it read (an imported
 * action the store refused is shown as one, Plugins/inspector/text.h), and
 * the "type" it reads from an action.
 *
 * The input is the body of an import, copied into a buffer of exactly its
 * size (no terminating NUL, as the plugin may get it), so that ASan sees any
 * read past its end. An input that starts with the line "#fix" is a list of
 * records "L json" (one per line) that the harness writes with correct
 * lengths and CRC-32s, so that the fuzzer reaches well-formed records with
 * any content; other inputs are read as they are.
 *
 * Invariants:
 * - session_check accepts exactly what an independent model of the format
 *   accepts (written here from Plugins/journal/README.md: letter, one space,
 *   1 to 18 digits, one space, 8 lower-case hex digits, one space, the
 *   bytes, a newline; no NUL in them; the CRC-32 computed bit by bit; a
 *   snapshot before any action), with the same records, the same first
 *   snapshot and the same count of actions; a refusal names the line the
 *   model finds bad ("line N: ..."), or says there is no snapshot;
 * - the second pass (session_next from after the first snapshot, as
 *   import_body runs it) gives exactly the counted actions and never fails;
 * - each record written again with sb_record (the export) reads back as the
 *   same record;
 * - sb_json_string of each record's text is valid JSON (strict UTF-8) and,
 *   when the text is well-formed UTF-8, decodes back to the text;
 * - pj_get(text, "type") and pj_str_dup stay inside the text.
 */
#include "fuzz_common.h"

#include "../../Plugins/common/pjson.h"
#include "../../Plugins/inspector/session.h"

/* ---- The model ------------------------------------------------------------ */

static uint32_t model_crc(char letter, const unsigned char *json, size_t length) {
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    int k;
    c ^= (unsigned char)letter;
    for (k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    for (i = 0; i < length; i++) {
        c ^= json[i];
        for (k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

typedef struct model_record {
    char letter;
    size_t line, start, json, length;
} model_record;

/* 1 if the text is a session (records in *out, *count), else 0 with the
 * line of the first bad record in *bad_line (0: no snapshot). */
static int model(const unsigned char *t, size_t n, model_record *out, size_t max, size_t *count, size_t *bad_line) {
    size_t at = 0, line = 1, records = 0;
    int snapshot = 0;
    *bad_line = 0;
    while (at < n) {
        model_record r;
        size_t i = at, digits = 0, k;
        unsigned long long length = 0;
        uint32_t crc = 0;
        r.line = line;
        r.start = at;
        r.letter = (char)t[i];
        if (!(t[i] == 'A' || t[i] == 'S')) goto bad;
        if (++i >= n || t[i] != ' ') goto bad;
        for (i++; i < n && t[i] >= '0' && t[i] <= '9'; i++) {
            digits++;
            if (digits <= 18) length = length * 10 + (t[i] - '0');
        }
        if (digits < 1 || digits > 18 || i >= n || t[i] != ' ') goto bad;
        for (k = 0, i++; k < 8; k++, i++) {
            const char *hex = "0123456789abcdef";
            const char *d = i < n && t[i] ? strchr(hex, t[i]) : NULL;
            if (d == NULL) goto bad;
            crc = crc * 16 + (uint32_t)(d - hex);
        }
        if (i >= n || t[i] != ' ') goto bad;
        i++;
        if (length > n || i + length >= n) goto bad; /* the JSON, then a newline */
        if (t[i + length] != '\n') goto bad;
        for (k = 0; k < length; k++)
            if (t[i + k] == 0) goto bad;
        if (model_crc(r.letter, t + i, length) != crc) goto bad;
        if (r.letter == 'A' && !snapshot) goto bad;
        if (r.letter == 'S') snapshot = 1;
        r.json = i;
        r.length = length;
        for (k = 0; k < length; k++) line += t[i + k] == '\n';
        line++;
        at = i + length + 1;
        if (records < max) out[records] = r;
        records++;
        continue;
    bad:
        *bad_line = r.line;
        return 0;
    }
    *count = records;
    return snapshot;
}

/* ---- Checks of one record's text ------------------------------------------- */

static int valid_utf8(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int n = fz_utf8_len(p);
        if (n == 0) return 0;
        p += n;
    }
    return 1;
}

static void check_text(const session_record *r) {
    char *text = fz_strndup(r->json, r->length);
    sb b = {0}, e = {0};
    size_t offset = 0, line = 7;
    session_record again;
    char why[256];

    /* As a JSON string (what /api/state shows of a refused imported action). */
    sb_json_string(&b, text);
    FZ_CHECK(!b.failed, "sb_json_string ran out of memory");
    FZ_CHECK(fz_json_valid(b.text, NULL), "sb_json_string gave text that is not JSON: %.300s", b.text);
    FZ_CHECK(b.text[0] == '"', "sb_json_string gave no string: %.300s", b.text);
    if (valid_utf8(text)) {
        fz_json j;
        char *decoded = malloc(b.length + 1);
        size_t dlen = 0;
        if (decoded == NULL) abort();
        memset(&j, 0, sizeof j);
        j.p = (const unsigned char *)b.text;
        FZ_CHECK(fz_string(&j, decoded, &dlen), "the JSON string does not decode: %.300s", b.text);
        FZ_CHECK(dlen == r->length && memcmp(decoded, text, dlen) == 0,
                 "well-formed UTF-8 did not survive as a JSON string: %.300s -> %.300s", text, b.text);
        free(decoded);
    }
    free(b.text);

    /* The type, as the records' summaries read it. */
    {
        const char *t = pj_get(text, "type");
        if (t && pj_kind_of(t) == PJ_STRING) {
            size_t n = 0;
            char *type = pj_str_dup(pj_ws(t), &n);
            if (type) {
                sb s = {0};
                sb_json_string(&s, type);
                FZ_CHECK(!s.failed && fz_json_valid(s.text, NULL), "the type as a JSON string is not JSON: %.300s",
                         s.text ? s.text : "");
                free(s.text);
                free(type);
            }
        }
    }

    /* Written again (the export's sb_record), it reads back the same. */
    sb_record(&e, r->letter, text);
    FZ_CHECK(!e.failed, "sb_record ran out of memory");
    FZ_CHECK(session_next(e.text, e.length, &offset, &line, &again, why, sizeof why) == 1,
             "a record written by sb_record does not read back: %s", why);
    FZ_CHECK(again.letter == r->letter && again.length == r->length && memcmp(again.json, text, r->length) == 0 &&
                 offset == e.length && again.line == 7,
             "a record written by sb_record reads back different");
    free(e.text);
    free(text);
}

/* ---- The input ----------------------------------------------------------- */

/* The "#fix" form: each "L json" line becomes a well-formed record. */
static unsigned char *fixed(const uint8_t *data, size_t size, size_t *out_size) {
    sb out = {0};
    size_t p = 5;
    while (p < size) {
        const uint8_t *nl = memchr(data + p, '\n', size - p);
        size_t end = nl ? (size_t)(nl - data) : size;
        if (end - p >= 2 && data[p + 1] == ' ') {
            const char *json = (const char *)data + p + 2;
            size_t len = end - p - 2;
            sb_printf(&out, "%c %zu %08lx ", data[p], len, (unsigned long)model_crc((char)data[p], (const unsigned char *)json, len));
            sb_add(&out, json, len);
        } else {
            sb_add(&out, (const char *)data + p, end - p);
        }
        if (nl) sb_add(&out, "\n", 1);
        p = end + 1;
    }
    if (out.failed) abort();
    *out_size = out.length;
    if (out.text == NULL) return malloc(1);
    return (unsigned char *)out.text;
}

#define MAX_RECORDS 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static model_record expected[MAX_RECORDS];
    unsigned char *text;
    size_t n, count = 0, bad_line = 0, i;
    session_info info;
    char why[512];
    int ok, model_ok;

    if (size >= 5 && memcmp(data, "#fix\n", 5) == 0) {
        text = fixed(data, size, &n);
    } else {
        text = malloc(size ? size : 1);
        if (text == NULL) abort();
        memcpy(text, data, size);
        n = size;
    }
    /* Exactly n bytes from here on: a read past them is an ASan report. */
    {
        unsigned char *exact = malloc(n ? n : 1);
        if (exact == NULL) abort();
        memcpy(exact, text, n);
        free(text);
        text = exact;
    }

    why[0] = '\0';
    ok = session_check((const char *)text, n, &info, why, sizeof why) == 0;
    model_ok = model(text, n, expected, MAX_RECORDS, &count, &bad_line);
    FZ_CHECK(ok == model_ok, "session_check %s what the model %s (%s)", ok ? "accepts" : "refuses",
             model_ok ? "accepts" : "refuses", why);
    if (!ok) {
        FZ_CHECK(why[0] != '\0', "a refusal without a reason");
        if (bad_line == 0) {
            FZ_CHECK(strcmp(why, "no snapshot (S record) in the session") == 0, "the reason is not \"no snapshot\": %s",
                     why);
        } else {
            char prefix[64];
            snprintf(prefix, sizeof prefix, "line %zu: ", bad_line);
            FZ_CHECK(strncmp(why, prefix, strlen(prefix)) == 0, "the reason names another line than %zu: %s", bad_line,
                     why);
        }
    } else {
        size_t first = count, actions = 0, offset = 0, line = 1, seen = 0;
        session_record r;
        for (i = 0; i < count && i < MAX_RECORDS; i++) {
            if (expected[i].letter == 'S' && first == count) first = i;
            else if (expected[i].letter == 'A') actions++;
        }
        FZ_CHECK(info.records == count, "%zu records, the model has %zu", info.records, count);
        FZ_CHECK(info.actions == actions, "%zu actions, the model has %zu", info.actions, actions);
        if (count <= MAX_RECORDS) {
            FZ_CHECK(first < count && info.base.json == (const char *)text + expected[first].json &&
                         info.base.length == expected[first].length && info.base.line == expected[first].line,
                     "the first snapshot is not the model's");
            /* Every record, read one by one, is the model's. */
            for (i = 0; i < count; i++) {
                FZ_CHECK(session_next((const char *)text, n, &offset, &line, &r, why, sizeof why) == 1,
                         "record %zu of an accepted session does not read: %s", i + 1, why);
                FZ_CHECK(r.letter == expected[i].letter && r.json == (const char *)text + expected[i].json &&
                             r.length == expected[i].length && r.line == expected[i].line,
                         "record %zu is not the model's", i + 1);
                check_text(&r);
            }
            FZ_CHECK(session_next((const char *)text, n, &offset, &line, &r, why, sizeof why) == 0 && offset == n,
                     "an accepted session does not end after its last record");
        }
        /* The second pass of import_body: the actions after the first snapshot. */
        offset = info.base_end;
        line = info.base_line;
        while ((ok = session_next((const char *)text, n, &offset, &line, &r, why, sizeof why)) == 1) seen += r.letter == 'A';
        FZ_CHECK(ok == 0 && seen == info.actions, "the second pass read %zu actions of %zu (%s)", seen, info.actions,
                 ok ? why : "ended");
    }
    free(text);
    return 0;
}
