import Foundation
import Testing
import TestSupport
import ToolSupport
@testable import SuiteDefaults

/// Opening a suite reads its file through a window (`RecordWindow`), so that a large
/// suite's memory is its table, not its table and its file. Whatever the window's size,
/// it must read exactly what reading the whole file reads, and refuse exactly the same.
@Suite("A file read through a window reads as the whole file does")
struct WindowedReadingTests {
    /// A file whose first record, a snapshot, is larger than the windows below and
    /// holds values larger than them, followed by transactions.
    static func largeFile() throws -> [UInt8] {
        var operations: [SuiteDefaults.Operation] = []
        func set(_ key: String, _ value: SuiteValue) throws {
            operations.append(.set(key: key, value: value, size: try ValueEncoding.measure(value)))
        }
        for index in 0..<300 {
            let value: SuiteValue = switch index % 5 {
            case 0: .string("value \(index) " + String(repeating: "é", count: index % 40))
            case 1: .integer(index)
            case 2: ["list": [.double(-0.0), .data(Data(repeating: UInt8(index % 256), count: index)), "ü"]]
            case 3: .bool(index % 2 == 0)
            default: .date(Date(timeIntervalSince1970: Double(index)))
            }
            try set("key.\(index)", value)
        }
        try set("big", .data(Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })))
        var bytes = DataFileHeader.encode(fileID: 0x77)
        bytes += RecordFormat.encode(Record(kind: .snapshot, sequence: 5, timestamp: 0, pid: 1, operations: operations))
        for sequence in 6...9 {
            let value = SuiteValue.string("later \(sequence)")
            bytes += RecordFormat.encode(Record(kind: .transaction, sequence: UInt64(sequence), timestamp: 0, pid: 1, operations: [
                .set(key: "key.\(sequence)", value: value, size: try ValueEncoding.measure(value)),
                .remove(key: "key.\(sequence + 100)"),
            ]))
        }
        return bytes
    }

    /// What reading the whole file gives: its records, applied one by one.
    static func wholeFileContents(_ bytes: [UInt8]) -> SuiteContents? {
        guard let records = StoreState.records(in: bytes, from: DataFileHeader.size, after: nil) else { return nil }
        var contents = SuiteContents()
        for record in records { contents.apply(record) }
        return contents
    }

    static func windowedContents(_ bytes: [UInt8], windowSize: Int) throws -> SuiteContents? {
        var window = RecordWindow(end: bytes.count, preferredSize: windowSize) { buffer, offset in
            let count = max(0, min(buffer.count, bytes.count - offset))
            bytes.withUnsafeBytes { buffer.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + count)])) }
            return count
        }
        return try StoreState.contents(reading: &window, from: DataFileHeader.size)
    }

    static func expectSame(_ windowed: SuiteContents?, _ whole: SuiteContents?, _ what: String) {
        #expect((windowed == nil) == (whole == nil), "\(what): one reading refused the file and the other did not")
        guard let windowed, let whole else { return }
        #expect(windowed.changes(to: whole).isEmpty, "\(what): the values differ")
        #expect(windowed.lastSequence == whole.lastSequence && windowed.liveBytes == whole.liveBytes && windowed.count == whole.count,
                "\(what): the sequence, size or count differ")
    }

    static let windowSizes = [1, 2, 7, 64, 1000, 4096, 65536]

    @Test(arguments: windowSizes)
    func anIntactFileReadsTheSame(windowSize: Int) throws {
        let bytes = try Self.largeFile()
        let whole = try #require(Self.wholeFileContents(bytes))
        #expect(whole.count > 200 && whole["big"] != nil, "the file is what the test means")
        Self.expectSame(try Self.windowedContents(bytes, windowSize: windowSize), whole, "window of \(windowSize)")
    }

    @Test func aDamagedOrCutFileIsRefusedExactlyAsWhole() throws {
        let seed = try Self.largeFile()
        var generator = SplitMix64(seed: 0x3A11)
        for round in 0..<240 {
            var bytes = seed
            switch round % 3 {
            case 0:
                bytes[DataFileHeader.size + Int(generator.next() % UInt64(bytes.count - DataFileHeader.size))] ^= UInt8(truncatingIfNeeded: generator.next() | 1)
            case 1:
                bytes.removeLast(Int(generator.next() % UInt64(bytes.count - DataFileHeader.size)))
            default:
                bytes += (0..<(1 + generator.next() % 64)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            }
            let whole = Self.wholeFileContents(bytes)
            for windowSize in [1, 4096] {
                Self.expectSame(try Self.windowedContents(bytes, windowSize: windowSize), whole, "round \(round), window of \(windowSize)")
            }
            if bytes != seed && round % 3 == 0 { #expect(whole == nil, "round \(round): a flipped bit must be refused") }
        }
    }

    /// The real path: a large suite compacted into one snapshot, opened afresh (so read
    /// through the window from its file), then with a byte of a value flipped.
    @Test func aLargeSuiteOpensWholeAndItsDamageIsFound() throws {
        let directory = TemporaryDirectory()
        let big = Data((0..<150_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        do {
            let suite = try Suite(named: "large", directory: directory.url)
            try suite.update { transaction in
                for index in 0..<5_000 { try transaction.set("value \(index)", forKey: "key.\(index)") }
                try transaction.set(big, forKey: "big")
            }
            try suite.compact()
        }
        do {
            let reopened = try Suite(named: "large", directory: directory.url)
            #expect(reopened.data(forKey: "big") == big)
            for index in stride(from: 0, to: 5_000, by: 7) { #expect(reopened.string(forKey: "key.\(index)") == "value \(index)") }
            #expect(reopened.storedValues().count == 5_001)
        }

        // A bit flipped in the middle of the large value, as it sits in the file.
        var bytes = try #require(directory.bytes(of: "large.suite"))
        let start = try #require(bytes.firstRange(of: Array(big.prefix(64)))?.lowerBound)
        bytes[start + 75_000] ^= 0x10
        try directory.write(bytes, to: "large.suite")
        let damaged = try Suite(named: "large", directory: directory.url)
        let served = damaged.data(forKey: "big")
        let servedDamage = served != nil && served != big
        #expect(!servedDamage, "a damaged value is never served")
        #expect(directory.names().contains { $0.hasPrefix("large.suite.damaged-") }, "the damaged file is kept aside")
    }
}
