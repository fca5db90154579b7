/* Tests of the undo plugin (Plugins/undo): redux-undo's behaviours through
 * the plugin (undo, redo, limit, filter, groupBy, jump, clear history,
 * initial state and init types), the byte bound, tracked keys, status, every
 * bad config field and bad action refused with a message, and the journal
 * (after a restart the state is kept and the history starts empty).
 * Prints "N passed, M failed". Options: --plugins DIR (and the harness's). */
#include "plugin_test.h"

#include <stddef.h>

/* "count": +1 for INCREMENT, -1 for DECREMENT; "other": "other/set" sets it
 * to the payload; "status": the payload of @@undo/status; "applied": the
 * number of @@undo/apply actions the reducers saw. */
static char *dup_text(const char *s) {
    char *d = malloc(strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

static char *count_reducer(const char *slice, const ts_action *action, void *ctx) {
    char out[32];
    long long v;
    (void)ctx;
    if (slice == NULL) return dup_text("0");
    v = strtoll(slice, NULL, 10);
    if (strcmp(action->type, "INCREMENT") == 0) v++;
    else if (strcmp(action->type, "DECREMENT") == 0) v--;
    else return NULL;
    snprintf(out, sizeof out, "%lld", v);
    return dup_text(out);
}

static char *other_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice == NULL) return dup_text("0");
    if (strcmp(action->type, "other/set") == 0 && action->payload) return dup_text(action->payload);
    return NULL;
}

static char *status_reducer(const char *slice, const ts_action *action, void *ctx) {
    (void)ctx;
    if (slice == NULL) return dup_text("null");
    if (strcmp(action->type, "@@undo/status") == 0 && action->payload) return dup_text(action->payload);
    return NULL;
}

static char *applied_reducer(const char *slice, const ts_action *action, void *ctx) {
    char out[32];
    (void)ctx;
    if (slice == NULL) return dup_text("0");
    if (strcmp(action->type, "@@undo/apply") != 0) return NULL;
    snprintf(out, sizeof out, "%lld", strtoll(slice, NULL, 10) + 1);
    return dup_text(out);
}

static ts_store *make_store(const char *config) {
    ts_store *s = NULL;
    ts_status st;
    if (ts_store_create(NULL, &s) != TS_OK) return NULL;
    ts_store_add_reducer(s, "count", count_reducer, NULL);
    ts_store_add_reducer(s, "other", other_reducer, NULL);
    ts_store_add_reducer(s, "status", status_reducer, NULL);
    ts_store_add_reducer(s, "applied", applied_reducer, NULL);
    st = tp_load(s, tp_plugin("undo"), config);
    if (st != TS_OK) {
        fprintf(stderr, "loading undo.so with %s: %s: %s\n", config, ts_status_name(st), ts_last_error());
        tp_destroy(s);
        return NULL;
    }
    return s;
}

static ts_status send(ts_store *s, const char *json) { return ts_store_dispatch(s, json); }

static long long count(ts_store *s) { return tp_state_int(s, "/count", -9999); }

/* The counts of @@undo/status, read back through the "history" reducer. */
static long long status_field(ts_store *s, const char *field) {
    char pointer[64];
    if (send(s, "{\"type\":\"@@undo/status\"}") != TS_OK) return -1;
    snprintf(pointer, sizeof pointer, "/status/%s", field);
    return tp_state_int(s, pointer, -1);
}
static long long past(ts_store *s) { return status_field(s, "past"); }
static long long future(ts_store *s) { return status_field(s, "future"); }

static void times(ts_store *s, const char *json, int n) {
    while (n-- > 0) send(s, json);
}

#define INC "{\"type\":\"INCREMENT\"}"
#define DEC "{\"type\":\"DECREMENT\"}"
#define UNDO "{\"type\":\"@@undo\"}"
#define REDO "{\"type\":\"@@redo\"}"
#define KEYS "\"keys\":[\"count\"]"

