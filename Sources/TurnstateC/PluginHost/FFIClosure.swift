import CTurnstate
import CTurnstateSupport
import TurnstateCore

/// A Swift closure made into a plain C function pointer with libffi. The
/// function stays valid as long as this object lives.
final class FFIClosure: @unchecked Sendable {
    private final class StringBody {
        let call: (UnsafePointer<CChar>?) -> Int32
        init(_ call: @escaping (UnsafePointer<CChar>?) -> Int32) { self.call = call }
    }

    private final class StringOutBody {
        let call: (UnsafePointer<CChar>?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32
        init(_ call: @escaping (UnsafePointer<CChar>?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32) {
            self.call = call
        }
    }

    private final class ExclusiveBody {
        let call: (tsi_exclusive_fn?, UnsafeMutableRawPointer?) -> Int32
        init(_ call: @escaping (tsi_exclusive_fn?, UnsafeMutableRawPointer?) -> Int32) { self.call = call }
    }

    private final class StringU32Body {
        let call: (UnsafePointer<CChar>?, UInt32) -> Int32
        init(_ call: @escaping (UnsafePointer<CChar>?, UInt32) -> Int32) { self.call = call }
    }

    private let closure: OpaquePointer
    /// The executable address of the closure.
    let code: UnsafeMutableRawPointer
    private let body: AnyObject

    private init(closure: OpaquePointer?, code: UnsafeMutableRawPointer?, body: AnyObject) throws(StoreError) {
        guard let closure, let code else {
            throw StoreError(.outOfMemory, "libffi could not allocate an executable closure")
        }
        self.closure = closure
        self.code = code
        self.body = body
    }

    // The bodies are borrowed, not retained, for each call: the closure's
    // owner keeps them alive (this object holds `body`).

    /// A `ts_status (*)(const char *)` that calls `call`.
    static func string(_ call: @escaping (UnsafePointer<CChar>?) -> Int32) throws(StoreError) -> FFIClosure {
        let body = StringBody(call)
        var code: UnsafeMutableRawPointer?
        let closure = tsi_closure_string({ userdata, text in
            Unmanaged<StringBody>.fromOpaque(userdata!)._withUnsafeGuaranteedRef { $0.call(text) }
        }, Unmanaged.passUnretained(body).toOpaque(), &code)
        return try FFIClosure(closure: closure, code: code, body: body)
    }

    /// A `ts_status (*)(const char *, char **)` that calls `call`.
    static func stringOut(
        _ call: @escaping (UnsafePointer<CChar>?, UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32
    ) throws(StoreError) -> FFIClosure {
        let body = StringOutBody(call)
        var code: UnsafeMutableRawPointer?
        let closure = tsi_closure_string_out({ userdata, text, out in
            Unmanaged<StringOutBody>.fromOpaque(userdata!)._withUnsafeGuaranteedRef { $0.call(text, out) }
        }, Unmanaged.passUnretained(body).toOpaque(), &code)
        return try FFIClosure(closure: closure, code: code, body: body)
    }

    /// A `ts_status (*)(ts_status (*fn)(void *), void *)` that calls `call`.
    static func exclusive(_ call: @escaping (tsi_exclusive_fn?, UnsafeMutableRawPointer?) -> Int32) throws(StoreError) -> FFIClosure {
        let body = ExclusiveBody(call)
        var code: UnsafeMutableRawPointer?
        let closure = tsi_closure_exclusive({ userdata, fn, context in
            Unmanaged<ExclusiveBody>.fromOpaque(userdata!)._withUnsafeGuaranteedRef { $0.call(fn, context) }
        }, Unmanaged.passUnretained(body).toOpaque(), &code)
        return try FFIClosure(closure: closure, code: code, body: body)
    }

    /// A `ts_status (*)(const char *, uint32_t)` that calls `call`.
    static func stringU32(_ call: @escaping (UnsafePointer<CChar>?, UInt32) -> Int32) throws(StoreError) -> FFIClosure {
        let body = StringU32Body(call)
        var code: UnsafeMutableRawPointer?
        let closure = tsi_closure_string_u32({ userdata, text, number in
            Unmanaged<StringU32Body>.fromOpaque(userdata!)._withUnsafeGuaranteedRef { $0.call(text, number) }
        }, Unmanaged.passUnretained(body).toOpaque(), &code)
        return try FFIClosure(closure: closure, code: code, body: body)
    }

    deinit { tsi_closure_free(closure) }

    var nextFunction: ts_next_fn { unsafeBitCast(code, to: ts_next_fn.self) }
}
