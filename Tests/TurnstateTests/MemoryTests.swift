import Testing
import Turnstate

/// Rule 6: the store holds its listeners and middleware, they hold it only
/// weakly, so releasing the store frees everything.
@Suite("Memory")
struct MemoryTests {

    /// A middleware that keeps an object alive and remembers its MiddlewareStore.
    struct Keeper: Middleware {
        let witness: Witness
        let kept: Cell<MiddlewareStore<Int>?>
        func run(store: MiddlewareStore<Int>, next: Next, action: any Action) throws(StoreError) {
            _ = witness
            kept.value = store
            try next(action)
        }
    }

    struct Weak: Sendable {
        weak var store: Store<Int>?
        weak var listenerWitness: Witness?
        weak var selectiveWitness: Witness?
        weak var middlewareWitness: Witness?
        weak var addedMiddlewareWitness: Witness?
        weak var closureMiddlewareWitness: Witness?
    }

    /// Builds a store with listeners and middleware that each keep a witness
    /// (and the store's own handles: Unsubscribe, MiddlewareStore), uses it,
    /// and returns the store plus weak references to everything.
    static func makeStore(kept: Cell<MiddlewareStore<Int>?>, unsubscribes: Cell<[Unsubscribe]>) throws -> (Store<Int>, Weak, AsyncStream<Int>) {
        let listenerWitness = Witness("listener")
        let selectiveWitness = Witness("selective")
        let middlewareWitness = Witness("middleware")
        let addedMiddlewareWitness = Witness("added")
        let closureMiddlewareWitness = Witness("closure")

        let store = makeCounter(middleware: [Keeper(witness: middlewareWitness, kept: kept)])
        try store.addMiddleware(Keeper(witness: addedMiddlewareWitness, kept: Cell(nil)))
        try store.addMiddleware(ClosureMiddleware<Int> { store, next, action in
            _ = closureMiddlewareWitness
            _ = try store.getState()
            try next(action)
        })
        try store.addMiddleware(ThunkMiddleware<Int>())

        // A listener that keeps its own Unsubscribe (a handle on the store).
        let own = Cell<Unsubscribe?>(nil)
        own.value = try store.subscribe { _ in
            _ = listenerWitness
            _ = own.value
        }
        let selective = try store.subscribe(select: { $0 % 2 }) { (_: Int) in _ = selectiveWitness }
        unsubscribes.value = [own.value!, selective]
        let stream = store.states() // a live stream must not keep the store either

        try store.dispatch(CounterAction.increment)
        try store.dispatch(Thunk<Int> { dispatch, getState in
            try? dispatch(CounterAction.add((try? getState()) ?? 0))
        })
        #expect(try store.getState() == 2)

        var weak = Weak()
        weak.store = store
        weak.listenerWitness = listenerWitness
        weak.selectiveWitness = selectiveWitness
        weak.middlewareWitness = middlewareWitness
        weak.addedMiddlewareWitness = addedMiddlewareWitness
        weak.closureMiddlewareWitness = closureMiddlewareWitness
        return (store, weak, stream)
    }

    @Test func releasingTheStoreFreesListenersAndMiddleware() throws {
        let kept = Cell<MiddlewareStore<Int>?>(nil)
        let unsubscribes = Cell<[Unsubscribe]>([])
        var (store, weak, stream): (Store<Int>?, Weak, AsyncStream<Int>) = try Self.makeStore(kept: kept, unsubscribes: unsubscribes)

        // While the store lives, it keeps everything alive.
        #expect(weak.store != nil)
        #expect(weak.listenerWitness != nil)
        #expect(weak.selectiveWitness != nil)
        #expect(weak.middlewareWitness != nil)
        #expect(weak.addedMiddlewareWitness != nil)
        #expect(weak.closureMiddlewareWitness != nil)
        #expect(store?.subscriberCount == 3)

        store = nil

        #expect(weak.store == nil, "the store leaked: something it owns holds it strongly")
        #expect(weak.listenerWitness == nil)
        #expect(weak.selectiveWitness == nil)
        #expect(weak.middlewareWitness == nil)
        #expect(weak.addedMiddlewareWitness == nil)
        #expect(weak.closureMiddlewareWitness == nil)

        // Handles that outlive the store are harmless.
        for unsubscribe in unsubscribes.value { try unsubscribe() }
        #expect(kept.value != nil)
        withExtendedLifetime(stream) {}
    }

