/*
 * test_slice_ids.c - C API tests of ts_reducer_slice_id and
 * ts_reducer_answer_id: the identity of the slice a reducer was given, and
 * the id reserved for the slice made from its answer; equal ids mean the
 * same text, ids are never 0 nor reused, an answer that is not applied
 * leaves its id unused, calls nest, and both refuse misuse.
 * Part of the C suite (check.h; `make test-c`; one test: build/tests/test_store -s TOPIC__RULE).
 */
#include "check.h"

/* What the id reducer saw in its calls. */
static struct {
    int calls;
    uint64_t slice_id[16];
    uint64_t answer_id[16];
    ts_status slice_status[16], answer_status[16];
} seen;

static void seen_reset(void) { memset(&seen, 0, sizeof seen); }

/* Notes both ids, then answers as the action type says: "same" NULL,
 * "set" the payload as text, "patch" the payload as a patch, "reserve-null"
 * reserves an answer id and answers NULL, "fail" fails. At init: "0". */
static char *id_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    int i = seen.calls < 16 ? seen.calls : 15;
    seen.calls++;
    seen.slice_status[i] = ts_reducer_slice_id(&seen.slice_id[i]);
    if (slice == NULL) {
        seen.answer_status[i] = ts_reducer_answer_id(&seen.answer_id[i]);
        return xstrdup("0");
    }
    if (strcmp(a->type, "set") == 0) {
        uint64_t again = 0;
        seen.answer_status[i] = ts_reducer_answer_id(&seen.answer_id[i]);
        ts_reducer_answer_id(&again);
        if (again != seen.answer_id[i]) ts_reducer_fail("the answer id changed within one call");
        return xstrdup(a->payload);
    }
    if (strcmp(a->type, "patch") == 0) {
        seen.answer_status[i] = ts_reducer_answer_id(&seen.answer_id[i]);
        ts_reducer_patch(a->payload);
        return NULL;
    }
    if (strcmp(a->type, "reserve-null") == 0) {
        seen.answer_status[i] = ts_reducer_answer_id(&seen.answer_id[i]);
        return NULL;
    }
    if (strcmp(a->type, "fail") == 0) ts_reducer_fail("fails on purpose");
    return NULL;
}

/* A reducer that fails for "fail-later" (after id_reducer answered). */
static char *failing_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)ctx;
    if (slice == NULL) return xstrdup("0");
    if (strcmp(a->type, "set-then-fail") == 0) ts_reducer_fail("fails after the other answered");
    return NULL;
}

static ts_status dispatch_with(ts_store *store, const char *type, const char *payload) {
    char *action = payload ? xprintf("{\"type\":\"%s\",\"payload\":%s}", type, payload)
                           : xprintf("{\"type\":\"%s\"}", type);
    ts_status status = ts_store_dispatch(store, action);
    free(action);
    return status;
}

void test_slice_ids__outsideAReducerIsMisuse(void) {
    uint64_t id = 77;
    CHECK_ST(ts_reducer_slice_id(&id), TS_E_MISUSE);
    CHECK_CONTAINS(ts_last_error(), "ts_reducer_slice_id: called outside a reducer");
    CHECK_INT(id, 77);
    CHECK_ST(ts_reducer_answer_id(&id), TS_E_MISUSE);
    CHECK_CONTAINS(ts_last_error(), "ts_reducer_answer_id: called outside a reducer");
    CHECK_INT(id, 77);
}

static char *null_out_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)a;
    ts_status *statuses = ctx;
    statuses[0] = ts_reducer_slice_id(NULL);
    statuses[1] = ts_reducer_answer_id(NULL);
    return slice == NULL ? xstrdup("0") : NULL;
}

void test_slice_ids__nullOutIsRefused(void) {
    ts_store *store = NULL;
    ts_status statuses[2] = {TS_OK, TS_OK};
    CHECK_OK(ts_store_create(NULL, &store));
    CHECK_OK(ts_store_add_reducer(store, "n", null_out_reducer, statuses));
    CHECK_INT(statuses[0], TS_E_ARGUMENT);
    CHECK_INT(statuses[1], TS_E_ARGUMENT);
    CHECK_OK(dispatch_with(store, "x", NULL));
    CHECK_INT(statuses[0], TS_E_ARGUMENT);
    CHECK_INT(statuses[1], TS_E_ARGUMENT);
    ts_store_destroy(store);
}

void test_slice_ids__idChangesExactlyWhenTheSliceDoes(void) {
    ts_store *store = NULL;
    seen_reset();
    CHECK_OK(ts_store_create(NULL, &store));
    CHECK_OK(ts_store_add_reducer(store, "v", id_reducer, NULL));
    /* The init call has no slice: 0; its answer's id is the first slice's. */
    CHECK_INT(seen.slice_status[0], TS_OK);
    CHECK_INT(seen.slice_id[0], 0);
    CHECK_INT(seen.answer_status[0], TS_OK);
    CHECK(seen.answer_id[0] != 0);
    CHECK_OK(dispatch_with(store, "same", NULL));
    CHECK_INT(seen.slice_id[1], seen.answer_id[0]);
    /* NULL: the same slice, the same id. */
    CHECK_OK(dispatch_with(store, "same", NULL));
    CHECK_INT(seen.slice_id[2], seen.slice_id[1]);
    /* New text: the slice made from it has the reserved id. */
    CHECK_OK(dispatch_with(store, "set", "[1,2,3]"));
    CHECK_INT(seen.answer_status[3], TS_OK);
    CHECK(seen.answer_id[3] != 0 && seen.answer_id[3] != seen.slice_id[3]);
    CHECK_OK(dispatch_with(store, "same", NULL));
    CHECK_INT(seen.slice_id[4], seen.answer_id[3]);
    CHECK_STATE(store, "/v", "[1,2,3]");
    /* A patch that changes the slice: the same. */
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"add\",\"path\":\"/-\",\"value\":4}]"));
    CHECK_OK(dispatch_with(store, "same", NULL));
    CHECK_INT(seen.slice_id[6], seen.answer_id[5]);
    CHECK(seen.answer_id[5] != seen.answer_id[3]);
    CHECK_STATE(store, "/v", "[1,2,3,4]");
    /* Identical text is still a new answer: a new id, never 0. */
    CHECK_OK(dispatch_with(store, "set", "[1,2,3,4]"));
    CHECK_OK(dispatch_with(store, "same", NULL));
    CHECK_INT(seen.slice_id[8], seen.answer_id[7]);
    CHECK(seen.slice_id[8] != seen.slice_id[6]);
    ts_store_destroy(store);
}

