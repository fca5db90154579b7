/*
 * test_turnstate.cpp - Include/turnstate.hpp, the C++ face of the library:
 * RAII and move semantics of Store and Subscription, the lifetime of the
 * callbacks (freed with the store, checked by counting the owners of a
 * shared_ptr each callback holds, and by valgrind), exceptions from every
 * kind of callback reaching the caller as themselves with the state as the
 * C API says, the status subclasses, threads dispatching at once, and the
 * plugins of the built plugin folder (guard, delay).
 *
 * Usage: test_turnstate [--quick] --plugins DIR. Its own CHECK macros; ends
 * with the line "checks: N passed, M failed" (exit 1 if any failed).
 * `make test-cpp` (Tests/cpp/run.sh) runs it directly and under valgrind.
 */
#include "turnstate.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

namespace {

int passed = 0, failed = 0;
const char *current_test = "";
bool quick = false;
std::string plugins_dir;

void report(bool ok, const char *file, int line, const std::string &what) {
    if (ok) {
        ++passed;
        return;
    }
    ++failed;
    std::fprintf(stderr, "%s:%d: [%s] FAILED: %s\n    ts_last_error: \"%s\"\n", file, line, current_test,
                 what.c_str(), ts_last_error());
}

#define CHECK(expr) report(static_cast<bool>(expr), __FILE__, __LINE__, #expr)
#define CHECK_EQ(got, want)                                                                                   \
    do {                                                                                                      \
        auto got_ = (got);                                                                                    \
        auto want_ = (want);                                                                                  \
        std::ostringstream text_;                                                                             \
        text_ << #got " == " #want " (got " << got_ << ", expected " << want_ << ")";                         \
        report(got_ == want_, __FILE__, __LINE__, text_.str());                                              \
    } while (0)
#define CHECK_CONTAINS(text, part)                                                                            \
    do {                                                                                                      \
        std::string text_ = (text);                                                                           \
        report(text_.find(part) != std::string::npos, __FILE__, __LINE__,                                     \
               std::string(#text " contains \"") + (part) + "\" (it is \"" + text_ + "\")");                 \
    } while (0)
/* `statement` must throw `type` (caught as `name`, then `checks` runs). */
#define CHECK_THROWS(type, statement, name, checks)                                                           \
    do {                                                                                                      \
        bool thrown_ = false;                                                                                 \
        try {                                                                                                 \
            statement;                                                                                        \
        } catch (const type &name) {                                                                          \
            thrown_ = true;                                                                                   \
            checks;                                                                                           \
        } catch (const std::exception &other_) {                                                              \
            std::fprintf(stderr, "    threw something else: %s\n", other_.what());                           \
        }                                                                                                     \
        report(thrown_, __FILE__, __LINE__, #statement " throws " #type);                                    \
    } while (0)

#define TEST(name) static void name()
#define RUN(name)                                                                                             \
    do {                                                                                                      \
        current_test = #name;                                                                                 \
        name();                                                                                               \
    } while (0)

using turnstate::Action;
using turnstate::Store;
using turnstate::StoreRef;
using turnstate::Subscription;
using Slice = std::optional<std::string_view>;
using Result = std::optional<std::string>;

/* A reducer for "count": 0 at first, +payload (or +1) on counter/add. */
Result counter(Slice slice, const Action &action) {
    if (!slice) return std::string("0");
    if (action.type != "counter/add") return std::nullopt;
    long long by = action.payload ? std::stoll(std::string(*action.payload)) : 1;
    return std::to_string(std::stoll(std::string(*slice)) + by);
}

/* An exception type of the test's own, to see it come back as itself. */
struct custom_failure : std::runtime_error {
    int code;
    custom_failure(const std::string &m, int c) : std::runtime_error(m), code(c) {}
};

// ---- Basics -----------------------------------------------------------------

TEST(test_version_and_basics) {
    CHECK_EQ(turnstate::version(), std::string(TS_VERSION));
    Store store(R"({"todos": [], "name": "x"})");
    store.add_reducer("count", counter);
    CHECK_EQ(store.state(), std::string(R"({"todos":[],"name":"x","count":0})"));
    store.dispatch(R"({"type": "counter/add", "payload": 2})");
    store.dispatch(std::string(R"({"type": "counter/add"})"));
    std::string_view view = R"({"type": "counter/add", "payload": 4}trailing)";
    store.dispatch(view.substr(0, view.find('}') + 1)); // a view without a NUL of its own
    CHECK_EQ(store.get("/count"), std::string("7"));
    CHECK_EQ(store.get(std::string_view("/name")), std::string("\"x\""));
    CHECK(!store.find("/nothing").has_value());
    CHECK_EQ(store.find("/count").value_or(""), std::string("7"));
    CHECK(store.handle() != nullptr);
    CHECK(static_cast<bool>(store));
    Store empty;
    CHECK_EQ(empty.state(), std::string("{}"));
    CHECK_EQ(turnstate::action("a\"b", "{\"x\":1}"), std::string(R"({"type":"a\"b","payload":{"x":1}})"));
    CHECK_EQ(turnstate::action("t"), std::string(R"({"type":"t"})"));
    CHECK_EQ(turnstate::json_string(std::string("\n\x01", 2)), std::string(R"("\u000a\u0001")"));
    store.dispatch(turnstate::action("counter/add", "3"));
    CHECK_EQ(store.get("/count"), std::string("10"));
}

TEST(test_replacing_and_removing) {
    Store store;
    store.add_reducer("count", counter);
    std::vector<std::string> seen;
    store.add_middleware("spy", [&](turnstate::Api &, turnstate::Next &next, const Action &action) {
        seen.push_back(std::string(action.type));
        if (action.type == TS_REPLACE_ACTION_TYPE && seen.size() == 2) throw turnstate::rejected_error("not now");
        next();
    });
    store.dispatch(turnstate::action("counter/add", "5"));
    // The first replace is refused by the middleware: the old reducer stays.
    CHECK_THROWS(turnstate::rejected_error, store.replace_reducer("count", [](Slice, const Action &) -> Result {
        return std::string("100");
    }), e, CHECK_CONTAINS(e.what(), "not now"));
    store.dispatch(turnstate::action("counter/add", "1"));
    CHECK_EQ(store.get("/count"), std::string("6"));
    // Doubling: the state is kept, the replace action reaches the middleware.
    store.replace_reducer("count", [](Slice slice, const Action &action) -> Result {
        if (!slice || action.type != "counter/add") return std::nullopt;
        long long by = action.payload ? std::stoll(std::string(*action.payload)) : 1;
        return std::to_string(std::stoll(std::string(*slice)) + 2 * by);
    });
    CHECK_EQ(seen.back(), std::string(TS_REPLACE_ACTION_TYPE));
    CHECK_EQ(store.get("/count"), std::string("6"));
    store.dispatch(turnstate::action("counter/add", "1"));
    CHECK_EQ(store.get("/count"), std::string("8"));
    // A reducer that throws on the replace action: thrown as itself, the old one back.
    CHECK_THROWS(custom_failure, store.replace_reducer("count", [](Slice, const Action &action) -> Result {
        if (action.type == TS_REPLACE_ACTION_TYPE) throw custom_failure("reducer", 7);
        return std::nullopt;
    }), e, CHECK_EQ(e.code, 7));
    store.dispatch(turnstate::action("counter/add", "1"));
    CHECK_EQ(store.get("/count"), std::string("10"));
    CHECK_THROWS(turnstate::not_found_error, store.replace_reducer("nope", counter), e, (void)e);
    CHECK_THROWS(turnstate::not_found_error, store.remove_reducer("nope"), e, (void)e);
    store.remove_middleware("spy");
    CHECK_THROWS(turnstate::not_found_error, store.remove_middleware("spy"), e, (void)e);
    size_t before = seen.size();
    store.remove_reducer("count");
    store.dispatch(turnstate::action("counter/add", "1"));
    CHECK_EQ(seen.size(), before);                     // the middleware is gone
    CHECK_EQ(store.get("/count"), std::string("10"));  // the slice stays, unchanged
}

TEST(test_errors_carry_status_and_message) {
    CHECK_THROWS(turnstate::json_error, Store("{\"a\": 1, \"a\": 2}"), e, {
        CHECK_EQ(e.status(), TS_E_JSON);
        CHECK_EQ(std::string(e.status_name()), std::string("TS_E_JSON"));
        CHECK_CONTAINS(e.what(), "\"a\"");
    });
    CHECK_THROWS(turnstate::json_error, Store("[1]"), e, (void)e);
    Store store;
    CHECK_THROWS(turnstate::not_action_error, store.dispatch(R"({"payload": 2})"), e, {
        CHECK_EQ(e.status(), TS_E_NOT_ACTION);
        CHECK_CONTAINS(e.what(), "\"type\" is missing");
    });
    CHECK_THROWS(turnstate::json_error, store.dispatch("{"), e, (void)e);
    CHECK_THROWS(turnstate::not_found_error, store.get("/missing"), e, CHECK_CONTAINS(e.what(), "missing"));
    CHECK_THROWS(turnstate::argument_error, store.get("no-slash"), e, (void)e);
    CHECK_THROWS(turnstate::argument_error, store.dispatch(static_cast<const char *>(nullptr)), e, (void)e);
    // Every subclass is a turnstate::error and a std::runtime_error.
    CHECK_THROWS(std::runtime_error, store.get("/missing"), e, CHECK(dynamic_cast<const turnstate::error *>(&e)));
    CHECK_THROWS(turnstate::error, store.dispatch("[]"), e, CHECK(e.status() < 0));
    // throw_error maps every status to its class.
    CHECK_THROWS(turnstate::store_gone_error, turnstate::throw_error(TS_E_STORE_GONE, "m"), e,
                 CHECK_EQ(std::string(e.what()), std::string("m")));
    CHECK_THROWS(turnstate::misuse_error, turnstate::throw_error(TS_E_MISUSE, "m"), e, (void)e);
    CHECK_THROWS(turnstate::abi_error, turnstate::throw_error(TS_E_ABI, "m"), e, (void)e);
    CHECK_THROWS(turnstate::error, turnstate::throw_error(-99, "m"), e, CHECK_EQ(e.status(), -99));
    // An empty callable is refused before the library sees it.
    CHECK_THROWS(turnstate::argument_error, store.add_reducer("k", turnstate::reducer_fn()), e, (void)e);
    CHECK_THROWS(turnstate::argument_error, store.add_middleware("m", turnstate::middleware_fn()), e, (void)e);
    // A key taken twice.
    store.add_reducer("count", counter);
    CHECK_THROWS(turnstate::argument_error, store.add_reducer("count", counter), e, (void)e);
}

/* An empty callable is refused at the call (argument_error, as the C API's
 * TS_E_ARGUMENT for a NULL fn), never accepted to fail every later dispatch
 * after the state changed (std::bad_function_call). */
TEST(test_empty_callables_are_refused) {
    Store store;
    store.add_reducer("count", counter);
    int calls = 0;
    Subscription live = store.subscribe([&] { ++calls; });
    Subscription kept; // were it accepted, the next dispatch would change the state and then throw
    CHECK_THROWS(turnstate::argument_error, kept = store.subscribe(turnstate::listener_fn()), e,
                 CHECK_CONTAINS(e.what(), "subscribe: the listener is empty"));
    CHECK_THROWS(turnstate::argument_error, (void)store.subscribe("/count", std::function<void(StoreRef)>()), e,
                 (void)e);
    CHECK_THROWS(turnstate::argument_error, (void)store.subscribe(std::function<void()>()), e, (void)e);
    void (*no_listener)() = nullptr;
    CHECK_THROWS(turnstate::argument_error, (void)store.subscribe(no_listener), e, (void)e);
    void (*no_ref_listener)(StoreRef) = nullptr;
    CHECK_THROWS(turnstate::argument_error, (void)store.subscribe("", no_ref_listener), e, (void)e);
    Result (*no_reducer)(Slice, const Action &) = nullptr;
    CHECK_THROWS(turnstate::argument_error, store.add_reducer("other", no_reducer), e,
                 CHECK_CONTAINS(e.what(), "add_reducer: the reducer is empty"));
    CHECK_THROWS(turnstate::argument_error, store.replace_reducer("count", turnstate::reducer_fn()), e,
                 CHECK_CONTAINS(e.what(), "replace_reducer: the reducer is empty"));
    CHECK_THROWS(turnstate::argument_error, store.add_middleware("m", nullptr), e,
                 CHECK_CONTAINS(e.what(), "add_middleware: the middleware is empty"));
    // Nothing was added: the store works as before.
    bool threw = false;
    try {
        store.dispatch(R"({"type": "counter/add"})");
    } catch (const std::exception &e) {
        threw = true;
        std::fprintf(stderr, "    the dispatch threw: %s\n", e.what());
    }
    CHECK(!threw);
    CHECK_EQ(calls, 1);
    CHECK_EQ(store.get("/count"), std::string("1"));
    CHECK(!store.find("/other").has_value());
}

// ---- RAII and moves ---------------------------------------------------------

TEST(test_callbacks_live_as_long_as_the_store) {
    auto token = std::make_shared<int>(0);
    {
        Store store;
        store.add_reducer("count", [token](Slice s, const Action &a) { return counter(s, a); });
        store.add_middleware("pass", [token](turnstate::Api &, turnstate::Next &next, const Action &) { next(); });
        Subscription sub = store.subscribe([token] {});
        sub.release(); // kept until the store goes
        Subscription kept = store.subscribe("/count", [token](StoreRef) {});
        CHECK_EQ(token.use_count(), 5L);
        store.dispatch(R"({"type": "counter/add"})");
        Store moved(std::move(store));
        CHECK(!static_cast<bool>(store));
        CHECK_EQ(token.use_count(), 5L);
        CHECK_EQ(moved.get("/count"), std::string("1"));
        CHECK_THROWS(turnstate::argument_error, store.dispatch(R"({"type": "x"})"), e,
                     CHECK_CONTAINS(e.what(), "moved from"));
        CHECK_THROWS(turnstate::argument_error, (void)store.state(), e, (void)e);
        kept.reset();
        CHECK_EQ(token.use_count(), 4L); // unsubscribed outside a callback: freed at once
        Store other(R"({"a": 1})");
        other = std::move(moved); // destroys other's store, takes moved's
        CHECK_EQ(other.get("/count"), std::string("1"));
        CHECK_EQ(token.use_count(), 4L);
        Store third;
        third = std::move(other);
        CHECK_EQ(token.use_count(), 4L);
    }
    CHECK_EQ(token.use_count(), 1L);
    // A failed add frees the callback at once.
    Store store;
    CHECK_THROWS(turnstate::reducer_error, store.add_reducer("k", [token](Slice, const Action &) -> Result { return "{"; }),
                 e, (void)e);
    CHECK_THROWS(turnstate::argument_error, (void)store.subscribe("bad pointer", [token] {}), e, (void)e);
    CHECK_EQ(token.use_count(), 1L);
}

TEST(test_subscription_handles) {
    Store store;
    store.add_reducer("count", counter);
    store.add_reducer("other", [](Slice s, const Action &a) -> Result {
        if (!s) return "0";
        return a.type == "other/set" ? Result("1") : std::nullopt;
    });
    int all = 0, on_count = 0, released = 0;
    Subscription a = store.subscribe([&] { ++all; });
    Subscription b = store.subscribe("/count", [&](StoreRef s) {
        ++on_count;
        CHECK_EQ(s.get("/count"), std::to_string(on_count));
    });
    CHECK(a.token() != 0 && b.token() != 0 && a.token() != b.token());
    store.dispatch(R"({"type": "counter/add"})");
    store.dispatch(R"({"type": "other/set"})"); // count unchanged
    CHECK_EQ(all, 2);
    CHECK_EQ(on_count, 1);
    Subscription moved = std::move(b);
    CHECK(!static_cast<bool>(b));
    CHECK(static_cast<bool>(moved));
    store.dispatch(R"({"type": "counter/add"})");
    CHECK_EQ(on_count, 2);
    moved = Subscription(); // unsubscribes
    store.dispatch(R"({"type": "counter/add"})");
    CHECK_EQ(on_count, 2);
    CHECK_EQ(all, 4);
    a.reset();
    a.reset(); // idempotent
    store.dispatch(R"({"type": "counter/add"})");
    CHECK_EQ(all, 4);
    {
        Subscription r = store.subscribe([&] { ++released; });
        uint64_t token = r.release();
        CHECK(token != 0);
        CHECK(!static_cast<bool>(r));
    }
    store.dispatch(R"({"type": "counter/add"})");
    CHECK_EQ(released, 1);
    // A handle may outlive its store.
    Subscription outliving;
    {
        Store shortlived;
        outliving = shortlived.subscribe([] {});
    }
    outliving.reset();
    // A listener that ends its own subscription, and one that subscribes another.
    Subscription self;
    int self_calls = 0, added_calls = 0;
    std::vector<Subscription> added;
    self = store.subscribe([&](StoreRef s) {
        ++self_calls;
        self.reset();
        added.push_back(s.subscribe([&] { ++added_calls; }));
    });
    store.dispatch(R"({"type": "counter/add"})");
    store.dispatch(R"({"type": "counter/add"})");
    CHECK_EQ(self_calls, 1);
    CHECK_EQ(added_calls, 1); // added during the first dispatch: called from the next one
}

TEST(test_store_destroyed_inside_its_listener) {
    auto token = std::make_shared<int>(0);
    std::optional<Store> store(std::in_place);
    store->add_reducer("count", counter);
    int later = 0;
    Subscription first = store->subscribe([&store, token] { store.reset(); });
    Subscription second = store->subscribe([&later, token] { ++later; });
    store->dispatch(R"({"type": "counter/add"})");
    CHECK(!store.has_value());
    CHECK_EQ(later, 1); // the dispatch under way finished its listeners
    CHECK_EQ(token.use_count(), 1L); // freed when the outermost call returned
    first.reset();
    second.reset();
}

// ---- Exceptions from callbacks ----------------------------------------------

TEST(test_reducer_exceptions) {
    Store store(R"({"todos": []})");
    store.add_reducer("count", counter);
    int listened = 0;
    Subscription sub = store.subscribe([&] { ++listened; });
    store.add_reducer("strict", [](Slice s, const Action &a) -> Result {
        if (!s) return "0";
        if (a.type == "strict/custom") throw custom_failure("no, said the reducer", 42);
        if (a.type == "strict/int") throw 7;
        if (a.type == "strict/bad") return "{not json";
        if (a.type == "strict/twice") return R"({"a":1,"a":2})";
        return std::nullopt;
    });
    std::string before = store.state();
    CHECK_THROWS(custom_failure, store.dispatch(R"({"type": "strict/custom"})"), e, {
        CHECK_EQ(e.code, 42);
        CHECK_EQ(std::string(e.what()), std::string("no, said the reducer"));
    });
    // The C library's own text says the same.
    CHECK_CONTAINS(ts_last_error(), "the reducer for \"strict\" failed for \"strict/custom\": no, said the reducer");
    CHECK_THROWS(int, store.dispatch(R"({"type": "strict/int"})"), e, CHECK_EQ(e, 7));
    CHECK_CONTAINS(ts_last_error(), "not a std::exception");
    CHECK_THROWS(turnstate::reducer_error, store.dispatch(R"({"type": "strict/bad"})"), e,
                 CHECK_EQ(e.status(), TS_E_REDUCER));
    CHECK_THROWS(turnstate::reducer_error, store.dispatch(R"({"type": "strict/twice"})"),
                 e, (void)e);
    CHECK_EQ(store.state(), before);
    CHECK_EQ(listened, 0);
    // From C, the same store reports TS_E_REDUCER (nobody to rethrow to).
    CHECK_EQ(ts_store_dispatch(store.handle(), R"({"type": "strict/custom"})"), TS_E_REDUCER);
    // Exceptions do not leak into the next call.
    store.dispatch(R"({"type": "counter/add"})");
    CHECK_EQ(store.get("/count"), std::string("1"));
    CHECK_EQ(listened, 1);
    // A reducer calling back into its store: its reentrant_error comes back.
    StoreRef ref = store;
    store.add_reducer("impure", [ref](Slice s, const Action &a) -> Result {
        if (!s) return "0";
        if (a.type == "impure/read") (void)ref.state();
        return std::nullopt;
    });
    CHECK_THROWS(turnstate::reentrant_error, store.dispatch(R"({"type": "impure/read"})"), e,
                 CHECK_EQ(e.status(), TS_E_REENTRANT));
    CHECK_EQ(store.get("/count"), std::string("1"));
    // The init call of add_reducer: its exception, and nothing added.
    CHECK_THROWS(custom_failure,
                 store.add_reducer("late", [](Slice, const Action &) -> Result { throw custom_failure("init", 1); }), e,
                 CHECK_EQ(e.code, 1));
    CHECK(!store.find("/late"));
    store.add_reducer("late", [](Slice s, const Action &) -> Result { return s ? std::nullopt : Result("true"); });
    CHECK_EQ(store.get("/late"), std::string("true"));
}

TEST(test_listener_exceptions) {
    Store store;
    store.add_reducer("count", counter);
    int second = 0;
    Subscription a = store.subscribe([](StoreRef s) {
        if (s.get("/count") == "1") throw custom_failure("listener", 3);
    });
    Subscription b = store.subscribe([&] { ++second; });
    CHECK_THROWS(custom_failure, store.dispatch(R"({"type": "counter/add"})"), e, CHECK_EQ(e.code, 3));
    CHECK_EQ(store.get("/count"), std::string("1")); // listeners run after the change
    CHECK_EQ(second, 1);                            // and the others still ran
    store.dispatch(R"({"type": "counter/add"})");
    CHECK_EQ(second, 2);
    // A listener whose nested dispatch fails, and which lets it through.
    Store other;
    other.add_reducer("count", counter);
    Subscription c = other.subscribe([&](StoreRef s) {
        if (s.get("/count") == "1") s.dispatch(R"({"no": "type"})");
    });
    CHECK_THROWS(turnstate::not_action_error, other.dispatch(R"({"type": "counter/add"})"), e, (void)e);
    // A listener of another store: the exception goes to that store's caller.
    Subscription d = other.subscribe([&](StoreRef) { store.dispatch(R"({"type": "counter/add"})"); });
    store.dispatch(R"({"type": "counter/add"})"); // count 3 now: no throw
    other.dispatch(R"({"type": "counter/add"})");
    CHECK_EQ(store.get("/count"), std::string("4"));
}

TEST(test_middleware) {
    Store store;
    store.add_reducer("count", counter);
    std::vector<std::string> seen;
    store.add_middleware("log", [&](turnstate::Api &api, turnstate::Next &next, const Action &action) {
        seen.push_back(std::string(action.type));
        if (action.type == "counter/double") {
            long long now = std::stoll(api.get("/count"));
            next(turnstate::action("counter/add", std::to_string(now)));
            return;
        }
        if (action.type == "swallow") return;
        next();
    });
    store.add_middleware("refuse", [&](turnstate::Api &, turnstate::Next &next, const Action &action) {
        if (action.type == "counter/refused") throw turnstate::rejected_error("refused by the test");
        if (action.type == "counter/throw") throw custom_failure("middleware", 5);
        if (action.type == "counter/io") throw turnstate::io_error("a disk is full");
        if (action.type == "counter/after") {
            next();
            throw custom_failure("after next", 6);
        }
        next();
    });
    store.dispatch(R"({"type": "counter/add"})");
    store.dispatch(R"({"type": "counter/double"})");
    CHECK_EQ(store.get("/count"), std::string("2"));
    store.dispatch(R"({"type": "swallow"})");
    CHECK_EQ(seen.size(), 3u);
    CHECK_THROWS(turnstate::rejected_error, store.dispatch(R"({"type": "counter/refused"})"), e, {
        CHECK_EQ(e.status(), TS_E_REJECTED);
        CHECK_EQ(std::string(e.what()), std::string("refused by the test"));
    });
    CHECK_CONTAINS(ts_last_error(), "refused by the test");
    CHECK_THROWS(custom_failure, store.dispatch(R"({"type": "counter/throw"})"), e, CHECK_EQ(e.code, 5));
    CHECK_EQ(ts_store_dispatch(store.handle(), R"({"type": "counter/throw"})"), TS_E_REJECTED);
    CHECK_CONTAINS(ts_last_error(), "middleware");
    CHECK_EQ(ts_store_dispatch(store.handle(), R"({"type": "counter/io"})"), TS_E_IO);
    CHECK_THROWS(turnstate::io_error, store.dispatch(R"({"type": "counter/io"})"), e, (void)e);
    CHECK_EQ(store.get("/count"), std::string("2"));
    // Thrown after next: the action was applied.
    CHECK_THROWS(custom_failure, store.dispatch(R"({"type": "counter/after"})"), e, CHECK_EQ(e.code, 6));
    CHECK_EQ(store.get("/count"), std::string("2")); // counter/after is not counter/add
}

TEST(test_middleware_and_the_rest_of_the_chain) {
    Store store;
    store.add_reducer("count", counter);
    store.add_reducer("strict", [](Slice s, const Action &a) -> Result {
        if (!s) return "0";
        if (a.type == "boom") throw custom_failure("reducer", 9);
        return std::nullopt;
    });
    std::string caught;
    int twice_status = 0;
    store.add_middleware("outer", [&](turnstate::Api &, turnstate::Next &next, const Action &action) {
        if (action.type == "catch") {
            try {
                next(R"({"type": "boom"})");
            } catch (const custom_failure &e) {
                caught = e.what(); // swallowed: the dispatch succeeds, nothing applied
            }
            return;
        }
        if (action.type == "twice") {
            next();
            try {
                next();
            } catch (const turnstate::misuse_error &e) {
                twice_status = e.status();
            }
            return;
        }
        next(); // lets the rest's exceptions through
    });
    store.add_middleware("inner", [](turnstate::Api &, turnstate::Next &next, const Action &action) {
        if (action.type == "inner/refuse") throw turnstate::rejected_error("inner says no");
        next();
    });
    CHECK_THROWS(custom_failure, store.dispatch(R"({"type": "boom"})"), e, CHECK_EQ(e.code, 9));
    CHECK_CONTAINS(ts_last_error(), "the reducer for \"strict\" failed for \"boom\": reducer");
    CHECK_THROWS(turnstate::rejected_error, store.dispatch(R"({"type": "inner/refuse"})"), e,
                 CHECK_EQ(std::string(e.what()), std::string("inner says no")));
    store.dispatch(R"({"type": "catch"})");
    CHECK_EQ(caught, std::string("reducer"));
    store.dispatch(R"({"type": "twice"})");
    CHECK_EQ(twice_status, TS_E_MISUSE);
    CHECK_EQ(store.get("/count"), std::string("0"));
    // Through C: the reducer's failure, as TS_E_REDUCER.
    CHECK_EQ(ts_store_dispatch(store.handle(), R"({"type": "boom"})"), TS_E_REDUCER);
}

TEST(test_middleware_api) {
    Store store(R"({"saved": 1})");
    store.add_reducer("count", counter);
    std::optional<turnstate::Api> kept;
    store.add_middleware("api", [&](turnstate::Api &api, turnstate::Next &next, const Action &action) {
        kept = api;
        if (action.type == "restore") {
            api.replace_state(R"({"saved": 2, "count": 40})");
            return;
        }
        if (action.type == "bad-restore") {
            api.replace_state("[]");
            return;
        }
        if (action.type == "again") {
            api.dispatch(R"({"type": "counter/add"})"); // from the top: through this middleware too
            api.dispatch(R"({"type": "counter/add"})");
        }
        next();
    });
    store.dispatch(R"({"type": "restore"})");
    CHECK_EQ(store.state(), std::string(R"({"saved":2,"count":40})"));
    CHECK_THROWS(turnstate::json_error, store.dispatch(R"({"type": "bad-restore"})"), e, (void)e);
    store.dispatch(R"({"type": "again"})");
    CHECK_EQ(store.get("/count"), std::string("42"));
    CHECK(kept.has_value());
    // A kept table used from another thread.
    std::thread t([&] { kept->dispatch(R"({"type": "counter/add"})"); });
    t.join();
    CHECK_EQ(kept->get("/count"), std::string("43"));
    CHECK_EQ(kept->state(), store.state());
    CHECK(kept->c_api() != nullptr);
}

// ---- Threads ----------------------------------------------------------------

TEST(test_threads_dispatching_at_once) {
    Store store;
    store.add_reducer("count", [](Slice s, const Action &a) -> Result {
        if (!s) return "0";
        if (a.type == "fail") throw custom_failure(std::string(*a.payload), 0);
        if (a.type != "add") return std::nullopt;
        return std::to_string(std::stoll(std::string(*s)) + 1);
    });
    std::atomic<int> notified{0};
    Subscription sub = store.subscribe([&] { notified.fetch_add(1); });
    const int threads = 4, rounds = quick ? 20 : 300;
    std::atomic<int> wrong{0}, failures{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            std::string mine = "\"thread " + std::to_string(t) + "\"";
            for (int i = 0; i < rounds; ++i) {
                store.dispatch(R"({"type": "add"})");
                try {
                    store.dispatch(turnstate::action("fail", mine));
                    wrong.fetch_add(1);
                } catch (const custom_failure &e) {
                    // Each thread gets its own reducer's exception.
                    if (std::string(e.what()) != mine) wrong.fetch_add(1);
                    failures.fetch_add(1);
                }
            }
        });
    }
    for (auto &th : pool) th.join();
    CHECK_EQ(wrong.load(), 0);
    CHECK_EQ(failures.load(), threads * rounds);
    CHECK_EQ(store.get("/count"), std::to_string(threads * rounds));
    CHECK_EQ(notified.load(), threads * rounds);
}

TEST(test_subscriptions_from_threads) {
    Store store;
    store.add_reducer("count", counter);
    const int threads = 4, rounds = quick ? 10 : 100;
    std::atomic<int> calls{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&] {
            for (int i = 0; i < rounds; ++i) {
                Subscription s = store.subscribe([&] { calls.fetch_add(1); });
                store.dispatch(R"({"type": "counter/add"})");
            }
        });
    }
    for (auto &th : pool) th.join();
    CHECK(calls.load() >= threads * rounds);
    calls = 0;
    store.dispatch(R"({"type": "counter/add"})");
    CHECK_EQ(calls.load(), 0); // every handle unsubscribed
}

