/*
 * turnstate.hpp - a C++17 face of Turnstate, header-only, over turnstate.h.
 *
 *     #include <turnstate.hpp>
 *     turnstate::Store store(R"({"todos": []})");
 *     store.add_reducer("count", [](std::optional<std::string_view> slice,
 *                                   const turnstate::Action &action) -> std::optional<std::string> {
 *         if (!slice) return "0";
 *         if (action.type != "counter/add") return std::nullopt;
 *         return std::to_string(std::stoll(std::string(*slice)) + 1);
 *     });
 *     turnstate::Subscription sub = store.subscribe("/count", [](turnstate::StoreRef s) {
 *         std::cout << s.get("/count") << "\n";
 *     });
 *     store.dispatch(R"({"type": "counter/add"})");
 *
 * Link with the library as a C program does (pkg-config --libs turnstate);
 * there is nothing else to build. Every rule of turnstate.h holds here; this
 * header adds C++ ownership and errors on top:
 *
 * - Ownership: turnstate::Store owns one ts_store (move-only; its destructor
 *   calls ts_store_destroy) and every callback given to it: the reducers,
 *   listeners and middleware (std::function, or any callable) are freed with
 *   the store, not before, and not after. A Subscription is a move-only
 *   handle that unsubscribes when it is destroyed (or reset()); release()
 *   lets go of the handle and keeps the listener until the store goes.
 *   A StoreRef and an Api are non-owning views, valid while their store is.
 *
 * - Errors: every failing call throws turnstate::error (a
 *   std::runtime_error) with status() (the ts_status) and what() (the text
 *   of ts_last_error()). Each status has its own subclass (json_error for
 *   TS_E_JSON, rejected_error for TS_E_REJECTED, ...: see below), so
 *   `catch (const turnstate::not_found_error &)` catches one kind.
 *
 * - Exceptions in callbacks never unwind through the C library: each
 *   callback is called inside a try block. The exception is kept (an
 *   std::exception_ptr, per call and per thread) and the call into the
 *   library that led to the callback - dispatch, add_reducer, load_plugin,
 *   Api::dispatch, Next - rethrows that same exception object once the C
 *   function has returned. The first exception of a call wins; later ones
 *   of the same call are dropped.
 *     reducer:    the reducer fails (ts_reducer_fail(what())), so the
 *                 dispatch fails with TS_E_REDUCER and the state is
 *                 unchanged; the caller gets the reducer's own exception.
 *     middleware: the action is refused with the status of the exception if
 *                 it is a turnstate::error (throw rejected_error("why") to
 *                 refuse), else TS_E_REJECTED, and what() as the reason. If
 *                 it threw before calling next, the state is unchanged. An
 *                 exception that came out of next() (the rest of the chain
 *                 failed: a reducer threw, a plugin refused) and is let
 *                 through keeps the rest of the chain's status.
 *     listener:   listeners run after the state changed, so the state keeps
 *                 the change; the other listeners still run; the dispatch
 *                 then rethrows the listener's exception.
 *   A callback called by a dispatch that no C++ call on its thread is
 *   waiting for (a plugin's own thread, such as the delay plugin's worker,
 *   or C code calling ts_store_dispatch) has nobody to rethrow to: the
 *   exception is dropped after the C status is set as above (a reducer's
 *   dispatch fails with TS_E_REDUCER; a listener's is ignored).
 *
 * - Threads: as turnstate.h. Any thread may use a Store, a StoreRef and a
 *   kept Api; calls on one store are serialized by the library; callbacks
 *   run on the dispatching thread and must be safe to call from any thread.
 *   Destroying a Store, and destroying or resetting a Subscription, must not
 *   race with other threads' use of that same Store object (as for any C++
 *   object); the library's own threads (a plugin's, such as the delay
 *   plugin's worker) are fine: the destructor waits for their dispatches
 *   (ts_store_destroy). A Subscription may outlive its Store (its destructor
 *   then does nothing).
 *   A Store may be destroyed from inside one of its own callbacks (a
 *   listener, middleware or reducer resetting a std::optional<Store>, on the
 *   caller's thread or on a plugin's, such as the delay plugin's worker):
 *   the C store closes at once - every later call through a StoreRef of it
 *   throws store_gone_error, an Api's calls too - while the dispatch under
 *   way finishes: its remaining middleware, reducers and listeners run (a
 *   reducer's result is applied). Their callables are kept until then:
 *   freed when a call through this header returns on that thread outside
 *   every callback (the outermost one, for a dispatch made through this
 *   header), or when the thread exits (a plugin's thread, whose dispatch
 *   came from C, ends once its store is gone). Tests/cpp/misuse.cpp checks
 *   each case under ASan. This header sees only the callbacks it
 *   registered: code run by a callback registered through turnstate.h must
 *   not destroy a Store that is busy on its thread, nor, after such a
 *   destroy, call this header before that store's outermost call returned.
 *
 * - Empty callables: an empty std::function or a null pointer to a
 *   function, given as a reducer, listener or middleware, is refused at the
 *   call with argument_error, as the C API refuses a NULL fn with
 *   TS_E_ARGUMENT; nothing is added.
 *
 * - Strings: inputs are `zstring` (a const char *, a std::string, or a
 *   std::string_view, which is copied to add the NUL); outputs are
 *   std::string (minified JSON text). Views in an Action are valid only
 *   during the callback.
 *
 * Needs C++17 (std::optional, std::string_view); compiles with
 * -std=c++17 -Wall -Wextra -pedantic -Werror under g++ and clang++.
 */
