import CSuiteDefaults

/// A value that the threads of one process take turns with, like
/// `Synchronization.Mutex`, but safe across `fork(2)`.
///
/// After a fork, the child has only the thread that forked. A lock that another
/// thread of the parent held at that instant would stay held forever in the child,
/// and `Mutex` caches thread IDs across the fork and aborts in the child under
/// contention. This lock counts a lock held in an earlier fork epoch as free.
///
/// A noncopyable struct over storage of its own, as `Mutex` is, rather than a generic
/// class: each generic class a process uses costs it a runtime instantiation on
/// first use, and suites are opened at start-up.
struct Locked<Value>: ~Copyable, @unchecked Sendable {
    private struct Storage {
        var lock: sd_thread_lock
        var value: Value
    }

    private let storage: UnsafeMutablePointer<Storage>

    init(_ value: Value) {
        ForkEpoch.start()
        storage = .allocate(capacity: 1)
        storage.initialize(to: Storage(lock: sd_thread_lock(word: 0), value: value))
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    @inline(__always)
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        let lock = UnsafeMutableRawPointer(storage).assumingMemoryBound(to: sd_thread_lock.self)
        let epoch = sd_thread_lock_acquire(lock)
        defer { sd_thread_lock_release(lock, epoch) }
        return try body(&storage.pointee.value)
    }

    /// Runs `body` if the lock is free now; nil, without running it, when another
    /// thread holds it. For a thread that must never wait (the change watcher).
    func withLockIfFree<R>(_ body: (inout Value) throws -> R) rethrows -> R? {
        let lock = UnsafeMutableRawPointer(storage).assumingMemoryBound(to: sd_thread_lock.self)
        var epoch: UInt32 = 0
        guard sd_thread_lock_try_acquire(lock, &epoch) else { return nil }
        defer { sd_thread_lock_release(lock, epoch) }
        return try body(&storage.pointee.value)
    }
}

/// Which fork of the original process this is: it changes in a child after `fork(2)`.
/// State that must not be shared with a parent records the epoch it was made in.
enum ForkEpoch {
    /// Registers the counting fork handler; cheap to repeat.
    static func start() { sd_fork_epoch_start() }

    /// One relaxed load.
    static var current: UInt32 { sd_fork_epoch() }
}
