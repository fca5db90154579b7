/// The error every fallible store operation reports: a code that says what
/// kind of fault it was and a message precise enough to act on.
///
/// The raw values of ``Code`` are the `ts_status` values of the C API
/// (`Include/turnstate.h`), so a fault reads the same from Swift and from C.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What kind of fault happened.
    public enum Code: Int32, Sendable, CaseIterable {
        /// A required argument was missing or malformed (`TS_E_ARGUMENT`).
        case badArgument = -1
        /// Text that should be JSON was not: syntax, bad UTF-8, nesting too deep (`TS_E_JSON`).
        case invalidJSON = -2
        /// JSON that is not a tagged action `{"type": "...", ...}` (`TS_E_NOT_ACTION`).
        case notAnAction = -3
        /// A reducer failed or produced an invalid result; the state was left as it was (`TS_E_REDUCER`).
        case reducerFailed = -4
        /// A reducer tried to dispatch, read the store, subscribe or unsubscribe (`TS_E_REENTRANT`).
        case reentrantCall = -5
        /// A plugin could not be loaded, or failed (`TS_E_PLUGIN`).
        case pluginFailed = -6
        /// Reading or writing a file failed (`TS_E_IO`).
        case io = -7
        /// Memory could not be allocated (`TS_E_NOMEM`).
        case outOfMemory = -8
        /// A JSON Pointer, key, file or subscription was not found (`TS_E_NOT_FOUND`).
        case notFound = -9
        /// A middleware refused the action (`TS_E_REJECTED`).
        case rejected = -10
        /// The store is closed: it was closed, is being destroyed or was released while the caller
        /// still held a reference into it (`TS_E_STORE_GONE`).
        case storeReleased = -11
        /// A plugin or caller was built for an ABI this library does not speak (`TS_E_ABI`).
        case abiMismatch = -12
        /// An action type that no registered `TaggedAction` type decodes (`TS_E_UNKNOWN_ACTION`).
        case unknownAction = -13
        /// A function was used against its rules: a middleware's `next` called
        /// twice for one action, or after the `run` it was given to returned (`TS_E_MISUSE`).
        case misuse = -14
    }

    /// What kind of fault happened.
    public let code: Code
    /// A one-line, human-readable explanation.
    public let message: String
    /// The status a C caller sees: `code.rawValue`, or the store's own
    /// negative status that a C middleware or plugin refused an action with
    /// (its `code` is then ``Code/rejected`` unless the status is one of ours).
    public let status: Int32

    /// Creates an error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
        status = code.rawValue
    }

    /// Creates an error for a status that came from C code, which may be
    /// one that no ``Code`` names.
    public init(status: Int32, _ message: String) {
        code = Code(rawValue: status) ?? .rejected
        self.message = message
        self.status = status
    }

    public var description: String { "\(code): \(message)" }
}
