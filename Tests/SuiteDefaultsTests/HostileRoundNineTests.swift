import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
import ToolSupport
@_spi(Testing) @testable import SuiteDefaults

/// Round nine of attacks (a helper, real processes), on how a reader under the shared
/// lock treats a dead writer's odd generation. `0401df6` sent it to the exclusive
/// lock's rebuild (or, in a process that may only read, to a read of the whole file),
/// so that it would not stay a commit behind the file. That made a reader wait for a
/// reader stopped with the shared lock, a forged odd bit cost a full rebuild per read,
/// and an observer that may only read heard every key removed and the whole history
/// again. Now it reads on under the shared lock, and also reads a record the dead
/// writer left whole past the committed length (`aReloadAfterAHolderDiesAgreesWithTheFile`).
@Suite("Round nine: a reader that finds a dead writer's odd generation", .serialized)
struct HostileRoundNineTests {
    let directory = TemporaryDirectory()

    static var canDropCapabilities: Bool {
        geteuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
    }

    /// Starts `program` as root without any capability: file modes bind it as they
    /// bind any user, so a file of mode 0440 is one it may only read.
    static func startWithoutCapabilities(_ program: String, _ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(executable: "/usr/bin/setpriv",
                         arguments: ["--bounding-set", "-all", "--inh-caps", "-all", "--", program] + arguments)
    }

    /// A real process holding a shared `flock` on `path` until killed (or its standard
    /// input closes), as a reader of the suite does inside its locked catch-up.
    static func holdSharedLock(on path: String) throws -> ChildProcess {
        try ChildProcess(executable: "/usr/bin/perl", arguments: [
            "-e", "use Fcntl qw(:flock); open(my $f, '<', $ARGV[0]) or die; flock($f, LOCK_SH) or die; $| = 1; print \"held\\n\"; <STDIN>;",
            path,
        ])
    }

    /// A writer dies with its record written whole (`recordWritten`): the generation
    /// stays odd.
    static func killAWriterInsideItsCommit(at place: URL, suite name: String, point: String = "recordWritten") {
        var options = ["point": point, "key": "dead", "value": "x"]
        if point == "compactionRenamed" { options["compact"] = "1" }
        guard let dying = try? startWorker("pause", at: place, suite: name, options) else {
            Issue.record("could not start the writer")
            return
        }
        dying.expectLine(startingWith: "paused")
        #expect(dying.kill() == .signaled(SIGKILL))
    }

    struct Watched: CustomStringConvertible {
        var key: String, old: String?, new: String?, sequence: UInt64, kind: String
        var description: String { "\(key): \(old ?? "-") -> \(new ?? "-") seq \(sequence) \(kind)" }
    }

    static func parse(_ lines: [String]) -> [Watched] {
        lines.compactMap { line in
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                  let key = object["key"] as? String, let kind = object["kind"] as? String
            else { return nil }
            func text(_ value: Any?) -> String? { value.flatMap { $0 is NSNull ? nil : "\($0)" } }
            return Watched(key: key, old: text(object["old"]), new: text(object["new"]),
                           sequence: (object["seq"] as? NSNumber)?.uint64Value ?? 0, kind: kind)
        }
    }

    /// A process that may only read the suite observes it; a writer dies with its
    /// record written whole; the observer hears that record. Then a process that may
    /// write commits twice: the observer hears exactly those two commits more.
    @Test(.enabled(if: canDropCapabilities, "needs root and setpriv, to make a process that may only read"),
          arguments: ["recordWritten", "committed", "compactionRenamed"])
    func aReadOnlyObserverAfterADeadWriterHearsOnlyTheNewCommits(point: String) throws {
        let name = "ro-observed"
        let place = directory.file("ro-\(point)")
        let suite = try Suite(named: name, directory: place, options: .init(lockTimeout: .seconds(30)))
        for index in 0..<20 { try suite.set("v\(index)", forKey: "k\(index % 5)") }
        let lockPath = place.appendingPathComponent(name + ".suite.lock").path
        let dataPath = place.appendingPathComponent(name + ".suite").path
        #expect(chmod(dataPath, 0o440) == 0 && chmod(lockPath, 0o440) == 0 && chmod(place.path, 0o550) == 0)
        defer { _ = chmod(place.path, 0o700) }
        let watcher = try Self.startWithoutCapabilities(Products.path("suite-watch"), ["--json", "--initial", "--dir", place.path, name])
        defer { _ = watcher.kill() }
        #expect(watcher.waitForLines(timeout: .seconds(30)) { Self.parse($0).count >= 5 }, "\(watcher.lines) \(watcher.standardError)")
        #expect(watcher.waitForError(containing: "watching", timeout: .seconds(30)))

        Self.killAWriterInsideItsCommit(at: place, suite: name, point: point)
        let deadCounts = point != "commitStarted" && point != "partialRecordWritten"
        // The read-only process hears the dead writer's record as soon as it looks;
        // this process repairs the file only after that, so that the test covers the
        // read-only process's own catch-up.
        if deadCounts {
            #expect(watcher.waitForLines(timeout: .seconds(30)) { Self.parse($0).contains { $0.key == "dead" } }, "\(watcher.lines)")
        }
        try suite.set("y", forKey: "after")
        try suite.set("z", forKey: "end")
        #expect(watcher.waitForLines(timeout: .seconds(30)) { Self.parse($0).contains { $0.key == "end" } }, "\(watcher.lines)")
        let changes = Self.parse(watcher.lines).filter { $0.kind != "initial" }
        #expect(changes.map(\.key) == (deadCounts ? ["dead", "after", "end"] : ["after", "end"]), "observed: \(changes)")
        var highest: UInt64 = 0, wentBack: [String] = []
        for change in changes {
            if change.sequence < highest { wentBack.append("\(change) after seq \(highest)") }
            highest = max(highest, change.sequence)
        }
        #expect(wentBack.isEmpty, "\(wentBack.count) changes numbered before one already heard: \(wentBack.prefix(3))")
    }

