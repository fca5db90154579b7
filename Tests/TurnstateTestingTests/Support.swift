import Testing
import Turnstate
import TurnstateTesting

// MARK: - A small app to test

struct Counter: Equatable, Sendable {
    var count = 0
    var items: [String] = []
    var loading = false
}

enum CounterAction: Action, Equatable {
    case increment
    case add(Int)
    case startLoading
    case loaded([String])
    case noop
}

let counterReducer = Reducer<Counter> { state, action in
    switch action as? CounterAction {
    case .increment?: state.count += 1
    case .add(let n)?: state.count += n
    case .startLoading?: state.loading = true
    case .loaded(let items)?:
        state.items = items
        state.loading = false
    case .noop?, nil: break
    }
}

/// Refuses negative additions.
let noNegatives = ClosureMiddleware<Counter> { _, next, action in
    if case .add(let n)? = action as? CounterAction, n < 0 {
        throw StoreError(.rejected, "no negative additions")
    }
    try next(action)
}

/// After every `.increment`, dispatches `.add(10)`.
let bonus = ClosureMiddleware<Counter> { store, next, action in
    try next(action)
    if action as? CounterAction == .increment { try store.dispatch(CounterAction.add(10)) }
}

/// Before every `.add(100)`, dispatches `.startLoading`.
let announcer = ClosureMiddleware<Counter> { store, next, action in
    if action as? CounterAction == .add(100) { try store.dispatch(CounterAction.startLoading) }
    try next(action)
}

/// An async thunk that loads two items.
let load = AsyncThunk<Counter> { dispatch, _ in
    try? dispatch(CounterAction.startLoading)
    await Task.yield()
    try? dispatch(CounterAction.loaded(["a", "b"]))
}

func makeStore(middleware: [any Middleware<Counter>] = [ThunkMiddleware()],
               exhaustivity: Exhaustivity = .on,
               fileID: StaticString = #fileID, filePath: StaticString = #filePath,
               line: UInt = #line, column: UInt = #column) -> TestStore<Counter> {
    TestStore(initialState: Counter(), reducer: counterReducer, middleware: middleware,
              exhaustivity: exhaustivity, fileID: fileID, filePath: filePath, line: line, column: column)
}

/// Whether an issue's comment contains every one of `parts`.
func says(_ issue: Issue, _ parts: String...) -> Bool {
    let text = issue.comments.map(\.rawValue).joined(separator: "\n")
    return parts.allSatisfy { text.contains($0) }
}

/// A gate an async thunk waits on until the test opens it.
actor Gate {
    private var open = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if open { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        open = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}
