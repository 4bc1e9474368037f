import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Testing) @testable import SuiteDefaults

/// The default delivery (`.suiteQueue`) runs on the thread that read the change, which
/// pauses its reading meanwhile (`ReaderRole`): a callback that runs longer than
/// `ReaderRole.longestPause` has its reading taken over by the thread standing by, so
/// that it holds back no other suite's observers for long. Every change here comes
/// from another process, so it reaches this one only through the reading.
@Suite("A slow callback hands the reading over", .serialized)
struct ReaderHandOverTests {
    let directory = TemporaryDirectory()

    func open(_ name: String) throws -> Suite {
        try Suite(named: name, directory: directory.url)
    }

    @Test func anotherSuitesChangesArriveWhileACallbackBlocks() throws {
        let slow = try open("slow"), other = try open("other")
        let blocked = BlockingObserver(), recorder = ChangeRecorder()
        let tokens = [
            try SuiteObservation.allKeys.start(in: slow, onChange: blocked.handler),
            try SuiteObservation.allKeys.start(in: other, onChange: recorder.handler),
        ]
        defer { blocked.open() }
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "slow")
        #expect(blocked.entered.wait(timeout: .now() + 10) == .success)
        // Without the hand-over, nothing reads until the callback returns.
        for index in 0..<3 {
            try writeFromAnotherProcess("k", "\(index)", in: directory.url, suite: "other")
            #expect(recorder.wait(for: "k", toBecome: .string("\(index)"), timeout: .seconds(10)),
                    "another suite's change did not arrive while a callback blocked")
        }
        // The blocked suite's own later changes wait for its callback, then arrive in order.
        try writeFromAnotherProcess("k", "2", in: directory.url, suite: "slow")
        #expect(blocked.recorder.changes.count == 1)
        blocked.open()
        #expect(blocked.recorder.wait(for: "k", toBecome: .string("2")))
        #expect(blocked.recorder.changes.compactMap(\.newValue) == [.string("1"), .string("2")])
        withExtendedLifetime(tokens) {}
    }

    /// Two callbacks blocked at once, each on the thread that read its change: the
    /// thread that took the reading over from the first hands it over again, to a
    /// thread it started to stand by.
    @Test func twoBlockedCallbacksStillLeaveTheReadingToAThird() throws {
        let first = try open("first"), second = try open("second"), third = try open("third")
        let blockedFirst = BlockingObserver(), blockedSecond = BlockingObserver(), recorder = ChangeRecorder()
        let tokens = [
            try SuiteObservation.allKeys.start(in: first, onChange: blockedFirst.handler),
            try SuiteObservation.allKeys.start(in: second, onChange: blockedSecond.handler),
            try SuiteObservation.allKeys.start(in: third, onChange: recorder.handler),
        ]
        defer {
            blockedFirst.open()
            blockedSecond.open()
        }
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "first")
        #expect(blockedFirst.entered.wait(timeout: .now() + 10) == .success)
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "second")
        #expect(blockedSecond.entered.wait(timeout: .now() + 10) == .success)
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "third")
        #expect(recorder.wait(for: "k", toBecome: .string("1"), timeout: .seconds(10)),
                "a third suite's change did not arrive while two callbacks blocked")
        withExtendedLifetime(tokens) {}
    }

    /// Slow callbacks, again and again: the threads that ran them stand by or end,
    /// and the reading goes on. The process keeps a bounded number of threads. In a
    /// worker: this process's threads come and go with the other tests.
    @Test func slowCallbacksAgainAndAgainLeaveNoThreadsBehind() throws {
        let pause = ReaderRole.longestPause.wholeNanoseconds / 1_000_000 * 3
        let worker = try startWorker("observe-slow-and-other", in: directory, suite: "again",
                                     ["other": "bystander", "key": "k", "pause-ms": "\(pause)"])
        defer { worker.kill() }
        worker.expectLine(startingWith: "observing")
        // Both observed suites' queues made, and the reading started.
        worker.send("go\n")
        worker.expectLine(startingWith: "threads")
        for index in 0..<20 {
            try writeFromAnotherProcess("k", "\(index)", in: directory.url, suite: "again")
            try writeFromAnotherProcess("k", "\(index)", in: directory.url, suite: "bystander")
            worker.expectLine(startingWith: "slow \"\(index)\"")
            worker.expectLine(startingWith: "other \"\(index)\"")
        }
        worker.send("go\n")
        #expect(worker.waitForLines(timeout: .seconds(10)) { $0.filter { $0.hasPrefix("threads") }.count == 2 })
        let counts = worker.lines.filter { $0.hasPrefix("threads") }.compactMap { Int($0.dropFirst("threads ".count)) }
        // One reading, one standing by, and a thread or two of the runtime's; a thread
        // per slow callback would be twenty more.
        #expect(counts.count == 2 && counts[1] <= counts[0] + 3, "threads before and after: \(counts)")
        #expect(worker.lines.filter { $0.hasPrefix("slow") } == (0..<20).map { "slow \"\($0)\"" })
    }

    /// A process that observes one suite pauses its reading for that suite's callbacks
    /// with no timer: nobody else waits. A suite observed while such a callback blocks
    /// arms it then, and is heard within the pause's bound. In a worker process, whose
    /// change watcher watches only what the worker observes (this process's other
    /// tests watch suites of their own).
    @Test func aSuiteObservedWhileTheOnlyOtherOnesCallbackBlocksIsHeard() throws {
        let worker = try startWorker("observe-then-another", in: directory, suite: "lone", ["other": "later", "key": "k"])
        defer { worker.kill() }
        worker.expectLine(startingWith: "observing")
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "lone")
        worker.expectLine(startingWith: "blocked")
        worker.expectLine(startingWith: "watching")
        try writeFromAnotherProcess("k", "heard", in: directory.url, suite: "later")
        #expect(worker.waitForLine(timeout: .seconds(10)) { $0.hasPrefix("heard") } == "heard \"heard\"",
                "a suite observed while the only other one's callback blocked was not heard; output: \(worker.lines.suffix(3))")
    }

    /// The reading's instance number given to another file (code of the process closed
    /// it: round eighteen): the reading and its thread standing by end, rather than read
    /// the end of file over and over, and stand by for good; the directory is watched
    /// again through a new instance, and later changes are heard. In a worker, whose
    /// only instance is the change watcher's.
    @Test func aReadingWhoseInstanceWasClobberedIsMadeAgain() throws {
        let worker = try startWorker("clobber-watcher-instance", in: directory, suite: "ends", ["key": "k"])
        defer { worker.kill() }
        worker.expectLine(startingWith: "observing")
        try writeFromAnotherProcess("k", "1", in: directory.url, suite: "ends")
        worker.expectLine(startingWith: "heard \"1\"")
        worker.send("go\n")
        // One reading, one standing by (started at the first change it delivered).
        #expect(worker.expectLine(startingWith: "watcher threads") == "watcher threads 2")
        worker.expectLine(startingWith: "clobbered")
        // Wakes the old reading, which then reads the empty file's end.
        try writeFromAnotherProcess("k", "2", in: directory.url, suite: "ends")
        try writeFromAnotherProcess("k", "3", in: directory.url, suite: "ends")
        #expect(worker.waitForLine(timeout: .seconds(10)) { $0 == "heard \"3\"" } != nil,
                "no change heard after the instance was clobbered; output: \(worker.lines.suffix(4))")
        try writeFromAnotherProcess("k", "4", in: directory.url, suite: "ends")
        #expect(worker.waitForLine(timeout: .seconds(10)) { $0 == "heard \"4\"" } != nil,
                "the new reading did not hear a later change; output: \(worker.lines.suffix(4))")
        // The new reading and its thread standing by; the old ones ended.
        worker.send("go\n")
        #expect(worker.expectLine(startingWith: "watcher threads left") == "watcher threads left 2",
                "old reading threads stayed")
        #expect(!worker.lines.contains { $0.hasPrefix("error") }, "\(worker.lines.filter { $0.hasPrefix("error") })")
    }
}
