#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension SuiteValue {
    /// How `SuiteValue` is written as JSON.
    @_spi(Tools) public enum JSONStyle: Sendable {
        /// For reading: Data as a base64 string, dates as ISO 8601 strings (a date
        /// without one as its number of seconds since 2001-01-01 UTC), encoded JSON
        /// embedded. Types are not kept (a date reads back as a string).
        case plain
        /// For export and import: every value reads back as the same type and the same
        /// bytes. Data is `{"$data": "base64"}`; a date `{"$date": "ISO 8601"}`, or
        /// `{"$date": seconds since 2001-01-01 UTC}` where the text would not read back
        /// to the same bits; encoded JSON `{"$json": its text as stored}`, or
        /// `{"$jsontext": "its text"}` when that begins or ends with whitespace; a
        /// dictionary whose only key starts with `$` `{"$dictionary": {...}}`. Doubles
        /// always have a decimal point or an exponent. Docs/FileFormat.md has the rules.
        case typed
    }

    /// The value as JSON text, with dictionary keys sorted; `pretty` puts each
    /// member on a line of its own.
    @_spi(Tools) public func jsonText(style: JSONStyle = .plain, pretty: Bool = false) -> String {
        jsonNode(style: style).text(pretty: pretty)
    }

    func jsonNode(style: JSONStyle) -> JSONNode {
        func tagged(_ tag: String, _ node: JSONNode) -> JSONNode {
            style == .typed ? .object([(tag, node)]) : node
        }
        switch self {
        case .string(let string):
            return .string(string)
        case .integer(let number):
            return .number(String(number))
        case .double(let number):
            let text = "\(number)"
            return .number(Self.isIntegerText(text) ? text + ".0" : text)
        case .bool(let flag):
            return .bool(flag)
        case .data(let data):
            return tagged("$data", .string(data.base64EncodedString()))
        case .date(let date):
            let interval = date.timeIntervalSinceReferenceDate
            guard style == .typed else { return .string(ISO8601.format(date)) }
            if let text = ISO8601.text(forInterval: interval), ISO8601.interval(parsing: text)?.bitPattern == interval.bitPattern {
                return tagged("$date", .string(text))
            }
            // No text, or none that reads back to these bits (-0.0): the number is exact.
            return tagged("$date", .number("\(interval)"))
        case .array(let elements):
            return .array(elements.map { $0.jsonNode(style: style) })
        case .dictionary(let entries):
            return Self.objectNode(entries.keys.sorted().map { ($0, entries[$0]!.jsonNode(style: style)) }, style: style)
        case .json(let data):
            guard style == .typed else {
                // Stored JSON was checked when it was stored; damage is shown as a string.
                return (try? JSONParser.parse([UInt8](data))) ?? .string(String(decoding: data, as: UTF8.self))
            }
            if let text = Self.embeddableText(data) { return tagged("$json", .verbatim(text)) }
            // Reading "$json" drops the whitespace around the value, so such text goes as a string.
            return tagged("$jsontext", .string(String(decoding: data, as: UTF8.self)))
        }
    }

    /// An object of `members`, in their order: in the typed style, one whose only key
    /// starts with `$` is written `{"$dictionary": {...}}`, since it would read back as
    /// a tag. A dictionary value and a whole suite's export are both written this way.
    static func objectNode(_ members: [(key: String, value: JSONNode)], style: JSONStyle) -> JSONNode {
        let node = JSONNode.object(members)
        guard style == .typed, members.count == 1, members[0].key.hasPrefix("$") else { return node }
        return .object([("$dictionary", node)])
    }

    /// Stored JSON text that can be embedded as it is: valid, and neither beginning nor
    /// ending with whitespace.
    private static func embeddableText(_ data: Data) -> String? {
        let bytes = [UInt8](data)
        guard !JSONParser.isWhitespace(bytes.first), !JSONParser.isWhitespace(bytes.last),
              (try? JSONParser.parse(bytes)) != nil
        else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reads a value from JSON text in the `.typed` style (plain JSON is typed JSON
    /// without tags: numbers with a point or exponent become doubles, others integers).
    ///
    /// - Throws: `SuiteError` `.invalidValue` for text that is not JSON, for `null`,
    ///   for an integer beyond 64 bits or a double beyond the finite doubles, for a key
    ///   twice in one object, and for an unknown or malformed tag (an object whose only
    ///   key starts with `$`).
    @_spi(Tools) public init(jsonText: String) throws {
        self = try SuiteValue(Self.typedNode(parsing: jsonText))
    }

    /// Typed JSON text parsed, not yet read as a value.
    ///
    /// - Throws: `SuiteError` `.invalidValue` for text that is not JSON.
    static func typedNode(parsing text: String) throws -> JSONNode {
        do {
            // "$json" values are kept as their text, so that they are stored byte for byte.
            return try JSONParser.parse(text, verbatimKey: "$json")
        } catch {
            throw SuiteError(.invalidValue, message: "The text is not valid JSON: \(error).")
        }
    }

    init(_ node: JSONNode) throws {
        switch node {
        case .string(let string):
            self = .string(string)
        case .bool(let flag):
            self = .bool(flag)
        case .null:
            throw SuiteError(.invalidValue, message: "null cannot be stored; leave the key out instead.")
        case .number(let text):
            if !Self.isIntegerText(text) {
                self = .double(try Self.double(fromJSONNumber: text))
            } else if let integer = Int(text) {
                self = .integer(integer)
            } else {
                throw SuiteError(.invalidValue, message: "The integer \(text) is outside the 64-bit range, \(Int.min) to \(Int.max); "
                                 + "write it with a decimal point to store it as a double.")
            }
        case .verbatim(let text):
            // A "$json" member of a dictionary rather than a tag: its value as any other.
            self = try SuiteValue(jsonText: text)
        case .array(let elements):
            self = .array(try elements.map(SuiteValue.init))
        case .object(let members):
            if members.count == 1, let (tag, inner) = members.first, tag.hasPrefix("$") {
                self = try SuiteValue(tag: tag, inner)
            } else {
                self = .dictionary(try Self.entries(members))
            }
        }
    }

    /// The value an object whose only key starts with "$" stands for.
    private init(tag: String, _ inner: JSONNode) throws {
        func invalid(_ expected: String) -> SuiteError {
            SuiteError(.invalidValue, message: "\"\(tag)\" must hold \(expected).")
        }
        switch tag {
        case "$data":
            guard case .string(let base64) = inner, let data = Data(strictBase64: base64) else { throw invalid("a strict base64 string") }
            self = .data(data)
        case "$date":
            let interval: Double? = switch inner {
            case .string(let text): ISO8601.interval(parsing: text)
            case .number(let text): try? Self.double(fromJSONNumber: text)
            default: nil
            }
            guard let interval else {
                throw invalid("an ISO 8601 date such as \"2026-11-22T10:15:00Z\", or a finite number of seconds since 2001-01-01 UTC")
            }
            self = .date(Date(timeIntervalSinceReferenceDate: interval))
        case "$json":
            // Parsed by `init(jsonText:)`, `inner` is the embedded text exactly as written.
            self = .json(Data(inner.text.utf8))
        case "$jsontext":
            guard case .string(let text) = inner, (try? JSONParser.parse(text)) != nil else { throw invalid("a string of valid JSON text") }
            self = .json(Data(text.utf8))
        case "$dictionary":
            guard case .object(let members) = inner else { throw invalid("an object") }
            self = .dictionary(try Self.entries(members))
        case Suite.defaultMark:
            // Not a value: it marks one, and only where an import reads it.
            throw SuiteError(.invalidValue, message: "\"\(tag)\" is not a value: it marks a first-access default, and only around "
                             + "the value of a key of an export's top-level object; it cannot be stored, nested in a value or doubled. "
                             + "Write a dictionary with such a key as {\"$dictionary\": {\"\(tag)\": ...}}.")
        default:
            throw SuiteError(.invalidValue, message: "\"\(tag)\" is not a tag: an object whose only key starts with \"$\" is one. "
                             + "Write a dictionary with such a key as {\"$dictionary\": {\"\(tag)\": ...}}.")
        }
    }

    /// The members of an object as a dictionary, each value read as typed JSON.
    private static func entries(_ members: [(key: String, value: JSONNode)]) throws -> [String: SuiteValue] {
        try entries(members) { _, value in try SuiteValue(value) }
    }

    /// The members of an object by key, each read by `read` (given its key and its
    /// value), refusing a key twice: a dictionary value's members, and those of a whole
    /// suite's import.
    static func entries<Entry>(_ members: [(key: String, value: JSONNode)],
                               reading read: (String, JSONNode) throws -> Entry) throws -> [String: Entry] {
        var entries: [String: Entry] = [:]
        for member in members {
            // Swift keys are equal when canonically equivalent, so "é" spelled two ways is one key.
            guard entries.updateValue(try read(member.key, member.value), forKey: member.key) == nil else {
                throw SuiteError(.invalidValue, key: member.key,
                                 message: "The key is in one object twice (perhaps spelled two canonically equivalent ways).")
            }
        }
        return entries
    }

    /// Whether a number's text has neither a point nor an exponent: an integer's, in typed JSON.
    private static func isIntegerText(_ text: String) -> Bool {
        !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" })
    }

    /// A JSON number as a double, refused when it is beyond the finite doubles or, not
    /// being zero, rounds to zero.
    private static func double(fromJSONNumber text: String) throws -> Double {
        let significand = text.prefix(while: { $0 != "e" && $0 != "E" })
        guard let number = Double(text), number.isFinite,
              number != 0 || !significand.contains(where: { ("1"..."9").contains($0) })
        else { throw SuiteError(.invalidValue, message: "The number \(text) is outside the range of a double.") }
        return number
    }
}

extension SuiteValue: CustomStringConvertible {
    /// The value as plain JSON text.
    public var description: String { jsonText(style: .plain) }
}
