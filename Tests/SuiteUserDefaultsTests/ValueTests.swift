import Foundation
import SuiteDefaults
import SuiteUserDefaults
import Testing

/// The cases of Foundation's own UserDefaults tests (TestUserDefaults.swift in
/// swift-corelibs-foundation), one type at a time: each value set is read back by
/// `object(forKey:)` and by its typed getter, from a second instance, as stored.
@Suite("SuiteUserDefaults: values of each type")
struct ValueTests {
    let fixture = Fixture()

    @Test func createsAndIsAUserDefaults() throws {
        let defaults: UserDefaults = try fixture.defaults()
        #expect(defaults is SuiteUserDefaults)
        #expect(SuiteUserDefaults(suiteName: "bad/name") == nil, "an invalid name gives nil, as a refused name does in Foundation")
        #expect(SuiteUserDefaults(suiteName: "..") == nil)
    }

    @Test func strings() throws {
        let defaults = try fixture.defaults()
        defaults.set("hello", forKey: "s")
        defaults.set("café" as NSString, forKey: "ns")
        let other = try fixture.defaults()
        #expect(other.string(forKey: "s") == "hello")
        #expect(other.object(forKey: "s") as? String == "hello")
        #expect(other.string(forKey: "ns") == "café")
        #expect(try fixture.suite().storedValue(forKey: "s") == .string("hello"))
    }

    @Test func integersOfEveryWidth() throws {
        let defaults = try fixture.defaults()
        defaults.set(42, forKey: "int")
        defaults.set(Int8(-8) as Any, forKey: "int8")
        defaults.set(UInt32.max as Any, forKey: "uint32")
        defaults.set(Int64.min as Any, forKey: "int64")
        defaults.set(UInt64(7) as Any, forKey: "uint64")
        defaults.set(NSNumber(value: 5), forKey: "nsnumber")
        let suite = try fixture.suite()
        #expect(suite.storedValue(forKey: "int") == .integer(42))
        #expect(suite.storedValue(forKey: "int8") == .integer(-8))
        #expect(suite.storedValue(forKey: "uint32") == .integer(Int(UInt32.max)))
        #expect(suite.storedValue(forKey: "int64") == .integer(Int(Int64.min)))
        #expect(suite.storedValue(forKey: "uint64") == .integer(7))
        #expect(suite.storedValue(forKey: "nsnumber") == .integer(5))
        #expect(defaults.integer(forKey: "int") == 42)
        #expect(defaults.object(forKey: "int") as? Int == 42)
    }

    @Test func doublesAndFloats() throws {
        let defaults = try fixture.defaults()
        defaults.set(3.25, forKey: "double")
        defaults.set(Float(0.5), forKey: "float")
        defaults.set(NSNumber(value: 2.5), forKey: "nsdouble")
        defaults.set(CGFloat(1.5) as Any, forKey: "cgfloat")
        defaults.set(Decimal(string: "1.25")! as Any, forKey: "decimal")
        let suite = try fixture.suite()
        #expect(suite.storedValue(forKey: "double") == .double(3.25))
        #expect(suite.storedValue(forKey: "float") == .double(0.5))
        #expect(suite.storedValue(forKey: "nsdouble") == .double(2.5))
        #expect(suite.storedValue(forKey: "cgfloat") == .double(1.5))
        #expect(suite.storedValue(forKey: "decimal") == .double(1.25))
        #expect(defaults.double(forKey: "double") == 3.25)
        #expect(defaults.float(forKey: "float") == 0.5)
        #expect(defaults.object(forKey: "double") as? Double == 3.25)
    }

    /// On Linux `NSNumber(value: true)` is an `__NSCFBoolean` and `NSNumber(value: 1)`
    /// a plain `NSNumber`, though both cast `as? Bool`: booleans stay booleans, and
    /// integers integers.
    @Test func booleansStayBooleans() throws {
        let defaults = try fixture.defaults()
        defaults.set(true, forKey: "bool")
        defaults.set(NSNumber(value: false), forKey: "nsbool")
        defaults.set(true as Any, forKey: "any")
        defaults.set(NSNumber(value: 1), forKey: "one")
        defaults.set(NSNumber(value: Int8(1)), forKey: "int8one")
        let suite = try fixture.suite()
        #expect(suite.storedValue(forKey: "bool") == .bool(true))
        #expect(suite.storedValue(forKey: "nsbool") == .bool(false))
        #expect(suite.storedValue(forKey: "any") == .bool(true))
        #expect(suite.storedValue(forKey: "one") == .integer(1))
        #expect(suite.storedValue(forKey: "int8one") == .integer(1))
        #expect(defaults.bool(forKey: "bool"))
        #expect(defaults.object(forKey: "bool") as? Bool == true)
        #expect(defaults.object(forKey: "one") is Int)
    }

    @Test func dataAndDates() throws {
        let defaults = try fixture.defaults()
        let bytes = Data([0, 1, 2, 255])
        let date = Date(timeIntervalSinceReferenceDate: 754_000_000.123_456)
        defaults.set(bytes, forKey: "data")
        defaults.set(NSData(data: bytes), forKey: "nsdata")
        defaults.set(date, forKey: "date")
        defaults.set(NSDate(timeIntervalSinceReferenceDate: 1), forKey: "nsdate")
        let other = try fixture.defaults()
        #expect(other.data(forKey: "data") == bytes)
        #expect(other.data(forKey: "nsdata") == bytes)
        #expect(other.object(forKey: "date") as? Date == date, "exactly")
        #expect(try fixture.suite().storedValue(forKey: "nsdate") == .date(Date(timeIntervalSinceReferenceDate: 1)))
        #expect(other.data(forKey: "date") == nil)
    }

