/* Tests of the guard plugin (Plugins/guard): every rule, the messages,
 * invalid configs. Prints "N passed, M failed". */
#include "plugin_test.h"

/* A middleware after the guard that counts what got past it. */
static int reached;
static ts_status count_mw(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)api;
    (void)ctx;
    if (strcmp(action->type, TP_CREATE_TYPE) != 0) reached++;
    return next(action->json);
}

/* A store with the "counter" reducer and the guard (config) loaded first,
 * then the counting middleware. NULL if the load failed. */
static ts_store *guarded(const char *config, ts_status *load_status) {
    ts_store *s = NULL;
    ts_status st;
    if (ts_store_create(NULL, &s) != TS_OK) return NULL;
    ts_store_add_reducer(s, "counter", tp_counter_reducer, NULL);
    st = tp_load(s, tp_plugin("guard"), config);
    if (load_status) *load_status = st;
    ts_store_add_middleware(s, "count", count_mw, NULL);
    reached = 0;
    return s;
}

void test_guard__withNoConfigEveryActionPasses(void) {
    ts_status st;
    ts_store *s = guarded(NULL, &st);
    TP_CHECK_STATUS("load with no config", st, TS_OK);
    TP_CHECK_STATUS("any type passes with no rules", ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_OK);
    TP_CHECK_STATUS("admin too", ts_store_dispatch(s, "{\"type\":\"admin/reset\",\"payload\":[1,2,3]}"), TS_OK);
    TP_CHECK_INT("both reached the chain", reached, 2);
    tp_destroy(s);

    s = guarded("{}", &st);
    TP_CHECK_STATUS("load with {}", st, TS_OK);
    TP_CHECK_STATUS("{}: passes", ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_OK);
    TP_CHECK_INT("{}: counter", tp_state_int(s, "/counter", -1), 1);
    tp_destroy(s);
}

