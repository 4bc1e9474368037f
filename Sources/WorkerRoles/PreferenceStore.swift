import SuiteDefaults
import UnitPreferences

/// A store of shared preferences that a worker process works on: this library's
/// `Suite`, or Foundation's `UserDefaults` used as a new user would. The roles are
/// written once over it, so that both are put through the same jobs.
public protocol PreferenceStore: Sendable {
    /// Adds one to the integer under `key` (absent counts as 0), read and written as
    /// one transaction where the store has transactions.
    func increment(_ key: String) throws

    /// Stores `value` under `key`; where the store has a lock, keeps it for
    /// `holdMicroseconds` more before the write returns.
    func set(_ value: SuiteValue, forKey key: String, holdingLockFor holdMicroseconds: UInt32) throws

    /// Moves the invariant a + b == 0, a == version on to the next version, all three
    /// as one transaction where the store has them; returns the new version.
    func advanceInvariant() throws -> Int

    /// What a reader of the invariant sees now.
    func readInvariant() -> InvariantSnapshot

    /// The shared unit system's raw value, detected from `lang` when nothing is stored.
    func currentUnitSystem(lang: String) throws -> String

    /// Stores the user's explicit choice of unit system.
    func setUnitSystem(_ system: UnitSystem) throws
}

extension PreferenceStore {
    /// Stores `value` under `key`.
    public func set(_ value: SuiteValue, forKey key: String) throws {
        try set(value, forKey: key, holdingLockFor: 0)
    }
}
