/// A marker for everything that can be dispatched to a ``Store``.
///
/// Actions are plain values that describe *what happened*; reducers decide
/// how the state changes in response. Enums and structs both work:
///
/// ```swift
/// enum CounterAction: Action { case increment, decrement }
/// struct AddTodo: Action { var title: String }
/// ```
///
/// Actions cross threads (any thread may dispatch), so they must be `Sendable`.
public protocol Action: Sendable {}

/// The action that ``Store/replaceReducer(_:)`` dispatches after replacing
/// the reducer, as Redux dispatches `@@redux/REPLACE`: the new reducer can
/// fill in parts of the state it needs, middleware can log it. (The C face's
/// counterpart is `{"type":"@@turnstate/replace"}`.)
public struct ReducerReplaced: Action, Equatable {
    /// Creates the action.
    public init() {}
}
