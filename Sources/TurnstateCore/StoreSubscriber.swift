/// An object that a store tells of new states, ReSwift style:
/// `try store.subscribe(self)`. The store holds it weakly: its subscription
/// ends when it is released (or with ``Store/unsubscribe(_:)``); subscribing
/// it again replaces its subscription. `newState(_:)` runs on the dispatching
/// thread; for UI objects see ``MainActorStoreSubscriber``.
///
/// ```swift
/// final class CountLogger: StoreSubscriber {
///     func newState(_ count: Int) { print("count is", count) }
/// }
/// ```
public protocol StoreSubscriber<SubscribedState>: AnyObject, Sendable {
    /// What the subscriber is given: the store's state, or a selection of it.
    associatedtype SubscribedState: Sendable
    /// Called with the current value when subscribing (unless
    /// `receiveCurrent: false`), then after each dispatch.
    func newState(_ state: SubscribedState)
}

/// An object on the main actor that a store tells of new states:
/// `try store.subscribe(self)` from a view controller or a view model.
/// `newState(_:)` runs on the main actor with the newest state, coalesced as
/// ``Store/subscribe(on:receiveCurrent:_:)`` does. Otherwise as
/// ``StoreSubscriber``: held weakly, subscribing again replaces.
@MainActor
public protocol MainActorStoreSubscriber<SubscribedState>: AnyObject, Sendable {
    /// What the subscriber is given: the store's state, or a selection of it.
    associatedtype SubscribedState: Sendable
    /// Called on the main actor with the current value after subscribing
    /// (unless `receiveCurrent: false`), then after dispatches.
    func newState(_ state: SubscribedState)
}

extension Store {
    // MARK: Object subscribers (ReSwift style)

    /// Subscribes `subscriber` to the whole state: `newState(_:)` is called
    /// at once with the current state (as ReSwift does; `receiveCurrent:
    /// false` does not), then after every dispatch (for a store made with
    /// `automaticallySkipsRepeats`, only when the state changed).
    ///
    /// The store holds `subscriber` weakly and forgets it once it is released
    /// (at the next dispatch). Subscribing the same object again replaces its
    /// subscription, with its new selection. ``unsubscribe(_:)`` ends it.
    ///
    /// - Returns: the subscription, which follows the object: releasing it
    ///   does not end the subscription (so it may be discarded);
    ///   ``StoreSubscription/cancel()`` ends it, as ``unsubscribe(_:)`` does.
    @discardableResult
    public func subscribe<S: StoreSubscriber>(_ subscriber: S, receiveCurrent: Bool = true) throws(StoreError)
        -> StoreSubscription where S.SubscribedState == State {
        try subscribeObject(subscriber, receiveCurrent: receiveCurrent, skipsRepeats: true) { [weak subscriber] state in
            guard let subscriber else { return false }
            subscriber.newState(state)
            return true
        }
    }

    /// Subscribes `subscriber` to the part of the state that `select` picks:
    /// `newState(_:)` gets the current selection at once (unless
    /// `receiveCurrent: false`), then each selection that differs from the
    /// last one it got. Otherwise as ``subscribe(_:receiveCurrent:)-3s5fm``.
    ///
    /// ```swift
    /// try store.subscribe(self, select: { $0.todos.count })
    /// ```
    @discardableResult
    public func subscribe<S: StoreSubscriber>(
        _ subscriber: S,
        select: @escaping @Sendable (State) -> S.SubscribedState,
        receiveCurrent: Bool = true
    ) throws(StoreError) -> StoreSubscription where S.SubscribedState: Equatable {
        try subscribe(subscriber, select: select, isDuplicate: { $0 == $1 }, receiveCurrent: receiveCurrent)
    }

    /// As ``subscribe(_:select:receiveCurrent:)-6nobk``, with `isDuplicate` telling
    /// repeats apart (see ``subscribe(select:isDuplicate:receiveCurrent:_:)``).
    @discardableResult
    public func subscribe<S: StoreSubscriber>(
        _ subscriber: S,
        select: @escaping @Sendable (State) -> S.SubscribedState,
        isDuplicate: @escaping @Sendable (S.SubscribedState, S.SubscribedState) -> Bool,
        receiveCurrent: Bool = true
    ) throws(StoreError) -> StoreSubscription {
        try exclusively(.subscribe) { () throws(StoreError) -> StoreSubscription in
            let last = LastValue(select(current))
            let subscription = try subscribeObject(subscriber, receiveCurrent: false, skipsRepeats: false) { [weak subscriber] state in
                guard let subscriber else { return false }
                let value = select(state)
                if !isDuplicate(last.value, value) {
                    last.value = value
                    subscriber.newState(value)
                }
                return true
            }
            if receiveCurrent { subscriber.newState(last.value) }
            return subscription
        }
    }

