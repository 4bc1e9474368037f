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
/// (`cp -al`, `ln`, rsnapshot) gives the suite's file a second name too (the first
/// round's scenarios with such a backup are `HostileUnlockedCatchUpTests`, with
/// `keepingTheOldFile`). And a process fresh on a lock file that lost its name, which
/// Design.md said moves to the new one at its next `reload()` or observer catch-up.
///
/// Every test here failed on the code before the unlocked catch-up too (0663386): the
/// locked catch-up and the commit made the same `linkCount` check, and `reload()` and
/// the watcher's catch-up stopped at the freshness check before as well. `reload()` and
/// observers now follow a lock file that lost its name to a newer one
/// (`StoreState.lockFileIsCurrent`). The data file's cases are known issues, listed in
/// Design.md ("Limitations that remain"): checking that the suite's name names the file
/// a process has open takes a `fstatat` of the name (about 80 ns, 5% of a `set`, on
/// every commit), and a catch-up that made that check made writers behind refuse the
/// FIFO or symbolic link of `suite-stress hostile` where they used to go on, and made
/// repairs that start the suite over far more often (whose net changes were numbered 0,
/// out of order: fixed since, `aSuiteThatStartsOverNumbersItsNetChangesAfterWhatObserversSaw`).
/// `withKnownIssue` marks what they show, and fails once it no longer happens.
@Suite("Catching up without the file lock, attacked again")
struct HostileUnlockedCatchUpRoundTwoTests {
    let directory = TemporaryDirectory()

    var files: ReplacedDataFile { ReplacedDataFile(directory: directory) }

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
        try files.set("k", "v1", suite: name)
        let compactor = try startWorker("compact", in: directory, suite: name)
        compactor.expectLine(startingWith: "compacted")
        compactor.expectSuccess(within: .seconds(60))
        #expect(directory.names().contains { $0.hasPrefix(name + ".suite.h.") }, "\(directory.names())")
        #expect(rename(backup, data) == 0)
        try files.commitV2AfterTheRepair(name)
        let read = reader.string(forKey: "k")
        withKnownIssue("a journal kept as history is still read as the suite's file after a restore") {
            #expect(read == "v2", "read \(String(describing: read)), undone by the restore, in place of the committed v2")
        }
    }

    /// The same identity check on the commit path: a process that has the suite's file
    /// open, when a copy of it is renamed over it (as rsync or an editor saves a file)
    /// while a hard-link backup keeps the old file's inode under another name, finds
    /// its file with a name and as long as the header says. It used to append its next
    /// commit to the old inode, which the suite's file never held: the next process to
    /// open the suite repaired it from what it held, and the acknowledged write was
    /// gone. A writer now hears of the rename through its inotify watch
    /// (`FileChangeCounter`), and then compares the name's file with its own, so it
    /// reads the replacement and commits to it.
    @Test func aWriteToADataFileReplacedUnderItWhileAnotherNameKeepsItGoesToTheReplacement() throws {
        let name = "kept-writer"
        let suite = try Suite(named: name, directory: directory.url)
        try suite.set("v0", forKey: "k")
        let data = directory.file(name + ".suite").path, copy = directory.file(name + ".copy").path
        try FileManager.default.copyItem(atPath: data, toPath: copy)
        #expect(link(data, directory.file(name + ".kept").path) == 0)
        #expect(rename(copy, data) == 0)
        try suite.set("v1", forKey: "k")
        #expect(suite.string(forKey: "k") == "v1")
        let committed = try files.readInAnotherProcess("k", suite: name)
        #expect(committed.contains("value \"v1\""), "another process reads \(committed) after v1 was acknowledged")
        #expect(suite.string(forKey: "k") == "v1")
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
        try files.set("k", "v1", suite: name)
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
        try files.set("k", "v1", suite: name)
        try files.set("k", "v2", suite: name)
        let heard = recorder.wait(for: "k", toBecome: "v2", timeout: .seconds(10))
        #expect(heard, "the observer heard \(recorder.changes)")
        withExtendedLifetime(token) {}
    }
}
