/*
 * bench.cpp - XP, XA and XU of `make bench`: the C rows CP, CA and CU of
 * Benchmarks/c/bench.c (issue 19) driven from C++ through turnstate.hpp.
 *
 *   bench_cpp [--runs R] [--scale F] [--only XP|XA|XU|XP-10|XP-100k|XA-10|XA-100k]
 *
 * The stores are those of bench.c: the C1 counter (a reducer and a
 * listener, lambdas) plus "todos", a list of 10 or 100,000 items (about
 * 8 MB) owned by a lambda added with add_patch_reducer({"todos/" "*"}) (its
 * slice a json_ref: the store keeps the big one as a tree, as bench.c's
 * ts_store_add_patch_reducer) that reads with the getters and answers with a
 * turnstate::patch:
 *   XP  toggles one item ("todos/toggle" {"id": N}: the payload's id and the
 *       item's "done" read with payload_at and json_ref::at, one replace),
 *       10 and 100,000 items, runs alternating (XP-ratio);
 *   XA  appends ("todos/add": add at "/items/-"), to fresh stores each run;
 *   XU  an action that no reducer's filter matches (the counter added for
 *       "counter/" "*" only), with the 100,000-item slice present.
 * One "RESULT <TAB> id <TAB> value <TAB> unit" line per timed run
 * (Benchmarks/report.py). Each timed loop is the function counted_loop,
 * followed by "COUNTED <TAB> id <TAB> operations": Benchmarks/callgrind.py
 * counts its instructions with --toggle-collect. Nothing here asserts a
 * timing; a failed call or a wrong state exits non-zero.
 */
#include "turnstate.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

int runs = 7;
double scale = 1.0;
std::string only;

[[noreturn]] void die(const std::string &what, const std::string &why) {
    std::fprintf(stderr, "bench_cpp: %s failed: %s\n", what.c_str(), why.c_str());
    std::exit(1);
}

long scaled(long n) { return std::max(1L, static_cast<long>(static_cast<double>(n) * scale)); }

/* Whether --only names this workload ("XP"), one of its rows ("XP-10"), or nothing. */
bool wants(const std::string &workload) {
    return only.empty() || only.compare(0, workload.size(), workload) == 0 ||
           workload.compare(0, only.size(), only) == 0;
}

/* The todo list of bench.c's todo_slice(). */
std::string todo_slice(long items) {
    std::string text;
    text.reserve(static_cast<size_t>(items) * 96 + 64);
    text += "{\"items\":[";
    for (long i = 0; i < items; ++i) {
        if (i > 0) text += ',';
        std::string n = std::to_string(i);
        text += "{\"id\":" + n + ",\"title\":\"todo item number " + n + "\",\"done\":false,\"tags\":[\"home\",\"later\"]}";
    }
    text += "]}";
    return text;
}

long long parse_ll(std::string_view text) {
    long long value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
}

/* The counter of C1 (Benchmarks/c/bench_callbacks.h). */
std::optional<std::string> counter(std::optional<std::string_view> slice, const turnstate::Action &action) {
    if (!slice) return std::string("0");
    if (action.type != "counter/add") return std::nullopt;
    long long value = parse_ll(*slice) + (action.payload ? parse_ll(*action.payload) : 1);
    char digits[24];
    auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
    return std::string(digits, end);
}

struct todo_store {
    turnstate::Store store;
    unsigned long long calls = 0;
    turnstate::Subscription subscription;

    todo_store(long items, const std::vector<std::string> *counter_types) {
        if (counter_types == nullptr) store.add_reducer("count", counter);
        else store.add_reducer_for("count", *counter_types, counter);
        // Listeners run with the store held: a plain increment, as bench.c's.
        subscription = store.subscribe([this] { ++calls; });
        store.add_patch_reducer("todos", {"todos/*"},
                                [items](std::optional<turnstate::json_ref> slice,
                                        const turnstate::Action &action) -> turnstate::reduced {
                                  if (!slice) return todo_slice(items);
                                  if (action.type == "todos/toggle") {
                                      std::string path =
                                          "/items/" + std::to_string(action.payload_at("/id").as_int64()) + "/done";
                                      bool done = slice->at(path).as_bool();
                                      return turnstate::patch().replace(path, done ? "false" : "true");
                                  }
                                  if (action.type == "todos/add")
                                      return turnstate::patch().add("/items/-", action.payload.value_or("null"));
                                  return {};
                              });
    }
};

const long toggle_actions = 16;

long toggle_id(long i, long items) { return (i * items / toggle_actions + i) % items; }

std::vector<std::string> toggles(long items) {
    std::vector<std::string> actions;
    for (long i = 0; i < toggle_actions; ++i)
        actions.push_back("{\"type\":\"todos/toggle\",\"payload\":{\"id\":" + std::to_string(toggle_id(i, items)) + "}}");
    return actions;
}

/* The timed loop: n dispatches of actions[i % size] (what callgrind counts). */
__attribute__((noinline)) void counted_loop(turnstate::Store &store, const std::vector<std::string> &actions, long n) {
    for (long i = 0; i < n; ++i) store.dispatch(actions[static_cast<size_t>(i) % actions.size()]);
}

