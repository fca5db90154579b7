#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

// Undo and redo for a typed store, with redux-undo's vocabulary: a reducer
// wrapper, `undoable(_:_:)`, whose state is an `Undoable<State>` (past,
// present, future). The C face's equivalent is the undo plugin,
// Plugins/undo (docs/undo.md), which speaks the same actions as tagged JSON.

/// A state with its history: redux-undo's `StateWithHistory`.
///
/// `present` is the state; `past` holds the earlier states, oldest first;
/// `future` the states that `redo` brings back, the next one first. Make a
/// store's state an `Undoable` and its reducer ``undoable(_:_:)``:
///
/// ```swift
/// let store = Store(initialState: Undoable(0), reducer: try undoable(counter, UndoOptions(limit: 50)))
/// try store.dispatch(Increment())
/// try store.dispatch(UndoAction.undo)
/// try store.getState().present   // 0
/// try store.getState().canRedo   // true
/// ```
public struct Undoable<State: Sendable>: Sendable {
    /// The earlier states, oldest first.
    public internal(set) var past: [State]
    /// The state now.
    public internal(set) var present: State
    /// The states that redo brings back, the next one first.
    public internal(set) var future: [State]
    /// The group of the last recorded action (see ``UndoGroupBy``), or nil.
    public internal(set) var group: String?
    /// redux-undo's `_latestUnfiltered`: the state after the last recorded
    /// action, which the next recorded action puts into the past.
    var latestUnfiltered: State
    /// Bytes of each state of past and future, in step with them (all 0
    /// without a byte bound).
    var pastSizes: [Int]
    var futureSizes: [Int]
    /// Whether the sizes above were measured (states given to the
    /// initializer are measured by the first action reduced).
    var measured = false
    /// The history the store started with, for ``UndoOptions/initWhen``.
    let initialPast: [State]
    let initialPresent: State
    let initialFuture: [State]

    /// A state with no history: the initial state of an undoable store.
    public init(_ present: State) {
        self.init(past: [], present: present, future: [])
    }

    /// A state with a history to start from (redux-undo's initial state that
    /// is already a history).
    public init(past: [State], present: State, future: [State]) {
        self.past = past
        self.present = present
        self.future = future
        group = nil
        latestUnfiltered = present
        pastSizes = Array(repeating: 0, count: past.count)
        futureSizes = Array(repeating: 0, count: future.count)
        initialPast = past
        initialPresent = present
        initialFuture = future
    }

    /// Whether ``UndoAction/undo`` would change the state: the past is not empty.
    public var canUndo: Bool { !past.isEmpty }
    /// Whether ``UndoAction/redo`` would change the state: the future is not empty.
    public var canRedo: Bool { !future.isEmpty }
    /// The bytes of the states in past and future, as ``UndoOptions/size``
    /// measures them (0 without ``UndoOptions/maxBytes``).
    public var bytes: Int { pastSizes.reduce(0, +) + futureSizes.reduce(0, +) }
}

extension Undoable: Equatable where State: Equatable {
    /// Two histories are equal when their past, present and future are.
    public static func == (lhs: Undoable, rhs: Undoable) -> Bool {
        lhs.past == rhs.past && lhs.present == rhs.present && lhs.future == rhs.future
    }
}

/// The actions an ``undoable(_:_:)`` reducer answers itself (redux-undo's
/// `ActionCreators`). Their tagged JSON names, which the undo plugin of the
/// C face uses, are in ``wireType``.
public enum UndoAction: Action, Equatable {
    /// Back one step: the last state of the past becomes the present.
    case undo
    /// Forward one step: the first state of the future becomes the present.
    case redo
    /// `n` steps back (negative) or forward (positive); 0 changes nothing.
    case jump(Int)
    /// To `past[index]`.
    case jumpToPast(Int)
    /// To `future[index]`.
    case jumpToFuture(Int)
    /// Empties past and future; the present stays.
    case clearHistory