#ifndef TURNSTATE_HPP
#define TURNSTATE_HPP

/* Compiled as C this header is empty: SwiftPM builds the module CTurnstate
 * from every header of Include/ (Sources/CTurnstate/include), as C. */
#ifdef __cplusplus

#if __cplusplus < 201703L
#error "turnstate.hpp needs C++17 or later (-std=c++17); from C, include turnstate.h"
#endif

#include "turnstate.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace turnstate {

/* ---- Versions ----------------------------------------------------------- */

/* The loaded library's version, "MAJOR.MINOR.PATCH" (ts_version_string); the
 * header's is TS_VERSION. */
inline std::string version() { return ts_version_string(); }

/* ---- Errors ------------------------------------------------------------- */

/* What every failing call throws: status() is the ts_status (negative),
 * what() the message (the text of ts_last_error() when the library failed).
 * Throw one (or a subclass) from a middleware to refuse an action with that
 * status. */
class error : public std::runtime_error {
public:
    error(ts_status status, const std::string &message) : std::runtime_error(message), status_(status) {}
    /* The status: TS_E_JSON, TS_E_REJECTED, ... */
    ts_status status() const noexcept { return status_; }
    /* The status's name, "TS_E_JSON" (static text). */
    const char *status_name() const noexcept { return ts_status_name(status_); }

private:
    ts_status status_;
};

/* One subclass per status: status_error<TS_E_JSON> is json_error, ... */
template <ts_status Status>
class status_error : public error {
public:
    explicit status_error(const std::string &message) : error(Status, message) {}
};

using argument_error = status_error<TS_E_ARGUMENT>;             /* a NULL or malformed argument; a moved-from Store */
using json_error = status_error<TS_E_JSON>;                     /* invalid JSON */
using not_action_error = status_error<TS_E_NOT_ACTION>;         /* valid JSON that is not a tagged action */
using reducer_error = status_error<TS_E_REDUCER>;               /* a reducer failed or returned invalid JSON */
using reentrant_error = status_error<TS_E_REENTRANT>;           /* a reducer called back into its store */
using plugin_error = status_error<TS_E_PLUGIN>;                 /* a plugin could not be loaded or failed */
using io_error = status_error<TS_E_IO>;                         /* reading or writing a file failed */
using nomem_error = status_error<TS_E_NOMEM>;                   /* out of memory (in the library) */
using not_found_error = status_error<TS_E_NOT_FOUND>;           /* no value at a JSON Pointer, no such file */
using rejected_error = status_error<TS_E_REJECTED>;             /* a middleware refused the action */
using store_gone_error = status_error<TS_E_STORE_GONE>;         /* the store is being destroyed */
using abi_error = status_error<TS_E_ABI>;                       /* a plugin of another ABI */
using unknown_action_error = status_error<TS_E_UNKNOWN_ACTION>; /* (Swift stores only) */
using misuse_error = status_error<TS_E_MISUSE>;                 /* next called twice, or outside its run() */

/* Throws the subclass of error for `status` (turnstate::error itself for a
 * status this header does not know) with `message`. */
[[noreturn]] inline void throw_error(ts_status status, const std::string &message) {
    switch (status) {
    case TS_E_ARGUMENT: throw argument_error(message);
    case TS_E_JSON: throw json_error(message);
    case TS_E_NOT_ACTION: throw not_action_error(message);
    case TS_E_REDUCER: throw reducer_error(message);
    case TS_E_REENTRANT: throw reentrant_error(message);
    case TS_E_PLUGIN: throw plugin_error(message);
    case TS_E_IO: throw io_error(message);
    case TS_E_NOMEM: throw nomem_error(message);
    case TS_E_NOT_FOUND: throw not_found_error(message);
    case TS_E_REJECTED: throw rejected_error(message);
    case TS_E_STORE_GONE: throw store_gone_error(message);
    case TS_E_ABI: throw abi_error(message);
    case TS_E_UNKNOWN_ACTION: throw unknown_action_error(message);
    case TS_E_MISUSE: throw misuse_error(message);
    default: throw error(status, message);
    }
}

/* ---- Strings ------------------------------------------------------------ */

/* A NUL-terminated string argument: a const char * or a std::string is used
 * as it is; a std::string_view is copied (it may lack the NUL). Only for
 * parameters: it points into its argument. */
