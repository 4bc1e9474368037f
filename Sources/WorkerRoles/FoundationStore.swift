import Foundation
import SuiteDefaults
import UnitPreferences

/// Foundation's `UserDefaults` on Linux, used the way a new user would: set, then
/// `synchronize()` so that other processes can see it. It keeps its suite in
/// $XDG_CONFIG_HOME, read before main runs.
public struct FoundationStore: PreferenceStore, @unchecked Sendable {
    // UserDefaults is documented as thread-safe: threads share one instance.
    public let defaults: UserDefaults
    /// Its property list, as another program would read it.
    let file: URL

    public init(suiteName: String, directory: URL) {
        defaults = UserDefaults(suiteName: suiteName)!
        file = directory.appendingPathComponent(suiteName + ".plist")
    }

    public func increment(_ key: String) throws {
        defaults.synchronize()
        defaults.set(defaults.integer(forKey: key) + 1, forKey: key)
        defaults.synchronize()
    }

    /// UserDefaults has no lock to hold.
    public func set(_ value: SuiteValue, forKey key: String, holdingLockFor holdMicroseconds: UInt32) throws {
        switch value {
        case .integer(let number): defaults.set(number, forKey: key)
        case .string(let text): defaults.set(text, forKey: key)
        default: defaults.set(value.description, forKey: key)
        }
        defaults.synchronize()
    }

    public func advanceInvariant() throws -> Int {
        defaults.synchronize()
        let next = defaults.integer(forKey: "version") + 1
        defaults.set(next, forKey: "a")
        defaults.set(-next, forKey: "b")
        defaults.set(next, forKey: "version")
        defaults.synchronize()
        return next
    }

    /// Also reads the property list itself and notes when it was empty or not whole.
    public func readInvariant() -> InvariantSnapshot {
        defaults.synchronize()
        var snapshot = InvariantSnapshot(a: defaults.integer(forKey: "a"), b: defaults.integer(forKey: "b"),
                                         version: defaults.integer(forKey: "version"),
                                         stopRequested: defaults.object(forKey: "stop") != nil)
        if let data = try? Data(contentsOf: file), (try? PropertyListSerialization.propertyList(from: data, format: nil)) == nil {
            snapshot.fileUnreadable = true
        }
        return snapshot
    }

    /// The naive first-access getter: read; if nothing, detect (always "metric", as
    /// a locale lookup that ignores the language would); check again; write; re-read.
    public func currentUnitSystem(lang: String) throws -> String {
        if defaults.string(forKey: "units.system") == nil {
            let detected = "metric"
            defaults.synchronize()
            if defaults.string(forKey: "units.system") == nil {
                defaults.set(detected, forKey: "units.system")
                defaults.synchronize()
            }
        }
        defaults.synchronize()
        return defaults.string(forKey: "units.system") ?? "none"
    }

    public func setUnitSystem(_ system: UnitSystem) throws {
        defaults.set(system.rawValue, forKey: "units.system")
        defaults.synchronize()
    }
}

extension FoundationStore {
    /// The values of UserDefaults suite `name` in `directory`, read from its property
    /// list the way another process would: empty when there is no file, nil when it
    /// is not a property list.
    public static func storedValues(suiteName name: String, directory: URL) -> [String: Any]? {
        guard let data = try? Data(contentsOf: directory.appendingPathComponent(name + ".plist")) else { return [:] }
        return try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
    }
}