    /// The action's `type` in the undo plugin's tagged JSON: `@@undo`,
    /// `@@redo`, `@@undo/jump`, `@@undo/jump_to_past`,
    /// `@@undo/jump_to_future`, `@@undo/clear`.
    public var wireType: String {
        switch self {
        case .undo: "@@undo"
        case .redo: "@@redo"
        case .jump: "@@undo/jump"
        case .jumpToPast: "@@undo/jump_to_past"
        case .jumpToFuture: "@@undo/jump_to_future"
        case .clearHistory: "@@undo/clear"
        }
    }
}

/// Which actions are recorded as steps of the history (redux-undo's
/// `filter`). An action that is not still changes the present, but is not a
/// step of its own: undo goes back to the state before the last recorded
/// action (unless ``UndoOptions/syncFilter``).
public struct UndoFilter<State: Sendable>: Sendable {
    let test: @Sendable (any Action, State) -> Bool

    /// Records the actions for which `test(action, newState)` is true.
    public init(_ test: @escaping @Sendable (any Action, State) -> Bool) {
        self.test = test
    }

    /// Records every action that changes the state (the default).
    public static var all: UndoFilter { UndoFilter { _, _ in true } }

    /// Records only actions of these types (redux-undo's `includeAction`).
    public static func includeAction(_ types: any Action.Type...) -> UndoFilter {
        let ids = Set(types.map { ObjectIdentifier($0) })
        return UndoFilter { action, _ in ids.contains(ObjectIdentifier(type(of: action))) }
    }

    /// Records every action but those of these types (redux-undo's `excludeAction`).
    public static func excludeAction(_ types: any Action.Type...) -> UndoFilter {
        let ids = Set(types.map { ObjectIdentifier($0) })
        return UndoFilter { action, _ in !ids.contains(ObjectIdentifier(type(of: action))) }
    }

    /// Records only actions for which `predicate` is true (to tell apart the
    /// cases of one action enum).
    public static func includeAction(where predicate: @escaping @Sendable (any Action) -> Bool) -> UndoFilter {
        UndoFilter { action, _ in predicate(action) }
    }
}

/// Which consecutive recorded actions make one step (redux-undo's
/// `groupBy`): an action whose group is the group of the last recorded
/// action changes the present without a new step. nil is no group. Undo,
/// redo and the jumps end a group.
public struct UndoGroupBy: Sendable {
    let group: @Sendable (any Action) -> String?

    /// Groups by the name `group(action)` returns (nil: no group).
    public init(_ group: @escaping @Sendable (any Action) -> String?) {
        self.group = group
    }

    /// No grouping: every recorded action is a step (the default).
    public static var none: UndoGroupBy { UndoGroupBy { _ in nil } }

    /// Consecutive actions of one Swift type are one step.
    public static var actionType: UndoGroupBy { UndoGroupBy { String(reflecting: type(of: $0)) } }

    /// Consecutive actions of one of these types (the same type) are one
    /// step (redux-undo's `groupByActionTypes`).
    public static func actionTypes(_ types: any Action.Type...) -> UndoGroupBy {
        let ids = Set(types.map { ObjectIdentifier($0) })
        return UndoGroupBy { action in
            ids.contains(ObjectIdentifier(type(of: action))) ? String(reflecting: type(of: action)) : nil
        }
    }
}

/// How ``undoable(_:_:)`` keeps its history (redux-undo's config).
public struct UndoOptions<State: Sendable>: Sendable {
    /// The most states the past keeps (the oldest go first); nil: no limit.
    public var limit: Int?
    /// The most bytes the past and future keep together, as ``size``
    /// measures them (the oldest past states go first, then the farthest
    /// future ones); nil: no limit.
    public var maxBytes: Int?
    /// The bytes of one state, for ``maxBytes``. nil: the length of its JSON
    /// encoding (the state must then be `Encodable`).
    public var size: (@Sendable (State) -> Int)?
    /// Which actions are recorded.
    public var filter: UndoFilter<State>
    /// Which consecutive actions are one step.
    public var groupBy: UndoGroupBy
    /// redux-undo's `syncFilter`: an action that is not recorded still
    /// becomes the state that the next recorded action puts in the past.
    public var syncFilter: Bool
    /// Actions, besides ``UndoAction/clearHistory``, that empty the history
    /// after they are reduced (redux-undo's `clearHistoryType`).
    public var clearHistoryWhen: (@Sendable (any Action) -> Bool)?
    /// Actions that put back the history the store started with (redux-undo's
    /// `initTypes`); the wrapped reducer does not see them.
    public var initWhen: (@Sendable (any Action) -> Bool)?

