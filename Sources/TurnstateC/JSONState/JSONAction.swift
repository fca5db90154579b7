#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTurnstate
import CTurnstateJSON
import TurnstateCore

/// A tagged JSON action, parsed once: the view that reducers and middleware
/// get (`ts_action`) points into it. Made from C text (`init(parsing:)`), it
/// borrows that text from the caller of `ts_store_dispatch` (or of `next`),
/// which outlives the dispatch, so it must not outlive the dispatch either;
/// made from Swift (`init(copying:)`), it owns a copy.
package final class JSONAction: Action, @unchecked Sendable {
    /// The type and payload, unescaped and minified, in one block.
    private let block: UnsafeMutablePointer<CChar>
    package let view: UnsafeMutablePointer<ts_action>
    /// The byte length of the unescaped type (`view.pointee.type`), for
    /// reducers' type filters.
    let typeLength: Int
    /// The action's text when the action owns it (made from Swift).
    private var ownedText: UnsafeMutablePointer<CChar>?

    /// Parses a copy of `json`, which the action then owns.
    package convenience init(copying json: String) throws(StoreError) {
        guard let copy = strdup(json) else { throw StoreError(.outOfMemory, "no memory for the action") }
        do {
            try self.init(parsing: copy)
        } catch {
            free(copy)
            throw error
        }
        ownedText = copy
    }

    package init(parsing json: UnsafePointer<CChar>) throws(StoreError) {
        var block: UnsafeMutablePointer<CChar>?
        var type: UnsafePointer<CChar>?
        var typeLength = 0
        var payload: UnsafePointer<CChar>?
        try checkJSON("action") { tsj_parse_action(json, strlen(json), &block, &type, &typeLength, &payload, $0) }
        guard let block else { throw StoreError(.outOfMemory, "no memory for the action") }
        self.block = block
        self.typeLength = typeLength
        view = .allocate(capacity: 1)
        view.initialize(to: ts_action(type: type, payload: payload, json: json))
    }

    deinit {
        free(block)
        free(ownedText)
        view.deallocate()
    }

    var json: UnsafePointer<CChar> { view.pointee.json }

    /// `action` as a JSONAction, if it is one: a comparison of its dynamic
    /// type and a load of the reference, where `as?` walks the runtime's
    /// general cast machinery (hundreds of instructions) on every dispatch.
    @inline(__always)
    static func cast(_ action: any Action) -> JSONAction? {
        // The existential container's layout is part of Swift's ABI: three
        // words of value buffer (a class instance's reference in the first),
        // then the type's metadata, then the witness table. JSONAction is
        // final, so the metadata word names it exactly.
        withUnsafePointer(to: action) { container in
            let words = UnsafeRawPointer(container)
            guard words.load(fromByteOffset: 3 * MemoryLayout<Int>.size, as: UnsafeRawPointer.self)
                    == unsafeBitCast(JSONAction.self as Any.Type, to: UnsafeRawPointer.self) else { return nil }
            return words.load(as: JSONAction.self)
        }
    }
    package var type: String { String(cString: view.pointee.type) }
}
