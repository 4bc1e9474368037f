import Foundation
import Testing
import UnitPreferences

let english = Locale(identifier: "en_US")
let spanish = Locale(identifier: "es_ES")
let portuguese = Locale(identifier: "pt_BR")

@Suite("Formatting and parsing")
struct FormattingAndParsingTests {
    @Test(arguments: [
        (5_000.0, UnitSystem.metric, english, "5.0 km"), (5_000, .imperial, english, "3.1 mi"),
        (5_000, .metric, spanish, "5,0 km"), (5_000, .imperial, portuguese, "3,1 mi"),
        (0, .metric, english, "0.0 km"), (12_345_678, .metric, english, "12,345.7 km"),
        (12_345_678, .metric, spanish, "12.345,7 km"), (42_195, .imperial, spanish, "26,2 mi"),
    ])
    func distances(_ meters: Double, _ system: UnitSystem, _ locale: Locale, _ expected: String) {
        #expect(formatDistance(meters: meters, system: system, locale: locale) == expected)
    }

    @Test(arguments: [
        (90.0, UnitSystem.metric, english, "90 kg"), (90, .imperial, english, "198 lbs"),
        (90, .imperial, spanish, "198 lbs"), (0, .metric, english, "0 kg"), (102.5, .metric, portuguese, "102 kg"),
        (2_000, .imperial, english, "4,409 lbs"),
    ])
    func weights(_ kilograms: Double, _ system: UnitSystem, _ locale: Locale, _ expected: String) {
        #expect(formatWeight(kilograms: kilograms, system: system, locale: locale) == expected)
    }

    @Test(arguments: [
        ("5", UnitSystem.metric, english, 5_000.0), ("5.0", .metric, english, 5_000), ("5,0", .metric, spanish, 5_000),
        ("5.0", .metric, spanish, 5_000), ("5,5 km", .imperial, portuguese, 5_500), ("3.1 mi", .metric, english, 3.1 * 1_609.344),
        ("5 km", .imperial, english, 5_000), ("5km", .imperial, english, 5_000), ("  10  ", .imperial, english, 16_093.44),
        ("1,234.5", .metric, english, 1_234_500), ("1.234,5", .metric, spanish, 1_234_500), ("2 miles", .metric, english, 3_218.688),
        ("3 millas", .metric, spanish, 4_828.032), ("42.195 kilometers", .imperial, english, 42_195), (".5", .metric, english, 500),
    ])
    func distancesParse(_ text: String, _ system: UnitSystem, _ locale: Locale, _ meters: Double) throws {
        let parsed = try parseDistance(text, system: system, locale: locale)
        #expect(abs(parsed - meters) < 1e-9 * max(1, meters), "\(text) → \(parsed)")
    }

    @Test(arguments: [
        ("90", UnitSystem.metric, english, 90.0), ("198 lbs", .metric, english, 198 * 0.453_592_37),
        ("90kg", .imperial, english, 90), ("90,5", .metric, spanish, 90.5), ("0", .metric, english, 0),
        ("200", .imperial, english, 200 * 0.453_592_37), ("100 libras", .metric, spanish, 45.359_237),
    ])
    func weightsParse(_ text: String, _ system: UnitSystem, _ locale: Locale, _ kilograms: Double) throws {
        let parsed = try parseWeight(text, system: system, locale: locale)
        #expect(abs(parsed - kilograms) < 1e-9 * max(1, kilograms), "\(text) → \(parsed)")
    }

    @Test(arguments: [
        ("", UnitInputError.Reason.empty), ("   ", .empty), ("five", .notANumber), ("km", .notANumber),
        ("nan", .notFinite), ("NaN km", .notFinite), ("inf", .notFinite), ("-infinity", .notFinite),
        (String(repeating: "9", count: 400), .notFinite), ("0", .notPositive), ("-5", .notPositive), ("0 mi", .notPositive),
        ("5 kg", .wrongKindOfUnit("kg")), ("5 lbs", .wrongKindOfUnit("lbs")), ("5 furlongs", .unknownUnit("furlongs")),
        ("200000 km", .tooLarge), ("5,0", .notANumber), ("5.0.0", .notANumber), ("1,23", .notANumber),
    ])
    func badDistancesAreRefused(_ text: String, _ reason: UnitInputError.Reason) {
        let error = #expect(throws: UnitInputError.self) { try parseDistance(text, system: .metric, locale: english) }
        #expect(error?.reason == reason, "\(text): \(error?.message ?? "no error")")
        #expect(error?.input == text)
        #expect(error?.message.isEmpty == false)
    }

    @Test(arguments: [
        ("-1", UnitInputError.Reason.negative), ("-0.5 kg", .negative), ("5 km", .wrongKindOfUnit("km")),
        ("3 mi", .wrongKindOfUnit("mi")), ("20000 kg", .tooLarge), ("30000 lbs", .tooLarge), ("", .empty), ("heavy", .notANumber),
    ])
    func badWeightsAreRefused(_ text: String, _ reason: UnitInputError.Reason) {
        let error = #expect(throws: UnitInputError.self) { try parseWeight(text, system: .metric, locale: english) }
        #expect(error?.reason == reason, "\(text): \(error?.message ?? "no error")")
    }

    @Test func whatIsShownParsesBackToTheSameDisplay() throws {
        for locale in [english, spanish, portuguese] {
            for system in UnitSystem.allCases {
                let shown = formatDistance(meters: 42_195, system: system, locale: locale)
                let parsed = try parseDistance(shown, system: system, locale: locale)
                #expect(formatDistance(meters: parsed, system: system, locale: locale) == shown)
                let weight = formatWeight(kilograms: 90, system: system, locale: locale)
                #expect(formatWeight(kilograms: try parseWeight(weight, system: system, locale: locale), system: system, locale: locale) == weight)
            }
        }
    }
}