void test_guard__allowPassesOnlyListedTypesAndPrefixes(void) {
    ts_status st;
    ts_store *s = guarded("{\"allow\": [\"todos/*\", \"filter/set\", \"inc\"]}", &st);
    TP_CHECK_STATUS("load allow", st, TS_OK);
    TP_CHECK_STATUS("allow prefix todos/add", ts_store_dispatch(s, "{\"type\":\"todos/add\"}"), TS_OK);
    TP_CHECK_STATUS("allow prefix todos/x/y", ts_store_dispatch(s, "{\"type\":\"todos/x/y\"}"), TS_OK);
    TP_CHECK_STATUS("allow prefix: the bare prefix todos/", ts_store_dispatch(s, "{\"type\":\"todos/\"}"), TS_OK);
    TP_CHECK_STATUS("allow exact filter/set", ts_store_dispatch(s, "{\"type\":\"filter/set\"}"), TS_OK);
    TP_CHECK_STATUS("allow exact inc", ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_OK);
    TP_CHECK_INT("allowed ones reached the chain", reached, 5);
    TP_CHECK_INT("and the reducers", tp_state_int(s, "/counter", -1), 1);

    TP_CHECK_STATUS("todos (no slash) is not todos/*", ts_store_dispatch(s, "{\"type\":\"todos\"}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("message names the type", ts_last_error(), "\"todos\"");
    TP_CHECK_CONTAINS("message names the rule", ts_last_error(), "allow");
    TP_CHECK_CONTAINS("message lists the allow patterns", ts_last_error(), "\"todos/*\"");
    TP_CHECK_STATUS("exact pattern is not a prefix", ts_store_dispatch(s, "{\"type\":\"filter/setx\"}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("message names filter/setx", ts_last_error(), "\"filter/setx\"");
    TP_CHECK_STATUS("inc2 not allowed", ts_store_dispatch(s, "{\"type\":\"inc2\"}"), TS_E_REJECTED);
    TP_CHECK_INT("refused ones reached nothing", reached, 5);
    TP_CHECK_INT("state unchanged by refusals", tp_state_int(s, "/counter", -1), 1);
    tp_destroy(s);

    s = guarded("{\"allow\": []}", &st);
    TP_CHECK_STATUS("load empty allow", st, TS_OK);
    TP_CHECK_STATUS("empty allow list allows nothing", ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_E_REJECTED);
    tp_destroy(s);

    s = guarded("{\"allow\": [\"*\"]}", &st);
    TP_CHECK_STATUS("\"*\" allows everything", ts_store_dispatch(s, "{\"type\":\"anything/at/all\"}"), TS_OK);
    tp_destroy(s);

    /* Escapes in patterns and types compare decoded. */
    s = guarded("{\"allow\": [\"\\u00fc/*\", \"a\\\"b\"]}", &st);
    TP_CHECK_STATUS("load escaped patterns", st, TS_OK);
    TP_CHECK_STATUS("escaped prefix pattern matches UTF-8 type", ts_store_dispatch(s, "{\"type\":\"\xc3\xbc/x\"}"), TS_OK);
    TP_CHECK_STATUS("escaped type matches too", ts_store_dispatch(s, "{\"type\":\"\\u00fc/y\"}"), TS_OK);
    TP_CHECK_STATUS("quote in pattern", ts_store_dispatch(s, "{\"type\":\"a\\\"b\"}"), TS_OK);
    TP_CHECK_STATUS("u/x is not \xc3\xbc/x", ts_store_dispatch(s, "{\"type\":\"u/x\"}"), TS_E_REJECTED);
    tp_destroy(s);
}

void test_guard__denyRejectsListedTypesNamingTheRule(void) {
    ts_status st;
    ts_store *s = guarded("{\"deny\": [\"admin/*\", \"boom\"]}", &st);
    TP_CHECK_STATUS("load deny", st, TS_OK);
    TP_CHECK_STATUS("deny prefix", ts_store_dispatch(s, "{\"type\":\"admin/reset\"}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("deny message names the type", ts_last_error(), "\"admin/reset\"");
    TP_CHECK_CONTAINS("deny message names the rule", ts_last_error(), "deny rule \"admin/*\"");
    TP_CHECK_STATUS("deny exact", ts_store_dispatch(s, "{\"type\":\"boom\"}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("deny exact message", ts_last_error(), "deny rule \"boom\"");
    TP_CHECK_STATUS("without allow, others pass", ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_OK);
    TP_CHECK_STATUS("adminx is not admin/*", ts_store_dispatch(s, "{\"type\":\"adminx\"}"), TS_OK);
    TP_CHECK_INT("only allowed ones reached", reached, 2);
    tp_destroy(s);

    s = guarded("{\"allow\": [\"*\", \"admin/reset\"], \"deny\": [\"admin/*\"]}", &st);
    TP_CHECK_STATUS("load allow+deny", st, TS_OK);
    TP_CHECK_STATUS("deny wins over allow", ts_store_dispatch(s, "{\"type\":\"admin/reset\"}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("the deny rule is named", ts_last_error(), "deny");
    TP_CHECK_STATUS("allowed and not denied", ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_OK);
    tp_destroy(s);
}

void test_guard__requireRejectsActionsMissingAPayloadField(void) {
    ts_status st;
    ts_store *s = guarded("{\"require\": {\"todos/add\": [\"title\", \"id\"], \"user/*\": [\"name\"]}}", &st);
    TP_CHECK_STATUS("load require", st, TS_OK);
    TP_CHECK_STATUS("both fields present", ts_store_dispatch(s, "{\"type\":\"todos/add\",\"payload\":{\"id\":1,\"title\":\"x\"}}"),
                    TS_OK);
    TP_CHECK_STATUS("field values may be anything, null too",
                    ts_store_dispatch(s, "{\"type\":\"todos/add\",\"payload\":{\"id\":null,\"title\":{\"deep\":[[[]]]}}}"), TS_OK);
    TP_CHECK_STATUS("no payload", ts_store_dispatch(s, "{\"type\":\"todos/add\"}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("no payload: names the type", ts_last_error(), "\"todos/add\"");
    TP_CHECK_CONTAINS("no payload: names the field", ts_last_error(), "\"title\"");
    TP_CHECK_CONTAINS("no payload: names the rule", ts_last_error(), "require rule \"todos/add\"");
    TP_CHECK_CONTAINS("no payload: says so", ts_last_error(), "no payload");
    TP_CHECK_STATUS("missing id", ts_store_dispatch(s, "{\"type\":\"todos/add\",\"payload\":{\"title\":\"x\"}}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("missing id named", ts_last_error(), "\"id\"");
    TP_CHECK_STATUS("payload not an object", ts_store_dispatch(s, "{\"type\":\"todos/add\",\"payload\":[\"title\",\"id\"]}"),
                    TS_E_REJECTED);
    TP_CHECK_CONTAINS("not an object: says so", ts_last_error(), "not an object");
    TP_CHECK_STATUS("a nested field does not count",
                    ts_store_dispatch(s, "{\"type\":\"todos/add\",\"payload\":{\"x\":{\"title\":1,\"id\":2}}}"), TS_E_REJECTED);
    TP_CHECK_STATUS("a string value that looks like a key does not count",
                    ts_store_dispatch(s, "{\"type\":\"todos/add\",\"payload\":{\"x\":\"title\",\"y\":\"id\"}}"), TS_E_REJECTED);
    TP_CHECK_STATUS("an escaped key counts decoded",
                    ts_store_dispatch(s, "{\"type\":\"todos/add\",\"payload\":{\"\\u0074itle\":1,\"id\":2}}"), TS_OK);
    TP_CHECK_STATUS("a key that only starts like the field does not count",
                    ts_store_dispatch(s, "{\"type\":\"todos/add\",\"payload\":{\"titles\":1,\"id\":2}}"), TS_E_REJECTED);
    TP_CHECK_STATUS("pattern require: user/rename without name",
                    ts_store_dispatch(s, "{\"type\":\"user/rename\",\"payload\":{}}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("pattern require: rule named", ts_last_error(), "require rule \"user/*\"");
    TP_CHECK_STATUS("pattern require: with name", ts_store_dispatch(s, "{\"type\":\"user/rename\",\"payload\":{\"name\":\"a\"}}"),
                    TS_OK);
    TP_CHECK_STATUS("other types have no requirement", ts_store_dispatch(s, "{\"type\":\"todos/remove\"}"), TS_OK);
    TP_CHECK_INT("reached: the accepted ones", reached, 5);
    tp_destroy(s);
}

void test_guard__maxBytesRejectsLargerActions(void) {
    ts_status st;
    const char *exact = "{\"type\":\"inc\",\"payload\":\"0123456789\"}"; /* 37 bytes */
    char config[64], big[256];
    ts_store *s;
    snprintf(config, sizeof config, "{\"max_bytes\": %zu}", strlen(exact));
    s = guarded(config, &st);
    TP_CHECK_STATUS("load max_bytes", st, TS_OK);
    TP_CHECK_STATUS("exactly max_bytes passes", ts_store_dispatch(s, exact), TS_OK);
    TP_CHECK_STATUS("one byte over is refused", ts_store_dispatch(s, "{\"type\":\"inc\",\"payload\":\"0123456789a\"}"),
                    TS_E_REJECTED);
    TP_CHECK_CONTAINS("max_bytes message names the type", ts_last_error(), "\"inc\"");
    TP_CHECK_CONTAINS("max_bytes message names the rule", ts_last_error(), "max_bytes");
    TP_CHECK_CONTAINS("max_bytes message gives the size", ts_last_error(), "38 bytes");
    TP_CHECK_CONTAINS("max_bytes message gives the limit", ts_last_error(), "(37)");
    /* White space counts: the limit is on the text as dispatched. */
    snprintf(big, sizeof big, "{\"type\":\"inc\",      \"payload\":\"0\"}");
    TP_CHECK_STATUS("white space counts", ts_store_dispatch(s, big), TS_OK);
    snprintf(big, sizeof big, "{\"type\":\"inc\",           \"payload\":\"0\"}");
    TP_CHECK_STATUS("white space counts (over)", ts_store_dispatch(s, big), TS_E_REJECTED);
    TP_CHECK_INT("counter", tp_state_int(s, "/counter", -1), 2);
    tp_destroy(s);

    s = guarded("{\"max_bytes\": 0}", &st);
    TP_CHECK_STATUS("max_bytes 0 refuses everything", ts_store_dispatch(s, "{\"type\":\"inc\"}"), TS_E_REJECTED);
    tp_destroy(s);
}

/* max_bytes takes the whole uint64 range. */
void test_guard__maxBytesTakesTheWholeUint64Range(void) {
    static const char *const limits[] = {"18446744073709551615", "9223372036854775808", "9223372036854775807"};
    char config[80], name[160];
    size_t i;
    for (i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        ts_status st;
        ts_store *s;
        snprintf(config, sizeof config, "{\"max_bytes\": %s}", limits[i]);
        s = guarded(config, &st);
        snprintf(name, sizeof name, "load %s", config);
        TP_CHECK_STATUS(name, st, TS_OK);
        snprintf(name, sizeof name, "%s: an action passes", config);
        TP_CHECK_STATUS(name, ts_store_dispatch(s, "{\"type\":\"inc\",\"payload\":\"0123456789\"}"), TS_OK);
        TP_CHECK_INT(name, reached, 1);
        tp_destroy(s);
    }
    {
        /* and the limit still works with a deny rule beside it */
        ts_status st;
        ts_store *s = guarded("{\"deny\": [\"admin/*\"], \"max_bytes\": 18446744073709551615}", &st);
        TP_CHECK_STATUS("load deny + max_bytes max", st, TS_OK);
        TP_CHECK_STATUS("deny still applies", ts_store_dispatch(s, "{\"type\":\"admin/wipe\"}"), TS_E_REJECTED);
        tp_destroy(s);
    }
}

/* Configs with a key twice are refused by the host (TS_E_JSON), whatever
 * the depth, so no reader can pick the other copy: the guard never starts. */
static void strict_config(const char *config, const char *key) {
    char name[400], want[80];
    ts_status st;
    ts_store *s = guarded(config, &st);
    snprintf(name, sizeof name, "config with a key twice %s", config);
    TP_CHECK_STATUS(name, st, TS_E_JSON);
    snprintf(want, sizeof want, "duplicate key \"%s\"", key);
    snprintf(name, sizeof name, "%s: message names the key", config);
    TP_CHECK_CONTAINS(name, ts_last_error(), want);
    TP_CHECK_CONTAINS(name, ts_last_error(), " at byte ");
    tp_destroy(s);
}

static int copy_file(const char *from, const char *to) {
    FILE *in = fopen(from, "rb"), *out;
    char buf[65536];
    size_t n;
    int ok = 1;
    if (in == NULL) return 0;
    out = fopen(to, "wb");
    if (out == NULL) {
        fclose(in);
        return 0;
    }
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) ok &= fwrite(buf, 1, n, out) == n;
    fclose(in);
    ok &= fclose(out) == 0;
    return ok && chmod(to, 0755) == 0;
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    int ok;
    if (f == NULL) return 0;
    ok = fputs(text, f) >= 0;
    return (fclose(f) == 0) & ok;
}

void test_guard__configWithAKeyTwiceIsRefused(void) {
    static const struct {
        const char *config, *key;
    } bypasses[] = {
        {"{\"deny\":[\"admin/wipe\"],\"deny\":[]}", "deny"},
        {"{\"deny\":[\"admin/wipe\"],\"d\\u0065ny\":[]}", "deny"},
        {"{\"allow\":[\"todos/*\"],\"allow\":[\"*\"]}", "allow"},
        {"{\"require\":{\"todos/add\":[\"title\"],\"todos/add\":[]}}", "todos/add"},
        {"{\"require\":{\"todos/add\":[\"title\"]},\"require\":{}}", "require"},
        {"{\"max_bytes\":10,\"max_bytes\":18446744073709551615}", "max_bytes"},
    };
    char folder[512], path[700];
    const char *tmp = getenv("TMPDIR");
    ts_store *s;
    size_t i;
    if (!tp_real_loader()) {
        printf("guard: duplicate-key configs need ts_store_load_plugin (the host checks them); skipped\n");
        return;
    }
    for (i = 0; i < sizeof bypasses / sizeof bypasses[0]; i++) strict_config(bypasses[i].config, bypasses[i].key);

    /* The same through a NAME.json beside the plugin in a folder. */
    snprintf(folder, sizeof folder, "%s/guard-test.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    TP_CHECK("make a folder", mkdtemp(folder) != NULL);
    snprintf(path, sizeof path, "%s/10-guard.so", folder);
    TP_CHECK("copy guard.so into it", copy_file(tp_plugin("guard"), path));
    snprintf(path, sizeof path, "%s/10-guard.json", folder);
    TP_CHECK("a good 10-guard.json", write_text(path, "{\"deny\": [\"admin/wipe\"]}"));
    s = NULL;
    ts_store_create(NULL, &s);
    TP_CHECK_STATUS("the folder loads", ts_store_load_plugins(s, folder), TS_OK);
    TP_CHECK_STATUS("admin/wipe is denied", ts_store_dispatch(s, "{\"type\":\"admin/wipe\"}"), TS_E_REJECTED);
    tp_destroy(s);
    for (i = 0; i < sizeof bypasses / sizeof bypasses[0]; i++) {
        char name[400], want[80];
        TP_CHECK("write the bypass config", write_text(path, bypasses[i].config));
        s = NULL;
        ts_store_create(NULL, &s);
        snprintf(name, sizeof name, "10-guard.json %s: the folder is refused", bypasses[i].config);
        TP_CHECK_STATUS(name, ts_store_load_plugins(s, folder), TS_E_JSON);
        snprintf(want, sizeof want, "duplicate key \"%s\"", bypasses[i].key);
        TP_CHECK_CONTAINS(name, ts_last_error(), want);
        TP_CHECK_CONTAINS(name, ts_last_error(), "10-guard");
        snprintf(name, sizeof name, "10-guard.json %s: no guard in the store", bypasses[i].config);
        TP_CHECK_STATUS(name, ts_store_dispatch(s, "{\"type\":\"admin/wipe\"}"), TS_OK);
        tp_destroy(s);
    }
    TP_CHECK("remove the config", unlink(path) == 0);
    snprintf(path, sizeof path, "%s/10-guard.so", folder);
    TP_CHECK("remove the plugin", unlink(path) == 0);
    TP_CHECK("remove the folder", rmdir(folder) == 0);
}

void test_guard__rulesApplyDenyAllowMaxBytesRequireInThatOrder(void) {
    ts_status st;
    ts_store *s = guarded("{\"allow\": [\"a/*\"], \"deny\": [\"a/x\"], \"require\": {\"a/*\": [\"f\"]}, \"max_bytes\": 40}", &st);
    TP_CHECK_STATUS("load all rules", st, TS_OK);
    TP_CHECK_STATUS("deny first", ts_store_dispatch(s, "{\"type\":\"a/x\"}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("deny first: deny named", ts_last_error(), "deny");
    TP_CHECK_STATUS("then allow", ts_store_dispatch(s, "{\"type\":\"b\"}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("then allow: allow named", ts_last_error(), "allow");
    TP_CHECK_STATUS("then max_bytes", ts_store_dispatch(s, "{\"type\":\"a/y\",\"payload\":{\"g\":\"long enough\"}}"),
                    TS_E_REJECTED);
    TP_CHECK_CONTAINS("then max_bytes: named", ts_last_error(), "max_bytes");
    TP_CHECK_STATUS("then require", ts_store_dispatch(s, "{\"type\":\"a/y\",\"payload\":{}}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("then require: named", ts_last_error(), "require");
    TP_CHECK_STATUS("all rules kept", ts_store_dispatch(s, "{\"type\":\"a/y\",\"payload\":{\"f\":1}}"), TS_OK);
    TP_CHECK_INT("one reached", reached, 1);
    tp_destroy(s);
}

static void bad_config(const char *config, const char *field) {
    char name[300];
    ts_status st;
    ts_store *s = guarded(config, &st);
    snprintf(name, sizeof name, "bad config %s", config);
    TP_CHECK_STATUS(name, st, TS_E_PLUGIN);
    snprintf(name, sizeof name, "bad config %s: message names the field", config);
    TP_CHECK_CONTAINS(name, ts_last_error(), field);
    /* The store is still usable and the guard is not in it. */
    snprintf(name, sizeof name, "bad config %s: store usable, no guard", config);
    TP_CHECK_STATUS(name, ts_store_dispatch(s, "{\"type\":\"admin/x\"}"), TS_OK);
    tp_destroy(s);
}

void test_guard__badConfigIsRefusedNamingTheField(void) {
    bad_config("{\"allow\": \"todos/*\"}", "\"allow\"");
    bad_config("{\"allow\": [\"a\", 1]}", "\"allow\"");
    bad_config("{\"allow\": [\"\"]}", "\"allow\"");
    bad_config("{\"deny\": {}}", "\"deny\"");
    bad_config("{\"deny\": [null]}", "\"deny\"");
    bad_config("{\"require\": []}", "\"require\"");
    bad_config("{\"require\": {\"a\": \"title\"}}", "\"require\"");
    bad_config("{\"require\": {\"a\": [\"x\", 2]}}", "\"require\"");
    bad_config("{\"require\": {\"\": [\"title\"]}}", "\"require\""); /* an empty type pattern */
    bad_config("{\"max_bytes\": \"10\"}", "\"max_bytes\"");
    bad_config("{\"max_bytes\": -1}", "\"max_bytes\"");
    bad_config("{\"max_bytes\": 1.5}", "\"max_bytes\"");
    bad_config("{\"max_bytes\": 1e3}", "\"max_bytes\"");
    bad_config("{\"max_bytes\": 99999999999999999999999}", "\"max_bytes\"");
    bad_config("{\"max_bytes\": 18446744073709551616}", "above 18446744073709551615");
    /* U+0000 in a pattern: no action type can contain it, so it could never match. */
    bad_config("{\"deny\": [\"admin\\u0000x\"]}", "\"deny\": element 0 contains \\u0000");
    bad_config("{\"deny\": [\"ok\", \"admin/\\u0000*\"]}", "element 1 contains \\u0000");
    bad_config("{\"allow\": [\"todos/\\u0000\"]}", "\"allow\": element 0 contains \\u0000");
    bad_config("{\"require\": {\"todos\\u0000/add\": [\"title\"]}}", "\"require\" has a type pattern \"todos\\u0000");
    bad_config("{\"alow\": []}", "\"alow\"");
    /* A field name with U+0000 is shown with it, not cut to a known name. */
    bad_config("{\"deny\\u0000x\": []}", "unknown config field \"deny\\u0000x\"");
    bad_config("{\"require\": {\"a\\u0000b\": 5}}", "\"require\" -> \"a\\u0000b\" must be an array");
    bad_config("[]", "object");
}

/* Patterns are JSON strings: every escape decodes before matching (\" \\ \/
 * \b \f \n \r \t, \uXXXX with 2-, 3- and 4-byte UTF-8 and surrogate pairs). */
void test_guard__escapedPatternsDecodeBeforeMatching(void) {
    ts_status st;
    ts_store *s = guarded("{\"deny\": [\"\\u00e9t\\u00E9\", \"q\\\"\\\\\\/\\b\\f\\n\\r\\t\", \"\\u20ac\", "
                          "\"\\ud83d\\ude00*\", \"\\u0041\"]}",
                          &st);
    TP_CHECK_STATUS("escaped patterns: load", st, TS_OK);
    TP_CHECK_STATUS("\\u00e9 (2 bytes) matches", ts_store_dispatch(s, "{\"type\":\"\xc3\xa9t\xc3\xa9\"}"), TS_E_REJECTED);
    TP_CHECK_STATUS("simple escapes match", ts_store_dispatch(s, "{\"type\":\"q\\\"\\\\/\\b\\f\\n\\r\\t\"}"),
                    TS_E_REJECTED);
    TP_CHECK_STATUS("\\u20ac (3 bytes) matches", ts_store_dispatch(s, "{\"type\":\"\xe2\x82\xac\"}"), TS_E_REJECTED);
    TP_CHECK_STATUS("surrogate pair prefix (4 bytes) matches",
                    ts_store_dispatch(s, "{\"type\":\"\xf0\x9f\x98\x80/grin\"}"), TS_E_REJECTED);
    TP_CHECK_STATUS("\\u0041 matches A", ts_store_dispatch(s, "{\"type\":\"A\"}"), TS_E_REJECTED);
    TP_CHECK_STATUS("others pass", ts_store_dispatch(s, "{\"type\":\"\xc3\xa9t\"}"), TS_OK);
    TP_CHECK_INT("one reached", reached, 1);
    tp_destroy(s);
}

void test_guard__descriptorAndDirectCreateFollowThePluginAbi(void) {
    const ts_plugin *p = tp_descriptor(tp_plugin("guard"), TS_PLUGIN_ABI_VERSION);
    ts_store_api api = tp_fake_api(sizeof(ts_store_api));
    void *self = NULL;
    char *err = NULL;
    TP_CHECK("descriptor", p != NULL);
    if (p == NULL) return;
    TP_CHECK_INT("abi_version", p->abi_version, TS_PLUGIN_ABI_VERSION);
    TP_CHECK_INT("struct_size", p->struct_size, sizeof(ts_plugin));
    TP_CHECK_STR("name", p->name, "guard");
    TP_CHECK("no descriptor for ABI 0", tp_descriptor(tp_plugin("guard"), 0) == NULL);
    TP_CHECK("a newer host gets ABI 1", tp_descriptor(tp_plugin("guard"), 7) == p);
    TP_CHECK_STATUS("create with NULL config", p->create(NULL, &api, &self, &err), TS_OK);
    p->destroy(self);
    TP_CHECK_STATUS("bad config with NULL error_message does not crash", p->create("{\"deny\":1}", &api, &self, NULL),
                    TS_E_PLUGIN);
    TP_CHECK_STATUS("bad config", p->create("{\"deny\":1}", &api, &self, &err), TS_E_PLUGIN);
    TP_CHECK_CONTAINS("create message", err, "\"deny\"");
    free(err);
    /* Text a host did not validate: malformed JSON, a repeated field and bad
     * escapes are refused with a message, never read past the end. */
    {
        static const struct {
            const char *config, *message_part;
        } cases[] = {
            {"{\"deny\": [\"x\"", "malformed"},
            {"{\"deny\": [\"x\" \"y\"]}", "\"deny\" is malformed"},
            {"{\"require\": {\"a\": [] \"b\": []}}", "\"require\" is malformed"},
            {"{\"require\": {\"a\": [\"x\"]}, \"require\": {}}", "appears twice"},
            {"{\"max_bytes\": 1,", "malformed"},
            {"{\"max_bytes\": 1 \"deny\": []}", "malformed"},
            {"{\"deny\": [\"\\ud800\"]}", "\"deny\""},       /* lone high surrogate */
            {"{\"deny\": [\"\\ud800\\u0041\"]}", "\"deny\""}, /* high surrogate, no low one */
            {"{\"deny\": [\"\\udc00\"]}", "\"deny\""},       /* lone low surrogate */
            {"{\"deny\": [\"\\u00G0\"]}", "\"deny\""},       /* not hex */
            {"{\"deny\": [\"\\x\"]}", "\"deny\""},           /* unknown escape */
            {" \t\r\n{ \t\r\n\"deny\" \t\r\n: \t\r\n[ \t\r\n\"x\" \t\r\n, 5] \t\r\n}", "\"deny\""},
            {"tru", "object"},
            {"false", "a boolean"},
            {"null", "null"},
            {"\"x\"", "a string"},
            {"-1", "a number"},
            {"?", "invalid JSON"},
        };
        size_t i;
        char name[300];
        for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            err = NULL;
            self = NULL;
            snprintf(name, sizeof name, "direct create(%s): refused", cases[i].config);
            TP_CHECK_STATUS(name, p->create(cases[i].config, &api, &self, &err), TS_E_PLUGIN);
            snprintf(name, sizeof name, "direct create(%s): message", cases[i].config);
            TP_CHECK_CONTAINS(name, err, cases[i].message_part);
            free(err);
        }
    }
    /* A deeply nested config value is skipped without recursion. */
    {
        size_t depth = 100000, i;
        char *cfg = malloc(depth * 2 + 64);
        char *w = cfg;
        w += sprintf(w, "{\"deny\":[\"x\"],\"require\":{\"a\":[]},\"unknown\":");
        for (i = 0; i < depth; i++) *w++ = '[';
        for (i = 0; i < depth; i++) *w++ = ']';
        strcpy(w, "}");
        err = NULL;
        TP_CHECK_STATUS("deep unknown value: refused, no crash", p->create(cfg, &api, &self, &err), TS_E_PLUGIN);
        TP_CHECK_CONTAINS("deep unknown value: named", err, "\"unknown\"");
        free(err);
        free(cfg);
    }
}

int ts_test_suite_option(int argc, char **argv, int i) { return tp_option(argc, argv, i); }

void ts_test_suite_setup(void) { printf("guard: loading through %s\n", tp_loader_name()); }
