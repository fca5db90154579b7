#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A recursive lock: the store holds it for the whole of a dispatch
/// (middleware, reducer, listeners), so that dispatches from different threads
/// are serialized while a listener or middleware on the dispatching thread may
/// dispatch again.
///
/// A plain (non-recursive) pthread mutex plus the owning thread, kept in an
/// atomic word: taking the lock again on the thread that holds it is a load
/// and a compare (the middleware chain's end and a C middleware's `next` do
/// that on every dispatch), where a recursive pthread mutex costs about 30
/// instructions per lock and as many per unlock. A thread reads its own
/// identity in `owner` only while it holds the lock (it clears the word before
/// it lets go, and no other thread writes its identity), so relaxed ordering
/// is enough; the mutex orders everything else.
@usableFromInline
final class RecursiveLock: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The thread that holds the lock (`pthread_self`), 0 when none does.
    @usableFromInline let owner = Atomic<UInt>(0)

    @usableFromInline init() {
        mutex = .allocate(capacity: 1)
        #if canImport(Glibc)
        // glibc's PTHREAD_MUTEX_INITIALIZER: zeros. Unlike pthread_mutex_init
        // it cannot fail, so there is no path on which the store would use a
        // mutex that was never initialized.
        mutex.initialize(to: pthread_mutex_t())
        #else
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed (\(status))")
        #endif
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// How many times the owning thread holds the lock; changed only by the
    /// thread that holds it.
    @exclusivity(unchecked) @usableFromInline var depth = 0

    /// The calling thread, as `owner` stores it (never 0).
    @inlinable @inline(__always) static var currentThread: UInt {
        #if canImport(Glibc) || canImport(Musl)
        UInt(pthread_self())
        #else
        UInt(bitPattern: pthread_self())
        #endif
    }

    @inlinable @inline(__always) func lock() {
        let me = Self.currentThread
        if owner.load(ordering: .relaxed) == me {
            depth += 1
            return
        }
        pthread_mutex_lock(mutex)
        owner.store(me, ordering: .relaxed)
        depth = 1
    }

    @inlinable @inline(__always) func unlock() {
        depth -= 1
        if depth == 0 {
            owner.store(0, ordering: .relaxed)
            pthread_mutex_unlock(mutex)
        }
    }

    @inlinable @inline(__always)
    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Lets go of the lock completely (however many times the calling thread,
    /// which must hold it, took it) and returns how many times that was, for
    /// ``retake(_:)``.
    func releaseAll() -> Int {
        let held = depth
        depth = 0
        owner.store(0, ordering: .relaxed)
        pthread_mutex_unlock(mutex)
        return held
    }

    /// Takes the lock again after ``releaseAll()``, as many times as it was held.
    func retake(_ held: Int) {
        pthread_mutex_lock(mutex)
        owner.store(Self.currentThread, ordering: .relaxed)
        depth = held
    }

    /// Waits on `condition` (whose mutex is this lock's), letting go of the
    /// lock for the wait as ``releaseAll()`` does and holding it again after.
    func wait(_ condition: UnsafeMutablePointer<pthread_cond_t>) {
        let held = depth
        depth = 0
        owner.store(0, ordering: .relaxed)
        pthread_cond_wait(condition, mutex)
        owner.store(Self.currentThread, ordering: .relaxed)
        depth = held
    }

    /// How many times the calling thread holds the lock (0 when it does not).
    var depthOnCurrentThread: Int {
        owner.load(ordering: .relaxed) == Self.currentThread ? depth : 0
    }

    /// Whether the calling thread already holds the lock. Waits while another
    /// thread holds it (and then answers false).
    func isHeldByCurrentThread() -> Bool {
        lock()
        defer { unlock() }
        return depth > 1
    }
}
