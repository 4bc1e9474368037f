import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults
import ToolSupport

// MARK: Writing values

/// The type words of `write`, after their dash or two.
enum TypeFlag {
    case scalar(SuiteValue.Kind)
    case hexData
    case array, arrayAdd, dictionary, dictionaryAdd

    static let byName: [String: TypeFlag] = [
        "string": .scalar(.string), "int": .scalar(.integer), "integer": .scalar(.integer),
        "float": .scalar(.double), "double": .scalar(.double), "bool": .scalar(.bool), "boolean": .scalar(.bool),
        "date": .scalar(.date), "data": .hexData, "base64": .scalar(.data), "data-base64": .scalar(.data),
        "json": .scalar(.json), "array": .array, "array-add": .arrayAdd, "dict": .dictionary, "dict-add": .dictionaryAdd,
    ]

    /// The flag `word` names: -int or --int; nil for any other word.
    init?(_ word: String) {
        let name = word.hasPrefix("--") ? word.dropFirst(2) : word.hasPrefix("-") ? word.dropFirst() : nil
        guard let name, let flag = Self.byName[String(name)] else { return nil }
        self = flag
    }
}

/// What `write` does to KEY.
enum WriteAction {
    case set(SuiteValue)
    case append([SuiteValue])
    case merge([String: SuiteValue])
}

/// Reads the words after KEY: [TYPE] VALUE, or a collection flag and its words.
func writeAction(_ words: [String], of verb: Verb) throws -> WriteAction {
    let shape = "write takes SUITE KEY [TYPE] VALUE, or SUITE KEY -array|-dict ... (see help write)"
    guard let flag = TypeFlag(words[0]) else {
        guard words.count == 1 else {
            throw verb.usageError(words[0].hasPrefix("-")
                ? "unknown type \(words[0]); see help write for the types" : "\(shape); for several values use -array")
        }
        return .set(.string(words[0]))
    }
    let values = Array(words.dropFirst())
    func pairs() throws -> [String: SuiteValue] {
        guard values.count % 2 == 0 else {
            throw verb.usageError("\(words[0]) takes KEY VALUE pairs, and \(values.last!) has no value; nothing was written")
        }
        return Dictionary(stride(from: 0, to: values.count, by: 2).map { (values[$0], SuiteValue.string(values[$0 + 1])) },
                          uniquingKeysWith: { _, last in last })
    }
    switch flag {
    case .array: return .set(.array(values.map(SuiteValue.string)))
    case .arrayAdd: return .append(values.map(SuiteValue.string))
    case .dictionary: return .set(.dictionary(try pairs()))
    case .dictionaryAdd: return .merge(try pairs())
    case .scalar, .hexData:
        guard values.count == 1 else {
            throw verb.usageError(values.isEmpty ? "\(words[0]) needs a value after it"
                : "\(words[0]) takes one value; for several, use -array. \(shape)")
        }
        do {
            if case .scalar(let kind) = flag { return .set(try SuiteValue(parsing: values[0], as: kind)) }
            return .set(try SuiteValue(parsingHexData: values[0]))
        } catch let error as SuiteError {
            let hint = if case .hexData = flag { " For base64, give --base64 (or -data-base64)." } else { "" }
            throw ToolError.usage("\(error.message)\(hint) Nothing was written.")
        }
    }
}
