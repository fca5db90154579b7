import CTurnstate
import CTurnstateSupport
import TurnstateCore

/// How the actions of one kind of store cross to C middleware and back.
package protocol ActionBridge<State>: Sendable {
    associatedtype State: Sendable
    /// The tagged JSON form of `action` for C code, or nil to pass the action
    /// on without showing it to the C middleware.
    func foreign(_ action: any Action) throws(StoreError) -> JSONAction?
    /// The action for the JSON text a C middleware passed to `next`.
    func native(_ json: UnsafePointer<CChar>) throws(StoreError) -> any Action
}

/// The C store's bridge: its actions are already JSON.
struct JSONActionBridge: ActionBridge {
    typealias State = JSONState

    func foreign(_ action: any Action) throws(StoreError) -> JSONAction? {
        guard let action = JSONAction.cast(action) else {
            throw StoreError(.notAnAction, "a C store takes only tagged JSON actions, not \(type(of: action))")
        }
        return action
    }

    func native(_ json: UnsafePointer<CChar>) throws(StoreError) -> any Action {
        try JSONAction(parsing: json)
    }
}

/// A C middleware (added in code or loaded from a plugin) in a core store's chain.
///
/// Its `next` is a libffi closure bound to this place in the chain, made the
/// first time the chain runs through here after it changed (never per
/// dispatch) and kept until the store is freed, so a middleware may keep it.
struct CMiddleware<State: Sendable>: Middleware {
    let name: String
    let fn: ts_middleware_fn
    let context: CContext
    let host: CMiddlewareHost<State>

    // Specialized for the C store, whose every dispatch runs through here.
    @_specialize(where State == JSONState)
    func run(store: MiddlewareStore<State>, next: Next, action: any Action) throws(StoreError) {
        // The C store's actions are its JSON actions: no call through the
        // bridge's existential for them.
        // Whether the action is not its JSON form (a typed store's): decided
        // here, so that the C store's path casts once.
        let foreign: JSONAction
        let isNative: Bool
        if host.actionsAreJSON, let json = JSONAction.cast(action) {
            foreign = json
            isNative = false
        } else {
            guard let shown = try host.bridge.foreign(action) else {
                try next(action)
                return
            }
            foreign = shown
            isNative = JSONAction.cast(action) !== shown
        }
        let binding = try host.binding(for: next)
        // This run() is the binding's frame from here until it returns (a
        // nested dispatch through the same place saves and restores it):
        // `next` is valid only inside it, and only once.
        let outerForeign = binding.foreign
        let outerCalled = binding.called
        binding.foreign = .passUnretained(foreign)
        binding.called = false
        defer {
            binding.foreign = outerForeign
            binding.called = outerCalled
        }
        // The native action is kept only when it is not the JSON one itself
        // (a typed store's): copying an existential per call is not free.
        if !isNative {
            try call(foreign, binding)
        } else {
            let outerNative = binding.native
            binding.native = action
            defer { binding.native = outerNative }
            try call(foreign, binding)
        }
    }

    @_specialize(where State == JSONState)
    private func call(_ foreign: JSONAction, _ binding: CMiddlewareHost<State>.NextBinding) throws(StoreError) {
        binding.failure = nil
        // Forgets a reason left over from an earlier call, and registers the
        // action for ts_json_at during the call (one thread-local access).
        var frame = tsi_middleware_frame()
        let (errorsBefore, status) = withUnsafeMutablePointer(to: &frame) { frame in
            let errorsBefore = tsi_begin_middleware_call(frame, foreign.view)
            let status = fn(host.api.table, binding.function, foreign.view, context.pointer)
            tsi_end_middleware_call(frame)
            return (errorsBefore, status)
        }
        if status == TS_OK { return }
        // The reason, best first: what the middleware gave with fail(); the
        // failure of the rest of the chain it passed back; the error of a
        // store call it made (dispatch, replace_state) and passed back.
        if let reason = host.api.takeMessage() {
            throw StoreError(status: status, "middleware \"\(name)\" refused \"\(foreign.type)\" with \(CStatus.name(status)): \(reason)")
        }
        if let failure = binding.failure, failure.status == status { throw failure }
        if tsi_last_error_serial() != errorsBefore {
            throw StoreError(status: status, "middleware \"\(name)\" failed \"\(foreign.type)\" with \(CStatus.name(status)): \(String(cString: tsi_last_error()))")
        }
        throw StoreError(status: status, "middleware \"\(name)\" refused \"\(foreign.type)\" with \(CStatus.name(status)): no reason given")
    }
}

/// A `void *ctx` handed back to C callbacks; the caller vouches for its thread-safety.
struct CContext: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer?
}

