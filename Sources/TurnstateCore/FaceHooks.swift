/// The hooks of the faces built on the core: everything of `Store` that is
/// `package`, in one place.
///
/// A face is a second way into a store for code that is not plain Swift (the
/// C ABI in `TurnstateC`, the typed plugin host in `TurnstatePlugins`). It
/// keeps its own vocabulary: the core names its operations as Swift does
/// (``StoreOperation``) and a face renames them in its refusals
/// (``Store/nameOperations(_:)``). Nothing here is public; the public API
/// is in `Store.swift` and the files beside it.
///
/// Every hook keeps the store's rules: it takes the store's lock, and
/// (except ``Store/exclusivelyInFlight(_:)``) is refused from inside a
/// reducer (``StoreError/Code/reentrantCall``) and on a closed store
/// (``StoreError/Code/storeReleased``).

/// An operation a store can refuse, as refusals name it.
@usableFromInline
package enum StoreOperation: Sendable {
    case dispatch, getState, subscribe, unsubscribe, addMiddleware, removeMiddleware, replaceReducer
    /// ``Store/mutateState(_:notify:_:)`` with no name of the face's.
    case stateChange
    /// ``Store/exclusively(_:_:)`` with no name of the face's.
    case operation
    /// An operation of a face's own (adding a keyed reducer, loading a
    /// plugin), named by the face: the core never renames it.
    case face(StaticString)

    /// The name in a refusal of a store whose face named nothing:
    /// `dispatch(AddTodo)`, `getState()`, ...
    @usableFromInline
    func swiftName(actionType: Any.Type?) -> String {
        switch self {
        case .dispatch: "dispatch(\(actionType.map { "\($0)" } ?? "_"))"
        case .getState: "getState()"
        case .subscribe: "subscribe"
        case .unsubscribe: "unsubscribe"
        case .addMiddleware: "addMiddleware"
        case .removeMiddleware: "MiddlewareHandle.remove()"
        case .replaceReducer: "replaceReducer"
        case .stateChange: "a state change"
        case .operation: "a store operation"
        case .face(let name): "\(name)"
        }
    }
}

/// The call that a running reducer made into its store, if any: the store
/// refuses it (``StoreError/Code/reentrantCall``) and records it here, so
/// that a face whose reducers are foreign (and may ignore the refusal) can
/// fail the whole step. A face makes it and hands it to the store
/// (``Store/init(initialState:failableReducer:middleware:skipsRepeats:reentrantCalls:)``)
/// and keeps it for its reducers: it refers to nothing, so neither holds
/// the other. Read and written only under the store's lock.
@usableFromInline
package final class ReentrantCallLog: @unchecked Sendable {
    /// The refusal, from the time it was made until the reduction (or the
    /// ``Store/mutateState(_:notify:_:)`` body) it was made in ends.
    /// (Read through a getter of the core's: the core reads the field without
    /// an exclusivity check, which a read compiled into the face would make.)
    package var violation: StoreError? { recorded }
    /// Whether there is none: what a face asks on every step (a Bool
    /// answers without copying the optional error).
    package var isClear: Bool { recorded == nil }
    @exclusivity(unchecked) @usableFromInline var recorded: StoreError?

    @inlinable package init() {}
}

extension Store {
    /// Creates a store whose reducer may fail. A reducer that throws must
    /// leave the state exactly as it was; the dispatch then reports its error
    /// and nothing is notified. (For a face whose reducers are foreign.)
    /// `skipsRepeats` makes whole-state listeners skip a state it calls
    /// equal to the one they last got. `reentrantCalls` is where the store
    /// records a call that the running reducer made into it.
    @inlinable
    package convenience init(
        initialState: State,
        failableReducer: @escaping @Sendable (inout State, any Action) throws(StoreError) -> Void,
        middleware: [any Middleware<State>] = [],
        skipsRepeats: (@Sendable (State, State) -> Bool)? = nil,
        reentrantCalls: ReentrantCallLog = ReentrantCallLog()
    ) {
        self.init(initialState: initialState, reduce: failableReducer, middleware: middleware,
                  skipsRepeats: skipsRepeats, reentrancy: reentrantCalls)
    }

    // MARK: Naming

    /// Names the store's operations in its refusals as the face's users know
    /// them: `names` returns the name of an operation (and, for a dispatch,
    /// of the action's type), or nil to keep the Swift name. Called only
    /// when a call is refused.
    package func nameOperations(_ names: @escaping @Sendable (StoreOperation, Any.Type?) -> String?) {
        lock.withLock { operationNames = names }
    }

    // MARK: Dispatching

