import Foundation
import Glibc
import Testing
import TestSupport
@_spi(Tools) @testable import SuiteDefaults

/// A Codable value with a Decimal, as an app caches a price.
struct PriceQuote: Codable, Equatable {
    var value: Decimal
    var currency: String
    var timestamp: Date
}

enum UnitChoice: String {
    case metric, imperial
}

@Suite("Storing and reading values")
struct SuiteBasicsTests {
    let directory = TemporaryDirectory()

    func open(_ name: String = "group.com.example.fitness", options: Suite.Options = .init()) throws -> Suite {
        try Suite(named: name, directory: directory.url, options: options)
    }

    @Test func storesEveryType() throws {
        let suite = try open()
        let date = Date(timeIntervalSinceReferenceDate: 786_000_123.456_789)
        try suite.set("imperial", forKey: "units.system")
        try suite.set(42, forKey: "count")
        try suite.set(-0.1, forKey: "offset")
        try suite.set(true, forKey: "enabled")
        try suite.set(Data([0, 1, 2, 255]), forKey: "blob")
        try suite.set(date, forKey: "last")
        try suite.set([1, 2, 3], forKey: "list")
        try suite.set(["a": "x", "b": "y"], forKey: "map")
        try suite.set(["nested": ["deep": [1.5, 2.5]]] as SuiteValue, forKey: "tree")

        #expect(suite.string(forKey: "units.system") == "imperial")
        #expect(suite.integer(forKey: "count") == 42)
        #expect(suite.double(forKey: "offset") == -0.1)
        #expect(suite.bool(forKey: "enabled") == true)
        #expect(suite.data(forKey: "blob") == Data([0, 1, 2, 255]))
        #expect(suite.date(forKey: "last") == date)
        #expect(suite.value([Int].self, forKey: "list") == [1, 2, 3])
        #expect(suite.value([String: String].self, forKey: "map") == ["a": "x", "b": "y"])
        #expect(suite.dictionary(forKey: "tree") == ["nested": ["deep": [1.5, 2.5]]])
        #expect(suite.array(forKey: "list") == [1, 2, 3])
        #expect(suite.string(forKey: "missing") == nil)
        #expect(suite.integer(forKey: "units.system") == nil, "a string is not an integer")
    }

    @Test func valuesSurviveReopeningInAnotherStore() throws {
        let date = Date(timeIntervalSinceReferenceDate: 1.25)
        do {
            let suite = try open()
            try suite.set("imperial", forKey: "units.system")
            try suite.set(Int.min, forKey: "min")
            try suite.set(date, forKey: "date")
            try suite.set(Data(), forKey: "empty")
        }
        // Every instance was released, so this opens the files afresh.
        let reopened = try open()
        #expect(reopened.string(forKey: "units.system") == "imperial")
        #expect(reopened.integer(forKey: "min") == Int.min)
        #expect(reopened.date(forKey: "date") == date)
        #expect(reopened.data(forKey: "empty") == Data())
    }

    @Test func numbersConvertOnlyWhenExact() throws {
        let suite = try open()
        try suite.set(3.0, forKey: "whole")
        try suite.set(3.5, forKey: "fraction")
        try suite.set(7, forKey: "int")
        #expect(suite.integer(forKey: "whole") == 3)
        #expect(suite.integer(forKey: "fraction") == nil)
        #expect(suite.double(forKey: "int") == 7.0)
        #expect(suite.value(Int32.self, forKey: "int") == 7)
        #expect(suite.value(Float.self, forKey: "fraction") == 3.5)
    }

    @Test func removesValues() throws {
        let suite = try open()
        try suite.set(1, forKey: "a")
        try suite.set(2, forKey: "b")
        try suite.removeValue(forKey: "a")
        #expect(suite.integer(forKey: "a") == nil)
        #expect(suite.storedValues() == ["b": 2])
        try suite.removeValue(forKey: "never-set")
        try suite.removeAll()
        #expect(suite.storedValues().isEmpty)
        try suite.set(3, forKey: "c")
        #expect(suite.storedValues() == ["c": 3])
    }

