import Glibc

/// A value behind a pthread mutex, with a condition variable to wait for it to change.
///
/// Used wherever threads really meet, instead of `Synchronization.Mutex`: ThreadSanitizer intercepts
/// pthread mutexes and condition variables but not Mutex's raw futex, so only with this lock does
/// `--sanitize=thread` see the ordering the lock gives (and stay quiet about it). The mutex and the condition
/// live on the heap, never moved, as pthread requires.
///
/// Every `withLock` wakes the threads blocked in `wait`, so a waiter never misses a change; with nobody waiting
/// that is one load in glibc.
public final class LockedValue<Value> {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // Deadlines on the monotonic clock: a wall-clock jump must not end (or stretch) a wait.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        precondition(pthread_cond_init(condition, &attributes) == 0, "pthread_cond_init failed")
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock, then wakes every waiter.
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        }
        return try body(&value)
    }

    /// Blocks until `condition` holds for the value, then runs `body` with it under the same lock. With a
    /// timeout, returns nil if the condition still does not hold after that many seconds.
    public func wait<Result>(
        until ready: (Value) -> Bool, timeoutSeconds: Double? = nil, then body: (inout Value) -> Result
    ) -> Result? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if let timeoutSeconds {
            var deadline = timespec()
            clock_gettime(CLOCK_MONOTONIC, &deadline)
            let total = Double(deadline.tv_nsec) + max(0, timeoutSeconds) * 1e9
            let whole = (total / 1e9).rounded(.down)
            deadline.tv_sec += Int(min(whole, 1e12))
            deadline.tv_nsec = Int(total - whole * 1e9)
            while !ready(value) {
                if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT && !ready(value) { return nil }
            }
        } else {
            while !ready(value) { pthread_cond_wait(condition, mutex) }
        }
        return body(&value)
    }
}

/// @unchecked: every access to the value holds the pthread mutex, and the value itself is Sendable.
extension LockedValue: @unchecked Sendable where Value: Sendable {}
