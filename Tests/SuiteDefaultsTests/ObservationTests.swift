import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Testing) @testable import SuiteDefaults

/// Writes KEY = VALUE from another process, and waits for it to finish.
func writeFromAnotherProcess(_ key: String, _ value: String, in directory: URL, suite: String) throws {
    let writer = try startWorker("try-set", at: directory, suite: suite, ["key": key, "value": value])
    writer.expectLine(startingWith: "ok")
    writer.expectSuccess()
}

@Suite("Observing changes", .serialized)
struct ObservationTests {
    let directory = TemporaryDirectory()

    func open(_ name: String = "watched") throws -> Suite {
        try Suite(named: name, directory: directory.url)
    }

    @Test func ownWritesArriveOnceAndOthersToo() throws {
        let suite = try open()
        let recorder = ChangeRecorder()
        let token = try suite.observe(onChange: recorder.handler)
        try suite.set("one", forKey: "a")
        try suite.set("two", forKey: "a")
        try writeFromAnotherProcess("b", "other", in: directory.url, suite: "watched")
        // The other process's change comes after any second copy of ours would have.
        #expect(recorder.wait(for: "b", toBecome: "other"))
        let changes = recorder.changes
        #expect(changes.map(\.key) == ["a", "a", "b"])
        #expect(changes.map(\.oldValue) == [nil, "one", nil])
        #expect(changes.map(\.newValue) == ["one", "two", "other"])
        #expect(changes.map(\.sequence) == [1, 2, 3])
        #expect(changes.map(\.isFromThisProcess) == [true, true, false])
        #expect(changes.map(\.kind) == [.commit, .commit, .commit])
        #expect(changes.map { $0.pid == getpid() } == [true, true, false])
        token.cancel()
    }

    @Test func onlyTheObservedKeysArrive() throws {
        let suite = try open()
        let recorder = ChangeRecorder()
        let token = try suite.observe(keys: ["wanted", "sentinel"], onChange: recorder.handler)
        try suite.set(1, forKey: "ignored")
        try suite.set(2, forKey: "wanted")
        try suite.update { tx in
            try tx.set(3, forKey: "ignored")
            try tx.set(4, forKey: "wanted")
        }
        try suite.set(true, forKey: "sentinel")
        #expect(recorder.wait(for: "sentinel", toBecome: true))
        #expect(recorder.changes.map(\.key) == ["wanted", "wanted", "sentinel"])
        #expect(recorder.changes.map(\.newValue) == [2, 4, true])
        withExtendedLifetime(token) {}
    }

    @Test func typedKeysAndAnObservationDescribedOnceAreObserved() throws {
        let count = SuiteKey("count", default: 0), name = SuiteKey("name", default: "")
        let first = try open("first"), second = try open("second")
        try first.set("before", for: name)
        let observation = SuiteObservation.keys(count, name).including(currentValues: true)
        let inFirst = ChangeRecorder(), inSecond = ChangeRecorder(), typed = ChangeRecorder()
        let tokens = try [observation.start(in: first, onChange: inFirst.handler),
                          observation.start(in: second, onChange: inSecond.handler),
                          first.observe(count, onChange: typed.handler)]
        try first.set(1, forKey: "other")
        try first.set(2, for: count)
        try second.set("b", for: name)
        #expect(inFirst.wait(for: "count", toBecome: 2))
        #expect(inSecond.wait(for: "name", toBecome: "b"))
        #expect(typed.wait(for: "count", toBecome: 2))
        #expect(inFirst.changes.map(\.key) == ["name", "count"], "the current value first, then the observed key only")
        #expect(inFirst.changes.first?.kind == .initialValue)
        #expect(typed.changes.map(\.key) == ["count"])
        withExtendedLifetime(tokens) {}
    }

    @Test(.onThreadsOfItsOwn) func aSequenceEndsWithTheErrorThatStopsItsChanges() async throws {
        let place = directory.file("going")
        let suite = try Suite(named: "going", directory: place)
        let changes = try suite.changes()
        let loop = Task(executorPreference: ThreadsOfItsOwnExecutor.shared) { () -> (Int, SuiteError?) in
            var seen = 0
            do {
                for try await _ in changes { seen += 1 }
            } catch {
                return (seen, error as? SuiteError)
            }
            return (seen, nil)
        }
        try suite.set(1, forKey: "k")
        try FileManager.default.removeItem(at: place)
        // Past the deadline, cancelling ends the loop without an error.
        let deadline = Task {
            try? await Task.sleep(for: .seconds(60))
            loop.cancel()
        }
        let (seen, error) = await loop.value
        deadline.cancel()
        #expect(seen == 1)
        #expect(error?.code == .notFound, "\(String(describing: error))")
    }

