/// Where a listener runs: `store.subscribe(on: .main) { ... }` runs it on the
/// main actor instead of on the dispatching thread.
public struct ListenerDelivery: Sendable {
    /// On the main actor, after the dispatch, with the newest state: changes
    /// that arrive faster than the main actor runs are coalesced.
    public static var main: ListenerDelivery { ListenerDelivery() }
}

extension Store {
    /// Calls `listener` on the main actor with the state after dispatches:
    /// for UI code, from whatever thread the actions were dispatched.
    ///
    /// Deliveries are coalesced: the listener gets the newest state, once per
    /// turn of the main actor, however many dispatches happened since it last
    /// ran (so a burst of 1,000 dispatches from a background thread costs the
    /// UI one update). It always runs later, never inside `dispatch`, even
    /// when `dispatch` is called on the main actor. Nothing is delivered once
    /// the subscription has ended.
    ///
    /// ```swift
    /// @MainActor final class CounterModel {
    ///     var text = ""
    ///     var subscription: StoreSubscription?
    ///     init(store: Store<Int>) throws {
    ///         subscription = try store.subscribe(on: .main, receiveCurrent: true) { [weak self] count in
    ///             self?.text = "\(count)"
    ///         }
    ///     }
    /// }
    /// ```
    /// - Parameters:
    ///   - delivery: ``ListenerDelivery/main``.
    ///   - receiveCurrent: also deliver the current state (on the main actor).
    ///   - listener: runs on the main actor.
    public func subscribe(
        on delivery: ListenerDelivery,
        receiveCurrent: Bool = false,
        _ listener: @escaping @MainActor @Sendable (State) -> Void
    ) throws(StoreError) -> StoreSubscription {
        let relay = MainActorRelay(listener)
        let token = try addListener(receiveCurrent: receiveCurrent) { relay.send($0) }
        return StoreSubscription(token: token, owner: link, onEnd: { relay.stop() })
    }

    /// Calls `listener` on the main actor with the part of the state that
    /// `select` picks, when it changed: coalesced as
    /// ``subscribe(on:receiveCurrent:_:)``, and never with a value equal to
    /// the one the listener got last (a change and its undo between two turns
    /// of the main actor deliver nothing).
    public func subscribe<Selected: Equatable & Sendable>(
        on delivery: ListenerDelivery,
        select: @escaping @Sendable (State) -> Selected,
        receiveCurrent: Bool = false,
        _ listener: @escaping @MainActor @Sendable (Selected) -> Void
    ) throws(StoreError) -> StoreSubscription {
        try subscribe(on: delivery, select: select, isDuplicate: { $0 == $1 }, receiveCurrent: receiveCurrent, listener)
    }

    /// As ``subscribe(on:select:receiveCurrent:_:)``, with `isDuplicate`
    /// telling repeats apart (see ``subscribe(select:isDuplicate:receiveCurrent:_:)``).
    public func subscribe<Selected: Sendable>(
        on _: ListenerDelivery,
        select: @escaping @Sendable (State) -> Selected,
        isDuplicate: @escaping @Sendable (Selected, Selected) -> Bool,
        receiveCurrent: Bool = false,
        _ listener: @escaping @MainActor @Sendable (Selected) -> Void
    ) throws(StoreError) -> StoreSubscription {
        lock.lock()
        defer { lock.unlock() }
        if _slowPath(reducing || closed) { throw refusal(.subscribe) }
        let first = select(current)
        let delivered = MainActorBox(first)
        let relay = MainActorRelay<Selected> { value in
            // Coalescing can bring back the value the listener already has.
            if !isDuplicate(delivered.value, value) {
                delivered.value = value
                listener(value)
            }
        }
        let last = LastValue(first)
        let token = addListenerLocked(receiveCurrent: false, skipsRepeats: false) { state in
            let value = select(state)
            if !isDuplicate(last.value, value) {
                last.value = value
                relay.send(value)
            }
        }
        if receiveCurrent {
            relay.send(first, force: { value in listener(value) })
        }
        return StoreSubscription(token: token, owner: link, onEnd: { relay.stop() })
    }
}

/// A value that only the main actor reads and writes.
final class MainActorBox<Value>: @unchecked Sendable {
    // Only touched from main-actor closures.
    var value: Value
    init(_ value: Value) { self.value = value }
}

/// Hands values from any thread to a main-actor function, keeping only the
/// newest one not yet delivered: at most one delivery is scheduled at a time.
final class MainActorRelay<Value: Sendable>: @unchecked Sendable {
    private let lock = RecursiveLock()
    // Guarded by `lock`.
    private var pending: Value?
    private var forced: (@MainActor @Sendable (Value) -> Void)?
    private var scheduled = false
    private var stopped = false
    private let deliver: @MainActor @Sendable (Value) -> Void

    init(_ deliver: @escaping @MainActor @Sendable (Value) -> Void) {
        self.deliver = deliver
    }

    /// Makes `value` the one to deliver, and schedules a delivery unless
    /// one is scheduled already. With `force`, that function delivers it
    /// (the first value, which the duplicate check must not skip) unless a
    /// newer value replaces it first.
    func send(_ value: Value, force: (@MainActor @Sendable (Value) -> Void)? = nil) {
        lock.lock()
        if stopped {
            lock.unlock()
            return
        }
        pending = value
        forced = force
        let schedule = !scheduled
        scheduled = true
        lock.unlock()
        if schedule {
            Task { @MainActor in self.flush() }
        }
    }

    /// No more deliveries, not even one already scheduled.
    func stop() {
        lock.lock()
        stopped = true
        pending = nil
        forced = nil
        lock.unlock()
    }

    @MainActor private func flush() {
        lock.lock()
        let value = pending
        let forced = forced
        pending = nil
        self.forced = nil
        scheduled = false
        lock.unlock()
        guard let value else { return }
        (forced ?? deliver)(value)
    }
}