    @Test func arraysAndDictionaries() throws {
        let defaults = try fixture.defaults()
        defaults.set(["a", 1, true, 2.5, ["nested": [1, 2]]] as [Any], forKey: "array")
        defaults.set(["name": "run", "meters": 5000.0, "tags": ["a", "b"]] as [String: Any], forKey: "dictionary")
        defaults.set(["x", "y"], forKey: "strings")
        defaults.set(NSArray(array: ["p", "q"]), forKey: "nsarray")
        defaults.set(NSDictionary(dictionary: ["k": 1]), forKey: "nsdictionary")
        let other = try fixture.defaults()
        let array = try #require(other.array(forKey: "array"))
        #expect(array.count == 5)
        #expect(array[0] as? String == "a" && array[1] as? Int == 1 && array[2] as? Bool == true && array[3] as? Double == 2.5)
        #expect((array[4] as? [String: Any])?["nested"] as? [Int] == [1, 2])
        let dictionary = try #require(other.dictionary(forKey: "dictionary"))
        #expect(dictionary["name"] as? String == "run" && dictionary["meters"] as? Double == 5000 && dictionary["tags"] as? [String] == ["a", "b"])
        #expect(other.stringArray(forKey: "strings") == ["x", "y"])
        #expect(other.stringArray(forKey: "array") == nil, "not only strings")
        #expect(other.stringArray(forKey: "nsarray") == ["p", "q"])
        #expect(other.dictionary(forKey: "nsdictionary")?["k"] as? Int == 1)
        #expect(other.array(forKey: "dictionary") == nil && other.dictionary(forKey: "array") == nil)
    }

    /// Foundation on Linux stores `url.path` (losing "https://host"), and its
    /// `url(forKey:)` traps on data that is not a keyed archive: neither happens here.
    @Test func urls() throws {
        let defaults = try fixture.defaults()
        let web = URL(string: "https://example.com/a?b=1")!
        defaults.set(web, forKey: "web")
        defaults.set(URL(fileURLWithPath: "/tmp/file name"), forKey: "file")
        defaults.set(NSURL(string: "ftp://host/x")! as Any, forKey: "nsurl")
        defaults.set("~/Documents", forKey: "tilde")
        defaults.set(Data("not an archive".utf8), forKey: "data")
        let suite = try fixture.suite()
        #expect(suite.storedValue(forKey: "web") == .string("https://example.com/a?b=1"))
        #expect(suite.storedValue(forKey: "file") == .string("/tmp/file name"))
        #expect(defaults.url(forKey: "web") == web)
        #expect(defaults.url(forKey: "file") == URL(fileURLWithPath: "/tmp/file name"))
        #expect(defaults.url(forKey: "nsurl") == URL(string: "ftp://host/x"))
        #expect(defaults.url(forKey: "tilde")?.path == FileManager.default.homeDirectoryForCurrentUser.path + "/Documents")
        #expect(defaults.url(forKey: "data") == nil, "data is never unarchived")
        #expect(defaults.url(forKey: "absent") == nil)
        defaults.set(nil as URL?, forKey: "web")
        #expect(defaults.object(forKey: "web") == nil)
        #expect(suite.url(forKey: "file") == URL(fileURLWithPath: "/tmp/file name"), "the typed API reads the same")
    }

    /// Values another process wrote through the typed `Suite` API.
    @Test func valuesWrittenThroughTheTypedAPI() throws {
        struct Run: Codable, Equatable { var meters: Double; var name: String }
        let suite = try fixture.suite()
        try suite.set(encodable: Run(meters: 5000, name: "run"), forKey: "json")
        try suite.set(Date(timeIntervalSinceReferenceDate: 10), forKey: "date")
        try suite.set(["a": [1, 2]] as [String: [Int]], forKey: "dict")
        try suite.set(Int64(9), forKey: "int64")
        let defaults = try fixture.defaults()
        let json = try #require(defaults.data(forKey: "json"), "JSON reads as its text, as Data")
        #expect(try JSONDecoder().decode(Run.self, from: json) == Run(meters: 5000, name: "run"))
        #expect(defaults.object(forKey: "date") as? Date == Date(timeIntervalSinceReferenceDate: 10))
        #expect((defaults.dictionary(forKey: "dict")?["a"] as? [Int]) == [1, 2])
        #expect(defaults.integer(forKey: "int64") == 9)
    }

    @Test func theMappingAsAFunction() throws {
        #expect(try PropertyListBridge.suiteValue(from: ["k": [true, 1, "s"]] as [String: Any]) == .dictionary(["k": [true, 1, "s"]]))
        #expect(PropertyListBridge.object(from: .json(Data("{}".utf8))) as? Data == Data("{}".utf8))
        #expect(try PropertyListBridge.suiteValue(from: SuiteValue.integer(3)) == .integer(3))
    }
}
