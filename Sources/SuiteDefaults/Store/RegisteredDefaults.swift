/// The defaults registered in this process for one suite (`Suite.register(defaults:)`).
///
/// They live as long as the process, as `UserDefaults.register(defaults:)` does: an
/// app registers on a throwaway instance at launch, and every later instance of the
/// suite reads them. So they are kept per suite (directory path and name) in a
/// table of the process, not on a store, which lives only while an instance does.
final class RegisteredDefaults: Sendable {
    private let values = Locked<[String: SuiteValue]>([:])

    private static let bySuite = Locked<[String: RegisteredDefaults]>([:])

    /// The defaults of the suite `name` in the directory at `directoryPath`
    /// (standardized), made empty on first use.
    static func of(suite name: String, directoryPath: String) -> RegisteredDefaults {
        bySuite.withLock { table in
            let key = directoryPath + "/" + name
            if let existing = table[key] { return existing }
            let made = RegisteredDefaults()
            table[key] = made
            return made
        }
    }

    /// Adds `defaults`, replacing those registered before for the same keys.
    func register(_ defaults: [String: SuiteValue]) {
        values.withLock { $0.merge(defaults) { _, new in new } }
    }

    /// The default registered for `key`, held under its normal form (`Suite.register`
    /// registers what a write would store), so a spelling that Swift's `==` calls
    /// another (after some marks) is looked for again in its normal form.
    subscript(key: String) -> SuiteValue? {
        values.withLock { values in
            guard !values.isEmpty else { return nil }
            return values[key] ?? KeyTable.nfcTwin(of: key).flatMap { values[$0] }
        }
    }

    var all: [String: SuiteValue] { values.withLock { $0 } }
}
