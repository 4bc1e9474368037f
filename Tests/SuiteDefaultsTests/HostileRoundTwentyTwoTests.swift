import Foundation
import Glibc
import Testing
import TestSupport
import ChildProcess
@_spi(Testing) @testable import SuiteDefaults

/// Hostile round twenty-two: attacks on the suite tag (the data file header's word at
/// offset 24, the CRC-32C of `NAME.suite`) and on the compaction's exchange of names
/// (renameat2 RENAME_EXCHANGE, checked, undone when what came out is not its own file),
/// with real processes and files. What must hold: bad input on disk gets a clear typed
/// error and changes nothing; nothing stored is lost; no crash or hang.
///
/// Values are checked by new processes (role hostile21, scenario dump, of
/// suite-test-worker); every child is reaped (killed in a `defer`, waited with a
/// deadline); every directory is a `TemporaryDirectory`, removed at the end.
@Suite("Hostile round twenty-two: suite tags and the compaction's exchange", .serialized)
struct HostileRoundTwentyTwoTests {
    typealias R21 = HostileRoundTwentyOneTests

    /// Two suite names whose data file names have one CRC-32C, 0x000F4E8C, found by
    /// brute force over 4 million names "app." + 7 of [a-z0-9] (a birthday search;
    /// names of one length that differ in 4 bytes or fewer never collide, CRC being
    /// linear).
    static let colliding = ("app.ap9fyai", "app.fp375sv")

    /// Lets `worker`, stopped under `strace`, go on, and waits for strace to end (60 s
    /// at most). Under strace the worker's SIGSTOP may not be delivered yet when it
    /// shows as stopped (a signal-delivery stop), and a SIGCONT then comes first: it is
    /// sent again until the worker goes on.
    static func continueUntilEnded(_ worker: pid_t, under strace: ChildProcess) -> ChildProcess.Termination? {
        var ended: ChildProcess.Termination?
        let deadline = ContinuousClock.now + .seconds(60)
        repeat {
            kill(worker, SIGCONT)
            ended = strace.wait(timeout: .milliseconds(100))
        } while ended == nil && ContinuousClock.now < deadline
        return ended
    }

    /// The tag in the header of the file at `path`, or nil when it has no header that
    /// verifies.
    static func verifiedTag(of path: String) -> UInt32? {
        guard let data = FileManager.default.contents(atPath: path), data.count >= DataFileHeader.size else { return nil }
        return Array(data.prefix(DataFileHeader.size)).withUnsafeBytes { buffer -> UInt32? in
            guard case .valid = DataFileHeader.decode(buffer) else { return nil }
            return DataFileHeader.suiteTag(in: buffer)
        }
    }

    /// Names in `directory` of regular files whose verified header carries `tag`.
    static func files(taggedWith tag: UInt32, in directory: TemporaryDirectory) -> [String] {
        directory.names().filter { verifiedTag(of: directory.file($0).path) == tag }
    }

    /// `suite-defaults --dir DIR ARGUMENTS`, run to its end (60 s at most).
    static func tool(_ directory: TemporaryDirectory, _ arguments: String...) throws -> ProgramRun {
        try run(program: "suite-defaults", ["--dir", directory.path] + arguments)
    }