    /// Subscribes a main-actor object to the whole state: `newState(_:)`
    /// runs on the main actor, coalesced (see ``subscribe(on:receiveCurrent:_:)``),
    /// first with the current state unless `receiveCurrent: false`.
    /// Otherwise as ``subscribe(_:receiveCurrent:)-3s5fm``.
    @discardableResult
    public func subscribe<S: MainActorStoreSubscriber>(_ subscriber: S, receiveCurrent: Bool = true) throws(StoreError)
        -> StoreSubscription where S.SubscribedState == State {
        try subscribe(subscriber, select: { $0 }, isDuplicate: { _, _ in false }, receiveCurrent: receiveCurrent)
    }

    /// Subscribes a main-actor object to a selection: `newState(_:)` runs on
    /// the main actor with each new selection, coalesced, never twice with
    /// equal values. Otherwise as ``subscribe(_:select:receiveCurrent:)-6nobk``.
    @discardableResult
    public func subscribe<S: MainActorStoreSubscriber>(
        _ subscriber: S,
        select: @escaping @Sendable (State) -> S.SubscribedState,
        receiveCurrent: Bool = true
    ) throws(StoreError) -> StoreSubscription where S.SubscribedState: Equatable {
        try subscribe(subscriber, select: select, isDuplicate: { $0 == $1 }, receiveCurrent: receiveCurrent)
    }

    /// As ``subscribe(_:select:receiveCurrent:)-3kyu3``, for a main-actor object,
    /// with `isDuplicate` telling repeats apart.
    @discardableResult
    public func subscribe<S: MainActorStoreSubscriber>(
        _ subscriber: S,
        select: @escaping @Sendable (State) -> S.SubscribedState,
        isDuplicate: @escaping @Sendable (S.SubscribedState, S.SubscribedState) -> Bool,
        receiveCurrent: Bool = true
    ) throws(StoreError) -> StoreSubscription {
        typealias Value = S.SubscribedState
        return try exclusively(.subscribe) { () throws(StoreError) -> StoreSubscription in
            let first = select(current)
            let delivered = MainActorBox(first)
            let relay = MainActorRelay<Value> { [weak subscriber] value in
                guard let subscriber, !isDuplicate(delivered.value, value) else { return }
                delivered.value = value
                subscriber.newState(value)
            }
            let last = LastValue(first)
            let skipsRepeats = isDuplicateState != nil
            let subscription = try subscribeObject(subscriber, receiveCurrent: false, skipsRepeats: skipsRepeats,
                                                   onEnd: { relay.stop() }) { [weak subscriber] state in
                guard subscriber != nil else { return false }
                let value = select(state)
                if !isDuplicate(last.value, value) {
                    last.value = value
                    relay.send(value)
                }
                return true
            }
            if receiveCurrent {
                relay.send(first, force: { [weak subscriber] value in subscriber?.newState(value) })
            }
            return subscription
        }
    }

    /// Ends the subscription of an object subscribed with `subscribe(_:)`;
    /// does nothing if it has none. Throws ``StoreError/Code/reentrantCall``
    /// from inside a reducer and ``StoreError/Code/storeReleased`` once the
    /// store is closed.
    public func unsubscribe(_ subscriber: AnyObject) throws(StoreError) {
        try exclusively(.unsubscribe) { () throws(StoreError) in
            if let entry = objectTokens.removeValue(forKey: ObjectIdentifier(subscriber)) {
                subscribers.remove(token: entry.token)
                entry.onEnd?()
            }
        }
    }

    /// Adds `deliver` as the listener of `object`, replacing the one it had,
    /// and returns the handle of the new subscription (which does not end it
    /// when released). `deliver` returns false once the object is gone; its
    /// listener is then removed. Under the lock, checked.
    private func subscribeObject(
        _ object: AnyObject, receiveCurrent: Bool, skipsRepeats: Bool,
        onEnd: (@Sendable () -> Void)? = nil,
        _ deliver: @escaping @Sendable (State) -> Bool
    ) throws(StoreError) -> StoreSubscription {
        try exclusively(.subscribe) { () throws(StoreError) -> StoreSubscription in
            let id = ObjectIdentifier(object)
            if let old = objectTokens.removeValue(forKey: id) {
                subscribers.remove(token: old.token)
                old.onEnd?()
            }
            let tokenBox = LastValue<UInt64>(0)
            let token = addListenerLocked(receiveCurrent: receiveCurrent, skipsRepeats: skipsRepeats) { [unowned self] state in
                if !deliver(state) { self.forgetObject(id, token: tokenBox.value) }
            }
            tokenBox.value = token
            objectTokens[id] = ObjectSubscription(token: token, onEnd: onEnd)
            return StoreSubscription(token: token, owner: link, object: id)
        }
    }

    /// Removes the listener of a released object subscriber (from inside
    /// notification, under the lock).
    private func forgetObject(_ id: ObjectIdentifier, token: UInt64) {
        subscribers.remove(token: token)
        if objectTokens[id]?.token == token {
            objectTokens.removeValue(forKey: id)?.onEnd?()
        }
    }
}

/// The subscription of one object subscriber.
@usableFromInline
struct ObjectSubscription {
    @usableFromInline let token: UInt64
    @usableFromInline let onEnd: (@Sendable () -> Void)?
}
