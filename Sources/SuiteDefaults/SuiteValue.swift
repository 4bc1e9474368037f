#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A value a suite can store: the property-list types of `UserDefaults`, plus the
/// JSON text of any `Encodable`.
///
/// Literals build values directly, so defaults read naturally:
/// `suite.register(defaults: ["units.system": "metric", "count": 0])`.
public enum SuiteValue: Sendable, Hashable {
    /// How deep arrays and dictionaries may nest in a stored value; a deeper one is
    /// refused with `.invalidValue`.
    public static let maximumNestingDepth = ValueEncoding.maximumDepth

    case string(String)
    case integer(Int)
    /// A finite number; NaN and infinities are refused when stored.
    case double(Double)
    case bool(Bool)
    case data(Data)
    /// Stored as seconds since 2001-01-01 UTC in a 64-bit float, so it round-trips exactly.
    case date(Date)
    case array([SuiteValue])
    case dictionary([String: SuiteValue])
    /// The JSON text of an `Encodable` value, as written by `set(encodable:forKey:)`.
    case json(Data)

    /// The name of the case, as tools print it ("string", "integer", ...).
    public var typeName: String {
        switch self {
        case .string: "string"
        case .integer: "integer"
        case .double: "double"
        case .bool: "bool"
        case .data: "data"
        case .date: "date"
        case .array: "array"
        case .dictionary: "dictionary"
        case .json: "json"
        }
    }
}

extension SuiteValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension SuiteValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .integer(value) }
}

extension SuiteValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension SuiteValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension SuiteValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: SuiteValue...) { self = .array(elements) }
}

extension SuiteValue: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, SuiteValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
