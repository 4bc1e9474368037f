import Foundation
import Testing
import TestSupport
@testable import SuiteDefaults

/// What the journal records for a mirror (issue #15): that a value was stored as a
/// first-access default rather than chosen, and that a commit was made by a mirror.
/// Both need format version 2, which a file takes only when it needs it.
@Suite("Defaults and mirrored commits in the journal")
struct DefaultsAndMirrorTests {
    let directory = TemporaryDirectory()

    func open(_ name: String = "prefs") throws -> Suite {
        try Suite(named: name, directory: directory.url)
    }

    /// The data file's format version, from its header.
    func version(of name: String = "prefs") -> Int? {
        directory.bytes(of: "\(name).suite").map { Int($0[8]) | Int($0[9]) << 8 }
    }

    /// The contents of the data file as a process that opens it afresh reads them.
    func contentsOnDisk(_ name: String = "prefs") throws -> SuiteContents {
        let bytes = try #require(directory.bytes(of: "\(name).suite"))
        let scan = try bytes.withUnsafeBytes { try DataFileScan.scan($0, committedLength: bytes.count) }
        #expect(scan.verdict == .intact)
        return scan.contents
    }

    @Test func plainWritesKeepAFileOlderLibrariesRead() throws {
        let suite = try open()
        try suite.set("metric", forKey: "units")
        try suite.update { try $0.setValue(.integer(1), forKey: "count") }
        try suite.compact()
        #expect(version() == 1)
    }

    @Test func aFirstAccessDefaultIsRecordedAsOne() throws {
        let suite = try open()
        try suite.set("x", forKey: "other")
        #expect(version() == 1)
        let recorder = ChangeRecorder()
        let token = try suite.observe(onChange: recorder.handler)
        defer { token.cancel() }

        #expect(try suite.setIfAbsent("metric", forKey: "units") == "metric")
        #expect(recorder.wait(for: "units", toBecome: "metric"))
        #expect(recorder.changes.last?.isDefault == true)
        #expect(recorder.changes.last?.isMirrored == false)
        #expect(suite.storedEntries()["units"] == Suite.StoredEntry(value: "metric", isDefault: true))
        #expect(suite.storedEntries()["other"]?.isDefault == false)
        // The file became version 2 before the record that needs it was written, and
        // a process reading it afresh sees the default as one.
        #expect(version() == 2)
        #expect(try contentsOnDisk().entry(forKey: "units")?.isDefault == true)
        #expect(try contentsOnDisk().entry(forKey: "other")?.isDefault == false)

        // A compaction keeps the flag, and the version.
        try suite.compact()
        #expect(version() == 2)
        #expect(try contentsOnDisk().entry(forKey: "units")?.isDefault == true)
    }

    @Test func choosingTheDefaultsValueMakesItAChoice() throws {
        let suite = try open()
        try suite.setIfAbsent("metric", forKey: "units")
        let recorder = ChangeRecorder()
        let token = try suite.observe(onChange: recorder.handler)
        defer { token.cancel() }
        // The same value, chosen: committed (the flag changes), but no value changed.
        try suite.set("metric", forKey: "units")
        #expect(suite.storedEntries()["units"] == Suite.StoredEntry(value: "metric", isDefault: false))
        #expect(try contentsOnDisk().entry(forKey: "units")?.isDefault == false)
        try suite.set("imperial", forKey: "units")
        #expect(recorder.wait(for: "units", toBecome: "imperial"))
        #expect(recorder.changes.map(\.newValue) == ["imperial"])
        #expect(recorder.changes.map(\.isDefault) == [false])
        // setIfAbsent never turns a choice back into a default.
        #expect(try suite.setIfAbsent("metric", forKey: "units") == "imperial")
        #expect(suite.storedEntries()["units"]?.isDefault == false)
    }

    @Test func aKeysStoredDefaultAndAnInvalidValuesReplacementAreDefaults() throws {
        let suite = try open()
        let key = SuiteKey<Int>("count", default: 7)
        #expect(try suite.valueStoringDefault(for: key) == 7)
        #expect(suite.storedEntries()["count"] == Suite.StoredEntry(value: .integer(7), isDefault: true))
        try suite.set("not a number", forKey: "count")
        #expect(try suite.valueStoringDefault(for: key) == 7)
        #expect(suite.storedEntries()["count"]?.isDefault == true)
    }

    @Test func aMirrorsCommitIsMarkedForItsObservers() throws {
        let suite = try open()
        let recorder = ChangeRecorder()
        let token = try suite.observe(onChange: recorder.handler)
        defer { token.cancel() }
        try suite.set("local", forKey: "a")
        try suite.updateAsMirror { try $0.setValue("remote", forKey: "b") }
        try suite.set("local again", forKey: "c")
        #expect(recorder.wait(for: "c", toBecome: "local again"))
        #expect(recorder.changes.map(\.key) == ["a", "b", "c"])
        #expect(recorder.changes.map(\.isMirrored) == [false, true, false])
        #expect(version() == 2)
        // Another process reads the mark from the journal.
        let bytes = try #require(directory.bytes(of: "prefs.suite"))
        let scan = try bytes.withUnsafeBytes {
            try DataFileScan.scan($0, committedLength: bytes.count, keepingRecords: true)
        }
        #expect(scan.records.map(\.record.flags) == [[], [.mirrored], []])
    }

