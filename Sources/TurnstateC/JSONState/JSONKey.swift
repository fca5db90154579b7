#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A key of a JSON object, compared the way JSON compares keys: by its bytes
/// (UTF-8), not by Swift's Unicode canonical equivalence. "é" written as one
/// code point (U+00E9) and as e + U+0301 are two different keys, as they are
/// for the JSON layer, for JSON Pointers and for every other JSON parser.
struct JSONKey: Hashable, Sendable {
    let text: String

    init(_ text: String) { self.text = text }

    @inline(__always)
    static func == (a: JSONKey, b: JSONKey) -> Bool { a.text.sameBytes(as: b.text) }

    func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

extension String {
    /// Whether the two strings have the same UTF-8 bytes (no Unicode
    /// normalization: keys and types of JSON are byte strings).
    @inline(__always)
    func sameBytes(as other: String) -> Bool {
        let count = utf8.count
        guard count == other.utf8.count else { return false }
        // Native strings are contiguous: one memcmp.
        let compared = utf8.withContiguousStorageIfAvailable { mine in
            other.utf8.withContiguousStorageIfAvailable { theirs in
                count == 0 || memcmp(mine.baseAddress!, theirs.baseAddress!, count) == 0
            }
        }
        if let compared, let compared { return compared }
        return utf8.elementsEqual(other.utf8)
    }
}
