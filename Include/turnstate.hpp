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
 * - Reducers for named action types that answer with a change
 *   (add_reducer_for, reducer_for_fn, turnstate::patch, turnstate::reduced;
 *   add_patch_reducer, patch_reducer_fn, whose slice is a json_ref, for big
 *   slices) and the JSON getters (json_text, json_ref, json_doc): see "Reading
 *   JSON" and "Answering with a change" below.
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
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <forward_list>
#include <functional>
#include <iterator>
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

/* ---- Reading JSON ------------------------------------------------------- */

/* The getters of turnstate.h (ts_json_at, ts_json_find, ts_json_int, ...)
 * as value types, so that a reducer or middleware reads its slice and its
 * action's payload without a parser of its own and without copies:
 *
 *     int64_t id = action.payload_at("/id").as_int64();
 *     for (turnstate::json_ref item : slice->at("/items"))
 *         if (item.at("/id").as_int64() == id) ...
 *
 * - json_text: a whole JSON text that the library handed to a callback (a
 *   reducer's slice, an action's payload): a pointer, nothing more, so it
 *   costs nothing however large the text; at() reads through the index the
 *   store keeps of a slice (turnstate.h, "Reading JSON").
 * - json_doc: JSON text of your own (a state read with get(), a reply from
 *   elsewhere), checked once when it is made and owned.
 * - json_ref: a value inside one of them. It points into the text: valid as
 *   long as that text is (a callback's texts: during the callback; a
 *   json_doc's: while the json_doc lives), like the string_views it gives.
 * Failures throw as everywhere in this header: argument_error (a value of
 * another kind than asked for, a number out of the type's range, a
 * malformed pointer), not_found_error (no value at the pointer), json_error
 * (a json_doc of text that is not JSON), with the library's message. */

/* The kind of a JSON value. */
enum class json_kind { null, boolean, number, string, array, object };

class json_ref;
class json_text;
class json_doc;

namespace detail {

/* Where the unescaped copies of strings that have escapes are kept, so that
 * as_string() can return a std::string_view that lives as long as the text
 * the string was found in: the thread's arena for a callback's texts
 * (emptied when the thread's outermost callback returns), a json_doc's own
 * for its text. */
class string_arena {
public:
    std::string_view keep(const char *text, size_t length) {
        std::lock_guard<std::mutex> lock(mutex_);
        strings_.emplace_front(text, length);
        return strings_.front();
    }
    void clear() noexcept {
        std::lock_guard<std::mutex> lock(mutex_);
        strings_.clear();
    }

private:
    std::mutex mutex_;
    std::forward_list<std::string> strings_;
};

/* The calling thread's arena (defined with the thread's state below). */
string_arena &callback_arena() noexcept;

/* The C trampoline of Store::add_patch_reducer (defined below). */
char *patch_reducer_trampoline(const ts_json *slice, const ts_action *action, void *ctx) noexcept;

inline void check_json(ts_status status) {
    if (status != TS_OK) throw_error(status, ts_last_error());
}

/* What a getter of turnstate.h that answers one value (ts_json_int,
 * ts_json_count, ...) reads from value; its error thrown as check_json does. */
template <class T>
T json_get(const ts_json *value, ts_status (*getter)(const ts_json *, T *)) {
    T out = 0;
    check_json(getter(value, &out));
    return out;
}

} // namespace detail

/* One member of an object, as json_ref::members() gives them:
 *     for (auto [key, value] : obj.members()) ... */
struct json_member;

/* A value inside a JSON text (ts_json): no copy; copy it freely. Valid as
 * long as the text it points into (see above). */
class json_ref {
public:
    /* The value's kind. */
    json_kind kind() const noexcept {
        switch (v_.kind) {
        case TS_JSON_NULL: return json_kind::null;
        case TS_JSON_FALSE:
        case TS_JSON_TRUE: return json_kind::boolean;
        case TS_JSON_NUMBER: return json_kind::number;
        case TS_JSON_STRING: return json_kind::string;
        case TS_JSON_ARRAY: return json_kind::array;
        default: return json_kind::object;
        }
    }

    /* The value at the RFC 6901 JSON Pointer `pointer` below this one (""
     * is this value; ts_json_find: the text is not checked again). Throws
     * not_found_error (the message names the missing token and the path up
     * to it, relative to this value), argument_error (a malformed pointer). */
    json_ref at(zstring pointer) const {
        json_ref out(arena_);
        detail::check_json(ts_json_find(&v_, pointer.c_str(), &out.v_));
        return out;
    }

