import TurnstateCore

/// An RFC 6901 JSON Pointer into a C store's state, split at its first token,
/// which names the slice (top-level key); the rest is resolved inside it.
struct JSONPointer: Sendable {
    /// The pointer as given.
    let text: String
    /// The top-level key, or nil for the whole state ("").
    let key: String?
    /// The rest of the pointer, "" or starting with "/".
    let rest: Substring

    /// Parses `pointer`; NULL and "" mean the whole state.
    init(_ pointer: UnsafePointer<CChar>?) throws(StoreError) {
        guard let pointer else {
            self.init(whole: ())
            return
        }
        guard let text = String(validatingCString: pointer) else {
            throw StoreError(.badArgument, "the JSON Pointer is not valid UTF-8")
        }
        try self.init(text)
    }

    private init(whole: Void) {
        text = ""
        key = nil
        rest = ""
    }

    /// Parses `text` in one pass over its bytes (a token may begin with a
    /// combining mark, "/\u{301}", which Swift's characters would join to
    /// the "/" before it), with no copy of the text.
    init(_ text: String) throws(StoreError) {
        self.text = text
        var failure: StoreError?
        var utf8 = text
        let parts = utf8.withUTF8 { bytes -> (key: String, rest: Substring)? in
            guard let first = bytes.first else { return nil }
            guard first == Self.slash else {
                failure = StoreError(.badArgument, "the JSON Pointer \"\(text)\" must be empty or start with \"/\"")
                return nil
            }
            var escaped = false
            var index = 0
            while index < bytes.count {
                guard bytes[index] == Self.tilde else {
                    index += 1
                    continue
                }
                guard index + 1 < bytes.count, bytes[index + 1] == Self.zero || bytes[index + 1] == Self.one else {
                    // The offset in characters (code points), as people count.
                    let offset = bytes[..<index].count { $0 & 0xC0 != 0x80 }
                    failure = StoreError(.badArgument, "the JSON Pointer \"\(text)\" has \"~\" at character \(offset) not followed by 0 or 1")
                    return nil
                }
                escaped = true
                index += 2
            }
            // Split at the second "/" ("/" is ASCII: never inside a
            // multi-byte sequence, so both parts are valid UTF-8).
            let end = bytes[1...].firstIndex(of: Self.slash) ?? bytes.count
            let token = UnsafeBufferPointer(rebasing: bytes[1..<end])
            // Most keys have no escapes: unescaping is only done when needed.
            let key = escaped ? String(decoding: Self.unescape(token), as: UTF8.self) : String(decoding: token, as: UTF8.self)
            let rest = end == bytes.count ? "" : String(decoding: UnsafeBufferPointer(rebasing: bytes[end...]), as: UTF8.self)
            return (key, rest[...])
        }
        if let failure { throw failure }
        key = parts?.key
        rest = parts?.rest ?? ""
    }

    private static let slash = UInt8(ascii: "/"), tilde = UInt8(ascii: "~")
    private static let zero = UInt8(ascii: "0"), one = UInt8(ascii: "1")

    /// "~1" is "/", "~0" is "~" (RFC 6901, in that order); every "~" is
    /// followed by one of them (checked).
    private static func unescape(_ token: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(token.count)
        var index = 0
        while index < token.count {
            if token[index] == tilde {
                out.append(token[index + 1] == one ? slash : tilde)
                index += 2
            } else {
                out.append(token[index])
                index += 1
            }
        }
        return out
    }
}
