import Foundation
import Testing
import UnitPreferences

@Suite("Conversions and labels")
struct ConversionAndLabelTests {
    @Test func distancesUseTheExactInternationalMile() {
        #expect(UnitSystem.metric.displayDistance(meters: 5_000) == 5)
        #expect(UnitSystem.metric.metersFromDisplay(5) == 5_000)
        #expect(UnitSystem.imperial.displayDistance(meters: 1_609.344) == 1)
        #expect(UnitSystem.imperial.metersFromDisplay(1) == 1_609.344)
        #expect(abs(UnitSystem.imperial.displayDistance(meters: 5_000) - 3.106_855_961) < 1e-9)
    }

    @Test func weightsUseTheExactInternationalPound() {
        #expect(UnitSystem.metric.displayWeight(kilograms: 90) == 90)
        #expect(UnitSystem.metric.kilogramsFromDisplay(90) == 90)
        #expect(UnitSystem.imperial.displayWeight(kilograms: 0.453_592_37) == 1)
        #expect(UnitSystem.imperial.kilogramsFromDisplay(1) == 0.453_592_37)
        #expect(abs(UnitSystem.imperial.displayWeight(kilograms: 90) - 198.416_036_4) < 1e-6)
    }

    @Test(arguments: [42_195.0, 5_000, 1, 0.001, 0, 123_456.789])
    func distancesRoundTrip(_ meters: Double) {
        for system in UnitSystem.allCases {
            let back = system.metersFromDisplay(system.displayDistance(meters: meters))
            #expect(abs(back - meters) <= meters.ulp * 4, "\(system) \(meters) → \(back)")
        }
    }

    @Test(arguments: [90.0, 0, 0.5, 250.25, 1_000])
    func weightsRoundTrip(_ kilograms: Double) {
        for system in UnitSystem.allCases {
            let back = system.kilogramsFromDisplay(system.displayWeight(kilograms: kilograms))
            #expect(abs(back - kilograms) <= kilograms.ulp * 4, "\(system) \(kilograms) → \(back)")
        }
    }

    @Test func theMarathon() {
        let miles = UnitSystem.imperial.displayDistance(meters: 42_195)
        #expect(abs(miles - 26.218_757_5) < 1e-6)
        #expect(formatDistance(meters: 42_195, system: .imperial, locale: Locale(identifier: "en_US")) == "26.2 mi")
        #expect(formatDistance(meters: 42_195, system: .metric, locale: Locale(identifier: "en_US")) == "42.2 km")
    }

    @Test func labelsInEveryLanguage() {
        let expected: [(DisplayLanguage, [String])] = [
            (.english, ["Metric (km, kg)", "Imperial (mi, lbs)", "kilometers", "miles", "kilograms", "pounds"]),
            (.spanish, ["Métrico (km, kg)", "Imperial (mi, lbs)", "kilómetros", "millas", "kilogramos", "libras"]),
            (.portuguese, ["Métrico (km, kg)", "Imperial (mi, lbs)", "quilômetros", "milhas", "quilogramas", "libras"]),
        ]
        for (language, labels) in expected {
            let actual = [
                UnitSystem.metric.displayName(language: language), UnitSystem.imperial.displayName(language: language),
                UnitSystem.metric.distanceUnitLong(language: language), UnitSystem.imperial.distanceUnitLong(language: language),
                UnitSystem.metric.weightUnitLong(language: language), UnitSystem.imperial.weightUnitLong(language: language),
            ]
            #expect(actual == labels, "\(language)")
        }
        #expect(UnitSystem.allCases.map(\.distanceUnit) == ["km", "mi"])
        #expect(UnitSystem.allCases.map(\.weightUnit) == ["kg", "lbs"])
    }

    @Test(arguments: [
        (["LANG": "es_ES.UTF-8"], DisplayLanguage.spanish), (["LANG": "pt_BR.UTF-8"], .portuguese),
        (["LANG": "en_US.UTF-8"], .english), (["LANG": "de_DE.UTF-8"], .english), ([:], .english),
        (["LC_MESSAGES": "pt_PT", "LANG": "es_ES"], .portuguese), (["LC_ALL": "es_MX", "LC_MESSAGES": "pt_PT"], .spanish),
        (["LC_ALL": "C", "LANG": "es_ES"], .english),
    ])
    func languageFollowsTheMessagesLocale(_ environment: [String: String], _ language: DisplayLanguage) {
        #expect(DisplayLanguage.fromLocale(environment: environment) == language)
    }
}

@Suite("Locale detection")
struct LocaleDetectionTests {
    @Test(arguments: [
        (["LANG": "en_US.UTF-8"], UnitSystem.imperial),
        (["LANG": "es_US"], .imperial),
        (["LANG": "en_LR.UTF-8@x"], .imperial),
        (["LANG": "my_MM"], .imperial),
        (["LANG": "en_us.utf8"], .imperial),
        (["LANG": "de-DE"], .metric),
        (["LANG": "en_GB.UTF-8"], .metric),
        (["LANG": "pt_BR.UTF-8"], .metric),
        (["LANG": "es_419"], .metric),
        (["LANG": "en"], .metric),
        (["LANG": "C"], .metric),
        (["LANG": "POSIX"], .metric),
        (["LANG": "C.UTF-8"], .metric),
        (["LANG": ""], .metric),
        ([:], .metric),
        (["LANG": "not a locale!"], .metric),
        (["LANG": "en_USA"], .metric),
        (["LC_ALL": "en_US.UTF-8", "LANG": "de_DE.UTF-8"], .imperial),
        (["LC_ALL": "de_DE.UTF-8", "LC_MEASUREMENT": "en_US.UTF-8", "LANG": "en_US.UTF-8"], .metric),
        (["LC_MEASUREMENT": "en_US.UTF-8", "LANG": "de_DE.UTF-8"], .imperial),
        (["LC_MEASUREMENT": "de_DE.UTF-8", "LANG": "en_US.UTF-8"], .metric),
        (["LC_ALL": "", "LC_MEASUREMENT": "", "LANG": "en_US.UTF-8"], .imperial),
        (["LC_ALL": "C", "LANG": "en_US.UTF-8"], .metric),
        (["LC_NUMERIC": "en_US.UTF-8", "LANG": "de_DE"], .metric),
    ])
    func systemFromEnvironment(_ environment: [String: String], _ expected: UnitSystem) {
        #expect(UnitSystem.fromLocale(environment: environment) == expected, "\(environment)")
    }

    @Test func localeNamesParse() {
        #expect(POSIXLocale("en_LR.UTF-8@x") == POSIXLocale("en_LR"))
        #expect(POSIXLocale("en_LR")?.region == "LR")
        #expect(POSIXLocale("de-DE")?.language == "de")
        #expect(POSIXLocale("C.UTF-8") == nil)
        #expect(POSIXLocale("x") == nil)
        #expect(POSIXLocale.numberLocale(environment: ["LC_NUMERIC": "es_ES.UTF-8", "LANG": "en_US"]).identifier == "es_ES")
        #expect(POSIXLocale.numberLocale(environment: [:]).identifier == "en_US_POSIX")
    }
}
