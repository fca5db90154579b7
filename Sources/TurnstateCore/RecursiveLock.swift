#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A recursive pthread mutex: the store holds it for the whole of a dispatch
/// (middleware, reducer, listeners), so that dispatches from different threads
/// are serialized while a listener or middleware on the dispatching thread may
/// dispatch again.
@usableFromInline
final class RecursiveLock: @unchecked Sendable {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

    @usableFromInline init() {
        mutex = .allocate(capacity: 1)
        #if canImport(Glibc)
        // glibc's PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP: zeros and the kind.
        // Unlike pthread_mutex_init it cannot fail, so there is no path on
        // which the store would use a mutex that was never initialized.
        mutex.initialize(to: pthread_mutex_t())
        mutex.pointee.__data.__kind = Int32(PTHREAD_MUTEX_RECURSIVE)
        #else
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
        let status = pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
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

    @inlinable @inline(__always) func lock() {
        pthread_mutex_lock(mutex)
        depth += 1
    }

    @inlinable @inline(__always) func unlock() {
        depth -= 1
        pthread_mutex_unlock(mutex)
    }

    @inlinable @inline(__always)
    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Whether the calling thread already holds the lock. Waits while another
    /// thread holds it (and then answers false).
    func isHeldByCurrentThread() -> Bool {
        lock()
        defer { unlock() }
        return depth > 1
    }
}
