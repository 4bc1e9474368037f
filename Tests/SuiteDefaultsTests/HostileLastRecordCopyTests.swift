import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Testing) @testable import SuiteDefaults

/// Attacks on the copy of the last commit's record in the shared header
/// (`SharedHeader.setLastRecord`, `copyLastRecord`, `StoreState.applyLastRecordCopy`):
/// every field of it forged or left behind (its size, its generation, its bytes), a
/// reader more than one commit behind, a writer killed between its copy and its
/// publication, a header set up again, a lock file cut short under the copy, an
/// observer and a writer waiting for the lock. Each test shows which way the reader
/// went: where a forged copy must not be taken, the record in the data file is
/// damaged too, so that a reader that took the copy answers v1 and one that read its
/// file repairs and answers v0.
@Suite("The last commit's record in the shared header, attacked")
struct HostileLastRecordCopyTests {
    let directory = TemporaryDirectory()

    // Offsets in the shared header (Docs/FileFormat.md).
    static let generationOffset = 16, bootIDOffset = 48, copyGenerationOffset = 80, copySizeOffset = 88, copyOffset = 128

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

    func setWord(_ value: UInt64, _ path: String, at offset: Int) throws {
        try write(withUnsafeBytes(of: value) { Array($0) }, to: path, at: offset)
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

    /// A reader at v0, one commit (v1, whose record is copied) behind; the record in
    /// the data file damaged. Returns the reader and the record's size.
    func oneCommitBehindOverDamage(_ name: String) throws -> (suite: Suite, recordSize: Int) {
        let suite = try reader(name)
        let before = try fileSize(dataPath(name))
        try commitElsewhere(name, value: "v1")
        let recordSize = try fileSize(dataPath(name)) - before
        #expect(try word(lockPath(name), at: Self.copyGenerationOffset) == word(lockPath(name), at: Self.generationOffset))
        #expect(try word(lockPath(name), at: Self.copySizeOffset) == UInt64(recordSize))
        try damageCommittedValue(name, inLast: recordSize)
        return (suite, recordSize)
    }

    /// The reader read its data file (found the damage and repaired it), not the copy.
    func expectReadFromTheDataFile(_ suite: Suite, _ recorder: DiagnosticsRecorder, _ what: String,
                                   sourceLocation: SourceLocation = #_sourceLocation) {
        let read = suite.string(forKey: "k")
        #expect(read == "v0", "\(what): read \(String(describing: read)), from the copy", sourceLocation: sourceLocation)
        #expect(recorder.kinds.contains(.repairedDamage), "\(what): no repair", sourceLocation: sourceLocation)
    }

    // MARK: The size

    /// The copy's size forged (the generation left as published, the copy itself
    /// intact): to 0, to one byte less or more than the new bytes, past the page's
    /// capacity, to the largest 32 and 64-bit values, and to the right size with its
    /// high half set (the field is 8 bytes). No reader takes the copy; none crashes.
    @Test(arguments: ["zero", "one less", "one more", "capacity + 1", "4000", "4096", "u32 max", "u64 max", "high half"])
    func aForgedSizeIsNotTaken(size forged: String) throws {
        let name = "size-" + forged.replacingOccurrences(of: " ", with: "-")
        let (suite, recordSize) = try oneCommitBehindOverDamage(name)
        let size: UInt64 = switch forged {
        case "zero": 0
        case "one less": UInt64(recordSize - 1)
        case "one more": UInt64(recordSize + 1)
        case "capacity + 1": UInt64(SharedHeader.lastRecordCapacity + 1)
        case "4000": 4000
        case "4096": 4096
        case "u32 max": UInt64(UInt32.max)
        case "u64 max": UInt64.max
        default: UInt64(recordSize) | 1 << 32
        }
        try setWord(size, lockPath(name), at: Self.copySizeOffset)
        let recorder = DiagnosticsRecorder(directory)
        expectReadFromTheDataFile(suite, recorder, forged)
    }

    /// A record too large for the page is not copied; a copy generation and size then
    /// forged to name it (the current generation, the record's size, past the page's
    /// end) are not taken: the reader never copies past the page, and reads the
    /// record from its file.
    @Test func aForgedCopyOfARecordLargerThanThePageIsNotReadPastThePage() throws {
        let name = "past-the-page"
        let suite = try reader(name)
        let before = try fileSize(dataPath(name))
        try commitElsewhere(name, "big", size: 4000)
        let recordSize = try fileSize(dataPath(name)) - before
        #expect(recordSize > SharedHeader.lastRecordCapacity)
        let generation = try word(lockPath(name), at: Self.generationOffset)
        #expect(try word(lockPath(name), at: Self.copyGenerationOffset) != generation, "a record larger than the page was copied")
        try setWord(generation, lockPath(name), at: Self.copyGenerationOffset)
        try setWord(UInt64(recordSize), lockPath(name), at: Self.copySizeOffset)
        #expect(suite.string(forKey: "big")?.utf8.count == 4000)
        #expect(suite.string(forKey: "k") == "v0")
    }

    /// The header itself never copies more than its page holds past the copy's
    /// offset, whatever the size field says: a size and a buffer of one byte past the
    /// capacity, of a page, and of two pages, under the current generation, are
    /// refused (a copy that read on would return true, or fault). The copy of the
    /// record's own size, the control, is taken, byte for byte the data file's.
    @Test func theHeaderNeverCopiesPastItsPage() throws {
        let name = "page-bound"
        let before: Int
        do {
            let suite = try Suite(named: name, directory: directory.url)
            try suite.set("v0", forKey: "k")
            before = try fileSize(dataPath(name))
            try suite.set("v1", forKey: "k")
        }
        let recordSize = try fileSize(dataPath(name)) - before
        let raw = open(lockPath(name), O_RDONLY | O_CLOEXEC)
        try #require(raw >= 0)
        let descriptor = FileDescriptor(rawValue: raw)
        defer { descriptor.close() }
        let header = SharedHeader(page: try MappedPage(descriptor, writable: false))
        let snapshot = try #require(header.readBetweenChanges())
        #expect(try word(lockPath(name), at: Self.copyGenerationOffset) == snapshot.generation)

        var control = [UInt8](repeating: 0, count: recordSize)
        #expect(control.withUnsafeMutableBytes { header.copyLastRecord(of: snapshot, into: $0) })
        #expect(try control == read(dataPath(name), count: recordSize, at: before))

        for count in [SharedHeader.lastRecordCapacity + 1, SharedHeader.size, 2 * SharedHeader.size] {
            try setWord(UInt64(count), lockPath(name), at: Self.copySizeOffset)
            var buffer = [UInt8](repeating: 0, count: count)
            let copied = buffer.withUnsafeMutableBytes { header.copyLastRecord(of: snapshot, into: $0) }
            #expect(!copied, "copied \(count) bytes from a page of \(SharedHeader.size)")
        }
    }

    // MARK: The bytes and the generation

    /// The copy's generation is the current one, its size the new bytes', and its
    /// bytes garbage (zeros, 0xFF, a pattern, and the record with its sequence number
    /// moved past the header's): the reader reads its file, which holds the record.
    @Test(arguments: ["zeros", "ones", "pattern", "record shifted by one byte"])
    func garbageUnderTheCurrentGenerationIsNotApplied(garbage: String) throws {
        let name = "garbage-" + garbage.replacingOccurrences(of: " ", with: "-")
        let suite = try reader(name)
        try commitElsewhere(name, value: "v1")
        let size = Int(try word(lockPath(name), at: Self.copySizeOffset))
        let copy = try read(lockPath(name), count: size, at: Self.copyOffset)
        let bytes: [UInt8] = switch garbage {
        case "zeros": [UInt8](repeating: 0, count: size)
        case "ones": [UInt8](repeating: 0xFF, count: size)
        case "pattern": (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        default: [0] + copy.dropLast()
        }
        try write(bytes, to: lockPath(name), at: Self.copyOffset)
        let read = suite.string(forKey: "k")
        #expect(read == "v1", "read \(String(describing: read))")
    }

    // MARK: More than one commit behind

    /// Two commits behind, the last of which is copied: the bytes between the reader's
    /// length and the committed length are both records, so the copy, which verifies
    /// and ends at the header's sequence number, is not the new bytes. The reader reads
    /// both; one that took the copy would miss the first commit for good.
    @Test func aReaderTwoCommitsBehindReadsBothCommits() throws {
        let name = "two-behind"
        let suite = try reader(name)
        try commitElsewhere(name, "a", value: "1")
        try commitElsewhere(name, value: "v2")
        #expect(try word(lockPath(name), at: Self.copyGenerationOffset) == word(lockPath(name), at: Self.generationOffset))
        let a = suite.string(forKey: "a"), k = suite.string(forKey: "k")
        #expect(a == "1" && k == "v2", "read a = \(String(describing: a)), k = \(String(describing: k))")
    }

    // MARK: Writers killed, headers set up again, lock files cut short

    /// A writer killed after it copied its record and before it published the
    /// generation of the copy leaves the header's generation odd, one below the
    /// copy's (made here from a commit by setting the generation back by one). The
    /// reader does not take the copy but catches up under the lock to the dead
    /// writer's whole record; the next writer repairs, which leaves no copy that its
    /// generation names, and commits; the reader takes that commit, whose record is
    /// copied again.
    @Test func aWriterKilledBetweenItsCopyAndItsPublicationLeavesNoUsableCopy() throws {
        let name = "killed-after-copy"
        let suite = try reader(name)
        try commitElsewhere(name, value: "v1")
        let published = try word(lockPath(name), at: Self.generationOffset)
        try setWord(published &- 1, lockPath(name), at: Self.generationOffset)
        #expect(try word(lockPath(name), at: Self.copyGenerationOffset) == published)
        let recorder = DiagnosticsRecorder(directory)
        #expect(suite.string(forKey: "k") == "v1", "the dead writer's whole record")
        try commitElsewhere(name, value: "v2")
        let generation = try word(lockPath(name), at: Self.generationOffset)
        #expect(generation != published &+ 2 && generation & 1 == 0, "the repair set the header up again")
        #expect(try word(lockPath(name), at: Self.copyGenerationOffset) == generation)
        let read = suite.string(forKey: "k")
        #expect(read == "v2", "read \(String(describing: read))")
        #expect(!recorder.kinds.contains(.repairedDamage))
    }

    /// The header set up again (another boot's, made by zeroing its boot ID) zeroes
    /// the copy's generation, which no generation is: a copy from before the reboot is
    /// never taken for one published since.
    @Test func aHeaderSetUpAgainLeavesNoCopyOfBefore() throws {
        let name = "rebooted"
        let suite = try reader(name)
        try commitElsewhere(name, value: "v1")
        #expect(try word(lockPath(name), at: Self.copyGenerationOffset) == word(lockPath(name), at: Self.generationOffset))
        try write([UInt8](repeating: 0, count: 16), to: lockPath(name), at: Self.bootIDOffset)
        #expect(suite.string(forKey: "k") == "v1")
        #expect(try word(lockPath(name), at: Self.bootIDOffset) != 0, "the header was set up again")
        #expect(try word(lockPath(name), at: Self.copyGenerationOffset) == 0)
        try commitElsewhere(name, value: "v2")
        #expect(suite.string(forKey: "k") == "v2")
    }

    /// The lock file cut short to 100 bytes and grown back to a page by something
    /// outside the library: the fields up to the copy's size survive, the copy is
    /// zeros. The reader, one commit behind, does not take it but reads its file.
    @Test func aCopyZeroedByALockFileCutShortIsNotTaken() throws {
        let name = "cut-short"
        let (suite, _) = try oneCommitBehindOverDamage(name)
        #expect(truncate(lockPath(name), 100) == 0)
        #expect(truncate(lockPath(name), off_t(SharedHeader.size)) == 0)
        #expect(try read(lockPath(name), count: 8, at: Self.copyOffset) == [UInt8](repeating: 0, count: 8))
        let recorder = DiagnosticsRecorder(directory)
        expectReadFromTheDataFile(suite, recorder, "cut short")
    }

    // MARK: Observers and waiting writers

    /// An observer (delivered on the watcher's thread, whose catch-up takes the copy)
    /// hears each of ten commits of another process once, in order, with rising
    /// sequence numbers: no commit is lost or heard twice.
    @Test func anObserverHearsEveryCopiedCommitOnce() throws {
        let name = "observed"
        let suite = try reader(name)
        let recorder = ChangeRecorder()
        let token = try SuiteObservation.allKeys.delivered(on: .watcherThread).start(in: suite, onChange: recorder.handler)
        defer { withExtendedLifetime(token) {} }
        for index in 1...10 {
            try commitElsewhere(name, value: "v\(index)")
            #expect(try word(lockPath(name), at: Self.copyGenerationOffset) == word(lockPath(name), at: Self.generationOffset))
            #expect(recorder.wait(for: "k", toBecome: .string("v\(index)")))
        }
        let heard = recorder.changes.filter { $0.key == "k" }
        #expect(heard.map(\.newValue) == (1...10).map { .string("v\($0)") }, "heard \(heard)")
        #expect(zip(heard, heard.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
    }

    /// A writer holds the lock after publishing v1 (paused at `committed`): this
    /// process reads v1 from the copy without waiting for the lock (the data file's
    /// record is damaged, so only the copy has it), then writes once the writer is
    /// killed: its commit follows v1. (Before the copy, the read waited for the lock,
    /// and timed out.)
    @Test func aReaderWhileTheWriterHoldsTheLockTakesTheCopy() throws {
        let name = "held"
        let suite = try Suite(named: name, directory: directory.url, options: .init(lockTimeout: .seconds(5)))
        try suite.set("v0", forKey: "k")
        let before = try fileSize(dataPath(name))
        let writer = try startWorker("pause", in: directory, suite: name, ["point": "committed", "key": "k", "value": "v1"])
        writer.expectLine(startingWith: "paused")
        try damageCommittedValue(name, inLast: try fileSize(dataPath(name)) - before)
        let read = suite.string(forKey: "k")
        #expect(read == "v1", "read \(String(describing: read))")
        #expect(writer.kill() == .signaled(SIGKILL))
        try suite.set("mine", forKey: "other")
        #expect(suite.string(forKey: "k") == "v1" && suite.string(forKey: "other") == "mine")
    }
}
