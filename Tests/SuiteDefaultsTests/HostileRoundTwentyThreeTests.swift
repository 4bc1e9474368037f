import Foundation
import Glibc
import Testing
import TestSupport
import ChildProcess
@_spi(Testing) @testable import SuiteDefaults

/// Hostile round twenty-three: attacks on a repair that puts its new file in place as a
/// compaction does (d1d7682: the damaged file kept aside, the temporary name exchanged
/// with `NAME.suite`, what comes out checked), stopped at the fault point
/// `repairWritten`; and on `StoreRegistry`, which prunes the leases of closed suites
/// only now and then (67c3abc). Real processes (suite-test-worker) and real files in a
/// `TemporaryDirectory`; every child killed in a `defer` and waited with a deadline.
/// What must hold: bad input gets a typed `SuiteError` and changes nothing; nothing
/// stored is lost because of what another process does to the files (other than
/// deleting data outright); no crash, no hang.
@Suite("Hostile round twenty-three: the repair's exchange, and the store registry", .serialized)
struct HostileRoundTwentyThreeTests {
    typealias R21 = HostileRoundTwentyOneTests
    typealias R22 = HostileRoundTwentyTwoTests

    static let alphaTag = DataFileHeader.suiteTag(ofDataFileNamed: "alpha.suite")
    static let betaTag = DataFileHeader.suiteTag(ofDataFileNamed: "beta.suite")
    static let foreign = "error \(SuiteError.Code.foreignFile.rawValue) errno 0"

    /// Alpha (a = 1, x = a string, y = 8) and beta (b = 2); a worker that sets alpha's
    /// k = "3", started (`pause --wait`), then alpha's x record damaged and the shared
    /// header's magic zeroed, so that the worker's write begins with a repair; the
    /// worker is returned stopped (SIGSTOP) at `repairWritten`: its new file written
    /// under `alpha.suite.tmp.PID.HEX`, the damaged file linked aside as
    /// `alpha.suite.damaged-…`. SIGCONT lets it go on; it then says "finished" or
    /// "error CODE errno N".
    static func repairStopped(in directory: TemporaryDirectory, beta: Bool = true, options extra: [String: String] = [:],
                              sourceLocation: SourceLocation = #_sourceLocation) throws -> ChildProcess {
        let alphaSuite = try Suite(named: "alpha", directory: directory.url)
        try alphaSuite.set(1, forKey: "a")
        try alphaSuite.set("damaged-damaged-damaged", forKey: "x")
        try alphaSuite.set(8, forKey: "y")
        if beta { try Suite(named: "beta", directory: directory.url).set(2, forKey: "b") }
        let worker = try startWorker("pause", at: directory.url, suite: "alpha",
                                     ["point": "repairWritten", "key": "k", "value": "3", "resume": "yes", "wait": "yes"]
                                        .merging(extra) { _, new in new })
        worker.expectLine(startingWith: "ready", sourceLocation: sourceLocation)
        try damageAlpha(in: directory, sourceLocation: sourceLocation)
        worker.send("go\n")
        worker.expectLine(startingWith: "paused repairWritten", sourceLocation: sourceLocation)
        #expect(R21.waitUntilStopped(worker), sourceLocation: sourceLocation)
        return worker
    }

