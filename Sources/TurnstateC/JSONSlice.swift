#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTurnstate
import CTurnstateJSON
import Synchronization
import TurnstateCore

/// The value of one top-level key of a C store's state, kept as validated,
/// minified JSON text. Immutable: a reducer that changes a slice makes a new
/// one, so unchanged slices are never parsed or serialized again.
package final class JSONSlice: @unchecked Sendable {
    private static let lastID = Atomic<UInt64>(0)

    /// Unique for the life of the process: a changed slice has a new id.
    let id: UInt64
    /// Minified JSON text, NUL-terminated, owned (malloc'ed).
    let text: UnsafeMutablePointer<CChar>
    let length: Int
    /// Parsed on the first JSON Pointer look-up below the slice and kept.
    /// Guarded by the store's lock.
    @exclusivity(unchecked) private var document: OpaquePointer?

    /// Validates `json[0..<length]` and keeps its minified form.
    package init(validating json: UnsafePointer<CChar>, length: Int, context: @autoclosure () -> String) throws(StoreError) {
        var out: UnsafeMutablePointer<CChar>?
        var outLength = 0
        try checkJSON(context()) { tsj_minify(json, length, &out, &outLength, $0) }
        guard let out else { throw StoreError(.outOfMemory, "\(context()): no memory for the text") }
        text = out
        self.length = outLength
        id = Self.lastID.add(1, ordering: .relaxed).newValue
    }

    /// Validates JSON that becomes one top-level value of the state: as
    /// `init(validating:)`, and at most `TS_MAX_DEPTH - 1` deep, since the
    /// state object around it is one more level and the whole state must
    /// read back.
    convenience init(validatingSlice json: UnsafePointer<CChar>, length: Int, context: @autoclosure () -> String) throws(StoreError) {
        try self.init(validating: json, length: length, context: context())
        // Each level takes two bytes: shorter text cannot be too deep.
        let limit = Int(TS_MAX_DEPTH) - 1
        if self.length >= 2 * (limit + 1) {
            let depth = tsj_depth(text, self.length)
            if depth > limit {
                throw StoreError(.invalidJSON, "\(context()): nested \(depth) deep; a top-level value of the state may be at most \(limit) deep (TS_MAX_DEPTH - 1: the state object is one more level)")
            }
        }
    }

    /// Takes over text that is already minified JSON (from the JSON layer).
    init(adoptingMinified text: UnsafeMutablePointer<CChar>, length: Int) {
        self.text = text
        self.length = length
        id = Self.lastID.add(1, ordering: .relaxed).newValue
    }

    deinit {
        free(text)
        tsj_doc_free(document)
    }

    /// A copy of the text, malloc'ed, for the caller to free.
    func copyText() throws(StoreError) -> UnsafeMutablePointer<CChar> {
        guard let copy = malloc(length + 1)?.assumingMemoryBound(to: CChar.self) else {
            throw StoreError(.outOfMemory, "no memory for a copy of \(length) bytes")
        }
        memcpy(copy, text, length + 1)
        return copy
    }

    /// The minified text of the value at `pointer` (an RFC 6901 pointer
    /// relative to this slice, "" for the slice itself), malloc'ed.
    package func value(at pointer: Substring.UTF8View, path: @autoclosure () -> String) throws(StoreError) -> (UnsafeMutablePointer<CChar>, Int) {
        if pointer.isEmpty { return (try copyText(), length) }
        let document = try parsed()
        var out: UnsafeMutablePointer<CChar>?
        var outLength = 0
        var pointer = Substring(pointer)
        var error = tsj_error()
        let code = pointer.withUTF8 { bytes in
            tsj_doc_at_pointer(document, UnsafeRawPointer(bytes.baseAddress)?.assumingMemoryBound(to: CChar.self),
                               bytes.count, &out, &outLength, &error)
        }
        if code != 0 { throw StoreError(error, context: "JSON Pointer \"\(path())\"") }
        guard let out else { throw StoreError(.outOfMemory, "no memory for the value at \"\(path())\"") }
        return (out, outLength)
    }

    private func parsed() throws(StoreError) -> OpaquePointer {
        if let document { return document }
        var error = tsj_error()
        guard let made = tsj_doc_parse(text, length, &error) else {
            throw StoreError(error, context: "parsing a slice of the state")
        }
        document = made
        return made
    }
}
