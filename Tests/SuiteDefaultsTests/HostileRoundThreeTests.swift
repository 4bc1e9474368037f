import Foundation
import Glibc
import Testing
import TestSupport
import ToolSupport
@testable import SuiteDefaults

/// The third hostile round: the windowed reading of a suite file, the single-set
/// commit at a slot, the reused transaction and the default directory built from strings.
@Suite("Hostile round three")
struct HostileRoundThreeTests {
    // MARK: Reused transactions

    /// A block may keep its transaction weakly (a delegate, a cache): once the block
    /// returned, the handle must be dead, as before the store reused transactions. A
    /// reused object made the stale handle the next update's transaction, so a write
    /// through it went silently into a later, unrelated commit.
    @Test func aWeakHandleFromAnEndedUpdateWritesNothingIntoTheNext() throws {
        let directory = TemporaryDirectory()
        let suite = try Suite(named: "weak", directory: directory.url)
        weak var stale: SuiteTransaction?
        try suite.update { transaction in
            stale = transaction
            try transaction.set(1, forKey: "first")
        }
        try suite.update { transaction in
            // Code that believes it holds a dead handle (or the previous block's).
            if let stale, stale !== transaction { return }
            try stale?.set("leaked", forKey: "from.the.first.update")
            try transaction.set(2, forKey: "second")
        }
        #expect(suite.storedValue(forKey: "from.the.first.update") == nil,
                "a handle kept from an ended update wrote into a later update's commit")
        #expect(stale == nil, "the ended transaction stays alive for a weak handle to reach")
    }

    /// The same from another thread: a handle kept weakly by a block is used from a
    /// second thread while the first runs its next update. With a reused transaction
    /// both threads write the same object, unsynchronized.
    @Test func aWeakHandleUsedFromAnotherThreadReachesNoOpenTransaction() throws {
        let directory = TemporaryDirectory()
        let suite = try Suite(named: "weak-thread", directory: directory.url)
        final class Box: @unchecked Sendable { weak var transaction: SuiteTransaction? }
        let box = Box()
        try suite.update { transaction in
            box.transaction = transaction
            try transaction.set(0, forKey: "seed")
        }
        let inside = DispatchSemaphore(value: 0), written = DispatchSemaphore(value: 0)
        let other = Thread {
            _ = inside.wait(timeout: .now() + 10)
            // Not this thread's transaction, and its block ended long ago.
            if let handle = box.transaction { try? handle.set("from another thread", forKey: "intruder") }
            written.signal()
        }
        other.start()
        try suite.update { transaction in
            inside.signal()
            #expect(written.wait(timeout: .now() + 10) == .success)
            try transaction.set(1, forKey: "mine")
        }
        #expect(suite.storedValue(forKey: "intruder") == nil,
                "another thread wrote into this thread's open transaction through a stale handle")
    }
}

// MARK: Reading through a window

extension HostileRoundThreeTests {
    static func measured(_ key: String, _ value: SuiteValue, asDefault: Bool = false) -> SuiteDefaults.Operation {
        .set(key: key, value: value, size: try! ValueEncoding.measure(value), asDefault: asDefault)
    }

    /// A value nested `depth` arrays deep.
    static func nested(_ depth: Int) -> SuiteValue {
        var value: SuiteValue = .integer(1)
        for _ in 0..<depth { value = .array([value]) }
        return value
    }

