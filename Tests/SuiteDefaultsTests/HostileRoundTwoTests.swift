import ChildProcess
import Foundation
import Glibc
import Testing
import TestSupport
@testable import SuiteDefaults

/// Attacks on round two's faster engine (Docs/Reliability.md, "Attacks tried", the rows
/// marked as found in round two). What might crash runs in a worker process.
@Suite("Hostile input against round two's engine")
struct HostileRoundTwoTests {
    let directory = TemporaryDirectory()

    /// Runs a worker to its end and returns its report lines.
    func outcome(_ command: String, suite: String, _ options: [String: String] = [:]) throws -> [String] {
        let worker = try startWorker(command, in: directory, suite: suite, options)
        worker.expectSuccess(within: .seconds(60))
        return worker.lines
    }

    /// A transaction record with `payload` as its operations, checksummed.
    static func record(sequence: UInt64, payload: [UInt8]) -> [UInt8] {
        var bytes = RecordFormat.magicBytes
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: sequence.littleEndian) { bytes += $0 }
        withUnsafeBytes(of: Int64(0).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: Int32(1).littleEndian) { bytes += $0 }
        bytes += [1, 0, 0, 0] + payload
        withUnsafeBytes(of: bytes[4...].withUnsafeBytes { CRC32C.checksum($0) }.littleEndian) { bytes += $0 }
        return bytes
    }

    /// A set operation of `key`, spelled with exactly its bytes, to a string.
    static func set(_ key: String, to value: String) -> [UInt8] {
        [1, UInt8(key.utf8.count)] + Array(key.utf8) + [1, UInt8(value.utf8.count)] + Array(value.utf8)
    }

    /// Puts `records` in place as the suite's data file, with no lock file (so the
    /// shared header is set up from the file).
    func plant(_ records: [UInt8], as suite: String) throws {
        try directory.write(DataFileHeader.encode(fileID: 0x5EED) + records, to: suite + ".suite")
        _ = unlink(directory.file(suite + ".suite.lock").path)
    }

    // MARK: Keys in another normal form

    @Test func aKeyStoredInAnotherNormalFormIsOneKeyAndCompacts() throws {
        // "café" decomposed, as another program may write it, and "ಕೋ" as the library
        // wrote it while it normalized with Foundation (which leaves U+0CCA U+0CD5
        // apart; the standard library composes them to U+0CCB).
        let decomposed = "cafe\u{301}", composed = "caf\u{E9}"
        let oldKannada = "\u{C95}\u{CCA}\u{CD5}", kannada = "\u{C95}\u{CCB}"
        try plant(Self.record(sequence: 1, payload: Self.set(decomposed, to: "x") + Self.set(oldKannada, to: "old")),
                  as: "twins")
        // Another process writes both keys as the library spells them now, then compacts:
        // the compaction must encode every key with the size it has.
        let wrote = try outcome("hostile-check", suite: "twins", ["key": composed, "key2": composed, "value": "y"])
        #expect(wrote.contains("read \"x\" wrote y"), "\(wrote)")
        #expect(try outcome("try-set", suite: "twins", ["key": kannada, "value": "new"]).contains("ok"))
        let compacted = try outcome("compact", suite: "twins")
        #expect(compacted.contains("compacted"), "\(compacted)")
        let suite = try Suite(named: "twins", directory: directory.url)
        #expect(suite.string(forKey: decomposed) == "y")
        #expect(suite.string(forKey: oldKannada) == "new")
        #expect(Set(suite.storedValues().keys.map { Array($0.utf8) }) == [Array(composed.utf8), Array(kannada.utf8)],
                "one spelling of each key, the one writes use")
    }

    @Test func aDictionaryHoldingAKeyTwiceIsDamageNotACrash() throws {
        // {"a": "1", "a": "2"}, and a canonical twin pair, as values: Swift keeps one
        // entry of each, which encodes shorter than the bytes read.
        let twice: [UInt8] = [9, 2, 1, 0x61, 1, 1, 0x31, 1, 0x61, 1, 1, 0x32]
        let twins: [UInt8] = [9, 2] + [5] + Array("caf\u{E9}".utf8) + [4] + [6] + Array("cafe\u{301}".utf8) + [5]
        for (name, value) in [("twice", twice), ("twins", twins)] {
            let key = [UInt8]("d".utf8)
            try plant(Self.record(sequence: 1, payload: Self.set("kept", to: "yes"))
                      + Self.record(sequence: 2, payload: [1, 1] + key + value), as: name)
            let lines = try outcome("hostile-check", suite: name, ["key": "kept", "key2": "w", "value": "1"])
            #expect(lines.contains("read \"yes\" wrote 1"), "\(name): \(lines)")
            #expect(lines.contains("diagnostic repairedDamage"), "\(name): \(lines)")
            let compacted = try outcome("compact", suite: name)
            #expect(compacted.contains("compacted"), "\(name): \(compacted)")
        }
    }

    // MARK: Records whose operations are many and cheap

    @Test func aRecordThatSetsAndRemovesAllOverAndOverIsNotQuadratic() throws {
        // One record: three million sets of one key, which make the table large (they are
        // counted, and the table reserved, before the record is applied), then a million
        // pairs of a set and a remove-all. Clearing the table cost its capacity each time.
        var payload: [UInt8] = []
        payload.reserveCapacity(10 << 20)
        for _ in 0..<3_000_000 { payload += [1, 0, 4] }
        for _ in 0..<1_000_000 { payload += [1, 0, 4, 3] }
        try plant(Self.record(sequence: 1, payload: payload), as: "cheap")
        // The first process sets the shared header up from a scan of the file; the
        // second reads the file as a process does whose header is valid, applying each
        // operation as it is decoded.
        for _ in 0..<2 {
            let worker = try startWorker("get", in: directory, suite: "cheap", ["key": "k"])
            worker.expectLine(startingWith: "absent", within: .seconds(15))
            worker.expectSuccess(within: .seconds(15))
        }
    }
}
