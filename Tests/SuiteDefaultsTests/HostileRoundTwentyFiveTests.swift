import Foundation
import Glibc
import Testing
import TestSupport
import ChildProcess
@_spi(Testing) @testable import SuiteDefaults

/// Hostile round twenty-five: two suites' compactions at once, while something outside
/// the library exchanges the suites' data files (`renameat2(RENAME_EXCHANGE)`), each
/// exchange made while the compactions are stopped (SIGSTOP) at fault points of their
/// replacement of the data file. Real processes (suite-test-worker) and real files in a
/// `TemporaryDirectory`; every child killed in a `defer` and waited with a deadline.
/// Round twenty-one's `dataFilesExchangedBetweenTwoSuites` lost acknowledged commits
/// now and then (all of one suite's, in one run); these are its interleavings, made
/// one step at a time.
@Suite("Hostile round twenty-five: two compactions among exchanges", .serialized)
struct HostileRoundTwentyFiveTests {
    typealias R21 = HostileRoundTwentyOneTests

    /// Alpha's and beta's compactions, stopped at `compactionWritten` (their new files
    /// written, not yet in place); the data files exchanged; each let go on to its
    /// exchange of names, where it stops again (`replacementExchanged`) if it gets
    /// there; exchanged again; alpha let go on to its end; exchanged a third time; beta
    /// let go on to its end. What must hold: both compactions are refused with
    /// `.foreignFile`, and once each suite's file is back under its name (exchanged
    /// back, as a user would) each holds all it held. Fails (beta's file, its only copy
    /// under a name of its own, is removed) when a replacement does not check the
    /// suite's name before exchanging: each then exchanges with the other suite's file,
    /// and undoing the two exchanges among the others gives beta's temporary name, which
    /// is then removed, beta's own file.
    @Test func twoCompactionsAmongExchangesLeaveEachSuiteItsFile() throws {
        let directory = TemporaryDirectory()
        let (alpha, beta) = try Self.twoCompactionsStopped(in: directory, at: "compactionWritten")
        defer { _ = alpha.kill(); _ = beta.kill() }
        Self.exchange(in: directory)
        var alphaOutcome = Self.resume(alpha), betaOutcome = Self.resume(beta)
        Self.exchange(in: directory)
        if alphaOutcome.hasPrefix("paused") { alphaOutcome = Self.resume(alpha) }
        Self.exchange(in: directory)
        if betaOutcome.hasPrefix("paused") { betaOutcome = Self.resume(beta) }
        #expect([alphaOutcome, betaOutcome] == [Self.refused, Self.refused], "\(R21.describeFiles(in: [directory.url]))")

        Self.exchangeBackIfNeeded(in: directory)
        try Self.expectBothWhole(in: directory)
    }