/// The bindings of one C middleware: its `next` closures, one per chain
/// it has been part of. Changed only under the store's lock.
final class CMiddlewareHost<State: Sendable>: @unchecked Sendable {
    /// One place in the chain: the `Next` it passes on to and the C function
    /// that calls it.
    final class NextBinding {
        let next: Next
        /// The action being run here: its JSON form, and the action itself
        /// when that is not the JSON form (two fields: a tuple of them would
        /// be copied generically). The JSON form unretained: the run() that
        /// set it holds it, and puts the outer one back before it returns.
        @exclusivity(unchecked) var foreign: Unmanaged<JSONAction>?
        /// Set only by a typed store's run(); tested first, so that the C
        /// store's `next` does not copy an empty existential each call.
        @exclusivity(unchecked) var native: (any Action)? {
            didSet { hasNative = native != nil }
        }
        @exclusivity(unchecked) private(set) var hasNative = false
        /// How the rest of the chain failed, if it did.
        @exclusivity(unchecked) var failure: StoreError?
        /// Whether the run() under way here has called `next` already.
        @exclusivity(unchecked) var called = false
        private(set) var closure: FFIClosure!
        var function: ts_next_fn { closure.nextFunction }

        /// The store, unretained: retaining it would take the slow path of
        /// its side-table reference count on every call. The store owns the
        /// chain, which owns this binding, which owns the closure; a plugin
        /// cannot call `next` once the store is freed (its plugins are
        /// destroyed first), and a call from a run() under way holds the store.
        private let store: Unmanaged<Store<State>>
        private let bridge: any ActionBridge<State>

        @_specialize(where State == JSONState)
        init(next: Next, store: Store<State>, bridge: any ActionBridge<State>) throws(StoreError) {
            self.next = next
            self.store = .passUnretained(store)
            self.bridge = bridge
            closure = try FFIClosure.string { [unowned(unsafe) self] text in self.pass(text) }
        }

        /// What the C `next` does.
        @_specialize(where State == JSONState)
        private func pass(_ text: UnsafePointer<CChar>?) -> ts_status {
            guard let text else { return CStatus.fail(StoreError(.badArgument, "next: action_json is NULL")) }
            return store._withUnsafeGuaranteedRef { store in
                CStatus.run { () throws(StoreError) in
                    // The rest of a dispatch under way: allowed after the
                    // store closed, but only from inside the run() it was
                    // given to (under the lock, a run() under way is on this
                    // thread: another thread waits until it returned).
                    try store.exclusivelyInFlight { () throws(StoreError) in try self.passLocked(text) }
                }
            }
        }

        @_specialize(where State == JSONState)
        private func passLocked(_ text: UnsafePointer<CChar>) throws(StoreError) {
            guard let foreignRef = foreign else {
                throw StoreError(.misuse, "next was called after the run() it was given to returned; it passes on only the action of a run() under way (to act later, dispatch through the store table)")
            }
            guard !called else {
                throw StoreError(.misuse, "next was called twice for \"\(foreignRef.takeUnretainedValue().type)\"; call it at most once per action (the action was applied by the first call)")
            }
            do throws(StoreError) {
                // The action passed on unchanged costs no new parse. Text
                // that is no action is refused without using up the one call.
                if foreignRef._withUnsafeGuaranteedRef({ $0.json }) == text {
                    called = true
                    if hasNative, let native {
                        try next(native)
                    } else {
                        try next(foreignRef.takeUnretainedValue())
                    }
                } else {
                    let action = try bridge.native(text)
                    called = true
                    try next(action)
                }
            } catch {
                failure = error
                throw error
            }
        }
    }

    let api: StoreAPI
    let bridge: any ActionBridge<State>
    private weak var store: Store<State>?
    @exclusivity(unchecked) private var latest: NextBinding?
    /// Every binding ever made, so that `next` pointers stay valid.
    @exclusivity(unchecked) private var bindings: [NextBinding] = []

    /// Whether `bridge` is the C store's, whose actions are JSON already.
    let actionsAreJSON: Bool

    init(api: StoreAPI, store: Store<State>, bridge: any ActionBridge<State>) {
        self.api = api
        self.store = store
        self.bridge = bridge
        actionsAreJSON = bridge is JSONActionBridge
    }

    @_specialize(where State == JSONState)
    func binding(for next: Next) throws(StoreError) -> NextBinding {
        if let latest, latest.next === next { return latest }
        if let known = bindings.first(where: { $0.next === next }) {
            latest = known
            return known
        }
        guard let store else { throw StoreError(.storeReleased, "the store was destroyed") }
        let made = try NextBinding(next: next, store: store, bridge: bridge)
        bindings.append(made)
        latest = made
        return made
    }
}
