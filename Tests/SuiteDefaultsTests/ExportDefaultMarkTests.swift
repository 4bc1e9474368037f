import Foundation
import Testing
import TestSupport
@_spi(Tools) @testable import SuiteDefaults

/// Export and import keep which values are first-access defaults
/// (`SuiteChange.isDefault`): an export writes a default as `{"$default": value}`, and
/// an import stores it as a default again, so that a mirror still sends it create-only
/// and a domain such as UnitPreferences still tells it from a choice.
@Suite("Export and import keep which values are defaults")
struct ExportDefaultMarkTests {
    let directory = TemporaryDirectory()

    func open(_ name: String) throws -> Suite {
        try Suite(named: name, directory: directory.url)
    }

    /// Fills a suite with defaults stored by each path that stores one, choices, and a
    /// default that was chosen since.
    func fill(_ suite: Suite) throws {
        try suite.setIfAbsent("metric", forKey: "units")
        _ = try suite.valueStoringDefault(for: SuiteKey<Int>("count", default: 7))
        try suite.update { transaction in
            try transaction.setValue(.date(Date(timeIntervalSinceReferenceDate: -0.0)), forKey: "first launch", asDefault: true)
            try transaction.setValue(["$default": [.double(-0.0), .data(Data([1]))]], forKey: "lone $ key", asDefault: true)
            try transaction.setValue(.json(Data(" [1] ".utf8)), forKey: "$json", asDefault: true)
        }
        try suite.set("Ann", forKey: "name")
        try suite.set(["$default": 1] as SuiteValue, forKey: "looks like a mark")
        try suite.setIfAbsent("light", forKey: "theme")
        try suite.set("light", forKey: "theme")
    }