void test_slice_ids__reservedButUnusedAnswerIdLeavesTheSliceIdAlone(void) {
    ts_store *store = NULL;
    seen_reset();
    CHECK_OK(ts_store_create(NULL, &store));
    CHECK_OK(ts_store_add_reducer(store, "v", id_reducer, NULL));
    CHECK_OK(ts_store_add_reducer(store, "w", failing_reducer, NULL));
    CHECK_OK(dispatch_with(store, "same", NULL));
    uint64_t before = seen.slice_id[1];
    /* Reserved, then NULL: nothing changed, the id is not used. */
    CHECK_OK(dispatch_with(store, "reserve-null", NULL));
    CHECK(seen.answer_id[2] != 0 && seen.answer_id[2] != before);
    CHECK_OK(dispatch_with(store, "same", NULL));
    CHECK_INT(seen.slice_id[3], before);
    /* A patch that changes nothing ("test" only) keeps the slice. */
    CHECK_OK(dispatch_with(store, "patch", "[{\"op\":\"test\",\"path\":\"\",\"value\":0}]"));
    CHECK_OK(dispatch_with(store, "same", NULL));
    CHECK_INT(seen.slice_id[5], before);
    /* An answer the dispatch throws away (a later reducer fails): the slice
     * stays, and its id too. */
    char *action = xprintf("{\"type\":\"set-then-fail\",\"payload\":5}");
    CHECK_ST(ts_store_dispatch(store, action), TS_E_REDUCER);
    free(action);
    CHECK_OK(dispatch_with(store, "same", NULL));
    CHECK_INT(seen.slice_id[7], before);
    CHECK_STATE(store, "/v", "0");
    ts_store_destroy(store);
}

/* Replaces the state for "replace": the slice changes without its reducer. */
static ts_status replacing_middleware(const ts_store_api *api, ts_next_fn next, const ts_action *a, void *ctx) {
    (void)ctx;
    if (strcmp(a->type, "replace") == 0) return api->replace_state("{\"v\":[9],\"w\":0}");
    return next(a->json);
}

void test_slice_ids__sliceReplacedBehindTheReducerGetsAFreshId(void) {
    ts_store *store = NULL;
    seen_reset();
    CHECK_OK(ts_store_create(NULL, &store));
    CHECK_OK(ts_store_add_reducer(store, "v", id_reducer, NULL));
    CHECK_OK(ts_store_add_middleware(store, "replacer", replacing_middleware, NULL));
    CHECK_OK(dispatch_with(store, "set", "[1]"));
    uint64_t answered = seen.answer_id[1];
    CHECK_OK(dispatch_with(store, "replace", NULL));
    CHECK_OK(dispatch_with(store, "same", NULL));
    /* Neither the old slice's id nor the answer's: the reducer knows to read
     * its slice again. */
    CHECK(seen.slice_id[2] != 0 && seen.slice_id[2] != answered && seen.slice_id[2] != seen.slice_id[1]);
    CHECK_STATE(store, "/v", "[9]");
    ts_store_destroy(store);
}

/* A reducer of one store that dispatches to another (allowed): each call
 * reads its own slice's id. */
static ts_store *inner_store;
static uint64_t outer_before, outer_after, inner_id;

static char *inner_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)a;
    (void)ctx;
    ts_reducer_slice_id(&inner_id);
    return slice == NULL ? xstrdup("\"inner\"") : NULL;
}

static char *outer_reducer(const char *slice, const ts_action *a, void *ctx) {
    (void)a;
    (void)ctx;
    if (slice == NULL) return xstrdup("\"outer\"");
    ts_reducer_slice_id(&outer_before);
    ts_store_dispatch(inner_store, "{\"type\":\"nested\"}");
    ts_reducer_slice_id(&outer_after);
    return NULL;
}

void test_slice_ids__nestedStoreDispatchKeepsTheOuterIds(void) {
    ts_store *outer = NULL;
    CHECK_OK(ts_store_create(NULL, &outer));
    CHECK_OK(ts_store_create(NULL, &inner_store));
    CHECK_OK(ts_store_add_reducer(inner_store, "i", inner_reducer, NULL));
    CHECK_OK(ts_store_add_reducer(outer, "o", outer_reducer, NULL));
    CHECK_OK(ts_store_dispatch(outer, "{\"type\":\"go\"}"));
    CHECK(outer_before != 0 && inner_id != 0 && inner_id != outer_before);
    CHECK_INT(outer_after, outer_before);
    ts_store_destroy(outer);
    ts_store_destroy(inner_store);
}