class zstring {
public:
    zstring(const char *text) noexcept : text_(text) {}
    zstring(const std::string &text) noexcept : text_(text.c_str()) {}
    zstring(std::string_view text) : copy_(text), text_(copy_.c_str()) {}
    zstring(const zstring &) = delete;
    zstring &operator=(const zstring &) = delete;
    const char *c_str() const noexcept { return text_; }

private:
    std::string copy_;
    const char *text_;
};

/* Escapes `text` as a JSON string literal, quotes included. */
inline std::string json_string(std::string_view text) {
    static const char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size() + 2);
    out += '"';
    for (char c : text) {
        unsigned char u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            out += "\\u00";
            out += hex[u >> 4];
            out += hex[u & 15];
        } else {
            out += c;
        }
    }
    out += '"';
    return out;
}

/* The JSON text of the action {"type": TYPE} or {"type": TYPE, "payload":
 * PAYLOAD}: `type` is escaped, `payload_json` must already be JSON text
 * (empty means no payload). */
inline std::string action(std::string_view type, std::string_view payload_json = {}) {
    std::string out = "{\"type\":" + json_string(type);
    if (!payload_json.empty()) {
        out += ",\"payload\":";
        out += payload_json;
    }
    out += '}';
    return out;
}

/* ---- Actions ------------------------------------------------------------ */

/* The parsed action a reducer or middleware receives (ts_action); the views
 * are valid only during the callback. */
struct Action {
    std::string_view type;                  /* "todos/add", unescaped */
    std::optional<std::string_view> payload; /* minified JSON text of "payload"; nullopt without one */
    std::string_view json;                  /* the whole action as dispatched */
    const ts_action *c_action;              /* the C view, for passing to C code */

    explicit Action(const ts_action &a) noexcept
        : type(a.type ? a.type : ""), payload(a.payload ? std::optional<std::string_view>(a.payload) : std::nullopt),
          json(a.json ? a.json : ""), c_action(&a) {}
};

class StoreRef;
class Api;
class Next;
class Subscription;
class Store;

/* A reducer (ts_reducer_fn): the slice's JSON text (nullopt for the init
 * call, when the state has no such key yet: return its first value) and the
 * action; returns the new slice's JSON text, or nullopt for "unchanged".
 * The text is copied into ts_alloc() memory that the store takes over (the
 * std::string stays the reducer's); text that is not valid JSON fails the
 * dispatch with TS_E_REDUCER. Throwing fails the dispatch too (see the top
 * of this file). Called on the dispatching thread with the store held; must
 * be pure: calls into its own store throw reentrant_error. */
using reducer_fn = std::function<std::optional<std::string>(std::optional<std::string_view> slice, const Action &action)>;
/* A listener (ts_listener_fn); its store is given so that it can read the
 * state, dispatch or subscribe. Add one with subscribe(), which also takes a
 * callable with no parameter. Called on the dispatching thread with the
 * store held: do not wait there for another thread that uses the store. */
using listener_fn = std::function<void(StoreRef store)>;
/* A middleware (ts_middleware_fn): call next() to pass the action on
 * (next(json) to pass another one), do not call it to swallow the action,
 * throw to refuse it (rejected_error("why")). Called on the dispatching
 * thread with the store held. `store` may be kept (copied) and used from
 * any thread until the store is destroyed; `next` and `action` only during
 * the call. */
using middleware_fn = std::function<void(Api &store, Next &next, const Action &action)>;

/* ---- Internals ---------------------------------------------------------- */

namespace detail {

struct Core;

/* What this header keeps per thread. */
struct ThreadState {
    /* Where a callback puts its exception: the slot of the innermost call
     * through this header on this thread; nullptr when there is none. */
    std::exception_ptr *slot = nullptr;
    /* Calls through this header under way on this thread. */
    int calls = 0;
    /* The stores whose callbacks run on this thread, innermost last. */
    std::vector<const Core *> in_callback;
    /* Stores destroyed from inside their own callbacks on this thread,
     * freed when the outermost call returns (or the thread exits). */
    std::vector<std::shared_ptr<Core>> deferred;