    @Test func defaultsAndChoicesRoundTripThroughExportAndImport() throws {
        let source = try open("source")
        try fill(source)
        #expect(source.storedEntries().values.filter(\.isDefault).count == 5, "the fixture has defaults to lose")

        let copy = try open("copy")
        try copy.set("imperial", forKey: "units")
        try copy.set("gone", forKey: "other")
        let recorder = ChangeRecorder()
        let token = try copy.observe(onChange: recorder.handler)
        defer { token.cancel() }
        try copy.importJSON(source.exportJSON())

        #expect(try exactEntries(of: copy) == exactEntries(of: source))
        #expect(copy.storedEntries()["units"] == Suite.StoredEntry(value: "metric", isDefault: true),
                "a choice the import replaces with a default is a default")
        #expect(copy.storedEntries()["theme"]?.isDefault == false, "a default chosen since stays a choice")
        // Observers, suite-sync among them, hear an imported default as one.
        // Each awaited: the changes of one commit reach the recorder one by one.
        #expect(recorder.wait(for: "units", toBecome: "metric"))
        #expect(recorder.wait(for: "name", toBecome: "Ann"))
        #expect(recorder.changes.last { $0.key == "units" }?.isDefault == true)
        #expect(recorder.changes.last { $0.key == "name" }?.isDefault == false)
        // A process that opens the file afresh reads the marks from the journal.
        let bytes = try #require(directory.bytes(of: "copy.suite"))
        let scan = try bytes.withUnsafeBytes { try DataFileScan.scan($0, committedLength: bytes.count) }
        #expect(scan.contents.mapEntries(\.isDefault) == source.storedEntries().mapValues(\.isDefault))
        #expect(copy.exportJSON() == source.exportJSON(), "exporting the copy gives the same text")
    }

    @Test func aDefaultIsWrittenAsADefaultMarkAroundItsValue() throws {
        let suite = try open("prefs")
        try suite.setIfAbsent("metric", forKey: "units")
        try suite.set(["$date": "text"] as SuiteValue, forKey: "name")
        try suite.update { try $0.setValue(.data(Data([0xDE, 0xAD])), forKey: "token", asDefault: true) }
        #expect(suite.exportJSON() == """
            {
              "name": {
                "$dictionary": {
                  "$date": "text"
                }
              },
              "token": {
                "$default": {
                  "$data": "3q0="
                }
              },
              "units": {
                "$default": "metric"
              }
            }
            """)
    }

    @Test(arguments: ["$default", "$dictionary", "$json", "$data", "$", "plain"])
    func aSuiteWhoseOnlyKeyIsADefaultRoundTrips(_ key: String) throws {
        for value: SuiteValue in ["text", ["$default": "x"], .json(Data("{\"$default\":1}".utf8))] {
            let source = try open("source \(key)")
            try source.update { transaction in
                try transaction.removeAll()
                try transaction.setValue(value, forKey: key, asDefault: true)
            }
            let copy = try open("copy \(key)")
            try copy.importJSON(source.exportJSON())
            #expect(try exactEntries(of: copy) == exactEntries(of: source), "\(key): \(source.exportJSON())")
        }
    }

    // MARK: What stays as it was

    @Test func aSuiteWithoutDefaultsExportsTheTextItAlwaysDid() throws {
        let suite = try open("plain")
        try suite.set("metric", forKey: "units")
        try suite.set(["a": [1, .double(-0.0), .data(Data([7])), .date(Date(timeIntervalSince1970: 1.5))]] as SuiteValue, forKey: "tree")
        try suite.setValue(.json(Data(" {\"$default\": 1}".utf8)), forKey: "encoded")
        // The text before defaults were marked: the stored values as one typed dictionary.
        #expect(suite.exportJSON() == SuiteValue.dictionary(suite.storedValues()).jsonText(style: .typed, pretty: true))
        try suite.removeAll()
        try suite.set(1, forKey: "$only")
        #expect(suite.exportJSON() == "{\n  \"$dictionary\": {\n    \"$only\": 1\n  }\n}")
    }

    @Test func anExportWithoutMarksImportsEveryValueAsAChoice() throws {
        let suite = try open("old")
        try suite.setIfAbsent("kept as a default?", forKey: "units")
        // Written by an export before defaults were marked.
        try suite.importJSON("""
            {
              "$json": {"$date": 5},
              "blob": {"$data": "AAE="},
              "dict": {"$dictionary": {"$default": 1}},
              "units": "metric",
              "when": {"$date": "2026-11-22T10:15:00Z"}
            }
            """)
        let entries = suite.storedEntries()
        #expect(entries.values.allSatisfy { !$0.isDefault })
        #expect(entries.mapValues(\.value) == [
            "$json": .date(Date(timeIntervalSinceReferenceDate: 5)), "blob": .data(Data([0, 1])), "dict": ["$default": 1],
            "units": "metric", "when": .date(Date(timeIntervalSince1970: 1_795_342_500)),
        ])
        try suite.importJSON("{\"$dictionary\": {\"$default\": 2}}")
        #expect(suite.storedEntries() == ["$default": Suite.StoredEntry(value: 2, isDefault: false)])
    }

    /// A single value's typed JSON, what suite-sync stores in etcd and `write -json`
    /// reads, has no mark: it stays what it was, and refuses one.
    @Test func aValuesTypedJSONNeitherWritesNorTakesTheMark() throws {
        let suite = try open("sync")
        try suite.setIfAbsent(["units": "metric"] as SuiteValue, forKey: "prefs")
        let entry = try #require(suite.storedEntry(forKey: "prefs"))
        #expect(entry.isDefault)
        #expect(entry.value.jsonText(style: .typed) == "{\"units\":\"metric\"}")
        #expect(SuiteValue.dictionary(["$default": 1]).jsonText(style: .typed) == "{\"$dictionary\":{\"$default\":1}}")
        do {
            let value = try SuiteValue(jsonText: "{\"$default\": 1}")
            Issue.record("the mark was read as a value: \(value)")
        } catch let error as SuiteError {
            #expect(error.code == .invalidValue)
            #expect(error.message.contains("first-access default"), "\(error.message)")
        }
    }

    // MARK: Hostile marks

    @Test(arguments: [
        #"{"a": [{"$default": 1}]}"#,                              // in an array
        #"{"a": {"x": {"$default": 1}, "y": 2}}"#,                 // in a dictionary
        #"{"a": {"$dictionary": {"x": {"$default": 1}}}}"#,
        #"{"a": {"$default": {"$default": 1}}}"#,                  // doubled
        #"{"a": {"$default": null}}"#,                             // wrong types
        #"{"a": {"$default": {"$data": "!!!!"}}}"#,
        #"{"a": {"$default": 1e400}}"#,
        #"{"a": {"$default": {"$date": true}}}"#,
        #"{"$default": 1}"#,                                       // alone, at the top
        #"{"$default": {"a": 1}}"#,
        #"{"$dictionary": {"a": [{"$default": 1}]}}"#,
        #"[{"$default": 1}]"#,
        #"{"a": {"$default": 1}, "a": 2}"#,                        // a key twice, once marked
        #"{"a": {"$default": 1}, "a": {"$default": 1}}"#,          // a mark twice
        "{\"e\u{301}\": {\"$default\": 1}, \"\u{E9}\": {\"$default\": 1}}",
        #"{"ok": {"$default": 1}, "": {"$default": 1}}"#,          // a key no write takes
        #"{"ok": {"$default": 1}, "bad\u0000": {"$default": 1}}"#,
        #"{"a": {"$default": 1}} {"b": 2}"#,                       // not one JSON value
        #"{"a": {"$default": 1}"#,
    ])
    func aMisplacedOrMalformedMarkIsRefusedAndChangesNothing(_ text: String) throws {
        try expectImportRefused(text, into: open("hostile"), codes: [.invalidValue, .invalidKey])
    }

    @Test func aRefusedMemberIsNamedByItsKey() throws {
        let suite = try open("named")
        for text in [#"{"ok": 1, "bad": {"$default": null}}"#, #"{"ok": 1, "bad": [{"$default": 1}]}"#,
                     #"{"ok": 1, "bad": {"$default": {"x": 1, "x": 2}}}"#] {
            let error = #expect(throws: SuiteError.self) { try suite.importJSON(text) }
            #expect(error?.key == "bad", "\(String(describing: error))")
        }
        let nested = #expect(throws: SuiteError.self) { try suite.importJSON(#"{"ok": 1, "bad": {"x": 1, "x": 2}}"#) }
        #expect(nested?.key == "bad" && nested?.message.contains("the key \"x\"") == true, "\(String(describing: nested))")
        #expect(suite.storedEntries().isEmpty)
    }

    @Test func aDefaultTooLargeToStoreIsRefusedAndChangesNothing() throws {
        let suite = try Suite(named: "large", directory: directory.url, options: Suite.Options(maximumValueSize: 1024))
        try suite.setIfAbsent("metric", forKey: "units")
        let before = try exactEntries(of: suite)
        let text = "{\"a\": {\"$default\": 1}, \"big\": {\"$default\": \"\(String(repeating: "x", count: 2048))\"}}"
        #expect(throws: SuiteError.self) { try suite.importJSON(text) }
        #expect(try exactEntries(of: suite) == before)
    }
}