    /// Options; every one has the default redux-undo has.
    public init(limit: Int? = nil, maxBytes: Int? = nil, size: (@Sendable (State) -> Int)? = nil,
                filter: UndoFilter<State> = .all, groupBy: UndoGroupBy = .none, syncFilter: Bool = false,
                clearHistoryWhen: (@Sendable (any Action) -> Bool)? = nil,
                initWhen: (@Sendable (any Action) -> Bool)? = nil) {
        self.limit = limit
        self.maxBytes = maxBytes
        self.size = size
        self.filter = filter
        self.groupBy = groupBy
        self.syncFilter = syncFilter
        self.clearHistoryWhen = clearHistoryWhen
        self.initWhen = initWhen
    }
}

/// Wraps `reducer` so that its state keeps a history (redux-undo's
/// `undoable`): the store's state is an ``Undoable`` of `State`, the
/// wrapped reducer reduces its ``Undoable/present``, and ``UndoAction``s
/// move through the history (the wrapped reducer does not see them).
///
/// An action that leaves the present equal to what it was is not recorded.
/// A jump out of range, and undo or redo with nothing to go to, change
/// nothing (as in redux-undo; ``Undoable/canUndo`` and
/// ``Undoable/canRedo`` say beforehand).
///
/// - Throws: `StoreError` with code `.badArgument` for a `limit` or `maxBytes`
///   below 1, or a `maxBytes` without `size` for a `State` that is not
///   `Encodable`.
public func undoable<State: Sendable & Equatable>(
    _ reducer: Reducer<State>, _ options: UndoOptions<State> = UndoOptions()
) throws(StoreError) -> Reducer<Undoable<State>> {
    if let limit = options.limit, limit < 1 {
        throw StoreError(.badArgument, "undoable: limit must be at least 1 (past states kept), not \(limit)")
    }
    var measure: (@Sendable (State) -> Int)?
    if let maxBytes = options.maxBytes {
        guard maxBytes >= 1 else {
            throw StoreError(.badArgument, "undoable: maxBytes must be at least 1 (bytes of past and future), not \(maxBytes)")
        }
        if let size = options.size {
            measure = size
        } else if State.self is any Encodable.Type {
            measure = { state in
                guard let value = state as? any Encodable, let data = try? JSONEncoder().encode(value) else { return 0 }
                return data.count
            }
        } else {
            throw StoreError(.badArgument,
                             "undoable: maxBytes needs options.size for \(State.self), which is not Encodable")
        }
    }
    let history = UndoRules(options: options, measure: measure)
    return Reducer { state, action in history.reduce(&state, action, reducer) }
}

/// The rules of ``undoable(_:_:)``, once its options are checked.
struct UndoRules<State: Sendable & Equatable>: Sendable {
    let options: UndoOptions<State>
    let measure: (@Sendable (State) -> Int)?

