/*
 * misuse.cpp - a turnstate::Store destroyed inside one of its own callbacks
 * (a listener, a middleware, a reducer), from the caller's thread (through
 * the header's dispatch, and through ts_store_dispatch on handle()) and from
 * a plugin's thread (the delay plugin's worker). The C library defers such a
 * destroy: the dispatch under way still runs its remaining middleware,
 * reducers and listeners, so their callables must outlive the Store object.
 * After the dropping callback, a witness of every kind reads what its lambda
 * captured: a callable freed too early is a heap-use-after-free under ASan
 * (`make test-cpp` builds this program with -fsanitize=address against the
 * ASan library, build/asan/lib).
 *
 * Usage: misuse --plugins DIR (the folder of delay.so). Ends with the line
 * "checks: N passed, M failed" (exit 1 if any failed).
 */
#include "turnstate.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

namespace {

int passed = 0, failed = 0;
std::string current = "";
std::string plugins_dir;

void report(bool ok, int line, const std::string &what) {
    if (ok) {
        ++passed;
        return;
    }
    ++failed;
    std::fprintf(stderr, "misuse.cpp:%d: [%s] FAILED: %s\n", line, current.c_str(), what.c_str());
}
#define CHECK(expr) report(static_cast<bool>(expr), __LINE__, #expr)

using turnstate::Action;
using turnstate::Store;
using turnstate::StoreRef;
using turnstate::Subscription;

enum class Kind { listener, middleware, reducer };
enum class Caller { header_dispatch, c_dispatch_then_a_call, c_dispatch_then_thread_exit, delay_worker };

const char *name(Kind kind) {
    return kind == Kind::listener ? "listener" : kind == Kind::middleware ? "middleware" : "reducer";
}
const char *name(Caller caller) {
    switch (caller) {
    case Caller::header_dispatch: return "caller's thread, Store::dispatch";
    case Caller::c_dispatch_then_a_call: return "caller's thread, ts_store_dispatch, then a call";
    case Caller::c_dispatch_then_thread_exit: return "caller's thread, ts_store_dispatch, then thread exit";
    case Caller::delay_worker: return "the delay plugin's worker";
    }
    return "?";
}

/* What the callbacks of one scenario record. The lambdas hold `life` (one
 * shared_ptr each): `life.expired()` through a weak_ptr says they were all
 * freed, use_count() how many are left. */
struct Seen {
    std::mutex mutex; /* guards `store` (the worker resets it) */
    std::optional<Store> store;
    std::atomic<bool> dropped{false};
    std::atomic<bool> freed_too_early{false};
    std::atomic<int> middleware_witness{0}, reducer_witness{0}, listener_witness{0};
    std::thread::id dropped_on;
    std::string after_drop; /* what a dispatch through the witness's StoreRef threw */
    std::weak_ptr<int> life;
    long callables = 0;
};

/* The misuse: the callback destroys its own Store. */
void drop_store(Seen &seen) {
    std::lock_guard<std::mutex> lock(seen.mutex);
    if (!seen.store) return;
    seen.store.reset();
    seen.dropped_on = std::this_thread::get_id();
    seen.dropped = true;
}

void check_alive(Seen &seen, const std::shared_ptr<int> &mine) {
    // Every callable of the store still holds `life` (this one's copy too).
    if (mine.use_count() != seen.callables) seen.freed_too_early = true;
}

/* A store whose callback of `kind` destroys it on "test/drop", followed by a
 * witness of each kind; the store is seen.store. */
void make_scenario(Kind kind, Seen &seen) {
    auto life = std::make_shared<int>(0);
    seen.life = life;
    seen.store.emplace();
    Store &store = *seen.store;
    Seen *s = &seen;
    switch (kind) {
    case Kind::listener:
        store.subscribe([s, life](StoreRef) { drop_store(*s); }).release();
        break;
    case Kind::middleware:
        store.add_middleware("dropper", [s, life](turnstate::Api &, turnstate::Next &next, const Action &action) {
            if (action.type == "test/drop") drop_store(*s);
            next();
        });
        break;
    case Kind::reducer:
        store.add_reducer("dropper", [s, life](std::optional<std::string_view> slice,
                                               const Action &action) -> std::optional<std::string> {
            if (action.type == "test/drop") drop_store(*s);
            if (!slice) return std::string("0");
            return std::nullopt;
        });
        break;
    }
    store.add_middleware("witness", [s, life](turnstate::Api &, turnstate::Next &next, const Action &action) {
        if (action.type == "test/drop") {
            ++s->middleware_witness;
            check_alive(*s, life);
        }
        next();
    });
    store.add_reducer("witness", [s, life](std::optional<std::string_view> slice,
                                           const Action &action) -> std::optional<std::string> {
        if (!slice) return std::string("0");
        if (action.type != "test/drop") return std::nullopt;
        ++s->reducer_witness;
        check_alive(*s, life);
        return std::string("1");
    });
    store.subscribe([s, life](StoreRef ref) {
        ++s->listener_witness;
        check_alive(*s, life);
        // The store is closed: a new call is refused, not run.
        try {
            ref.dispatch(R"({"type": "test/after"})");
            s->after_drop = "no exception";
        } catch (const turnstate::store_gone_error &e) {
            s->after_drop = "store_gone_error";
        } catch (const std::exception &e) {
            s->after_drop = std::string("another exception: ") + e.what();
        }
    }).release();
    seen.callables = life.use_count() - 1; // less the local `life`
}

/* Waits for `done` with a bound that keeps a broken plugin from hanging the
 * suite (not a timing check). */
template <class F>
bool wait_for(F done) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!done()) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
}