    /// The state letter of process `pid` (/proc/PID/stat), nil when it is gone.
    static func state(of pid: pid_t) -> Character? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        return text[text.index(close, offsetBy: 2)...].first
    }

    // MARK: 1. A suite file copied to another suite's name

    /// A user copies `a.suite` to `b.suite` (`cp`, as one would to duplicate a suite),
    /// then uses b: a new process, and the command's `read`, `export`, `write` and
    /// `delete` of b. What must hold: each is refused with a typed error
    /// (`.foreignFile`; status 3 for the command) whose text says how to recover (move
    /// the file back, or away); `b.suite` is left byte for byte as it was, a's
    /// values are all there, and once the copy is moved away b can be used afresh.
    /// Holds; fails (b reads a's values, and `write` appends to a's copy) when
    /// `SuiteFiles.checkSuiteTag` returns at once.
    @Test func aSuiteFileCopiedToAnotherNameIsRefusedAndLeftAsItWas() throws {
        let directory = TemporaryDirectory()
        do {
            let a = try Suite(named: "a", directory: directory.url)
            for index in 0..<20 { try a.set(index, forKey: "a.\(index)") }
        }
        let copy = try #require(directory.bytes(of: "a.suite"))
        try directory.write(copy, to: "b.suite")

        let refused = try R21.dump("b", at: directory.url)
        #expect(refused.values == nil && refused.report.contains("foreignFile"), "b: \(refused.report)")
        for arguments in [["read", "b"], ["export", "b"], ["write", "b", "k", "-int", "1"], ["delete", "b"]] {
            let outcome = try run(program: "suite-defaults", ["--dir", directory.path] + arguments)
            #expect(outcome.status == .exited(3), "\(arguments): \(String(describing: outcome.status)) \(outcome.lines) \(outcome.errors)")
            #expect(outcome.errors.contains("another suite") && outcome.errors.contains("Move it back"),
                    "\(arguments): the message does not say what happened and how to recover: \(outcome.errors)")
            #expect(directory.bytes(of: "b.suite") == copy, "\(arguments) changed b.suite")
        }
        let a = try R21.dump("a", at: directory.url)
        #expect(a.values == Dictionary(uniqueKeysWithValues: (0..<20).map { ("a.\($0)", $0) }), "a: \(a)")
        #expect(rename(directory.file("b.suite").path, directory.file("b.moved").path) == 0)
        #expect(try Self.tool(directory, "write", "b", "k", "-int", "7").status == .exited(0))
        let b = try R21.dump("b", at: directory.url)
        #expect(b.values == ["k": 7], "b after the copy was moved away: \(b)")
    }

    // MARK: 2. Two suites whose tags collide

    /// Two suites whose data file names have one CRC-32C (`colliding`), each with a
    /// value; beta's data file is then made a hard link of alpha's (as in round
    /// twenty-one's `oneSuitesDataFileMadeAHardLinkOfAnothers`, there refused), and
    /// beta written once by the command. What must hold: beta refuses the file
    /// (`.foreignFile`), and alpha's file is not written by beta's writer.
    ///
    /// HOLE: the tag is 32 bits of a CRC of the name, so another suite's file is told
    /// apart only when the two names' CRCs differ. Here beta opens alpha's file as its
    /// own: a new process of beta reads alpha's values, and beta's write is appended to
    /// alpha's file under beta's lock (alpha then holds beta's key) — with a writer of
    /// each suite, the round twenty-one loss of acknowledged commits comes back.
    /// Colliding names are easy to make (a few seconds of search; four chosen bytes
    /// give any CRC). Code: SuiteFiles.swift, `checkSuiteTag` (`tag != suiteTag`,
    /// line 322) and `DataFileHeader.suiteTag(ofDataFileNamed:)`. Suggested fix: a
    /// check that does not rest on a 32-bit hash of the name: the shared header (lock
    /// file) already names the data file's ID, and a writer could refuse a data file
    /// whose ID is neither the one its lock file names nor one reached by a compaction
    /// seen under that lock; or keep the whole name in the file (a record after the
    /// header, or a version-2 header field), checked at open.
    @Test func twoSuitesWhoseTagsCollide() throws {
        let (alphaName, betaName) = Self.colliding
        #expect(DataFileHeader.suiteTag(ofDataFileNamed: alphaName + ".suite")
                == DataFileHeader.suiteTag(ofDataFileNamed: betaName + ".suite"))
        let directory = TemporaryDirectory()
        #expect(try Self.tool(directory, "write", alphaName, "alpha", "-int", "1").status == .exited(0))
        #expect(try Self.tool(directory, "write", betaName, "beta", "-int", "2").status == .exited(0))
        let alphaPath = directory.file(alphaName + ".suite").path, betaPath = directory.file(betaName + ".suite").path
        let temporary = directory.file("beta-link").path
        #expect(link(alphaPath, temporary) == 0 && rename(temporary, betaPath) == 0, "errno \(errno)")
        withKnownIssue("a suite whose name's CRC-32C equals another's takes that suite's file for its own") {
            let beta = try R21.dump(betaName, at: directory.url)
            #expect(beta.values == nil && beta.report.contains("foreignFile"), "beta opened alpha's file: \(beta)")
            let write = try Self.tool(directory, "write", betaName, "stray", "-int", "3")
            #expect(write.status == .exited(3), "beta's write: \(String(describing: write.status)) \(write.errors)")
            #expect(unlink(betaPath) == 0)
            let alpha = try R21.dump(alphaName, at: directory.url)
            #expect(alpha.values == ["alpha": 1], "alpha's file was written by beta: \(alpha)")
        }
    }

    // MARK: 3 and 4. A compaction's undoing that fails, or is cut short

    /// Starts `pause --point replacementChecked --compact yes --resume yes` for alpha
    /// under strace, which makes the process's second renameat2 (the compaction's
    /// undoing; the first is its exchange) fail with `injection` (e.g. "error=EIO",
    /// "signal=SIGKILL"); returns strace's process and the worker's pid once the
    /// worker is stopped at the point.
    static func startCompactionUnderStrace(_ directory: TemporaryDirectory, injection: String) throws -> (ChildProcess, pid_t?) {
        let arguments = ["-f", "-qq", "-o", "/dev/null", "-e", "trace=renameat2",
                         "-e", injection == "none" ? "inject=renameat2:error=EIO:when=9" : "inject=renameat2:\(injection):when=2",
                         Products.path("suite-test-worker"), "pause", "--dir", directory.path, "--suite", "alpha",
                         "--compact", "yes", "--key", "k", "--point", "replacementChecked", "--resume", "yes", "--value", "3"]
        let strace = try ChildProcess(executable: "/usr/bin/strace", arguments: arguments)
        strace.expectLine(startingWith: "paused replacementChecked")
        let children = (try? String(contentsOfFile: "/proc/\(strace.pid)/task/\(strace.pid)/children", encoding: .utf8)) ?? ""
        let worker = children.split(separator: " ").first.flatMap { pid_t($0) }
        let deadline = ContinuousClock.now + .seconds(60)
        while let worker, !["T", "t"].contains(state(of: worker)), ContinuousClock.now < deadline { usleep(1_000) }
        return (strace, worker)
    }

    /// Alpha's compaction stopped at `replacementChecked` (alpha's name found leading to
    /// its file, the names not yet exchanged); alpha's and beta's data files exchanged
    /// (as round twenty-one's `aCompactionDoesNotReplaceAnotherSuitesFileGivenItsName`);
    /// the compaction let go on, its exchange done, its check finding beta's file under
    /// its temporary name, and its undoing (the second renameat2) failing (strace
    /// injects EIO, standing for any failure of that call), or the process killed at
    /// it (SIGKILL, standing for a crash or `kill -9` in that instant) and a new
    /// process of alpha opening it then. What must hold: beta's file, which is beta's
    /// only copy of its values, survives under some name (a file carrying beta's tag
    /// is still in the directory), and beta's value is readable once the names are
    /// put right.
    ///
    /// Found a hole (both): the temporary name, holding beta's file, was removed by
    /// `compact`'s cleanup after the undoing failed, and by the next process of alpha
    /// as a stale temporary file after a kill; beta's values were gone. Fixed: names
    /// are removed only while they lead to the compaction's own files, a failed undoing
    /// gives the file a name of its own, and a temporary file carrying another suite's
    /// tag is not removed as stale. Fails with the cleanup's removal by name.
    @Test(arguments: ["error=EIO", "signal=SIGKILL", "none"])
    func aCompactionWhoseUndoingFailsKeepsTheOtherSuitesFile(injection: String) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/strace") else {
            print("aCompactionWhoseUndoingFailsKeepsTheOtherSuitesFile: skipped, strace is not installed (apt-get install -y strace)")
            return
        }
        let directory = TemporaryDirectory()
        try Suite(named: "alpha", directory: directory.url).set(1, forKey: "a")
        try Suite(named: "beta", directory: directory.url).set(2, forKey: "b")
        let betaTag = DataFileHeader.suiteTag(ofDataFileNamed: "beta.suite")
        let (strace, worker) = try Self.startCompactionUnderStrace(directory, injection: injection)
        defer { _ = strace.kill() }
        guard let worker else {
            Issue.record("no worker under strace: \(strace.lines) \(strace.standardError)")
            return
        }
        defer { kill(worker, SIGKILL) }
        let alpha = directory.file("alpha.suite").path, beta = directory.file("beta.suite").path
        #expect(R21.exchange(alpha, beta))
        let ended = Self.continueUntilEnded(worker, under: strace)
        #expect(ended != nil, "the compaction did not end: \(strace.lines)")
        if injection.hasPrefix("error") || injection == "none" {
            #expect(strace.lines.contains { $0.hasPrefix("error ") }, "the compaction: \(strace.lines)")
        } else {
            // Killed between the exchange and its undoing: beta's file is under
            // alpha's temporary name, nothing lost yet.
            let underTemporaryName = Self.files(taggedWith: betaTag, in: directory)
            #expect(underTemporaryName.count == 1 && underTemporaryName.allSatisfy { $0.hasPrefix("alpha.suite.tmp.") },
                    "after the kill: \(directory.names())")
            // A new process of alpha: opens (and so repairs, and removes stale
            // temporary files), then compacts.
            let next = try startWorker("compact", in: directory, suite: "alpha")
            defer { _ = next.kill() }
            #expect(next.wait(timeout: .seconds(60)) != nil)
        }
        let check = {
            let survivors = Self.files(taggedWith: betaTag, in: directory)
            #expect(!survivors.isEmpty, "no file of beta's is left: \(directory.names())")
            // Put right: beta's file back under beta's name, wherever it is.
            if let survivor = survivors.first(where: { $0 != "beta.suite" }) {
                _ = rename(directory.file(survivor).path, beta)
            }
            let betaNow = try R21.dump("beta", at: directory.url)
            #expect(betaNow.values?["b"] == 2, "beta: \(betaNow)")
        }
        if injection == "none" {
            #expect(strace.lines.contains("error \(SuiteError.Code.foreignFile.rawValue) errno 0"), "the compaction: \(strace.lines)")
        }
        try check()
    }

    // MARK: 5. The data file's name given to something else at the compaction's point

    /// Alpha's compaction stopped at `replacementChecked` (alpha's name found leading
    /// to its file, the names not yet exchanged); its data file moved away
    /// (`alpha.moved`) and its name given to a directory, a FIFO, or a symbolic link
    /// to the moved file; the compaction let go on. What must hold: the compaction
    /// ends (no hang) with `.foreignFile` (a symbolic link: `.foreignFile`, or done);
    /// the directory or FIFO is left where it is; once the file is moved back, alpha
    /// holds the value set before the compaction and its first value. Holds; the FIFO
    /// case fails (the FIFO removed) when `replaceDataFile` does not check what came
    /// out of its exchange (its `guard` always true).
    @Test(arguments: ["directory", "fifo", "symlink"])
    func theDataFileNameGivenToSomethingElseAtTheCompactionsPoint(kind: String) throws {
        let directory = TemporaryDirectory()
        let worker = try R21.compactionStoppedBeforeItsFileIsInPlace(in: directory, beta: false, at: "replacementChecked")
        defer { _ = worker.kill() }
        let alpha = directory.file("alpha.suite").path, moved = directory.file("alpha.moved").path
        #expect(rename(alpha, moved) == 0)
        switch kind {
        case "directory": #expect(mkdir(alpha, 0o700) == 0)
        case "fifo": #expect(mkfifo(alpha, 0o600) == 0)
        default: #expect(symlink("alpha.moved", alpha) == 0)
        }
        worker.signal(SIGCONT)
        let outcome = worker.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("error") || $0 == "finished" }
        #expect(worker.wait(timeout: .seconds(60)) == .exited(0), "the compaction hung or crashed: \(worker.lines)")
        if kind == "symlink" {
            #expect(outcome == "finished" || outcome == "error \(SuiteError.Code.foreignFile.rawValue) errno 0", "\(outcome ?? "nothing")")
        } else {
            #expect(outcome == "error \(SuiteError.Code.foreignFile.rawValue) errno 0", "the compaction: \(outcome ?? "nothing")")
            var status = stat()
            #expect(lstat(alpha, &status) == 0 && (status.st_mode & S_IFMT) == (kind == "fifo" ? S_IFIFO : S_IFDIR),
                    "the \(kind) under alpha's name was not left where it was")
        }
        // Put back as a user would: whatever is under the name goes, the file returns
        // (unless the compaction put its own file in place through the link).
        var status = stat()
        if lstat(alpha, &status) == 0, (status.st_mode & S_IFMT) != S_IFREG {
            if (status.st_mode & S_IFMT) == S_IFDIR { rmdir(alpha) } else { unlink(alpha) }
            #expect(rename(moved, alpha) == 0)
        }
        let values = try R21.dump("alpha", at: directory.url)
        #expect(values.values?["a"] == 1, "alpha: \(values)")
        #expect(try Suite(named: "alpha", directory: directory.url).string(forKey: "k") == "3")
    }

    // MARK: 6. An older file (tag 0), copied to another name

    /// Suite a's data file given tag 0 (as files of earlier versions, with a header
    /// checksum that verifies), then copied to `b.suite` by hand. What must hold (as
    /// FileFormat.md says): both suites read it (0 is any suite's); a's file is
    /// left byte for byte as it was by b's reading and b's compaction; b's first
    /// compaction writes a file carrying b's own tag, which a then refuses
    /// (`.foreignFile`) when given it, and b still holds every value. Holds; fails
    /// when `writeNewDataFile` writes tag 0 (b's compacted file is taken by a).
    @Test func anOlderFileCopiedToAnotherNameIsTaggedByItsFirstCompaction() throws {
        let directory = TemporaryDirectory()
        #expect(try Self.tool(directory, "write", "a", "x", "-int", "5").status == .exited(0))
        var bytes = try #require(directory.bytes(of: "a.suite"))
        let fileID = bytes[16 ..< 24].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let version = UInt16(bytes[8]) | UInt16(bytes[9]) << 8
        bytes.replaceSubrange(0 ..< DataFileHeader.size, with: DataFileHeader.encode(fileID: fileID, version: version, suiteTag: 0))
        #expect(Self.verifiedTag(of: directory.file("a.suite").path) == DataFileHeader.suiteTag(ofDataFileNamed: "a.suite"))
        try directory.write(bytes, to: "a.suite")
        try directory.write(bytes, to: "b.suite")
        #expect(Self.verifiedTag(of: directory.file("b.suite").path) == 0)
        for name in ["a", "b"] {
            let read = try R21.dump(name, at: directory.url)
            #expect(read.values == ["x": 5], "\(name): \(read)")
        }
        let compaction = try startWorker("compact", in: directory, suite: "b")
        defer { _ = compaction.kill() }
        compaction.expectLine(startingWith: "compacted")
        compaction.expectSuccess(within: .seconds(60))
        #expect(directory.bytes(of: "a.suite") == bytes, "a's file changed")
        #expect(Self.verifiedTag(of: directory.file("b.suite").path) == DataFileHeader.suiteTag(ofDataFileNamed: "b.suite"))
        let b = try R21.dump("b", at: directory.url)
        #expect(b.values == ["x": 5], "b after its compaction: \(b)")
        // b's compacted file given to a: refused, and left as it was.
        let compacted = try #require(directory.bytes(of: "b.suite"))
        try directory.write(compacted, to: "a.suite")
        let a = try R21.dump("a", at: directory.url)
        #expect(a.values == nil && a.report.contains("foreignFile"), "a given b's compacted file: \(a)")
        #expect(directory.bytes(of: "a.suite") == compacted)
    }

    // MARK: 7. The history name given to something else at the compaction's point

    /// Alpha's compaction stopped at `compactionWritten`, having linked its old file
    /// as history (`alpha.suite.h.SEQ`); that name then given to a FIFO, or to a
    /// regular file of someone else's (a hard link of beta's data file); the
    /// compaction let go on. What must hold: it ends (no hang) refused with
    /// `.foreignFile`; alpha holds its values; beta's file, and the thing put under the
    /// history name, are left where they are (the compaction has just found that
    /// name is not its own).
    ///
    /// The refusal holds (fails when `replaceDataFile` does not check the history
    /// name: the FIFO is kept as history then). Found a hole (minor): the refused
    /// compaction's cleanup removed the history name, which it had found is not its
    /// own; it now removes it only while it leads to the old data file.
    @Test(arguments: ["fifo", "link"])
    func theHistoryNameGivenToSomethingElseAtTheCompactionsPoint(kind: String) throws {
        let directory = TemporaryDirectory()
        let worker = try R21.compactionStoppedBeforeItsFileIsInPlace(in: directory)
        defer { _ = worker.kill() }
        let history = try #require(directory.names().first { $0.hasPrefix("alpha.suite.h.") }, "no history name: \(directory.names())")
        let path = directory.file(history).path
        #expect(unlink(path) == 0)
        if kind == "fifo" {
            #expect(mkfifo(path, 0o600) == 0)
        } else {
            #expect(link(directory.file("beta.suite").path, path) == 0)
        }
        worker.signal(SIGCONT)
        let outcome = worker.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("error") || $0 == "finished" }
        #expect(worker.wait(timeout: .seconds(60)) == .exited(0), "the compaction hung or crashed: \(worker.lines)")
        #expect(outcome == "error \(SuiteError.Code.foreignFile.rawValue) errno 0", "the compaction: \(outcome ?? "nothing")")
        let alpha = try R21.dump("alpha", at: directory.url), beta = try R21.dump("beta", at: directory.url)
        #expect(alpha.values?["a"] == 1, "alpha: \(alpha)")
        #expect(beta.values == ["b": 2], "beta: \(beta)")
        var status = stat()
        #expect(lstat(path, &status) == 0, "what was put under \(history) was removed: \(directory.names())")
    }

    // MARK: 8. Colliding tags under writers

    /// Round twenty-one's `dataFilesExchangedBetweenTwoSuites` (one writer process per
    /// suite, compacting often: a compaction slack of 2 KiB; the two data files
    /// exchanged 300 times, 0 to 2 ms apart; the writers then go on for 30 commits
    /// each), with the two colliding names of test 2 in one directory. What must hold:
    /// every acknowledged commit is in one of the two suites, read by a new process;
    /// every failure is a typed error.
    ///
    /// HOLE (the one of test 2, under load; intermittent in count): with equal tags
    /// neither writer refuses the other's file, so both append to one file under two
    /// locks, as before the tag existed; acknowledged commits are lost (in neither
    /// suite). The compaction's own check (device and inode) still holds.
    ///
    /// The case `colliding: false` is the control, the same with two names whose tags
    /// differ ("app.ap9fyai", "app.ap9fyaj"): nothing is lost there.
    @Test(arguments: [true, false])
    func dataFilesOfTwoSuitesWithCollidingTagsExchangedUnderWriters(colliding: Bool) throws {
        let (alphaName, betaName) = colliding ? Self.colliding : ("app.ap9fyai", "app.ap9fyaj")
        let directory = TemporaryDirectory()
        var writers: [ChildProcess] = []
        defer { for writer in writers { _ = writer.kill() } }
        for suite in [alphaName, betaName] {
            let writer = try startWorker("hostile21", in: directory, suite: suite,
                                         ["scenario": "write", "prefix": suite, "count": "0", "pause-us": "200", "compaction-slack": "2048"])
            writers.append(writer)
            writer.expectLine(startingWith: "writing")
        }
        for writer in writers { writer.expectLine(startingWith: "ack ") }
        let alphaPath = directory.file(alphaName + ".suite").path, betaPath = directory.file(betaName + ".suite").path
        var pace = R21.Pace(state: 22), exchanges = 0
        let deadline = ContinuousClock.now + .seconds(30)
        while exchanges < 300 && ContinuousClock.now < deadline {
            if R21.exchange(alphaPath, betaPath) { exchanges += 1 }
            usleep(UInt32(pace.next(2000)))
        }
        #expect(exchanges == 300, "only \(exchanges) exchanges")
        // As in round twenty-one: a compaction that met an exchange between its own
        // exchange and its undoing can leave the two files under each other's names
        // (each suite then refuses the other's, when their tags differ): exchanged
        // back, as a user would, before the writers go on.
        if !colliding, R21.suiteTag(of: alphaPath) == DataFileHeader.suiteTag(ofDataFileNamed: betaName + ".suite") {
            #expect(R21.exchange(alphaPath, betaPath))
        }
        R21.letWritersRunPast(R21.now(), more: 30, writers)
        let alpha = try R21.dump(alphaName, at: directory.url), beta = try R21.dump(betaName, at: directory.url)
        #expect(alpha.values != nil && beta.values != nil, "\(alpha.report) \(beta.report)")
        let union = (alpha.values ?? [:]).merging(beta.values ?? [:]) { a, _ in a }
        for writer in writers { #expect(R21.untypedErrors(writer).count == 0, "\(R21.untypedErrors(writer).prefix(3))") }
        let check = {
            for writer in writers {
                let acks = R21.acks(writer)
                let lost = R21.missing(acks, in: union)
                #expect(lost.count == 0, "\(lost.count) of \(acks.count) acknowledged commits in neither suite, first \(lost.prefix(3)); \(exchanges) exchanges")
            }
        }
        if colliding {
            withKnownIssue("two suites whose tags collide append to one file under two locks", isIntermittent: true) { check() }
        } else {
            check()
        }
    }

    // MARK: 9. Another suite's file, its header damaged, under a suite's name

    /// Suite b's data file, one bit of its header's file ID flipped (so the header's
    /// checksum fails and the tag check is skipped, SuiteFiles.swift:316), copied
    /// over a's. What must hold: nothing stored is lost: b's own file is untouched, and
    /// the file found under a's name is kept aside byte for byte (`a.suite.damaged-*`)
    /// with a diagnostic.
    ///
    /// Held. Observed, and a weakness rather than a loss: a is not refused; the
    /// repair takes b's records for a's (a then reads b's values, under a file with
    /// a's tag), although the damaged header's tag field still names b. A stricter
    /// rule would refuse (`.foreignFile`) a file whose header fails to verify while
    /// its tag field is neither 0 nor this suite's and its records verify.
    @Test func anotherSuitesFileWithADamagedHeaderIsKeptAside() throws {
        let directory = TemporaryDirectory()
        #expect(try Self.tool(directory, "write", "a", "x", "-int", "1").status == .exited(0))
        #expect(try Self.tool(directory, "write", "b", "y", "-int", "2").status == .exited(0))
        var bytes = try #require(directory.bytes(of: "b.suite"))
        let original = bytes
        bytes[16] ^= 1
        try directory.write(bytes, to: "a.suite")
        let read = try Self.tool(directory, "read", "a")
        #expect(read.status != nil, "read a hung")
        #expect(read.errors.contains("repairedDamage"), "no diagnostic: \(read.errors)")
        let aside = directory.names().filter { $0.hasPrefix("a.suite.damaged-") }
        #expect(aside.count == 1 && aside.first.flatMap { directory.bytes(of: $0) } == bytes, "kept aside: \(directory.names())")
        #expect(directory.bytes(of: "b.suite") == original)
        let b = try R21.dump("b", at: directory.url)
        #expect(b.values == ["y": 2], "b: \(b)")
    }
}