    func reduce(_ history: inout Undoable<State>, _ action: any Action, _ reducer: Reducer<State>) {
        if let measure, !history.measured {
            history.pastSizes = history.past.map(measure)
            history.futureSizes = history.future.map(measure)
            history.measured = true
        }
        if let undo = action as? UndoAction {
            move(&history, undo)
            return
        }
        if let initWhen = options.initWhen, initWhen(action) {
            history = Undoable(past: history.initialPast, present: history.initialPresent, future: history.initialFuture)
            trim(&history)
            return
        }
        var next = history.present
        reducer(&next, action)
        if let clear = options.clearHistoryWhen, clear(action) {
            history.present = next
            clearHistory(&history)
            return
        }
        if next == history.present { return }
        if !options.filter.test(action, next) {
            history.present = next
            if options.syncFilter { history.latestUnfiltered = next }
            return
        }
        let group = options.groupBy.group(action)
        if let group, group == history.group {
            history.present = next
            history.latestUnfiltered = next
            return
        }
        // insert: the latest unfiltered state goes into the past
        history.past.append(history.latestUnfiltered)
        history.pastSizes.append(measure?(history.latestUnfiltered) ?? 0)
        history.present = next
        history.latestUnfiltered = next
        history.future.removeAll()
        history.futureSizes.removeAll()
        history.group = group
        trim(&history)
    }

    func move(_ history: inout Undoable<State>, _ undo: UndoAction) {
        switch undo {
        case .undo:
            if !history.past.isEmpty { jumpToPast(&history, history.past.count - 1) }
        case .redo:
            if !history.future.isEmpty { jumpToFuture(&history, 0) }
        case .jump(let n):
            if n > 0, n <= history.future.count { jumpToFuture(&history, n - 1) }
            if n < 0, -n <= history.past.count { jumpToPast(&history, history.past.count + n) }
        case .jumpToPast(let index):
            if index >= 0, index < history.past.count { jumpToPast(&history, index) }
        case .jumpToFuture(let index):
            if index >= 0, index < history.future.count { jumpToFuture(&history, index) }
        case .clearHistory:
            clearHistory(&history)
        }
    }

    func clearHistory(_ history: inout Undoable<State>) {
        history.past.removeAll()
        history.pastSizes.removeAll()
        history.future.removeAll()
        history.futureSizes.removeAll()
        history.latestUnfiltered = history.present
        history.group = nil
    }

    /// future = past[index+1...] + latest + future; present = past[index].
    func jumpToPast(_ history: inout Undoable<State>, _ index: Int) {
        let latestSize = measure?(history.latestUnfiltered) ?? 0
        let present = history.past[index]
        history.future = Array(history.past[(index + 1)...]) + [history.latestUnfiltered] + history.future
        history.futureSizes = Array(history.pastSizes[(index + 1)...]) + [latestSize] + history.futureSizes
        history.past.removeSubrange(index...)
        history.pastSizes.removeSubrange(index...)
        history.present = present
        history.latestUnfiltered = present
        history.group = nil
        trim(&history)
    }

    /// past = past + latest + future[..<index]; present = future[index].
    func jumpToFuture(_ history: inout Undoable<State>, _ index: Int) {
        let latestSize = measure?(history.latestUnfiltered) ?? 0
        let present = history.future[index]
        history.past += [history.latestUnfiltered] + history.future[..<index]
        history.pastSizes += [latestSize] + history.futureSizes[..<index]
        history.future.removeSubrange(...index)
        history.futureSizes.removeSubrange(...index)
        history.present = present
        history.latestUnfiltered = present
        history.group = nil
        trim(&history)
    }

    /// Drops the oldest past states, then the farthest future ones, past
    /// `limit` and `maxBytes`.
    func trim(_ history: inout Undoable<State>) {
        if let limit = options.limit {
            if history.past.count > limit {
                history.past.removeFirst(history.past.count - limit)
                history.pastSizes.removeFirst(history.pastSizes.count - limit)
            }
            if history.future.count > limit {
                history.future.removeLast(history.future.count - limit)
                history.futureSizes.removeLast(history.futureSizes.count - limit)
            }
        }
        guard let maxBytes = options.maxBytes else { return }
        var total = history.bytes
        while total > maxBytes, !history.past.isEmpty {
            total -= history.pastSizes.removeFirst()
            history.past.removeFirst()
        }
        while total > maxBytes, !history.future.isEmpty {
            total -= history.futureSizes.removeLast()
            history.future.removeLast()
        }
    }
}
