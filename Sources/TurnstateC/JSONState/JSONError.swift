#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTurnstateJSON
import TurnstateCore

extension StoreError {
    /// Converts a JSON layer error, prefixing `context` ("action", "state of
    /// \"todos\""), with the status `code` whatever the JSON layer's code was.
    init(_ error: tsj_error, context: String, code: StoreError.Code) {
        let message = withUnsafeBytes(of: error.message) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        self.init(code, "\(context): \(message)")
    }

    /// Converts a JSON layer error, prefixing `context` ("action", "state of \"todos\"").
    init(_ error: tsj_error, context: String) {
        let message = withUnsafeBytes(of: error.message) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        let code: StoreError.Code
        switch tsj_code(rawValue: UInt32(bitPattern: error.code)) {
        case TSJ_ERR_NOMEM: code = .outOfMemory
        case TSJ_ERR_NOT_ACTION: code = .notAnAction
        case TSJ_ERR_POINTER: code = .badArgument
        case TSJ_ERR_NOT_FOUND: code = .notFound
        default: code = .invalidJSON
        }
        self.init(code, "\(context): \(message)")
    }
}

/// Runs a JSON layer call that fills a `tsj_error`, throwing on failure.
@inline(__always)
func checkJSON(_ context: @autoclosure () -> String, _ call: (UnsafeMutablePointer<tsj_error>) -> Int32) throws(StoreError) {
    var error = tsj_error()
    if call(&error) != 0 { throw StoreError(error, context: context()) }
}

/// The error for text that is not valid UTF-8 (TS_E_JSON, as for any invalid
/// JSON), with the first bad byte as the JSON layer finds it. `what` names
/// the text ("config_json", "plugin config \"x.json\"").
func notUTF8(_ text: UnsafeRawBufferPointer, _ what: String) -> StoreError {
    var error = tsj_error()
    var minified: UnsafeMutablePointer<CChar>?
    let code = tsj_minify(text.baseAddress?.assumingMemoryBound(to: CChar.self), text.count, &minified, nil, &error)
    free(minified)
    guard code == Int32(TSJ_ERR_UTF8.rawValue) else { return StoreError(.invalidJSON, "\(what) is not valid UTF-8") }
    return StoreError(error, context: "\(what) is not valid UTF-8")
}
