/*
 * plugin_configs.c - what docs/plugins.md says each shipped plugin needs to
 * start (## Plugins: "journal and recorder need path and replicate needs url and
 * stream; guard, logger and delay start with no config"), and why it says
 * not to load the whole plugins folder with ts_store_load_plugins (docs/packaging.md, ## Install:
 * the folder holds no NAME.json, so the journal refuses to start and the
 * load fails).
 *
 *     plugin_configs PLUGINSDIR WORKDIR
 *
 * PLUGINSDIR holds guard.so, logger.so, delay.so, journal.so, recorder.so and
 * replicate.so (build/plugins); WORKDIR is a scratch folder this program may
 * fill. Prints a line per failed check and "N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L

#include <turnstate.h>

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int passed, failed;

static void check(int ok, const char *what) {
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL: %s\n", what);
    }
}

/* Loads PLUGINSDIR/NAME.so into a new store with `config`; the status, and
 * ts_last_error() copied into message. */
static ts_status load(const char *dir, const char *name, const char *config, char *message, size_t size) {
    char path[1024];
    ts_store *store = NULL;
    ts_status status;
    snprintf(path, sizeof path, "%s/%s.so", dir, name);
    if (ts_store_create("{}", &store) != TS_OK) return TS_E_NOMEM;
    status = ts_store_load_plugin(store, path, config);
    snprintf(message, size, "%s", status == TS_OK ? "" : ts_last_error());
    ts_store_destroy(store);
    return status;
}

int main(int argc, char **argv) {
    static const char *const no_config[] = {"guard", "logger", "delay"};
    static const char *const shipped[] = {"delay", "guard", "journal", "logger", "replicate"};
    char message[2048], what[2300], folder[1024], link_path[2100], target[1024];
    const char *dir, *work;
    ts_store *store = NULL;
    ts_status status;
    size_t i;
    if (argc != 3) {
        fprintf(stderr, "usage: %s PLUGINSDIR WORKDIR\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    work = argv[2];

    for (i = 0; i < sizeof no_config / sizeof no_config[0]; i++) {
        status = load(dir, no_config[i], NULL, message, sizeof message);
        snprintf(what, sizeof what, "%s starts with no config: %s %s", no_config[i], ts_status_name(status), message);
        check(status == TS_OK, what);
        status = load(dir, no_config[i], "{}", message, sizeof message);
        snprintf(what, sizeof what, "%s starts with {}: %s %s", no_config[i], ts_status_name(status), message);
        check(status == TS_OK, what);
    }

    status = load(dir, "journal", NULL, message, sizeof message);
    snprintf(what, sizeof what, "journal without a config is refused, naming path: %s %s", ts_status_name(status), message);
    check(status == TS_E_PLUGIN && strstr(message, "config field \"path\" (the journal file) is required") != NULL, what);

    status = load(dir, "recorder", NULL, message, sizeof message);
    snprintf(what, sizeof what, "recorder without a config is refused, naming path: %s %s", ts_status_name(status), message);
    check(status == TS_E_PLUGIN && strstr(message, "config field \"path\" (the dump's file) is required") != NULL, what);

    status = load(dir, "replicate", NULL, message, sizeof message);
    snprintf(what, sizeof what, "replicate without a config is refused, naming url: %s %s", ts_status_name(status), message);
    check(status == TS_E_PLUGIN && strstr(message, "config field \"url\" is required") != NULL, what);
    status = load(dir, "replicate", "{\"url\": \"redis://127.0.0.1:1\"}", message, sizeof message);
    snprintf(what, sizeof what, "replicate without stream is refused, naming it: %s %s", ts_status_name(status), message);
    check(status == TS_E_PLUGIN && strstr(message, "config field \"stream\" is required") != NULL, what);

    /* The folder as installed (links to the shipped files, no NAME.json):
     * ts_store_load_plugins refuses it as a whole, for the journal. */
    snprintf(folder, sizeof folder, "%s/pluginsdir", work);
    check(mkdir(folder, 0755) == 0 || access(folder, F_OK) == 0, "make the folder");
    for (i = 0; i < sizeof shipped / sizeof shipped[0]; i++) {
        snprintf(link_path, sizeof link_path, "%s/%s.so", folder, shipped[i]);
        snprintf(target, sizeof target, "%s/%s.so", dir, shipped[i]);
        unlink(link_path);
        snprintf(what, sizeof what, "link %s", link_path);
        check(symlink(target, link_path) == 0, what);
    }
    if (ts_store_create("{}", &store) == TS_OK) {
        status = ts_store_load_plugins(store, folder);
        snprintf(what, sizeof what, "the whole folder, with no configs, is refused for the journal's path: %s %s",
                 ts_status_name(status), status == TS_OK ? "" : ts_last_error());
        check(status == TS_E_PLUGIN && strstr(ts_last_error(), "journal") != NULL &&
                  strstr(ts_last_error(), "\"path\"") != NULL,
              what);
        ts_store_destroy(store);
    }

    printf("plugin_configs: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
