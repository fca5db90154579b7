import Foundation
import Testing
import Turnstate

/// Thunks, async thunks, and the AsyncSequence faces of the store.
@Suite("Async", .timeLimit(.minutes(2)))
struct AsyncTests {

    // MARK: Thunk

    @Test func thunkGetsDispatchAndGetStateAndNeverReachesTheReducer() throws {
        let reducerSaw = Recorder<String>()
        let reducer = Reducer<Int> { count, action in
            reducerSaw.append("\(type(of: action))")
            counterReducer(&count, action)
        }
        let store = Store(initialState: 10, reducer: reducer, middleware: [ThunkMiddleware<Int>()])
        let seenInThunk = Recorder<Int>()
        try store.dispatch(Thunk<Int> { dispatch, getState in
            seenInThunk.append((try? getState()) ?? -1)
            try? dispatch(CounterAction.increment)
            seenInThunk.append((try? getState()) ?? -1)
            try? dispatch(CounterAction.add(5))
        })
        #expect(seenInThunk.values == [10, 11])
        #expect(try store.getState() == 16)
        #expect(reducerSaw.values == ["CounterAction", "CounterAction"])
    }

    @Test func thunkDispatchesGoThroughTheWholeChain() throws {
        let log = Recorder<String>()
        let logger = ClosureMiddleware<Int> { _, next, action in
            log.append("\(type(of: action))")
            try next(action)
        }
        let store = makeCounter(middleware: [logger, ThunkMiddleware<Int>()])
        try store.dispatch(Thunk<Int> { dispatch, _ in
            try? dispatch(CounterAction.increment)
        })
        #expect(log.values == ["Thunk<Int>", "CounterAction"])
        #expect(try store.getState() == 1)
    }

    @Test func thunkMayDispatchLaterFromAnotherThread() async throws {
        let store = makeCounter(middleware: [ThunkMiddleware<Int>()])
        let listenerThreads = Recorder<UInt>()
        try store.subscribe { _ in listenerThreads.append(currentThreadID()) }.kept()

        let dispatcherThread = await withCheckedContinuation { (done: CheckedContinuation<UInt, Never>) in
            do {
                try store.dispatch(Thunk<Int> { dispatch, getState in
                    Thread.detachNewThread {
                        let before = (try? getState()) ?? -1
                        try? dispatch(CounterAction.add(before + 41))
                        done.resume(returning: currentThreadID())
                    }
                })
            } catch {
                Issue.record("dispatch threw \(error)")
                done.resume(returning: 0)
            }
        }
        #expect(try store.getState() == 41)
        #expect(listenerThreads.values == [dispatcherThread])
        #expect(dispatcherThread != currentThreadID() || listenerThreads.count == 1)
    }

    @Test func thunkWithoutThunkMiddlewareReachesTheReducer() throws {
        let reducerSaw = Recorder<Bool>()
        let store = Store(initialState: 0, reducer: Reducer<Int> { _, action in
            reducerSaw.append(action is Thunk<Int>)
        })
        let ran = Cell(false)
        try store.dispatch(Thunk<Int> { _, _ in ran.value = true })
        #expect(reducerSaw.values == [true])
        #expect(ran.value == false)
    }

    // MARK: AsyncThunk

    @Test func asyncThunkStartedThroughThunkMiddleware() async throws {
        let log = Recorder<String>()
        let logger = ClosureMiddleware<Int> { _, next, action in
            log.append("\(type(of: action))")
            try next(action)
        }
        let store = makeCounter(middleware: [logger, ThunkMiddleware<Int>()])
        let (finished, signal) = AsyncStream.makeStream(of: Int.self)
        try store.dispatch(AsyncThunk<Int> { dispatch, getState in
            await Task.yield()
            try? dispatch(CounterAction.increment)
            try? dispatch(CounterAction.add(((try? getState()) ?? 0) * 10))
            signal.yield((try? getState()) ?? -1)
            signal.finish()
        })
        var iterator = finished.makeAsyncIterator()
        let seenAtEnd = await iterator.next()
        #expect(seenAtEnd == 11)
        #expect(try store.getState() == 11)
        #expect(log.values == ["AsyncThunk<Int>", "CounterAction", "CounterAction"])
    }