    @Test func aRemovalOfTheSuitesFilesReachesItsObserversByItself() throws {
        let suite = try open("removed")
        try suite.set(1, forKey: "k")
        let recorder = ChangeRecorder()
        let token = try suite.observe(onChange: recorder.handler)
        defer { token.cancel() }
        // Holds the removal after the data file's name went, its lock still held, until
        // the observers' catch-up has found its state stale and waits for that lock.
        let removedName = DispatchSemaphore(value: 0), observerWaits = DispatchSemaphore(value: 0)
        let proceed = DispatchSemaphore(value: 0)
        let holding = Locked(true)
        SuiteFaultInjection.arm(.suiteFileRemoved) { _ in
            guard holding.withLock({ $0 }) else { return }
            removedName.signal()
            _ = proceed.wait(timeout: .now() + 60)
        }
        SuiteFaultInjection.arm(.waitingForLock) { _ in
            if holding.withLock({ $0 }) { observerWaits.signal() }
        }
        let remover = Thread { _ = try? Suite.removeFiles(named: "removed", directory: directory.url) }
        remover.start()
        #expect(removedName.wait(timeout: .now() + 30) == .success)
        let waited = observerWaits.wait(timeout: .now() + 30) == .success
        #expect(waited, "the observers' catch-up found its state stale and waited for the removal")
        holding.withLock { $0 = false }
        proceed.signal()
        #expect(recorder.wait { $0.contains { $0.key == "k" && $0.newValue == nil } }, "\(recorder.changes)")
    }

    @Test func laterObserversMissEarlierChangesUnlessTheyAskForCurrentValues() throws {
        let suite = try open()
        try suite.set(1, forKey: "a")
        try suite.set("x", forKey: "b")
        let plain = ChangeRecorder(), initial = ChangeRecorder()
        let tokens = [try suite.observe(onChange: plain.handler),
                      try suite.observe(keys: ["a", "missing"], includingCurrentValues: true, onChange: initial.handler)]
        try suite.set(2, forKey: "a")
        #expect(plain.wait(for: "a", toBecome: 2))
        #expect(initial.wait(for: "a", toBecome: 2))
        #expect(plain.changes.map(\.newValue) == [2])
        #expect(initial.changes.map(\.kind) == [.initialValue, .commit])
        #expect(initial.changes.map(\.newValue) == [1, 2])
        #expect(initial.changes.first?.oldValue == nil)
        withExtendedLifetime(tokens) {}
    }

    @Test(.onThreadsOfItsOwn) func leavingTheLoopEndsTheObservation() async throws {
        let suite = try open()
        let changes = try suite.changes(forKeys: ["n"])
        let writer = Task(executorPreference: ThreadsOfItsOwnExecutor.shared) {
            for value in 1...3 { try suite.set(value, forKey: "n") }
        }
        var seen: [SuiteValue?] = []
        for try await change in changes {
            seen.append(change.newValue)
            if seen.count == 3 { break }
        }
        try await writer.value
        #expect(seen == [1, 2, 3])
        _ = consume changes
        #expect(ObserverHub.of(suite.lease).count == 0, "the observation ended with the loop")
    }

    @Test(.onThreadsOfItsOwn) func cancellingTheTaskEndsTheObservation() async throws {
        let suite = try open()
        let changes = try suite.changes()
        let (ticks, tick) = AsyncStream.makeStream(of: Int.self)
        let task = Task(executorPreference: ThreadsOfItsOwnExecutor.shared) {
            var count = 0
            for try await _ in changes {
                count += 1
                tick.yield(count)
            }
            return count
        }
        try suite.set(1, forKey: "k")
        // Await, never block: the task needs one of the few threads of the pool.
        let first = await withDeadline(.seconds(60)) {
            var iterator = ticks.makeAsyncIterator()
            return await iterator.next()
        }
        #expect(first == 1)
        task.cancel()
        #expect(try await task.value == 1)
        _ = consume changes
        #expect(ObserverHub.of(suite.lease).count == 0)
    }

