import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Testing) @testable import SuiteDefaults

/// Second round of attacks on the catch-up without the file lock
/// (`catchUpWithoutFileLock`) and on the checks added with it: that the data file a
/// process has open "still has a name" (`linkCount > 0`) is taken to mean that it is
/// still the suite's file. A data file may well have another name: the library's own
/// history files are hard links to replaced journals, and a backup made with hard links
/// (`cp -al`, `ln`, rsnapshot) gives the suite's file a second name too. And a
/// process fresh on a lock file that lost its name, which Design.md says moves to the
/// new one at its next `reload()` or observer catch-up.
///
/// Every test here failed on the code before the unlocked catch-up too (0663386): the
/// locked catch-up and the commit make the same `linkCount` check, and `reload()` and
/// the watcher's catch-up stopped at the freshness check before as well. `reload()` is
/// fixed (`SuiteStore.LockSkip`). The rest are known issues, listed in Design.md
/// ("Limitations that remain"): telling whether the file a process has open is still
/// the one by the suite's name takes a `fstatat` of the name, about 80 ns more than
/// the `fstat` a commit makes now; and an observer that checked its lock file's name on
/// every event would report the lock file's loss before the removal of a directory
/// being removed. `withKnownIssue` marks what they show, and fails once it no longer
/// happens.
@Suite("Catching up without the file lock, attacked again")
struct HostileUnlockedCatchUpRoundTwoTests {
    let directory = TemporaryDirectory()

    /// What a new process reads for `key`: the committed state.
    func readInAnotherProcess(_ key: String, suite: String) throws -> [String] {
        let reader = try startWorker("get", in: directory, suite: suite, ["key": key])
        reader.expectSuccess(within: .seconds(60))
        return reader.lines
    }

    func set(_ key: String, _ value: String, suite: String) throws {
        let writer = try startWorker("try-set", in: directory, suite: suite, ["key": key, "value": value])
        writer.expectLine(startingWith: "ok")
        writer.expectSuccess(within: .seconds(60))
    }

    /// As in the first round (`HostileUnlockedCatchUpTests.restoreUnderADeadWriter`),
    /// but with the suite's file also kept under a second name (a hard-link backup)
    /// before a copy of its committed bytes is renamed over it: a writer is killed
    /// with its record of `k = v1` written but not published, and the copy is
    /// renamed into place. The file this process has open lost the suite's name, but
    /// not its last name, and still holds the dead writer's record.
    func restoreUnderADeadWriterKeepingTheOldFile(_ name: String, settle: () throws -> Void = {}) throws {
        let data = directory.file(name + ".suite").path, copy = directory.file(name + ".copy").path
        try FileManager.default.copyItem(atPath: data, toPath: copy)
        #expect(link(data, directory.file(name + ".kept").path) == 0)
        let killed = try startWorker("pause", in: directory, suite: name, ["point": "recordWritten", "key": "k", "value": "v1"])
        defer { _ = killed.kill() }
        killed.expectLine(startingWith: "paused")
        _ = killed.kill()
        _ = killed.wait(timeout: .seconds(60))
        try settle()
        #expect(rename(copy, data) == 0)
    }

    /// A writer repairs after the one that died (from the restored file, which does
    /// not hold v1) and commits `k = v2`: a record as large as v1's, numbered as v1's.
    func commitV2AfterTheRepair(_ name: String) throws {
        try set("k", "v2", suite: name)
        let committed = try readInAnotherProcess("k", suite: name)
        #expect(committed.contains("value \"v2\""), "\(committed)")
    }

