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
}

/// The `ts_store_api` table that C middleware and plugins get: plain C
/// functions (libffi closures) bound to one store, made once per store.
package final class StoreAPI: @unchecked Sendable {
    let table: UnsafeMutablePointer<ts_store_api>
    private let closures: [FFIClosure]

    /// Makes the table for `face`, which it holds weakly: once the store is
    /// gone its functions return TS_E_STORE_GONE.
    package init(for face: some StoreFace) throws(StoreError) {
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
        closures = [dispatch, getState, replaceState]
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
            status_name: { ts_status_name($0) }))
    }

    deinit { table.deallocate() }

    /// The reason the middleware that just returned gave with `fail`, if any.
    func takeMessage() -> String? {
        tsi_take_refusal().map { String(cString: $0) }
    }

    /// Forgets a reason left over from an earlier call.
    func clearMessage() { _ = tsi_take_refusal() }
}
