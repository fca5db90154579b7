/// An action that is a piece of work: its body gets `dispatch` and `getState`
/// and may dispatch now, later, or from another thread. Handled by
/// ``ThunkMiddleware``; a store without it hands the thunk to the reducer
/// like any other action.
///
/// ```swift
/// let load = Thunk<AppState> { dispatch, getState in
///     DispatchQueue.global().async { try? dispatch(Loaded(items: fetch())) }
/// }
/// try store.dispatch(load)
/// ```
public struct Thunk<State: Sendable>: Action {
    /// Dispatches an action from the top of the chain.
    public typealias Dispatch = @Sendable (any Action) throws(StoreError) -> Void
    /// Reads the store's current state.
    public typealias GetState = @Sendable () throws(StoreError) -> State

    package let body: @Sendable (_ dispatch: @escaping Dispatch, _ getState: @escaping GetState) -> Void

    /// Creates a thunk that runs `body` when dispatched.
    public init(_ body: @escaping @Sendable (_ dispatch: @escaping Dispatch, _ getState: @escaping GetState) -> Void) {
        self.body = body
    }
}

/// A thunk whose body is `async`: ``ThunkMiddleware`` starts it in a new
/// `Task` and `dispatch` returns at once. Use ``Store/run(_:)`` to await it.
public struct AsyncThunk<State: Sendable>: Action {
    package let body: @Sendable (_ dispatch: @escaping Thunk<State>.Dispatch, _ getState: @escaping Thunk<State>.GetState) async -> Void

    /// Creates an async thunk that runs `body` when dispatched.
    public init(_ body: @escaping @Sendable (_ dispatch: @escaping Thunk<State>.Dispatch, _ getState: @escaping Thunk<State>.GetState) async -> Void) {
        self.body = body
    }
}

/// The built-in middleware that runs ``Thunk`` and ``AsyncThunk`` actions
/// instead of passing them to the reducer. Every other action passes through.
public struct ThunkMiddleware<State: Sendable>: Middleware {
    /// Creates the middleware.
    public init() {}

    public func run(store: MiddlewareStore<State>, next: Next, action: any Action) throws(StoreError) {
        if let thunk = action as? Thunk<State> {
            thunk.body(store.dispatch, store.getState)
        } else if let thunk = action as? AsyncThunk<State> {
            Task { await thunk.body(store.dispatch, store.getState) }
        } else {
            try next(action)
        }
    }
}

extension Store {
    /// Runs an async thunk's body and waits for it to finish. The body's
    /// dispatches go through the whole middleware chain.
    public func run(_ thunk: AsyncThunk<State>) async {
        let api = MiddlewareStore(self)
        await thunk.body(api.dispatch, api.getState)
    }
}
