/// The store's listeners, in the order they subscribed.
///
/// Subscribe appends; unsubscribe leaves a hole (an entry with token 0 and a
/// listener that does nothing) that is found through a token-to-index table, and holes are compacted away once they outnumber the
/// live entries. Both are O(1) (amortized), so thousands of subscribers can
/// come and go in linear time. A dispatch iterates over `entries` as it was
/// when notification began (a copy-on-write snapshot), so changes made by a
/// listener take effect from the next dispatch on.
@usableFromInline
struct SubscriberList<State> {
    @usableFromInline
    struct Entry {
        /// 0 for a hole.
        @usableFromInline let token: UInt64
        @usableFromInline let deliver: @Sendable (State) -> Void

        @inlinable init(token: UInt64, deliver: @escaping @Sendable (State) -> Void) {
            self.token = token
            self.deliver = deliver
        }
    }

    // Not optional: a dispatch calls each entry in place, without copying
    // (and retaining) it, which an Optional would need.
    @usableFromInline var entries: ContiguousArray<Entry> = []
    @usableFromInline var indexOfToken: [TokenKey: Int] = [:]
    @usableFromInline var holes = 0

    @inlinable init() {}

    @inlinable var count: Int { indexOfToken.count }

    @inlinable mutating func append(token: UInt64, _ deliver: @escaping @Sendable (State) -> Void) {
        indexOfToken[TokenKey(token)] = entries.count
        entries.append(Entry(token: token, deliver: deliver))
    }

    /// Removes the entry for `token`; returns false if there was none.
    @discardableResult @inlinable
    mutating func remove(token: UInt64) -> Bool {
        guard let index = indexOfToken.removeValue(forKey: TokenKey(token)) else { return false }
        entries[index] = Entry(token: 0, deliver: { _ in })
        holes += 1
        if holes > 32 && holes > indexOfToken.count { compact() }
        return true
    }

    @usableFromInline mutating func compact() {
        var live = ContiguousArray<Entry>()
        live.reserveCapacity(indexOfToken.count)
        for entry in entries where entry.token != 0 {
            indexOfToken[TokenKey(entry.token)] = live.count
            live.append(entry)
        }
        entries = live
        holes = 0
    }
}

/// A subscription token as a dictionary key, hashed with one multiplication
/// instead of SipHash: the store makes its tokens itself (1, 2, 3, ...), so
/// no caller can choose keys that collide, and subscribing and unsubscribing
/// spent most of their time hashing.
@usableFromInline
struct TokenKey: Hashable {
    @usableFromInline let value: UInt64

    @inlinable init(_ value: UInt64) { self.value = value }

    @inlinable func hash(into hasher: inout Hasher) { hasher.combine(value) }

    @inlinable func _rawHashValue(seed: Int) -> Int {
        // Fibonacci hashing: the high bits, which the table's mask keeps
        // after the shift, depend on every bit of the token.
        let mixed = (value ^ UInt64(truncatingIfNeeded: seed)) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: mixed ^ (mixed >> 29))
    }
}
