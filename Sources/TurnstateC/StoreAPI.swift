#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTurnstate
import CTurnstateSupport
import Turnstate

/// The `ts_store_api` table that C middleware and plugins get: plain C
/// functions (libffi closures) bound to one store, made once per store.
final class StoreAPI: @unchecked Sendable {
    let table: UnsafeMutablePointer<ts_store_api>
    private let dispatchClosure: FFIClosure
    private let getStateClosure: FFIClosure

    init(owner: CStore) throws(StoreError) {
        dispatchClosure = try FFIClosure.string { [weak owner] text in
            CStatus.run { () throws(StoreError) in
                guard let owner else { throw StoreError(.storeReleased, "dispatch: the store was destroyed") }
                try owner.dispatch(try required(text, "action_json", in: "dispatch"))
            }
        }
        getStateClosure = try FFIClosure.stringOut { [weak owner] pointer, out in
            CStatus.run { () throws(StoreError) in
                guard let owner else { throw StoreError(.storeReleased, "get_state: the store was destroyed") }
                let out = try required(out, "out_json", in: "get_state")
                out.pointee = try owner.state(at: pointer)
            }
        }
        table = .allocate(capacity: 1)
        table.initialize(to: ts_store_api(
            struct_size: UInt32(MemoryLayout<ts_store_api>.size),
            dispatch: unsafeBitCast(dispatchClosure.code, to: (@convention(c) (UnsafePointer<CChar>?) -> ts_status).self),
            get_state: unsafeBitCast(getStateClosure.code, to: (@convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> ts_status).self),
            free: { free($0) },
            fail: { status, message in
                tsi_set_refusal(message)
                return status
            }))
    }

    deinit { table.deallocate() }

    /// The reason the middleware that just returned gave with `fail`, if any.
    func takeMessage() -> String? {
        tsi_take_refusal().map { String(cString: $0) }
    }

    /// Forgets a reason left over from an earlier call.
    func clearMessage() { _ = tsi_take_refusal() }
}
