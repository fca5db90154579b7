import CTurnstate
import Turnstate

/// A C middleware in the core store's chain.
///
/// Its `next` is a libffi closure bound to this place in the chain, made the
/// first time the chain runs through here after it changed (never per
/// dispatch) and kept until the store is freed, so a middleware may keep it.
struct CMiddleware: Middleware {
    typealias State = JSONState

    let name: String
    let fn: ts_middleware_fn
    let context: CContext
    let host: CMiddlewareHost

    func run(store: MiddlewareStore<JSONState>, next: Next, action: any Action) throws(StoreError) {
        guard let action = action as? JSONAction else {
            throw StoreError(.notAnAction, "the C middleware \"\(name)\" gets only tagged JSON actions, not \(type(of: action))")
        }
        let binding = try host.binding(for: next)
        let outer = binding.current
        binding.current = action
        binding.failure = nil
        defer { binding.current = outer }
        host.api.clearMessage()
        let status = fn(host.api.table, binding.function, action.view, context.pointer)
        if status == TS_OK { return }
        // A failure of the rest of the chain that the middleware passed back
        // keeps its own message.
        if let failure = binding.failure, failure.code.rawValue == status { throw failure }
        throw StoreError(CStatus.code(status),
                         "middleware \"\(name)\" refused \"\(action.type)\" with \(CStatus.name(status)): \(host.api.takeMessage() ?? "no reason given")")
    }
}

/// A `void *ctx` handed back to C callbacks; the caller vouches for its thread-safety.
struct CContext: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer?
}

/// The bindings of one C middleware: its `next` closures, one per chain
/// it has been part of. Changed only under the store's lock.
final class CMiddlewareHost: @unchecked Sendable {
    /// One place in the chain: the `Next` it passes on to and the C function
    /// that calls it.
    final class NextBinding {
        let next: Next
        var current: JSONAction?
        var failure: StoreError?
        private(set) var closure: FFIClosure!
        var function: ts_next_fn { closure.nextFunction }

        init(next: Next, store: Store<JSONState>) throws(StoreError) {
            self.next = next
            closure = try FFIClosure.string { [unowned self, weak store] text in
                CStatus.run { () throws(StoreError) in
                    guard let store else { throw StoreError(.storeReleased, "next: the store was destroyed") }
                    let text = try required(text, "action_json", in: "next")
                    try store.exclusively { () throws(StoreError) in
                        do throws(StoreError) {
                            if let current = self.current, current.json == text {
                                try self.next(current)
                            } else {
                                try self.next(try JSONAction(parsing: text))
                            }
                        } catch {
                            self.failure = error
                            throw error
                        }
                    }
                }
            }
        }
    }

    let api: StoreAPI
    private weak var store: Store<JSONState>?
    private var latest: NextBinding?
    /// Every binding ever made, so that `next` pointers stay valid.
    private var bindings: [NextBinding] = []

    init(api: StoreAPI, store: Store<JSONState>) {
        self.api = api
        self.store = store
    }

    func binding(for next: Next) throws(StoreError) -> NextBinding {
        if let latest, latest.next === next { return latest }
        if let known = bindings.first(where: { $0.next === next }) {
            latest = known
            return known
        }
        guard let store else { throw StoreError(.storeReleased, "the store was destroyed") }
        let made = try NextBinding(next: next, store: store)
        bindings.append(made)
        latest = made
        return made
    }
}