    /* Frees `deferred`, taken out first: a callable's destructor may call
     * this header again (a CallScope ending, a Store destroyed). */
    void free_deferred() noexcept {
        std::vector<std::shared_ptr<Core>> doomed;
        doomed.swap(deferred);
    }
    ThreadState() = default;
    ThreadState(const ThreadState &) = delete;
    ThreadState &operator=(const ThreadState &) = delete;
    /* At thread exit: freed while this object is still whole. */
    ~ThreadState() { free_deferred(); }
};

inline ThreadState &thread_state() noexcept {
    static thread_local ThreadState state;
    return state;
}

/* Keeps `e` for the innermost call on this thread, unless it has one. */
inline void record(const std::exception_ptr &e) noexcept {
    ThreadState &ts = thread_state();
    if (ts.slot != nullptr && !*ts.slot) *ts.slot = e;
}

/* what() of the exception being handled (call inside a catch block); the
 * text lives as long as the exception. */
inline const char *describe() noexcept {
    try {
        throw;
    } catch (const std::exception &e) {
        return e.what();
    } catch (...) {
        return "an exception that is not a std::exception";
    }
}

/* One call into the library: callbacks of that call record their exceptions
 * here; finish() rethrows the first one, else throws for a failed status. */
class CallScope {
public:
    CallScope() noexcept : ts_(thread_state()), outer_(ts_.slot) {
        ts_.slot = &caught_;
        ++ts_.calls;
    }
    CallScope(const CallScope &) = delete;
    CallScope &operator=(const CallScope &) = delete;
    ~CallScope() {
        ts_.slot = outer_;
        if (--ts_.calls == 0 && ts_.in_callback.empty() && !ts_.deferred.empty()) ts_.free_deferred();
    }
    /* After the C call returned `status`. */
    void finish(ts_status status) {
        if (caught_) {
            std::exception_ptr e = std::move(caught_);
            caught_ = nullptr;
            std::rethrow_exception(e);
        }
        if (status != TS_OK) throw_error(status, ts_last_error());
    }
    /* The exception a callback left, taken out (nullptr if none). */
    std::exception_ptr take() noexcept {
        std::exception_ptr e = std::move(caught_);
        caught_ = nullptr;
        return e;
    }

private:
    ThreadState &ts_;
    std::exception_ptr *outer_;
    std::exception_ptr caught_;
};

/* Marks this thread as running a callback of `core`. */
class CallbackScope {
public:
    explicit CallbackScope(const Core *core) : ts_(thread_state()) { ts_.in_callback.push_back(core); }
    CallbackScope(const CallbackScope &) = delete;
    CallbackScope &operator=(const CallbackScope &) = delete;
    ~CallbackScope() { ts_.in_callback.pop_back(); }

private:
    ThreadState &ts_;
};

inline bool in_callback_of(const Core *core) noexcept {
    for (const Core *c : thread_state().in_callback)
        if (c == core) return true;
    return false;
}

struct ReducerEntry {
    Core *core;
    reducer_fn fn;
};
struct ListenerEntry {
    Core *core;
    listener_fn fn;
};
struct MiddlewareEntry {
    Core *core;
    middleware_fn fn;
};

/* What a Store owns besides the ts_store: its callbacks. It stays at one
 * address (the callbacks' ctx) while Store objects move. */
struct Core : std::enable_shared_from_this<Core> {
    ts_store *store = nullptr;
    std::atomic<bool> closed{false};
    std::mutex mutex; /* guards the containers below */
    std::vector<std::unique_ptr<ReducerEntry>> reducers;
    std::vector<std::unique_ptr<MiddlewareEntry>> middleware;
    std::unordered_map<const ListenerEntry *, std::unique_ptr<ListenerEntry>> listeners;
    /* Listeners unsubscribed from inside a callback of this store: the
     * dispatch under way may still call them (turnstate.h), so they are kept
     * until the store goes. */
    std::vector<std::unique_ptr<ListenerEntry>> retired;

    template <class Entry>
    static void erase(std::vector<std::unique_ptr<Entry>> &list, const Entry *entry) {
        for (auto it = list.begin(); it != list.end(); ++it)
            if (it->get() == entry) {
                list.erase(it);
                return;
            }
    }
};

char *reducer_trampoline(const char *slice, const ts_action *action, void *ctx) noexcept;
void listener_trampoline(ts_store *store, void *ctx) noexcept;
ts_status middleware_trampoline(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) noexcept;

template <class T>
struct is_std_function : std::false_type {};
template <class R, class... A>
struct is_std_function<std::function<R(A...)>> : std::true_type {};

/* Whether `fn` is a callable that holds nothing to call: an empty
 * std::function, a null pointer to a function or member. */
template <class F>
bool is_empty_callable(const F &fn) noexcept {
    using D = std::decay_t<F>;
    if constexpr (std::is_function_v<std::remove_reference_t<F>>) {
        return false; /* a function itself, never null */
    } else if constexpr (std::is_pointer_v<D> || std::is_member_pointer_v<D> || is_std_function<D>::value) {
        return fn == nullptr;
    } else {
        return false;
    }
}

/* Wraps a callable taking a StoreRef, or nothing, as a listener_fn. An
 * empty one is refused here, before anything is subscribed, as the C API
 * refuses a NULL fn: argument_error. */
template <class F>
listener_fn make_listener(F &&fn) {
    if (is_empty_callable(fn)) throw argument_error("subscribe: the listener is empty");
    if constexpr (std::is_invocable_v<F &, StoreRef>) {
        return listener_fn(std::forward<F>(fn));
    } else {
        static_assert(std::is_invocable_v<F &>, "a listener takes a turnstate::StoreRef, or nothing");
        return [f = std::forward<F>(fn)](auto &&) mutable { f(); };
    }
}

} // namespace detail

/* ---- Subscriptions ------------------------------------------------------ */

