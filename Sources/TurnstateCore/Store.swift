/// A predictable state container: one state, changed only by dispatching
/// actions through middleware to a pure reducer, with listeners told of
/// every change.
///
/// The rules it keeps (each one tested):
/// 1. `subscribe` does not call the listener at once unless asked to
///    (`receiveCurrent: true`); each dispatch calls every listener once, in
///    the order they subscribed, on the dispatching thread.
/// 2. The listener list is fixed when notification starts: a listener removed
///    during a dispatch is still called by that dispatch, and one added during
///    it is first called by the next. A dispatch made from inside a listener
///    runs at once, with the newest list; the outer dispatch then finishes
///    with its own, handing each remaining listener the newest state.
/// 3. Unsubscribing is idempotent and removes only its own subscription.
/// 4. A reducer may not dispatch, read the store, subscribe or unsubscribe:
///    such a call throws ``StoreError/Code/reentrantCall`` and has no effect.
///    Nothing deadlocks.
/// 5. Any thread may dispatch. Dispatches are serialized by a recursive lock
///    held for the whole dispatch (middleware, reducer, listeners), so no
///    update is lost and a listener or middleware may dispatch again.
/// 6. The store holds its listeners and middleware; they hold it only weakly
///    (``MiddlewareStore``, ``Unsubscribe``), so releasing the store frees them.
/// 7. Subscribing and unsubscribing cost O(1).
/// 8. A closed store (``close()``, or one being released) finishes the calls
///    under way and refuses every new one with
///    ``StoreError/Code/storeReleased``; only then are its plugins destroyed.
///
/// Do not block inside a listener or middleware waiting for another thread
/// that dispatches to the same store: that thread waits for the lock you hold.
public final class Store<State: Sendable>: MiddlewareOwner, @unchecked Sendable {
    // Everything below is guarded by `lock`.
    // The lock makes access exclusive, so the runtime's exclusivity checks
    // are turned off for these properties (they cost a fifth of a dispatch).
    @usableFromInline let lock = RecursiveLock()
    /// The state. A reducer changes it in place: it holds the only reference.
    @exclusivity(unchecked) @usableFromInline var current: State
    /// True while a reducer runs: the store then refuses every call.
    @exclusivity(unchecked) @usableFromInline var reducing = false
    /// True once the store is closed (``close()``): every new call is refused
    /// with ``StoreError/Code/storeReleased``; calls under way finish.
    @exclusivity(unchecked) @usableFromInline var closed = false
    /// How refusals name the operations, if a face named them
    /// (``nameOperations(_:)``); nil: as Swift calls them.
    @exclusivity(unchecked) @usableFromInline var operationNames: (@Sendable (StoreOperation, Any.Type?) -> String?)?
    /// Counts state changes, so that notification sees a nested dispatch.
    @exclusivity(unchecked) @usableFromInline var changes: UInt64 = 0
    /// The reducer the store was made with.
    @usableFromInline let reduce: @Sendable (inout State, any Action) throws(StoreError) -> Void
    /// The reducer that ``replaceReducer(_:)`` put in its place, if any
    /// (changed only outside of reductions). `reduce` stays a constant, which
    /// a dispatch calls without retaining it.
    @exclusivity(unchecked) @usableFromInline var replacement: ReducerBox<State>?
    @exclusivity(unchecked) @usableFromInline var isReplaced = false
    @exclusivity(unchecked) @usableFromInline var middleware: [any Middleware<State>] = []
    /// The id of each entry of `middleware` (for ``MiddlewareHandle/remove()``).
    @exclusivity(unchecked) @usableFromInline var middlewareIDs: [UInt64] = []
    @exclusivity(unchecked) @usableFromInline var lastMiddlewareID: UInt64 = 0
    /// The subscription of each object subscriber (``subscribe(_:)``), by object.
    @exclusivity(unchecked) @usableFromInline var objectTokens: [ObjectIdentifier: ObjectSubscription] = [:]
    /// Set by the `Equatable` initializer's `automaticallySkipsRepeats`: tells
    /// whole-state listeners to skip a state equal to the one they last got.
    @usableFromInline let isDuplicateState: (@Sendable (State, State) -> Bool)?
    /// The head of the middleware chain, rebuilt when middleware is added;
    /// `nil` when there is none.
    @exclusivity(unchecked) @usableFromInline var chain: Next?
    /// What each middleware passes on to: `tails[i]` is the rest of the chain
    /// after `middleware[i]`. Rebuilt with the chain.
    @exclusivity(unchecked) @usableFromInline var tails: [Next] = []
    /// What the chain's last `Next` reaches the store through; made with the
    /// first chain and told when the store goes.
    @exclusivity(unchecked) @usableFromInline var chainEnd: ChainEnd<State>?
    @exclusivity(unchecked) @usableFromInline var subscribers = SubscriberList<State>()
    @exclusivity(unchecked) @usableFromInline var lastToken: UInt64 = 0
    /// What this store's subscriptions end themselves through.
    @usableFromInline let link = StoreLink()
    /// The call a running reducer made into this store, if any (see
    /// ``ReentrantCallLog``).
    @usableFromInline let reentrancy: ReentrantCallLog
    /// Whether `reentrancy` holds a call (a flag of the store's own: the
    /// test after each reduction is then one load).
    @exclusivity(unchecked) @usableFromInline var reentrantCallRecorded = false
    /// Objects that live as long as the store (a face's plugin set),
    /// released last attached first (``attach(_:)``).
    @exclusivity(unchecked) var attachments: [AnyObject] = []

