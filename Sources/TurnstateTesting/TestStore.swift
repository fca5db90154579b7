import Foundation
public import Turnstate
internal import CustomDump
internal import IssueReporting

/// A store for tests that asserts, exhaustively, how every action changes the
/// state, in the style of The Composable Architecture's `TestStore`.
///
/// Give it the initial state, the reducer and the middleware of the store
/// under test. Then describe each step:
///
/// - ``send(_:assert:fileID:filePath:line:column:)`` dispatches an action; its
///   trailing closure changes a copy of the state the test expects before the
///   step into the state it expects after it. The test fails, with a diff,
///   unless the real state is exactly that.
/// - Every action that reaches the reducer without being sent by the test (one
///   dispatched by a ``/TurnstateCore/Thunk``, an ``/TurnstateCore/AsyncThunk``, a middleware or another
///   thread) must be received, in order, with
///   ``receive(_:timeout:assert:fileID:filePath:line:column:)-(A.Type,_,_,_,_,_,_)``
///   (by type), ``receive(_:timeout:assert:fileID:filePath:line:column:)-(A,_,_,_,_,_,_)``
///   (by value) or ``receive(where:timeout:assert:fileID:filePath:line:column:)``
///   (by predicate), each with the state change it makes.
/// - An action still not received fails the test when the test store is
///   released, or earlier at ``finish(timeout:fileID:filePath:line:column:)``
///   (which also waits for async thunks) or ``assertNoPendingActions(fileID:filePath:line:column:)``.
///
/// ```swift
/// @Test func loadsTodos() async {
///     let store = TestStore(initialState: AppState(), reducer: appReducer,
///                           middleware: [ThunkMiddleware()])
///     store.send(SetFilter(filter: "done")) { $0.filter = "done" }
///     store.send(loadTodos)                          // an AsyncThunk
///     await store.receive(TodosLoaded.self) { $0.todos = [Todo(id: 1, title: "Milk")] }
///     await store.finish()
/// }
/// ```
///
/// Failures are reported with IssueReporting's `reportIssue`: in a
/// swift-testing test they are recorded as issues of the running test, in an
/// XCTest test as `XCTFail`s, at the line of the call that failed.
///
/// The store under test is a real ``/TurnstateCore/Store``: the same middleware chain and
/// the same rules. The test store adds a middleware of its own in front of the
/// chain (to tell sent actions from the others) and wraps the reducer (to
/// record the state after each action). A ``/TurnstateCore/ThunkMiddleware`` in the list is
/// replaced by one that runs thunks the same way but keeps count of the async
/// thunks still running, for ``finish(timeout:fileID:filePath:line:column:)``.
///
/// An action a middleware swallows (a thunk, say) is neither a state change
/// nor received: what it dispatches is.
public final class TestStore<State: Equatable & Sendable>: Sendable {
    /// The store under test, for the code under test (a view model, a
    /// service) that takes a ``/TurnstateCore/Store``: the actions it
    /// dispatches are received like a thunk's, and the listeners it adds run
    /// as in the app.
    ///
    /// ```swift
    /// let model = CounterModel(store: testStore.store)
    /// model.plusTapped()
    /// await testStore.receive(CounterAction.increment) { $0.count = 1 }
    /// ```
    public let store: Store<State>
    private let log: Log<State>
    private let location: Location

    /// How long ``receive(_:timeout:assert:fileID:filePath:line:column:)-(A.Type,_,_,_,_,_,_)``
    /// and the other `receive` methods wait for an action, and
    /// ``finish(timeout:fileID:filePath:line:column:)`` for async thunks,
    /// unless the call says otherwise. Only a failing test waits that long.
    public let timeout: Duration

    /// Whether a test must account for everything (``Exhaustivity/on``, the
    /// default) or only for what it asserts (``Exhaustivity/off``). May be
    /// changed between steps; turning it on starts afresh from the state the
    /// store is in (actions not received while it was off are dropped).
    public var exhaustivity: Exhaustivity {
        get { log.exhaustivity }
        set {
            if newValue == .on && log.exhaustivity == .off { _ = log.takePending() }
            log.exhaustivity = newValue
        }
    }