    /// Re-frames `record` (at `offset` in `bytes`) after its payload was edited: the
    /// length field and the checksum made right again, as an attacker would.
    static func reframe(_ bytes: inout [UInt8], recordAt offset: Int, payload: [UInt8]) {
        let oldLength = Int(UInt32(littleEndian: bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self) }))
        let header = Array(bytes[(offset + 8)..<(offset + RecordFormat.headerSize)])
        var framed: [UInt8] = RecordFormat.magicBytes
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { framed += $0 }
        framed += header + payload
        let crc = framed.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[4...])) }
        withUnsafeBytes(of: crc.littleEndian) { framed += $0 }
        bytes.replaceSubrange(offset..<(offset + RecordFormat.overhead + oldLength), with: framed)
    }

    static func file(_ records: [Record]) -> [UInt8] {
        var bytes = DataFileHeader.encode(fileID: 0x99, version: 2)
        for record in records { bytes += RecordFormat.encode(record) }
        return bytes
    }

    static let windows = [1, 2, 3, 5, 8, 36, 37, 40, 64, 100, 257, 4096]

    /// Payloads edited and re-checksummed, so that only the operations' own checks
    /// stand between garbage and the table: the windowed reader, at every window size,
    /// must accept and refuse exactly what the whole-file reader does, and read the same.
    @Test func reChecksummedGarbageIsJudgedAsTheWholeFileJudgesIt() throws {
        let snapshot = Record(kind: .snapshot, sequence: 3, timestamp: 0, pid: 1, operations: [
            Self.measured("a", .string(String(repeating: "x", count: 300))),
            Self.measured("deep", Self.nested(64)),
            Self.measured("dict", ["k": [1, 2.5, "s"], "l": .data(Data(repeating: 7, count: 90))]),
            Self.measured("é", .double(-0.0), asDefault: true),
            Self.measured("json", .json(Data("{\"a\":[1,2]}".utf8))),
        ])
        let transaction = Record(kind: .transaction, sequence: 4, timestamp: 0, pid: 1, operations: [
            .remove(key: "a"), .removeAll, Self.measured("b", .bool(true)), Self.measured("c", .date(Date(timeIntervalSince1970: 5))),
        ])
        let seed = Self.file([snapshot, transaction])
        let second = DataFileHeader.size + RecordFormat.encode(snapshot).count
        var generator = SplitMix64(seed: 0xB0B)
        var refused = 0, accepted = 0
        for round in 0..<1500 {
            var bytes = seed
            let (offset, record) = round % 2 == 0 ? (DataFileHeader.size, snapshot) : (second, transaction)
            var payload = Array(RecordFormat.encode(record).dropFirst(RecordFormat.headerSize).dropLast(4))
            for _ in 0..<(1 + Int(generator.next() % 3)) {
                let position = Int(generator.next() % UInt64(payload.count + 1))
                switch generator.next() % 5 {
                case 0 where position < payload.count: payload[position] ^= UInt8(truncatingIfNeeded: generator.next() | 1)
                case 1 where position < payload.count: payload[position] = [0, 1, 2, 3, 4, 8, 9, 0x7F, 0x80, 0xFF][Int(generator.next() % 10)]
                case 2 where position < payload.count: payload.remove(at: position)
                case 3: payload.insert(UInt8(truncatingIfNeeded: generator.next()), at: position)
                default: payload.removeLast(min(payload.count, Int(generator.next() % 4)))
                }
            }
            Self.reframe(&bytes, recordAt: offset, payload: payload)
            let whole = WindowedReadingTests.wholeFileContents(bytes)
            if whole == nil { refused += 1 } else { accepted += 1 }
            for window in Self.windows {
                WindowedReadingTests.expectSame(try WindowedReadingTests.windowedContents(bytes, windowSize: window), whole,
                                                "round \(round), window of \(window)")
            }
        }
        #expect(refused > 100 && accepted > 20, "the rounds test both sides (\(refused) refused, \(accepted) accepted)")
    }

    /// The length field just over and under the truth, and far past the end, with the
    /// checksum made right for what the field now claims.
    @Test func lengthFieldsAroundTheWindowAndTheEnd() throws {
        let big = Record(kind: .snapshot, sequence: 1, timestamp: 0, pid: 1, operations: [
            Self.measured("v", .data(Data(repeating: 0xAB, count: 70_000))), Self.measured("w", 1),
        ])
        let seed = Self.file([big, Self.record(2, [Self.measured("t", "u")])])
        let payload = Array(RecordFormat.encode(big).dropFirst(RecordFormat.headerSize).dropLast(4))
        for delta in [-10, -1, 1, 2, 9, 40, 100] {
            var bytes = seed
            let edited = delta < 0 ? Array(payload.dropLast(-delta)) : payload + Array(repeating: 0, count: delta)
            Self.reframe(&bytes, recordAt: DataFileHeader.size, payload: edited)
            let whole = WindowedReadingTests.wholeFileContents(bytes)
            #expect(whole == nil, "delta \(delta)")
            for window in [1, 64, 65_536, 70_000, 1 << 20] {
                WindowedReadingTests.expectSame(try WindowedReadingTests.windowedContents(bytes, windowSize: window), whole,
                                                "delta \(delta), window of \(window)")
            }
        }
        // A length field claiming nearly 4 GiB, in a file of 70 KB.
        var bytes = seed
        bytes.withUnsafeMutableBytes { $0.storeBytes(of: UInt32.max.littleEndian, toByteOffset: DataFileHeader.size + 4, as: UInt32.self) }
        #expect(WindowedReadingTests.wholeFileContents(bytes) == nil)
        #expect(try WindowedReadingTests.windowedContents(bytes, windowSize: 65_536) == nil)
    }

    static func record(_ sequence: UInt64, _ operations: [SuiteDefaults.Operation], kind: Record.Kind = .transaction) -> Record {
        Record(kind: kind, sequence: sequence, timestamp: 0, pid: 1, operations: operations)
    }
}

// MARK: A file changed under its reader

