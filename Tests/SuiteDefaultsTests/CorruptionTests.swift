import Foundation
import Glibc
import Testing
import TestSupport
@testable import SuiteDefaults

/// The byte ranges of the records in a data file.
func recordRanges(_ bytes: [UInt8]) -> [Range<Int>] {
    bytes.withUnsafeBytes { buffer in
        var ranges: [Range<Int>] = []
        var offset = DataFileHeader.size
        while case .record(_, let end) = RecordFormat.parse(buffer, at: offset, limit: buffer.count) {
            ranges.append(offset..<end)
            offset = end
        }
        return ranges
    }
}

@Suite("Damaged files are detected, repaired, and kept aside")
struct CorruptionTests {
    let directory = TemporaryDirectory()
    let file = "prefs.suite"

    /// Writes keys k0 ... k(count-1), one record each, and releases the suite.
    func writeKeys(_ count: Int) throws -> [UInt8] {
        let suite = try Suite(named: "prefs", directory: directory.url)
        for index in 0..<count { try suite.set("value \(index)", forKey: "k\(index)") }
        return directory.bytes(of: file)!
    }

    func open() throws -> Suite { try Suite(named: "prefs", directory: directory.url) }

    func damagedCopies() -> [String] { directory.names().filter { $0.hasPrefix("prefs.suite.damaged-") } }

    @Test func aFlippedByteLosesOnlyItsRecord() throws {
        let recorder = DiagnosticsRecorder(directory)
        var bytes = try writeKeys(5)
        let ranges = recordRanges(bytes)
        #expect(ranges.count == 5)
        bytes[ranges[2].lowerBound + 40] ^= 0x55
        try directory.write(bytes, to: file)

        let suite = try open()
        var expected: [String: SuiteValue] = [:]
        for index in [0, 1, 3, 4] { expected["k\(index)"] = .string("value \(index)") }
        #expect(suite.storedValues() == expected)
        #expect(recorder.kinds == [.repairedDamage])
        #expect(damagedCopies().count == 1)
        #expect(damagedCopies().first.flatMap { directory.bytes(of: $0) } == bytes, "the damaged file is kept as it was")
        // The repaired suite works, and needs no further repair.
        try suite.set("after", forKey: "k5")
        #expect(try Suite(named: "prefs", directory: directory.url).string(forKey: "k5") == "after")
        #expect(recorder.kinds == [.repairedDamage])
    }

    @Test func aTruncatedFileKeepsEveryCompleteRecord() throws {
        let recorder = DiagnosticsRecorder(directory)
        let bytes = try writeKeys(4)
        let ranges = recordRanges(bytes)
        try directory.write(Array(bytes[..<(ranges[3].lowerBound + 10)]), to: file)

        let suite = try open()
        #expect(suite.storedValues().keys.sorted() == ["k0", "k1", "k2"])
        #expect(recorder.kinds == [.repairedDamage], "committed bytes went missing, which is damage, not a torn write")
        #expect(damagedCopies().count == 1)
    }

    @Test func garbageAppendedIsDetectedAndSetAside() throws {
        let recorder = DiagnosticsRecorder(directory)
        let bytes = try writeKeys(3)
        try directory.write(bytes + Array("garbage appended by someone else".utf8), to: file)

        let suite = try open()
        #expect(suite.storedValues().count == 3)
        #expect(recorder.kinds == [.repairedDamage])
        #expect(directory.bytes(of: file).map { recordRanges($0).count } == 1, "rewritten as one snapshot")
    }

    @Test func aDamagedFileHeaderStillYieldsItsRecords() throws {
        let recorder = DiagnosticsRecorder(directory)
        var bytes = try writeKeys(3)
        bytes[17] ^= 0xFF  // inside the file ID, so the header checksum fails
        try directory.write(bytes, to: file)
        #expect(try open().storedValues().count == 3)
        #expect(recorder.kinds == [.repairedDamage])

        var overwritten = directory.bytes(of: file)!
        for index in 0..<8 { overwritten[index] = 0x41 }  // even the magic
        try directory.write(overwritten, to: file)
        #expect(try open().storedValues().count == 3)
    }

    @Test func damageFoundWhileAProcessHasTheSuiteOpenIsRepaired() throws {
        let recorder = DiagnosticsRecorder(directory)
        let suite = try open()
        try suite.set("one", forKey: "a")
        try suite.set("two", forKey: "b")
        // Someone cuts the file behind our back; our next write notices before appending.
        var bytes = directory.bytes(of: file)!
        bytes.removeLast(5)
        try directory.write(bytes, to: file)
        try suite.set("three", forKey: "c")
        #expect(recorder.kinds == [.repairedDamage])
        #expect(suite.storedValues() == ["a": "one", "c": "three"])
        #expect(try Suite(named: "prefs", directory: directory.url).storedValues() == ["a": "one", "c": "three"])
    }

    @Test func aLostLockFileIsRebuiltFromTheData() throws {
        let recorder = DiagnosticsRecorder(directory)
        _ = try writeKeys(3)
        #expect(unlink(directory.file("prefs.suite.lock").path) == 0)
        #expect(try open().storedValues().count == 3)

        try directory.write([UInt8](repeating: 0xAB, count: 4096), to: "prefs.suite.lock")
        let suite = try open()
        #expect(suite.storedValues().count == 3)
        try suite.set("more", forKey: "k3")
        #expect(recorder.kinds.isEmpty, "the data file was intact: nothing to report")
    }

    @Test func aVanishedDataFileIsReportedAndTheSuiteStartsEmpty() throws {
        let recorder = DiagnosticsRecorder(directory)
        let suite = try open()
        try suite.set(1, forKey: "k")
        #expect(unlink(directory.file(file).path) == 0)
        try suite.set(2, forKey: "j")
        #expect(suite.storedValues() == ["j": 2])
        #expect(recorder.kinds == [.dataFileMissing])
    }

    @Test func aFileCutInsideItsMagicIsStillOurs() throws {
        let recorder = DiagnosticsRecorder(directory)
        let bytes = try writeKeys(2)
        try directory.write(Array(bytes.prefix(5)), to: file)
        let suite = try open()
        #expect(suite.storedValues().isEmpty, "nothing could be kept")
        #expect(recorder.kinds == [.repairedDamage])
        #expect(damagedCopies().count == 1)
        try suite.set("again", forKey: "k")
    }

    @Test func anUnreadableFileWhereASuiteFileWasIsKeptAsideNotRefused() throws {
        let recorder = DiagnosticsRecorder(directory)
        _ = try writeKeys(3)
        // The lock file still says a suite file was here.
        let garbage = [UInt8](repeating: 0x42, count: 300)
        try directory.write(garbage, to: file)
        let suite = try open()
        #expect(suite.storedValues().isEmpty)
        #expect(recorder.kinds == [.repairedDamage])
        #expect(damagedCopies().first.flatMap { directory.bytes(of: $0) } == garbage, "kept as it was")
    }

    @Test func anEmptyDataFileCountsAsNone() throws {
        try directory.write([], to: file)
        let suite = try open()
        #expect(suite.storedValues().isEmpty)
        try suite.set(1, forKey: "k")
        #expect(try Suite(named: "prefs", directory: directory.url).integer(forKey: "k") == 1)
    }
}
