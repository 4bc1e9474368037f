import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Testing) @testable import SuiteDefaults

/// The nineteenth hostile round: the default delivery run by the thread that read the
/// change, its reading paused (`ReaderRole`, `SerialQueue.borrowIfIdle`,
/// `ObserverHub.TakenQueue`), and `Inotify.readWithoutWaiting` asking `FIONREAD` first.
/// Real processes, files and threads; every change under observation here comes from
/// another process, so it reaches this one only through the reading. The scenarios of
/// a forked child run in a worker (role "forked"), which forks itself: this process's
/// other threads may hold a lock at a fork, which its child would wait for for good.
@Suite("Hostile round nineteen: the reading paused", .serialized)
struct HostileRoundNineteenTests: WatchedFilesTesting {
    let directory = TemporaryDirectory("hostile-19")

    func open(_ name: String) throws -> Suite {
        try Suite(named: name, directory: directory.url)
    }

    // MARK: Helpers

    static func count(_ name: String) -> Int { OwnThreads.names().filter { $0 == name }.count }

    /// Waits until `condition` holds, at most `timeout`.
    static func eventually(_ timeout: Duration = .seconds(10), _ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            usleep(2_000)
        }
        return true
    }

    /// Starts the worker's role "forked" on `scenario` (Tests/suite-test-worker/ForkedScenarios.swift):
    /// the worker forks (not this process, whose other threads, at work on other suites'
    /// tests, may hold a lock of the Swift runtime or of malloc at the fork, for good in
    /// the child), its child runs the scenario, and the worker reaps it and says how it ended.
    func forkedScenario(_ scenario: String, suite: String, _ options: [String: String] = [:]) throws -> ChildProcess {
        try startWorker("forked", in: directory, suite: suite, options.merging(["scenario": scenario]) { a, _ in a })
    }

    /// Whether `line` is the worker's report of how its forked child ended.
    static func isChildReport(_ line: String) -> Bool {
        ["child status ", "child killed", "child not forked"].contains { line.hasPrefix($0) }
    }

    /// Waits (60 s at most) for the line `line` from the worker's forked child, or for
    /// the report of the child's end, after which none comes: whether it came.
    func waitForChild(_ worker: ChildProcess, _ line: String) -> Bool {
        _ = worker.waitForLines(timeout: .seconds(60)) { $0.contains(line) || $0.contains(where: Self.isChildReport) }
        return worker.lines.contains(line)
    }

    /// The exit status of the worker's forked child, as the worker reports it: nil when
    /// the child was killed (hung past its deadline, 60 s), died of a signal, was not
    /// forked, or no report came.
    func childStatus(_ worker: ChildProcess, sourceLocation: SourceLocation = #_sourceLocation) -> Int32? {
        _ = worker.waitForLines(timeout: .seconds(120)) { $0.contains(where: Self.isChildReport) }
        let line = worker.lines.first(where: Self.isChildReport)
        #expect(line != nil, "no report of the child from \(worker.pid); output: \(worker.lines.suffix(5)), errors: \(worker.standardError)",
                sourceLocation: sourceLocation)
        return line.flatMap { $0.hasPrefix("child status ") ? Int32($0.dropFirst("child status ".count)) : nil }
    }

    // MARK: 1. FIONREAD on a number that is no longer the instance

    /// Round eighteen made a read that finds the end of a file give the writers'
    /// inotify instance up (its number closed and given to another file by code outside
    /// the library): /dev/null's end of file. `readWithoutWaiting` now asks
    /// `ioctl(FIONREAD)` first and takes 0 for "nothing queued" without reading. For a
    /// regular file, FIONREAD answers the bytes from the offset to the end: an empty
    /// file (a new log, a lock file, a temporary file: the commonest thing a freed
    /// number is given to) answers 0 at every commit, and the writer stays on its short
    /// path for good, following nothing. The data file replaced by a copy while a hard
    /// link keeps the old one: the acknowledged write goes to the backup. /dev/null
    /// (FIONREAD is ENOTTY there, so it is still read) holds, as control.
    @Test(arguments: ["devnull", "emptyFile"])
    func theInstanceNumberGivenToAnEmptyFileThenTheDataFileReplaced(mode: String) throws {
        let name = "fionread-\(mode)"
        let worker = try forkedScenario("fionread", suite: name, ["then": mode])
        defer { worker.kill() }
        let status = childStatus(worker)
        worker.expectSuccess()
        #expect(status == 0, "the child failed: \(status.map(String.init) ?? "killed")")
        guard status == 0 else { return }
        #expect(try read(name, "first") == "value 1")
        #expect(try read(name, "third") == "value 3",
                "an acknowledged write went to the replaced file (\(mode) at the instance's number)")
    }

    // MARK: 2. Many suites, each with a slow callback

    /// 24 suites, each with a callback that blocks (until the gate opens) at its first
    /// change: each change takes the reader's thread and hands the reading over. A
    /// bystander's change still arrives, the blocked suites' later changes wait and then
    /// arrive in order, and once every gate opens the reading threads go back to one
    /// reading and at most one standing by.
    @Test func twentyFourBlockedCallbacksThenTheThreadsGoBack() throws {
        let count = 24
        let suites = try (0..<count).map { try open("many-\($0)") }
        let bystander = try open("many-bystander")
        let gates = (0..<count).map { _ in BlockingObserver() }
        let recorder = ChangeRecorder()
        var tokens = try zip(suites, gates).map { try SuiteObservation.allKeys.start(in: $0, onChange: $1.handler) }
        tokens.append(try SuiteObservation.allKeys.start(in: bystander, onChange: recorder.handler))
        defer { gates.forEach { $0.open(4) } }
        for index in 0..<count {
            try writeFromAnotherProcess("k", "1", in: directory.url, suite: "many-\(index)")
            #expect(gates[index].entered.wait(timeout: .now() + 10) == .success, "suite \(index)'s callback was not called")
        }
        let start = ContinuousClock.now
        try writeFromAnotherProcess("k", "b", in: directory.url, suite: "many-bystander")
        #expect(recorder.wait(for: "k", toBecome: "b", timeout: .seconds(10)))
        let waited = ContinuousClock.now - start
        #expect(waited < .seconds(3), "the bystander waited \(waited)")
        // Every blocked suite gets a second change while blocked.
        for index in 0..<count { try writeFromAnotherProcess("k", "2", in: directory.url, suite: "many-\(index)") }
        #expect(gates.allSatisfy { $0.recorder.changes.count == 1 })
        gates.forEach { $0.open() }
        for (index, gate) in gates.enumerated() {
            #expect(gate.recorder.wait(for: "k", toBecome: "2", timeout: .seconds(10)), "suite \(index) lost its second change")
            #expect(gate.recorder.changes.compactMap(\.newValue) == ["1", "2"], "suite \(index): \(gate.recorder.changes.compactMap(\.newValue))")
        }
        // One reading, at most one standing by.
        #expect(Self.eventually { Self.count(ChangeWatcher.readerThreadName) <= 2 },
                "suite-watcher threads: \(Self.count(ChangeWatcher.readerThreadName))")
        // And the reading still goes on.
        try writeFromAnotherProcess("k", "c", in: directory.url, suite: "many-bystander")
        #expect(recorder.wait(for: "k", toBecome: "c", timeout: .seconds(10)))
        withExtendedLifetime(tokens) {}
        tokens.removeAll()
    }

    // MARK: 3. Bursts from another process while callbacks are slow and fast by turns

    /// A callback that sleeps about the pause (4, 5, 6 ms by turns, and none) while
    /// another process writes 300 commits as fast as it can: every commit arrives, once,
    /// in order, one call at a time; and a second suite's burst meanwhile too.
    @Test func aBurstWhileCallbacksRunAroundThePause() throws {
        let slow = try open("burst-slow"), other = try open("burst-other")
        let slowRecorder = ChangeRecorder(), otherRecorder = ChangeRecorder()
        let inside = LockedBox(0), overlapped = LockedBox(false), onReader = LockedBox(0)
        let durations: [useconds_t] = [4_000, 5_000, 6_000, 0, 5_000, 0]
        let calls = LockedBox(0)
        let tokens = [
            try SuiteObservation.allKeys.start(in: slow) { change in
                if inside.withLock({ $0 += 1; return $0 }) > 1 { overlapped.withLock { $0 = true } }
                if ChangeWatcher.shared.isReaderThread { onReader.withLock { $0 += 1 } }
                let call = calls.withLock { $0 += 1; return $0 }
                usleep(durations[call % durations.count])
                slowRecorder.handler(change)
                inside.withLock { $0 -= 1 }
            },
            try SuiteObservation.allKeys.start(in: other, onChange: otherRecorder.handler),
        ]
        let writers = [
            try startWorker("write-keys", in: directory, suite: "burst-slow", ["prefix": "p", "count": "300", "keys": "1"]),
            try startWorker("write-keys", in: directory, suite: "burst-other", ["prefix": "p", "count": "300", "keys": "1"]),
        ]
        for writer in writers {
            writer.expectLine(startingWith: "done", within: .seconds(120))
            writer.expectSuccess()
        }
        #expect(otherRecorder.wait(for: "p.0", toBecome: .integer(299), timeout: .seconds(30)))
        #expect(slowRecorder.wait(for: "p.0", toBecome: .integer(299), timeout: .seconds(60)))
        let values = slowRecorder.changes.compactMap { $0.newValue.flatMap { if case .integer(let v) = $0 { v } else { nil } } }
        #expect(values == Array(0..<300), "lost, repeated or out of order: \(values.count) values")
        let sequences = slowRecorder.changes.map(\.sequence)
        #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 })
        #expect(otherRecorder.changes.count == 300)
        #expect(!overlapped.current, "two callbacks of one suite ran at once")
        #expect(onReader.current == 0, "a default callback ran while its thread held the reading")
        withExtendedLifetime(tokens) {}
    }

    // MARK: 4. Observations started, cancelled and released around a taken queue

    /// From inside a callback run on the paused reader: cancel the observation itself,
    /// start a new one on the same suite (with current values) and one on another
    /// suite, and cancel another suite's observation; from another thread meanwhile,
    /// cancel a third. All of that must work, and the new observations must hear later
    /// changes.
    @Test func observationsStartedAndCancelledFromATakenQueue() throws {
        let main = try open("taken-main"), side = try open("taken-side"), third = try open("taken-third")
        let sideRecorder = ChangeRecorder(), lateRecorder = ChangeRecorder(), lateSide = ChangeRecorder()
        let thirdRecorder = ChangeRecorder()
        let selfToken = LockedBox<SuiteCancellable?>(nil)
        let sideToken = LockedBox<SuiteCancellable?>(try SuiteObservation.allKeys.start(in: side, onChange: sideRecorder.handler))
        let thirdToken = LockedBox<SuiteCancellable?>(try SuiteObservation.allKeys.start(in: third, onChange: thirdRecorder.handler))
        let started = LockedBox<[SuiteCancellable]>([]), calls = LockedBox(0), done = DispatchSemaphore(value: 0)
        let mainSuite = main, sideSuite = side
        selfToken.withLock {
            $0 = try? SuiteObservation.allKeys.start(in: main) { _ in
                calls.withLock { $0 += 1 }
                // Another thread cancels the third suite's observation while this runs.
                let canceller = Thread { thirdToken.withLock { $0?.cancel(); $0 = nil } }
                canceller.start()
                selfToken.withLock { $0?.cancel() }
                sideToken.withLock { $0?.cancel(); $0 = nil }
                if let one = try? SuiteObservation.allKeys.including(currentValues: true).start(in: mainSuite, onChange: lateRecorder.handler),
                   let two = try? SuiteObservation.allKeys.start(in: sideSuite, onChange: lateSide.handler) {
                    started.withLock { $0 += [one, two] }
                }
                usleep(20_000)
                done.signal()
            }
        }
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "taken-main")
        #expect(done.wait(timeout: .now() + 10) == .success, "the callback did not finish")
        #expect(started.current.count == 2, "an observation could not be started from the callback")
        try writeFromAnotherProcess("k", "2", in: directory.url, suite: "taken-main")
        try writeFromAnotherProcess("k", "2", in: directory.url, suite: "taken-side")
        try writeFromAnotherProcess("k", "2", in: directory.url, suite: "taken-third")
        #expect(lateRecorder.wait(for: "k", toBecome: "2", timeout: .seconds(10)))
        #expect(lateSide.wait(for: "k", toBecome: "2", timeout: .seconds(10)))
        // The cancelled ones hear nothing more.
        try writeFromAnotherProcess("sentinel", "s", in: directory.url, suite: "taken-side")
        #expect(lateSide.wait(for: "sentinel", toBecome: "s", timeout: .seconds(10)))
        #expect(calls.current == 1, "a cancelled observation was called again")
        #expect(!sideRecorder.changes.contains { $0.newValue == "2" })
        #expect(!thirdRecorder.changes.contains { $0.newValue == "2" })
        #expect(ObserverHub.of(main.lease).count == 1 && ObserverHub.of(side.lease).count == 1 && ObserverHub.of(third.lease).count == 0)
        started.withLock { $0.forEach { $0.cancel() } }
    }

    /// The suite and the token released (by another thread) while the suite's queue is
    /// taken and its callback blocks: nothing crashes, the callback finishes, the
    /// directory's watch goes away with the last observation, and a suite opened again
    /// is observed from scratch.
    @Test func theSuiteAndTokenReleasedWhileTheQueueIsTaken() throws {
        let gate = BlockingObserver()
        let token = LockedBox<SuiteCancellable?>(nil)
        do {
            let suite = try open("released")
            token.withLock { $0 = try? SuiteObservation.allKeys.start(in: suite, onChange: gate.handler) }
        }
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "released")
        #expect(gate.entered.wait(timeout: .now() + 10) == .success)
        let released = DispatchSemaphore(value: 0)
        Thread { token.withLock { $0 = nil }; released.signal() }.start()
        #expect(released.wait(timeout: .now() + 10) == .success, "releasing the token blocked while its queue was taken")
        gate.open()
        #expect(Self.eventually { !ChangeWatcher.shared.watchedDirectories.contains(directory.path) },
                "the directory is still watched: \(ChangeWatcher.shared.watchedDirectories)")
        let again = try open("released"), recorder = ChangeRecorder()
        let second = try SuiteObservation.allKeys.start(in: again, onChange: recorder.handler)
        try writeFromAnotherProcess("k", "2", in: directory.url, suite: "released")
        #expect(recorder.wait(for: "k", toBecome: "2", timeout: .seconds(10)))
        withExtendedLifetime(second) {}
    }

    // MARK: 5. Callbacks that use the suite

    /// A callback on the paused reader that reloads, reads, writes its own suite (every
    /// third change), and runs a transaction on another suite: all complete, its own
    /// writes arrive after what caused them, in order, and another suite's change
    /// arrives meanwhile.
    @Test func callbacksThatReloadWriteAndTransact() throws {
        let suite = try open("busy"), ledger = try open("busy-ledger"), bystander = try open("busy-bystander")
        let recorder = ChangeRecorder(), bystanderRecorder = ChangeRecorder()
        let errors = LockedBox<[String]>([])
        let token = try SuiteObservation.allKeys.start(in: suite) { change in
            recorder.handler(change)
            guard change.key == "k", case .string(let text)? = change.newValue, let number = Int(text) else { return }
            do {
                try suite.reload()
                _ = suite.storedValue(forKey: "k")
                try ledger.update { tx in
                    let seen = (tx.storedValue(forKey: "seen")).flatMap { if case .integer(let v) = $0 { v } else { nil } } ?? 0
                    try tx.set(seen + 1, forKey: "seen")
                }
                try suite.set("echo-\(number)", forKey: "echo")
            } catch {
                errors.withLock { $0.append("\(error)") }
            }
            usleep(7_000)
        }
        let other = try SuiteObservation.allKeys.start(in: bystander, onChange: bystanderRecorder.handler)
        for index in 0..<5 {
            try writeFromAnotherProcess("k", "\(index)", in: directory.url, suite: "busy")
            try writeFromAnotherProcess("k", "\(index)", in: directory.url, suite: "busy-bystander")
            #expect(bystanderRecorder.wait(for: "k", toBecome: .string("\(index)"), timeout: .seconds(10)))
        }
        #expect(recorder.wait(for: "echo", toBecome: "echo-4", timeout: .seconds(20)))
        #expect(errors.current.isEmpty, "\(errors.current)")
        let order = recorder.changes.map { "\($0.key)=\($0.newValue.map { "\($0)" } ?? "nil")" }
        let expected = (0..<5).flatMap { ["k=\(SuiteValue.string("\($0)"))", "echo=\(SuiteValue.string("echo-\($0)"))"] }
        #expect(order == expected, "\(order)")
        #expect(ledger.storedValue(forKey: "seen") == .integer(5))
        withExtendedLifetime([token, other]) {}
    }

    // MARK: 6. Mixed deliveries

    /// A `.watcherThread` observation and a default one on one suite, a `.watcherThread`
    /// one alone on another: the default callback blocks; the lone `.watcherThread` one
    /// keeps hearing, on the reading thread (`isReaderThread`); the shared suite's
    /// `.watcherThread` observer waits for the blocked callback, as it goes the default
    /// way; and no default callback ever sees `isReaderThread`.
    @Test func watcherThreadAndDefaultMixed() throws {
        let shared = try open("mixed-shared"), lone = try open("mixed-lone")
        let gate = BlockingObserver(), sharedFast = ChangeRecorder(), loneRecorder = ChangeRecorder()
        let loneOnReader = LockedBox<[String]>([]), defaultOnReader = LockedBox(false)
        let tokens = [
            try SuiteObservation.allKeys.start(in: shared) { change in
                if ChangeWatcher.shared.isReaderThread { defaultOnReader.withLock { $0 = true } }
                gate.handler(change)
            },
            try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: shared, onChange: sharedFast.handler),
            try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: lone) { change in
                let marked = ChangeWatcher.shared.isReaderThread
                loneOnReader.withLock { $0.append("\(currentThreadName()) \(marked)") }
                loneRecorder.handler(change)
            },
        ]
        defer { gate.open(8) }
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "mixed-shared")
        #expect(gate.entered.wait(timeout: .now() + 10) == .success)
        for index in 0..<3 {
            try writeFromAnotherProcess("k", "\(index)", in: directory.url, suite: "mixed-lone")
            #expect(loneRecorder.wait(for: "k", toBecome: .string("\(index)"), timeout: .seconds(10)))
        }
        // On its queue's thread when it goes the default way; on a reading thread, that
        // thread must know it reads.
        #expect(!loneOnReader.current.contains("suite-watcher false"), "a thread that reads is not marked as the reader: \(loneOnReader.current)")
        try writeFromAnotherProcess("k", "2", in: directory.url, suite: "mixed-shared")
        gate.open()
        #expect(sharedFast.wait(for: "k", toBecome: "2", timeout: .seconds(10)))
        #expect(sharedFast.changes.compactMap(\.newValue) == ["1", "2"])
        #expect(!defaultOnReader.current)
        withExtendedLifetime(tokens) {}
    }

    /// Events lost (a simulated queue overflow) while one suite's callback blocks on a
    /// thread that was reading: every suite catches up, the blocked suite's changes
    /// made meanwhile arrive after its callback returns, in order, once each.
    @Test func anOverflowWhileACallbackBlocks() throws {
        let blocked = try open("overflow-blocked"), other = try open("overflow-other")
        let gate = BlockingObserver(), recorder = ChangeRecorder()
        let tokens = [
            try SuiteObservation.allKeys.start(in: blocked, onChange: gate.handler),
            try SuiteObservation.allKeys.start(in: other, onChange: recorder.handler),
        ]
        defer { gate.open(4) }
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "overflow-blocked")
        #expect(gate.entered.wait(timeout: .now() + 10) == .success)
        try writeFromAnotherProcess("k", "2", in: directory.url, suite: "overflow-blocked")
        SuiteFaultInjection.simulateWatcherOverflow()
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "overflow-other")
        #expect(recorder.wait(for: "k", toBecome: "1", timeout: .seconds(10)), "the other suite missed its change after the overflow")
        try writeFromAnotherProcess("k", "3", in: directory.url, suite: "overflow-blocked")
        gate.open()
        #expect(gate.recorder.wait(for: "k", toBecome: "3", timeout: .seconds(10)))
        #expect(gate.recorder.changes.compactMap(\.newValue) == ["1", "2", "3"], "\(gate.recorder.changes.compactMap(\.newValue))")
        withExtendedLifetime(tokens) {}
    }

    // MARK: 7. A forked child

    /// fork() from another thread (the worker's main thread) while the parent's reader
    /// is paused in a blocked callback: the child has none of the parent's threads, and its queue-taking
    /// reader is its own: it observes two suites, one with a blocking callback, and
    /// hears the other while that one blocks.
    @Test func aForkWhileTheReaderIsPaused() throws {
        let worker = try forkedScenario("fork-while-paused", suite: "fork-parent")
        defer { worker.kill() }
        worker.expectLine(startingWith: "observing")
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "fork-parent")
        worker.expectLine(startingWith: "blocked")
        #expect(waitForChild(worker, "child observing"), "the child did not start observing")
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "fork-child-slow")
        #expect(waitForChild(worker, "child blocked"), "the child's slow callback was not called")
        try writeFromAnotherProcess("k", "seen", in: directory.url, suite: "fork-child-seen")
        try writeFromAnotherProcess("k", "from-child-view", in: directory.url, suite: "fork-parent")
        let status = childStatus(worker)
        #expect(status == 0, "the child: \(status.map(String.init) ?? "killed or hung")")
        // The parent goes on.
        worker.expectLine(startingWith: "parent heard from-child-view")
        worker.expectSuccess()
    }

    /// A forked child that closed what it inherited (a "close every descriptor" loop,
    /// as a daemonizing child does) and has given the numbers to files of its own, then
    /// observes a suite: the change watcher's start-over in the child closes the
    /// parent's timer by number (`ReaderRole.close`, ChangeWatcher.swift `withState`),
    /// which is now the child's file. (FileChangeCounter leaves the parent's instance
    /// open for exactly this reason; the inotify number's `Inotify.close` beside it is
    /// older, and does the same.) Told by the file's identity: the number closed may
    /// be given at once to the child's own new timer.
    @Test func aForkedChildsOwnFileAtTheParentsTimerNumber() throws {
        let worker = try forkedScenario("timer-number", suite: "timer-parent")
        defer { worker.kill() }
        worker.expectLine(startingWith: "observing")
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "timer-parent")
        worker.expectLine(startingWith: "parent heard 1", within: .seconds(20))
        let status = childStatus(worker)
        worker.expectSuccess()
        #expect(status == 0, status == 20 ? "the library closed a file the child opened at the parent's timer number"
                                          : "the child: \(status.map(String.init) ?? "killed or hung")")
    }

    // MARK: 8. No thread or no timer to be had

    /// In a forked child where no thread can be started any more (every new thread's
    /// stack made too large to map; the suites' queues made before, by a first change
    /// each, since an observation whose queue cannot start its thread is refused:
    /// `anObservationWithNoThreadToStartThrows`): a slow callback cannot hand the
    /// reading over, so the queue is given
    /// back and its own thread runs it; other suites still hear.
    @Test func noStandbyThreadCanBeStarted() throws {
        let worker = try forkedScenario("no-standby-thread", suite: "nothread-slow")
        defer { worker.kill() }
        let status = childStatus(worker)
        worker.expectSuccess()
        #expect(status == 0, "the child: \(status.map(String.init) ?? "killed or hung")")
    }

    /// In a forked child where no thread can be started: an observation, of a suite or
    /// of a directory, cannot have its queue's thread or the change watcher's, and
    /// says so with a typed error instead of stopping the process (it was fatal: the
    /// helper of this round hit it). Reads and writes go on, and nothing is watched.
    @Test func anObservationWithNoThreadToStartThrows() throws {
        let worker = try forkedScenario("no-thread-at-all", suite: "nothread-at-all")
        defer { worker.kill() }
        let status = childStatus(worker)
        worker.expectSuccess()
        #expect(status == 0, "the child: \(status.map(String.init) ?? "killed (a fatal error) or hung")")
    }

    /// In a forked child whose descriptors run out right after the inotify instance
    /// (so that no timer can be made, and the reader takes no queue): changes still
    /// arrive, on the queue's own thread.
    @Test func noTimerCanBeMade() throws {
        let worker = try forkedScenario("no-timer", suite: "notimer")
        defer { worker.kill() }
        let status = childStatus(worker)
        worker.expectSuccess()
        #expect(status == 0, "the child: \(status.map(String.init) ?? "killed or hung")")
    }
}
