/*
 * test_migrations.c - versioned state and migrations through the C API
 * (turnstate.h, "Versions of the state and migrations"): state of version 1
 * brought to version 3 through 1->2->3 in order; a downgrade, a missing step
 * and a failing migration refused with their messages and the state
 * unchanged; a migration's invalid result; a migration that calls into its
 * store; argument errors. A topic of the C suite (test_store).
 */
#include "check.h"

/* Version 1: {"todos":["a","b"]}.  2: {"todos":[{"title":"a"},...]}.
 * 3: {"todos":{"items":[{"title":"a","done":false},...]}}. Written as text
 * transformations of the minified state, enough for these fixed inputs. */
static char *v1_to_v2(const char *state, void *ctx, char **error) {
    (void)error;
    log_add((const char *)ctx);
    /* ["a","b"] -> [{"title":"a"},{"title":"b"}] */
    char *out = ts_alloc(strlen(state) * 4 + 64), *w = out;
    const char *p = state;
    int in_array = 0;
    while (*p) {
        if (strncmp(p, "\"todos\":[", 9) == 0) {
            memcpy(w, p, 9), w += 9, p += 9, in_array = 1;
            continue;
        }
        if (in_array && *p == '"') {
            const char *end = strchr(p + 1, '"');
            w += sprintf(w, "{\"title\":%.*s}", (int)(end - p + 1), p);
            p = end + 1;
            continue;
        }
        if (in_array && *p == ']') in_array = 0;
        *w++ = *p++;
    }
    *w = '\0';
    return out;
}

static char *v2_to_v3(const char *state, void *ctx, char **error) {
    (void)error;
    log_add((const char *)ctx);
    /* "todos":[...] -> "todos":{"items":[... with "done":false]} */
    char *out = ts_alloc(strlen(state) * 3 + 64), *w = out;
    const char *p = state;
    int in_array = 0;
    while (*p) {
        if (strncmp(p, "\"todos\":[", 9) == 0) {
            w += sprintf(w, "\"todos\":{\"items\":["), p += 9, in_array = 1;
            continue;
        }
        if (in_array && *p == '}') {
            w += sprintf(w, ",\"done\":false}"), p++;
            continue;
        }
        if (in_array && *p == ']') {
            w += sprintf(w, "]}"), p++, in_array = 0;
            continue;
        }
        *w++ = *p++;
    }
    *w = '\0';
    return out;
}

static char *failing(const char *state, void *ctx, char **error) {
    (void)state;
    (void)ctx;
    *error = ts_strdup("the todos are not a list");
    return NULL;
}

static char *silent_failure(const char *state, void *ctx, char **error) {
    (void)state, (void)ctx, (void)error;
    return NULL;
}

static char *not_an_object(const char *state, void *ctx, char **error) {
    (void)state, (void)ctx, (void)error;
    return ts_strdup("[1,2]");
}

static ts_store *reentrant_target;
static ts_status reentrant_status;
static char *reentrant(const char *state, void *ctx, char **error) {
    (void)ctx, (void)error;
    reentrant_status = ts_store_dispatch(reentrant_target, "{\"type\":\"x\"}");
    return ts_strdup(state);
}

static int notified;
static void count_notify(ts_store *store, void *ctx) {
    (void)store, (void)ctx;
    notified++;
}

/* A store of version 3 with the migrations 1->2 and 2->3. */
static ts_store *store_v3(void) {
    ts_store *store = new_store("{\"todos\":{\"items\":[]}}");
    CHECK_OK(ts_store_set_version(store, 3));
    CHECK_OK(ts_store_add_migration(store, 2, v2_to_v3, "2->3;"));
    CHECK_OK(ts_store_add_migration(store, 1, v1_to_v2, "1->2;"));
    return store;
}

void test_migrations__versionIsZeroUntilSetAndKept(void) {
    ts_store *store = new_store(NULL);
    uint32_t version = 99;
    CHECK_OK(ts_store_get_version(store, &version));
    CHECK_INT(version, 0);
    CHECK_OK(ts_store_set_version(store, 7));
    CHECK_OK(ts_store_get_version(store, &version));
    CHECK_INT(version, 7);
    ts_store_destroy(store);
}

void test_migrations__migrationsRunInOrderFromTheSavedVersion(void) {
    ts_store *store = store_v3();
    uint64_t token;
    notified = 0;
    CHECK_OK(ts_store_subscribe(store, NULL, count_notify, NULL, &token));
    log_reset();
    CHECK_OK(ts_store_replace_state_from(store, "{\"todos\":[\"a\",\"b\"]}", 1));
    CHECK_STR(call_log, "1->2;2->3;");
    CHECK_STATE(store, "", "{\"todos\":{\"items\":[{\"title\":\"a\",\"done\":false},{\"title\":\"b\",\"done\":false}]}}");
    CHECK_INT(notified, 1);
    /* From version 2: only 2->3. */
    log_reset();
    CHECK_OK(ts_store_replace_state_from(store, "{\"todos\":[{\"title\":\"c\"}]}", 2));
    CHECK_STR(call_log, "2->3;");
    CHECK_STATE(store, "/todos/items/0", "{\"title\":\"c\",\"done\":false}");
    /* At the store's version: none. */
    log_reset();
    CHECK_OK(ts_store_replace_state_from(store, "{\"todos\":{\"items\":[]}}", 3));
    CHECK_STR(call_log, "");
    CHECK_STATE(store, "", "{\"todos\":{\"items\":[]}}");
    ts_store_destroy(store);
}