// ---- Plugins ----------------------------------------------------------------

bool write_file(const std::string &path, const std::string &text) {
    std::ofstream out(path);
    out << text;
    return static_cast<bool>(out);
}

bool copy_file(const std::string &from, const std::string &to) {
    std::ifstream in(from, std::ios::binary);
    std::ofstream out(to, std::ios::binary);
    out << in.rdbuf();
    return static_cast<bool>(in) && static_cast<bool>(out) && chmod(to.c_str(), 0644) == 0;
}

/* Versions of the state (docs/migrations.md): migrations 1->2->3 in order,
 * a downgrade, a missing step and a throwing migration refused with the
 * state unchanged, and the journal of version 1 restored at version 3. */
static std::string v1_to_v2(std::string_view state) {
    /* {"n":N} -> {"count":N} */
    std::string s(state);
    return "{\"count\":" + s.substr(s.find(':') + 1, s.size() - s.find(':') - 2) + "}";
}
static std::string v2_to_v3(std::string_view state) {
    /* {"count":N} -> {"count":{"value":N}} */
    std::string s(state);
    return "{\"count\":{\"value\":" + s.substr(s.find(':') + 1, s.size() - s.find(':') - 2) + "}}";
}
static Result count_v1(Slice slice, const Action &action) {
    if (!slice) return std::string("0");
    if (action.type != "counter/add") return std::nullopt;
    return std::to_string(std::stoll(std::string(*slice)) + 1);
}
static Result count_v3(Slice slice, const Action &action) {
    if (!slice) return std::string("{\"value\":0}");
    if (action.type != "counter/add") return std::nullopt;
    std::string s(*slice);
    return "{\"value\":" + std::to_string(std::stoll(s.substr(9)) + 1) + "}";
}

