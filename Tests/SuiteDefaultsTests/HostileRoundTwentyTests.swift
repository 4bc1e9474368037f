import Foundation
import Glibc
import Testing
import TestSupport
import ChildProcess
@_spi(Testing) @testable import SuiteDefaults

/// Hostile round twenty: a process that observes one suite pauses its reading for that
/// suite's callbacks without a timer (8def9f3); whatever starts being watched while
/// such a pause lasts must arm it (`othersWatched`), so that it is held back for at
/// most `ReaderRole.longestPause`. Each scenario runs in a worker process (role
/// hostile20), whose change watcher watches only what the worker observes; every
/// change comes from another process, so it reaches the worker only through the
/// reading.
@Suite("Hostile round twenty: pauses without a timer", .serialized)
struct HostileRoundTwentyTests {
    let directory = TemporaryDirectory()

    /// Starts the worker on suite "lone" and blocks its callback with a change.
    func blockedWorker(_ scenario: String, _ options: [String: String] = [:], in dir: TemporaryDirectory? = nil) throws -> ChildProcess {
        let worker = try startWorker("hostile20", in: dir ?? directory, suite: "lone",
                                     options.merging(["scenario": scenario, "other": "later"]) { a, _ in a })
        worker.expectLine(startingWith: "observing")
        try writeFromAnotherProcess("k", "1", in: (dir ?? directory).url, suite: "lone")
        worker.expectLine(startingWith: "blocked")
        return worker
    }

    /// A line among all of the worker's so far (an observation started inside the
    /// callback may say "watching" before the main thread says "blocked").
    @discardableResult
    func expectAnyLine(_ worker: ChildProcess, startingWith prefix: String, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        let found = worker.waitForLines(timeout: .seconds(30)) { $0.contains { $0.hasPrefix(prefix) } }
        #expect(found, "no line \(prefix); output: \(worker.lines.suffix(5)), errors: \(worker.standardError)", sourceLocation: sourceLocation)
        return worker.lines.first { $0.hasPrefix(prefix) }
    }