    /// The change watcher holds each observed suite's hub strongly while it is
    /// watched: once every observation is cancelled or released (both ways, and both
    /// deliveries), neither the hub nor the store may stay alive, and the directory is
    /// no longer watched.
    @Test func endedObservationsLeaveNeitherHubNorStoreAlive() throws {
        weak var hub: ObserverHub?
        weak var store: SuiteStore?
        do {
            let suite = try open("released")
            let cancelled = try SuiteObservation.allKeys.start(in: suite) { _ in }
            var released: SuiteCancellable? = try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: suite) { _ in }
            let recorder = ChangeRecorder()
            let last = try suite.observe(onChange: recorder.handler)
            try suite.set(1, forKey: "k")
            #expect(recorder.wait(for: "k", toBecome: 1))
            hub = ObserverHub.of(suite.lease)
            store = suite.store
            cancelled.cancel()
            released = nil
            last.cancel()
            #expect(released == nil)
        }
        // A job of the hub's queue may still hold it for a moment.
        let deadline = ContinuousClock.now + .seconds(30)
        while (hub != nil || store != nil) && ContinuousClock.now < deadline { usleep(1_000) }
        #expect(hub == nil, "the hub of a suite no longer observed stayed alive")
        #expect(store == nil, "the store of a suite no longer observed or opened stayed alive")
        #expect(!ChangeWatcher.shared.watchedDirectories.contains { $0.hasSuffix(directory.url.lastPathComponent) })
    }

    @Test func releasingTheTokenStopsDelivery() throws {
        let suite = try open()
        let released = ChangeRecorder(), kept = ChangeRecorder()
        var token: SuiteCancellable? = try suite.observe(onChange: released.handler)
        let keptToken = try suite.observe(onChange: kept.handler)
        try suite.set(1, forKey: "k")
        #expect(released.wait(for: "k", toBecome: 1))
        token = nil
        try suite.set(2, forKey: "k")
        #expect(kept.wait(for: "k", toBecome: 2))
        ObserverHub.of(suite.lease).waitForDelivery()
        #expect(released.changes.map(\.newValue) == [1])
        #expect(token == nil)
        withExtendedLifetime(keptToken) {}
    }

    @Test func aClearArrivesAsOneChangePerKey() throws {
        let suite = try open()
        for key in ["c", "a", "b"] { try suite.set(key, forKey: key) }
        let recorder = ChangeRecorder()
        let token = try suite.observe(onChange: recorder.handler)
        try suite.removeAll()
        #expect(recorder.wait { $0.count == 3 })
        #expect(recorder.changes.map(\.key) == ["a", "b", "c"])
        #expect(recorder.changes.allSatisfy { $0.newValue == nil && $0.oldValue == .string($0.key) && $0.kind == .commit })
        #expect(Set(recorder.changes.map(\.sequence)).count == 1, "one commit")
        withExtendedLifetime(token) {}
    }

    @Test func aSuiteThatDoesNotExistYetCanBeWatched() throws {
        let suite = try open("future")
        #expect(!Suite.exists(named: "future", directory: directory.url))
        let recorder = ChangeRecorder()
        let token = try suite.observe(onChange: recorder.handler)
        try writeFromAnotherProcess("first", "write", in: directory.url, suite: "future")
        #expect(recorder.wait(for: "first", toBecome: "write"))
        #expect(recorder.changes.first?.kind == .commit)
        #expect(recorder.changes.first?.sequence == 1)
        withExtendedLifetime(token) {}
    }

    @Test func compactionsByAnotherProcessKeepTheStreamInOrder() throws {
        let suite = try open("compacted")
        let recorder = ChangeRecorder()
        let token = try suite.observe(onChange: recorder.handler)
        let writer = try startWorker("write-keys", in: directory, suite: "compacted",
                                     ["prefix": "k", "count": "300", "keys": "3", "compaction-slack": "1"])
        writer.expectLine(startingWith: "done")
        writer.expectSuccess()
        #expect(recorder.wait(for: "k.2", toBecome: 299))
        let changes = recorder.changes
        #expect(zip(changes, changes.dropFirst()).allSatisfy { $0.sequence <= $1.sequence }, "in commit order")
        var model: [String: SuiteValue] = [:]
        for change in changes {
            if change.kind == .commit { #expect(change.oldValue == model[change.key], "\(change)") }
            model[change.key] = change.newValue
        }
        #expect(model == suite.storedValues(), "the final values all arrived")
        #expect(changes.filter { $0.kind == .commit }.count > 0)
        withExtendedLifetime(token) {}
    }

    @Test func aSuiteWhoseLockIsHeldDelaysNoOtherSuite() throws {
        let stuck = try open("stuck"), free = try open("free")
        let stuckRecorder = ChangeRecorder(), freeRecorder = ChangeRecorder()
        let tokens = [try stuck.observe(onChange: stuckRecorder.handler), try free.observe(onChange: freeRecorder.handler)]
        // The holder writes "held" in a transaction it never ends: its file changes,
        // and catching up on it waits for the lock.
        let holder = try startWorker("hold-lock", in: directory, suite: "stuck")
        holder.expectLine(startingWith: "holding")
        try writeFromAnotherProcess("k", "still flowing", in: directory.url, suite: "free")
        #expect(freeRecorder.wait(for: "k", toBecome: "still flowing"))
        holder.kill()
        #expect(stuckRecorder.changes.isEmpty, "the holder's transaction never committed")
        withExtendedLifetime(tokens) {}
    }

    /// U+0600 joins the "." after it in one grapheme, so "؀.suite" does not end in
    /// the Character ".suite": the file name is taken apart by its bytes.
    @Test func aSuiteWhoseNameEndsInAPrependCharacterIsObservedAndListed() throws {
        let name = "report\u{600}"
        let suite = try open(name)
        let recorder = ChangeRecorder()
        let token = try suite.observe(onChange: recorder.handler)
        try writeFromAnotherProcess("k", "seen", in: directory.url, suite: name)
        #expect(recorder.wait(for: "k", toBecome: "seen"))
        #expect(try Suite.names(in: directory.url).contains(name))
        withExtendedLifetime(token) {}
    }

    @Test func aLostEventQueueIsCaughtUpFromTheFile() throws {
        let suite = try open("overflowed")
        let recorder = ChangeRecorder()
        let diagnostics = DiagnosticsRecorder(directory)
        let token = try suite.observe(onChange: recorder.handler)
        SuiteFaultInjection.simulateWatcherOverflow()
        try writeFromAnotherProcess("k", "after overflow", in: directory.url, suite: "overflowed")
        #expect(recorder.wait(for: "k", toBecome: "after overflow"))
        #expect(diagnostics.kinds.contains(.changeEventsLost))
        withExtendedLifetime(token) {}
    }

    @Test func aMovedDirectoryIsStillWatched() throws {
        let original = directory.file("before")
        let suite = try Suite(named: "moving", directory: original)
        let recorder = ChangeRecorder()
        let token = try suite.observe(onChange: recorder.handler)
        let moved = directory.file("after")
        #expect(rename(original.path, moved.path) == 0)
        try writeFromAnotherProcess("k", "moved", in: moved, suite: "moving")
        #expect(recorder.wait(for: "k", toBecome: "moved"))
        withExtendedLifetime(token) {}
    }

    @Test func everySuiteOfADirectoryIncludingNewOnes() throws {
        try open("existing").set("old", forKey: "k")
        let recorder = ChangeRecorder()
        let token = try Suite.observeSuites(in: directory.url, includingCurrentValues: true, onChange: recorder.handler)
        try writeFromAnotherProcess("k", "new", in: directory.url, suite: "existing")
        try writeFromAnotherProcess("j", "born", in: directory.url, suite: "newcomer")
        #expect(recorder.wait { changes in changes.contains { $0.suite == "newcomer" && $0.newValue == "born" } })
        #expect(recorder.wait { changes in changes.contains { $0.suite == "existing" && $0.newValue == "new" } })
        let existing = recorder.changes.filter { $0.suite == "existing" }
        #expect(existing.map(\.kind) == [.initialValue, .commit])
        #expect(existing.map(\.newValue) == ["old", "new"])
        token.cancel()
        #expect(throws: SuiteError.self) { try Suite.observeSuites(in: directory.file("nowhere")) { _ in } }
    }

    @Test func aSuiteCreatedWhileEventsWereLostIsStillFound() throws {
        let recorder = ChangeRecorder()
        let token = try Suite.observeSuites(in: directory.url, onChange: recorder.handler)
        SuiteFaultInjection.simulateWatcherOverflow()
        try writeFromAnotherProcess("k", "unseen birth", in: directory.url, suite: "hidden")
        #expect(recorder.wait(for: "k", toBecome: "unseen birth"))
        token.cancel()
    }
}

/// The result of `body`, or nil if it has not come by the deadline.
func withDeadline<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async -> T?) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