TEST(test_migrations) {
    Store store("{}");
    CHECK_EQ(store.version(), 0u);
    store.set_version(3);
    CHECK_EQ(store.version(), 3u);
    std::vector<std::string> calls;
    store.add_migration(1, [&](std::string_view s) { calls.push_back("1->2"); return v1_to_v2(s); });
    store.add_migration(2, [&](std::string_view s) { calls.push_back("2->3"); return v2_to_v3(s); });
    store.replace_state_from("{\"n\":5}", 1);
    CHECK_EQ(store.state(), std::string("{\"count\":{\"value\":5}}"));
    CHECK_EQ(calls.size(), 2u);
    CHECK(calls.size() == 2 && calls[0] == "1->2" && calls[1] == "2->3");
    CHECK_THROWS(turnstate::argument_error, store.replace_state_from("{\"n\":1}", 4), e,
                 CHECK_CONTAINS(e.what(), "newer than this program's version 3: a downgrade is refused"));
    CHECK_THROWS(turnstate::argument_error, store.add_migration(1, v1_to_v2), e,
                 CHECK_CONTAINS(e.what(), "from version 1 to 2 already"));
    CHECK_EQ(store.state(), std::string("{\"count\":{\"value\":5}}"));

    Store failing("{}");
    failing.set_version(3);
    failing.add_migration(1, v1_to_v2);
    CHECK_THROWS(turnstate::not_found_error, failing.replace_state_from("{\"n\":1}", 1), e,
                 CHECK_CONTAINS(e.what(), "no migration from version 2 to 3"));
    failing.add_migration(2, [](std::string_view) -> std::string { throw custom_failure("no count", 7); });
    CHECK_THROWS(custom_failure, failing.replace_state_from("{\"n\":1}", 1), e, CHECK_EQ(e.code, 7));
    CHECK_EQ(failing.state(), std::string("{}"));
}