    /// A suite of 20 commits read here, a writer killed inside its commit, and another
    /// process holding the shared lock, stopped (SIGSTOP): the holder.
    func readerWithAStoppedSharedLockHolderAfterADeadWriter(_ name: String, lockTimeout: Duration?) throws -> (Suite, ChildProcess) {
        let suite = try Suite(named: name, directory: directory.url, options: .init(lockTimeout: lockTimeout))
        for index in 0..<20 { try suite.set("v\(index)", forKey: "k\(index % 5)") }
        #expect(suite.string(forKey: "k4") == "v19")
        Self.killAWriterInsideItsCommit(at: directory.url, suite: name)
        let holder = try Self.holdSharedLock(on: directory.file(name + ".suite.lock").path)
        holder.expectLine(startingWith: "held")
        holder.signal(SIGSTOP)
        return (suite, holder)
    }

    /// A process that had read the suite reads and reloads after a writer died inside
    /// its commit, while another process holds the shared lock, stopped (a reader
    /// stopped inside its locked catch-up): neither waits for the exclusive lock, and
    /// both see the dead writer's whole record.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/perl"), "needs perl, to hold a shared flock"))
    func aStoppedSharedLockHolderDoesNotHoldUpAReaderAfterAWriterDied() throws {
        let (suite, holder) = try readerWithAStoppedSharedLockHolderAfterADeadWriter("shared-held", lockTimeout: .seconds(3))
        defer { _ = holder.kill() }
        // (A wait for the exclusive lock would end in `.lockTimeout` after 3 s.)
        #expect(throws: Never.self, "reload") { try suite.reload() }
        #expect(suite.string(forKey: "k4") == "v19")
        #expect(suite.string(forKey: "dead") == "x")
    }

    /// As above, with no lock timeout: a read must not wait for as long as the stopped
    /// reader keeps the shared lock.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/perl"), "needs perl, to hold a shared flock"))
    func aStoppedSharedLockHolderDoesNotHangAReaderWithoutATimeout() throws {
        let (suite, holder) = try readerWithAStoppedSharedLockHolderAfterADeadWriter("shared-held-forever", lockTimeout: nil)
        defer { _ = holder.kill() }
        let done = DispatchSemaphore(value: 0)
        let answer = LockedBox<String?>(nil)
        Thread {
            answer.withLock { $0 = suite.string(forKey: "dead") }
            done.signal()
        }.start()
        let finished = done.wait(timeout: .now() + 5) == .success
        #expect(finished, "a read is still waiting after 5 s, for a reader stopped holding the shared lock")
        // Let it go, and wait for the thread, so that nothing outlives the test.
        _ = holder.kill()
        if !finished { #expect(done.wait(timeout: .now() + 60) == .success) }
        #expect(answer.current == "x")
    }

    /// Makes the shared header's generation odd, as a process that may write the lock
    /// file can (or a writer that dies inside its commit leaves it).
    static func forgeOddGeneration(_ path: String) {
        let descriptor = open(path, O_RDWR)
        guard descriptor >= 0 else { return }
        var generation: UInt64 = 0
        _ = pread(descriptor, &generation, 8, 16)
        if generation & 1 == 0 {
            generation |= 1
            _ = pwrite(descriptor, &generation, 8, 16)
        }
        close(descriptor)
    }

    /// A member of the group makes the generation odd, 30 times, and this process,
    /// which had read the 1 MB suite and writes nothing, reads after each: it does not
    /// rescan the whole file under the exclusive lock each time (a rebuild says
    /// "recovered").
    @Test func aForgedOddGenerationDoesNotMakeEveryReadARebuild() throws {
        let name = "forged-odd-reads"
        let suite = try Suite(named: name, directory: directory.url, options: .init(lockTimeout: .seconds(60)))
        let big = String(repeating: "b", count: 2000)
        try suite.update { tx in for index in 0..<500 { try tx.set(big + "\(index)", forKey: "big\(index)") } }
        try suite.set("here", forKey: "mine")
        let rebuilds = LockedBox(0)
        let observing = SuiteDiagnostics.observe { diagnostic in
            if diagnostic.suite == name && diagnostic.kind == .recoveredInterruptedCommit { rebuilds.withLock { $0 += 1 } }
        }
        defer { observing.cancel() }
        let lockPath = directory.file(name + ".suite.lock").path
        for _ in 0..<30 {
            Self.forgeOddGeneration(lockPath)
            #expect(suite.string(forKey: "mine") == "here")
        }
        #expect(suite.string(forKey: "big499") == big + "499")
        #expect(rebuilds.current == 0, "a process that only reads rescanned the whole suite under the exclusive lock \(rebuilds.current) times for 30 reads")
    }
}
