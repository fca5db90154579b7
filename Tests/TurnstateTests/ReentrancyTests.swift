import Foundation
import Testing
import Turnstate

/// Rule 4: a reducer that calls back into its store gets `.reentrantCall`,
/// the call has no effect, nothing deadlocks, and the store keeps working.
@Suite("Reducer re-entrancy", .timeLimit(.minutes(2)))
struct ReentrancyTests {

    enum Probe: Action {
        case dispatch, getState, subscribe, unsubscribe, addMiddleware, states, values
    }

    /// A store whose reducer, on a `Probe`, makes the illegal call and records
    /// the error it got. `CounterAction`s count as usual.
    final class Harness: Sendable {
        let ref = StoreRef<Int>()
        let errors = Recorder<StoreError?>()
        let middlewareRuns = Recorder<String>()
        let victim = Cell<Unsubscribe?>(nil)
        let store: Store<Int>

        init(middleware: [any Middleware<Int>] = []) {
            let ref = ref, errors = errors, middlewareRuns = middlewareRuns, victim = victim
            let reducer = Reducer<Int> { count, action in
                if let probe = action as? Probe {
                    guard let store = ref.store else {
                        Issue.record("the store is gone")
                        return
                    }
                    switch probe {
                    case .dispatch:
                        errors.append(storeError { () throws(StoreError) in try store.dispatch(CounterAction.add(100)) })
                    case .getState:
                        errors.append(storeError { () throws(StoreError) in _ = try store.getState() })
                    case .subscribe:
                        errors.append(storeError { () throws(StoreError) in _ = try store.subscribe { _ in } })
                        errors.append(storeError { () throws(StoreError) in
                            _ = try store.subscribe(select: { $0 }) { (_: Int) in }
                        })
                        errors.append(storeError { () throws(StoreError) in
                            _ = try store.subscribe(\.self) { (_: Int) in }
                        })
                    case .unsubscribe:
                        if let unsubscribe = victim.value {
                            errors.append(storeError { () throws(StoreError) in try unsubscribe() })
                        } else {
                            Issue.record("no victim subscription")
                        }
                    case .addMiddleware:
                        errors.append(storeError { () throws(StoreError) in
                            try store.addMiddleware(ClosureMiddleware<Int> { _, next, action in
                                middlewareRuns.append("illegal")
                                try next(action)
                            })
                        })
                    case .states:
                        // The stream cannot subscribe from inside a reducer: it ends at once.
                        _ = store.states()
                    case .values:
                        _ = store.values(select: { $0 })
                    }
                    count += 1 // the reducer's own, legal, change still happens
                    return
                }
                counterReducer(&count, action)
            }
            store = Store(initialState: 0, reducer: reducer, middleware: middleware)
            ref.store = store
        }
    }

    @Test(arguments: [false, true])
    func everyIllegalCallThrowsReentrantCallAndHasNoEffect(withMiddleware: Bool) throws {
        let chainSaw = Recorder<String>()
        let passThrough = ClosureMiddleware<Int> { _, next, action in
            chainSaw.append("\(action)")
            try next(action)
        }
        let harness = Harness(middleware: withMiddleware ? [passThrough] : [])
        let store = harness.store
        let seen = Recorder<Int>()
        try store.subscribe { seen.append($0) }.kept()
        harness.victim.value = try store.subscribe { seen.append(-$0) }
        #expect(store.subscriberCount == 2)

        for probe in [Probe.dispatch, .getState, .subscribe, .unsubscribe, .addMiddleware, .states, .values] {
            try store.dispatch(probe)
        }

        let errors = harness.errors.values
        #expect(errors.count == 7)
        for error in errors {
            #expect(error?.code == .reentrantCall, "got \(String(describing: error))")
        }
        // No effect: the nested dispatch did not add 100, no subscription was
        // added or removed, the middleware was not added.
        #expect(try store.getState() == 7)
        #expect(store.subscriberCount == 2)
        // The refused dispatch did not even enter the middleware chain.
        #expect(chainSaw.values == (withMiddleware
            ? ["dispatch", "getState", "subscribe", "unsubscribe", "addMiddleware", "states", "values"] : []))

        // The store keeps working.
        seen.removeAll()
        try store.dispatch(CounterAction.add(3))
        #expect(try store.getState() == 10)
        #expect(seen.values == [10, -10]) // the victim is still subscribed
        #expect(harness.middlewareRuns.values == [])

        let again = try store.subscribe { seen.append($0 * 1000) }
        try store.dispatch(CounterAction.increment)
        #expect(seen.values == [10, -10, 11, -11, 11_000])
        try again()
        try store.addMiddleware(ClosureMiddleware<Int> { _, next, action in
            harness.middlewareRuns.append("legal")
            try next(action)
        })
        try store.dispatch(CounterAction.increment)
        #expect(harness.middlewareRuns.values == ["legal"])
        #expect(try store.getState() == 12)
    }

    @Test func illegalCallDoesNotPoisonLaterDispatches() throws {
        let harness = Harness()
        let store = harness.store
        try store.dispatch(Probe.getState)
        #expect(harness.errors.values.map { $0?.code } == [.reentrantCall])
        for _ in 0..<5 {
            try store.dispatch(CounterAction.increment)
        }
        #expect(try store.getState() == 6)
        #expect(harness.errors.count == 1)
    }

    @Test func illegalCallFromReducerRunOnAnotherThreadDoesNotDeadlock() async throws {
        let harness = Harness()
        let store = harness.store
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                do {
                    try store.dispatch(Probe.dispatch)
                    try store.dispatch(Probe.subscribe)
                } catch {
                    Issue.record("dispatch threw \(error)")
                }
                done.resume()
            }
        }
        #expect(harness.errors.values.map { $0?.code } == [.reentrantCall, .reentrantCall, .reentrantCall, .reentrantCall])
        #expect(try store.getState() == 2)
    }
}
