import Observation
import TurnstateCore

/// An `@Observable` view of a store's state, or of a part of it, for SwiftUI
/// and for anything else built on Observation (`withObservationTracking`).
///
/// It lives on the main actor and follows the store through a main-actor
/// subscription (``/TurnstateCore/Store/subscribe(on:receiveCurrent:_:)``): its value is
/// the newest state, updated once per turn of the main actor however many
/// dispatches happened in between. Observers are told of a change only for
/// what they read: a view that reads `model.count` (through dynamic member
/// lookup, for an `Equatable` property) is not invalidated when only
/// `model.todos` changed. A view that reads ``value`` as a whole is
/// invalidated whenever it changed (or, for a value that is not `Equatable`,
/// after every update).
///
/// ```swift
/// @MainActor struct CounterView: View {
///     let model: ObservableState<AppState>   // store.observable()
///     var body: some View {
///         Text("\(model.count)")             // re-evaluated only when count changes
///     }
/// }
/// ```
///
/// The subscription ends when the object is released.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
@MainActor
@dynamicMemberLookup
public final class ObservableState<Value: Sendable>: Observable {
    private let registrar = ObservationRegistrar()
    private var current: Value
    /// Whether two values of the whole are the same (`nil`: never known).
    private let isDuplicate: ((Value, Value) -> Bool)?
    /// The parts read through dynamic member lookup: how to tell whether each
    /// changed, and how to announce its change.
    private var watched: [AnyKeyPath: Watch] = [:]
    private var subscription: StoreSubscription?

    private struct Watch {
        let changed: (Value, Value) -> Bool
        let willSet: (ObservableState<Value>) -> Void
        let didSet: (ObservableState<Value>) -> Void
    }

    init(initial: Value, isDuplicate: ((Value, Value) -> Bool)?) {
        current = initial
        self.isDuplicate = isDuplicate
    }

    /// The whole value. Reading it makes an observer depend on all of it.
    public var value: Value {
        registrar.access(self, keyPath: \.value)
        return current
    }

    /// A part of the value, read so that an observer depends on that part
    /// only: it is told of a change only when this part changed.
    public subscript<Member: Equatable>(dynamicMember keyPath: KeyPath<Value, Member>) -> Member {
        let path: KeyPath<ObservableState<Value>, Member> = (\ObservableState<Value>.value).appending(path: keyPath)
        if watched[path] == nil {
            watched[path] = Watch(
                changed: { $0[keyPath: keyPath] != $1[keyPath: keyPath] },
                willSet: { $0.registrar.willSet($0, keyPath: path) },
                didSet: { $0.registrar.didSet($0, keyPath: path) })
        }
        registrar.access(self, keyPath: path)
        return current[keyPath: keyPath]
    }

    /// Takes a new value from the store, telling the observers of the parts
    /// that changed.
    func update(_ new: Value) {
        let old = current
        let wholeChanged = isDuplicate.map { !$0(old, new) } ?? true
        guard wholeChanged else { return }
        let changed = watched.values.filter { $0.changed(old, new) }
        registrar.willSet(self, keyPath: \.value)
        for watch in changed { watch.willSet(self) }
        current = new
        for watch in changed { watch.didSet(self) }
        registrar.didSet(self, keyPath: \.value)
    }

    func follow(_ subscription: StoreSubscription) {
        self.subscription = subscription
    }
}

/// Observable views of a store's state for SwiftUI (``ObservableState``).
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
extension Store {
    /// An `@Observable` view of the whole state on the main actor: see
    /// ``ObservableState``. Keep it (in a view model, or in SwiftUI's
    /// `@State`); it follows the store until it is released.
    ///
    /// ```swift
    /// let model = try store.observable()
    /// withObservationTracking { _ = model.count } onChange: { print("count changed") }
    /// ```
    @MainActor
    public func observable() throws(StoreError) -> ObservableState<State> {
        try observable(select: { $0 }, isDuplicate: nil)
    }

    /// An `@Observable` view of the part of the state that `select` picks,
    /// on the main actor; it changes only when that part changed.
    @MainActor
    public func observable<Selected: Equatable & Sendable>(
        select: @escaping @Sendable (State) -> Selected
    ) throws(StoreError) -> ObservableState<Selected> {
        try observable(select: select, isDuplicate: { $0 == $1 })
    }

    @MainActor
    private func observable<Selected: Sendable>(
        select: @escaping @Sendable (State) -> Selected,
        isDuplicate: (@Sendable (Selected, Selected) -> Bool)?
    ) throws(StoreError) -> ObservableState<Selected> {
        let model = ObservableState(initial: select(try getState()), isDuplicate: isDuplicate)
        // receiveCurrent: a dispatch between reading the state and
        // subscribing is not missed (the newest value comes on the main actor).
        let subscription = try subscribe(on: .main, select: select,
                                         isDuplicate: isDuplicate ?? { _, _ in false },
                                         receiveCurrent: true) { [weak model] value in
            model?.update(value)
        }
        model.follow(subscription)
        return model
    }
}

/// Observable views of an `Equatable` state, which skip equal states.
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
extension Store where State: Equatable {
    /// An `@Observable` view of the whole state, which tells observers of
    /// ``ObservableState/value`` only when the state changed.
    @MainActor
    public func observable() throws(StoreError) -> ObservableState<State> {
        try observable(select: { $0 })
    }
}
