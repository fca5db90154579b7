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
///
/// A big slice that a patch changed is kept as a tree of texts (tsj_tree):
/// the next patch copies only the path to what it changes, and its text is
/// joined only when someone asks for it (`text`, kept by the tree).
package final class JSONSlice: @unchecked Sendable {
    private static let lastID = Atomic<UInt64>(0)

    /// Slices of this many bytes or more are patched as trees.
    static let treeBytes = 64 * 1024

    /// Unique for the life of the process: a changed slice has a new id.
    let id: UInt64
    /// Minified JSON text, NUL-terminated, owned (malloc'ed); nil when the
    /// slice is kept as a tree.
    let flat: UnsafeMutablePointer<CChar>?
    /// The slice kept in parts (owned), or nil.
    let tree: OpaquePointer?
    /// `tree` when it is split (has nodes): what a patch reducer reads.
    let splitTree: OpaquePointer?
    let length: Int

    /// The minified text, NUL-terminated: the slice's own, or the tree's,
    /// joined on first use (O(length) once, then kept by the tree).
    var text: UnsafeMutablePointer<CChar> {
        get throws(StoreError) {
            if let flat { return flat }
            guard let joined = tsj_tree_text(tree, nil) else {
                throw StoreError(.outOfMemory, "no memory to join the \(length) bytes of a slice")
            }
            return UnsafeMutablePointer(mutating: joined)
        }
    }
    /// The structural index of `text` (a tsj_doc from tsj_doc_index, which
    /// borrows the text: no copy, no second validation), built on the first
    /// JSON Pointer look-up below the slice and kept until the slice is
    /// released (a changed slice is a new object). Set once, atomically:
    /// look-ups need no lock (two threads that both build it keep the first).
    private let documentBits = Atomic<UInt>(0)
    /// The index would take more than `indexBudget` bytes (or the text is
    /// 4 GiB or more): look-ups walk the text instead.
    private let unindexable = Atomic<Bool>(false)

    private var document: OpaquePointer? { OpaquePointer(bitPattern: documentBits.load(ordering: .acquiring)) }

    /// The most an index may take: as much as the text, and 64 KiB for the
    /// smallest slices (an index of 4 bytes per value and 24 per container
    /// is under that for any text that is not mostly empty containers).
    var indexBudget: Int { length + 64 * 1024 }

    /// A new id, for a slice to be made later (ts_reducer_answer_id).
    static func reserveID() -> UInt64 { lastID.add(1, ordering: .relaxed).newValue }

    /// Validates `json[0..<length]` and keeps its minified form; `id` is
    /// one from reserveID(), or 0 for a new one.
    package init(validating json: UnsafePointer<CChar>, length: Int, id: UInt64 = 0,
                 context: @autoclosure () -> String) throws(StoreError) {
        var out: UnsafeMutablePointer<CChar>?
        var outLength = 0
        try checkJSON(context()) { tsj_minify(json, length, &out, &outLength, $0) }
        guard let out else { throw StoreError(.outOfMemory, "\(context()): no memory for the text") }
        flat = out
        tree = nil
        splitTree = nil
        self.length = outLength
        patchedFrom = nil
        self.id = id != 0 ? id : Self.lastID.add(1, ordering: .relaxed).newValue
    }

    /// Validates JSON that becomes one top-level value of the state: as
    /// `init(validating:)`, and at most `TS_MAX_DEPTH - 1` deep, since the
    /// state object around it is one more level and the whole state must
    /// read back.
    @inline(__always)
    convenience init(validatingSlice json: UnsafePointer<CChar>, length: Int, id: UInt64 = 0,
                     context: @autoclosure () -> String) throws(StoreError) {
        try self.init(validating: json, length: length, id: id, context: context())
        // Each level takes two bytes: shorter text cannot be too deep.
        let limit = Int(TS_MAX_DEPTH) - 1
        if self.length >= 2 * (limit + 1), let flat {
            let depth = tsj_depth(flat, self.length)
            if depth > limit {
                throw StoreError(.invalidJSON, "\(context()): nested \(depth) deep; a top-level value of the state may be at most \(limit) deep (TS_MAX_DEPTH - 1: the state object is one more level)")
            }
        }
    }

    /// Takes over text that is already minified JSON (from the JSON layer);
    /// `patchedFrom` when it is another slice with a patch applied.
    init(adoptingMinified text: UnsafeMutablePointer<CChar>, length: Int, patchedFrom: PatchOrigin? = nil, id: UInt64 = 0) {
        flat = text
        tree = nil
        splitTree = nil
        self.length = length
        self.patchedFrom = patchedFrom
        self.id = id != 0 ? id : Self.lastID.add(1, ordering: .relaxed).newValue
    }

    /// Takes over a tree (from tsj_tree_patch).
    init(adoptingTree tree: OpaquePointer, patchedFrom: PatchOrigin?, id: UInt64? = nil) {
        flat = nil
        self.tree = tree
        splitTree = tsj_tree_is_split(tree) != 0 ? tree : nil
        length = tsj_tree_length(tree)
        self.patchedFrom = patchedFrom
        self.id = id ?? Self.lastID.add(1, ordering: .relaxed).newValue
    }

    /// This slice kept as a tree when it is `treeBytes` or more and splits
    /// (the same value, same id); otherwise (or without memory for the
    /// tree) this slice itself.
    func asTree() -> JSONSlice {
        guard tree == nil, length >= Self.treeBytes, let flat else { return self }
        guard let made = tsj_tree_make(flat, length, nil) else { return self }
        guard tsj_tree_is_split(made) != 0 else {
            tsj_tree_free(made)
            return self
        }
        return JSONSlice(adoptingTree: made, patchedFrom: patchedFrom, id: id)
    }

    /// The slice this one was patched from and where the patch changed it
    /// (nil for a slice made any other way): pointer listeners whose value
    /// the patch cannot have changed skip comparing texts.
    let patchedFrom: PatchOrigin?

    deinit {
        tsj_doc_free(document)
        free(flat)
        tsj_tree_free(tree)
    }

    /// A copy of the text, malloc'ed, for the caller to free.
    func copyText() throws(StoreError) -> UnsafeMutablePointer<CChar> {
        guard let copy = malloc(length + 1)?.assumingMemoryBound(to: CChar.self) else {
            throw StoreError(.outOfMemory, "no memory for a copy of \(length) bytes")
        }
        memcpy(copy, try text, length + 1)
        return copy
    }

    /// The minified text of the value at `pointer` (an RFC 6901 pointer
    /// relative to this slice, "" for the slice itself), malloc'ed.
    package func value(at pointer: Substring.UTF8View, path: @autoclosure () -> String) throws(StoreError) -> (UnsafeMutablePointer<CChar>, Int) {
        if pointer.isEmpty { return (try copyText(), length) }
        let document = tree == nil ? indexed() : nil
        var out: UnsafeMutablePointer<CChar>?
        var outLength = 0
        var pointer = Substring(pointer)
        var error = tsj_error()
        let code = pointer.withUTF8 { bytes in
            let start = UnsafeRawPointer(bytes.baseAddress)?.assumingMemoryBound(to: CChar.self)
            return if let tree {
                tsj_tree_at_pointer(tree, start, bytes.count, &out, &outLength, &error)
            } else if let document {
                tsj_doc_at_pointer(document, start, bytes.count, &out, &outLength, &error)
            } else {
                tsj_text_at_pointer(flat, length, start, bytes.count, &out, &outLength, &error)
            }
        }
        if code != 0 { throw StoreError(error, context: "JSON Pointer \"\(path())\"") }
        guard let out else { throw StoreError(.outOfMemory, "no memory for the value at \"\(path())\"") }
        return (out, outLength)
    }

    /// The index if it was built already (nil otherwise: nothing is built).
    var builtIndex: OpaquePointer? { document }

    /// What ts_json_at calls (through tsi_reducer_call.slice_index) for the
    /// index of the slice a reducer got: `indexed()` of the JSONSlice that
    /// `owner` is (unretained; the reducer call holds the slice).
    /// Handed to CTurnstateSupport once (tsi_set_slice_index), not per call.
    static let indexProvider: @convention(c) (UnsafeMutableRawPointer?) -> UnsafeRawPointer? = { owner in
        guard let owner else { return nil }
        return Unmanaged<JSONSlice>.fromOpaque(owner)._withUnsafeGuaranteedRef { $0.indexed() }.map { UnsafeRawPointer($0) }
    }


    /// The index, built on first use; nil if it cannot be had (too big for
    /// `indexBudget`, or no memory now: the look-up walks the text, and a
    /// later one tries again after a failure for want of memory).
    func indexed() -> OpaquePointer? {
        if let document { return document }
        if unindexable.load(ordering: .relaxed) { return nil }
        guard let text = try? text else { return nil }
        var error = tsj_error()
        guard let made = tsj_doc_index(text, length, indexBudget, &error) else {
            if error.code != Int32(TSJ_ERR_NOMEM.rawValue) { unindexable.store(true, ordering: .relaxed) }
            return nil
        }
        let (won, current) = documentBits.compareExchange(expected: 0, desired: UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(made))),
                                                          ordering: .acquiringAndReleasing)
        if won { return made }
        tsj_doc_free(made)
        return OpaquePointer(bitPattern: current)
    }

    /// Bytes the index holds (0 before the first look-up), for tests.
    package var indexBytes: Int { tsj_doc_index_bytes(document) }
}

