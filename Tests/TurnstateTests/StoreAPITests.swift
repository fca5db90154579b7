import Foundation
import Observation
import Testing
import Turnstate

/// A state with two independent parts, for selections and Observation.
struct Pair: Equatable, Sendable {
    var count = 0
    var name = ""
}

enum PairAction: Action {
    case increment
    case rename(String)
    case touch // changes nothing
}

let pairReducer = Reducer<Pair> { state, action in
    switch action as? PairAction {
    case .increment?: state.count += 1
    case .rename(let name)?: state.name = name
    case .touch?, nil: break
    }
}

/// Lets the main actor run until `condition` holds (each turn runs the
/// deliveries scheduled so far); fails the test if it never does.
@MainActor
func runMainActor(until condition: @MainActor () -> Bool, sourceLocation: SourceLocation = #_sourceLocation) async {
    for _ in 0..<10_000 {
        if condition() { return }
        await Task.yield()
    }
    Issue.record("the main actor never got there", sourceLocation: sourceLocation)
}

/// Lets the main actor run everything already scheduled on it.
@MainActor
func drainMainActor() async {
    for _ in 0..<100 { await Task.yield() }
}

@Suite("State property")
struct StatePropertyTests {
    @Test func stateReadsTheCurrentState() throws {
        let store = makeCounter(5)
        #expect(store.state == 5)
        try store.dispatch(CounterAction.increment)
        #expect(store.state == 6)
        #expect(try store.getState() == 6)
    }

    @Test func aClosedStoreKeepsItsLastStateButGetStateRefuses() throws {
        let store = makeCounter(3)
        store.close()
        #expect(store.state == 3)
        #expect(throws: StoreError.self) { try store.getState() }
    }

    #if os(macOS) || os(Linux) || os(FreeBSD) || os(Windows)
    @Test func readingStateInsideAReducerStopsTheProgram() async {
        await #expect(processExitsWith: .failure) {
            let box = StoreBox()
            let store = Store(initialState: 0, reducer: Reducer<Int> { count, _ in
                count = box.store?.state ?? 0
            })
            box.store = store
            try? store.dispatch(CounterAction.increment)
        }
    }
    #endif
}

/// Hands a store to its own reducer (for the test that it must not read it).
final class StoreBox: @unchecked Sendable {
    var store: Store<Int>?
}

@Suite("Subscriptions that end themselves")
struct StoreSubscriptionTests {
    @Test func droppingTheSubscriptionEndsIt() throws {
        let store = makeCounter()
        let calls = Cell(0)
        do {
            let subscription = try store.subscribe { _ in calls.withValue { $0 += 1 } }
            try store.dispatch(CounterAction.increment)
            #expect(store.subscriberCount == 1)
            withExtendedLifetime(subscription) {}
        }
        #expect(store.subscriberCount == 0)
        try store.dispatch(CounterAction.increment)
        #expect(calls.value == 1)
    }

    @Test func cancelEndsItAndIsIdempotent() throws {
        let store = makeCounter()
        let calls = Cell(0)
        let subscription = try store.subscribe { _ in calls.withValue { $0 += 1 } }
        let other = try store.subscribe { _ in }
        subscription.cancel()
        subscription.cancel()
        try subscription() // the throwing form: also idempotent
        try store.dispatch(CounterAction.increment)
        #expect(calls.value == 0)
        #expect(store.subscriberCount == 1)
        withExtendedLifetime(other) {}
    }

    @Test func storeInASetOrAnArrayKeepsItUntilRemoved() throws {
        let store = makeCounter()
        let calls = Cell(0)
        var set = Set<StoreSubscription>()
        var array: [StoreSubscription] = []
        try store.subscribe { _ in calls.withValue { $0 += 1 } }.store(in: &set)
        try store.subscribe { _ in calls.withValue { $0 += 10 } }.store(in: &array)
        try store.dispatch(CounterAction.increment)
        #expect(calls.value == 11)
        set.removeAll()
        try store.dispatch(CounterAction.increment)
        #expect(calls.value == 21)
        array.removeAll()
        try store.dispatch(CounterAction.increment)
        #expect(calls.value == 21)
        #expect(store.subscriberCount == 0)
    }

