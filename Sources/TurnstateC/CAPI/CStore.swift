#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CTurnstate
import CTurnstateSupport
import TurnstateCore

/// The C face of one store: a `Store<JSONState>` whose reducers, listeners
/// and middleware are C callbacks. It translates; the core store holds the
/// semantics (ordering, re-entrancy, thread safety).
final class CStore: StoreFace, @unchecked Sendable {
    let store: Store<JSONState>
    /// What ts_store_dispatch parses into.
    private let spareAction = SpareAction()
    private let reducers: ReducerTable
    private(set) var api: StoreAPI!
    private var plugins: PluginSet<JSONState>!
    /// The middleware added with ts_store_add_middleware, by name, oldest
    /// first. Guarded by the store's lock.
    private var addedMiddleware: [(name: String, handle: MiddlewareHandle)] = []
    /// The whole state's text, rebuilt only after the state changed.
    /// Guarded by the store's lock.
    private var wholeText: (generation: UInt64, text: UnsafeMutablePointer<CChar>, length: Int)?
    /// The state's version and its migrations (CMigrations.swift). Guarded
    /// by the store's lock.
    var migrations = StateMigrations<JSONState>()

    init(initialState json: UnsafePointer<CChar>?) throws(StoreError) {
        let state = if let json { try JSONState(parsing: json, context: "initial state") } else { JSONState() }
        let reducers = ReducerTable()
        self.reducers = reducers
        // How ts_json_at reaches a reducer's slice's index (the same
        // function every time).
        tsi_set_slice_index(JSONSlice.indexProvider)
        store = Store(initialState: state, failableReducer: { state, action throws(StoreError) in
            try reducers.reduce(&state, action)
        }, reentrantCalls: reducers.reentrantCalls)
        store.nameOperations(CNames.name)
        api = try StoreAPI(for: self)
        plugins = PluginSet(store: store, api: api, bridge: JSONActionBridge())
    }

    deinit {
        // Normally done by ts_store_destroy already; here when it was called
        // from inside one of the store's callbacks. Closed first, so that no
        // plugin runs once the first destroy() begins; then the plugins, last
        // loaded first, while the store still exists (their table's functions
        // answer TS_E_STORE_GONE).
        store.close()
        // Dispatches that let go of the store in a plugin's unlocked() take
        // it again and finish before any plugin is destroyed.
        store.waitForReleasedCalls()
        // nil when init failed before the plugin set was made.
        plugins?.destroyAll()
        if let wholeText { free(wholeText.text) }
    }

    /// The `ts_store *` that C code holds for this store.
    var handle: OpaquePointer { OpaquePointer(Unmanaged.passUnretained(self).toOpaque()) }

    /// The store behind a `ts_store *`.
    @inline(__always)
    static func from(_ handle: OpaquePointer?, in function: StaticString) throws(StoreError) -> CStore {
        guard let handle else { throw StoreError(.badArgument, "\(function): store is NULL") }
        return Unmanaged<CStore>.fromOpaque(UnsafeRawPointer(handle)).takeUnretainedValue()
    }

    // MARK: Operations, one per C function

    func dispatch(_ json: UnsafePointer<CChar>) throws(StoreError) {
        try spareAction.withParsed(json) { action throws(StoreError) in try store.dispatch(action) }
    }

    /// Dispatches the action made from its parts (ts_store_dispatch_parts).
    func dispatch(type: UnsafePointer<CChar>, payload: UnsafePointer<CChar>?) throws(StoreError) {
        try store.dispatch(try JSONAction(type: type, payload: payload))
    }

    /// Runs the reducers and listeners for the action, skipping the middleware.
    func apply(_ json: UnsafePointer<CChar>) throws(StoreError) {
        try store.applySkippingMiddleware(try JSONAction(parsing: json))
    }

    /// The text at `pointer` (NULL or "" for the whole state), malloc'ed.
    func state(at pointer: UnsafePointer<CChar>?) throws(StoreError) -> UnsafeMutablePointer<CChar> {
        let pointer = try JSONPointer(pointer)
        return try store.exclusively(.getState) { () throws(StoreError) in
            let state = try store.getState()
            guard let key = pointer.key else { return try copyOfWholeText(state) }
            guard let slice = state[key] else {
                throw StoreError(.notFound, "JSON Pointer \"\(pointer.text)\": the state has no key \"\(key)\"")
            }
            return try slice.value(at: pointer.rest.utf8, path: pointer.text).0
        }
    }

    /// The whole state's text from the cache (rebuilt if the state changed),
    /// as bytes. Under the store's lock.
    func withWholeText<R>(_ state: JSONState, _ body: (UnsafeBufferPointer<CChar>) -> R) throws(StoreError) -> R {
        if wholeText?.generation != state.generation {
            let (text, length) = try state.wholeText()
            if let old = wholeText { free(old.text) }
            wholeText = (state.generation, text, length)
        }
        return body(UnsafeBufferPointer(start: wholeText!.text, count: wholeText!.length))
    }

