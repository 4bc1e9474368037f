import ChildProcess
import Foundation
import Glibc
import Synchronization
import Testing
import TestSupport
@_spi(Tools) @_spi(Testing) @testable import SuiteDefaults

/// The fourteenth hostile round: commits 5dd2d26 and f92ad8e attacked.
/// - 5dd2d26: a shared header that names no data file while a file has the data file's
///   name is damage (`catchUp`), repaired under the exclusive lock;
/// - f92ad8e: `SuiteContents` keeps its entries in `KeyTable` (open addressing, linear
///   probing, backward-shift deletion, a byte hash), whose keys are assumed NFC; a lookup
///   that misses retries with the key's NFC twin.
@Suite("Hostile round fourteen", .serialized)
struct HostileRoundFourteenTests: EngineStateTesting {
    let directory = TemporaryDirectory()

    func open(_ name: String, options: Suite.Options = Suite.Options()) throws -> Suite {
        try Suite(named: name, directory: directory.url, options: options)
    }

    // MARK: 1. Canonically equivalent spellings, in every API

    /// Pairs of spellings that Swift's `==` calls equal but whose bytes differ: the
    /// first is NFC. Singletons (Kelvin, Ohm, Angstrom signs, the Greek question mark,
    /// a CJK compatibility ideograph, one from the supplement), decomposed Latin,
    /// Hangul jamo against the syllable, combining marks in the other order, and
    /// decompositions that NFC keeps (U+0344, U+0F73), which make NFC longer.
    static let twins: [(nfc: String, other: String)] = [
        ("caf\u{E9}", "cafe\u{301}"),
        ("K", "\u{212A}"),
        ("\u{3A9}", "\u{2126}"),
        ("\u{C5}ngstr\u{F6}m", "\u{212B}ngstro\u{308}m"),
        ("\u{C5}", "A\u{30A}"),
        ("\u{8C48}", "\u{F900}"),
        ("\u{4E3D}", "\u{2F800}"),
        ("\u{D55C}\u{AE00}", "\u{1112}\u{1161}\u{11AB}\u{1100}\u{1173}\u{11AF}"),
        ("\u{1EA1}\u{307}", "a\u{307}\u{323}"),
        ("q\u{308}\u{301}", "q\u{344}"),
        ("\u{F71}\u{F72}", "\u{F73}"),
        ("a;b", "a\u{37E}b"),
    ]

