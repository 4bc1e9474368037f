import Foundation
import SuiteDefaults

/// The mapping between the `Any` values of `UserDefaults` and the `SuiteValue`s a
/// suite stores. It is total: every value either maps, or is refused with a
/// `SuiteError` of code `.invalidValue` that names its type, where Foundation's
/// `UserDefaults` would trap.
///
/// | `Any` written | stored as | read back by `object(forKey:)` |
/// |---|---|---|
/// | `String`, `NSString` | `.string` | `String` |
/// | `Bool`, an `NSNumber` made from a `Bool` | `.bool` | `Bool` |
/// | `Int`, `Int8`…`Int64`, `UInt8`…`UInt32`, `UInt`/`UInt64` up to `Int.max`, an integer `NSNumber` | `.integer` | `Int` |
/// | `Double`, `Float`, `CGFloat`, a floating-point `NSNumber`, `Decimal`, `NSDecimalNumber` | `.double` (a `Decimal` rounded to the nearest `Double`, as a property list stores it) | `Double` |
/// | `Data`, `NSData` | `.data` | `Data` |
/// | `Date`, `NSDate` | `.date` | `Date` |
/// | `URL`, `NSURL` | `.string`: a file URL's path, any other URL's absolute string | `String` (`url(forKey:)` makes it a `URL` again) |
/// | `[Any]`, `NSArray` of any of these | `.array` | `[Any]` |
/// | `[String: Any]`, `NSDictionary` with string keys | `.dictionary` | `[String: Any]` |
/// | `SuiteValue` | itself | as its case says |
/// | — (written through `Suite.set(encodable:forKey:)`) | `.json` | `Data`: the JSON text, which `JSONDecoder` decodes |
///
/// Refused, storing nothing: `NSNull`, a `nil` inside an `Any` or inside an array, a
/// dictionary with keys that are not strings, `UInt`/`UInt64` above `Int.max`, NaN and
/// infinities, and any other type (a custom class or struct, an enum, a `Set`, a
/// `Substring`): what Foundation's `UserDefaults` refuses with a trap, and NaN,
/// which a suite refuses everywhere.
public enum PropertyListBridge {
    /// The stored form of a property-list value.
    ///
    /// - Parameter key: the key it is for, named in the error.
    /// - Throws: `SuiteError` with code `.invalidValue` when `value` is not a
    ///   property-list value (see the table above); nothing is stored then.
    public static func suiteValue(from value: Any, key: String? = nil) throws(SuiteError) -> SuiteValue {
        if let converted = convert(value) { return converted }
        throw SuiteError(.invalidValue, key: key, message: refusal(of: value))
    }

    /// The value as `object(forKey:)` returns it (see the table above).
    public static func object(from value: SuiteValue) -> Any {
        switch value {
        case .string(let string): string
        case .integer(let integer): integer
        case .double(let double): double
        case .bool(let flag): flag
        case .data(let data), .json(let data): data
        case .date(let date): date
        case .array(let values): values.map(object(from:))
        case .dictionary(let values): values.mapValues(object(from:))
        }
    }

    /// The class of the `NSNumber`s Foundation makes from `Bool`s (`NSNumber(value: true)`,
    /// `true as NSNumber`): on Linux a class of its own, so booleans stay booleans.
    private static let booleanNumberClass = ObjectIdentifier(type(of: NSNumber(value: true)))

    private static func convert(_ value: Any) -> SuiteValue? {
        if let value = value as? SuiteValue { return value }
        if type(of: value) is NSNumber.Type, let number = value as? NSNumber { return convert(number) }
        switch value {
        case let flag as Bool: return .bool(flag)
        case let integer as Int: return .integer(integer)
        case let string as String: return .string(string)
        case let double as Double: return .double(double)
        case let float as Float: return .double(Double(float))
        case let float as CGFloat: return .double(Double(float))
        case let integer as Int64: return .integer(Int(integer))
        case let integer as Int32: return .integer(Int(integer))
        case let integer as Int16: return .integer(Int(integer))
        case let integer as Int8: return .integer(Int(integer))
        case let integer as UInt8: return .integer(Int(integer))
        case let integer as UInt16: return .integer(Int(integer))
        case let integer as UInt32: return .integer(Int(integer))
        case let integer as UInt64: return Int(exactly: integer).map(SuiteValue.integer)
        case let integer as UInt: return Int(exactly: integer).map(SuiteValue.integer)
        case let decimal as Decimal: return .double(NSDecimalNumber(decimal: decimal).doubleValue)
        case let data as Data: return .data(data)
        case let date as Date: return .date(date)
        case let url as URL: return url.suiteValue
        case let url as NSURL: return (url as URL).suiteValue
        case let array as [Any]:
            var values: [SuiteValue] = []
            values.reserveCapacity(array.count)
            for element in array {
                guard let converted = convert(element) else { return nil }
                values.append(converted)
            }
            return .array(values)
        case let dictionary as [String: Any]:
            var values: [String: SuiteValue] = [:]
            values.reserveCapacity(dictionary.count)
            for (key, element) in dictionary {
                guard let converted = convert(element) else { return nil }
                values[key] = converted
            }
            return .dictionary(values)
        default:
            return nil
        }
    }

    private static func convert(_ number: NSNumber) -> SuiteValue? {
        if ObjectIdentifier(type(of: number)) == booleanNumberClass { return .bool(number.boolValue) }
        if number is NSDecimalNumber { return .double(number.doubleValue) }
        switch String(cString: number.objCType) {
        case "f", "d": return .double(number.doubleValue)
        case "Q", "L", "I": return Int(exactly: number.uint64Value).map(SuiteValue.integer)
        default: return .integer(number.intValue)
        }
    }

    /// Why `value` (or the first part of it) cannot be stored.
    private static func refusal(of value: Any) -> String {
        let offender = firstRefusedPart(of: value) ?? value
        let what: String
        switch offender {
        case is NSNull:
            what = "NSNull is not a property-list value"
        case let number as UInt64:
            what = "\(number) is larger than Int.max"
        case let number as UInt:
            what = "\(number) is larger than Int.max"
        case let number as NSNumber where type(of: offender) is NSNumber.Type:
            what = "the number \(number) is larger than Int.max"
        case let dictionary as [AnyHashable: Any]:
            let key = dictionary.keys.first { !($0.base is String) }
            what = "a dictionary's keys must be strings, and \(key.map { "\($0.base) (\(type(of: $0.base)))" } ?? "a key") is not"
        default:
            what = Mirror(reflecting: offender).displayStyle == .optional
                ? "nil cannot be stored inside a value"
                : "a \(type(of: offender)) is not a property-list value"
        }
        return "\(what); nothing was stored. UserDefaults stores String, Bool, integers, Double, Float, Data, Date, URL, and arrays and string-keyed dictionaries of them (Foundation traps on anything else)."
    }

    /// The first element, at any depth, that does not map; nil when `value` itself is it.
    private static func firstRefusedPart(of value: Any) -> Any? {
        if type(of: value) is NSNumber.Type { return nil }
        if let array = value as? [Any] {
            for element in array where convert(element) == nil { return firstRefusedPart(of: element) ?? element }
        } else if let dictionary = value as? [String: Any] {
            for (_, element) in dictionary.sorted(by: { $0.key < $1.key }) where convert(element) == nil {
                return firstRefusedPart(of: element) ?? element
            }
        }
        return nil
    }
}
