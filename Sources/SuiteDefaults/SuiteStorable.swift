#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A Swift type that a suite stores directly, by converting to and from `SuiteValue`.
///
/// The standard types conform: `String`, `Int`, `Int64`, `Int32`, `Double`, `Float`,
/// `Bool`, `Data`, `Date`, `SuiteValue`, and arrays and string-keyed dictionaries of
/// storable types. `RawRepresentable` types with a storable raw value (an enum such
/// as `UnitSystem`) need no conformance: the accessors take them directly.
public protocol SuiteStorable: Sendable {
    /// The value as stored.
    var suiteValue: SuiteValue { get }
    /// Reads the value back; nil when `suiteValue` holds another type.
    init?(suiteValue: SuiteValue)
}

extension SuiteValue: SuiteStorable {
    public var suiteValue: SuiteValue { self }
    public init?(suiteValue: SuiteValue) { self = suiteValue }
}

extension String: SuiteStorable {
    public var suiteValue: SuiteValue { .string(self) }
    public init?(suiteValue: SuiteValue) {
        guard case .string(let value) = suiteValue else { return nil }
        self = value
    }
}

extension Bool: SuiteStorable {
    public var suiteValue: SuiteValue { .bool(self) }
    public init?(suiteValue: SuiteValue) {
        guard case .bool(let value) = suiteValue else { return nil }
        self = value
    }
}

extension Data: SuiteStorable {
    public var suiteValue: SuiteValue { .data(self) }
    public init?(suiteValue: SuiteValue) {
        guard case .data(let value) = suiteValue else { return nil }
        self = value
    }
}

extension Date: SuiteStorable {
    public var suiteValue: SuiteValue { .date(self) }
    public init?(suiteValue: SuiteValue) {
        guard case .date(let value) = suiteValue else { return nil }
        self = value
    }
}

/// Integers read back from integer values, and from doubles that hold an integer exactly.
extension SuiteStorable where Self: FixedWidthInteger {
    public var suiteValue: SuiteValue { .integer(Int(self)) }
    public init?(suiteValue: SuiteValue) {
        switch suiteValue {
        case .integer(let value):
            guard let exact = Self(exactly: value) else { return nil }
            self = exact
        case .double(let value):
            guard let exact = Self(exactly: value) else { return nil }
            self = exact
        default:
            return nil
        }
    }
}

extension Int: SuiteStorable {}
extension Int64: SuiteStorable {}
extension Int32: SuiteStorable {}

/// Floating-point numbers read back from doubles, and from integers they hold exactly.
extension SuiteStorable where Self: BinaryFloatingPoint {
    public var suiteValue: SuiteValue { .double(Double(self)) }
    public init?(suiteValue: SuiteValue) {
        switch suiteValue {
        case .double(let value):
            self = Self(value)
        case .integer(let value):
            guard let exact = Self(exactly: value) else { return nil }
            self = exact
        default:
            return nil
        }
    }
}

extension Double: SuiteStorable {}
extension Float: SuiteStorable {}

extension Array: SuiteStorable where Element: SuiteStorable {
    public var suiteValue: SuiteValue { .array(map(\.suiteValue)) }
    public init?(suiteValue: SuiteValue) {
        guard case .array(let values) = suiteValue else { return nil }
        var elements: [Element] = []
        elements.reserveCapacity(values.count)
        for value in values {
            guard let element = Element(suiteValue: value) else { return nil }
            elements.append(element)
        }
        self = elements
    }
}

extension Dictionary: SuiteStorable where Key == String, Value: SuiteStorable {
    public var suiteValue: SuiteValue { .dictionary(mapValues(\.suiteValue)) }
    public init?(suiteValue: SuiteValue) {
        guard case .dictionary(let values) = suiteValue else { return nil }
        var result: [String: Value] = [:]
        result.reserveCapacity(values.count)
        for (key, value) in values {
            guard let element = Value(suiteValue: value) else { return nil }
            result[key] = element
        }
        self = result
    }
}