    /* As at(), but std::nullopt where there is no value. */
    std::optional<json_ref> find(zstring pointer) const {
        json_ref out(arena_);
        ts_status status = ts_json_find(&v_, pointer.c_str(), &out.v_);
        if (status == TS_E_NOT_FOUND) return std::nullopt;
        detail::check_json(status);
        return out;
    }

    /* The integer the value holds: a number whose exact value is an integer
     * (42, -0, 1.0, 1e2) within int64_t; else argument_error (ts_json_int). */
    int64_t as_int64() const {
        return detail::json_get(&v_, ts_json_int);
    }
    /* As as_int64(), within uint64_t (ts_json_uint). */
    uint64_t as_uint64() const {
        return detail::json_get(&v_, ts_json_uint);
    }
    /* The double nearest to the number (correctly rounded); a number too
     * large for a double is argument_error, never an infinity. */
    double as_double() const {
        return detail::json_get(&v_, ts_json_double);
    }
    /* true or false; another kind is argument_error. */
    bool as_bool() const {
        return detail::json_get(&v_, ts_json_bool) != 0;
    }
    /* Whether the value is null. */
    bool is_null() const noexcept { return ts_json_is_null(&v_) != 0; }

    /* The content of a string, unescaped (UTF-8; may hold NUL characters,
     * from \u0000): a view into the text when the string has no escapes,
     * else into an unescaped copy kept as long as the text is (for a
     * callback's texts, until the thread's outermost callback returns).
     * Another kind is argument_error. */
    std::string_view as_string() const {
        const char *out = nullptr;
        size_t length = 0;
        detail::check_json(ts_json_string(&v_, &out, &length));
        if (out >= v_.text && out + length <= v_.text + v_.length) return std::string_view(out, length);
        return arena_->keep(out, length); /* the library's copy lasts until its next call: ours now */
    }

    /* The number of elements of an array or members of an object; another
     * kind is argument_error (ts_json_count). */
    size_t size() const {
        return detail::json_get(&v_, ts_json_count);
    }
    /* size() == 0. */
    bool empty() const { return size() == 0; }

    /* The value's JSON text where it is (minified in the library's texts).
     * A split value (split(): a big slice of a patch reducer, or one of its
     * big arrays and objects) has no text of its own: argument_error then;
     * text() answers std::nullopt instead, to_json() joins it. */
    std::string_view json() const {
        if (v_.text == nullptr)
            throw argument_error(std::string("json_ref::json: ") + kind_name() +
                                 " that is split (a big slice of a patch reducer) has no text; use to_json()");
        return std::string_view(v_.text, v_.length);
    }
    /* As json(), but std::nullopt for a split value. */
    std::optional<std::string_view> text() const noexcept {
        if (v_.text == nullptr) return std::nullopt;
        return std::string_view(v_.text, v_.length);
    }
    /* Whether the value is split: kept by the store as a tree of texts (the
     * slice of a patch reducer of 64 KiB or more, and its arrays and objects
     * of 4 KiB or more; turnstate.h, "Patch reducers"). Read it with the
     * getters as any value (at(), find(), size(), iteration); it has no
     * text (json() throws). */
    bool split() const noexcept { return v_.text == nullptr; }
    /* A copy of the value's JSON text: json() when it has one, else joined
     * from its children (costs its size). */
    std::string to_json() const {
        std::string out;
        out.reserve(v_.length);
        append_json(out);
        return out;
    }
    /* The C view, for the functions of turnstate.h. */
    const ts_json &c_json() const noexcept { return v_; }

    /* Iterates the elements of an array, or the values of an object's
     * members (the iterator's key() gives their keys), in order:
     * ts_json_next. An input iterator whose operator* is a json_ref. */
    class iterator;
    /* The first child; argument_error for a value that is not an array or
     * an object. */
    iterator begin() const;
    iterator end() const noexcept;

    /* The members of an object as json_member {key, value}; argument_error
     * for another kind. */
    class member_range;
    member_range members() const;

private:
    friend class json_text;
    friend class json_doc;
    friend char *detail::patch_reducer_trampoline(const ts_json *, const ts_action *, void *) noexcept;
    explicit json_ref(detail::string_arena *arena = nullptr) noexcept : v_(), arena_(arena) {}
    void append_json(std::string &out) const;

    const char *kind_name() const noexcept {
        switch (kind()) {
        case json_kind::null: return "null";
        case json_kind::boolean: return "a boolean";
        case json_kind::number: return "a number";
        case json_kind::string: return "a string";
        case json_kind::array: return "an array";
        default: return "an object";
        }
    }

    ts_json v_;
    detail::string_arena *arena_;
};

