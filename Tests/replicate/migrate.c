/*
 * migrate.c - versioned state through replicate.so's snapshot
 * (docs/migrations.md, Plugins/replicate/README.md "State versions"): a
 * replica at state version 1 takes a snapshot (it carries version 1); a
 * replica at version 3 with the migrations 1->2 and 2->3 joins from it and
 * gets the migrated state, the entries after it replayed through its own
 * reducers; its own snapshot then carries version 3, and a replica at version
 * 1 that joins from it is refused (a downgrade), as is a replica at version 3
 * whose migration 2->3 fails; both keep their state as it was.
 * Usage: migrate PLUGIN URL (Tests/replicate/run.sh starts the server and
 * deletes the streams "migrate" and "migrate2" first).
 * Prints "N passed, M failed".
 */
#define _DEFAULT_SOURCE

#include "turnstate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "todo_versions.h"

static const char *plugin;
static char config[600];

static const char *config_for(const char *url, const char *stream) {
    snprintf(config, sizeof config, "{\"url\":\"%s\",\"stream\":\"%s\",\"snapshot_every\":2}", url, stream);
    return config;
}

/* A replica at version 1 that appends a, b (then its snapshot), c. */
static void write_v1(const char *url, const char *stream) {
    ts_store *store = program(1, "");
    check(ts_store_load_plugin(store, plugin, config_for(url, stream)) == TS_OK, "the version 1 replica joins",
          ts_last_error());
    check(ts_store_dispatch(store, "{\"type\":\"add\",\"payload\":\"a\"}") == TS_OK, "add a", ts_last_error());
    check(ts_store_dispatch(store, "{\"type\":\"add\",\"payload\":\"b\"}") == TS_OK, "add b", ts_last_error());
    check(ts_store_dispatch(store, "{\"type\":\"add\",\"payload\":\"c\"}") == TS_OK, "add c", ts_last_error());
    ts_store_destroy(store);
}

static void refused(const char *url, const char *stream, uint32_t version, const char *steps, const char *needle,
                    const char *what) {
    ts_store *store = program(version, steps);
    ts_status status = ts_store_load_plugin(store, plugin, config_for(url, stream));
    check(status != TS_OK && strstr(ts_last_error(), needle) != NULL, what, ts_last_error());
    check_state(store, version == 3 ? "{\"todos\":{\"items\":[]}}" : "{\"todos\":[]}",
                "a refused replica keeps its state");
    ts_store_destroy(store);
}

int main(int argc, char **argv) {
    ts_store *store;
    if (argc < 3) {
        fprintf(stderr, "usage: %s PLUGIN URL\n", argv[0]);
        return 2;
    }
    plugin = argv[1];

    write_v1(argv[2], "migrate");
    store = program(3, "12 23");
    check(ts_store_load_plugin(store, plugin, config_for(argv[2], "migrate")) == TS_OK,
          "a version 3 replica joins from a version 1 snapshot", ts_last_error());
    check_state(store, v3_abc, "the snapshot (a, b) migrated 1->2->3, then entry 3 (c) replayed by version 3's reducer");
    /* Entry 4 makes the snapshot due: taken at version 3. */
    check(ts_store_dispatch(store, "{\"type\":\"add\",\"payload\":\"d\"}") == TS_OK, "add d at version 3",
          ts_last_error());
    ts_store_destroy(store);

    store = program(3, "");
    check(ts_store_load_plugin(store, plugin, config_for(argv[2], "migrate")) == TS_OK,
          "a version 3 replica without migrations joins from the version 3 snapshot", ts_last_error());
    {
        char *title = NULL;
        check(ts_store_get_state(store, "/todos/items/3/title", &title) == TS_OK && strcmp(title, "\"d\"") == 0,
              "with d", title);
        ts_free(title);
    }
    ts_store_destroy(store);

    refused(argv[2], "migrate", 1, "",
            "newer than this program's version 1: a downgrade is refused, nothing was loaded",
            "a version 1 replica is refused the version 3 snapshot (a downgrade)");

    write_v1(argv[2], "migrate2");
    refused(argv[2], "migrate2", 3, "12 2x", "migration 2->3 failed: a todo has no title",
            "a version 3 replica whose migration 2->3 fails is refused, and the step named");
    refused(argv[2], "migrate2", 3, "12", "there is no migration from version 2 to 3",
            "a version 3 replica without the step 2->3 is refused");

    return check_summary();
}
