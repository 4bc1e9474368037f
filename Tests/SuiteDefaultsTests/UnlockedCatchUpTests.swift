import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@testable import SuiteDefaults

/// A reader that is behind catches up without the file lock when the shared header
/// shows complete commits appended to the same file (`catchUpWithoutFileLock`), and
/// leaves everything else to the locked catch-up. These are the cases where trusting
/// the header alone would keep a stale or wrong state.
@Suite("Catching up without the file lock")
struct UnlockedCatchUpTests {
    let directory = TemporaryDirectory()

    /// A suite opened and read here, then left behind by a commit of another process.
    func readerLeftBehind(_ name: String) throws -> Suite {
        let suite = try Suite(named: name, directory: directory.url)
        try suite.set("v0", forKey: "k")
        #expect(suite.string(forKey: "k") == "v0")
        try startWorker("try-set", in: directory, suite: name, ["key": "k", "value": "v1"]).expectSuccess(within: .seconds(60))
        return suite
    }

    @Test func aReaderBehindALockFileThatLostItsNameFollowsTheName() throws {
        let suite = try readerLeftBehind("renamed")
        // The old header still shows v1's commit, and will never change again: a
        // newcomer makes a new lock file and commits through it.
        #expect(unlink(directory.file("renamed.suite.lock").path) == 0)
        try startWorker("try-set", in: directory, suite: "renamed", ["key": "k2", "value": "new"]).expectSuccess(within: .seconds(60))
        #expect(suite.string(forKey: "k") == "v1")
        #expect(suite.string(forKey: "k2") == "new")
    }

    @Test func aReaderBehindWhenAWriterMovesEveryoneOffTheOldLockFileFollows() throws {
        let suite = try Suite(named: "moved", directory: directory.url)
        try suite.set("v0", forKey: "k")
        // A writer that has the lock file open before it loses its name moves the
        // processes still on it by changing the old header's generation.
        let writer = try startWorker("set-if-absent", in: directory, suite: "moved", ["key": "k2", "value": "new"])
        guard writer.expectLine(startingWith: "opened") != nil else { return }
        try startWorker("try-set", in: directory, suite: "moved", ["key": "k", "value": "v1"]).expectSuccess(within: .seconds(60))
        #expect(unlink(directory.file("moved.suite.lock").path) == 0)
        writer.send("go\n")
        writer.expectLine(startingWith: "stored new")
        writer.expectSuccess(within: .seconds(60))
        #expect(suite.string(forKey: "k") == "v1")
        #expect(suite.string(forKey: "k2") == "new")
    }

    @Test func aCommitLargerThanAnUnlockedReadIsReadUnderTheLock() throws {
        let suite = try readerLeftBehind("large")
        let size = StoreState.longestUnlockedRead + 1
        try startWorker("try-set", in: directory, suite: "large", ["key": "big", "size": "\(size)"]).expectSuccess(within: .seconds(60))
        #expect(suite.string(forKey: "k") == "v1")
        #expect(suite.string(forKey: "big")?.utf8.count == size)
    }

    @Test func anAppendedRecordThatDoesNotVerifyIsNeverApplied() throws {
        let suite = try Suite(named: "flipped", directory: directory.url)
        try suite.set("v0", forKey: "k")
        #expect(suite.string(forKey: "k") == "v0")
        let path = directory.file("flipped.suite").path
        let before = try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
        try startWorker("try-set", in: directory, suite: "flipped", ["key": "k", "value": "v1"]).expectSuccess(within: .seconds(60))
        // The other process's record, its value's bytes changed after it was committed.
        let bytes = try #require(FileManager.default.contents(atPath: path).map(Array.init))
        let value = try #require(bytes[before...].firstRange(of: Array("v1".utf8)))
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        #expect(fd >= 0)
        var changed = UInt8(ascii: "X")
        #expect(pwrite(fd, &changed, 1, off_t(value.lowerBound)) == 1)
        close(fd)
        let recorder = DiagnosticsRecorder(directory)
        let read = suite.string(forKey: "k")
        // The repair keeps the records that verify.
        #expect(read == "v0", "\(String(describing: read))")
        #expect(recorder.kinds.contains(.repairedDamage))
    }
}

extension UnlockedCatchUpTests {
    /// A header left in the middle of a change (its generation odd, its committed
    /// length already cut to a compacted file's while it still names the old file, as
    /// a compaction that dies inside `setCommitted` leaves it) is trusted neither by an
    /// observer's registration, which catches up without the file lock, nor by a read
    /// under the shared lock: either used to read the suite's file again up to that
    /// length, and go back in time. (An observer then heard commits it had heard
    /// already, out of order: `cancellingAsyncSequencesWhileTheWatcherDelivers`
    /// caught it under load, from a live compaction.)
    @Test func aHeaderInTheMiddleOfAChangeIsNotTrusted() throws {
        let suite = try Suite(named: "torn", directory: directory.url)
        try suite.set(1, forKey: "k")
        let dataPath = directory.file("torn.suite").path
        let firstLength = try #require(try FileManager.default.attributesOfItem(atPath: dataPath)[.size] as? Int)
        try suite.set(2, forKey: "k")
        try suite.set(3, forKey: "k")
        // The writer's side: a change begins (the generation made odd), and the
        // committed length is written before the rest.
        let lock = open(directory.file("torn.suite.lock").path, O_RDWR | O_CLOEXEC)
        #expect(lock >= 0)
        defer { close(lock) }
        var generation: UInt64 = 0
        #expect(pread(lock, &generation, 8, 16) == 8)
        var changing = generation + 1, length = UInt64(firstLength)
        #expect(pwrite(lock, &changing, 8, 16) == 8)
        #expect(pwrite(lock, &length, 8, 24) == 8)
        let seen = try suite.store.withChangeCollection(catchingUp: true) { contents, _ in contents["k"] }
        #expect(seen == 3, "what the registration saw: \(String(describing: seen))")
        #expect(suite.integer(forKey: "k") == 3)
    }
}
