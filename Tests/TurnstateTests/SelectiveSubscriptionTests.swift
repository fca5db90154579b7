import Testing
import Turnstate

/// Selective subscriptions by key path and by closure: Equatable selections
/// are compared with the last value *this* listener was given.
@Suite("Selective subscriptions")
struct SelectiveSubscriptionTests {

    struct AppState: Sendable, Equatable {
        var count = 0
        var name = ""
    }

    enum AppAction: Action {
        case increment, decrement, rename(String), touch
    }

    static let reducer = Reducer<AppState>(on: AppAction.self) { state, action in
        switch action {
        case .increment: state.count += 1
        case .decrement: state.count -= 1
        case .rename(let name): state.name = name
        case .touch: break
        }
    }

    static func makeStore() -> Store<AppState> {
        Store(initialState: AppState(), reducer: reducer)
    }

    @Test func keyPathListenerRunsOnlyWhenTheSelectionChanged() throws {
        let store = Self.makeStore()
        let counts = Recorder<Int>()
        try store.subscribe(\.count) { counts.append($0) }.kept()
        try store.dispatch(AppAction.touch)
        try store.dispatch(AppAction.rename("x"))
        #expect(counts.values == [])
        try store.dispatch(AppAction.increment)
        try store.dispatch(AppAction.rename("y"))
        try store.dispatch(AppAction.increment)
        try store.dispatch(AppAction.decrement)
        #expect(counts.values == [1, 2, 1])
    }

    @Test func closureListenerRunsOnlyWhenTheSelectionChanged() throws {
        let store = Self.makeStore()
        let parities = Recorder<Bool>()
        let names = Recorder<String>()
        try store.subscribe(select: { $0.count % 2 == 0 }) { parities.append($0) }.kept()
        try store.subscribe(select: { $0.name.uppercased() }) { names.append($0) }.kept()
        try store.dispatch(AppAction.increment)   // odd
        try store.dispatch(AppAction.rename("a")) // "A"
        try store.dispatch(AppAction.rename("A")) // still "A"
        try store.dispatch(AppAction.increment)   // even
        try store.dispatch(AppAction.touch)
        #expect(parities.values == [false, true])
        #expect(names.values == ["A"])
    }

    @Test func receiveCurrentGivesTheCurrentSelectionAtOnce() throws {
        let store = Self.makeStore()
        try store.dispatch(AppAction.rename("start"))
        let names = Recorder<String>()
        let counts = Recorder<Int>()
        try store.subscribe(\.name, receiveCurrent: true) { names.append($0) }.kept()
        try store.subscribe(select: { $0.count }, receiveCurrent: true) { counts.append($0) }.kept()
        #expect(names.values == ["start"])
        #expect(counts.values == [0])
        try store.dispatch(AppAction.touch) // no change: not called again
        try store.dispatch(AppAction.increment)
        #expect(names.values == ["start"])
        #expect(counts.values == [0, 1])
    }

    @Test func withoutReceiveCurrentAChangeIsMeasuredFromTheValueAtSubscription() throws {
        let store = Self.makeStore()
        try store.dispatch(AppAction.increment)
        try store.dispatch(AppAction.increment)
        let counts = Recorder<Int>()
        try store.subscribe(\.count) { counts.append($0) }.kept()
        try store.dispatch(AppAction.touch)
        #expect(counts.values == [])
        try store.dispatch(AppAction.decrement)
        #expect(counts.values == [1])
    }

    /// The ReSwift bug: a listener added later must compare with the last value
    /// *it* was given, not with the store's previous state or another
    /// listener's value.
    @Test func eachListenerComparesWithItsOwnLastValue() throws {
        let store = Self.makeStore()
        let early = Recorder<Int>()
        let late = Recorder<Int>()
        try store.subscribe(\.count) { early.append($0) }.kept()
        try store.dispatch(AppAction.increment) // 1
        try store.subscribe(\.count) { late.append($0) }.kept()
        try store.dispatch(AppAction.touch)     // 1: neither changed
        try store.dispatch(AppAction.increment) // 2: both
        try store.dispatch(AppAction.decrement) // 1: both
        #expect(early.values == [1, 2, 1])
        #expect(late.values == [2, 1])
    }

    @Test func unsubscribedAndResubscribedListenerStartsFromTheCurrentValue() throws {
        let store = Self.makeStore()
        let seen = Recorder<Int>()
        let first = try store.subscribe(\.count) { seen.append($0) }
        try store.dispatch(AppAction.increment)      // 1, seen
        try first()
        try store.dispatch(AppAction.increment)      // 2, unseen
        try store.subscribe(\.count) { seen.append($0 * 100) }.kept()
        try store.dispatch(AppAction.touch)          // 2: unchanged for the new one
        try store.dispatch(AppAction.decrement)      // 1: changed for the new one
        #expect(seen.values == [1, 100])
    }

