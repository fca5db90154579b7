/* Tests of the journal plugin (Plugins/journal): restart restores the state
 * (snapshot + tail), replayed actions are not recorded twice, a torn last
 * record is skipped with a warning and cut off, corruption in the middle is
 * refused, a child killed with SIGKILL loses no acknowledged action, and a
 * restart right after that kill (before the child is reaped) loads the
 * journal while a live owner in another process is refused.
 * Prints "N passed, M failed". Options: --plugins DIR, --quick (no SIGKILL
 * rounds; for valgrind). */
#include "plugin_test.h"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/wait.h>

static char tmpdir[256];
static const char *self_exe = "/proc/self/exe";

/* ---- Files ---------------------------------------------------------------- */

static char *path_in_tmp(const char *name) {
    static char paths[8][512];
    static int turn;
    char *p = paths[turn++ % 8];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

static char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf) buf[n] = '\0';
    if (size) *size = (size_t)n;
    fclose(f);
    return buf;
}

static void spit(const char *path, const char *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) return;
    fwrite(data, 1, size, f);
    fclose(f);
}

static long long file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* CRC-32 (IEEE), written independently of the plugin's. */
static uint32_t crc32_of(const char *a, size_t an, const char *b, size_t bn) {
    uint32_t c = 0xFFFFFFFFu;
    size_t i;
    int k;
    for (i = 0; i < an + bn; i++) {
        c ^= (unsigned char)(i < an ? a[i] : b[i - an]);
        for (k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

/* Appends one well-formed record to buf (of size cap). */
static void add_record(char *buf, size_t cap, char letter, const char *json) {
    char l[2];
    size_t used = strlen(buf);
    l[0] = letter;
    l[1] = '\0';
    snprintf(buf + used, cap - used, "%c %zu %08lx %s\n", letter, strlen(json),
             (unsigned long)crc32_of(l, 1, json, strlen(json)), json);
}

/* Checks every line of the journal against the format, counting A and S
 * records; returns 0 if a line is malformed. The last S's JSON goes to
 * last_snapshot (if not NULL, size 256). */
static int scan_journal(const char *path, int *actions, int *snapshots, char *last_snapshot) {
    size_t size, off = 0;
    char *buf = slurp(path, &size);
    int ok = 1;
    *actions = *snapshots = 0;
    if (buf == NULL) return 0;
    while (off < size) {
        char letter, hex[9];
        size_t length;
        int header;
        char *nl = memchr(buf + off, '\n', size - off);
        if (nl == NULL || sscanf(buf + off, "%c %zu %8s %n", &letter, &length, hex, &header) != 3) {
            ok = 0;
            break;
        }
        if ((letter != 'A' && letter != 'S') || buf + off + header + length != nl) {
            ok = 0;
            break;
        }
        {
            char l[2] = {0, 0}, want[9];
            l[0] = letter;
            snprintf(want, sizeof want, "%08lx", (unsigned long)crc32_of(l, 1, buf + off + header, length));
            if (strcmp(want, hex) != 0) {
                ok = 0;
                break;
            }
        }
        if (letter == 'A') (*actions)++;
        else {
            (*snapshots)++;
            if (last_snapshot) snprintf(last_snapshot, 256, "%.*s", (int)length, buf + off + header);
        }
        off = (size_t)(nl - buf) + 1;
    }
    free(buf);
    return ok;
}

/* ---- Stores ------------------------------------------------------------------ */

/* A middleware (before the journal) that refuses "nope". */
static ts_status refuse_mw(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)ctx;
    if (strcmp(action->type, "nope") == 0) return api->fail(TS_E_REJECTED, "nope is refused");
    return next(action->json);
}

/* A store with "counter", the refusing middleware, then the journal at path
 * with extra config members (",\"fsync\":\"never\"" etc.). */
static ts_store *journaled(const char *path, const char *extra, ts_status *status) {
    char config[1024];
    ts_store *s = NULL;
    ts_status st;
    if (ts_store_create(NULL, &s) != TS_OK) return NULL;
    ts_store_add_reducer(s, "counter", tp_counter_reducer, NULL);
    ts_store_add_middleware(s, "refuse", refuse_mw, NULL);
    snprintf(config, sizeof config, "{\"path\":\"%s\"%s}", path, extra ? extra : "");
    st = tp_load(s, tp_plugin("journal"), config);
    if (status) *status = st;
    return s;
}

void test_journal__restartRestoresTheState(void) {
    const char *path = path_in_tmp("basic.journal");
    ts_status st;
    int a, s_count, i;
    struct stat info;
    ts_store *s = journaled(path, NULL, &st);
    TP_CHECK_STATUS("load on a new file", st, TS_OK);
    TP_CHECK("file created", stat(path, &info) == 0);
    TP_CHECK_INT("mode 0600", info.st_mode & 0777, 0600);
    for (i = 0; i < 5; i++) ts_store_dispatch(s, "{\"type\":\"inc\"}");
    TP_CHECK_STATUS("add 10", ts_store_dispatch(s, "{\"type\":\"add\",\"payload\":10}"), TS_OK);
    TP_CHECK_INT("counter", tp_state_int(s, "/counter", -1), 15);
    TP_CHECK("journal well-formed while open", scan_journal(path, &a, &s_count, NULL));
    TP_CHECK_INT("6 action records (fsync always: on disk at once)", a, 6);
    TP_CHECK_INT("no snapshot yet", s_count, 0);
    tp_destroy(s);

    s = journaled(path, NULL, &st);
    TP_CHECK_STATUS("reload", st, TS_OK);
    TP_CHECK_INT("restart restores the state", tp_state_int(s, "/counter", -1), 15);
    TP_CHECK("still well-formed", scan_journal(path, &a, &s_count, NULL));
    TP_CHECK_INT("replayed actions are not recorded again", a, 6);
    TP_CHECK_STATUS("one more", ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_OK);
    scan_journal(path, &a, &s_count, NULL);
    TP_CHECK_INT("the new one is recorded", a, 7);
    tp_destroy(s);

    s = journaled(path, NULL, &st);
    TP_CHECK_INT("second restart", tp_state_int(s, "/counter", -1), 16);
    scan_journal(path, &a, &s_count, NULL);
    TP_CHECK_INT("still 7 records", a, 7);
    tp_destroy(s);
}

void test_journal__restoreFalseKeepsTheStateAndStartsTheFileAnew(void) {
    const char *path = path_in_tmp("restore-false.journal");
    char config[700], snapshot[256] = "";
    ts_status st;
    int a, s_count, i;
    ts_store *s;
    remove(path);
    s = journaled(path, NULL, &st);
    TP_CHECK_STATUS("a journal with records", st, TS_OK);
    for (i = 0; i < 3; i++) ts_store_dispatch(s, "{\"type\":\"inc\"}");
    tp_destroy(s);

    /* A store whose state came from elsewhere (replicate.so's log). */
    s = NULL;
    TP_CHECK_STATUS("store", ts_store_create(NULL, &s), TS_OK);
    ts_store_add_reducer(s, "counter", tp_counter_reducer, NULL);
    TP_CHECK_STATUS("add 40", ts_store_dispatch(s, "{\"type\":\"add\",\"payload\":40}"), TS_OK);
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"restore\":false}", path);
    TP_CHECK_STATUS("load with \"restore\": false", tp_load(s, tp_plugin("journal"), config), TS_OK);
    TP_CHECK_INT("the state is kept, nothing restored or replayed", tp_state_int(s, "/counter", -1), 40);
    TP_CHECK("the file is a whole journal", scan_journal(path, &a, &s_count, snapshot));
    TP_CHECK_INT("its old records are gone", a, 0);
    TP_CHECK_INT("one snapshot", s_count, 1);
    TP_CHECK_STR("of the state at the load", snapshot, "{\"counter\":40}");
    TP_CHECK_STATUS("inc", ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_OK);
    scan_journal(path, &a, &s_count, NULL);
    TP_CHECK_INT("what it sees is recorded after it", a, 1);
    tp_destroy(s);

    s = journaled(path, NULL, &st);
    TP_CHECK_STATUS("the file restores (\"restore\": true)", st, TS_OK);
    TP_CHECK_INT("to the snapshot and the action after it", tp_state_int(s, "/counter", -1), 41);
    tp_destroy(s);
    remove(path);
}

void test_journal__onlyAppliedActionsAreRecorded(void) {
    const char *path = path_in_tmp("recorded.journal");
    ts_status st;
    int a, sn;
    char *text;
    ts_store *s = journaled(path, ",\"fsync\":\"never\"", &st);
    TP_CHECK_STATUS("load fsync never", st, TS_OK);
    TP_CHECK_STATUS("refused before the journal", ts_store_dispatch(s, "{\"type\":\"nope\"}"), TS_E_REJECTED);
    TP_CHECK_STATUS("reducer failure", ts_store_dispatch(s, "{\"type\":\"boom\"}"), TS_E_REDUCER);
    TP_CHECK_STATUS("invalid action", ts_store_dispatch(s, "{\"type\":\"\"}"), TS_E_NOT_ACTION);
    scan_journal(path, &a, &sn, NULL);
    TP_CHECK_INT("failed dispatches are not recorded", a, 0);
    TP_CHECK_STATUS("an action no reducer handles still reached them",
                    ts_store_dispatch(s, "{\"type\":\"other\",\"payload\":{\"k\":[1,2]}}"), TS_OK);
    TP_CHECK_STATUS("white space and newlines are minified",
                    ts_store_dispatch(s, "{ \"type\" : \"add\" ,\n\t\"payload\" : 2 ,\r\n \"meta\": \"a b\\nc \\\" d\" }"), TS_OK);
    scan_journal(path, &a, &sn, NULL);
    TP_CHECK_INT("both recorded", a, 2);
    text = slurp(path, NULL);
    TP_CHECK_CONTAINS("minified, strings kept", text, "{\"type\":\"add\",\"payload\":2,\"meta\":\"a b\\nc \\\" d\"}\n");
    free(text);
    tp_destroy(s);
    s = journaled(path, NULL, &st);
    TP_CHECK_INT("replayed", tp_state_int(s, "/counter", -1), 2);
    tp_destroy(s);
}

void test_journal__snapshotEveryNWritesTheWholeState(void) {
    const char *path = path_in_tmp("snap.journal");
    ts_status st;
    int a, sn, i;
    char last[256];
    ts_store *s = journaled(path, ",\"snapshot_every\":3,\"fsync\":2", &st);
    TP_CHECK_STATUS("load snapshot_every 3, fsync 2", st, TS_OK);
    for (i = 0; i < 7; i++) ts_store_dispatch(s, "{\"type\":\"inc\"}");
    tp_destroy(s);
    TP_CHECK("well-formed", scan_journal(path, &a, &sn, last));
    TP_CHECK_INT("7 actions", a, 7);
    TP_CHECK_INT("a snapshot every 3", sn, 2);
    TP_CHECK_STR("the last snapshot is the whole state after 6", last, "{\"counter\":6}");
    {
        char *text = slurp(path, NULL);
        const char *p = text;
        char kinds[32];
        int n = 0;
        while (p && *p && n < 31) {
            kinds[n++] = *p;
            p = strchr(p, '\n');
            if (p) p++;
        }
        kinds[n] = '\0';
        TP_CHECK_STR("record order", kinds, "AAASAAASA");
        free(text);
    }
    s = journaled(path, ",\"snapshot_every\":3", &st);
    TP_CHECK_INT("restored from snapshot + tail", tp_state_int(s, "/counter", -1), 7);
    ts_store_dispatch(s, "{\"type\":\"inc\"}");
    ts_store_dispatch(s, "{\"type\":\"inc\"}");
    tp_destroy(s);
    scan_journal(path, &a, &sn, last);
    TP_CHECK_INT("the count since the snapshot survives a restart", sn, 3);
    TP_CHECK_STR("snapshot after 9", last, "{\"counter\":9}");

    /* snapshot_every 0: never. */
    path = path_in_tmp("nosnap.journal");
    s = journaled(path, ",\"snapshot_every\":0", &st);
    TP_CHECK_STATUS("load snapshot_every 0", st, TS_OK);
    for (i = 0; i < 20; i++) ts_store_dispatch(s, "{\"type\":\"inc\"}");
    tp_destroy(s);
    scan_journal(path, &a, &sn, NULL);
    TP_CHECK_INT("snapshot_every 0: no snapshots", sn, 0);
    TP_CHECK_INT("snapshot_every 0: 20 actions", a, 20);
}

void test_journal__restartReplaysFromTheLastSnapshot(void) {
    const char *path = path_in_tmp("crafted.journal");
    char buf[2048] = "";
    ts_status st;
    ts_store *s;
    add_record(buf, sizeof buf, 'A', "{\"type\":\"inc\"}");
    add_record(buf, sizeof buf, 'A', "{\"type\":\"inc\"}");
    add_record(buf, sizeof buf, 'S', "{\"counter\":50,\"other\":{\"x\":1}}");
    add_record(buf, sizeof buf, 'A', "{\"type\":\"inc\"}");
    add_record(buf, sizeof buf, 'A', "{\"type\":\"add\",\"payload\":5}");
    spit(path, buf, strlen(buf));
    s = journaled(path, NULL, &st);
    TP_CHECK_STATUS("load crafted", st, TS_OK);
    TP_CHECK_INT("the last snapshot, then only the actions after it", tp_state_int(s, "/counter", -1), 56);
    TP_CHECK_INT("keys without a reducer come back too", tp_state_int(s, "/other/x", -1), 1);
    TP_CHECK_INT("file untouched", file_size(path), (long long)strlen(buf));
    tp_destroy(s);

    /* A snapshot without the reducer's key: the reducer gives its first value. */
    buf[0] = '\0';
    add_record(buf, sizeof buf, 'S', "{\"other\":true}");
    add_record(buf, sizeof buf, 'A', "{\"type\":\"inc\"}");
    spit(path, buf, strlen(buf));
    s = journaled(path, NULL, &st);
    TP_CHECK_STATUS("load snapshot without counter", st, TS_OK);
    TP_CHECK_INT("counter from its reducer, then the tail", tp_state_int(s, "/counter", -1), 1);
    tp_destroy(s);
}

static void torn_case(const char *name, const char *tail, int tail_has_newline) {
    const char *path = path_in_tmp("torn.journal");
    char buf[2048] = "", label[256], *err, *after;
    size_t good;
    ts_status st;
    int a, sn;
    ts_store *s;
    add_record(buf, sizeof buf, 'A', "{\"type\":\"inc\"}");
    add_record(buf, sizeof buf, 'S', "{\"counter\":1}");
    add_record(buf, sizeof buf, 'A', "{\"type\":\"add\",\"payload\":2}");
    good = strlen(buf);
    strcat(buf, tail);
    spit(path, buf, strlen(buf));
    tp_capture_begin();
    s = journaled(path, NULL, &st);
    err = tp_capture_end();
    snprintf(label, sizeof label, "%s: loads", name);
    TP_CHECK_STATUS(label, st, TS_OK);
    snprintf(label, sizeof label, "%s: the good records are restored", name);
    TP_CHECK_INT(label, tp_state_int(s, "/counter", -1), 3);
    snprintf(label, sizeof label, "%s: a warning on stderr", name);
    TP_CHECK_CONTAINS(label, err, "warning");
    {
        char at[64];
        snprintf(at, sizeof at, "byte %zu", good);
        snprintf(label, sizeof label, "%s: the warning names the offset", name);
        TP_CHECK_CONTAINS(label, err, at);
    }
    free(err);
    snprintf(label, sizeof label, "%s: the file is cut back to the last good record", name);
    TP_CHECK_INT(label, file_size(path), (long long)good);
    ts_store_dispatch(s, "{\"type\":\"inc\"}");
    tp_destroy(s);
    snprintf(label, sizeof label, "%s: appending after the repair gives a well-formed file", name);
    TP_CHECK(label, scan_journal(path, &a, &sn, NULL));
    TP_CHECK_INT("3 actions", a, 3);
    tp_capture_begin();
    s = journaled(path, NULL, &st);
    err = tp_capture_end();
    snprintf(label, sizeof label, "%s: restart after repair", name);
    TP_CHECK_INT(label, tp_state_int(s, "/counter", -1), 4);
    snprintf(label, sizeof label, "%s: no warning the second time", name);
    TP_CHECK(label, err != NULL && strstr(err, "warning") == NULL);
    free(err);
    tp_destroy(s);
    after = slurp(path, NULL);
    free(after);
    (void)tail_has_newline;
}

void test_journal__tornTailIsCutWithAWarning(void) {
    char bad_crc[256] = "";
    torn_case("cut in the JSON", "A 14 f00dbeef {\"type\":\"i", 0);
    torn_case("cut in the header", "A 1", 0);
    torn_case("a length of 19 digits", "A 1234567890123456789 00000000 {}\n", 1);
    torn_case("no space after the length", "A 14x00000000 {\"type\":\"inc\"}\n", 1);
    torn_case("a checksum that is not hex", "A 14 0000000g {\"type\":\"inc\"}\n", 1);
    torn_case("no space after the checksum", "A 14 00000000{\"type\":\"inc\"}\n", 1);
    torn_case("no space after the letter", "A14 00000000 {\"type\":\"inc\"}\n", 1);
    torn_case("cut before the newline", "A 14 00000000 {\"type\":\"inc\"}", 0);
    torn_case("a lone letter", "S", 0);
    /* A complete last line whose CRC does not match (torn in the page cache). */
    add_record(bad_crc, sizeof bad_crc, 'A', "{\"type\":\"inc\"}");
    bad_crc[strlen("A 14 ")] = bad_crc[strlen("A 14 ")] == '0' ? '1' : '0';
    torn_case("a bad CRC on the last line", bad_crc, 1);
    {
        /* Zero bytes after the last record, as a file system may leave. */
        const char *path = path_in_tmp("zeros.journal");
        char buf[512] = "";
        size_t good;
        ts_status st;
        ts_store *s;
        char *err;
        add_record(buf, sizeof buf, 'A', "{\"type\":\"inc\"}");
        good = strlen(buf);
        memset(buf + good, 0, 100);
        spit(path, buf, good + 100);
        tp_capture_begin();
        s = journaled(path, NULL, &st);
        err = tp_capture_end();
        TP_CHECK_STATUS("zero bytes at the end: loads", st, TS_OK);
        TP_CHECK_INT("zero bytes at the end: state", tp_state_int(s, "/counter", -1), 1);
        TP_CHECK_CONTAINS("zero bytes at the end: warned", err, "warning");
        TP_CHECK_INT("zero bytes at the end: cut", file_size(path), (long long)good);
        free(err);
        tp_destroy(s);
    }
}

static void corrupt_case(const char *name, int record, void (*damage)(char *record_text)) {
    const char *path = path_in_tmp("corrupt.journal");
    char buf[2048] = "", label[256], at[64], *before, *after;
    size_t offsets[4], size_before, size_after;
    ts_status st;
    ts_store *s;
    int i;
    for (i = 0; i < 4; i++) {
        offsets[i] = strlen(buf);
        add_record(buf, sizeof buf, 'A', i == 2 ? "{\"type\":\"add\",\"payload\":10}" : "{\"type\":\"inc\"}");
    }
    damage(buf + offsets[record]);
    spit(path, buf, strlen(buf));
    before = slurp(path, &size_before);
    s = journaled(path, NULL, &st);
    snprintf(label, sizeof label, "%s: refused", name);
    TP_CHECK_STATUS(label, st, TS_E_PLUGIN);
    snprintf(at, sizeof at, "byte %zu", offsets[record]);
    snprintf(label, sizeof label, "%s: the message names the byte offset", name);
    TP_CHECK_CONTAINS(label, ts_last_error(), at);
    snprintf(label, sizeof label, "%s: the message names the file", name);
    TP_CHECK_CONTAINS(label, ts_last_error(), path);
    snprintf(label, sizeof label, "%s: the state is untouched", name);
    TP_CHECK_INT(label, tp_state_int(s, "/counter", -1), 0);
    snprintf(label, sizeof label, "%s: the store works without the journal", name);
    TP_CHECK_STATUS(label, ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_OK);
    tp_destroy(s);
    after = slurp(path, &size_after);
    snprintf(label, sizeof label, "%s: the file is left as it was", name);
    TP_CHECK(label, before && after && size_before == size_after && memcmp(before, after, size_before) == 0);
    free(before);
    free(after);
}

static void flip_json(char *r) { *(strchr(r, '{') + 3) ^= 1; }
static void flip_letter(char *r) { r[0] = 'X'; }
static void break_length(char *r) { r[2] = '9'; }
static void drop_newline(char *r) { *strchr(r, '\n') = ' '; }

void test_journal__corruptionBeforeTheTailIsRefused(void) {
    corrupt_case("a flipped bit in the JSON of record 2", 1, flip_json);
    corrupt_case("a bad record letter in record 3", 2, flip_letter);
    corrupt_case("a bad length in record 1", 0, break_length);
    corrupt_case("a lost newline in record 3", 2, drop_newline);
}

/* Appends to buf (used bytes, cap) a record whose JSON is json[0..length),
 * which may hold a NUL byte, with its right length and CRC-32. */
static size_t add_raw_record(char *buf, size_t used, size_t cap, char letter, const char *json, size_t length) {
    char l[2];
    int n;
    l[0] = letter;
    l[1] = '\0';
    n = snprintf(buf + used, cap - used, "%c %zu %08lx ", letter, length, (unsigned long)crc32_of(l, 1, json, length));
    used += (size_t)n;
    memcpy(buf + used, json, length);
    used += length;
    buf[used++] = '\n';
    return used;
}

/* A NUL byte in a record's JSON, even under a right CRC-32, is not a record
 * (record.h, as the inspector's import reads them): the store takes C
 * strings, so the bytes after the NUL would be left out of the replay. In
 * the middle it is corruption; as the last record, a torn tail. */
void test_journal__nulByteInARecordIsNotARecord(void) {
    static const char nul_json[] = "{\"type\":\"add\",\"payload\":10}\0{\"type\":\"inc\"}";
    const char *path = path_in_tmp("nul.journal");
    char buf[1024], at[64], *err;
    size_t used = 0, second, third;
    ts_status st;
    ts_store *s;
    used = add_raw_record(buf, used, sizeof buf, 'A', "{\"type\":\"inc\"}", 14);
    second = used;
    used = add_raw_record(buf, used, sizeof buf, 'A', nul_json, sizeof nul_json - 1);
    third = used;
    used = add_raw_record(buf, used, sizeof buf, 'A', "{\"type\":\"inc\"}", 14);
    spit(path, buf, used);
    s = journaled(path, NULL, &st);
    TP_CHECK_STATUS("a NUL byte in the JSON of record 2: refused", st, TS_E_PLUGIN);
    snprintf(at, sizeof at, "byte %zu", second);
    TP_CHECK_CONTAINS("a NUL byte in the JSON of record 2: the message names its byte offset", ts_last_error(), at);
    TP_CHECK_CONTAINS("a NUL byte in the JSON of record 2: the message says why", ts_last_error(), "NUL byte");
    TP_CHECK_INT("a NUL byte in the JSON of record 2: the state is untouched", tp_state_int(s, "/counter", -1), 0);
    TP_CHECK_INT("a NUL byte in the JSON of record 2: the file is left as it was", file_size(path), (long long)used);
    tp_destroy(s);

    spit(path, buf, third);
    tp_capture_begin();
    s = journaled(path, NULL, &st);
    err = tp_capture_end();
    TP_CHECK_STATUS("a NUL byte in the JSON of the last record: loads", st, TS_OK);
    TP_CHECK_INT("a NUL byte in the JSON of the last record: only the records before it", tp_state_int(s, "/counter", -1), 1);
    TP_CHECK_CONTAINS("a NUL byte in the JSON of the last record: a warning that says why", err, "NUL byte");
    TP_CHECK_INT("a NUL byte in the JSON of the last record: cut off", file_size(path), (long long)second);
    free(err);
    tp_destroy(s);
}

void test_journal__refusedReplayFailsTheLoadAndPutsTheStateBack(void) {
    const char *path = path_in_tmp("refused.journal");
    char buf[1024] = "";
    size_t second;
    char at[64];
    ts_status st;
    ts_store *s;
    add_record(buf, sizeof buf, 'S', "{\"counter\":40}");
    add_record(buf, sizeof buf, 'A', "{\"type\":\"inc\"}");
    second = strlen(buf);
    add_record(buf, sizeof buf, 'A', "{\"type\":\"nope\"}");
    spit(path, buf, strlen(buf));
    s = journaled(path, NULL, &st);
    TP_CHECK_STATUS("a replayed action that the chain refuses fails the load", st, TS_E_PLUGIN);
    snprintf(at, sizeof at, "byte %zu", second);
    TP_CHECK_CONTAINS("replay failure: offset named", ts_last_error(), at);
    TP_CHECK_CONTAINS("replay failure: status named", ts_last_error(), "TS_E_REJECTED");
    TP_CHECK_INT("replay failure: the state is put back", tp_state_int(s, "/counter", -1), 0);
    tp_destroy(s);

    /* A snapshot that the store refuses (not an object) fails the load too,
     * naming the snapshot and the store's status. */
    buf[0] = '\0';
    add_record(buf, sizeof buf, 'A', "{\"type\":\"inc\"}");
    second = strlen(buf);
    add_record(buf, sizeof buf, 'S', "[40]");
    add_record(buf, sizeof buf, 'A', "{\"type\":\"inc\"}");
    spit(path, buf, strlen(buf));
    s = journaled(path, NULL, &st);
    TP_CHECK_STATUS("a snapshot the store refuses fails the load", st, TS_E_PLUGIN);
    snprintf(at, sizeof at, "snapshot at byte %zu", second);
    TP_CHECK_CONTAINS("snapshot failure: offset named", ts_last_error(), at);
    TP_CHECK_CONTAINS("snapshot failure: status named", ts_last_error(), "TS_E_JSON");
    TP_CHECK_INT("snapshot failure: the state is unchanged", tp_state_int(s, "/counter", -1), 0);
    tp_destroy(s);
}

/* ---- Order of nested dispatches -------------------------------------------------- */

/* "seq": an array; {"type":"push","payload":N} appends N. */
static char *seq_reducer(const char *slice, const ts_action *action, void *ctx) {
    char *out;
    size_t n;
    (void)ctx;
    if (slice == NULL) {
        out = malloc(3);
        if (out) strcpy(out, "[]");
        return out;
    }
    if (strcmp(action->type, "push") != 0 || action->payload == NULL) return NULL;
    n = strlen(slice);
    out = malloc(n + strlen(action->payload) + 3);
    if (out == NULL) return NULL;
    if (n == 2) sprintf(out, "[%s]", action->payload);
    else sprintf(out, "%.*s,%s]", (int)(n - 1), slice, action->payload);
    return out;
}

/* A listener that, after "push 1" reached the state, pushes 2 (nested). */
static void push_listener(ts_store *store, void *ctx) {
    char *seq = tp_state(store, "/seq");
    (void)ctx;
    if (seq && strcmp(seq, "[1]") == 0) ts_store_dispatch(store, "{\"type\":\"push\",\"payload\":2}");
    free(seq);
}

void test_journal__nestedDispatchesAreRecordedInReducerOrder(void) {
    const char *path = path_in_tmp("nested.journal");
    char config[600], *text, *one, *two;
    ts_store *s = NULL;
    uint64_t token;
    ts_status st;
    ts_store_create(NULL, &s);
    ts_store_add_reducer(s, "seq", seq_reducer, NULL);
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"snapshot_every\":1}", path);
    TP_CHECK_STATUS("load", tp_load(s, tp_plugin("journal"), config), TS_OK);
    ts_store_subscribe(s, NULL, push_listener, NULL, &token);
    TP_CHECK_STATUS("push 1 (a listener pushes 2 inside it)", ts_store_dispatch(s, "{\"type\":\"push\",\"payload\":1}"), TS_OK);
    {
        char *seq = tp_state(s, "/seq");
        TP_CHECK_STR("the reducers saw 1 then 2", seq, "[1,2]");
        free(seq);
    }
    tp_destroy(s);
    text = slurp(path, NULL);
    one = text ? strstr(text, "\"payload\":1}") : NULL;
    two = text ? strstr(text, "\"payload\":2}") : NULL;
    TP_CHECK("the journal has 1 before 2, as the reducers saw them", one && two && one < two);
    TP_CHECK_CONTAINS("the snapshot after 1 is the state after 1 only", text, "{\"seq\":[1]}");
    free(text);
    s = NULL;
    ts_store_create(NULL, &s);
    ts_store_add_reducer(s, "seq", seq_reducer, NULL);
    st = tp_load(s, tp_plugin("journal"), config);
    TP_CHECK_STATUS("reload", st, TS_OK);
    {
        char *seq = tp_state(s, "/seq");
        TP_CHECK_STR("replay gives the same state", seq, "[1,2]");
        free(seq);
    }
    tp_destroy(s);
    /* Without snapshots, the replay of the actions alone must agree too. */
    path = path_in_tmp("nested2.journal");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"snapshot_every\":0}", path);
    s = NULL;
    ts_store_create(NULL, &s);
    ts_store_add_reducer(s, "seq", seq_reducer, NULL);
    tp_load(s, tp_plugin("journal"), config);
    ts_store_subscribe(s, NULL, push_listener, NULL, &token);
    ts_store_dispatch(s, "{\"type\":\"push\",\"payload\":1}");
    ts_store_dispatch(s, "{\"type\":\"push\",\"payload\":3}");
    tp_destroy(s);
    s = NULL;
    ts_store_create(NULL, &s);
    ts_store_add_reducer(s, "seq", seq_reducer, NULL);
    tp_load(s, tp_plugin("journal"), config);
    {
        char *seq = tp_state(s, "/seq");
        TP_CHECK_STR("action-only replay gives the same state", seq, "[1,2,3]");
        free(seq);
    }
    tp_destroy(s);
}

