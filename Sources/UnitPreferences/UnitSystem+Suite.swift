import Foundation
import SuiteDefaults

extension SuiteKey where Value == UnitSystem {
    /// The shared preference, stored in every suite under "units.system" as the raw
    /// value ("metric" or "imperial"). Its default is detected from this process's
    /// locale environment each time it is needed.
    public static let unitSystem = SuiteKey("units.system", default: UnitSystem.fromLocale())

    /// The same key, with its default detected from `environment` instead.
    public static func unitSystem(environment: [String: String]) -> SuiteKey<UnitSystem> {
        SuiteKey(unitSystem.name, default: UnitSystem.fromLocale(environment: environment))
    }
}

extension UnitSystem {
    /// The user's unit system, shared by every process of the suite.
    ///
    /// When nothing is stored yet, the system is detected from the locale and stored
    /// under the suite's lock, only if still nothing is stored there: the first
    /// process to get there stores its detection, every process returns the value
    /// actually stored, and a choice the user made in another process is never
    /// overwritten. A stored value that is neither "metric" nor "imperial" reads as
    /// absent and is detected again, with an `invalidStoredValue` diagnostic.
    public static func current(in suite: Suite, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> UnitSystem {
        try suite.valueStoringDefault(for: .unitSystem(environment: environment))
    }

    /// Stores the user's choice for every process of the suite.
    public static func setCurrent(_ system: UnitSystem, in suite: Suite) throws {
        try suite.set(system, for: .unitSystem)
    }

    /// The current system first, then every change, from any process, as an
    /// asynchronous sequence (a value equal to the one before is not repeated).
    /// Leaving the loop ends the observation; an error that keeps changes from
    /// arriving ends it too, and the loop throws it.
    public static func updates(in suite: Suite, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> SuiteUpdates<UnitSystem> {
        try suite.values(for: .unitSystem(environment: environment), storingDefault: true)
    }
}
