import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Testing) @testable import SuiteDefaults

/// Hostile tests of the change watcher holding each watched suite's hub strongly
/// (`WatchedHub`, commit 7df4242) rather than weakly: every way an observation ends
/// must let go of its hub, and nothing the hub owns may be released at a moment the
/// weak reference never released it.
@Suite("Hostile: the watcher's strong hold on hubs", .serialized)
struct HostileWatchedHubTests {
    let directory = TemporaryDirectory()

    func open(_ name: String, in url: URL? = nil) throws -> Suite {
        try Suite(named: name, directory: url ?? directory.url)
    }

    // MARK: fork

    /// In a forked child, an observation made in the parent stays with the parent;
    /// releasing its token there lets go of the hub, and the child's next use of the
    /// change watcher must not hang: what the callback owned here is a directory
    /// observation, whose end takes the watcher's lock, and the hub that holds it was
    /// once released under that lock, when the child's watcher started over (a
    /// deadlock). Forked in a worker process, not in this one, whose other threads may
    /// hold any lock.
    @Test func aForkedChildReleasingAParentsObservationLetsGoAndDoesNotHang() throws {
        let worker = try startWorker("fork-release-observation", in: directory, suite: "forked")
        #expect(worker.expectLine(startingWith: "child released") == "child released, callback's owner gone",
                "the hub, and what its observer's callback owns, outlived the released token in the child")
        #expect(worker.expectLine(startingWith: "child observes again") == "child observes again: true")
        #expect(worker.expectLine(startingWith: "child status") == "child status 0", "output: \(worker.lines)")
        #expect(worker.expectLine(startingWith: "parent released") == "parent released, callback's owner gone")
        worker.expectSuccess()
    }

    // MARK: one process

    /// Observations started and ended concurrently from several threads, on several
    /// suites and both deliveries, some cancelled from the watcher's thread: every hub
    /// and store goes, and no directory stays watched.
    @Test func concurrentObserveAndCancelCyclesLeaveNothingWatched() throws {
        final class Weak: @unchecked Sendable {
            let lock = NSLock()
            var hubs: [() -> Bool] = []
            func add(_ hub: ObserverHub) {
                weak let weakHub = hub
                lock.lock(); hubs.append { weakHub == nil }; lock.unlock()
            }
            var allGone: Bool { lock.lock(); defer { lock.unlock() }; return hubs.allSatisfy { $0() } }
        }
        let weak = Weak()
        let url = directory.url
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for round in 0..<25 {
                guard let suite = try? Suite(named: "cycle-\(round % 3)", directory: url) else { continue }
                weak.add(ObserverHub.of(suite.lease))
                let onWatcher = (round + thread) % 2 == 0
                let observation = SuiteObservation.allKeys.delivered(on: onWatcher ? .watcherThread : .suiteQueue)
                let box = Box()
                let token = try? observation.start(in: suite) { change in
                    // Cancelled from the callback: on the watcher's thread when it can be.
                    if change.key == "t\(thread)" { box.take()?.cancel() }
                }
                box.put(token)
                try? suite.set(round, forKey: "t\(thread)")
                if round % 4 == 0 { box.take()?.cancel() }
                if round % 4 == 1 { _ = box.take() }
            }
        }
        #expect(eventually { weak.allGone }, "a hub of an ended observation stayed alive")
        #expect(eventually { !isWatched(url) }, "the directory stayed watched")
    }

    /// Cancelled while the directory is removed (lost), and while a directory made
    /// again is being moved to: the hub goes, nothing is watched or moved.
    @Test func cancelledWhileLostOrMovingLetsGoOfTheHub() throws {
        for (index, cancelWhileMoving) in [false, true, false, true].enumerated() {
            let sub = directory.url.appendingPathComponent("gone-\(index)")
            try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
            weak var hub: ObserverHub?
            let recorder = ChangeRecorder()
            do {
                let suite = try open("lost", in: sub)
                try suite.set(1, forKey: "k")
                let token = try SuiteObservation.allKeys.delivered(on: index % 2 == 0 ? .suiteQueue : .watcherThread)
                    .start(in: suite, onError: recorder.errorHandler, onChange: recorder.handler)
                hub = ObserverHub.of(suite.lease)
                try FileManager.default.removeItem(at: sub)
                #expect(recorder.waitForError(timeout: .seconds(4)), "the removal was not reported")
                if cancelWhileMoving {
                    try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
                    // Right away, or as soon as the watcher starts moving it.
                    _ = eventually(1) { ChangeWatcher.shared.suitesBeingMoved > 0 }
                }
                token.cancel()
            }
            if !cancelWhileMoving { try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true) }
            #expect(eventually { hub == nil }, "round \(index): the hub of a cancelled observation stayed alive")
            #expect(eventually { !isWatched(sub) && ChangeWatcher.shared.suitesBeingMoved == 0 },
                    "round \(index): the directory made again is watched for nobody")
        }
    }

    /// Sequences of changes ended by cancelling their tasks, or by leaving the loop.
    @Test(.onThreadsOfItsOwn) func changeSequencesEndedByTheirTasksLetGoOfTheHub() async throws {
        weak var hub: ObserverHub?
        do {
            let suite = try open("sequence")
            hub = ObserverHub.of(suite.lease)
            var tasks: [Task<Void, Never>] = []
            for _ in 0..<4 {
                let changes = try suite.changes()
                tasks.append(Task(executorPreference: ThreadsOfItsOwnExecutor.shared) { do { for try await _ in changes {} } catch {} })
            }
            let first = try suite.changes()
            try suite.set(1, forKey: "k")
            for try await _ in first { break }
            tasks.forEach { $0.cancel() }
            for task in tasks { await task.value }
        }
        #expect(eventually { hub == nil }, "the hub of ended sequences stayed alive")
        #expect(eventually { !isWatched(directory.url) })
    }
}

private final class Box: @unchecked Sendable {
    private let lock = NSLock()
    private var token: SuiteCancellable?
    func put(_ token: SuiteCancellable?) { lock.lock(); self.token = token; lock.unlock() }
    func take() -> SuiteCancellable? { lock.lock(); defer { lock.unlock() }; let t = token; token = nil; return t }
}