extension HostileRoundThreeTests {
    /// A suite compacted into one snapshot larger than the window, with a value larger
    /// than it; answers the expected values.
    static func makeLargeSuite(in directory: TemporaryDirectory, named name: String) throws -> [String: SuiteValue] {
        let suite = try Suite(named: name, directory: directory.url)
        var expected: [String: SuiteValue] = [:]
        try suite.update { transaction in
            for index in 0..<1500 {
                let value = SuiteValue.string("value \(index) " + String(repeating: "ü", count: index % 50))
                try transaction.setValue(value, forKey: "key.\(index)")
                expected["key.\(index)"] = value
            }
            let big = SuiteValue.data(Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }))
            try transaction.setValue(big, forKey: "big")
            expected["big"] = big
        }
        try suite.compact()
        return expected
    }

    /// Another process cuts the file short, writes it back and appends to it in a loop,
    /// taking no lock, while this one reads it through the window: every reading is
    /// either the whole intact state or a refusal, never part of it, and none hangs.
    @Test func aFileCutAndRestoredByAnotherProcessWhileReadThroughTheWindow() throws {
        let directory = TemporaryDirectory()
        let expected = try Self.makeLargeSuite(in: directory, named: "race")
        let original = try #require(directory.bytes(of: "race.suite"))
        try directory.write(original, to: "original.bin")
        let wholeContents = try #require(WindowedReadingTests.wholeFileContents(original))
        #expect(wholeContents.count == expected.count)

        let mangler = try startWorker("mangle-loop", in: directory, suite: "race",
                                      ["key": directory.file("race.suite").path, "value": directory.file("original.bin").path])
        defer { mangler.kill() }
        mangler.expectLine(startingWith: "mangling")

        var refused = 0, read = 0
        let deadline = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < deadline && read + refused < 3000 {
            let descriptor = open(directory.file("race.suite").path, O_RDONLY)
            guard descriptor >= 0 else { continue }
            defer { close(descriptor) }
            var window = RecordWindow(end: original.count) { buffer, offset in
                var done = 0
                while done < buffer.count {
                    let got = pread(descriptor, buffer.baseAddress! + done, buffer.count - done, off_t(offset + done))
                    if got <= 0 { break }
                    done += got
                }
                return done
            }
            let header = try window.hold(from: 0, count: DataFileHeader.size) ? window.withBytes { buffer, _ in DataFileHeader.decode(buffer) } : .damaged
            guard case .valid = header, let contents = try StoreState.contents(reading: &window, from: DataFileHeader.size) else {
                refused += 1
                continue
            }
            read += 1
            WindowedReadingTests.expectSame(contents, wholeContents, "a reading during the race")
        }
        #expect(read + refused > 20, "the race ran (\(read) read, \(refused) refused)")

        // The real opening path, in fresh processes, while the file keeps changing:
        // each answers the value written or nothing, and none crashes.
        for round in 0..<6 {
            let key = round % 2 == 0 ? "key.\(round * 97)" : "big"
            let reader = try startWorker("get", in: directory, suite: "race", ["key": key])
            let line = reader.waitForLine(timeout: .seconds(30)) { $0.hasPrefix("value ") || $0 == "absent" || $0.hasPrefix("error") }
            #expect(line == "absent" || line == "value \(expected[key]!)", "round \(round): \(line.map { String($0.prefix(80)) } ?? "no answer")")
            reader.expectSuccess(within: .seconds(30))
        }
    }
}

// MARK: The default directory, built from strings

extension HostileRoundThreeTests {
    /// What the default directory was before it was built from strings: `URL`'s
    /// parsing of each variable (which expands a leading "~", as a shell would).
    static func urlBasedDefaultDirectory(_ environment: [String: String]) -> String {
        if let explicit = environment["SUITE_DEFAULTS_DIR"], !explicit.isEmpty {
            return URL(fileURLWithPath: explicit, isDirectory: true).filePath
        }
        if let config = environment["XDG_CONFIG_HOME"], config.utf8.first == UInt8(ascii: "/") {
            return URL(fileURLWithPath: config, isDirectory: true).appendingPathComponent("suite-defaults", isDirectory: true).filePath
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? "/"
        return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".config", isDirectory: true)
            .appendingPathComponent("suite-defaults", isDirectory: true).filePath
    }

    static let hostileEnvironments: [[String: String]] = {
        let long = "/" + String(repeating: "d/", count: 3000)
        var environments: [[String: String]] = []
        for value in ["~", "~/prefs", "~/", "~/../x", "rel", "rel/", "./x", "../x", "/a//b/", "//", "/", "/a/../b", "/a/./b/.",
                      "/a%20b", "/a?b#c", "/a;b", "/é", "/e\u{301}", long, " /lead", "/trail "] {
            environments.append(["SUITE_DEFAULTS_DIR": value, "HOME": "/home/h"])
            environments.append(["SUITE_DEFAULTS_DIR": "", "XDG_CONFIG_HOME": value, "HOME": "/home/h"])
            environments.append(["XDG_CONFIG_HOME": "", "HOME": value])
        }
        return environments
    }()

    /// Every hostile value names the same directory as `URL` made of it, and the
    /// public `defaultDirectory(environment:)` names the directory suites open in.
    @Test(arguments: hostileEnvironments)
    func theDefaultDirectoryIsWhereURLPutIt(environment: [String: String]) {
        let built = PathNormalization.standardized(Suite.defaultDirectoryPath { environment[$0] })
        let before = PathNormalization.standardized(Self.urlBasedDefaultDirectory(environment))
        let published = PathNormalization.standardized(Suite.defaultDirectory(environment: environment).filePath)
        let shown = environment.map { "\($0.key)=\(String($0.value.prefix(40)))" }.sorted()
        #expect(built == before, "\(shown): suites now open in \(built.prefix(80)), before in \(before.prefix(80))")
        #expect(built == published, "\(shown): defaultDirectory(environment:) says \(published.prefix(80)), suites open in \(built.prefix(80))")
    }
}