TEST(test_migrations_through_the_journal) {
    if (plugins_dir.empty()) {
        std::fprintf(stderr, "test_migrations_through_the_journal: no --plugins DIR given\n");
        CHECK(!plugins_dir.empty());
        return;
    }
    char dir_template[] = "/tmp/turnstate-cpp-migrate-XXXXXX";
    std::string dir = mkdtemp(dir_template);
    std::string config = "{\"path\":\"" + dir + "/count.journal\",\"fsync\":\"never\",\"snapshot_every\":1}";
    {
        Store v1("{}");
        v1.set_version(1);
        v1.add_reducer("count", count_v1);
        v1.load_plugin(plugins_dir + "/journal.so", config);
        v1.dispatch(R"({"type":"counter/add"})");
        v1.dispatch(R"({"type":"counter/add"})");
    }
    {
        Store v3("{}");
        v3.set_version(3);
        v3.add_migration(1, [](std::string_view s) { return v1_to_v2(s); });
        v3.add_migration(2, v2_to_v3);
        v3.add_reducer("count", count_v3);
        v3.load_plugin(plugins_dir + "/journal.so", config);
        CHECK_EQ(v3.state(), std::string("{\"count\":{\"value\":2}}"));
    }
    {
        Store v1("{}");
        v1.set_version(1);
        v1.add_reducer("count", count_v1);
        CHECK_THROWS(turnstate::plugin_error, v1.load_plugin(plugins_dir + "/journal.so", config), e,
                     CHECK_CONTAINS(e.what(), "newer than this program's version 1: a downgrade is refused"));
        CHECK_EQ(v1.state(), std::string("{\"count\":0}"));
    }
    std::remove((dir + "/count.journal").c_str());
    rmdir(dir.c_str());
}

