import Testing
import Turnstate

/// Reducers: in-place, pure, typed (`on:`), combined in order, and sliced by key path.
@Suite("Reducers")
struct ReducerTests {

    struct Bump: Action { let index: Int }

    /// The address of the array's element buffer.
    static func bufferAddress(_ array: [Int]) -> UInt {
        array.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
    }

    @Test func inPlaceReducerDoesNotCopyALargeArray() throws {
        let addresses = Recorder<UInt>()
        let reducer = Reducer<[Int]>(on: Bump.self) { items, bump in
            addresses.append(ReducerTests.bufferAddress(items))
            items[bump.index] += 1
            addresses.append(ReducerTests.bufferAddress(items))
        }
        // The array is created in place: only the store references it.
        let store = Store(initialState: [Int](repeating: 0, count: 1_000_000), reducer: reducer)
        // Read the address through a temporary copy that is gone before the dispatch.
        let before = Self.bufferAddress(try store.getState())

        try store.dispatch(Bump(index: 123_456))

        let after = Self.bufferAddress(try store.getState())
        let inside = addresses.values
        #expect(inside.count == 2)
        #expect(inside.first == before, "the reducer was not given the store's buffer")
        #expect(inside.last == before, "changing one element copied the array: the reducer's state was not uniquely referenced")
        #expect(after == before, "the store did not keep the reducer's buffer")
        #expect(try store.getState()[123_456] == 1)

        // With listeners (plain and selective) that read the state, the next
        // dispatch still changes the same buffer: notification keeps no copy.
        let sums = Recorder<Int>()
        try store.subscribe { sums.append($0[123_456]) }.kept()
        try store.subscribe(select: { $0[5] }) { (_: Int) in }.kept()
        addresses.removeAll()
        try store.dispatch(Bump(index: 5))
        try store.dispatch(Bump(index: 123_456))
        #expect(addresses.values == [before, before, before, before])
        #expect(Self.bufferAddress(try store.getState()) == before)
        #expect(sums.values == [1, 2])

        let state = try store.getState()
        #expect(state[123_456] == 2)
        #expect(state.reduce(0, +) == 3)
    }

    final class Payload: @unchecked Sendable {
        var value = 0
    }

    struct Boxed: Sendable {
        var payload = Payload()
        var items: [Int] = []
    }

    @Test func reducerGetsAUniquelyReferencedState() throws {
        struct Touch: Action {}
        let uniqueness = Recorder<Bool>()
        let reducer = Reducer<Boxed>(on: Touch.self) { state, _ in
            uniqueness.append(isKnownUniquelyReferenced(&state.payload))
        }
        let store = Store(initialState: Boxed(), reducer: reducer)
        try store.dispatch(Touch())
        // a state read and dropped between dispatches must not leave a reference behind
        _ = try store.getState()
        try store.dispatch(Touch())
        #expect(uniqueness.values == [true, true])
    }

    @Test func sliceReducerChangesItsSliceInPlace() throws {
        let addresses = Recorder<UInt>()
        let itemsReducer = Reducer<[Int]>(on: Bump.self) { items, bump in
            items[bump.index] += 1
            addresses.append(ReducerTests.bufferAddress(items))
        }
        let store = Store(
            initialState: Boxed(items: [Int](repeating: 0, count: 500_000)),
            reducer: .slice(\Boxed.items, itemsReducer))
        let before = Self.bufferAddress(try store.getState().items)
        try store.dispatch(Bump(index: 7))
        #expect(addresses.values == [before])
        #expect(Self.bufferAddress(try store.getState().items) == before)
        #expect(try store.getState().items[7] == 1)
    }

    @Test func pureReducerComputesTheNextState() throws {
        let reducer = Reducer<Int>(pure: { count, action in
            switch action as? CounterAction {
            case .add(let n)?: count + n
            case .increment?: count + 1
            default: count
            }
        })
        let store = Store(initialState: 1, reducer: reducer)
        try store.dispatch(CounterAction.add(41))
        #expect(try store.getState() == 42)
        try store.dispatch(CounterAction.increment)
        try store.dispatch(CounterAction.decrement) // not handled: unchanged
        #expect(try store.getState() == 43)
    }

    @Test func typedReducerHandlesOnlyItsActionType() throws {
        struct SetName: Action { let name: String }
        struct Other: Action { let name: String }
        let reducer = Reducer<String>(on: SetName.self) { state, action in state = action.name }
        let store = Store(initialState: "start", reducer: reducer)
        try store.dispatch(Other(name: "ignored"))
        #expect(try store.getState() == "start")
        try store.dispatch(SetName(name: "set"))
        #expect(try store.getState() == "set")
        try store.dispatch(CounterAction.increment)
        #expect(try store.getState() == "set")
    }

    @Test func reducerCanBeCalledDirectly() {
        var count = 5
        counterReducer(&count, CounterAction.add(2))
        #expect(count == 7)
        Reducer<Int>.identity(&count, CounterAction.add(2))
        #expect(count == 7)
    }

    struct Pipeline: Sendable, Equatable {
        var log: [String] = []
        var x = 0
        var y = 0
    }

    @Test func combineReducersRunsInOrderEachSeeingTheChangesBefore() throws {
        let first = Reducer<Pipeline> { state, action in
            guard action is CounterAction else { return }
            state.log.append("first")
            state.x += 1
        }
        let second = Reducer<Pipeline> { state, action in
            guard action is CounterAction else { return }
            state.log.append("second saw x=\(state.x)")
            state.y = state.x * 10
        }
        let third = Reducer<Pipeline> { state, action in
            guard action is CounterAction else { return }
            state.log.append("third saw y=\(state.y)")
        }
        let store = Store(initialState: Pipeline(), reducer: combineReducers(first, second, third))
        try store.dispatch(CounterAction.increment)
        #expect(try store.getState() == Pipeline(log: ["first", "second saw x=1", "third saw y=10"], x: 1, y: 10))

        // The array form, in the other order.
        let reversed = Store(initialState: Pipeline(), reducer: combineReducers([third, second, first]))
        try reversed.dispatch(CounterAction.increment)
        #expect(try reversed.getState() == Pipeline(log: ["third saw y=0", "second saw x=0", "first"], x: 1, y: 0))
    }

    @Test func combineReducersOfOneOrNone() throws {
        let one = Store(initialState: 0, reducer: combineReducers(counterReducer))
        try one.dispatch(CounterAction.add(4))
        #expect(try one.getState() == 4)
        let none = Store(initialState: 3, reducer: combineReducers([Reducer<Int>]()))
        try none.dispatch(CounterAction.add(4))
        #expect(try none.getState() == 3)
    }

    struct AppState: Sendable, Equatable {
        var counter = 0
        var name = ""
        var untouched = "same"
    }

    @Test func sliceCombinesReducersByKey() throws {
        struct Rename: Action { let to: String }
        let names = Reducer<String>(on: Rename.self) { name, action in name = action.to }
        let app = combineReducers(
            .slice(\AppState.counter, counterReducer),
            .slice(\AppState.name, names))
        let store = Store(initialState: AppState(), reducer: app)
        try store.dispatch(CounterAction.add(3))
        try store.dispatch(Rename(to: "turnstate"))
        try store.dispatch(CounterAction.increment)
        #expect(try store.getState() == AppState(counter: 4, name: "turnstate", untouched: "same"))
    }
}