    func expectHeard(_ worker: ChildProcess, _ prefix: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let line = worker.waitForLine(timeout: .seconds(10)) { $0.hasPrefix(prefix) }
        #expect(line != nil, "not heard while the only other suite's callback blocked: \(prefix); output: \(worker.lines.suffix(4))",
                sourceLocation: sourceLocation)
    }

    /// The observation is started on the paused reader thread itself, from the
    /// blocked callback.
    @Test func anObservationStartedInsideTheBlockedCallbackIsHeard() throws {
        let worker = try blockedWorker("inside")
        defer { worker.kill() }
        expectAnyLine(worker, startingWith: "watching")
        try writeFromAnotherProcess("k", "v", in: directory.url, suite: "later")
        expectHeard(worker, "heard other later k \"v\"")
    }

    /// The same, the new observation delivered on the watcher's thread.
    @Test func aWatcherThreadObservationStartedInsideTheBlockedCallbackIsHeard() throws {
        let worker = try blockedWorker("inside-watcher")
        defer { worker.kill() }
        expectAnyLine(worker, startingWith: "watching")
        for index in 0..<3 {
            try writeFromAnotherProcess("k", "v\(index)", in: directory.url, suite: "later")
            expectHeard(worker, "heard other later k \"v\(index)\"")
        }
    }

    /// A directory's listener (`Suite.observeSuites`) started from another thread while
    /// the callback blocks.
    @Test func aDirectoryListenerStartedWhileTheCallbackBlocksIsHeard() throws {
        let other = TemporaryDirectory()
        let worker = try blockedWorker("listen", ["other-dir": other.path])
        defer { worker.kill() }
        expectAnyLine(worker, startingWith: "watching")
        try writeFromAnotherProcess("k", "new", in: other.url, suite: "fresh")
        expectHeard(worker, "heard dir fresh k \"new\"")
        try writeFromAnotherProcess("k", "again", in: other.url, suite: "fresh")
        expectHeard(worker, "heard dir fresh k \"again\"")
    }

    /// A directory's listener started on the paused reader thread, from the callback.
    @Test func aDirectoryListenerStartedInsideTheBlockedCallbackIsHeard() throws {
        let other = TemporaryDirectory()
        let worker = try blockedWorker("listen-inside", ["other-dir": other.path])
        defer { worker.kill() }
        expectAnyLine(worker, startingWith: "watching")
        try writeFromAnotherProcess("k", "new", in: other.url, suite: "fresh")
        expectHeard(worker, "heard dir fresh k \"new\"")
    }

    /// The blocked suite's directory is removed and made again; the suite opened there
    /// (another store, another hub) and observed is heard.
    @Test func theSameSuiteThroughASecondStoreIsHeard() throws {
        let worker = try blockedWorker("second-store")
        defer { worker.kill() }
        try FileManager.default.removeItem(at: directory.url)
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: false)
        worker.send("go\n")
        expectAnyLine(worker, startingWith: "watching")
        try writeFromAnotherProcess("k", "second", in: directory.url, suite: "lone")
        expectHeard(worker, "heard second lone k \"second\"")
    }

    /// The only other suite's observation is cancelled, and another one started,
    /// while the first callback still blocks.
    @Test func anotherSuiteObservedAfterTheOnlyOtherWasCancelledIsHeard() throws {
        let worker = try blockedWorker("cancel-restart")
        defer { worker.kill() }
        expectAnyLine(worker, startingWith: "watching a")
        try writeFromAnotherProcess("k", "a", in: directory.url, suite: "later-a")
        expectHeard(worker, "heard a later-a k \"a\"")
        worker.send("go\n")
        expectAnyLine(worker, startingWith: "watching b")
        try writeFromAnotherProcess("k", "b", in: directory.url, suite: "later-b")
        expectHeard(worker, "heard b later-b k \"b\"")
    }

    /// Six threads observe and cancel suites while the callback blocks; then a suite
    /// observed is heard, and the threads stay bounded.
    @Test func observationsChurnedFromManyThreadsLeaveTheReadingAlive() throws {
        let worker = try blockedWorker("churn")
        defer { worker.kill() }
        let line = expectAnyLine(worker, startingWith: "watching threads")
        try writeFromAnotherProcess("k", "after", in: directory.url, suite: "later")
        expectHeard(worker, "heard other later k \"after\"")
        let threads = line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? -1
        // One queue thread per observed suite (9 of churn, the blocked one, the other),
        // the worker's own, and the watcher's few.
        #expect(threads > 0 && threads < 40, "threads: \(threads)")
    }

    /// The blocked suite's directory is removed while its callback blocks; a suite of
    /// another directory observed then is heard.
    @Test func aSuiteObservedAfterTheBlockedOnesDirectoryWasRemovedIsHeard() throws {
        let first = TemporaryDirectory(), other = TemporaryDirectory()
        let worker = try blockedWorker("lost", ["other-dir": other.path], in: first)
        defer { worker.kill() }
        try FileManager.default.removeItem(at: first.url)
        worker.send("go\n")
        expectAnyLine(worker, startingWith: "watching")
        try writeFromAnotherProcess("k", "there", in: other.url, suite: "later")
        expectHeard(worker, "heard other later k \"there\"")
        // The directory made again: the reading goes on (the blocked suite's move waits
        // for its queue, which blocks).
        try FileManager.default.createDirectory(at: first.url, withIntermediateDirectories: false)
        try writeFromAnotherProcess("k", "more", in: other.url, suite: "later")
        expectHeard(worker, "heard other later k \"more\"")
    }

    /// The worker forks while its reading is paused with no timer: the child (which
    /// starts its own watcher) and the parent both hear another suite.
    @Test func aChildForkedWhileTheReadingPausesWithoutATimerHearsAnotherSuite() throws {
        let worker = try blockedWorker("fork")
        defer { worker.kill() }
        expectAnyLine(worker, startingWith: "child watching")
        expectAnyLine(worker, startingWith: "watching")
        try writeFromAnotherProcess("k", "f", in: directory.url, suite: "later")
        expectAnyLine(worker, startingWith: "child heard later k \"f\"")
        expectAnyLine(worker, startingWith: "heard other later k \"f\"")
        expectAnyLine(worker, startingWith: "child exited 0")
    }

    /// The suite "lone" changes every millisecond or so from another process (paced-writer); each
    /// round the worker cancels the other suite and observes a new one (pauses in
    /// between have no timer), and the callback of "lone" blocks until that one was
    /// heard. A missed `othersWatched` leaves the callback stuck (8 s) and the round
    /// missed; the values of "lone" must come once each, in order.
    @Test func observationsStartedAsTheReaderPausesAreHeard() throws {
        let rounds = 150
        let worker = try startWorker("hostile20", in: directory, suite: "lone",
                                     ["scenario": "race", "other": "round", "count": "\(rounds)"])
        defer { worker.kill() }
        worker.expectLine(startingWith: "observing")
        let writer = try startWorker("paced-writer", in: directory, suite: "lone", ["key": "n"])
        defer { writer.kill() }
        writer.expectLine(startingWith: "writing")
        for round in 0..<rounds {
            guard worker.expectLine(startingWith: "watching \(round)", within: .seconds(30)) != nil else { break }
            try writeFromAnotherProcess("k", "x", in: directory.url, suite: "round-\(round)")
            let line = worker.waitForLine(timeout: .seconds(20)) { $0 == "round \(round)" || $0 == "missed \(round)" }
            #expect(line == "round \(round)", "round \(round): \(line ?? "nothing"); output: \(worker.lines.suffix(5))")
            if line != "round \(round)" { break }
        }
        worker.expectLine(startingWith: "done")
        _ = writer.kill()
        let bad = worker.lines.filter { $0.hasPrefix("stuck") || $0.hasPrefix("order") || $0.hasPrefix("missed") || $0.hasPrefix("diagnostic") }
        #expect(bad.isEmpty, "\(bad.prefix(5))")
    }
}
