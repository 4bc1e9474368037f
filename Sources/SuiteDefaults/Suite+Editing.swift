#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Edits of stored values that read before they write, each one transaction (what
/// `defaults rename`, `-array-add` and `-dict-add` do).
extension Suite {
    /// Moves the value stored for `oldKey` to `newKey`, in one transaction: no process
    /// sees both keys or neither. A value stored for `newKey` is replaced, as a write
    /// to it would replace it. Renaming a key to itself changes nothing.
    ///
    /// - Returns: false, having changed nothing, when nothing is stored for `oldKey`.
    /// - Throws: `SuiteError`, having changed nothing: `.invalidKey` for a key the
    ///   suite refuses, or what a write throws.
    @discardableResult
    public func renameKey(_ oldKey: String, to newKey: String) throws -> Bool {
        // Normalized first, as a write does: a key's length limit holds for its normal form.
        let target = try Validation.normalizedKey(newKey, suite: name)
        // One key spelled two ways is renamed to itself. Swift's `==` cannot tell: after
        // some marks it calls two spellings of one normal form different.
        let isItself = Validation.normalized(oldKey).hasSameBytes(as: target)
        return try update { transaction in
            guard let value = transaction.storedValue(forKey: oldKey) else { return false }
            guard !isItself else { return true }
            try transaction.setValue(value, forKey: newKey)
            try transaction.setValue(nil, forKey: oldKey)
            return true
        }
    }

    /// Appends `elements` to the array stored for `key`, in one transaction, so that
    /// appends from several processes all land; an absent key starts from an empty
    /// array.
    ///
    /// - Returns: the array stored now.
    /// - Throws: `SuiteError` `.typeMismatch`, having changed nothing, when `key`
    ///   holds something other than an array; or what a write throws.
    @discardableResult
    public func append(contentsOf elements: [SuiteValue], toArrayForKey key: String) throws -> [SuiteValue] {
        try update { transaction in
            var array: [SuiteValue] = []
            switch transaction.storedValue(forKey: key) {
            case nil: break
            case .array(let stored): array = stored
            case let other?: throw Self.notA("an array", other, key: key, suite: name)
            }
            array += elements
            try transaction.setValue(.array(array), forKey: key)
            return array
        }
    }

    /// Adds `entries` to the dictionary stored for `key`, in one transaction; an entry
    /// replaces one of the same key there, the others stay. An absent key starts from
    /// an empty dictionary.
    ///
    /// - Returns: the dictionary stored now.
    /// - Throws: `SuiteError` `.typeMismatch`, having changed nothing, when `key`
    ///   holds something other than a dictionary; or what a write throws.
    @discardableResult
    public func merge(_ entries: [String: SuiteValue], intoDictionaryForKey key: String) throws -> [String: SuiteValue] {
        try update { transaction in
            var dictionary: [String: SuiteValue] = [:]
            switch transaction.storedValue(forKey: key) {
            case nil: break
            case .dictionary(let stored): dictionary = stored
            case let other?: throw Self.notA("a dictionary", other, key: key, suite: name)
            }
            dictionary.merge(entries) { _, new in new }
            try transaction.setValue(.dictionary(dictionary), forKey: key)
            return dictionary
        }
    }

    private static func notA(_ expected: String, _ found: SuiteValue, key: String, suite: String) -> SuiteError {
        SuiteError(.typeMismatch, suite: suite, key: key,
                   message: "\(key) holds a value of type \(found.typeName), not \(expected); nothing was changed.")
    }
}