    /// Each pair also padded so that its bytes fall around the hash's words.
    static let paddedTwins: [(nfc: String, other: String)] = twins.flatMap { pair in
        [0, 3, 4, 7, 8, 9, 15, 16, 17].map { pad in
            let prefix = String(repeating: "p", count: pad)
            return (prefix + pair.nfc, prefix + pair.other)
        }
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func theTwinsAreWhatTheTestSaysTheyAre() {
        for (nfc, other) in Self.paddedTwins {
            #expect(nfc == other, "\(nfc.unicodeScalars.map { $0.value }) and \(other.unicodeScalars.map { $0.value })")
            #expect(Self.bytes(nfc) != Self.bytes(other))
            #expect(Self.bytes(UTF8Text.normalForm(other).text) == Self.bytes(nfc), "\(nfc.unicodeScalars.map { $0.value })")
            #expect(Self.bytes(UTF8Text.normalForm(nfc).text) == Self.bytes(nfc))
        }
    }

    /// One suite, every pair: set through one spelling, read, update, remove and
    /// observe through the other; always one key, stored under its NFC bytes.
    @Test(arguments: [false, true])
    func twoSpellingsAreOneKeyInEveryAPI(writeWithOther: Bool) throws {
        let suite = try open("twins")
        for (index, pair) in Self.paddedTwins.enumerated() {
            let (write, read) = writeWithOther ? (pair.other, pair.nfc) : (pair.nfc, pair.other)
            try suite.set("v\(index)", forKey: write)
            #expect(suite.string(forKey: read) == "v\(index)")
            #expect(suite.storedValue(forKey: write) == .string("v\(index)"))
            // A transaction that reads one spelling and writes the other (the slot path).
            try suite.update { transaction in
                let value = transaction.string(forKey: read)
                #expect(value == "v\(index)")
                try transaction.set((value ?? "") + "+", forKey: write)
            }
            try suite.update { transaction in
                let value = transaction.string(forKey: write)
                try transaction.set((value ?? "") + "+", forKey: read)
            }
            // A transaction writing both spellings: one write, the last.
            try suite.update { transaction in
                try transaction.set("first", forKey: read)
                try transaction.set("w\(index)", forKey: write)
                #expect(transaction.string(forKey: read) == "w\(index)")
            }
            #expect(suite.string(forKey: read) == "w\(index)")
        }
        let stored = try exactEntries(of: suite)
        #expect(stored.count == Self.paddedTwins.count, "\(stored.keys.map { Self.bytes($0) })")
        for key in suite.storedValues().keys {
            #expect(Self.bytes(key) == Self.bytes(UTF8Text.normalForm(key).text), "a key not in NFC: \(Self.bytes(key))")
        }
        #expect(suite.dictionaryRepresentation().count == Self.paddedTwins.count)
        // Read again from the file by a fresh state (the keys decoded from the journal),
        // then after a compaction.
        for compacted in [false, true] {
            if compacted { try suite.compact() }
            let state = try openState("twins")
            try catchUpReadOnly(state)
            #expect(state.contents.count == Self.paddedTwins.count)
            for (index, pair) in Self.paddedTwins.enumerated() {
                #expect(state.contents[pair.other] == .string("w\(index)"))
                #expect(state.contents[pair.nfc] == .string("w\(index)"))
            }
        }
        // Removed through the spelling not written.
        for pair in Self.paddedTwins {
            try suite.removeValue(forKey: writeWithOther ? pair.nfc : pair.other)
            #expect(suite.storedValue(forKey: pair.nfc) == nil && suite.storedValue(forKey: pair.other) == nil)
        }
        #expect(suite.storedValues().isEmpty)
    }

    /// Registered defaults under one spelling answer reads of the other, a stored value
    /// under either overrides them, and `dictionaryRepresentation` has one key.
    @Test func registeredDefaultsAndStoredValuesMeetAcrossSpellings() throws {
        let suite = try open("defaults")
        suite.register(defaults: Dictionary(uniqueKeysWithValues: Self.twins.map { ($0.other, SuiteValue.string("default")) }))
        for pair in Self.twins {
            #expect(suite.string(forKey: pair.nfc) == "default")
            try suite.set("stored", forKey: pair.nfc)
            #expect(suite.string(forKey: pair.other) == "stored")
        }
        let all = suite.dictionaryRepresentation()
        #expect(all.count == Self.twins.count)
        #expect(all.values.allSatisfy { $0 == .string("stored") })
        // setIfAbsent through the other spelling finds the stored value.
        for pair in Self.twins {
            #expect(try suite.setIfAbsent("again", forKey: pair.other) == "stored")
        }
        #expect(suite.storedValues().count == Self.twins.count)
    }

    /// Observers of one spelling hear writes through the other, with NFC keys; export
    /// holds one key per pair, and importing a document with both spellings of a key
    /// stores one key.
    @Test func observersAndExportSeeOneKey() throws {
        let suite = try open("observed")
        let heard = Mutex<[String]>([])
        let arrived = DispatchSemaphore(value: 0)
        let token = try suite.observe(keys: Self.twins.map(\.other)) { change in
            heard.withLock { $0.append(change.key) }
            arrived.signal()
        }
        defer { token.cancel() }
        for pair in Self.twins { try suite.set(1, forKey: pair.nfc) }
        for _ in Self.twins { #expect(arrived.wait(timeout: .now() + 60) == .success) }
        let keys = heard.withLock { $0 }
        #expect(keys.count == Self.twins.count)
        #expect(Set(keys.map(Self.bytes)) == Set(Self.twins.map { Self.bytes($0.nfc) }))
        let exported = suite.exportJSON()
        let other = try open("imported")
        try other.importJSON(exported)
        #expect(other.storedValues().count == Self.twins.count)
        for pair in Self.twins { #expect(other.integer(forKey: pair.other) == 1) }
    }

    /// A fresh process reads a key through a spelling that is not the stored one.
    @Test func aWorkerReadsTheTwinSpelling() throws {
        let suite = try open("worker")
        for pair in Self.twins { try suite.set("kept", forKey: pair.nfc) }
        for pair in Self.twins.prefix(4) {
            let worker = try startWorker("get", in: directory, suite: "worker", ["key": pair.other])
            let line = worker.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("value") || $0.hasPrefix("absent") } ?? "no answer"
            worker.expectSuccess()
            #expect(line == "value \"kept\"", "\(pair.other.unicodeScalars.map { $0.value })")
        }
    }

    // MARK: 2. Journals crafted outside the library

    static func setOperation(_ key: String, _ value: SuiteValue) throws -> SuiteDefaults.Operation {
        .set(key: key, value: value, size: try ValueEncoding.measure(value))
    }

    /// Writes a data file of `records` (numbered from 1) under the suite's name, with
    /// no lock file: the first process to open the suite reads it whole.
    func craft(_ suite: String, _ records: [(kind: Record.Kind, operations: [SuiteDefaults.Operation])]) throws {
        try directory.write(Self.dataFile(of: records), to: "\(suite).suite")
    }

    /// The bytes of a data file of `records`, numbered from 1.
    static func dataFile(of records: [(kind: Record.Kind, operations: [SuiteDefaults.Operation])]) -> [UInt8] {
        var bytes = DataFileHeader.encode(fileID: 0x5EED)
        for (index, record) in records.enumerated() {
            bytes += RecordFormat.encode(Record(kind: record.kind, sequence: UInt64(index + 1), timestamp: 0, pid: 1,
                                                operations: record.operations))
        }
        return bytes
    }

    /// A journal written by another program with keys in other forms than NFC, each key
    /// set under both spellings and removed or overwritten under the other: one key per
    /// pair, holding the last write, in the process that reads it and after compaction.
    @Test func aCraftedJournalWithTwinSpellingsHoldsOneKeyEach() throws {
        var records: [(kind: Record.Kind, operations: [SuiteDefaults.Operation])] = []
        records.append((.snapshot, try Self.paddedTwins.map { try Self.setOperation($0.other, .string("snapshot")) }))
        for (index, pair) in Self.paddedTwins.enumerated() {
            records.append((.transaction, [try Self.setOperation(pair.nfc, .string("nfc")),
                                           try Self.setOperation(pair.other, .integer(index))]))
            if index % 3 == 0 { records.append((.transaction, [.remove(key: pair.nfc)])) }
            if index % 3 == 1 { records.append((.transaction, [.remove(key: pair.other), try Self.setOperation(pair.nfc, .integer(index))])) }
        }
        try craft("crafted", records)
        let suite = try open("crafted")
        func check(_ suite: Suite) throws {
            let stored = try exactEntries(of: suite)
            #expect(stored.count == Self.paddedTwins.count - Self.paddedTwins.indices.filter { $0 % 3 == 0 }.count)
            for (index, pair) in Self.paddedTwins.enumerated() {
                let expected: Int? = index % 3 == 0 ? nil : index
                #expect(suite.integer(forKey: pair.nfc) == expected && suite.integer(forKey: pair.other) == expected)
            }
        }
        try check(suite)
        // Written to through both spellings, then compacted: still one key each.
        for pair in Self.paddedTwins { try suite.set(7, forKey: pair.other) }
        #expect(suite.storedValues().count == Self.paddedTwins.count)
        try suite.compact()
        let state = try openState("crafted")
        try catchUpReadOnly(state)
        #expect(state.contents.count == Self.paddedTwins.count)
        var total = 0
        state.contents.snapshot(timestamp: 0, pid: 0).operations.forEach { _ in total += 1 }
        #expect(total == Self.paddedTwins.count)
    }

    static let keysNoWriteMakes = [
        "longer in NFC": String(repeating: "\u{1D160}", count: 256), "too long": String(repeating: "k", count: 1025),
        "empty": "", "ASCII with NUL": "a\u{0}b", "non-ASCII with NUL": "\u{E9}\u{0}",
    ]

    /// Keys that no write makes, in records another program wrote: 1,024 bytes not in
    /// NFC whose normal form (the spelling the table holds, `ByteReader.readKey`) is
    /// 3,072 bytes (U+1D160 decomposes to three code points, and NFC does not compose
    /// them again), 1,025 ASCII bytes, an empty key, and NUL in an ASCII and a non-ASCII
    /// key. Each makes its record damage (once such a key was read, and then could not be
    /// removed by any spelling, nor its suite's export imported): the suite is repaired,
    /// the record's other keys go with it (a record is applied whole or not at all),
    /// every other record is kept, and the suite's export imports again.
    @Test(arguments: ["longer in NFC", "too long", "empty", "ASCII with NUL", "non-ASCII with NUL"])
    func aCraftedKeyThatNoWriteMakesIsDamage(_ kind: String) throws {
        let key = Self.keysNoWriteMakes[kind]!
        if kind == "longer in NFC" {
            #expect(key.utf8.count == 1024 && UTF8Text.normalForm(key).text.utf8.count == 3072)
        }
        let name = "crafted-" + kind.replacingOccurrences(of: " ", with: "-")
        try craft(name, [
            (.transaction, [try Self.setOperation("before", .integer(1))]),
            (.transaction, [.set(key: key, value: .integer(2), size: try ValueEncoding.measure(.integer(2))),
                            try Self.setOperation("same-record", .integer(3))]),
            (.transaction, [try Self.setOperation("after", .integer(4))]),
        ])
        let recorder = DiagnosticsRecorder(directory)
        let suite = try open(name)
        #expect(suite.storedValues() == ["before": .integer(1), "after": .integer(4)])
        #expect(recorder.kinds == [.repairedDamage])
        let inspection = SuiteFileInspection(bytes: [UInt8](try Data(contentsOf: directory.url.appendingPathComponent("\(name).suite"))))
        #expect(inspection.verdict == .intact, "the repair leaves no damage: \(inspection.verdict)")
        let copy = try open("\(name)-copy")
        try copy.importJSON(suite.exportJSON())
        #expect(copy.storedValues() == suite.storedValues())
        try suite.removeValue(forKey: "before")
        #expect(suite.storedValues() == ["after": .integer(4)])
    }

    /// A crafted record with a NUL key in a suite this process may only read: it reads
    /// the records before and after it, three times, within a deadline, and leaves the
    /// file as it was (the record is damage, which a reader cannot repair: see
    /// `aCraftedKeyThatNoWriteMakesIsDamage`).
    @Test(.enabled(if: getuid() == 0, "needs root, to hand the suite's files to nobody"))
    func aReadOnlyProcessReadsAroundACraftedKey() throws {
        let path = "/tmp/hostile-fourteen-\(getpid())-crafted-key"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let bytes = Self.dataFile(of: [
            (.transaction, [try Self.setOperation("before", .integer(1))]),
            (.transaction, [.set(key: "a\u{0}b", value: .integer(2), size: try ValueEncoding.measure(.integer(2)))]),
            (.transaction, [try Self.setOperation("after", .integer(4))]),
        ])
        let file = path + "/crafted.suite"
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        #expect(chown(file, 65534, 65534) == 0 && chmod(file, 0o444) == 0)
        #expect(chown(path, 65534, 65534) == 0 && chmod(path, 0o555) == 0)
        for key in ["before", "after", "before"] {
            let worker = try startWorker("get", at: URL(fileURLWithPath: path), suite: "crafted", ["key": key, "as-uid": "65534"])
            let line = worker.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("value") || $0.hasPrefix("absent") } ?? "no answer"
            worker.expectSuccess()
            #expect(line == "value \(key == "before" ? 1 : 4)", "\(key): \(worker.standardError)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: file)) == Data(bytes), "a read-only process changed nothing")
    }

    /// A key of 1,200 bytes decomposed, 800 in NFC: `set` normalizes before it checks
    /// the length and takes it; `setIfAbsent` and `renameKey` check the spelling as
    /// given (`Validation.checkKey`, not `normalizedKey`) and refuse the same key.
    @Test func setIfAbsentAndRenameCheckTheKeyBeforeNormalizing() throws {
        let decomposed = String(repeating: "e\u{301}", count: 400)
        #expect(decomposed.utf8.count == 1200 && UTF8Text.normalForm(decomposed).text.utf8.count == 800)
        let suite = try open("long-nfd")
        try suite.set(1, forKey: decomposed)
        #expect(suite.integer(forKey: decomposed) == 1)
        let ifAbsent = Result(catching: { try suite.setIfAbsent(2, forKey: decomposed) })
        #expect((try? ifAbsent.get()) == 1, "\(ifAbsent)")
        try suite.set(3, forKey: "short")
        let rename = Result(catching: { try suite.renameKey("short", to: decomposed) })
        #expect((try? rename.get()) == true, "\(rename)")
    }

    // MARK: 3. Keys of every length

    /// Keys of every length from 1 to 1024 bytes, ASCII and not, written in one
    /// transaction, read back by this process and by a fresh state; a key that differs
    /// in any one byte (first, middle, last) is absent; removing every other key leaves
    /// the rest readable (backward-shift deletion across the long runs).
    @Test func keysOfEveryLengthUpTo1024Bytes() throws {
        var generator = SystemRandomNumberGenerator()
        func key(length: Int, seed: Int) -> String {
            // Mostly ASCII; every third key ends in a two-byte letter when it fits.
            var bytes = (0..<length).map { _ in UInt8.random(in: 0x21...0x7E, using: &generator) }
            if seed % 3 == 0, length >= 2 { bytes[length - 2] = 0xC3; bytes[length - 1] = 0xA9 }
            return String(decoding: bytes, as: UTF8.self)
        }
        let keys = (1...1024).map { key(length: $0, seed: $0) }
        let suite = try open("lengths")
        try suite.update { transaction in
            for (index, key) in keys.enumerated() { try transaction.set(index, forKey: key) }
        }
        func variant(_ key: String, at position: Int) -> String {
            var bytes = Array(key.utf8)
            guard bytes[position] < 0x80 else { return key + "!" }
            bytes[position] = bytes[position] == 0x41 ? 0x42 : 0x41
            return String(decoding: bytes, as: UTF8.self)
        }
        let state = try openState("lengths")
        try catchUpReadOnly(state)
        for (index, key) in keys.enumerated() {
            #expect(suite.integer(forKey: key) == index)
            #expect(state.contents[key] == .integer(index))
            for position in Set([0, key.utf8.count / 2, key.utf8.count - 1]) {
                let other = variant(key, at: position)
                if other != key && !keys.contains(other) {
                    #expect(suite.storedValue(forKey: other) == nil && state.contents[other] == nil, "length \(key.utf8.count)")
                }
            }
        }
        try suite.update { transaction in
            for (index, key) in keys.enumerated() where index % 2 == 0 { try transaction.removeValue(forKey: key) }
        }
        try catchUpReadOnly(state)
        for (index, key) in keys.enumerated() {
            let expected: Int? = index % 2 == 0 ? nil : index
            #expect(suite.integer(forKey: key) == expected)
            #expect(state.contents[key] == expected.map { .integer($0) })
        }
        #expect(suite.storedValues().count == 512 && state.contents.count == 512)
    }

    // MARK: 4. The table itself

    /// Tiny tables (8 and 16 buckets, where runs wrap around the end), filled to the
    /// load limit and emptied again in random orders, against a dictionary, with copies
    /// taken along the way that must not change when the original does.
    @Test func smallTablesWrapAroundAndDeleteAgainstAModel() {
        var generator = SystemRandomNumberGenerator()
        let space = (0..<24).map { "k\($0)" } + ["caf\u{E9}", "\u{C5}", "\u{D55C}"]
        for round in 0..<400 {
            var table = KeyTable()
            var model: [String: Int] = [:]
            var copies: [(KeyTable, [String: Int])] = []
            for step in 0..<300 {
                let key = space.randomElement(using: &generator)!
                let entry = SuiteContents.Entry(value: .integer(step), size: step)
                if Bool.random(using: &generator) || model.count > 10 {
                    #expect(table.removeValue(forKey: key)?.size == model.removeValue(forKey: key))
                } else {
                    #expect(table.updateValue(entry, forKey: key)?.size == model.updateValue(step, forKey: key))
                }
                if step % 37 == round % 37 { copies.append((table, model)) }
                #expect(table.count == model.count)
            }
            for key in space { #expect(table[key]?.size == model[key], "round \(round) \(key)") }
            for (copy, copyModel) in copies {
                for key in space { #expect(copy[key]?.size == copyModel[key]) }
                var seen = 0
                copy.forEach { key, entry in
                    seen += 1
                    #expect(copyModel[key] == entry.size)
                }
                #expect(seen == copyModel.count)
            }
        }
    }

    /// The size of a bucket, and the table a 10,000-key suite holds.
    @Test func theTableOfTenThousandKeys() throws {
        let table = KeyTable(minimumCapacity: 10_000)
        #expect(table.capacity >= 10_000 && table.capacity < 20_000)
        // An entry takes 24 bytes, and a bucket (a key and its entry, optional) 40.
        #expect(MemoryLayout<SuiteContents.Entry>.stride == 24)
        #expect(MemoryLayout<(String, SuiteContents.Entry)?>.stride == 40)
        let suite = try open("ten-thousand")
        try suite.update { transaction in
            for index in 0..<10_000 { try transaction.set(index, forKey: "key.\(index)") }
        }
        let state = try openState("ten-thousand")
        try catchUpReadOnly(state)
        #expect(state.contents.count == 10_000)
        #expect(state.contents.entries.capacity <= 2 * 10_000, "a table read from a file is not left oversized")
    }

    // MARK: 5. Crafted journals that try to make reading slow

    /// Journals of 200,000 keys, 200,000 sets of one key (in one record, and in 200,000
    /// records), 100,000 set-and-remove pairs and set-then-clear records: each opens
    /// and holds what it says (in about a second each, in a debug build: the table
    /// stays linear).
    @Test func largeCraftedJournalsOpen() throws {
        let count = 200_000
        let value = SuiteValue.integer(1)
        let size = try ValueEncoding.measure(value)
        func opened(_ label: String, _ name: String, check: (Suite) throws -> Void) throws {
            try check(try open(name))
        }
        try craft("many-keys", [(.snapshot, (0..<count).map { .set(key: "key-\($0)", value: value, size: size) })])
        try opened("200k keys", "many-keys") { #expect($0.storedValues().count == count) }

        try craft("one-key-one-record", [(.transaction, (0..<count).map { _ in .set(key: "same", value: value, size: size) })])
        try opened("200k sets of one key, one record", "one-key-one-record") { #expect($0.storedValues().count == 1) }

        try craft("one-key-many-records", (0..<count).map { _ in (.transaction, [.set(key: "same", value: value, size: size)]) })
        try opened("200k records setting one key", "one-key-many-records") { #expect($0.storedValues().count == 1) }

        try craft("set-remove", (0..<count / 2).map { index in
            (.transaction, [.set(key: "key-\(index)", value: value, size: size), .remove(key: "key-\(index)")])
        })
        try opened("100k set-and-remove", "set-remove") { #expect($0.storedValues().isEmpty) }

        try craft("grow-remove", [(.transaction, (0..<count).map { .set(key: "key-\($0)", value: value, size: size) }
            + (0..<count - 1).map { .remove(key: "key-\($0)") })])
        try opened("200k keys set then all but one removed, one record", "grow-remove") { suite in
            #expect(suite.storedValues().count == 1)
            let state = try openState("grow-remove")
            try catchUpReadOnly(state)
            #expect(state.contents.entries.capacity <= 256, "capacity \(state.contents.entries.capacity) kept for one key")
        }
    }

    // MARK: 6. A header that names no data file (5dd2d26)

    func generation(_ suite: String) throws -> UInt64 { try readHeaderWord(suite, at: 16) }

    /// What stands under the data file's name while the header says there is none.
    enum Intruder: String, CaseIterable { case fifo, directory, danglingLink, linkToSuiteFile, foreignFile, emptyFile }

    func plant(_ intruder: Intruder, as name: String) throws {
        let path = directory.file(name).path
        switch intruder {
        case .fifo: #expect(mkfifo(path, 0o600) == 0)
        case .directory: #expect(mkdir(path, 0o700) == 0)
        case .danglingLink: #expect(symlink(directory.file("nowhere").path, path) == 0)
        case .linkToSuiteFile:
            let other = try open("elsewhere")
            try other.set("elsewhere", forKey: "k")
            #expect(symlink(directory.file("elsewhere.suite").path, path) == 0)
        case .foreignFile: try directory.write(Array("not a suite\n".utf8), to: name)
        case .emptyFile: try directory.write([], to: name)
        }
    }

    /// A suite opened and never written (the header says no data file, rightly), then
    /// something planted under the data file's name: reads in a fresh process answer
    /// (nothing hangs on a FIFO), and the process that had the suite open reads and
    /// writes, or fails with an error that names the intruder. Nothing planted is
    /// changed but the empty file, which a repair removes.
    @Test(arguments: Intruder.allCases)
    func somethingPlantedUnderTheDataFileName(_ intruder: Intruder) throws {
        let name = "planted"
        let suite = try open(name)
        #expect(suite.storedValue(forKey: "k") == nil)
        #expect(try readHeaderWord(name, at: 32) == 0)
        try plant(intruder, as: "\(name).suite")
        // The generation moved on (as any other process's change moves it), so that this
        // process catches up.
        try writeHeaderWord(name, at: 16, try generation(name) &+ 2)
        let worker = try startWorker("get", in: directory, suite: name, ["key": "k"])
        let line = worker.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("value") || $0.hasPrefix("absent") } ?? "no answer"
        worker.expectSuccess()
        // A fresh process refuses the suite as it refuses it at any first open (a
        // FIFO is opened without waiting, and refused); an empty file is no suite file.
        switch intruder {
        case .emptyFile: #expect(line == "absent")
        case .danglingLink, .linkToSuiteFile: #expect(worker.lines.contains { $0.hasPrefix("error symbolicLink") }, "\(worker.lines)")
        default: #expect(worker.lines.contains { $0.hasPrefix("error foreignFile") }, "\(worker.lines)")
        }
        let reload = Result(catching: { try suite.reload() })
        let write = Result(catching: { try suite.set("mine", forKey: "k") })
        // The process that had the suite open refuses it the same way once it catches up.
        switch intruder {
        case .emptyFile:
            #expect((try? reload.get()) != nil && (try? write.get()) != nil)
            #expect(suite.string(forKey: "k") == "mine")
        default:
            guard case .failure(let error as SuiteError) = write else {
                Issue.record("\(intruder): the write went through: \(write)")
                return
            }
            #expect([.foreignFile, .symbolicLink].contains(error.code), "\(error)")
            guard case .failure = reload else { Issue.record("\(intruder): reload went through"); return }
            #expect(suite.storedValue(forKey: "k") == nil)
        }
        if intruder == .linkToSuiteFile {
            let other = try open("elsewhere")
            #expect(other.string(forKey: "k") == "elsewhere", "the file the link points to is left alone")
        }
    }

    /// A data file that the repair cannot remove (empty, in a directory whose entries
    /// cannot change: immutable here; a directory the process may not write does the
    /// same): the repair writes a header that names no data file again, so every other
    /// process's next catch-up finds the file again and repairs again, publishing a new
    /// random generation each time, which wakes every observer of the suite, whose
    /// catch-up repairs again.
    @Test(.enabled(if: getuid() == 0, "needs root, to make the directory immutable"))
    func anEmptyDataFileThatCannotBeRemovedIsRepairedOnce() throws {
        let name = "stuck"
        let first = try openState(name)
        let second = try openState(name)
        for state in [first, second] {
            #expect(try state.tryLockFile(.exclusive))
            try state.catchUp(exclusive: true)
            state.unlockFile()
        }
        try directory.write([], to: "\(name).suite")
        try forgeNoDataFile(name)
        guard setImmutable(directory.path, true) else {
            print("the directory cannot be made immutable here; skipped")
            return
        }
        defer { _ = setImmutable(directory.path, false) }
        var generations: [UInt64] = []
        for round in 0..<6 {
            let state = round % 2 == 0 ? first : second
            #expect(try state.tryLockFile(.shared))
            do {
                try state.catchUp(exclusive: false)
                state.unlockFile()
            } catch is NeedsExclusiveLock {
                state.unlockFile()
                #expect(try state.tryLockFile(.exclusive))
                defer { state.unlockFile() }
                try state.catchUp(exclusive: true)
            }
            #expect(state.contents.count == 0)
            generations.append(try generation(name))
        }
        #expect(directory.names().contains("\(name).suite"), "the empty file is still there")
        // One repair, then every catch-up finds the header as the repair left it.
        #expect(Set(generations.dropFirst()).count == 1,
                "the header was set up again at \(Set(generations).count) of 6 catch-ups, alternating between two processes")
    }

    /// A suite this process may only read, in the forged state: its reads answer with
    /// the data file's values (read whole, without the lock's repair) and do not read it
    /// again while nothing changes.
    @Test(.enabled(if: getuid() == 0, "needs root, to hand the suite's files to nobody"))
    func aReadOnlyProcessReadsTheForgedSuite() throws {
        let path = "/tmp/hostile-fourteen-\(getpid())-readonly"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let name = "frozen"
        do {
            let suite = try Suite(named: name, directory: URL(fileURLWithPath: path))
            try suite.set("kept", forKey: "k")
        }
        let lock = Glibc.open(path + "/\(name).suite.lock", O_RDWR | O_CLOEXEC)
        var zero: UInt64 = 0, generation: UInt64 = 0
        #expect(pread(lock, &generation, 8, 16) == 8)
        #expect(pwrite(lock, &zero, 8, 24) == 8 && pwrite(lock, &zero, 8, 32) == 8)
        generation &+= 2
        #expect(pwrite(lock, &generation, 8, 16) == 8)
        close(lock)
        for file in ["\(name).suite", "\(name).suite.lock"] {
            #expect(chown(path + "/" + file, 65534, 65534) == 0 && chmod(path + "/" + file, 0o444) == 0)
        }
        #expect(chown(path, 65534, 65534) == 0 && chmod(path, 0o555) == 0)
        for _ in 0..<2 {
            let worker = try startWorker("get", at: URL(fileURLWithPath: path), suite: name, ["key": "k", "as-uid": "65534"])
            let line = worker.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("value") || $0.hasPrefix("absent") } ?? "no answer"
            worker.expectSuccess()
            #expect(line == "value \"kept\"", "\(worker.standardError)")
        }
        let after = Glibc.open(path + "/\(name).suite.lock", O_RDONLY | O_CLOEXEC)
        var now: UInt64 = 0
        #expect(pread(after, &now, 8, 16) == 8)
        close(after)
        #expect(now == generation, "a read-only process changed nothing")
    }

    /// The forged header, odd (a commit in progress), while the data file holds a
    /// compaction's new file: the exclusive catch-up rebuilds from the file.
    @Test func aForgedHeaderInTheMiddleOfACompaction() throws {
        let name = "compacting"
        let suite = try open(name)
        for index in 0..<50 { try suite.set(index, forKey: "k\(index % 5)") }
        let worker = try startWorker("pause", in: directory, suite: name,
                                     ["key": "k0", "value": "paused", "point": "compactionRenamed", "compact": "1"])
        defer { _ = worker.kill() }
        _ = worker.expectLine(startingWith: "paused")
        _ = worker.kill()
        // Killed between the rename and the header: now say there is no data file.
        try writeHeaderWord(name, at: 24, 0)
        try writeHeaderWord(name, at: 32, 0)
        #expect(suite.string(forKey: "k0") == "paused")
        #expect(suite.integer(forKey: "k4") == 49)
        try suite.set("after", forKey: "k1")
        let fresh = try startWorker("get", in: directory, suite: name, ["key": "k1"])
        let line = fresh.waitForLine(timeout: .seconds(60)) { $0.hasPrefix("value") || $0.hasPrefix("absent") } ?? "no answer"
        fresh.expectSuccess()
        #expect(line == "value \"after\"")
    }
}

/// Sets or clears FS_IMMUTABLE_FL on a directory; false where the file system or the
/// process cannot.
func setImmutable(_ path: String, _ on: Bool) -> Bool {
    let descriptor = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var flags: CLong = 0
    guard ioctl(descriptor, 0x8008_6601, &flags) == 0 else { return false }  // FS_IOC_GETFLAGS
    flags = on ? flags | 0x10 : flags & ~0x10  // FS_IMMUTABLE_FL
    return ioctl(descriptor, 0x4008_6602, &flags) == 0  // FS_IOC_SETFLAGS
}
