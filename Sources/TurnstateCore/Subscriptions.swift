extension Store {
    /// Calls `listener` with the part of the state that `select` picks, only
    /// when it differs from the last value *this listener* was given (or, before
    /// the first call, from the value when it subscribed).
    ///
    /// ```swift
    /// try store.subscribe(select: { $0.todos.count }) { count in print(count) }
    /// ```
    /// - Parameters:
    ///   - select: picks the part of the state to watch; runs after every dispatch.
    ///   - receiveCurrent: also call `listener` at once with the current selection.
    ///   - listener: runs on the dispatching thread.
    /// - Returns: the function that ends the subscription.
    @discardableResult @inlinable
    public func subscribe<Selected: Equatable & Sendable>(
        select: @escaping @Sendable (State) -> Selected,
        receiveCurrent: Bool = false,
        _ listener: @escaping @Sendable (Selected) -> Void
    ) throws(StoreError) -> Unsubscribe {
        try exclusively { () throws(StoreError) -> Unsubscribe in
            let last = LastValue(select(try getState()))
            let unsubscribe = try subscribe(receiveCurrent: false) { state in
                let value = select(state)
                if value != last.value {
                    last.value = value
                    listener(value)
                }
            }
            if receiveCurrent { listener(last.value) }
            return unsubscribe
        }
    }

    /// Calls `listener` with the value at `keyPath`, only when it differs from
    /// the last value this listener was given. See ``subscribe(select:receiveCurrent:_:)``.
    @discardableResult
    public func subscribe<Selected: Equatable & Sendable>(
        _ keyPath: KeyPath<State, Selected> & Sendable,
        receiveCurrent: Bool = false,
        _ listener: @escaping @Sendable (Selected) -> Void
    ) throws(StoreError) -> Unsubscribe {
        try subscribe(select: { $0[keyPath: keyPath] }, receiveCurrent: receiveCurrent, listener)
    }

    /// Calls `listener` with the part of the state that `select` picks after
    /// every dispatch, changed or not (for selections that are not `Equatable`).
    @discardableResult
    public func subscribe<Selected: Sendable>(
        select: @escaping @Sendable (State) -> Selected,
        receiveCurrent: Bool = false,
        _ listener: @escaping @Sendable (Selected) -> Void
    ) throws(StoreError) -> Unsubscribe {
        try subscribe(receiveCurrent: receiveCurrent) { listener(select($0)) }
    }
}

/// The last value one selective listener was given. Read and written only
/// under the store's lock.
@usableFromInline
final class LastValue<Value>: @unchecked Sendable {
    @exclusivity(unchecked) @usableFromInline var value: Value
    @usableFromInline init(_ value: Value) { self.value = value }
}
