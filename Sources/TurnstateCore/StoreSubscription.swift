/// A subscription to a store: what ``Store/subscribe(receiveCurrent:_:)`` and
/// the other `subscribe` methods return. Like Combine's `AnyCancellable`, it
/// ends the subscription when it is released, so keep it as long as you want
/// the listener called:
///
/// ```swift
/// final class CounterView {
///     var subscriptions = Set<StoreSubscription>()
///     init(store: Store<Int>) throws {
///         try store.subscribe { print($0) }.store(in: &subscriptions)
///     }
/// }
/// ```
///
/// Ending it is idempotent (ending it again does nothing) and only ever removes
/// its own subscription, even when the same closure was subscribed twice. It
/// holds the store weakly; once the store is gone it does nothing.
///
/// The subscription of an object subscriber (`subscribe(self)` and its
/// overloads for a ``StoreSubscriber`` or a ``MainActorStoreSubscriber``)
/// follows the object instead: it lasts while the object lives, so releasing
/// this handle does not end it (the handle is discardable there);
/// ``cancel()`` ends it, as ``Store/unsubscribe(_:)`` does. Once the object
/// was subscribed again, the older handle ends nothing.
public final class StoreSubscription: Hashable, @unchecked Sendable {
    /// The subscription's token: unique within its store, never reused.
    public let token: UInt64
    /// Its store's link (which holds the store weakly).
    @usableFromInline let owner: StoreLink
    /// Runs once when the subscription ends (a main-actor listener stops
    /// deliveries already scheduled).
    @usableFromInline let onEnd: (@Sendable () -> Void)?
    /// The object of an object subscriber's subscription, which ends with
    /// the object, not with this handle; nil for a listener.
    @usableFromInline let object: ObjectIdentifier?
    /// Set once the subscription ended, under the store's lock (or when the
    /// store is gone); read in `deinit`, which runs after every other use.
    @exclusivity(unchecked) @usableFromInline var ended = false

    @inlinable
    init(token: UInt64, owner: StoreLink, onEnd: (@Sendable () -> Void)? = nil) {
        self.token = token
        self.owner = owner
        self.onEnd = onEnd
        object = nil
    }

    /// The handle of an object subscriber's subscription.
    init(token: UInt64, owner: StoreLink, object: ObjectIdentifier) {
        self.token = token
        self.owner = owner
        onEnd = nil
        self.object = object
    }

    deinit {
        if !ended, object == nil { _ = owner.end(self, false) }
    }

    /// Ends the subscription, at any time (also from inside a listener, a
    /// middleware or a reducer, and once the store is closed): the listener
    /// is not called by any dispatch that starts notifying after this. A
    /// dispatch that is notifying when a listener of it cancels still calls
    /// this listener (the list is fixed when notification starts).
    public func cancel() {
        _ = owner.end(self, false)
    }

    /// Ends the subscription, as the `Unsubscribe` function did: `try subscription()`.
    /// Throws ``StoreError/Code/reentrantCall`` from inside a reducer and
    /// ``StoreError/Code/storeReleased`` once the store is closed (and ends
    /// nothing then); ``cancel()`` does neither.
    public func callAsFunction() throws(StoreError) {
        if let error = owner.end(self, true) { throw error }
    }

    /// Keeps the subscription in `set`: it ends when removed from the set or
    /// when the set is released (an object subscriber's: see above).
    public func store(in set: inout Set<StoreSubscription>) {
        set.insert(self)
    }

    /// Keeps the subscription in `collection` (an array): it ends when
    /// removed from it or when the collection is released (an object
    /// subscriber's: see above).
    public func store<C: RangeReplaceableCollection>(in collection: inout C) where C.Element == StoreSubscription {
        collection.append(self)
    }

    public static func == (lhs: StoreSubscription, rhs: StoreSubscription) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// The name the subscription handle had before it ended itself on release.
public typealias Unsubscribe = StoreSubscription

/// What a ``StoreSubscription`` ends its subscription with: one per store,
/// holding it weakly. Not generic, so that making a subscription needs no
/// generic metadata or weak reference of its own.
@usableFromInline
final class StoreLink: @unchecked Sendable {
    /// Ends a subscription (idempotent): strictly (`true`), refused from
    /// inside a reducer and once closed (the error is returned); otherwise
    /// whatever the store is doing. Set once, by the store's initializer.
    @exclusivity(unchecked) @usableFromInline var end: @Sendable (StoreSubscription, Bool) -> StoreError? = { subscription, _ in
        subscription.endWithoutStore()
        return nil
    }

    @usableFromInline init() {}
}

extension StoreSubscription {
    /// Ends a subscription whose store is gone.
    @usableFromInline func endWithoutStore() {
        if !ended {
            ended = true
            onEnd?()
        }
    }
}