    /// Creates a test store with a new ``/TurnstateCore/Store`` of `initialState`, `reducer`
    /// and `middleware`.
    ///
    /// - Parameters:
    ///   - initialState: the state before the first step.
    ///   - reducer: the reducer under test.
    ///   - middleware: the middleware under test, the first listed first;
    ///     a ``/TurnstateCore/ThunkMiddleware`` runs thunks as in the app.
    ///   - exhaustivity: whether the test must account for every change and
    ///     every action; see ``Exhaustivity``.
    ///   - timeout: how long `receive` waits for an action and `finish` for
    ///     async thunks, unless the call says otherwise (5 seconds: generous,
    ///     for loaded machines; only a failing test waits that long).
    ///   - fileID: where the test store is made; a failure found when it is
    ///     released is reported there.
    ///   - filePath: as `fileID`.
    ///   - line: as `fileID`.
    ///   - column: as `fileID`.
    public init(
        initialState: State,
        reducer: Reducer<State>,
        middleware: [any Middleware<State>] = [],
        exhaustivity: Exhaustivity = .on,
        timeout: Duration = .seconds(5),
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) {
        let log = Log(initialState)
        log.exhaustivity = exhaustivity
        self.log = log
        self.timeout = timeout
        location = Location(fileID: fileID, filePath: filePath, line: line, column: column)
        let recording = Reducer<State> { state, action in
            reducer(&state, action)
            log.reduced(action, state)
        }
        let chain: [any Middleware<State>] = [Tracker<State>(log: log)] + middleware.map { m in
            m is ThunkMiddleware<State> ? CountingThunkMiddleware<State>(log: log) : m
        }
        store = Store(initialState: initialState, reducer: recording, middleware: chain)
    }

    deinit {
        let pending = log.takePending()
        if !pending.isEmpty && log.exhaustivity == .on {
            report(Self.unreceivedMessage(pending), at: location)
        }
    }

    // MARK: Reading

    /// The store's current state: every change so far, received or not.
    public var state: State { store.state }

    /// The actions that reached the reducer but were not received yet, oldest
    /// first.
    public var pendingActions: [any Action] { log.pendingActions }

    // MARK: Sending

    /// Dispatches `action` and asserts that the state then is exactly the
    /// state before it changed by `updateStateToExpectedResult`.
    ///
    /// Fails the test, with a diff of the expected and the actual state, when
    /// they differ; when the closure changed nothing and neither did the
    /// action (leave the closure out if the action changes nothing); when
    /// actions are still waiting to be received (they are dropped, so that the
    /// rest of the test compares from the state the store is in); and when the
    /// dispatch throws (use ``send(_:failsWith:assert:fileID:filePath:line:column:)``
    /// when it should).
    ///
    /// Actions that middleware dispatches *before* passing `action` on are
    /// reduced first: the state checked here includes their changes, and they
    /// must still be received, with no further change.
    ///
    /// - Parameters:
    ///   - action: the action to dispatch.
    ///   - updateStateToExpectedResult: changes the state before the step
    ///     into the state expected after it; `nil` when it should not change.
    ///   - fileID: where a failure is reported; leave the default.
    ///   - filePath: as `fileID`.
    ///   - line: as `fileID`.
    ///   - column: as `fileID`.
    public func send(
        _ action: any Action,
        assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) {
        let here = Location(fileID: fileID, filePath: filePath, line: line, column: column)
        if let error = dispatch(action, at: here) {
            report("send(\(Self.describe(action))) failed: \(error)", at: here)
        }
        expect(updateStateToExpectedResult, after: log.lastSend(), at: here)
    }