    /// What a mirror started after a kill asks: which keys its killed predecessor
    /// committed since it wrote them ahead. Found in the journal and, after a
    /// compaction, its history; unknown once the history is gone.
    @Test func aMirrorsCommitsAreFoundInTheJournalAndItsHistory() throws {
        let suite = try open()
        try suite.set("x", forKey: "before")
        let start = suite.lastCommitSequence
        try suite.updateAsMirror { tx in
            try tx.setValue("remote", forKey: "mirrored")
            try tx.setValue(nil, forKey: "before")
        }
        try suite.set("y", forKey: "plain")
        let me = getpid()
        #expect(try suite.keysOfMirroredCommits(after: start, by: me) == ["mirrored", "before"])
        #expect(try suite.keysOfMirroredCommits(after: start, by: me &+ 1) == [])
        #expect(try suite.keysOfMirroredCommits(after: start + 1, by: me) == [])

        // The commit is now in a history file; one after the compaction in the new journal.
        try suite.compact()
        try suite.updateAsMirror { try $0.setValue("later", forKey: "after") }
        #expect(try suite.keysOfMirroredCommits(after: start, by: me) == ["mirrored", "before", "after"])
        #expect(try suite.keysOfMirroredCommits(after: suite.lastCommitSequence - 1, by: me) == ["after"])

        // A compaction that keeps no history leaves no record of it.
        try Suite(named: "prefs", directory: directory.url, options: Suite.Options(changeHistorySize: 0)).compact()
        #expect(try suite.keysOfMirroredCommits(after: start, by: me) == nil)
        #expect(try suite.keysOfMirroredCommits(after: suite.lastCommitSequence, by: me) == [])
    }

    /// Commits spread over several history files and the data file are each found; a
    /// history file missing in the middle leaves no answer (nil) for what it held, while
    /// the commits after it are still found.
    @Test func aMirrorsCommitsAreFoundAcrossHistoryFilesAndAGapGivesNoAnswer() throws {
        let suite = try open()
        try suite.set("x", forKey: "before")
        let start = suite.lastCommitSequence
        let me = getpid()
        var compactedAt: [UInt64] = []
        for round in 0..<3 {
            try suite.updateAsMirror { try $0.setValue(.integer(round), forKey: "mirrored.\(round)") }
            try suite.set(round, forKey: "plain")
            try suite.compact()
            compactedAt.append(suite.lastCommitSequence)
        }
        try suite.updateAsMirror { try $0.setValue("later", forKey: "after") }
        #expect(try suite.keysOfMirroredCommits(after: start, by: me) == ["mirrored.0", "mirrored.1", "mirrored.2", "after"])

        // The history file of the second compaction (named by its last sequence number).
        let hex = String(compactedAt[1], radix: 16)
        let middle = "prefs.suite.h." + String(repeating: "0", count: 16 - hex.count) + hex
        try FileManager.default.removeItem(atPath: directory.url.appendingPathComponent(middle).path)
        #expect(try suite.keysOfMirroredCommits(after: start, by: me) == nil)
        #expect(try suite.keysOfMirroredCommits(after: compactedAt[1], by: me) == ["mirrored.2", "after"])
    }

    @Test func aFileOfVersion2IsReadAndOneOfVersion3Refused() throws {
        let suite = try open()
        try suite.updateAsMirror { try $0.setValue("remote", forKey: "b") }
        #expect(version() == 2)
        var header = try #require(directory.bytes(of: "prefs.suite"))
        header[8] = 3
        let checksum = header.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[..<28])) }
        withUnsafeBytes(of: checksum.littleEndian) { for index in 0..<4 { header[28 + index] = $0[index] } }
        #expect(DataFileHeader.decode(header.withUnsafeBytes { $0 }) == .unsupported(version: 3))
    }

    @Test func unknownRecordFlagsAreDamage() throws {
        let record = Record(kind: .transaction, sequence: 1, timestamp: 0, pid: 1,
                            operations: [.set(key: "k", value: "v", size: 3)], flags: Record.Flags(rawValue: 2))
        let bytes = RecordFormat.encode(record)
        let outcome = bytes.withUnsafeBytes { RecordFormat.parse($0, at: 0, limit: bytes.count) }
        guard case .invalid(let error) = outcome else {
            Issue.record("a record with an unknown flag was accepted")
            return
        }
        #expect(error.reason.contains("flags"))
        let known = RecordFormat.encode(Record(kind: .transaction, sequence: 1, timestamp: 0, pid: 1,
                                               operations: [.set(key: "k", value: "v", size: 3, asDefault: true)],
                                               flags: .mirrored))
        guard case .record(let parsed, _) = known.withUnsafeBytes({ RecordFormat.parse($0, at: 0, limit: known.count) }) else {
            Issue.record("a record with known flags was refused")
            return
        }
        #expect(parsed.flags == .mirrored)
        #expect(parsed.operations == [.set(key: "k", value: "v", size: 3, asDefault: true)])
    }
}
