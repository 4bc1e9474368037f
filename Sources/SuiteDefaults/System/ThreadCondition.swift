import Glibc

/// A lock and a condition for the threads of one process: a `pthread_mutex_t` and a
/// `pthread_cond_t`, as Foundation's `NSCondition` is, so that the core needs only
/// FoundationEssentials. Like any condition, `wait()` may return without a `signal()`:
/// callers wait in a loop over what they wait for.
final class ThreadCondition: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    /// Releases the lock, waits for a signal, and takes the lock again; called holding it.
    func wait() { pthread_cond_wait(condition, mutex) }

    /// Wakes one waiting thread.
    func signal() { pthread_cond_signal(condition) }
}

/// A one-time signal from one thread to another: a POSIX semaphore (`sem_t`), as
/// libdispatch's `DispatchSemaphore` is on Linux, without the Dispatch overlay.
final class ThreadSemaphore: @unchecked Sendable {
    private let semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)

    init() { sem_init(semaphore, 0, 0) }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    func signal() { sem_post(semaphore) }

    /// Waits for a `signal()`; a signal handler's interruption (EINTR) only resumes the wait.
    func wait() {
        while sem_wait(semaphore) != 0 && errno == EINTR {}
    }
}
