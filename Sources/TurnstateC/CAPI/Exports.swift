#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTurnstate
import CTurnstateSupport
import TurnstateCore

// The C API of Include/turnstate.h. Each function is checked against its
// declaration there by @c @implementation; each translates arguments and
// errors and leaves the semantics to CStore and the core Store.

// MARK: Versions, statuses, memory

// The version is written once, in Include/turnstate.h; CTurnstateSupport
// returns its TS_VERSION and TS_VERSION_NUMBER.

@c @implementation
public func ts_version_number() -> Int32 {
    tsi_version_number()
}

@c @implementation
public func ts_version_string() -> UnsafePointer<CChar>? {
    tsi_version()
}

@c @implementation
public func ts_status_name(_ status: ts_status) -> UnsafePointer<CChar>? {
    CStatus.name(status).cString
}

@c @implementation
public func ts_last_error() -> UnsafePointer<CChar>? {
    tsi_last_error()
}

// ts_alloc and ts_strdup are malloc, and ts_free is free: the store frees a
// reducer's result with free, so both kinds of memory may be handed to it
// (turnstate.h, "Memory"). Written in C so that reporting a failed
// allocation allocates nothing.

@c @implementation
public func ts_alloc(_ size: Int) -> UnsafeMutableRawPointer? {
    tsi_alloc(size)
}

@c @implementation
public func ts_strdup(_ text: UnsafePointer<CChar>?) -> UnsafeMutablePointer<CChar>? {
    tsi_strdup(text)
}

@c @implementation
public func ts_free(_ pointer: UnsafeMutableRawPointer?) {
    free(pointer)
}

// MARK: Reducers' own failures

@c @implementation
public func ts_reducer_fail(_ message: UnsafePointer<CChar>?) -> ts_status {
    guard tsi_reducer_fail(message) == 0 else {
        return CStatus.fail(StoreError(.misuse, "ts_reducer_fail: called outside a reducer (no store is calling a reducer on this thread); nothing failed"))
    }
    return TS_OK
}

@c @implementation
public func ts_reducer_patch(_ patch: UnsafePointer<CChar>?) -> ts_status {
    tsi_reducer_patch(patch)
}

@c @implementation
public func ts_reducer_slice_id(_ out: UnsafeMutablePointer<UInt64>?) -> ts_status {
    tsi_reducer_slice_id(out)
}

@c @implementation
public func ts_reducer_answer_id(_ out: UnsafeMutablePointer<UInt64>?) -> ts_status {
    tsi_reducer_answer_id(out) { JSONSlice.reserveID() }
}

// MARK: Stores

@c @implementation
public func ts_store_create(_ initialState: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let out = try required(out, "out", in: "ts_store_create")
        let store = try CStore(initialState: initialState)
        out.pointee = OpaquePointer(Unmanaged.passRetained(store).toOpaque())
    }
}

@c @implementation
public func ts_store_destroy(_ store: OpaquePointer?) {
    guard let store else { return }
    let unmanaged = Unmanaged<CStore>.fromOpaque(UnsafeRawPointer(store))
    let cstore = unmanaged.takeUnretainedValue()
    // 1. Close: dispatches under way on other threads finish (close waits
    //    for the lock they hold); every new call, from any thread, through a
    //    kept table or from a plugin's destroy(), answers TS_E_STORE_GONE and
    //    reaches no middleware, reducer or listener.
    cstore.close()
    // 2. The plugins' destroy(), last loaded first, on this thread and
    //    without the lock, so that a plugin can join its own threads (which
    //    may be waiting for the lock, and now find the store closed). From
    //    inside one of the store's own callbacks the dispatch under way
    //    still runs through the plugins, so they are destroyed when the
    //    outermost call returns and releases the store (CStore.deinit).
    //    Sources/TurnstateC/PluginHost/ShutdownProtocol.pml models this
    //    protocol.
    if !cstore.store.isBusyOnCurrentThread { cstore.destroyPlugins() }
    unmanaged.release()
}

@c @implementation
public func ts_store_add_reducer(
    _ store: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ fn: ts_reducer_fn?, _ context: UnsafeMutableRawPointer?
) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_add_reducer")
        let key = try required(key, "key", in: "ts_store_add_reducer")
        guard let fn else {
            throw StoreError(.badArgument, "ts_store_add_reducer: fn is NULL for the key \"\(String(cString: key))\"")
        }
        try cstore.addReducer(key: key, fn: fn, context: context)
    }
}

@c @implementation
public func ts_store_add_reducer_for(
    _ store: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ types: UnsafePointer<UnsafePointer<CChar>?>?,
    _ fn: ts_reducer_fn?, _ context: UnsafeMutableRawPointer?
) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_add_reducer_for")
        let key = try required(key, "key", in: "ts_store_add_reducer_for")
        guard let fn else {
            throw StoreError(.badArgument, "ts_store_add_reducer_for: fn is NULL for the key \"\(String(cString: key))\"")
        }
        let filter = try TypeFilter.make(types, function: "ts_store_add_reducer_for")
        try cstore.addReducer(key: key, fn: fn, context: context, types: filter, function: "ts_store_add_reducer_for")
    }
}