    @Test func cancelWorksInsideAReducerAndAfterClose() throws {
        let subscription = Cell<StoreSubscription?>(nil)
        let store = Store(initialState: 0, reducer: Reducer<Int> { count, _ in
            subscription.value?.cancel()
            count += 1
        })
        subscription.value = try store.subscribe { _ in }
        try store.dispatch(CounterAction.increment)
        #expect(store.subscriberCount == 0)

        let late = try store.subscribe { _ in }
        store.close()
        late.cancel()
        #expect(store.subscriberCount == 0)
        #expect(throws: StoreError.self) { try late() } // the strict form refuses a closed store
    }

    @Test func theStrictFormRefusesInsideAReducer() throws {
        let subscription = Cell<StoreSubscription?>(nil)
        let refusal = Cell<StoreError?>(nil)
        let store = Store(initialState: 0, reducer: Reducer<Int> { count, _ in
            do throws(StoreError) { try subscription.value?() } catch { refusal.value = error }
            count += 1
        })
        subscription.value = try store.subscribe { _ in }
        try store.dispatch(CounterAction.increment)
        #expect(refusal.value?.code == .reentrantCall)
        #expect(store.subscriberCount == 1)
        subscription.value = nil
        #expect(store.subscriberCount == 0)
    }

    @Test func aSubscriptionOutlivingItsStoreDoesNothing() throws {
        var store: Store<Int>? = makeCounter()
        let subscription = try store!.subscribe { _ in }
        store = nil
        subscription.cancel()
        try subscription()
    }
}

@Suite("Repeats")
struct RepeatsTests {
    @Test func isDuplicateDecidesWhatIsARepeat() throws {
        let store = Store(initialState: Pair(), reducer: pairReducer)
        let seen = Recorder<Int>()
        // Only even/odd changes count.
        let subscription = try store.subscribe(select: { $0.count }, isDuplicate: { $0 % 2 == $1 % 2 }) { seen.append($0) }
        for _ in 0..<3 { try store.dispatch(PairAction.increment) }
        try store.dispatch(PairAction.rename("x"))
        #expect(seen.values == [1, 2, 3])
        let again = try store.subscribe(select: { $0.count / 2 }, isDuplicate: { $0 == $1 }, receiveCurrent: true) { seen.append($0 * 100) }
        #expect(seen.values == [1, 2, 3, 100])
        withExtendedLifetime((subscription, again)) {}
    }

    @Test func automaticallySkipsRepeatsSkipsEqualStates() throws {
        let store = Store(initialState: Pair(), reducer: pairReducer, automaticallySkipsRepeats: true)
        let seen = Recorder<Pair>()
        let subscription = try store.subscribe { seen.append($0) }
        try store.dispatch(PairAction.touch)
        try store.dispatch(PairAction.increment)
        try store.dispatch(PairAction.touch)
        #expect(seen.values == [Pair(count: 1)])

        let plain = Store(initialState: Pair(), reducer: pairReducer, automaticallySkipsRepeats: false)
        let all = Cell(0)
        let plainSubscription = try plain.subscribe { _ in all.withValue { $0 += 1 } }
        try plain.dispatch(PairAction.touch)
        #expect(all.value == 1)
        withExtendedLifetime((subscription, plainSubscription)) {}
    }
}

/// A ReSwift-style subscriber.
final class CountSubscriber: StoreSubscriber {
    let seen = Recorder<Int>()
    func newState(_ state: Int) { seen.append(state) }
}

final class NameSubscriber: StoreSubscriber {
    let seen = Recorder<String>()
    func newState(_ state: String) { seen.append(state) }
}

@Suite("Object subscribers")
struct ObjectSubscriberTests {
    @Test func newStateGetsTheCurrentStateThenEachChange() throws {
        let store = makeCounter(7)
        let subscriber = CountSubscriber()
        try store.subscribe(subscriber)
        try store.dispatch(CounterAction.increment)
        #expect(subscriber.seen.values == [7, 8])
        let quiet = CountSubscriber()
        try store.subscribe(quiet, receiveCurrent: false)
        try store.dispatch(CounterAction.increment)
        #expect(quiet.seen.values == [9])
    }

    @Test func heldWeaklyAndForgottenOnceReleased() throws {
        let store = makeCounter()
        var subscriber: CountSubscriber? = CountSubscriber()
        weak let weakSubscriber = subscriber
        try store.subscribe(subscriber!)
        #expect(store.subscriberCount == 1)
        subscriber = nil
        #expect(weakSubscriber == nil)
        try store.dispatch(CounterAction.increment)
        #expect(store.subscriberCount == 0)
    }

