#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

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
    /// How refusals name the calls: Swift's names, or those of the C API.
    @exclusivity(unchecked) @usableFromInline var callNames = CallNames.swift
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
    @exclusivity(unchecked) @usableFromInline var reentrancyViolation: StoreError?
    /// The calls under way that let go of the store in ``withoutLock(_:)``:
    /// their tickets, oldest first, and the next ticket (under the lock).
    @exclusivity(unchecked) var releasedTickets: [UInt64] = []
    @exclusivity(unchecked) var lastReleasedTicket: UInt64 = 0
    /// Signalled (under the lock) when a released call takes the store again.
    let releasedReturned: UnsafeMutablePointer<pthread_cond_t> = {
        let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        pthread_cond_init(condition, nil)
        return condition
    }()
    /// How many steps that must not be interleaved (a replaced reducer's
    /// announcement) are under way on the thread that holds the lock.
    @exclusivity(unchecked) @usableFromInline var unsplittableSteps = 0
    /// Objects that live as long as the store (a face's plugin set),
    /// released last attached first.
    @exclusivity(unchecked) private var attachments: [AnyObject] = []

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
        self.init(initialState: initialState, failableReducer: { state, action in body(&state, action) },
                  middleware: middleware)
    }

    /// Creates a store whose reducer may fail. A reducer that throws must
    /// leave the state exactly as it was; the dispatch then reports its error
    /// and nothing is notified. (For the C face, whose reducers are foreign.)
    @inlinable
    package init(
        initialState: State,
        failableReducer: @escaping @Sendable (inout State, any Action) throws(StoreError) -> Void,
        middleware: [any Middleware<State>] = [],
        skipsRepeats: (@Sendable (State, State) -> Bool)? = nil
    ) {
        current = initialState
        reduce = failableReducer
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
        pthread_cond_destroy(releasedReturned)
        releasedReturned.deallocate()
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

    /// Runs the reducers and then the listeners for `action`, as a dispatch
    /// that skips every middleware: for replaying recorded actions (the C
    /// face's `ts_store_api.apply`). Refused from inside a reducer and on a
    /// closed store.
    package func applySkippingMiddleware(_ action: any Action) throws(StoreError) {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing || closed) { throw refusal(.dispatch, type(of: action)) }
        try reduceAndNotifyLocked(action)
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
            reentrancyViolation = nil
            throw error
        }
        reducing = false
        reentrancyViolation = nil
        changes &+= 1
        notify()
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
    func refusal(_ call: StoreCall, _ actionType: Any.Type? = nil) -> StoreError {
        let name = callNames.name(of: call, actionType: actionType)
        if closed && !reducing {
            return StoreError(.storeReleased, "\(name) was called on a store that is closed: it is being destroyed or was released, and takes no new calls")
        }
        let error = StoreError(.reentrantCall, "\(name) was called from inside a reducer; reducers must be pure: no dispatch, getState, subscribe or unsubscribe")
        reentrancyViolation = error
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

    /// Names the store's calls in refusals as the C API does (for the C face).
    package func useCNames() { lock.withLock { callNames = .c } }

    /// For failable reducers and `mutateState` bodies (the C face): the error
    /// of a call that the running reducer made into the store, if any, so that
    /// it can fail the whole step. Only meaningful from inside them.
    package var reentrancyViolationDuringReduce: StoreError? { reentrancyViolation }

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

    /// Dispatches `action` from the place after the first middleware that
    /// `isPosition` accepts: through the middleware after it, then the
    /// reducers and listeners (the `next` that middleware is given). For a
    /// plugin that applies actions on behalf of others (the C face's
    /// `ts_store_api.dispatch_after`). False, with nothing run, when no
    /// middleware of the chain is accepted. Refused from inside a reducer
    /// and on a closed store.
    package func dispatch(_ action: any Action, after isPosition: (any Middleware<State>) -> Bool) throws(StoreError) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing || closed) { throw refusal(.dispatch, type(of: action)) }
        guard let index = middleware.firstIndex(where: isPosition), index < tails.count else { return false }
        try tails[index](action)
        return true
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

    /// Runs `swap` (which changes how the store reduces and returns how to
    /// undo that), then dispatches `action`, as one step under the lock.
    /// Undoes the swap if that dispatch throws before the state changed.
    /// For ``replaceReducer(_:)`` and the faces' keyed reducers.
    package func replaceReducer(_ call: StoreCall, announcing action: any Action,
                                _ swap: () throws(StoreError) -> (() -> Void)) throws(StoreError) {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing || closed) { throw refusal(call) }
        let undo = try swap()
        let before = changes
        unsplittableSteps += 1
        defer { unsplittableSteps -= 1 }
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

    /// Ends the subscription with `token`; does nothing if there is none.
    @inlinable
    package func unsubscribe(token: UInt64) throws(StoreError) {
        try lock.withLock { () throws(StoreError) in
            if _slowPath(reducing || closed) { throw refusal(.unsubscribe) }
            subscribers.remove(token: token)
        }
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

    /// Changes the state outside of any dispatch, as one step: for set-up and
    /// restore operations of the faces built on this store (adding a reducer
    /// whose slice is missing, restoring a snapshot). If `body` throws, it must
    /// leave the state as it was; nothing is notified then. Otherwise the
    /// listeners are called when `notify` is true.
    package func mutateState(_ call: StoreCall = .stateChange, notify: Bool,
                             _ body: (inout State) throws(StoreError) -> Void) throws(StoreError) {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing || closed) { throw refusal(call) }
        reducing = true
        defer { reentrancyViolation = nil }
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

    /// Runs `body` with the store's lock held, as one step that no dispatch
    /// interleaves with. For the faces built on this store.
    /// `call` names the operation in a refusal.
    @usableFromInline
    package func exclusively<R>(_ call: StoreCall = .operation, _ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        try lock.withLock { () throws(StoreError) -> R in
            if _slowPath(reducing || closed) { throw refusal(call) }
            return try body()
        }
    }

    /// Runs `body` with the store let go, then takes it again: for a C
    /// plugin's run() that waits on the network (`ts_store_api.unlocked`),
    /// so that other threads' calls go on meanwhile. Allowed only when the
    /// calling thread holds the store exactly once (the middleware of a
    /// dispatch that is not nested in another call into the store) and not
    /// in a step that must not be interleaved (a replaced reducer's
    /// announcement); otherwise refused with ``StoreError/Code/misuse``
    /// (``StoreError/Code/reentrantCall`` from a reducer) and `body` is not
    /// run. Whoever closes the store waits for such calls with
    /// ``waitForReleasedCalls()`` before freeing what they may use.
    /// `suspend` runs first, with the store held and the call accepted: it
    /// puts aside what the caller's frame keeps in the store's shared
    /// objects and returns how to put it back (run once the store is held
    /// again); it may refuse, and then nothing else is done.
    package func withoutLock<R>(suspending suspend: () throws(StoreError) -> (() -> Void),
                                _ body: () -> R) throws(StoreError) -> R {
        let held = lock.depthOnCurrentThread
        guard held > 0 else {
            throw StoreError(.misuse, "unlocked: the calling thread is not inside a call into this store (call it from the plugin's run())")
        }
        if reducing { throw refusal(.operation) }
        guard held == 1, unsplittableSteps == 0 else {
            throw StoreError(.misuse, "unlocked: this dispatch is nested inside another call into the store (a listener's or middleware's dispatch, exclusive, a replaced reducer's announcement), whose step must not be split; the store is kept")
        }
        let resume = try suspend()
        lastReleasedTicket += 1
        let ticket = lastReleasedTicket
        releasedTickets.append(ticket)
        let count = lock.releaseAll()
        let result = body()
        lock.retake(count)
        resume()
        if let index = releasedTickets.firstIndex(of: ticket) { releasedTickets.remove(at: index) }
        pthread_cond_broadcast(releasedReturned)
        return result
    }

    /// Waits until every call that had let go of the store in
    /// ``withoutLock(_:)`` when this was called has taken it again (and so,
    /// holding it, finished the step it was in). Does not wait when called
    /// from inside a call into the store (the lock already held): that
    /// caller's step must not be split either.
    package func waitForReleasedCalls() {
        lock.lock()
        defer { lock.unlock() }
        guard lock.depth == 1 else { return }
        let last = lastReleasedTicket
        while let oldest = releasedTickets.first, oldest <= last { lock.wait(releasedReturned) }
    }

    /// As ``exclusively(_:)``, but for the rest of a call already under way
    /// (a C middleware's `next`): not refused once the store is closed.
    @inlinable
    package func exclusivelyInFlight<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        try lock.withLock { () throws(StoreError) -> R in
            if _slowPath(reducing) { throw refusal(.dispatch) }
            return try body()
        }
    }
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

