#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import TurnstateCore

/// Tells whether the value at one JSON Pointer changed since it last looked.
/// Used only under the store's lock.
final class PointerWatcher: @unchecked Sendable {
    private let pointer: JSONPointer
    private unowned let owner: CStore
    /// What the value was last time: which slice (or state) it came from,
    /// and its text (nil if there was no value).
    private var lastSource: UInt64?
    private var lastText: [CChar]?
    private var primed = false

    init(pointer: JSONPointer, owner: CStore) {
        self.pointer = pointer
        self.owner = owner
    }

    /// Records the value in `state` as the one last seen (at subscribe).
    /// Throws only when there is no memory to look.
    func prime(in state: JSONState) throws(StoreError) {
        let (source, text) = try look(at: state)
        lastSource = source
        lastText = text
        primed = true
    }

    /// Looks at the value in `state`; true if it differs from the last time.
    /// When there is no memory to look it cannot tell, so it answers
    /// "changed" (the listener reads the state itself) and compares with the
    /// value it last saw the next time.
    func changed(in state: JSONState) -> Bool {
        if primed, unchanged(in: state) { return false }
        guard let (source, text) = try? look(at: state) else { return primed }
        defer {
            lastSource = source
            lastText = text
            primed = true
        }
        return primed && text != lastText
    }

    /// Whether the value's source is the one last seen: an unchanged slice
    /// (or state) holds an unchanged value, without a parse. So does a
    /// slice patched from the one last seen by a patch that changed nothing
    /// at, above or below the pointer (it becomes the source last seen).
    private func unchanged(in state: JSONState) -> Bool {
        if let key = pointer.key {
            guard let slice = slice(key, in: state) else { return false }
            if slice.id == lastSource { return true }
            if let origin = slice.patchedFrom, origin.previousID == lastSource, !origin.mayChange(pointer.rest.utf8) {
                lastSource = slice.id
                return true
            }
            return false
        }
        return state.generation == lastSource
    }

    /// Where the key was found last, and under which layout of the keys:
    /// while the layout is the same, finding the slice hashes nothing.
    private var hint = 0
    private var hintLayout: UInt64 = 0

    private func slice(_ key: String, in state: JSONState) -> JSONSlice? {
        guard let index = state.index(of: key, hint: hint, hintLayout: hintLayout) else { return nil }
        hint = index
        hintLayout = state.layout
        return state.slice(at: index)
    }

    /// The value's source and text (nil text: no value there).
    private func look(at state: JSONState) throws(StoreError) -> (UInt64?, [CChar]?) {
        guard let key = pointer.key else {
            return (state.generation, try owner.withWholeText(state) { Array($0) })
        }
        guard let slice = slice(key, in: state) else { return (nil, nil) }
        do {
            let (value, length) = try slice.value(at: pointer.rest.utf8, path: pointer.text)
            defer { free(value) }
            return (slice.id, Array(UnsafeBufferPointer(start: value, count: length)))
        } catch where error.code == .notFound {
            return (slice.id, nil)
        }
    }
}
