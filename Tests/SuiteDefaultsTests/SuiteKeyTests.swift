import Foundation
import Testing
import TestSupport
@testable import SuiteDefaults

enum Theme: String, Sendable {
    case light, dark
}

struct Layout: Codable, Equatable, Sendable {
    var columns: Int
    var ratio: Decimal
}

extension SuiteKey where Value == Bool {
    static let showsTips = SuiteKey("tips.shown", default: true)
}

extension SuiteKey where Value == Theme {
    static let theme = SuiteKey("appearance.theme", default: .light)
}

extension SuiteKey where Value == Layout {
    static let layout = SuiteKey(codable: "layout", default: Layout(columns: 2, ratio: 1))
}

@Suite("Typed keys with defaults")
struct SuiteKeyTests {
    let directory = TemporaryDirectory()

    func open() throws -> Suite { try Suite(named: "keys", directory: directory.url) }

    @Test func readsStoredValuesOrTheDefault() throws {
        let suite = try open()
        #expect(suite.value(for: .showsTips) == true)
        #expect(suite.storedValue(forKey: "tips.shown") == nil, "reading does not store the default")
        try suite.set(false, for: .showsTips)
        #expect(suite.value(for: .showsTips) == false)
        try suite.set(.dark, for: .theme)
        #expect(suite.string(forKey: "appearance.theme") == "dark")
        #expect(suite.value(for: .theme) == .dark)
        let layout = Layout(columns: 3, ratio: Decimal(string: "0.333")!)
        try suite.set(layout, for: .layout)
        #expect(suite.value(for: .layout) == layout)
        try suite.removeValue(for: .theme)
        #expect(suite.value(for: .theme) == .light)
    }

    @Test func anInvalidStoredValueReadsAsTheDefaultAndIsReplacedWhenResolving() throws {
        let suite = try open()
        let diagnostics = DiagnosticsRecorder(directory)
        try suite.set("sepia", forKey: "appearance.theme")
        #expect(suite.value(for: .theme) == .light)
        #expect(diagnostics.kinds.isEmpty, "a read alone changes nothing and reports nothing")
        #expect(try suite.valueStoringDefault(for: .theme) == .light)
        #expect(suite.string(forKey: "appearance.theme") == "light")
        #expect(diagnostics.kinds == [.invalidStoredValue])
    }

    @Test func resolvingStoresTheDefaultOnlyWhenNothingIsStored() throws {
        let suite = try open()
        #expect(try suite.valueStoringDefault(for: .showsTips) == true)
        #expect(suite.bool(forKey: "tips.shown") == true)
        try suite.set(false, for: .showsTips)
        #expect(try suite.valueStoringDefault(for: .showsTips) == false)
    }

    @Test(.onThreadsOfItsOwn) func valuesGiveTheCurrentValueThenChangesOnce() async throws {
        let suite = try open()
        var values = try suite.values(for: .theme).makeAsyncIterator()
        #expect(try await values.next() == .light, "the default, as nothing is stored")
        #expect(suite.storedValue(forKey: "appearance.theme") == nil)
        try suite.set(.dark, for: .theme)
        try suite.set(.dark, for: .theme)
        try suite.set("sepia", forKey: "appearance.theme")
        try suite.set(.light, for: .theme)
        try suite.set(.dark, for: .theme)
        // dark, then light (for sepia, invalid), then light again (not repeated), then dark.
        #expect(try await values.next() == .dark)
        #expect(try await values.next() == .light)
        #expect(try await values.next() == .dark)
    }
}