void test_migrations__aDowngradeIsRefusedAndNothingChanges(void) {
    ts_store *store = store_v3();
    uint64_t token;
    notified = 0;
    CHECK_OK(ts_store_subscribe(store, NULL, count_notify, NULL, &token));
    log_reset();
    CHECK_ST(ts_store_replace_state_from(store, "{\"todos\":7}", 4), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "the state is of version 4, newer than this program's version 3: a downgrade is refused, nothing was loaded");
    CHECK_STR(call_log, "");
    CHECK_STATE(store, "", "{\"todos\":{\"items\":[]}}");
    CHECK_INT(notified, 0);
    ts_store_destroy(store);
}

void test_migrations__aFailingMigrationNamesItsStepAndChangesNothing(void) {
    ts_store *store = new_store("{\"todos\":{\"items\":[]}}");
    uint64_t token;
    CHECK_OK(ts_store_set_version(store, 3));
    CHECK_OK(ts_store_add_migration(store, 1, v1_to_v2, "1->2;"));
    CHECK_OK(ts_store_add_migration(store, 2, failing, NULL));
    notified = 0;
    CHECK_OK(ts_store_subscribe(store, NULL, count_notify, NULL, &token));
    log_reset();
    CHECK_ST(ts_store_replace_state_from(store, "{\"todos\":[\"a\"]}", 1), TS_E_REDUCER);
    CHECK_CONTAINS(ts_last_error(), "migration 2->3 failed: the todos are not a list");
    CHECK_STR(call_log, "1->2;");
    CHECK_STATE(store, "", "{\"todos\":{\"items\":[]}}");
    CHECK_INT(notified, 0);
    ts_store_destroy(store);

    store = new_store("{\"k\":1}");
    CHECK_OK(ts_store_set_version(store, 1));
    CHECK_OK(ts_store_add_migration(store, 0, silent_failure, NULL));
    CHECK_ST(ts_store_replace_state_from(store, "{\"k\":2}", 0), TS_E_REDUCER);
    CHECK_CONTAINS(ts_last_error(), "migration 0->1 failed: it returned NULL (it gave no reason)");
    CHECK_STATE(store, "", "{\"k\":1}");
    ts_store_destroy(store);
}

void test_migrations__aMissingStepIsRefusedBeforeAnyMigrationRuns(void) {
    ts_store *store = new_store("{\"k\":1}");
    CHECK_OK(ts_store_set_version(store, 3));
    CHECK_OK(ts_store_add_migration(store, 1, v1_to_v2, "1->2;"));
    log_reset();
    CHECK_ST(ts_store_replace_state_from(store, "{\"todos\":[\"a\"]}", 1), TS_E_NOT_FOUND);
    CHECK_CONTAINS(ts_last_error(), "there is no migration from version 2 to 3: nothing was loaded");
    CHECK_STR(call_log, "");
    CHECK_STATE(store, "", "{\"k\":1}");
    ts_store_destroy(store);
}

void test_migrations__aMigrationMustReturnAJsonObject(void) {
    ts_store *store = new_store("{\"k\":1}");
    CHECK_OK(ts_store_set_version(store, 1));
    CHECK_OK(ts_store_add_migration(store, 0, not_an_object, NULL));
    CHECK_ST(ts_store_replace_state_from(store, "{\"k\":2}", 0), TS_E_JSON);
    CHECK_CONTAINS(ts_last_error(), "migration 0->1 failed: ");
    CHECK_STATE(store, "", "{\"k\":1}");
    ts_store_destroy(store);
}

void test_migrations__aMigrationCannotCallIntoItsStore(void) {
    ts_store *store = new_store("{\"k\":1}");
    reentrant_target = store;
    reentrant_status = TS_OK;
    CHECK_OK(ts_store_set_version(store, 1));
    CHECK_OK(ts_store_add_migration(store, 0, reentrant, NULL));
    CHECK_OK(ts_store_replace_state_from(store, "{\"k\":2}", 0));
    CHECK_INT(reentrant_status, TS_E_REENTRANT);
    CHECK_STATE(store, "", "{\"k\":2}");
    ts_store_destroy(store);
}

void test_migrations__badArgumentsAreRefused(void) {
    ts_store *store = new_store("{\"k\":1}");
    uint32_t version;
    CHECK_ST(ts_store_set_version(NULL, 1), TS_E_ARGUMENT);
    CHECK_ST(ts_store_get_version(store, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_get_version(NULL, &version), TS_E_ARGUMENT);
    CHECK_ST(ts_store_add_migration(store, 0, NULL, NULL), TS_E_ARGUMENT);
    CHECK_OK(ts_store_add_migration(store, 0, failing, NULL));
    CHECK_ST(ts_store_add_migration(store, 0, failing, NULL), TS_E_ARGUMENT);
    CHECK_CONTAINS(ts_last_error(), "ts_store_add_migration: there is a migration from version 0 to 1 already");
    CHECK_ST(ts_store_add_migration(store, 4294967295u, failing, NULL), TS_E_ARGUMENT);
    CHECK_ST(ts_store_replace_state_from(store, NULL, 0), TS_E_ARGUMENT);
    CHECK_ST(ts_store_replace_state_from(store, "{\"k\":", 0), TS_E_JSON);
    CHECK_ST(ts_store_replace_state_from(store, "[]", 0), TS_E_JSON);
    CHECK_STATE(store, "", "{\"k\":1}");
    ts_store_destroy(store);
}
