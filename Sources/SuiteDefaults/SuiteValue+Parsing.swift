import Foundation

extension SuiteValue {
    /// The kinds of value a command line can name, as `defaults -int 1` does.
    public enum Kind: String, Sendable, CaseIterable {
        case string, integer, double, bool, date, data
        /// Typed JSON text (see `JSONStyle.typed`), for arrays, dictionaries and the rest.
        case json
    }

    /// Reads a value of `kind` from text: integers and doubles in decimal, Booleans as
    /// true/false/yes/no/1/0, dates in ISO 8601, data in base64.
    ///
    /// - Throws: `SuiteError` `.invalidValue` saying what the text should look like.
    public init(parsing text: String, as kind: Kind) throws {
        func refuse(_ expected: String) -> SuiteError {
            SuiteError(.invalidValue, message: "\"\(text)\" is not \(expected).")
        }
        switch kind {
        case .string:
            self = .string(text)
        case .integer:
            guard let number = Int(text) else { throw refuse("an integer") }
            self = .integer(number)
        case .double:
            guard let number = Double(text), number.isFinite else { throw refuse("a finite number") }
            self = .double(number)
        case .bool:
            switch text.lowercased() {
            case "true", "yes", "1": self = .bool(true)
            case "false", "no", "0": self = .bool(false)
            default: throw refuse("a Boolean (true, false, yes, no, 1 or 0)")
            }
        case .date:
            guard let date = ISO8601.parse(text) else { throw refuse("an ISO 8601 date such as 2026-11-22T10:15:00Z") }
            self = .date(date)
        case .data:
            guard let data = Data(base64Encoded: text) else { throw refuse("base64 data") }
            self = .data(data)
        case .json:
            try self.init(jsonText: text)
        }
    }
}
