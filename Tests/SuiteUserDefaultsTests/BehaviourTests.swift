import Foundation
import SuiteDefaults
import SuiteUserDefaults
import Testing

/// The behaviours around the values: coercions, registered defaults, the whole
/// dictionary, removal, refusals.
@Suite("SuiteUserDefaults: coercions, registration, removal, refusals")
struct BehaviourTests {
    let fixture = Fixture()

    @Test func integerCoercions() throws {
        let defaults = try fixture.defaults()
        let values: [String: Any] = ["s42": "42", "s42abc": "42abc", "s37": "3.7", "abc": "abc", "d37": 3.7, "dneg": -3.7,
                                     "t": true, "f": false, "huge": 1e300, "data": Data([1])]
        for (key, value) in values { defaults.set(value, forKey: key) }
        #expect(defaults.integer(forKey: "s42") == 42)
        #expect(defaults.integer(forKey: "s42abc") == 42)
        #expect(defaults.integer(forKey: "s37") == 3)
        #expect(defaults.integer(forKey: "abc") == 0)
        #expect(defaults.integer(forKey: "d37") == 3)
        #expect(defaults.integer(forKey: "dneg") == -3)
        #expect(defaults.integer(forKey: "t") == 1 && defaults.integer(forKey: "f") == 0)
        #expect(defaults.integer(forKey: "huge") == 0)
        #expect(defaults.integer(forKey: "data") == 0)
        #expect(defaults.integer(forKey: "absent") == 0)
    }

    @Test func doubleAndFloatCoercions() throws {
        let defaults = try fixture.defaults()
        defaults.set("2.5", forKey: "s")
        defaults.set(7, forKey: "i")
        defaults.set(true, forKey: "b")
        defaults.set("x", forKey: "x")
        #expect(defaults.double(forKey: "s") == 2.5 && defaults.float(forKey: "s") == 2.5)
        #expect(defaults.double(forKey: "i") == 7 && defaults.float(forKey: "i") == 7)
        #expect(defaults.double(forKey: "b") == 1)
        #expect(defaults.double(forKey: "x") == 0 && defaults.double(forKey: "absent") == 0)
    }

    @Test func boolCoercions() throws {
        let defaults = try fixture.defaults()
        let cases: [(Any, Bool)] = [("YES", true), ("yes", true), ("true", true), ("TRUE", true), ("1", true), ("2", true),
                                    ("NO", false), ("no", false), ("false", false), ("0", false), ("", false), ("abc", false),
                                    (1, true), (0, false), (-1, true), (0.5, true), (0.0, false), (true, true), (false, false)]
        for (index, (value, expected)) in cases.enumerated() {
            defaults.set(value, forKey: "k\(index)")
            #expect(defaults.bool(forKey: "k\(index)") == expected, "\(value)")
        }
        #expect(defaults.bool(forKey: "absent") == false)
    }

    @Test func stringCoercions() throws {
        let defaults = try fixture.defaults()
        defaults.set(42, forKey: "i")
        defaults.set(3.5, forKey: "d")
        defaults.set(true, forKey: "b")
        defaults.set(Data([1]), forKey: "data")
        #expect(defaults.string(forKey: "i") == "42")
        #expect(defaults.string(forKey: "d") == "3.5")
        #expect(defaults.string(forKey: "b") == "1")
        #expect(defaults.string(forKey: "data") == nil)
        #expect(defaults.object(forKey: "i") as? String == nil, "object(forKey:) does not convert")
    }

