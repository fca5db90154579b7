import Testing
import Turnstate

/// Rules 1-3: when listeners are called, in which order, with which state, and
/// how subscriptions end.
@Suite("Subscriptions")
struct SubscriptionTests {

    // MARK: Rule 1

    @Test func subscribeDoesNotCallListenerAtOnce() throws {
        let store = makeCounter(7)
        let seen = Recorder<Int>()
        try store.subscribe { seen.append($0) }.kept()
        #expect(seen.values == [])
        try store.dispatch(CounterAction.increment)
        #expect(seen.values == [8])
    }

    @Test func receiveCurrentCallsListenerAtOnceWithCurrentState() throws {
        let store = makeCounter(7)
        let seen = Recorder<Int>()
        try store.subscribe(receiveCurrent: true) { seen.append($0) }.kept()
        #expect(seen.values == [7])
        try store.dispatch(CounterAction.add(3))
        #expect(seen.values == [7, 10])
    }

    @Test func eachDispatchCallsEveryListenerOnceInSubscriptionOrder() throws {
        let store = makeCounter()
        let log = Recorder<String>()
        for name in ["a", "b", "c", "d", "e"] {
            try store.subscribe { log.append("\(name)\($0)") }.kept()
        }
        try store.dispatch(CounterAction.increment)
        try store.dispatch(CounterAction.increment)
        try store.dispatch(CounterAction.noop)
        #expect(log.values == ["a1", "b1", "c1", "d1", "e1",
                               "a2", "b2", "c2", "d2", "e2",
                               "a2", "b2", "c2", "d2", "e2"])
    }

    // MARK: Rule 2

    @Test func listenerRemovedDuringDispatchIsStillCalledByThatDispatch() throws {
        let store = makeCounter()
        let log = Recorder<String>()
        let laterOnes = Cell<[Unsubscribe]>([])
        try store.subscribe { state in
            log.append("a\(state)")
            if state == 1 {
                for unsubscribe in laterOnes.value { try? unsubscribe() }
            }
        }.kept()
        let b = try store.subscribe { log.append("b\($0)") }
        let c = try store.subscribe { log.append("c\($0)") }
        laterOnes.value = [b, c]
        try store.dispatch(CounterAction.increment)
        // b and c were in the snapshot of dispatch 1: both still called.
        #expect(log.values == ["a1", "b1", "c1"])
        #expect(store.subscriberCount == 1)
        log.removeAll()
        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["a2"])
    }

    @Test func listenerThatUnsubscribesAnEarlierOneDoesNotStopTheRest() throws {
        let store = makeCounter()
        let log = Recorder<String>()
        let first = Cell<Unsubscribe?>(nil)
        first.value = try store.subscribe { log.append("a\($0)") }
        try store.subscribe { state in
            log.append("b\(state)")
            try? first.value?()
        }.kept()
        try store.subscribe { log.append("c\($0)") }.kept()
        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["a1", "b1", "c1"])
        log.removeAll()
        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["b2", "c2"])
    }

    @Test func listenerThatUnsubscribesItselfIsCalledOnlyOnce() throws {
        let store = makeCounter()
        let log = Recorder<String>()
        let own = Cell<Unsubscribe?>(nil)
        try store.subscribe { log.append("a\($0)") }.kept()
        own.value = try store.subscribe { state in
            log.append("b\(state)")
            try? own.value?()
        }
        try store.subscribe { log.append("c\($0)") }.kept()
        try store.dispatch(CounterAction.increment)
        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["a1", "b1", "c1", "a2", "c2"])
    }

    @Test func listenerAddedDuringDispatchIsFirstCalledByTheNextDispatch() throws {
        let store = makeCounter()
        let log = Recorder<String>()
        try store.subscribe { state in
            log.append("a\(state)")
            if state == 1 {
                (try? store.subscribe { log.append("late\($0)") })?.kept()
            }
        }.kept()
        try store.subscribe { log.append("b\($0)") }.kept()
        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["a1", "b1"])
        #expect(store.subscriberCount == 3)
        log.removeAll()
        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["a2", "b2", "late2"])
    }

    @Test func listenerAddedDuringDispatchWithReceiveCurrentGetsOnlyTheCurrentState() throws {
        let store = makeCounter()
        let log = Recorder<String>()
        try store.subscribe { state in
            log.append("a\(state)")
            if state == 1 {
                (try? store.subscribe(receiveCurrent: true) { log.append("late\($0)") })?.kept()
            }
        }.kept()
        try store.subscribe { log.append("b\($0)") }.kept()
        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["a1", "late1", "b1"])
        log.removeAll()
        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["a2", "b2", "late2"])
    }

    /// A listener subscribes another and dispatches again. The nested dispatch
    /// runs at once with the newest list (including the new listener); the
    /// outer dispatch then finishes with its own snapshot, handing each
    /// remaining listener the newest state.
    @Test func nestedDispatchFromListenerRunsAtOnceThenOuterFinishesWithItsSnapshot() throws {
        let store = makeCounter()
        let log = Recorder<String>()
        try store.subscribe { state in
            log.append("L1:\(state)")
            if state == 1 {
                (try? store.subscribe { log.append("L4:\($0)") })?.kept()
                try? store.dispatch(CounterAction.increment)
                log.append("L1 nested dispatch returned")
            }
        }.kept()
        try store.subscribe { log.append("L2:\($0)") }.kept()
        try store.subscribe { log.append("L3:\($0)") }.kept()

        try store.dispatch(CounterAction.increment)
        #expect(log.values == [
            "L1:1",
            // the nested dispatch, with the newest list
            "L1:2", "L2:2", "L3:2", "L4:2",
            "L1 nested dispatch returned",
            // the outer dispatch finishes with its own snapshot and the newest state
            "L2:2", "L3:2",
        ])
        #expect(try store.getState() == 2)

        log.removeAll()
        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["L1:3", "L2:3", "L3:3", "L4:3"])
    }

    /// A listener unsubscribes a later one and then dispatches: the nested
    /// dispatch no longer calls the removed listener, but the outer dispatch,
    /// whose snapshot still holds it, does.
    @Test func nestedDispatchUsesNewestListButOuterKeepsItsSnapshot() throws {
        let store = makeCounter()
        let log = Recorder<String>()
        let third = Cell<Unsubscribe?>(nil)
        try store.subscribe { state in
            log.append("L1:\(state)")
            if state == 1 {
                try? third.value?()
                try? store.dispatch(CounterAction.add(10))
            }
        }.kept()
        try store.subscribe { log.append("L2:\($0)") }.kept()
        third.value = try store.subscribe { log.append("L3:\($0)") }

        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["L1:1", "L1:11", "L2:11", "L2:11", "L3:11"])
    }

    @Test func dispatchWithNoListenersStillChangesState() throws {
        let store = makeCounter()
        try store.dispatch(CounterAction.add(5))
        #expect(try store.getState() == 5)
        #expect(store.subscriberCount == 0)
    }

    // MARK: Rule 3

    @Test func unsubscribeIsIdempotentAndRemovesOnlyItsOwnSubscription() throws {
        let store = makeCounter()
        let log = Recorder<String>()
        try store.subscribe { log.append("a\($0)") }.kept()
        let b = try store.subscribe { log.append("b\($0)") }
        try store.subscribe { log.append("c\($0)") }.kept()
        #expect(store.subscriberCount == 3)

        try b()
        #expect(store.subscriberCount == 2)
        try b()
        try b()
        #expect(store.subscriberCount == 2)

        try store.dispatch(CounterAction.increment)
        #expect(log.values == ["a1", "c1"])
    }

    @Test func sameClosureSubscribedTwiceGivesTwoIndependentSubscriptions() throws {
        let store = makeCounter()
        let seen = Recorder<Int>()
        let listener: @Sendable (Int) -> Void = { seen.append($0) }
        let first = try store.subscribe(listener)
        let second = try store.subscribe(listener)
        #expect(first.token != second.token)
        #expect(store.subscriberCount == 2)

        try store.dispatch(CounterAction.increment)
        #expect(seen.values == [1, 1])

        try first()
        try first()
        #expect(store.subscriberCount == 1)
        try store.dispatch(CounterAction.increment)
        #expect(seen.values == [1, 1, 2])

        try second()
        #expect(store.subscriberCount == 0)
        try store.dispatch(CounterAction.increment)
        #expect(seen.values == [1, 1, 2])
    }

    @Test func tokensAreNeverReused() throws {
        let store = makeCounter()
        var tokens = Set<UInt64>()
        for _ in 0..<200 {
            let unsubscribe = try store.subscribe { _ in }
            #expect(tokens.insert(unsubscribe.token).inserted)
            try unsubscribe()
        }
        #expect(store.subscriberCount == 0)
    }

    @Test func unsubscribeAfterStoreIsReleasedDoesNothing() throws {
        var store: Store<Int>? = makeCounter()
        let unsubscribe = try store!.subscribe { _ in }
        store = nil
        #expect(store == nil)
        try unsubscribe()
        try unsubscribe()
    }
}
