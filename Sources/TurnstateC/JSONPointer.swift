import Turnstate

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

    /// Parses `text` by its bytes: a token may begin with a combining mark
    /// ("/\u{301}"), which Swift would join to the "/" before it.
    init(_ text: String) throws(StoreError) {
        self.text = text
        let bytes = Array(text.utf8)
        guard let first = bytes.first else {
            key = nil
            rest = ""
            return
        }
        guard first == UInt8(ascii: "/") else {
            throw StoreError(.badArgument, "the JSON Pointer \"\(text)\" must be empty or start with \"/\"")
        }
        var escaped = false
        var offset = 0
        var scalars = text.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            if scalar == "~" {
                escaped = true
                let following = scalars.next()
                guard following == "0" || following == "1" else {
                    throw StoreError(.badArgument, "the JSON Pointer \"\(text)\" has \"~\" at character \(offset) not followed by 0 or 1")
                }
                offset += 1
            }
            offset += 1
        }
        // Split at the second "/" byte ("/" is ASCII: never inside a
        // multi-byte sequence, so both parts are valid UTF-8).
        let end = bytes[1...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.count
        var token = bytes[1..<end]
        rest = Substring(String(decoding: bytes[end...], as: UTF8.self))
        // Most keys have no escapes: unescaping is only done when needed.
        if escaped { token = Self.unescape(token)[...] }
        key = String(decoding: token, as: UTF8.self)
    }

    /// "~1" is "/", "~0" is "~" (RFC 6901, in that order).
    private static func unescape(_ token: ArraySlice<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(token.count)
        var index = token.startIndex
        while index < token.endIndex {
            let byte = token[index]
            if byte == UInt8(ascii: "~"), index + 1 < token.endIndex {
                let next = token[index + 1]
                if next == UInt8(ascii: "1") || next == UInt8(ascii: "0") {
                    out.append(next == UInt8(ascii: "1") ? UInt8(ascii: "/") : UInt8(ascii: "~"))
                    index += 2
                    continue
                }
            }
            out.append(byte)
            index += 1
        }
        return out
    }
}