    /// Creates a store.
    /// - Parameters:
    ///   - initialState: the state before any action.
    ///   - reducer: computes each next state; see ``Reducer``.
    ///   - middleware: runs around every dispatch, the first listed first.
    @inlinable
    public convenience init(
        initialState: State,
        reducer: Reducer<State>,
        middleware: [any Middleware<State>] = []
    ) {
        let body = reducer.body
        self.init(initialState: initialState, reduce: { state, action in body(&state, action) },
                  middleware: middleware, skipsRepeats: nil, reentrancy: ReentrantCallLog())
    }

    /// Creates a store with a reducer that may fail (see
    /// ``init(initialState:failableReducer:middleware:skipsRepeats:)``, the
    /// faces' initializer).
    @inlinable
    init(
        initialState: State,
        reduce: @escaping @Sendable (inout State, any Action) throws(StoreError) -> Void,
        middleware: [any Middleware<State>],
        skipsRepeats: (@Sendable (State, State) -> Bool)?,
        reentrancy: ReentrantCallLog
    ) {
        current = initialState
        self.reduce = reduce
        self.reentrancy = reentrancy
        isDuplicateState = skipsRepeats
        self.middleware = middleware
        middlewareIDs = (0..<middleware.count).map { UInt64($0 + 1) }
        lastMiddlewareID = UInt64(middleware.count)
        rebuildChain()
        link.end = { [weak self] subscription, strictly in
            guard let self else {
                subscription.endWithoutStore()
                return nil
            }
            return self.end(subscription, strictly: strictly)
        }
    }

    deinit {
        // Closed first: a plugin thread that still holds a `next` or a table
        // is refused from here on, so no plugin runs once plugins start being
        // destroyed. Then last attached first (plugins loaded later go first).
        // A `Next` that a middleware kept past the store's life reaches the
        // store no more: its chain end answers storeReleased from here on.
        lock.withLock {
            closed = true
            chainEnd?.storeIsGone = true
        }
        while attachments.popLast() != nil {}
    }

    // MARK: Reading

