import Foundation
import Testing
import ToolSupport
import TestSupport
@_spi(Tools) @testable import SuiteDefaults

/// The bytes a value is stored as. "Identical" means these bytes: Swift's `==` calls
/// -0.0 and 0.0 equal, and canonically equivalent strings too.
func storedBytes(_ value: SuiteValue) throws -> [UInt8] {
    ByteWriter.bytes(count: try ValueEncoding.measure(value)) { ValueEncoding.encode(value, into: &$0) }
}

@Suite("Export and import give back every value bit for bit")
struct ExportRoundTripTests {
    let directory = TemporaryDirectory()

    /// Stores `values` in a fresh suite, exports it, imports the text into a second
    /// suite, and records an issue for every key whose stored bytes differ.
    @discardableResult
    func expectExactRoundTrip(_ values: [String: SuiteValue], label: String = "",
                              sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let name = "round-trip-\(UInt32.random(in: 0...UInt32.max))"
        let source = try Suite(named: name + ".source", directory: directory.url)
        try source.update { transaction in
            for (key, value) in values { try transaction.setValue(value, forKey: key) }
        }
        let exported = source.exportJSON()
        let copy = try Suite(named: name + ".copy", directory: directory.url)
        do {
            try copy.importJSON(exported)
        } catch {
            Issue.record("\(label) the export was refused: \(error)", sourceLocation: sourceLocation)
            return exported
        }
        let expected = source.storedValues()
        let imported = copy.storedValues()
        #expect(Set(imported.keys.map { Array($0.utf8) }) == Set(expected.keys.map { Array($0.utf8) }),
                "\(label) the keys differ", sourceLocation: sourceLocation)
        var reported = 0
        for (key, value) in expected.sorted(by: { $0.key < $1.key }) {
            let back = imported[key]
            guard try back.map(storedBytes) != storedBytes(value) else { continue }
            reported += 1
            if reported <= 5 {
                Issue.record("\(label) key \(key.debugDescription): stored \(value.debugText), read back \(back?.debugText ?? "nothing")",
                             sourceLocation: sourceLocation)
            }
        }
        if reported > 5 { Issue.record("\(label) \(reported) values differ in all", sourceLocation: sourceLocation) }
        return exported
    }

    /// A value refused by typed JSON reading, as `SuiteError` `.invalidValue`.
    func expectRefused(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let value = try SuiteValue(jsonText: text)
            Issue.record("\(text.prefix(80)) was read as \(value.debugText)", sourceLocation: sourceLocation)
        } catch let error as SuiteError {
            #expect(error.code == .invalidValue, sourceLocation: sourceLocation)
        } catch {
            Issue.record("\(text.prefix(80)) threw \(error), not a SuiteError", sourceLocation: sourceLocation)
        }
    }

    // MARK: Dates

    @Test func datesBeyondYear9999AndBeforeYear1RoundTrip() throws {
        let intervals: [Double] = [
            3.3e11, 1e12, 6.7e16, -6.4e10, -6.3145e10, -6.3e10, -1e12, -6.7e16,  // years > 9999, < 1, and 0
            1e17, -1e17, 1e300, -1e300, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
        ]
        try expectExactRoundTrip(Dictionary(uniqueKeysWithValues: intervals.enumerated().map {
            ("date \($0.offset)", .date(Date(timeIntervalSinceReferenceDate: $0.element)))
        }))
    }

    /// Years beyond four digits are written in ISO 8601's expanded form, in both directions.
    @Test(arguments: [
        ("+12345-01-01T00:00:00Z", 326_425_075_200.0), ("-0001-01-01T00:00:00Z", -63_177_062_400.0),
        ("0000-03-01T00:00:00Z", -63_140_342_400.0), ("9999-12-31T23:59:59.5Z", 252_423_993_599.5),
        ("+10000-01-01T00:00:00Z", 252_423_993_600.0),
    ])
    func expandedYearsAreReadAndWritten(_ text: String, _ interval: Double) throws {
        let value = try SuiteValue(jsonText: "{\"$date\": \"\(text)\"}")
        #expect(try storedBytes(value) == storedBytes(.date(Date(timeIntervalSinceReferenceDate: interval))))
        #expect(SuiteValue.date(Date(timeIntervalSinceReferenceDate: interval)).jsonText(style: .typed) == "{\"$date\":\"\(text)\"}")
    }

    @Test func subMicrosecondAndSignedZeroDatesRoundTrip() throws {
        let intervals: [Double] = [
            0.123_456_789_123_4, 1e-7, 1e-10, -1e-10, 0.5e-9, 786_000_123.456_789_1, -0.000_000_3,
            -0.0, 0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, 1e-300,
        ]
        try expectExactRoundTrip(Dictionary(uniqueKeysWithValues: intervals.enumerated().map {
            ("date \($0.offset)", .date(Date(timeIntervalSinceReferenceDate: $0.element)))
        }))
    }

    /// The tester's case: present-day dates, where the old text came back 1 ulp off about half the time.
    @Test func presentDayDatesRoundTripBitForBit() throws {
        var generator = SplitMix64(seed: 0xDA7E)
        var values: [String: SuiteValue] = [:]
        for index in 0..<1200 {
            let interval = Double.random(in: 600_000_000..<900_000_000, using: &generator)
            values["date \(index)"] = .date(Date(timeIntervalSinceReferenceDate: interval))
        }
        let exported = try expectExactRoundTrip(values)
        #expect(exported.components(separatedBy: "\"$date\": \"").count - 1 == 1200, "every one is written as ISO 8601 text")
    }

    @Test func aDateIsReadFromANumberOfSecondsSince2001() throws {
        let value = try SuiteValue(jsonText: "{\"$date\": -0.0}")
        #expect(try storedBytes(value) == storedBytes(.date(Date(timeIntervalSinceReferenceDate: -0.0))))
        #expect(SuiteValue.date(Date(timeIntervalSinceReferenceDate: -0.0)).jsonText(style: .typed) == "{\"$date\":-0.0}")
        #expect(try SuiteValue(jsonText: "{\"$date\": 1e-05}") == .date(Date(timeIntervalSinceReferenceDate: 1e-05)))
        #expect(try SuiteValue(jsonText: "{\"$date\": 5}") == .date(Date(timeIntervalSinceReferenceDate: 5)))
    }

    /// The text is one decimal, rounded once: before 2001 the fraction counts up from the second before.
    @Test(arguments: [
        ("2000-12-31T23:59:59.9Z", -0.1), ("2001-01-01T00:00:00.1000000000000000055511151231257827Z", 0.1),
        ("2001-01-01T01:00:00.5+01:00", 0.5), ("2000-12-31T23:59:59.99999999999999999999Z", -1e-20),
        ("2026-11-22T10:15:00.123456789123456789Z", 817_035_300.123_456_789_123_456_789),
    ])
    func isoTextIsReadAsOneCorrectlyRoundedDecimal(_ text: String, _ interval: Double) throws {
        let value = try SuiteValue(jsonText: "{\"$date\": \"\(text)\"}")
        #expect(try storedBytes(value) == storedBytes(.date(Date(timeIntervalSinceReferenceDate: interval))))
    }

    @Test(arguments: [
        "{\"$date\": 1e400}", "{\"$date\": \"2026-02-30T00:00:00Z\"}", "{\"$date\": \"-0000-01-01T00:00:00Z\"}",
        "{\"$date\": \"2026-01-01T00:00:00\"}", "{\"$date\": \"2026-01-01T00:00:00+24:00\"}", "{\"$date\": true}",
        "{\"$data\": 1}", "{\"$data\": \"!!\"}", "{\"$x\": 1}", "{\"$dictionary\": 1}", "{\"$jsontext\": 1}",
        "{\"$jsontext\": \"not json\"}", "{\"a\": 1, \"a\": 2}", "{\"\\u00e9\": 1, \"e\\u0301\": 2}",
        "{\"$dictionary\": {\"k\": 1, \"k\": 1}}",
    ])
    func malformedAndUnknownTagsAndRepeatedKeysAreRefused(_ text: String) {
        expectRefused(text)
    }

    // MARK: Dictionaries whose keys look like tags

    @Test func dictionariesWithOneDollarKeyRoundTrip() throws {
        let date = SuiteValue.date(Date(timeIntervalSinceReferenceDate: 1))
        try expectExactRoundTrip([
            "data": ["$data": "AAEC"], "date": ["$date": "2026-01-01T00:00:00Z"], "json": ["$json": 1],
            "other": ["$other": true], "escape": ["$dictionary": ["$date": date]], "empty": ["$": [:]],
            "nested": [["$json": ["$data": .data(Data([1]))]], ["$date": date, "b": 2]],
        ])
    }

    @Test(arguments: ["$data", "$date", "$json", "$dictionary", "$jsontext", "$"])
    func aSuiteWhoseOnlyKeyLooksLikeATagRoundTrips(_ key: String) throws {
        try expectExactRoundTrip([key: "2026-01-01T00:00:00Z"])
        try expectExactRoundTrip([key: ["$data": "AAEC"]])
    }

    // MARK: Numbers

    @Test(arguments: ["9223372036854775808", "-9223372036854775809", "18446744073709551616",
                      "1" + String(repeating: "0", count: 400), "-" + String(repeating: "9", count: 30),
                      "1e400", "-1e400", "1.5e309", "1e-400", "-2e-324"])
    func numbersOutOfRangeAreRefused(_ text: String) throws {
        expectRefused(text)
        expectRefused("{\"key\": [\(text)]}")
        let suite = try Suite(named: "numbers", directory: directory.url)
        try suite.set("kept", forKey: "before")
        #expect(throws: SuiteError.self) { try suite.importJSON("{\"key\": \(text)}") }
        #expect(suite.storedValues() == ["before": "kept"], "a refused import changes nothing")
    }

    @Test func integersAtTheLimitsAndDoublesKeepTheirTypes() throws {
        #expect(try SuiteValue(jsonText: "9223372036854775807") == .integer(.max))
        #expect(try SuiteValue(jsonText: "-9223372036854775808") == .integer(.min))
        #expect(try SuiteValue(jsonText: "-0") == .integer(0))
        #expect(try storedBytes(SuiteValue(jsonText: "-0.0")) == storedBytes(.double(-0.0)))
        #expect(try SuiteValue(jsonText: "1e2") == .double(100))
        #expect(try SuiteValue(jsonText: "9223372036854775808.0") == .double(9.223_372_036_854_775_808e18))
        #expect(try SuiteValue(jsonText: "5e-324") == .double(.leastNonzeroMagnitude))
    }

    @Test func doublesRoundTripBitForBit() throws {
        let doubles: [Double] = [
            -0.0, 0, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .leastNormalMagnitude, 2.5e-308,
            .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 1.0, -1.0, 1e16, 1e22, 1e23, 9.007_199_254_740_993e15,
            0.1, 1e-05, 123_456_789.012_345_67, .pi, .ulpOfOne, Double(bitPattern: 0x000F_FFFF_FFFF_FFFF),
        ]
        let exported = try expectExactRoundTrip(Dictionary(uniqueKeysWithValues: doubles.enumerated().map {
            ("double \($0.offset)", .double($0.element))
        }))
        #expect(exported.contains("\"double 0\": -0.0"))
    }

    // MARK: Strings, data, nesting, embedded JSON

    @Test func stringsWithEveryEscapeAndNonBMPScalarsRoundTrip() throws {
        let controls = String(String.UnicodeScalarView((0...0x1F).map { Unicode.Scalar(UInt8($0)) }))
        try expectExactRoundTrip([
            "controls": .string(controls), "quotes": "\"\\/\u{7F}\u{80}\u{9F}\u{2028}\u{2029}\u{FEFF}\u{FFFF}",
            "non-BMP": "😀𝄞\u{10FFFF}\u{1F1FA}\u{1F1F8}", "composed": "\u{E9}", "decomposed": "e\u{301}",
            "escaped key \"\\\n\u{1}😀": "value", "empty": "", "\u{E9}": "composed key", "e\u{301}x": "decomposed key",
        ])
    }

    @Test func dataOfEveryByteRoundTrips() throws {
        var generator = SplitMix64(seed: 0xDA7A)
        var values: [String: SuiteValue] = ["all bytes": .data(Data((0...255).map { UInt8($0) })), "empty": .data(Data())]
        for length in 1...9 { values["random \(length)"] = .data(Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })) }
        try expectExactRoundTrip(values)
    }

    @Test func valuesNestedToTheLimitRoundTrip() throws {
        var array: SuiteValue = .data(Data([0xFF]))
        var dictionary: SuiteValue = .date(Date(timeIntervalSinceReferenceDate: -0.0))
        var tagged: SuiteValue = "leaf"
        for level in 0..<ValueEncoding.maximumDepth {
            array = [array, .double(-0.0)]
            dictionary = ["level \(level)": dictionary, "$json": .json(Data("[ 1 ]".utf8))]
            tagged = ["$date": tagged]
        }
        try expectExactRoundTrip(["array": array, "dictionary": dictionary, "tagged": tagged])
    }

    @Test func embeddedJSONRoundTripsByteForByte() throws {
        let texts = [
            "{\"value\":68901.23}", "{ \"a\" : [ 1.0, 2E3, -0 ],\n  \"b\": null }", "\"\\u00e9\\/\\uD83D\\uDE00\"",
            "123", "1.50", "null", "true", "[]", " {\"padded\": true}\n", "\t\"tab\"", "{\"$date\":\"x\"}",
            "{\"$json\": {\"$json\" : 1}}", "[{\"$dictionary\":{}}]",
        ]
        try expectExactRoundTrip(Dictionary(uniqueKeysWithValues: texts.enumerated().map {
            ("json \($0.offset)", .json(Data($0.element.utf8)))
        }))
        // Written by hand, the embedded text is stored as it is written.
        #expect(try SuiteValue(jsonText: "{\"$json\": {\"a\": [1, 2.0]} }") == .json(Data("{\"a\": [1, 2.0]}".utf8)))
    }

    // MARK: The parser

    @Test(arguments: [
        "\"\\u+041\"", "\"\\u-041\"", "\"\\u 041\"", "\"\\u004\"", "\"\\u00G1\"", "\"\\x\"", "01", "-01", "00", "-",
        "1.", ".5", "+1", "1e", "1e+", "1.e3", "-.5", "0x10", "Infinity", "NaN", "\"\\uDC00\\uD800\"", "\"\\uDC00\"",
        "\"\\uD800\"", "\"\\uD800x\"", "\"\\uD800\\u0041\"", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{1:2}", "tru", "nul",
        "\u{FEFF}1", "[1] x", "", " ", "\"\u{1}\"", "\"a", "'a'", "[", "{\"a\":}",
    ])
    func theParserRefusesWhatRFC8259Refuses(_ text: String) {
        #expect(throws: JSONParser.Failure.self, "\(text.debugDescription)") { try JSONParser.parse(text) }
    }

    @Test(arguments: [
        [0x22, 0xFF, 0x22], [0x22, 0x80, 0x22], [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22],
        [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], [0x22, 0xC3, 0x22], [0xC3, 0xA9], [0x5B, 0xE9, 0x5D],
    ] as [[UInt8]])
    func theParserRefusesInvalidUTF8(_ bytes: [UInt8]) {
        #expect(throws: JSONParser.Failure.self, "\(bytes)") { try JSONParser.parse(bytes) }
    }

    @Test(arguments: [
        ("\"\\u0041\\u00e9\\u00E9\"", JSONNode.string("Aéé")), ("\"\\uD83D\\uDE00\"", .string("😀")),
        ("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", .string("\"\\/\u{8}\u{C}\n\r\t")), ("-0", .number("-0")),
        ("0.5e-3", .number("0.5e-3")), ("1E+2", .number("1E+2")), (" [ ] ", .array([])), ("\"\u{7F}é\"", .string("\u{7F}é")),
    ])
    func theParserAcceptsWhatRFC8259Accepts(_ text: String, _ expected: JSONNode) throws {
        #expect(try JSONParser.parse(text) == expected)
    }

    // MARK: Random values

    /// Thousands of random values of every type, through a real export and import.
    @Test func randomValuesRoundTripBitForBit() throws {
        let seed = ProcessInfo.processInfo.environment["EXPORT_ROUND_TRIP_SEED"].flatMap { UInt64($0) } ?? 0x5EED_2026
        for round in 0..<10 {
            var generator = SplitMix64(seed: seed &+ UInt64(round))
            var values: [String: SuiteValue] = [:]
            for index in 0..<600 {
                values["\(index) " + RandomValues.string(using: &generator, allowingNUL: false)] = RandomValues.value(using: &generator, depth: 0)
            }
            // EXPORT_ROUND_TRIP_SEED set to the seed plus the round replays a failed round as round 0.
            let exported = try expectExactRoundTrip(values, label: "seed \(seed) round \(round):")
            // Both ways of writing a date, and the escapes, were taken.
            for form in ["\"$date\": \"", "\"$date\": -", "\"$dictionary\": {", "\"$json\": ", "\"$jsontext\": "] {
                #expect(exported.contains(form), "seed \(seed) round \(round) wrote no \(form)")
            }
        }
    }
}