    /// Dispatches `action`, which must fail with a ``/TurnstateCore/StoreError`` of `code`
    /// (a middleware refusing it, a failed reducer), and asserts the state
    /// after it as ``send(_:assert:fileID:filePath:line:column:)`` does
    /// (usually unchanged: leave the closure out).
    ///
    /// - Parameters:
    ///   - action: the action to dispatch.
    ///   - code: the code the dispatch must throw.
    ///   - updateStateToExpectedResult: as in ``send(_:assert:fileID:filePath:line:column:)``.
    ///   - fileID: where a failure is reported; leave the default.
    ///   - filePath: as `fileID`.
    ///   - line: as `fileID`.
    ///   - column: as `fileID`.
    /// - Returns: the error the dispatch threw, or `nil` if it did not.
    @discardableResult
    public func send(
        _ action: any Action,
        failsWith code: StoreError.Code,
        assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) -> StoreError? {
        let here = Location(fileID: fileID, filePath: filePath, line: line, column: column)
        let error = dispatch(action, at: here)
        if let error {
            if error.code != code {
                report("send(\(Self.describe(action))) failed with \(error.code), not \(code): \(error.message)", at: here)
            }
        } else {
            report("send(\(Self.describe(action))) was expected to fail with \(code), but it succeeded", at: here)
        }
        expect(updateStateToExpectedResult, after: log.lastSend(), at: here)
        return error
    }

    /// Dispatches `action` as the test's step: the first action to enter the
    /// chain is marked as the sent one. Reports (and drops) actions still
    /// waiting to be received.
    private func dispatch(_ action: any Action, at here: Location) -> StoreError? {
        let pending = log.takePending()
        if !pending.isEmpty && log.exhaustivity == .on {
            report("""
                Must receive every action before sending another: \(pending.count) not received \
                before send(\(Self.describe(action))):
                \(Self.list(pending))
                """, at: here)
        }
        do {
            // Under the store's lock, so that no other thread's dispatch
            // enters the chain between marking and dispatching.
            try store.exclusively { () throws(StoreError) in
                log.beginSend()
                defer { log.endSend() }
                try store.dispatch(action)
            }
            return nil
        } catch {
            return error
        }
    }

    // MARK: Receiving

