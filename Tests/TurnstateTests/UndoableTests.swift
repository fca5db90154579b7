import Testing
import Turnstate

/// `undoable(_:_:)`: redux-undo's test suite's behaviours (initial state and
/// initial history, undo, redo, limit, filter with and without syncFilter,
/// groupBy, jump, jumpToPast, jumpToFuture, clearHistory, init types), the
/// byte bound, and the options refused.
@Suite("Undoable")
struct UndoableTests {

    enum Counter: Action { case increment, decrement }
    struct Dummy: Action {}
    struct Grouped: Action { let by: Int; let group: String? }
    struct Reinitialize: Action {}
    struct ResetHistory: Action {}

    static let counter = Reducer<Int> { count, action in
        switch action {
        case Counter.increment: count += 1
        case Counter.decrement: count -= 1
        case let grouped as Grouped: count += grouped.by
        default: break
        }
    }

    static func store(_ options: UndoOptions<Int> = UndoOptions(), initial: Undoable<Int> = Undoable(0)) throws
        -> Store<Undoable<Int>> {
        Store(initialState: initial, reducer: try undoable(counter, options))
    }

    static func send(_ store: Store<Undoable<Int>>, _ action: any Action, times: Int = 1) throws {
        for _ in 0..<times { try store.dispatch(action) }
    }

    @Test func initialStateHasNoHistory() throws {
        let store = try Self.store(initial: Undoable(100))
        let state = try store.getState()
        #expect(state.past.isEmpty && state.future.isEmpty && state.present == 100)
        #expect(!state.canUndo && !state.canRedo)
        try store.dispatch(UndoAction.undo)
        #expect(try store.getState().present == 100, "undo with an empty past changes nothing")
    }

    @Test func initialHistoryIsKept() throws {
        let store = try Self.store(initial: Undoable(past: [0, 1, 2, 3], present: 4, future: [5, 6, 7]))
        try store.dispatch(UndoAction.redo)
        #expect(try store.getState().present == 5)
        try Self.send(store, UndoAction.undo, times: 2)
        #expect(try store.getState().present == 3)
        #expect(try store.getState().future == [4, 5, 6, 7])
    }

    @Test func undoAndRedo() throws {
        let store = try Self.store()
        try Self.send(store, Counter.increment, times: 2)
        try store.dispatch(Dummy())
        #expect(try store.getState().past == [0, 1], "an action that changes nothing is not recorded")
        try store.dispatch(UndoAction.undo)
        #expect(try store.getState() == Undoable(past: [0], present: 1, future: [2]))
        try store.dispatch(UndoAction.redo)
        #expect(try store.getState().present == 2)
        try store.dispatch(UndoAction.undo)
        try store.dispatch(Counter.decrement)
        #expect(try store.getState().future.isEmpty, "a new action clears the future")
        #expect(try store.getState().present == 0)
    }

    @Test func limitKeepsThatManyPastStates() throws {
        let store = try Self.store(UndoOptions(limit: 3))
        try Self.send(store, Counter.increment, times: 6)
        #expect(try store.getState().past == [3, 4, 5])
        try Self.send(store, UndoAction.undo, times: 5)
        #expect(try store.getState().present == 3)
        #expect(try store.getState().future == [4, 5, 6])
    }

    @Test func maxBytesBoundsTheHistory() throws {
        // Each state counts 10 bytes: 25 bytes keep two.
        let store = try Self.store(UndoOptions(maxBytes: 25, size: { _ in 10 }))
        try Self.send(store, Counter.increment, times: 5)
        #expect(try store.getState().past == [3, 4])
        #expect(try store.getState().bytes == 20)
        // Without `size`, an Encodable state is measured as JSON: "1000" is 4 bytes.
        let json = try Self.store(UndoOptions(maxBytes: 8), initial: Undoable(1000))
        try Self.send(json, Counter.increment, times: 4)
        #expect(try json.getState().past == [1002, 1003])
    }

    @Test func includeFilterRecordsOnlyThoseActions() throws {
        let store = try Self.store(UndoOptions(filter: .includeAction(where: { ($0 as? Counter) == .decrement })))
        try store.dispatch(Counter.decrement)  // past [0], latest -1
        try store.dispatch(Counter.increment)  // filtered: present 0
        #expect(try store.getState().past == [0])
        try store.dispatch(Counter.decrement)  // past [0, -1]
        try store.dispatch(UndoAction.undo)
        #expect(try store.getState().present == -1)
        try store.dispatch(UndoAction.undo)
        #expect(try store.getState().present == 0)
    }

    @Test func excludeFilterAndSyncFilter() throws {
        let plain = try Self.store(UndoOptions(filter: .excludeAction(Grouped.self)))
        try plain.dispatch(Counter.increment)
        try Self.send(plain, Grouped(by: 10, group: nil), times: 2)
        #expect(try plain.getState().past == [0])
        try plain.dispatch(UndoAction.undo)
        try plain.dispatch(UndoAction.redo)
        #expect(try plain.getState().present == 1, "redo comes back to the latest unfiltered state")
        let synced = try Self.store(UndoOptions(filter: .excludeAction(Grouped.self), syncFilter: true))
        try synced.dispatch(Counter.increment)
        try Self.send(synced, Grouped(by: 10, group: nil), times: 2)
        try synced.dispatch(UndoAction.undo)
        try synced.dispatch(UndoAction.redo)
        #expect(try synced.getState().present == 21, "syncFilter: redo comes back to the filtered present")
    }