/* ---- Configs and the host -------------------------------------------------------- */

static void bad_config(const char *config, const char *needle) {
    ts_store *s = NULL;
    char label[300];
    ts_store_create(NULL, &s);
    snprintf(label, sizeof label, "bad config %s", config);
    TP_CHECK_STATUS(label, tp_load(s, tp_plugin("journal"), config), TS_E_PLUGIN);
    snprintf(label, sizeof label, "bad config %s: message", config);
    TP_CHECK_CONTAINS(label, ts_last_error(), needle);
    tp_destroy(s);
}

void test_journal__badConfigIsRefusedNamingTheField(void) {
    char config[600];
    bad_config("{}", "\"path\"");
    bad_config("{\"path\":5}", "\"path\"");
    bad_config("{\"path\":\"x.journal\",\"restore\":1}", "\"restore\" must be true or false, not a number");
    bad_config("{\"path\":\"\"}", "\"path\"");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"fsync\":\"sometimes\"}", path_in_tmp("c.journal"));
    bad_config(config, "\"fsync\"");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"fsync\":0}", path_in_tmp("c.journal"));
    bad_config(config, "\"fsync\"");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"fsync\":true}", path_in_tmp("c.journal"));
    bad_config(config, "\"fsync\"");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"snapshot_every\":-1}", path_in_tmp("c.journal"));
    bad_config(config, "\"snapshot_every\"");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"snapshot_every\":\"10\"}", path_in_tmp("c.journal"));
    bad_config(config, "\"snapshot_every\"");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"fsync\":18446744073709551616}", path_in_tmp("c.journal"));
    bad_config(config, "above 18446744073709551615");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"snapshot_every\":1e3}", path_in_tmp("c.journal"));
    bad_config(config, "exponent");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"snapshot_every\":18446744073709551616}", path_in_tmp("c.journal"));
    bad_config(config, "above 18446744073709551615");
    snprintf(config, sizeof config, "{\"path\":\"%s\\u0000x\"}", path_in_tmp("c.journal"));
    bad_config(config, "without NUL");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"fsync\\u0000\":1}", path_in_tmp("c.journal"));
    bad_config(config, "unknown config field \"fsync\\u0000\"");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"snapshots\":10}", path_in_tmp("c.journal"));
    bad_config(config, "\"snapshots\"");
    bad_config("{\"path\":\"/nonexistent-folder-ts/x.journal\"}", "cannot open");
    snprintf(config, sizeof config, "{\"path\":\"%s\"}", tmpdir);
    bad_config(config, "Is a directory");
    bad_config("[\"x.journal\"]", "must be a JSON object, not an array");
    bad_config("true", "not a boolean");
    bad_config("5", "not a number");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"snapshot_every\":1.5}", path_in_tmp("c.journal"));
    bad_config(config, "\"snapshot_every\"");
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"fsync\":2.5}", path_in_tmp("c.journal"));
    bad_config(config, "\"fsync\"");
    bad_config("{\"path\":\"a\\u0000b\"}", "without NUL");
    /* A journal that is not a regular file (a FIFO opens, but is no journal). */
    unlink(path_in_tmp("fifo.journal"));
    if (mkfifo(path_in_tmp("fifo.journal"), 0600) == 0) {
        snprintf(config, sizeof config, "{\"path\":\"%s\"}", path_in_tmp("fifo.journal"));
        bad_config(config, "not a regular file");
    } else {
        TP_CHECK("mkfifo for the FIFO case", 0);
    }
}

