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

// MARK: The single set at its slot

extension HostileRoundThreeTests {
    /// What the suite file holds, read whole from scratch.
    static func fileContents(_ directory: TemporaryDirectory, _ name: String) throws -> SuiteContents {
        guard let bytes = directory.bytes(of: "\(name).suite") else { return SuiteContents() }
        return try bytes.withUnsafeBytes { try DataFileScan.scan($0, committedLength: nil) }.contents
    }

    static func expectSameValues(_ served: [String: SuiteValue], _ file: SuiteContents, _ what: String) {
        #expect(served.count == file.count, "\(what): \(served.count) keys served, \(file.count) in the file")
        for (key, value) in served where !file[key].isStored(identicallyTo: value) {
            Issue.record("\(what): \(key.prefix(20)) is served as \(String(describing: value).prefix(40)), the file holds \(String(describing: file[key]).prefix(40))")
        }
    }

    /// Threads of one process set, update, set-if-absent, remove and clear the same
    /// keys (canonically equivalent spellings, a 1024-byte key, -0.0 and 0.0, values
    /// at the size limit) with compaction after nearly every commit, with and without
    /// an observer, while the data file is deleted now and then as another process
    /// would: what the process serves is always what its file holds.
    @Test(arguments: [false, true])
    func theSingleSetUnderEverythingAtOnce(observed: Bool) throws {
        let directory = TemporaryDirectory()
        var options = Suite.Options()
        options.compactionSlack = 1
        options.maximumValueSize = 1500
        let suite = try Suite(named: "slots", directory: directory.url, options: options)
        let recorder = ChangeRecorder()
        let observation = observed ? try suite.observe(onChange: recorder.handler) : nil
        defer { observation?.cancel() }
        let longKey = String(repeating: "k", count: 1024)
        let keys = ["é", "e\u{301}", "a", longKey, "Å", "A\u{30A}", "b"]
        let values: [SuiteValue] = [.double(0.0), .double(-0.0), .string(String(repeating: "v", count: 1500 - 3)), 1, "x", true]
        let threads = 4, rounds = 150
        let done = DispatchSemaphore(value: 0)
        let failures = Locked<[String]>([])
        for thread in 0..<threads {
            Thread {
                var generator = SplitMix64(seed: UInt64(thread) &+ 77)
                for _ in 0..<rounds {
                    let key = keys[Int(generator.next() % UInt64(keys.count))]
                    let value = values[Int(generator.next() % UInt64(values.count))]
                    do {
                        switch generator.next() % 10 {
                        case 0...3: try suite.setValue(value, forKey: key)
                        case 4, 5: try suite.update { try $0.setValue(value, forKey: key) }
                        case 6: _ = try suite.setIfAbsent(value, forKey: key)
                        case 7: try suite.update { try $0.setValue(suite.registeredDefault(forKey: "none") ?? value, forKey: key); try $0.setValue(value, forKey: key) }
                        case 8: try suite.removeValue(forKey: key)
                        default:
                            if generator.next() % 4 == 0 { try suite.removeAll() } else { _ = unlink(directory.file("slots.suite").path) }
                        }
                    } catch let error as SuiteError where error.code == .ioFailure && error.message.contains("disappeared as it was created") {
                        // Another thread deleted the file the write had just created: the
                        // write is refused, typed, having written nothing (what the test
                        // checks next is that the process serves what its file holds).
                    } catch {
                        failures.withLock { $0.append("\(error)") }
                    }
                }
                done.signal()
            }.start()
        }
        for _ in 0..<threads { #expect(done.wait(timeout: .now() + 60) == .success, "a writer thread hung") }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(3) })")
        Self.expectSameValues(suite.storedValues(), try Self.fileContents(directory, "slots"), "after the threads")
        let fresh = try startWorker("get", in: directory, suite: "slots", ["key": "a"])
        let line = fresh.waitForLine(timeout: .seconds(30)) { $0.hasPrefix("value ") || $0 == "absent" }
        #expect(line == (suite.storedValue(forKey: "a").map { "value \($0)" } ?? "absent"))
        fresh.expectSuccess(within: .seconds(30))
    }
}

extension HostileRoundThreeTests {
    /// A full disk (a 200 KiB tmpfs, where this process may mount one): single sets,
    /// updates and a set-if-absent that needs the file rewritten as version 2 fail
    /// with an error and store nothing; what is served stays what the file holds.
    @Test func aFullDiskUnderTheSingleSet() throws {
        let directory = TemporaryDirectory()
        let mountPoint = directory.file("small").path
        #expect(mkdir(mountPoint, 0o700) == 0)
        guard mount("tmpfs", mountPoint, "tmpfs", 0, "size=200k") == 0 else { return }  // not root: nothing to test here
        defer { _ = umount2(mountPoint, Int32(MNT_DETACH)) }
        var options = Suite.Options()
        options.compactionSlack = 1 << 30  // no compaction: the journal grows until the disk is full
        let suite = try Suite(named: "full", directory: URL(fileURLWithPath: mountPoint), options: options)
        // Space to give back at the end.
        let filler = mountPoint + "/filler"
        #expect(FileManager.default.createFile(atPath: filler, contents: Data(repeating: 1, count: 48 << 10)))
        var failedAt: Int?
        for index in 0..<10_000 {
            do {
                if index % 2 == 0 { try suite.set(String(repeating: "z", count: 900) + "\(index)", forKey: "k\(index % 7)") } else {
                    try suite.update { try $0.set(index, forKey: "n\(index % 5)") }
                }
            } catch let error as SuiteError {
                failedAt = index
                #expect(error.code == .noSpace, "\(error)")
                break
            }
        }
        #expect(failedAt != nil, "the disk filled up")
        Self.expectSameValues(suite.storedValues(), try Self.fileContents(directory, "small/full"), "after the disk filled")
        let before = suite.storedValues()
        #expect(throws: SuiteError.self) { _ = try suite.setIfAbsent("default", forKey: "new.key") }
        #expect(throws: SuiteError.self) { try suite.set(String(repeating: "y", count: 4000), forKey: "k1") }
        #expect(suite.storedValue(forKey: "new.key") == nil)
        #expect(suite.storedValues().count == before.count)
        Self.expectSameValues(suite.storedValues(), try Self.fileContents(directory, "small/full"), "after the failed writes")
        // Room again: everything works, and the file is whole.
        #expect(unlink(filler) == 0)
        try suite.removeAll()
        try suite.compact()
        _ = try suite.setIfAbsent("default", forKey: "new.key")
        #expect(suite.string(forKey: "new.key") == "default")
        Self.expectSameValues(suite.storedValues(), try Self.fileContents(directory, "small/full"), "after room was made")
    }
}

extension HostileRoundThreeTests {
    /// A record that sets the same key over and over (only a crafted file holds one):
    /// opening counts its sets and reserves the table for all of them, a table of
    /// 393,216 places (about 16 MB) for the one key of a 900 KB file, kept for as long
    /// as the process runs. The table read must be about the size of what it holds.
    @Test(arguments: [65_536, 1 << 20])
    func aRecordRepeatingOneKeyLeavesNoHugeTable(windowSize: Int) throws {
        for (sets, kind) in [(300_000, Record.Kind.snapshot), (300_000, .transaction), (20_000, .transaction)] {
            var bytes = DataFileHeader.encode(fileID: 5)
            bytes += RecordFormat.encode(Record(kind: kind, sequence: 1, timestamp: 0, pid: 1, operations: []))
            // Each a set of "k" to true (an empty key would make the record damage).
            Self.reframe(&bytes, recordAt: DataFileHeader.size, payload: Array([[UInt8]](repeating: [1, 1, 0x6B, 5], count: sets).joined()))
            let contents = try #require(try WindowedReadingTests.windowedContents(bytes, windowSize: windowSize))
            #expect(contents.count == 1 && contents["k"] == .bool(true))
            #expect(contents.entries.capacity <= 1024,
                    "\(sets) sets of one key (\(bytes.count) bytes, \(kind)) left a table of \(contents.entries.capacity) places")
        }
    }
}

