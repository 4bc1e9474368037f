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
        switch convert(value, depth: 0) {
        case .converted(let converted): return converted
        case .refused(let part, let tooDeep): throw SuiteError(.invalidValue, key: key, message: refusal(of: part, tooDeep: tooDeep))
        }
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

    /// A value converted, or the first part of it (at any depth) that cannot be.
    private enum Conversion {
        case converted(SuiteValue)
        /// `part` does not map; `tooDeep` when it is an array or dictionary past the
        /// nesting limit.
        case refused(part: Any, tooDeep: Bool)
    }

    /// Converts in one pass, refusing past the nesting limit before going deeper, so
    /// that no value, however deep, costs more than one walk or a deep stack.
    private static func convert(_ value: Any, depth: Int) -> Conversion {
        if let value = value as? SuiteValue { return .converted(value) }
        if type(of: value) is NSNumber.Type, let number = value as? NSNumber {
            return convert(number).map(Conversion.converted) ?? .refused(part: value, tooDeep: false)
        }
        switch value {
        case let array as [Any]:
            guard depth <= SuiteValue.maximumNestingDepth else { return .refused(part: value, tooDeep: true) }
            var values: [SuiteValue] = []
            values.reserveCapacity(array.count)
            for element in array {
                switch convert(element, depth: depth + 1) {
                case .converted(let converted): values.append(converted)
                case .refused(let part, let tooDeep): return .refused(part: part, tooDeep: tooDeep)
                }
            }
            return .converted(.array(values))
        case let dictionary as [String: Any]:
            guard depth <= SuiteValue.maximumNestingDepth else { return .refused(part: value, tooDeep: true) }
            var values: [String: SuiteValue] = [:]
            values.reserveCapacity(dictionary.count)
            // In key order, so that the part named is the same every time.
            for (key, element) in dictionary.sorted(by: { $0.key < $1.key }) {
                switch convert(element, depth: depth + 1) {
                case .converted(let converted): values[key] = converted
                case .refused(let part, let tooDeep): return .refused(part: part, tooDeep: tooDeep)
                }
            }
            return .converted(.dictionary(values))
        default:
            return convertScalar(value).map(Conversion.converted) ?? .refused(part: value, tooDeep: false)
        }
    }

    private static func convertScalar(_ value: Any) -> SuiteValue? {
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
        default: return nil
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

    /// Why `offender`, the part of a value that does not map, cannot be stored.
    private static func refusal(of offender: Any, tooDeep: Bool) -> String {
        let what: String
        switch offender {
        case _ where tooDeep:
            what = "arrays and dictionaries nest more than \(SuiteValue.maximumNestingDepth) levels deep"
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
}