class json_ref::iterator {
public:
    using iterator_category = std::input_iterator_tag;
    using value_type = json_ref;
    using difference_type = std::ptrdiff_t;
    using pointer = const json_ref *;
    using reference = const json_ref &;

    iterator() noexcept = default;
    reference operator*() const noexcept { return value_; }
    pointer operator->() const noexcept { return &value_; }
    /* An object member's key, unescaped (as as_string()); "" in an array. */
    std::string_view key() const { return key_.v_.text != nullptr ? key_.as_string() : std::string_view(); }
    iterator &operator++() {
        step();
        return *this;
    }
    iterator operator++(int) {
        iterator before = *this;
        step();
        return before;
    }
    friend bool operator==(const iterator &a, const iterator &b) noexcept {
        return a.done_ == b.done_ && (a.done_ || a.cursor_ == b.cursor_);
    }
    friend bool operator!=(const iterator &a, const iterator &b) noexcept { return !(a == b); }

private:
    friend class json_ref;
    explicit iterator(const json_ref &container) : container_(container.v_), key_(container.arena_),
                                                   value_(container.arena_), done_(false) {
        step();
    }
    void step() {
        ts_status status = ts_json_next(&container_, &cursor_, &key_.v_, &value_.v_);
        if (status == TS_E_NOT_FOUND) {
            done_ = true;
            return;
        }
        detail::check_json(status);
    }
    ts_json container_{};
    size_t cursor_ = 0;
    json_ref key_, value_;
    bool done_ = true;
};

inline json_ref::iterator json_ref::begin() const {
    if (v_.kind != TS_JSON_ARRAY && v_.kind != TS_JSON_OBJECT)
        throw argument_error(std::string("json_ref: expected an array or an object, found ") + kind_name());
    return iterator(*this);
}
inline json_ref::iterator json_ref::end() const noexcept { return iterator(); }

struct json_member {
    std::string_view key;
    json_ref value;
};

class json_ref::member_range {
public:
    class iterator {
    public:
        using iterator_category = std::input_iterator_tag;
        using value_type = json_member;
        using difference_type = std::ptrdiff_t;
        using pointer = const json_member *;
        using reference = json_member;

        json_member operator*() const { return json_member{it_.key(), *it_}; }
        iterator &operator++() {
            ++it_;
            return *this;
        }
        friend bool operator==(const iterator &a, const iterator &b) noexcept { return a.it_ == b.it_; }
        friend bool operator!=(const iterator &a, const iterator &b) noexcept { return a.it_ != b.it_; }

    private:
        friend class member_range;
        explicit iterator(json_ref::iterator it) noexcept : it_(it) {}
        json_ref::iterator it_;
    };
    iterator begin() const { return iterator(object_.begin()); }
    iterator end() const noexcept { return iterator(json_ref::iterator()); }

private:
    friend class json_ref;
    explicit member_range(const json_ref &object) noexcept : object_(object) {}
    json_ref object_;
};

inline void json_ref::append_json(std::string &out) const {
    if (v_.text != nullptr) {
        out.append(v_.text, v_.length);
        return;
    }
    /* Split: an array or an object whose children each have text or are
     * split in turn; the keys of a split object have their text. */
    bool object = v_.kind == TS_JSON_OBJECT;
    out += object ? '{' : '[';
    bool first = true;
    for (iterator it = begin(); it != end(); ++it) {
        if (!first) out += ',';
        first = false;
        if (object) {
            out.append(it.key_.v_.text, it.key_.v_.length);
            out += ':';
        }
        it->append_json(out);
    }
    out += object ? '}' : ']';
}

inline json_ref::member_range json_ref::members() const {
    if (v_.kind != TS_JSON_OBJECT)
        throw argument_error(std::string("json_ref: expected an object, found ") + kind_name());
    return member_range(*this);
}

/* A whole JSON text that the library handed to a callback: a reducer's
 * slice, an action's payload (Action::payload_json()). Valid during the
 * callback. Only a pointer: handing one over costs nothing however large
 * the text; view() measures it (its length). */
class json_text {
public:
    /* The value at `pointer` ("" is the whole text; ts_json_at). Throws
     * not_found_error, argument_error. */
    json_ref at(zstring pointer) const {
        json_ref out(arena_);
        detail::check_json(ts_json_at(text_, pointer.c_str(), &out.v_));
        return out;
    }
    /* As at(), but std::nullopt where there is no value. */
    std::optional<json_ref> find(zstring pointer) const {
        json_ref out(arena_);
        ts_status status = ts_json_at(text_, pointer.c_str(), &out.v_);
        if (status == TS_E_NOT_FOUND) return std::nullopt;
        detail::check_json(status);
        return out;
    }
    /* The whole text as a value. */
    json_ref root() const { return at(static_cast<const char *>(nullptr)); }
    /* Iterates the root, as json_ref does (for a slice that is an array). */
    json_ref::iterator begin() const { return root().begin(); }
    json_ref::iterator end() const noexcept { return json_ref::iterator(); }

