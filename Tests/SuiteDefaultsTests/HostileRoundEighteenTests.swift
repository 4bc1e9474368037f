import ChildProcess
import Foundation
import Glibc
import Synchronization
import Testing
import TestSupport
@_spi(Testing) @testable import SuiteDefaults

/// The eighteenth hostile round: commits f05dda4, 6900558 and e67aa18 attacked (a
/// writer watches its own files with one inotify instance per process and skips both
/// status calls while nothing was reported; every writer compares the names when it
/// checks its files; a failed watch is asked for again after 1, 2, 4 ... 1,024
/// requests; an instance whose read fails is given up).
///
/// Two holes were found. Fixed after the round (their tests failed before the fix):
/// a lock name that keeps losing its file sent `tryLockFile` into unbounded recursion
/// (a stack overflow); it now follows the name at most 8 times an attempt, then waits
/// as for a lock held. And the instance's number given to another file by code outside
/// the library was read as "no event" for good: a read that finds the end of a file,
/// or bytes that are not whole events of watches the instance has, now gives the
/// instance up. What remains, marked `withKnownIssue`: the number given to another
/// inotify instance (which answers "nothing queued" as this one would), and the bytes
/// of a pipe put at the number, read once before the instance is given up. The lock
/// file's and the data file's descriptors are as exposed to such code (Design.md,
/// "Limitations"). What held is tested as it should stay.
@Suite("Hostile round eighteen", .serialized)
struct HostileRoundEighteenTests: WatchedFilesTesting {
    let directory = TemporaryDirectory()

    func copy(_ from: String, to: String) throws {
        try? FileManager.default.removeItem(atPath: to)
        try FileManager.default.copyItem(atPath: from, toPath: to)
    }

    /// A worker that wrote the suite twice (its commits now skip the status calls),
    /// then did `mode` to its inotify instance's number (`clobber-inotify`).
    func clobbered(_ name: String, _ mode: String, key: String = "k", value: String = "v", lockTimeoutMS: Int = 300) throws -> ChildProcess {
        let worker = try startWorker("clobber-inotify", in: directory, suite: name,
                                     ["then": mode, "key": key, "value": value, "lock-timeout-ms": "\(lockTimeoutMS)"])
        let line = worker.expectLine(startingWith: "clobbered")
        #expect(line != nil && line != "clobbered \(mode) -1", "the worker found no inotify instance: \(line ?? "nothing")")
        return worker
    }

    /// Sends one start signal; the worker's "set …" line.
    func setLine(_ worker: ChildProcess, within timeout: Duration = .seconds(30)) -> String? {
        let before = worker.lines.filter { $0.hasPrefix("set") }.count
        worker.send("go\n")
        guard worker.waitForLines(timeout: timeout, until: { $0.filter { $0.hasPrefix("set") }.count > before }) else { return nil }
        return worker.lines.filter { $0.hasPrefix("set") }.last
    }

    // MARK: 1. The instance's number, closed and given to another file by code outside the library

    /// Code outside the library closes the number of the process's inotify instance
    /// (a double close, a "close every descriptor above 2" loop) and the number goes
    /// to another file. The library claims that a read failing gives the instance up;
    /// but a read that does *not* fail, and finds nothing — /dev/null (end of file,
    /// 0 bytes), another inotify instance with no watch (EAGAIN) — is taken for "no
    /// event" at every commit from then on: the writer stays on its short path for
    /// good with no watch anywhere, and follows nothing. The lock file renamed away,
    /// a newcomer makes a new one and holds it; the clobbered writer went on with the
    /// old one: two writers at once. (`close`, where the number stays free, held.)
    /// /dev/null's end of file now gives the instance up; another instance with
    /// nothing queued cannot be told from this one.
    @Test(arguments: ["close", "devnull", "inotify"])
    func theInstanceNumberGivenToAnotherFileThenTheLockFileRenamedAway(mode: String) throws {
        let worker = try clobbered("lock-\(mode)", mode)
        defer { _ = worker.kill() }
        #expect(rename(path("lock-\(mode)", lock: true), directory.file("old-lock").path) == 0)
        let holder = try startWorker("hold-lock", in: directory, suite: "lock-\(mode)")
        defer { _ = holder.kill() }
        holder.expectLine(startingWith: "holding")
        withKnownIssue("another inotify instance at the instance's number answers 'nothing queued' as this one would") {
            let line = setLine(worker)
            #expect(line?.hasPrefix("set error lockTimeout") == true, "the clobbered writer wrote while a newcomer held the lock: \(line ?? "no answer")")
        } when: { mode == "inotify" }
    }

    /// The same, with the data file replaced by a copy while a hard link keeps the old
    /// one (the known issue f05dda4 fixed): the clobbered writer's acknowledged write
    /// goes to the backup, which no other process reads.
    @Test(arguments: ["close", "devnull", "inotify"])
    func theInstanceNumberGivenToAnotherFileThenTheDataFileReplaced(mode: String) throws {
        let name = "data-\(mode)"
        let worker = try clobbered(name, mode, key: "third", value: "3")
        defer { _ = worker.kill() }
        #expect(link(path(name), directory.file("backup").path) == 0)
        try copy(path(name), to: directory.file("copy").path)
        #expect(rename(directory.file("copy").path, path(name)) == 0)
        #expect(setLine(worker) == "set ok")
        try withKnownIssue("another inotify instance at the instance's number answers 'nothing queued' as this one would") {
            let third = try read(name, "third")
            #expect(third == "value 3", "an acknowledged write is lost")
        } when: { mode == "inotify" }
        #expect(try read(name, "second") == "value 2")
    }

