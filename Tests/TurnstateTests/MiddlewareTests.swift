import Testing
import Turnstate

/// Middleware: order, passing on, changing, swallowing, refusing, dispatching anew.
@Suite("Middleware")
struct MiddlewareTests {

    /// Logs each action it sees under its name, then passes it on.
    struct Logger: Middleware {
        let name: String
        let log: Recorder<String>
        func run(store: MiddlewareStore<Int>, next: Next, action: any Action) throws(StoreError) {
            log.append("\(name):\(action)")
            try next(action)
        }
    }

    /// A store whose reducer and listener also log.
    static func makeStore(_ middleware: [any Middleware<Int>], log: Recorder<String>) throws -> Store<Int> {
        let reducer = Reducer<Int> { count, action in
            log.append("reducer:\(action)")
            counterReducer(&count, action)
        }
        let store = Store(initialState: 0, reducer: reducer, middleware: middleware)
        try store.subscribe { log.append("listener:\($0)") }.kept()
        return store
    }

    @Test func firstListedRunsFirst() throws {
        let log = Recorder<String>()
        let store = try Self.makeStore([Logger(name: "m1", log: log), Logger(name: "m2", log: log), Logger(name: "m3", log: log)], log: log)
        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["m1:increment", "m2:increment", "m3:increment", "reducer:increment", "listener:1"])
    }

    @Test func twoInstancesOfTheSameMiddlewareTypeBothRun() throws {
        let log = Recorder<String>()
        let store = try Self.makeStore([Logger(name: "a", log: log), Logger(name: "a", log: log)], log: log)
        try store.dispatch(CounterAction.noop)
        #expect(log.values == ["a:noop", "a:noop", "reducer:noop", "listener:0"])
    }

    @Test(arguments: [0, 1, 2])
    func changedActionReachesTheReducerWhicheverMiddlewareChangedIt(changer: Int) throws {
        let log = Recorder<String>()
        var chain: [any Middleware<Int>] = []
        for position in 0..<3 {
            if position == changer {
                chain.append(ClosureMiddleware<Int> { _, next, action in
                    log.append("changer saw \(action)")
                    if case .increment? = action as? CounterAction {
                        try next(CounterAction.add(10))
                    } else {
                        try next(action)
                    }
                })
            } else {
                chain.append(Logger(name: "m\(position)", log: log))
            }
        }
        let store = try Self.makeStore(chain, log: log)
        try store.dispatch(CounterAction.increment)
        #expect(try store.getState() == 10)
        let entries = log.values
        #expect(entries.filter { $0.hasPrefix("reducer:") } == ["reducer:add(10)"])
        #expect(entries.last == "listener:10")
        // the middleware after the changer sees the changed action
        for position in (changer + 1)..<3 {
            #expect(entries.contains("m\(position):add(10)"))
        }
        for position in 0..<changer {
            #expect(entries.contains("m\(position):increment"))
        }
    }

    @Test func swallowedActionReachesNeitherReducerNorListeners() throws {
        let log = Recorder<String>()
        let swallow = ClosureMiddleware<Int> { _, next, action in
            if case .noop? = action as? CounterAction { return }
            try next(action)
        }
        let store = try Self.makeStore([Logger(name: "m1", log: log), swallow, Logger(name: "m3", log: log)], log: log)
        try store.dispatch(CounterAction.increment)
        log.removeAll()
        try store.dispatch(CounterAction.noop)
        #expect(log.values == ["m1:noop"])
        #expect(try store.getState() == 1)
    }

    @Test func refusingByThrowingReportsTheErrorAndChangesNothing() throws {
        let log = Recorder<String>()
        let refusal = StoreError(.rejected, "no decrements")
        let guardrail = ClosureMiddleware<Int> { _, next, action in
            if case .decrement? = action as? CounterAction { throw refusal }
            try next(action)
        }
        let store = try Self.makeStore([guardrail, Logger(name: "after", log: log)], log: log)
        try store.dispatch(CounterAction.add(5))
        log.removeAll()

        #expect(throws: refusal) { try store.dispatch(CounterAction.decrement) }
        #expect(try store.getState() == 5)
        #expect(log.values == [])

        // The store keeps working.
        try store.dispatch(CounterAction.increment)
        #expect(try store.getState() == 6)
    }

    struct Refuser: Middleware {
        let error: StoreError
        func run(store: MiddlewareStore<Int>, next: Next, action: any Action) throws(StoreError) {
            throw error
        }
    }

    @Test func errorFromAProtocolMiddlewareReachesTheDispatcherAsItIs() throws {
        let error = StoreError(.notFound, "custom")
        let log = Recorder<String>()
        let store = try Self.makeStore([Logger(name: "m1", log: log), Refuser(error: error)], log: log)
        #expect(throws: error) { try store.dispatch(CounterAction.increment) }
        #expect(log.values == ["m1:increment"])
        #expect(try store.getState() == 0)
    }

    @Test func closureMiddlewareConvertsOtherErrorsToRejected() throws {
        struct Oops: Error, CustomStringConvertible { var description: String { "oops-detail" } }
        let store = makeCounter(middleware: [ClosureMiddleware<Int> { _, _, _ in throw Oops() }])
        let error = storeError { () throws(StoreError) in try store.dispatch(CounterAction.increment) }
        #expect(error?.code == .rejected)
        #expect(error?.message.contains("oops-detail") == true)
        #expect(try store.getState() == 0)
    }

    @Test func closureMiddlewarePassesStoreErrorsThroughUnchanged() throws {
        let original = StoreError(.badArgument, "bad")
        let store = makeCounter(middleware: [ClosureMiddleware<Int> { _, _, _ in throw original }])
        #expect(throws: original) { try store.dispatch(CounterAction.increment) }
    }

    @Test func errorThrownAfterNextIsReportedButTheActionWasApplied() throws {
        let store = makeCounter(middleware: [ClosureMiddleware<Int> { _, next, action in
            try next(action)
            throw StoreError(.rejected, "after the fact")
        }])
        #expect(throws: StoreError.self) { try store.dispatch(CounterAction.increment) }
        #expect(try store.getState() == 1)
    }

    @Test func middlewareDispatchEntersTheChainFromTheTop() throws {
        let log = Recorder<String>()
        let doubler = ClosureMiddleware<Int> { store, next, action in
            try next(action)
            // After every add, dispatch one increment from the top.
            if case .add? = action as? CounterAction {
                try store.dispatch(CounterAction.increment)
            }
        }
        let store = try Self.makeStore([Logger(name: "top", log: log), doubler, Logger(name: "bottom", log: log)], log: log)
        try store.dispatch(CounterAction.add(5))
        #expect(log.values == [
            "top:add(5)", "bottom:add(5)", "reducer:add(5)", "listener:5",
            "top:increment", "bottom:increment", "reducer:increment", "listener:6",
        ])
    }

    @Test func middlewareReadsStateBeforeAndAfterNext() throws {
        let seen = Recorder<String>()
        let store = makeCounter(3, middleware: [ClosureMiddleware<Int> { store, next, action in
            seen.append("before:\(try store.getState())")
            try next(action)
            seen.append("after:\(try store.getState())")
        }])
        try store.dispatch(CounterAction.add(4))
        #expect(seen.values == ["before:3", "after:7"])
    }

    @Test func middlewareAddedAfterCreationRunsAtTheEndOfTheChain() throws {
        let log = Recorder<String>()
        let store = try Self.makeStore([Logger(name: "first", log: log)], log: log)
        try store.dispatch(CounterAction.increment)
        try store.addMiddleware(Logger(name: "added", log: log))
        log.removeAll()
        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["first:increment", "added:increment", "reducer:increment", "listener:2"])
    }

    @Test func middlewareAddedToAStoreWithoutMiddlewareRuns() throws {
        let log = Recorder<String>()
        let store = try Self.makeStore([], log: log)
        try store.dispatch(CounterAction.increment)
        try store.addMiddleware(Logger(name: "added", log: log))
        try store.addMiddleware(Logger(name: "added2", log: log))
        log.removeAll()
        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["added:increment", "added2:increment", "reducer:increment", "listener:2"])
    }

    @Test func middlewareAddedDuringADispatchRunsFromTheNextDispatch() throws {
        let log = Recorder<String>()
        let added = Cell(false)
        let storeRef = StoreRef<Int>()
        let adder = ClosureMiddleware<Int> { _, next, action in
            log.append("adder:\(action)")
            if !added.value, let store = storeRef.store {
                added.value = true
                try store.addMiddleware(Logger(name: "late", log: log))
            }
            try next(action)
        }
        let store = try Self.makeStore([adder], log: log)
        storeRef.store = store
        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["adder:increment", "reducer:increment", "listener:1"])
        log.removeAll()
        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["adder:increment", "late:increment", "reducer:increment", "listener:2"])
    }
}