    /* The NUL-terminated text. */
    const char *c_str() const noexcept { return text_; }
    /* The text (measured: costs its length). */
    std::string_view view() const { return std::string_view(text_); }
    /* The same, so that a json_text goes where a std::string_view went (a
     * reducer written for add_reducer takes std::optional<std::string_view>). */
    operator std::string_view() const { return view(); }
    /* A copy of the text. */
    std::string str() const { return std::string(text_); }

    /* A text of the library's that the calling thread's callback received
     * (not for texts of your own: use json_doc). */
    explicit json_text(const char *text) noexcept : text_(text), arena_(&detail::callback_arena()) {}

private:
    const char *text_;
    detail::string_arena *arena_;
};

/* JSON text of your own, copied, checked once (strictly, as the library
 * checks every text) and read with the getters. Move-only; values found in
 * it stay valid while it lives (moves included). Each look-up from the top
 * (at(), find(), root()) checks the text again: look up a container once
 * and go on from there with json_ref::at(), which does not. */
class json_doc {
public:
    /* Throws json_error (with the library's message: which byte) for text
     * that is not JSON, argument_error for text with a NUL byte. */
    explicit json_doc(std::string text) : data_(std::make_unique<data>()) {
        if (text.find('\0') != std::string::npos) throw argument_error("json_doc: the text contains a NUL byte");
        data_->text = std::move(text);
        ts_json root;
        detail::check_json(ts_json_at(data_->text.c_str(), nullptr, &root));
    }
    json_ref at(zstring pointer) const {
        json_ref out(&data_->arena);
        detail::check_json(ts_json_at(data_->text.c_str(), pointer.c_str(), &out.v_));
        return out;
    }
    std::optional<json_ref> find(zstring pointer) const {
        json_ref out(&data_->arena);
        ts_status status = ts_json_at(data_->text.c_str(), pointer.c_str(), &out.v_);
        if (status == TS_E_NOT_FOUND) return std::nullopt;
        detail::check_json(status);
        return out;
    }
    json_ref root() const { return at(static_cast<const char *>(nullptr)); }
    json_ref::iterator begin() const { return root().begin(); }
    json_ref::iterator end() const noexcept { return json_ref::iterator(); }
    /* The text as it was given. */
    const std::string &str() const noexcept { return data_->text; }

private:
    struct data {
        std::string text;
        detail::string_arena arena;
    };
    std::unique_ptr<data> data_;
};

/* ---- Answering with a change -------------------------------------------- */

/* An RFC 6902 JSON Patch, built an operation at a time: paths are JSON
 * Pointers relative to the reducer's slice ("" is the slice, "/-" the end of
 * an array); values are JSON text, given as it is (the store checks it with
 * the rest of the patch when it applies it: ts_reducer_patch).
 *     return turnstate::patch().replace("/items/3/done", "true").add("/items/-", item_json);
 * A patch that does not apply (a path that names nothing, a "test" that
 * does not hold, text that is not JSON) fails the dispatch with
 * reducer_error and the library's message, naming the operation and its
 * path; the state is unchanged. */
class patch {
public:
    /* No operation (applied, it changes nothing). */
    patch() : json_("[]") {}
    /* A patch given as JSON text (an array of operations), used as it is;
     * operations added afterwards go into that array. */
    static patch from_json(std::string json) {
        patch p;
        p.json_ = std::move(json);
        return p;
    }