    @Test func subscribingAgainReplacesTheSubscription() throws {
        let store = Store(initialState: Pair(), reducer: pairReducer)
        let subscriber = NameSubscriber()
        try store.subscribe(subscriber, select: { $0.name })
        try store.subscribe(subscriber, select: { "\($0.count)" }, receiveCurrent: false)
        #expect(store.subscriberCount == 1)
        try store.dispatch(PairAction.rename("a"))   // the old selection is gone
        try store.dispatch(PairAction.increment)
        try store.dispatch(PairAction.rename("b"))   // the count did not change: skipped
        #expect(subscriber.seen.values == ["", "1"])
        try store.unsubscribe(subscriber)
        try store.unsubscribe(subscriber) // idempotent
        #expect(store.subscriberCount == 0)
        try store.dispatch(PairAction.increment)
        #expect(subscriber.seen.values == ["", "1"])
    }

    // Issue 18, item 17: the CHANGELOG says every `subscribe` returns a
    // StoreSubscription; the object overloads returned nothing. Their handle
    // follows the object: released, it ends nothing; cancelled, it ends the
    // object's subscription (as unsubscribe does), and only its own.
    @Test func subscribeReturnsAHandleThatFollowsTheObject() throws {
        let store = makeCounter()
        let subscriber = CountSubscriber()
        _ = try store.subscribe(subscriber) // the handle, released at once
        try store.dispatch(CounterAction.increment)
        #expect(subscriber.seen.values == [0, 1])
        #expect(store.subscriberCount == 1)

        let handle: StoreSubscription = try store.subscribe(subscriber, receiveCurrent: false) // replaces
        #expect(store.subscriberCount == 1)
        handle.cancel()
        #expect(store.subscriberCount == 0)
        try store.dispatch(CounterAction.increment)
        #expect(subscriber.seen.values == [0, 1])
        handle.cancel() // idempotent
        try store.unsubscribe(subscriber) // nothing left to end

        // A handle from before the object was subscribed again ends nothing.
        let older = try store.subscribe(subscriber, select: { $0 * 10 }, receiveCurrent: false)
        let newer = try store.subscribe(subscriber, select: { $0 }, isDuplicate: { $0 == $1 }, receiveCurrent: false)
        older.cancel()
        #expect(store.subscriberCount == 1)
        try store.dispatch(CounterAction.increment)
        #expect(subscriber.seen.values == [0, 1, 3])
        try newer()
        #expect(store.subscriberCount == 0)
        // The object can be subscribed again afterwards.
        try store.subscribe(subscriber, receiveCurrent: false)
        try store.dispatch(CounterAction.increment)
        #expect(subscriber.seen.values == [0, 1, 3, 4])
        #expect(store.subscriberCount == 1)
    }

    @Test func aSelectionWithIsDuplicate() throws {
        let store = makeCounter()
        let subscriber = CountSubscriber()
        try store.subscribe(subscriber, select: { $0 / 10 }, isDuplicate: { $0 == $1 })
        for _ in 0..<25 { try store.dispatch(CounterAction.increment) }
        #expect(subscriber.seen.values == [0, 1, 2])
    }
}

@MainActor
final class MainCounter: MainActorStoreSubscriber {
    var seen: [Int] = []
    func newState(_ state: Int) {
        MainActor.assertIsolated()
        seen.append(state)
    }
}

@Suite("Main-actor delivery")
@MainActor
struct MainActorDeliveryTests {
    @Test func deliversTheNewestStateOnceOnTheMainActor() async throws {
        let store = makeCounter()
        var seen: [Int] = []
        let subscription = try store.subscribe(on: .main) { count in
            MainActor.assertIsolated()
            seen.append(count)
        }
        // The main actor is busy with this test: the 100 changes coalesce.
        for _ in 0..<100 { try store.dispatch(CounterAction.increment) }
        #expect(seen.isEmpty) // never inside dispatch
        await runMainActor { !seen.isEmpty }
        await drainMainActor()
        #expect(seen == [100])
        withExtendedLifetime(subscription) {}
    }

