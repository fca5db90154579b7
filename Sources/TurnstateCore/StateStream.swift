extension Store {
    /// The states of the store as an `AsyncSequence`: the current state first,
    /// then the state after each dispatch. The subscription ends when the
    /// consuming task stops iterating or is cancelled.
    ///
    /// ```swift
    /// for await state in store.states() { render(state) }
    /// ```
    /// - Parameter bufferingPolicy: what to keep when the consumer is slower
    ///   than the dispatches; by default only the newest state.
    public func states(
        bufferingPolicy: AsyncStream<State>.Continuation.BufferingPolicy = .bufferingNewest(1)
    ) -> AsyncStream<State> {
        stream(bufferingPolicy: bufferingPolicy) { listener throws(StoreError) in
            try self.subscribe(receiveCurrent: true, listener)
        }
    }

    /// The values of a selected part of the state as an `AsyncSequence`: the
    /// current value first, then each value that differs from the one before.
    ///
    /// ```swift
    /// for await count in store.values(select: { $0.todos.count }) { print(count) }
    /// ```
    public func values<Selected: Equatable & Sendable>(
        select: @escaping @Sendable (State) -> Selected,
        bufferingPolicy: AsyncStream<Selected>.Continuation.BufferingPolicy = .bufferingNewest(1)
    ) -> AsyncStream<Selected> {
        stream(bufferingPolicy: bufferingPolicy) { listener throws(StoreError) in
            try self.subscribe(select: select, receiveCurrent: true, listener)
        }
    }

    private func stream<Element: Sendable>(
        bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy,
        subscribe: (@escaping @Sendable (Element) -> Void) throws(StoreError) -> StoreSubscription
    ) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        do {
            let subscription = try subscribe { continuation.yield($0) }
            continuation.onTermination = { _ in subscription.cancel() }
        } catch {
            // Called from inside a reducer: the stream ends at once.
            continuation.finish()
        }
        return stream
    }
}
