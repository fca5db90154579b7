#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTurnstate
import CTurnstateJSON
import CTurnstateSupport
import TurnstateCore

/// The action a reducer gets when it must produce the first value of its slice.
let initAction: StaticString = #"{"type":"@@turnstate/init"}"#

/// The action dispatched after a reducer was replaced or removed.
let replaceAction: StaticString = #"{"type":"@@turnstate/replace"}"#

extension StaticString {
    /// The literal as a C string (string literals are stored NUL-terminated).
    var cString: UnsafePointer<CChar> { UnsafeRawPointer(utf8Start).assumingMemoryBound(to: CChar.self) }
}

/// The action types a reducer handles (ts_store_add_reducer_for): exact
/// types and prefix patterns ("todos/*"), checked and precomputed once.
final class TypeFilter: @unchecked Sendable {
    let filter: OpaquePointer
    /// The patterns, as given (for messages and tests).
    let patterns: [String]

    private init(filter: OpaquePointer, patterns: [String]) {
        self.filter = filter
        self.patterns = patterns
    }

    deinit { tsi_type_filter_free(filter) }

    /// The filter for a NULL-terminated array of patterns; nil (every
    /// action) for NULL or an empty array. Each pattern must be non-empty
    /// UTF-8, with "*" only as its last character after a "/" ("todos/*").
    static func make(_ types: UnsafePointer<UnsafePointer<CChar>?>?, function: StaticString) throws(StoreError) -> TypeFilter? {
        guard let types else { return nil }
        var patterns: [String] = []
        var raw: [UnsafePointer<CChar>?] = []
        var index = 0
        while let pattern = types[index] {
            guard let text = String(validatingCString: pattern) else {
                throw StoreError(.badArgument, "\(function): types[\(index)] is not valid UTF-8")
            }
            guard !text.isEmpty else {
                throw StoreError(.badArgument, "\(function): types[\(index)] is empty; give an action type (\"todos/add\") or a prefix pattern (\"todos/*\")")
            }
            let bytes = Array(text.utf8)
            let star = UInt8(ascii: "*"), slash = UInt8(ascii: "/")
            if let at = bytes.firstIndex(of: star),
               at != bytes.count - 1 || bytes.count < 2 || bytes[at - 1] != slash {
                throw StoreError(.badArgument, "\(function): types[\(index)] \"\(text)\" is neither an action type nor a prefix pattern: \"*\" may only end a pattern, after a \"/\" (\"todos/*\")")
            }
            patterns.append(text)
            raw.append(pattern)
            index += 1
        }
        guard !raw.isEmpty else { return nil }
        let made = raw.withUnsafeBufferPointer { tsi_type_filter_make($0.baseAddress, $0.count) }
        guard let made else { throw StoreError(.outOfMemory, "\(function): no memory for the filter of \(raw.count) types") }
        return TypeFilter(filter: made, patterns: patterns)
    }
}

/// The C reducers of one store, each owning a top-level key, and the
/// all-or-nothing reduction over them. Read and changed only under the
/// store's lock.
final class ReducerTable: @unchecked Sendable {
    struct Entry {
        let key: String
        let fn: ts_reducer_fn
        let context: UnsafeMutableRawPointer?
        /// The action types the reducer is called for (besides the store's
        /// own "@@turnstate/" actions), or nil for every action. `filter` is
        /// `types.filter`, read without reference counting per dispatch.
        let types: TypeFilter?
        let filter: OpaquePointer?
        /// Where the key was last found among the state's members, and under
        /// which layout of the state (JSONState.layout): a hint that saves
        /// hashing the key on every dispatch.
        var memberIndex = 0
        var memberLayout: UInt64 = 0
        /// A patch reducer (ts_store_add_patch_reducer): `fn` is a
        /// ts_patch_reducer_fn, called with its slice as a ts_json.
        let takesValue: Bool

        init(key: String, fn: ts_reducer_fn, context: UnsafeMutableRawPointer?, types: TypeFilter? = nil,
             takesValue: Bool = false) {
            self.key = key
            self.fn = fn
            self.context = context
            self.types = types
            self.takesValue = takesValue
            filter = types?.filter
        }
    }

