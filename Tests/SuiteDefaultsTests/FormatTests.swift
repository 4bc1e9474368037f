import Foundation
import Testing
import ToolSupport
import TestSupport
@testable import SuiteDefaults

@Suite("The file format")
struct FormatTests {
    /// Eight bytes at a time, then one by one: every length up to 40, a difference at
    /// every position (in a word and in the tail), and lengths that differ.
    @Test func sameBytesFindsEveryDifference() {
        for length in 0...40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            bytes.withUnsafeBufferPointer { first in
                Array(bytes).withUnsafeBufferPointer { #expect(first.hasSameBytes(as: $0), "length \(length)") }
                (bytes + [0]).withUnsafeBufferPointer { #expect(!first.hasSameBytes(as: $0), "length \(length) against one more") }
                for position in 0..<length {
                    var other = bytes
                    other[position] ^= 0x80
                    other.withUnsafeBufferPointer { #expect(!first.hasSameBytes(as: $0), "length \(length), position \(position)") }
                }
            }
        }
    }

    /// Strings by their bytes: canonically equivalent spellings, which `==` calls
    /// equal (or, after some marks, not), are told apart; the same bytes are not.
    @Test func stringsWithTheSameBytes() {
        #expect("caf\u{E9}".hasSameBytes(as: "caf\u{E9}"))
        #expect("caf\u{E9}" == "cafe\u{301}" && !"caf\u{E9}".hasSameBytes(as: "cafe\u{301}"))
        #expect(!"a\u{F71}\u{F72}\u{F71}\u{F72}".hasSameBytes(as: "a\u{F71}\u{F71}\u{F72}\u{F72}"))
        #expect("".hasSameBytes(as: "") && !"".hasSameBytes(as: "a") && !"ab".hasSameBytes(as: "ac"))
        let long = String(repeating: "x", count: 41)
        #expect(long.hasSameBytes(as: String(repeating: "x", count: 41)) && !long.hasSameBytes(as: String(repeating: "x", count: 40) + "y"))
    }

    @Test func crc32cMatchesTheStandardCheckValues() {
        func crc(_ text: String) -> UInt32 { Array(text.utf8).withUnsafeBytes { CRC32C.checksum($0) } }
        #expect(crc("123456789") == 0xE306_9283)
        #expect(crc("") == 0)
        #expect(Array(repeating: UInt8(0), count: 32).withUnsafeBytes { CRC32C.checksum($0) } == 0x8A91_36AA)
        #expect(Array(repeating: UInt8(0xFF), count: 32).withUnsafeBytes { CRC32C.checksum($0) } == 0x62A8_AB43)
        // In pieces, as in one go.
        let whole = Array("The quick brown fox jumps over the lazy dog".utf8)
        let split = whole.withUnsafeBytes { buffer in
            CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[13...]),
                            continuing: CRC32C.checksum(UnsafeRawBufferPointer(rebasing: buffer[..<13])))
        }
        #expect(split == whole.withUnsafeBytes { CRC32C.checksum($0) })
    }

    @Test(arguments: [0, 1, 127, 128, 300, 16383, 16384, 1 << 32, UInt64.max])
    func varintsRoundTrip(_ value: UInt64) throws {
        let bytes = ByteWriter.bytes(count: ByteWriter.varintSize(value)) { $0.appendVarint(value) }
        let (decoded, atEnd) = try bytes.withUnsafeBytes { buffer in
            var reader = ByteReader(buffer)
            return (try reader.readVarint(), reader.isAtEnd)
        }
        #expect(decoded == value)
        #expect(atEnd)
    }

    @Test func overlongVarintsAreRejected() {
        let bytes = [UInt8](repeating: 0xFF, count: 11)
        bytes.withUnsafeBytes { buffer in
            var reader = ByteReader(buffer)
            #expect(throws: FormatError.self) { try reader.readVarint() }
        }
    }

    static let samples: [SuiteValue] = [
        "", "héllo wörld ✓", .integer(0), .integer(Int.min), .integer(Int.max), .double(-0.0), .double(1e-300),
        .double(.greatestFiniteMagnitude), true, false, .data(Data()), .data(Data((0...255).map { UInt8($0) })),
        .date(Date(timeIntervalSinceReferenceDate: -1e9 + 0.123)), [], [1, "two", [3.0]], [:],
        ["a": ["b": ["c": .data(Data([1]))]]], .json(Data("{\"value\":68901.23}".utf8)),
    ]

    @Test(arguments: samples)
    func valuesRoundTripThroughTheEncoding(_ value: SuiteValue) throws {
        // Encoding traps unless it writes exactly the measured size.
        let bytes = ByteWriter.bytes(count: try ValueEncoding.measure(value)) { ValueEncoding.encode(value, into: &$0) }
        let (decoded, atEnd) = try bytes.withUnsafeBytes { buffer in
            var reader = ByteReader(buffer)
            return (try ValueEncoding.decode(from: &reader), reader.isAtEnd)
        }
        #expect(decoded == value)
        #expect(atEnd)
    }

    /// Strings are read on two paths: ASCII as it stands, anything else validated.
    @Test(arguments: [
        ([UInt8]("plain ascii".utf8), "plain ascii" as String?), ([], ""), ([0x61, 0x00, 0x7F], "a\u{0}\u{7F}"),
        ([UInt8]("ascii then ✓".utf8), "ascii then ✓"), ([0x61, 0xC3, 0xA9], "aé"),
        ([0x80], nil), ([0x61, 0xFF], nil), ([0x61, 0xC3], nil), ([0xED, 0xA0, 0x80], nil), ([0xC0, 0xAF], nil),
    ])
    func stringsAreReadAsUTF8AndInvalidBytesAreRejected(_ bytes: [UInt8], _ expected: String?) throws {
        let length = UInt64(bytes.count)
        let encoded = ByteWriter.bytes(count: ByteWriter.varintSize(length) + bytes.count) { writer in
            writer.appendVarint(length)
            writer.append(contentsOf: bytes)
        }
        let read: String? = encoded.withUnsafeBytes { buffer in
            var reader = ByteReader(buffer)
            return try? reader.readString()
        }
        #expect(read == expected)
    }