    /// States this big are not cached for whole reads: the caller gets the
    /// text made for it (one copy of the state, not two), and an older
    /// cached text is dropped.
    static let uncachedWholeLength = 32 * 1024 * 1024

    private func copyOfWholeText(_ state: JSONState) throws(StoreError) -> UnsafeMutablePointer<CChar> {
        if wholeText?.generation != state.generation, state.wholeLength >= Self.uncachedWholeLength {
            if let old = wholeText { free(old.text) }
            wholeText = nil
            return try state.wholeText().0
        }
        let copy = try withWholeText(state) { bytes -> UnsafeMutablePointer<CChar>? in
            guard let copy = malloc(bytes.count + 1)?.assumingMemoryBound(to: CChar.self) else { return nil }
            memcpy(copy, bytes.baseAddress!, bytes.count)
            copy[bytes.count] = 0
            return copy
        }
        guard let copy else { throw StoreError(.outOfMemory, "no memory for a copy of the state") }
        return copy
    }

    func addReducer(key: UnsafePointer<CChar>, fn: ts_reducer_fn, context: UnsafeMutableRawPointer?,
                    types: TypeFilter? = nil, takesValue: Bool = false,
                    function: StaticString = "ts_store_add_reducer") throws(StoreError) {
        guard let key = String(validatingCString: key) else {
            throw StoreError(.badArgument, "\(function): the key is not valid UTF-8")
        }
        let entry = ReducerTable.Entry(key: key, fn: fn, context: context, types: types, takesValue: takesValue)
        try store.mutateState(.addReducer, notify: false) { state throws(StoreError) in
            guard !reducers.contains(key: key) else {
                throw StoreError(.badArgument, "\(function): the key \"\(key)\" already has a reducer")
            }
            if state[key] == nil {
                try state.set(key, try reducers.initialSlice(for: entry))
            }
            reducers.append(entry)
        }
    }

    /// Replaces the reducer of `key`, then dispatches {"type":"@@turnstate/replace"}.
    /// `types` is the new reducer's filter (nil: every action).
    func replaceReducer(key: UnsafePointer<CChar>, fn: ts_reducer_fn, context: UnsafeMutableRawPointer?,
                        types: TypeFilter? = nil, function: StaticString = "ts_store_replace_reducer") throws(StoreError) {
        let key = try Self.reducerKey(key, function)
        let entry = ReducerTable.Entry(key: key, fn: fn, context: context, types: types)
        let action = try JSONAction(parsing: replaceAction.cString)
        try store.replaceReducer(.replaceReducer, announcing: action) { () throws(StoreError) -> (() -> Void) in
            guard let index = reducers.index(of: key) else {
                throw StoreError(.notFound, "\(function): the key \"\(key)\" has no reducer (add one with ts_store_add_reducer)")
            }
            let old = reducers.entries[index]
            reducers.replace(at: index, with: entry)
            return { [reducers] in
                if let index = reducers.index(of: key) { reducers.replace(at: index, with: old) }
            }
        }
    }

    /// Removes the reducer of `key` (its slice stays in the state), then
    /// dispatches {"type":"@@turnstate/replace"}.
    func removeReducer(key: UnsafePointer<CChar>) throws(StoreError) {
        let key = try Self.reducerKey(key, "ts_store_remove_reducer")
        let action = try JSONAction(parsing: replaceAction.cString)
        try store.replaceReducer(.removeReducer, announcing: action) { () throws(StoreError) -> (() -> Void) in
            guard let index = reducers.index(of: key) else {
                throw StoreError(.notFound, "ts_store_remove_reducer: the key \"\(key)\" has no reducer")
            }
            let old = reducers.remove(at: index)
            return { [reducers] in
                if reducers.index(of: key) == nil { reducers.insert(old, at: index) }
            }
        }
    }

    private static func reducerKey(_ key: UnsafePointer<CChar>, _ function: StaticString) throws(StoreError) -> String {
        guard let key = String(validatingCString: key) else {
            throw StoreError(.badArgument, "\(function): the key is not valid UTF-8")
        }
        return key
    }

    /// Replaces the whole state (restoring a snapshot), then notifies.
    func replaceState(_ json: UnsafePointer<CChar>) throws(StoreError) {
        var replacement = try JSONState(parsing: json, context: "replace_state")
        try store.mutateState(.replaceState, notify: true) { state throws(StoreError) in
            try fillAndReplace(&state, with: &replacement)
        }
    }

    /// Puts `replacement` in place of `state`, with the first value of each
    /// reducer's key that it lacks. Under the store's lock.
    func fillAndReplace(_ state: inout JSONState, with replacement: inout JSONState) throws(StoreError) {
        for entry in reducers.entries where replacement[entry.key] == nil {
            try replacement.set(entry.key, try reducers.initialSlice(for: entry))
        }
        replacement.markChanged()
        state = replacement
    }

    func exclusive(_ body: () -> Int32) throws(StoreError) -> Int32 {
        try store.exclusively(.operation) { body() }
    }

    func stateVersion() throws(StoreError) -> UInt32 { try version() }

