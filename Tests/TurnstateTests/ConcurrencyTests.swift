import Foundation
import Testing
import Turnstate

/// Rule 5: any thread may dispatch; no update is lost, listeners run on the
/// dispatching thread, subscribing and unsubscribing may race with dispatches.
@Suite("Concurrency", .timeLimit(.minutes(2)))
struct ConcurrencyTests {

    struct Counted: Sendable, Equatable {
        var count = 0
        /// The thread whose dispatch produced this state.
        var thread: UInt = 0
    }

    struct Tick: Action {
        let thread: UInt
    }

    static let countedReducer = Reducer<Counted>(on: Tick.self) { state, tick in
        state.count += 1
        state.thread = tick.thread
    }

    static let threads = 8
    static let dispatchesPerThread = 10_000

    @Test func manyThreadsDispatchingLoseNoUpdateAndCallListenersOnTheirOwnThread() throws {
        let store = Store(initialState: Counted(), reducer: Self.countedReducer)
        let calls = Cell(0)
        let wrongThread = Cell(0)
        let lastCount = Cell(0)
        let outOfOrder = Cell(0)
        try store.subscribe { state in
            calls.withValue { $0 += 1 }
            if state.thread != currentThreadID() { wrongThread.withValue { $0 += 1 } }
            // dispatches are serialized: each listener call sees the next count
            lastCount.withValue { last in
                if state.count != last + 1 { outOfOrder.withValue { $0 += 1 } }
                last = state.count
            }
        }.kept()
        let errors = Recorder<StoreError>()

        DispatchQueue.concurrentPerform(iterations: Self.threads) { _ in
            let me = currentThreadID()
            for _ in 0..<Self.dispatchesPerThread {
                if let error = storeError({ () throws(StoreError) in try store.dispatch(Tick(thread: me)) }) { errors.append(error) }
            }
        }

        let total = Self.threads * Self.dispatchesPerThread
        #expect(errors.values.isEmpty)
        #expect(try store.getState().count == total)
        #expect(calls.value == total)
        #expect(wrongThread.value == 0)
        #expect(outOfOrder.value == 0)
    }

    @Test func dispatchesFromSeparateThreadsAreAllCounted() async throws {
        let store = makeCounter()
        let calls = Cell(0)
        try store.subscribe { _ in calls.withValue { $0 += 1 } }.kept()
        let finished = Recorder<Int>()
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            for worker in 0..<Self.threads {
                let thread = Thread {
                    for _ in 0..<1_000 { try? store.dispatch(CounterAction.increment) }
                    finished.append(worker)
                    if finished.count == Self.threads { done.resume() }
                }
                thread.start()
            }
        }
        #expect(try store.getState() == Self.threads * 1_000)
        #expect(calls.value == Self.threads * 1_000)
    }

    @Test func listenerRunsOnTheThreadThatDispatched() async throws {
        let store = makeCounter()
        let listenerThreads = Recorder<UInt>()
        try store.subscribe { _ in listenerThreads.append(currentThreadID()) }.kept()

        let dispatcher = await withCheckedContinuation { (done: CheckedContinuation<UInt, Never>) in
            Thread.detachNewThread {
                try? store.dispatch(CounterAction.increment)
                done.resume(returning: currentThreadID())
            }
        }
        try store.dispatch(CounterAction.increment)
        let here = currentThreadID()
        #expect(listenerThreads.values == [dispatcher, here])
    }

    @Test func subscribingAndUnsubscribingWhileOtherThreadsDispatch() throws {
        let store = makeCounter()
        let permanentCalls = Cell(0)
        try store.subscribe { _ in permanentCalls.withValue { $0 += 1 } }.kept()
        let transientCalls = Cell(0)
        let dispatchers = 4
        let churners = 4
        let dispatches = 5_000
        let churnRounds = 2_000
        let countTooLow = Cell(0)

        DispatchQueue.concurrentPerform(iterations: dispatchers + churners + 1) { worker in
            if worker < dispatchers {
                for _ in 0..<dispatches { try? store.dispatch(CounterAction.increment) }
            } else if worker == dispatchers + churners {
                // a reader of the subscriber count while it changes
                for _ in 0..<churnRounds where store.subscriberCount < 1 {
                    countTooLow.withValue { $0 += 1 }
                }
            } else {
                var mine: [Unsubscribe] = []
                for round in 0..<churnRounds {
                    let subscribed = try? store.subscribe(receiveCurrent: round % 2 == 0) { _ in
                        transientCalls.withValue { $0 += 1 }
                    }
                    if let unsubscribe = subscribed {
                        mine.append(unsubscribe)
                    }
                    if round % 3 == 2 {
                        // remove in mixed order, some twice
                        let victim = mine.remove(at: mine.count / 2)
                        try? victim()
                        try? victim()
                        try? mine.removeFirst()()
                    }
                }
                for unsubscribe in mine { try? unsubscribe() }
            }
        }

        #expect(try store.getState() == dispatchers * dispatches)
        #expect(permanentCalls.value == dispatchers * dispatches)
        #expect(store.subscriberCount == 1)
        #expect(countTooLow.value == 0)
        // After the churn, only the permanent listener is left.
        let before = transientCalls.value
        try store.dispatch(CounterAction.increment)
        #expect(transientCalls.value == before)
        #expect(permanentCalls.value == dispatchers * dispatches + 1)
    }

    @Test func readersOnOtherThreadsSeeOnlyWholeStates() throws {
        struct Pair: Sendable { var a = 0; var b = 0 }
        struct Bump: Action {}
        let store = Store(initialState: Pair(), reducer: Reducer(on: Bump.self) { pair, _ in
            pair.a += 1
            pair.b -= 1
        })
        let torn = Cell(0)
        DispatchQueue.concurrentPerform(iterations: 6) { worker in
            for _ in 0..<3_000 {
                if worker % 2 == 0 {
                    try? store.dispatch(Bump())
                } else if let pair = try? store.getState(), pair.a != -pair.b {
                    torn.withValue { $0 += 1 }
                }
            }
        }
        #expect(torn.value == 0)
        #expect(try store.getState().a == 9_000)
    }
}
