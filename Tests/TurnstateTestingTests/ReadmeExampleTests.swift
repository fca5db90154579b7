// The example of the DocC article "Testing with the TestStore"
// (Sources/Turnstate/Turnstate.docc/TestingWithTheTestStore.md, "An example"),
// as it is there: Tests/readme/check.sh fails when the two differ.

import Testing
import Turnstate
import TurnstateTesting

struct TodoList: Equatable, Sendable {
    var titles: [String] = []
    var loading = false
}

enum TodoAction: Action, Equatable {
    case add(String)
    case startLoading
    case loaded([String])
}

let todoListReducer = Reducer<TodoList>(on: TodoAction.self) { state, action in
    switch action {
    case .add(let title): state.titles.append(title)
    case .startLoading: state.loading = true
    case .loaded(let titles):
        state.titles += titles
        state.loading = false
    }
}

// An async thunk, as an app writes one to fetch from a server.
let loadTodos = AsyncThunk<TodoList> { dispatch, _ in
    try? dispatch(TodoAction.startLoading)
    let titles = ["Buy milk", "Write the docs"]   // await api.fetchTitles()
    try? dispatch(TodoAction.loaded(titles))
}

@Test func addsAndLoadsTodos() async {
    let store = TestStore(initialState: TodoList(), reducer: todoListReducer,
                          middleware: [ThunkMiddleware()])

    // Each step says how the state changes; any other change fails the test, with a diff.
    store.send(TodoAction.add("Call mum")) {
        $0.titles = ["Call mum"]
    }

    // What the thunk dispatches must be received, in order, with its change.
    store.send(loadTodos)
    await store.receive(TodoAction.startLoading) {
        $0.loading = true
    }
    await store.receive(TodoAction.self) {
        $0.titles = ["Call mum", "Buy milk", "Write the docs"]
        $0.loading = false
    }

    // Waits for the async thunks; an action never received fails the test.
    await store.finish()
}