/* A subscription (ts_store_subscribe): move-only; destroying it or calling
 * reset() unsubscribes and frees the listener (later, with the store, when
 * that happens inside one of the store's callbacks, since the dispatch under
 * way may still call it). Safe to destroy after its store: it then does
 * nothing. Not thread-safe itself: one handle, one thread at a time. */
class Subscription {
public:
    Subscription() noexcept = default;
    Subscription(Subscription &&other) noexcept
        : core_(std::move(other.core_)), entry_(std::exchange(other.entry_, nullptr)),
          token_(std::exchange(other.token_, 0)) {}
    Subscription &operator=(Subscription &&other) noexcept {
        if (this != &other) {
            reset();
            core_ = std::move(other.core_);
            entry_ = std::exchange(other.entry_, nullptr);
            token_ = std::exchange(other.token_, 0);
        }
        return *this;
    }
    Subscription(const Subscription &) = delete;
    Subscription &operator=(const Subscription &) = delete;
    ~Subscription() { reset(); }

    /* Unsubscribes (ts_store_unsubscribe); does nothing when the handle is
     * empty or its store is gone. Never throws: a failure to unsubscribe
     * (TS_E_REENTRANT, from inside a reducer) leaves the listener subscribed
     * until the store is destroyed. */
    void reset() noexcept {
        if (entry_ == nullptr) return;
        const detail::ListenerEntry *entry = std::exchange(entry_, nullptr);
        uint64_t token = std::exchange(token_, 0);
        std::shared_ptr<detail::Core> core = core_.lock();
        core_.reset();
        if (!core || core->closed) return;
        if (ts_store_unsubscribe(core->store, token) != TS_OK) return;
        std::lock_guard<std::mutex> lock(core->mutex);
        auto it = core->listeners.find(entry);
        if (it == core->listeners.end()) return;
        if (detail::in_callback_of(core.get())) {
            // No allocation may fail here (noexcept): the entry stays in
            // `listeners` if `retired` cannot grow.
            try {
                core->retired.push_back(std::move(it->second));
                core->listeners.erase(it);
            } catch (...) {
            }
        } else {
            core->listeners.erase(it);
        }
    }
    /* Lets go of the handle without unsubscribing: the listener stays until
     * the store is destroyed. Returns the token (for ts_store_unsubscribe). */
    uint64_t release() noexcept {
        core_.reset();
        entry_ = nullptr;
        return std::exchange(token_, 0);
    }
    /* The subscription's token, 0 for an empty handle. */
    uint64_t token() const noexcept { return token_; }
    /* Whether the handle holds a subscription (it may have been ended by the
     * store's destruction since). */
    explicit operator bool() const noexcept { return entry_ != nullptr; }

private:
    friend class StoreRef;
    Subscription(std::weak_ptr<detail::Core> core, const detail::ListenerEntry *entry, uint64_t token) noexcept
        : core_(std::move(core)), entry_(entry), token_(token) {}

    std::weak_ptr<detail::Core> core_;
    const detail::ListenerEntry *entry_ = nullptr;
    uint64_t token_ = 0;
};

/* ---- Stores ------------------------------------------------------------- */

/* A non-owning view of a Store: every operation, no ownership. Copyable;
 * valid while its Store exists (a listener receives one). All member
 * functions may be called from any thread; they throw turnstate::error
 * (the status's subclass) on failure, or the exception a callback threw. */
class StoreRef {
public:
    /* Dispatches `action_json` (ts_store_dispatch): atomic; throws
     * json_error, not_action_error, reducer_error, reentrant_error (from
     * inside a reducer), a middleware's status, or a callback's exception.
     * A swallowed action returns normally. */
    void dispatch(zstring action_json) const {
        ts_store *s = handle();
        detail::CallScope scope;
        scope.finish(ts_store_dispatch(s, action_json.c_str()));
    }

    /* The whole state as minified JSON text. */
    std::string state() const { return get(""); }

    /* The value at the RFC 6901 JSON Pointer `pointer` ("" is the whole
     * state) as minified JSON text. Throws not_found_error when there is no
     * value there, argument_error for a malformed pointer. */
    std::string get(zstring pointer) const {
        ts_store *s = handle();
        char *out = nullptr;
        detail::CallScope scope;
        scope.finish(ts_store_get_state(s, pointer.c_str(), &out));
        return take(out);
    }

    /* As get(), but nullopt where there is no value. */
    std::optional<std::string> find(zstring pointer) const {
        ts_store *s = handle();
        char *out = nullptr;
        detail::CallScope scope;
        ts_status status = ts_store_get_state(s, pointer.c_str(), &out);
        if (status == TS_E_NOT_FOUND) return std::nullopt;
        scope.finish(status);
        return take(out);
    }

