// The floors under the Swift workloads: for each W, the same observable
// work (the same actions, the same listener calls with the same values, the
// same checks in `verify`) done by the least code that can do it, so that
// report.py can print ours / floor in the same run.
//
// - "<W>-floor": a final class, a mutex (pthread, not recursive), the state
//   mutated in place, the subscribers an array of closures called with the
//   state (borrowed, under the lock: no snapshot, no copy), the reducer a
//   direct call the optimizer inlines, the action its concrete type. Pass-
//   through middleware does nothing observable, so W2's floor is W1's.
// - "<W>-floor-api": the same, keeping the API's shape: the action as an
//   `any Action` existential, the reducer a stored closure that casts it,
//   subscribe (W5) returning an unsubscribe closure. Middleware is not part
//   of that shape (W2's is W1's; FloorAPIStore can chain closures, which
//   costs about 400 instructions per pass-through closure, more than ours).
//
// Nothing here is thread-safe beyond the lock: single-threaded workloads.

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Turnstate

/// A plain (non-recursive) pthread mutex.
final class FloorLock {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    init() { pthread_mutex_init(mutex, nil) }
    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }
    @inline(__always) func lock() { pthread_mutex_lock(mutex) }
    @inline(__always) func unlock() { pthread_mutex_unlock(mutex) }
}

/// The floor: a state, a lock, subscribers; `dispatch` takes the reducer
/// as a closure it inlines (generic, specialized at each call).
final class FloorStore<State> {
    @exclusivity(unchecked) private(set) var state: State
    private let lock = FloorLock()
    @exclusivity(unchecked) private var subscribers: [(token: Int, call: (State) -> Void)] = []
    @exclusivity(unchecked) private var lastToken = 0

    init(_ state: State) { self.state = state }

    @inline(__always)
    func dispatch(_ reduce: (inout State) -> Void) {
        lock.lock()
        reduce(&state)
        for subscriber in subscribers { subscriber.call(state) }
        lock.unlock()
    }

    @discardableResult
    func subscribe(_ call: @escaping (State) -> Void) -> Int {
        lock.lock()
        defer { lock.unlock() }
        lastToken += 1
        subscribers.append((lastToken, call))
        return lastToken
    }

    func unsubscribe(_ token: Int) {
        lock.lock()
        defer { lock.unlock() }
        if let index = subscribers.lastIndex(where: { $0.token == token }) { subscribers.remove(at: index) }
    }

    var subscriberCount: Int { subscribers.count }
}

/// The floor that keeps the API's shape: `any Action`, a stored reducer
/// closure, stored middleware closures, unsubscribe closures.
final class FloorAPIStore<State> {
    typealias Reduce = (inout State, any Action) -> Void
    typealias Next = (any Action) -> Void
    typealias Middleware = (any Action, Next) -> Void

    @exclusivity(unchecked) private(set) var state: State
    private let lock = FloorLock()
    private let reducer: Reduce
    @exclusivity(unchecked) private var subscribers: [(token: Int, call: (State) -> Void)] = []
    @exclusivity(unchecked) private var lastToken = 0
    /// The middleware chain; nil without middleware (a direct call).
    @exclusivity(unchecked) private var chain: Next?

    init(_ state: State, reducer: @escaping Reduce, middleware: [Middleware] = []) {
        self.state = state
        self.reducer = reducer
        guard !middleware.isEmpty else { return }
        var next: Next = { [unowned(unsafe) self] action in self.reduceAndNotify(action) }
        for middleware in middleware.reversed() {
            let after = next
            next = { action in middleware(action, after) }
        }
        chain = next
    }

    func dispatch(_ action: any Action) {
        if let chain { chain(action) } else { reduceAndNotify(action) }
    }

    private func reduceAndNotify(_ action: any Action) {
        lock.lock()
        reducer(&state, action)
        for subscriber in subscribers { subscriber.call(state) }
        lock.unlock()
    }

    func subscribe(_ call: @escaping (State) -> Void) -> () -> Void {
        lock.lock()
        defer { lock.unlock() }
        lastToken += 1
        let token = lastToken
        subscribers.append((token, call))
        return { [unowned(unsafe) self] in
            self.lock.lock()
            defer { self.lock.unlock() }
            if let index = self.subscribers.lastIndex(where: { $0.token == token }) { self.subscribers.remove(at: index) }
        }
    }

    var subscriberCount: Int { subscribers.count }
}

