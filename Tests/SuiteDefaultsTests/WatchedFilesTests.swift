import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Testing) @testable import SuiteDefaults

/// A writer that found its lock file and data file as they should be skips their
/// status calls for as long as the process's inotify instance reports nothing about
/// them (`FileChangeCounter`). Here each thing that can happen to those files behind
/// its back happens between two of its commits, and the second commit must be where
/// every other process looks for it (or, for a lock file that another process now
/// holds under the name, wait for that process).
@Suite("A writer that skips its files' status calls notices what happened to them", .serialized)
struct WatchedFilesTests: WatchedFilesTesting {
    let directory = TemporaryDirectory()

    @Test func aDeletedDataFile() throws {
        let suite = try writer("deleted")
        #expect(unlink(path("deleted")) == 0)
        try suite.set(3, forKey: "third")
        #expect(try read("deleted", "third") == "value 3")
        #expect(FileManager.default.fileExists(atPath: path("deleted")))
    }

    @Test func aDataFileReplacedByACopy() throws {
        let suite = try writer("copied")
        let copy = directory.file("copy").path
        try FileManager.default.copyItem(atPath: path("copied"), toPath: copy)
        #expect(rename(copy, path("copied")) == 0)
        try suite.set(3, forKey: "third")
        #expect(try read("copied", "third") == "value 3")
        #expect(try read("copied", "first") == "value 1")
    }

    /// Renamed away, with nothing in its place: still the suite's file, which may be
    /// put back (as `suite-stress hostile` does), and is. The write goes with it.
    @Test func aDataFileRenamedAwayForAMoment() throws {
        let suite = try writer("moved")
        #expect(rename(path("moved"), directory.file("elsewhere").path) == 0)
        try suite.set(3, forKey: "third")
        #expect(rename(directory.file("elsewhere").path, path("moved")) == 0)
        try suite.set(4, forKey: "fourth")
        #expect(try read("moved", "third") == "value 3")
        #expect(try read("moved", "fourth") == "value 4")
        #expect(try read("moved", "first") == "value 1")
    }

    /// Replaced by a copy while a second name keeps the old file (a hard-link backup,
    /// then a copy renamed over it, as rsync does): the old file keeps a link, so its
    /// status alone does not tell; the writer compares the name's file with its own,
    /// and writes where every other process reads.
    @Test func aDataFileReplacedWhileAnotherNameKeepsIt() throws {
        let suite = try writer("kept")
        let copy = directory.file("copy").path
        try FileManager.default.copyItem(atPath: path("kept"), toPath: copy)
        #expect(link(path("kept"), directory.file("backup").path) == 0)
        #expect(rename(copy, path("kept")) == 0)
        try suite.set(3, forKey: "third")
        #expect(try read("kept", "third") == "value 3")
        #expect(try read("kept", "second") == "value 2")
    }

    /// Cut to nothing (an event this watch does not ask for: the writer's `lseek`
    /// finds it): the write lands in a file that every process reads.
    @Test(arguments: [0, 40, 70])
    func aDataFileCutShort(to length: Int) throws {
        let name = "cut-\(length)"
        let suite = try writer(name)
        #expect(truncate(path(name), off_t(length)) == 0)
        try suite.set(3, forKey: "third")
        #expect(try read(name, "third") == "value 3")
    }

    /// Bytes appended by someone else: the writer's record does not land among them.
    @Test func bytesAppendedToTheDataFile() throws {
        let suite = try writer("appended")
        let file = try FileHandle(forWritingTo: directory.file("appended.suite"))
        try file.seekToEnd()
        try file.write(contentsOf: Data(repeating: 0x5A, count: 300))
        try file.close()
        try suite.set(3, forKey: "third")
        #expect(try read("appended", "third") == "value 3")
        #expect(try read("appended", "second") == "value 2")
    }

    /// Deleted, then made again by a process that holds the new one: the writer must
    /// wait for that process, not write beside it.
    @Test(arguments: [false, true])
    func aLockFileThatLostItsNameToANewcomer(renamedAway: Bool) throws {
        let name = renamedAway ? "lock-moved" : "lock-deleted"
        let suite = try writer(name, options: .init(lockTimeout: .milliseconds(300)))
        if renamedAway {
            #expect(rename(path(name, lock: true), directory.file("old-lock").path) == 0)
        } else {
            #expect(unlink(path(name, lock: true)) == 0)
        }
        try expectAWriteWaitsForANewcomer(suite, name)
    }

