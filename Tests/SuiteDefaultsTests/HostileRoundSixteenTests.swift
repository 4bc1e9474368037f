import ChildProcess
import Foundation
import Synchronization
import Testing
import TestSupport
import ToolSupport
@_spi(Tools) @_spi(Testing) @testable import SuiteDefaults

/// The sixteenth hostile round: commit 777e387 attacked (keys take the standard
/// library's NFC until it settles; a key read from a file that no write makes is damage).
///
/// The spellings used throughout, as scalar lists:
/// - `spelled` = [0061 0F73 0F73] ("a" and two TIBETAN VOWEL SIGN II, ccc 0 but
///   decomposing to 0F71 0F72, ccc 129 and 130);
/// - `once` = NFC once of it = [0061 0F71 0F72 0F71 0F72] (not sorted: the standard
///   library takes U+0F73 for a starter and does not reorder across it);
/// - `normal` = the normal form = [0061 0F71 0F71 0F72 0F72].
/// All three are canonically equivalent (Unicode); Swift's `==` says `spelled != once`,
/// `spelled != normal`, `once == normal`, while the store holds all three as `normal`.
/// The holes it found in the API (`renameKey` and the command line's `rename`, a
/// transaction's own writes, an import's duplicate keys, a registered default: each
/// compared spellings with Swift's `==`) are fixed; the two of files an earlier version
/// wrote are known issues (Design.md, "Limitations").
@Suite("Hostile round sixteen", .serialized)
struct HostileRoundSixteenTests: EngineStateTesting {
    let directory = TemporaryDirectory()

    func open(_ name: String) throws -> Suite {
        try Suite(named: name, directory: directory.url)
    }

    static let spelled = "a\u{F73}\u{F73}"
    static let once = "a\u{F71}\u{F72}\u{F71}\u{F72}"
    static let normal = "a\u{F71}\u{F71}\u{F72}\u{F72}"

    static func nfcOnce(_ text: String) -> String {
        KeyNormalFormTests.nfcOnce(text)
    }

    static func scalars(_ text: String) -> String {
        text.unicodeScalars.map { String(format: "%04X", $0.value) }.joined(separator: " ")
    }

    static func setOperation(_ key: String, _ value: SuiteValue) throws -> SuiteDefaults.Operation {
        .set(key: key, value: value, size: try ValueEncoding.measure(value))
    }

    @Test func theSpellingsAreWhatTheFileSays() {
        #expect(Self.nfcOnce(Self.spelled).unicodeScalars.elementsEqual(Self.once.unicodeScalars))
        #expect(UTF8Text.normalForm(Self.spelled).text.unicodeScalars.elementsEqual(Self.normal.unicodeScalars))
        #expect(UTF8Text.normalForm(Self.once).text.unicodeScalars.elementsEqual(Self.normal.unicodeScalars))
        // Swift's `==` is NFC once on each side: it tells the spelling from the other two
        // (NFC once of `spelled` is `once`, of `once` is `normal`), and calls those two equal.
        #expect(Self.spelled != Self.once && Self.spelled != Self.normal && Self.once == Self.normal)
    }

    // MARK: 1. Searching for text that does not settle

