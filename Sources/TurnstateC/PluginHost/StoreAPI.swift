#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTurnstate
import CTurnstateSupport
import TurnstateCore

/// What the functions of a `ts_store_api` table do for one kind of store.
package protocol StoreFace: AnyObject, Sendable {
    /// Dispatches tagged JSON from the top of the chain.
    func dispatch(_ json: UnsafePointer<CChar>) throws(StoreError)
    /// The text at a JSON Pointer (NULL or "" for the whole state), malloc'ed.
    func state(at pointer: UnsafePointer<CChar>?) throws(StoreError) -> UnsafeMutablePointer<CChar>
    /// Replaces the whole state and notifies.
    func replaceState(_ json: UnsafePointer<CChar>) throws(StoreError)
    /// Runs the reducers and listeners for tagged JSON, skipping every
    /// middleware (replaying recorded actions).
    func apply(_ json: UnsafePointer<CChar>) throws(StoreError)
    /// Runs `body` with the store held (no dispatch interleaves); refused
    /// (without running it) once the store is closed or from inside a reducer.
    func exclusive(_ body: () -> Int32) throws(StoreError) -> Int32
    /// The version of the state the program's reducers make (0: none declared).
    func stateVersion() throws(StoreError) -> UInt32
    /// Replaces the whole state with state saved at `version`, migrated
    /// first (StateMigrations' rules), and notifies.
    func replaceState(_ json: UnsafePointer<CChar>, from version: UInt32) throws(StoreError)
}

extension StoreFace {
    /// A face without versions: version 0, and only state of version 0 comes in.
    package func stateVersion() throws(StoreError) -> UInt32 { 0 }

    package func replaceState(_ json: UnsafePointer<CChar>, from version: UInt32) throws(StoreError) {
        try StateMigrations<Void>().check(from: version)
        try replaceState(json)
    }
}