    @Test func middlewareKeepingItsStoreAfterTheStoreIsGoneGetsStoreReleased() throws {
        let kept = Cell<MiddlewareStore<Int>?>(nil)
        var store: Store<Int>? = makeCounter(middleware: [Keeper(witness: Witness(), kept: kept)])
        try store?.dispatch(CounterAction.increment)
        let api = try #require(kept.value)
        #expect(try api.getState() == 1)
        try api.dispatch(CounterAction.increment)
        #expect(try store?.getState() == 2)

        weak let weakStore = store
        store = nil
        #expect(weakStore == nil)

        #expect(storeError { () throws(StoreError) in try api.dispatch(CounterAction.increment) }?.code == .storeReleased)
        #expect(storeError { () throws(StoreError) in _ = try api.getState() }?.code == .storeReleased)
    }

    struct NextKeeper: Middleware {
        let kept: Cell<Next?>
        func run(store: MiddlewareStore<Int>, next: Next, action: any Action) throws(StoreError) {
            kept.value = next
            try next(action)
        }
    }

    // The chain's end holds the store unretained (ChainEnd): a `Next` kept
    // past the store's life must be refused, not reach freed memory.
    @Test func nextKeptAfterTheStoreIsGoneGetsStoreReleased() throws {
        let kept = Cell<Next?>(nil)
        var store: Store<Int>? = makeCounter(middleware: [NextKeeper(kept: kept)])
        try store?.dispatch(CounterAction.increment)
        let next = try #require(kept.value)
        // Called outside a dispatch while the store lives: it reaches the reducer.
        try next(CounterAction.increment)
        #expect(try store?.getState() == 2)

        weak let weakStore = store
        store = nil
        #expect(weakStore == nil)
        #expect(storeError { () throws(StoreError) in try next(CounterAction.increment) }?.code == .storeReleased)
    }

    // A kept `Next` called from other threads while the store is released:
    // each call either reaches the live store or is refused (run under TSan
    // by test-swift-tsan).
    @Test func nextKeptOnOtherThreadsWhileTheStoreGoes() async throws {
        for _ in 0..<20 {
            let kept = Cell<Next?>(nil)
            var store: Store<Int>? = makeCounter(middleware: [NextKeeper(kept: kept)])
            try store?.dispatch(CounterAction.increment)
            let next = try #require(kept.value)
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        for _ in 0..<200 {
                            do throws(StoreError) {
                                try next(CounterAction.increment)
                            } catch {
                                #expect(error.code == .storeReleased)
                                return
                            }
                        }
                    }
                }
                store = nil
            }
            #expect(store == nil)
            #expect(storeError { () throws(StoreError) in try next(CounterAction.increment) }?.code == .storeReleased)
        }
    }

    @Test func thunkDispatchAfterTheStoreIsGoneGetsStoreReleased() throws {
        let dispatchLater = Cell<Thunk<Int>.Dispatch?>(nil)
        let getStateLater = Cell<Thunk<Int>.GetState?>(nil)
        var store: Store<Int>? = makeCounter(middleware: [ThunkMiddleware<Int>()])
        try store?.dispatch(Thunk<Int> { dispatch, getState in
            dispatchLater.value = dispatch
            getStateLater.value = getState
        })
        let dispatch = try #require(dispatchLater.value)
        let getState = try #require(getStateLater.value)
        try dispatch(CounterAction.increment)
        #expect(try getState() == 1)

        weak let weakStore = store
        store = nil
        #expect(weakStore == nil)
        #expect(storeError { () throws(StoreError) in try dispatch(CounterAction.increment) }?.code == .storeReleased)
        #expect(storeError { () throws(StoreError) in _ = try getState() }?.code == .storeReleased)
    }

    @Test func unsubscribingFreesTheListener() throws {
        let store = makeCounter()
        weak var weakWitness: Witness?
        let unsubscribe: Unsubscribe
        do {
            let witness = Witness()
            weakWitness = witness
            unsubscribe = try store.subscribe { _ in _ = witness }
        }
        #expect(weakWitness != nil)
        try unsubscribe()
        #expect(weakWitness == nil)
    }
}
