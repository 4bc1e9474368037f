/// A thread of its own that runs jobs one at a time, in the order they came.
///
/// Observation uses it rather than libdispatch because libdispatch does not run in a
/// forked child (its threads are gone and it never makes new ones), while a queue
/// made in the child starts a thread that does. The thread ends once the queue is
/// released and its jobs have run.
final class SerialQueue: Sendable {
    private final class Jobs: @unchecked Sendable {
        // Guarded by `condition`.
        let condition = ThreadCondition()
        var waiting: [@Sendable () -> Void] = []
        var released = false
    }

    private let jobs = Jobs()
    /// The fork epoch the thread was started in; in another, the thread is gone.
    let epoch = ForkEpoch.current

    init(name: String) {
        let jobs = self.jobs
        Threads.start(name: name) { Self.run(jobs) }
    }

    deinit {
        jobs.condition.lock()
        jobs.released = true
        jobs.condition.signal()
        jobs.condition.unlock()
    }

    func async(_ job: @escaping @Sendable () -> Void) {
        jobs.condition.lock()
        jobs.waiting.append(job)
        jobs.condition.signal()
        jobs.condition.unlock()
    }

    /// Waits until every job queued before this call has run.
    func waitForQueuedJobs() {
        let done = ThreadSemaphore()
        async { done.signal() }
        done.wait()
    }

    private static func run(_ jobs: Jobs) {
        while true {
            jobs.condition.lock()
            while jobs.waiting.isEmpty && !jobs.released { jobs.condition.wait() }
            let batch = jobs.waiting
            jobs.waiting = []
            let finished = batch.isEmpty && jobs.released
            jobs.condition.unlock()
            if finished { return }
            for job in batch { job() }
        }
    }
}
