import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@testable import SuiteDefaults

/// What a hostile user, or an unlucky deployment, does to a suite: forks, full disks,
/// headers set to extremes, FIFOs, long names, Unicode twins, stopped lock holders.
/// Whatever might crash a process runs in a worker process, so that a crash is a
/// failed expectation here rather than the end of the test run.
@Suite("Hostile input and unlucky deployments")
struct HostileTests {
    let directory = TemporaryDirectory()

    /// Runs a worker to its end and returns its report lines.
    func outcome(_ command: String, suite: String, _ options: [String: String] = [:]) throws -> [String] {
        let worker = try startWorker(command, in: directory, suite: suite, options)
        worker.expectSuccess(within: .seconds(60))
        return worker.lines
    }

    // MARK: fork

    @Test func aChildForkedInsideATransactionNeitherCommitsItNorHoldsItsLock() throws {
        let worker = try startWorker("fork-in-transaction", in: directory, suite: "inside", ["lock-timeout-ms": "300"])
        worker.expectLine(startingWith: "parent committed", within: .seconds(60))
        worker.expectSuccess()
        #expect(worker.lines.contains { $0.hasPrefix("child commit: error ioFailure") }, "\(worker.lines)")
        // The parent held its lock all along: the child's own write had to wait for it.
        #expect(worker.lines.contains { $0.hasPrefix("child write: error lockTimeout") }, "\(worker.lines)")
        #expect(worker.lines.contains("parent saw child exit 7"))
        let suite = try Suite(named: "inside", directory: directory.url)
        #expect(suite.string(forKey: "owner") == "parent")
        #expect(suite.string(forKey: "child") == nil)
    }

    @Test func aForkedChildObservesForItself() throws {
        let writer = try Suite(named: "seen", directory: directory.url)
        try writer.set("before", forKey: "ping")
        let worker = try startWorker("fork-observe", in: directory, suite: "seen", ["key": "ping"])
        worker.expectLine(startingWith: "child observing")
        try writer.set("after", forKey: "ping")
        // The two processes report in either order.
        let wanted = ["child received \"after\"", "parent received \"after\"", "child status 0"]
        #expect(worker.waitForLines(timeout: .seconds(60)) { lines in wanted.allSatisfy(lines.contains) }, "\(worker.lines)")
        worker.expectSuccess()
        #expect(worker.lines.filter { $0.hasPrefix("parent received") }.count == 1, "the parent's observation stayed the parent's")
    }

    // MARK: Descriptors

