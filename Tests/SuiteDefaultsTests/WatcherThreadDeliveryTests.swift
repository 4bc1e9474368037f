import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Testing) @testable import SuiteDefaults

/// `SuiteObservation.Delivery.watcherThread`: changes from other processes delivered
/// on the thread that reads inotify, still one at a time and in commit order, and
/// never at the cost of that thread waiting for a suite.
@Suite("Delivery on the watcher's thread", .serialized)
struct WatcherThreadDeliveryTests {
    let directory = TemporaryDirectory()

    /// Records each change with the name of the thread it was delivered on, and
    /// whether that thread was reading the process's inotify instance then.
    final class ThreadRecorder: @unchecked Sendable {
        let changes = ChangeRecorder()
        private let lock = NSLock()
        private var names: [String] = []
        private var whileReading = 0

        var threads: [String] { lock.withLock { names } }
        /// How many changes were delivered by the thread reading inotify, which no
        /// other thread would take over from while the callback ran.
        var callsWhileReading: Int { lock.withLock { whileReading } }

        var handler: @Sendable (SuiteChange) -> Void {
            { [self] change in
                let name = currentThreadName(), reading = ChangeWatcher.shared.isReaderThread
                lock.withLock {
                    names.append(name)
                    if reading { whileReading += 1 }
                }
                changes.handler(change)
            }
        }
    }

    func open(_ name: String) throws -> Suite {
        try Suite(named: name, directory: directory.url)
    }