/// Where a patch changed a slice: the id of the slice it was applied to,
/// and the JSON Pointers (relative to the slice) of what its operations
/// changed, each cut back to its array when it ends in an array index or
/// "-" (an insertion or removal there moves the elements after it).
/// A class: a slice without one releases a nil reference, which costs less
/// per slice than destroying an optional struct with an array inside.
final class PatchOrigin: Sendable {
    let previousID: UInt64
    let paths: [String]

    init(previousID: UInt64, paths: [String]) {
        self.previousID = previousID
        self.paths = paths.map(Self.affected)
    }

    /// What a change at `path` can change: the path itself, or its array
    /// when its last token is an index or "-".
    static func affected(_ path: String) -> String {
        let utf8 = path.utf8
        guard let slash = utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
        let token = utf8[utf8.index(after: slash)...]
        let isIndex = (token.count == 1 && token.first == UInt8(ascii: "-"))
            || (!token.isEmpty && token.allSatisfy { $0 >= 0x30 && $0 <= 0x39 })
        return isIndex ? String(path[..<slash]) : path
    }

    /// Whether the value at `pointer` (relative to the slice) may differ
    /// after the patch: some changed path is at, above or below it.
    func mayChange(_ pointer: Substring.UTF8View) -> Bool {
        paths.contains { path in
            let path = path.utf8[...]
            return Self.isPrefix(path, of: pointer) || Self.isPrefix(pointer, of: path)
        }
    }

    /// Whether `a` names `b` or a value that holds it (token by token:
    /// "/items/1" holds "/items/1/done", not "/items/10").
    static func isPrefix(_ a: Substring.UTF8View, of b: Substring.UTF8View) -> Bool {
        guard b.starts(with: a) else { return false }
        let end = b.index(b.startIndex, offsetBy: a.count)
        return end == b.endIndex || b[end] == UInt8(ascii: "/")
    }
}
