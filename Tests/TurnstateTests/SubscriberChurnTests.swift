import Testing
import Turnstate

/// Rule 7: subscribing and unsubscribing in bulk, in mixed order, keeps the
/// right subscribers, in their order, through the list's compaction. (The
/// O(1) cost is not timed; the behaviour that the cheap bookkeeping must keep
/// is what is checked.)
@Suite("Subscriber churn")
struct SubscriberChurnTests {

    /// A small deterministic generator, so that the mixed order is the same on every run.
    struct SplitMix64: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test func tenThousandSubscribersComeAndGoInMixedOrder() throws {
        let store = makeCounter()
        let called = Recorder<Int>()
        var generator = SplitMix64(state: 42)

        // The model: the ids that should be subscribed, in subscription order.
        var expected: [Int] = []
        var handles: [Int: Unsubscribe] = [:]
        var nextID = 0

        func add(_ count: Int) throws {
            for _ in 0..<count {
                let id = nextID
                nextID += 1
                handles[id] = try store.subscribe { _ in called.append(id) }
                expected.append(id)
            }
        }
        func remove(_ count: Int) throws {
            for _ in 0..<count {
                guard !expected.isEmpty else { return }
                let index = Int.random(in: 0..<expected.count, using: &generator)
                let id = expected.remove(at: index)
                try handles[id]!()
                // and once more: idempotent
                try handles[id]!()
            }
        }
        func check() throws {
            #expect(store.subscriberCount == expected.count)
            called.removeAll()
            try store.dispatch(CounterAction.noop)
            #expect(called.values == expected)
        }

        try add(10_000)
        try check()
        // Remove most of them in random order: enough holes to compact, repeatedly.
        try remove(9_000)
        try check()
        // New subscribers go after the survivors.
        try add(3_000)
        try remove(2_500)
        try check()
        // Waves of arrivals and departures.
        for wave in 0..<20 {
            try add(100 + wave * 37)
            try remove(150 + wave * 29)
            try check()
        }
        // Remove everything, then start again.
        try remove(expected.count)
        try check()
        #expect(store.subscriberCount == 0)
        try add(5)
        try check()
    }

    @Test func removingFromTheFrontBackAndMiddleKeepsOrder() throws {
        let store = makeCounter()
        let called = Recorder<Int>()
        var handles: [Unsubscribe] = []
        for id in 0..<1_000 {
            handles.append(try store.subscribe { _ in called.append(id) })
        }
        // remove every id that is not a multiple of 7, from both ends inward
        var low = 0, high = 999
        while low <= high {
            if low % 7 != 0 { try handles[low]() }
            if high != low, high % 7 != 0 { try handles[high]() }
            low += 1
            high -= 1
        }
        let survivors = (0..<1_000).filter { $0 % 7 == 0 }
        #expect(store.subscriberCount == survivors.count)
        try store.dispatch(CounterAction.increment)
        #expect(called.values == survivors)

        // Removing a survivor after compaction removes exactly that one.
        try handles[7]()
        try handles[994]()
        called.removeAll()
        try store.dispatch(CounterAction.increment)
        #expect(called.values == survivors.filter { $0 != 7 && $0 != 994 })
    }

    @Test func massUnsubscribeDuringDispatchStillCallsTheWholeSnapshot() throws {
        let store = makeCounter()
        let called = Recorder<Int>()
        let handles = Cell<[Unsubscribe]>([])
        // The first listener removes every other subscriber during the first
        // dispatch (enough to compact the list while it is being walked).
        try store.subscribe { state in
            called.append(-1)
            if state == 1 {
                for unsubscribe in handles.value { try? unsubscribe() }
            }
        }.kept()
        var list: [Unsubscribe] = []
        for id in 0..<500 {
            list.append(try store.subscribe { _ in called.append(id) })
        }
        handles.value = list
        try store.dispatch(CounterAction.increment)
        #expect(called.values == [-1] + Array(0..<500))
        #expect(store.subscriberCount == 1)
        called.removeAll()
        try store.dispatch(CounterAction.increment)
        #expect(called.values == [-1])
    }
}