    /// Marks, bases and decomposable characters from Tibetan, Hebrew, Arabic, Indic
    /// two-part vowels, Hangul jamo, musical symbols, Greek and CJK compatibility.
    static let alphabet: [Unicode.Scalar] = {
        var values: [UInt32] = [0x61, 0x65, 0x69, 0x75, 0x3B9, 0x3C5, 0x391, 0xE9, 0x390, 0x1EA1, 0x227, 0x4E3D, 0xF900, 0x2F800,
                                0x212B, 0x2126, 0x212A, 0x344, 0x343, 0x340, 0x341, 0x345, 0x300, 0x301, 0x302, 0x307, 0x308,
                                0x323, 0x327, 0x328, 0x331, 0x334, 0x338, 0x31B, 0x5B0, 0x5B4, 0x5B7, 0x5B8, 0x5BC, 0x5C1,
                                0x5C2, 0x591, 0x5D0, 0x5E9, 0xFB2C, 0x627, 0x648, 0x64A, 0x64E, 0x651, 0x653, 0x654, 0x655,
                                0x6C1, 0x6D2, 0x6D5, 0x622, 0x928, 0x93C, 0x929, 0x958, 0x9C7, 0x9BE, 0x9D7, 0x9BC, 0x9CB,
                                0xB47, 0xB3E, 0xB56, 0xB57, 0xB4B, 0xB92, 0xBC6, 0xBBE, 0xBD7, 0xBCA, 0xC46, 0xC56, 0xC48,
                                0xCBF, 0xCC6, 0xCC2, 0xCD5, 0xCD6, 0xCCA, 0xCC0, 0xD46, 0xD47, 0xD3E, 0xD57, 0xD4A, 0xD4C,
                                0xDD9, 0xDCA, 0xDCF, 0xDDF, 0xDDA, 0xDDC, 0xDDE, 0x1025, 0x102E, 0x1026, 0x1B05, 0x1B35,
                                0x1B06, 0x1100, 0x1112, 0x1161, 0x1173, 0x1175, 0x11A8, 0x11AB, 0x11AF, 0x11C2, 0xAC00,
                                0xD55C, 0x3046, 0x304B, 0x3099, 0x309A, 0x304C, 0x1D157, 0x1D158, 0x1D15F, 0x1D165, 0x1D16E,
                                0x1D16D, 0x1D1B9, 0x1D1BA, 0x110B9, 0x110BA, 0x11099, 0x11131, 0x11127, 0x11347, 0x1133E,
                                0x11357, 0x114B9, 0x114B0, 0x114BA, 0x114BD]
        values += Array(0xF39...0xF39) + Array(0xF40...0xF44) + Array(0xF71...0xF84) + Array(0xF90...0xF93)
        values += [0xFB2, 0xFB3, 0xFB5, 0xFB7] + Array(0x1D15E...0x1D172) + Array(0x1D1BB...0x1D1C0)
        return values.map { Unicode.Scalar($0)! }
    }()

    /// How many rounds of NFC `text` takes to reach a fixed point (1 when NFC once is
    /// idempotent on it), up to 8.
    static func rounds(_ text: String) -> Int {
        var form = nfcOnce(text)
        for round in 1...8 {
            let next = nfcOnce(form)
            if next.utf8.elementsEqual(form.utf8) { return round }
            form = next
        }
        return 99
    }