    /// Asserts that the next action not yet received is of type `A`, waiting
    /// up to `timeout` for one to arrive, and that it changed the state as
    /// `updateStateToExpectedResult` describes.
    ///
    /// - Parameters:
    ///   - type: the action's type.
    ///   - timeout: how long to wait for an action when none is pending;
    ///     ``timeout`` unless given.
    ///   - updateStateToExpectedResult: changes the state before the action
    ///     into the state expected after it; `nil` when it should not change.
    ///   - fileID: where a failure is reported; leave the default.
    ///   - filePath: as `fileID`.
    ///   - line: as `fileID`.
    ///   - column: as `fileID`.
    public func receive<A: Action>(
        _ type: A.Type,
        timeout: Duration? = nil,
        assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        await receive(expected: "an action of type \(A.self)", { $0 is A }, timeout: timeout ?? self.timeout,
                      updateStateToExpectedResult,
                      at: Location(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    /// Asserts that the next action not yet received equals `action`, waiting
    /// up to `timeout` for one to arrive, and that it changed the state as
    /// `updateStateToExpectedResult` describes.
    ///
    /// - Parameters:
    ///   - action: the action expected.
    ///   - timeout: how long to wait for an action when none is pending;
    ///     ``timeout`` unless given.
    ///   - updateStateToExpectedResult: changes the state before the action
    ///     into the state expected after it; `nil` when it should not change.
    ///   - fileID: where a failure is reported; leave the default.
    ///   - filePath: as `fileID`.
    ///   - line: as `fileID`.
    ///   - column: as `fileID`.
    public func receive<A: Action & Equatable>(
        _ action: A,
        timeout: Duration? = nil,
        assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        await receive(expected: Self.describe(action), { ($0 as? A) == action }, timeout: timeout ?? self.timeout,
                      updateStateToExpectedResult,
                      at: Location(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    /// Asserts that the next action not yet received satisfies `isMatching`,
    /// waiting up to `timeout` for one to arrive, and that it changed the
    /// state as `updateStateToExpectedResult` describes.
    ///
    /// ```swift
    /// await store.receive(where: { ($0 as? Loaded)?.items.count == 2 }) { $0.items = [a, b] }
    /// ```
    ///
    /// - Parameters:
    ///   - isMatching: whether an action is the one expected.
    ///   - timeout: how long to wait for an action when none is pending;
    ///     ``timeout`` unless given.
    ///   - updateStateToExpectedResult: changes the state before the action
    ///     into the state expected after it; `nil` when it should not change.
    ///   - fileID: where a failure is reported; leave the default.
    ///   - filePath: as `fileID`.
    ///   - line: as `fileID`.
    ///   - column: as `fileID`.
    public func receive(
        where isMatching: (any Action) -> Bool,
        timeout: Duration? = nil,
        assert updateStateToExpectedResult: ((inout State) throws -> Void)? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        await receive(expected: "an action matching the predicate", isMatching, timeout: timeout ?? self.timeout,
                      updateStateToExpectedResult,
                      at: Location(fileID: fileID, filePath: filePath, line: line, column: column))
    }

    private func receive(
        expected: String,
        _ isMatching: (any Action) -> Bool,
        timeout: Duration,
        _ updateStateToExpectedResult: ((inout State) throws -> Void)?,
        at here: Location
    ) async {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        var skipped = false
        while log.exhaustivity == .off {
            // Not exhaustive: actions before the one described are skipped.
            guard let next = log.peekPending() else {
                if clock.now >= deadline { break }
                if await Self.pause() { continue }
                break
            }
            if isMatching(next.action) { break }
            _ = log.popPending()
            log.accept(next.state)
            skipped = true
        }
        let left = deadline - clock.now
        guard let next = await nextPending(timeout: left > .zero ? left : .zero) else {
            var message = Task.isCancelled
                ? "Expected to receive \(expected), but the waiting task was cancelled before one arrived"
                : "Expected to receive \(expected), but no action was received within \(timeout)"
            if skipped { message += " (other actions were skipped: exhaustivity is off)" }
            let running = log.runningAsyncThunks
            if running > 0 { message += " (\(running) async thunk\(running == 1 ? " is" : "s are") still running)" }
            report(message, at: here)
            return
        }
        guard isMatching(next.action) else {
            report("""
                Expected to receive \(expected), but received:
                \(Self.dump(next.action))
                """, at: here)
            log.accept(next.state)
            return
        }
        expect(updateStateToExpectedResult, after: next.state, at: here)
    }

    /// The oldest action not yet received, removed from the queue; waits up
    /// to `timeout` for one.
    private func nextPending(timeout: Duration) async -> Received<State>? {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            if let next = log.popPending() { return next }
            if clock.now >= deadline { return nil }
            guard await Self.pause() else { return nil }
        }
    }

    /// Lets other tasks run for a moment while waiting; false once the
    /// waiting task is cancelled (the wait then ends as a timeout would).
    private static func pause() async -> Bool {
        await Task.yield()
        try? await Task.sleep(for: .milliseconds(1))
        return !Task.isCancelled
    }

    // MARK: Finishing

    /// Waits up to `timeout` for the async thunks still running to finish,
    /// then asserts that every action was received
    /// (``assertNoPendingActions(fileID:filePath:line:column:)``).
    ///
    /// Call it at the end of a test that sends async thunks: releasing the
    /// test store checks only the actions received by then.
    ///
    /// - Parameters:
    ///   - timeout: how long to wait for the running async thunks;
    ///     ``timeout`` unless given.
    ///   - fileID: where a failure is reported; leave the default.
    ///   - filePath: as `fileID`.
    ///   - line: as `fileID`.
    ///   - column: as `fileID`.
    public func finish(
        timeout: Duration? = nil,
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) async {
        let here = Location(fileID: fileID, filePath: filePath, line: line, column: column)
        let timeout = timeout ?? self.timeout
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while log.runningAsyncThunks > 0 && clock.now < deadline {
            guard await Self.pause() else { break }
        }
        let running = log.runningAsyncThunks
        if running > 0 {
            report("\(running) async thunk\(running == 1 ? " was" : "s were") still running after \(timeout)", at: here)
        }
        assertNoPendingActions(fileID: fileID, filePath: filePath, line: line, column: column)
    }

    /// Asserts that every action that reached the reducer was sent or
    /// received. Actions not received fail the test and are dropped.
    ///
    /// - Parameters:
    ///   - fileID: where a failure is reported; leave the default.
    ///   - filePath: as `fileID`.
    ///   - line: as `fileID`.
    ///   - column: as `fileID`.
    public func assertNoPendingActions(
        fileID: StaticString = #fileID,
        filePath: StaticString = #filePath,
        line: UInt = #line,
        column: UInt = #column
    ) {
        let pending = log.takePending()
        if !pending.isEmpty && log.exhaustivity == .on {
            report(Self.unreceivedMessage(pending),
                   at: Location(fileID: fileID, filePath: filePath, line: line, column: column))
        }
    }

    // MARK: Comparing

    /// Compares the state the test expects (the last state it accounted for,
    /// changed by `update`) with `actual`, then accounts for `actual`.
    private func expect(_ update: ((inout State) throws -> Void)?, after actual: State, at here: Location) {
        let exhaustive = log.exhaustivity == .on
        // Not exhaustive: only what the closure sets is compared, so it is
        // applied to the actual state.
        let before = exhaustive ? log.acceptedState : actual
        defer { log.accept(actual) }
        var expected = before
        if let update {
            do {
                try update(&expected)
            } catch {
                report("The state assertion threw: \(error)", at: here)
                return
            }
        }
        if expected != actual {
            let difference = CustomDump.diff(expected, actual, format: Self.diffFormat)
                .map { $0.split(separator: "\n", omittingEmptySubsequences: false).map { $0.isEmpty ? "" : "    " + $0 }
                    .joined(separator: "\n") }
                ?? "  expected: \(expected)\n  actual:   \(actual)"
            report("""
                The state does not match the expectation: …

                \(difference)

                (Expected: −, Actual: +)
                """, at: here)
        } else if exhaustive && update != nil && expected == before {
            report("""
                Expected the state to change, but it did not: the closure changed nothing and \
                neither did the action. Leave the closure out when no change is expected.
                """, at: here)
        }
    }

    // MARK: Messages

    /// TCA's marks (a minus sign as wide as the plus), with plain spaces for
    /// the lines that agree, so that a report reads the same in a log, a
    /// terminal and an IDE.
    private static var diffFormat: DiffFormat { DiffFormat(first: "\u{2212}", second: "+", both: " ") }

    private static func unreceivedMessage(_ pending: [Received<State>]) -> String {
        """
        The store received \(pending.count) action\(pending.count == 1 ? "" : "s") that the test did not \
        assert with receive(...):
        \(list(pending))
        """
    }

    private static func list(_ pending: [Received<State>]) -> String {
        pending.map { "  • " + dump($0.action).replacingOccurrences(of: "\n", with: "\n    ") }
            .joined(separator: "\n")
    }

    private static func dump(_ action: any Action) -> String {
        String(customDumping: action)
    }

    private static func describe(_ action: any Action) -> String {
        let text = String(customDumping: action)
        return text.contains("\n") ? "\(type(of: action))" : text
    }

    private func report(_ message: String, at here: Location) {
        reportIssue(message, fileID: here.fileID, filePath: here.filePath, line: here.line, column: here.column)
    }
}

/// Where a call was made, for reports.
struct Location: Sendable {
    let fileID: StaticString
    let filePath: StaticString
    let line: UInt
    let column: UInt
}

/// An action that reached the reducer without being sent, and the state the
/// test should see after it.
struct Received<State: Sendable>: Sendable {
    let action: any Action
    var state: State
}

/// What the test store records, shared by the test store, its middleware and
/// its reducer. Everything is guarded by `lock` (never held while calling out).
final class Log<State: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    /// The state the test has accounted for so far.
    private var accepted: State
    /// Actions reduced but not received yet.
    private var pending: [Received<State>] = []
    /// While `send` dispatches: set until the first action enters the chain.
    private var sendMarked = false
    /// One flag per dispatch under way (nested ones included): whether it is
    /// the test's sent action.
    private var stack: [Bool] = []
    /// While `send` dispatches: the state after the sent action was reduced,
    /// and how many actions were pending then.
    private var sentState: State?
    private var pendingBeforeSent = 0
    private var pendingAtSendStart = 0
    private var lastSendState: State?
    private var asyncThunks = 0
    private var exhaustivityValue = Exhaustivity.on

    init(_ state: State) {
        accepted = state
    }

    private func locked<R>(_ body: () -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    var acceptedState: State { locked { accepted } }
    var exhaustivity: Exhaustivity {
        get { locked { exhaustivityValue } }
        set { locked { exhaustivityValue = newValue } }
    }
    var pendingActions: [any Action] { locked { pending.map(\.action) } }
    var runningAsyncThunks: Int { locked { asyncThunks } }

    func accept(_ state: State) { locked { accepted = state } }

    func takePending() -> [Received<State>] {
        locked {
            defer { pending = [] }
            if let last = pending.last { accepted = last.state }
            return pending
        }
    }

    func peekPending() -> Received<State>? {
        locked { pending.first }
    }

    func popPending() -> Received<State>? {
        locked { pending.isEmpty ? nil : pending.removeFirst() }
    }

    // Called with the store's lock held.
    func beginSend() {
        locked {
            sendMarked = true
            sentState = nil
            pendingAtSendStart = pending.count
            pendingBeforeSent = pending.count
            lastSendState = nil
        }
    }

    func endSend() {
        locked {
            sendMarked = false
            let after = sentState ?? accepted
            // Actions reduced before the sent one within this send: their
            // changes are in the state `send` checks.
            if sentState != nil {
                for index in pendingAtSendStart..<pendingBeforeSent { pending[index].state = after }
            }
            lastSendState = after
            sentState = nil
        }
    }

    /// The state after the last send's own action (the state before it when
    /// a middleware swallowed or refused it).
    func lastSend() -> State { locked { lastSendState ?? accepted } }

    func enter() {
        locked {
            stack.append(sendMarked)
            sendMarked = false
        }
    }

    func leave() { locked { _ = stack.popLast() } }

    func reduced(_ action: any Action, _ state: State) {
        locked {
            if stack.last == true {
                sentState = state
                pendingBeforeSent = pending.count
            } else {
                pending.append(Received(action: action, state: state))
            }
        }
    }

    func asyncThunkStarted() { locked { asyncThunks += 1 } }
    func asyncThunkEnded() { locked { asyncThunks -= 1 } }
}

/// The test store's own middleware, first in the chain: marks which dispatch
/// is the test's sent action.
struct Tracker<State: Sendable>: Middleware {
    let log: Log<State>

    func run(store: MiddlewareStore<State>, next: Next, action: any Action) throws(StoreError) {
        log.enter()
        defer { log.leave() }
        try next(action)
    }
}

/// ``/TurnstateCore/ThunkMiddleware``'s twin that counts the async thunks still running.
struct CountingThunkMiddleware<State: Sendable>: Middleware {
    let log: Log<State>

    func run(store: MiddlewareStore<State>, next: Next, action: any Action) throws(StoreError) {
        if let thunk = action as? Thunk<State> {
            thunk.body(store.dispatch, store.getState)
        } else if let thunk = action as? AsyncThunk<State> {
            log.asyncThunkStarted()
            let log = log
            Task {
                await thunk.body(store.dispatch, store.getState)
                log.asyncThunkEnded()
            }
        } else {
            try next(action)
        }
    }
}

/// How much of what happens a ``TestStore`` test must account for.
public enum Exhaustivity: Sendable, Equatable {
    /// Everything: each step's closure describes the whole change, every
    /// action dispatched by thunks and middleware is received, in order, and
    /// one never received fails the test. The default.
    case on
    /// Only what the test asserts: a step's closure is checked against the
    /// actual state for what it sets, `receive` skips the actions before the
    /// one it describes, and actions never received are not a failure. For
    /// integration tests that care about an outcome, not every step to it.
    case off
}
