import Glibc
import SuiteDefaults
import UnitPreferences

extension Suite: PreferenceStore {
    public func increment(_ key: String) throws {
        try update { tx in try tx.set((tx.integer(forKey: key) ?? 0) + 1, forKey: key) }
    }

    public func set(_ value: SuiteValue, forKey key: String, holdingLockFor holdMicroseconds: UInt32) throws {
        guard holdMicroseconds > 0 else { return try setValue(value, forKey: key) }
        try update { tx in
            try tx.set(value, forKey: key)
            usleep(holdMicroseconds)
        }
    }

    public func advanceInvariant() throws -> Int {
        try update { tx -> Int in
            let next = (tx.integer(forKey: "version") ?? 0) + 1
            try tx.set(next, forKey: "a")
            try tx.set(-next, forKey: "b")
            try tx.set(next, forKey: "version")
            return next
        }
    }

    public func readInvariant() -> InvariantSnapshot {
        let values = storedValues()
        return InvariantSnapshot(a: values["a"].flatMap(Int.init(suiteValue:)), b: values["b"].flatMap(Int.init(suiteValue:)),
                                 version: values["version"].flatMap(Int.init(suiteValue:)) ?? 0,
                                 stopRequested: values["stop"] != nil)
    }

    public func currentUnitSystem(lang: String) throws -> String {
        try UnitSystem.current(in: self, environment: ["LANG": lang]).rawValue
    }

    public func setUnitSystem(_ system: UnitSystem) throws {
        try UnitSystem.setCurrent(system, in: self)
    }
}