    /* {"op":"add","path":path,"value":value_json}. */
    patch &add(std::string_view path, std::string_view value_json) & { return op("add", "path", path, nullptr, &value_json); }
    patch &&add(std::string_view path, std::string_view value_json) && { return std::move(add(path, value_json)); }
    /* {"op":"remove","path":path}. */
    patch &remove(std::string_view path) & { return op("remove", "path", path, nullptr, nullptr); }
    patch &&remove(std::string_view path) && { return std::move(remove(path)); }
    /* {"op":"replace","path":path,"value":value_json}. */
    patch &replace(std::string_view path, std::string_view value_json) & {
        return op("replace", "path", path, nullptr, &value_json);
    }
    patch &&replace(std::string_view path, std::string_view value_json) && {
        return std::move(replace(path, value_json));
    }
    /* {"op":"move","from":from,"path":path}. */
    patch &move(std::string_view from, std::string_view path) & { return op("move", "from", from, &path, nullptr); }
    patch &&move(std::string_view from, std::string_view path) && { return std::move(move(from, path)); }
    /* {"op":"copy","from":from,"path":path}. */
    patch &copy(std::string_view from, std::string_view path) & { return op("copy", "from", from, &path, nullptr); }
    patch &&copy(std::string_view from, std::string_view path) && { return std::move(copy(from, path)); }
    /* {"op":"test","path":path,"value":value_json}: the whole patch fails
     * unless the value there equals value_json (as JSON values). */
    patch &test(std::string_view path, std::string_view value_json) & {
        return op("test", "path", path, nullptr, &value_json);
    }
    patch &&test(std::string_view path, std::string_view value_json) && { return std::move(test(path, value_json)); }

    /* The patch as JSON text. */
    const std::string &json() const noexcept { return json_; }

private:
    friend class reduced;
    patch &op(const char *name, const char *first, std::string_view first_value, const std::string_view *path,
              const std::string_view *value) {
        if (!json_.empty() && json_.back() == ']') json_.pop_back();
        size_t last = json_.find_last_not_of(" \t\r\n");
        if (last == std::string::npos) {
            json_ += '[';
        } else if (json_[last] != '[') {
            json_ += ',';
        }
        json_ += "{\"op\":\"";
        json_ += name;
        json_ += "\",\"";
        json_ += first;
        json_ += "\":";
        json_ += json_string(first_value);
        if (path != nullptr) {
            json_ += ",\"path\":";
            json_ += json_string(*path);
        }
        if (value != nullptr) {
            json_ += ",\"value\":";
            json_ += *value;
        }
        json_ += "}]";
        return *this;
    }

    std::string json_;
};

/* What a reducer added with add_reducer_for answers: nothing changed (a
 * default-constructed reduced, or std::nullopt), the whole new slice (JSON
 * text: a std::string, a const char *, a std::optional<std::string> as
 * add_reducer's reducers return), or a patch. Implicit from each, so that
 * a reducer returns any of them as it is. */
class reduced {
public:
    enum class kind { unchanged, slice, patch };

    reduced() noexcept = default;
    reduced(std::nullopt_t) noexcept {}
    reduced(std::string slice_json) : kind_(kind::slice), json_(std::move(slice_json)) {}
    reduced(std::string_view slice_json) : kind_(kind::slice), json_(slice_json) {}
    /* nullptr is "unchanged", as a C reducer's NULL. */
    reduced(const char *slice_json) {
        if (slice_json != nullptr) {
            kind_ = kind::slice;
            json_ = slice_json;
        }
    }
    reduced(std::optional<std::string> slice_json) {
        if (slice_json) {
            kind_ = kind::slice;
            json_ = std::move(*slice_json);
        }
    }
    reduced(turnstate::patch change) : kind_(kind::patch), json_(std::move(change.json_)) {}

    /* Which answer this is. */
    kind what() const noexcept { return kind_; }
    /* The new slice's text, or the patch's; "" when unchanged. */
    const std::string &json() const noexcept { return json_; }

private:
    kind kind_ = kind::unchanged;
    std::string json_;
};

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

    /* The payload for the getters (std::nullopt without one), at no cost. */
    std::optional<json_text> payload_json() const noexcept {
        if (c_action->payload == nullptr) return std::nullopt;
        return json_text(c_action->payload);
    }
    /* The value at `pointer` in the payload ("" is the payload itself):
     * action.payload_at("/id").as_int64(). Throws as json_text::at;
     * not_found_error for an action without a payload. */
    json_ref payload_at(zstring pointer) const {
        if (c_action->payload == nullptr)
            throw not_found_error("the action \"" + std::string(type) + "\" has no payload");
        return json_text(c_action->payload).at(pointer.c_str());
    }
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
/* A reducer for add_reducer_for and replace_reducer_for: the slice as a
 * json_text (std::nullopt for the init call: return the first value), which
 * costs nothing to hand over however large the slice is and reads through
 * the store's index, and the action; returns a `reduced`: unchanged
 * (std::nullopt, {}), the new slice's JSON text, or a turnstate::patch. A
 * reducer written for add_reducer (taking std::optional<std::string_view>,
 * returning std::optional<std::string>) fits too. Throwing fails the
 * dispatch, as for reducer_fn. */