    /// Stored beats registered; removing the stored value shows the registered one;
    /// the registration serves every instance of the suite, not other suites, and is
    /// never stored.
    @Test func registeredDefaultsAndTheirPrecedence() throws {
        let defaults = try fixture.defaults()
        defaults.register(defaults: ["units": "metric", "count": 3, "flag": true, "list": ["a"], "when": Date(timeIntervalSince1970: 0)])
        #expect(defaults.string(forKey: "units") == "metric")
        #expect(defaults.integer(forKey: "count") == 3)
        #expect(defaults.bool(forKey: "flag"))
        #expect(defaults.stringArray(forKey: "list") == ["a"])
        #expect(defaults.object(forKey: "when") as? Date == Date(timeIntervalSince1970: 0))
        #expect(try fixture.defaults().string(forKey: "units") == "metric", "another instance of the suite sees it")
        #expect(try fixture.suite().storedValue(forKey: "units") == nil, "never stored")

        defaults.set("imperial", forKey: "units")
        #expect(defaults.string(forKey: "units") == "imperial")
        defaults.removeObject(forKey: "units")
        #expect(defaults.string(forKey: "units") == "metric")

        defaults.register(defaults: ["count": 4])
        #expect(defaults.integer(forKey: "count") == 4, "a later registration replaces the earlier")

        let elsewhere = SuiteUserDefaults(suite: try Suite(named: "other.suite", directory: fixture.directory.url))
        #expect(elsewhere.object(forKey: "count") == nil, "registrations are per suite")
    }

    @Test func dictionaryRepresentationIsRegisteredThenStored() throws {
        let defaults = try fixture.defaults()
        defaults.register(defaults: ["a": 1, "b": 2])
        defaults.set(20, forKey: "b")
        defaults.set("x", forKey: "c")
        let all = defaults.dictionaryRepresentation()
        #expect(Set(all.keys) == ["a", "b", "c"])
        #expect(all["a"] as? Int == 1 && all["b"] as? Int == 20 && all["c"] as? String == "x")
        #expect(Set(defaults.persistentDomain(forName: fixture.name)?.keys ?? [:].keys) == ["b", "c"], "stored values only")
    }

    @Test func removal() throws {
        let defaults = try fixture.defaults()
        defaults.set("x", forKey: "k")
        defaults.removeObject(forKey: "k")
        #expect(defaults.object(forKey: "k") == nil)
        defaults.set("y", forKey: "k")
        defaults.set(nil, forKey: "k")
        #expect(try fixture.suite().storedValue(forKey: "k") == nil)
        defaults.removeObject(forKey: "never.there")
        #expect(fixture.reportedFailures.isEmpty)
    }

    @Test func persistentDomainsOfTheSuite() throws {
        let defaults = try fixture.defaults()
        defaults.set(1, forKey: "old")
        defaults.setPersistentDomain(["new": "value", "n": 2], forName: fixture.name)
        #expect(try fixture.suite().storedValues() == ["new": "value", "n": 2], "replaced in one commit")
        defaults.setPersistentDomain(["bad": NSNull()], forName: fixture.name)
        #expect(try fixture.suite().storedValues() == ["new": "value", "n": 2], "a refused value replaces nothing")
        // Two spellings of one key (one normal form, which Swift's `==` tells apart after
        // U+0F73): refused, not one of them kept at random.
        let spellings = ["a\u{F73}\u{F73}", "a\u{F71}\u{F71}\u{F72}\u{F72}"]
        #expect(spellings[0] != spellings[1])
        defaults.setPersistentDomain([spellings[0]: 1, spellings[1]: 2], forName: fixture.name)
        #expect(try fixture.suite().storedValues() == ["new": "value", "n": 2], "a key spelled twice replaces nothing")
        #expect(fixture.reportedFailures.last?.code == .invalidValue, "\(fixture.reportedFailures)")
        defaults.removePersistentDomain(forName: fixture.name)
        #expect(try fixture.suite().storedValues().isEmpty)
    }

    @Test func synchronizeReturnsTrue() throws {
        #expect(try fixture.defaults().synchronize())
    }