/// Random values of every type, for the property test.
enum RandomValues {
    static func value(using generator: inout SplitMix64, depth: Int) -> SuiteValue {
        let kinds = depth < 3 ? 11 : 8
        switch generator.next() % UInt64(kinds) {
        case 0: return .string(string(using: &generator, allowingNUL: true))
        case 1: return .integer(integer(using: &generator))
        case 2: return .double(double(using: &generator))
        case 3: return .bool(generator.next() % 2 == 0)
        case 4: return .data(Data((0..<(generator.next() % 24)).map { _ in UInt8(truncatingIfNeeded: generator.next()) }))
        case 5, 6: return .date(Date(timeIntervalSinceReferenceDate: dateInterval(using: &generator)))
        case 7: return .json(Data(json(using: &generator).utf8))
        case 8: return .array((0..<(generator.next() % 4)).map { _ in value(using: &generator, depth: depth + 1) })
        default:
            var entries: [String: SuiteValue] = [:]
            for _ in 0..<(generator.next() % 4) {
                entries[key(using: &generator)] = value(using: &generator, depth: depth + 1)
            }
            return .dictionary(entries)
        }
    }

    /// Random scalars: ASCII, control characters, the JSON specials, the BMP and beyond it.
    static func string(using generator: inout SplitMix64, allowingNUL: Bool) -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<(generator.next() % 10) {
            let value: UInt32 = switch generator.next() % 6 {
            case 0: UInt32(0x20 + generator.next() % 0x5F)
            case 1: UInt32((allowingNUL ? 0 : 1) + generator.next() % (allowingNUL ? 0x20 : 0x1F))
            case 2: [0x22, 0x5C, 0x2F, 0x7F, 0x2028, 0x2029, 0xFEFF, 0x301][Int(generator.next() % 8)]
            case 3: UInt32(0x80 + generator.next() % (0xD800 - 0x80))
            case 4: UInt32(0xE000 + generator.next() % 0x2000)
            default: UInt32(0x10000 + generator.next() % 0x100000)
            }
            scalars.append(Unicode.Scalar(value)!)
        }
        return String(scalars)
    }

    static func key(using generator: inout SplitMix64) -> String {
        switch generator.next() % 4 {
        case 0: ["$data", "$date", "$json", "$dictionary", "$jsontext", "$", "$x"][Int(generator.next() % 7)]
        default: "k" + string(using: &generator, allowingNUL: false)
        }
    }

    static func integer(using generator: inout SplitMix64) -> Int {
        switch generator.next() % 4 {
        case 0: [Int.min, Int.max, 0, -1, 1][Int(generator.next() % 5)]
        case 1: Int(truncatingIfNeeded: generator.next() % 2001) - 1000
        default: Int(truncatingIfNeeded: generator.next())
        }
    }

    /// Any finite bit pattern, with the edges and subnormals more often than chance.
    static func double(using generator: inout SplitMix64) -> Double {
        switch generator.next() % 5 {
        case 0: return [-0.0, 0, .leastNonzeroMagnitude, -.greatestFiniteMagnitude, .greatestFiniteMagnitude, 1.0, 1e16][Int(generator.next() % 7)]
        case 1: return Double(bitPattern: generator.next() & 0x800F_FFFF_FFFF_FFFF)  // subnormal
        case 2: return Double(Int(truncatingIfNeeded: generator.next() % 2001) - 1000)
        default:
            while true {
                let number = Double(bitPattern: generator.next())
                if number.isFinite { return number }
            }
        }
    }

    /// Seconds since 2001: random finite bit patterns, and present-day, near-2001 and
    /// far-off dates with parts far below a nanosecond.
    static func dateInterval(using generator: inout SplitMix64) -> Double {
        switch generator.next() % 5 {
        case 0: return double(using: &generator)
        case 1: return Double.random(in: -2...2, using: &generator)
        case 2: return Double.random(in: -1e13...1e13, using: &generator)
        default: return Double.random(in: 600_000_000..<900_000_000, using: &generator)
        }
    }

    /// Valid JSON text, sometimes with whitespace and escapes as a person writes them.
    static func json(using generator: inout SplitMix64) -> String {
        let fixed = ["{ \"a\" : [1, 2.50, -0] }", "\"\\u00e9\\/\"", "null", "  [ ]\n", "{\"$date\": 1}", "1E+2", "\"\""]
        guard generator.next() % 3 == 0 else { return fixed[Int(generator.next() % UInt64(fixed.count))] }
        var plain: SuiteValue
        repeat {
            plain = value(using: &generator, depth: 2)
        } while plain.typeName == "json"
        return plain.jsonText(style: .plain, pretty: generator.next() % 2 == 0)
    }
}

extension SuiteValue {
    /// The value with its doubles' and dates' bits, for failure messages.
    var debugText: String {
        switch self {
        case .double(let number): "double \(number) (bits \(String(number.bitPattern, radix: 16)))"
        case .date(let date): "date \(date.timeIntervalSinceReferenceDate) (bits \(String(date.timeIntervalSinceReferenceDate.bitPattern, radix: 16)))"
        case .json(let data): "json \(String(decoding: data, as: UTF8.self).debugDescription)"
        case .string(let text): "string \(text.debugDescription) \(text.unicodeScalars.map { String($0.value, radix: 16) })"
        default: "\(typeName) \(jsonText(style: .plain))"
        }
    }
}