using reducer_for_fn = std::function<reduced(std::optional<json_text> slice, const Action &action)>;
/* A reducer for add_patch_reducer: the slice as a json_ref (std::nullopt
 * for the init call: return the first value as text), read with the
 * getters, and the action; returns a `reduced` as reducer_for_fn does (a
 * turnstate::patch is what keeps a big slice cheap). A big slice (64 KiB or
 * more) and its big arrays and objects are split() (kept by the store as a
 * tree of texts): at(), find(), size(), iteration and the typed getters read
 * them; json() throws argument_error for them (text() is std::nullopt;
 * to_json() joins them, at the cost of their size). Throwing fails the
 * dispatch, as for reducer_fn. */
using patch_reducer_fn = std::function<reduced(std::optional<json_ref> slice, const Action &action)>;
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

/* A migration (StoreRef::add_migration): the whole state of version `from`
 * as JSON text in, the state of version `from + 1` as JSON text (an object)
 * out. An exception it throws fails the step ("migration 2->3 failed:
 * what()") and comes out of the call that brought the state in. */
using migration_fn = std::function<std::string(std::string_view state_json)>;

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
    /* The unescaped strings of the callbacks' texts (json_ref::as_string),
     * emptied when the outermost callback on this thread returns. */
    string_arena arena;

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

inline string_arena &callback_arena() noexcept { return thread_state().arena; }

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
    ~CallbackScope() {
        ts_.in_callback.pop_back();
        if (ts_.in_callback.empty()) ts_.arena.clear();
    }

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
struct ReducerForEntry {
    Core *core;
    reducer_for_fn fn;
};
struct PatchReducerEntry {
    Core *core;
    patch_reducer_fn fn;
};
struct ListenerEntry {
    Core *core;
    listener_fn fn;
};
struct MiddlewareEntry {
    Core *core;
    middleware_fn fn;
};
struct MigrationEntry {
    Core *core;
    migration_fn fn;
};

/* What a Store owns besides the ts_store: its callbacks. It stays at one
 * address (the callbacks' ctx) while Store objects move. */
struct Core : std::enable_shared_from_this<Core> {
    ts_store *store = nullptr;
    std::atomic<bool> closed{false};
    std::mutex mutex; /* guards the containers below */
    std::vector<std::unique_ptr<ReducerEntry>> reducers;
    std::vector<std::unique_ptr<ReducerForEntry>> reducers_for;
    std::vector<std::unique_ptr<PatchReducerEntry>> patch_reducers;
    std::vector<std::unique_ptr<MiddlewareEntry>> middleware;
    std::vector<std::unique_ptr<MigrationEntry>> migrations;
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
char *reducer_for_trampoline(const char *slice, const ts_action *action, void *ctx) noexcept;
void listener_trampoline(ts_store *store, void *ctx) noexcept;
ts_status middleware_trampoline(const ts_store_api *api, ts_next_fn next, const ts_action *action, void *ctx) noexcept;
char *migration_trampoline(const char *state_json, void *ctx, char **error_message) noexcept;

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

    /* Adds the reducer that owns `key`, called only for the action types
     * `types` names (ts_store_add_reducer_for; Redux Toolkit's case
     * reducers), answering with a `reduced`: unchanged, the new slice, or a
     * turnstate::patch (see reducer_for_fn).
     *     store.add_reducer_for("todos", {"todos/add", "todos/edit/" "*"}, fn);
     * Each pattern is an action type, matched byte for byte, or a prefix
     * ending in "/" then "*", matching every type that starts with the
     * prefix and has at least one byte more. No pattern ({}) means every
     * action, as add_reducer. The store's own actions ("@@turnstate/init",
     * "@@turnstate/replace") reach the reducer whatever it names; for
     * another action that no pattern matches it is not called and its slice
     * stays as it is. The type matched is that of the action that reaches
     * the reducers (a middleware may have changed it). A patch that does not
     * apply fails the dispatch with reducer_error and the library's message
     * ("... returned a patch that failed for "TYPE": op 0 ("replace" at
     * "/items/7/done"): ..."), the state unchanged. Throws as add_reducer,
     * and argument_error for a pattern that is empty, has a NUL byte, or
     * has a "*" anywhere but at its end right after a "/" (the message
     * names its index); nothing is added then. */
    void add_reducer_for(zstring key, const std::vector<std::string> &types, reducer_for_fn fn) const {
        install_reducer_for(ts_store_add_reducer_for, "add_reducer_for", key, types, std::move(fn));
    }

