// The undo plugin (Plugins/undo) from C++, through Include/turnstate.hpp:
// undo, redo, a jump, grouping by type, the status, and a bad jump and a bad
// config refused (turnstate::rejected_error, turnstate::error). Prints
// "N passed, M failed". Usage: test_undo PLUGINS_DIR.
#include <turnstate.hpp>

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

static int passed = 0, failed = 0;

static void check(bool ok, const char *what, const std::string &detail = "") {
    if (ok) {
        passed++;
        return;
    }
    failed++;
    std::fprintf(stderr, "FAIL %s %s\n", what, detail.c_str());
}

static void check_eq(const std::string &got, const std::string &want, const char *what) {
    check(got == want, what, "got " + got + ", want " + want);
}

static std::optional<std::string> count(std::optional<std::string_view> slice, const turnstate::Action &action) {
    if (!slice) return "0";
    long long v = std::stoll(std::string(*slice));
    if (action.type == "INCREMENT") return std::to_string(v + 1);
    if (action.type == "DECREMENT") return std::to_string(v - 1);
    return std::nullopt;
}

static std::optional<std::string> status(std::optional<std::string_view> slice, const turnstate::Action &action) {
    if (!slice) return "null";
    if (action.type == "@@undo/status" && action.payload) return std::string(*action.payload);
    return std::nullopt;
}

int main(int argc, char **argv) {
    std::string so = std::string(argc > 1 ? argv[1] : "build/plugins") + "/undo.so";
    try {
        turnstate::Store store("{}");
        store.add_reducer("count", count);
        store.add_reducer("status", status);
        store.load_plugin(so, R"({"keys":["count"],"group_by":"type","limit":10})");
        for (int i = 0; i < 3; i++) store.dispatch(R"({"type":"INCREMENT"})");
        store.dispatch(R"({"type":"DECREMENT"})");
        store.dispatch(R"({"type":"@@undo/status"})");
        check_eq(store.get("/status/past"), "2", "group_by type: the INCREMENTs are one step");
        store.dispatch(R"({"type":"@@undo"})");
        check_eq(store.get("/count"), "3", "undo the DECREMENT");
        store.dispatch(R"({"type":"@@undo"})");
        check_eq(store.get("/count"), "0", "undo the run of INCREMENTs");
        store.dispatch(R"({"type":"@@redo"})");
        check_eq(store.get("/count"), "3", "redo");
        store.dispatch(R"({"type":"@@undo/jump","payload":1})");
        check_eq(store.get("/count"), "2", "jump 1");
        bool refused = false;
        try {
            store.dispatch(R"({"type":"@@undo/jump_to_future","payload":3})");
        } catch (const turnstate::rejected_error &e) {
            refused = std::string(e.what()).find("index 3 is out of range") != std::string::npos;
        }
        check(refused, "a jump out of range is refused with its message");
        check_eq(store.get("/count"), "2", "the refused jump changed nothing");
        store.dispatch(R"({"type":"@@undo/status"})");
        check_eq(store.get("/status/future"), "0", "status: no future");
    } catch (const turnstate::error &e) {
        check(false, "unexpected error", e.what());
    }
    try {
        turnstate::Store store("{}");
        bool refused = false;
        try {
            store.load_plugin(so, R"({"group_by":"everything"})");
        } catch (const turnstate::error &e) {
            refused = std::string(e.what()).find("\"group_by\" must be \"type\"") != std::string::npos;
        }
        check(refused, "a bad group_by is refused with its message");
    } catch (const turnstate::error &e) {
        check(false, "unexpected error", e.what());
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
