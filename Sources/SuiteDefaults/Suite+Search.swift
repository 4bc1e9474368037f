#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension Suite {
    /// The stored values that contain `word`, ignoring case, as `defaults find` looks
    /// for it: every value when the suite's name contains it, else those whose key or
    /// value does. A value's text is a string as it is, a number in decimal, a Boolean
    /// as true or false, a date in ISO 8601, data in hexadecimal digits, encoded JSON
    /// as its text, and an array or dictionary by every element (and every key) inside.
    /// An empty `word` is in every value. Registered defaults are not searched. Case is
    /// set aside by the standard library's Unicode case mappings (see `caseFolded`).
    public func storedValues(containing word: String) -> [String: SuiteValue] {
        let values = storedValues()
        if word.isEmpty || Self.text(name, contains: word) { return values }
        return values.filter { key, value in Self.text(key, contains: word) || value.containsText(word) }
    }

    static func text(_ text: String, contains word: String) -> Bool {
        text.caseFolded.contains(word.caseFolded)
    }
}

private extension String {
    /// The text with case set aside, as Foundation's `.caseInsensitive` compares it
    /// (whose `range(of:options:)` is not in FoundationEssentials): upper case, then
    /// lower case, which folds "ß" and "SS", and "ς", "σ" and "Σ", alike.
    var caseFolded: String { uppercased().lowercased() }
}

extension SuiteValue {
    /// Whether the value's text, as `Suite.storedValues(containing:)` reads it,
    /// contains `word`, ignoring case.
    func containsText(_ word: String) -> Bool {
        switch self {
        case .string(let text): Suite.text(text, contains: word)
        case .data(let bytes): Suite.text(bytes.hexText, contains: word)
        case .json(let bytes): Suite.text(String(decoding: bytes, as: UTF8.self), contains: word)
        case .array(let elements): elements.contains { $0.containsText(word) }
        case .dictionary(let entries): entries.contains { Suite.text($0.key, contains: word) || $0.value.containsText(word) }
        case .integer, .double, .bool, .date:
            // Numbers and Booleans as JSON writes them; a date as an ISO 8601 string.
            Suite.text(String(jsonText(style: .plain).trimmingQuotes), contains: word)
        }
    }
}

private extension StringProtocol {
    /// Without the quotation marks at either end (a date's JSON text is a quoted string).
    var trimmingQuotes: SubSequence {
        let quote: Character = "\""
        guard let first = firstIndex(where: { $0 != quote }) else { return self[endIndex...] }
        let last = lastIndex(where: { $0 != quote })!
        return self[first...last]
    }
}