    /// A listener that dispatches from inside a listener: the later listener
    /// is called once with the newest value, neither skipping it nor repeating
    /// it nor being handed a stale one.
    @Test func nestedDispatchDoesNotMakeALaterListenerSkipOrRepeat() throws {
        let store = Self.makeStore()
        let a = Recorder<Int>()
        let b = Recorder<Int>()
        let c = Recorder<Int>()
        try store.subscribe(\.count) { count in
            a.append(count)
            if count == 1 { try? store.dispatch(AppAction.increment) }
        }.kept()
        try store.subscribe(\.count) { b.append($0) }.kept()
        try store.subscribe(select: { $0.count }) { c.append($0) }.kept()

        try store.dispatch(AppAction.increment)
        #expect(a.values == [1, 2])
        #expect(b.values == [2])
        #expect(c.values == [2])

        try store.dispatch(AppAction.increment)
        #expect(a.values == [1, 2, 3])
        #expect(b.values == [2, 3])
        #expect(c.values == [2, 3])
    }

    /// A nested dispatch that undoes the change: the later listener, whose last
    /// value is still the original one, must not be called with the stale
    /// intermediate value.
    @Test func nestedDispatchThatUndoesTheChangeCallsTheLaterListenerWithNothingStale() throws {
        let store = Self.makeStore()
        let a = Recorder<Int>()
        let b = Recorder<Int>()
        try store.subscribe(\.count) { count in
            a.append(count)
            if count == 1 { try? store.dispatch(AppAction.decrement) }
        }.kept()
        try store.subscribe(\.count) { b.append($0) }.kept()
        try store.dispatch(AppAction.increment)
        #expect(a.values == [1, 0])
        #expect(b.values == [])
        #expect(try store.getState().count == 0)
        try store.dispatch(AppAction.rename("x"))
        try store.dispatch(AppAction.decrement)
        #expect(a.values == [1, 0, -1])
        #expect(b.values == [-1])
    }

    /// A listener that subscribes a selective listener during a dispatch: the
    /// new one starts from the value at that moment and is first considered on
    /// the next dispatch.
    @Test func selectiveListenerAddedDuringDispatch() throws {
        let store = Self.makeStore()
        let late = Recorder<Int>()
        let added = Cell(false)
        try store.subscribe { state in
            if state.count == 1, !added.value {
                added.value = true
                (try? store.subscribe(\.count) { late.append($0) })?.kept()
            }
        }.kept()
        try store.dispatch(AppAction.increment) // 1: late subscribes at 1
        try store.dispatch(AppAction.touch)     // 1: unchanged for late
        try store.dispatch(AppAction.increment) // 2
        #expect(late.values == [2])
    }

    struct Snapshot: Sendable { // deliberately not Equatable
        var count: Int
    }

    @Test func nonEquatableSelectionRunsOnEveryDispatch() throws {
        let store = Self.makeStore()
        let seen = Recorder<Int>()
        try store.subscribe(select: { Snapshot(count: $0.count) }) { seen.append($0.count) }.kept()
        try store.dispatch(AppAction.touch)
        try store.dispatch(AppAction.touch)
        try store.dispatch(AppAction.increment)
        #expect(seen.values == [0, 0, 1])
    }

    @Test func nonEquatableSelectionWithReceiveCurrent() throws {
        let store = Self.makeStore()
        let seen = Recorder<Int>()
        try store.subscribe(select: { Snapshot(count: $0.count) }, receiveCurrent: true) { seen.append($0.count) }.kept()
        #expect(seen.values == [0])
        try store.dispatch(AppAction.touch)
        #expect(seen.values == [0, 0])
    }

    @Test func selectiveSubscriptionsCountAndUnsubscribe() throws {
        let store = Self.makeStore()
        let seen = Recorder<Int>()
        let byKeyPath = try store.subscribe(\.count) { seen.append($0) }
        let byClosure = try store.subscribe(select: { $0.count }) { seen.append(-$0) }
        #expect(store.subscriberCount == 2)
        try byKeyPath()
        try byKeyPath()
        #expect(store.subscriberCount == 1)
        try store.dispatch(AppAction.increment)
        #expect(seen.values == [-1])
        try byClosure()
        #expect(store.subscriberCount == 0)
    }
}
