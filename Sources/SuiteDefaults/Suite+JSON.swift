#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Suite {
    /// Every stored value as one JSON object in the typed style, keys sorted, one per
    /// line: what `importJSON(_:)` reads back to the same values, types and bytes
    /// (`SuiteValue.JSONStyle.typed`; a suite whose only key starts with `$` is
    /// `{"$dictionary": {...}}`).
    public func exportJSON() -> String {
        SuiteValue.dictionary(storedValues()).jsonText(style: .typed, pretty: true)
    }

    /// Replaces everything stored with the members of a JSON object in the typed
    /// style, in one transaction: other processes see the old contents or the new,
    /// never a mix.
    ///
    /// - Throws: `SuiteError` `.invalidValue` when the text is not a JSON object, holds
    ///   a number out of range or a malformed tag, or a member cannot be stored;
    ///   nothing is changed then.
    public func importJSON(_ text: String) throws {
        guard case .dictionary(let entries) = try SuiteValue(jsonText: text) else {
            throw SuiteError(.invalidValue, suite: name, message: "The text must be one JSON object, of keys and their values "
                             + "(one whose only key starts with \"$\" written as {\"$dictionary\": {...}}).")
        }
        try update { transaction in
            try transaction.removeAll()
            for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
                try transaction.setValue(value, forKey: key)
            }
        }
    }
}