    /// Subscribes and writes the token to `token` before any listener can
    /// run: under the store's lock, so that a dispatch on another thread
    /// cannot call the new listener before its subscriber holds the token.
    func subscribe(pointer: UnsafePointer<CChar>?, fn: ts_listener_fn, context: UnsafeMutableRawPointer?,
                   token: UnsafeMutablePointer<UInt64>) throws(StoreError) {
        let listener = CListener(fn: fn, store: handle, context: context)
        let parsed: JSONPointer? = if let pointer { try JSONPointer(pointer) } else { nil }
        try store.exclusively(.subscribe) { () throws(StoreError) in
            guard let parsed else {
                token.pointee = try store.addListener { _ in listener.call() }
                return
            }
            let watcher = PointerWatcher(pointer: parsed, owner: self)
            try watcher.prime(in: try store.getState())
            token.pointee = try store.addListener { state in
                if watcher.changed(in: state) { listener.call() }
            }
        }
    }

    /// Closes the store: waits for dispatches under way on other threads;
    /// from then on every new call answers TS_E_STORE_GONE. Idempotent.
    func close() {
        store.close()
        // A dispatch that let go of the store in a plugin's unlocked() is
        // under way too: it takes the store again and finishes first.
        store.waitForReleasedCalls()
    }

    /// Destroys the plugins, last loaded first. Only after `close()`: no
    /// run() can start then, so none runs once its plugin's destroy() began.
    /// Idempotent.
    func destroyPlugins() { plugins.destroyAll() }

    func loadPlugin(path: UnsafePointer<CChar>, config: UnsafePointer<CChar>?) throws(StoreError) {
        // Config text that is not UTF-8 is invalid JSON (TS_E_JSON), as everywhere else.
        var configText: String?
        if let config {
            guard let text = String(validatingCString: config) else {
                throw notUTF8(UnsafeRawBufferPointer(start: config, count: strlen(config)), "config_json")
            }
            configText = text
        }
        try plugins.load(path: try Self.string(path, "path"), config: configText)
    }

    func loadPlugins(folder: UnsafePointer<CChar>) throws(StoreError) {
        try plugins.loadFolder(try Self.string(folder, "dir"))
    }

    private static func string(_ text: UnsafePointer<CChar>, _ name: StaticString) throws(StoreError) -> String {
        guard let string = String(validatingCString: text) else {
            throw StoreError(.badArgument, "\(name) is not valid UTF-8")
        }
        return string
    }

    func addMiddleware(name: String, fn: ts_middleware_fn, context: UnsafeMutableRawPointer?) throws(StoreError) {
        try store.exclusively(.addMiddleware) { () throws(StoreError) in
            let handle = try store.addMiddleware(
                CMiddleware(name: name, fn: fn, context: CContext(pointer: context),
                            host: CMiddlewareHost(api: api, store: store, bridge: JSONActionBridge())))
            addedMiddleware.append((name, handle))
        }
    }

    /// Removes the middleware added last under `name` by ts_store_add_middleware.
    func removeMiddleware(name: String) throws(StoreError) {
        try store.exclusively(.removeMiddleware) { () throws(StoreError) in
            guard let index = addedMiddleware.lastIndex(where: { $0.name.sameBytes(as: name) }) else {
                throw StoreError(.notFound, "ts_store_remove_middleware: no middleware named \"\(name)\" was added with ts_store_add_middleware (or it was removed already)")
            }
            try addedMiddleware[index].handle.remove()
            addedMiddleware.remove(at: index)
        }
        // Dispatches that let go of the store in a plugin's unlocked() run
        // on with the chain they started with: waited for, as the dispatches
        // that hold the store are (not from inside the store's callbacks).
        store.waitForReleasedCalls()
    }
}

/// A C listener and what it is called with.
struct CListener: @unchecked Sendable {
    let fn: ts_listener_fn
    let store: OpaquePointer
    let context: UnsafeMutableRawPointer?

    @inline(__always) func call() { fn(store, context) }
}

/// The C face's own operations, as its refusals name them.
extension StoreOperation {
    package static let addReducer = StoreOperation.face("ts_store_add_reducer")
    package static let removeReducer = StoreOperation.face("ts_store_remove_reducer")
    package static let replaceState = StoreOperation.face("replace_state")
    package static let loadPlugin = StoreOperation.face("loading a plugin")
}

/// How a C store's refusals name the core's operations: C users see the C
/// API's names (`ts_store_dispatch was called from inside a reducer`).
enum CNames {
    @Sendable
    static func name(_ operation: StoreOperation, _ actionType: Any.Type?) -> String? {
        switch operation {
        case .dispatch: "ts_store_dispatch"
        case .getState: "ts_store_get_state"
        case .subscribe: "ts_store_subscribe"
        case .unsubscribe: "ts_store_unsubscribe"
        case .addMiddleware: "ts_store_add_middleware"
        case .removeMiddleware: "ts_store_remove_middleware"
        case .replaceReducer: "ts_store_replace_reducer"
        // Named by this face already, or with no C name of their own.
        case .stateChange, .operation, .face: nil
        }
    }
}
