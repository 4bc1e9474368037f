import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport

/// What the hostile tests of catching up do to a suite in `directory`, with other
/// processes: a suite's file replaced under a writer killed in its commit, and the
/// commit that follows the repair.
struct ReplacedDataFile {
    let directory: TemporaryDirectory

    /// What a new process reads for `key`: the committed state.
    func readInAnotherProcess(_ key: String, suite: String) throws -> [String] {
        let reader = try startWorker("get", in: directory, suite: suite, ["key": key])
        reader.expectSuccess(within: .seconds(60))
        return reader.lines
    }

    /// `key` = `value`, committed by another process.
    func set(_ key: String, _ value: String, suite: String) throws {
        let writer = try startWorker("try-set", in: directory, suite: suite, ["key": key, "value": value])
        writer.expectLine(startingWith: "ok")
        writer.expectSuccess(within: .seconds(60))
    }

    /// The suite's file is replaced by a copy of every committed byte (renamed into
    /// place: the file this process has open loses the suite's name) after a writer
    /// was killed with its record of `k = v1` written but not published. With
    /// `keepingTheOldFile`, the old file first gets a second name (a hard-link backup),
    /// so that it keeps a name. `settle` runs before the rename.
    func restoreUnderADeadWriter(_ name: String, keepingTheOldFile: Bool = false, settle: () throws -> Void = {}) throws {
        let data = directory.file(name + ".suite").path, copy = directory.file(name + ".copy").path
        try FileManager.default.copyItem(atPath: data, toPath: copy)
        if keepingTheOldFile { #expect(link(data, directory.file(name + ".kept").path) == 0) }
        let killed = try startWorker("pause", in: directory, suite: name, ["point": "recordWritten", "key": "k", "value": "v1"])
        defer { _ = killed.kill() }
        killed.expectLine(startingWith: "paused")
        _ = killed.kill()
        _ = killed.wait(timeout: .seconds(60))
        try settle()
        #expect(rename(copy, data) == 0)
    }

    /// A writer repairs after the one that died (rebuilding the header from the
    /// restored file) and commits `k = v2`: as large as v1, and with the same sequence
    /// number, since v1 was never published.
    func commitV2AfterTheRepair(_ name: String) throws {
        try set("k", "v2", suite: name)
        let committed = try readInAnotherProcess("k", suite: name)
        #expect(committed.contains("value \"v2\""), "\(committed)")
    }
}
