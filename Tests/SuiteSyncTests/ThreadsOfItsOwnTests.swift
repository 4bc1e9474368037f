import Dispatch
import Foundation
import Synchronization
import Testing
import TestSupport

/// The deadlines of the async tests are wall-clock time, so their tasks must not wait
/// behind other suites' synchronous tests, which hold the cooperative pool's threads
/// for as long as they run (see `ThreadsOfItsOwnExecutor`).
@Suite("Async tests run on threads of their own", .onThreadsOfItsOwn)
struct ThreadsOfItsOwnTests {
    @Test func theTestsTasksAndChildTasksRunThere() async {
        let resumedFromAnotherThread = await offThePool { 1 }
        #expect(resumedFromAnotherThread == 1)
        #expect(ThreadsOfItsOwnExecutor.runsTheCallingThread, "\(ThreadsOfItsOwnExecutor.callingThreadName)")
        let inChildTask = await withTaskGroup(of: String.self) { group in
            group.addTask {
                try? await Task.sleep(for: .milliseconds(1))
                return ThreadsOfItsOwnExecutor.runsTheCallingThread ? "" : ThreadsOfItsOwnExecutor.callingThreadName
            }
            return await group.next() ?? "no child task"
        }
        #expect(inChildTask.isEmpty, "on \(inChildTask)")
        let inUnstructuredTask = await Task(executorPreference: ThreadsOfItsOwnExecutor.shared) {
            ThreadsOfItsOwnExecutor.runsTheCallingThread ? "" : ThreadsOfItsOwnExecutor.callingThreadName
        }.value
        #expect(inUnstructuredTask.isEmpty, "on \(inUnstructuredTask)")
    }

    /// Every thread of the cooperative pool is held, as synchronous tests hold them; the
    /// test's awaits must still resume. A watchdog thread lets the pool go after 20 s,
    /// so that a test whose tasks did run on the pool fails rather than hangs.
    @Test func aTestGoesOnWhileEveryThreadOfThePoolIsHeld() async throws {
        let width = ProcessInfo.processInfo.activeProcessorCount
        let started = DispatchSemaphore(value: 0)
        let hold = PoolHold(width: width)
        for _ in 0..<width {
            Task.detached { holdThread(started: started, until: hold.release) }
        }
        Thread {
            Thread.sleep(forTimeInterval: 20)
            hold.letGo(finishedInTime: false)
        }.start()
        // Holders that cannot start within 10 s find the pool held already, by other
        // suites' synchronous tests in a full run: the condition under test either way.
        // (One that starts later goes through at once: `release` counts.)
        _ = await offThePool { (0..<width).allSatisfy { _ in started.wait(timeout: .now() + 10) == .success } }
        // Nothing of the pool can run now: a resumption, a sleep's end and a child task.
        let resumed = await offThePool { 1 }
        try await Task.sleep(for: .milliseconds(5))
        let child = await withTaskGroup(of: Int.self) { group in
            group.addTask { 2 }
            return await group.next() ?? 0
        }
        hold.letGo(finishedInTime: true)
        #expect(resumed + child == 3)
        #expect(hold.finishedInTime == true, "the test's tasks waited for the pool")
    }
}

/// The pool's threads held, and let go once: by the test when it finished, or by its
/// watchdog.
private final class PoolHold: Sendable {
    let release = DispatchSemaphore(value: 0)
    private let width: Int
    private let outcome = Mutex<Bool?>(nil)

    init(width: Int) {
        self.width = width
    }

    /// Whether the test finished before the watchdog let the pool go; nil until then.
    var finishedInTime: Bool? { outcome.withLock { $0 } }

    func letGo(finishedInTime: Bool) {
        let first = outcome.withLock { outcome in
            defer { outcome = outcome ?? finishedInTime }
            return outcome == nil
        }
        if first { for _ in 0..<width { release.signal() } }
    }
}

/// Holds the calling thread (one of the pool's) until `release` is signalled.
private func holdThread(started: DispatchSemaphore, until release: DispatchSemaphore) {
    started.signal()
    release.wait()
}