@c @implementation
public func ts_store_add_patch_reducer(
    _ store: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ types: UnsafePointer<UnsafePointer<CChar>?>?,
    _ fn: ts_patch_reducer_fn?, _ context: UnsafeMutableRawPointer?
) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_add_patch_reducer")
        let key = try required(key, "key", in: "ts_store_add_patch_reducer")
        guard let fn else {
            throw StoreError(.badArgument, "ts_store_add_patch_reducer: fn is NULL for the key \"\(String(cString: key))\"")
        }
        let filter = try TypeFilter.make(types, function: "ts_store_add_patch_reducer")
        try cstore.addReducer(key: key, fn: unsafeBitCast(fn, to: ts_reducer_fn.self), context: context, types: filter,
                              takesValue: true, function: "ts_store_add_patch_reducer")
    }
}

@c @implementation
public func ts_store_dispatch(_ store: OpaquePointer?, _ action: UnsafePointer<CChar>?) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_dispatch")
        try cstore.dispatch(try required(action, "action_json", in: "ts_store_dispatch"))
    }
}

@c @implementation
public func ts_store_dispatch_parts(
    _ store: OpaquePointer?, _ type: UnsafePointer<CChar>?, _ payload: UnsafePointer<CChar>?
) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_dispatch_parts")
        try cstore.dispatch(type: try required(type, "type", in: "ts_store_dispatch_parts"), payload: payload)
    }
}

@c @implementation
public func ts_store_get_state(
    _ store: OpaquePointer?, _ pointer: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_get_state")
        let out = try required(out, "out_json", in: "ts_store_get_state")
        out.pointee = try cstore.state(at: pointer)
    }
}

@c @implementation
public func ts_store_replace_reducer(
    _ store: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ fn: ts_reducer_fn?, _ context: UnsafeMutableRawPointer?
) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_replace_reducer")
        let key = try required(key, "key", in: "ts_store_replace_reducer")
        try cstore.replaceReducer(key: key, fn: try required(fn, "fn", in: "ts_store_replace_reducer"), context: context)
    }
}

@c @implementation
public func ts_store_replace_reducer_for(
    _ store: OpaquePointer?, _ key: UnsafePointer<CChar>?, _ types: UnsafePointer<UnsafePointer<CChar>?>?,
    _ fn: ts_reducer_fn?, _ context: UnsafeMutableRawPointer?
) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_replace_reducer_for")
        let key = try required(key, "key", in: "ts_store_replace_reducer_for")
        let fn = try required(fn, "fn", in: "ts_store_replace_reducer_for")
        let filter = try TypeFilter.make(types, function: "ts_store_replace_reducer_for")
        try cstore.replaceReducer(key: key, fn: fn, context: context, types: filter, function: "ts_store_replace_reducer_for")
    }
}

@c @implementation
public func ts_store_remove_reducer(_ store: OpaquePointer?, _ key: UnsafePointer<CChar>?) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_remove_reducer")
        try cstore.removeReducer(key: try required(key, "key", in: "ts_store_remove_reducer"))
    }
}

// MARK: Listeners

@c @implementation
public func ts_store_subscribe(
    _ store: OpaquePointer?, _ pointer: UnsafePointer<CChar>?, _ fn: ts_listener_fn?,
    _ context: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<UInt64>?
) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_subscribe")
        let fn = try required(fn, "fn", in: "ts_store_subscribe")
        let out = try required(out, "out_token", in: "ts_store_subscribe")
        try cstore.subscribe(pointer: pointer, fn: fn, context: context, token: out)
    }
}

@c @implementation
public func ts_store_unsubscribe(_ store: OpaquePointer?, _ token: UInt64) -> ts_status {
    CStatus.run { () throws(StoreError) in
        try CStore.from(store, in: "ts_store_unsubscribe").store.unsubscribe(token: token)
    }
}

// MARK: Middleware

@c @implementation
public func ts_store_add_middleware(
    _ store: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ fn: ts_middleware_fn?, _ context: UnsafeMutableRawPointer?
) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_add_middleware")
        let name = try required(name, "name", in: "ts_store_add_middleware")
        try cstore.addMiddleware(name: String(decoding: UnsafeRawBufferPointer(start: name, count: strlen(name)), as: UTF8.self),
                                 fn: try required(fn, "fn", in: "ts_store_add_middleware"), context: context)
    }
}

@c @implementation
public func ts_store_remove_middleware(_ store: OpaquePointer?, _ name: UnsafePointer<CChar>?) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_remove_middleware")
        let name = try required(name, "name", in: "ts_store_remove_middleware")
        try cstore.removeMiddleware(name: String(decoding: UnsafeRawBufferPointer(start: name, count: strlen(name)), as: UTF8.self))
    }
}

// MARK: Plugins

@c @implementation
public func ts_store_load_plugin(
    _ store: OpaquePointer?, _ path: UnsafePointer<CChar>?, _ config: UnsafePointer<CChar>?
) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_load_plugin")
        try cstore.loadPlugin(path: try required(path, "path", in: "ts_store_load_plugin"), config: config)
    }
}