public let floorWorkloads: [WorkloadSpec] = {
    var specs: [WorkloadSpec] = []
    for spec in workloads {
        let floor: (@Sendable (Int) throws -> any Workload)?
        let api: (@Sendable (Int) throws -> any Workload)?
        switch spec.id {
        // Pass-through middleware does nothing observable: W2's floors are W1's.
        case "W1", "W2", "W2c": (floor, api) = ({ CounterFloor(operations: $0) }, { CounterFloorAPI(operations: $0) })
        case "W3": (floor, api) = ({ SlotsFloor(operations: $0) }, { SlotsFloorAPI(operations: $0) })
        case "W4": (floor, api) = ({ TodosFloor(operations: $0, titleLength: 12) }, { TodosFloorAPI(operations: $0, titleLength: 12) })
        case "W4-40": (floor, api) = ({ TodosFloor(operations: $0, titleLength: 40) }, { TodosFloorAPI(operations: $0, titleLength: 40) })
        case "W5": (floor, api) = ({ ChurnFloor(operations: $0) }, { ChurnFloorAPI(operations: $0) })
        case "W7": (floor, api) = ({ UnsubscribeFloor(operations: $0) }, { UnsubscribeFloorAPI(operations: $0) })
        default: (floor, api) = (nil, nil)
        }
        if let floor { specs.append(WorkloadSpec(id: spec.id + "-floor", title: "floor", operations: spec.operations, make: floor)) }
        if let api { specs.append(WorkloadSpec(id: spec.id + "-floor-api", title: "floor, API shape", operations: spec.operations, make: api)) }
    }
    return specs
}()

/// Every workload and its floors, in table order.
public let allWorkloads: [WorkloadSpec] = workloads + floorWorkloads

// MARK: W1, W2

func verifyCounter(_ name: String, operations: Int, tally: Tally, state: Int) throws {
    guard tally.calls == operations, tally.sum == operations, state == operations else {
        throw WorkloadFailure(description: "\(name): \(operations) dispatches, \(tally.calls) listener calls, state \(state)")
    }
}

final class CounterFloor: Workload {
    let operations: Int
    let store = FloorStore(0)
    let tally = Tally()

    init(operations: Int) {
        self.operations = operations
        let tally = tally
        store.subscribe { count in
            tally.calls += 1
            tally.sum = count
        }
    }

    func run() throws {
        let action = CounterAction.increment
        for _ in 0..<operations {
            store.dispatch { count in
                if case .increment = action { count += 1 }
            }
        }
    }

    func verify() throws { try verifyCounter("W1 floor", operations: operations, tally: tally, state: store.state) }
}

final class CounterFloorAPI: Workload {
    let operations: Int
    let store: FloorAPIStore<Int>
    let tally = Tally()

    init(operations: Int) {
        self.operations = operations
        store = FloorAPIStore(0, reducer: { count, action in
            if case .increment? = action as? CounterAction { count += 1 }
        })
        let tally = tally
        _ = store.subscribe { count in
            tally.calls += 1
            tally.sum = count
        }
    }

    func run() throws {
        let action: any Action = CounterAction.increment
        for _ in 0..<operations { store.dispatch(action) }
    }

    func verify() throws { try verifyCounter("W1 floor-api", operations: operations, tally: tally, state: store.state) }
}

// MARK: W3

/// Calls the listener of every selection whose value changed (skip-repeats).
@inline(__always)
func walkSelections(_ selections: inout [FloorSelection], _ slots: Slots, _ tally: Tally) {
    slots.values.withUnsafeBufferPointer { values in
        selections.withUnsafeMutableBufferPointer { selections in
            for i in selections.indices {
                let value = values[selections[i].slot]
                if value != selections[i].last {
                    selections[i].last = value
                    tally.calls += 1
                    tally.sum &+= value
                }
            }
        }
    }
}


/// 100 selections of one slot each, skip-repeats: (slot, last value).
struct FloorSelection {
    let slot: Int
    var last: Int
}

final class SlotsFloor: Workload {
    let operations: Int
    let store = FloorStore(Slots())
    let tally = Tally()
    @exclusivity(unchecked) var selections: [FloorSelection]

    init(operations: Int) {
        self.operations = operations
        selections = (0..<100).map { FloorSelection(slot: $0 % 10, last: 0) }
        // One subscriber walks the selections (the least code: no closure
        // per selection); each changed one counts as a listener call.
        store.subscribe { [unowned(unsafe) self] slots in self.notify(slots) }
    }

    @inline(__always)
    func notify(_ slots: Slots) { walkSelections(&selections, slots, tally) }

    func run() throws {
        for i in 0..<operations {
            let slot = i % 10
            store.dispatch { $0.values[slot] += 1 }
        }
    }

    func verify() throws {
        guard tally.calls == operations * 10 else {
            throw WorkloadFailure(description: "W3 floor: \(tally.calls) listener calls, expected \(operations * 10)")
        }
    }
}

final class SlotsFloorAPI: Workload {
    let operations: Int
    @exclusivity(unchecked) var selections: [FloorSelection] = (0..<100).map { FloorSelection(slot: $0 % 10, last: 0) }
    let store = FloorAPIStore(Slots(), reducer: { slots, action in
        if let bump = action as? Bump { slots.values[bump.slot] += 1 }
    })
    let tally = Tally()
    let actions: [any Action] = (0..<10).map { Bump(slot: $0) }

