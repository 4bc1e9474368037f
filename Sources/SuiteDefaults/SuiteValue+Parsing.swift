#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension SuiteValue {
    /// The kinds of value a command line can name, as `defaults -int 1` does.
    @_spi(Tools) public enum Kind: String, Sendable, CaseIterable {
        case string, integer, double, bool, date, data
        /// Typed JSON text (see `JSONStyle.typed`), for arrays, dictionaries and the rest.
        case json
    }

    /// Reads a value of `kind` from text: integers and doubles in decimal, Booleans as
    /// true/false/yes/no/1/0, dates in ISO 8601, data in strict base64 (see
    /// `Data(strictBase64:)`: hex, or base64 with stray characters or padding, is refused).
    ///
    /// - Throws: `SuiteError` `.invalidValue` saying what the text should look like.
    @_spi(Tools) public init(parsing text: String, as kind: Kind) throws {
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
            guard let data = Data(strictBase64: text) else {
                throw refuse("base64 data (groups of four of A-Z, a-z, 0-9, + and /, the last padded with at most two =)")
            }
            self = .data(data)
        case .json:
            try self.init(jsonText: text)
        }
    }
}

extension Data {
    /// Decodes base64 as RFC 4648 writes it, or nil: a length that is a multiple of
    /// four, only the alphabet, and at most two "=" at the end.
    ///
    /// Foundation's decoder alone lets malformed text through ("====" decodes to one
    /// zero byte, a third "=" is ignored), which would store bytes nobody gave.
    init?(strictBase64 text: String) {
        let bytes = text.utf8
        let padding = bytes.reversed().prefix { $0 == UInt8(ascii: "=") }.count
        guard bytes.count % 4 == 0, padding <= 2,
              bytes.dropLast(padding).allSatisfy({ byte in
                  switch byte {
                  case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                       UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"): true
                  default: false
                  }
              })
        else { return nil }
        self.init(base64Encoded: text)
    }
}
