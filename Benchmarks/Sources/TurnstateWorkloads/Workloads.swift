// The Swift workloads W1..W7 of `make bench` on the typed `Store`, shared by
// the package-benchmark target (Benchmarks/TurnstateBenchmarks) and the
// profiling driver (turnstate-profile, for callgrind/perf).
//
// A workload is made (the store, its subscribers: not measured), then `run`
// performs its `operations` (measured), then `verify` checks the result (a
// lost update or a listener called the wrong number of times throws). Nothing
// here looks at the clock.

import Turnstate

// MARK: The registry

public struct WorkloadSpec: Sendable {
    /// "W1", "W2", ...: the id report.py knows.
    public let id: String
    public let title: String
    /// Operations of one full run (dispatches, subscribe+unsubscribe pairs).
    public let operations: Int
    public let make: @Sendable (_ operations: Int) throws -> any Workload
}

public protocol Workload {
    func run() throws
    func verify() throws
}

public struct WorkloadFailure: Error, CustomStringConvertible {
    public let description: String
}

public let workloads: [WorkloadSpec] = [
    WorkloadSpec(id: "W1", title: "counter, 1 subscriber", operations: 1_000_000) { try Counter(operations: $0, middleware: .none) },
    WorkloadSpec(id: "W2", title: "W1 + 3 pass-through middleware", operations: 1_000_000) { try Counter(operations: $0, middleware: .conforming) },
    WorkloadSpec(id: "W2c", title: "W1 + 3 ClosureMiddleware", operations: 1_000_000) { try Counter(operations: $0, middleware: .closure) },
    WorkloadSpec(id: "W3", title: "10 slots, 100 select subscribers", operations: 100_000) { try SelectedSlots(operations: $0) },
    WorkloadSpec(id: "W4", title: "10k todos, 12-byte titles", operations: 100_000) { try Todos(operations: $0, titleLength: 12) },
    WorkloadSpec(id: "W4-40", title: "10k todos, 40-byte titles", operations: 100_000) { try Todos(operations: $0, titleLength: 40) },
    WorkloadSpec(id: "W5", title: "subscribe+unsubscribe, 1000 live", operations: 100_000) { try SubscribeChurn(operations: $0) },
    WorkloadSpec(id: "W7", title: "unsubscribe 10k, newest first", operations: 10_000) { try UnsubscribeAll(operations: $0) },
]

/// Counts listener calls; touched only on the dispatching thread.
final class Tally: @unchecked Sendable {
    var calls = 0
    var sum = 0
}

// MARK: W1, W2: a counter

enum CounterAction: Action { case increment }

let counterReducer = Reducer<Int> { count, action in
    if case .increment? = action as? CounterAction { count += 1 }
}

/// A middleware that passes every action on, as a conforming type.
struct PassThrough<State: Sendable>: Middleware {
    func run(store: MiddlewareStore<State>, next: Next, action: any Action) throws(StoreError) {
        try next(action)
    }
}

/// W1: one reducer, no middleware, one subscriber. W2: with three
/// pass-through middleware (conforming types; W2c: `ClosureMiddleware`s).
final class Counter: Workload {
    enum Chain { case none, conforming, closure }

    let operations: Int
    let store: Store<Int>
    var subscriptions: [StoreSubscription] = []
    let tally = Tally()

    init(operations: Int, middleware: Chain) throws {
        self.operations = operations
        let pass = ClosureMiddleware<Int> { _, next, action in try next(action) }
        let chain: [any Middleware<Int>] = switch middleware {
        case .none: []
        case .conforming: [PassThrough<Int>(), PassThrough<Int>(), PassThrough<Int>()]
        case .closure: [pass, pass, pass]
        }
        store = Store(initialState: 0, reducer: counterReducer, middleware: chain)
        let tally = tally
        subscriptions.append(try store.subscribe { count in
            tally.calls += 1
            tally.sum = count
        })
    }

    func run() throws {
        let action = CounterAction.increment
        for _ in 0..<operations { try store.dispatch(action) }
    }

    func verify() throws {
        guard tally.calls == operations, tally.sum == operations, try store.getState() == operations else {
            throw WorkloadFailure(description: "counter: \(operations) dispatches, \(tally.calls) listener calls, state \(try store.getState())")
        }
    }
}

// MARK: W3: ten slots, selective subscribers

struct Slots: Equatable, Sendable {
    var values = [Int](repeating: 0, count: 10)
}

struct Bump: Action { var slot: Int }

let slotsReducer = Reducer<Slots>(on: Bump.self) { slots, bump in slots.values[bump.slot] += 1 }