    /// Flips a byte of alpha's x record (in the middle of the file) and zeroes the
    /// shared header's magic: the next write or opening repairs.
    static func damageAlpha(in directory: TemporaryDirectory, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let alpha = directory.file("alpha.suite").path
        var bytes = try #require(FileManager.default.contents(atPath: alpha).map(Array.init), sourceLocation: sourceLocation)
        let marker = Array("damaged-damaged".utf8)
        let at = try #require((0...(bytes.count - marker.count)).first { Array(bytes[$0..<($0 + marker.count)]) == marker },
                              sourceLocation: sourceLocation)
        bytes[at] ^= 0xFF
        try Data(bytes).write(to: URL(fileURLWithPath: alpha + ".new"))
        #expect(rename(alpha + ".new", alpha) == 0, sourceLocation: sourceLocation)
        zeroMagic(of: "alpha", in: directory)
    }

    static func zeroMagic(of suite: String, in directory: TemporaryDirectory) {
        let lock = open(directory.file("\(suite).suite.lock").path, O_WRONLY)
        guard lock >= 0 else { return }
        var zero: UInt64 = 0
        _ = pwrite(lock, &zero, 8, 0)
        close(lock)
    }

    /// Alpha's temporary names in `directory`.
    static func temporaryNames(in directory: TemporaryDirectory) -> [String] {
        directory.names().filter { $0.hasPrefix("alpha.suite.tmp.") }
    }

    static func kind(at path: String) -> mode_t? {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & S_IFMT : nil
    }

    /// Lets a stopped worker go on; returns its outcome line ("finished" or "error …")
    /// once it has exited, and expects a clean exit.
    static func resume(_ worker: ChildProcess, sourceLocation: SourceLocation = #_sourceLocation) -> String {
        worker.signal(SIGCONT)
        let outcome = worker.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("error") || $0 == "finished" }
        #expect(worker.wait(timeout: .seconds(60)) == .exited(0), "the worker hung or crashed: \(worker.lines) \(worker.standardError)",
                sourceLocation: sourceLocation)
        return outcome ?? "nothing: \(worker.lines)"
    }

    /// Puts the names right as a user would: files of alpha's and beta's under each
    /// other's names exchanged back; a file of beta's under any other name moved back
    /// to `beta.suite` when that name has none of beta's.
    static func putNamesRight(in directory: TemporaryDirectory) {
        let alpha = directory.file("alpha.suite").path, beta = directory.file("beta.suite").path
        if R21.suiteTag(of: alpha) == betaTag && R21.suiteTag(of: beta) == alphaTag { _ = R21.exchange(alpha, beta) }
        if R21.suiteTag(of: beta) != betaTag,
           let survivor = R22.files(taggedWith: betaTag, in: directory).first(where: { $0 != "beta.suite" }) {
            _ = rename(directory.file(survivor).path, beta)
        }
    }

    // MARK: 1. The repair's temporary name given to something else

    /// A repair of alpha stopped at `repairWritten`; its temporary name (holding the
    /// repaired file) then given to something else: beta's data file renamed over it
    /// ("beta-renamed"), exchanged with beta's data file ("beta-exchanged"), removed and
    /// a file of garbage made there ("garbage"), removed and a directory or FIFO made
    /// there, removed ("removed"), or moved away ("moved"); the repair let go on. What
    /// must hold: the worker ends (no hang) with a typed error (`.foreignFile`); once the
    /// names are put right (beta's file back under beta's name), beta holds b = 2,
    /// alpha holds a = 1 and y = 8 (its intact records), and k = "3" when the worker
    /// said "finished" (an acknowledged write).
    ///
    /// Found a hole (beta-renamed, garbage, directory, fifo): the repair checked what
    /// came out of its exchange under the temporary name (the damaged file: it was),
    /// not what went in under `alpha.suite`; it then took the new file, which no name
    /// led to any more, for the suite's, and the worker's write went into it and was
    /// acknowledged: k was nowhere, and alpha's name held beta's file, garbage, a
    /// directory or a FIFO (a and y only in the damaged copy kept aside; alpha opened
    /// empty once the name was put right). Fixed: `replaceDataFile` also checks that
    /// the data file's name leads to the new file after the exchange, and undoes it and
    /// refuses with `.foreignFile` when not. Fails without that check.
    @Test(arguments: ["beta-renamed", "beta-exchanged", "garbage", "directory", "fifo", "removed", "moved"])
    func theRepairsTemporaryNameGivenToSomethingElse(attack: String) throws {
        let directory = TemporaryDirectory()
        let worker = try Self.repairStopped(in: directory)
        defer { _ = worker.kill() }
        let temporary = try #require(Self.temporaryNames(in: directory).first, "no temporary file: \(directory.names())")
        let path = directory.file(temporary).path, beta = directory.file("beta.suite").path
        switch attack {
        case "beta-renamed": #expect(rename(beta, path) == 0)
        case "beta-exchanged": #expect(R21.exchange(beta, path))
        case "garbage":
            #expect(unlink(path) == 0)
            try directory.write(Array(repeating: 0x5A, count: 300), to: temporary)
        case "directory": #expect(unlink(path) == 0 && mkdir(path, 0o700) == 0)
        case "fifo": #expect(unlink(path) == 0 && mkfifo(path, 0o600) == 0)
        case "removed": #expect(unlink(path) == 0)
        default: #expect(rename(path, directory.file("alpha.moved").path) == 0)
        }
        let outcome = Self.resume(worker)
        // Refused: the temporary name no longer leads to the repaired file.
        #expect(outcome == Self.foreign, "\(attack): \(outcome)")
        // Whatever the attacker left under the temporary name goes, as a user would
        // clean up; the names of beta's and alpha's files are put right.
        for name in Self.temporaryNames(in: directory) where R21.suiteTag(of: directory.file(name).path) != Self.betaTag {
            let leftover = directory.file(name).path
            if Self.kind(at: leftover) == S_IFDIR { rmdir(leftover) } else if Self.kind(at: leftover) != S_IFREG { unlink(leftover) }
        }
        Self.putNamesRight(in: directory)
        let alpha = directory.file("alpha.suite").path
        if let kind = Self.kind(at: alpha), kind != S_IFREG {
            // Something the attacker made was put under alpha's name.
            Issue.record("\(attack): alpha's name holds a file of kind \(String(kind, radix: 8)); \(outcome)")
            if kind == S_IFDIR { rmdir(alpha) } else { unlink(alpha) }
        }
        let betaNow = try R21.dump("beta", at: directory.url)
        #expect(betaNow.values == ["b": 2], "\(attack): beta: \(betaNow); \(directory.names())")
        let alphaNow = try R21.dump("alpha", at: directory.url)
        #expect(alphaNow.values?["a"] == 1 && alphaNow.values?["y"] == 8, "\(attack): alpha: \(alphaNow); \(outcome); \(directory.names())")
        if outcome == "finished" {
            let k = try? Suite(named: "alpha", directory: directory.url).string(forKey: "k")
            #expect(k == "3", "\(attack): the acknowledged write is gone: \(String(describing: k)); \(directory.names())")
        }
    }

    /// The same for a compaction (stopped at `compactionWritten`, after its `set` of
    /// k = "3" was acknowledged): its temporary name given to beta's file (renamed
    /// over it) or to a file of garbage. What must hold: the compaction is refused
    /// with `.foreignFile`; once beta's file is back under its name, alpha holds
    /// a = 1 and k = "3", beta b = 2. Held before this round's fix only in part: the
    /// compaction put beta's file or the garbage under alpha's name and removed its
    /// temporary name, which then led to alpha's journal (kept only as history), so
    /// alpha opened empty. Fails without the check of what went in under the name.
    @Test(arguments: ["beta-renamed", "garbage"])
    func theCompactionsTemporaryNameGivenToSomethingElse(attack: String) throws {
        let directory = TemporaryDirectory()
        let worker = try R21.compactionStoppedBeforeItsFileIsInPlace(in: directory)
        defer { _ = worker.kill() }
        #expect(worker.lines.contains("set"))
        let temporary = try #require(Self.temporaryNames(in: directory).first, "no temporary file: \(directory.names())")
        let path = directory.file(temporary).path
        if attack == "garbage" {
            #expect(unlink(path) == 0)
            try directory.write(Array(repeating: 0x5A, count: 300), to: temporary)
        } else {
            #expect(rename(directory.file("beta.suite").path, path) == 0)
        }
        let outcome = Self.resume(worker)
        #expect(outcome == Self.foreign, "\(attack): \(outcome)")
        Self.putNamesRight(in: directory)
        let betaNow = try R21.dump("beta", at: directory.url)
        #expect(betaNow.values == ["b": 2], "\(attack): beta: \(betaNow); \(directory.names())")
        let alphaNow = try R21.dump("alpha", at: directory.url)
        #expect(alphaNow.values?["a"] == 1, "\(attack): alpha: \(alphaNow); \(directory.names())")
        let k = try? Suite(named: "alpha", directory: directory.url).string(forKey: "k")
        #expect(k == "3", "\(attack): the acknowledged write is gone: \(String(describing: k)); \(directory.names())")
    }
}
