import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Testing) @testable import SuiteDefaults

/// Hostile tests of `SuiteObservation.Delivery.watcherThread`: the change watcher's
/// thread borrowing a suite's queue, catching up without waiting, and running the
/// queued jobs itself.
@Suite("Hostile: delivery on the watcher's thread", .serialized)
struct HostileWatcherThreadTests {
    let directory = TemporaryDirectory("hostile-watcher")

    func open(_ name: String) throws -> Suite {
        try Suite(named: name, directory: directory.url)
    }

    /// Checks what one observer received: commit order, one call at a time, each
    /// change starting from the value the one before left, and the end state.
    static func checkHistory(_ changes: [SuiteChange], endsAt stored: [String: SuiteValue],
                             sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(zip(changes, changes.dropFirst()).allSatisfy { $0.sequence <= $1.sequence },
                "not in commit order", sourceLocation: sourceLocation)
        var model: [String: SuiteValue] = [:]
        var mismatches = 0
        for change in changes where change.kind != .initialValue {
            if change.oldValue != model[change.key] { mismatches += 1 }
            model[change.key] = change.newValue
        }
        #expect(mismatches == 0, "\(mismatches) changes did not start from the value the one before left (lost or repeated)",
                sourceLocation: sourceLocation)
        #expect(model == stored, "the changes do not add up to what is stored", sourceLocation: sourceLocation)
    }

    // MARK: The watcher thread running what another observation asked to run elsewhere

    /// An observation that did not ask for `.watcherThread` (the default, the suite's
    /// queue, where a slow callback holds back the observers of other suites for at
    /// most `ReaderRole.longestPause`) must never be called while the thread that reads
    /// inotify still holds the reading. Here one is started with the
    /// current values, again and again, on a suite that a `.watcherThread` observation
    /// already watches, while events for the suite's file keep coming (its times are
    /// touched, as a backup tool would; nothing is written).
    @Test func aSuiteQueueObservationIsNeverCalledOnTheWatcherThread() throws {
        let suite = try open("churn")
        try suite.update { transaction in
            for index in 0..<200 { try transaction.set(index, forKey: "seed.\(index)") }
        }
        let fast = ChangeRecorder()
        let token = try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: suite, onChange: fast.handler)
        let dataPath = directory.file("churn.suite").path
        let stop = LockedBox(false)
        let toucherEnded = DispatchSemaphore(value: 0)
        Thread {
            defer { toucherEnded.signal() }
            var state: UInt64 = 0x9E37_79B9
            while !stop.current {
                _ = utimensat(AT_FDCWD, dataPath, nil, 0)
                state = state &* 6364136223846793005 &+ 1442695040888963407
                usleep(UInt32(50 + (state >> 33) % 400))
            }
        }.start()
        defer { stop.withLock { $0 = true }; _ = toucherEnded.wait(timeout: .now() + 10) }
        let offenders = LockedBox<[String]>([])
        let clock = ContinuousClock()
        // Bounded by time for CI; before the fix, it failed within 3,500 tries.
        let deadline = clock.now + .seconds(12)
        var tries = 0
        while clock.now < deadline && tries < 10000 && offenders.current.isEmpty {
            tries += 1
            let called = DispatchSemaphore(value: 0)
            let other = try SuiteObservation.allKeys.including(currentValues: true).start(in: suite) { change in
                // Its callbacks may run on the thread that read the change, once that
                // thread paused its reading (which another then takes over if they are slow).
                if ChangeWatcher.shared.isReaderThread {
                    offenders.withLock { $0.append("\(change.key) (\(change.kind)) on \(currentThreadName())") }
                }
                called.signal()
            }
            _ = called.wait(timeout: .now() + 10)
            other.cancel()
        }
        #expect(offenders.current.isEmpty,
                "a .suiteQueue observation was called on the watcher's thread (try \(tries)): \(offenders.current.prefix(3))")
        withExtendedLifetime(token) {}
    }

    // MARK: The watcher thread waiting for a suite after all

    /// A callback on the watcher's thread that ends an observation (here of another
    /// suite, whose lock a long transaction of this process holds) waits for that
    /// suite's lock on the watcher's thread; meanwhile no observed suite of the process
    /// hears of any change. With the suite's queue, only that queue would wait.
    @Test(arguments: [SuiteObservation.Delivery.watcherThread, .suiteQueue])
    func cancellingFromACallbackDoesNotStallOtherSuites(delivery: SuiteObservation.Delivery) throws {
        let tag = delivery == .watcherThread ? "w" : "q"
        let trigger = try open("trigger-" + tag), busy = try open("busy-" + tag), bystander = try open("bystander-" + tag)
        let busyToken = LockedBox<SuiteCancellable?>(try SuiteObservation.allKeys.start(in: busy) { _ in })
        let fired = LockedBox<[String]>([])
        let observation = SuiteObservation.allKeys.delivered(on: delivery)
        let triggerToken = try observation.start(in: trigger) { change in
            fired.withLock { $0.append(currentThreadName()) }
            // Stop watching `busy` once `trigger` says so: a plain cancellation.
            busyToken.withLock { token in defer { token = nil }; return token }?.cancel()
        }
        let bystanderRecorder = ChangeRecorder()
        let bystanderToken = try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: bystander, onChange: bystanderRecorder.handler)

        // Another thread of this process inside a transaction of `busy` that takes long.
        let inside = DispatchSemaphore(value: 0), finish = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            try? busy.update { transaction in
                try transaction.set(1, forKey: "k")
                inside.signal()
                _ = finish.wait(timeout: .now() + 60)
            }
            finished.signal()
        }.start()
        #expect(inside.wait(timeout: .now() + 30) == .success)

        try writeFromAnotherProcess("k", "go", in: directory.url, suite: "trigger-" + tag)
        let clock = ContinuousClock()
        let triggered = clock.now + .seconds(10)
        while fired.current.isEmpty && clock.now < triggered { usleep(1000) }
        try writeFromAnotherProcess("k", "still flowing", in: directory.url, suite: "bystander-" + tag)
        let flowed = bystanderRecorder.wait(for: "k", toBecome: "still flowing", timeout: .seconds(10))
        finish.signal()
        _ = finished.wait(timeout: .now() + 30)
        print("\(delivery): trigger callback ran on: \(fired.current); bystander flowed within 10 s: \(flowed)")
        #expect(flowed, "the bystander suite heard nothing while a watcher-thread callback (on \(fired.current)) cancelled an observation of a suite held by a transaction")
        #expect(bystanderRecorder.wait(for: "k", toBecome: "still flowing"))
        withExtendedLifetime((triggerToken, bystanderToken)) {}
    }

    // MARK: Repairs

    /// Another process repairs a damaged suite file (cut short by something outside the
    /// library) when it reads it: what the repair dropped is a change, which the
    /// observers must hear of. The repair renames its file into place (the event)
    /// before it publishes the new state in the shared header.
    @Test(arguments: [SuiteObservation.Delivery.watcherThread, .suiteQueue])
    func aRepairByAnotherProcessReachesTheObservers(delivery: SuiteObservation.Delivery) throws {
        var missed: [Int] = []
        for round in 0..<6 {
            let name = "repair-\(delivery == .watcherThread ? "w" : "q")-\(round)"
            let suite = try open(name)
            let recorder = ChangeRecorder()
            let token = try SuiteObservation.allKeys.delivered(on: delivery).start(in: suite, onChange: recorder.handler)
            try writeFromAnotherProcess("k1", "kept", in: directory.url, suite: name)
            try writeFromAnotherProcess("k2", "dropped", in: directory.url, suite: name)
            #expect(recorder.wait(for: "k2", toBecome: "dropped"))
            // Cut the last record short, as a process outside the library might.
            let dataPath = directory.file("\(name).suite").path
            var status = stat()
            #expect(stat(dataPath, &status) == 0)
            #expect(truncate(dataPath, status.st_size - 3) == 0)
            // Another process reads, finds the damage, and repairs.
            let reader = try startWorker("get", in: directory, suite: name, ["key": "k2"])
            let line = reader.waitForLine(timeout: .seconds(30)) { $0 == "absent" || $0.hasPrefix("value") }
            reader.expectSuccess()
            #expect(line == "absent", "the repair was expected to drop k2: \(line ?? "nothing"), \(reader.lines)")
            if !recorder.wait(for: "k2", toBecome: nil, timeout: .seconds(5)) { missed.append(round) }
            // The change is there to be read: a read of this process catches up and
            // collects it for the observers.
            let readHere = suite.storedValue(forKey: "k2")
            let afterRead = recorder.wait(for: "k2", toBecome: nil, timeout: .seconds(5))
            if round == 0 { print("repair round 0 (\(delivery)): this process reads k2 as \(readHere.map { "\($0)" } ?? "absent"); the observer got k2 -> nil after that read: \(afterRead); reader said \(reader.lines)") }
            withExtendedLifetime(token) {}
        }
        #expect(missed.isEmpty, "observers (\(delivery)) never heard that the repair dropped k2, in rounds \(missed) of 6")
    }

    // MARK: Stuck lock holders

    /// A writer stopped (SIGSTOP) in the middle of a commit, its record written but not
    /// published, with the exclusive lock held: the other suites' changes keep coming
    /// on the watcher's thread, and once it is killed the stuck suite's later changes
    /// arrive, in order, nothing twice.
    @Test func aWriterStoppedMidCommitStallsOnlyItsSuite() throws {
        let names = (0..<6).map { "stuckmany-\($0)" }
        let suites = try names.map(open)
        let recorders = names.map { _ in ChangeRecorder() }
        let observation = SuiteObservation.allKeys.delivered(on: .watcherThread)
        let tokens = try zip(suites, recorders).map { suite, recorder in try observation.start(in: suite, onChange: recorder.handler) }
        try writeFromAnotherProcess("k", "before", in: directory.url, suite: names[0])
        #expect(recorders[0].wait(for: "k", toBecome: "before"))
        let paused = try startWorker("pause", in: directory, suite: names[0], ["point": "recordWritten", "key": "k", "value": "torn"])
        paused.expectLine(startingWith: "paused")
        paused.signal(SIGSTOP)
        defer { _ = paused.kill() }
        for (index, name) in names.enumerated().dropFirst() {
            let writer = try startWorker("write-keys", in: directory, suite: name, ["prefix": "p", "count": "40", "keys": "2"])
            writer.expectLine(startingWith: "done")
            writer.expectSuccess()
            #expect(recorders[index].wait(timeout: .seconds(10)) { $0.count == 40 }, "\(name): \(recorders[index].changes.count) of 40")
        }
        _ = paused.kill()
        try writeFromAnotherProcess("k", "after", in: directory.url, suite: names[0])
        #expect(recorders[0].wait(for: "k", toBecome: "after"))
        for (suite, recorder) in zip(suites, recorders) {
            Self.checkHistory(recorder.changes, endsAt: suite.storedValues())
        }
        // (The killed writer's record was written whole, so the repair may keep it:
        // then it arrives once, before "after", which checkHistory covers.)
        #expect(recorders[0].changes.filter { $0.newValue == "torn" }.count <= 1)
        withExtendedLifetime(tokens) {}
    }

    // MARK: Many suites at once

    /// Many suites, each with its own writer process and a compacting one, observed on
    /// the watcher's thread alongside this process's own writes: every observer gets
    /// every change once, in commit order.
    @Test func manySuitesWithWritersAndCompactionsLoseNothing() throws {
        let names = (0..<10).map { "many-\($0)" }
        let suites = try names.map { name in
            try Suite(named: name, directory: directory.url, options: { var o = Suite.Options(); o.compactionSlack = 512; return o }())
        }
        let recorders = names.map { _ in ChangeRecorder() }
        let overlapped = LockedBox(false)
        let active = LockedBox<[String: Int]>([:])
        let observation = SuiteObservation.allKeys.delivered(on: .watcherThread)
        let tokens = try zip(zip(names, suites), recorders).map { pair, recorder in
            let (name, suite) = pair
            return try observation.start(in: suite) { change in
                let concurrent = active.withLock { counts in counts[name, default: 0] += 1; return counts[name]! > 1 }
                if concurrent { overlapped.withLock { $0 = true } }
                recorder.handler(change)
                active.withLock { $0[name]! -= 1 }
            }
        }
        let writers = try names.map { name in
            try startWorker("write-keys", in: directory, suite: name, ["prefix": "other", "count": "150", "keys": "4", "compaction-slack": "512"])
        }
        for index in 0..<150 {
            for suite in suites { try suite.set(index, forKey: "own.\(index % 4)") }
        }
        for writer in writers {
            writer.expectLine(startingWith: "done")
            writer.expectSuccess()
        }
        for (suite, recorder) in zip(suites, recorders) {
            try suite.set("end", forKey: "end")
            #expect(recorder.wait(for: "end", toBecome: "end"), "\(suite.name): \(recorder.changes.count)")
            Self.checkHistory(recorder.changes, endsAt: suite.storedValues())
        }
        #expect(!overlapped.current, "one call at a time")
        withExtendedLifetime(tokens) {}
    }

    // MARK: Asynchronous sequences

    /// `changes(in:)` is fed on the watcher's thread; loops over it that end or are
    /// cancelled while another process writes without pause must stop cleanly, and the
    /// watcher must go on serving the others.
    @Test(.onThreadsOfItsOwn) func cancellingAsyncSequencesWhileTheWatcherDelivers() async throws {
        let suite = try open("streams"), other = try open("streams-other")
        let writer = try startWorker("ack-loop", in: directory, suite: "streams", ["prefix": "w"])
        writer.expectLine(startingWith: "ack")
        for round in 0..<30 {
            let task = Task(executorPreference: ThreadsOfItsOwnExecutor.shared) {
                var count = 0
                var last: UInt64 = 0
                var inOrder = true
                for try await change in try suite.changes() {
                    if change.sequence < last { inOrder = false }
                    last = change.sequence
                    count += 1
                    if round % 2 == 0 && count == 20 { break }
                }
                return (count, inOrder)
            }
            try await Task.sleep(for: .milliseconds(round % 2 == 0 ? 50 : 5))
            if round % 2 == 1 { task.cancel() }
            let timeout = Task { try await Task.sleep(for: .seconds(20)); task.cancel() }
            let (_, inOrder) = try await task.value
            timeout.cancel()
            #expect(inOrder, "round \(round)")
        }
        _ = writer.kill()
        let recorder = ChangeRecorder()
        let token = try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: other, onChange: recorder.handler)
        try writeFromAnotherProcess("k", "still served", in: directory.url, suite: "streams-other")
        #expect(recorder.wait(for: "k", toBecome: "still served"))
        // No observation of the suite is left behind.
        #expect(ObserverHub.of(suite.lease).count == 0)
        withExtendedLifetime(token) {}
    }

    // MARK: Observations added and cancelled while the watcher delivers

    /// A `.watcherThread` observation whose callback is slowish (but waits for nothing)
    /// while observations of both deliveries come and go and both processes write: it
    /// receives every change once, in order.
    @Test func observationsComingAndGoingDuringDelivery() throws {
        let suite = try open("comego")
        let steady = ChangeRecorder()
        let token = try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: suite) { change in
            // Busy for a moment, as a real callback would be.
            let until = DispatchTime.now().uptimeNanoseconds + 20_000
            while DispatchTime.now().uptimeNanoseconds < until {}
            steady.handler(change)
        }
        let writer = try startWorker("write-keys", in: directory, suite: "comego", ["prefix": "other", "count": "400", "keys": "5"])
        let stop = LockedBox(false)
        let churnEnded = DispatchSemaphore(value: 0)
        let churn = Thread {
            defer { churnEnded.signal() }
            var index = 0
            while !stop.current {
                index += 1
                let delivery: SuiteObservation.Delivery = index % 2 == 0 ? .watcherThread : .suiteQueue
                let temporary = try? SuiteObservation.allKeys.delivered(on: delivery).including(currentValues: index % 3 == 0)
                    .start(in: suite) { _ in }
                if index % 5 == 0 { try? suite.set(index, forKey: "own") }
                temporary?.cancel()
            }
        }
        churn.start()
        writer.expectLine(startingWith: "done")
        writer.expectSuccess()
        stop.withLock { $0 = true }
        #expect(churnEnded.wait(timeout: .now() + 30) == .success)
        try suite.set("end", forKey: "end")
        #expect(steady.wait(for: "end", toBecome: "end"))
        Self.checkHistory(steady.changes, endsAt: suite.storedValues())
        withExtendedLifetime(token) {}
    }

    // MARK: Directories, overflows, removals

    /// The suite's directory removed and made again, then an overflow of the inotify
    /// queue, then the suite's files removed by this process: a `.watcherThread`
    /// observer hears of every change, in order, once.
    @Test func replacedDirectoryOverflowAndRemovalReachWatcherThreadObservers() throws {
        let place = directory.file("place")
        let suite = try Suite(named: "moving", directory: place)
        let others = try (0..<3).map { try open("overflow-\($0)") }
        let recorder = ChangeRecorder(), otherRecorders = others.map { _ in ChangeRecorder() }
        let observation = SuiteObservation.allKeys.delivered(on: .watcherThread)
        let token = try observation.start(in: suite, onError: recorder.errorHandler, onChange: recorder.handler)
        let otherTokens = try zip(others, otherRecorders).map { try observation.start(in: $0, onChange: $1.handler) }
        try writeFromAnotherProcess("k", "first", in: place, suite: "moving")
        #expect(recorder.wait(for: "k", toBecome: "first"))
        try FileManager.default.removeItem(at: place)
        #expect(recorder.waitForError(timeout: .seconds(10)), "the removal was reported")
        try FileManager.default.createDirectory(at: place, withIntermediateDirectories: true)
        let clock = ContinuousClock()
        let moved = clock.now + .seconds(30)
        while !ChangeWatcher.shared.watchedDirectories.contains(where: { $0.hasSuffix("/place") }) && clock.now < moved { usleep(2000) }
        try writeFromAnotherProcess("k", "again", in: place, suite: "moving")
        #expect(recorder.wait(for: "k", toBecome: "again"), "\(recorder.changes.map(\.newValue))")

        SuiteFaultInjection.simulateWatcherOverflow()
        for index in 0..<3 {
            try writeFromAnotherProcess("k", "after overflow", in: directory.url, suite: "overflow-\(index)")
        }
        try writeFromAnotherProcess("k", "after overflow", in: place, suite: "moving")
        for (index, other) in otherRecorders.enumerated() {
            #expect(other.wait(for: "k", toBecome: "after overflow", timeout: .seconds(20)), "overflow-\(index)")
        }
        #expect(recorder.wait(for: "k", toBecome: "after overflow", timeout: .seconds(20)))

        let survivor = try Suite(named: "removed", directory: directory.url)
        try survivor.set(1, forKey: "k")
        let removedRecorder = ChangeRecorder()
        let removedToken = try observation.start(in: survivor, onChange: removedRecorder.handler)
        _ = try Suite.removeFiles(named: "removed", directory: directory.url)
        #expect(removedRecorder.wait(for: "k", toBecome: nil, timeout: .seconds(20)), "the removal of the files reached the observer")

        let history = recorder.changes
        #expect(zip(history, history.dropFirst()).allSatisfy { $0.sequence <= $1.sequence || $1.kind == .netChange })
        #expect(history.filter { $0.newValue == "after overflow" }.count == 1, "\(history.map(\.newValue))")
        withExtendedLifetime((token, otherTokens, removedToken)) {}
    }
}
