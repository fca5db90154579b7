/* Versioned state through the journal plugin (docs/migrations.md): a journal
 * written by a program at state version 1 is loaded by one at version 3
 * with the migrations 1->2 and 2->3 (its last snapshot migrated, the actions
 * after it replayed through the new reducers), and the journal then records
 * version 3 and a snapshot of the migrated state; a journal without a
 * version record is of version 0; a downgrade, a missing step and a failing
 * migration are refused with their messages, the state and the file
 * unchanged. On the one C harness (plugin_test.h); option --plugins DIR. */
#include "plugin_test.h"

#include <sys/stat.h>

static char tmpdir[256];

static char *path_in_tmp(const char *name) {
    static char paths[4][512];
    static int turn;
    char *p = paths[turn++ % 4];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

static char *slurp(const char *path) {
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
    fclose(f);
    return buf;
}

#include "todo_versions.h"

static char *config_for(const char *path) {
    static char config[700];
    snprintf(config, sizeof config, "{\"path\":\"%s\",\"fsync\":\"never\",\"snapshot_every\":2}", path);
    return config;
}

/* Writes a journal with the program at `version`: a, b (then a snapshot), c. */
static void write_journal(const char *path, uint32_t version) {
    ts_store *store = program(version, "");
    unlink(path);
    TP_CHECK_STATUS("load journal (writer)", tp_load(store, tp_plugin("journal"), config_for(path)), TS_OK);
    TP_CHECK_STATUS("add a", ts_store_dispatch(store, "{\"type\":\"add\",\"payload\":\"a\"}"), TS_OK);
    TP_CHECK_STATUS("add b", ts_store_dispatch(store, "{\"type\":\"add\",\"payload\":\"b\"}"), TS_OK);
    TP_CHECK_STATUS("add c", ts_store_dispatch(store, "{\"type\":\"add\",\"payload\":\"c\"}"), TS_OK);
    tp_destroy(store);
}


void test_migrate__aVersion1JournalLoadsAtVersion3(void) {
    const char *path = path_in_tmp("v1.journal");
    char *text, *state;
    ts_store *store;
    write_journal(path, 1);
    text = slurp(path);
    TP_CHECK("a journal of version 1 starts with its version record",
          text && strncmp(text, "V 13 ", 5) == 0 && strstr(text, " {\"version\":1}\nA ") != NULL);
    free(text);

    store = program(3, "12 23");
    TP_CHECK_STATUS("version 3 loads the version 1 journal", tp_load(store, tp_plugin("journal"), config_for(path)), TS_OK);
    state = tp_state(store, "");
    TP_CHECK_STR("the snapshot (a, b) migrated 1->2->3, then c replayed by version 3's reducer", state, v3_abc);
    free(state);
    TP_CHECK_STATUS("a dispatch at version 3", ts_store_dispatch(store, "{\"type\":\"add\",\"payload\":\"d\"}"), TS_OK);
    tp_destroy(store);
    text = slurp(path);
    TP_CHECK("after the load, a version 3 record and a snapshot of the migrated state",
          text && strstr(text, "{\"version\":3}\nS ") != NULL && strstr(strstr(text, "{\"version\":3}"), v3_abc) != NULL);
    free(text);

    /* The next start needs no migration: the file's last snapshot is of version 3. */
    store = program(3, "");
    TP_CHECK_STATUS("version 3 without migrations loads it again", tp_load(store, tp_plugin("journal"), config_for(path)),
                 TS_OK);
    state = tp_state(store, "/todos/items/3/title");
    TP_CHECK_STR("with the action of version 3 replayed", state, "\"d\"");
    free(state);
    tp_destroy(store);
}

void test_migrate__aJournalWithoutVersionIsVersion0(void) {
    const char *path = path_in_tmp("v0.journal");
    char *text, *state;
    ts_store *store;
    write_journal(path, 0);
    text = slurp(path);
    TP_CHECK("a store without a version writes no version record (the format of before)", text && text[0] == 'A');
    free(text);
    store = program(1, "01");
    TP_CHECK_STATUS("version 1 with a migration from 0 loads it", tp_load(store, tp_plugin("journal"), config_for(path)),
                 TS_OK);
    state = tp_state(store, "/todos/0");
    TP_CHECK_STR("the snapshot migrated 0->1", state, "{\"title\":\"a\"}");
    free(state);
    tp_destroy(store);
}

static void refused(const char *name, const char *path, uint32_t version, const char *steps, const char *needle) {
    char *before = slurp(path), *after, *state;
    ts_store *store = program(version, steps);
    TP_CHECK_STATUS(name, tp_load(store, tp_plugin("journal"), config_for(path)), TS_E_PLUGIN);
    TP_CHECK_CONTAINS(name, ts_last_error(), needle);
    state = tp_state(store, "");
    TP_CHECK_STR("the state is the program's own, unchanged",
              state, version == 3 ? "{\"todos\":{\"items\":[]}}" : "{\"todos\":[]}");
    free(state);
    tp_destroy(store);
    after = slurp(path);
    TP_CHECK("the file is unchanged", before && after && strcmp(before, after) == 0);
    free(before);
    free(after);
}

void test_migrate__aFailingOrMissingStepAndADowngradeAreRefused(void) {
    const char *v1 = path_in_tmp("r1.journal");
    write_journal(v1, 1);
    refused("a failing migration", v1, 3, "12 2x", "migration 2->3 failed: a todo has no title");
    refused("a missing step", v1, 3, "12", "there is no migration from version 2 to 3");
    refused("a downgrade to an unversioned program", v1, 0, "",
            "it was written with state version 1 (the version record at byte 0), newer than this program's version 0: "
            "a downgrade is refused, nothing was loaded");
    {
        /* A journal that version 3 loaded (and so wrote its version record and snapshot). */
        const char *v3 = path_in_tmp("r3.journal");
        ts_store *store;
        write_journal(v3, 1);
        store = program(3, "12 23");
        TP_CHECK_STATUS("version 3 loads it", tp_load(store, tp_plugin("journal"), config_for(v3)), TS_OK);
        tp_destroy(store);
        refused("a downgrade from 3 to 1", v3, 1, "",
                "it was written with state version 3 (the version record at byte ");
        refused("a downgrade from 3 to 1 (the message)", v3, 1, "",
                "newer than this program's version 1: a downgrade is refused, nothing was loaded");
    }
}

int ts_test_suite_option(int argc, char **argv, int i) { return tp_option(argc, argv, i); }

void ts_test_suite_setup(void) {
    snprintf(tmpdir, sizeof tmpdir, "%s/ts-migrate-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
    printf("migrate: loading through %s\n", tp_loader_name());
}

void ts_test_suite_teardown(void) {
    unlink(path_in_tmp("v1.journal"));
    unlink(path_in_tmp("v0.journal"));
    unlink(path_in_tmp("r1.journal"));
    unlink(path_in_tmp("r3.journal"));
    rmdir(tmpdir);
}
