import Foundation
import SuiteDefaults

/// The conversions of the typed getters, as Apple's Foundation documents them (and
/// whatever the stored type): numbers convert between each other, Booleans are 1 and
/// 0, and strings are parsed.
enum Coercions {
    static func integer(_ value: SuiteValue?) -> Int {
        switch value {
        case .integer(let integer)?: integer
        case .double(let double)?: truncated(double)
        case .bool(let flag)?: flag ? 1 : 0
        case .string(let string)?: NSString(string: string).integerValue
        default: 0
        }
    }

    static func double(_ value: SuiteValue?) -> Double {
        switch value {
        case .integer(let integer)?: Double(integer)
        case .double(let double)?: double
        case .bool(let flag)?: flag ? 1 : 0
        case .string(let string)?: NSString(string: string).doubleValue
        default: 0
        }
    }

    /// `YES` and `true` (in any case) are true, `NO` and `false` false, and any other
    /// string is true when it starts with a non-zero integer: what `CFPreferences`
    /// does for `boolForKey:`.
    static func bool(_ value: SuiteValue?) -> Bool {
        switch value {
        case .bool(let flag)?: flag
        case .integer(let integer)?: integer != 0
        case .double(let double)?: double != 0
        case .string(let string)?: bool(parsing: string)
        default: false
        }
    }

    static func bool(parsing string: String) -> Bool {
        let word = string.trimmingCharacters(in: .whitespaces).lowercased()
        if word == "yes" || word == "true" { return true }
        if word == "no" || word == "false" { return false }
        return NSString(string: string).integerValue != 0
    }

    /// A string; a number as its decimal text (a Boolean as "1" or "0"), as
    /// `stringForKey:` converts `NSNumber`s.
    static func string(_ value: SuiteValue?) -> String? {
        switch value {
        case .string(let string)?: string
        case .integer(let integer)?: String(integer)
        case .double(let double)?: NSNumber(value: double).stringValue
        case .bool(let flag)?: flag ? "1" : "0"
        default: nil
        }
    }

    /// A file URL for a path ("~" expanded), the URL for text with a scheme; never
    /// from data (Foundation would unarchive it, and on Linux traps on anything that
    /// is not a keyed archive).
    static func url(_ value: SuiteValue?) -> URL? {
        value.flatMap(URL.init(suiteValue:))
    }

    /// The integer part of a double, as `integerValue` gives it; 0 for NaN and for
    /// doubles beyond `Int`'s range.
    private static func truncated(_ double: Double) -> Int {
        Int(exactly: double.rounded(.towardZero)) ?? 0
    }
}
