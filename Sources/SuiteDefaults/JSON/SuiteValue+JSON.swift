import Foundation

extension SuiteValue {
    /// How `SuiteValue` is written as JSON.
    public enum JSONStyle: Sendable {
        /// For reading: Data as a base64 string, dates as ISO 8601 strings, encoded
        /// JSON embedded as it is. Types are not kept (a date reads back as a string).
        case plain
        /// For export and import: every value reads back as the same type.
        /// Data is `{"$data": "base64"}`, a date `{"$date": "ISO 8601"}`, encoded JSON
        /// `{"$json": ...}`; doubles always have a decimal point or an exponent.
        case typed
    }

    /// The value as JSON text, with dictionary keys sorted; `pretty` puts each
    /// member on a line of its own.
    public func jsonText(style: JSONStyle = .plain, pretty: Bool = false) -> String {
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
            return .number(text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? text : text + ".0")
        case .bool(let flag):
            return .bool(flag)
        case .data(let data):
            return tagged("$data", .string(data.base64EncodedString()))
        case .date(let date):
            return tagged("$date", .string(ISO8601.format(date)))
        case .array(let elements):
            return .array(elements.map { $0.jsonNode(style: style) })
        case .dictionary(let entries):
            return .object(entries.keys.sorted().map { ($0, entries[$0]!.jsonNode(style: style)) })
        case .json(let data):
            // Stored JSON was checked when it was stored; damage is shown as a string.
            let node = (try? JSONParser.parse([UInt8](data))) ?? .string(String(decoding: data, as: UTF8.self))
            return tagged("$json", node)
        }
    }

    /// Reads a value from JSON text in the `.typed` style (plain JSON is typed JSON
    /// without tags: numbers with a point or exponent become doubles, others integers).
    ///
    /// - Throws: `SuiteError` `.invalidValue` for text that is not JSON, for `null`,
    ///   or for a malformed tag.
    public init(jsonText: String) throws {
        let node: JSONNode
        do {
            node = try JSONParser.parse(jsonText)
        } catch {
            throw SuiteError(.invalidValue, message: "The text is not valid JSON: \(error).")
        }
        self = try SuiteValue(node)
    }

    init(_ node: JSONNode) throws {
        func invalid(_ why: String) -> SuiteError { SuiteError(.invalidValue, message: why) }
        switch node {
        case .string(let string):
            self = .string(string)
        case .bool(let flag):
            self = .bool(flag)
        case .null:
            throw invalid("null cannot be stored; leave the key out instead.")
        case .number(let text):
            if !text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }), let integer = Int(text) {
                self = .integer(integer)
            } else if let number = Double(text), number.isFinite {
                self = .double(number)
            } else {
                throw invalid("The number \(text) is out of range.")
            }
        case .array(let elements):
            self = .array(try elements.map(SuiteValue.init))
        case .object(let members):
            if members.count == 1, let (tag, inner) = members.first, tag.hasPrefix("$") {
                switch (tag, inner) {
                case ("$data", .string(let base64)):
                    guard let data = Data(strictBase64: base64) else { throw invalid("\"$data\" holds no valid base64.") }
                    self = .data(data)
                    return
                case ("$date", .string(let text)):
                    guard let date = ISO8601.parse(text) else { throw invalid("\"$date\" holds no ISO 8601 date: \(text).") }
                    self = .date(date)
                    return
                case ("$json", let embedded):
                    self = .json(Data(embedded.text.utf8))
                    return
                default:
                    break
                }
            }
            var entries: [String: SuiteValue] = [:]
            for member in members { entries[member.key] = try SuiteValue(member.value) }
            self = .dictionary(entries)
        }
    }
}

extension SuiteValue: CustomStringConvertible {
    /// The value as plain JSON text.
    public var description: String { jsonText(style: .plain) }
}
