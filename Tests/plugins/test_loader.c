/* The plugin loader: ts_store_load_plugin and ts_store_load_plugins accept
 * good plugins in the documented order with their configs, refuse every kind
 * of bad plugin with the documented status and a message that names the
 * problem, leave the store unchanged when they refuse, and destroy plugins
 * (last loaded first) with the store.
 * Usage: test_loader --plugins DIR, where DIR/loader/ holds the variants of
 * loader_plugin.c that run.sh builds. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "turnstate.h"

static int passed, failed;

#define CHECK(what, condition)                                                            \
    do {                                                                                  \
        if (condition) {                                                                  \
            passed++;                                                                     \
        } else {                                                                          \
            failed++;                                                                     \
            fprintf(stderr, "%s:%d: FAILED %s (%s); last error: %s\n", __FILE__, __LINE__, \
                    what, #condition, ts_last_error());                                   \
        }                                                                                 \
    } while (0)

#define CHECK_STATUS(what, call, expected)                                                           \
    do {                                                                                             \
        ts_status got_ = (call);                                                                     \
        if (got_ == (expected)) {                                                                    \
            passed++;                                                                                \
        } else {                                                                                     \
            failed++;                                                                                \
            fprintf(stderr, "%s:%d: FAILED %s: got %s, expected %s; last error: %s\n", __FILE__,     \
                    __LINE__, what, ts_status_name(got_), ts_status_name(expected), ts_last_error()); \
        }                                                                                            \
    } while (0)

#define CHECK_MESSAGE(what, needle) CHECK(what, strstr(ts_last_error(), (needle)) != NULL)

static char variants[1024];
static char scratch[] = "/tmp/turnstate-loader-XXXXXX";

/* Owns "trace": the payload string of the last "trace" action. */
static char *trace_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice == NULL) return strdup("\"\"");
    if (strcmp(action->type, "trace") != 0 || action->payload == NULL) return NULL;
    return strdup(action->payload);
}

static ts_store *new_store(void) {
    ts_store *store = NULL;
    if (ts_store_create(NULL, &store) != TS_OK || ts_store_add_reducer(store, "trace", trace_reducer, NULL) != TS_OK) {
        fprintf(stderr, "cannot make a store: %s\n", ts_last_error());
        exit(2);
    }
    return store;
}

/* The tags the chain appended to a "trace" action, as the state shows them. */
static int trace_is(ts_store *store, const char *expected) {
    char *value = NULL, want[64];
    int same;
    if (ts_store_dispatch(store, "{\"type\":\"trace\",\"payload\":\"\"}") != TS_OK) return 0;
    if (ts_store_get_state(store, "/trace", &value) != TS_OK) return 0;
    snprintf(want, sizeof want, "\"%s\"", expected);
    same = strcmp(value, want) == 0;
    if (!same) fprintf(stderr, "  trace is %s, expected %s\n", value, want);
    ts_free(value);
    return same;
}

static int notifications;
static void count_notification(ts_store *store, void *ctx) {
    (void)store;
    (void)ctx;
    notifications++;
}

static void variant(char *path, size_t size, const char *name) { snprintf(path, size, "%s/%s.so", variants, name); }

static int copy_file(const char *from, const char *to, mode_t mode) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    char buffer[65536];
    size_t n;
    int ok = in != NULL && out != NULL;
    while (ok && (n = fread(buffer, 1, sizeof buffer, in)) > 0) ok = fwrite(buffer, 1, n, out) == n;
    if (in) fclose(in);
    if (out) fclose(out);
    return ok && chmod(to, mode) == 0;
}

static int write_file(const char *path, const char *text) {
    FILE *file = fopen(path, "w");
    int ok = file != NULL && fputs(text, file) >= 0;
    if (file) fclose(file);
    return ok;
}

static char *read_file(const char *path) {
    static char text[256];
    FILE *file = fopen(path, "r");
    size_t n = 0;
    text[0] = '\0';
    if (file) {
        n = fread(text, 1, sizeof text - 1, file);
        fclose(file);
    }
    text[n] = '\0';
    return text;
}