    @Test func anotherProcessesChangesArriveOnTheWatcherThreadInOrder() throws {
        let fast = try open("fast"), queued = try open("queued")
        let onWatcher = ThreadRecorder(), onQueue = ThreadRecorder()
        let tokens = [
            try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: fast, onChange: onWatcher.handler),
            try SuiteObservation.allKeys.start(in: queued, onChange: onQueue.handler),
        ]
        for index in 0..<5 {
            try writeFromAnotherProcess("k", "\(index)", in: directory.url, suite: "fast")
            try writeFromAnotherProcess("k", "\(index)", in: directory.url, suite: "queued")
            #expect(onWatcher.changes.wait(for: "k", toBecome: .string("\(index)")))
            #expect(onQueue.changes.wait(for: "k", toBecome: .string("\(index)")))
        }
        #expect(onWatcher.changes.changes.map(\.newValue) == (0..<5).map { .string("\($0)") })
        #expect(onWatcher.changes.changes.map(\.sequence) == Array(1...5))
        // A writer may be descheduled while it holds the lock (the watcher then leaves
        // that change to the queue), but not on every one of five.
        #expect(onWatcher.threads.contains("suite-watcher"), "\(onWatcher.threads)")
        #expect(Set(onWatcher.threads).isSubset(of: ["suite-watcher", "suite-observers"]), "\(onWatcher.threads)")
        // The default may run on a thread that read the change, but only once that
        // thread paused its reading, which another takes over if the callback is slow.
        #expect(onQueue.callsWhileReading == 0, "the default was called while its thread read: \(onQueue.threads)")
        #expect(onWatcher.callsWhileReading > 0, "\(onWatcher.threads)")
        withExtendedLifetime(tokens) {}
    }

    /// The watcher matches an event to the observed suites by the bytes of the file's
    /// name, making no string: each suite hears of its own file, whatever its name.
    @Test func eachSuiteHearsOfItsOwnFileByTheBytesOfItsName() throws {
        let longest = String(repeating: "é", count: Suite.maximumNameLength / 2)
        let names = ["caf\u{E9}", "a", "a.suite", "a.suite.lock", longest, "😀"]
        var recorders: [ThreadRecorder] = [], tokens: [SuiteCancellable] = []
        for name in names {
            let recorder = ThreadRecorder()
            recorders.append(recorder)
            tokens.append(try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: open(name), onChange: recorder.handler))
        }
        for (index, name) in names.enumerated() {
            try writeFromAnotherProcess("k", "\(index)", in: directory.url, suite: name)
            #expect(recorders[index].changes.wait(for: "k", toBecome: .string("\(index)")), "\(name)")
        }
        for (index, recorder) in recorders.enumerated() {
            #expect(recorder.changes.changes.map(\.newValue) == [.string("\(index)")], "\(names[index])")
        }
        // A name in another normal form is the same suite (names are stored in NFC).
        try writeFromAnotherProcess("k", "twin", in: directory.url, suite: "cafe\u{301}")
        #expect(recorders[0].changes.wait(for: "k", toBecome: "twin"))
        withExtendedLifetime(tokens) {}
    }

    @Test func oneObservationThatDidNotAskKeepsTheSuiteOnItsQueue() throws {
        let suite = try open("mixed")
        let asked = ThreadRecorder(), didNotAsk = ThreadRecorder()
        let tokens = [
            try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: suite, onChange: asked.handler),
            try SuiteObservation.allKeys.start(in: suite, onChange: didNotAsk.handler),
        ]
        for index in 0..<3 {
            try writeFromAnotherProcess("k", "\(index)", in: directory.url, suite: "mixed")
            #expect(asked.changes.wait(for: "k", toBecome: .string("\(index)")))
            #expect(didNotAsk.changes.wait(for: "k", toBecome: .string("\(index)")))
        }
        #expect(asked.callsWhileReading + didNotAsk.callsWhileReading == 0, "\(asked.threads) \(didNotAsk.threads)")
        withExtendedLifetime(tokens) {}
    }

    /// This process's writes are delivered through the queue and another's on the
    /// watcher's thread, both at once: one at a time, in commit order, nothing lost.
    @Test func ownAndAnotherProcessesWritesStayInCommitOrder() throws {
        let suite = try open("interleaved")
        let recorder = ThreadRecorder()
        let active = LockedBox(0), overlapped = LockedBox(false)
        let token = try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: suite) { change in
            let concurrent = active.withLock { count in count += 1; return count > 1 }
            if concurrent { overlapped.withLock { $0 = true } }
            recorder.handler(change)
            active.withLock { $0 -= 1 }
        }
        let writer = try startWorker("write-keys", in: directory, suite: "interleaved", ["prefix": "other", "count": "300", "keys": "3"])
        for index in 0..<300 { try suite.set(index, forKey: "own.\(index % 3)") }
        writer.expectLine(startingWith: "done")
        writer.expectSuccess()
        #expect(recorder.changes.wait { $0.count == 600 }, "\(recorder.changes.changes.count) of 600")
        let changes = recorder.changes.changes
        #expect(zip(changes, changes.dropFirst()).allSatisfy { $0.sequence < $1.sequence }, "in commit order")
        var model: [String: SuiteValue] = [:]
        for change in changes {
            #expect(change.oldValue == model[change.key], "\(change)")
            model[change.key] = change.newValue
        }
        #expect(model == suite.storedValues())
        #expect(!overlapped.withLock { $0 }, "one call at a time")
        withExtendedLifetime(token) {}
    }

    /// A writer that holds the lock past the watcher's short spin: the watcher leaves
    /// the change to the suite's queue and goes on serving the other suites.
    @Test func aSuiteWhoseLockIsHeldDelaysNoOtherSuite() throws {
        let stuck = try open("stuck"), free = try open("free")
        let stuckRecorder = ChangeRecorder(), freeRecorder = ChangeRecorder()
        let observation = SuiteObservation.allKeys.delivered(on: .watcherThread)
        let tokens = [try observation.start(in: stuck, onChange: stuckRecorder.handler),
                      try observation.start(in: free, onChange: freeRecorder.handler)]
        let holder = try startWorker("hold-lock", in: directory, suite: "stuck")
        holder.expectLine(startingWith: "holding")
        try writeFromAnotherProcess("k", "still flowing", in: directory.url, suite: "free")
        #expect(freeRecorder.wait(for: "k", toBecome: "still flowing"))
        _ = holder.kill()
        #expect(stuckRecorder.changes.isEmpty, "the holder's transaction never committed")
        // Once the lock is free, the stuck suite's changes flow again.
        try writeFromAnotherProcess("k", "after the holder", in: directory.url, suite: "stuck")
        #expect(stuckRecorder.wait(for: "k", toBecome: "after the holder"))
        withExtendedLifetime(tokens) {}
    }

    /// A callback on the watcher's thread may end its own observation, and the thread
    /// goes on serving the others.
    @Test func aCallbackThatCancelsItsObservationDoesNotStopTheWatcher() throws {
        let once = try open("once"), other = try open("other")
        let onceRecorder = ChangeRecorder(), otherRecorder = ChangeRecorder()
        let held = LockedBox<SuiteCancellable?>(nil)
        let observation = SuiteObservation.allKeys.delivered(on: .watcherThread)
        held.withLock { token in
            token = try? observation.start(in: once) { change in
                onceRecorder.handler(change)
                held.withLock { $0 }?.cancel()
            }
        }
        let otherToken = try observation.start(in: other, onChange: otherRecorder.handler)
        try writeFromAnotherProcess("k", "first", in: directory.url, suite: "once")
        #expect(onceRecorder.wait(for: "k", toBecome: "first"))
        try writeFromAnotherProcess("k", "second", in: directory.url, suite: "once")
        try writeFromAnotherProcess("k", "still watched", in: directory.url, suite: "other")
        #expect(otherRecorder.wait(for: "k", toBecome: "still watched"))
        #expect(onceRecorder.changes.map(\.newValue) == ["first"], "nothing after the cancellation")
        withExtendedLifetime(otherToken) {}
    }

    /// The queue that lends itself to a caller runs nothing of its own meanwhile, and
    /// afterwards runs what was queued in the meantime, in order.
    @Test func aBorrowedQueueKeepsItsJobsInOrder() throws {
        let queue = try #require(SerialQueue(name: "borrowed"))
        let order = LockedBox<[Int]>([])
        let ran = queue.runHereIfIdle {
            order.withLock { $0.append(1) }
            queue.async { order.withLock { $0.append(2) } }
            // The queue's own thread must not take job 2 while this runs.
            usleep(20_000)
            order.withLock { $0.append(3) }
            // Nor may a second borrower come in.
            #expect(!queue.runHereIfIdle { order.withLock { $0.append(99) } })
        }
        #expect(ran)
        queue.async { order.withLock { $0.append(4) } }
        queue.waitForQueuedJobs()
        #expect(order.withLock { $0 } == [1, 3, 2, 4])
        // A queue with a job still waiting is not idle.
        let gate = ThreadSemaphore()
        queue.async { gate.wait() }
        queue.async { order.withLock { $0.append(5) } }
        #expect(!queue.runHereIfIdle { order.withLock { $0.append(98) } })
        gate.signal()
        queue.waitForQueuedJobs()
        #expect(order.withLock { $0 } == [1, 3, 2, 4, 5])
    }
}
