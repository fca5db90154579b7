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