extension HostileRoundThreeTests {
    /// A second snapshot later in the file (all checksums right, sequence rising): the
    /// opening reader, windowed or whole, refuses the file as damaged and sends it to
    /// the repair, whose scan calls it intact and keeps it as it is. So every process
    /// that opens the suite rebuilds it from scratch under the exclusive lock, and the
    /// file is never repaired. (Before the two commits under test; not fixed here.)
    @Test func aFileTheOpeningRefusesIsNotIntactToTheRepair() throws {
        let set = { (key: String) in Self.measured(key, .bool(true)) }
        let bytes = Self.file([
            Self.record(1, [set("a")], kind: .snapshot), Self.record(2, [set("b")]), Self.record(3, [set("c")], kind: .snapshot),
        ])
        #expect(WindowedReadingTests.wholeFileContents(bytes) == nil)
        #expect(try WindowedReadingTests.windowedContents(bytes, windowSize: 65_536) == nil)
        let scan = try bytes.withUnsafeBytes { try DataFileScan.scan($0, committedLength: bytes.count) }
        #expect(scan.verdict == .damaged, "the repair keeps no file that opening refuses")
        #expect(scan.contents.values == ["a": true, "b": true], "the later snapshot is skipped, not applied over the keys before it")

        // Opened, the file is repaired once, and then opens as it is.
        let directory = TemporaryDirectory()
        try directory.write(bytes, to: "later.suite")
        do {
            let suite = try Suite(named: "later", directory: directory.url)
            #expect(suite.storedValues() == ["a": true, "b": true])
        }
        let kept = directory.names().filter { $0.hasPrefix("later.suite.damaged-") }
        #expect(kept.count == 1, "the refused file is kept aside")
        let reopened = try Suite(named: "later", directory: directory.url)
        #expect(reopened.storedValues() == ["a": true, "b": true])
        #expect(directory.names().filter { $0.hasPrefix("later.suite.damaged-") } == kept, "and repaired once, not at every opening")
    }
}