    /// redux-undo's "Group By" run: groupBy: (action) => action.group || null.
    @Test func groupByMakesOneStepOfAGroup() throws {
        let store = try Self.store(UndoOptions(groupBy: UndoGroupBy { ($0 as? Grouped)?.group }))
        try store.dispatch(Grouped(by: 1, group: "a"))
        #expect(try store.getState().past.count == 1)
        try Self.send(store, Grouped(by: 1, group: "a"), times: 2)
        #expect(try store.getState().past.count == 1)
        #expect(try store.getState().present == 3)
        try Self.send(store, Grouped(by: -1, group: "b"), times: 3)
        #expect(try store.getState().past.count == 2)
        #expect(try store.getState().present == 0)
        try store.dispatch(Counter.increment)
        #expect(try store.getState().past.count == 3)
        try store.dispatch(Counter.increment)
        #expect(try store.getState().past.count == 4)
        try Self.send(store, UndoAction.undo, times: 3)
        #expect(try store.getState().present == 3, "group b undone as one step")
        try store.dispatch(UndoAction.undo)
        #expect(try store.getState().present == 0, "group a undone as one step")
        try store.dispatch(UndoAction.redo)
        try store.dispatch(Grouped(by: 1, group: "a"))
        #expect(try store.getState().past.count == 2, "after a redo the same group is a new step")
    }

    @Test func groupByActionTypes() throws {
        let store = try Self.store(UndoOptions(groupBy: .actionTypes(Grouped.self)))
        try Self.send(store, Grouped(by: 1, group: nil), times: 3)
        try Self.send(store, Counter.increment, times: 2)
        #expect(try store.getState().past.count == 3)
        let byType = try Self.store(UndoOptions(groupBy: .actionType))
        try Self.send(byType, Counter.increment, times: 2)
        try Self.send(byType, Grouped(by: 5, group: nil), times: 2)
        try byType.dispatch(UndoAction.undo)
        #expect(try byType.getState().present == 2)
    }

    @Test func jumps() throws {
        let store = try Self.store()
        try Self.send(store, Counter.increment, times: 5)
        try store.dispatch(UndoAction.jump(-2))
        #expect(try store.getState() == Undoable(past: [0, 1, 2], present: 3, future: [4, 5]))
        try store.dispatch(UndoAction.jump(1))
        #expect(try store.getState().present == 4)
        try store.dispatch(UndoAction.jumpToPast(1))
        #expect(try store.getState() == Undoable(past: [0], present: 1, future: [2, 3, 4, 5]))
        try store.dispatch(UndoAction.jumpToFuture(2))
        #expect(try store.getState() == Undoable(past: [0, 1, 2, 3], present: 4, future: [5]))
        let before = try store.getState()
        try store.dispatch(UndoAction.jump(5))
        try store.dispatch(UndoAction.jumpToPast(4))
        try store.dispatch(UndoAction.jumpToFuture(-1))
        try store.dispatch(UndoAction.jump(0))
        #expect(try store.getState() == before, "jumps out of range change nothing")
    }

    @Test func clearHistoryKeepsThePresent() throws {
        let store = try Self.store(UndoOptions(clearHistoryWhen: { $0 is ResetHistory }))
        try Self.send(store, Counter.increment, times: 3)
        try store.dispatch(UndoAction.undo)
        try store.dispatch(UndoAction.clearHistory)
        #expect(try store.getState() == Undoable(2))
        try Self.send(store, Counter.increment, times: 2)
        try store.dispatch(ResetHistory())
        #expect(try store.getState() == Undoable(4))
    }

    @Test func initTypesPutBackTheStartingHistory() throws {
        let start = Undoable(past: [123], present: 5, future: [-1, -2, -3])
        let store = try Self.store(UndoOptions(initWhen: { $0 is Reinitialize }), initial: start)
        try Self.send(store, Counter.increment, times: 2)
        try store.dispatch(Reinitialize())
        #expect(try store.getState() == start)
    }

    @Test func badOptionsAreRefused() {
        #expect(throws: StoreError.self) { _ = try undoable(Self.counter, UndoOptions(limit: 0)) }
        #expect(throws: StoreError.self) { _ = try undoable(Self.counter, UndoOptions(maxBytes: 0)) }
        struct Opaque: Equatable, Sendable { var n = 0 }
        do {
            _ = try undoable(Reducer<Opaque>.identity, UndoOptions(maxBytes: 10))
            Issue.record("maxBytes without size for a state that is not Encodable was accepted")
        } catch {
            #expect(error.code == .badArgument)
            #expect(error.message.contains("maxBytes needs options.size"))
        }
    }

    @Test func wireTypesAreThePluginsActionTypes() {
        #expect(UndoAction.undo.wireType == "@@undo")
        #expect(UndoAction.jumpToFuture(1).wireType == "@@undo/jump_to_future")
        #expect(UndoAction.clearHistory.wireType == "@@undo/clear")
    }
}
