import Foundation

extension Suite {
    /// The stored values that contain `word`, ignoring case, as `defaults find` looks
    /// for it: every value when the suite's name contains it, else those whose key or
    /// value does. A value's text is a string as it is, a number in decimal, a Boolean
    /// as true or false, a date in ISO 8601, data in hexadecimal digits, encoded JSON
    /// as its text, and an array or dictionary by every element (and every key) inside.
    /// An empty `word` is in every value. Registered defaults are not searched.
    public func storedValues(containing word: String) -> [String: SuiteValue] {
        let values = storedValues()
        if word.isEmpty || Self.text(name, contains: word) { return values }
        return values.filter { key, value in Self.text(key, contains: word) || value.containsText(word) }
    }

    static func text(_ text: String, contains word: String) -> Bool {
        text.range(of: word, options: .caseInsensitive) != nil
    }
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
            Suite.text(jsonText(style: .plain).trimmingCharacters(in: CharacterSet(charactersIn: "\"")), contains: word)
        }
    }
}
