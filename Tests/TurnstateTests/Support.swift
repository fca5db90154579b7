import Foundation
import Testing
import Turnstate

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// MARK: - Shared test fixtures

/// The counter actions most tests dispatch.
enum CounterAction: Action, Equatable {
    case increment
    case decrement
    case add(Int)
    case noop
}

/// A counter reducer over `Int`.
let counterReducer = Reducer<Int> { count, action in
    switch action as? CounterAction {
    case .increment?: count += 1
    case .decrement?: count -= 1
    case .add(let n)?: count += n
    case .noop?, nil: break
    }
}

func makeCounter(_ initial: Int = 0, middleware: [any Middleware<Int>] = []) -> Store<Int> {
    Store(initialState: initial, reducer: counterReducer, middleware: middleware)
}

/// A thread-safe list of recorded values (guarded by a pthread-based lock, which
/// the thread sanitizer understands).
final class Recorder<Element: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Element] = []

    init() {}

    func append(_ item: Element) {
        lock.lock()
        items.append(item)
        lock.unlock()
    }

    var values: [Element] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }

    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return items.count
    }

    func removeAll() {
        lock.lock()
        items.removeAll()
        lock.unlock()
    }
}

/// A thread-safe mutable cell.
final class Cell<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) { stored = value }

    var value: Value {
        get {
            lock.lock()
            defer { lock.unlock() }
            return stored
        }
        set {
            lock.lock()
            stored = newValue
            lock.unlock()
        }
    }

    @discardableResult
    func withValue<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&stored)
    }
}

/// Lets a reducer or middleware reach a store created after it. Holds it weakly.
final class StoreRef<State: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private weak var _store: Store<State>?

    init() {}

    var store: Store<State>? {
        get {
            lock.lock()
            defer { lock.unlock() }
            return _store
        }
        set {
            lock.lock()
            _store = newValue
            lock.unlock()
        }
    }
}

/// An object whose lifetime tests observe through weak references.
final class Witness: Sendable {
    let name: String
    init(_ name: String = "") { self.name = name }
}

/// The identity of the calling thread, as a plain Sendable value.
func currentThreadID() -> UInt {
    #if canImport(Darwin)
    return UInt(bitPattern: pthread_self())
    #else
    return UInt(pthread_self())
    #endif
}

/// The error a throwing call produced, as a `StoreError`, or nil if it did not throw.
func storeError(_ body: () throws(StoreError) -> Void) -> StoreError? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}

// MARK: - Subscriptions kept for the whole test run

/// Subscriptions that a test never ends itself: kept until the process
/// exits, as a dropped `Unsubscribe` used to be (a dropped
/// ``StoreSubscription`` ends its subscription).
private let keptSubscriptions = Recorder<StoreSubscription>()

extension StoreSubscription {
    /// Keeps the subscription until the test process exits.
    func kept() { keptSubscriptions.append(self) }
}
