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
/// another process, so it reaches this one only through the reading.
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

    /// What a forked child's `OpenDescriptors` calls need made first (see `ForkedChild.run`).
    static func warmUpOpenDescriptors() {
        _ = OpenDescriptors.inotifyInstances()
        _ = OpenDescriptors.leading(to: "anon_inode:[timerfd]")
    }

    /// A byte-for-byte copy with plain calls (safe in a forked child).
    static func copyFile(_ from: String, _ to: String) -> Bool {
        let source = Glibc.open(from, O_RDONLY)
        guard source >= 0 else { return false }
        defer { close(source) }
        let target = Glibc.open(to, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard target >= 0 else { return false }
        defer { close(target) }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(source, $0.baseAddress, 65536) }
            if count == 0 { return true }
            if count < 0 { return false }
            guard buffer.withUnsafeBytes({ write(target, $0.baseAddress, count) }) == count else { return false }
        }
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
        let dir = directory.url, data = path(name), backup = directory.file("backup-\(mode)").path
        let copy = directory.file("copy-\(mode)").path, empty = directory.file("empty-\(mode)").path
        let status = ForkedChild.run(warmingUp: Self.warmUpOpenDescriptors) {
            let before = Set(OpenDescriptors.inotifyInstances().map(\.number))
            guard let suite = try? Suite(named: name, directory: dir),
                  (try? suite.set(1, forKey: "first")) != nil, (try? suite.set(2, forKey: "second")) != nil
            else { return 10 }
            guard suite.store.skipsFileStatusWhileUnchanged else { return 11 }
            guard let target = OpenDescriptors.inotifyInstances().first(where: { !before.contains($0.number) && $0.watches > 0 })?.number
            else { return 12 }
            let other = mode == "devnull" ? Glibc.open("/dev/null", O_RDONLY) : Glibc.open(empty, O_RDWR | O_CREAT | O_TRUNC, 0o600)
            guard other >= 0, dup2(other, target) == target else { return 13 }
            close(other)
            guard link(data, backup) == 0, Self.copyFile(data, copy), rename(copy, data) == 0 else { return 14 }
            guard (try? suite.set(3, forKey: "third")) != nil else { return 15 }
            return 0
        }
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

    /// fork() from another thread while the parent's reader is paused in a blocked
    /// callback: the child has none of the parent's threads, and its queue-taking
    /// reader is its own: it observes two suites, one with a blocking callback, and
    /// hears the other while that one blocks.
    @Test func aForkWhileTheReaderIsPaused() throws {
        let parentSuite = try open("fork-parent")
        let gate = BlockingObserver()
        let token = try SuiteObservation.allKeys.start(in: parentSuite, onChange: gate.handler)
        defer { gate.open(4) }
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "fork-parent")
        #expect(gate.entered.wait(timeout: .now() + 10) == .success)
        var ready: [Int32] = [-1, -1], go: [Int32] = [-1, -1]
        #expect(pipe(&ready) == 0 && pipe(&go) == 0)
        let dir = directory.url
        let pid = fork()
        if pid == 0 {
            close(ready[0]); close(go[1])
            let status: Int32 = {
                guard let slow = try? Suite(named: "fork-child-slow", directory: dir),
                      let seen = try? Suite(named: "fork-child-seen", directory: dir),
                      let parentAgain = try? Suite(named: "fork-parent", directory: dir)
                else { return 10 }
                let childGate = BlockingObserver(), recorder = ChangeRecorder(), parentRecorder = ChangeRecorder()
                guard let one = try? SuiteObservation.allKeys.start(in: slow, onChange: childGate.handler),
                      let two = try? SuiteObservation.allKeys.start(in: seen, onChange: recorder.handler),
                      let three = try? SuiteObservation.allKeys.start(in: parentAgain, onChange: parentRecorder.handler)
                else { return 11 }
                defer { childGate.open(4); withExtendedLifetime([one, two, three]) {} }
                var byte: UInt8 = 1
                _ = write(ready[1], &byte, 1)
                guard childGate.entered.wait(timeout: .now() + 20) == .success else { return 12 }
                _ = write(ready[1], &byte, 1)
                guard recorder.wait(for: "k", toBecome: "seen", timeout: .seconds(20)) else { return 13 }
                guard parentRecorder.wait(for: "k", toBecome: "from-child-view", timeout: .seconds(20)) else { return 14 }
                return 0
            }()
            _exit(status)
        }
        close(ready[1]); close(go[0]); close(go[1])
        defer { close(ready[0]) }
        #expect(pid > 0)
        var byte: UInt8 = 0
        #expect(Glibc.read(ready[0], &byte, 1) == 1, "the child did not start observing")
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "fork-child-slow")
        #expect(Glibc.read(ready[0], &byte, 1) == 1, "the child's slow callback was not called")
        try writeFromAnotherProcess("k", "seen", in: directory.url, suite: "fork-child-seen")
        try writeFromAnotherProcess("k", "from-child-view", in: directory.url, suite: "fork-parent")
        let status = ForkedChild.reap(pid, timeout: .seconds(60))
        #expect(status == 0, "the child: \(status.map(String.init) ?? "killed or hung")")
        // The parent goes on.
        gate.open()
        #expect(gate.recorder.wait(for: "k", toBecome: "from-child-view", timeout: .seconds(10)))
        withExtendedLifetime(token) {}
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
        let parentSuite = try open("timer-parent"), recorder = ChangeRecorder()
        let token = try SuiteObservation.allKeys.start(in: parentSuite, onChange: recorder.handler)
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "timer-parent")
        #expect(recorder.wait(for: "k", toBecome: "1", timeout: .seconds(10)))
        let dir = directory.url, file = directory.file("child-own-file").path
        let status = ForkedChild.run(warmingUp: Self.warmUpOpenDescriptors) {
            let timers = OpenDescriptors.leading(to: "anon_inode:[timerfd]")
            guard !timers.isEmpty else { return 10 }
            // The child closes what it inherited and opens files of its own at those numbers.
            for number in timers {
                close(number)
                let own = Glibc.open(file, O_RDWR | O_CREAT | O_APPEND, 0o600)
                guard own >= 0 else { return 11 }
                if own != number {
                    guard dup2(own, number) == number else { return 12 }
                    close(own)
                }
            }
            guard timers.allSatisfy({ fcntl($0, F_GETFD) >= 0 }) else { return 14 }
            guard let suite = try? Suite(named: "timer-child", directory: dir),
                  let child = try? SuiteObservation.allKeys.start(in: suite, onChange: { _ in }) else { return 13 }
            defer { withExtendedLifetime(child) {} }
            // Still the child's file (a number closed may have been given to the new timer).
            var own = stat()
            guard stat(file, &own) == 0 else { return 15 }
            let closed = timers.filter { number in
                var status = stat()
                return fstat(number, &status) != 0 || status.st_ino != own.st_ino || status.st_dev != own.st_dev
            }
            return closed.isEmpty ? 0 : 20
        }
        #expect(status == 0, status == 20 ? "the library closed a file the child opened at the parent's timer number"
                                          : "the child: \(status.map(String.init) ?? "killed or hung")")
        withExtendedLifetime(token) {}
    }

    // MARK: 8. No thread or no timer to be had

    /// In a forked child where no thread can be started any more (every new thread's
    /// stack made too large to map; the suites' queues made before, by a first change
    /// each, since an observation whose queue cannot start its thread is refused:
    /// `anObservationWithNoThreadToStartThrows`): a slow callback cannot hand the
    /// reading over, so the queue is given
    /// back and its own thread runs it; other suites still hear.
    @Test func noStandbyThreadCanBeStarted() throws {
        let dir = directory.url
        _ = Self.workerPath
        let status = ForkedChild.run {
            guard let slow = try? Suite(named: "nothread-slow", directory: dir),
                  let seen = try? Suite(named: "nothread-seen", directory: dir) else { return 10 }
            let gate = DispatchSemaphore(value: 0), entered = DispatchSemaphore(value: 0)
            let slowRecorder = ChangeRecorder(), recorder = ChangeRecorder(), names = LockedBox<[String]>([])
            guard let one = try? SuiteObservation.allKeys.start(in: slow, onChange: { change in
                slowRecorder.handler(change)
                guard change.newValue == "block" else { return }
                names.withLock { $0.append(currentThreadName()) }
                entered.signal()
                _ = gate.wait(timeout: .now() + 60)
            }), let two = try? SuiteObservation.allKeys.start(in: seen, onChange: recorder.handler) else { return 11 }
            defer { gate.signal(); withExtendedLifetime([one, two]) {} }
            // Both queues made (and the thread standing by started) while threads can be.
            guard (try? Self.writeInWorker("nothread-slow", "k", "warm", dir)) == true,
                  (try? Self.writeInWorker("nothread-seen", "k", "warm", dir)) == true,
                  slowRecorder.wait(for: "k", toBecome: "warm", timeout: .seconds(20)),
                  recorder.wait(for: "k", toBecome: "warm", timeout: .seconds(20))
            else { return 12 }
            // Every later pthread_create fails.
            if let failed = Self.makeEveryNewThreadFail() { return failed }
            // Two slow changes: the first may be handed to the thread standing by
            // (started while threads could be), the second finds none to start.
            for round in 0..<2 {
                guard (try? Self.writeInWorker("nothread-slow", "k", "block", dir)) == true else { return 16 }
                guard entered.wait(timeout: .now() + 20) == .success else { return 17 }
                guard (try? Self.writeInWorker("nothread-seen", "k", "\(round)", dir)) == true else { return 18 }
                guard recorder.wait(for: "k", toBecome: .string("\(round)"), timeout: .seconds(20)) else { return 19 }
                gate.signal()
                guard (try? Self.writeInWorker("nothread-slow", "k", "after-\(round)", dir)) == true,
                      slowRecorder.wait(for: "k", toBecome: .string("after-\(round)"), timeout: .seconds(20))
                else { return 20 }
            }
            return 0
        }
        #expect(status == 0, "the child: \(status.map(String.init) ?? "killed or hung")")
    }

    /// In a forked child where no thread can be started: an observation, of a suite or
    /// of a directory, cannot have its queue's thread or the change watcher's, and
    /// says so with a typed error instead of stopping the process (it was fatal: the
    /// helper of this round hit it). Reads and writes go on, and nothing is watched.
    @Test func anObservationWithNoThreadToStartThrows() throws {
        let dir = directory.url
        let status = ForkedChild.run {
            guard let suite = try? Suite(named: "nothread-at-all", directory: dir) else { return 10 }
            if let failed = Self.makeEveryNewThreadFail() { return failed }
            do {
                _ = try SuiteObservation.allKeys.start(in: suite) { _ in }
                return 20
            } catch let error as SuiteError where error.code == .ioFailure {
            } catch {
                return 21
            }
            do {
                _ = try Suite.observeSuites(in: dir) { _ in }
                return 22
            } catch let error as SuiteError where error.code == .ioFailure {
            } catch {
                return 23
            }
            guard (try? suite.set("still", forKey: "k")) != nil, suite.string(forKey: "k") == "still" else { return 24 }
            return ChangeWatcher.shared.watchedDirectories.isEmpty ? 0 : 25
        }
        #expect(status == 0, "the child: \(status.map(String.init) ?? "killed (a fatal error) or hung")")
    }

    /// In a forked child: makes every later `pthread_create` fail (each new thread's
    /// default stack too large to map; RLIMIT_NPROC does not bind root). Nil when it
    /// does, else the child's exit status saying which step did not work.
    static func makeEveryNewThreadFail() -> Int32? {
        typealias SetDefault = @convention(c) (UnsafePointer<pthread_attr_t>) -> CInt
        guard let symbol = dlsym(nil, "pthread_setattr_default_np") else { return 13 }
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setstacksize(&attributes, 1 << 46)
        guard unsafeBitCast(symbol, to: SetDefault.self)(&attributes) == 0 else { return 14 }
        var probe = pthread_t()
        return pthread_create(&probe, nil, { _ in nil }, nil) != 0 ? nil : 15
    }

    /// A write from another process, made with fork and exec (no thread needed).
    static let workerPath = Products.path("suite-test-worker")

    static func writeInWorker(_ suite: String, _ key: String, _ value: String, _ dir: URL) throws -> Bool {
        let arguments = [workerPath, "try-set", "--dir", dir.path, "--suite", suite, "--key", key, "--value", value]
        let pid = fork()
        if pid == 0 {
            let devnull = Glibc.open("/dev/null", O_RDWR)
            dup2(devnull, 0); dup2(devnull, 1)
            var argv = arguments.map { strdup($0) } + [nil]
            execv(arguments[0], &argv)
            _exit(127)
        }
        return ForkedChild.reap(pid, timeout: .seconds(30)) == 0
    }

    /// In a forked child whose descriptors run out right after the inotify instance
    /// (so that no timer can be made, and the reader takes no queue): changes still
    /// arrive, on the queue's own thread.
    @Test func noTimerCanBeMade() throws {
        let dir = directory.url
        _ = Self.workerPath
        let status = ForkedChild.run(warmingUp: Self.warmUpOpenDescriptors) {
            guard let suite = try? Suite(named: "notimer", directory: dir) else { return 10 }
            _ = suite.storedValue(forKey: "k")
            // The parent's instance and timer, inherited, are closed now, not at the watch.
            ChangeWatcher.shared.forgetStateInheritedByFork()
            let recorder = ChangeRecorder(), names = LockedBox<[String]>([])
            var saved = rlimit()
            getrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved)
            let lowest = dup(0)
            guard lowest >= 0 else { return 11 }
            close(lowest)
            let before = OpenDescriptors.inotifyInstances().count
            var bound = rlimit(rlim_cur: rlim_t(lowest + 1), rlim_max: saved.rlim_max)
            guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &bound) == 0 else { return 12 }
            let token = try? SuiteObservation.allKeys.start(in: suite) { change in
                names.withLock { $0.append(currentThreadName()) }
                recorder.handler(change)
            }
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved)
            guard let token else { return 13 }
            defer { withExtendedLifetime(token) {} }
            guard OpenDescriptors.inotifyInstances().count == before + 1 else { return 14 }
            for index in 0..<3 {
                guard (try? Self.writeInWorker("notimer", "k", "\(index)", dir)) == true else { return 15 }
                guard recorder.wait(for: "k", toBecome: .string("\(index)"), timeout: .seconds(20)) else { return 16 }
            }
            guard names.current.allSatisfy({ $0 == "suite-observers" }) else { return 17 }
            return 0
        }
        #expect(status == 0, "the child: \(status.map(String.init) ?? "killed or hung")")
    }
}