    /// The first round's fix checks that the data file has a name (fstat, link count
    /// above 0), not that it is the suite's file. Here it has another: the reader that
    /// is behind finds the same file ID, a longer committed length, and at that place
    /// in the file it has open the dead writer's record, numbered as the header's last
    /// sequence, and applies it. It answers v1, which was never committed (its writer
    /// was killed before publishing it, and the suite's file never held it), in place of
    /// v2, and keeps answering it, fresh, until the next commit.
    @Test func aReaderBehindOnAReplacedDataFileWithAnotherNameReadsACommitThatNeverHappened() throws {
        let name = "kept"
        let reader = try Suite(named: name, directory: directory.url)
        try reader.set("v0", forKey: "k")
        #expect(reader.string(forKey: "k") == "v0")
        try restoreUnderADeadWriterKeepingTheOldFile(name)
        try commitV2AfterTheRepair(name)
        let first = reader.string(forKey: "k"), again = reader.string(forKey: "k")
        withKnownIssue("a data file replaced while another name keeps it is still read as the suite's") {
            #expect(first == "v2", "read \(String(describing: first)), a value whose commit never completed")
            #expect(again == "v2", "read \(String(describing: again)) again")
        }
    }

    /// The same for an observer (delivery on the watcher's thread): it is told of v1,
    /// which was never committed, and never of v2, which was.
    @Test func anObserverBehindOnAReplacedDataFileWithAnotherNameIsToldOfACommitThatNeverHappened() throws {
        let name = "kept-observed"
        let suite = try Suite(named: name, directory: directory.url)
        try suite.set("v0", forKey: "k")
        let recorder = ChangeRecorder()
        let token = try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: suite, onChange: recorder.handler)
        let other = try Suite(named: "other", directory: directory.url)
        let otherRecorder = ChangeRecorder()
        let otherToken = try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: other, onChange: otherRecorder.handler)
        try restoreUnderADeadWriterKeepingTheOldFile(name) {
            #expect(suite.string(forKey: "k") == "v0")
        }
        // The rename's event has been handled (a later event of another suite of the
        // directory has been delivered), and the suite's queue is drained.
        try set("mark", "after the restore", suite: "other")
        #expect(otherRecorder.wait(for: "mark", toBecome: "after the restore"))
        ObserverHub.of(suite.store).waitForDelivery()

        try commitV2AfterTheRepair(name)
        // (Delivery takes milliseconds: five seconds without it is a miss.)
        let heard = recorder.wait(for: "k", toBecome: "v2", timeout: .seconds(5))
        let read = suite.string(forKey: "k")
        withKnownIssue("a data file replaced while another name keeps it is still read as the suite's") {
            #expect(heard, "the observer heard \(recorder.changes.map { "\($0.key) -> \($0.newValue.map { "\($0)" } ?? "nil")" }), never k -> v2")
            #expect(!recorder.changes.contains { $0.newValue == .string("v1") }, "told of v1: \(recorder.changes)")
            #expect(read == "v2", "and this process reads \(String(describing: read))")
        }
        withExtendedLifetime((token, otherToken)) {}
    }

    /// No hard link made by anyone outside the library: a compaction keeps the replaced
    /// journal as a history file, a second name of the same inode. A reader behind on
    /// that journal (it read v0, not v1) stays on it across the compaction. An older
    /// backup of the journal (taken when it held v0) is then restored: the next writer
    /// finds the header naming the compacted file, rebuilds it from the restored one (the
    /// old file ID again, the old length, the last sequence number kept) and commits
    /// v2, a record as large as v1's, so the header names the reader's file ID, at the
    /// length where v1 ends in the history file.
    ///
    /// The reader's catch-up reads its own file, which has a name (the history's), and
    /// applies v1 from it: it answers v1, undone by the restore, and never hears of v2,
    /// fresh from then on.
    @Test func aReaderBehindOnAJournalKeptAsHistoryMissesACommitAfterARestore() throws {
        let name = "history"
        let reader = try Suite(named: name, directory: directory.url)
        try reader.set("v0", forKey: "k")
        #expect(reader.string(forKey: "k") == "v0")
        let data = directory.file(name + ".suite").path, backup = directory.file(name + ".backup").path
        try FileManager.default.copyItem(atPath: data, toPath: backup)
        try set("k", "v1", suite: name)
        let compactor = try startWorker("compact", in: directory, suite: name)
        compactor.expectLine(startingWith: "compacted")
        compactor.expectSuccess(within: .seconds(60))
        #expect(directory.names().contains { $0.hasPrefix(name + ".suite.h.") }, "\(directory.names())")
        #expect(rename(backup, data) == 0)
        try commitV2AfterTheRepair(name)
        let read = reader.string(forKey: "k")
        withKnownIssue("a journal kept as history is still read as the suite's file after a restore") {
            #expect(read == "v2", "read \(String(describing: read)), undone by the restore, in place of the committed v2")
        }
    }

    /// The same identity check on the commit path: a process that has the suite's file
    /// open, when a copy of it is renamed over it (as rsync or an editor saves a file)
    /// while a hard-link backup keeps the old file's inode under another name, finds
    /// its file with a name and as long as the header says, and appends its next
    /// commit to the old inode, publishing it in the header. The suite's file never
    /// holds it: the next process to open the suite finds the file shorter than
    /// committed, repairs it from what it holds, and the acknowledged write is gone.
    /// (Without the second name, the writer finds its file without a name, and reads
    /// the suite's file first.)
    @Test func aWriteToADataFileReplacedUnderItWhileAnotherNameKeepsItIsLost() throws {
        let name = "kept-writer"
        let suite = try Suite(named: name, directory: directory.url)
        try suite.set("v0", forKey: "k")
        let data = directory.file(name + ".suite").path, copy = directory.file(name + ".copy").path
        try FileManager.default.copyItem(atPath: data, toPath: copy)
        #expect(link(data, directory.file(name + ".kept").path) == 0)
        #expect(rename(copy, data) == 0)
        try suite.set("v1", forKey: "k")
        #expect(suite.string(forKey: "k") == "v1")
        let committed = try readInAnotherProcess("k", suite: name)
        let readHere = suite.string(forKey: "k")
        withKnownIssue("a commit to a data file replaced while another name keeps it is lost") {
            #expect(committed.contains("value \"v1\""), "another process reads \(committed) after v1 was acknowledged")
            #expect(readHere == "v1")
        }
    }

    /// A process fresh on a lock file that loses its name (a newcomer, which never had
    /// the old one open, makes a new one and commits through it). Design.md
    /// ("Limitations that remain") says such a process keeps answering from its cache
    /// "until it next takes the lock file: its next write, `reload()`, or an observer's
    /// catch-up". `reload()` takes no lock here: its state is fresh by the old header,
    /// which no one changes any more, and both the unlocked and the locked catch-up
    /// stop at that freshness check (`skippingIfFresh`).
    @Test func reloadAfterTheLockFileLostItsNameReadsTheNewcomersCommit() throws {
        let name = "lock-gone"
        let suite = try Suite(named: name, directory: directory.url)
        try suite.set("v0", forKey: "k")
        #expect(suite.string(forKey: "k") == "v0")
        #expect(unlink(directory.file(name + ".suite.lock").path) == 0)
        try set("k", "v1", suite: name)
        try suite.reload()
        let read = suite.string(forKey: "k")
        #expect(read == "v1", "after reload(), read \(String(describing: read))")
    }

    /// The same for an observer: the newcomer's commit wakes its watcher (the data
    /// file's event), whose catch-up finds the state fresh by the old header and reads
    /// nothing. The observer never hears of the commit, nor of any later one.
    @Test func anObserverAfterTheLockFileLostItsNameHearsTheNewcomersCommit() throws {
        let name = "lock-gone-observed"
        let suite = try Suite(named: name, directory: directory.url)
        try suite.set("v0", forKey: "k")
        let recorder = ChangeRecorder()
        let token = try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: suite, onChange: recorder.handler)
        #expect(unlink(directory.file(name + ".suite.lock").path) == 0)
        try set("k", "v1", suite: name)
        try set("k", "v2", suite: name)
        let heard = recorder.wait(for: "k", toBecome: "v2", timeout: .seconds(5))
        withKnownIssue("an observer fresh on a lock file that lost its name does not follow it") {
            #expect(heard, "the observer heard \(recorder.changes)")
        }
        withExtendedLifetime(token) {}
    }
}