/// The calls a store can refuse, for messages.
@usableFromInline
package enum StoreCall: Sendable {
    case dispatch, getState, subscribe, unsubscribe, addMiddleware, removeMiddleware, replaceReducer, stateChange, operation
    /// The C face's own calls.
    case addReducer, removeReducer, replaceState, loadPlugin
}

/// How a face names the store's calls in messages.
@usableFromInline
enum CallNames: Sendable {
    /// `dispatch(AddTodo)`, `getState()`, ...
    case swift
    /// `ts_store_dispatch`, `ts_store_get_state`, ...: C users see C names.
    case c

    @usableFromInline
    func name(of call: StoreCall, actionType: Any.Type?) -> String {
        switch (self, call) {
        case (.swift, .dispatch): "dispatch(\(actionType.map { "\($0)" } ?? "_"))"
        case (.swift, .getState): "getState()"
        case (.swift, .subscribe): "subscribe"
        case (.swift, .unsubscribe): "unsubscribe"
        case (.swift, .addMiddleware): "addMiddleware"
        case (.swift, .removeMiddleware): "MiddlewareHandle.remove()"
        case (.swift, .replaceReducer): "replaceReducer"
        case (.c, .dispatch): "ts_store_dispatch"
        case (.c, .getState): "ts_store_get_state"
        case (.c, .subscribe): "ts_store_subscribe"
        case (.c, .unsubscribe): "ts_store_unsubscribe"
        case (.c, .addMiddleware): "ts_store_add_middleware"
        case (.c, .removeMiddleware): "ts_store_remove_middleware"
        case (.c, .replaceReducer): "ts_store_replace_reducer"
        case (_, .removeReducer): "ts_store_remove_reducer"
        case (_, .addReducer): "ts_store_add_reducer"
        case (_, .replaceState): "replace_state"
        case (_, .loadPlugin): "loading a plugin"
        case (_, .stateChange): "a state change"
        case (_, .operation): "a store operation"
        }
    }
}