    /// Random strings (and long structured runs of marks): every one settles, and none
    /// needs more than two rounds. (Outside the suite, 3.2 million random strings of up to
    /// 25 scalars from every mark and decomposable character gave the same: at most 2.)
    @Test func everyStringTriedSettlesInAtMostTwoRounds() {
        var generator = SplitMix64(seed: 16)
        var histogram = [Int: Int](), worst: (Int, String) = (0, "")
        func tally(_ text: String) {
            let rounds = Self.rounds(text)
            histogram[rounds, default: 0] += 1
            if rounds > worst.0 { worst = (rounds, text) }
            #expect(UTF8Text.normalForm(text).isSettled, "\(Self.scalars(text))")
        }
        for _ in 0..<40_000 {
            var scalars = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 1...24, using: &generator) { scalars.append(Self.alphabet.randomElement(using: &generator)!) }
            tally(String(scalars))
        }
        // Long runs: alternating marks of falling class, and the non-starter decompositions between them.
        for count in [8, 64, 300] {
            for unit in [[0x301, 0x323], [0xF72, 0xF73], [0xF74, 0xF81, 0xF80], [0x344, 0xF75, 0x5C1, 0x323], [0x1D165, 0x1D16E, 0xF73]] {
                let scalars = [0x61] + Array(repeating: unit, count: count).flatMap { $0 }
                tally(String(String.UnicodeScalarView(scalars.map { Unicode.Scalar(UInt32($0))! })))
            }
        }
        print("rounds histogram: \(histogram.sorted { $0.key < $1.key }), worst \(worst.0): \(Self.scalars(worst.1))")
        #expect(worst.0 <= 2, "\(Self.scalars(worst.1)) takes \(worst.0) rounds")
    }

    /// Spellings Swift's `==` calls equal (NFC once, Foundation's NFD and NFC, the normal
    /// form) all reach the same normal-form bytes: no two keys where one is promised.
    @Test func spellingsSwiftCallsEqualShareTheirNormalForm() {
        var generator = SplitMix64(seed: 1616)
        var compared = 0
        for _ in 0..<10_000 {
            var scalars = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 1...12, using: &generator) { scalars.append(Self.alphabet.randomElement(using: &generator)!) }
            let text = String(scalars)
            let spellings = [text, Self.nfcOnce(text), UTF8Text.normalForm(text).text,
                             text.decomposedStringWithCanonicalMapping, text.precomposedStringWithCanonicalMapping]
            for first in spellings {
                for second in spellings where first == second {
                    compared += 1
                    #expect(UTF8Text.normalForm(first).text.utf8.elementsEqual(UTF8Text.normalForm(second).text.utf8),
                            "\(Self.scalars(first)) == \(Self.scalars(second))")
                }
            }
        }
        #expect(compared > 50_000)
    }

    // MARK: 2. Spellings across processes (held)

    /// Written under one spelling; a child process finds it under the other two, and its
    /// write through another spelling replaces it: one key, the normal form's bytes.
    @Test func aChildFindsAndReplacesTheKeyUnderEverySpelling() throws {
        let suite = try open("spellings")
        try suite.set(1, forKey: Self.spelled)
        for spelling in [Self.spelled, Self.once, Self.normal] {
            let reader = try startWorker("get", in: directory, suite: "spellings", ["key": spelling])
            #expect(reader.expectLine(startingWith: "value") == "value 1", "\(Self.scalars(spelling)): \(reader.standardError)")
            reader.expectSuccess()
        }
        let writer = try startWorker("try-set", in: directory, suite: "spellings", ["key": Self.once, "value": "child"])
        #expect(writer.expectLine(startingWith: "ok") == "ok", "\(writer.lines) \(writer.standardError)")
        writer.expectSuccess()
        #expect(try exactEntries(of: suite).keys.map { Array($0.utf8) } == [Array(Self.normal.utf8)])
        #expect(suite.storedValue(forKey: Self.spelled) == .string("child"))
        try suite.removeValue(forKey: Self.once)
        #expect(suite.storedValues().isEmpty)
    }

    /// Suite names are normalized without a settledness check, but every name settles:
    /// a suite opened by one spelling is the suite a child opens by another, and
    /// `removeFiles` by a third spelling removes it.
    @Test func aSuiteNameSpelledThreeWaysIsOneSuite() throws {
        let suite = try open("n" + Self.spelled)
        try suite.set(7, forKey: "k")
        for spelling in [Self.once, Self.normal] {
            let reader = try startWorker("get", in: directory, suite: "n" + spelling, ["key": "k"])
            #expect(reader.expectLine(startingWith: "value") == "value 7", "\(Self.scalars(spelling)): \(reader.standardError)")
            reader.expectSuccess()
        }
        #expect(try Suite.names(in: directory.url).map { Array($0.utf8) } == [Array(("n" + Self.normal).utf8)])
        #expect(Suite.exists(named: "n" + Self.once, directory: directory.url))
        let removed = try Suite.removeFiles(named: "n" + Self.once, directory: directory.url)
        #expect(!removed.isEmpty)
        #expect(!Suite.exists(named: "n" + Self.normal, directory: directory.url))
    }

    // MARK: 3. APIs that compare spellings with Swift's `==` (holes)

    /// A hole, fixed: `renameKey` tests "renaming a key to itself" with Swift's `!=` on the raw
    /// spellings. [0061 0F71 0F71 0F72 0F72] renamed to [0061 0F73 0F73], one key to the
    /// store, sets the key and then removes it: the value is gone.
    @Test func renamingAKeyToAnotherSpellingOfItselfKeepsTheValue() throws {
        let suite = try open("rename")
        try suite.set(1, forKey: Self.normal)
        try suite.set(2, forKey: "other")
        let renamed = try suite.renameKey(Self.normal, to: Self.spelled)
        #expect(renamed)
        #expect(suite.storedValue(forKey: Self.normal) == .integer(1), "the value was lost: \(suite.storedValues())")
        // The other way round, and from NFC once.
        try suite.set(3, forKey: Self.normal)
        _ = try suite.renameKey(Self.once, to: Self.normal)
        #expect(suite.storedValue(forKey: Self.spelled) == .integer(3), "the value was lost: \(suite.storedValues())")
        #expect(suite.storedValue(forKey: "other") == .integer(2))
    }

    /// A hole, fixed: inside a transaction, a write through one spelling is not seen by a read
    /// through the same spelling (`SuiteTransaction.write(of:)` compares the stored,
    /// normalized key with the spelling by Swift's `==`): the read returns the committed
    /// value, and an `update` that reads before it writes (append, merge) loses a write.
    @Test func aTransactionReadsItsOwnWriteThroughItsSpelling() throws {
        let suite = try open("transaction")
        try suite.set(1, forKey: Self.spelled)
        let seen = try suite.update { transaction -> (SuiteValue?, SuiteValue?) in
            try transaction.setValue(.integer(2), forKey: Self.spelled)
            let bySpelling = transaction.storedValue(forKey: Self.spelled)
            let byNormalForm = transaction.storedValue(forKey: Self.normal)
            return (bySpelling, byNormalForm)
        }
        #expect(seen.1 == .integer(2))
        #expect(seen.0 == .integer(2), "the transaction read \(String(describing: seen.0)) after writing 2")
        // With many writes (the dictionary of positions), the same.
        let many = try suite.update { transaction -> SuiteValue? in
            for index in 0..<40 { try transaction.setValue(.integer(index), forKey: "pad-\(index)") }
            try transaction.setValue(.integer(3), forKey: Self.spelled)
            return transaction.storedValue(forKey: Self.spelled)
        }
        #expect(many == .integer(3), "the transaction read \(String(describing: many)) after writing 3")
        // Two appends in one update, through the spelling: both land.
        try suite.setValue(.array([]), forKey: Self.normal)
        try suite.update { transaction in
            for element in [1, 2] {
                var array: [SuiteValue] = []
                if case .array(let stored)? = transaction.storedValue(forKey: Self.spelled) { array = stored }
                try transaction.setValue(.array(array + [.integer(element)]), forKey: Self.spelled)
            }
        }
        #expect(suite.storedValue(forKey: Self.normal) == .array([.integer(1), .integer(2)]))
    }

    /// A hole, fixed: an import holding two spellings of one key (distinct to Swift's `==`, which
    /// the duplicate check uses) is taken: one value silently replaces the other, where a
    /// key twice is refused ("perhaps spelled two canonically equivalent ways").
    @Test func anImportWithTwoSpellingsOfOneKeyIsRefused() throws {
        let suite = try open("import")
        try suite.set("before", forKey: "kept")
        let text = "{\"a\\u0F73\\u0F73\": 1, \"a\\u0F71\\u0F71\\u0F72\\u0F72\": 2}"
        let result = Result { try suite.importJSON(text) }
        if case .success = result {
            Issue.record("the import was taken; stored: \(suite.storedValues().mapKeys(Self.scalars))")
        }
        #expect(suite.storedValues() == ["kept": .string("before")])
    }

    /// A hole, fixed: registered defaults are a `[String: SuiteValue]` keyed by the spelling
    /// (Swift `==`): a default registered as [0061 0F73 0F73] is not found through the
    /// stored spelling, and `dictionaryRepresentation` shows the one key twice.
    @Test func aRegisteredDefaultIsOneKeyWithTheStoredValue() throws {
        let suite = try open("registered")
        suite.register(defaults: [Self.spelled: .integer(5)])
        #expect(suite.registeredDefault(forKey: Self.normal) == .integer(5))
        try suite.set(6, forKey: Self.spelled)
        let all = suite.dictionaryRepresentation()
        #expect(all.count == 1, "one key, shown as \(all.mapKeys(Self.scalars))")
    }

    /// A hole, fixed: a registered default is held under its normal form, but looked up as
    /// spelled in a Swift dictionary, whose hash and `==` are NFC once: a default
    /// registered as [0061 0F71 0F71 0F72 0F72] is not found through [0061 0F73 0F73],
    /// though a stored value is; `value(forKey:)` answers nil through that spelling.
    @Test func aRegisteredDefaultIsFoundThroughEverySpelling() throws {
        let suite = try open("registered-spelled")
        suite.register(defaults: [Self.normal: .integer(5)])
        #expect(suite.registeredDefault(forKey: Self.once) == .integer(5))
        #expect(suite.registeredDefault(forKey: Self.spelled) == .integer(5), "the default is not found through the spelling")
        #expect(suite.value(forKey: Self.spelled) == .integer(5))
        try suite.set(6, forKey: Self.normal)
        #expect(suite.value(forKey: Self.spelled) == .integer(6), "a stored value is found through it")
    }

    /// A hole, fixed: the `suite-defaults rename` command (renameKey) with the key's normal form
    /// and another spelling of it removes the key.
    @Test func theCommandLineRenameToAnotherSpellingKeepsTheValue() throws {
        let suite = try open("cli")
        try suite.set("kept", forKey: Self.normal)
        let tool = try ChildProcess(executable: Products.path("suite-defaults"),
                                    arguments: ["--dir", directory.path, "--timeout", "30", "rename", "cli", Self.normal, Self.spelled])
        tool.expectSuccess()
        try suite.reload()
        #expect(suite.storedValue(forKey: Self.spelled) == .string("kept"), "after rename: \(suite.storedValues())")
    }

    /// Held: `setIfAbsent` through one spelling sees a value stored through another.
    @Test func setIfAbsentSeesAnotherSpelling() throws {
        let suite = try open("absent")
        #expect(try suite.setIfAbsent(1, forKey: Self.normal) == 1)
        #expect(try suite.setIfAbsent(2, forKey: Self.spelled) == 1)
        #expect(try suite.setIfAbsent(3, forKey: Self.once) == 1)
        #expect(suite.storedValues().count == 1)
    }

    /// Held: an observation filtered by one spelling hears a child's write through
    /// another, under the normal form's bytes.
    @Test func anObservationByOneSpellingHearsAChildWriteByAnother() throws {
        let suite = try open("observed")
        let heard = Mutex<[String]>([])
        let arrived = DispatchSemaphore(value: 0)
        let token = try suite.observe(keys: [Self.spelled]) { change in
            heard.withLock { $0.append(change.key) }
            arrived.signal()
        }
        defer { token.cancel() }
        let writer = try startWorker("try-set", in: directory, suite: "observed", ["key": Self.once, "value": "child"])
        #expect(writer.expectLine(startingWith: "ok") == "ok", "\(writer.lines) \(writer.standardError)")
        writer.expectSuccess()
        #expect(arrived.wait(timeout: .now() + 30) == .success)
        let keys = heard.withLock { $0 }
        #expect(keys.map { Array($0.utf8) } == [Array(Self.normal.utf8)])
    }

    // MARK: 4. Files an earlier version wrote

    /// The key of `KeyNormalFormTests`: NFC once is 1,024 bytes (taken by every version
    /// before 777e387, which checked the length of NFC once), the normal form 1,228.
    static let longKey = String(repeating: "u\u{F71}\u{5C1}\u{344}\u{F81}\u{323}", count: 68) + "abcd"

    func craft(_ suite: String, _ records: [(kind: Record.Kind, operations: [SuiteDefaults.Operation])]) throws {
        try directory.write(HostileRoundFourteenTests.dataFile(of: records), to: "\(suite).suite")
    }

    /// HOLE (upgrade), a known issue: a snapshot written by compaction in the version
    /// before 777e387, holding a key that version took (NFC once 1,024 bytes), is damage
    /// now: the whole snapshot, every other key of the suite, is moved aside with it.
    @Test func anEarlierCompactionWithALongKeyKeepsTheSuite() throws {
        withKnownIssue("a snapshot holding a key over the limit in its normal form is damage as a whole") {
            try earlierCompactionWithALongKey()
        }
    }

    func earlierCompactionWithALongKey() throws {
        let stored = Self.nfcOnce(Self.longKey)
        #expect(stored.utf8.count == 1024 && UTF8Text.normalForm(stored).text.utf8.count == 1228)
        var snapshot = [try Self.setOperation(stored, .integer(0))]
        for index in 0..<50 { snapshot.append(try Self.setOperation("kept-\(index)", .integer(index))) }
        try craft("upgraded", [(.snapshot, snapshot), (.transaction, [try Self.setOperation("after", .integer(99))])])
        let recorder = DiagnosticsRecorder(directory)
        let suite = try open("upgraded")
        let values = suite.storedValues()
        print("after the upgrade: \(values.count) keys, diagnostics \(recorder.kinds), files \(directory.names().sorted())")
        #expect(values["after"] == .integer(99))
        let keptCount = (0..<50).filter { values["kept-\($0)"] == .integer($0) }.count
        #expect(keptCount == 50, "\(keptCount) of the 50 keys of the snapshot kept")
    }

    /// The documented rule, where it costs only the record: a transaction of the
    /// earlier version with the long key alone is damage, repaired, moved aside, no
    /// crash, the records around it kept; an NFC-once key that settles is read as its
    /// normal form, found, overwritten, removed and compacted.
    @Test func earlierRecordsAreReadRepairedAndCompacted() throws {
        try craft("earlier", [
            (.transaction, [try Self.setOperation("before", .integer(1))]),
            (.transaction, [try Self.setOperation(Self.nfcOnce(Self.longKey), .integer(2))]),
            (.transaction, [try Self.setOperation(Self.once, .integer(3))]),
            (.transaction, [try Self.setOperation("after", .integer(4))]),
        ])
        let recorder = DiagnosticsRecorder(directory)
        let suite = try open("earlier")
        #expect(recorder.kinds == [.repairedDamage])
        #expect(suite.storedValues() == ["before": .integer(1), Self.normal: .integer(3), "after": .integer(4)])
        #expect(directory.names().count > 2, "the damaged file is kept aside: \(directory.names())")
        #expect(suite.storedValue(forKey: Self.spelled) == .integer(3))
        try suite.set(5, forKey: Self.spelled)
        try suite.compact()
        let state = try openState("earlier")
        try catchUpReadOnly(state)
        #expect(state.contents.count == 3 && state.contents[Self.once] == .integer(5))
        try suite.removeValue(forKey: Self.once)
        #expect(suite.storedValues() == ["before": .integer(1), "after": .integer(4)])
    }

    /// An earlier version's table held [0061 0F71 0F72 0F71 0F72] (`set` through
    /// [0061 0F73 0F73]) and [0061 0F71 0F71 0F72 0F72] (`set` through itself) as two keys
    /// (its hash is of the bytes), and its compaction wrote both into one snapshot. Read
    /// now, they are one key: the snapshot must not be damage, and the other keys stay.
    @Test func anEarlierSnapshotWithTwoSpellingsOfOneKeyIsRead() throws {
        try craft("twice", [(.snapshot, [try Self.setOperation(Self.once, .integer(1)), try Self.setOperation("x", .integer(3)),
                                         try Self.setOperation(Self.normal, .integer(2))]),
                            (.transaction, [try Self.setOperation("after", .integer(4))])])
        let recorder = DiagnosticsRecorder(directory)
        let suite = try open("twice")
        let values = suite.storedValues()
        print("two spellings in a snapshot: \(values.mapKeys(Self.scalars)), diagnostics \(recorder.kinds)")
        #expect(values["x"] == .integer(3) && values["after"] == .integer(4))
        #expect(values.count == 3 && suite.storedValue(forKey: Self.spelled) != nil)
        try suite.compact()
        let state = try openState("twice")
        try catchUpReadOnly(state)
        #expect(state.contents.count == 3)
    }

    /// HOLE (upgrade), a known issue: a suite whose name an earlier version stored as NFC
    /// once (the file [006E 0061 0F71 0F72 0F71 0F72].suite) is listed by `Suite.names`,
    /// but opening it by that name, or by the name the application uses, opens another
    /// (empty) file: its values are out of reach, and `removeFiles` cannot remove it.
    @Test func aSuiteAnEarlierVersionNamedInOneRoundIsStillFound() throws {
        withKnownIssue("a suite name an earlier version normalized once is another file's name now") {
            try earlierNameInOneRound()
        }
    }

    func earlierNameInOneRound() throws {
        let oldName = "n" + Self.once
        try craft(oldName, [(.transaction, [try Self.setOperation("k", .integer(1))])])
        let listed = try Suite.names(in: directory.url)
        #expect(listed.map { Array($0.utf8) } == [Array(oldName.utf8)])
        let byListedName = try open(listed[0])
        #expect(byListedName.storedValue(forKey: "k") == .integer(1), "the listed suite opens empty")
        let byApplicationName = try open("n" + Self.spelled)
        #expect(byApplicationName.storedValue(forKey: "k") == .integer(1), "the application's suite opens empty")
    }

    // MARK: 5. Cost of opening (measured, not asserted)

    /// 2,000 records with keys of about 1,000 bytes of marks needing two rounds, against
    /// ASCII keys of the same length: the open is reported; the test checks only that
    /// every key is read.
    @Test func openingKeysOfMarksCostsAReportedMultipleOfASCII() throws {
        let unit = "u\u{F71}\u{5C1}\u{344}\u{F81}\u{323}"
        var marks: [String] = [], ascii: [String] = []
        for index in 0..<2_000 {
            let key = UTF8Text.normalForm(String(repeating: unit, count: 55) + "\(index)").text
            #expect(key.utf8.count <= 1024 && Self.rounds(String(repeating: unit, count: 55)) == 2)
            marks.append(Self.nfcOnce(String(repeating: unit, count: 55) + "\(index)"))
            ascii.append(String(repeating: "x", count: key.utf8.count - "\(index)".utf8.count) + "\(index)")
        }
        func measure(_ name: String, _ keys: [String]) throws -> Duration {
            try craft(name, keys.enumerated().map { (.transaction, [try Self.setOperation($0.element, .integer($0.offset))]) })
            let clock = ContinuousClock()
            let start = clock.now
            let suite = try open(name)
            let count = suite.storedValues().count
            let elapsed = clock.now - start
            #expect(count == keys.count)
            return elapsed
        }
        func nanoseconds(_ duration: Duration) -> Double {
            Double(duration.components.seconds) * 1e9 + Double(duration.components.attoseconds) / 1e9
        }
        _ = try measure("warm", ["w", "\u{E9}"])
        let normalForms = marks.map { UTF8Text.normalForm($0).text }
        let markTime = try measure("marks", marks), normalTime = try measure("normal", normalForms)
        let asciiTime = try measure("ascii", ascii)
        print("open of 2,000 keys of ~1,000 bytes: marks stored NFC once \(markTime) (x\(nanoseconds(markTime) / nanoseconds(asciiTime))), "
              + "marks stored in normal form \(normalTime) (x\(nanoseconds(normalTime) / nanoseconds(asciiTime))), ASCII \(asciiTime)")
        // The costliest run found for the standard library's sort: 254 marks of class 230
        // before 254 of class 220 (crafted unsorted; a write would store them sorted).
        let descending = (0..<2_000).map {
            "a" + String(repeating: "\u{301}", count: 254) + String(repeating: "\u{323}", count: 254) + "\($0)"
        }
        #expect(descending.allSatisfy { UTF8Text.normalForm($0).text.utf8.count <= 1024 })
        let descendingTime = try measure("descending", descending)
        print("2,000 crafted keys of 508 unsorted marks: \(descendingTime) (x\(nanoseconds(descendingTime) / nanoseconds(asciiTime)) of ASCII)")
        // Scaling: twice the records of marks, about twice the time (reported).
        let doubled = (0..<4_000).map { normalForms[$0 % 2_000] + String(repeating: "z", count: $0 / 2_000) }
        let doubledTime = try measure("doubled", doubled)
        print("4,000 such keys: \(doubledTime) (x\(nanoseconds(doubledTime) / nanoseconds(normalTime)) of 2,000)")
    }
}

private extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

private extension Dictionary where Key == String {
    func mapKeys(_ transform: (String) -> String) -> [String: Value] {
        Dictionary(map { (transform($0.key), $0.value) }, uniquingKeysWith: { first, _ in first })
    }
}