    @Test func changesFromOtherThreadsArriveOnTheMainActor() async throws {
        let store = makeCounter()
        var last = 0
        let subscription = try store.subscribe(on: .main, select: { $0 }) { last = $0 }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                for _ in 0..<1_000 { try? store.dispatch(CounterAction.increment) }
                done.resume()
            }
        }
        await runMainActor { last == 1_000 }
        withExtendedLifetime(subscription) {}
    }

    @Test func nothingArrivesAfterCancel() async throws {
        let store = makeCounter()
        var calls = 0
        let subscription = try store.subscribe(on: .main) { _ in calls += 1 }
        try store.dispatch(CounterAction.increment) // scheduled...
        subscription.cancel()                       // ...and dropped
        await drainMainActor()
        #expect(calls == 0)
    }

    @Test func aSelectionThatChangedBackDeliversNothing() async throws {
        let store = Store(initialState: Pair(), reducer: pairReducer)
        var names: [String] = []
        let subscription = try store.subscribe(on: .main, select: { $0.name }, receiveCurrent: true) { names.append($0) }
        await runMainActor { !names.isEmpty }
        try store.dispatch(PairAction.rename("x"))
        try store.dispatch(PairAction.rename(""))
        await drainMainActor()
        #expect(names == [""])
        try store.dispatch(PairAction.rename("y"))
        await runMainActor { names.count == 2 }
        #expect(names == ["", "y"])
        withExtendedLifetime(subscription) {}
    }

    @Test func mainActorObjectSubscribers() async throws {
        let store = makeCounter(1)
        let counter = MainCounter()
        try store.subscribe(counter)
        await runMainActor { counter.seen == [1] }
        for _ in 0..<5 { try store.dispatch(CounterAction.increment) }
        await runMainActor { counter.seen == [1, 6] }
        try store.subscribe(counter, select: { $0 * 2 }, receiveCurrent: false) // replaces
        #expect(store.subscriberCount == 1)
        try store.dispatch(CounterAction.increment)
        await runMainActor { counter.seen == [1, 6, 14] }
        try store.unsubscribe(counter)
        try store.dispatch(CounterAction.increment)
        await drainMainActor()
        #expect(counter.seen == [1, 6, 14])
    }

    @Test func mainActorObjectSubscribersReturnAHandle() async throws {
        let store = makeCounter(1)
        let counter = MainCounter()
        _ = try store.subscribe(counter) // released: the subscription goes on
        await runMainActor { counter.seen == [1] }
        try store.dispatch(CounterAction.increment)
        await runMainActor { counter.seen == [1, 2] }
        let handle = try store.subscribe(counter, select: { $0 * 2 }, receiveCurrent: false)
        try store.dispatch(CounterAction.increment)
        await runMainActor { counter.seen == [1, 2, 6] }
        handle.cancel() // ends it, and deliveries already scheduled
        #expect(store.subscriberCount == 0)
        try store.dispatch(CounterAction.increment)
        await drainMainActor()
        #expect(counter.seen == [1, 2, 6])
    }
}

@Suite("Observation")
@MainActor
struct ObservationTests {
    @Test func observersAreToldOnlyOfWhatTheyRead() async throws {
        guard #available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *) else { return }
        let store = Store(initialState: Pair(), reducer: pairReducer)
        let model = try store.observable()
        let countChanges = Cell(0)
        let nameChanges = Cell(0)
        func trackCount() { withObservationTracking { _ = model.count } onChange: { countChanges.withValue { $0 += 1 } } }
        func trackName() { withObservationTracking { _ = model.name } onChange: { nameChanges.withValue { $0 += 1 } } }
        trackCount()
        trackName()

        try store.dispatch(PairAction.increment)
        await runMainActor { model.value.count == 1 }
        #expect(countChanges.value == 1)
        #expect(nameChanges.value == 0)
        trackCount()

        try store.dispatch(PairAction.rename("a"))
        await runMainActor { model.value.name == "a" }
        #expect(countChanges.value == 1)
        #expect(nameChanges.value == 1)

        // Nothing changed: nobody is told.
        let wholeChanges = Cell(0)
        withObservationTracking { _ = model.value } onChange: { wholeChanges.withValue { $0 += 1 } }
        try store.dispatch(PairAction.touch)
        await drainMainActor()
        #expect(wholeChanges.value == 0)
        #expect(countChanges.value == 1)
        try store.dispatch(PairAction.increment)
        await runMainActor { model.count == 2 }
        #expect(wholeChanges.value == 1)
        #expect(countChanges.value == 2)
    }

    @Test func aSelectionChangesOnlyWithIt() async throws {
        guard #available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *) else { return }
        let store = Store(initialState: Pair(), reducer: pairReducer)
        let count = try store.observable(select: { $0.count })
        let changes = Cell(0)
        withObservationTracking { _ = count.value } onChange: { changes.withValue { $0 += 1 } }
        try store.dispatch(PairAction.rename("a"))
        await drainMainActor()
        #expect(changes.value == 0)
        try store.dispatch(PairAction.increment)
        await runMainActor { count.value == 1 }
        #expect(changes.value == 1)
    }

