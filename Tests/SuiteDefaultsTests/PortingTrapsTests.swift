import Foundation
import Testing
import TestSupport
@testable import SuiteDefaults

extension SuiteKey where Value == String? {
    static let nickname = SuiteKey("user.nickname")
}

extension SuiteKey where Value == Bool? {
    static let consented = SuiteKey("privacy.consented")
}

extension SuiteKey where Value == Theme? {
    static let chosenTheme = SuiteKey("appearance.chosen")
}

extension SuiteKey where Value == Layout? {
    static let savedLayout = SuiteKey(codable: "layout.saved")
}

/// What a user porting `UserDefaults` code trips over, each fixed in the core API.
@Suite("Porting traps")
struct PortingTrapsTests {
    let directory = TemporaryDirectory()

    func open(_ name: String = "ported") throws -> Suite {
        try Suite(named: name, directory: directory.url)
    }

    @Test func defaultsRegisteredOnAThrowawayInstanceLastForTheProcess() throws {
        try open().register(defaults: ["launches": 0, "greeting": "hello"])
        // No instance of the suite is left; a new one still reads the defaults.
        let later = try open()
        #expect(later.integer(forKey: "launches") == 0)
        #expect(later.string(forKey: "greeting") == "hello")
        #expect(later.dictionaryRepresentation()["greeting"] == "hello")
        // Per suite: another suite in the directory has none.
        #expect(try open("other").string(forKey: "greeting") == nil)
        // In this process only: another process reads nothing stored.
        let worker = try startWorker("get", in: directory, suite: "ported", ["key": "greeting"])
        worker.expectLine(startingWith: "absent")
        worker.expectSuccess()
    }

    @Test func anOptionalKeyIsNilWhenAbsentAndSettingNilRemoves() throws {
        let suite = try open()
        #expect(suite.value(for: .nickname) == nil)
        try suite.set("Ace", for: .nickname)
        #expect(suite.value(for: .nickname) == "Ace")
        try suite.set(nil, for: .nickname)
        #expect(suite.storedValue(forKey: "user.nickname") == nil, "nil removes the value")
        #expect(suite.value(for: .nickname) == nil)

        try suite.set(false, forKey: "privacy.consented")
        #expect(suite.value(for: .consented) == false, "a stored false is false, not absent")
        try suite.set(.dark, for: .chosenTheme)
        #expect(suite.value(for: .chosenTheme) == .dark)
        try suite.set("purple", forKey: "appearance.chosen")
        #expect(suite.value(for: .chosenTheme) == nil, "an invalid raw value reads as absent")

        try suite.set(Layout(columns: 3, ratio: 1.5), for: .savedLayout)
        #expect(suite.value(for: .savedLayout) == Layout(columns: 3, ratio: 1.5))
        try suite.set(nil, for: .savedLayout)
        #expect(suite.storedValue(forKey: "layout.saved") == nil, "no JSON null is stored")
    }

    @Test func aKeyReadsTheStoredValueThenTheRegisteredDefaultThenItsOwn() throws {
        let suite = try open()
        #expect(suite.value(for: .theme) == .light, "the key's own default")
        suite.register(defaults: ["appearance.theme": "dark"])
        #expect(suite.value(for: .theme) == .dark, "the registered default comes before the key's")
        try suite.set(Theme.light, for: .theme)
        #expect(suite.value(for: .theme) == .light, "the stored value comes first")
        try suite.removeValue(for: .theme)
        suite.register(defaults: ["tips.shown": "not a Boolean"])
        #expect(suite.value(for: .showsTips) == true, "a registered default of the wrong type is passed over")
        // The first-access default stored is the registered one.
        #expect(try suite.valueStoringDefault(for: .theme) == .dark)
        #expect(suite.string(forKey: "appearance.theme") == "dark")
    }

    @Test func jsonStoredAsDataReadsAsCodable() throws {
        let suite = try open()
        let encoded = try JSONEncoder().encode(Layout(columns: 4, ratio: 0.25))
        try suite.set(encoded, forKey: "layout")
        #expect(suite.value(for: .layout) == Layout(columns: 4, ratio: 0.25), "as UserDefaults code stores Codable values")
        #expect(try suite.decodable(Layout.self, forKey: "layout") == Layout(columns: 4, ratio: 0.25))
        try suite.set(Data("not json".utf8), forKey: "layout")
        #expect(suite.value(for: .layout) == Layout(columns: 2, ratio: 1), "data that is not the JSON reads as absent")
        #expect(throws: SuiteError.self) { try suite.decodable(Layout.self, forKey: "layout") }
    }

    @Test func urlsFloatsAndStringArrays() throws {
        let suite = try open()
        let web = try #require(URL(string: "https://example.com/a%20b?q=1#top"))
        try suite.set(web, forKey: "web")
        #expect(suite.url(forKey: "web") == web)
        #expect(suite.string(forKey: "web") == "https://example.com/a%20b?q=1#top", "stored as readable text")
        let file = URL(fileURLWithPath: "/tmp/a b")
        try suite.set(file, forKey: "file")
        #expect(suite.string(forKey: "file") == "/tmp/a b", "a file URL as its path, as Foundation stores it")
        #expect(suite.url(forKey: "file") == file)
        try suite.set("~/notes", forKey: "home")
        #expect(suite.url(forKey: "home")?.path == FileManager.default.homeDirectoryForCurrentUser.path + "/notes")
        try suite.set("", forKey: "empty")
        #expect(suite.url(forKey: "empty") == nil)
        try suite.set(42, forKey: "number")
        #expect(suite.url(forKey: "number") == nil)

        try suite.set(0.25, forKey: "ratio")
        #expect(suite.float(forKey: "ratio") == 0.25)
        try suite.set(["a", "b"], forKey: "tags")
        #expect(suite.stringArray(forKey: "tags") == ["a", "b"])
        try suite.set([SuiteValue.string("a"), .integer(1)], forKey: "mixed")
        #expect(suite.stringArray(forKey: "mixed") == nil, "an array holding anything but strings")
    }
}

extension PortingTrapsTests {
    @Test(.onThreadsOfItsOwn, .timeLimit(.minutes(1))) func theValuesOfAnOptionalKeyStoringDefaultsIncludeNil() async throws {
        let suite = try open("optional-values")
        var values = try suite.values(for: .nickname, storingDefault: true).makeAsyncIterator()
        #expect(try await values.next() == .some(nil), "absent: nil first")
        try suite.set("bob", for: .nickname)
        #expect(try await values.next() == .some("bob"))
        try suite.set(nil, for: .nickname)
        #expect(try await values.next() == .some(nil), "removed: nil again")
    }
}

extension PortingTrapsTests {
    @Test func aFirstAccessDefaultMayReadTheSuite() throws {
        let suite = try open("reads-itself")
        try suite.set(41, forKey: "other")
        #expect(try suite.setIfAbsent((suite.integer(forKey: "other") ?? 0) + 1, forKey: "k") == 42)
        #expect(try suite.setIfAbsent((suite.integer(forKey: "k") ?? 0) + 1, forKey: "k") == 42, "not replaced")
        let derived = SuiteKey("derived", default: (suite.integer(forKey: "other") ?? 0) * 2)
        #expect(try suite.valueStoringDefault(for: derived) == 82)
        #expect(suite.integer(forKey: "derived") == 82)
    }
}