    /// Runs the reducers and then the listeners for `action`, as a dispatch
    /// that skips every middleware: for replaying recorded actions.
    package func applySkippingMiddleware(_ action: any Action) throws(StoreError) {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing || closed) { throw refusal(.dispatch, type(of: action)) }
        try reduceAndNotifyLocked(action)
    }

    /// Dispatches `action` from the place after the first middleware that
    /// `isPosition` accepts: through the middleware after it, then the
    /// reducers and listeners (the `next` that middleware is given). For a
    /// plugin that applies actions on behalf of others. False, with nothing
    /// run, when no middleware of the chain is accepted.
    package func dispatch(_ action: any Action, after isPosition: (any Middleware<State>) -> Bool) throws(StoreError) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing || closed) { throw refusal(.dispatch, type(of: action)) }
        guard let index = middleware.firstIndex(where: isPosition), index < tails.count else { return false }
        try tails[index](action)
        return true
    }

    /// Runs `swap` (which changes how the store reduces and returns how to
    /// undo that), then dispatches `action`, as one step under the lock.
    /// Undoes the swap if that dispatch throws before the state changed.
    /// For ``replaceReducer(_:)`` and the faces' keyed reducers.
    package func replaceReducer(_ call: StoreOperation, announcing action: any Action,
                                _ swap: () throws(StoreError) -> (() -> Void)) throws(StoreError) {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing || closed) { throw refusal(call) }
        let undo = try swap()
        let before = changes
        do {
            if let chain {
                try chain(action)
            } else {
                try reduceAndNotifyLocked(action)
            }
        } catch {
            if changes == before { undo() }
            throw error
        }
    }

    // MARK: Subscribing by token

    /// Adds a listener (wrapped to skip repeats if the store does) and
    /// returns its token; the listener stays until `unsubscribe(token:)`.
    /// For the faces, whose subscriptions are ended by token.
    @inlinable @inline(__always)
    package func addListener(
        receiveCurrent: Bool = false,
        _ listener: @escaping @Sendable (State) -> Void
    ) throws(StoreError) -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing || closed) { throw refusal(.subscribe) }
        return addListenerLocked(receiveCurrent: receiveCurrent, skipsRepeats: true, listener)
    }

    /// Ends the subscription with `token`; does nothing if there is none.
    @inlinable
    package func unsubscribe(token: UInt64) throws(StoreError) {
        try lock.withLock { () throws(StoreError) in
            if _slowPath(reducing || closed) { throw refusal(.unsubscribe) }
            subscribers.remove(token: token)
        }
    }

    // MARK: Steps of the face's own

    /// Changes the state outside of any dispatch, as one step: for set-up and
    /// restore operations of the faces built on this store (adding a reducer
    /// whose slice is missing, restoring a snapshot). If `body` throws, it must
    /// leave the state as it was; nothing is notified then. Otherwise the
    /// listeners are called when `notify` is true. `body` runs as a reducer
    /// does: a call it makes into the store is refused and recorded in the
    /// store's ``ReentrantCallLog``.
    package func mutateState(_ call: StoreOperation = .stateChange, notify: Bool,
                             _ body: (inout State) throws(StoreError) -> Void) throws(StoreError) {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing || closed) { throw refusal(call) }
        reducing = true
        defer { forgetReentrantCall() }
        do {
            try body(&current)
        } catch {
            reducing = false
            throw error
        }
        reducing = false
        changes &+= 1
        if notify { self.notify() }
    }

    /// Runs `body` with the store's lock held, as one step that no dispatch
    /// interleaves with. `call` names the operation in a refusal.
    @usableFromInline
    package func exclusively<R>(_ call: StoreOperation = .operation, _ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        try lock.withLock { () throws(StoreError) -> R in
            if _slowPath(reducing || closed) { throw refusal(call) }
            return try body()
        }
    }

    /// As ``exclusively(_:_:)``, but for the rest of a call already under
    /// way (a foreign middleware's `next`): not refused once the store is
    /// closed.
    @inlinable
    package func exclusivelyInFlight<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        try lock.withLock { () throws(StoreError) -> R in
            if _slowPath(reducing) { throw refusal(.dispatch) }
            return try body()
        }
    }

    // MARK: State of the store

    /// How many times the state has changed: compare two readings taken
    /// under the lock to tell whether anything changed in between.
    package var changeCount: UInt64 { lock.withLock { changes } }

    /// Whether the calling thread is inside a call into this store (a
    /// dispatch, or one of its callbacks). Waits while another thread is.
    package var isBusyOnCurrentThread: Bool { lock.isHeldByCurrentThread() }

    /// Keeps `object` alive as long as the store: for the faces built on the
    /// store, which hang their own resources (loaded plugins) on it. They are
    /// released in reverse order of attaching, so plugin sets loaded later
    /// are destroyed first.
    package func attach(_ object: AnyObject) {
        lock.withLock { attachments.append(object) }
    }
}
