import Testing
import ToolSupport
@testable import SuiteDefaults

/// A suite's table of keys (`KeyTable`): every byte of a key counts in its hash, equal
/// bytes hash alike however the string was made, keys spread over the buckets, the
/// table does what a dictionary does under any sequence of changes, and a key spelled
/// in another normalization form still finds its entry.
@Suite("A suite's table hashes its keys by their bytes, keeps what a dictionary keeps, and finds every spelling of a key")
struct KeyTableTests {
    static func hash(_ text: String, seed: UInt64 = 0) -> Int {
        KeyTable.hash(text, seed)
    }

    @Test func everyByteOfAKeyOfEveryLengthReachesItsHash() {
        for length in 0...40 {
            let base = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            let baseHash = Self.hash(String(decoding: base, as: UTF8.self))
            // One byte longer: the length is part of the hash.
            #expect(Self.hash(String(decoding: base + [UInt8(ascii: "a")], as: UTF8.self)) != baseHash, "length \(length)")
            for position in 0..<length {
                for replacement in [UInt8(ascii: "b"), 0x01, 0x7F] {
                    var changed = base
                    changed[position] = replacement
                    #expect(Self.hash(String(decoding: changed, as: UTF8.self)) != baseHash,
                            "byte \(position) of \(length) set to \(replacement) left the hash as it was")
                }
            }
        }
    }

    @Test func equalBytesHashAlikeHoweverTheStringWasMade() {
        for length in [1, 7, 8, 15, 16, 17, 100] {
            let literal = String(repeating: "é", count: length)
            let built = (0..<length).map { _ in "\u{E9}" }.joined()
            let decoded = String(decoding: Array(literal.utf8), as: UTF8.self)
            var bridgedThroughSubstring = Substring(literal + "x")
            bridgedThroughSubstring.removeLast()
            let fromSubstring = String(bridgedThroughSubstring)
            for other in [built, decoded, fromSubstring] {
                #expect(Self.hash(other, seed: 42) == Self.hash(literal, seed: 42))
            }
        }
    }

    @Test func theSeedChangesTheHash() {
        #expect(Self.hash("key.1", seed: 1) != Self.hash("key.1", seed: 2))
    }

    /// 100,000 keys of two usual shapes: with a good hash, a table's low 16 bits put
    /// about 1.5 keys in each of 65,536 buckets, and a bucket with 16 is a chance
    /// of about 10^-13 (Poisson).
    @Test(arguments: ["key.", "com.example.widget.settings.temperature."])
    func manyKeysSpreadOverTheBuckets(prefix: String) {
        var hashes = Set<Int>(), buckets = [Int](repeating: 0, count: 1 << 16)
        for index in 0..<100_000 {
            let hash = Self.hash(prefix + String(index), seed: 7)
            hashes.insert(hash)
            buckets[hash & 0xFFFF] += 1
        }
        #expect(hashes.count == 100_000, "\(100_000 - hashes.count) keys had another key's full hash")
        #expect(buckets.max()! < 16, "a bucket got \(buckets.max()!) keys")
        #expect(buckets.filter { $0 == 0 }.count < 20_000, "\(buckets.filter { $0 == 0 }.count) of 65,536 buckets stayed empty (about 14,200 expected)")
    }

    static func entry(_ number: Int) -> KeyTable.Entry {
        KeyTable.Entry(value: .integer(number), size: number & 0xFFFF)
    }

    static func expect(_ table: KeyTable, holds model: [String: Int], _ context: @autoclosure () -> String) {
        #expect(table.count == model.count, "\(context())")
        var seen: [String: Int] = [:]
        table.forEach { key, entry in
            if case .integer(let number) = entry.value { seen[key] = number }
        }
        #expect(seen == model, "\(context())")
        #expect(table.count <= table.capacity || table.count == 0, "\(context())")
    }

    /// Random sets, replacements, removals, lookups, reservations and swaps at an
    /// index, checked against a dictionary after each step: removal moves buckets back
    /// into the gap it leaves, and any mistake there shows as a key that can no longer
    /// be found, or a count that differs.
    @Test(arguments: [(40, 1), (2_000, 2), (30_000, 3)])
    func anySequenceOfChangesKeepsWhatADictionaryKeeps(keySpace: Int, seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var table = KeyTable(), model: [String: Int] = [:]
        for step in 0..<60_000 {
            let key = "k\(random.next() % UInt64(keySpace))"
            switch random.next() % 16 {
            case 0...6:
                let number = step
                let old = table.updateValue(Self.entry(number), forKey: key)
                #expect(old?.value == model[key].map { .integer($0) }, "step \(step)")
                model[key] = number
            case 7...11:
                let old = table.removeValue(forKey: key)
                #expect(old?.value == model.removeValue(forKey: key).map { .integer($0) }, "step \(step)")
            case 12, 13:
                #expect(table[key]?.value == model[key].map { .integer($0) }, "step \(step)")
                #expect((table.index(forKey: key) != nil) == (model[key] != nil), "step \(step)")
            case 14:
                guard let index = table.index(forKey: key) else { continue }
                var entry = Self.entry(-step)
                table.swapEntry(at: index, with: &entry)
                #expect(entry.value == .integer(model[key]!))
                model[key] = -step
            default:
                table.reserveCapacity(table.count + Int(random.next() % 100))
            }
            if step % 5_000 == 0 { Self.expect(table, holds: model, "step \(step)") }
        }
        Self.expect(table, holds: model, "the end")
        for key in model.keys { #expect(table[key] != nil, "\(key) went missing") }
        // Everything removed again, in another order: every removal finds its key.
        for key in model.keys.sorted() { #expect(table.removeValue(forKey: key) != nil, "\(key)") }
        #expect(table.isEmpty)
    }

    @Test func aCopyIsNotChangedByChangesToTheOriginal() {
        var table = KeyTable()
        for index in 0..<100 { table.updateValue(Self.entry(index), forKey: "k\(index)") }
        let copy = table
        for index in 0..<50 { table.removeValue(forKey: "k\(index)") }
        var entry = Self.entry(-1)
        table.swapEntry(at: table.index(forKey: "k60")!, with: &entry)
        table.updateValue(Self.entry(1_000), forKey: "new")
        Self.expect(copy, holds: Dictionary(uniqueKeysWithValues: (0..<100).map { ("k\($0)", $0) }), "the copy")
        #expect(table.count == 51 && table["k60"]?.value == .integer(-1) && copy["k60"]?.value == .integer(60))
    }

    @Test func capacityGrowsAtThreeQuartersAndReservationHoldsWithoutGrowing() {
        var table = KeyTable(minimumCapacity: 1_000)
        let reserved = table.capacity
        #expect(reserved >= 1_000)
        for index in 0..<reserved { table.updateValue(Self.entry(index), forKey: "k\(index)") }
        #expect(table.capacity == reserved, "a reserved table grew before it was full")
        table.updateValue(Self.entry(-1), forKey: "k0")
        #expect(table.capacity == reserved, "replacing a key in a full table made it grow")
        table.updateValue(Self.entry(0), forKey: "one more")
        #expect(table.capacity > reserved && table.count == reserved + 1)
        #expect(KeyTable().capacity == 0 && KeyTable(minimumCapacity: 1).capacity == 6)
    }

    static func contents(_ keys: [String]) throws -> SuiteContents {
        var contents = SuiteContents()
        let operations = try keys.map { try Operation.validated(.string("of \($0)"), forKey: $0, suite: nil, maximumValueSize: 1024) }
        contents.apply(Record(kind: .transaction, sequence: 1, timestamp: 0, pid: 1, operations: operations))
        return contents
    }

    /// Keys are stored in NFC; a lookup spelled otherwise (decomposed, or a singleton
    /// such as the Kelvin sign, whose NFC is an ASCII letter) misses by its bytes and
    /// finds the entry through its NFC twin, in every kind of lookup.
    @Test(arguments: [("caf\u{E9}", "cafe\u{301}"), ("\u{C5}ngstr\u{F6}m", "A\u{30A}ngstro\u{308}m"),
                      ("\u{C5}", "\u{212B}"), ("K", "\u{212A}"), ("\u{1E69}", "s\u{323}\u{307}")])
    func aKeySpelledInAnotherFormFindsItsEntry(stored: String, spelled: String) throws {
        #expect(Array(stored.utf8) != Array(spelled.utf8))
        let contents = try Self.contents([stored, "other"])
        #expect(contents.count == 2)
        #expect(contents[spelled] == .string("of \(stored)"))
        #expect(contents.entry(forKey: spelled)?.value == .string("of \(stored)"))
        let (value, slot) = contents.valueAndSlot(forKey: spelled)
        #expect(value == .string("of \(stored)"))
        // The slot found through the twin is the entry's own: a set at it replaces the
        // entry rather than adding a second spelling.
        var changed = contents
        let newValue = SuiteValue.string("new")
        let effect = changed.effect(ofSetting: stored, to: newValue, size: try ValueEncoding.measure(newValue), asDefault: false, knownSlot: slot)
        changed.set(newValue, forKey: stored, size: try ValueEncoding.measure(newValue), asDefault: false, at: effect.slot, sequence: 2)
        #expect(changed.count == 2 && changed[stored] == newValue && changed[spelled] == newValue)
        // A spelling written through validation lands on the same entry too.
        let written = try Operation.validated(.string("again"), forKey: spelled, suite: nil, maximumValueSize: 1024)
        changed.apply(Record(kind: .transaction, sequence: 3, timestamp: 0, pid: 1, operations: [written]))
        #expect(changed.count == 2 && changed[stored] == .string("again"))
    }

    @Test(arguments: ["absent", "caf\u{E9}s", "cafe\u{301}s", "\u{212A}elvin"])
    func aKeyThatIsNotStoredIsMissingInEverySpelling(key: String) throws {
        let contents = try Self.contents(["caf\u{E9}", "K", "key"])
        #expect(contents[key] == nil)
        #expect(contents.entry(forKey: key) == nil)
        #expect(contents.valueAndSlot(forKey: key).value == nil)
    }
}