    /* Adds the reducer that owns the top-level key `key`
     * (ts_store_add_reducer); if the state has no such key, calls it at once
     * with slice nullopt for the first value. The callable is kept until the
     * store is destroyed. Throws argument_error (key taken), reducer_error
     * (the init call failed) or the init call's own exception; nothing is
     * added then. */
    void add_reducer(zstring key, reducer_fn fn) const {
        install_reducer(ts_store_add_reducer, "add_reducer", key, std::move(fn));
    }

    /* Replaces the reducer that owns `key` with `fn`, keeping the state
     * (ts_store_replace_reducer: hot reload), then dispatches
     * {"type": "@@turnstate/replace"} through the middleware to every reducer
     * and the listeners. Atomic: if that action fails, the old reducer is
     * put back and the failure thrown (not_found_error when `key` has no
     * reducer, or the replace action's error or callback exception). Both
     * callables are kept until the store is destroyed (a dispatch under way
     * on another thread may still be inside the old one). */
    void replace_reducer(zstring key, reducer_fn fn) const {
        install_reducer(ts_store_replace_reducer, "replace_reducer", key, std::move(fn));
    }

    /* Removes the reducer that owns `key` (ts_store_remove_reducer): its
     * slice stays in the state, and {"type": "@@turnstate/replace"} goes to
     * the remaining reducers. Throws not_found_error when `key` has no
     * reducer, or the replace action's error. */
    void remove_reducer(zstring key) const {
        ts_store *s = handle();
        detail::CallScope scope;
        scope.finish(ts_store_remove_reducer(s, key.c_str()));
    }

    /* Removes the middleware added last under `name`
     * (ts_store_remove_middleware); dispatches under way finish with it.
     * Throws not_found_error when no middleware has that name. */
    void remove_middleware(zstring name) const {
        ts_store *s = handle();
        detail::CallScope scope;
        scope.finish(ts_store_remove_middleware(s, name.c_str()));
    }

    /* Subscribes `fn` (a callable taking a StoreRef, or nothing) to every
     * dispatch that reaches the reducers (ts_store_subscribe with no
     * pointer). The subscription lasts as long as the returned handle. */
    template <class F>
    [[nodiscard]] Subscription subscribe(F &&fn) const {
        return subscribe_at(nullptr, detail::make_listener(std::forward<F>(fn)));
    }

    /* Subscribes `fn` to changes of the value at `pointer` ("" is the whole
     * state): it runs only after a dispatch that changed that value. Throws
     * argument_error for a malformed pointer. */
    template <class F>
    [[nodiscard]] Subscription subscribe(zstring pointer, F &&fn) const {
        return subscribe_at(pointer.c_str(), detail::make_listener(std::forward<F>(fn)));
    }

    /* Appends a middleware to the chain (ts_store_add_middleware); kept until
     * the store is destroyed. */
    void add_middleware(zstring name, middleware_fn fn) const {
        if (!fn) throw argument_error("add_middleware: the middleware is empty");
        detail::Core *c = core();
        auto entry = std::make_unique<detail::MiddlewareEntry>(detail::MiddlewareEntry{c, std::move(fn)});
        detail::MiddlewareEntry *raw = entry.get();
        {
            std::lock_guard<std::mutex> lock(c->mutex);
            c->middleware.push_back(std::move(entry));
        }
        ts_status status = ts_store_add_middleware(c->store, name.c_str(), detail::middleware_trampoline, raw);
        if (status != TS_OK) {
            std::string message = ts_last_error();
            {
                std::lock_guard<std::mutex> lock(c->mutex);
                detail::Core::erase(c->middleware, raw);
            }
            throw_error(status, message);
        }
    }

    /* Loads the plugin at `path` with its config (JSON text; nullptr means
     * {}) into the end of the chain (ts_store_load_plugin: the trust rules
     * and every error are there): not_found_error, plugin_error, abi_error,
     * json_error, io_error, or an exception that a callback threw during the
     * plugin's create() (a journal restoring the state calls listeners). */
    void load_plugin(zstring path, zstring config_json = static_cast<const char *>(nullptr)) const {
        ts_store *s = handle();
        detail::CallScope scope;
        scope.finish(ts_store_load_plugin(s, path.c_str(), config_json.c_str()));
    }

    /* Loads every *.so of the folder `dir`, all or nothing
     * (ts_store_load_plugins). */
    void load_plugins(zstring dir) const {
        ts_store *s = handle();
        detail::CallScope scope;
        scope.finish(ts_store_load_plugins(s, dir.c_str()));
    }

    /* The C store, for the functions of turnstate.h. Do not destroy it.
     * Throws argument_error for a moved-from Store, and store_gone_error (as
     * every other call here) through the StoreRef of a store that was
     * destroyed from inside one of its callbacks (a later callback of the
     * same dispatch). */
    ts_store *handle() const { return core()->store; }

protected:
    StoreRef() noexcept = default;
    explicit StoreRef(detail::Core *core) noexcept : core_(core) {}
    friend void detail::listener_trampoline(ts_store *, void *) noexcept;
    friend class Api;