/* Counts over INT64_MAX: the whole uint64 range is accepted. */
void test_journal__configCountsTakeTheWholeUint64Range(void) {
    static const char *const extras[] = {
        ",\"fsync\":18446744073709551615",
        ",\"fsync\":9223372036854775808",
        ",\"snapshot_every\":18446744073709551615",
        ",\"snapshot_every\":9223372036854775808,\"fsync\":\"never\"",
    };
    size_t i;
    for (i = 0; i < sizeof extras / sizeof extras[0]; i++) {
        char name[200];
        const char *path = path_in_tmp("range.journal");
        ts_status st;
        ts_store *s;
        unlink(path);
        s = journaled(path, extras[i], &st);
        snprintf(name, sizeof name, "load %s", extras[i]);
        TP_CHECK_STATUS(name, st, TS_OK);
        snprintf(name, sizeof name, "%s: dispatch", extras[i]);
        TP_CHECK_STATUS(name, ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_OK);
        tp_destroy(s);
        unlink(path);
    }
    /* A key twice ("fsync":"always","fsync":"never"): the host refuses it. */
    if (tp_real_loader()) {
        char config[600];
        ts_store *s = NULL;
        ts_store_create(NULL, &s);
        snprintf(config, sizeof config, "{\"path\":\"%s\",\"fsync\":\"always\",\"fsync\":\"never\"}",
                 path_in_tmp("dup.journal"));
        TP_CHECK_STATUS("fsync twice", tp_load(s, tp_plugin("journal"), config), TS_E_JSON);
        TP_CHECK_CONTAINS("fsync twice: named", ts_last_error(), "duplicate key \"fsync\"");
        tp_destroy(s);
    }
}

