import Foundation

/// A stored distance shown in `system`'s unit with one decimal: "5.0 km", "3.1 mi",
/// or "5,0 km" where the locale writes a decimal comma.
///
/// - Parameter locale: the number format; by default the environment's `LC_NUMERIC`
///   locale (see `POSIXLocale.numberLocale(environment:)`).
public func formatDistance(meters: Double, system: UnitSystem, locale: Locale = POSIXLocale.numberLocale()) -> String {
    let value = system.displayDistance(meters: meters)
    return value.formatted(.number.precision(.fractionLength(1)).locale(locale)) + " " + system.distanceUnit
}

/// A stored weight shown in `system`'s unit with no decimals: "90 kg", "198 lbs".
///
/// - Parameter locale: the number format; by default the environment's `LC_NUMERIC`
///   locale.
public func formatWeight(kilograms: Double, system: UnitSystem, locale: Locale = POSIXLocale.numberLocale()) -> String {
    let value = system.displayWeight(kilograms: kilograms)
    return value.formatted(.number.precision(.fractionLength(0)).locale(locale)) + " " + system.weightUnit
}

extension UnitSystem {
    /// `formatDistance(meters:system:locale:)` in this system.
    public func formatDistance(meters: Double, locale: Locale = POSIXLocale.numberLocale()) -> String {
        UnitPreferences.formatDistance(meters: meters, system: self, locale: locale)
    }

    /// `formatWeight(kilograms:system:locale:)` in this system.
    public func formatWeight(kilograms: Double, locale: Locale = POSIXLocale.numberLocale()) -> String {
        UnitPreferences.formatWeight(kilograms: kilograms, system: self, locale: locale)
    }
}
