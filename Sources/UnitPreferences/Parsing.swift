import Foundation

/// The largest distance accepted: 100,000 km, well beyond any journey on foot.
public let maximumDistanceMeters = 100_000_000.0
/// The largest weight accepted: 10,000 kg, well beyond any lift.
public let maximumWeightKilograms = 10_000.0

/// Reads a distance the user typed, in metres for storage.
///
/// Accepts a number in `system`'s unit ("5", "5.0", and "5,0" where the locale writes a
/// decimal comma), or with a unit ("5 km", "3.1 mi", "5km"); a unit of the other system
/// converts. Long names work too ("5 kilometers", "3 millas").
///
/// - Throws: `UnitInputError` for empty or non-numeric text, NaN or infinity, a distance
///   of zero or less, a weight unit, an unknown unit, or more than 100,000 km.
public func parseDistance(_ text: String, system: UnitSystem, locale: Locale = POSIXLocale.numberLocale()) throws(UnitInputError) -> Double {
    let (number, unit) = try UnitInput.read(text, locale: locale)
    let system = try UnitInput.Kind.distance.system(for: unit, text: text) ?? system
    let meters = system.metersFromDisplay(number)
    guard meters > 0 else {
        throw UnitInput.error(.notPositive, text, "A distance must be more than zero.")
    }
    guard meters <= maximumDistanceMeters else {
        throw UnitInput.error(.tooLarge, text, "\(text) is more than 100,000 km; check the number and the unit.")
    }
    return meters
}

/// Reads a weight the user typed, in kilograms for storage.
///
/// Accepts a number in `system`'s unit ("90", "90.5", "90,5" where the locale writes a
/// decimal comma), or with a unit ("90 kg", "198 lbs", "90kg"); a unit of the other
/// system converts.
///
/// - Throws: `UnitInputError` for empty or non-numeric text, NaN or infinity, a weight
///   below zero, a distance unit, an unknown unit, or more than 10,000 kg.
public func parseWeight(_ text: String, system: UnitSystem, locale: Locale = POSIXLocale.numberLocale()) throws(UnitInputError) -> Double {
    let (number, unit) = try UnitInput.read(text, locale: locale)
    let system = try UnitInput.Kind.weight.system(for: unit, text: text) ?? system
    let kilograms = system.kilogramsFromDisplay(number)
    guard kilograms >= 0 else {
        throw UnitInput.error(.negative, text, "A weight cannot be negative.")
    }
    guard kilograms <= maximumWeightKilograms else {
        throw UnitInput.error(.tooLarge, text, "\(text) is more than 10,000 kg; check the number and the unit.")
    }
    return kilograms
}

/// Splitting user input into a number and a unit.
enum UnitInput {
    static func error(_ reason: UnitInputError.Reason, _ text: String, _ message: String) -> UnitInputError {
        UnitInputError(reason: reason, input: text, message: message)
    }

    static let distanceUnits: [String: UnitSystem] = [
        "km": .metric, "kms": .metric, "kilometer": .metric, "kilometers": .metric, "kilometre": .metric,
        "kilometres": .metric, "kilómetro": .metric, "kilómetros": .metric, "quilômetro": .metric, "quilômetros": .metric,
        "mi": .imperial, "mile": .imperial, "miles": .imperial, "milla": .imperial, "millas": .imperial,
        "milha": .imperial, "milhas": .imperial,
    ]

    static let weightUnits: [String: UnitSystem] = [
        "kg": .metric, "kgs": .metric, "kilogram": .metric, "kilograms": .metric, "kilogramo": .metric,
        "kilogramos": .metric, "quilograma": .metric, "quilogramas": .metric,
        "lb": .imperial, "lbs": .imperial, "pound": .imperial, "pounds": .imperial, "libra": .imperial, "libras": .imperial,
    ]

    /// What a unit of one kind says about the system: nil for no unit.
    struct Kind {
        var units: [String: UnitSystem]
        var otherUnits: [String: UnitSystem]
        var name: String
        var otherName: String
        var examples: String

        static let distance = Kind(units: distanceUnits, otherUnits: weightUnits, name: "distance", otherName: "weight",
                                   examples: "km or mi")
        static let weight = Kind(units: weightUnits, otherUnits: distanceUnits, name: "weight", otherName: "distance",
                                 examples: "kg or lbs")

