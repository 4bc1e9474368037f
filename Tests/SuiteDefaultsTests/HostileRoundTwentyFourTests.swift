import Foundation
import Glibc
import Testing
import TestSupport
import ChildProcess
@_spi(Testing) @testable import SuiteDefaults

/// Hostile round twenty-four: a suite's history files (the replaced data files that a
/// compaction keeps for processes that collect changes and lag) when two suites' data
/// files are exchanged by something outside the library. Real processes
/// (suite-test-worker) and real files in a `TemporaryDirectory`; every child killed in
/// a `defer` and waited with a deadline. What must hold: a suite's history name never
/// leads to another suite's file.
@Suite("Hostile round twenty-four: history files of exchanged suites", .serialized)
struct HostileRoundTwentyFourTests {
    typealias R21 = HostileRoundTwentyOneTests

    /// The history names of alpha in `directory` whose file carries another tag than
    /// alpha's, with that tag.
    static func foreignHistory(in directory: TemporaryDirectory) -> [String] {
        let alphaTag = DataFileHeader.suiteTag(ofDataFileNamed: "alpha.suite")
        return directory.names().filter { $0.hasPrefix("alpha.suite.h.") }.compactMap { name in
            let tag = R21.suiteTag(of: directory.file(name).path)
            return tag == alphaTag ? nil : "\(name) (tag \(tag))"
        }
    }

    /// Alpha's compaction, stopped (SIGSTOP) at `compactionNewFileWritten`: its new file
    /// written, the old one not yet linked as history; alpha's and beta's data files
    /// exchanged then; the compaction let go on (refused with `.foreignFile`, as round
    /// twenty-one's `aCompactionDoesNotReplaceAnotherSuitesFileGivenItsName` requires).
    /// What must hold: no history name of alpha leads to beta's file, and once the files
    /// are exchanged back each suite holds its own values. Fails when the history is
    /// linked by the data file's name (it then names whatever file the name leads to,
    /// here beta's, and a lagging collector of alpha's changes would read beta's
    /// records as alpha's).
    @Test func aCompactionKeepsOnlyItsOwnFileAsHistory() throws {
        let directory = TemporaryDirectory()
        try Suite(named: "alpha", directory: directory.url).set(1, forKey: "a")
        try Suite(named: "beta", directory: directory.url).set(2, forKey: "b")
        let worker = try startWorker("pause", at: directory.url, suite: "alpha",
                                     ["point": "compactionNewFileWritten", "compact": "yes", "key": "k", "value": "3", "resume": "yes"])
        defer { _ = worker.kill() }
        worker.expectLine(startingWith: "paused compactionNewFileWritten")
        #expect(R21.waitUntilStopped(worker))
        R21.exchangeDataFilesWhileStopped(worker, in: directory, refusing: "the compaction")
        #expect(Self.foreignHistory(in: directory).isEmpty, "\(R21.describeFiles(in: [directory.url]))")
        let alpha = try R21.dump("alpha", at: directory.url), beta = try R21.dump("beta", at: directory.url)
        #expect(alpha.values?["a"] == 1, "alpha: \(alpha)")
        #expect(try Suite(named: "alpha", directory: directory.url).string(forKey: "k") == "3")
        #expect(beta.values == ["b": 2], "beta: \(beta)")
    }
}