    @Test func recordsRoundTripAndEveryCutIsIncomplete() throws {
        let record = Record(kind: .transaction, sequence: 9, timestamp: 1_700_000_000_000_000_000, pid: 4242, operations: [
            .set(key: "units.system", value: "imperial", size: try ValueEncoding.measure("imperial")),
            .remove(key: "old"), .removeAll,
        ])
        let bytes = RecordFormat.encode(record)
        bytes.withUnsafeBytes { buffer in
            guard case .record(let decoded, let end) = RecordFormat.parse(buffer, at: 0, limit: buffer.count) else {
                Issue.record("the record did not parse")
                return
            }
            #expect(end == bytes.count)
            #expect(decoded.operations == record.operations)
            #expect(decoded.sequence == 9 && decoded.pid == 4242 && decoded.timestamp == record.timestamp)
            for cut in 1..<bytes.count {
                guard case .incomplete = RecordFormat.parse(buffer, at: 0, limit: cut) else {
                    Issue.record("a record cut at \(cut) bytes must read as incomplete")
                    return
                }
            }
        }
    }

    @Test func snapshotsMayNotRemove() {
        let bytes = RecordFormat.encode(Record(kind: .snapshot, sequence: 1, timestamp: 0, pid: 1, operations: [.remove(key: "k")]))
        bytes.withUnsafeBytes { buffer in
            guard case .invalid = RecordFormat.parse(buffer, at: 0, limit: buffer.count) else {
                Issue.record("a snapshot with a removal must be invalid")
                return
            }
        }
    }

    /// A valid file with a few records, as a seed for mutation.
    static func seedFile() throws -> [UInt8] {
        var bytes = DataFileHeader.encode(fileID: 0x1234)
        for sequence in 1...6 {
            let value: SuiteValue = sequence % 2 == 0 ? ["list": [1, 2, .data(Data([9]))]] : .string("value \(sequence)")
            bytes += RecordFormat.encode(Record(kind: .transaction, sequence: UInt64(sequence), timestamp: 0, pid: 1, operations: [
                .set(key: "k\(sequence % 3)", value: value, size: try ValueEncoding.measure(value)),
            ]))
        }
        return bytes
    }

    @Test func scanningMutatedFilesNeverTrapsAndNeverInventsRecords() throws {
        let seed = try Self.seedFile()
        let intact = try seed.withUnsafeBytes { try DataFileScan.scan($0, committedLength: seed.count) }
        #expect(intact.verdict == .intact)
        #expect(intact.recordCount == 6)
        var generator = SplitMix64(seed: 0x5EED)
        for round in 0..<3000 {
            var bytes = seed
            switch round % 4 {
            case 0:
                for _ in 0...(generator.next() % 4) { bytes[Int(generator.next() % UInt64(bytes.count))] ^= UInt8(truncatingIfNeeded: generator.next() | 1) }
            case 1:
                bytes.removeLast(Int(generator.next() % UInt64(bytes.count)))
            case 2:
                bytes += (0..<(generator.next() % 64)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
            default:
                let start = Int(generator.next() % UInt64(bytes.count))
                let length = min(bytes.count - start, Int(generator.next() % 64))
                bytes.replaceSubrange(start..<(start + length), with: (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
            }
            let scan = try? bytes.withUnsafeBytes { try DataFileScan.scan($0, committedLength: nil) }
            if let scan {
                #expect(scan.recordCount <= 6, "round \(round) found records that were never written")
                if bytes == seed { #expect(scan.verdict == .intact) }
            }
        }
    }
}

@Suite("The magic numbers spell what the format document says")
struct MagicTests {
    @Test func magicBytes() {
        #expect(withUnsafeBytes(of: SharedHeader.magic.littleEndian) { Array($0) } == Array("SUITELK1".utf8))
        #expect(withUnsafeBytes(of: RecordFormat.magic.littleEndian) { Array($0) } == Array("SDR1".utf8))
        #expect(RecordFormat.magicBytes == Array("SDR1".utf8))
        #expect(DataFileHeader.magic == [0x89] + Array("SDF\r\n".utf8) + [0x1A, 0x0A])
    }
}

@Suite("Paths are standardized as URL does it")
struct PathNormalizationTests {
    @Test(arguments: ["/", "/a", "/a/", "//a//b/", "/a/./b", "/a/../b", "/../a", "/a/b/../../c", "/a/b/..", "/tmp//suite-defaults-test.x/", "/a/.../b", "/a/..b/c."])
    func matchesStandardizedFileURL(_ path: String) {
        #expect(PathNormalization.standardized(path) == URL(fileURLWithPath: path).standardizedFileURL.path, "\(path)")
    }

    /// A relative path, as a URL that is not a file URL gives (`URL(string: "prefs")`),
    /// is the current directory's, never the root's.
    @Test(arguments: ["prefs", "a/b/", "./a", "../a", "a/../../b"])
    func aRelativePathIsTheCurrentDirectorys(_ path: String) {
        #expect(PathNormalization.standardized(path) == URL(fileURLWithPath: path).standardizedFileURL.path, "\(path)")
        #expect(PathNormalization.standardized(URL(string: path)!.path(percentEncoded: false))
                == URL(fileURLWithPath: path).standardizedFileURL.path)
    }
}
