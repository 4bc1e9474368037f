import Foundation
import Testing

/// A task executor with threads of its own, for tests whose deadlines are wall-clock
/// time: the cooperative pool has one thread per core (two on CI), and a synchronous test
/// of another suite holds one for as long as it runs, so an async test's tasks could wait
/// there for minutes between two steps and fail a deadline of 30 s that their work never
/// came near (an etcd client test did, twice).
public final class ThreadsOfItsOwnExecutor: TaskExecutor, @unchecked Sendable {
    /// Shared by every test that asks: its threads live as long as the test process.
    /// Sixteen, since an async test that blocks in a synchronous call holds one, and the
    /// suites that take the trait run side by side.
    public static let shared = ThreadsOfItsOwnExecutor(threads: 16)

    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var jobs: [UnownedJob] = []
    /// The threads' identities (`pthread_self`), guarded by `condition`: a thread's name
    /// is no proof, since Foundation on Linux may report the name a new thread took
    /// from its creator.
    private var threads: [pthread_t] = []

    private init(threads: Int) {
        for number in 0..<threads {
            // Named from inside: a name given before start is lost on Linux, where the new
            // thread takes its creator's.
            Thread { [unowned self] in
                Thread.current.name = "test-executor-\(number)"
                self.condition.lock()
                self.threads.append(pthread_self())
                self.condition.unlock()
                self.runJobs()
            }.start()
        }
    }

    /// Whether the calling thread is one of this executor's.
    public static var runsTheCallingThread: Bool {
        shared.condition.lock()
        defer { shared.condition.unlock() }
        return shared.threads.contains { pthread_equal($0, pthread_self()) != 0 }
    }

    /// The calling thread's name, for a failure's message.
    public static var callingThreadName: String {
        Thread.current.name ?? "a thread without a name"
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func runJobs() -> Never {
        while true {
            condition.lock()
            while jobs.isEmpty { condition.wait() }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs a test's tasks, and their child tasks, on `ThreadsOfItsOwnExecutor` rather than
/// the cooperative pool. Unstructured tasks made inside do not follow: they are made
/// with `Task(executorPreference: ThreadsOfItsOwnExecutor.shared)`.
public struct ThreadsOfItsOwnTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        try await withTaskExecutorPreference(ThreadsOfItsOwnExecutor.shared) { try await function() }
    }
}

extension Trait where Self == ThreadsOfItsOwnTrait {
    /// Runs the test's tasks on threads of their own (see `ThreadsOfItsOwnExecutor`).
    public static var onThreadsOfItsOwn: Self { ThreadsOfItsOwnTrait() }
}
