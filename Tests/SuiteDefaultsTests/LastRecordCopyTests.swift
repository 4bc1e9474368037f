import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@testable import SuiteDefaults

/// A reader one commit behind reads that commit from the copy its writer left in the
/// shared header (`SharedHeader.setLastRecord`, `StoreState.applyLastRecordCopy`),
/// and reads its data file instead whenever the copy is not the record published:
/// another generation's, another size, one that does not verify, or an earlier one.
@Suite("The last commit's record in the shared header")
struct LastRecordCopyTests {
    let directory = TemporaryDirectory()

    // Offsets in the shared header (Docs/FileFormat.md).
    static let generationOffset = 16, copyGenerationOffset = 80, copySizeOffset = 88, copyOffset = 128

    func lockPath(_ name: String) -> String { directory.file(name + ".suite.lock").path }
    func dataPath(_ name: String) -> String { directory.file(name + ".suite").path }

    func read(_ path: String, count: Int, at offset: Int) throws -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: count)
        try #require(pread(descriptor, &bytes, count, off_t(offset)) == count)
        return bytes
    }

    func write(_ bytes: [UInt8], to path: String, at offset: Int) throws {
        let descriptor = open(path, O_WRONLY | O_CLOEXEC)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        try #require(pwrite(descriptor, bytes, bytes.count, off_t(offset)) == bytes.count)
    }

    func word(_ path: String, at offset: Int) throws -> UInt64 {
        try read(path, count: 8, at: offset).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
    }

    func fileSize(_ path: String) throws -> Int {
        try #require(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int)
    }

    /// Sets `key` to `value` (or to a value of `size` bytes) in another process.
    func commitElsewhere(_ name: String, _ key: String = "k", value: String? = nil, size: Int? = nil) throws {
        var options = ["key": key]
        if let value { options["value"] = value }
        if let size { options["size"] = "\(size)" }
        try startWorker("try-set", in: directory, suite: name, options).expectSuccess(within: .seconds(60))
    }

    /// A suite opened and read here at "v0".
    func reader(_ name: String) throws -> Suite {
        let suite = try Suite(named: name, directory: directory.url)
        try suite.set("v0", forKey: "k")
        #expect(suite.string(forKey: "k") == "v0")
        return suite
    }

    /// Changes the first "v1" in the last `count` bytes of the data file to "X1".
    func damageCommittedValue(_ name: String, inLast count: Int) throws {
        let size = try fileSize(dataPath(name))
        let tail = try read(dataPath(name), count: count, at: size - count)
        let value = try #require(tail.firstRange(of: Array("v1".utf8)))
        try write(Array("X".utf8), to: dataPath(name), at: size - count + value.lowerBound)
    }

    @Test func aReaderOneCommitBehindReadsTheCopyNotItsDataFile() throws {
        let name = "copied"
        let suite = try reader(name)
        let before = try fileSize(dataPath(name))
        try commitElsewhere(name, value: "v1")
        // The record in the data file no longer verifies; the copy still does, and
        // is what the writer published.
        try damageCommittedValue(name, inLast: try fileSize(dataPath(name)) - before)
        let read = suite.string(forKey: "k")
        #expect(read == "v1", "read \(String(describing: read))")
    }

    /// The same under the lock: a writer one commit behind catches up from the copy
    /// before it commits.
    @Test func aWriterOneCommitBehindReadsTheCopyUnderTheLock() throws {
        let name = "copied-locked"
        let suite = try reader(name)
        let before = try fileSize(dataPath(name))
        try commitElsewhere(name, value: "v1")
        try damageCommittedValue(name, inLast: try fileSize(dataPath(name)) - before)
        try suite.set("w", forKey: "j")
        let read = suite.string(forKey: "k")
        #expect(read == "v1", "read \(String(describing: read))")
    }

    @Test func aCopyUnderAnotherGenerationIsNotRead() throws {
        let name = "other-generation"
        let suite = try reader(name)
        let before = try fileSize(dataPath(name))
        try commitElsewhere(name, value: "v1")
        let generation = try word(lockPath(name), at: Self.generationOffset)
        #expect(try word(lockPath(name), at: Self.copyGenerationOffset) == generation)
        // As a commit by a library from before the copy leaves it: another generation's.
        try write(withUnsafeBytes(of: generation &- 2) { Array($0) }, to: lockPath(name), at: Self.copyGenerationOffset)
        try damageCommittedValue(name, inLast: try fileSize(dataPath(name)) - before)
        let recorder = DiagnosticsRecorder(directory)
        let read = suite.string(forKey: "k")
        // Read from the data file, where it does not verify: repaired.
        #expect(read == "v0", "read \(String(describing: read))")
        #expect(recorder.kinds.contains(.repairedDamage))
    }

    @Test func aCopyThatDoesNotVerifyIsNotApplied() throws {
        let name = "flipped-copy"
        let suite = try reader(name)
        try commitElsewhere(name, value: "v1")
        let size = Int(try word(lockPath(name), at: Self.copySizeOffset))
        let copy = try read(lockPath(name), count: size, at: Self.copyOffset)
        let value = try #require(copy.firstRange(of: Array("v1".utf8)))
        try write(Array("X".utf8), to: lockPath(name), at: Self.copyOffset + value.lowerBound)
        let read = suite.string(forKey: "k")
        #expect(read == "v1", "read \(String(describing: read))")
    }

    @Test func anEarlierCommitsCopyUnderTheCurrentGenerationIsNotApplied() throws {
        let name = "earlier-copy"
        let suite = try reader(name)
        try commitElsewhere(name, value: "v1")
        #expect(suite.string(forKey: "k") == "v1")
        let size = Int(try word(lockPath(name), at: Self.copySizeOffset))
        let earlier = try read(lockPath(name), count: size, at: Self.copyOffset)
        try commitElsewhere(name, value: "v2")
        // A record of the same size that verifies, but is not the one published.
        #expect(try word(lockPath(name), at: Self.copySizeOffset) == UInt64(size))
        try write(earlier, to: lockPath(name), at: Self.copyOffset)
        let read = suite.string(forKey: "k")
        #expect(read == "v2", "read \(String(describing: read))")
    }

    /// Records around the copy's capacity: a record that fits is copied whole, byte
    /// for byte as in the data file; one that does not is not copied (and nothing is
    /// written past the page); the reader reads each.
    @Test func recordsAroundTheCapacityAreCopiedWhenTheyFit() throws {
        let name = "capacity"
        let suite = try reader(name)
        var copied = 0, notCopied = 0
        for valueSize in stride(from: SharedHeader.lastRecordCapacity - 48, through: SharedHeader.lastRecordCapacity + 8, by: 8) {
            let before = try fileSize(dataPath(name))
            try commitElsewhere(name, "big", size: valueSize)
            let recordSize = try fileSize(dataPath(name)) - before
            let generation = try word(lockPath(name), at: Self.generationOffset)
            if recordSize <= SharedHeader.lastRecordCapacity {
                copied += 1
                #expect(try word(lockPath(name), at: Self.copyGenerationOffset) == generation)
                #expect(try word(lockPath(name), at: Self.copySizeOffset) == UInt64(recordSize))
                #expect(try read(lockPath(name), count: recordSize, at: Self.copyOffset)
                        == read(dataPath(name), count: recordSize, at: before))
            } else {
                notCopied += 1
                #expect(try word(lockPath(name), at: Self.copyGenerationOffset) != generation)
            }
            #expect(suite.string(forKey: "big")?.utf8.count == valueSize)
        }
        #expect(copied > 0 && notCopied > 0, "\(copied) copied, \(notCopied) not")
    }
}