    init(operations: Int) {
        self.operations = operations
        let tally = tally
        // The subscribers as in the floor: the API's shape is the
        // dispatch (`any Action`, a stored reducer closure).
        _ = store.subscribe { [unowned(unsafe) self] slots in walkSelections(&self.selections, slots, tally) }
    }

    func run() throws {
        for i in 0..<operations { store.dispatch(actions[i % 10]) }
    }

    func verify() throws {
        guard tally.calls == operations * 10 else {
            throw WorkloadFailure(description: "W3 floor-api: \(tally.calls) listener calls, expected \(operations * 10)")
        }
    }
}

// MARK: W4

final class TodosFloor: Workload {
    let operations: Int
    let store: FloorStore<TodoState>
    let tally = Tally()

    init(operations: Int, titleLength: Int) {
        self.operations = operations
        store = FloorStore(TodoState(todos: (0..<10_000).map { Todo(id: $0, title: title($0, length: titleLength)) }))
        let tally = self.tally
        store.subscribe { state in
            tally.calls += 1
            tally.sum &+= state.todos.count
        }
    }

    func run() throws {
        for i in 0..<operations {
            let id = (i &* 7919) % 10_000
            store.dispatch { $0.todos[id].done.toggle() }
        }
    }

    func verify() throws {
        guard tally.calls == operations else {
            throw WorkloadFailure(description: "W4 floor: \(tally.calls) listener calls, expected \(operations)")
        }
    }
}

final class TodosFloorAPI: Workload {
    let operations: Int
    let store: FloorAPIStore<TodoState>
    let tally = Tally()

    init(operations: Int, titleLength: Int) {
        self.operations = operations
        store = FloorAPIStore(TodoState(todos: (0..<10_000).map { Todo(id: $0, title: title($0, length: titleLength)) }),
                              reducer: { state, action in
                                  if let toggle = action as? ToggleTodo { state.todos[toggle.id].done.toggle() }
                              })
        let tally = tally
        _ = store.subscribe { state in
            tally.calls += 1
            tally.sum &+= state.todos.count
        }
    }

    func run() throws {
        for i in 0..<operations { store.dispatch(ToggleTodo(id: (i &* 7919) % 10_000)) }
    }

    func verify() throws {
        guard tally.calls == operations else {
            throw WorkloadFailure(description: "W4 floor-api: \(tally.calls) listener calls, expected \(operations)")
        }
    }
}

// MARK: W5

final class ChurnFloor: Workload {
    let operations: Int
    let store = FloorStore(0)

    init(operations: Int) {
        self.operations = operations
        for _ in 0..<1_000 { store.subscribe { _ in } }
    }

    func run() throws {
        for _ in 0..<operations { store.unsubscribe(store.subscribe { _ in }) }
    }

    func verify() throws {
        guard store.subscriberCount == 1_000 else {
            throw WorkloadFailure(description: "W5 floor: \(store.subscriberCount) subscribers left, expected 1000")
        }
    }
}

final class ChurnFloorAPI: Workload {
    let operations: Int
    let store = FloorAPIStore(0, reducer: { _, _ in })
    var live: [() -> Void] = []

    init(operations: Int) {
        self.operations = operations
        for _ in 0..<1_000 { live.append(store.subscribe { _ in }) }
    }

    func run() throws {
        for _ in 0..<operations {
            let unsubscribe = store.subscribe { _ in }
            unsubscribe()
        }
    }

    func verify() throws {
        guard store.subscriberCount == live.count else {
            throw WorkloadFailure(description: "W5 floor-api: \(store.subscriberCount) subscribers left, expected \(live.count)")
        }
    }
}

// MARK: W7

final class UnsubscribeFloor: Workload {
    let operations: Int
    let store = FloorStore(0)
    var tokens: [Int] = []

    init(operations: Int) {
        self.operations = operations
        tokens.reserveCapacity(operations)
        for _ in 0..<operations { tokens.append(store.subscribe { _ in }) }
    }

    func run() throws {
        for token in tokens.reversed() { store.unsubscribe(token) }
    }

    func verify() throws {
        guard store.subscriberCount == 0 else {
            throw WorkloadFailure(description: "W7 floor: \(store.subscriberCount) subscribers left, expected 0")
        }
    }
}

final class UnsubscribeFloorAPI: Workload {
    let operations: Int
    let store = FloorAPIStore(0, reducer: { _, _ in })
    var live: [() -> Void] = []

    init(operations: Int) {
        self.operations = operations
        live.reserveCapacity(operations)
        for _ in 0..<operations { live.append(store.subscribe { _ in }) }
    }

    func run() throws {
        for unsubscribe in live.reversed() { unsubscribe() }
    }

    func verify() throws {
        guard store.subscriberCount == 0 else {
            throw WorkloadFailure(description: "W7 floor-api: \(store.subscriberCount) subscribers left, expected 0")
        }
    }
}
