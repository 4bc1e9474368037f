@testable import SuiteDefaults

/// A key's entry in a test's model of a suite: equal to another only when the value is
/// stored identically (`-0.0` is not `0.0`) and both are defaults or both are not.
struct ModelEntry: Equatable {
    var value: SuiteValue
    var isDefault: Bool

    static func == (a: ModelEntry, b: ModelEntry) -> Bool {
        a.value.isStored(identicallyTo: b.value) && a.isDefault == b.isDefault
    }

    /// Whether two models hold the same keys, with equal entries.
    static func same(_ a: [String: ModelEntry], _ b: [String: ModelEntry]) -> Bool {
        a.count == b.count && a.allSatisfy { b[$0.key] == $0.value }
    }
}
