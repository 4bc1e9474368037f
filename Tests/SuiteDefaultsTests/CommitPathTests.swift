import Foundation
import Testing
import TestSupport
@testable import SuiteDefaults

/// The short paths of the most common commits: a single set stored at the slot its
/// first lookup found, and an update's one write kept outside any list.
@Suite("The single set and the one-write transaction commit what the long path does")
struct CommitPathTests {
    static func set(_ key: String, _ value: SuiteValue) throws -> SuiteDefaults.Operation {
        .set(key: key, value: value, size: try ValueEncoding.measure(value))
    }

    static func record(_ sequence: UInt64, _ operations: [SuiteDefaults.Operation]) -> Record {
        Record(kind: .transaction, sequence: sequence, timestamp: 0, pid: 1, operations: operations)
    }

    static func expectSame(_ contents: SuiteContents, _ reference: SuiteContents) {
        #expect(contents.changes(to: reference).isEmpty, "the values differ")
        #expect(contents.liveBytes == reference.liveBytes && contents.count == reference.count
                && contents.lastSequence == reference.lastSequence)
    }

    @Test(arguments: ["a", "new"])
    func aSetAtItsSlotIsTheRecordApplied(key: String) throws {
        var contents = SuiteContents(), reference = SuiteContents()
        let first = Self.record(1, [try Self.set("a", 1), try Self.set("b", "two")])
        contents.apply(first)
        reference.apply(first)
        let effect = contents.effect(ofSetting: key, to: "three", size: try ValueEncoding.measure("three"), asDefault: false)
        #expect(effect.changes)
        contents.set("three", forKey: key, size: try ValueEncoding.measure("three"), asDefault: false, at: effect.slot, sequence: 2)
        reference.apply(Self.record(2, [try Self.set(key, "three")]))
        Self.expectSame(contents, reference)
        #expect(effect.liveBytes == reference.liveBytes)
    }

    /// A slot found before the table changed (here: the key removed, and the table
    /// grown, which moves every key) is not used: the key is looked up again.
    @Test func aSlotFromBeforeAChangeIsNotUsed() throws {
        var contents = SuiteContents(), reference = SuiteContents()
        let first = Self.record(1, [try Self.set("a", 1), try Self.set("b", 2)])
        contents.apply(first)
        reference.apply(first)
        let effect = contents.effect(ofSetting: "a", to: 3, size: try ValueEncoding.measure(3), asDefault: false)
        let change = Self.record(2, [.remove(key: "a")] + (0..<200).map { try! Self.set("k\($0)", .integer($0)) })
        contents.apply(change)
        reference.apply(change)
        contents.set(3, forKey: "a", size: try ValueEncoding.measure(3), asDefault: false, at: effect.slot, sequence: 3)
        reference.apply(Self.record(3, [try Self.set("a", 3)]))
        Self.expectSame(contents, reference)
        #expect(contents["a"] == 3 && contents["b"] == 2 && contents["k199"] == 199)
    }

    /// An update that reads a key and then writes one uses the slot its read found
    /// only for the same key (in any of its Unicode forms), and only when the write is
    /// the transaction's one: each commits what a fresh lookup would.
    @Test func anUpdateWritingTheKeyItReadUsesTheReadsSlotAndNoOther() throws {
        let directory = TemporaryDirectory()
        let suite = try Suite(named: "slots", directory: directory.url)
        try suite.update { try $0.set(1, forKey: "café") }
        // The same key, read in its decomposed form, written in its composed one.
        try suite.update { try $0.set(($0.integer(forKey: "cafe\u{301}") ?? 0) + 1, forKey: "café") }
        // A key read absent, then written: a new key.
        try suite.update { try $0.set(($0.integer(forKey: "new") ?? 10) + 1, forKey: "new") }
        // Read one key, write another: the written key's own slot.
        try suite.update { try $0.set(($0.integer(forKey: "café") ?? 0) * 100, forKey: "other") }
        // A write of the same value as read changes nothing and writes no record.
        let before = try Self.records(directory, name: "slots").count
        try suite.update { try $0.set($0.integer(forKey: "café") ?? 0, forKey: "café") }
        #expect(try Self.records(directory, name: "slots").count == before)
        // Read, write another key, then the one read: two writes, no slot.
        try suite.update { transaction in
            let value = transaction.integer(forKey: "café") ?? 0
            try transaction.set(value, forKey: "second")
            try transaction.set(value + 1, forKey: "café")
        }
        #expect(suite.storedValues() == ["café": 3, "new": 11, "other": 200, "second": 2])
        #expect(try Suite(named: "slots", directory: directory.url).storedValues() == suite.storedValues(), "as the file says")
        // Read, clear, write: nothing of the read's slot survives the clear.
        try suite.update { transaction in
            let value = transaction.integer(forKey: "new") ?? 0
            try transaction.removeAll()
            try transaction.set(value, forKey: "new")
        }
        #expect(suite.storedValues() == ["new": 11])
        let reopened = try Suite(named: "slots", directory: directory.url, options: .init())
        #expect(reopened.storedValues() == ["new": 11])
        try suite.update { try $0.set(($0.integer(forKey: "new") ?? 0) + 1, forKey: "new") }
        #expect(reopened.integer(forKey: "new") == 12)
    }

    /// The records in the suite file after the first, oldest first.
    static func records(_ directory: TemporaryDirectory, name: String = "reuse") throws -> [Record] {
        let bytes = try #require(directory.bytes(of: name + ".suite"))
        return try #require(StoreState.records(in: bytes, from: DataFileHeader.size, after: nil))
    }

    @Test func eachTransactionStartsEmpty() throws {
        let directory = TemporaryDirectory()
        let suite = try Suite(named: "reuse", directory: directory.url)
        try suite.update { try $0.set(1, forKey: "a") }
        try suite.update { try $0.set(2, forKey: "b") }
        #expect(try Self.records(directory).last?.operations == [try Self.set("b", 2)], "the second commit holds only its own write")

        struct Refused: Error {}
        #expect(throws: Refused.self) {
            try suite.update { transaction in
                try transaction.set(3, forKey: "c")
                throw Refused()
            }
        }
        try suite.update { try $0.set(4, forKey: "d") }
        #expect(try Self.records(directory).last?.operations == [try Self.set("d", 4)], "nothing of the abandoned one")
        #expect(suite.storedValue(forKey: "c") == nil)

        try suite.update { try $0.removeAll() }
        try suite.update { try $0.set(5, forKey: "e") }
        try suite.set(6, forKey: "f")
        try suite.update { try $0.set(7, forKey: "g") }
        #expect(suite.storedValues() == ["e": 5, "f": 6, "g": 7], "a removal of everything does not carry over")
    }

    @Test func aTransactionKeptByItsBlockIsNotUsedAgain() throws {
        let directory = TemporaryDirectory()
        let suite = try Suite(named: "reuse", directory: directory.url)
        var kept: SuiteTransaction?
        try suite.update { transaction in
            kept = transaction
            try transaction.set(1, forKey: "a")
        }
        var second: SuiteTransaction?
        try suite.update { transaction in
            second = transaction
            try transaction.set(2, forKey: "b")
        }
        #expect(kept !== second, "a transaction its block kept stays ended")
        #expect(suite.storedValues() == ["a": 1, "b": 2])
        var third: SuiteTransaction?
        second = nil
        try suite.update { transaction in
            third = transaction
            #expect(transaction.storedValue(forKey: "b") == 2)
        }
        #expect(third !== kept)
    }

    /// A transaction's first write is kept on its own, and moves into the list with
    /// the second key: reads inside the block, and the record, see every write, each
    /// key once, in the order keys were first written, with its last value.
    @Test func writesMovingFromTheOneWriteToTheListKeepTheirOrderAndLastValues() throws {
        let directory = TemporaryDirectory()
        let suite = try Suite(named: "reuse", directory: directory.url)
        try suite.update { transaction in
            try transaction.set(1, forKey: "a")
            try transaction.set(2, forKey: "a")
            #expect(transaction.integer(forKey: "a") == 2)
            try transaction.set(3, forKey: "b")
            #expect(transaction.integer(forKey: "a") == 2 && transaction.integer(forKey: "b") == 3)
            try transaction.set(4, forKey: "a")
            try transaction.setValue(nil, forKey: "b")
            #expect(transaction.integer(forKey: "a") == 4 && transaction.storedValue(forKey: "b") == nil)
            for index in 0..<12 { try transaction.set(index, forKey: "k\(index)") }
            try transaction.set(5, forKey: "a")
            #expect(transaction.integer(forKey: "a") == 5 && transaction.integer(forKey: "k11") == 11)
        }
        #expect(try Self.records(directory).last?.operations
                == [try Self.set("a", 5)] + (0..<12).map { try! Self.set("k\($0)", .integer($0)) },
                "b was set and removed in the block, and was never stored: nothing of it is written")
        // A removal alone, and a write after a clear, take the list's path.
        try suite.update { try $0.setValue(nil, forKey: "k0") }
        #expect(try Self.records(directory).last?.operations == [.remove(key: "k0")])
        try suite.update { transaction in
            try transaction.set(6, forKey: "a")
            try transaction.removeAll()
            #expect(transaction.storedValue(forKey: "a") == nil)
            try transaction.set(7, forKey: "z")
        }
        #expect(suite.storedValues() == ["z": 7])
    }
}