    @Test func registeredDefaultsFillInWithoutBeingStored() throws {
        let suite = try open()
        suite.register(defaults: ["units.system": "metric", "count": 0])
        #expect(suite.string(forKey: "units.system") == "metric")
        #expect(suite.storedValue(forKey: "units.system") == nil)
        try suite.set("imperial", forKey: "units.system")
        #expect(suite.string(forKey: "units.system") == "imperial")
        #expect(suite.dictionaryRepresentation() == ["units.system": "imperial", "count": 0])
        #expect(suite.storedValues() == ["units.system": "imperial"])
        // Another instance of the same suite in this process sees the same registration.
        #expect(try open().integer(forKey: "count") == 0)
    }

    @Test func rawRepresentableValuesStoreTheirRawValue() throws {
        let suite = try open()
        try suite.set(UnitChoice.imperial, forKey: "units.system")
        #expect(suite.string(forKey: "units.system") == "imperial")
        #expect(suite.value(UnitChoice.self, forKey: "units.system") == .imperial)
        try suite.set("furlongs", forKey: "units.system")
        #expect(suite.value(UnitChoice.self, forKey: "units.system") == nil, "an unknown raw value reads as absent")
    }

    @Test func codableValuesKeepDecimalsExact() throws {
        let suite = try open()
        let quote = PriceQuote(value: Decimal(string: "68901.23")!, currency: "USD",
                               timestamp: Date(timeIntervalSinceReferenceDate: 786_000_000.5))
        try suite.set(encodable: quote, forKey: "price.last")
        let read = try suite.decodable(PriceQuote.self, forKey: "price.last")
        #expect(read == quote)
        #expect(read.map { "\($0.value)" } == "68901.23")
        #expect(try suite.decodable(PriceQuote.self, forKey: "absent") == nil)
        try suite.set("not json", forKey: "price.bad")
        #expect(throws: SuiteError.self) { try suite.decodable(PriceQuote.self, forKey: "price.bad") }
        try suite.set(encodable: ["other": 1], forKey: "price.other")
        let mismatch = #expect(throws: SuiteError.self) { try suite.decodable(PriceQuote.self, forKey: "price.other") }
        #expect(mismatch?.code == .typeMismatch)
    }

    @Test func setIfAbsentEvaluatesItsArgumentOnlyWhenAbsent() throws {
        let suite = try open()
        var evaluations = 0
        func detect() -> String {
            evaluations += 1
            return "metric"
        }
        #expect(try suite.setIfAbsent(detect(), forKey: "units.system") == "metric")
        #expect(evaluations == 1)
        try suite.set("imperial", forKey: "units.system")
        #expect(try suite.setIfAbsent(detect(), forKey: "units.system") == "imperial")
        #expect(evaluations == 1, "the argument must not be evaluated when a value is stored")
        #expect(try suite.setIfAbsent(UnitChoice.metric, forKey: "units.system") == .imperial)
        let mismatch = #expect(throws: SuiteError.self) { try suite.setIfAbsent(5, forKey: "units.system") }
        #expect(mismatch?.code == .typeMismatch)
        #expect(suite.string(forKey: "units.system") == "imperial")
    }

    @Test func compareAndSetReplacesOnlyTheExpectedValue() throws {
        let suite = try open()
        #expect(try suite.compareAndSet(expected: nil, new: "metric", forKey: "units.system"))
        #expect(try !suite.compareAndSet(expected: nil, new: "imperial", forKey: "units.system"))
        #expect(try !suite.compareAndSet(expected: "imperial", new: "metric", forKey: "units.system"))
        #expect(try suite.compareAndSet(expected: "metric", new: "imperial", forKey: "units.system"))
        #expect(suite.string(forKey: "units.system") == "imperial")
        #expect(try suite.compareAndSet(expected: "imperial", new: String?.none, forKey: "units.system"))
        #expect(suite.storedValue(forKey: "units.system") == nil)
        try suite.set(5, forKey: "n")
        #expect(try !suite.compareAndSet(expected: 5.0, new: 6.0, forKey: "n"), "an integer never equals a double")
    }