    @exclusivity(unchecked) private(set) var entries: [Entry] = []
    /// Where the store records a call that a reducer made into it (handed
    /// to the store when it is made): such a call fails the whole step.
    let reentrantCalls = ReentrantCallLog()

    func contains(key: String) -> Bool { entries.contains { $0.key.sameBytes(as: key) } }

    func append(_ entry: Entry) { entries.append(entry) }

    /// Where the reducer for `key` is in the table.
    func index(of key: String) -> Int? { entries.firstIndex { $0.key.sameBytes(as: key) } }

    /// Puts `entry` at `index` (replacing the reducer there).
    func replace(at index: Int, with entry: Entry) { entries[index] = entry }

    /// Removes the reducer at `index` and returns it.
    func remove(at index: Int) -> Entry { entries.remove(at: index) }

    /// Puts `entry` back at `index` (or at the end, if the table got shorter).
    func insert(_ entry: Entry, at index: Int) { entries.insert(entry, at: min(index, entries.count)) }

    /// Runs every reducer; applies their results only if all succeeded.
    func reduce(_ state: inout JSONState, _ action: any Action) throws(StoreError) {
        guard let action = JSONAction.cast(action) else {
            throw StoreError(.notAnAction, "a C store reduces only tagged JSON actions, not \(type(of: action))")
        }
        // Most dispatches change at most one slice: the first change is kept
        // inline, so that the common case allocates no array.
        var first: (index: Int, slice: JSONSlice)?
        var more: [(index: Int, slice: JSONSlice)] = []
        var failure: StoreError?
        let type = action.view.pointee.type!
        for position in entries.indices {
            // A reducer that names its types skips the others before anything else.
            if let filter = entries[position].filter, tsi_type_filter_match(filter, type, action.typeLength) == 0 {
                continue
            }
            // Fields read one by one: a copy of the entry would retain its
            // key and filter on every dispatch.
            guard let index = state.index(of: entries[position].key, hint: entries[position].memberIndex,
                                          hintLayout: entries[position].memberLayout) else { continue }
            entries[position].memberIndex = index
            entries[position].memberLayout = state.layout
            let fn = entries[position].fn
            let context = entries[position].context
            let slice = state.slice(at: index)
            var call = tsi_reducer_call()
            // For ts_json_at: the slice's length and index.
            call.slice_length = slice.length
            call.slice_owner = Unmanaged.passUnretained(slice).toOpaque()
            call.slice_id = slice.id
            let output: UnsafeMutablePointer<CChar>?
            if let flat = slice.flat, !entries[position].takesValue {
                output = tsi_call_reducer(unsafeBitCast(fn, to: tsi_reducer_fn.self), flat, action.view, context, &call)
            } else {
                do {
                    output = try Self.callWithSlice(fn, takesValue: entries[position].takesValue, slice, action.view,
                                                    context, &call)
                } catch {
                    failure = error
                    break
                }
            }
            if call.failed != 0 {
                free(output)
                failure = Self.failure(of: &call, key: entries[position].key, actionType: action.type)
                break
            }
            if call.patched != 0 {
                do {
                    guard let patched = try Self.applyPatch(&call, to: slice, asTree: entries[position].takesValue,
                                                            output: output, key: entries[position].key,
                                                            action: action) else { continue }
                    if first == nil { first = (index, patched) } else { more.append((index, patched)) }
                    continue
                } catch {
                    failure = error
                    break
                }
            }
            guard let output else { continue }
            defer { free(output) }
            do {
                let slice = try JSONSlice(validatingSlice: output, length: strlen(output), id: call.answer_id,
                                          context: "the reducer for \"\(entries[position].key)\" returned invalid JSON for \"\(action.type)\"")
                if first == nil { first = (index, slice) } else { more.append((index, slice)) }
            } catch {
                // No memory to check the output is the library's fault, not the reducer's.
                failure = error.code == .outOfMemory
                    ? StoreError(.outOfMemory, "no memory to check the \(strlen(output)) bytes that the reducer for \"\(entries[position].key)\" returned for \"\(action.type)\"")
                    : StoreError(.reducerFailed, error.message)
                break
            }
        }
        if !reentrantCalls.isClear, let violation = reentrantCalls.violation {
            throw StoreError(.reentrantCall, "while reducing \"\(action.type)\": \(violation.message)")
        }
        if let failure { throw failure }
        guard let first else { return }
        state.setSlice(at: first.index, first.slice)
        for change in more { state.setSlice(at: change.index, change.slice) }
    }