    /// The same, with each compaction stopped after it found the suite's name leading
    /// to its own file (`replacementChecked`), so that both exchange with the other
    /// suite's file whatever they check before: the instant a check cannot close. What
    /// must hold: beta's own file, which the undoing of its exchange brings back under
    /// its temporary name, keeps a name (`beta.suite.damaged-…`, which the refusal's
    /// message names), and put back under beta's name it holds all beta held. Fails (the file
    /// has no name left) when the temporary name is removed with it.
    @Test func aSuitesOwnFileUndoneOffItsNameIsKeptAside() throws {
        let directory = TemporaryDirectory()
        let betaPath = directory.file("beta.suite").path
        let (alpha, beta) = try Self.twoCompactionsStopped(in: directory, at: "replacementChecked")
        defer { _ = alpha.kill(); _ = beta.kill() }
        let betasFile = try Self.bothExchangedAndAlphaUndone(alpha, beta, in: directory)
        #expect(Self.resume(beta) == Self.refused)

        let kept = Self.names(of: betasFile, in: directory)
        #expect(kept.count == 1 && kept.allSatisfy { $0.hasPrefix("beta.suite.damaged-") },
                "beta's file: \(kept); \(R21.describeFiles(in: [directory.url]))")
        guard let aside = kept.first else { return }
        // Put back by hand: beta's name then leads to beta's own file again.
        #expect(rename(directory.file(aside).path, betaPath) == 0)
        let betaNow = try R21.dump("beta", at: directory.url)
        #expect(betaNow.values?["b"] == 2, "beta: \(betaNow)")
        #expect(try Suite(named: "beta", directory: directory.url).string(forKey: "k") == "4")
        let alphaNow = try R21.dump("alpha", at: directory.url)
        #expect(alphaNow.values?["a"] == 1, "alpha: \(alphaNow)")
        #expect(try Suite(named: "alpha", directory: directory.url).string(forKey: "k") == "3")
    }

    /// The same as the test before, with every name that keeping beta's file aside
    /// could take in the next 20 s already taken (a hostile review's attack). What must
    /// hold: beta's own file keeps its temporary name, and put back from there it holds
    /// all beta held. Fails (the file has no name left) when the temporary name is
    /// removed whether or not the file found a name aside.
    @Test func aSuitesOwnFileWithNoNameFreeAsideKeepsItsTemporaryName() throws {
        let directory = TemporaryDirectory()
        let betaPath = directory.file("beta.suite").path
        let (alpha, beta) = try Self.twoCompactionsStopped(in: directory, at: "replacementChecked")
        defer { _ = alpha.kill(); _ = beta.kill() }
        let betasFile = try Self.bothExchangedAndAlphaUndone(alpha, beta, in: directory)
        let now = Int(time(nil))
        for second in (now - 1)...(now + 20) {
            for attempt in 1...1000 {
                let name = "beta.suite.damaged-\(SuiteFiles.stamp(second))-\(beta.pid)-\(attempt)"
                close(open(directory.file(name).path, O_CREAT | O_EXCL | O_WRONLY, 0o600))
            }
        }
        #expect(Self.resume(beta) == Self.refused)

        let kept = Self.names(of: betasFile, in: directory)
        #expect(kept.count == 1 && kept.allSatisfy { $0.hasPrefix("beta.suite.tmp.") }, "beta's file: \(kept)")
        guard let temporary = kept.first else { return }
        #expect(rename(directory.file(temporary).path, betaPath) == 0)
        let betaNow = try R21.dump("beta", at: directory.url)
        #expect(betaNow.values?["b"] == 2, "beta: \(betaNow)")
        #expect(try Suite(named: "beta", directory: directory.url).string(forKey: "k") == "4")
    }

    /// Alpha's compaction, keeping no history, stopped at `replacementChecked`; beta's
    /// data file renamed over the compaction's temporary name (the instant that a check
    /// before the exchange cannot close: Design.md, "Limitations"); the compaction let
    /// go on. What must hold: it is refused with `.foreignFile`; alpha's file keeps a
    /// name (`alpha.suite.damaged-…`), and put back under alpha's name (beta's under
    /// beta's) each suite holds all it held. Fails (alpha's only file removed, its new
    /// file having lost its only name to the rename: both acknowledged values gone)
    /// when the exchange is taken as done because the temporary name led to alpha's
    /// file (a hostile review's attack).
    @Test func anotherFileRenamedOverTheTemporaryNameAfterTheCheckLeavesTheSuiteItsFile() throws {
        let directory = TemporaryDirectory()
        let alphaPath = directory.file("alpha.suite").path, betaPath = directory.file("beta.suite").path
        try Suite(named: "alpha", directory: directory.url).set(1, forKey: "a")
        try Suite(named: "beta", directory: directory.url).set(2, forKey: "b")
        let worker = try startWorker("pause", at: directory.url, suite: "alpha",
                                     ["point": "replacementChecked", "compact": "yes", "key": "k", "value": "3", "resume": "yes",
                                      "history-bytes": "0"])
        defer { _ = worker.kill() }
        worker.expectLine(startingWith: "paused replacementChecked")
        #expect(R21.waitUntilStopped(worker))
        var status = stat()
        try #require(lstat(alphaPath, &status) == 0)
        let alphasFile = status.st_ino
        let temporary = try #require(HostileRoundTwentyThreeTests.temporaryNames(in: directory).first, "\(directory.names())")
        #expect(rename(betaPath, directory.file(temporary).path) == 0)
        #expect(Self.resume(worker) == Self.refused)

        let kept = Self.names(of: alphasFile, in: directory)
        #expect(kept.count == 1 && kept.allSatisfy { $0.hasPrefix("alpha.suite.damaged-") },
                "alpha's file: \(kept); \(R21.describeFiles(in: [directory.url]))")
        guard let aside = kept.first else { return }
        #expect(rename(alphaPath, betaPath) == 0 && rename(directory.file(aside).path, alphaPath) == 0)
        let alphaNow = try R21.dump("alpha", at: directory.url), betaNow = try R21.dump("beta", at: directory.url)
        #expect(alphaNow.values?["a"] == 1, "alpha: \(alphaNow)")
        #expect(try Suite(named: "alpha", directory: directory.url).string(forKey: "k") == "3")
        #expect(betaNow.values == ["b": 2], "beta: \(betaNow)")
    }

    // MARK: Helpers

    /// With `alpha` and `beta` stopped at `replacementChecked`: the data files exchanged,
    /// each let go on to its exchange of names, exchanged again, alpha let go on to its
    /// end (refused), and exchanged a third time; beta stays stopped before its check.
    /// Returns the inode of beta's own file.
    static func bothExchangedAndAlphaUndone(_ alpha: ChildProcess, _ beta: ChildProcess, in directory: TemporaryDirectory,
                                            sourceLocation: SourceLocation = #_sourceLocation) throws -> ino_t {
        var status = stat()
        try #require(lstat(directory.file("beta.suite").path, &status) == 0, sourceLocation: sourceLocation)
        exchange(in: directory, sourceLocation: sourceLocation)
        #expect(resume(alpha) == "paused replacementExchanged", sourceLocation: sourceLocation)
        #expect(resume(beta) == "paused replacementExchanged", sourceLocation: sourceLocation)
        exchange(in: directory, sourceLocation: sourceLocation)
        #expect(resume(alpha) == refused, sourceLocation: sourceLocation)
        exchange(in: directory, sourceLocation: sourceLocation)
        return status.st_ino
    }

    static let refused = "error \(SuiteError.Code.foreignFile.rawValue) errno 0"

    /// Suites alpha (a = 1) and beta (b = 2), then a worker for each that sets k ("3",
    /// "4") and compacts, stopping (SIGSTOP) at each of `points`, "first,…", and stopped
    /// at the first.
    static func twoCompactionsStopped(in directory: TemporaryDirectory, at first: String,
                                      sourceLocation: SourceLocation = #_sourceLocation) throws -> (ChildProcess, ChildProcess) {
        try Suite(named: "alpha", directory: directory.url).set(1, forKey: "a")
        try Suite(named: "beta", directory: directory.url).set(2, forKey: "b")
        var workers: [ChildProcess] = []
        for (suite, value) in [("alpha", "3"), ("beta", "4")] {
            let worker = try startWorker("pause", at: directory.url, suite: suite,
                                         ["point": "\(first),replacementExchanged", "compact": "yes", "key": "k", "value": value,
                                          "resume": "yes"])
            workers.append(worker)
            worker.expectLine(startingWith: "paused \(first)", sourceLocation: sourceLocation)
            #expect(R21.waitUntilStopped(worker), sourceLocation: sourceLocation)
        }
        return (workers[0], workers[1])
    }

    /// Lets `worker`, stopped at a fault point, go on to its next point or to its end,
    /// and returns what it said then: "paused POINT" (stopped again), or how its
    /// compaction ended (it has exited).
    static func resume(_ worker: ChildProcess, sourceLocation: SourceLocation = #_sourceLocation) -> String {
        worker.signal(SIGCONT)
        let line = worker.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("paused ") || $0.hasPrefix("error") || $0 == "finished" }
        if line?.hasPrefix("paused ") == true {
            #expect(R21.waitUntilStopped(worker), sourceLocation: sourceLocation)
        } else {
            #expect(worker.wait(timeout: .seconds(60)) == .exited(0), sourceLocation: sourceLocation)
        }
        return line ?? "nothing (\(worker.lines.suffix(3)))"
    }

    static func exchange(in directory: TemporaryDirectory, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(R21.exchange(directory.file("alpha.suite").path, directory.file("beta.suite").path), sourceLocation: sourceLocation)
    }

    /// Exchanges the data files back when alpha's name leads to beta's file.
    static func exchangeBackIfNeeded(in directory: TemporaryDirectory) {
        if R21.suiteTag(of: directory.file("alpha.suite").path) == DataFileHeader.suiteTag(ofDataFileNamed: "beta.suite") {
            exchange(in: directory)
        }
    }

    /// The names in `directory` that lead to the file `inode`.
    static func names(of inode: ino_t, in directory: TemporaryDirectory) -> [String] {
        directory.names().filter { name in
            var status = stat()
            return lstat(directory.file(name).path, &status) == 0 && status.st_ino == inode
        }
    }

    /// Alpha holds a = 1 and k = "3", beta b = 2 and k = "4", read by new processes.
    static func expectBothWhole(in directory: TemporaryDirectory, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let files = R21.describeFiles(in: [directory.url])
        let alpha = try R21.dump("alpha", at: directory.url), beta = try R21.dump("beta", at: directory.url)
        #expect(alpha.values?["a"] == 1, "alpha: \(alpha); \(files)", sourceLocation: sourceLocation)
        #expect(beta.values?["b"] == 2, "beta: \(beta); \(files)", sourceLocation: sourceLocation)
        #expect(try Suite(named: "alpha", directory: directory.url).string(forKey: "k") == "3", sourceLocation: sourceLocation)
        #expect(try Suite(named: "beta", directory: directory.url).string(forKey: "k") == "4", sourceLocation: sourceLocation)
    }
}