/// Ten Int slots; 100 subscribers each select one slot (subscribe(select:),
/// skip-repeats); each action bumps one slot, so 10 of the 100 selections change.
final class SelectedSlots: Workload {
    let operations: Int
    let store = Store(initialState: Slots(), reducer: slotsReducer)
    var subscriptions: [StoreSubscription] = []
    let tally = Tally()
    let actions = (0..<10).map { Bump(slot: $0) }

    init(operations: Int) throws {
        self.operations = operations
        let tally = tally
        for subscriber in 0..<100 {
            let slot = subscriber % 10
            subscriptions.append(try store.subscribe(select: { $0.values[slot] }) { value in
                tally.calls += 1
                tally.sum &+= value
            })
        }
    }

    func run() throws {
        for i in 0..<operations { try store.dispatch(actions[i % 10]) }
    }

    func verify() throws {
        guard tally.calls == operations * 10 else {
            throw WorkloadFailure(description: "W3: \(tally.calls) listener calls, expected \(operations * 10)")
        }
    }
}

// MARK: W4: a todo list

struct Todo: Equatable, Sendable {
    var id: Int
    var title: String
    var done = false
}

struct TodoState: Equatable, Sendable {
    var todos: [Todo]
}

struct ToggleTodo: Action { var id: Int }

/// Ids are dense (id == index), so the reducer finds its item in O(1): the
/// workload measures the store, not a linear search.
let todoReducer = Reducer<TodoState>(on: ToggleTodo.self) { state, toggle in
    state.todos[toggle.id].done.toggle()
}

/// A title of exactly `length` UTF-8 bytes (up to 15 fit in a String without
/// a heap allocation; 40 do not).
func title(_ index: Int, length: Int) -> String {
    let base = "todo \(index) "
    if base.utf8.count >= length { return String(base.utf8.prefix(length))! }
    return base + String(repeating: "x", count: length - base.utf8.count)
}

/// 10,000 todos, one whole-state subscriber; each action toggles one item.
final class Todos: Workload {
    let operations: Int
    let store: Store<TodoState>
    var subscriptions: [StoreSubscription] = []
    let tally = Tally()

    init(operations: Int, titleLength: Int) throws {
        self.operations = operations
        store = Store(initialState: TodoState(todos: (0..<10_000).map { Todo(id: $0, title: title($0, length: titleLength)) }),
                      reducer: todoReducer)
        let tally = tally
        subscriptions.append(try store.subscribe { state in
            tally.calls += 1
            tally.sum &+= state.todos.count
        })
    }

    func run() throws {
        for i in 0..<operations { try store.dispatch(ToggleTodo(id: (i &* 7919) % 10_000)) }
    }

    func verify() throws {
        guard tally.calls == operations else {
            throw WorkloadFailure(description: "W4: \(tally.calls) listener calls, expected \(operations)")
        }
    }
}

// MARK: W5: subscribe and unsubscribe

/// 1,000 live subscribers, then subscribe + unsubscribe pairs.
final class SubscribeChurn: Workload {
    let operations: Int
    let store = Store(initialState: 0, reducer: counterReducer)
    var live: [Unsubscribe] = []

    init(operations: Int) throws {
        self.operations = operations
        for _ in 0..<1_000 { live.append(try store.subscribe { _ in }) }
    }

    func run() throws {
        for _ in 0..<operations {
            let unsubscribe = try store.subscribe { _ in }
            try unsubscribe()
        }
    }

    func verify() throws {
        guard store.subscriberCount == live.count else {
            throw WorkloadFailure(description: "W5: \(store.subscriberCount) subscribers left, expected \(live.count)")
        }
    }
}

// MARK: W7: unsubscribing many

/// `operations` live subscribers (made before the measurement), then each
/// one cancelled, newest first (the order in which the floors' array
/// search is cheapest): the cost of ending a subscription when many are
/// live. callgrind's figure includes making it (set-up scales with the
/// operations); package-benchmark times the cancelling only.
final class UnsubscribeAll: Workload {
    let operations: Int
    let store = Store(initialState: 0, reducer: counterReducer)
    var live: [Unsubscribe] = []

    init(operations: Int) throws {
        self.operations = operations
        live.reserveCapacity(operations)
        for _ in 0..<operations { live.append(try store.subscribe { _ in }) }
    }

    func run() throws {
        for unsubscribe in live.reversed() { try unsubscribe() }
    }

    func verify() throws {
        guard store.subscriberCount == 0 else {
            throw WorkloadFailure(description: "W7: \(store.subscriberCount) subscribers left, expected 0")
        }
    }
}