    detail::Core *core() const {
        if (core_ == nullptr) throw argument_error("turnstate::Store: this store was moved from");
        if (core_->closed)
            throw store_gone_error("turnstate::Store: the store was destroyed (from inside one of its callbacks); "
                                   "the dispatch under way finishes, and it takes no new calls");
        return core_;
    }

    detail::Core *core_ = nullptr;

private:
    static std::string take(char *text) {
        struct freer {
            void operator()(char *p) const noexcept { ts_free(p); }
        };
        std::unique_ptr<char, freer> owned(text);
        return std::string(text != nullptr ? text : "");
    }

    /* Adds or replaces a reducer through `install` (ts_store_add_reducer or
     * ts_store_replace_reducer): the callable is kept until the store is
     * destroyed; on failure it is dropped and the callback's exception, or
     * the status, thrown. */
    using reducer_installer = ts_status (*)(ts_store *, const char *, ts_reducer_fn, void *);
    void install_reducer(reducer_installer install, const char *what, const zstring &key, reducer_fn fn) const {
        if (!fn) throw argument_error(std::string(what) + ": the reducer is empty");
        detail::Core *c = core();
        auto entry = std::make_unique<detail::ReducerEntry>(detail::ReducerEntry{c, std::move(fn)});
        detail::ReducerEntry *raw = entry.get();
        {
            std::lock_guard<std::mutex> lock(c->mutex);
            c->reducers.push_back(std::move(entry));
        }
        detail::CallScope scope;
        ts_status status = install(c->store, key.c_str(), detail::reducer_trampoline, raw);
        if (status != TS_OK) {
            std::exception_ptr e = scope.take();
            std::string message = ts_last_error();
            {
                std::lock_guard<std::mutex> lock(c->mutex);
                detail::Core::erase(c->reducers, raw);
            }
            if (e) std::rethrow_exception(e);
            throw_error(status, message);
        }
        scope.finish(status);
    }

    Subscription subscribe_at(const char *pointer, listener_fn fn) const {
        if (!fn) throw argument_error("subscribe: the listener is empty");
        detail::Core *c = core();
        auto entry = std::make_unique<detail::ListenerEntry>(detail::ListenerEntry{c, std::move(fn)});
        const detail::ListenerEntry *raw = entry.get();
        {
            std::lock_guard<std::mutex> lock(c->mutex);
            c->listeners.emplace(raw, std::move(entry));
        }
        uint64_t token = 0;
        ts_status status = ts_store_subscribe(c->store, pointer, detail::listener_trampoline,
                                              const_cast<detail::ListenerEntry *>(raw), &token);
        if (status != TS_OK) {
            std::string message = ts_last_error();
            {
                std::lock_guard<std::mutex> lock(c->mutex);
                c->listeners.erase(raw);
            }
            throw_error(status, message);
        }
        return Subscription(c->weak_from_this(), raw, token);
    }
};

/* A store (ts_store): move-only; the destructor destroys it
 * (ts_store_destroy: dispatches under way on other threads finish first,
 * the plugins' destroy() run) and then frees its callbacks. A moved-from
 * Store is empty: only assignment, destruction and operator bool; other
 * calls throw argument_error. */
class Store : public StoreRef {
public:
    /* A store whose state is {}. */
    Store() : Store(static_cast<const char *>(nullptr)) {}

    /* A store whose state is `initial_state_json`, a JSON object. Throws
     * json_error (invalid JSON, not an object, a key twice), nomem_error. */
    explicit Store(zstring initial_state_json) : owner_(std::make_shared<detail::Core>()) {
        ts_status status = ts_store_create(initial_state_json.c_str(), &owner_->store);
        if (status != TS_OK) throw_error(status, ts_last_error());
        core_ = owner_.get();
    }

    Store(Store &&other) noexcept : StoreRef(std::exchange(other.core_, nullptr)), owner_(std::move(other.owner_)) {}
    Store &operator=(Store &&other) noexcept {
        if (this != &other) {
            destroy();
            core_ = std::exchange(other.core_, nullptr);
            owner_ = std::move(other.owner_);
        }
        return *this;
    }
    Store(const Store &) = delete;
    Store &operator=(const Store &) = delete;
    ~Store() { destroy(); }

    /* Whether this Store holds a store (false once moved from). */
    explicit operator bool() const noexcept { return core_ != nullptr; }

    /* A non-owning view of this store. */
    StoreRef ref() const noexcept { return *this; }

private:
    void destroy() noexcept {
        if (!owner_) return;
        std::shared_ptr<detail::Core> core = std::move(owner_);
        core_ = nullptr;
        core->closed = true;
        ts_store_destroy(core->store);
        core->store = nullptr;
        if (detail::in_callback_of(core.get())) {
            // The dispatch under way still calls its remaining callbacks:
            // free them when this thread's outermost call returns.
            try {
                detail::thread_state().deferred.push_back(std::move(core));
            } catch (...) {
                // No memory to defer: keep the callbacks (a leak, not a crash).
                new std::shared_ptr<detail::Core>(std::move(core));
            }
        }
    }

