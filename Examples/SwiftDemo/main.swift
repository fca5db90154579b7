import Turnstate

struct Todo: Equatable, Sendable { var id: Int; var title: String; var done = false }
struct AppState: Equatable, Sendable { var count = 0; var todos: [Todo] = [] }

enum CounterAction: Action { case increment, decrement }
struct AddTodo: Action { var title: String }
struct ToggleTodo: Action { var id: Int }

let counter = Reducer<Int> { count, action in
    switch action as? CounterAction {
    case .increment?: count += 1
    case .decrement?: count -= 1
    case nil: break
    }
}
let todos = combineReducers(
    Reducer<[Todo]>(on: AddTodo.self) { todos, add in todos.append(Todo(id: todos.count + 1, title: add.title)) },
    Reducer<[Todo]>(on: ToggleTodo.self) { todos, toggle in
        if let i = todos.firstIndex(where: { $0.id == toggle.id }) { todos[i].done.toggle() }
    })

let logger = ClosureMiddleware<AppState> { _, next, action in
    print("action:", action)
    try next(action)
}

let store = Store(
    initialState: AppState(),
    reducer: combineReducers(.slice(\.count, counter), .slice(\.todos, todos)),
    middleware: [logger])

// The subscriptions last as long as these handles are kept.
var subscriptions = Set<StoreSubscription>()
do {
    try store.subscribe(select: { $0.count }) { print("  count is now", $0) }.store(in: &subscriptions)
    try store.subscribe(select: { $0.todos }) { todos in
        for todo in todos { print("  [\(todo.done ? "x" : " ")] \(todo.id) \(todo.title)") }
    }.store(in: &subscriptions)
    try store.dispatch(CounterAction.increment)
    try store.dispatch(CounterAction.increment)
    try store.dispatch(AddTodo(title: "buy milk"))
    try store.dispatch(AddTodo(title: "write the C face"))
    try store.dispatch(ToggleTodo(id: 1))
    print("final state:", try store.getState())
} catch {
    print("error:", error)
}
