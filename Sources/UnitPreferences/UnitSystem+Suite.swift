import Foundation
import SuiteDefaults

extension UnitSystem {
    /// The key the shared preference is stored under, in every suite: "units.system".
    /// Its value is the raw value, "metric" or "imperial".
    public static let storageKey = "units.system"

    /// The preference as a typed key, whose default is detected from `environment`.
    public static func key(environment: [String: String] = ProcessInfo.processInfo.environment) -> SuiteKey<UnitSystem> {
        SuiteKey(storageKey, default: fromLocale(environment: environment))
    }

    /// The user's unit system, shared by every process of the suite.
    ///
    /// When nothing is stored yet, the system is detected from the locale and stored
    /// in one step under the suite's lock, only if still nothing is stored: the first
    /// process to get there stores its detection, every process returns the value
    /// actually stored, and a choice the user made in another process is never
    /// overwritten. A stored value that is neither "metric" nor "imperial" reads as
    /// absent and is detected again, with an `invalidStoredValue` diagnostic.
    public static func current(in suite: Suite, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> UnitSystem {
        try suite.valueStoringDefault(for: key(environment: environment))
    }

    /// Stores the user's choice for every process of the suite.
    public static func setCurrent(_ system: UnitSystem, in suite: Suite) throws {
        try suite.set(system, for: key())
    }

    /// The current system first, then every change, from any process, as an
    /// asynchronous sequence (a value equal to the one before is not repeated).
    /// Leaving the loop ends the observation.
    public static func updates(in suite: Suite, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> SuiteKeyValues<UnitSystem> {
        try suite.values(for: key(environment: environment), storingDefault: true)
    }
}