    /// Applies the patch a reducer gave (ts_reducer_patch) to its slice:
    /// the new slice, or nil when the patch changes nothing. Frees the
    /// patch, and `output`, which must be NULL.
    @inline(never)  // kept out of reduce(): the plain dispatch of a whole-slice reducer stays small
    private static func applyPatch(_ call: inout tsi_reducer_call, to slice: JSONSlice, asTree: Bool,
                                   output: UnsafeMutablePointer<CChar>?,
                                   key: String, action: JSONAction) throws(StoreError) -> JSONSlice? {
        defer { tsi_reducer_clear(&call) }
        if let output {
            free(output)
            throw StoreError(.reducerFailed, "the reducer for \"\(key)\" returned both a patch and a new slice for \"\(action.type)\": after ts_reducer_patch, return NULL")
        }
        var length = 0
        let patch = tsi_reducer_patch_text(&call, &length)
        final class Paths {
            var paths: [String] = []
        }
        let paths = Paths()
        let collect: tsj_path_cb = { path, pathLength, context in
            let paths = Unmanaged<Paths>.fromOpaque(context!).takeUnretainedValue()
            paths.paths.append(String(decoding: UnsafeRawBufferPointer(start: path, count: pathLength), as: UTF8.self))
        }
        var error = tsj_error()
        func failed(_ code: Int32) -> StoreError {
            if code == Int32(TSJ_ERR_NOMEM.rawValue) {
                return StoreError(.outOfMemory, "no memory to apply the patch that the reducer for \"\(key)\" returned for \"\(action.type)\" to its \(slice.length) bytes")
            }
            return StoreError(error, context: "the reducer for \"\(key)\" returned a patch that failed for \"\(action.type)\"", code: .reducerFailed)
        }
        // A patch reducer's big slice is patched as a tree (made from its
        // text the first time, when it splits): the patch then costs what it
        // changes. A ts_reducer_fn gets the text of its slice on every call
        // anyway: its slice is patched as one text (joined if it was a tree).
        var tree = asTree ? slice.tree : nil
        var madeTree: OpaquePointer?
        defer { tsj_tree_free(madeTree) }
        if asTree, tree == nil, slice.length >= JSONSlice.treeBytes {
            let text = try slice.text
            madeTree = tsj_tree_make(text, slice.length, &error)
            if madeTree == nil, error.code == Int32(TSJ_ERR_NOMEM.rawValue) { throw failed(error.code) }
            if let madeTree, tsj_tree_is_split(madeTree) != 0 { tree = madeTree }
        }
        if let tree {
            var out: OpaquePointer?
            let code = withExtendedLifetime(paths) {
                tsj_tree_patch(tree, patch, length, Int(TS_MAX_DEPTH) - 1, &out, collect,
                               Unmanaged.passUnretained(paths).toOpaque(), &error)
            }
            if code != 0 { throw failed(code) }
            guard let out else { return nil }
            return JSONSlice(adoptingTree: out, patchedFrom: PatchOrigin(previousID: slice.id, paths: paths.paths),
                             id: call.answer_id != 0 ? call.answer_id : nil)
        }
        var out: UnsafeMutablePointer<CChar>?
        var outLength = 0
        let text = try slice.text
        // The slice's index when it has one already: building one for a
        // single look-up would cost more than stepping to the target.
        let code = withExtendedLifetime(paths) {
            tsj_patch_apply(text, slice.length, slice.builtIndex, patch, length, Int(TS_MAX_DEPTH) - 1,
                            &out, &outLength, collect, Unmanaged.passUnretained(paths).toOpaque(), &error)
        }
        if code != 0 { throw failed(code) }
        guard let out else { return nil }
        return JSONSlice(adoptingMinified: out, length: outLength,
                         patchedFrom: PatchOrigin(previousID: slice.id, paths: paths.paths), id: call.answer_id)
    }

