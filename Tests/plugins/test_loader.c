/* The plugin loader: ts_store_load_plugin and ts_store_load_plugins accept
 * good plugins in the documented order with their configs, refuse every kind
 * of bad plugin with the documented status and a message that names the
 * problem, leave the store unchanged when they refuse, and destroy plugins
 * (last loaded first) with the store. They trust a plugin file, a NAME.json
 * config and a plugin folder only when, with links resolved, it and every
 * folder above it belong to root or this user and nobody else can write them
 * (a sticky folder owned by root, like /tmp, excepted), and they load the
 * file they checked. Run as root, the tests also give files to user 12345.
 * Options: --plugins DIR, where DIR/loader/ holds the variants of
 * loader_plugin.c that run.sh builds (plugin_test.h). */
#include "plugin_test.h"

#include <fcntl.h>
#include <sys/stat.h>

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

void test_loader__goodPluginsLoadAndBadOnesAreRefusedLeavingTheChain(void) {
    char path[1200], marker[1200], config[1400];
    ts_store *store = new_store();

    variant(path, sizeof path, "ok");
    snprintf(marker, sizeof marker, "%s/destroyed-single", scratch);
    snprintf(config, sizeof config, "{\"tag\":\"a\",\"marker\":\"%s\"}", marker);
    TP_CHECK_STATUS("a good plugin loads", ts_store_load_plugin(store, path, config), TS_OK);
    TP_CHECK_STATUS("the same file again, as a second instance", ts_store_load_plugin(store, path, "{\"tag\":\"b\"}"), TS_OK);
    TP_CHECK("both run, in the order loaded, each with its config", trace_is(store, "ab"));

    TP_CHECK_STATUS("NULL path", ts_store_load_plugin(store, NULL, NULL), TS_E_ARGUMENT);
    TP_CHECK_STATUS("NULL store", ts_store_load_plugin(NULL, path, NULL), TS_E_ARGUMENT);

    snprintf(path, sizeof path, "%s/missing.so", scratch);
    TP_CHECK_STATUS("a missing file", ts_store_load_plugin(store, path, NULL), TS_E_NOT_FOUND);
    TP_CHECK_CONTAINS("names the file", ts_last_error(), "missing.so");

    snprintf(path, sizeof path, "%s/text.so", scratch);
    TP_CHECK("write a text file", write_file(path, "not an ELF file\n"));
    TP_CHECK_STATUS("not a shared object", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("says so", ts_last_error(), "shared object");

    variant(path, sizeof path, "no-entry");
    TP_CHECK_STATUS("no entry symbol", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("names the symbol", ts_last_error(), "ts_plugin_entry");

    variant(path, sizeof path, "abi-7");
    TP_CHECK_STATUS("a newer ABI", ts_store_load_plugin(store, path, NULL), TS_E_ABI);
    TP_CHECK_CONTAINS("names the plugin's ABI", ts_last_error(), "version 7");
    TP_CHECK_CONTAINS("and this library's", ts_last_error(), "speaks version 1");

    variant(path, sizeof path, "abi-0");
    TP_CHECK_STATUS("ABI version 0", ts_store_load_plugin(store, path, NULL), TS_E_ABI);

    variant(path, sizeof path, "null-entry");
    TP_CHECK_STATUS("the entry returns NULL", ts_store_load_plugin(store, path, NULL), TS_E_ABI);

    variant(path, sizeof path, "small");
    TP_CHECK_STATUS("a descriptor smaller than ABI 1's", ts_store_load_plugin(store, path, NULL), TS_E_ABI);
    TP_CHECK_CONTAINS("names the size", ts_last_error(), "bytes");

    variant(path, sizeof path, "fail-create");
    TP_CHECK_STATUS("create fails", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("with the plugin's own message", ts_last_error(), "refusing on purpose");

    variant(path, sizeof path, "ok");
    TP_CHECK_STATUS("invalid config JSON", ts_store_load_plugin(store, path, "{\"tag\":"), TS_E_JSON);
    TP_CHECK_CONTAINS("names the config", ts_last_error(), "config");

    snprintf(path, sizeof path, "%s/writable.so", scratch);
    variant(config, sizeof config, "ok");
    TP_CHECK("copy a plugin others can write", copy_file(config, path, 0666));
    TP_CHECK_STATUS("a file others can write", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("says why", ts_last_error(), "other users");

    TP_CHECK("after every refusal the chain is as it was", trace_is(store, "ab"));
    ts_store_destroy(store);
    TP_CHECK("destroy() ran for each instance, last loaded first", strcmp(read_file(marker), "a") == 0);
}

void test_loader__folderLoadsInNameOrderWithConfigsAndRefusesAsAWhole(void) {
    char folder[1200], path[1400], source[1200], marker[1200], config[1400];
    ts_store *store = new_store();

    snprintf(folder, sizeof folder, "%s/good", scratch);
    snprintf(marker, sizeof marker, "%s/destroyed-folder", scratch);
    TP_CHECK("make a folder", mkdir(folder, 0755) == 0);
    variant(source, sizeof source, "ok");
    /* Copied in reverse order of their names: loading must sort. */
    snprintf(path, sizeof path, "%s/30-c.so", folder);
    TP_CHECK("copy 30-c.so", copy_file(source, path, 0755));
    snprintf(path, sizeof path, "%s/20-b.so", folder);
    TP_CHECK("copy 20-b.so", copy_file(source, path, 0755));
    snprintf(path, sizeof path, "%s/10-a.so", folder);
    TP_CHECK("copy 10-a.so", copy_file(source, path, 0755));
    snprintf(path, sizeof path, "%s/notes.txt", folder);
    TP_CHECK("a file that is no plugin", write_file(path, "ignored"));
    snprintf(config, sizeof config, "{\"tag\":\"a\",\"marker\":\"%s\"}", marker);
    snprintf(path, sizeof path, "%s/10-a.json", folder);
    TP_CHECK("10-a.json", write_file(path, config));
    snprintf(config, sizeof config, "{\"tag\":\"b\",\"marker\":\"%s\"}", marker);
    snprintf(path, sizeof path, "%s/20-b.json", folder);
    TP_CHECK("20-b.json", write_file(path, config));
    snprintf(config, sizeof config, "{\"tag\":\"c\",\"marker\":\"%s\"}", marker);
    snprintf(path, sizeof path, "%s/30-c.json", folder);
    TP_CHECK("30-c.json", write_file(path, config));

    TP_CHECK_STATUS("a folder loads", ts_store_load_plugins(store, folder), TS_OK);
    TP_CHECK("in byte order of names, each with NAME.json", trace_is(store, "abc"));

    /* All or nothing: a folder whose second plugin fails adds none. */
    snprintf(folder, sizeof folder, "%s/bad", scratch);
    TP_CHECK("make a folder", mkdir(folder, 0755) == 0);
    snprintf(path, sizeof path, "%s/10-ok.so", folder);
    TP_CHECK("copy 10-ok.so", copy_file(source, path, 0755));
    snprintf(path, sizeof path, "%s/10-ok.json", folder);
    TP_CHECK("10-ok.json", write_file(path, "{\"tag\":\"x\"}"));
    variant(source, sizeof source, "fail-create");
    snprintf(path, sizeof path, "%s/20-fails.so", folder);
    TP_CHECK("copy 20-fails.so", copy_file(source, path, 0755));
    {
        uint64_t token;
        TP_CHECK_STATUS("subscribe", ts_store_subscribe(store, NULL, count_notification, NULL, &token), TS_OK);
        notifications = 0;
        TP_CHECK_STATUS("a folder with a failing plugin", ts_store_load_plugins(store, folder), TS_E_PLUGIN);
        TP_CHECK("a refused load that changed nothing notifies nobody", notifications == 0);
        TP_CHECK_STATUS("unsubscribe", ts_store_unsubscribe(store, token), TS_OK);
    }
    TP_CHECK_CONTAINS("names the file that failed", ts_last_error(), "20-fails.so");
    TP_CHECK("none of that folder was added", trace_is(store, "abc"));

    snprintf(path, sizeof path, "%s/20-fails.so", folder);
    TP_CHECK("remove the failing plugin", unlink(path) == 0);
    snprintf(path, sizeof path, "%s/10-ok.json", folder);
    TP_CHECK("break the config", write_file(path, "{not json"));
    TP_CHECK_STATUS("a folder with an invalid NAME.json", ts_store_load_plugins(store, folder), TS_E_JSON);
    TP_CHECK("still nothing added", trace_is(store, "abc"));

    TP_CHECK("let others write the folder", chmod(folder, 0777) == 0);
    TP_CHECK_STATUS("a folder others can write", ts_store_load_plugins(store, folder), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("says why", ts_last_error(), "other users");
    snprintf(path, sizeof path, "%s/10-ok.so", folder);
    TP_CHECK_STATUS("a plugin in a folder others can write", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    TP_CHECK("close the folder again", chmod(folder, 0755) == 0);

    snprintf(path, sizeof path, "%s/no-such-folder", scratch);
    TP_CHECK_STATUS("a missing folder", ts_store_load_plugins(store, path), TS_E_NOT_FOUND);
    TP_CHECK_STATUS("NULL folder", ts_store_load_plugins(store, NULL), TS_E_ARGUMENT);

    ts_store_destroy(store);
    TP_CHECK("destroy() ran for each, last loaded first", strcmp(read_file(marker), "cba") == 0);
}

/* ---- Trust: the real file and every folder above it ------------------------------- */

static int make_folder(const char *path, mode_t mode) { return mkdir(path, 0700) == 0 && chmod(path, mode) == 0; }

/* "path" in `folder`, under scratch. */
static void in_scratch(char *path, size_t size, const char *name) { snprintf(path, size, "%s/%s", scratch, name); }

/* A message contains "chmod go-w FOLDER" for the folder `name` in scratch. */
static int names_fix(const char *command, const char *name) {
    char expected[1400];
    snprintf(expected, sizeof expected, "%s %s/%s", command, scratch, name);
    return strstr(ts_last_error(), expected) != NULL;
}

static int descriptors_open(void) {
    int fd = open("/dev/null", O_RDONLY);
    if (fd >= 0) close(fd);
    return fd;
}

void test_loader__fileOrFolderOthersCanWriteIsNotTrusted(void) {
    char ok[1200], path[1400], target[1400], cwd[1400];
    int as_root = geteuid() == 0;
    ts_store *store = new_store();

    variant(ok, sizeof ok, "ok");
    /* scratch is a fresh 0700 folder inside /tmp, a sticky (1777) folder
     * owned by root: every load below passes through that exception. */
    in_scratch(path, sizeof path, "world"); /* 0777, not sticky */
    TP_CHECK("a folder everyone can write", make_folder(path, 0777));
    in_scratch(path, sizeof path, "safe");
    TP_CHECK("a safe folder", make_folder(path, 0755));
    in_scratch(path, sizeof path, "safe2");
    TP_CHECK("another safe folder", make_folder(path, 0755));
    in_scratch(path, sizeof path, "world/ok.so");
    TP_CHECK("a plugin in the world-writable folder", copy_file(ok, path, 0755));
    in_scratch(path, sizeof path, "safe2/ok.so");
    TP_CHECK("a plugin in a safe folder", copy_file(ok, path, 0755));

    in_scratch(target, sizeof target, "world/ok.so");
    in_scratch(path, sizeof path, "safe/into-world.so");
    TP_CHECK("a link in a safe folder to the world-writable one", symlink(target, path) == 0);
    TP_CHECK_STATUS("a link into a world-writable folder", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("names the link", ts_last_error(), "into-world.so");
    TP_CHECK_CONTAINS("and the real file", ts_last_error(), "real path");
    TP_CHECK("and the folder, with the fix", names_fix("chmod go-w", "world"));
    TP_CHECK_CONTAINS("and the bits", ts_last_error(), "mode 0777: writable by group and others");

    in_scratch(target, sizeof target, "safe2/ok.so");
    in_scratch(path, sizeof path, "safe/into-safe.so");
    TP_CHECK("a link to a plugin in a safe folder", symlink(target, path) == 0);
    TP_CHECK_STATUS("a link into a safe folder", ts_store_load_plugin(store, path, "{\"tag\":\"L\"}"), TS_OK);

    /* The parent of the parent is group-writable. */
    in_scratch(path, sizeof path, "group");
    TP_CHECK("a group-writable folder", make_folder(path, 0775));
    in_scratch(path, sizeof path, "group/inner");
    TP_CHECK("a safe folder inside it", make_folder(path, 0755));
    in_scratch(path, sizeof path, "group/inner/ok.so");
    TP_CHECK("a plugin in the inner folder", copy_file(ok, path, 0755));
    TP_CHECK_STATUS("a folder above the file's folder is group-writable", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    TP_CHECK("names that folder, with the fix", names_fix("chmod go-w", "group"));
    TP_CHECK_CONTAINS("and the bit", ts_last_error(), "writable by group)");

    /* A sticky folder that others can write: allowed only when root owns it. */
    in_scratch(path, sizeof path, "sticky");
    TP_CHECK("a sticky world-writable folder", make_folder(path, 01777));
    in_scratch(path, sizeof path, "sticky/ok.so");
    TP_CHECK("a plugin directly in it", copy_file(ok, path, 0755));
    if (as_root) {
        TP_CHECK_STATUS("a file in a sticky world-writable folder owned by root", ts_store_load_plugin(store, path, "{\"tag\":\"S\"}"), TS_OK);
        in_scratch(target, sizeof target, "sticky");
        TP_CHECK("give the sticky folder to another user", chown(target, 12345, 0) == 0);
        TP_CHECK_STATUS("a sticky folder owned by another user", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
        TP_CHECK_CONTAINS("names the owner", ts_last_error(), "belongs to user 12345");
        TP_CHECK("and the fix", names_fix("chown root", "sticky"));

        in_scratch(path, sizeof path, "safe2/theirs.so");
        TP_CHECK("a plugin that belongs to another user", copy_file(ok, path, 0755) && chown(path, 12345, 0) == 0);
        TP_CHECK_STATUS("a file owned by another user", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
        TP_CHECK_CONTAINS("names the owner", ts_last_error(), "belongs to user 12345");
        TP_CHECK("and the fix", names_fix("chown root", "safe2/theirs.so"));
    } else {
        TP_CHECK_STATUS("not root: the sticky folder is this user's, not root's", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
        TP_CHECK_CONTAINS("and says which folders may be writable", ts_last_error(), "only a sticky folder owned by root");
    }

    /* The file itself, through a link: refused with its real path. */
    in_scratch(path, sizeof path, "safe2/theirs-writable.so");
    TP_CHECK("a plugin others can write", copy_file(ok, path, 0757));
    in_scratch(target, sizeof target, "safe/to-writable.so");
    TP_CHECK("a link to it", symlink(path, target) == 0);
    TP_CHECK_STATUS("a link to a file others can write", ts_store_load_plugin(store, target, NULL), TS_E_PLUGIN);
    TP_CHECK("names the real file, with the fix", names_fix("chmod go-w", "safe2/theirs-writable.so"));
    TP_CHECK_CONTAINS("and the bit", ts_last_error(), "mode 0757: writable by others)");

    /* A relative path that does not exist says where it looked. */
    if (getcwd(cwd, sizeof cwd) != NULL && chdir(scratch) == 0) {
        char here[1200];
        TP_CHECK("read the current folder", getcwd(here, sizeof here) != NULL);
        snprintf(target, sizeof target, "(looked for %s/x.so)", here);
        TP_CHECK_STATUS("a relative path that does not exist", ts_store_load_plugin(store, "x.so", NULL), TS_E_NOT_FOUND);
        TP_CHECK_CONTAINS("names the path given", ts_last_error(), "plugin file \"x.so\" does not exist");
        TP_CHECK_CONTAINS("and where it looked", ts_last_error(), target);
        TP_CHECK_STATUS("a relative path that exists", ts_store_load_plugin(store, "safe2/ok.so", "{\"tag\":\"R\"}"), TS_OK);
        TP_CHECK("back to the first folder", chdir(cwd) == 0);
    } else {
        TP_CHECK("change folder", 0);
    }
    in_scratch(target, sizeof target, "nothing-here.so");
    in_scratch(path, sizeof path, "safe/dangling.so");
    TP_CHECK("a link to nothing", symlink(target, path) == 0);
    TP_CHECK_STATUS("a link to nothing", ts_store_load_plugin(store, path, NULL), TS_E_NOT_FOUND);
    TP_CHECK_CONTAINS("says so", ts_last_error(), "symbolic link to something missing");

    TP_CHECK("the refusals changed nothing", trace_is(store, "LSR") || (!as_root && trace_is(store, "LR")));
    ts_store_destroy(store);
}

/* The object loaded is the file that was checked, loaded through the checked
 * descriptor: dlopen's messages name the real file, a file loaded after
 * another (through the same descriptor number) is itself, and no descriptor
 * is left open. */
void test_loader__theCheckedFileIsTheOneLoaded(void) {
    char path[1400], target[1400], source[1200];
    int before, i;
    ts_store *store = new_store();

    in_scratch(path, sizeof path, "elf");
    TP_CHECK("a folder", make_folder(path, 0755));
    in_scratch(target, sizeof target, "elf/not-elf.txt");
    TP_CHECK("a regular file that is not a shared object", write_file(target, "not an ELF file\n"));
    in_scratch(path, sizeof path, "elf/link.so");
    TP_CHECK("a link to it", symlink(target, path) == 0);
    TP_CHECK_STATUS("a text file through a link", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("says what it is not", ts_last_error(), "could not be loaded as a shared object");
    TP_CHECK_CONTAINS("names the link", ts_last_error(), "elf/link.so");
    {
        char expected[1500];
        snprintf(expected, sizeof expected, "shared object: %s:", target);
        TP_CHECK_CONTAINS("dlopen's own message names the real file", ts_last_error(), expected);
    }
    TP_CHECK("and never /proc/self/fd", strstr(ts_last_error(), "/proc/self/fd") == NULL);

    /* Different files, one after the other: each load opens the same lowest
     * free descriptor number, and each must load its own file. */
    before = descriptors_open();
    for (i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "elf/good-%d.so", i);
        variant(source, sizeof source, "ok");
        in_scratch(path, sizeof path, name);
        TP_CHECK("copy a good plugin", copy_file(source, path, 0755));
        TP_CHECK_STATUS("a good plugin", ts_store_load_plugin(store, path, "{\"tag\":\"g\"}"), TS_OK);
        snprintf(name, sizeof name, "elf/fails-%d.so", i);
        variant(source, sizeof source, "fail-create");
        in_scratch(path, sizeof path, name);
        TP_CHECK("copy a plugin whose create fails", copy_file(source, path, 0755));
        TP_CHECK_STATUS("then another file is that file, not the one loaded before", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
        TP_CHECK_CONTAINS("its own create() failed", ts_last_error(), "refusing on purpose");
        snprintf(name, sizeof name, "elf/abi-%d.so", i);
        variant(source, sizeof source, "abi-7");
        in_scratch(path, sizeof path, name);
        TP_CHECK("copy a plugin for ABI 7", copy_file(source, path, 0755));
        TP_CHECK_STATUS("and a third is itself too", ts_store_load_plugin(store, path, NULL), TS_E_ABI);
    }
    TP_CHECK("no descriptor is left open", descriptors_open() == before);
    TP_CHECK("the good ones run", trace_is(store, "ggg"));
    ts_store_destroy(store);
}

/* NAME.json beside a plugin: trusted as the plugin is. */
void test_loader__configBesideAPluginIsTrustedAsThePluginIs(void) {
    char folder[1200], path[1400], target[1400], ok[1200];
    int as_root = geteuid() == 0;
    ts_store *store = new_store();

    variant(ok, sizeof ok, "ok");
    in_scratch(folder, sizeof folder, "configs");
    TP_CHECK("a plugin folder", make_folder(folder, 0755));
    snprintf(path, sizeof path, "%s/10-a.so", folder);
    TP_CHECK("a plugin in it", copy_file(ok, path, 0755));
    snprintf(path, sizeof path, "%s/10-a.json", folder);

    TP_CHECK("a config others can write", write_file(path, "{\"tag\":\"w\"}") && chmod(path, 0666) == 0);
    TP_CHECK_STATUS("a config others can write", ts_store_load_plugins(store, folder), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("names the config", ts_last_error(), "plugin config \"");
    TP_CHECK_CONTAINS("by its name", ts_last_error(), "10-a.json\" can be written by other users (mode 0666");
    TP_CHECK("with the fix", names_fix("chmod go-w", "configs/10-a.json"));
    TP_CHECK("remove it", unlink(path) == 0);

    in_scratch(target, sizeof target, "cfg-group");
    TP_CHECK("a group-writable folder", make_folder(target, 0775));
    in_scratch(target, sizeof target, "cfg-group/a.json");
    TP_CHECK("a config in it", write_file(target, "{\"tag\":\"g\"}") && chmod(target, 0644) == 0);
    TP_CHECK("NAME.json a link to it", symlink(target, path) == 0);
    TP_CHECK_STATUS("a config in a folder its group can write", ts_store_load_plugins(store, folder), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("names the config", ts_last_error(), "10-a.json");
    TP_CHECK("and the folder, with the fix", names_fix("chmod go-w", "cfg-group"));
    TP_CHECK("remove the link", unlink(path) == 0);

    in_scratch(target, sizeof target, "cfg-world");
    TP_CHECK("a folder everyone can write", make_folder(target, 0777));
    in_scratch(target, sizeof target, "cfg-world/a.json");
    TP_CHECK("a config in it", write_file(target, "{\"tag\":\"x\"}") && chmod(target, 0644) == 0);
    TP_CHECK("NAME.json a link to it", symlink(target, path) == 0);
    TP_CHECK_STATUS("a config linked into a world-writable folder", ts_store_load_plugins(store, folder), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("names the config", ts_last_error(), "plugin config \"");
    TP_CHECK("and the folder, with the fix", names_fix("chmod go-w", "cfg-world"));
    TP_CHECK_CONTAINS("and the bits", ts_last_error(), "writable by group and others");
    TP_CHECK("remove the link", unlink(path) == 0);

    in_scratch(target, sizeof target, "nothing.json");
    TP_CHECK("NAME.json a link to nothing", symlink(target, path) == 0);
    TP_CHECK_STATUS("a config that links to nothing", ts_store_load_plugins(store, folder), TS_E_NOT_FOUND);
    TP_CHECK_CONTAINS("names the config", ts_last_error(), "10-a.json");
    TP_CHECK("remove the link", unlink(path) == 0);

    if (as_root) {
        TP_CHECK("a config of another user", write_file(path, "{\"tag\":\"u\"}") && chown(path, 12345, 0) == 0);
        TP_CHECK_STATUS("a config that belongs to another user", ts_store_load_plugins(store, folder), TS_E_PLUGIN);
        TP_CHECK_CONTAINS("names the owner", ts_last_error(), "belongs to user 12345");
        TP_CHECK("remove it", unlink(path) == 0);
    }

    TP_CHECK("a config that is not UTF-8", write_file(path, "{\"tag\":\"\xff\"}"));
    TP_CHECK_STATUS("a config that is not UTF-8 stays a JSON error", ts_store_load_plugins(store, folder), TS_E_JSON);
    TP_CHECK_CONTAINS("says so", ts_last_error(), "not valid UTF-8");
    TP_CHECK("remove it", unlink(path) == 0);

    in_scratch(target, sizeof target, "safe-config.json");
    TP_CHECK("a safe config elsewhere", write_file(target, "{\"tag\":\"c\"}") && chmod(target, 0644) == 0);
    TP_CHECK("NAME.json a link to it", symlink(target, path) == 0);
    TP_CHECK_STATUS("a config linked to a safe file", ts_store_load_plugins(store, folder), TS_OK);
    TP_CHECK("is read", trace_is(store, "c"));

    /* The folder given: resolved, and every folder above it checked. */
    in_scratch(target, sizeof target, "group/inner");
    TP_CHECK_STATUS("a plugin folder below a group-writable folder", ts_store_load_plugins(store, target), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("names the plugin folder", ts_last_error(), "plugin folder \"");
    TP_CHECK("and the folder above, with the fix", names_fix("chmod go-w", "group"));
    in_scratch(target, sizeof target, "world");
    in_scratch(path, sizeof path, "safe/folder-link");
    TP_CHECK("a link to a world-writable folder", symlink(target, path) == 0);
    TP_CHECK_STATUS("a plugin folder that links to a world-writable one", ts_store_load_plugins(store, path), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("names the real folder", ts_last_error(), "real path");
    TP_CHECK("with the fix", names_fix("chmod go-w", "world"));
    TP_CHECK_STATUS("a relative folder that does not exist", ts_store_load_plugins(store, "no-such-plugins"), TS_E_NOT_FOUND);
    TP_CHECK_CONTAINS("says where it looked", ts_last_error(), "(looked for /");
    TP_CHECK("the refusals changed nothing", trace_is(store, "c"));
    ts_store_destroy(store);
}

/* The refusals that concern the file itself and the folder's other files:
 * what is not a regular file, what a path cannot reach, a descriptor without
 * run(), a config file that cannot be read or is not UTF-8; and a plugin
 * whose descriptor has no name is named after its file. */
void test_loader__whatIsNotAPluginFileIsRefusedNamingIt(void) {
    char path[1400], folder[1200], source[1200];
    ts_store *store = new_store();

    TP_CHECK_STATUS("a folder given as a plugin file", ts_store_load_plugin(store, scratch, NULL), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("says it is no regular file", ts_last_error(), "not a regular file");

    snprintf(path, sizeof path, "%s/file", scratch);
    TP_CHECK("write a file", write_file(path, "x"));
    snprintf(path, sizeof path, "%s/file/x.so", scratch);
    TP_CHECK_STATUS("a path through a file", ts_store_load_plugin(store, path, NULL), TS_E_IO);
    TP_CHECK_CONTAINS("names the path", ts_last_error(), "file/x.so");
    snprintf(path, sizeof path, "%s/file", scratch);
    TP_CHECK_STATUS("a file given as a plugin folder", ts_store_load_plugins(store, path), TS_E_IO);
    TP_CHECK_CONTAINS("says it is no folder", ts_last_error(), "is not a folder");
    snprintf(path, sizeof path, "%s/file/sub", scratch);
    TP_CHECK_STATUS("a folder path through a file", ts_store_load_plugins(store, path), TS_E_IO);
    TP_CHECK_CONTAINS("names the folder", ts_last_error(), "file/sub");

    variant(path, sizeof path, "no-run");
    TP_CHECK_STATUS("a descriptor without run", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("names the missing function", ts_last_error(), "run");

    variant(path, sizeof path, "no-name");
    TP_CHECK_STATUS("a descriptor without name loads", ts_store_load_plugin(store, path, "{\"tag\":\"n\"}"), TS_OK);
    TP_CHECK("and runs", trace_is(store, "n"));

    snprintf(folder, sizeof folder, "%s/file-configs", scratch);
    TP_CHECK("make a folder", mkdir(folder, 0755) == 0);
    variant(source, sizeof source, "ok");
    snprintf(path, sizeof path, "%s/10-a.so", folder);
    TP_CHECK("copy 10-a.so", copy_file(source, path, 0755));
    snprintf(path, sizeof path, "%s/10-a.json", folder);
    TP_CHECK("a config that is not UTF-8", write_file(path, "{\"tag\":\"\xff\"}"));
    TP_CHECK_STATUS("a NAME.json that is not UTF-8", ts_store_load_plugins(store, folder), TS_E_JSON);
    TP_CHECK_CONTAINS("names the config", ts_last_error(), "10-a.json");
    TP_CHECK("remove it", unlink(path) == 0);
    TP_CHECK("a folder where the config should be", mkdir(path, 0755) == 0);
    TP_CHECK_STATUS("a NAME.json that is a folder", ts_store_load_plugins(store, folder), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("names the config", ts_last_error(), "10-a.json");
    TP_CHECK_CONTAINS("says it is no regular file", ts_last_error(), "not a regular file");
    TP_CHECK("nothing of it was added", trace_is(store, "n"));

    /* Code owned by another user (not root) is refused; only root can make such a file here. */
    if (geteuid() == 0) {
        snprintf(path, sizeof path, "%s/10-a.so", folder);
        TP_CHECK("give the plugin to another user", chown(path, 65534, 65534) == 0);
        TP_CHECK_STATUS("a plugin owned by another user", ts_store_load_plugin(store, path, NULL), TS_E_PLUGIN);
        TP_CHECK_CONTAINS("names the owner", ts_last_error(), "belongs to user 65534");
    } else {
        printf("test_files: not root, the other-owner case is skipped\n");
    }
    ts_store_destroy(store);
}

int ts_test_suite_option(int argc, char **argv, int i) { return tp_option(argc, argv, i); }

/* The variants' folder, and a scratch folder that teardown removes. */
void ts_test_suite_setup(void) {
    ts_test_on_failure = tp_show_last_error;
    snprintf(variants, sizeof variants, "%s/loader", tp_plugin_dir());
    if (mkdtemp(scratch) == NULL) {
        perror("mkdtemp");
        exit(2);
    }
}

void ts_test_suite_teardown(void) {
    char command[256];
    snprintf(command, sizeof command, "rm -rf '%s'", scratch);
    if (system(command) != 0) fprintf(stderr, "could not remove %s\n", scratch);
}