    @Test func releasingTheModelEndsItsSubscription() async throws {
        guard #available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *) else { return }
        let store = makeCounter()
        var model: ObservableState<Int>? = try store.observable()
        #expect(store.subscriberCount == 1)
        model = nil
        #expect(store.subscriberCount == 0)
        _ = model
    }
}

@Suite("Replacing the reducer")
struct ReplaceReducerTests {
    @Test func theStateIsKeptAndTheReplaceActionIsSeen() throws {
        let middlewareSaw = Recorder<String>()
        let watcher = ClosureMiddleware<Int> { _, next, action in
            middlewareSaw.append("\(type(of: action))")
            try next(action)
        }
        let store = makeCounter(5, middleware: [watcher])
        let calls = Cell(0)
        let subscription = try store.subscribe { _ in calls.withValue { $0 += 1 } }
        let reducerSaw = Recorder<String>()
        try store.replaceReducer(Reducer<Int> { count, action in
            reducerSaw.append("\(type(of: action))")
            if action is CounterAction { count += 10 }
        })
        #expect(store.state == 5)
        #expect(reducerSaw.values == ["ReducerReplaced"])
        #expect(middlewareSaw.values == ["ReducerReplaced"])
        #expect(calls.value == 1)
        try store.dispatch(CounterAction.increment)
        #expect(store.state == 15)
        withExtendedLifetime(subscription) {}
    }

    @Test func refusedInsideAReducer() throws {
        let refusal = Cell<StoreError?>(nil)
        let box = StoreBox()
        let store = Store(initialState: 0, reducer: Reducer<Int> { count, _ in
            do throws(StoreError) { try box.store?.replaceReducer(.identity) } catch { refusal.value = error }
            count += 1
        })
        box.store = store
        try store.dispatch(CounterAction.increment)
        #expect(refusal.value?.code == .reentrantCall)
        try store.dispatch(CounterAction.increment)
        #expect(store.state == 2) // the old reducer still runs
    }

    @Test func aRefusedReplaceActionPutsTheOldReducerBack() throws {
        let gate = ClosureMiddleware<Int> { _, next, action in
            if action is ReducerReplaced { throw StoreError(.rejected, "not now") }
            try next(action)
        }
        let store = makeCounter(middleware: [gate])
        #expect(throws: StoreError(.rejected, "not now")) {
            try store.replaceReducer(Reducer<Int> { count, _ in count = -1 })
        }
        try store.dispatch(CounterAction.increment)
        #expect(store.state == 1)
        store.close()
        #expect(throws: StoreError.self) { try store.replaceReducer(.identity) }
    }
}

@Suite("Removing middleware")
struct RemoveMiddlewareTests {
    @Test func aRemovedMiddlewareNoLongerRuns() throws {
        let store = makeCounter()
        let runs = Cell(0)
        let handle = try store.addMiddleware(ClosureMiddleware<Int> { _, next, action in
            runs.withValue { $0 += 1 }
            try next(action)
        })
        try store.dispatch(CounterAction.increment)
        #expect(try handle.remove())
        #expect(try handle.remove() == false)
        try store.dispatch(CounterAction.increment)
        #expect(runs.value == 1)
        #expect(store.state == 2)
    }

    @Test func removedFromInsideItsOwnRunTheDispatchFinishes() throws {
        let store = makeCounter()
        let handle = Cell<MiddlewareHandle?>(nil)
        let runs = Cell(0)
        handle.value = try store.addMiddleware(ClosureMiddleware<Int> { _, next, action in
            runs.withValue { $0 += 1 }
            try handle.value?.remove()
            try next(action)
        })
        try store.dispatch(CounterAction.increment)
        try store.dispatch(CounterAction.increment)
        #expect(runs.value == 1)
        #expect(store.state == 2)
    }

    @Test func refusedInsideAReducer() throws {
        let handle = Cell<MiddlewareHandle?>(nil)
        let refusal = Cell<StoreError?>(nil)
        let store = Store(initialState: 0, reducer: Reducer<Int> { count, _ in
            do throws(StoreError) { try handle.value?.remove() } catch { refusal.value = error }
            count += 1
        })
        handle.value = try store.addMiddleware(ClosureMiddleware<Int> { _, next, action in try next(action) })
        try store.dispatch(CounterAction.increment)
        #expect(refusal.value?.code == .reentrantCall)
        #expect(try handle.value!.remove())
    }
}