    /* Replaces the reducer that owns `key`, as replace_reducer, with one
     * called only for `types` and answering as for add_reducer_for
     * (ts_store_replace_reducer_for). The filter is the new reducer's,
     * whatever the old one had ({}: every action); the "@@turnstate/replace"
     * action that follows reaches it either way, and if that action fails
     * the old reducer comes back with its old filter. */
    void replace_reducer_for(zstring key, const std::vector<std::string> &types, reducer_for_fn fn) const {
        install_reducer_for(ts_store_replace_reducer_for, "replace_reducer_for", key, types, std::move(fn));
    }

    /* Adds the patch reducer that owns `key` (ts_store_add_patch_reducer),
     * called only for `types` as add_reducer_for's ({}: every action): it
     * gets its slice as a json_ref instead of text, so that the store never
     * makes the text of a big slice for it, and answers with a `reduced`
     * (see patch_reducer_fn). With patches, toggling one item of a
     * 100,000-item slice costs about what it costs in a 10-item one:
     *     store.add_patch_reducer("todos", {"todos/toggle"},
     *         [](std::optional<turnstate::json_ref> slice, const turnstate::Action &action) -> turnstate::reduced {
     *             if (!slice) return "[]";
     *             std::string done = "/" + std::to_string(action.payload_at("/index").as_uint64()) + "/done";
     *             return turnstate::patch().replace(done, slice->at(done).as_bool() ? "false" : "true");
     *         });
     * Throws as add_reducer_for. replace_reducer and replace_reducer_for
     * replace it with a text reducer (the C API has no replace for patch
     * reducers). */
    void add_patch_reducer(zstring key, const std::vector<std::string> &types, patch_reducer_fn fn) const {
        if (!fn) throw argument_error("add_patch_reducer: the reducer is empty");
        std::vector<const char *> patterns = type_patterns("add_patch_reducer", types);
        detail::Core *c = core();
        keep_and_install(&detail::Core::patch_reducers, detail::PatchReducerEntry{c, std::move(fn)},
                         [&](detail::PatchReducerEntry *raw) {
                             return ts_store_add_patch_reducer(c->store, key.c_str(), patterns.data(),
                                                               detail::patch_reducer_trampoline, raw);
                         });
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

    /* Versions of the state (docs/migrations.md). Declares the version of
     * the state this store's reducers make (ts_store_set_version); set it,
     * and add the migrations, before loading the journal. */
    void set_version(uint32_t version) const {
        ts_store *s = handle();
        detail::CallScope scope;
        scope.finish(ts_store_set_version(s, version));
    }

    /* The declared version (0 when none was). */
    uint32_t version() const {
        ts_store *s = handle();
        uint32_t out = 0;
        detail::CallScope scope;
        scope.finish(ts_store_get_version(s, &out));
        return out;
    }

    /* Adds the migration from `from_version` to `from_version + 1`
     * (ts_store_add_migration); the callable is kept until the store is
     * destroyed. Throws argument_error (empty, or one from that version was
     * added already). */
    void add_migration(uint32_t from_version, migration_fn fn) const {
        if (!fn) throw argument_error("add_migration: the migration is empty");
        detail::Core *c = core();
        keep_and_install(&detail::Core::migrations, detail::MigrationEntry{c, std::move(fn)},
                         [&](detail::MigrationEntry *raw) {
                             return ts_store_add_migration(c->store, from_version, detail::migration_trampoline, raw);
                         });
    }

    /* Replaces the whole state with `state_json`, saved at `version`,
     * migrated first (ts_store_replace_state_from): all or nothing. Throws
     * argument_error (a downgrade), not_found_error (a missing step),
     * json_error, reducer_error ("migration 2->3 failed: ..."), or the
     * exception a migration threw. */
    void replace_state_from(zstring state_json, uint32_t version) const {
        ts_store *s = handle();
        detail::CallScope scope;
        scope.finish(ts_store_replace_state_from(s, state_json.c_str(), version));
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
        keep_and_install(&detail::Core::reducers, detail::ReducerEntry{c, std::move(fn)},
                         [&](detail::ReducerEntry *raw) {
                             return install(c->store, key.c_str(), detail::reducer_trampoline, raw);
                         });
    }

    /* Keeps `value` in the store's `list` (so that its callable lives as long
     * as the store), then calls install(entry): the C function that hands
     * the entry to the store. If that fails, the entry leaves the list
     * again and the callback's own exception, or the status's error, is
     * thrown. */
    template <typename Entry, typename Install>
    void keep_and_install(std::vector<std::unique_ptr<Entry>> detail::Core::*list, Entry value,
                          Install install) const {
        detail::Core *c = core();
        auto entry = std::make_unique<Entry>(std::move(value));
        Entry *raw = entry.get();
        {
            std::lock_guard<std::mutex> lock(c->mutex);
            (c->*list).push_back(std::move(entry));
        }
        detail::CallScope scope;
        ts_status status = install(raw);
        if (status != TS_OK) {
            std::exception_ptr e = scope.take();
            std::string message = ts_last_error();
            {
                std::lock_guard<std::mutex> lock(c->mutex);
                detail::Core::erase(c->*list, raw);
            }
            if (e) std::rethrow_exception(e);
            throw_error(status, message);
        }
        scope.finish(status);
    }

    /* The NULL-terminated array of patterns that ts_store_add_reducer_for
     * and its kin take, pointing into `types` (which must outlive it); a
     * type with a NUL byte is refused, naming `what`. */
    static std::vector<const char *> type_patterns(const char *what, const std::vector<std::string> &types) {
        std::vector<const char *> patterns;
        patterns.reserve(types.size() + 1);
        for (size_t i = 0; i < types.size(); ++i) {
            if (types[i].find('\0') != std::string::npos)
                throw argument_error(std::string(what) + ": types[" + std::to_string(i) + "] contains a NUL byte");
            patterns.push_back(types[i].c_str());
        }
        patterns.push_back(nullptr);
        return patterns;
    }

    using reducer_for_installer = ts_status (*)(ts_store *, const char *, const char *const *, ts_reducer_fn, void *);
    void install_reducer_for(reducer_for_installer install, const char *what, const zstring &key,
                             const std::vector<std::string> &types, reducer_for_fn fn) const {
        if (!fn) throw argument_error(std::string(what) + ": the reducer is empty");
        std::vector<const char *> patterns = type_patterns(what, types);
        detail::Core *c = core();
        keep_and_install(&detail::Core::reducers_for, detail::ReducerForEntry{c, std::move(fn)},
                         [&](detail::ReducerForEntry *raw) {
                             return install(c->store, key.c_str(), patterns.data(), detail::reducer_for_trampoline, raw);
                         });
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

/* A reducer's answer, handed to the store: NULL (unchanged, or after
 * ts_reducer_patch) or the new slice in ts_alloc() memory. */
inline char *hand_over(const reduced &result) {
    switch (result.what()) {
    case reduced::kind::unchanged: return nullptr;
    case reduced::kind::patch:
        if (result.json().find('\0') != std::string::npos)
            throw reducer_error("the reducer's patch contains a NUL byte");
        // A patch that the library refuses (not JSON, not an array, in the
        // init call) fails this reducer's call there and then, with its
        // message: nothing more to do here.
        ts_reducer_patch(result.json().c_str());
        return nullptr;
    case reduced::kind::slice: break;
    }
    const std::string &json = result.json();
    auto *out = static_cast<char *>(ts_alloc(json.size() + 1));
    if (out == nullptr) throw std::bad_alloc();
    std::memcpy(out, json.data(), json.size());
    out[json.size()] = '\0';
    return out;
}

inline char *reducer_for_trampoline(const char *slice, const ts_action *action, void *ctx) noexcept {
    auto *entry = static_cast<ReducerForEntry *>(ctx);
    try {
        CallbackScope in(entry->core);
        std::optional<json_text> slice_text;
        if (slice != nullptr) slice_text.emplace(slice);
        return hand_over(entry->fn(slice_text, Action(*action)));
    } catch (...) {
        record(std::current_exception());
        ts_reducer_fail(describe());
        return nullptr;
    }
}

inline char *patch_reducer_trampoline(const ts_json *slice, const ts_action *action, void *ctx) noexcept {
    auto *entry = static_cast<PatchReducerEntry *>(ctx);
    try {
        CallbackScope in(entry->core);
        std::optional<json_ref> slice_ref;
        if (slice != nullptr) {
            json_ref value(&callback_arena());
            value.v_ = *slice;
            slice_ref = value;
        }
        return hand_over(entry->fn(slice_ref, Action(*action)));
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

inline char *migration_trampoline(const char *state_json, void *ctx, char **error_message) noexcept {
    auto *entry = static_cast<MigrationEntry *>(ctx);
    try {
        CallbackScope in(entry->core);
        std::string next = entry->fn(std::string_view(state_json));
        if (next.find('\0') != std::string::npos) throw json_error("the migration's result contains a NUL byte");
        char *out = ts_strdup(next.c_str());
        if (out == nullptr) throw std::bad_alloc();
        return out;
    } catch (...) {
        record(std::current_exception());
        *error_message = ts_strdup(describe());
        return nullptr;
    }
}

} // namespace detail

} // namespace turnstate

#endif /* __cplusplus */
#endif /* TURNSTATE_HPP */