void run(Kind kind, Caller caller) {
    current = std::string(name(kind)) + ", " + name(caller);
    Seen seen;
    make_scenario(kind, seen);
    const char *drop_action = R"({"type": "test/drop"})";
    switch (caller) {
    case Caller::header_dispatch: {
        // Dispatched through the Store that the callback destroys.
        seen.store->dispatch(drop_action);
        CHECK(seen.dropped_on == std::this_thread::get_id());
        // The outermost call through the header returned: freed.
        CHECK(seen.life.expired());
        break;
    }
    case Caller::c_dispatch_then_a_call:
    case Caller::c_dispatch_then_thread_exit: {
        // A C call is the outermost one: freed at the next call through the
        // header on that thread, or when the thread ends.
        ts_status status = TS_E_ARGUMENT;
        bool freed_by_next_call = false;
        std::thread::id id;
        std::thread thread([&] {
            id = std::this_thread::get_id();
            status = ts_store_dispatch(seen.store->handle(), drop_action);
            if (caller == Caller::c_dispatch_then_a_call) {
                Store another;
                another.dispatch(R"({"type": "any"})");
                freed_by_next_call = seen.life.expired();
            }
        });
        thread.join();
        CHECK(status == TS_OK);
        CHECK(seen.dropped_on == id);
        if (caller == Caller::c_dispatch_then_a_call) CHECK(freed_by_next_call);
        CHECK(seen.life.expired());
        break;
    }
    case Caller::delay_worker: {
        {
            std::lock_guard<std::mutex> lock(seen.mutex);
            seen.store->load_plugin(plugins_dir + "/delay.so");
            // Swallowed; the worker dispatches the inner action once this
            // lock is released (the callback takes it to destroy the Store).
            seen.store->dispatch(std::string(R"({"type": "@@delay", "payload": {"ms": 0, "action": )") +
                                 drop_action + "}}");
        }
        CHECK(wait_for([&] { return seen.listener_witness.load() > 0; }));
        CHECK(wait_for([&] { return seen.life.expired(); })); // when the worker ended
        std::lock_guard<std::mutex> lock(seen.mutex);
        CHECK(seen.dropped_on != std::this_thread::get_id());
        break;
    }
    }
    CHECK(seen.dropped);
    CHECK(!seen.store.has_value());
    CHECK(!seen.freed_too_early);
    CHECK(seen.middleware_witness == 1);
    CHECK(seen.reducer_witness == 1);
    CHECK(seen.listener_witness == 1);
    CHECK(seen.after_drop == "store_gone_error");
    if (seen.after_drop != "store_gone_error") std::fprintf(stderr, "    after the drop: %s\n", seen.after_drop.c_str());
}

/* Calls the header from its destructor (a callable's capture): freeing
 * the deferred callables must not be re-entered by it. */
struct CallsOnDestruction {
    Store *other;
    bool *ran;
    CallsOnDestruction(Store *o, bool *r) : other(o), ran(r) {}
    CallsOnDestruction(const CallsOnDestruction &) = delete;
    CallsOnDestruction &operator=(const CallsOnDestruction &) = delete;
    ~CallsOnDestruction() {
        *ran = true;
        other->dispatch(R"({"type": "from/a/destructor"})");
    }
};

/* Two stores destroyed from inside their callbacks in one dispatch (the
 * second's listener destroys both), and a callable whose destructor calls
 * the header: freeing them when the dispatch returns must free each once. */
void two_stores_and_a_destructor_that_calls() {
    current = "two stores destroyed in one dispatch, a destructor that calls the header";
    Store third;
    int third_calls = 0;
    third.subscribe([&] { ++third_calls; }).release();
    bool guard_ran = false;
    std::optional<Store> first(std::in_place), second(std::in_place);
    auto guard = std::make_shared<CallsOnDestruction>(&third, &guard_ran);
    first->subscribe([&second, guard](StoreRef) { second->dispatch(R"({"type": "second"})"); }).release();
    guard.reset(); // the listener holds the only one
    second->subscribe([&first, &second] {
        second.reset();
        first.reset();
    }).release();
    first->dispatch(R"({"type": "first"})");
    CHECK(!first && !second);
    CHECK(guard_ran);           // freed when the dispatch returned
    CHECK(third_calls == 1);    // and its call went through
}

} // namespace

int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg == "--plugins" && i + 1 < argc) plugins_dir = argv[++i];
        else {
            std::fprintf(stderr, "usage: %s --plugins DIR\n", argv[0]);
            return 2;
        }
    }
    if (plugins_dir.empty()) {
        std::fprintf(stderr, "usage: %s --plugins DIR\n", argv[0]);
        return 2;
    }
    for (Caller caller : {Caller::header_dispatch, Caller::c_dispatch_then_a_call, Caller::c_dispatch_then_thread_exit,
                          Caller::delay_worker})
        for (Kind kind : {Kind::listener, Kind::middleware, Kind::reducer}) run(kind, caller);
    two_stores_and_a_destructor_that_calls();
    std::printf("checks: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
