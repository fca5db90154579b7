import CTurnstate
import CTurnstateSupport
import TurnstateCore

/// Translation between Swift errors and the C API's statuses and
/// thread-local error message.
enum CStatus {
    /// Records `error` as the calling thread's last error and returns its status.
    static func fail(_ error: StoreError) -> ts_status {
        setLastError(error.message)
        return error.status
    }

    static func setLastError(_ message: String) {
        var message = message
        message.withUTF8 { tsi_set_last_error(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self), $0.count) }
    }

    /// Runs `body` and turns its outcome into a status.
    @inline(__always)
    static func run(_ body: () throws(StoreError) -> Void) -> ts_status {
        do {
            try body()
            return TS_OK
        } catch {
            return fail(error)
        }
    }

    static func name(_ status: ts_status) -> StaticString {
        switch status {
        case TS_OK: "TS_OK"
        case TS_E_ARGUMENT: "TS_E_ARGUMENT"
        case TS_E_JSON: "TS_E_JSON"
        case TS_E_NOT_ACTION: "TS_E_NOT_ACTION"
        case TS_E_REDUCER: "TS_E_REDUCER"
        case TS_E_REENTRANT: "TS_E_REENTRANT"
        case TS_E_PLUGIN: "TS_E_PLUGIN"
        case TS_E_IO: "TS_E_IO"
        case TS_E_NOMEM: "TS_E_NOMEM"
        case TS_E_NOT_FOUND: "TS_E_NOT_FOUND"
        case TS_E_REJECTED: "TS_E_REJECTED"
        case TS_E_STORE_GONE: "TS_E_STORE_GONE"
        case TS_E_ABI: "TS_E_ABI"
        case TS_E_UNKNOWN_ACTION: "TS_E_UNKNOWN_ACTION"
        case TS_E_MISUSE: "TS_E_MISUSE"
        default: "TS_E_UNKNOWN"
        }
    }
}

/// Unwraps a pointer argument or fails with `TS_E_ARGUMENT` naming it.
@inline(__always)
func required<T>(_ value: T?, _ name: StaticString, in function: StaticString) throws(StoreError) -> T {
    guard let value else { throw StoreError(.badArgument, "\(function): \(name) is NULL") }
    return value
}