    @Test func everyDescriptorTheLibraryOpensIsCloseOnExec() throws {
        let suite = try Suite(named: "exec", directory: directory.url)
        try suite.set(1, forKey: "k")
        let token = try suite.observe { _ in }
        let listing = try Suite.observeSuites(in: directory.url) { _ in }
        defer { token.cancel(); listing.cancel() }
        try suite.compact()
        var checked = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd") {
            guard let fd = Int32(name),
                  let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(name)"),
                  target.hasPrefix(directory.url.standardizedFileURL.path) || target == "anon_inode:inotify"
            else { continue }
            checked += 1
            #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0, "descriptor \(fd) to \(target) is inherited by programs the app starts")
        }
        #expect(checked >= 4, "the directory, the lock file, the data file and inotify are open")
    }

    @Test func aProgramStartedWhileHoldingTheLockDoesNotKeepIt() throws {
        try Suite(named: "spawner", directory: directory.url).set(0, forKey: "k")
        let holder = try startWorker("hold-lock-spawn", in: directory, suite: "spawner")
        let spawned = holder.expectLine(startingWith: "spawned ").flatMap { pid_t($0.dropFirst("spawned ".count)) }
        defer { if let spawned { Glibc.kill(spawned, SIGKILL) } }
        #expect(spawned != nil)
        holder.kill()
        // With the app dead, its lock is gone, whatever it started is still running.
        if let spawned { #expect(Glibc.kill(spawned, 0) == 0, "the started program still runs") }
        let writer = try startWorker("try-set", in: directory, suite: "spawner", ["key": "k", "value": "free", "lock-timeout-ms": "2000"])
        writer.expectLine(startingWith: "ok")
        writer.expectSuccess()
    }

    @Test func aForkedChildDoesNotKeepItsParentsLockAlive() throws {
        try Suite(named: "bystander", directory: directory.url).set(0, forKey: "k")
        let holder = try startWorker("fork-then-hold", in: directory, suite: "bystander")
        let child = holder.expectLine(startingWith: "child ").flatMap { pid_t($0.dropFirst("child ".count)) }
        defer { if let child { Glibc.kill(child, SIGKILL) } }
        holder.expectLine(startingWith: "holding")
        holder.kill()
        // The child, which never used the suite, still runs; the lock died with its holder.
        if let child { #expect(Glibc.kill(child, 0) == 0) }
        let writer = try startWorker("try-set", in: directory, suite: "bystander", ["key": "k", "value": "free", "lock-timeout-ms": "2000"])
        writer.expectLine(startingWith: "ok")
        writer.expectSuccess()
    }

    // MARK: Full disk

    @Test(.enabled(if: geteuid() == 0, "mounting a small tmpfs needs root"))
    func aNewSuiteOnAFullDiskIsNoSpaceNotACrash() throws {
        let place = directory.file("tiny")
        #expect(mkdir(place.path, 0o700) == 0)
        guard mount("tmpfs", place.path, "tmpfs", 0, "size=64k,mode=0700") == 0 else {
            Issue.record("could not mount a tmpfs: \(String(cString: strerror(errno)))")
            return
        }
        defer { umount2(place.path, Int32(MNT_DETACH)) }
        // Fill it to the last block.
        let filler = open(place.appendingPathComponent("filler").path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        let block = [UInt8](repeating: 7, count: 4096)
        while block.withUnsafeBytes({ write(filler, $0.baseAddress, $0.count) }) > 0 {}
        close(filler)
        let worker = try startWorker("try-set", at: place, suite: "new", ["key": "k", "value": "v"])
        worker.expectLine(startingWith: "error noSpace")
        worker.expectSuccess()
        // Room again: the same suite is created and written.
        _ = unlink(place.appendingPathComponent("filler").path)
        let retry = try startWorker("try-set", at: place, suite: "new", ["key": "k", "value": "v"])
        retry.expectLine(startingWith: "ok")
        retry.expectSuccess()
    }

    // MARK: The shared header

    /// Writes `value` at `offset` of the lock file, as another member of the group could.
    func poke(_ value: UInt64, at offset: Int, of suite: String, width: Int = 8) {
        let fd = open(directory.file(suite + ".suite.lock").path, O_RDWR | O_CLOEXEC)
        defer { close(fd) }
        var bytes = value
        #expect(pwrite(fd, &bytes, width, off_t(offset)) == width)
    }

    @Test func headerFieldsSetToExtremesNeitherCrashNorLoseData() throws {
        let extremes: [UInt64] = [0, 1, 2, 31, 33, 0x7FFF_FFFF, 0xFFFF_FFFF, 1 << 62, (1 << 62) + 1,
                                  UInt64(Int64.max), 1 << 63, UInt64.max - 1, UInt64.max]
        // magic, layout and pid, generation, committed length, data file ID, last
        // sequence, boot ID, the lock's futex words.
        let fields = [0, 8, 16, 24, 32, 40, 48, 64]
        let suite = try Suite(named: "poked", directory: directory.url)
        try suite.set("kept", forKey: "k")
        var round = 0
        for field in fields {
            for value in extremes {
                round += 1
                poke(value, at: field, of: "poked")
                // A process opening the suite now, and this one, which has it open.
                let lines = try outcome("hostile-check", suite: "poked", ["key": "k", "key2": "w", "value": "\(round)"])
                #expect(lines.contains("read \"kept\" wrote \(round)"), "field \(field) = \(value): \(lines)")
                #expect(suite.string(forKey: "k") == "kept", "field \(field) = \(value)")
                try suite.set("mine\(round)", forKey: "m")
                #expect(suite.string(forKey: "m") == "mine\(round)", "field \(field) = \(value)")
            }
        }
        let fresh = try outcome("get", suite: "poked", ["key": "m"])
        #expect(fresh.contains("value \"mine\(round)\""))
    }

    @Test func aRecordWithAnExtremeSequenceNumberIsDamageNotATrap() throws {
        do {
            let suite = try Suite(named: "seq", directory: directory.url)
            try suite.set("kept", forKey: "k")
        }
        // A record whose checksum is valid but whose sequence number is near the end
        // of the range, appended as the last record of the journal.
        let record = RecordFormat.encode(Record(kind: .transaction, sequence: .max - 1, timestamp: 0, pid: 1,
                                                operations: [.set(key: "evil", value: "x", size: 3)]))
        var bytes = directory.bytes(of: "seq.suite")!
        bytes += record
        try directory.write(bytes, to: "seq.suite")
        _ = unlink(directory.file("seq.suite.lock").path)
        let lines = try outcome("hostile-check", suite: "seq", ["key": "k", "key2": "after", "value": "ok"])
        #expect(lines.contains("read \"kept\" wrote ok"), "\(lines)")
        #expect(lines.contains("diagnostic repairedDamage"))
    }

    @Test func aHugeCommittedLengthIsRebuiltNotAllocated() throws {
        let suite = try Suite(named: "huge", directory: directory.url)
        try suite.set("kept", forKey: "k")
        poke(UInt64(Int64.max), at: 24, of: "huge")
        let lines = try outcome("hostile-check", suite: "huge", ["key": "k", "key2": "w", "value": "1"])
        #expect(lines.contains("read \"kept\" wrote 1"), "\(lines)")
        #expect(lines.contains("diagnostic rebuiltSharedHeader"))
    }

    // MARK: Foreign files

    @Test func aHugeFileAtTheSuitesNameIsRefusedWithoutReadingIt() throws {
        for (name, magic) in [("foreign", [UInt8]()), ("giant", DataFileHeader.magic)] {
            let path = directory.file(name + ".suite").path
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
            _ = magic.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            #expect(ftruncate(fd, 40 << 30) == 0, "a sparse 40 GB file")
            close(fd)
            let lines = try outcome("get", suite: name, ["key": "k"])
            #expect(lines.contains { $0.hasPrefix(magic.isEmpty ? "error foreignFile" : "error suiteTooLarge") }, "\(lines)")
        }
    }

    @Test(.enabled(if: geteuid() == 0, "reading as another user needs root to set up"))
    func aFIFOAtTheSuitesNameIsRefusedWithoutWaiting() throws {
        // A place another user may only read, with a lock file, and a FIFO for data.
        let place = directory.file("fifo")
        #expect(mkdir(place.path, 0o755) == 0)
        let lock = place.appendingPathComponent("pipe.suite.lock").path
        #expect(FileManager.default.createFile(atPath: lock, contents: Data(count: 4096)))
        #expect(mkfifo(place.appendingPathComponent("pipe.suite").path, 0o644) == 0)
        _ = chmod(directory.path, 0o711)
        for path in [place.path, lock, place.appendingPathComponent("pipe.suite").path] { _ = chown(path, 65534, 65534) }
        _ = chmod(place.path, 0o555)
        _ = chmod(lock, 0o444)
        let reader = try startWorker("get", at: place, suite: "pipe", ["key": "k", "as-uid": "65534"])
        reader.expectLine(startingWith: "error foreignFile", within: .seconds(20))
        reader.expectSuccess(within: .seconds(20))
    }

    @Test(.enabled(if: geteuid() == 0, "reading as another user needs root to set up"))
    func aSuiteInADirectoryThatIsOnlyReadableCanBeRead() throws {
        let place = directory.file("shelf")
        do {
            let suite = try Suite(named: "prefs", directory: place)
            try suite.set("kept", forKey: "k")
        }
        _ = unlink(place.appendingPathComponent("prefs.suite.lock").path)
        _ = chmod(directory.path, 0o711)
        for path in [place.path, place.appendingPathComponent("prefs.suite").path] { _ = chown(path, 65534, 65534) }
        _ = chmod(place.path, 0o555)
        let reader = try startWorker("get", at: place, suite: "prefs", ["key": "k", "as-uid": "65534"])
        reader.expectLine(startingWith: "value \"kept\"")
        reader.expectSuccess()
        #expect(!FileManager.default.fileExists(atPath: place.appendingPathComponent("prefs.suite.lock").path))
    }

    @Test func aHardLinkedLockFileIsRefused() throws {
        try Suite(named: "linked", directory: directory.url).set(1, forKey: "k")
        #expect(link(directory.file("linked.suite.lock").path, directory.file("elsewhere").path) == 0)
        let lines = try outcome("get", suite: "linked", ["key": "k"])
        #expect(lines.contains { $0.hasPrefix("error foreignFile") }, "\(lines)")
    }

    @Test func aGroupWritableDirectoryIsRefusedForAPrivateSuite() throws {
        let place = directory.file("groupish")
        #expect(mkdir(place.path, 0o700) == 0 && chmod(place.path, 0o770) == 0)
        let error = #expect(throws: SuiteError.self) { try Suite(named: "prefs", directory: place) }
        #expect(error?.code == .foreignOwner)
        _ = try Suite(named: "prefs", directory: place, options: .init(sharing: .group))
    }

    // MARK: A stopped lock holder

    @Test func aReadGoesOnWhileThisProcessWaitsForAStoppedHolder() throws {
        // An observer's catch-up waits for the lock as long as it takes; the process's
        // reads wait no longer than their own timeout meanwhile.
        let suite = try Suite(named: "waiting", directory: directory.url, options: .init(lockTimeout: .milliseconds(300)))
        try suite.set("v1", forKey: "k")
        let token = try suite.observe { _ in }
        defer { token.cancel() }
        let writer = try startWorker("pause", in: directory, suite: "waiting", ["point": "recordWritten", "key": "k", "value": "v2"])
        writer.expectLine(startingWith: "paused")
        defer { _ = writer.kill() }
        let answered = DispatchSemaphore(value: 0)
        let value = Locked<String?>(nil)
        Thread {
            value.withLock { $0 = suite.string(forKey: "k") }
            answered.signal()
        }.start()
        #expect(answered.wait(timeout: .now() + 30) == .success, "the read waited for the stopped holder")
        #expect(value.withLock { $0 } == "v1")
    }

    /// A data file deleted under an observer: the next writer repairs, finding it
    /// missing, and the suite starts over in a new file. The net changes the observer
    /// receives (every key removed) are numbered after what it already saw, not from
    /// the empty state's 0: sequence numbers never go back. (Found with a probe of
    /// `suite-stress hostile`, whose watcher counted every such change out of order.)
    @Test func aSuiteThatStartsOverNumbersItsNetChangesAfterWhatObserversSaw() throws {
        let suite = try Suite(named: "over", directory: directory.url)
        try suite.set("a", forKey: "k1")
        try suite.set("b", forKey: "k2")
        let recorder = ChangeRecorder()
        let token = try SuiteObservation.allKeys.start(in: suite, onChange: recorder.handler)
        defer { token.cancel() }
        try suite.set("c", forKey: "k3")
        #expect(recorder.wait(for: "k3", toBecome: "c"))
        #expect(unlink(directory.file("over.suite").path) == 0)
        try writeFromAnotherProcess("k4", "d", in: directory.url, suite: "over")
        #expect(recorder.wait(for: "k4", toBecome: "d"), "\(recorder.changes)")
        let changes = recorder.changes
        #expect(changes.contains { $0.key == "k1" && $0.newValue == nil && $0.kind == .netChange }, "\(changes)")
        for (earlier, later) in zip(changes, changes.dropFirst()) {
            #expect(later.sequence >= earlier.sequence, "\(earlier) then \(later)")
        }
    }

    @Test func aTransactionWhoseLockFileIsDeletedWritesNothing() throws {
        let suite = try Suite(named: "deleted", directory: directory.url)
        try suite.set("1", forKey: "base")
        let error = #expect(throws: SuiteError.self) {
            try suite.update { tx in
                try tx.set("yes", forKey: "slow")
                // Deleted under the holder: a newcomer makes a new lock file, takes it
                // and writes, while this transaction still runs.
                #expect(unlink(directory.file("deleted.suite.lock").path) == 0)
                let other = try startWorker("try-set", in: directory, suite: "deleted", ["key": "other", "value": "2", "lock-timeout-ms": "500"])
                other.expectLine(startingWith: "ok")
                other.expectSuccess()
            }
        }
        #expect(error?.code == .ioFailure)
        let lines = try outcome("get", suite: "deleted", ["key": "other"])
        #expect(lines.contains("value \"2\""), "the newcomer's acknowledged write is kept: \(lines)")
        #expect(try outcome("get", suite: "deleted", ["key": "slow"]).contains("absent"))
    }

    // MARK: Repair

    @Test func aSuiteWithALongNameCanBeRepaired() throws {
        let name = String(repeating: "n", count: 220)
        do {
            let suite = try Suite(named: name, directory: directory.url)
            try suite.set("first", forKey: "a")
            try suite.set("second", forKey: "b")
        }
        var bytes = directory.bytes(of: name + ".suite")!
        bytes[bytes.count - 6] ^= 0xFF
        try directory.write(bytes, to: name + ".suite")
        _ = unlink(directory.file(name + ".suite.lock").path)
        let lines = try outcome("get", suite: name, ["key": "a"])
        #expect(lines.contains("value \"first\""), "\(lines)")
        #expect(lines.contains("diagnostic repairedDamage"))
        let kept = directory.names().filter { $0.contains(".damaged-") }
        #expect(kept.count == 1 && kept.allSatisfy { $0.utf8.count <= 255 }, "\(kept)")
    }

    @Test func keptCopiesNeverReplaceOneAnother() throws {
        let recorder = DiagnosticsRecorder(directory)
        let suite = try Suite(named: "thrice", directory: directory.url)
        for round in 0..<3 {
            try suite.set("v\(round)", forKey: "k\(round)")
            // Garbage appended without the lock: damage, repaired by the next write.
            let fd = open(directory.file("thrice.suite").path, O_WRONLY | O_APPEND | O_CLOEXEC)
            _ = write(fd, "garbage\(round)", 8)
            close(fd)
            try suite.set("after\(round)", forKey: "after")
        }
        let kept = directory.names().filter { $0.contains(".damaged-") }
        let reported = recorder.all.filter { $0.kind == .repairedDamage }.compactMap(\.path)
        #expect(reported.count == 3)
        #expect(Set(reported.map { URL(fileURLWithPath: $0).lastPathComponent }) == Set(kept), "every diagnostic names a copy that is there")
        #expect(kept.count == 3, "\(kept)")
    }

    @Test func findingTheNextRecordAfterDamageIsNotQuadratic() throws {
        // A file of record headers with large lengths at every record: looking for the
        // next record after damage would checksum megabytes at each one.
        var bytes = DataFileHeader.magic + [UInt8](repeating: 0, count: 24)
        let size = 8 << 20
        var unit = RecordFormat.magicBytes
        withUnsafeBytes(of: UInt32(size / 2).littleEndian) { unit += $0 }
        unit += [UInt8](repeating: 0, count: 20) + [1, 0, 0, 0]
        while bytes.count < size { bytes += unit }
        try directory.write(bytes, to: "crafted.suite")
        let worker = try startWorker("get", in: directory, suite: "crafted", ["key": "k"])
        worker.expectLine(startingWith: "absent", within: .seconds(120))
        worker.expectSuccess(within: .seconds(120))
    }

    @Test func aSequenceNumberTheHeaderAcceptsKeepsItAccepted() throws {
        let suite = try Suite(named: "numbered", directory: directory.url)
        try suite.set("kept", forKey: "k")
        poke((1 << 61), at: 40, of: "numbered")
        #expect(try outcome("try-set", suite: "numbered", ["key": "a", "value": "1"]).contains("ok"))
        let after = try outcome("try-set", suite: "numbered", ["key": "b", "value": "2"])
        #expect(after.contains("ok") && !after.contains("diagnostic rebuiltSharedHeader"), "\(after)")
        poke(FormatLimits.maximumSequence, at: 40, of: "numbered")
        #expect(try outcome("try-set", suite: "numbered", ["key": "c", "value": "3"]).contains("ok"), "no header can use the numbers up")
    }

    @Test func aFileSizeLimitBelowAPageIsNoSpaceNotADeath() throws {
        let lines = try outcome("try-set", suite: "limited", ["key": "k", "value": "v", "file-size-limit-strict": "2048"])
        #expect(lines.contains { $0.hasPrefix("error noSpace") }, "\(lines)")
    }

    @Test func moreSuitesThanTheFirstGuardTableHoldsAreGuarded() throws {
        let lines = try outcome("many-open", suite: "unused", ["count": "4200"])
        #expect(lines.contains("read kept of 4200"), "\(lines)")
    }

    @Test func aForkedChildThatCannotRefreshAnswersWithItsParentsState() throws {
        try Suite(named: "cached", directory: directory.url).set("parent's", forKey: "k")
        let lines = try outcome("fork-read-while-held", suite: "cached", ["key": "k", "lock-timeout-ms": "300"])
        #expect(lines.contains("child read \"parent's\""), "\(lines)")
    }

    @Test func aDirectoryOrSocketAtTheSuitesNameIsAForeignFile() throws {
        #expect(mkdir(directory.file("dir.suite").path, 0o700) == 0)
        let error = #expect(throws: SuiteError.self) { try Suite(named: "dir", directory: directory.url) }
        #expect(error?.code == .foreignFile)
    }

    // MARK: Unicode and bytes

    @Test func unicodeTwinsAreOneSuiteAndOneKey() throws {
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        let first = try Suite(named: composed, directory: directory.url)
        let second = try Suite(named: decomposed, directory: directory.url)
        #expect(first.fileURL == second.fileURL)
        #expect(second.name.utf8.elementsEqual(composed.utf8))
        try second.set("v", forKey: "k" + decomposed)
        // Another process, spelling both the other way, sees one suite and one key.
        let lines = try outcome("get", suite: composed, ["key": "k" + composed])
        #expect(lines.contains("value \"v\""), "\(lines)")
        let other = try outcome("try-set", suite: decomposed, ["key": "k" + decomposed, "value": "w"])
        #expect(other.contains("ok"))
        #expect(first.string(forKey: "k" + composed) == "w")
        #expect(directory.names().filter { $0.hasSuffix(".suite") } == [composed + ".suite"])
        #expect(first.storedValues().keys.map { Array($0.utf8) } == [Array(("k" + composed).utf8)])
    }

    @Test func writesThatDifferOnlyInTheirBytesAreWritten() throws {
        let suite = try Suite(named: "bytes", directory: directory.url)
        let recorder = ChangeRecorder()
        let token = try suite.observe(onChange: recorder.handler)
        defer { token.cancel() }
        try suite.set(0.0, forKey: "zero")
        try suite.set(-0.0, forKey: "zero")
        try suite.set("caf\u{E9}", forKey: "word")
        try suite.set("cafe\u{301}", forKey: "word")
        #expect(recorder.wait { $0.count == 4 }, "\(recorder.changes)")
        // Read back by another process: the bytes last written.
        let zero = try outcome("get", suite: "bytes", ["key": "zero"])
        #expect(zero.contains("value -0.0"), "\(zero)")
        let stored = try Suite(named: "bytes", directory: directory.url, options: .init())
        try stored.reload()
        #expect(stored.double(forKey: "zero")?.sign == .minus)
        #expect(stored.string(forKey: "word").map { Array($0.utf8) } == Array("cafe\u{301}".utf8))
        // compareAndSet compares as stored too.
        #expect(try suite.compareAndSet(expected: 0.0, new: 1.0, forKey: "zero") == false)
        #expect(try suite.compareAndSet(expected: -0.0, new: 1.0, forKey: "zero") == true)
    }

    // MARK: A watched directory removed and made again

    @Test func observersFollowADirectoryRemovedAndMadeAgain() throws {
        let place = directory.file("moving")
        let path = place.standardizedFileURL.path
        let diagnostics = Locked<[String]>([])
        let token = SuiteDiagnostics.observe { diagnostic in
            if diagnostic.directory == path, diagnostic.kind == .directoryReplaced { diagnostics.withLock { $0.append(diagnostic.message) } }
        }
        defer { token.cancel() }
        let suite = try Suite(named: "prefs", directory: place)
        try suite.set(1, forKey: "k")
        let changes = ChangeRecorder(), everything = ChangeRecorder()
        let observation = try suite.observe(keys: ["k"], onError: changes.errorHandler, onChange: changes.handler)
        let listing = try Suite.observeSuites(in: place, onChange: everything.handler)
        defer { observation.cancel(); listing.cancel() }

        try FileManager.default.removeItem(at: place)
        #expect(poll(within: .seconds(30)) { diagnostics.withLock { $0.count } >= 1 }, "the removal is reported")
        #expect(changes.waitForError(), "the observation hears of the removal")
        #expect(changes.errors.first?.code == .notFound && changes.errors.first?.path == path, "\(changes.errors)")
        #expect(mkdir(place.path, 0o700) == 0)
        // Another process writes in the new directory: both observations hear of it.
        let other = try startWorker("try-set", at: place, suite: "prefs", ["key": "k", "value": "two"])
        other.expectLine(startingWith: "ok")
        other.expectSuccess()
        #expect(changes.wait(for: "k", toBecome: "two"), "\(changes.changes)")
        let created = try startWorker("try-set", at: place, suite: "created", ["key": "j", "value": "new"])
        created.expectLine(startingWith: "ok")
        created.expectSuccess()
        #expect(everything.wait { $0.contains { $0.suite == "created" && $0.newValue == "new" } }, "\(everything.changes)")
        #expect(diagnostics.withLock { $0.count } >= 2, "the directory's return is reported too")
        #expect(suite.string(forKey: "k") == "two")
    }

    @Test func anObservationCancelledWhileItsSuiteMovesIsNotWatchedAgain() throws {
        let place = directory.file("busy")
        let path = place.standardizedFileURL.path
        var suite: Suite? = try Suite(named: "busy", directory: place)
        // A listener of another directory: with the reading paused for the blocked
        // callback below, it is the one the reading must go on for (the thread standing
        // by reads); with no one else observed, the reading waits for the callback, and
        // the removal would be read only after it (the test passed alone never, and in a
        // full run only while other tests' observations happened to be running).
        let elsewhere = directory.file("elsewhere")
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        let bystander = try Suite.observeSuites(in: elsewhere) { _ in }
        defer { bystander.cancel() }
        let entered = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        // Keeps the observers' queue busy, so that the move to the new directory waits.
        let token = try suite!.observe { change in
            if change.key == "block" {
                entered.signal()
                release.wait()
            }
        }
        try suite!.set(1, forKey: "block")
        entered.wait()
        try FileManager.default.removeItem(at: place)
        #expect(poll(within: .seconds(30)) { !ChangeWatcher.shared.watchedDirectories.contains(path) })
        #expect(mkdir(place.path, 0o700) == 0)
        #expect(poll(within: .seconds(30)) { ChangeWatcher.shared.suitesBeingMoved > 0 }, "the move is queued")
        token.cancel()
        release.signal()
        #expect(poll(within: .seconds(30)) { ChangeWatcher.shared.suitesBeingMoved == 0 })
        suite = nil
        #expect(!ChangeWatcher.shared.watchedDirectories.contains(path), "no watch is left for a cancelled observation")
    }

    @Test func twoStoresOfOneSuiteAfterItsDirectoryWasMadeAgainBothHearChanges() throws {
        let place = directory.file("twice")
        let path = place.standardizedFileURL.path
        let first = try Suite(named: "twice", directory: place)
        let before = ChangeRecorder(), after = ChangeRecorder()
        let firstToken = try first.observe(onChange: before.handler)
        try FileManager.default.removeItem(at: place)
        #expect(poll(within: .seconds(30)) { !ChangeWatcher.shared.watchedDirectories.contains(path) })
        #expect(mkdir(place.path, 0o700) == 0)
        #expect(poll(within: .seconds(30)) { ChangeWatcher.shared.watchedDirectories.contains(path) }, "the first store follows the directory")
        // A new instance opens a second store in the new directory, with a hub of its own.
        let second = try Suite(named: "twice", directory: place)
        let secondToken = try second.observe(onChange: after.handler)
        try writeFromAnotherProcess("x", "1", in: place, suite: "twice")
        #expect(after.wait(for: "x", toBecome: "1"))
        #expect(before.wait(for: "x", toBecome: "1"), "the first observer still hears changes")
        withExtendedLifetime((firstToken, secondToken)) {}
    }

    @Test func anErrorHandlerOfADirectoryObservationMayCancelIt() throws {
        let place = directory.file("listed")
        #expect(mkdir(place.path, 0o700) == 0)
        let token = Locked<SuiteCancellable?>(nil)
        let called = DispatchSemaphore(value: 0)
        let observation = try Suite.observeSuites(in: place, onError: { _ in
            token.withLock { $0 }?.cancel()
            called.signal()
        }, onChange: { _ in })
        token.withLock { $0 = observation }
        // Whole at once: a file seen while still empty would be taken for a suite's.
        try Data("not a suite file, just text".utf8).write(to: place.appendingPathComponent("bad.suite"), options: .atomic)
        #expect(called.wait(timeout: .now() + 30) == .success, "onError ran and its cancel returned")
    }

    @Test(.onThreadsOfItsOwn) func aSequenceOfADirectoryEndsWithTheErrorOfASuiteItCannotOpen() async throws {
        let place = directory.file("sequence")
        #expect(mkdir(place.path, 0o700) == 0)
        let changes = try Suite.changesOfSuites(in: place)
        let loop = Task(executorPreference: ThreadsOfItsOwnExecutor.shared) { () -> SuiteError? in
            do {
                for try await _ in changes {}
            } catch {
                return error as? SuiteError
            }
            return nil
        }
        // Whole at once: a file seen while still empty would be taken for a suite's.
        try Data("not a suite file, just text".utf8).write(to: place.appendingPathComponent("bad.suite"), options: .atomic)
        let deadline = Task {
            try? await Task.sleep(for: .seconds(60))
            loop.cancel()
        }
        let error = await loop.value
        deadline.cancel()
        #expect(error?.code == .foreignFile, "\(String(describing: error))")
    }

    // MARK: The lock file cut short

    @Test func aLockFileCutShortUnderItsReadersKillsNoOne() throws {
        let suite = try Suite(named: "cut", directory: directory.url)
        try suite.set(0, forKey: "version")
        let readers = try (0..<2).map { _ in
            try startWorker("invariant-reader", in: directory, suite: "cut")
        }
        for reader in readers { reader.expectLine(startingWith: "opened") }
        for round in 1...20 {
            try suite.update { tx in
                try tx.set(round, forKey: "a")
                try tx.set(-round, forKey: "b")
                try tx.set(round, forKey: "version")
            }
            if round % 5 == 0 { #expect(truncate(directory.file("cut.suite.lock").path, 0) == 0) }
        }
        try suite.set(true, forKey: "stop")
        for reader in readers {
            let report = reader.expectLine(startingWith: "reads ", within: .seconds(60))
            reader.expectSuccess()
            #expect(report?.contains("torn 0 regressions 0 last 20") == true, "\(report ?? "")")
        }
        try suite.set(21, forKey: "version")
        #expect(try outcome("get", suite: "cut", ["key": "version"]).contains("value 21"))
    }

    /// Processes waiting for the lock count themselves in the shared page. When the
    /// lock file is cut short under them and made again, the count ends at 0 once they
    /// are done: not below, wrapped to 2^32 - 1, which would make every later release
    /// of the suite a wake-up call.
    @Test func theWaiterCountEndsAtZeroWhenTheLockFileIsCutShortUnderItsWaiters() throws {
        try Suite(named: "waited", directory: directory.url).set(0, forKey: "k")
        let lockPath = directory.file("waited.suite.lock").path
        func waiterCount() -> UInt32? { SuiteDefaultsTests.waiterCount(ofLockFile: lockPath) }
        let holder = try startWorker("hold-lock", in: directory, suite: "waited")
        holder.expectLine(startingWith: "holding")
        let waiters = try (0..<4).map { index in
            try startWorker("try-set", in: directory, suite: "waited", ["key": "w\(index)", "value": "set", "lock-timeout-ms": "60000"])
        }
        // Each counts itself once it has spun for 100 µs.
        #expect(poll(within: .seconds(30)) { waiterCount() == 4 }, "\(waiterCount().map(String.init) ?? "nil")")
        #expect(truncate(lockPath, 0) == 0)
        holder.kill()
        for waiter in waiters {
            waiter.expectLine(startingWith: "ok", within: .seconds(60))
            waiter.expectSuccess()
        }
        #expect(waiterCount() == 0, "\(waiterCount().map(String.init) ?? "nil")")
        let suite = try Suite(named: "waited", directory: directory.url)
        #expect((0..<4).allSatisfy { suite.string(forKey: "w\($0)") == "set" })
    }

    /// A process waiting for the lock on a lock file that loses its name moves, once
    /// it has that lock, to the new file, and is counted there while it waits again, so
    /// that the new file's holder wakes it when it lets go (not its 5 ms sleeps).
    @Test func aWaiterThatMovesToANewLockFileIsCountedThere() throws {
        try Suite(named: "moved", directory: directory.url).set(0, forKey: "k")
        let lockPath = directory.file("moved.suite.lock").path
        let first = try startWorker("hold-lock", in: directory, suite: "moved")
        first.expectLine(startingWith: "holding")
        let waiter = try startWorker("try-set", in: directory, suite: "moved", ["key": "w", "value": "set", "lock-timeout-ms": "60000"])
        #expect(poll(within: .seconds(30)) { waiterCount(ofLockFile: lockPath) == 1 })
        // The name goes; a newcomer makes a new lock file and holds it.
        #expect(unlink(lockPath) == 0)
        let second = try startWorker("hold-lock", in: directory, suite: "moved")
        second.expectLine(startingWith: "holding")
        #expect(waiterCount(ofLockFile: lockPath) == 0, "the newcomer's file")
        // The first lets go: the waiter finds its file without a name and waits on the new one.
        first.kill()
        #expect(poll(within: .seconds(30)) { waiterCount(ofLockFile: lockPath) == 1 }, "\(waiterCount(ofLockFile: lockPath).map(String.init) ?? "nil")")
        second.kill()
        waiter.expectLine(startingWith: "ok", within: .seconds(60))
        waiter.expectSuccess()
        #expect(waiterCount(ofLockFile: lockPath) == 0)
        #expect(try Suite(named: "moved", directory: directory.url).string(forKey: "w") == "set")
    }

    /// A count of waiters left behind (a waiter killed while counted) does not outlive
    /// the header: the process that sets the header up again, after a reboot here,
    /// starts the count at 0.
    @Test func aLeftoverWaiterCountIsClearedWhenTheHeaderIsSetUpAgain() throws {
        try Suite(named: "rebooted", directory: directory.url).set(0, forKey: "k")
        let lockPath = directory.file("rebooted.suite.lock").path
        let handle = try #require(FileHandle(forUpdatingAtPath: lockPath))
        // Three waiters' counts that nobody will take back, and another boot's ID.
        try handle.seek(toOffset: 68)
        try handle.write(contentsOf: withUnsafeBytes(of: UInt32(3).littleEndian) { Data($0) })
        try handle.seek(toOffset: 48)
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 16))
        try handle.close()
        #expect(waiterCount(ofLockFile: lockPath) == 3)
        let writer = try startWorker("try-set", in: directory, suite: "rebooted", ["key": "k", "value": "after"])
        writer.expectLine(startingWith: "ok")
        writer.expectSuccess()
        #expect(waiterCount(ofLockFile: lockPath) == 0)
        #expect(try Suite(named: "rebooted", directory: directory.url).string(forKey: "k") == "after")
    }
}
