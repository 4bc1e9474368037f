#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Suite {
    /// The tag that marks a first-access default in an export: `{"$default": value}`
    /// as the value of a key of the top-level object, and nowhere else.
    static let defaultMark = "$default"

    /// Every stored value as one JSON object in the typed style, keys sorted, one per
    /// line: what `importJSON(_:)` reads back to the same values, types and bytes
    /// (`SuiteValue.JSONStyle.typed`; a suite whose only key starts with `$` is
    /// `{"$dictionary": {...}}`).
    ///
    /// A value stored as a first-access default (`SuiteChange.isDefault`: by
    /// `setIfAbsent`, a key's `storingDefault`, `UnitSystem.current(in:)`) is written
    /// `{"$default": value}`, so that an import stores it as a default again; a value
    /// someone chose is written as it always was, so a suite without defaults exports
    /// the same text as before defaults were marked.
    public func exportJSON() -> String {
        let entries = storedEntries()
        let members = entries.keys.sorted().map { key in
            let entry = entries[key]!
            let node = entry.value.jsonNode(style: .typed)
            return (key: key, value: entry.isDefault ? JSONNode.object([(Self.defaultMark, node)]) : node)
        }
        return SuiteValue.objectNode(members, style: .typed).text(pretty: true)
    }

    /// Replaces everything stored with the members of a JSON object in the typed
    /// style, in one transaction: other processes see the old contents or the new,
    /// never a mix. A member whose value is `{"$default": value}` is stored as a
    /// first-access default (`SuiteChange.isDefault`), every other one as a choice, so
    /// that what `exportJSON()` wrote comes back with the same values and the same
    /// defaults.
    ///
    /// - Throws: `SuiteError` `.invalidValue` when the text is not a JSON object, holds
    ///   a number out of range or a malformed tag, has `"$default"` anywhere but around
    ///   a top-level member's value (nested in a value, doubled, or alone), or a member
    ///   cannot be stored; nothing is changed then.
    public func importJSON(_ text: String) throws {
        let entries: [String: StoredEntry]
        do {
            entries = try importedEntries(text)
        } catch var error as SuiteError {
            error.suite = error.suite ?? name
            throw error
        }
        try Validation.refuseKeysSpelledTwice(entries.keys, suite: name)
        try update { transaction in
            try transaction.removeAll()
            for (key, entry) in entries.sorted(by: { $0.key < $1.key }) {
                try transaction.setValue(entry.value, forKey: key, asDefault: entry.isDefault)
            }
        }
    }

    /// The keys of an export with their values and whether each is a default, all read
    /// before anything is written, so that bad input changes nothing.
    private func importedEntries(_ text: String) throws -> [String: StoredEntry] {
        let node = try SuiteValue.typedNode(parsing: text)
        var members: [(key: String, value: JSONNode)]?
        if case .object(let all) = node {
            if !(all.count == 1 && all[0].key.hasPrefix("$")) {
                members = all
            } else if all[0].key == "$dictionary", case .object(let inner) = all[0].value {
                // A suite whose only key starts with "$", as `exportJSON` writes it.
                members = inner
            }
        }
        guard let members else {
            // A malformed tag gets its own error, as a value's would; a valid one is still no object of keys.
            _ = try SuiteValue(node)
            throw SuiteError(.invalidValue, message: "The text must be one JSON object, of keys and their values "
                             + "(one whose only key starts with \"$\" written as {\"$dictionary\": {...}}).")
        }
        return try SuiteValue.entries(members) { key, member in
            do {
                return try Self.importedEntry(member)
            } catch var error as SuiteError {
                // Name the suite's key, so that a long file's bad member can be found; a
                // key inside its value (one twice in a dictionary) stays in the message.
                if let inner = error.key {
                    error.message = "In the value, the key \(SuiteValue.string(inner).jsonText()): \(error.message)"
                }
                error.key = key
                throw error
            }
        }
    }

    /// A top-level member's value: `{"$default": value}` is a default, anything else a
    /// choice.
    private static func importedEntry(_ member: JSONNode) throws -> StoredEntry {
        var node = member
        // A member named "$json" was kept as its text (the parser cannot tell it from the tag): read it as any other.
        if case .verbatim(let text) = node { node = try SuiteValue.typedNode(parsing: text) }
        if case .object(let wrapper) = node, wrapper.count == 1, wrapper[0].key == defaultMark {
            return StoredEntry(value: try SuiteValue(wrapper[0].value), isDefault: true)
        }
        return StoredEntry(value: try SuiteValue(node), isDefault: false)
    }
}