    /// Calls a reducer with its slice when that is not the plain case (a
    /// ts_reducer_fn and a slice that is one text): a patch reducer gets
    /// the slice's tree when it is split (its text is never made), else
    /// its text; a ts_reducer_fn of a slice kept as a tree gets its text,
    /// joined.
    @inline(never)
    private static func callWithSlice(
        _ fn: ts_reducer_fn, takesValue: Bool, _ slice: JSONSlice, _ action: UnsafePointer<ts_action>,
        _ context: UnsafeMutableRawPointer?, _ call: inout tsi_reducer_call
    ) throws(StoreError) -> UnsafeMutablePointer<CChar>? {
        if takesValue, let tree = slice.splitTree {
            return tsi_call_patch_reducer(unsafeBitCast(fn, to: tsi_reducer_fn.self), nil, slice.length,
                                          UnsafeRawPointer(tree), nil, action, context, &call)
        }
        let text = try slice.text
        if takesValue {
            // Its index is made on the first look-up, as for slice_json.
            return tsi_call_patch_reducer(unsafeBitCast(fn, to: tsi_reducer_fn.self), text, slice.length, nil, nil,
                                          action, context, &call)
        }
        return tsi_call_reducer(unsafeBitCast(fn, to: tsi_reducer_fn.self), text, action, context, &call)
    }

    /// Gives a reducer whose key is missing its first slice: calls it with
    /// no slice and the action {"type": "@@turnstate/init"}. Fails if it
    /// returns nothing or invalid JSON, or calls into the store.
    func initialSlice(for entry: Entry) throws(StoreError) -> JSONSlice {
        let action = try JSONAction(parsing: initAction.cString)
        var call = tsi_reducer_call()
        let output = Self.call(entry, nil, action.view, &call)
        defer { free(output) }
        if let violation = reentrantCalls.violation {
            tsi_reducer_clear(&call)
            throw StoreError(.reentrantCall, "the reducer for \"\(entry.key)\" called into its store during \"@@turnstate/init\": \(violation.message)")
        }
        if call.failed != 0 { throw Self.failure(of: &call, key: entry.key, actionType: "@@turnstate/init") }
        guard let output else {
            throw StoreError(.reducerFailed, "the reducer for \"\(entry.key)\" returned NULL for \"@@turnstate/init\", but the state has no \"\(entry.key)\" yet: return its first value")
        }
        let slice: JSONSlice
        do {
            slice = try JSONSlice(validatingSlice: output, length: strlen(output), id: call.answer_id,
                                  context: "the reducer for \"\(entry.key)\" returned invalid JSON for \"@@turnstate/init\"")
        } catch {
            throw error.code == .outOfMemory ? error : StoreError(.reducerFailed, error.message)
        }
        // A patch reducer's big slice is kept as a tree from the start: its
        // first patch then costs what it changes too.
        return entry.takesValue ? slice.asTree() : slice
    }

    /// Calls a reducer with `call` registered as the calling thread's
    /// innermost reducer call, so that ts_reducer_fail can mark it failed.
    @inline(__always)
    private static func call(
        _ entry: Entry, _ slice: UnsafePointer<CChar>?, _ action: UnsafePointer<ts_action>,
        _ call: inout tsi_reducer_call
    ) -> UnsafeMutablePointer<CChar>? {
        if entry.takesValue {
            return tsi_call_patch_reducer(unsafeBitCast(entry.fn, to: tsi_reducer_fn.self), slice, slice.map { strlen($0) } ?? 0,
                                          nil, nil, action, entry.context, &call)
        }
        return tsi_call_reducer(unsafeBitCast(entry.fn, to: tsi_reducer_fn.self), slice, action, entry.context, &call)
    }

    /// The error for a reducer that called ts_reducer_fail, with its reason;
    /// frees the reason.
    private static func failure(of call: inout tsi_reducer_call, key: String, actionType: String) -> StoreError {
        defer { tsi_reducer_clear(&call) }
        let prefix = "the reducer for \"\(key)\" failed for \"\(actionType)\""
        if let message = call.message {
            // Bytes that are not UTF-8 become U+FFFD: ts_last_error is UTF-8.
            let reason = String(decoding: UnsafeRawBufferPointer(start: message, count: strlen(message)), as: UTF8.self)
            return StoreError(.reducerFailed, "\(prefix): \(reason)")
        }
        return StoreError(.reducerFailed, call.lost != 0 ? "\(prefix) (no memory to keep its reason)" : "\(prefix) (it gave no reason)")
    }
}
