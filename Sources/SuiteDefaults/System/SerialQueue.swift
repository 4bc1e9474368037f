/// A thread of its own that runs jobs one at a time, in the order they came.
///
/// Observation uses it rather than libdispatch because libdispatch does not run in a
/// forked child (its threads are gone and it never makes new ones), while a queue
/// made in the child starts a thread that does. The thread ends once the queue is
/// released and its jobs have run.
final class SerialQueue: Sendable {
    private struct Job {
        let run: @Sendable () -> Void
        /// Whether a borrower (`runHereIfIdle`) may run it.
        let mayRunElsewhere: Bool
    }

    private final class Jobs: @unchecked Sendable {
        // Guarded by `condition`, so not checked for exclusive access at run time
        // (which costs every change delivered a few hundred instructions).
        let condition = ThreadCondition()
        @exclusivity(unchecked) var waiting: [Job] = []
        /// The list of the last batch run, emptied: the next `waiting` (a queue that
        /// runs a job per change would otherwise allocate a list per change).
        @exclusivity(unchecked) var spare: [Job] = []
        @exclusivity(unchecked) var released = false
        /// Whether the queue's thread runs a batch of jobs now.
        @exclusivity(unchecked) var running = false
        /// Whether a thread other than the queue's runs its jobs now (`runHereIfIdle`).
        @exclusivity(unchecked) var borrowed = false

        /// Under the lock: the waiting jobs, with the spare list waiting in their place.
        func takeBatch() -> [Job] {
            var batch = spare
            spare = []
            swap(&batch, &waiting)
            return batch
        }

        /// Under the lock: the waiting jobs up to the first that only the queue's own
        /// thread may run.
        func takeBatchForBorrower() -> [Job] {
            guard let first = waiting.firstIndex(where: { !$0.mayRunElsewhere }) else { return takeBatch() }
            defer { waiting.removeFirst(first) }
            return Array(waiting[..<first])
        }

        /// Under the lock: keeps the list of a batch that has run, emptied, as the
        /// spare, unless a burst made it large.
        func keepAsSpare(_ batch: inout [Job]) {
            if batch.capacity <= 64 { spare = batch }
            batch = []
        }
    }

    private let jobs = Jobs()
    /// The fork epoch the thread was started in; in another, the thread is gone.
    let epoch = ForkEpoch.current

    /// A queue and its thread; nil when no thread can be started (the process's limit
    /// of threads, or no memory for a stack).
    init?(name: String) {
        let jobs = self.jobs
        guard Threads.tryStart(name: name, { Self.run(jobs) }) == nil else {
            // Released now, unused: its deinit then finds no thread to end.
            jobs.released = true
            return nil
        }
    }

    deinit {
        jobs.condition.lock()
        jobs.released = true
        jobs.condition.signal()
        jobs.condition.unlock()
    }

    /// Queues `job`; with `mayRunElsewhere`, a borrower of the queue (`runHereIfIdle`)
    /// may run it on its own thread.
    func async(mayRunElsewhere: Bool = false, _ job: @escaping @Sendable () -> Void) {
        jobs.condition.lock()
        jobs.waiting.append(Job(run: job, mayRunElsewhere: mayRunElsewhere))
        // A borrower runs it, or wakes the thread when it is done.
        if !jobs.borrowed { jobs.condition.signal() }
        jobs.condition.unlock()
    }

    /// Runs `body`, then the jobs queued meanwhile that may run elsewhere (up to the
    /// first that may not), on the calling thread, as jobs of this queue, if the queue
    /// has nothing to do now; false, running nothing, when it has. Jobs still stay one
    /// at a time and in order: the queue's own thread runs none until the caller is
    /// done, then the rest. It saves the wake-up of the queue's thread, for a caller
    /// that would queue a job and have nothing else to do.
    func runHereIfIdle(_ body: () -> Void) -> Bool {
        guard borrowIfIdle() else { return false }
        runBorrowed(everyJob: false, body)
        return true
    }

    /// Takes the queue for the calling thread if it has nothing to do now: until the
    /// caller's `runBorrowed`, which it must make, the queue's own thread runs nothing.
    func borrowIfIdle() -> Bool {
        jobs.condition.lock()
        defer { jobs.condition.unlock() }
        guard !jobs.borrowed, jobs.waiting.isEmpty, !jobs.running else { return false }
        jobs.borrowed = true
        return true
    }

    /// On a queue that the caller borrowed (`borrowIfIdle`): runs `body`, then the
    /// jobs queued meanwhile, on the calling thread, as jobs of this queue, and gives
    /// the queue back. With `everyJob`, every job, until none is left; otherwise only
    /// those that may run elsewhere, up to the first that may not, which the queue's
    /// thread then runs.
    func runBorrowed(everyJob: Bool, _ body: () -> Void) {
        body()
        jobs.condition.lock()
        while true {
            var queued = everyJob ? jobs.takeBatch() : jobs.takeBatchForBorrower()
            let ranSome = !queued.isEmpty
            jobs.condition.unlock()
            for job in queued { job.run() }
            queued.removeAllKeepingStorage()
            jobs.condition.lock()
            jobs.keepAsSpare(&queued)
            if !everyJob || !ranSome { break }
        }
        jobs.borrowed = false
        if !jobs.waiting.isEmpty { jobs.condition.signal() }
        jobs.condition.unlock()
    }

    /// Waits until every job queued before this call has run.
    func waitForQueuedJobs() {
        let done = ThreadSemaphore()
        async { done.signal() }
        done.wait()
    }

    private static func run(_ jobs: Jobs) {
        var batch: [Job] = []
        while true {
            jobs.condition.lock()
            jobs.keepAsSpare(&batch)
            jobs.running = false
            while (jobs.waiting.isEmpty || jobs.borrowed) && !jobs.released { jobs.condition.wait() }
            // Released while borrowed cannot be: the borrower holds the queue.
            batch = jobs.takeBatch()
            let finished = batch.isEmpty && jobs.released
            jobs.running = !finished
            jobs.condition.unlock()
            if finished { return }
            for job in batch { job.run() }
            batch.removeAllKeepingStorage()
        }
    }
}
