import Foundation
import Glibc
import Testing
import TestSupport
import ChildProcess
@_spi(Testing) @testable import SuiteDefaults

/// Hostile round twenty-one: a suite's lock file or data file deleted, exchanged with
/// another suite's, hard-linked to another suite's, or made read-only, by something
/// outside the library, under real writer processes (role hostile21 of
/// suite-test-worker); and a fork child writing on the short path beside its parent.
/// What must hold: every acknowledged commit is where a new process reads it, or the
/// writer got a typed `SuiteError`; no crash, no hang, nothing stored lost.
///
/// Each writer W's commit i sets W.i = i and W.last = i in one transaction and says
/// "ack W i START" (START: `CLOCK_MONOTONIC` when the commit began), or "err W i CODE".
@Suite("Hostile round twenty-one: suite files exchanged, linked and deleted under writers", .serialized)
struct HostileRoundTwentyOneTests {
    struct Ack: Hashable {
        let writer: String
        let index: Int
        let start: Int
    }

    static func now() -> Int {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int(time.tv_sec) * 1_000_000_000 + Int(time.tv_nsec)
    }

    static func acks(_ worker: ChildProcess) -> [Ack] {
        worker.lines.compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 4, parts[0] == "ack", let index = Int(parts[2]), let start = Int(parts[3]) else { return nil }
            return Ack(writer: String(parts[1]), index: index, start: start)
        }
    }

    /// The worker's failed commits whose error is not a typed `SuiteError`.
    static func untypedErrors(_ worker: ChildProcess) -> [String] {
        worker.lines.filter { $0.hasPrefix("err ") && ($0.contains("untyped") || $0.split(separator: " ").count != 4) }
    }

    static func errors(_ worker: ChildProcess) -> [String] {
        worker.lines.filter { $0.hasPrefix("err ") }
    }

    /// What a new process reads of suite `name` in `directory`: its integers by key, or
    /// nil with the worker's report when it could not open the suite.
    static func dump(_ name: String, at directory: URL, asUID uid: UInt32? = nil,
                     sourceLocation: SourceLocation = #_sourceLocation) throws -> (values: [String: Int]?, report: String) {
        var options = ["scenario": "dump"]
        if let uid { options["as-uid"] = "\(uid)" }
        let worker = try startWorker("hostile21", at: directory, suite: name, options)
        defer { _ = worker.kill() }
        let ended = worker.wait(timeout: .seconds(60))
        #expect(ended == .exited(0), "dump of \(name): \(ended.map(\.description) ?? "hung"); \(worker.standardError)",
                sourceLocation: sourceLocation)
        let lines = worker.lines
        guard lines.contains(where: { $0.hasPrefix("end ") }) else { return (nil, lines.joined(separator: "; ")) }
        var values: [String: Int] = [:]
        for line in lines where line.hasPrefix("kv ") {
            let parts = line.split(separator: " ")
            if parts.count == 3, let value = Int(parts[2]) { values[String(parts[1])] = value }
        }
        return (values, "")
    }

    /// The acknowledgements of `acks` that `values` lacks (or holds with another value).
    static func missing(_ acks: [Ack], in values: [String: Int]) -> [Ack] {
        acks.filter { values["\($0.writer).\($0.index)"] != $0.index }
    }

    /// `renameat2(RENAME_EXCHANGE)`, through the C library's symbol.
    static func exchange(_ one: String, _ other: String) -> Bool {
        typealias RenameAt2 = @convention(c) (CInt, UnsafePointer<CChar>, CInt, UnsafePointer<CChar>, CUnsignedInt) -> CInt
        guard let symbol = dlsym(nil, "renameat2") else { return false }
        return unsafeBitCast(symbol, to: RenameAt2.self)(AT_FDCWD, one, AT_FDCWD, other, 2) == 0
    }

    /// A small deterministic generator for the attackers' pauses.
    struct Pace {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(truncatingIfNeeded: state >> 33) % bound
        }
    }

    /// Waits until every writer acknowledged `more` commits begun after `instant`, then
    /// stops each (a line on its input) and waits for its "done".
    static func letWritersRunPast(_ instant: Int, more: Int, _ writers: [ChildProcess],
                                  sourceLocation: SourceLocation = #_sourceLocation) {
        for writer in writers {
            let enough = writer.waitForLines(timeout: .seconds(60)) { lines in
                lines.count { $0.hasPrefix("ack ") && (Int($0.split(separator: " ").last ?? "") ?? 0) > instant } >= more
                    || lines.contains { $0.hasPrefix("done") }
            }
            #expect(enough, "a writer made no progress after the attack: \(writer.lines.suffix(4)); \(writer.standardError)",
                    sourceLocation: sourceLocation)
            writer.send("stop\n")
        }
        for writer in writers {
            writer.expectLine(startingWith: "done", within: .seconds(60), sourceLocation: sourceLocation)
            writer.expectSuccess(within: .seconds(60), sourceLocation: sourceLocation)
        }
    }

    // MARK: 1. A fork child writing beside its parent

    /// A worker writes twice (its second commit on the short path), forks, and the
    /// child and the parent each commit 400 times at once, while a third process reads
    /// both writers' "last" values in a loop. What must hold: no commit fails; every
    /// commit of both is read by a new process; the reader saw neither writer go back,
    /// nor a "last" without its own key. Holds; fails (every child commit refused with
    /// `.ioFailure`) when the child keeps its parent's state (`SuiteStore.current`
    /// not making a new one).
    @Test func aForkChildWritingBesideItsParentLosesNothing() throws {
        let directory = TemporaryDirectory()
        let rounds = 3
        let names = (0..<rounds).flatMap { ["w\($0)-parent", "w\($0)-child"] }
        let reader = try startWorker("hostile21", in: directory, suite: "forked",
                                     ["scenario": "order-reader", "suites": names.joined(separator: ",")])
        defer { _ = reader.kill() }
        reader.expectLine(startingWith: "reading")
        for round in 0..<rounds {
            let writer = try startWorker("hostile21", in: directory, suite: "forked",
                                         ["scenario": "fork", "prefix": "w\(round)", "count": "400"])
            defer { _ = writer.kill() }
            writer.expectLine(startingWith: "done", within: .seconds(120))
            #expect(writer.lines.contains("child exited 0"), "round \(round): \(writer.lines.suffix(3))")
            writer.expectSuccess()
            #expect(Self.errors(writer).count == 0, "round \(round): \(Self.errors(writer).prefix(3))")
            let acks = Self.acks(writer)
            #expect(acks.count { $0.writer == "w\(round)-child" } == 400 && acks.count { $0.writer == "w\(round)-parent" } == 400,
                    "round \(round): \(acks.count) acknowledged")
            let (values, report) = try Self.dump("forked", at: directory.url)
            #expect(values != nil, "\(report)")
            let lost = Self.missing(acks, in: values ?? [:])
            #expect(lost.count == 0, "round \(round): \(lost.count) acknowledged commits lost, first \(lost.prefix(3))")
        }
        let stopper = try Suite(named: "forked", directory: directory.url)
        try stopper.set(1, forKey: "stop")
        let line = reader.expectLine(startingWith: "reads", within: .seconds(60)) ?? ""
        #expect(line.contains("regressions 0 missing 0") && !line.hasPrefix("reads 0 "), "\(line)")
    }

    // MARK: 2 and 3. Two suites' files exchanged

    /// Two suites ("alpha", "beta"; in one directory, or each in its own) are written by
    /// one process each while their lock files are exchanged (`renameat2
    /// (RENAME_EXCHANGE)`) 300 times, 0 to 2 ms apart; then the writers go on. What
    /// must hold: every acknowledged commit is read by a new process of its own suite
    /// (the data files never moved), no key of one suite is in the other, every failure
    /// is a typed error. Holds (each suite's one writer appends to its own data file by
    /// its own count); fails (a third of the commits lost) when a catch-up trusts a
    /// shared header that names another data file (the file ID and length checks of
    /// `StoreState.catchUp` dropped).
    @Test(arguments: [true, false])
    func lockFilesExchangedBetweenTwoSuites(inOneDirectory: Bool) throws {
        try exchangeAttack(lockFiles: true, inOneDirectory: inOneDirectory, writersPerSuite: 1)
    }

    /// The same with two writer processes per suite. HOLE (known issue, intermittent:
    /// 1 to 6 of about 160 acknowledged commits per writer lost in most runs, no error,
    /// no diagnostic): writer 1 of alpha locks the file named alpha's lock and checks
    /// the name; the names are exchanged; writer 2 of alpha, on the other lock file
    /// (followed earlier), locks it and finds the name leading to it. Both hold "the"
    /// lock of alpha and append to alpha's data file at once.
    @Test(arguments: [true, false])
    func lockFilesExchangedBetweenTwoSuitesWithTwoWritersEach(inOneDirectory: Bool) throws {
        withKnownIssue("two writers of one suite each hold a lock file the name led to at its check", isIntermittent: true) {
            try exchangeAttack(lockFiles: true, inOneDirectory: inOneDirectory, writersPerSuite: 2)
        }
    }

    /// The same with the data files exchanged, one writer per suite, each compacting
    /// often (a compaction slack of 2 KiB). The contents move with the files, so what
    /// must hold is: every acknowledged commit is in one of the two suites, read by a
    /// new process; every commit begun after the last exchange is in its own suite;
    /// every failure is a typed error. Found a hole (a third to a half of the
    /// acknowledged commits in neither suite, set aside in `.damaged-*` copies): a
    /// writer followed its name to the other suite's file, which that suite's writer
    /// still appended to under its own lock, and a compaction renamed its file over
    /// whatever its name led to. Now a data file carries the tag of the suite it was
    /// written for, a file of another suite found under a suite's name is refused
    /// (`.foreignFile`), and a compaction exchanges its file with the name and undoes
    /// that when what came out is not its own. That still lost commits in about 2 runs
    /// of 100 under load (all of beta's in one): two compactions at once, each
    /// exchanging with the other suite's file and undoing it among further exchanges,
    /// until beta's own file was removed with its temporary name; round twenty-five
    /// makes that interleaving step by step, and a compaction now checks the suite's
    /// name before it exchanges.
    @Test(arguments: [true, false])
    func dataFilesExchangedBetweenTwoSuites(inOneDirectory: Bool) throws {
        try exchangeAttack(lockFiles: false, inOneDirectory: inOneDirectory, writersPerSuite: 1)
    }

    /// A compaction of alpha, stopped after its new file is written and alpha's name
    /// found leading to alpha's file (the fault point `replacementChecked`, just before
    /// the names are exchanged); alpha's and beta's data files exchanged then; the
    /// compaction let go on. What must hold: the compaction does not put its file in
    /// place of beta's, which then has alpha's name (it is refused with `.foreignFile`
    /// and the file left where it is); once the files are exchanged back, each suite
    /// holds what it held, alpha with the write before the compaction. Fails when a
    /// compaction renames its file over the name (beta's contents are lost).
    @Test func aCompactionDoesNotReplaceAnotherSuitesFileGivenItsName() throws {
        let directory = TemporaryDirectory()
        let worker = try Self.compactionStoppedBeforeItsFileIsInPlace(in: directory, at: "replacementChecked")
        defer { _ = worker.kill() }
        Self.exchangeDataFilesWhileStopped(worker, in: directory, refusing: "the compaction")
        let alphaNow = try Self.dump("alpha", at: directory.url), betaNow = try Self.dump("beta", at: directory.url)
        #expect(alphaNow.values?["a"] == 1, "alpha: \(alphaNow)")
        #expect(try Suite(named: "alpha", directory: directory.url).string(forKey: "k") == "3")
        #expect(betaNow.values == ["b": 2], "beta: \(betaNow)")
    }

    /// A repair of alpha's damaged data file, stopped after its new file is written, the
    /// damaged one kept aside and alpha's name found leading to it (the fault point
    /// `replacementChecked`); alpha's and beta's data files exchanged then; the repair
    /// let go on. What must hold, as for a
    /// compaction: the repair does not put its file in place of beta's, which then has
    /// alpha's name (refused with `.foreignFile`, the exchange undone); once the files
    /// are exchanged back, beta holds what it held, and alpha is repaired at its next
    /// open, keeping its intact records. Fails when a repair renames its file over the
    /// name (beta's only file is then gone).
    @Test func aRepairDoesNotReplaceAnotherSuitesFileGivenItsName() throws {
        let directory = TemporaryDirectory()
        let worker = try HostileRoundTwentyThreeTests.repairStopped(in: directory, at: "replacementChecked")
        defer { _ = worker.kill() }
        Self.exchangeDataFilesWhileStopped(worker, in: directory, refusing: "the repair")
        let betaNow = try Self.dump("beta", at: directory.url), alphaNow = try Self.dump("alpha", at: directory.url)
        #expect(betaNow.values == ["b": 2], "beta: \(betaNow)")
        #expect(alphaNow.values == ["a": 1, "y": 8], "alpha: \(alphaNow)")
    }

    /// With `worker` stopped (SIGSTOP) before its new file of alpha is in place:
    /// exchanges alpha's and beta's data files, lets it go on, expects `what` refused
    /// with `.foreignFile` and the worker's exit, then exchanges the files back.
    static func exchangeDataFilesWhileStopped(_ worker: ChildProcess, in directory: TemporaryDirectory, refusing what: String,
                                              sourceLocation: SourceLocation = #_sourceLocation) {
        let alpha = directory.file("alpha.suite").path, beta = directory.file("beta.suite").path
        #expect(exchange(alpha, beta), sourceLocation: sourceLocation)
        worker.signal(SIGCONT)
        let outcome = worker.expectLine(startingWith: "error", sourceLocation: sourceLocation) ?? worker.lines.last ?? "nothing"
        #expect(outcome == "error \(SuiteError.Code.foreignFile.rawValue) errno 0", "\(what): \(outcome)", sourceLocation: sourceLocation)
        #expect(worker.wait(timeout: .seconds(60)) == .exited(0), sourceLocation: sourceLocation)
        #expect(exchange(alpha, beta), sourceLocation: sourceLocation)
    }

    /// The suite tag in the header of the data file at `path` (0 when unreadable).
    static func suiteTag(of path: String) -> UInt32 {
        guard let bytes = FileManager.default.contents(atPath: path), bytes.count >= DataFileHeader.size else { return 0 }
        return Array(bytes.prefix(DataFileHeader.size)).withUnsafeBytes { DataFileHeader.suiteTag(in: $0) }
    }

    /// Each file of `directories`: its name, size, inode and the tag in its header
    /// ("alpha", "beta", or the number), for a failure's message.
    static func describeFiles(in directories: [URL]) -> String {
        let tags: [UInt32: String] = [DataFileHeader.suiteTag(ofDataFileNamed: "alpha.suite"): "alpha",
                                      DataFileHeader.suiteTag(ofDataFileNamed: "beta.suite"): "beta"]
        return directories.map { directory in
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted()
            return names.map { name in
                let path = directory.appendingPathComponent(name).path
                var status = stat()
                guard lstat(path, &status) == 0 else { return name + " (gone)" }
                let tag = name.contains(".lock") ? "" : " tag " + (tags[suiteTag(of: path)] ?? "\(suiteTag(of: path))")
                return "\(name) \(status.st_size) bytes inode \(status.st_ino)\(tag)"
            }.joined(separator: ", ")
        }.joined(separator: " | ")
    }

    /// Suites alpha (a = 1) and, unless `beta` is false, beta (b = 2); then a worker
    /// that sets alpha's k = "3" and compacts alpha, stopped (SIGSTOP) at the fault
    /// point `point`: `compactionWritten`, its new file written and not yet in place,
    /// or `replacementChecked`, the data file's name found leading to alpha's file just
    /// before the names are exchanged. SIGCONT lets it go on; it says "finished" or how
    /// the compaction failed.
    static func compactionStoppedBeforeItsFileIsInPlace(in directory: TemporaryDirectory, beta: Bool = true,
                                                        at point: String = "compactionWritten",
                                                        sourceLocation: SourceLocation = #_sourceLocation) throws -> ChildProcess {
        try Suite(named: "alpha", directory: directory.url).set(1, forKey: "a")
        if beta { try Suite(named: "beta", directory: directory.url).set(2, forKey: "b") }
        let worker = try startWorker("pause", at: directory.url, suite: "alpha",
                                     ["point": point, "compact": "yes", "key": "k", "value": "3", "resume": "yes"])
        worker.expectLine(startingWith: "paused \(point)", sourceLocation: sourceLocation)
        #expect(waitUntilStopped(worker), sourceLocation: sourceLocation)
        return worker
    }

    /// Waits up to 60 s until `worker` is stopped (state T).
    static func waitUntilStopped(_ worker: ChildProcess) -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while worker.state != "T" && ContinuousClock.now < deadline { usleep(1_000) }
        return worker.state == "T"
    }

    func exchangeAttack(lockFiles: Bool, inOneDirectory: Bool, writersPerSuite: Int) throws {
        let first = TemporaryDirectory(), second = TemporaryDirectory()
        let alphaDirectory = first.url, betaDirectory = inOneDirectory ? first.url : second.url
        var writers: [ChildProcess] = []
        defer { for writer in writers { _ = writer.kill() } }
        for (suite, directory) in [("alpha", alphaDirectory), ("beta", betaDirectory)] {
            for number in 0..<writersPerSuite {
                var options = ["scenario": "write", "prefix": "\(suite)-\(number)", "count": "0", "pause-us": "200"]
                if !lockFiles { options["compaction-slack"] = "2048" }
                let writer = try startWorker("hostile21", at: directory, suite: suite, options)
                writers.append(writer)
                writer.expectLine(startingWith: "writing")
            }
        }
        // Both suites' files exist once each has an acknowledged commit.
        for writer in writers { writer.expectLine(startingWith: "ack ") }
        let suffix = lockFiles ? ".suite.lock" : ".suite"
        let alphaPath = alphaDirectory.appendingPathComponent("alpha" + suffix).path
        let betaPath = betaDirectory.appendingPathComponent("beta" + suffix).path
        var pace = Pace(state: 21), exchanges = 0
        let deadline = ContinuousClock.now + .seconds(30)
        while exchanges < 300 && ContinuousClock.now < deadline {
            if Self.exchange(alphaPath, betaPath) { exchanges += 1 }
            usleep(UInt32(pace.next(2000)))
        }
        #expect(exchanges == 300, "only \(exchanges) exchanges")
        // A compaction that met an exchange between its own exchange and its undoing
        // can leave the two files under each other's names (each suite then refuses the
        // other's file): exchanged back, as a user would, before the writers go on.
        if !lockFiles, Self.suiteTag(of: alphaPath) == DataFileHeader.suiteTag(ofDataFileNamed: "beta.suite") {
            #expect(Self.exchange(alphaPath, betaPath))
        }
        let lastExchange = Self.now()
        Self.letWritersRunPast(lastExchange, more: 30, writers)

        let alpha = try Self.dump("alpha", at: alphaDirectory), beta = try Self.dump("beta", at: betaDirectory)
        #expect(alpha.values != nil && beta.values != nil, "\(alpha.report) \(beta.report)")
        let alphaValues = alpha.values ?? [:], betaValues = beta.values ?? [:]
        let union = alphaValues.merging(betaValues) { a, _ in a }
        var acknowledged = 0
        for writer in writers {
            let acks = Self.acks(writer)
            acknowledged += acks.count
            #expect(Self.untypedErrors(writer).count == 0, "\(Self.untypedErrors(writer).prefix(3))")
            let lost = Self.missing(acks, in: union)
            #expect(lost.count == 0, """
                \(lost.count) of \(acks.count) acknowledged commits in neither suite, first \(lost.prefix(3)); \(exchanges) exchanges; \
                files: \(Self.describeFiles(in: [first.url] + (inOneDirectory ? [] : [second.url]))); \
                diagnostics: \(writers.map { $0.standardError.split(separator: "\n").suffix(6) })
                """)
            let own = acks.first.map { $0.writer.hasPrefix("alpha") ? alphaValues : betaValues } ?? [:]
            let strayed = Self.missing(acks.filter { $0.start > lastExchange }, in: own)
            #expect(strayed.count == 0, "\(strayed.count) commits begun after the last exchange not in their suite, first \(strayed.prefix(3))")
        }
        if lockFiles {
            #expect(!alphaValues.keys.contains { $0.hasPrefix("beta") }, "beta's keys in alpha")
            #expect(!betaValues.keys.contains { $0.hasPrefix("alpha") }, "alpha's keys in beta")
        }
        #expect(acknowledged > 200, "only \(acknowledged) commits acknowledged")
    }

    // MARK: 4. Hard-linked suites

    /// Suite beta's lock file is made a hard link of suite alpha's (a `link` to a
    /// temporary name, then a `rename` over beta's), once, while a writer of each
    /// commits. What must hold: a new process of either suite is refused
    /// (`.foreignFile`) while the lock file has two names; beta's writer's later
    /// commits fail with a typed error or are there; once the stray name is removed,
    /// every acknowledged commit of both is read by a new process. Holds; fails when
    /// `SuiteFiles` opens a lock file with two names.
    @Test func oneSuitesLockFileMadeAHardLinkOfAnothers() throws {
        try oneSuitesFileMadeAHardLinkOfAnothers(lockFile: true)
    }

    /// The same with beta's data file made a hard link of alpha's. What must hold:
    /// every commit of alpha's is read by a new process of alpha; beta's writer's later
    /// commits, and a new process of beta, are refused (`.foreignFile`: the file under
    /// beta's name was written for alpha). Found a hole (1 of about 170 of alpha's
    /// commits lost in one run of three): beta's writer followed its name to alpha's
    /// file and appended to it under beta's lock while alpha's writer appended under
    /// alpha's. Fails when the suite tag is not checked.
    @Test func oneSuitesDataFileMadeAHardLinkOfAnothers() throws {
        try oneSuitesFileMadeAHardLinkOfAnothers(lockFile: false)
    }

    func oneSuitesFileMadeAHardLinkOfAnothers(lockFile: Bool) throws {
        let directory = TemporaryDirectory()
        var writers: [ChildProcess] = []
        defer { for writer in writers { _ = writer.kill() } }
        for suite in ["alpha", "beta"] {
            let writer = try startWorker("hostile21", in: directory, suite: suite,
                                         ["scenario": "write", "prefix": suite, "count": "0", "pause-us": "300"])
            writers.append(writer)
            writer.expectLine(startingWith: "writing")
        }
        for writer in writers {
            _ = writer.waitForLines(timeout: .seconds(60)) { $0.count { $0.hasPrefix("ack ") } >= 50 }
        }
        let suffix = lockFile ? ".suite.lock" : ".suite"
        let alphaPath = directory.file("alpha" + suffix).path, betaPath = directory.file("beta" + suffix).path
        let temporary = directory.file("beta-link").path
        #expect(link(alphaPath, temporary) == 0 && rename(temporary, betaPath) == 0, "errno \(errno)")
        let attacked = Self.now()
        if lockFile {
            Self.letWritersRunPast(attacked, more: 0, writers)
        } else {
            Self.letWritersRunPast(attacked, more: 100, [writers[0]])
            Self.letWritersRunPast(attacked, more: 0, [writers[1]])
        }
        // Stopped by then: beta's writer may be refused at every commit.
        let alphaAcks = Self.acks(writers[0]), betaAcks = Self.acks(writers[1])
        for writer in writers { #expect(Self.untypedErrors(writer).count == 0, "\(Self.untypedErrors(writer).prefix(3))") }

        if lockFile {
            // A lock file with two names is refused by a new process of either suite;
            // once the stray name is removed, both read whole.
            for name in ["alpha", "beta"] {
                let refused = try Self.dump(name, at: directory.url)
                #expect(refused.values == nil && refused.report.contains("foreignFile"), "\(name): \(refused.report)")
            }
            #expect(unlink(betaPath) == 0)
        }
        let alpha = try Self.dump("alpha", at: directory.url)
        #expect(alpha.values != nil, "\(alpha.report)")
        let alphaLost = Self.missing(alphaAcks, in: alpha.values ?? [:])
        #expect(alphaLost.count == 0, "\(alphaLost.count) of \(alphaAcks.count) of alpha's commits lost, first \(alphaLost.prefix(3))")
        if lockFile {
            let beta = try Self.dump("beta", at: directory.url)
            let betaLost = Self.missing(betaAcks, in: beta.values ?? [:])
            #expect(beta.values != nil && betaLost.count == 0, "\(betaLost.count) of \(betaAcks.count) of beta's commits lost, first \(betaLost.prefix(3)); \(beta.report)")
        } else {
            // Beta's name leads to alpha's file: refused, to beta's writer after the
            // attack (its last line) and to a new process.
            let beta = try Self.dump("beta", at: directory.url)
            #expect(beta.values == nil && beta.report.contains("foreignFile"), "beta: \(beta.report)")
            let lastError = writers[1].lines.last { $0.hasPrefix("err ") }
            #expect(lastError?.hasSuffix("foreignFile") == true, "beta's writer: \(writers[1].lines.suffix(3))")
        }
    }

    // MARK: 5. Permissions taken away

    /// A writer running as an unprivileged user commits every 300 µs; its data file,
    /// then its lock file, is made read-only (0444) under it, and a second writer
    /// started after that tries to commit. What must hold: every acknowledged commit of
    /// either is read by a new process (once the mode is given back: a new process may
    /// be refused a read-only data file, with a typed error); every failure is a typed
    /// error; the second writer is refused (`.readOnly` or `.permissionDenied`, at its
    /// open or at its commits) or its commits are there. Holds. With the lock file
    /// made read-only it fails when a store that may only read is let commit (the
    /// second writer dies writing its read-only mapping); with the data file, the
    /// second writer is refused at its open (`.permissionDenied`), as is a new reader
    /// until the mode is given back.
    @Test(arguments: [false, true])
    func aSuiteFileMadeReadOnlyUnderAWriter(lockFile: Bool) throws {
        let uid: UInt32 = 65534
        guard getuid() == 0 else { return }  // needs root, to run the workers as another user
        let directory = TemporaryDirectory()
        #expect(chown(directory.path, uid, uid) == 0)
        let writer = try startWorker("hostile21", in: directory, suite: "guarded",
                                     ["scenario": "write", "prefix": "first", "count": "0", "pause-us": "300", "as-uid": "\(uid)"])
        defer { _ = writer.kill() }
        writer.expectLine(startingWith: "writing")
        _ = writer.waitForLines(timeout: .seconds(60)) { $0.count { $0.hasPrefix("ack ") } >= 50 }
        let target = directory.file(lockFile ? "guarded.suite.lock" : "guarded.suite").path
        #expect(chmod(target, 0o444) == 0)
        let changed = Self.now()
        let second = try startWorker("hostile21", in: directory, suite: "guarded",
                                     ["scenario": "write", "prefix": "second", "count": "20", "as-uid": "\(uid)"])
        defer { _ = second.kill() }
        let ended = second.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("done") || $0.hasPrefix("error ") }
        #expect(ended == "done" || ended?.hasPrefix("error readOnly") == true || ended?.hasPrefix("error permissionDenied") == true,
                "\(ended ?? "no end"); \(second.lines.suffix(3))")
        Self.letWritersRunPast(changed, more: 50, [writer])
        for worker in [writer, second] { #expect(Self.untypedErrors(worker).count == 0, "\(Self.untypedErrors(worker).prefix(3))") }
        let refused = Self.errors(second)
        #expect(refused.allSatisfy { $0.hasSuffix("readOnly") || $0.hasSuffix("permissionDenied") }, "\(refused.prefix(3))")
        let whileReadOnly = try Self.dump("guarded", at: directory.url, asUID: uid)
        #expect(whileReadOnly.values != nil || whileReadOnly.report.contains("error "), "\(whileReadOnly.report)")
        #expect(chmod(target, 0o600) == 0)
        let (values, report) = try Self.dump("guarded", at: directory.url, asUID: uid)
        #expect(values != nil, "\(report)")
        for worker in [writer, second] {
            let acks = Self.acks(worker)
            let lost = Self.missing(acks, in: values ?? [:])
            #expect(lost.count == 0, "\(lost.count) of \(acks.count) acknowledged commits lost, first \(lost.prefix(3))")
        }
    }

    // MARK: 6. Many threads, several suites, lock files deleted in a loop

    /// One process, 8 threads on 3 suites (lock timeout 300 ms), 400 commits each and
    /// more until this process has deleted the three lock files 300 times in a loop
    /// (a count of commits alone ended before 100 deletions once, under load), and the
    /// deletions going on until the worker ends. What must hold: the
    /// worker ends within 120 s (no hang, no crash); every acknowledged commit is read
    /// by a new process; every failure is a typed error (a few commits fail with
    /// `.ioFailure` or `.lockTimeout`). Holds; fails (up to 5% of the commits lost)
    /// when each `Suite` instance gets a store of its own (`StoreRegistry` not
    /// sharing), so that the threads of one suite hold two lock files.
    @Test func threadsOfSeveralSuitesWhileLockFilesAreDeletedInALoop() throws {
        let directory = TemporaryDirectory()
        let names = ["s0", "s1", "s2"]
        let worker = try startWorker("hostile21", in: directory, suite: "s0",
                                     ["scenario": "threads", "suites": names.joined(separator: ","), "threads": "8",
                                      "count": "400", "until-told": "yes", "lock-timeout-ms": "300"])
        defer { _ = worker.kill() }
        // Opened first: an open that meets the deletions may time out (`.lockTimeout`,
        // typed), which would leave nothing to attack.
        worker.expectLine(startingWith: "opened")
        let deadline = ContinuousClock.now + .seconds(120)
        let paths = names.map { directory.file($0 + ".suite.lock").path }
        var deletions = 0, rounds = 0, told = false
        while ContinuousClock.now < deadline {
            rounds += 1
            if !told && deletions >= 300 {
                worker.send("stop\n")
                told = true
            }
            if rounds % 64 == 0, worker.lines.last?.hasPrefix("done") == true || worker.state == nil { break }
            for path in paths where unlink(path) == 0 { deletions += 1 }
        }
        if !told { worker.send("stop\n") }
        #expect(worker.lines.contains { $0.hasPrefix("done") }, "no end within 120 s: \(worker.lines.suffix(3)); \(worker.standardError.suffix(500))")
        worker.expectSuccess(within: .seconds(30))
        #expect(Self.untypedErrors(worker).count == 0, "\(Self.untypedErrors(worker).prefix(3))")
        let acks = Self.acks(worker)
        #expect(acks.count > 100 && deletions > 100, "\(acks.count) acknowledged, \(deletions) deletions")
        for (index, name) in names.enumerated() {
            let (values, report) = try Self.dump(name, at: directory.url)
            #expect(values != nil, "\(report)")
            let own = acks.filter { (Int($0.writer.dropFirst()) ?? -1) % names.count == index }
            let lost = Self.missing(own, in: values ?? [:])
            #expect(lost.count == 0, "\(name): \(lost.count) of \(own.count) acknowledged commits lost, first \(lost.prefix(3))")
        }
    }

    /// Found while looking into the two-writer exchange above, the same without an
    /// exchange: two writer processes of one suite commit every 100 µs while this
    /// process deletes the suite's lock file in a tight loop for 3 s. What must hold:
    /// every acknowledged commit is read by a new process; every failure is a typed
    /// error. HOLE (known issue, intermittent: 1 to 3 of about 1,600 acknowledged
    /// commits lost in most runs, no error, no diagnostic): writer 1 locks the lock
    /// file and finds it still named; it is deleted; writer 2, following the name,
    /// makes a new lock file and locks it; both append to the data file at once.
    @Test func twoWriterProcessesWhileTheLockFileIsDeletedInALoop() throws {
        withKnownIssue("a writer holding a lock file that lost its name after its check writes beside one on the new file", isIntermittent: true) {
            let directory = TemporaryDirectory()
            var writers: [ChildProcess] = []
            defer { for writer in writers { _ = writer.kill() } }
            for number in 0..<2 {
                let writer = try startWorker("hostile21", in: directory, suite: "deleted",
                                             ["scenario": "write", "prefix": "w\(number)", "count": "0", "pause-us": "100"])
                writers.append(writer)
                writer.expectLine(startingWith: "ack ")
            }
            let path = directory.file("deleted.suite.lock").path
            let end = ContinuousClock.now + .seconds(3)
            var deletions = 0
            while ContinuousClock.now < end { if unlink(path) == 0 { deletions += 1 } }
            Self.letWritersRunPast(Self.now(), more: 10, writers)
            let (values, report) = try Self.dump("deleted", at: directory.url)
            #expect(values != nil, "\(report)")
            for writer in writers {
                let acks = Self.acks(writer)
                #expect(Self.untypedErrors(writer).count == 0, "\(Self.untypedErrors(writer).prefix(3))")
                let lost = Self.missing(acks, in: values ?? [:])
                #expect(lost.count == 0, "\(lost.count) of \(acks.count) acknowledged commits lost, first \(lost.prefix(3)); \(deletions) deletions")
            }
        }
    }
}