void test_journal__secondStoreOnTheSameJournalIsRefused(void) {
    const char *path = path_in_tmp("locked.journal");
    ts_status st;
    ts_store *a = journaled(path, NULL, &st), *b;
    TP_CHECK_STATUS("first store", st, TS_OK);
    b = journaled(path, NULL, &st);
    TP_CHECK_STATUS("a second store on the same journal is refused", st, TS_E_PLUGIN);
    TP_CHECK_CONTAINS("in use", ts_last_error(), "in use");
    TP_CHECK_CONTAINS("by a store of this process", ts_last_error(), "in use by another store of this process");
    tp_destroy(b);
    tp_destroy(a);
    b = journaled(path, NULL, &st);
    TP_CHECK_STATUS("free again after the first store is gone", st, TS_OK);
    tp_destroy(b);
}

void test_journal__descriptorAndDirectCreateFollowThePluginAbi(void) {
    const ts_plugin *p = tp_descriptor(tp_plugin("journal"), TS_PLUGIN_ABI_VERSION);
    ts_store_api old = tp_fake_api((uint32_t)offsetof(ts_store_api, replace_state));
    ts_store_api none = tp_fake_api(sizeof(ts_store_api));
    char config[600];
    void *self = NULL;
    char *err = NULL;
    TP_CHECK("descriptor", p != NULL);
    if (p == NULL) return;
    TP_CHECK_STR("name", p->name, "journal");
    snprintf(config, sizeof config, "{\"path\":\"%s\"}", path_in_tmp("direct.journal"));
    TP_CHECK_STATUS("a table without replace_state is refused", p->create(config, &old, &self, &err), TS_E_ABI);
    TP_CHECK_CONTAINS("naming replace_state", err, "replace_state");
    TP_CHECK_CONTAINS("naming the struct_size", err, "struct_size");
    free(err);
    err = NULL;
    none.replace_state = NULL;
    TP_CHECK_STATUS("a NULL replace_state is refused", p->create(config, &none, &self, &err), TS_E_ABI);
    free(err);
    TP_CHECK("the file is not even created", file_size(path_in_tmp("direct.journal")) < 0);
    none = tp_fake_api(sizeof(ts_store_api));
    TP_CHECK_STATUS("no table", p->create(config, NULL, &self, &err), TS_E_ARGUMENT);
    TP_CHECK_STATUS("no self", p->create(config, &none, NULL, &err), TS_E_ARGUMENT);
    err = NULL;
    TP_CHECK_STATUS("a NULL config has no path", p->create(NULL, &none, &self, &err), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("naming path", err, "\"path\"");
    free(err);
    snprintf(config, sizeof config, " \t\r\n{ \t\r\n\"path\" \t\r\n: \t\r\n\"%s\" \t\r\n, \"snapshot_every\" : -1 }",
             path_in_tmp("direct.journal"));
    err = NULL;
    TP_CHECK_STATUS("white space of every kind is read", p->create(config, &none, &self, &err), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("up to the bad field", err, "\"snapshot_every\"");
    free(err);
    TP_CHECK_STATUS("malformed config, NULL error_message", p->create("{\"path\":\"x\",", &none, &self, NULL), TS_E_PLUGIN);
    err = NULL;
    TP_CHECK_STATUS("malformed config", p->create("{\"path\" \"x\"}", &none, &self, &err), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("says malformed", err, "malformed");
    free(err);
}

/* ---- Children: SIGKILL and write failures --------------------------------------- */

/* Child: dispatches "inc" forever with fsync "always"; after each TS_OK writes
 * the counter value it acknowledged (8 bytes) to fd. */
static int child_kill(const char *path, int fd) {
    ts_status st;
    uint64_t value;
    ts_store *s = journaled(path, ",\"fsync\":\"always\",\"snapshot_every\":64", &st);
    if (st != TS_OK) {
        fprintf(stderr, "child: load failed: %s\n", ts_last_error());
        return 2;
    }
    value = (uint64_t)tp_state_int(s, "/counter", -1);
    for (;;) {
        /* Big-ish records make a torn write possible. */
        if (ts_store_dispatch(s, "{\"type\":\"inc\",\"pad\":\"................................................................"
                                 "................................................................................\"}") == TS_OK) {
            value++;
            if (write(fd, &value, sizeof value) != (ssize_t)sizeof value) return 3;
        }
    }
}

static pid_t spawn(const char *mode, const char *path, int fd) {
    char fd_text[16];
    pid_t pid;
    snprintf(fd_text, sizeof fd_text, "%d", fd);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0) {
        execl(self_exe, "test_journal", mode, path, fd_text, "--plugins", tp_plugin_dir(), (char *)NULL);
        _exit(127);
    }
    return pid;
}

void test_journal__sigkillLosesNoAcknowledgedAction(void) {
    if (ts_test_quick) {
        ts_test_skip("no SIGKILL rounds with --quick (valgrind)");
        return;
    }
    const char *path = path_in_tmp("kill.journal");
    int round;
    long long restored = 0;
    for (round = 0; round < 4; round++) {
        int fds[2], status = 0;
        uint64_t value, last = (uint64_t)restored;
        uint64_t target = (uint64_t)restored + 200 + (uint64_t)round * 97;
        pid_t pid;
        ssize_t n;
        ts_status st;
        ts_store *s;
        char label[128];
        if (pipe(fds) != 0) return;
        pid = spawn("--child-kill", path, fds[1]);
        close(fds[1]);
        while ((n = read(fds[0], &value, sizeof value)) == (ssize_t)sizeof value) {
            last = value;
            if (value >= target) break;
        }
        kill(pid, SIGKILL);
        /* Whatever it wrote before dying was acknowledged too. */
        while (read(fds[0], &value, sizeof value) == (ssize_t)sizeof value) last = value;
        close(fds[0]);
        waitpid(pid, &status, 0);
        snprintf(label, sizeof label, "round %d: the child was killed by SIGKILL", round);
        TP_CHECK(label, WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        tp_capture_begin();
        s = journaled(path, NULL, &st);
        free(tp_capture_end()); /* a torn-record warning is fine here */
        snprintf(label, sizeof label, "round %d: the journal loads after SIGKILL", round);
        TP_CHECK_STATUS(label, st, TS_OK);
        restored = tp_state_int(s, "/counter", -1);
        snprintf(label, sizeof label, "round %d: restored %lld >= acknowledged %llu", round, restored,
                 (unsigned long long)last);
        TP_CHECK(label, restored >= (long long)last);
        snprintf(label, sizeof label, "round %d: restored %lld <= acknowledged %llu + 1", round, restored,
                 (unsigned long long)last);
        TP_CHECK(label, restored <= (long long)last + 1);
        snprintf(label, sizeof label, "round %d: hundreds of dispatches acknowledged", round);
        TP_CHECK(label, last >= target);
        tp_destroy(s);
    }
}

/* Issue 18, item 16: a process killed mid-dispatch keeps the journal's lock
 * until the kernel has closed its files, which can be after whoever killed
 * it went on (`timeout -s KILL` kills itself with the same signal, so the
 * shell restarts at once). A restart right then must wait for that dying
 * owner, not refuse. Each round kills a writer mid-dispatch and restarts
 * before reaping it (as the shell does after timeout). */
void test_journal__restartRightAfterSigkillWaitsForTheDyingOwner(void) {
    if (ts_test_quick) {
        ts_test_skip("no SIGKILL rounds with --quick (valgrind)");
        return;
    }
    const char *path = path_in_tmp("restart.journal");
    int round, rounds = 20, loaded = 0;
    long long restored = 0;
    for (round = 0; round < rounds; round++) {
        int fds[2], status = 0;
        uint64_t value, last = (uint64_t)restored;
        uint64_t target = (uint64_t)restored + 20;
        pid_t pid;
        ts_status st;
        ts_store *s;
        char label[160];
        if (pipe(fds) != 0) return;
        pid = spawn("--child-kill", path, fds[1]);
        close(fds[1]);
        while (read(fds[0], &value, sizeof value) == (ssize_t)sizeof value) {
            last = value;
            if (value >= target) break;
        }
        kill(pid, SIGKILL);
        tp_capture_begin();
        s = journaled(path, NULL, &st); /* at once: the child is not reaped yet */
        free(tp_capture_end());         /* a torn-record warning is fine here */
        snprintf(label, sizeof label, "round %d: a restart right after SIGKILL loads the journal", round);
        TP_CHECK_STATUS(label, st, TS_OK);
        if (st != TS_OK) fprintf(stderr, "  round %d: %s\n", round, ts_last_error());
        loaded += st == TS_OK;
        /* The lock was free, so the child's files are closed: whatever it
         * acknowledged is in the pipe, and it writes no more. */
        while (read(fds[0], &value, sizeof value) == (ssize_t)sizeof value) last = value;
        close(fds[0]);
        waitpid(pid, &status, 0);
        snprintf(label, sizeof label, "round %d: the child was killed by SIGKILL", round);
        TP_CHECK(label, WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        if (st == TS_OK) {
            restored = tp_state_int(s, "/counter", -1);
            snprintf(label, sizeof label, "round %d: restored %lld is what was acknowledged (%llu, or one more)", round,
                     restored, (unsigned long long)last);
            TP_CHECK(label, restored >= (long long)last && restored <= (long long)last + 1);
        }
        tp_destroy(s);
        if (st != TS_OK) { /* start the next round from what is on disk */
            s = journaled(path, NULL, &st);
            restored = tp_state_int(s, "/counter", -1);
            tp_destroy(s);
        }
    }
    TP_CHECK_INT("every restart right after SIGKILL succeeded", loaded, rounds);
}

/* Child: loads the journal, writes one byte to fd, then waits to be killed. */
static int child_hold(const char *path, int fd) {
    ts_status st;
    ts_store *s = journaled(path, NULL, &st);
    (void)s;
    if (st != TS_OK) {
        fprintf(stderr, "child: load failed: %s\n", ts_last_error());
        return 2;
    }
    if (write(fd, "r", 1) != 1) return 3;
    for (;;) pause();
}

/* A store of another process that is alive (running, or stopped) is refused
 * at once, naming that process; once it is killed, it is waited for. */
void test_journal__liveOwnerInAnotherProcessIsRefusedNamingIt(void) {
    if (ts_test_quick) {
        ts_test_skip("no child processes with --quick (valgrind)");
        return;
    }
    const char *path = path_in_tmp("owned.journal");
    int fds[2], status = 0;
    char ready = 0, pid_text[64];
    pid_t pid;
    ts_status st;
    ts_store *s;
    if (pipe(fds) != 0) return;
    pid = spawn("--child-hold", path, fds[1]);
    close(fds[1]);
    TP_CHECK("the owner loaded the journal", read(fds[0], &ready, 1) == 1 && ready == 'r');
    snprintf(pid_text, sizeof pid_text, "process %ld holds its lock", (long)pid);
    s = journaled(path, NULL, &st);
    TP_CHECK_STATUS("a live owner in another process: refused", st, TS_E_PLUGIN);
    TP_CHECK_CONTAINS("in use, naming the owner", ts_last_error(), pid_text);
    tp_destroy(s);
    kill(pid, SIGSTOP);
    waitpid(pid, &status, WUNTRACED);
    s = journaled(path, NULL, &st);
    TP_CHECK_STATUS("a stopped owner is alive: refused", st, TS_E_PLUGIN);
    TP_CHECK_CONTAINS("naming it", ts_last_error(), pid_text);
    tp_destroy(s);
    kill(pid, SIGKILL); /* SIGKILL ends a stopped process too */
    s = journaled(path, NULL, &st);
    TP_CHECK_STATUS("the owner killed: the journal loads at once", st, TS_OK);
    tp_destroy(s);
    close(fds[0]);
    waitpid(pid, &status, 0);
    TP_CHECK("the owner was killed by SIGKILL", WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

/* Without /proc/locks (a variant built with JOURNAL_PROC_LOCKS pointing
 * nowhere) the holder is unknown: waited for a bounded time, then refused
 * with a message that says so. */
void test_journal__holderThatCannotBeNamedIsRefusedSayingSo(void) {
    const char *path = path_in_tmp("unknown.journal");
    char variant[600], config[700];
    struct stat st_variant;
    ts_status st;
    ts_store *a = journaled(path, NULL, &st), *b = NULL;
    snprintf(variant, sizeof variant, "%s/noproc/journal.so", tp_plugin_dir());
    TP_CHECK_STATUS("first store", st, TS_OK);
    TP_CHECK("the variant without /proc/locks is built", stat(variant, &st_variant) == 0);
    snprintf(config, sizeof config, "{\"path\":\"%s\"}", path);
    ts_store_create(NULL, &b);
    ts_store_add_reducer(b, "counter", tp_counter_reducer, NULL);
    TP_CHECK_STATUS("a holder it cannot name: refused", tp_load(b, variant, config), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("saying so", ts_last_error(), "does not say by whom");
    tp_destroy(b);
    tp_destroy(a);
}

/* Child: the file system refuses writes (RLIMIT_FSIZE) in the middle. */
static int child_fsize(const char *path) {
    ts_status st;
    struct rlimit limit;
    ts_store *s;
    signal(SIGXFSZ, SIG_IGN);
    s = journaled(path, ",\"fsync\":\"always\",\"snapshot_every\":0", &st);
    TP_CHECK_STATUS("child: load", st, TS_OK);
    TP_CHECK_STATUS("child: inc 1", ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_OK);
    TP_CHECK_STATUS("child: inc 2", ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_OK);
    limit.rlim_cur = limit.rlim_max = RLIM_INFINITY;
    getrlimit(RLIMIT_FSIZE, &limit);
    limit.rlim_cur = (rlim_t)file_size(path) + 10; /* a partial write, then EFBIG */
    setrlimit(RLIMIT_FSIZE, &limit);
    TP_CHECK_STATUS("child: a write that fails is reported", ts_store_dispatch(s, "{\"type\":\"add\",\"payload\":40}"), TS_E_IO);
    TP_CHECK_CONTAINS("child: naming the action and the file", ts_last_error(), "\"add\"");
    TP_CHECK_INT("child: the state changed anyway (the reducers had run)", tp_state_int(s, "/counter", -1), 42);
    TP_CHECK_STATUS("child: later actions are refused while the journal is behind", ts_store_dispatch(s, "{\"type\":\"inc\"}"),
                    TS_E_IO);
    TP_CHECK_INT("child: refused before the reducers", tp_state_int(s, "/counter", -1), 42);
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_FSIZE, &limit);
    TP_CHECK_STATUS("child: once writes work, a snapshot catches up", ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_OK);
    TP_CHECK_INT("child: state", tp_state_int(s, "/counter", -1), 43);
    tp_destroy(s);
    return ts_test_failed() ? 1 : 0;
}

void test_journal__failedWriteIsReportedAndCaughtUpBySnapshot(void) {
    const char *path = path_in_tmp("fsize.journal");
    int status = 0, a, sn;
    pid_t pid = spawn("--child-fsize", path, -1);
    ts_status st;
    ts_store *s;
    waitpid(pid, &status, 0);
    TP_CHECK("the write-failure child passed its checks", WIFEXITED(status) && WEXITSTATUS(status) == 0);
    TP_CHECK("no partial record left behind", scan_journal(path, &a, &sn, NULL));
    TP_CHECK_INT("records: 3 actions", a, 3);
    TP_CHECK_INT("records: the catch-up snapshot", sn, 1);
    s = journaled(path, NULL, &st);
    TP_CHECK_STATUS("reload", st, TS_OK);
    TP_CHECK_INT("the state as the child last had it", tp_state_int(s, "/counter", -1), 43);
    tp_destroy(s);
}

/* ---- Patch reducers (issue 19) ---------------------------------------------- */

/* "todos" answers with RFC 6902 patches (ts_reducer_patch) for every action:
 * "todos/add" appends the payload, "todos/done" (payload: an index) tests
 * that the todo is not done and sets it, "todos/bad" gives a patch whose
 * "test" fails (the dispatch fails). */
static char *todos_patch_reducer(const char *slice, const ts_action *action, void *ctx) {
    char patch[512];
    ts_json payload;
    int64_t index;
    (void)ctx;
    if (slice == NULL) return ts_strdup("[]");
    if (strcmp(action->type, "todos/add") == 0 && ts_json_at(action->json, "/payload", &payload) == TS_OK) {
        snprintf(patch, sizeof patch, "[{\"op\":\"add\",\"path\":\"/-\",\"value\":{\"title\":%.*s,\"done\":false}}]",
                 (int)payload.length, payload.text);
        ts_reducer_patch(patch);
    } else if (strcmp(action->type, "todos/done") == 0 && ts_json_at(action->json, "/payload", &payload) == TS_OK &&
               ts_json_int(&payload, &index) == TS_OK) {
        snprintf(patch, sizeof patch,
                 "[{\"op\":\"test\",\"path\":\"/%lld/done\",\"value\":false},"
                 "{\"op\":\"replace\",\"path\":\"/%lld/done\",\"value\":true}]", (long long)index, (long long)index);
        ts_reducer_patch(patch);
    } else if (strcmp(action->type, "todos/bad") == 0) {
        ts_reducer_patch("[{\"op\":\"add\",\"path\":\"/-\",\"value\":1},{\"op\":\"test\",\"path\":\"/0\",\"value\":\"no\"}]");
    }
    return NULL;
}

/* "tags", added with ts_store_add_reducer_for for "tags/" "*" only: an
 * object whose members count the tags, moved and copied by patches. */
static char *tags_patch_reducer(const char *slice, const ts_action *action, void *ctx) {
    char patch[512];
    ts_json payload;
    const char *name;
    size_t length;
    int *calls = ctx;
    if (slice == NULL) return ts_strdup("{\"seen\":[]}");
    (*calls)++;
    if (ts_json_at(action->json, "/payload", &payload) != TS_OK || ts_json_string(&payload, &name, &length) != TS_OK)
        return NULL;
    if (strcmp(action->type, "tags/add") == 0)
        snprintf(patch, sizeof patch, "[{\"op\":\"add\",\"path\":\"/%.*s\",\"value\":[]},"
                 "{\"op\":\"copy\",\"from\":\"/seen\",\"path\":\"/%.*s/-\"},"
                 "{\"op\":\"add\",\"path\":\"/seen/-\",\"value\":\"%.*s\"}]",
                 (int)length, name, (int)length, name, (int)length, name);
    else if (strcmp(action->type, "tags/rename") == 0)
        snprintf(patch, sizeof patch, "[{\"op\":\"move\",\"from\":\"/%.*s\",\"path\":\"/renamed\"},"
                 "{\"op\":\"remove\",\"path\":\"/seen/0\"}]", (int)length, name);
    else
        return NULL;
    ts_reducer_patch(patch);
    return NULL;
}

static const char *const tags_types[] = {"tags/*", NULL};

static ts_store *patch_journaled(const char *path, int *tag_calls, ts_status *status) {
    char config[1024];
    ts_store *s = NULL;
    if (ts_store_create(NULL, &s) != TS_OK) return NULL;
    ts_store_add_reducer(s, "todos", todos_patch_reducer, NULL);
    ts_store_add_reducer_for(s, "tags", tags_types, tags_patch_reducer, tag_calls);
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"snapshot_every\":5}", path);
    *status = tp_load(s, tp_plugin("journal"), config);
    return s;
}

void test_journal__patchReducersAreRecordedAndReplayed(void) {
    const char *path = path_in_tmp("patch.journal");
    static const char *const actions[] = {
        "{\"type\":\"todos/add\",\"payload\":\"milk\"}", "{\"type\":\"tags/add\",\"payload\":\"home\"}",
        "{\"type\":\"todos/add\",\"payload\":\"bread\"}", "{\"type\":\"todos/done\",\"payload\":1}",
        "{\"type\":\"other\"}", "{\"type\":\"tags/add\",\"payload\":\"work\"}",
        "{\"type\":\"todos/add\",\"payload\":{\"nested\":[1,2.50,\"x\"]}}", "{\"type\":\"tags/rename\",\"payload\":\"home\"}",
        "{\"type\":\"todos/done\",\"payload\":0}"};
    ts_status st;
    int tag_calls = 0, a, sn;
    size_t i;
    char *before, *after;
    ts_store *s = patch_journaled(path, &tag_calls, &st);
    TP_CHECK_STATUS("patch reducers: journal loaded", st, TS_OK);
    for (i = 0; i < sizeof actions / sizeof actions[0]; i++)
        TP_CHECK_STATUS("patch reducers: dispatch", ts_store_dispatch(s, actions[i]), TS_OK);
    TP_CHECK_INT("the filtered reducer saw only its types", tag_calls, 3);
    scan_journal(path, &a, &sn, NULL);
    int recorded = a;
    TP_CHECK_STATUS("a patch whose test fails fails the dispatch", ts_store_dispatch(s, "{\"type\":\"todos/bad\"}"),
                    TS_E_REDUCER);
    TP_CHECK_CONTAINS("its message names the op and path", ts_last_error(), "op 1 (\"test\" at \"/0\")");
    TP_CHECK_STATUS("a todo done twice: the patch's test fails", ts_store_dispatch(s, actions[3]), TS_E_REDUCER);
    scan_journal(path, &a, &sn, NULL);
    TP_CHECK_INT("failed patches are not journaled", a, recorded);
    before = tp_state(s, "");
    TP_CHECK_CONTAINS("the patches applied", before,
                      "\"todos\":[{\"title\":\"milk\",\"done\":true},{\"title\":\"bread\",\"done\":true},"
                      "{\"title\":{\"nested\":[1,2.50,\"x\"]},\"done\":false}]");
    TP_CHECK_CONTAINS("the filtered slice too", before,
                      "\"tags\":{\"seen\":[\"work\"],\"work\":[[\"home\"]],\"renamed\":[[]]}");
    tp_destroy(s);

    tag_calls = 0;
    s = patch_journaled(path, &tag_calls, &st);
    TP_CHECK_STATUS("patch reducers: reload", st, TS_OK);
    after = tp_state(s, "");
    TP_CHECK_STR("reloaded from the journal: the same state, byte for byte", after, before);
    scan_journal(path, &a, &sn, NULL);
    TP_CHECK_INT("replayed patches are not recorded again", a, recorded);
    TP_CHECK("a snapshot was taken (the reload read snapshot + tail)", sn >= 1);
    TP_CHECK_STATUS("and the next patch applies on the restored slice", ts_store_dispatch(s, actions[0]), TS_OK);
    free(after);
    after = tp_state(s, "/todos/3/title");
    TP_CHECK_STR("appended after the restored todos", after, "\"milk\"");
    free(after);
    free(before);
    tp_destroy(s);
}

/* ---- All three through ts_store_load_plugins ------------------------------------ */

static pthread_mutex_t folder_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t folder_cond = PTHREAD_COND_INITIALIZER;
static int folder_changes;

static void folder_listener(ts_store *store, void *ctx) {
    (void)store;
    (void)ctx;
    pthread_mutex_lock(&folder_mutex);
    folder_changes++;
    pthread_cond_broadcast(&folder_cond);
    pthread_mutex_unlock(&folder_mutex);
}

/* Waits (on the condition; deadline 20 s) until the listener ran n times. */
static int wait_changes(int n) {
    struct timespec until;
    int got;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&folder_mutex);
    while (folder_changes < n && pthread_cond_timedwait(&folder_cond, &folder_mutex, &until) == 0) {
    }
    got = folder_changes;
    pthread_mutex_unlock(&folder_mutex);
    return got;
}

static int copy_file(const char *from, const char *to) {
    size_t size;
    char *data = slurp(from, &size);
    if (data == NULL) return 0;
    spit(to, data, size);
    free(data);
    return chmod(to, 0755) == 0;
}

/* Waits until nobody holds the flock of path (polling every 5 ms). */
static int wait_unlocked(const char *path, double seconds) {
    double deadline = tp_now() + seconds;
    int fd = open(path, O_RDONLY | O_CLOEXEC), free_now = 0;
    if (fd < 0) return 0;
    while (!(free_now = flock(fd, LOCK_EX | LOCK_NB) == 0) && tp_now() < deadline) tp_sleep_ms(5);
    close(fd);
    return free_now;
}

typedef ts_status (*load_dir_fn)(ts_store *store, const char *dir);

void test_journal__pluginFolderLoadsTheJournalInOrder(void) {
    if (ts_test_quick && !getenv("TP_FOLDER_UNDER_VALGRIND")) {
        ts_test_skip("not under valgrind (--quick): ts_store_load_plugins trips valgrind in PluginSet.pluginFiles(in:)");
        return;
    }
    const char *dir = path_in_tmp("plugins");
    char config[600], file[600];
    void *sym = dlsym(RTLD_DEFAULT, "ts_store_load_plugins");
    load_dir_fn load_dir = NULL;
    ts_store *s = NULL;
    uint64_t token;
    int a, sn;
    if (sym == NULL || tp_real_loader() == NULL) {
        printf("journal: ts_store_load_plugins not in the library: folder test skipped\n");
        return;
    }
    memcpy(&load_dir, &sym, sizeof load_dir);
    mkdir(dir, 0755);
    snprintf(file, sizeof file, "%s/10-guard.so", dir);
    TP_CHECK("copy guard", copy_file(tp_plugin("guard"), file));
    snprintf(file, sizeof file, "%s/20-delay.so", dir);
    TP_CHECK("copy delay", copy_file(tp_plugin("delay"), file));
    snprintf(file, sizeof file, "%s/90-journal.so", dir);
    TP_CHECK("copy journal", copy_file(tp_plugin("journal"), file));
    snprintf(file, sizeof file, "%s/10-guard.json", dir);
    spit(file, "{\"deny\": [\"admin/*\"]}", strlen("{\"deny\": [\"admin/*\"]}"));
    snprintf(file, sizeof file, "%s/90-journal.json", dir);
    snprintf(config, sizeof config, "{\"path\": \"%s\", \"fsync\": \"always\"}", path_in_tmp("folder.journal"));
    spit(file, config, strlen(config));

    ts_store_create(NULL, &s);
    ts_store_add_reducer(s, "counter", tp_counter_reducer, NULL);
    TP_CHECK_STATUS("load the folder", load_dir(s, dir), TS_OK);
    tp_capture_begin(); /* the delayed admin action's refusal is reported on stderr */
    ts_store_subscribe(s, NULL, folder_listener, NULL, &token);
    TP_CHECK_STATUS("guard first: admin refused", ts_store_dispatch(s, "{\"type\":\"admin/x\"}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("by the guard", ts_last_error(), "deny rule");
    TP_CHECK_STATUS("a delayed admin action is swallowed",
                    ts_store_dispatch(s, "{\"type\":\"@@delay\",\"payload\":{\"ms\":0,\"action\":{\"type\":\"admin/y\"}}}"), TS_OK);
    TP_CHECK_STATUS("a delayed inc",
                    ts_store_dispatch(s, "{\"type\":\"@@delay\",\"payload\":{\"ms\":20,\"action\":{\"type\":\"inc\"}}}"), TS_OK);
    TP_CHECK_STATUS("an inc now", ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_OK);
    TP_CHECK_INT("the delayed inc arrives", wait_changes(2), 2);
    TP_CHECK("the delayed admin action is refused by the guard (reported on stderr)",
             tp_capture_wait("{\"type\":\"admin/y\"} failed with TS_E_REJECTED", 20.0));
    free(tp_capture_end());
    TP_CHECK_INT("counter", tp_state_int(s, "/counter", -1), 2);
    tp_destroy(s);
    /* The listener that woke us runs inside the worker's dispatch: if the
     * worker has not returned from it yet, the library finishes destroying
     * the store (and so closes the journal) on the worker, after
     * ts_store_destroy returned. Wait for the journal's lock to be free. */
    TP_CHECK("the journal is closed soon after the store is destroyed", wait_unlocked(path_in_tmp("folder.journal"), 20.0));
    scan_journal(path_in_tmp("folder.journal"), &a, &sn, NULL);
    TP_CHECK_INT("the journal has the two incs, no @@delay, no refused action", a, 2);

    s = NULL;
    ts_store_create(NULL, &s);
    ts_store_add_reducer(s, "counter", tp_counter_reducer, NULL);
    TP_CHECK_STATUS("reload the folder", load_dir(s, dir), TS_OK);
    TP_CHECK_INT("restored through the folder", tp_state_int(s, "/counter", -1), 2);
    tp_destroy(s);
}

void ts_test_suite_teardown(void) {
    char command[600];
    if (tmpdir[0] == '\0' || getenv("TP_KEEP")) return;
    snprintf(command, sizeof command, "rm -rf '%s'", tmpdir);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

/* The child modes in which the program re-runs itself (spawn): MODE PATH FD. */
static const char *child_mode, *child_path, *child_fd;

int ts_test_suite_option(int argc, char **argv, int i) {
    if (strncmp(argv[i], "--child-", 8) == 0 && i + 2 < argc) {
        child_mode = argv[i];
        child_path = argv[i + 1];
        child_fd = argv[i + 2];
        return 3;
    }
    return tp_option(argc, argv, i);
}

/* A child mode runs here, and exits; otherwise the temporary folder that
 * ts_test_suite_teardown removes. */
void ts_test_suite_setup(void) {
    if (strchr(ts_test_program, '/')) self_exe = ts_test_program;
    if (child_mode != NULL) {
        if (strcmp(child_mode, "--child-kill") == 0) exit(child_kill(child_path, atoi(child_fd)));
        if (strcmp(child_mode, "--child-fsize") == 0) exit(child_fsize(child_path));
        if (strcmp(child_mode, "--child-hold") == 0) exit(child_hold(child_path, atoi(child_fd)));
        fprintf(stderr, "test_journal: unknown child mode %s\n", child_mode);
        exit(2);
    }
    snprintf(tmpdir, sizeof tmpdir, "%s/ts-journal-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
    printf("journal: loading through %s\n", tp_loader_name());
}