/* A change behind the plugin's back (ts_store_replace_state_from here; the
 * inspector's time travel, a snapshot another plugin loads) empties the
 * history before the next action, an @@undo/status too: it used to take
 * the new state as the present and keep the history, so that the next
 * @@undo put back a state from before the change. */
void test_undo__statusAfterAChangeBehindItsBack(void) {
    ts_store *s = make_store("{" KEYS "}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    times(s, INC, 2);
    TP_CHECK_INT("two INCREMENTs: two states in the past", past(s), 2);
    TP_CHECK_STATUS("the state replaced behind its back", ts_store_replace_state_from(s, "{\"count\":50}", 0), TS_OK);
    TP_CHECK_INT("@@undo/status after it: the history is emptied", past(s), 0);
    TP_CHECK_STATUS("@@undo", send(s, UNDO), TS_OK);
    TP_CHECK_INT("nothing from before the change is put back", count(s), 50);
    tp_destroy(s);
}

void test_undo__initialStateUndoAndRedo(void) {
    ts_store *s = make_store("{" KEYS "}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    TP_CHECK_INT("initial state: past is empty", past(s), 0);
    TP_CHECK_INT("initial state: future is empty", future(s), 0);
    TP_CHECK_STATUS("@@undo with nothing to undo", send(s, UNDO), TS_OK);
    TP_CHECK_INT("nothing undone: count is its initial value", count(s), 0);
    TP_CHECK_STATUS("@@redo with nothing to redo", send(s, REDO), TS_OK);
    times(s, INC, 2);
    TP_CHECK_INT("two INCREMENTs", count(s), 2);
    TP_CHECK_INT("two states in the past", past(s), 2);
    send(s, "{\"type\":\"DUMMY\"}");
    TP_CHECK_INT("an action that changes nothing is not recorded", past(s), 2);
    TP_CHECK_STATUS("@@undo", send(s, UNDO), TS_OK);
    TP_CHECK_INT("undo goes back one action", count(s), 1);
    TP_CHECK_INT("undo: past 1", past(s), 1);
    TP_CHECK_INT("undo: future 1", future(s), 1);
    send(s, UNDO);
    TP_CHECK_INT("undo again: the initial state", count(s), 0);
    send(s, UNDO);
    TP_CHECK_INT("undo past the start: unchanged", count(s), 0);
    send(s, REDO);
    TP_CHECK_INT("redo", count(s), 1);
    send(s, REDO);
    TP_CHECK_INT("redo again", count(s), 2);
    TP_CHECK_INT("redo: future empty", future(s), 0);
    send(s, UNDO);
    send(s, INC);
    TP_CHECK_INT("a new action after undo", count(s), 2);
    TP_CHECK_INT("a new action clears the future", future(s), 0);
    TP_CHECK_INT("the reducers saw each @@undo/apply (4 undos and redos that moved)", tp_state_int(s, "/applied", -1), 5);
    tp_destroy(s);
}

void test_undo__onlyTheTrackedKeysAreRecordedAndSet(void) {
    ts_store *s = make_store("{" KEYS "}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    send(s, INC);
    send(s, "{\"type\":\"other/set\",\"payload\":7}");
    TP_CHECK_INT("a change of an untracked key is not recorded", past(s), 1);
    send(s, UNDO);
    TP_CHECK_INT("undo sets the tracked key", count(s), 0);
    TP_CHECK_INT("undo leaves an untracked key alone", tp_state_int(s, "/other", -1), 7);
    tp_destroy(s);
    /* Without "keys" the whole state is tracked. */
    s = make_store("{}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    send(s, "{\"type\":\"other/set\",\"payload\":7}");
    send(s, INC);
    TP_CHECK_INT("whole state: @@undo/status (its key tracked too) is not a step", past(s), 2);
    TP_CHECK_INT("whole state: nor does it empty the history", past(s), 2);
    send(s, UNDO);
    send(s, UNDO);
    TP_CHECK_INT("whole state: undo sets other back", tp_state_int(s, "/other", -1), 0);
    TP_CHECK_INT("whole state: and count", count(s), 0);
    tp_destroy(s);
}

void test_undo__limitKeepsThatManyPastStates(void) {
    ts_store *s = make_store("{" KEYS ",\"limit\":3}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    times(s, INC, 6);
    TP_CHECK_INT("limit 3: the past holds 3 states", past(s), 3);
    times(s, UNDO, 5);
    TP_CHECK_INT("limit 3: three undos reach back", count(s), 3);
    TP_CHECK_INT("limit 3: then the future holds 3", future(s), 3);
    tp_destroy(s);
}

void test_undo__maxBytesBoundsTheHistory(void) {
    /* The tracked text is {"count":N}: 11 bytes for one digit. */
    ts_store *s = make_store("{" KEYS ",\"max_bytes\":25}");
    long long bytes;
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    times(s, INC, 5);
    TP_CHECK_INT("max_bytes 25: two states of 11 bytes kept", past(s), 2);
    bytes = status_field(s, "bytes");
    TP_CHECK("max_bytes 25: the status's bytes stay within it", bytes > 0 && bytes <= 25);
    times(s, UNDO, 4);
    TP_CHECK_INT("max_bytes: undo reaches back two steps", count(s), 3);
    tp_destroy(s);
    /* A state larger than max_bytes is never kept: nothing to undo. */
    s = make_store("{" KEYS ",\"max_bytes\":5}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    times(s, INC, 2);
    TP_CHECK_INT("a state over max_bytes is not kept", past(s), 0);
    tp_destroy(s);
}

void test_undo__filteredActionsAreNotStepsOfTheirOwn(void) {
    /* include: only DECREMENT is recorded (redux-undo's includeAction). */
    ts_store *s = make_store("{" KEYS ",\"include\":[\"DECREMENT\"]}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    send(s, DEC); /* past [0], latest -1 */
    send(s, INC); /* filtered: present 0, latest stays -1 */
    TP_CHECK_INT("include: INCREMENT changes the state", count(s), 0);
    TP_CHECK_INT("include: but is not recorded", past(s), 1);
    send(s, DEC); /* records latest (-1): past [0,-1], present -1 */
    TP_CHECK_INT("include: DECREMENT recorded", past(s), 2);
    send(s, UNDO);
    TP_CHECK_INT("undo goes to the state the last recorded action left", count(s), -1);
    send(s, UNDO);
    TP_CHECK_INT("the filtered change is not a step of its own", count(s), 0);
    tp_destroy(s);
    /* exclude: DECREMENT is not recorded (excludeAction); the filtered present
     * is dropped on undo (redux-undo keeps _latestUnfiltered). */
    s = make_store("{" KEYS ",\"exclude\":[\"DEC*\"]}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    send(s, INC);     /* past [0], latest 1 */
    times(s, DEC, 2); /* present -1, latest 1 */
    TP_CHECK_INT("exclude: DECREMENT not recorded", past(s), 1);
    send(s, UNDO);
    TP_CHECK_INT("exclude: undo goes back to before INCREMENT", count(s), 0);
    send(s, REDO);
    TP_CHECK_INT("exclude: redo comes back to the last unfiltered state", count(s), 1);
    tp_destroy(s);
    /* sync_filter: the filtered present becomes the latest. */
    s = make_store("{" KEYS ",\"exclude\":[\"DECREMENT\"],\"sync_filter\":true}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    send(s, INC);
    times(s, DEC, 2);
    send(s, UNDO);
    send(s, REDO);
    TP_CHECK_INT("sync_filter: redo comes back to the filtered present", count(s), -1);
    tp_destroy(s);
}

void test_undo__groupByMakesOneStepOfAGroup(void) {
    /* redux-undo's "Group By" test: groupBy: (action) => action.group || null */
    ts_store *s = make_store("{" KEYS ",\"group_by\":\"field\"}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    send(s, "{\"type\":\"INCREMENT\",\"group\":\"a\"}");
    TP_CHECK_INT("group a: one step", past(s), 1);
    times(s, "{\"type\":\"INCREMENT\",\"group\":\"a\"}", 2);
    TP_CHECK_INT("group a, three actions: still one step", past(s), 1);
    TP_CHECK_INT("group a: count 3", count(s), 3);
    times(s, "{\"type\":\"DECREMENT\",\"group\":\"b\"}", 3);
    TP_CHECK_INT("group b: a second step", past(s), 2);
    send(s, INC);
    TP_CHECK_INT("no group: a step", past(s), 3);
    send(s, INC);
    TP_CHECK_INT("no group again: another step", past(s), 4);
    send(s, UNDO);
    send(s, UNDO);
    TP_CHECK_INT("undo twice: back to the end of group b", count(s), 0);
    send(s, UNDO);
    TP_CHECK_INT("undo group b as one", count(s), 3);
    send(s, UNDO);
    TP_CHECK_INT("undo group a as one", count(s), 0);
    send(s, REDO);
    TP_CHECK_INT("redo group a as one", count(s), 3);
    send(s, "{\"type\":\"INCREMENT\",\"group\":\"a\"}");
    TP_CHECK_INT("after a redo the same group is a new step", past(s), 2);
    tp_destroy(s);
    /* "type": consecutive actions of one type */
    s = make_store("{" KEYS ",\"group_by\":\"type\"}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    times(s, INC, 3);
    times(s, DEC, 2);
    times(s, INC, 1);
    TP_CHECK_INT("group_by type: three runs, three steps", past(s), 3);
    send(s, UNDO);
    send(s, UNDO);
    TP_CHECK_INT("group_by type: undo the run of DECREMENTs as one", count(s), 3);
    tp_destroy(s);
    /* a list of types: only those group */
    s = make_store("{" KEYS ",\"group_by\":[\"INCREMENT\"]}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    times(s, INC, 3);
    times(s, DEC, 2);
    TP_CHECK_INT("group_by [INCREMENT]: one step for the INCREMENTs, one per DECREMENT", past(s), 3);
    tp_destroy(s);
}

void test_undo__jumpsMoveByOffsetAndIndexAndBadOnesAreRefused(void) {
    ts_store *s = make_store("{" KEYS "}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    times(s, INC, 5); /* past [0..4], present 5 */
    TP_CHECK_STATUS("@@undo/jump -2", send(s, "{\"type\":\"@@undo/jump\",\"payload\":-2}"), TS_OK);
    TP_CHECK_INT("jump -2", count(s), 3);
    TP_CHECK_INT("jump -2: past 3", past(s), 3);
    TP_CHECK_INT("jump -2: future 2", future(s), 2);
    send(s, "{\"type\":\"@@undo/jump\",\"payload\":1}");
    TP_CHECK_INT("jump 1", count(s), 4);
    TP_CHECK_STATUS("jump 0", send(s, "{\"type\":\"@@undo/jump\",\"payload\":0}"), TS_OK);
    TP_CHECK_INT("jump 0 changes nothing", count(s), 4);
    send(s, "{\"type\":\"@@undo/jump_to_past\",\"payload\":1}");
    TP_CHECK_INT("jump_to_past 1", count(s), 1);
    TP_CHECK_INT("jump_to_past 1: past 1", past(s), 1);
    TP_CHECK_INT("jump_to_past 1: future 4", future(s), 4);
    send(s, "{\"type\":\"@@undo/jump_to_future\",\"payload\":2}");
    TP_CHECK_INT("jump_to_future 2", count(s), 4);
    TP_CHECK_INT("jump_to_future 2: past 4", past(s), 4);
    TP_CHECK_INT("jump_to_future 2: future 1", future(s), 1);
    TP_CHECK_STATUS("jump past the end", send(s, "{\"type\":\"@@undo/jump\",\"payload\":5}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("its message", ts_last_error(), "cannot jump 5 steps forward: the history has 4 past and 1 future state");
    TP_CHECK_STATUS("jump_to_past out of range", send(s, "{\"type\":\"@@undo/jump_to_past\",\"payload\":4}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("its message", ts_last_error(), "index 4 is out of range: the past holds 4 states");
    TP_CHECK_STATUS("jump without a payload", send(s, "{\"type\":\"@@undo/jump\"}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("its message", ts_last_error(), "needs an integer \"payload\"");
    TP_CHECK_STATUS("jump_to_future with a string", send(s, "{\"type\":\"@@undo/jump_to_future\",\"payload\":\"1\"}"),
                 TS_E_REJECTED);
    TP_CHECK_CONTAINS("its message", ts_last_error(), "must be an integer from 0 to 1000000000, not \"1\"");
    TP_CHECK_STATUS("jump by a fraction", send(s, "{\"type\":\"@@undo/jump\",\"payload\":1.5}"), TS_E_REJECTED);
    TP_CHECK_INT("refused jumps change nothing", count(s), 4);
    TP_CHECK_INT("refused jumps change nothing in the history", past(s), 4);
    tp_destroy(s);
}

void test_undo__clearKeepsTheStateAndInitTypesResetIt(void) {
    ts_store *s = make_store("{" KEYS ",\"clear_types\":[\"history/reset\"],\"init_types\":[\"app/reinit\"]}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    times(s, INC, 3);
    send(s, UNDO);
    TP_CHECK_STATUS("@@undo/clear", send(s, "{\"type\":\"@@undo/clear\"}"), TS_OK);
    TP_CHECK_INT("clear: past empty", past(s), 0);
    TP_CHECK_INT("clear: future empty", future(s), 0);
    TP_CHECK_INT("clear: the state is kept", count(s), 2);
    times(s, INC, 2);
    send(s, "{\"type\":\"history/reset\"}");
    TP_CHECK_INT("a clear_types action clears", past(s), 0);
    send(s, "{\"type\":\"app/reinit\"}");
    TP_CHECK_INT("an init type resets the tracked state to the initial one", count(s), 0);
    TP_CHECK_INT("and empties the history", past(s), 0);
    send(s, UNDO);
    TP_CHECK_INT("nothing to undo after it", count(s), 0);
    tp_destroy(s);
}

void test_undo__statusAndApplyAndUnknownActions(void) {
    ts_store *s = make_store("{" KEYS ",\"status\":true}");
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    send(s, INC);
    send(s, INC);
    TP_CHECK_INT("status: true applies @@undo/status after each change (past)", tp_state_int(s, "/status/past", -1), 2);
    send(s, UNDO);
    TP_CHECK_INT("after undo (past)", tp_state_int(s, "/status/past", -1), 1);
    TP_CHECK_INT("after undo (future)", tp_state_int(s, "/status/future", -1), 1);
    TP_CHECK_STATUS("an @@undo/apply that sets an untracked key",
                 send(s, "{\"type\":\"@@undo/apply\",\"payload\":{\"state\":{\"other\":1}}}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("its message", ts_last_error(), "sets \"other\", which is not a tracked key");
    TP_CHECK_STATUS("an @@undo/apply without a state", send(s, "{\"type\":\"@@undo/apply\"}"), TS_E_REJECTED);
    TP_CHECK_STATUS("an @@undo/apply (as the journal replays it)",
                 send(s, "{\"type\":\"@@undo/apply\",\"payload\":{\"action\":\"@@undo\",\"state\":{\"count\":42}}}"), TS_OK);
    TP_CHECK_INT("sets the state it carries", count(s), 42);
    TP_CHECK_INT("and starts an empty history", past(s), 0);
    TP_CHECK_INT("and an empty future", future(s), 0);
    TP_CHECK_STATUS("an unknown @@undo/ action", send(s, "{\"type\":\"@@undo/redo\"}"), TS_E_REJECTED);
    TP_CHECK_CONTAINS("its message", ts_last_error(), "unknown action \"@@undo/redo\" (known: \"@@undo\", \"@@redo\"");
    tp_destroy(s);
}

/* A listener that dispatches while a dispatch is under way: at count 2 it
 * sets "other" (part of the step), and tries an @@undo (refused). */
static ts_status nested_undo_status = TS_OK;
static void follow_up(ts_store *s, void *ctx) {
    (void)ctx;
    if (tp_state_int(s, "/count", 0) == 2 && tp_state_int(s, "/other", 0) == 0) {
        ts_store_dispatch(s, "{\"type\":\"other/set\",\"payload\":5}");
        nested_undo_status = ts_store_dispatch(s, UNDO);
    }
}

void test_undo__aNestedDispatchIsPartOfTheOuterStep(void) {
    ts_store *s = make_store("{\"keys\":[\"count\",\"other\"]}");
    uint64_t token;
    if (s == NULL) {
        TP_CHECK("store with undo.so", 0);
        return;
    }
    ts_store_subscribe(s, "/count", follow_up, NULL, &token);
    times(s, INC, 2);
    TP_CHECK_INT("a listener's nested dispatch applied", tp_state_int(s, "/other", -1), 5);
    TP_CHECK_INT("it is part of the step that led to it: two steps", past(s), 2);
    TP_CHECK_STATUS("an @@undo nested in a dispatch is refused", nested_undo_status, TS_E_REJECTED);
    send(s, UNDO);
    TP_CHECK_INT("undo takes back the step with its nested change (count)", count(s), 1);
    TP_CHECK_INT("undo takes back the step with its nested change (other)", tp_state_int(s, "/other", -1), 0);
    tp_destroy(s);
}

/* A listener that asks for the counts after every change (a UI's buttons):
 * its @@undo/status, nested in the step, is no change behind our back. */
static void ask_status(ts_store *s, void *ctx) {
    (void)ctx;
    ts_store_dispatch(s, "{\"type\":\"@@undo/status\"}");
}

void test_undo__aListenersStatusKeepsTheHistory(void) {
    ts_store *s = make_store("{" KEYS "}");
    uint64_t token;
    if (s == NULL) { TP_CHECK("store with undo.so", 0); return; }
    ts_store_subscribe(s, "/count", ask_status, NULL, &token);
    times(s, INC, 3);
    TP_CHECK_INT("three steps", past(s), 3);
    send(s, UNDO);
    TP_CHECK_INT("undo goes back one step", count(s), 2);
    tp_destroy(s);
}

static ts_status pass_on(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) {
    (void)api;
    (void)ctx;
    return next(action->json);
}

void test_undo__aNewChainAfterUndoStartsTheHistoryAnew(void) {
    ts_store *s = make_store("{" KEYS "}");
    if (s == NULL) {
        TP_CHECK("store with undo.so", 0);
        return;
    }
    times(s, INC, 3);
    TP_CHECK_INT("before the chain changes: 3 steps", past(s), 3);
    TP_CHECK_INT("and again: the same chain keeps the history", past(s), 3);
    TP_CHECK_STATUS("middleware added after undo", ts_store_add_middleware(s, "pass", pass_on, NULL), TS_OK);
    TP_CHECK_INT("a new chain after undo: the history starts anew", past(s), 0);
    TP_CHECK_INT("the state stays", count(s), 3);
    send(s, INC);
    send(s, UNDO);
    TP_CHECK_INT("and records from there", count(s), 3);
    tp_destroy(s);
}

static void expect_config_refused(const char *config, const char *needle) {
    ts_store *s = NULL;
    char name[256];
    ts_status st;
    if (ts_store_create(NULL, &s) != TS_OK) { TP_CHECK("store", 0); return; }
    st = tp_load(s, tp_plugin("undo"), config);
    snprintf(name, sizeof name, "config %s refused", config);
    TP_CHECK("config refused", st != TS_OK);
    if (st != TS_OK) TP_CHECK_CONTAINS(name, ts_last_error(), needle);
    tp_destroy(s);
}

void test_undo__everyBadConfigFieldIsRefusedWithItsMessage(void) {
    expect_config_refused("[]", "the config must be a JSON object, not an array");
    expect_config_refused("{\"limit\":0}", "\"limit\" must be an integer from 1 to 1000000");
    expect_config_refused("{\"limit\":\"10\"}", "\"limit\" must be an integer from 1 to 1000000 (past states kept), not a string");
    expect_config_refused("{\"limit\":-3}", "\"limit\" must be an integer from 1 to 1000000 (past states kept), not a negative number");
    expect_config_refused("{\"max_bytes\":0}", "\"max_bytes\" must be an integer from 1 to 1099511627776");
    expect_config_refused("{\"max_bytes\":1.5}", "not a fraction");
    expect_config_refused("{\"keys\":[]}", "\"keys\" must hold 1 to 1024 keys");
    expect_config_refused("{\"keys\":\"count\"}", "\"keys\" must be an array of top-level state keys, not a string");
    expect_config_refused("{\"keys\":[1]}", "\"keys\": element 0 must be a string");
    expect_config_refused("{\"keys\":[\"a\",\"a\"]}", "\"keys\" names \"a\" twice");
    expect_config_refused("{\"keys\":[\"\"]}", "element 0 must be a non-empty key");
    expect_config_refused("{\"include\":\"INCREMENT\"}", "\"include\" must be an array of action types");
    expect_config_refused("{\"exclude\":[true]}", "\"exclude\": element 0 must be a string");
    expect_config_refused("{\"exclude\":[\"\"]}", "\"exclude\": element 0 must be a non-empty action type");
    expect_config_refused("{\"clear_types\":{}}", "\"clear_types\" must be an array");
    expect_config_refused("{\"init_types\":[null]}", "\"init_types\": element 0 must be a string");
    expect_config_refused("{\"group_by\":\"action\"}", "\"group_by\" must be \"type\"");
    expect_config_refused("{\"group_by\":1}", "\"group_by\" must be \"type\"");
    expect_config_refused("{\"sync_filter\":1}", "\"sync_filter\" must be true or false, not a number");
    expect_config_refused("{\"status\":\"yes\"}", "\"status\" must be true or false, not a string");
    expect_config_refused("{\"limt\":3}", "unknown config field \"limt\" (known: \"keys\", \"limit\"");
}

/* create() called directly, by a host that does not refuse a config with a
 * key twice (the library does): refused with a message, nothing leaked; and
 * a host table too old for replace_state. */
void test_undo__aFieldTwiceIsRefusedWhenCreateIsCalledDirectly(void) {
    const ts_plugin *plugin = tp_descriptor(tp_plugin("undo"), TS_PLUGIN_ABI_VERSION);
    ts_store_api api = tp_fake_api(sizeof(ts_store_api));
    void *self = NULL;
    char *error = NULL;
    static const char *const twice[] = {"{\"keys\":[\"a\"],\"keys\":[\"b\"]}", "{\"include\":[\"x\"],\"include\":[\"y\"]}",
                                        "{\"limit\":1,\"limit\":2}"};
    size_t i;
    if (plugin == NULL) {
        TP_CHECK("undo.so's descriptor", 0);
        return;
    }
    for (i = 0; i < sizeof twice / sizeof twice[0]; i++) {
        TP_CHECK_STATUS("a config field twice, create() called directly", plugin->create(twice[i], &api, &self, &error),
                     TS_E_PLUGIN);
        TP_CHECK_CONTAINS("its message", error, "appears twice");
        free(error);
        error = NULL;
    }
    api = tp_fake_api((uint32_t)offsetof(ts_store_api, replace_state));
    TP_CHECK_STATUS("a host table without replace_state", plugin->create("{}", &api, &self, &error), TS_E_ABI);
    TP_CHECK_CONTAINS("its message", error, "has no replace_state");
    free(error);
}

/* The journal after undo: a restart gives the same state (the @@undo/apply
 * records carry the state they set, so the replay needs no history), with
 * and without snapshots between the records; @@undo/clear after loading
 * starts the history empty. */
static void journal_round(const char *snapshot_every) {
    char dir[] = "/tmp/ts-undo-XXXXXX", config[512], name[128];
    ts_store *s;
    if (mkdtemp(dir) == NULL) {
        TP_CHECK("mkdtemp", 0);
        return;
    }
    snprintf(config, sizeof config, "{\"path\":\"%s/state.journal\",\"fsync\":\"never\",\"snapshot_every\":%s}", dir,
             snapshot_every);
    snprintf(name, sizeof name, "journal (snapshot_every %s)", snapshot_every);
    s = make_store("{" KEYS "}");
    if (s == NULL) {
        TP_CHECK("store with undo.so", 0);
        return;
    }
    TP_CHECK_STATUS(name, tp_load(s, tp_plugin("journal"), config), TS_OK);
    times(s, INC, 5);
    times(s, UNDO, 2);
    send(s, INC);
    send(s, "{\"type\":\"other/set\",\"payload\":9}");
    send(s, UNDO);
    TP_CHECK_INT("before the restart: count 3", count(s), 3);
    TP_CHECK_INT("before the restart: 3 states in the past", past(s), 3);
    send(s, INC); /* the last record is an ordinary action: replayed, it would be a step */
    TP_CHECK_INT("before the restart: count 4", count(s), 4);
    tp_destroy(s);

    s = make_store("{" KEYS "}");
    if (s == NULL) {
        TP_CHECK("store with undo.so", 0);
        return;
    }
    TP_CHECK_STATUS(name, tp_load(s, tp_plugin("journal"), config), TS_OK);
    TP_CHECK_INT("restart: the state is kept", count(s), 4);
    TP_CHECK_INT("restart: the untracked key too", tp_state_int(s, "/other", -1), 9);
    TP_CHECK_INT("restart: the history is empty", past(s), 0);
    TP_CHECK_INT("restart: the future too", future(s), 0);
    TP_CHECK_STATUS("restart: @@undo/clear changes nothing then", send(s, "{\"type\":\"@@undo/clear\"}"), TS_OK);
    TP_CHECK_INT("restart: and the history stays empty", past(s), 0);
    send(s, UNDO);
    TP_CHECK_INT("restart: nothing to undo", count(s), 4);
    send(s, INC);
    send(s, UNDO);
    TP_CHECK_INT("restart: new actions are recorded and undone", count(s), 4);
    tp_destroy(s);
    /* and once more: the journal now holds the restart's records too */
    s = make_store("{" KEYS "}");
    if (s != NULL && tp_load(s, tp_plugin("journal"), config) == TS_OK)
        TP_CHECK_INT("second restart: the state is kept", count(s), 4);
    else
        TP_CHECK("second restart", 0);
    if (s != NULL) tp_destroy(s);
    {
        char path[600];
        snprintf(path, sizeof path, "%s/state.journal", dir);
        unlink(path);
        rmdir(dir);
    }
}

void test_undo__aJournalRestartKeepsTheStateAndEmptiesTheHistory(void) {
    journal_round("0");
    journal_round("1");
    journal_round("4");
}

int ts_test_suite_option(int argc, char **argv, int i) { return tp_option(argc, argv, i); }

void ts_test_suite_setup(void) { printf("undo: loading through %s\n", tp_loader_name()); }