TEST(test_plugins) {
    if (plugins_dir.empty()) {
        std::fprintf(stderr, "test_plugins: no --plugins DIR given\n");
        ++failed;
        return;
    }
    char folder_template[] = "/tmp/turnstate-cpp-XXXXXX";
    char *folder = mkdtemp(folder_template);
    CHECK(folder != nullptr);
    if (folder == nullptr) return;
    std::string dir = folder;
    CHECK(chmod(dir.c_str(), 0755) == 0);
    CHECK(copy_file(plugins_dir + "/guard.so", dir + "/10-guard.so"));
    CHECK(write_file(dir + "/10-guard.json", R"({"deny": ["admin/*"]})"));
    CHECK(copy_file(plugins_dir + "/delay.so", dir + "/20-delay.so"));

    {
        Store store;
        store.add_reducer("count", counter);
        store.load_plugins(dir);
        CHECK_THROWS(turnstate::rejected_error, store.dispatch(R"({"type": "admin/wipe"})"), e,
                     CHECK_CONTAINS(e.what(), "admin/wipe"));
        store.dispatch(R"({"type": "counter/add"})");

        // The delay plugin dispatches from its own thread: the listener runs there.
        std::mutex m;
        std::condition_variable cv;
        bool done = false;
        std::thread::id listener_thread;
        Subscription sub = store.subscribe("/count", [&](StoreRef s) {
            std::lock_guard<std::mutex> lock(m);
            if (s.get("/count") == "2") {
                listener_thread = std::this_thread::get_id();
                done = true;
                cv.notify_all();
            }
        });
        // A listener throwing on the worker thread: nobody to rethrow to, no crash.
        Subscription thrower = store.subscribe([](StoreRef) { throw custom_failure("on the worker", 1); });
        store.dispatch(R"({"type": "@@delay", "payload": {"ms": 0, "action": {"type": "counter/add"}}})");
        {
            std::unique_lock<std::mutex> lock(m);
            // Not a timing check: a bound so that a broken plugin fails the test instead of hanging it.
            cv.wait_for(lock, std::chrono::seconds(60), [&] { return done; });
        }
        CHECK(done);
        CHECK(listener_thread != std::this_thread::get_id());
        thrower.reset();
        // Errors of load_plugin.
        CHECK_THROWS(turnstate::not_found_error, store.load_plugin(dir + "/missing.so"), e,
                     CHECK_CONTAINS(e.what(), "missing.so"));
        CHECK_THROWS(turnstate::json_error, store.load_plugin(dir + "/10-guard.so", "{nope"), e, (void)e);
        CHECK_THROWS(turnstate::plugin_error, store.load_plugin(dir + "/10-guard.json"), e, (void)e);
        CHECK_THROWS(turnstate::plugin_error, store.load_plugin(dir + "/10-guard.so", R"({"unknown": 1})"), e,
                     (void)e);
        store.load_plugin(std::string_view(dir + "/10-guard.so"), R"({"deny": ["late/*"]})");
        CHECK_THROWS(turnstate::rejected_error, store.dispatch(R"({"type": "late/x"})"), e, (void)e);
    } // destroyed with the delay plugin's thread
    std::remove((dir + "/10-guard.so").c_str());
    std::remove((dir + "/10-guard.json").c_str());
    std::remove((dir + "/20-delay.so").c_str());
    rmdir(dir.c_str());
}

// ---- Patches, type filters and getters (issue 19) --------------------------

using turnstate::json_doc;
using turnstate::json_kind;
using turnstate::json_ref;
using turnstate::json_text;
using turnstate::patch;
using turnstate::reduced;
using Text = std::optional<json_text>;

/* "todos" ({"items": [...]}): every "todos/" action answers with the patch
 * in its payload ("todos/patch"), toggles item /id with the getters
 * ("todos/toggle"), or answers otherwise. */
reduced todos(Text slice, const Action &action) {
    if (!slice) return R"({"items":[{"id":0,"done":false},{"id":1,"done":true}]})";
    if (action.type == "todos/patch") return patch::from_json(std::string(*action.payload));
    if (action.type == "todos/toggle") {
        std::string path = "/items/" + std::to_string(action.payload_at("/id").as_uint64()) + "/done";
        return patch().replace(path, slice->at(path).as_bool() ? "false" : "true");
    }
    if (action.type == "todos/whole") return std::string(R"({"items":[]})");
    if (action.type == "todos/fail") throw custom_failure("refused by the test", 3);
    return {};
}

std::string patch_action(const std::string &ops) { return turnstate::action("todos/patch", ops); }

TEST(test_patch_answers) {
    Store store;
    store.add_reducer_for("todos", {"todos/*"}, todos);
    store.dispatch(R"({"type":"todos/toggle","payload":{"id":0}})");
    CHECK_EQ(store.get("/todos"), std::string(R"({"items":[{"id":0,"done":true},{"id":1,"done":true}]})"));
    store.dispatch(R"({"type":"todos/toggle","payload":{"id":1}})");
    CHECK_EQ(store.get("/todos/items/1/done"), std::string("false"));
    // Every operation of the builder, applied by the store.
    patch p;
    p.add("/items/-", R"({"id":2,"done":false})")
        .test("/items/2/id", "2.0")
        .copy("/items/0", "/first")
        .move("/first", "/kept")
        .replace("/kept/id", "10")
        .remove("/items/1")
        .add("/note", turnstate::json_string("a \"quoted\" note"));
    store.dispatch(patch_action(p.json()));
    CHECK_EQ(store.get("/todos"), std::string(R"({"items":[{"id":0,"done":true},{"id":2,"done":false}],)"
                                              R"("kept":{"id":10,"done":true},"note":"a \"quoted\" note"})"));
    store.dispatch(R"({"type":"todos/other"})"); // unchanged
    CHECK_EQ(store.get("/todos/items/1/id"), std::string("2"));
    store.dispatch(R"({"type":"todos/whole"})");
    CHECK_EQ(store.get("/todos"), std::string(R"({"items":[]})"));
    // The builder's text.
    CHECK_EQ(patch().json(), std::string("[]"));
    CHECK_EQ(patch().remove("/a~1b/\"q\"\n").move("/x", "/y").json(),
             std::string(R"([{"op":"remove","path":"/a~1b/\"q\"\u000a"},{"op":"move","from":"/x","path":"/y"}])"));
    CHECK_EQ(patch::from_json(R"([{"op":"remove","path":"/a"}])").copy("/b", "/c").json(),
             std::string(R"([{"op":"remove","path":"/a"},{"op":"copy","from":"/b","path":"/c"}])"));
    CHECK_EQ(patch::from_json("[ ]").remove("").json(), std::string(R"([ {"op":"remove","path":""}])"));
    // What converts to a reduced.
    CHECK(reduced().what() == reduced::kind::unchanged);
    CHECK(reduced(std::nullopt).what() == reduced::kind::unchanged);
    CHECK(reduced(static_cast<const char *>(nullptr)).what() == reduced::kind::unchanged);
    CHECK(reduced(Result()).what() == reduced::kind::unchanged);
    CHECK(reduced(Result("1")).json() == "1");
    CHECK(reduced("2").what() == reduced::kind::slice);
    CHECK(reduced(std::string_view("3")).json() == "3");
    reduced r = patch().remove("/x");
    CHECK(r.what() == reduced::kind::patch);
    CHECK_EQ(r.json(), std::string(R"([{"op":"remove","path":"/x"}])"));
}

/* Every failure of a patch: reducer_error with the library's message, no
 * later reducer, no listener, the state as it was. */
TEST(test_patch_failures) {
    Store store;
    store.add_reducer_for("todos", {"todos/*"}, todos);
    int later = 0, listened = 0;
    store.add_reducer_for("later", {}, [&later](Text s, const Action &) -> reduced {
        if (s) ++later;
        return "0";
    });
    Subscription sub = store.subscribe([&] { ++listened; });
    std::string before = store.state();
    const std::pair<std::string, std::string> cases[] = {
        {patch_action(R"([{"op":"test","path":"/items/0/done","value":true}])"),
         R"(returned a patch that failed for "todos/patch": op 0 ("test" at "/items/0/done"): the value differs (found false))"},
        {patch_action(R"([{"op":"replace","path":"/items/0/done","value":true},{"op":"remove","path":"/nope"}])"),
         R"(op 1 ("remove" at "/nope"): no member "nope")"},
        {patch_action(R"([{"op":"frob","path":""}])"), R"(op 0: unknown op "frob")"},
        {patch_action(R"([{"op":"add","path":"/items/9","value":1}])"), R"(op 0 ("add" at "/items/9"))"},
        {patch_action(R"({"op":"remove"})"), "ts_reducer_patch: a JSON Patch must be an array of operations, found object"},
    };
    for (const auto &c : cases) {
        bool thrown = false;
        try {
            store.dispatch(c.first);
        } catch (const turnstate::error &e) {
            thrown = true;
            CHECK_EQ(e.status(), TS_E_REDUCER);
            CHECK_CONTAINS(e.what(), c.second);
            CHECK_CONTAINS(ts_last_error(), c.second);
        }
        report(thrown, __FILE__, __LINE__, c.first + " throws");
        CHECK_EQ(store.state(), before);
    }
    // The reducer's own exception comes back as itself: a getter's too
    // (the C text says which reducer failed, and why).
    CHECK_THROWS(custom_failure, store.dispatch(R"({"type":"todos/fail"})"), e, CHECK_EQ(e.code, 3));
    CHECK_CONTAINS(ts_last_error(), "failed for \"todos/fail\": refused by the test");
    CHECK_THROWS(turnstate::argument_error, store.dispatch(R"({"type":"todos/toggle","payload":{"id":"zero"}})"), e,
                 CHECK_EQ(std::string(e.what()), std::string("ts_json_uint: expected an integer, found string")));
    CHECK_CONTAINS(ts_last_error(), "the reducer for \"todos\" failed for \"todos/toggle\": ts_json_uint: expected");
    CHECK_THROWS(turnstate::not_found_error, store.dispatch(R"({"type":"todos/toggle","payload":{"id":7}})"), e,
                 CHECK_CONTAINS(e.what(), R"(ts_json_at: JSON Pointer "/items/7/done": index "7" is out of range)"));
    CHECK_EQ(store.state(), before);
    CHECK_EQ(later, 0);
    CHECK_EQ(listened, 0);
    // Text that is not JSON; a patch with a NUL byte (not C text).
    store.replace_reducer_for("todos", {"todos/*"}, [](Text, const Action &a) -> reduced {
        if (a.type == "todos/text") return patch::from_json("[{");
        if (a.type == "todos/nul") return patch().add("/x", std::string("\"a\0b\"", 5));
        return {};
    });
    before = store.state();
    CHECK_THROWS(turnstate::reducer_error, store.dispatch(R"({"type":"todos/text"})"), e,
                 CHECK_CONTAINS(e.what(), "ts_reducer_patch: the patch is not valid JSON"));
    CHECK_THROWS(turnstate::reducer_error, store.dispatch(R"({"type":"todos/nul"})"), e,
                 CHECK_CONTAINS(e.what(), "the reducer's patch contains a NUL byte"));
    CHECK_EQ(store.state(), before);
    // A patch cannot be the first value: nothing is added.
    CHECK_THROWS(turnstate::reducer_error,
                 store.add_reducer_for("first", {}, [](Text, const Action &) -> reduced { return patch().add("", "1"); }),
                 e, CHECK_CONTAINS(e.what(), "ts_reducer_patch"));
    CHECK(!store.find("/first"));
    store.add_reducer_for("first", {}, [](Text s, const Action &) -> reduced { return s ? reduced() : "1"; });
    CHECK_EQ(store.get("/first"), std::string("1"));
}

TEST(test_pointer_listeners_under_patches) {
    Store store;
    store.add_reducer_for("todos", {"todos/*"}, todos);
    std::vector<std::string> calls;
    std::vector<Subscription> subs;
    for (const char *pointer : {"/todos/items/0/done", "/todos/items/1", "/todos"})
        subs.push_back(store.subscribe(pointer, [&calls, pointer](StoreRef s) {
            calls.push_back(std::string(pointer) + "=" + s.get(pointer));
        }));
    store.dispatch(R"({"type":"todos/toggle","payload":{"id":0}})");
    CHECK_EQ(calls.size(), 2u);
    if (calls.size() == 2) {
        CHECK_EQ(calls[0], std::string("/todos/items/0/done=true"));
        CHECK_EQ(calls[1], std::string(R"(/todos={"items":[{"id":0,"done":true},{"id":1,"done":true}]})"));
    }
}

/* A reducer for add_reducer_for that records the types it was called for. */
turnstate::reducer_for_fn recorder(std::vector<std::string> &log) {
    return [&log](Text slice, const Action &action) -> reduced {
        log.emplace_back(action.type);
        return slice ? reduced() : reduced("0");
    };
}

std::string joined(std::vector<std::string> &log) {
    std::string out;
    for (const auto &item : log) out += (out.empty() ? "" : ",") + item;
    log.clear();
    return out;
}

TEST(test_type_filters) {
    Store store;
    std::vector<std::string> exact, prefix, every;
    store.add_reducer_for("exact", {"todos/add", "user/login"}, recorder(exact));
    store.add_reducer_for("prefix", {"todos/edit/*"}, recorder(prefix));
    store.add_reducer_for("every", {}, recorder(every));
    CHECK_EQ(joined(exact), std::string("@@turnstate/init"));
    CHECK_EQ(joined(prefix), std::string("@@turnstate/init"));
    CHECK_EQ(joined(every), std::string("@@turnstate/init"));
    for (const char *type : {"todos/add", "todos/edit/title", "todos/edit/x/y", "todos/edit", "todos/edit/", "todos/addx",
                             "user/login"})
        store.dispatch(turnstate::action(type));
    CHECK_EQ(joined(exact), std::string("todos/add,user/login"));
    CHECK_EQ(joined(prefix), std::string("todos/edit/title,todos/edit/x/y"));
    CHECK_EQ(every.size(), 7u);
    every.clear();
    // The store's own actions reach a filtered reducer.
    store.remove_reducer("every");
    CHECK_EQ(joined(exact), std::string("@@turnstate/replace"));
    CHECK_EQ(joined(prefix), std::string("@@turnstate/replace"));
    CHECK(every.empty());
    // The type matched is the one a middleware passes on.
    store.add_middleware("rename", [](turnstate::Api &, turnstate::Next &next, const Action &a) {
        if (a.type == "old/login") next(turnstate::action("user/login"));
        else next();
    });
    store.dispatch(turnstate::action("old/login"));
    store.dispatch(turnstate::action("old/other"));
    CHECK_EQ(joined(exact), std::string("user/login"));
    // replace_reducer_for: the new filter, whatever the old one was.
    std::vector<std::string> replaced;
    store.replace_reducer_for("exact", {"b/x"}, recorder(replaced));
    store.dispatch(turnstate::action("todos/add"));
    store.dispatch(turnstate::action("b/x"));
    CHECK_EQ(joined(replaced), std::string("@@turnstate/replace,b/x"));
    CHECK(exact.empty());
    CHECK_THROWS(turnstate::not_found_error, store.replace_reducer_for("nope", {"a/x"}, recorder(replaced)), e, (void)e);
    // A reducer written for add_reducer fits add_reducer_for too.
    store.add_reducer_for("count", {"counter/*"}, counter);
    store.dispatch(R"({"type":"counter/add","payload":5})");
    store.dispatch(R"({"type":"other/add","payload":5})");
    CHECK_EQ(store.get("/count"), std::string("5"));
}

TEST(test_bad_patterns_are_refused) {
    Store store;
    std::vector<std::string> log;
    const std::pair<std::vector<std::string>, std::string> cases[] = {
        {{""}, "types[0] is empty"},
        {{"a/b", "a*"}, R"(types[1] "a*" is neither an action type nor a prefix pattern)"},
        {{"a/*/b"}, R"(types[0] "a/*/b")"},
        {{"*"}, R"(types[0] "*")"},
        {{"ok/*", std::string("a\0b", 3)}, "add_reducer_for: types[1] contains a NUL byte"},
    };
    for (const auto &c : cases)
        CHECK_THROWS(turnstate::argument_error, store.add_reducer_for("k", c.first, recorder(log)), e,
                     CHECK_CONTAINS(e.what(), c.second));
    CHECK_THROWS(turnstate::argument_error, store.add_reducer_for("k", {}, turnstate::reducer_for_fn()), e,
                 CHECK_CONTAINS(e.what(), "the reducer is empty"));
    CHECK(log.empty());
    CHECK_EQ(store.state(), std::string("{}"));
    // The key is still free; a refused replacement keeps the old reducer.
    store.add_reducer_for("k", {"a/x"}, recorder(log));
    CHECK_THROWS(turnstate::argument_error,
                 store.replace_reducer_for("k", {"b*"}, [](Text, const Action &) -> reduced { throw 1; }), e, (void)e);
    store.dispatch(turnstate::action("a/x"));
    CHECK_EQ(joined(log), std::string("@@turnstate/init,a/x"));
}

const char *const doc_text =
    R"({"null":null,"f":false,"t":true,"i":42,"neg":-7,"big":18446744073709551615,"min":-9223372036854775808,)"
    R"("dbl":1.5,"exp":2.50E1,"huge":1e400,"s":"plain","esc":"a\"b\u00e9\n","nul":"x\u0000y",)"
    R"("arr":[1,"two",[3],{"four":4}],"obj":{"a":{"b":[10,20]},"c/d":1,"e~f":2},"empty":{}})";

TEST(test_getters_every_kind) {
    json_doc doc(doc_text);
    CHECK_EQ(doc.str(), std::string(doc_text));
    json_ref root = doc.root();
    CHECK(root.kind() == json_kind::object);
    CHECK_EQ(root.json(), std::string_view(doc_text));
    CHECK_EQ(root.size(), 16u);
    const std::tuple<const char *, json_kind, const char *> kinds[] = {
        {"/null", json_kind::null, "null"},         {"/f", json_kind::boolean, "false"},
        {"/t", json_kind::boolean, "true"},          {"/exp", json_kind::number, "2.50E1"},
        {"/s", json_kind::string, "\"plain\""},      {"/arr/2", json_kind::array, "[3]"},
        {"/arr/3", json_kind::object, R"({"four":4})"}, {"/obj/c~1d", json_kind::number, "1"},
        {"/obj/e~0f", json_kind::number, "2"},
    };
    for (const auto &[pointer, kind, text] : kinds) {
        json_ref v = doc.at(pointer);
        CHECK(v.kind() == kind);
        CHECK_EQ(v.json(), std::string_view(text));
    }
    CHECK(doc.at("/null").is_null());
    CHECK(!doc.at("/f").is_null());
    CHECK(!doc.at("/f").as_bool());
    CHECK(doc.at("/t").as_bool());
    CHECK_EQ(doc.at("/i").as_int64(), 42);
    CHECK_EQ(doc.at("/neg").as_int64(), -7);
    CHECK(doc.at("/min").as_int64() == INT64_MIN);
    CHECK_EQ(doc.at("/exp").as_int64(), 25);
    CHECK(doc.at("/big").as_uint64() == UINT64_MAX);
    CHECK_EQ(doc.at("/dbl").as_double(), 1.5);
    CHECK_EQ(doc.at("/neg").as_double(), -7.0);
    // Strings: a view into the text without escapes, into a kept copy with them.
    std::string_view plain = doc.at("/s").as_string();
    CHECK(plain == "plain" && plain.data() > doc.str().data() && plain.data() < doc.str().data() + doc.str().size());
    std::string_view esc = doc.at("/esc").as_string(), nul = doc.at("/nul").as_string();
    CHECK_EQ(esc, std::string_view("a\"b\xc3\xa9\n"));
    CHECK_EQ(nul, std::string_view("x\0y", 3));
    CHECK_EQ(esc, std::string_view("a\"b\xc3\xa9\n")); // still valid after another string's copy
    // Containers.
    json_ref obj = doc.at("/obj");
    CHECK_EQ(obj.at("/a/b/1").as_int64(), 20);
    CHECK_EQ(obj.at("").json(), obj.json());
    CHECK(obj.find("/a/b/1") && obj.find("/a/b/1")->as_int64() == 20);
    CHECK(!obj.find("/zz"));
    CHECK(!doc.find("/zz"));
    CHECK(doc.find("/i"));
    json_ref arr = doc.at("/arr");
    CHECK_EQ(arr.size(), 4u);
    CHECK(!arr.empty());
    CHECK(doc.at("/empty").empty());
    std::string items;
    for (json_ref item : arr) items += std::string(item.json()) + ";";
    CHECK_EQ(items, std::string(R"(1;"two";[3];{"four":4};)"));
    std::string members;
    for (auto [key, value] : obj.members()) members += std::string(key) + "=" + std::string(value.json()) + ";";
    CHECK_EQ(members, std::string(R"(a={"b":[10,20]};c/d=1;e~f=2;)"));
    std::string keys;
    for (auto it = obj.begin(); it != obj.end(); ++it) keys += std::string(it.key()) + ":" + std::string(it->json()) + ";";
    CHECK_EQ(keys, std::string(R"(a:{"b":[10,20]};c/d:1;e~f:2;)"));
    int count = 0;
    for (json_ref v : doc.at("/empty")) count += v.is_null() ? 1 : 2;
    CHECK_EQ(count, 0);
    CHECK_EQ(std::distance(arr.begin(), arr.end()), 4);
    json_doc escaped_key(R"({"a\u00e9":1})");
    for (auto [key, value] : escaped_key.root().members()) CHECK(key == "a\xc3\xa9" && value.as_int64() == 1);
    json_doc array(R"([1,2,3])");
    int64_t sum = 0;
    for (json_ref v : array) sum += v.as_int64();
    CHECK_EQ(sum, 6);
}

TEST(test_getters_errors) {
    json_doc doc(doc_text);
    const std::pair<std::function<void()>, std::string> argument_cases[] = {
        {[&] { (void)doc.at("/s").as_int64(); }, "ts_json_int: expected an integer, found string"},
        {[&] { (void)doc.at("/dbl").as_int64(); }, "ts_json_int"},
        {[&] { (void)doc.at("/big").as_int64(); }, "ts_json_int"},
        {[&] { (void)doc.at("/neg").as_uint64(); }, "ts_json_uint"},
        {[&] { (void)doc.at("/huge").as_double(); }, "ts_json_double"},
        {[&] { (void)doc.at("/i").as_bool(); }, "ts_json_bool"},
        {[&] { (void)doc.at("/i").as_string(); }, "ts_json_string"},
        {[&] { (void)doc.at("/i").size(); }, "ts_json_count"},
        {[&] { (void)doc.at("/s").begin(); }, "expected an array or an object, found a string"},
        {[&] { (void)doc.at("/arr").members(); }, "expected an object, found an array"},
        {[&] { (void)doc.at("missing"); }, "must be empty or start with '/'"},
        {[&] { json_doc bad(std::string("1\0", 2)); }, "json_doc: the text contains a NUL byte"},
    };
    for (const auto &c : argument_cases)
        CHECK_THROWS(turnstate::argument_error, c.first(), e, CHECK_CONTAINS(e.what(), c.second));
    const std::pair<std::function<void()>, std::string> not_found_cases[] = {
        {[&] { (void)doc.at("/missing"); }, R"(ts_json_at: JSON Pointer "/missing": no member "missing")"},
        {[&] { (void)doc.at("/arr/9"); }, R"(index "9" is out of range)"},
        {[&] { (void)doc.at("/arr").at("/-"); }, "ts_json_find"},
    };
    for (const auto &c : not_found_cases)
        CHECK_THROWS(turnstate::not_found_error, c.first(), e, CHECK_CONTAINS(e.what(), c.second));
    CHECK_THROWS(turnstate::json_error, json_doc(R"({"a":1,"a":2})"), e, CHECK_CONTAINS(e.what(), "duplicate key \"a\""));
    CHECK_THROWS(turnstate::json_error, json_doc("[1,"), e, CHECK_CONTAINS(e.what(), "ts_json_at: invalid JSON"));
}

/* The slice and payload a reducer gets are read where they are, and answer
 * as a copy of the same text does; escaped strings stay valid through the
 * whole callback. */
TEST(test_getters_in_a_reducer) {
    Store store(std::string(R"({"doc":)") + doc_text + "}");
    std::vector<std::string> seen;
    const char *const pointers[] = {"/i", "/esc", "/arr/3/four", "/missing", "/obj/a/b"};
    auto answer = [&](auto &&at, const char *pointer) {
        try {
            return std::string(pointer) + "=" + std::string(at(pointer).json());
        } catch (const turnstate::error &e) {
            return std::string(pointer) + ":" + e.status_name() + ":" + e.what();
        }
    };
    store.add_reducer_for("doc", {"read"}, [&](Text slice, const Action &action) -> reduced {
        for (const char *p : pointers) seen.push_back(answer([&](const char *q) { return slice->at(q); }, p));
        std::string_view esc = slice->at("/esc").as_string(), nul = slice->at("/nul").as_string();
        seen.push_back(std::string("esc=") + std::string(esc) + " nul=" + std::to_string(nul.size()) +
                       (esc == "a\"b\xc3\xa9\n" ? " esc still" : " esc changed"));
        int64_t sum = 0;
        for (json_ref v : slice->at("/obj/a/b")) sum += v.as_int64();
        seen.push_back("sum=" + std::to_string(sum));
        seen.push_back("id=" + std::to_string(action.payload_at("/id").as_int64()));
        seen.push_back("payload=" + std::string(action.payload_json()->view()));
        seen.push_back("root=" + std::to_string(slice->root().size()));
        std::string_view as_view = *slice; // a json_text goes where a string_view goes
        seen.push_back("view=" + std::to_string(as_view.size()) + "," + std::to_string(std::strlen(slice->c_str())) +
                       "," + std::to_string(slice->str().size()));
        return {};
    });
    store.dispatch(R"({"type":"read","payload":{"id":5}})");
    json_doc copy(doc_text);
    std::vector<std::string> expected;
    for (const char *p : pointers) expected.push_back(answer([&](const char *q) { return copy.at(q); }, p));
    std::string size = std::to_string(std::strlen(doc_text));
    expected.insert(expected.end(), {"esc=a\"b\xc3\xa9\n nul=3 esc still", "sum=30", "id=5", R"(payload={"id":5})",
                                     "root=16", "view=" + size + "," + size + "," + size});
    CHECK_EQ(seen.size(), expected.size());
    for (size_t i = 0; i < seen.size() && i < expected.size(); ++i) CHECK_EQ(seen[i], expected[i]);
    // No payload: nothing at any pointer.
    std::string bare;
    store.add_reducer_for("bare", {"bare"}, [&bare](Text s, const Action &a) -> reduced {
        if (!s) return "0";
        CHECK(!a.payload_json());
        try {
            (void)a.payload_at("");
        } catch (const turnstate::not_found_error &e) {
            bare = e.what();
        }
        return {};
    });
    store.dispatch(R"({"type":"bare"})");
    CHECK_EQ(bare, std::string(R"(the action "bare" has no payload)"));
}

/* Threads: each dispatches to one store whose patch reducer reads escaped
 * strings (the thread's own arena), and all read one json_doc at once (its
 * arena is shared): ThreadSanitizer runs this with --quick. */
TEST(test_getters_from_threads) {
    Store store;
    store.add_reducer_for("n", {"n/*"}, [](Text slice, const Action &action) -> reduced {
        if (!slice) return "{\"count\":0,\"last\":\"\"}";
        std::string_view who = action.payload_at("/who").as_string();
        int64_t count = slice->at("/count").as_int64();
        return patch().replace("/count", std::to_string(count + 1)).replace("/last", turnstate::json_string(who));
    });
    json_doc shared(R"({"s":"tab\there","t":"new\nline"})");
    const int threads = 4, rounds = quick ? 25 : 300;
    std::atomic<int> wrong{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            std::string who = "thread\t" + std::to_string(t);
            for (int i = 0; i < rounds; ++i) {
                store.dispatch(turnstate::action("n/add", "{\"who\":" + turnstate::json_string(who) + "}"));
                if (shared.at("/s").as_string() != "tab\there" || shared.at("/t").as_string() != "new\nline")
                    wrong.fetch_add(1);
            }
        });
    for (auto &th : pool) th.join();
    CHECK_EQ(wrong.load(), 0);
    CHECK_EQ(store.get("/n/count"), std::to_string(threads * rounds));
    json_doc last(store.get("/n/last"));
    CHECK_EQ(last.root().as_string().substr(0, 7), std::string_view("thread\t"));
}

} // namespace

/* ---- Patch reducers (add_patch_reducer: the slice as a json_ref) ---------- */

/* A slice well over 64 KiB (the store keeps a patch reducer's copy of it as
 * a tree): 1,500 items of about 100 bytes, an owner whose string has
 * escapes, a small object. */
std::string big_slice() {
    std::string items;
    for (int i = 0; i < 1500; ++i) {
        if (i > 0) items += ',';
        std::string n = std::to_string(i);
        items += "{\"id\":" + n + ",\"title\":\"item number " + n + " of the big list\",\"done\":" +
                 (i % 3 == 0 ? "true" : "false") + ",\"weight\":" + n + ".5,\"tags\":[\"a\",\"b\"]}";
    }
    return "{\"items\":[" + items +
           R"(],"owner":"ada \"the first\"","meta":{"version":3,"ratio":0.25,"big":-9007199254740993},"summary":null})";
}

/* What both reducers answer, read through the getters from `slice` (the
 * whole slice as a value): a toggle, an append, a removal, and a summary
 * written from reads of every kind. */
reduced big_answer(json_ref slice, const Action &action) {
    if (action.type == "big/toggle") {
        std::string path = "/items/" + std::to_string(action.payload_at("/id").as_uint64()) + "/done";
        return patch().replace(path, slice.at(path).as_bool() ? "false" : "true");
    }
    if (action.type == "big/add") return patch().add("/items/-", action.payload.value_or("null"));
    if (action.type == "big/remove")
        return patch().remove("/items/" + std::to_string(action.payload_at("").as_uint64()));
    if (action.type == "big/summary") {
        json_ref items = slice.at("/items");
        uint64_t done = 0;
        double weight = 0;
        int64_t ids = 0;
        for (json_ref item : items) {
            done += item.at("/done").as_bool() ? 1 : 0;
            weight += item.at("/weight").as_double();
            ids += item.at("/id").as_int64();
        }
        std::string meta, top;
        for (auto [key, value] : slice.at("/meta").members()) meta += (meta.empty() ? "" : ",") + turnstate::json_string(key);
        for (auto [key, value] : slice.members()) top += (top.empty() ? "" : ",") + turnstate::json_string(key);
        std::string last = std::string(items.at("/" + std::to_string(items.size() - 1) + "/title").as_string());
        std::ostringstream summary;
        summary << "{\"count\":" << items.size() << ",\"done\":" << done << ",\"weight\":" << weight
                << ",\"ids\":" << ids << ",\"owner\":" << turnstate::json_string(slice.at("/owner").as_string())
                << ",\"version\":" << slice.at("/meta/version").as_uint64()
                << ",\"ratio\":" << slice.at("/meta/ratio").as_double() << ",\"meta\":[" << meta << "],\"top\":["
                << top << "],\"top_count\":" << slice.size() << ",\"last\":" << turnstate::json_string(last)
                << ",\"tags\":" << slice.at("/items/0/tags").json()
                << ",\"has_owner\":" << (slice.find("/owner") ? "true" : "false")
                << ",\"has_nothing\":" << (slice.find("/nothing") ? "true" : "false") << "}";
        return patch().replace("/summary", summary.str());
    }
    return {};
}

TEST(test_patch_reducer_over_a_big_slice) {
    Store store;
    // The same reads and answers, once over the slice's text
    // (add_reducer_for) and once over the slice the store keeps as a tree
    // (add_patch_reducer).
    store.add_reducer_for("flat", {"big/*"}, [](Text slice, const Action &action) -> reduced {
        if (!slice) return big_slice();
        return big_answer(slice->root(), action);
    });
    std::vector<std::string> seen;
    store.add_patch_reducer("tree", {"big/*"}, [&seen](std::optional<json_ref> slice, const Action &action) -> reduced {
        if (!slice) return big_slice();
        std::optional<std::string_view> meta = slice->at("/meta").text();
        seen.push_back(std::string(slice->split() ? "split" : "text") + (slice->text() ? " has text" : " no text") +
                       (slice->at("/items").split() ? " items split" : " items text") +
                       (slice->at("/items/0").split() ? " item split" : " item text") + " meta " +
                       std::string(meta.value_or("none")));
        return big_answer(*slice, action);
    });
    CHECK(big_slice().size() > 2 * 64 * 1024);
    CHECK_EQ(store.get("/tree"), store.get("/flat"));
    for (const char *action : {R"({"type":"big/summary"})", R"({"type":"big/toggle","payload":{"id":0}})",
                               R"({"type":"big/toggle","payload":{"id":1499}})",
                               R"({"type":"big/toggle","payload":{"id":700}})",
                               R"({"type":"big/add","payload":{"id":1500,"title":"a new one","done":true,"weight":1,"tags":[]}})",
                               R"({"type":"big/remove","payload":3})", R"({"type":"big/summary"})",
                               R"({"type":"other"})"}) {
        store.dispatch(action);
        CHECK_EQ(store.get("/tree"), store.get("/flat"));
    }
    // The summary holds what was read (not only the same in both).
    CHECK_EQ(store.get("/tree/summary/count"), std::string("1500"));
    CHECK_EQ(store.get("/tree/summary/owner"), std::string(R"("ada \"the first\"")"));
    CHECK_EQ(store.get("/tree/summary/meta"), std::string(R"(["version","ratio","big"])"));
    CHECK_EQ(store.get("/tree/summary/top_count"), std::string("4"));
    CHECK_EQ(store.get("/tree/summary/last"), std::string(R"("a new one")"));
    CHECK_EQ(store.get("/tree/summary/tags"), std::string(R"(["a","b"])"));
    CHECK_EQ(store.get("/tree/summary/has_owner"), std::string("true"));
    CHECK_EQ(store.get("/tree/summary/has_nothing"), std::string("false"));
    CHECK_EQ(store.get("/tree/items/0/done"), std::string("false"));
    // Called for each "big/*" action, over split values: the slice and its
    // list have no text; an item and a small object have theirs.
    CHECK_EQ(seen.size(), size_t(7));
    for (const std::string &call : seen)
        CHECK_EQ(call, std::string(R"(split no text items split item text meta {"version":3,"ratio":0.25,"big":-9007199254740993})"));
}

TEST(test_split_values_have_no_text) {
    Store store;
    std::vector<std::string> joined;
    store.add_patch_reducer("tree", {}, [&joined](std::optional<json_ref> slice, const Action &action) -> reduced {
        if (!slice) return big_slice();
        if (action.type == "join") {
            joined.push_back(slice->to_json());
            joined.push_back(slice->at("/items").to_json());
            joined.push_back(slice->at("/meta").to_json());
            try {
                slice->as_int64();
            } catch (const turnstate::argument_error &e) {
                joined.push_back(e.what());
            }
            return {};
        }
        if (action.type == "text") return std::string(slice->json()); /* throws: split */
        if (action.type == "toggle") return patch().replace("/items/5/done", "true");
        return {};
    });
    store.dispatch(R"({"type":"toggle"})");
    store.dispatch(R"({"type":"join"})");
    std::string whole = store.get("/tree");
    CHECK_EQ(joined.size(), size_t(4));
    if (joined.size() == 4) {
        CHECK_EQ(joined[0], whole);
        CHECK_EQ(joined[1], store.get("/tree/items"));
        CHECK_EQ(joined[2], store.get("/tree/meta"));
        CHECK_CONTAINS(joined[3], "expected an integer");
    }
    // json() of a split value throws in the reducer: the dispatch fails
    // with its message and the state is unchanged.
    CHECK_THROWS(turnstate::error, store.dispatch(R"({"type":"text"})"), e,
                 CHECK_CONTAINS(e.what(), "json_ref::json: an object that is split"));
    CHECK_EQ(store.get("/tree"), whole);
    // Bad arguments are refused before anything is added.
    CHECK_THROWS(turnstate::argument_error, store.add_patch_reducer("other", {}, nullptr), e,
                 CHECK_CONTAINS(e.what(), "the reducer is empty"));
    CHECK_THROWS(turnstate::argument_error,
                 store.add_patch_reducer("other", {"a/**"}, [](std::optional<json_ref>, const Action &) -> reduced {
                     return "1";
                 }),
                 e, CHECK_CONTAINS(e.what(), "0"));
    CHECK(!store.find("/other").has_value());
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--quick") quick = true;
        else if (arg == "--plugins" && i + 1 < argc) plugins_dir = argv[++i];
        else {
            std::fprintf(stderr, "usage: %s [--quick] --plugins DIR\n", argv[0]);
            return 2;
        }
    }
    RUN(test_version_and_basics);
    RUN(test_errors_carry_status_and_message);
    RUN(test_empty_callables_are_refused);
    RUN(test_callbacks_live_as_long_as_the_store);
    RUN(test_subscription_handles);
    RUN(test_store_destroyed_inside_its_listener);
    RUN(test_reducer_exceptions);
    RUN(test_listener_exceptions);
    RUN(test_middleware);
    RUN(test_replacing_and_removing);
    RUN(test_middleware_and_the_rest_of_the_chain);
    RUN(test_middleware_api);
    RUN(test_threads_dispatching_at_once);
    RUN(test_subscriptions_from_threads);
    RUN(test_plugins);
    RUN(test_patch_answers);
    RUN(test_patch_failures);
    RUN(test_pointer_listeners_under_patches);
    RUN(test_type_filters);
    RUN(test_bad_patterns_are_refused);
    RUN(test_getters_every_kind);
    RUN(test_getters_errors);
    RUN(test_getters_in_a_reducer);
    RUN(test_getters_from_threads);
    RUN(test_patch_reducer_over_a_big_slice);
    RUN(test_split_values_have_no_text);
    RUN(test_migrations);
    RUN(test_migrations_through_the_journal);
    std::printf("checks: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
