/// A pure function that computes the next state from the current state and an action.
///
/// Reducers work in place (`inout State`), in the manner of TCA's
/// `reduce(into:action:)`: the store hands the reducer the only reference to
/// its state, so changing one item of a large array or dictionary does not
/// copy the whole state. A reducer must not dispatch, read the store,
/// subscribe or unsubscribe; the store refuses such calls with
/// ``StoreError/Code/reentrantCall``.
///
/// ```swift
/// let counter = Reducer<Int> { count, action in
///     switch action as? CounterAction {
///     case .increment?: count += 1
///     case .decrement?: count -= 1
///     case nil: break
///     }
/// }
/// ```
public struct Reducer<State>: Sendable {
    @usableFromInline
    let body: @Sendable (inout State, any Action) -> Void

    /// Creates a reducer that changes the state in place.
    @inlinable
    public init(_ reduce: @escaping @Sendable (inout State, any Action) -> Void) {
        body = reduce
    }

    /// Creates a reducer from a pure `(State, Action) -> State` function,
    /// the form Redux and ReSwift users know.
    @inlinable
    public init(pure reduce: @escaping @Sendable (State, any Action) -> State) {
        body = { state, action in state = reduce(state, action) }
    }

    /// Creates a reducer that handles only actions of type `A` and leaves the
    /// state untouched for every other action.
    @inlinable
    public init<A: Action>(on _: A.Type, _ reduce: @escaping @Sendable (inout State, A) -> Void) {
        body = { state, action in
            if let action = action as? A { reduce(&state, action) }
        }
    }

    /// Runs the reducer on `state`.
    @inlinable
    public func callAsFunction(_ state: inout State, _ action: any Action) {
        body(&state, action)
    }

    /// A reducer that does nothing.
    public static var identity: Reducer<State> { Reducer { _, _ in } }

    /// Gives `reducer` one part of the state, chosen by key path: the keyed
    /// `combineReducers` of Redux. The slice is changed in place.
    ///
    /// ```swift
    /// let app = combineReducers(
    ///     .slice(\AppState.todos, todosReducer),
    ///     .slice(\AppState.filter, filterReducer))
    /// ```
    @inlinable
    public static func slice<Slice>(
        _ keyPath: WritableKeyPath<State, Slice> & Sendable,
        _ reducer: Reducer<Slice>
    ) -> Reducer<State> {
        Reducer { state, action in reducer.body(&state[keyPath: keyPath], action) }
    }
}

/// Combines reducers over the same state into one that runs them in order,
/// each seeing the changes of those before it.
@inlinable
public func combineReducers<State>(_ reducers: Reducer<State>...) -> Reducer<State> {
    combineReducers(reducers)
}

/// Combines an array of reducers over the same state into one that runs them
/// in order, each seeing the changes of those before it.
@inlinable
public func combineReducers<State>(_ reducers: [Reducer<State>]) -> Reducer<State> {
    if reducers.count == 1 { return reducers[0] }
    let bodies = reducers.map(\.body)
    return Reducer { state, action in
        for body in bodies { body(&state, action) }
    }
}
