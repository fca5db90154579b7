/// Code that runs around every dispatch, before the reducers: logging,
/// validation, async actions, persistence.
///
/// A middleware receives each action with `next`, the rest of the chain. It may
/// - pass the action on: `try next(action)`;
/// - pass on a *changed* action: `try next(other)`; the changed action is what
///   the reducers see, whichever middleware changed it;
/// - swallow it: return without calling `next`;
/// - refuse it: throw a ``StoreError`` (usually ``StoreError/Code/rejected``),
///   which `dispatch` reports to its caller;
/// - dispatch new actions with `store.dispatch`, which enter the chain from the top.
///
/// The first middleware given to the store runs first. Call `next` at most once.
public protocol Middleware<State>: Sendable {
    /// The state of the stores this middleware can be added to.
    associatedtype State: Sendable

    /// Handles one action. See the protocol's documentation for what it may do.
    func run(store: MiddlewareStore<State>, next: Next, action: any Action) throws(StoreError)
}

/// The rest of the middleware chain, as handed to ``Middleware/run(store:next:action:)``.
///
/// A `Next` is built once each time the chain changes (not per dispatch) and
/// stays valid for the life of the store.
public final class Next: Sendable {
    @usableFromInline
    let body: @Sendable (any Action) throws(StoreError) -> Void

    @usableFromInline
    init(_ body: @escaping @Sendable (any Action) throws(StoreError) -> Void) {
        self.body = body
    }

    /// Passes `action` to the rest of the chain and, at its end, to the reducers.
    @inlinable
    public func callAsFunction(_ action: any Action) throws(StoreError) {
        try body(action)
    }
}

/// What a middleware can do with its store: dispatch (from the top of the
/// chain) and read the state. It holds the store weakly, so a middleware that
/// keeps it creates no retain cycle; once the store is gone every call throws
/// ``StoreError/Code/storeReleased``.
public final class MiddlewareStore<State: Sendable>: Sendable {
    // A class, not a struct: handing it to each middleware then copies no
    // weak reference (which costs atomic side-table traffic per call).
    @usableFromInline weak let store: Store<State>?

    @usableFromInline init(_ store: Store<State>) { self.store = store }

    /// Dispatches `action` from the top of the middleware chain.
    public func dispatch(_ action: any Action) throws(StoreError) {
        guard let store else { throw StoreError(.storeReleased, "the store this middleware belonged to was released") }
        try store.dispatch(action)
    }

    /// The store's current state.
    public func getState() throws(StoreError) -> State {
        guard let store else { throw StoreError(.storeReleased, "the store this middleware belonged to was released") }
        return try store.getState()
    }
}

/// A middleware written as a closure.
///
/// ```swift
/// let logger = ClosureMiddleware<AppState> { store, next, action in
///     print("dispatching", action)
///     try next(action)
/// }
/// ```
public struct ClosureMiddleware<State: Sendable>: Middleware {
    let body: @Sendable (MiddlewareStore<State>, Next, any Action) throws -> Void

    /// Wraps `body` as a middleware. A ``StoreError`` that `body` throws
    /// reaches the dispatcher as it is; any other error becomes
    /// ``StoreError/Code/rejected`` with the error's description.
    public init(_ body: @escaping @Sendable (MiddlewareStore<State>, Next, any Action) throws -> Void) {
        self.body = body
    }

    public func run(store: MiddlewareStore<State>, next: Next, action: any Action) throws(StoreError) {
        do {
            try body(store, next, action)
        } catch let error as StoreError {
            throw error
        } catch {
            throw StoreError(.rejected, "middleware refused \(type(of: action)): \(error)")
        }
    }
}

/// Removes a middleware that ``Store/addMiddleware(_:)`` added: what it
/// returns. Dropping the handle keeps the middleware (unlike a
/// ``StoreSubscription``, which ends when released). It holds the store weakly.
public struct MiddlewareHandle: Sendable, Hashable {
    /// The middleware's id within its store: never reused.
    public let id: UInt64
    @usableFromInline weak var owner: (any MiddlewareOwner)?

    @usableFromInline
    init(id: UInt64, owner: any MiddlewareOwner) {
        self.id = id
        self.owner = owner
    }

    /// Removes the middleware from the chain: dispatches that start after
    /// this do not run it; one already under way (this call made from inside
    /// it, or a nested dispatch) finishes with the chain it started with.
    /// Other threads' dispatches are waited for. Idempotent: removing it
    /// again, or once the store is gone, does nothing.
    /// - Returns: whether it was still in the chain.
    /// - Throws: ``StoreError/Code/reentrantCall`` from inside a reducer,
    ///   ``StoreError/Code/storeReleased`` once the store is closed.
    @discardableResult
    public func remove() throws(StoreError) -> Bool {
        guard let owner else { return false }
        return try owner.removeMiddleware(id: id)
    }

    public static func == (lhs: MiddlewareHandle, rhs: MiddlewareHandle) -> Bool {
        lhs.id == rhs.id && lhs.owner === rhs.owner
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

/// What a ``MiddlewareHandle`` removes its middleware from: its store.
@usableFromInline
protocol MiddlewareOwner: AnyObject, Sendable {
    func removeMiddleware(id: UInt64) throws(StoreError) -> Bool
}