    std::shared_ptr<detail::Core> owner_;
};

/* ---- Middleware --------------------------------------------------------- */

/* The store as a middleware sees it (ts_store_api): copyable, and usable
 * from any thread until the store is destroyed (then its calls throw
 * store_gone_error, and after the Store's destructor returned it must not be
 * used). */
class Api {
public:
    explicit Api(const ts_store_api *api) noexcept : api_(api) {}

    /* Dispatches from the top of the chain (as StoreRef::dispatch). */
    void dispatch(zstring action_json) const {
        detail::CallScope scope;
        scope.finish(api_->dispatch(action_json.c_str()));
    }
    /* The whole state, as StoreRef::state. */
    std::string state() const { return get(""); }
    /* The value at `pointer`, as StoreRef::get. */
    std::string get(zstring pointer) const {
        char *out = nullptr;
        detail::CallScope scope;
        ts_status status = api_->get_state(pointer.c_str(), &out);
        std::string text = out != nullptr ? out : "";
        api_->free(out);
        scope.finish(status);
        return text;
    }
    /* Replaces the whole state with `state_json` without middleware or
     * reducers, then calls the listeners (ts_store_api.replace_state). */
    void replace_state(zstring state_json) const {
        detail::CallScope scope;
        scope.finish(api_->replace_state(state_json.c_str()));
    }
    /* The C table. */
    const ts_store_api *c_api() const noexcept { return api_; }

private:
    const ts_store_api *api_;
};

/* A middleware's next (ts_next_fn): valid only during the middleware call it
 * was given to, on that thread. */
class Next {
public:
    Next(ts_next_fn next, const ts_action *action) noexcept : next_(next), action_(action) {}
    Next(const Next &) = delete;
    Next &operator=(const Next &) = delete;

    /* Passes the action received on, unchanged (no new parse). Throws what
     * the rest of the chain threw, or the error of its status; a second call
     * throws misuse_error. */
    void operator()() { call(action_->json); }
    /* Passes `action_json` on instead (a tagged action). */
    void operator()(zstring action_json) { call(action_json.c_str()); }

private:
    friend ts_status detail::middleware_trampoline(const ts_store_api *, ts_next_fn, const ts_action *, void *) noexcept;

    void call(const char *json) {
        detail::CallScope scope;
        ts_status status = next_(json);
        if (status == TS_OK) {
            scope.finish(status);
            return;
        }
        std::exception_ptr e = scope.take();
        if (!e) {
            try {
                throw_error(status, ts_last_error());
            } catch (...) {
                e = std::current_exception();
            }
        }
        status_ = status;
        thrown_ = e;
        std::rethrow_exception(e);
    }

    ts_next_fn next_;
    const ts_action *action_;
    ts_status status_ = TS_OK;
    std::exception_ptr thrown_;
};

/* ---- Trampolines (C calls these; nothing unwinds out of them) ----------- */

namespace detail {

inline char *reducer_trampoline(const char *slice, const ts_action *action, void *ctx) noexcept {
    auto *entry = static_cast<ReducerEntry *>(ctx);
    try {
        CallbackScope in(entry->core);
        std::optional<std::string_view> slice_view;
        if (slice != nullptr) slice_view = std::string_view(slice);
        std::optional<std::string> result = entry->fn(slice_view, Action(*action));
        if (!result) return nullptr;
        auto *out = static_cast<char *>(ts_alloc(result->size() + 1));
        if (out == nullptr) throw std::bad_alloc();
        std::memcpy(out, result->data(), result->size());
        out[result->size()] = '\0';
        return out;
    } catch (...) {
        record(std::current_exception());
        ts_reducer_fail(describe());
        return nullptr;
    }
}

inline void listener_trampoline(ts_store *, void *ctx) noexcept {
    auto *entry = static_cast<ListenerEntry *>(ctx);
    try {
        CallbackScope in(entry->core);
        entry->fn(StoreRef(entry->core));
    } catch (...) {
        record(std::current_exception());
    }
}

inline ts_status middleware_trampoline(const ts_store_api *api, ts_next_fn next, const ts_action *action,
                                       void *ctx) noexcept {
    auto *entry = static_cast<MiddlewareEntry *>(ctx);
    Next n(next, action);
    try {
        CallbackScope in(entry->core);
        Api store(api);
        entry->fn(store, n, Action(*action));
        return TS_OK;
    } catch (...) {
        std::exception_ptr e = std::current_exception();
        record(e);
        // The rest of the chain's failure, let through: its status and
        // message are the library's already.
        if (n.thrown_ && e == n.thrown_) return n.status_;
        ts_status status = TS_E_REJECTED;
        try {
            throw;
        } catch (const error &x) {
            if (x.status() < 0) status = x.status();
        } catch (...) {
        }
        return api->fail(status, describe());
    }
}

} // namespace detail

} // namespace turnstate

#endif /* __cplusplus */
#endif /* TURNSTATE_HPP */