    /// The current state: the state after the last dispatch that reached the
    /// reducer (from any thread; a dispatch under way on another thread is
    /// waited for). A closed store still has its last state.
    ///
    /// A reducer gets the state as its argument and must not read the store:
    /// read from inside a reducer of this store, `state` stops the program
    /// with a message that says so (the state is then half-reduced, and the
    /// reducer holds the only reference to it, so there is no other state to
    /// give). Use ``getState()`` where that must be an error you can handle.
    @inlinable
    public var state: State {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing) { reducerReadState() }
        return current
    }

    @usableFromInline
    func reducerReadState() -> Never {
        preconditionFailure("Store.state was read from inside a reducer of the same store: a reducer gets the state as its argument and must not read the store (getState() throws reentrantCall instead)")
    }

    /// The current state, as ``state``, but refusing instead of stopping:
    /// throws ``StoreError/Code/reentrantCall`` when called from inside a
    /// reducer, and ``StoreError/Code/storeReleased`` once the store is closed.
    /// For code that must not read a closed store (middleware, thunks).
    @inlinable
    public func getState() throws(StoreError) -> State {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing || closed) { throw refusal(.getState) }
        return current
    }

    // MARK: Dispatching

    /// Sends `action` through the middleware (first added, first run) to the
    /// reducer, then calls every listener.
    ///
    /// Throws what a middleware threw (for instance ``StoreError/Code/rejected``),
    /// ``StoreError/Code/reducerFailed`` if the reducer failed (the state is then
    /// unchanged), or ``StoreError/Code/reentrantCall`` when called from inside
    /// a reducer.
    @inlinable @inline(__always)
    public func dispatch(_ action: any Action) throws(StoreError) {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing || closed) { throw refusal(.dispatch, type(of: action)) }
        if let chain {
            try chain(action)
        } else {
            try reduceAndNotifyLocked(action)
        }
    }


    @inlinable
    func reduceAndNotify(_ action: any Action) throws(StoreError) {
        lock.lock()
        defer { lock.unlock() }
        try reduceAndNotifyLocked(action)
    }

    @inlinable @inline(__always)
    func reduceAndNotifyLocked(_ action: any Action) throws(StoreError) {
        // Not refused when closed: this is the end of a dispatch under way.
        if _slowPath(reducing) { throw refusal(.dispatch, type(of: action)) }
        reducing = true
        do {
            if _fastPath(!isReplaced) {
                try reduce(&current, action)
            } else {
                try reduceWithReplacement(action)
            }
        } catch {
            reducing = false
            forgetReentrantCall()
            throw error
        }
        reducing = false
        forgetReentrantCall()
        changes &+= 1
        notify()
    }

    /// Forgets the call the reducer that just ran made into the store, if
    /// any (a test, and a write only when there was one).
    @inlinable @inline(__always)
    func forgetReentrantCall() {
        if _slowPath(reentrantCallRecorded) {
            reentrantCallRecorded = false
            reentrancy.recorded = nil
        }
    }

    /// Runs the reducer that ``replaceReducer(_:)`` put in place (out of
    /// line, so that the usual dispatch stays small enough to inline).
    @usableFromInline @inline(never)
    func reduceWithReplacement(_ action: any Action) throws(StoreError) {
        try replacement.unsafelyUnwrapped.body(&current, action)
    }

    @inlinable @inline(__always)
    func notify() {
        let snapshot = subscribers.entries
        // Each listener gets the newest state: a listener before it may have
        // dispatched again (which counts a change). Between such changes one
        // immutable copy serves all, which lets the calls borrow it (and the
        // entries) instead of retaining them for each listener.
        var index = 0
        while index < snapshot.count {
            let seen = changes
            let state = current
            repeat {
                // A hole's listener does nothing.
                snapshot[index].deliver(state)
                index += 1
            } while index < snapshot.count && changes == seen
        }
    }

    /// The error for a call that the store refuses: one made from inside a
    /// reducer (recorded, so that the reducer's step fails too), or one made
    /// after the store closed.
    @usableFromInline
    func refusal(_ call: StoreOperation, _ actionType: Any.Type? = nil) -> StoreError {
        let name = operationNames?(call, actionType) ?? call.swiftName(actionType: actionType)
        if closed && !reducing {
            return StoreError(.storeReleased, "\(name) was called on a store that is closed: it is being destroyed or was released, and takes no new calls")
        }
        let error = StoreError(.reentrantCall, "\(name) was called from inside a reducer; reducers must be pure: no dispatch, getState, subscribe or unsubscribe")
        reentrancy.recorded = error
        reentrantCallRecorded = true
        return error
    }

    // MARK: Closing

    /// Closes the store: calls under way (on other threads: waited for; on
    /// this one: the dispatch this is called from) finish, and every new call
    /// (`dispatch`, `getState`, `subscribe`, `unsubscribe`, `addMiddleware`,
    /// from any thread, through any ``MiddlewareStore``) throws
    /// ``StoreError/Code/storeReleased`` without reaching middleware,
    /// reducers or listeners. Idempotent; a store is closed for good.
    /// Releasing a store closes it too.
    public func close() {
        lock.withLock { closed = true }
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { lock.withLock { closed } }


    // MARK: Middleware

    /// Appends `middleware` to the end of the chain. Dispatches already under
    /// way finish with the chain they started with.
    /// - Returns: the handle that removes it again (``MiddlewareHandle/remove()``);
    ///   dropping the handle keeps the middleware for the store's life.
    @discardableResult @inlinable
    public func addMiddleware(_ middleware: some Middleware<State>) throws(StoreError) -> MiddlewareHandle {
        try lock.withLock { () throws(StoreError) -> MiddlewareHandle in
            if _slowPath(reducing || closed) { throw refusal(.addMiddleware) }
            lastMiddlewareID += 1
            self.middleware.append(middleware)
            middlewareIDs.append(lastMiddlewareID)
            rebuildChain()
            return MiddlewareHandle(id: lastMiddlewareID, owner: self)
        }
    }

    /// Removes the middleware with `id`; false if there is none (any more).
    @usableFromInline
    func removeMiddleware(id: UInt64) throws(StoreError) -> Bool {
        try lock.withLock { () throws(StoreError) -> Bool in
            if _slowPath(reducing || closed) { throw refusal(.removeMiddleware) }
            guard let index = middlewareIDs.firstIndex(of: id) else { return false }
            middleware.remove(at: index)
            middlewareIDs.remove(at: index)
            rebuildChain()
            return true
        }
    }

    @inlinable
    func rebuildChain() {
        guard !middleware.isEmpty else {
            chain = nil
            tails = []
            return
        }
        let api = MiddlewareStore(self)
        if chainEnd == nil { chainEnd = ChainEnd(self) }
        let end = chainEnd.unsafelyUnwrapped
        var next = Next { action throws(StoreError) in try end.reduceAndNotify(action) }
        var tails: [Next] = []
        tails.reserveCapacity(middleware.count)
        for m in middleware.reversed() {
            let rest = next
            tails.append(rest)
            next = Next { action throws(StoreError) in try m.run(store: api, next: rest, action: action) }
        }
        self.tails = tails.reversed()
        chain = next
    }

    // MARK: Replacing the reducer

    /// Replaces the reducer (hot reload, code splitting), keeping the state,
    /// then dispatches ``ReducerReplaced`` through the middleware to the new
    /// reducer and the listeners, as Redux's `replaceReducer` dispatches
    /// `@@redux/REPLACE`: reducers can fill in what they need, middleware can
    /// log it.
    ///
    /// One step that no other dispatch interleaves with. If that dispatch
    /// fails before the state changed (a middleware refused the action), the
    /// old reducer is put back and the error thrown: the call then changed
    /// nothing. A middleware that swallows the action does not undo the
    /// replacement. Throws ``StoreError/Code/reentrantCall`` from inside a
    /// reducer and ``StoreError/Code/storeReleased`` once the store is closed.
    public func replaceReducer(_ reducer: Reducer<State>) throws(StoreError) {
        let body = reducer.body
        try replaceReducer(.replaceReducer, announcing: ReducerReplaced()) { () throws(StoreError) -> (() -> Void) in
            let old = (replacement, isReplaced)
            replacement = ReducerBox { state, action in body(&state, action) }
            isReplaced = true
            return { (self.replacement, self.isReplaced) = old }
        }
    }

    // MARK: Subscribing

    /// Calls `listener` with the state after every dispatch that reaches the
    /// reducer (for a store made with `automaticallySkipsRepeats`, only when
    /// the state differs from the one this listener last got).
    ///
    /// Keep the returned ``StoreSubscription``: the subscription ends when it
    /// is released or cancelled (or stored with ``StoreSubscription/store(in:)-(Set<StoreSubscription>)``
    /// in a set that is released).
    ///
    /// ```swift
    /// let subscription = try store.subscribe { state in print(state) }
    /// ```
    /// - Parameters:
    ///   - receiveCurrent: also call `listener` at once with the current state.
    ///   - listener: runs on the dispatching thread.
    /// - Returns: the subscription; it ends when released.
    @inlinable @inline(__always)
    public func subscribe(
        receiveCurrent: Bool = false,
        _ listener: @escaping @Sendable (State) -> Void
    ) throws(StoreError) -> StoreSubscription {
        StoreSubscription(token: try addListener(receiveCurrent: receiveCurrent, listener), owner: link)
    }


    /// As ``addListener(receiveCurrent:_:)``, with the lock held and the call
    /// checked. `skipsRepeats: false` for listeners that compare for themselves.
    @inlinable
    func addListenerLocked(
        receiveCurrent: Bool, skipsRepeats: Bool,
        _ listener: @escaping @Sendable (State) -> Void
    ) -> UInt64 {
        lastToken += 1
        let token = lastToken
        if skipsRepeats, let isDuplicateState {
            let last = LastValue(current)
            subscribers.append(token: token) { state in
                if !isDuplicateState(last.value, state) {
                    last.value = state
                    listener(state)
                }
            }
        } else {
            subscribers.append(token: token, listener)
        }
        if receiveCurrent { listener(current) }
        return token
    }


    /// Ends the subscription with `token` whatever the store is doing (a
    /// subscription released inside a reducer or after close): removing a
    /// listener cannot expose a state, so no rule forbids it.
    @inlinable func end(_ subscription: StoreSubscription, strictly: Bool) -> StoreError? {
        lock.lock()
        defer { lock.unlock() }
        if strictly, _slowPath(reducing || closed) { return refusal(.unsubscribe) }
        if subscription.ended { return nil }
        subscription.ended = true
        subscribers.remove(token: subscription.token)
        subscription.onEnd?()
        // An object subscriber's: forget the object too, unless it has been
        // subscribed again since (a new token) or is gone.
        if let object = subscription.object, objectTokens[object]?.token == subscription.token {
            objectTokens.removeValue(forKey: object)?.onEnd?()
        }
        return nil
    }

    /// The number of live subscriptions.
    public var subscriberCount: Int { lock.withLock { subscribers.count } }

}