    @Test func transactionsCommitTogetherOrNotAtAll() throws {
        let suite = try open()
        try suite.set(10, forKey: "a")
        let result = try suite.update { tx -> Int in
            let a = tx.integer(forKey: "a") ?? 0
            try tx.set(a - 3, forKey: "a")
            try tx.set(3, forKey: "b")
            #expect(tx.integer(forKey: "a") == 7, "a transaction reads its own writes")
            return a
        }
        #expect(result == 10)
        #expect(suite.storedValues() == ["a": 7, "b": 3])

        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try suite.update { tx in
                try tx.set(0, forKey: "a")
                try tx.removeValue(forKey: "b")
                throw Abort()
            }
        }
        #expect(suite.storedValues() == ["a": 7, "b": 3], "a transaction that throws writes nothing")

        try suite.update { tx in
            try tx.removeAll()
            try tx.set(1, forKey: "c")
            #expect(tx.storedValue(forKey: "a") == nil)
        }
        #expect(suite.storedValues() == ["c": 1])
    }

    @Test func knowsWhenTheCallingThreadIsInsideAnUpdate() throws {
        let suite = try open()
        let sameSuite = try open()
        let other = try open("group.com.example.other")
        #expect(!suite.isInsideUpdateOnCurrentThread)
        try suite.update { _ in
            #expect(suite.isInsideUpdateOnCurrentThread)
            #expect(sameSuite.isInsideUpdateOnCurrentThread, "another instance of the same suite shares its lock")
            #expect(!other.isInsideUpdateOnCurrentThread)
            let done = DispatchSemaphore(value: 0)
            Thread {
                #expect(!suite.isInsideUpdateOnCurrentThread, "another thread is not inside it")
                done.signal()
            }.start()
            done.wait()
        }
        #expect(!suite.isInsideUpdateOnCurrentThread)
        struct Abort: Error {}
        _ = try? suite.update { _ in throw Abort() }
        #expect(!suite.isInsideUpdateOnCurrentThread, "a block that throws leaves the update too")
    }

    @Test func writesThatChangeNothingWriteNothing() throws {
        let suite = try open()
        try suite.set("x", forKey: "k")
        let before = directory.bytes(of: "group.com.example.fitness.suite")
        try suite.set("x", forKey: "k")
        try suite.removeValue(forKey: "absent")
        try suite.update { tx in try tx.set("x", forKey: "k") }
        #expect(directory.bytes(of: "group.com.example.fitness.suite") == before)
    }

    @Test func durableWritesAndFlush() throws {
        let suite = try open(options: .init(durability: .durable))
        try suite.set(1, forKey: "a")
        try suite.update(durability: .standard) { tx in try tx.set(2, forKey: "b") }
        try suite.flush()
        let standard = try open("plain")
        try standard.set(3, forKey: "c", durability: .durable)
        #expect(suite.storedValues() == ["a": 1, "b": 2])
        #expect(standard.integer(forKey: "c") == 3)
    }

    @Test func compactionKeepsTheStateAndShrinksTheFile() throws {
        let suite = try open(options: .init(compactionSlack: 4096))
        for round in 0..<400 { try suite.set(round, forKey: "counter.\(round % 10)") }
        let size = directory.bytes(of: "group.com.example.fitness.suite")?.count ?? 0
        #expect(size < 8192, "the journal was compacted as it grew (it is \(size) bytes)")
        let expected = Dictionary(uniqueKeysWithValues: (390..<400).map { ("counter.\($0 % 10)", SuiteValue.integer($0)) })
        #expect(suite.storedValues() == expected)
        try suite.compact()
        #expect(suite.storedValues() == expected)
        #expect(!directory.names().contains { $0.contains(".tmp.") }, "no temporary file is left behind")
    }

    @Test func listsAndFindsSuites() throws {
        _ = try open("one")
        #expect(!Suite.exists(named: "one", directory: directory.url), "a suite file appears with its first write")
        try open("one").set(1, forKey: "k")
        try open("two").set(2, forKey: "k")
        #expect(Suite.exists(named: "one", directory: directory.url))
        #expect(try Suite.names(in: directory.url) == ["one", "two"])
        #expect(!Suite.exists(named: "../one", directory: directory.url))
        let missing = #expect(throws: SuiteError.self) { try Suite.names(in: directory.file("nope")) }
        #expect(missing?.code == .notFound)
    }

    @Test func checkExistsSaysWhatStandsWhereNoSuiteFileIs() throws {
        #expect(try !Suite.checkExists(named: "one", directory: directory.url))
        #expect(try !Suite.checkExists(named: "one", directory: directory.file("no/such/place")))
        try open("one").set(1, forKey: "k")
        #expect(try Suite.checkExists(named: "one", directory: directory.url))

        #expect(symlink("one.suite", directory.file("link.suite").path) == 0)
        #expect(symlink(directory.path, directory.file("directory-link.suite").path) == 0)
        #expect(mkfifo(directory.file("fifo.suite").path, 0o600) == 0)
        #expect(mknod(directory.file("socket.suite").path, S_IFSOCK | 0o600, 0) == 0)
        #expect(mkdir(directory.file("directory.suite").path, 0o700) == 0)
        let names = directory.names()
        for (name, code) in [("link", SuiteError.Code.symbolicLink), ("directory-link", .symbolicLink),
                             ("fifo", .foreignFile), ("socket", .foreignFile), ("directory", .foreignFile)] {
            let error = #expect(throws: SuiteError.self, "\(name)") { try Suite.checkExists(named: name, directory: directory.url) }
            #expect(error?.code == code, "\(name)")
            #expect(error?.path == directory.file(name + ".suite").path)
            #expect(!Suite.exists(named: name, directory: directory.url))
        }
        #expect(directory.names() == names, "looking opens and creates nothing")
        let invalid = #expect(throws: SuiteError.self) { try Suite.checkExists(named: "../one", directory: directory.url) }
        #expect(invalid?.code == .invalidSuiteName)
    }

    @Test func parsedDataMustBeStrictBase64() throws {
        #expect(try SuiteValue(parsing: "AAEC/w==", as: .data) == .data(Data([0, 1, 2, 255])))
        #expect(try SuiteValue(parsing: "", as: .data) == .data(Data()))
        // Foundation alone decodes "====" to a zero byte and ignores a third "=".
        for text in ["====", "AAEC/w===", "A===", "AA==AA==", "AAEC/w", "deadbeef!", "abc", "AA EC/w==", "AAEC-_=="] {
            let error = #expect(throws: SuiteError.self, "\(text)") { try SuiteValue(parsing: text, as: .data) }
            #expect(error?.code == .invalidValue, "\(text)")
        }
        // Typed JSON's data reads the same way, so an import stores no more than --data.
        #expect(throws: SuiteError.self) { try SuiteValue(jsonText: #"{"$data": "===="}"#) }
    }

    @Test func defaultDirectoryFollowsTheEnvironment() {
        #expect(Suite.defaultDirectory(environment: ["SUITE_DEFAULTS_DIR": "/x/y", "XDG_CONFIG_HOME": "/c", "HOME": "/h"]).path == "/x/y")
        #expect(Suite.defaultDirectory(environment: ["XDG_CONFIG_HOME": "/c", "HOME": "/h"]).path == "/c/suite-defaults")
        #expect(Suite.defaultDirectory(environment: ["XDG_CONFIG_HOME": "relative", "HOME": "/h"]).path == "/h/.config/suite-defaults")
        #expect(Suite.defaultDirectory(environment: ["HOME": "/h"]).path == "/h/.config/suite-defaults")
    }

    @Test func manyThreadsShareOneSuite() async throws {
        let suite = try open()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for _ in 0..<250 {
                        try! suite.update { tx in try tx.set((tx.integer(forKey: "n") ?? 0) + 1, forKey: "n") }
                        _ = suite.integer(forKey: "n")
                        try! suite.set(task, forKey: "task.\(task)")
                    }
                }
            }
        }
        #expect(suite.integer(forKey: "n") == 2000)
    }
}