/* Times the loop and checks that every dispatch called the listener; ns per dispatch. */
double time_actions(const char *id, todo_store &s, const std::vector<std::string> &actions, long n) {
    unsigned long long before = s.calls;
    auto start = std::chrono::steady_clock::now();
    counted_loop(s.store, actions, n);
    double elapsed = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    std::printf("COUNTED\t%s\t%ld\n", id, n);
    if (s.calls - before != static_cast<unsigned long long>(n))
        die("the loop", std::to_string(n) + " dispatches called the listener " + std::to_string(s.calls - before) + " times");
    return elapsed / static_cast<double>(n);
}

void result(const char *id, double value, const char *unit) {
    std::printf("RESULT\t%s\t%.3f\t%s\n", id, value, unit);
    std::fflush(stdout);
}

void check_toggled(todo_store &s, long items, long n) {
    long id = toggle_id(0, items), times = 0;
    for (long i = 0; i < toggle_actions; ++i)
        if (toggle_id(i, items) == id) times += n / toggle_actions + (i < n % toggle_actions ? 1 : 0);
    times *= runs;
    std::string pointer = "/todos/items/" + std::to_string(id) + "/done";
    std::string got = s.store.get(pointer), want = times % 2 ? "true" : "false";
    if (got != want) die("the toggles", pointer + " is " + got + " after " + std::to_string(times) + " toggles");
}

void xp() {
    long small_items = 10, big_items = 100000;
    bool only_small = only == "XP-10", only_big = only == "XP-100k";
    todo_store small(small_items, nullptr);
    std::unique_ptr<todo_store> big;
    if (!only_small) big = std::make_unique<todo_store>(big_items, nullptr);
    std::vector<std::string> small_actions = toggles(small_items), big_actions = toggles(big_items);
    long n_small = scaled(100000), n_big = std::max(16L, scaled(2000));
    for (int r = 0; r < runs; ++r) {
        double a = only_big ? 0 : time_actions("XP-10", small, small_actions, n_small);
        double b = big ? time_actions("XP-100k", *big, big_actions, n_big) : 0;
        if (!only_big) result("XP-10", a, "ns");
        if (big) result("XP-100k", b, "ns");
        if (!only_big && big) result("XP-ratio", b / a, "x");
    }
    if (!only_big) check_toggled(small, small_items, n_small);
    if (big) check_toggled(*big, big_items, n_big);
}

void xa() {
    std::vector<std::string> action = {
        R"({"type":"todos/add","payload":{"id":-1,"title":"a new todo","done":false,"tags":[]}})"};
    long n = std::min(scaled(20000), std::max(16L, scaled(2000)));
    for (int r = 0; r < runs; ++r) {
        double a = 0, b = 0;
        // Both stores made before either loop and destroyed after both, as
        // bench.c's CA does (the heap each loop runs in is then the same).
        std::unique_ptr<todo_store> small, big;
        if (only != "XA-100k") small = std::make_unique<todo_store>(10, nullptr);
        if (only != "XA-10") big = std::make_unique<todo_store>(100000, nullptr);
        if (small) a = time_actions("XA-10", *small, action, n);
        if (big) {
            b = time_actions("XA-100k", *big, action, n);
            std::string title = big->store.get("/todos/items/100000/title");
            if (title != "\"a new todo\"") die("the appends", "the appended item reads " + title);
        }
        if (only != "XA-100k") result("XA-10", a, "ns");
        if (only != "XA-10") result("XA-100k", b, "ns");
        if (only.empty() || only == "XA") result("XA-ratio", b / a, "x");
    }
    std::printf("INFO\tXA: %ld appends per run to each list\n", n);
}

void xu() {
    std::vector<std::string> counter_types = {"counter/*"};
    todo_store s(100000, &counter_types);
    std::vector<std::string> action = {R"({"type":"session/ping","payload":1})"};
    long n = scaled(200000);
    for (int r = 0; r < runs; ++r) result("XU", time_actions("XU", s, action, n), "ns");
    if (s.store.get("/count") != "0") die("XU", "an unhandled action changed the count");
}

} // namespace

int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
        else if (arg == "--scale" && i + 1 < argc) scale = std::atof(argv[++i]);
        else if (arg == "--only" && i + 1 < argc) only = argv[++i];
        else {
            std::fprintf(stderr, "usage: %s [--runs R] [--scale F] [--only XP|XA|XU|XP-10|XP-100k|XA-10|XA-100k]\n", argv[0]);
            return 2;
        }
    }
    try {
        std::printf("INFO\tlibturnstate %s\n", turnstate::version().c_str());
        if (wants("XP")) xp();
        if (wants("XA")) xa();
        if (wants("XU")) xu();
    } catch (const std::exception &e) {
        die("a call", e.what());
    }
    std::printf("INFO\tXP, XA, XU: bench.c's CP, CA, CU from C++ (turnstate.hpp, lambdas), -O2\n");
    return 0;
}
