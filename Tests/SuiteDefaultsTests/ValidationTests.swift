import Foundation
import Testing
import TestSupport
@testable import SuiteDefaults

@Suite("Bad input gets a typed error and changes nothing")
struct ValidationTests {
    let directory = TemporaryDirectory()
    let suiteFile = "prefs.suite"

    func openWithData() throws -> Suite {
        let suite = try Suite(named: "prefs", directory: directory.url)
        try suite.set("kept", forKey: "existing")
        return suite
    }

    @Test(arguments: [
        "", "a/b", "/abs", "..", "a..b", ".hidden", "nul\0byte", "line\nbreak",
        String(repeating: "n", count: 256), String(repeating: "n", count: Suite.maximumNameLength + 1),
    ])
    func invalidSuiteNames(_ name: String) {
        let error = #expect(throws: SuiteError.self) { try Suite(named: name, directory: directory.url) }
        #expect(error?.code == .invalidSuiteName)
        #expect(error?.message.isEmpty == false)
        #expect(directory.names().isEmpty, "nothing is created for an invalid name")
    }

    @Test func longestValidNameWorks() throws {
        let name = String(repeating: "n", count: Suite.maximumNameLength)
        let suite = try Suite(named: name, directory: directory.url)
        try suite.set(1, forKey: "k")
        #expect(suite.integer(forKey: "k") == 1)
    }

    @Test(arguments: ["", "nul\0key", String(repeating: "k", count: Suite.maximumKeyLength + 1)])
    func invalidKeys(_ key: String) throws {
        let suite = try openWithData()
        let before = directory.bytes(of: suiteFile)
        let error = #expect(throws: SuiteError.self) { try suite.set(1, forKey: key) }
        #expect(error?.code == .invalidKey)
        #expect(error?.suite == "prefs")
        #expect(throws: SuiteError.self) { try suite.setIfAbsent(1, forKey: key) }
        #expect(throws: SuiteError.self) { try suite.compareAndSet(expected: nil, new: 1, forKey: key) }
        #expect(throws: SuiteError.self) { try suite.update { tx in try tx.set(1, forKey: key) } }
        #expect(directory.bytes(of: suiteFile) == before)
        #expect(suite.storedValues() == ["existing": "kept"])
    }

    @Test(arguments: [
        SuiteValue.double(.nan), .double(.infinity), .double(-.infinity), .array([1, .double(.nan)]),
        .dictionary(["x": .double(.nan)]), .date(Date(timeIntervalSinceReferenceDate: .infinity)),
    ])
    func nonFiniteNumbersAreRefused(_ value: SuiteValue) throws {
        let suite = try openWithData()
        let before = directory.bytes(of: suiteFile)
        let error = #expect(throws: SuiteError.self) { try suite.setValue(value, forKey: "n") }
        #expect(error?.code == .invalidValue)
        #expect(error?.key == "n")
        #expect(directory.bytes(of: suiteFile) == before)
    }

    @Test func tooDeepNestingIsRefused() throws {
        let suite = try openWithData()
        var value = SuiteValue.integer(1)
        for _ in 0..<70 { value = .array([value]) }
        let error = #expect(throws: SuiteError.self) { try suite.setValue(value, forKey: "deep") }
        #expect(error?.code == .invalidValue)
    }

    @Test func valuesOverTheLimitAreRefused() throws {
        let suite = try Suite(named: "prefs", directory: directory.url, options: .init(maximumValueSize: 1000))
        try suite.set("kept", forKey: "existing")
        let before = directory.bytes(of: suiteFile)
        let error = #expect(throws: SuiteError.self) { try suite.set(Data(count: 1000), forKey: "big") }
        #expect(error?.code == .valueTooLarge)
        #expect(throws: SuiteError.self) { try suite.update { tx in try tx.set(String(repeating: "x", count: 2000), forKey: "big") } }
        #expect(directory.bytes(of: suiteFile) == before)
        try suite.set(Data(count: 900), forKey: "fits")
    }

    @Test func theDefaultValueLimitAdmitsOneMebibyte() throws {
        let suite = try openWithData()
        try suite.set(Data(count: 1 << 20), forKey: "mebibyte")
        #expect(suite.data(forKey: "mebibyte")?.count == 1 << 20)
        let error = #expect(throws: SuiteError.self) { try suite.set(Data(count: 4 << 20), forKey: "over") }
        #expect(error?.code == .valueTooLarge)
    }

    @Test func suitesOverTheLimitAreRefused() throws {
        let suite = try Suite(named: "prefs", directory: directory.url, options: .init(maximumSuiteSize: 4000))
        try suite.set("kept", forKey: "existing")
        for index in 0..<3 { try suite.set(Data(count: 1000), forKey: "blob.\(index)") }
        let before = directory.bytes(of: suiteFile)
        let error = #expect(throws: SuiteError.self) { try suite.set(Data(count: 1000), forKey: "blob.3") }
        #expect(error?.code == .suiteTooLarge)
        #expect(directory.bytes(of: suiteFile) == before)
        // Shrinking is always allowed, and makes room again.
        try suite.removeValue(forKey: "blob.0")
        try suite.set(Data(count: 1000), forKey: "blob.3")
    }

    @Test func transactionsRefuseBadInputBeforeCommitting() throws {
        let suite = try openWithData()
        let before = directory.bytes(of: suiteFile)
        #expect(throws: SuiteError.self) {
            try suite.update { tx in
                try tx.set(1, forKey: "good")
                try tx.set(Double.nan, forKey: "bad")
            }
        }
        #expect(directory.bytes(of: suiteFile) == before, "a transaction with one bad write writes nothing")
        #expect(suite.integer(forKey: "good") == nil)
    }
}