        func system(for unit: String?, text: String) throws(UnitInputError) -> UnitSystem? {
            guard let unit else { return nil }
            if let system = units[unit] { return system }
            if otherUnits[unit] != nil {
                throw error(.wrongKindOfUnit(unit), text, "\(unit) is a unit of \(otherName); give a \(name) in \(examples).")
            }
            throw error(.unknownUnit(unit), text, "\(unit) is not a unit of \(name); use \(examples).")
        }
    }

    /// The number and the unit (lowercased; nil when none) of `text`.
    static func read(_ text: String, locale: Locale) throws(UnitInputError) -> (Double, String?) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw error(.empty, text, "Nothing was entered; type a number, such as 5.") }
        let decimal = Character(locale.decimalSeparator ?? ".")
        let grouping = locale.groupingSeparator.flatMap(\.first)
        let numberCharacters = Set("+-0123456789.,").union([decimal]).union(grouping.map { [$0] } ?? [])
        let numberEnd = trimmed.firstIndex { !numberCharacters.contains($0) } ?? trimmed.endIndex
        let numberText = String(trimmed[..<numberEnd])
        let unitText = trimmed[numberEnd...].trimmingCharacters(in: .whitespaces).lowercased()
        if ["nan", "inf", "infinity", "∞"].contains(where: { unitText.hasPrefix($0) || unitText == "-" + $0 }) {
            throw error(.notFinite, text, "\(trimmed) is not a finite number.")
        }
        guard let number = number(numberText, decimal: decimal, grouping: grouping) else {
            throw error(.notANumber, text, "\(trimmed) does not start with a number; type one such as 5\(decimal)0.")
        }
        guard number.isFinite else { throw error(.notFinite, text, "\(trimmed) is too large a number.") }
        return (number, unitText.isEmpty ? nil : unitText)
    }

    /// Reads a number written with the locale's separators. The locale's decimal
    /// separator is a decimal point, and so is "." wherever the locale does not group
    /// digits with it; the grouping separator must sit between groups of three digits.
    static func number(_ text: String, decimal: Character, grouping: Character?) -> Double? {
        var body = Substring(text)
        var sign = ""
        if let first = body.first, first == "-" || first == "+" {
            sign = first == "-" ? "-" : ""
            body = body.dropFirst()
        }
        let points = body.filter { $0 == decimal }.count
        let integer: Substring, fraction: Substring?
        if points == 1, let index = body.firstIndex(of: decimal) {
            (integer, fraction) = (body[..<index], body[body.index(after: index)...])
        } else if points == 0, decimal != ".", let index = body.lastIndex(of: "."), grouping != "." || !isGrouped(body, by: ".") {
            (integer, fraction) = (body[..<index], body[body.index(after: index)...])
        } else if points == 0 {
            (integer, fraction) = (body, nil)
        } else {
            return nil
        }
        guard let digits = ungrouped(integer, by: grouping), !digits.isEmpty || fraction?.isEmpty == false,
              fraction?.allSatisfy(\.isASCII) ?? true, fraction?.allSatisfy(\.isNumber) ?? true
        else { return nil }
        return Double(sign + (digits.isEmpty ? "0" : digits) + (fraction.map { "." + $0 } ?? ""))
    }

    /// The digits of `text` without grouping separators, or nil when anything but
    /// digits and well-placed separators is there.
    private static func ungrouped(_ text: Substring, by grouping: Character?) -> String? {
        if text.allSatisfy({ $0.isASCII && $0.isNumber }) { return String(text) }
        guard let grouping, isGrouped(text, by: grouping) else { return nil }
        return text.filter { $0 != grouping }
    }

    /// Whether `text` is digits in groups of three after the first, joined by `separator`.
    private static func isGrouped(_ text: Substring, by separator: Character) -> Bool {
        let groups = text.split(separator: separator, omittingEmptySubsequences: false)
        guard groups.count > 1, let first = groups.first, (1...3).contains(first.count) else { return false }
        return groups.allSatisfy { $0.allSatisfy { $0.isASCII && $0.isNumber } } && groups.dropFirst().allSatisfy { $0.count == 3 }
    }
}