    /// The lock file and the data file exchanged (`renameat2(RENAME_EXCHANGE)`): the
    /// writer, following the lock file's name, and a new process, opening the suite,
    /// each found the suite file there and set a header up in its first page, the
    /// suite's own bytes. Each now refuses it with a typed error, and changes nothing;
    /// exchanged back, every value is there.
    @Test func theLockFileAndTheDataFileExchanged() throws {
        let suite = try writer("swapped")
        let before = try #require(directory.bytes(of: "swapped.suite"))
        #expect(exchange(path("swapped"), path("swapped", lock: true)))
        #expect {
            try suite.set(3, forKey: "third")
        } throws: { ($0 as? SuiteError)?.code == .foreignFile }
        let newcomer = try startWorker("try-set", in: directory, suite: "swapped", ["key": "fourth", "value": "4"])
        defer { _ = newcomer.kill() }
        newcomer.expectLine(startingWith: "error foreignFile")
        newcomer.expectSuccess()
        let after = directory.bytes(of: "swapped.suite.lock")
        let unchanged = after == before
        #expect(unchanged, "the suite file under the lock file's name was changed: \(after?.count ?? 0) bytes, \(before.count) before")
        #expect(exchange(path("swapped"), path("swapped", lock: true)))
        try suite.set(3, forKey: "third")
        #expect(try read("swapped", "second") == "value 2")
        #expect(try read("swapped", "third") == "value 3")
    }

    @Test func aLockFileCutShort() throws {
        let suite = try writer("lock-cut")
        #expect(truncate(path("lock-cut", lock: true), 0) == 0)
        try suite.set(3, forKey: "third")
        #expect(try read("lock-cut", "third") == "value 3")
        try suite.set(4, forKey: "fourth")
        #expect(try read("lock-cut", "fourth") == "value 4")
    }

    /// More events than an inotify queue holds (16,384 by default), then the deletion,
    /// whose event the full queue drops: the overflow alone must send the writer to
    /// its status calls.
    @Test func aDeletionWhoseEventAnOverflowedQueueDropped() throws {
        let suite = try writer("overflow")
        let queued = (try? String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8))
            .flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 16_384
        // Alternating between the two files, so that no event is folded into the one before.
        for round in 0...(queued / 2 + 10) {
            let mode: mode_t = round % 2 == 0 ? 0o644 : 0o600
            #expect(chmod(path("overflow", lock: true), mode) == 0 && chmod(path("overflow"), mode) == 0)
        }
        #expect(chmod(path("overflow", lock: true), 0o600) == 0 && chmod(path("overflow"), 0o600) == 0)
        #expect(unlink(path("overflow")) == 0)
        try suite.set(3, forKey: "third")
        #expect(try read("overflow", "third") == "value 3")
    }

    /// A forked child that writes to a suite of its own must not read its parent's
    /// inotify instance, which it inherits: the parent's event would be gone.
    @Test func aForkedChildLeavesItsParentsEventsAlone() throws {
        let worker = try startWorker("fork-after-file-deleted", in: directory, suite: "forked", ["key": "third"])
        worker.expectLine(startingWith: "child exited 0")
        worker.expectLine(startingWith: "done")
        worker.expectSuccess()
        #expect(try read("forked", "third") == "value 3")
        #expect(try read("forked-other", "child") == "value 9")
    }

    /// Two suites written by one process share its inotify instance: an event of
    /// one sends both to their status calls, and neither misses its own.
    @Test func twoSuitesOfOneProcess() throws {
        let one = try writer("one"), two = try writer("two")
        #expect(unlink(path("one")) == 0)
        try two.set(3, forKey: "third")
        #expect(unlink(path("two")) == 0)
        try one.set(3, forKey: "third")
        try two.set(4, forKey: "fourth")
        #expect(try read("one", "third") == "value 3")
        #expect(try read("two", "fourth") == "value 4")
        #expect(try read("two", "third") == "absent", "deleted with its file")
    }
}