    /// Closed only (the number stays free): the read fails, the instance is given up,
    /// the writer checks with status calls, and after the refusals it has an instance
    /// again (close-on-exec, nonblocking), with no descriptor left behind.
    @Test func theInstanceNumberClosedIsGivenUpAndOpenedAgain() throws {
        let worker = try clobbered("reopened", "close")
        defer { _ = worker.kill() }
        for _ in 0..<4 { #expect(setLine(worker) == "set ok") }
        let instances = worker.lines.filter { $0.hasPrefix("inotify instances") }
        #expect(instances.first == "inotify instances 0", "\(instances)")
        #expect(instances.last == "inotify instances 1", "\(instances)")
        #expect(try read("reopened", "k") == "value \"v\"")
    }

    /// The number given to the read end of a pipe holding 5 bytes (a socket would do
    /// the same): the commit's "read without waiting" took the bytes meant for the code
    /// that owns the pipe, and once the pipe was empty it blocked, under the suite's
    /// exclusive lock, for as long as nobody wrote to the pipe. Bytes that are not
    /// whole events now give the instance up, so the next commit reads nothing there;
    /// the first still takes the bytes.
    @Test func theInstanceNumberGivenToAPipe() throws {
        let worker = try clobbered("piped", "pipe")
        defer { _ = worker.kill() }
        let first = setLine(worker)
        #expect(first == "set ok")
        let bytes = worker.expectLine(startingWith: "pipe bytes", within: .seconds(10))
        withKnownIssue("a pipe at the instance's number: its bytes are read once before the instance is given up") {
            #expect(bytes == "pipe bytes 5", "the library read another file's bytes")
        }
        let second = setLine(worker, within: .seconds(10))
        #expect(second == "set ok", "the commit hangs in the read, holding the exclusive lock")
        if second == nil {
            let other = try startWorker("try-set", in: directory, suite: "piped", ["key": "other", "value": "x", "lock-timeout-ms": "300"])
            defer { _ = other.kill() }
            let line = other.waitForLine(timeout: .seconds(30)) { $0 == "ok" || $0.hasPrefix("error") }
            Issue.record("while the clobbered writer hangs, another process's write says: \(line ?? "nothing")")
        }
        #expect(try read("piped", "k") == "value \"v\"")
    }

    // MARK: 2. A lock name that keeps losing its file

    /// A process outside the library unlinks the lock file's name, or renames it away
    /// (always to one backup name, which drops the previous one), in a tight loop for
    /// four seconds; a writer tries one write with a lock timeout of 300 ms. Each
    /// attempt followed the name (a new lock file) and `tryLockFile` called itself
    /// again, with no bound and no look at the timeout: some 6,000 frames later the
    /// writer's stack overflowed (SIGSEGV, on the main thread's 8 MiB). The unlink form
    /// predates f05dda4 (linkCount 0 recursed already); the rename form is the new
    /// "nothing at the name" path. The write must end — with the value or an error —
    /// within the timeout's reach, and the process must live.
    @Test(arguments: ["unlink", "rename"])
    func aLockNameThatKeepsLosingItsFile(how: String) throws {
        signal(SIGPIPE, SIG_IGN)  // the worker may die: a start signal to it must not kill this process
        let name = "churn-\(how)"
        let worker = try clobbered(name, "none")
        defer { _ = worker.kill() }
        let stop = Atomic<Bool>(false)
        let lockPath = path(name, lock: true), away = directory.file("away").path
        let done = DispatchSemaphore(value: 0)
        let attacker = Thread {
            defer { done.signal() }
            let deadline = ContinuousClock.now + .seconds(4)
            // The clock read once in 4,096 tries: the loop must be faster than a writer's attempt.
            while !stop.load(ordering: .relaxed) && ContinuousClock.now < deadline {
                lockPath.withCString { lock in
                    away.withCString { away in
                        for _ in 0..<4096 {
                            if how == "unlink" { unlink(lock) } else { rename(lock, away) }
                        }
                    }
                }
            }
        }
        attacker.start()
        // The loop runs once the name is gone.
        #expect(poll(within: .seconds(10)) { access(lockPath, F_OK) != 0 })
        let started = ContinuousClock.now
        let line = setLine(worker, within: .seconds(60))
        let took = ContinuousClock.now - started
        stop.store(true, ordering: .relaxed)
        _ = done.wait(timeout: .now() + 30)
        let stored = line == "set ok" ? try read(name, "k") : nil
        #expect(line != nil, "no answer; the worker \(worker.wait(timeout: .seconds(5)).map(\.description) ?? "still runs"); \(worker.standardError.prefix(300))")
        #expect(took < .seconds(3), "the write took \(took) with a lock timeout of 300 ms")
        #expect(worker.wait(timeout: .milliseconds(100)) == nil, "the worker died")
        if line == "set ok" { #expect(stored == "value \"v\"") }
        // Afterwards, with the name left alone, a writer writes again.
        if worker.wait(timeout: .milliseconds(10)) == nil {
            #expect(setLine(worker) == "set ok")
        }
    }
}
