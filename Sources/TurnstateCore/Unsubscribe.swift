/// Ends a subscription: the function `Store.subscribe` returns.
///
/// Call it like a function: `try unsubscribe()`. It is idempotent (calling it
/// again does nothing) and only ever removes its own subscription, even when
/// the same closure was subscribed twice. It holds the store weakly; once the
/// store is gone it does nothing. Calling it from inside a reducer throws
/// ``StoreError/Code/reentrantCall``.
public struct Unsubscribe: Sendable {
    /// The subscription's token: unique within its store, never reused.
    public let token: UInt64
    @usableFromInline let body: @Sendable (UInt64) throws(StoreError) -> Void

    @inlinable init(token: UInt64, _ body: @escaping @Sendable (UInt64) throws(StoreError) -> Void) {
        self.token = token
        self.body = body
    }

    /// Ends the subscription.
    public func callAsFunction() throws(StoreError) {
        try body(token)
    }
}