    @Test func runAwaitsTheAsyncThunkAndItsDispatchesGoThroughTheChain() async throws {
        let log = Recorder<String>()
        let logger = ClosureMiddleware<Int> { _, next, action in
            log.append("\(action)")
            try next(action)
        }
        let store = makeCounter(middleware: [logger])
        let thunk = AsyncThunk<Int> { dispatch, getState in
            try? dispatch(CounterAction.increment)
            await Task.yield()
            let now = (try? getState()) ?? -1
            try? await Task.sleep(nanoseconds: 1_000_000)
            try? dispatch(CounterAction.add(now + 1))
        }
        await store.run(thunk)
        #expect(try store.getState() == 3)
        #expect(log.values == ["increment", "add(2)"])
    }

    // MARK: AsyncSequence faces

    @Test func statesDeliversTheCurrentStateFirstThenChanges() async throws {
        let store = makeCounter(5)
        let states = store.states()
        #expect(store.subscriberCount == 1)
        var iterator = states.makeAsyncIterator()
        #expect(await iterator.next() == 5)
        try store.dispatch(CounterAction.increment)
        #expect(await iterator.next() == 6)
        try store.dispatch(CounterAction.noop) // every dispatch, changed or not
        #expect(await iterator.next() == 6)
        try store.dispatch(CounterAction.add(4))
        #expect(await iterator.next() == 10)
    }

    @Test func statesWithUnboundedBufferDeliversEveryState() async throws {
        let store = makeCounter()
        var iterator = store.states(bufferingPolicy: .unbounded).makeAsyncIterator()
        for _ in 0..<5 { try store.dispatch(CounterAction.increment) }
        var seen: [Int] = []
        for _ in 0..<6 { if let state = await iterator.next() { seen.append(state) } }
        #expect(seen == [0, 1, 2, 3, 4, 5])
    }

    @Test func valuesDeliversTheCurrentValueFirstThenOnlyChanges() async throws {
        struct AppState: Sendable { var count = 0; var other = 0 }
        struct Count: Action {}
        struct Other: Action {}
        let store = Store(initialState: AppState(count: 3), reducer: combineReducers(
            Reducer(on: Count.self) { state, _ in state.count += 1 },
            Reducer(on: Other.self) { state, _ in state.other += 1 }))
        var iterator = store.values(select: { $0.count }, bufferingPolicy: .unbounded).makeAsyncIterator()
        #expect(await iterator.next() == 3)
        try store.dispatch(Other())
        try store.dispatch(Count())
        try store.dispatch(Other())
        try store.dispatch(Count())
        #expect(await iterator.next() == 4)
        #expect(await iterator.next() == 5)
    }

    @Test func cancellingTheConsumingTaskEndsTheSubscription() async throws {
        let store = makeCounter()
        let (started, startedSignal) = AsyncStream.makeStream(of: Int.self)
        let consumer = Task {
            var seen: [Int] = []
            for await state in store.states() {
                seen.append(state)
                startedSignal.yield(state)
            }
            return seen
        }
        var startedIterator = started.makeAsyncIterator()
        #expect(await startedIterator.next() == 0)
        #expect(store.subscriberCount == 1)
        try store.dispatch(CounterAction.increment)
        #expect(await startedIterator.next() == 1)

        consumer.cancel()
        let seen = await consumer.value
        #expect(seen == [0, 1])
        #expect(store.subscriberCount == 0)
        // Dispatching afterwards reaches no stale listener.
        try store.dispatch(CounterAction.increment)
        #expect(store.subscriberCount == 0)
    }

    @Test func cancellingAValuesConsumerEndsTheSubscription() async throws {
        let store = makeCounter()
        try store.subscribe { _ in }.kept() // an unrelated subscription stays
        let (started, startedSignal) = AsyncStream.makeStream(of: Int.self)
        let consumer = Task {
            for await value in store.values(select: { $0 % 2 }) {
                startedSignal.yield(value)
            }
        }
        var startedIterator = started.makeAsyncIterator()
        #expect(await startedIterator.next() == 0)
        #expect(store.subscriberCount == 2)
        consumer.cancel()
        await consumer.value
        #expect(store.subscriberCount == 1)
    }

    @Test func stoppingIterationEndsTheSubscription() async throws {
        let store = makeCounter()
        var seen: [Int] = []
        for await state in store.states() {
            #expect(store.subscriberCount == 1)
            seen.append(state)
            break
        }
        #expect(seen == [0])
        #expect(store.subscriberCount == 0)

        do {
            let stream = store.states()
            #expect(store.subscriberCount == 1)
            withExtendedLifetime(stream) {}
        }
        #expect(store.subscriberCount == 0)
    }
}
