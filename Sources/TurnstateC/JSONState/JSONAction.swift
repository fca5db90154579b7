#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTurnstate
import CTurnstateJSON
import Synchronization
import TurnstateCore

/// A tagged JSON action, parsed once: the view that reducers and middleware
/// get (`ts_action`) points into it. Made from C text (`init(parsing:)`), it
/// borrows that text from the caller of `ts_store_dispatch` (or of `next`),
/// which outlives the dispatch, so it must not outlive the dispatch either;
/// made from Swift (`init(copying:)`), it owns a copy.
package final class JSONAction: Action, @unchecked Sendable {
    /// The type and payload, unescaped and minified, in one block.
    private var block: UnsafeMutablePointer<CChar>
    package let view: UnsafeMutablePointer<ts_action>
    /// The byte length of the unescaped type (`view.pointee.type`), for
    /// reducers' type filters.
    private(set) var typeLength: Int
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
        let parsed = try Self.parse(json)
        block = parsed.block
        typeLength = parsed.typeLength
        view = .allocate(capacity: 1)
        view.initialize(to: parsed.view)
    }

    /// `json` parsed: its block (the type and payload, unescaped and
    /// minified; the caller owns it), the type's byte length, and the view.
    @inline(__always)
    private static func parse(_ json: UnsafePointer<CChar>) throws(StoreError)
        -> (block: UnsafeMutablePointer<CChar>, typeLength: Int, view: ts_action)
    {
        var block: UnsafeMutablePointer<CChar>?
        var type: UnsafePointer<CChar>?
        var typeLength = 0
        var payload: UnsafePointer<CChar>?
        try checkJSON("action") { tsj_parse_action(json, strlen(json), &block, &type, &typeLength, &payload, $0) }
        guard let block else { throw StoreError(.outOfMemory, "no memory for the action") }
        return (block, typeLength, ts_action(type: type, payload: payload, json: json))
    }

    /// Parses `json` into this action again, reusing the object and its
    /// view (a C store's spare action, ``SpareAction``). Only when nothing
    /// else uses the action. On failure the action is left as it was.
    func reparse(_ json: UnsafePointer<CChar>) throws(StoreError) {
        let parsed = try Self.parse(json)
        free(block)
        free(ownedText)
        ownedText = nil
        block = parsed.block
        typeLength = parsed.typeLength
        view.pointee = parsed.view
    }

    /// An action from its parts (ts_store_dispatch_parts): `type` not
    /// escaped, `payload` JSON text or nil. Its text, {"type":...,"payload":...},
    /// is made here, in the action's block, not parsed.
    package init(type: UnsafePointer<CChar>, payload: UnsafePointer<CChar>?) throws(StoreError) {
        var block: UnsafeMutablePointer<CChar>?
        var json: UnsafePointer<CChar>?
        var typeOut: UnsafePointer<CChar>?
        var payloadOut: UnsafePointer<CChar>?
        let typeLength = strlen(type)
        try checkJSON("action") {
            tsj_make_action(type, typeLength, payload, payload.map { strlen($0) } ?? 0, &block, &json, &typeOut,
                            &payloadOut, $0)
        }
        guard let block, let json else { throw StoreError(.outOfMemory, "no memory for the action") }
        self.block = block
        self.typeLength = typeLength
        view = .allocate(capacity: 1)
        view.initialize(to: ts_action(type: typeOut, payload: payloadOut, json: json))
    }

    deinit {
        free(block)
        free(ownedText)
        view.deallocate()
    }

    var json: UnsafePointer<CChar> { view.pointee.json }

    /// `action` as a JSONAction, if it is one: the existential is opened
    /// (its concrete type becomes the generic `A`) and its type compared,
    /// where `as?` walks the runtime's general cast machinery (hundreds of
    /// instructions) on every dispatch. JSONAction is final, so a type equal
    /// to it is it: the cast from `A` is then from a type to itself (the
    /// standard library's identity cast, which checks just that).
    @inline(__always)
    static func cast(_ action: any Action) -> JSONAction? {
        @inline(__always)
        func open<A: Action>(_ action: A) -> JSONAction? {
            guard A.self == JSONAction.self else { return nil }
            return _identityCast(action, to: JSONAction.self)
        }
        return open(action)
    }
    package var type: String { String(cString: view.pointee.type) }
}

/// One parsed action a C store keeps for its dispatches, so that a dispatch
/// parses into an action already made (no object and view allocated and
/// freed per dispatch). One dispatch at a time uses it: a dispatch made
/// while it is in use (another thread's, or a listener's nested one) parses
/// into a new action, as before.
final class SpareAction: Sendable {
    private let busy = Atomic<Bool>(false)
    // Written only by the dispatch that set `busy`.
    nonisolated(unsafe) private var action: JSONAction?

    /// Runs `body` with `json` parsed: into the spare action if it is free,
    /// else into a new one.
    @inline(__always)
    func withParsed(_ json: UnsafePointer<CChar>, _ body: (JSONAction) throws(StoreError) -> Void) throws(StoreError) {
        guard busy.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else {
            return try body(try JSONAction(parsing: json))
        }
        defer { busy.store(false, ordering: .releasing) }
        // Nothing keeps an action past its dispatch; should something have,
        // it keeps that one and the spare is a new action.
        var spare = action
        action = nil
        let parsed: JSONAction
        if isKnownUniquelyReferenced(&spare), let spare {
            action = spare
            try spare.reparse(json)
            parsed = spare
        } else {
            parsed = try JSONAction(parsing: json)
            action = parsed
        }
        try body(parsed)
    }
}
