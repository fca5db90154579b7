/*
 * cpp_recorder.cpp - the flight recorder (Plugins/recorder) from C++
 * (Include/turnstate.hpp), for make test-testgen (Tests/testgen/run.py).
 *
 * As a program:
 *     cpp_recorder RECORDER_SO CONFIG_JSON
 * a turnstate::Store with the reducers below loads the recorder with
 * CONFIG_JSON, dispatches a few actions (one "secret/login" with a token),
 * then "items/boom", whose reducer throws: the dispatch throws that
 * exception and the recorder dumps. Prints the exception and the state;
 * exits 0 when the dispatch failed as it should, 1 otherwise, 2 on a setup
 * error.
 *
 * Built with -DTS_TESTGEN_REDUCERS_ONLY (-shared -fPIC): the reducers alone,
 * and ts_testgen_setup, the setup function turnstate-testgen names, which
 * adds the very same C++ functions to a C store through a C reducer that
 * turns their exception into ts_reducer_fail, as turnstate.hpp does. With
 * -DTS_BUG_FIXED, "items/boom" is handled.
 */
#include <turnstate.hpp>

#include <cstdio>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

using slice_t = std::optional<std::string_view>;
using answer_t = std::optional<std::string>;

/* "counter/inc" adds 1. */
answer_t count(slice_t slice, const turnstate::Action &action) {
    if (!slice) return "0";
    if (action.type != "counter/inc") return std::nullopt;
    return std::to_string(std::stoll(std::string(*slice)) + 1);
}

/* "secret/login" keeps its payload (a secret token). */
answer_t session(slice_t slice, const turnstate::Action &action) {
    if (!slice) return R"({"token":null})";
    if (action.type != "secret/login" || !action.payload) return std::nullopt;
    return std::string(*action.payload);
}

/* "items/add" appends its payload; "items/boom" is the bug. */
answer_t items(slice_t slice, const turnstate::Action &action) {
    if (!slice) return "[]";
#ifndef TS_BUG_FIXED
    if (action.type == "items/boom") throw std::runtime_error("boom is not handled");
#endif
    if (action.type != "items/add" || !action.payload) return std::nullopt;
    std::string out(*slice);
    out.pop_back(); /* the closing ']' */
    if (out.size() > 1) out += ',';
    out += *action.payload;
    out += ']';
    return out;
}

struct named_reducer {
    const char *key;
    answer_t (*fn)(slice_t, const turnstate::Action &);
};
const named_reducer reducers[] = {{"count", count}, {"session", session}, {"items", items}};

} // namespace

#ifdef TS_TESTGEN_REDUCERS_ONLY

namespace {
/* One of `reducers` (ctx) as a C reducer. */
char *c_reducer(const char *slice, const ts_action *action, void *ctx) {
    const named_reducer *reducer = static_cast<const named_reducer *>(ctx);
    try {
        answer_t out = reducer->fn(slice ? slice_t(slice) : std::nullopt, turnstate::Action(*action));
        return out ? ts_strdup(out->c_str()) : nullptr;
    } catch (const std::exception &error) {
        ts_reducer_fail(error.what());
    } catch (...) {
        ts_reducer_fail("the reducer threw");
    }
    return nullptr;
}
} // namespace

extern "C" ts_status ts_testgen_setup(ts_store *store);

extern "C" ts_status ts_testgen_setup(ts_store *store) {
    for (const named_reducer &reducer : reducers) {
        ts_status status = ts_store_add_reducer(store, reducer.key, c_reducer, const_cast<named_reducer *>(&reducer));
        if (status != TS_OK) return status;
    }
    return TS_OK;
}

#else

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: cpp_recorder RECORDER_SO CONFIG_JSON\n");
        return 2;
    }
    try {
        turnstate::Store store("{}");
        for (const named_reducer &reducer : reducers) store.add_reducer(reducer.key, reducer.fn);
        store.load_plugin(argv[1], argv[2]);
        for (const char *action : {R"({"type":"items/add","payload":{"id":1}})",
                                   R"({"type":"secret/login","payload":{"token":"hunter2"}})",
                                   R"({"type":"counter/inc"})", R"({"type":"items/add","payload":{"id":2}})",
                                   R"({"type":"counter/inc"})"})
            store.dispatch(action);
        bool failed = false;
        try {
            store.dispatch(R"({"type":"items/boom"})");
            std::printf("items/boom: dispatched\n");
        } catch (const std::runtime_error &error) {
            std::printf("items/boom: %s\n", error.what());
            failed = true;
        }
        std::printf("state: %s\n", store.state().c_str());
        return failed ? 0 : 1;
    } catch (const turnstate::error &error) {
        std::fprintf(stderr, "cpp_recorder: %s (%s)\n", error.what(), ts_status_name(error.status()));
        return 2;
    }
}

#endif
