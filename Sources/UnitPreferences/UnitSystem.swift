import Foundation

/// Metric or imperial: how distances and weights are shown to the user.
///
/// Values are always stored in metric units (metres, kilograms); a `UnitSystem`
/// converts only for display and back from user input. Each direction uses one exact
/// constant (the international mile and pound), so a round trip returns the value it
/// started from, to floating-point precision.
public enum UnitSystem: String, Codable, CaseIterable, Sendable {
    case metric
    case imperial

    /// The international mile, exactly.
    public static let metersPerMile = 1_609.344
    /// The international avoirdupois pound, exactly.
    public static let kilogramsPerPound = 0.453_592_37

    // MARK: Labels

    /// "Metric (km, kg)" or "Imperial (mi, lbs)", in the environment's language.
    public var displayName: String { displayName(language: .current) }

    /// "Metric (km, kg)" or "Imperial (mi, lbs)", in `language`.
    public func displayName(language: DisplayLanguage) -> String {
        switch (self, language) {
        case (.metric, .english): "Metric (km, kg)"
        case (.metric, .spanish), (.metric, .portuguese): "Métrico (km, kg)"
        case (.imperial, _): "Imperial (mi, lbs)"
        }
    }

    /// "km" or "mi", in every language.
    public var distanceUnit: String { self == .metric ? "km" : "mi" }

    /// "kg" or "lbs", in every language.
    public var weightUnit: String { self == .metric ? "kg" : "lbs" }

    /// "kilometers" or "miles", in the environment's language.
    public var distanceUnitLong: String { distanceUnitLong(language: .current) }

    /// "kilometers" or "miles", in `language`.
    public func distanceUnitLong(language: DisplayLanguage) -> String {
        switch (self, language) {
        case (.metric, .english): "kilometers"
        case (.metric, .spanish): "kilómetros"
        case (.metric, .portuguese): "quilômetros"
        case (.imperial, .english): "miles"
        case (.imperial, .spanish): "millas"
        case (.imperial, .portuguese): "milhas"
        }
    }

    /// "kilograms" or "pounds", in the environment's language.
    public var weightUnitLong: String { weightUnitLong(language: .current) }

    /// "kilograms" or "pounds", in `language`.
    public func weightUnitLong(language: DisplayLanguage) -> String {
        switch (self, language) {
        case (.metric, .english): "kilograms"
        case (.metric, .spanish): "kilogramos"
        case (.metric, .portuguese): "quilogramas"
        case (.imperial, .english): "pounds"
        case (.imperial, .spanish), (.imperial, .portuguese): "libras"
        }
    }

    // MARK: Conversions

    /// A stored distance in metres, in this system's display unit (km or mi).
    public func displayDistance(meters: Double) -> Double {
        self == .metric ? meters / 1_000 : meters / Self.metersPerMile
    }

    /// A distance in this system's display unit, in metres for storage.
    public func metersFromDisplay(_ distance: Double) -> Double {
        self == .metric ? distance * 1_000 : distance * Self.metersPerMile
    }

    /// A stored weight in kilograms, in this system's display unit (kg or lbs).
    public func displayWeight(kilograms: Double) -> Double {
        self == .metric ? kilograms : kilograms / Self.kilogramsPerPound
    }

    /// A weight in this system's display unit, in kilograms for storage.
    public func kilogramsFromDisplay(_ weight: Double) -> Double {
        self == .metric ? weight : weight * Self.kilogramsPerPound
    }
}