/// The `ts_store_api` table that C middleware and plugins get: plain C
/// functions (libffi closures) bound to one store, made once per store.
package final class StoreAPI: @unchecked Sendable {
    let table: UnsafeMutablePointer<ts_store_api>
    private let closures: [FFIClosure]
    private weak var face: (any StoreFace)?

    /// Makes the table for `face`, which it holds weakly: once the store is
    /// gone its functions return TS_E_STORE_GONE. `dispatchAfter` is what the
    /// table's dispatch_after does: a plugin's own table has one (its place
    /// in the chain); without it dispatch_after answers TS_E_MISUSE.
    package init(for face: some StoreFace,
                 dispatchAfter: (@Sendable (UnsafePointer<CChar>) throws(StoreError) -> Void)? = nil,
                 unlocked: (@Sendable (() -> Int32) throws(StoreError) -> Int32)? = nil,
                 loading: (@Sendable () -> UnsafePointer<CChar>?)? = nil) throws(StoreError) {
        self.face = face
        weak let face = face
        let gone = { (function: StaticString) in StoreError(.storeReleased, "\(function): the store was destroyed") }
        let dispatch = try FFIClosure.string { text in
            CStatus.run { () throws(StoreError) in
                guard let face else { throw gone("dispatch") }
                try face.dispatch(try required(text, "action_json", in: "dispatch"))
            }
        }
        let getState = try FFIClosure.stringOut { pointer, out in
            CStatus.run { () throws(StoreError) in
                guard let face else { throw gone("get_state") }
                let out = try required(out, "out_json", in: "get_state")
                out.pointee = try face.state(at: pointer)
            }
        }
        let replaceState = try FFIClosure.string { text in
            CStatus.run { () throws(StoreError) in
                guard let face else { throw gone("replace_state") }
                try face.replaceState(try required(text, "state_json", in: "replace_state"))
            }
        }
        let apply = try FFIClosure.string { text in
            CStatus.run { () throws(StoreError) in
                guard let face else { throw gone("apply") }
                try face.apply(try required(text, "action_json", in: "apply"))
            }
        }
        let exclusive = try FFIClosure.exclusive { fn, context in
            var result: Int32 = TS_OK
            let status = CStatus.run { () throws(StoreError) in
                guard let face else { throw gone("exclusive") }
                let fn = try required(fn, "fn", in: "exclusive")
                result = try face.exclusive { fn(context) }
            }
            return status == TS_OK ? result : status
        }
        let after = try FFIClosure.string { text in
            CStatus.run { () throws(StoreError) in
                guard face != nil else { throw gone("dispatch_after") }
                let text = try required(text, "action_json", in: "dispatch_after")
                guard let dispatchAfter else {
                    throw StoreError(.misuse, "dispatch_after: only a plugin's own table has a place in the chain (this is the table of middleware added with ts_store_add_middleware; use dispatch or apply)")
                }
                try dispatchAfter(text)
            }
        }
        // state_version(uint32_t *out) has the shape of dispatch (one
        // pointer argument): the pointer is the uint32_t to write.
        let stateVersion = try FFIClosure.string { out in
            CStatus.run { () throws(StoreError) in
                guard let face else { throw gone("state_version") }
                let out = try required(out, "out", in: "state_version")
                let version = try face.stateVersion()
                UnsafeMutableRawPointer(mutating: out).assumingMemoryBound(to: UInt32.self).pointee = version
            }
        }
        let replaceStateFrom = try FFIClosure.stringU32 { text, version in
            CStatus.run { () throws(StoreError) in
                guard let face else { throw gone("replace_state_from") }
                try face.replaceState(try required(text, "state_json", in: "replace_state_from"), from: version)
            }
        }
        let release = try FFIClosure.exclusive { fn, context in
            var result: Int32 = TS_OK
            let status = CStatus.run { () throws(StoreError) in
                guard face != nil else { throw gone("unlocked") }
                let fn = try required(fn, "fn", in: "unlocked")
                guard let unlocked else {
                    throw StoreError(.misuse, "unlocked: only a plugin's own table can let go of the store in its run() (this is the table of middleware added with ts_store_add_middleware)")
                }
                result = try unlocked { fn(context) }
            }
            return status == TS_OK ? result : status
        }
        // loading(const char **out_name) has the shape of dispatch too: the
        // pointer is where the name goes. Read with the store held, so that
        // another thread waits until a create() under way is over.
        let creating = try FFIClosure.string { out in
            CStatus.run { () throws(StoreError) in
                guard let face else { throw gone("loading") }
                let out = try required(out, "out_name", in: "loading")
                guard let loading else {
                    throw StoreError(.misuse, "loading: only a plugin's own table can tell (this is the table of middleware added with ts_store_add_middleware)")
                }
                var name: UnsafePointer<CChar>?
                _ = try face.exclusive {
                    name = loading()
                    return TS_OK
                }
                UnsafeMutableRawPointer(mutating: out).assumingMemoryBound(to: UnsafePointer<CChar>?.self).pointee = name
            }
        }
        closures = [dispatch, getState, replaceState, apply, exclusive, after, stateVersion, replaceStateFrom, release, creating]
        table = .allocate(capacity: 1)
        table.initialize(to: ts_store_api(
            struct_size: UInt32(MemoryLayout<ts_store_api>.size),
            dispatch: unsafeBitCast(dispatch.code, to: (@convention(c) (UnsafePointer<CChar>?) -> ts_status).self),
            get_state: unsafeBitCast(getState.code, to: (@convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> ts_status).self),
            free: { free($0) },
            fail: { status, message in
                tsi_set_refusal(message)
                return status
            },
            replace_state: unsafeBitCast(replaceState.code, to: (@convention(c) (UnsafePointer<CChar>?) -> ts_status).self),
            status_name: { ts_status_name($0) },
            apply: unsafeBitCast(apply.code, to: (@convention(c) (UnsafePointer<CChar>?) -> ts_status).self),
            exclusive: unsafeBitCast(exclusive.code, to: (@convention(c) (tsi_exclusive_fn?, UnsafeMutableRawPointer?) -> ts_status).self),
            dispatch_after: unsafeBitCast(after.code, to: (@convention(c) (UnsafePointer<CChar>?) -> ts_status).self),
            state_version: unsafeBitCast(stateVersion.code, to: (@convention(c) (UnsafeMutablePointer<UInt32>?) -> ts_status).self),
            replace_state_from: unsafeBitCast(replaceStateFrom.code, to: (@convention(c) (UnsafePointer<CChar>?, UInt32) -> ts_status).self),
            last_error: { ts_last_error() },
            unlocked: unsafeBitCast(release.code, to: (@convention(c) (tsi_exclusive_fn?, UnsafeMutableRawPointer?) -> ts_status).self),
            loading: unsafeBitCast(creating.code, to: (@convention(c) (UnsafeMutablePointer<UnsafePointer<CChar>?>?) -> ts_status).self)))

    }

    /// A table for one plugin: the same store, dispatch_after and unlocked
    /// bound to that plugin's place in the chain, and loading answered by
    /// its plugin set (called with the store held).
    func forPlugin(dispatchAfter: @escaping @Sendable (UnsafePointer<CChar>) throws(StoreError) -> Void,
                   unlocked: @escaping @Sendable (() -> Int32) throws(StoreError) -> Int32,
                   loading: @escaping @Sendable () -> UnsafePointer<CChar>?) throws(StoreError) -> StoreAPI {
        guard let face else { throw StoreError(.storeReleased, "the store was destroyed") }
        return try StoreAPI(for: face, dispatchAfter: dispatchAfter, unlocked: unlocked, loading: loading)
    }

    deinit { table.deallocate() }

    /// The reason the middleware that just returned gave with `fail`, if any.
    func takeMessage() -> String? {
        tsi_take_refusal().map { String(cString: $0) }
    }

    /// Forgets a reason left over from an earlier call.
    func clearMessage() { _ = tsi_take_refusal() }
}