/// The end of a store's middleware chain: what the last `Next` calls to reach
/// the reducers and listeners.
///
/// A middleware may keep a `Next` past the store's life, so the chain must not
/// own the store; a weak reference would do, but loading it costs atomic
/// side-table traffic on every dispatch (and a slow-path release after it).
/// Instead this holds the store unretained and the store's lock strongly: it
/// checks `storeIsGone` under the lock, which the store's `deinit` sets under
/// the same lock before anything of the store is freed. A call that passed the
/// check holds the lock, so a `deinit` begun on another thread waits for it to
/// finish (the store's memory is intact until `deinit` returns); a call after
/// it is refused with ``StoreError/Code/storeReleased``.
@usableFromInline
final class ChainEnd<State: Sendable>: @unchecked Sendable {
    @usableFromInline let store: Unmanaged<Store<State>>
    @usableFromInline let lock: RecursiveLock
    /// Set by the store's `deinit`, under `lock`.
    @exclusivity(unchecked) @usableFromInline var storeIsGone = false

    @usableFromInline init(_ store: Store<State>) {
        self.store = .passUnretained(store)
        lock = store.lock
    }

    /// The rest of a dispatch: the reducers, then the listeners. Takes the
    /// lock again (a load and a compare on the dispatching thread), since a
    /// kept `Next` may be called from anywhere.
    @inlinable
    func reduceAndNotify(_ action: any Action) throws(StoreError) {
        lock.lock()
        defer { lock.unlock() }
        guard _fastPath(!storeIsGone) else { throw StoreError(.storeReleased, "the store was released") }
        // Borrowed, not retained: the store's reference counts live in a side
        // table (it is weakly referenced), where each retain takes a slow path.
        do {
            try store._withUnsafeGuaranteedRef { try $0.reduceAndNotifyLocked(action) }
        } catch {
            throw error as! StoreError
        }
    }
}

/// A store's reducer.
@usableFromInline
final class ReducerBox<State>: Sendable {
    @usableFromInline let body: @Sendable (inout State, any Action) throws(StoreError) -> Void

    @usableFromInline
    init(_ body: @escaping @Sendable (inout State, any Action) throws(StoreError) -> Void) {
        self.body = body
    }
}