@c @implementation
public func ts_store_load_plugins(_ store: OpaquePointer?, _ folder: UnsafePointer<CChar>?) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_load_plugins")
        try cstore.loadPlugins(folder: try required(folder, "dir", in: "ts_store_load_plugins"))
    }
}

// MARK: Reading JSON

// The getters are C (CTurnstateSupport/json_api.c): they recognise the texts
// of the callbacks under way on the calling thread and read them through
// the JSON layer.

@c @implementation
public func ts_json_at(_ json: UnsafePointer<CChar>?, _ pointer: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<ts_json>?) -> ts_status {
    tsi_json_at(json, pointer, out)
}

@c @implementation
public func ts_json_find(_ value: UnsafePointer<ts_json>?, _ pointer: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<ts_json>?) -> ts_status {
    tsi_json_find(value, pointer, out)
}

@c @implementation
public func ts_json_int(_ value: UnsafePointer<ts_json>?, _ out: UnsafeMutablePointer<Int64>?) -> ts_status {
    tsi_json_int(value, out)
}

@c @implementation
public func ts_json_uint(_ value: UnsafePointer<ts_json>?, _ out: UnsafeMutablePointer<UInt64>?) -> ts_status {
    tsi_json_uint(value, out)
}

@c @implementation
public func ts_json_double(_ value: UnsafePointer<ts_json>?, _ out: UnsafeMutablePointer<Double>?) -> ts_status {
    tsi_json_double(value, out)
}

@c @implementation
public func ts_json_bool(_ value: UnsafePointer<ts_json>?, _ out: UnsafeMutablePointer<Int32>?) -> ts_status {
    tsi_json_bool(value, out)
}

@c @implementation
public func ts_json_is_null(_ value: UnsafePointer<ts_json>?) -> Int32 {
    tsi_json_is_null(value)
}

@c @implementation
public func ts_json_string(_ value: UnsafePointer<ts_json>?, _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?,
                           _ length: UnsafeMutablePointer<Int>?) -> ts_status {
    tsi_json_string(value, out, length)
}

@c @implementation
public func ts_json_count(_ value: UnsafePointer<ts_json>?, _ out: UnsafeMutablePointer<Int>?) -> ts_status {
    tsi_json_count(value, out)
}

@c @implementation
public func ts_json_next(_ container: UnsafePointer<ts_json>?, _ cursor: UnsafeMutablePointer<Int>?,
                         _ key: UnsafeMutablePointer<ts_json>?, _ value: UnsafeMutablePointer<ts_json>?) -> ts_status {
    tsi_json_next(container, cursor, key, value)
}

@c @implementation
public func ts_json_get_int(_ json: UnsafePointer<CChar>?, _ pointer: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Int64>?) -> ts_status {
    tsi_json_get_int(json, pointer, out)
}

@c @implementation
public func ts_json_get_uint(_ json: UnsafePointer<CChar>?, _ pointer: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<UInt64>?) -> ts_status {
    tsi_json_get_uint(json, pointer, out)
}

@c @implementation
public func ts_json_get_double(_ json: UnsafePointer<CChar>?, _ pointer: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Double>?) -> ts_status {
    tsi_json_get_double(json, pointer, out)
}

@c @implementation
public func ts_json_get_bool(_ json: UnsafePointer<CChar>?, _ pointer: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Int32>?) -> ts_status {
    tsi_json_get_bool(json, pointer, out)
}

@c @implementation
public func ts_json_get_string(_ json: UnsafePointer<CChar>?, _ pointer: UnsafePointer<CChar>?,
                               _ out: UnsafeMutablePointer<UnsafePointer<CChar>?>?, _ length: UnsafeMutablePointer<Int>?) -> ts_status {
    tsi_json_get_string(json, pointer, out, length)
}

// MARK: Versions of the state and migrations

@c @implementation
public func ts_store_set_version(_ store: OpaquePointer?, _ version: UInt32) -> ts_status {
    CStatus.run { () throws(StoreError) in
        try CStore.from(store, in: "ts_store_set_version").setVersion(version)
    }
}

@c @implementation
public func ts_store_get_version(_ store: OpaquePointer?, _ out: UnsafeMutablePointer<UInt32>?) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_get_version")
        let out = try required(out, "out", in: "ts_store_get_version")
        out.pointee = try cstore.version()
    }
}

@c @implementation
public func ts_store_add_migration(
    _ store: OpaquePointer?, _ from: UInt32, _ fn: ts_migration_fn?, _ context: UnsafeMutableRawPointer?
) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_add_migration")
        try cstore.addMigration(from: from, fn: try required(fn, "fn", in: "ts_store_add_migration"), context: context)
    }
}

@c @implementation
public func ts_store_replace_state_from(_ store: OpaquePointer?, _ json: UnsafePointer<CChar>?, _ version: UInt32) -> ts_status {
    CStatus.run { () throws(StoreError) in
        let cstore = try CStore.from(store, in: "ts_store_replace_state_from")
        try cstore.replaceState(try required(json, "state_json", in: "ts_store_replace_state_from"), from: version)
    }
}
