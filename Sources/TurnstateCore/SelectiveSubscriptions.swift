extension Store {
    /// Calls `listener` with the part of the state that `select` picks, only
    /// when it differs from the last value *this listener* was given (or, before
    /// the first call, from the value when it subscribed).
    ///
    /// ```swift
    /// let subscription = try store.subscribe(select: { $0.todos.count }) { count in print(count) }
    /// ```
    /// - Parameters:
    ///   - select: picks the part of the state to watch; runs after every dispatch.
    ///   - receiveCurrent: also call `listener` at once with the current selection.
    ///   - listener: runs on the dispatching thread.
    /// - Returns: the subscription; it ends when released.
    @inlinable
    public func subscribe<Selected: Equatable & Sendable>(
        select: @escaping @Sendable (State) -> Selected,
        receiveCurrent: Bool = false,
        _ listener: @escaping @Sendable (Selected) -> Void
    ) throws(StoreError) -> StoreSubscription {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing || closed) { throw refusal(.subscribe) }
        let last = LastValue(select(current))
        let token = addListenerLocked(receiveCurrent: false, skipsRepeats: false) { state in
            let value = select(state)
            if value != last.value {
                last.value = value
                listener(value)
            }
        }
        if receiveCurrent { listener(last.value) }
        return StoreSubscription(token: token, owner: link)
    }

    /// Calls `listener` with the part of the state that `select` picks, only
    /// when `isDuplicate(last, new)` is false for the last value this listener
    /// was given (or, before the first call, the value when it subscribed):
    /// for selections that are not `Equatable`, or that compare by identity
    /// or by a version number.
    ///
    /// ```swift
    /// let subscription = try store.subscribe(select: { $0.document },
    ///                                        isDuplicate: { $0.version == $1.version }) { render($0) }
    /// ```
    public func subscribe<Selected: Sendable>(
        select: @escaping @Sendable (State) -> Selected,
        isDuplicate: @escaping @Sendable (Selected, Selected) -> Bool,
        receiveCurrent: Bool = false,
        _ listener: @escaping @Sendable (Selected) -> Void
    ) throws(StoreError) -> StoreSubscription {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing || closed) { throw refusal(.subscribe) }
        let last = LastValue(select(current))
        let token = addListenerLocked(receiveCurrent: false, skipsRepeats: false) { state in
            let value = select(state)
            if !isDuplicate(last.value, value) {
                last.value = value
                listener(value)
            }
        }
        if receiveCurrent { listener(last.value) }
        return StoreSubscription(token: token, owner: link)
    }

    /// Calls `listener` with the value at `keyPath`, only when it differs from
    /// the last value this listener was given. See ``subscribe(select:receiveCurrent:_:)-9tna4``.
    public func subscribe<Selected: Equatable & Sendable>(
        _ keyPath: KeyPath<State, Selected> & Sendable,
        receiveCurrent: Bool = false,
        _ listener: @escaping @Sendable (Selected) -> Void
    ) throws(StoreError) -> StoreSubscription {
        try subscribe(select: { $0[keyPath: keyPath] }, receiveCurrent: receiveCurrent, listener)
    }

    /// Calls `listener` with the part of the state that `select` picks after
    /// every dispatch, changed or not (for selections that are not `Equatable`;
    /// see also ``subscribe(select:isDuplicate:receiveCurrent:_:)``).
    public func subscribe<Selected: Sendable>(
        select: @escaping @Sendable (State) -> Selected,
        receiveCurrent: Bool = false,
        _ listener: @escaping @Sendable (Selected) -> Void
    ) throws(StoreError) -> StoreSubscription {
        try subscribe(receiveCurrent: receiveCurrent) { listener(select($0)) }
    }
}

extension Store where State: Equatable {
    /// Creates a store whose whole-state listeners skip repeats: a listener
    /// added with ``subscribe(receiveCurrent:_:)`` (or an object subscriber
    /// without a selection) is called only when the state differs from the
    /// one it last got, as with ReSwift's `automaticallySkipsRepeats`.
    /// Selective subscriptions compare their selections in any case.
    /// - Parameters:
    ///   - initialState: the state before any action.
    ///   - reducer: computes each next state; see ``Reducer``.
    ///   - middleware: runs around every dispatch, the first listed first.
    ///   - automaticallySkipsRepeats: `false` makes this the plain initializer.
    public convenience init(
        initialState: State,
        reducer: Reducer<State>,
        middleware: [any Middleware<State>] = [],
        automaticallySkipsRepeats: Bool
    ) {
        let body = reducer.body
        var equal: (@Sendable (State, State) -> Bool)?
        if automaticallySkipsRepeats {
            equal = { (a: State, b: State) -> Bool in a == b }
        }
        self.init(initialState: initialState,
                  failableReducer: { (state: inout State, action: any Action) throws(StoreError) in body(&state, action) },
                  middleware: middleware, skipsRepeats: equal)
    }
}

/// The last value one selective listener was given. Read and written only
/// under the store's lock.
@usableFromInline
final class LastValue<Value>: @unchecked Sendable {
    @exclusivity(unchecked) @usableFromInline var value: Value
    @usableFromInline init(_ value: Value) { self.value = value }
}