static void test_single_plugins(void) {
    char path[1200], marker[1200], config[1400];
    ts_store *store = new_store();

    variant(path, sizeof path, "ok");
    snprintf(marker, sizeof marker, "%s/destroyed-single", scratch);
    snprintf(config, sizeof config, "{\"tag\":\"a\",\"marker\":\"%s\"}", marker);
    CHECK_STATUS("a good plugin loads", ts_store_load_plugin(store, path, config), TS_OK);
    CHECK_STATUS("the same file again, as a second instance", ts_store_load_plugin(store, path, "{\"tag\":\"b\"}"), TS_OK);
    CHECK("both run, in the order loaded, each with its config", trace_is(store, "ab"));

    CHECK_STATUS("NULL path", ts_store_load_plugin(store, NULL, NULL), TS_E_ARGUMENT);
    CHECK_STATUS("NULL store", ts_store_load_plugin(NULL, path, NULL), TS_E_ARGUMENT);

    snprintf(path, sizeof path, "%s/missing.so", scratch);
    CHECK_STATUS("a missing file", ts_store_load_plugin(store, path, NULL), TS_E_NOT_FOUND);
    CHECK_MESSAGE("names the file", "missing.so");

    snprintf(path, sizeof path, "%s/text.so", scratch);
    CHECK("write a text file", write_file(path, "not an ELF file\n"));
    CHECK_STATUS("not a shared object", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    CHECK_MESSAGE("says so", "shared object");

    variant(path, sizeof path, "no-entry");
    CHECK_STATUS("no entry symbol", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    CHECK_MESSAGE("names the symbol", "ts_plugin_entry");

    variant(path, sizeof path, "abi-7");
    CHECK_STATUS("a newer ABI", ts_store_load_plugin(store, path, NULL), TS_E_ABI);
    CHECK_MESSAGE("names the plugin's ABI", "version 7");
    CHECK_MESSAGE("and this library's", "speaks version 1");

    variant(path, sizeof path, "abi-0");
    CHECK_STATUS("ABI version 0", ts_store_load_plugin(store, path, NULL), TS_E_ABI);

    variant(path, sizeof path, "null-entry");
    CHECK_STATUS("the entry returns NULL", ts_store_load_plugin(store, path, NULL), TS_E_ABI);

    variant(path, sizeof path, "small");
    CHECK_STATUS("a descriptor smaller than ABI 1's", ts_store_load_plugin(store, path, NULL), TS_E_ABI);
    CHECK_MESSAGE("names the size", "bytes");

    variant(path, sizeof path, "fail-create");
    CHECK_STATUS("create fails", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    CHECK_MESSAGE("with the plugin's own message", "refusing on purpose");

    variant(path, sizeof path, "ok");
    CHECK_STATUS("invalid config JSON", ts_store_load_plugin(store, path, "{\"tag\":"), TS_E_JSON);
    CHECK_MESSAGE("names the config", "config");

    snprintf(path, sizeof path, "%s/writable.so", scratch);
    variant(config, sizeof config, "ok");
    CHECK("copy a plugin others can write", copy_file(config, path, 0666));
    CHECK_STATUS("a file others can write", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    CHECK_MESSAGE("says why", "other users");

    CHECK("after every refusal the chain is as it was", trace_is(store, "ab"));
    ts_store_destroy(store);
    CHECK("destroy() ran for each instance, last loaded first", strcmp(read_file(marker), "a") == 0);
}

static void test_folders(void) {
    char folder[1200], path[1400], source[1200], marker[1200], config[1400];
    ts_store *store = new_store();

    snprintf(folder, sizeof folder, "%s/good", scratch);
    snprintf(marker, sizeof marker, "%s/destroyed-folder", scratch);
    CHECK("make a folder", mkdir(folder, 0755) == 0);
    variant(source, sizeof source, "ok");
    /* Copied in reverse order of their names: loading must sort. */
    snprintf(path, sizeof path, "%s/30-c.so", folder);
    CHECK("copy 30-c.so", copy_file(source, path, 0755));
    snprintf(path, sizeof path, "%s/20-b.so", folder);
    CHECK("copy 20-b.so", copy_file(source, path, 0755));
    snprintf(path, sizeof path, "%s/10-a.so", folder);
    CHECK("copy 10-a.so", copy_file(source, path, 0755));
    snprintf(path, sizeof path, "%s/notes.txt", folder);
    CHECK("a file that is no plugin", write_file(path, "ignored"));
    snprintf(config, sizeof config, "{\"tag\":\"a\",\"marker\":\"%s\"}", marker);
    snprintf(path, sizeof path, "%s/10-a.json", folder);
    CHECK("10-a.json", write_file(path, config));
    snprintf(config, sizeof config, "{\"tag\":\"b\",\"marker\":\"%s\"}", marker);
    snprintf(path, sizeof path, "%s/20-b.json", folder);
    CHECK("20-b.json", write_file(path, config));
    snprintf(config, sizeof config, "{\"tag\":\"c\",\"marker\":\"%s\"}", marker);
    snprintf(path, sizeof path, "%s/30-c.json", folder);
    CHECK("30-c.json", write_file(path, config));

    CHECK_STATUS("a folder loads", ts_store_load_plugins(store, folder), TS_OK);
    CHECK("in byte order of names, each with NAME.json", trace_is(store, "abc"));

    /* All or nothing: a folder whose second plugin fails adds none. */
    snprintf(folder, sizeof folder, "%s/bad", scratch);
    CHECK("make a folder", mkdir(folder, 0755) == 0);
    snprintf(path, sizeof path, "%s/10-ok.so", folder);
    CHECK("copy 10-ok.so", copy_file(source, path, 0755));
    snprintf(path, sizeof path, "%s/10-ok.json", folder);
    CHECK("10-ok.json", write_file(path, "{\"tag\":\"x\"}"));
    variant(source, sizeof source, "fail-create");
    snprintf(path, sizeof path, "%s/20-fails.so", folder);
    CHECK("copy 20-fails.so", copy_file(source, path, 0755));
    {
        uint64_t token;
        CHECK_STATUS("subscribe", ts_store_subscribe(store, NULL, count_notification, NULL, &token), TS_OK);
        notifications = 0;
        CHECK_STATUS("a folder with a failing plugin", ts_store_load_plugins(store, folder), TS_E_PLUGIN);
        CHECK("a refused load that changed nothing notifies nobody", notifications == 0);
        CHECK_STATUS("unsubscribe", ts_store_unsubscribe(store, token), TS_OK);
    }
    CHECK_MESSAGE("names the file that failed", "20-fails.so");
    CHECK("none of that folder was added", trace_is(store, "abc"));

    snprintf(path, sizeof path, "%s/20-fails.so", folder);
    CHECK("remove the failing plugin", unlink(path) == 0);
    snprintf(path, sizeof path, "%s/10-ok.json", folder);
    CHECK("break the config", write_file(path, "{not json"));
    CHECK_STATUS("a folder with an invalid NAME.json", ts_store_load_plugins(store, folder), TS_E_JSON);
    CHECK("still nothing added", trace_is(store, "abc"));

    CHECK("let others write the folder", chmod(folder, 0777) == 0);
    CHECK_STATUS("a folder others can write", ts_store_load_plugins(store, folder), TS_E_PLUGIN);
    CHECK_MESSAGE("says why", "other users");
    snprintf(path, sizeof path, "%s/10-ok.so", folder);
    CHECK_STATUS("a plugin in a folder others can write", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    CHECK("close the folder again", chmod(folder, 0755) == 0);

    snprintf(path, sizeof path, "%s/no-such-folder", scratch);
    CHECK_STATUS("a missing folder", ts_store_load_plugins(store, path), TS_E_NOT_FOUND);
    CHECK_STATUS("NULL folder", ts_store_load_plugins(store, NULL), TS_E_ARGUMENT);

    ts_store_destroy(store);
    CHECK("destroy() ran for each, last loaded first", strcmp(read_file(marker), "cba") == 0);
}

/* The refusals that concern the file itself and the folder's other files:
 * what is not a regular file, what a path cannot reach, a descriptor without
 * run(), a config file that cannot be read or is not UTF-8; and a plugin
 * whose descriptor has no name is named after its file. */
static void test_files(void) {
    char path[1400], folder[1200], source[1200];
    ts_store *store = new_store();

    CHECK_STATUS("a folder given as a plugin file", ts_store_load_plugin(store, scratch, NULL), TS_E_PLUGIN);
    CHECK_MESSAGE("says it is no regular file", "not a regular file");

    snprintf(path, sizeof path, "%s/file", scratch);
    CHECK("write a file", write_file(path, "x"));
    snprintf(path, sizeof path, "%s/file/x.so", scratch);
    CHECK_STATUS("a path through a file", ts_store_load_plugin(store, path, NULL), TS_E_IO);
    CHECK_MESSAGE("names the path", "file/x.so");
    snprintf(path, sizeof path, "%s/file", scratch);
    CHECK_STATUS("a file given as a plugin folder", ts_store_load_plugins(store, path), TS_E_IO);
    CHECK_MESSAGE("says it is no folder", "is not a folder");
    snprintf(path, sizeof path, "%s/file/sub", scratch);
    CHECK_STATUS("a folder path through a file", ts_store_load_plugins(store, path), TS_E_IO);
    CHECK_MESSAGE("names the folder", "file/sub");

    variant(path, sizeof path, "no-run");
    CHECK_STATUS("a descriptor without run", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    CHECK_MESSAGE("names the missing function", "run");

    variant(path, sizeof path, "no-name");
    CHECK_STATUS("a descriptor without name loads", ts_store_load_plugin(store, path, "{\"tag\":\"n\"}"), TS_OK);
    CHECK("and runs", trace_is(store, "n"));

    snprintf(folder, sizeof folder, "%s/configs", scratch);
    CHECK("make a folder", mkdir(folder, 0755) == 0);
    variant(source, sizeof source, "ok");
    snprintf(path, sizeof path, "%s/10-a.so", folder);
    CHECK("copy 10-a.so", copy_file(source, path, 0755));
    snprintf(path, sizeof path, "%s/10-a.json", folder);
    CHECK("a config that is not UTF-8", write_file(path, "{\"tag\":\"\xff\"}"));
    CHECK_STATUS("a NAME.json that is not UTF-8", ts_store_load_plugins(store, folder), TS_E_JSON);
    CHECK_MESSAGE("names the config", "10-a.json");
    CHECK("remove it", unlink(path) == 0);
    CHECK("a folder where the config should be", mkdir(path, 0755) == 0);
    CHECK_STATUS("a NAME.json that cannot be read", ts_store_load_plugins(store, folder), TS_E_IO);
    CHECK_MESSAGE("names the config", "10-a.json");
    CHECK("nothing of it was added", trace_is(store, "n"));

    /* Code owned by another user (not root) is refused; only root can make such a file here. */
    if (geteuid() == 0) {
        snprintf(path, sizeof path, "%s/10-a.so", folder);
        CHECK("give the plugin to another user", chown(path, 65534, 65534) == 0);
        CHECK_STATUS("a plugin owned by another user", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
        CHECK_MESSAGE("names the owner", "belongs to user 65534");
    } else {
        printf("test_files: not root, the other-owner case is skipped\n");
    }
    ts_store_destroy(store);
}

int main(int argc, char **argv) {
    if (argc < 3 || strcmp(argv[1], "--plugins") != 0) {
        fprintf(stderr, "usage: %s --plugins DIR\n", argv[0]);
        return 2;
    }
    snprintf(variants, sizeof variants, "%s/loader", argv[2]);
    if (mkdtemp(scratch) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    test_single_plugins();
    test_folders();
    test_files();
    {
        char command[256];
        snprintf(command, sizeof command, "rm -rf '%s'", scratch);
        if (system(command) != 0) fprintf(stderr, "could not remove %s\n", scratch);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