    /// Foundation traps on each of these; here each stores nothing and reports a
    /// typed error, and what was stored stays.
    @Test func unsupportedValuesAreRefusedWithoutCrashing() throws {
        final class Custom {}
        enum Choice: String { case a }
        let defaults = try fixture.defaults()
        defaults.set("kept", forKey: "k")
        let refused: [Any] = [Custom(), NSNull(), [1: "one"] as [Int: String], UInt64.max, Double.nan, Float.infinity,
                              ["ok", NSNull()] as [Any], ["nested": ["deep": Custom()]] as [String: Any], Choice.a,
                              Set([1]), Substring("s"), Optional<Int>.none as Any, NSNumber(value: UInt64.max)]
        for value in refused { defaults.set(value, forKey: "k") }
        #expect(defaults.string(forKey: "k") == "kept")
        let failures = fixture.reportedFailures
        #expect(failures.count == refused.count)
        #expect(failures.allSatisfy { $0.code == .invalidValue && $0.key == "k" && $0.suite == fixture.name }, "\(failures)")
        #expect(failures[0].message.contains("Custom"))
        #expect(failures[1].message.contains("NSNull"))
        #expect(failures[2].message.contains("keys must be strings"))
        #expect(failures[3].message.contains("larger than Int.max"))

        #expect(throws: SuiteError.self) { try defaults.checkedSet(NSNull(), forKey: "k") }
        #expect(throws: SuiteError.self) { try defaults.checkedSet("x", forKey: "") }
        defaults.register(defaults: ["good": 1, "bad": Custom()])
        #expect(defaults.integer(forKey: "good") == 1 && defaults.object(forKey: "bad") == nil)
    }

    @Test func setIfAbsentStoresOnlyOnce() throws {
        enum Units: String { case metric, imperial }
        let defaults = try fixture.defaults()
        #expect(defaults.setIfAbsent("first", forKey: "any") as? String == "first")
        #expect(defaults.setIfAbsent("second", forKey: "any") as? String == "first")
        #expect(defaults.setIfAbsent(Units.imperial, forKey: "units") == .imperial)
        #expect(defaults.setIfAbsent(Units.metric, forKey: "units") == .imperial)
        defaults.set("furlongs", forKey: "units")
        #expect(defaults.setIfAbsent(Units.metric, forKey: "units") == .metric, "no valid value is stored: replaced")
        #expect(defaults.string(forKey: "units") == "metric")
        var evaluated = false
        defaults.setIfAbsent({ evaluated = true; return "x" }(), forKey: "any")
        #expect(!evaluated, "the value is evaluated only when absent")
        #expect(defaults.setIfAbsent(NSNull(), forKey: "refused") == nil)
        #expect(defaults.object(forKey: "refused") == nil)
    }
}

/// What a hostile tester found: values and callers that must neither crash nor hang.
@Suite("SuiteUserDefaults: hostile values and callers")
struct HostileValueTests {
    let fixture = Fixture()

    @Test func aValueNestedThousandsDeepIsRefusedNotACrash() throws {
        let defaults = try fixture.defaults()
        var value: Any = 1
        for _ in 0..<5_000 { value = [value] }
        #expect(throws: SuiteError.self) { try defaults.checkedSet(value, forKey: "deep") }
        var refusedLeaf: Any = NSNull()
        for _ in 0..<2_000 { refusedLeaf = [refusedLeaf] }
        #expect(throws: SuiteError.self) { try defaults.checkedSet(refusedLeaf, forKey: "deep") }
        #expect(defaults.object(forKey: "deep") == nil)
        var allowed: Any = 1
        for _ in 0..<SuiteValue.maximumNestingDepth - 1 { allowed = [allowed] }
        try defaults.checkedSet(allowed, forKey: "deep")
        #expect(defaults.object(forKey: "deep") != nil, "nesting within the limit is stored")
    }

    @Test func setIfAbsentMayComputeItsValueFromTheSameDefaults() throws {
        let defaults = try fixture.defaults()
        defaults.set(41, forKey: "other")
        let stored = defaults.setIfAbsent(defaults.integer(forKey: "other") + 1, forKey: "k")
        #expect(stored as? Int == 42)
        #expect(defaults.integer(forKey: "k") == 42)
        #expect(defaults.setIfAbsent(defaults.integer(forKey: "k") + 1, forKey: "k") as? Int == 42, "not replaced")
    }

    @Test func aDefaultAWriteWouldRefuseIsNotRegistered() throws {
        let defaults = try fixture.defaults()
        defaults.register(defaults: ["nan": Double.nan, "": "empty key", "fine": 1])
        #expect(defaults.object(forKey: "nan") == nil)
        #expect(defaults.integer(forKey: "fine") == 1)
        #expect(defaults.suite.registeredDefault(forKey: "") == nil)
    }
}
