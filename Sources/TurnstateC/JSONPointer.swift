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

    init(_ text: String) throws(StoreError) {
        self.text = text
        guard !text.isEmpty else {
            key = nil
            rest = ""
            return
        }
        guard text.hasPrefix("/") else {
            throw StoreError(.badArgument, "the JSON Pointer \"\(text)\" must be empty or start with \"/\"")
        }
        var scalars = text.unicodeScalars.makeIterator()
        var offset = 0
        var escaped = false
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
        let afterSlash = text.dropFirst()
        let first: Substring
        if let slash = afterSlash.firstIndex(of: "/") {
            first = afterSlash[..<slash]
            rest = afterSlash[slash...]
        } else {
            first = afterSlash
            rest = ""
        }
        // Most keys have no escapes: unescaping is only done when needed.
        key = escaped ? first.replacingOccurrences("~1", with: "/").replacingOccurrences("~0", with: "~") : String(first)
    }
}

extension Substring {
    fileprivate func replacingOccurrences(_ target: String, with replacement: String) -> String {
        guard contains(target) else { return String(self) }
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}

extension String {
    fileprivate func replacingOccurrences(_ target: String, with replacement: String) -> String {
        self[...].replacingOccurrences(target, with: replacement)
    }
}
