/*
 * journal.c - journal.so after replicate.so (docs/replication.md, the plugin
 * table; Plugins/journal/README.md "Behind replicate.so"): a replica with a
 * journal that restarts. With "restore": false the journal restores nothing
 * and starts its file anew from the state replicate.so brought from the log:
 * the restarted replica's state is the log's fold, the log holds each action
 * once (a fresh store with replicate.so alone folds it to the same count),
 * and the file begins with a snapshot of that state. A journal that restores
 * (the default) after replicate.so is refused once it has records to
 * replay: replicate.so refuses them (ts_store_api's loading names the
 * journal) with a message naming "restore": false, the load fails, the state
 * stays the log's fold and nothing is appended (before the fix: the records
 * were appended again, and the restarted replica read {"count":6}).
 * Usage: journal REPLICATE_SO JOURNAL_SO URL DIR (Tests/replicate/run.sh
 * starts the server and deletes the streams "jrnl" and "jrnl2" first; DIR is a folder for
 * the journal files). Prints "N passed, M failed".
 */
#define _DEFAULT_SOURCE

#include "turnstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const char *replicate_so, *journal_so, *url;

/* count: +1 on "inc". */
static char *count_reducer(const char *slice, const ts_action *action, void *ctx) {
    char text[32];
    long n = slice != NULL ? strtol(slice, NULL, 10) : 0;
    (void)ctx;
    if (slice != NULL && strcmp(slice, "null") != 0 && strcmp(action->type, "inc") != 0) return NULL;
    snprintf(text, sizeof text, "%ld", strcmp(action->type, "inc") == 0 ? n + 1 : n);
    return ts_strdup(text);
}

static ts_store *new_store(void) {
    ts_store *store = NULL;
    check(ts_store_create(NULL, &store) == TS_OK && ts_store_add_reducer(store, "count", count_reducer, NULL) == TS_OK, "a store with a count",
          ts_last_error());
    return store;
}

/* A replica: replicate.so on `stream`, then (journal_config non-NULL) journal.so. */
static ts_store *replica(const char *stream, const char *journal_config, ts_status *journal_status) {
    char config[600];
    ts_store *store = new_store();
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"stream\":\"%s\"}", url, stream);
    check(ts_store_load_plugin(store, replicate_so, config) == TS_OK, "replicate.so joins", ts_last_error());
    if (journal_config != NULL) *journal_status = ts_store_load_plugin(store, journal_so, journal_config);
    return store;
}

/* The log's fold: a fresh store with replicate.so alone. */
static void check_log(const char *stream, const char *want, const char *what) {
    ts_store *store = replica(stream, NULL, NULL);
    check_state(store, want, what);
    ts_store_destroy(store);
}

static void incs(ts_store *store, int n) {
    int i;
    for (i = 0; i < n; i++) check(ts_store_dispatch(store, "{\"type\":\"inc\"}") == TS_OK, "inc", ts_last_error());
}

/* The file's text (at most 4 KB). */
static void read_text(const char *path, char *out, size_t size) {
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(out, 1, size - 1, f) : 0;
    out[n] = '\0';
    if (f) fclose(f);
}

/* Whether the file's first line is a snapshot of `state` and it holds
 * `actions` action records after it, and nothing else. */
static void check_file(const char *path, const char *state, int actions, const char *what) {
    char text[4096], *line, *save = NULL;
    int first = 1, ok = 1, seen = 0;
    read_text(path, text, sizeof text);
    char copy[4096];
    memcpy(copy, text, sizeof copy);
    for (line = strtok_r(copy, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        const char *json = strchr(line, '{');
        if (first) {
            ok = ok && line[0] == 'S' && json != NULL && strcmp(json, state) == 0;
            first = 0;
        } else {
            ok = ok && line[0] == 'A' && json != NULL && strcmp(json, "{\"type\":\"inc\"}") == 0;
            seen++;
        }
    }
    check(ok && !first && seen == actions, what, text);
}

int main(int argc, char **argv) {
    char path[512], journal_config[700];
    ts_store *store;
    ts_status status = TS_OK;
    if (argc < 5) {
        fprintf(stderr, "usage: %s REPLICATE_SO JOURNAL_SO URL DIR\n", argv[0]);
        return 2;
    }
    replicate_so = argv[1];
    journal_so = argv[2];
    url = argv[3];
    snprintf(path, sizeof path, "%s/restore-false.journal", argv[4]);
    remove(path);
    snprintf(journal_config, sizeof journal_config, "{\"path\":\"%s\",\"restore\":false}", path);

    /* First run: 3 actions, each an entry of the log and a record of the file. */
    store = replica("jrnl", journal_config, &status);
    check(status == TS_OK, "journal.so {\"restore\": false} loads after replicate.so", ts_last_error());
    incs(store, 3);
    check_state(store, "{\"count\":3}", "3 x inc");
    ts_store_destroy(store);
    check_file(path, "{\"count\":0}", 3, "the file: a snapshot of the state at the load, then the 3 actions");

    /* Restart: the state is replicate.so's, from the log; nothing replayed. */
    store = replica("jrnl", journal_config, &status);
    check(status == TS_OK, "the restarted replica's journal loads", ts_last_error());
    check_state(store, "{\"count\":3}", "after the restart: the log's fold, not the journal replayed on top of it");
    check_log("jrnl", "{\"count\":3}", "the log holds the 3 actions once (a fresh replica folds it to 3)");
    check_file(path, "{\"count\":3}", 0, "the file starts anew: a snapshot of the state the log brought");
    incs(store, 1);
    check_state(store, "{\"count\":4}", "one more inc");
    ts_store_destroy(store);
    check_log("jrnl", "{\"count\":4}", "the log holds 4 actions");
    check_file(path, "{\"count\":3}", 1, "the file: the snapshot, then the action after the restart");

    /* The misconfiguration: a journal that restores, after replicate.so. */
    snprintf(path, sizeof path, "%s/restore-true.journal", argv[4]);
    remove(path);
    snprintf(journal_config, sizeof journal_config, "{\"path\":\"%s\"}", path);
    store = replica("jrnl2", journal_config, &status);
    check(status == TS_OK, "a journal that restores loads on an empty file (nothing to replay)", ts_last_error());
    incs(store, 3);
    ts_store_destroy(store);
    store = replica("jrnl2", journal_config, &status);
    check(status == TS_E_PLUGIN && strstr(ts_last_error(), "give the journal \"restore\": false") != NULL &&
              strstr(ts_last_error(), "TS_E_REJECTED") != NULL,
          "restarted, it is refused: replicate.so refuses its replay and names the fix", ts_last_error());
    check_state(store, "{\"count\":3}", "the refused load leaves the log's fold");
    check(ts_store_dispatch(store, "{\"type\":\"inc\"}") == TS_OK, "the replica goes on without the journal",
          ts_last_error());
    check_state(store, "{\"count\":4}", "one more inc");
    ts_store_destroy(store);
    check_log("jrnl2", "{\"count\":4}", "nothing was appended by the refused load (a fresh replica folds the log to 4)");

    /* A bad value is refused with the field named. */
    {
        ts_store *bad = new_store();
        snprintf(journal_config, sizeof journal_config, "{\"path\":\"%s\",\"restore\":\"no\"}", path);
        status = ts_store_load_plugin(bad, journal_so, journal_config);
        check(status == TS_E_PLUGIN && strstr(ts_last_error(), "\"restore\" must be true or false") != NULL,
              "\"restore\": \"no\" is refused, the field named", ts_last_error());
        ts_store_destroy(bad);
    }

    return check_summary();
}
