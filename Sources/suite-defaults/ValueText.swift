import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults
import ToolSupport

// MARK: Printing values

/// The type as `read-type` and the lines of `read` name it: macOS `defaults`' names,
/// and json for encoded JSON.
func typeName(_ value: SuiteValue) -> String {
    switch value {
    case .string: "string"
    case .integer: "integer"
    case .double: "float"
    case .bool: "boolean"
    case .date: "date"
    case .data: "data"
    case .array: "array"
    case .dictionary: "dictionary"
    case .json: "json"
    }
}

/// A number, a Boolean or a date as plain JSON writes it, without quotes.
func scalarText(_ value: SuiteValue) -> String {
    value.jsonText(style: .plain).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
}

/// A value alone, as `read SUITE KEY` prints it.
func printable(_ value: SuiteValue) -> String {
    switch value {
    case .string(let text): text
    case .data(let bytes): bytes.hexText
    case .array, .dictionary: value.jsonText(style: .plain, pretty: true)
    default: scalarText(value)
    }
}

/// A key in a line of `read`: as it is, unless quoting is needed to read the line back.
func lineKey(_ key: String) -> String {
    let plain = !key.isEmpty && !key.unicodeScalars.contains { scalar in
        scalar == "=" || scalar == "\"" || scalar == "\\" || scalar.properties.isWhitespace
            || scalar.properties.generalCategory == .control
    }
    return plain ? key : SuiteValue.string(key).jsonText(style: .plain)
}

/// A value in a line of `read`, on one line whatever it holds.
func lineValue(_ value: SuiteValue) -> String {
    switch value {
    case .string: value.jsonText(style: .plain)
    case .data(let bytes): "<" + bytes.hexText + ">"
    case .array, .dictionary: value.jsonText(style: .typed)
    case .json: value.jsonText(style: .plain)
    default: scalarText(value)
    }
}

/// The lines of `read SUITE`: "key = value (type)", sorted by key.
func lines(_ values: [String: SuiteValue]) -> [String] {
    values.keys.sorted().map { key in "\(lineKey(key)) = \(lineValue(values[key]!)) (\(typeName(values[key]!)))" }
}
