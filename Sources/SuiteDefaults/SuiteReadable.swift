#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Read access to a suite's values: what `Suite` and `SuiteTransaction` share.
///
/// A read returns the stored value if there is one, else the registered default
/// (see `Suite.register(defaults:)`), else nil.
public protocol SuiteReadable {
    /// The value stored for `key`, ignoring registered defaults; nil when absent.
    func storedValue(forKey key: String) -> SuiteValue?
    /// The registered default for `key`; nil when none was registered.
    func registeredDefault(forKey key: String) -> SuiteValue?
}

extension SuiteReadable {
    /// The stored value, else the registered default, else nil.
    public func value(forKey key: String) -> SuiteValue? {
        storedValue(forKey: key) ?? registeredDefault(forKey: key)
    }

    /// The value as `type`; nil when absent or of another type.
    public func value<T: SuiteStorable>(_ type: T.Type, forKey key: String) -> T? {
        value(forKey: key).flatMap(T.init(suiteValue:))
    }

    /// The value as a `RawRepresentable` (such as an enum); nil when absent, of
    /// another type, or not a valid raw value.
    @_disfavoredOverload
    public func value<T: RawRepresentable>(_ type: T.Type, forKey key: String) -> T?
    where T.RawValue: SuiteStorable {
        value(T.RawValue.self, forKey: key).flatMap(T.init(rawValue:))
    }

    /// A string; nil when absent or not a string.
    public func string(forKey key: String) -> String? {
        // Written out rather than through value(_:forKey:): the most frequent read.
        guard case .string(let string)? = value(forKey: key) else { return nil }
        return string
    }
    /// An integer; nil when absent or not an integer (a double holding an integer exactly counts).
    // These name their type rather than going through value(_:forKey:): a generic
    // call from a protocol extension looks up its type's metadata at run time, which
    // costs a read more than the rest of it.
    public func integer(forKey key: String) -> Int? { value(forKey: key).flatMap(Int.init(suiteValue:)) }
    /// A double; nil when absent or not a number.
    public func double(forKey key: String) -> Double? { value(forKey: key).flatMap(Double.init(suiteValue:)) }
    /// A Boolean; nil when absent or not a Boolean.
    public func bool(forKey key: String) -> Bool? {
        guard case .bool(let flag)? = value(forKey: key) else { return nil }
        return flag
    }
    /// Bytes; nil when absent or not data.
    public func data(forKey key: String) -> Data? { value(forKey: key).flatMap(Data.init(suiteValue:)) }
    /// A date; nil when absent or not a date.
    public func date(forKey key: String) -> Date? { value(forKey: key).flatMap(Date.init(suiteValue:)) }
    /// An array; nil when absent or not an array.
    public func array(forKey key: String) -> [SuiteValue]? { value(forKey: key).flatMap([SuiteValue].init(suiteValue:)) }
    /// A dictionary; nil when absent or not a dictionary.
    public func dictionary(forKey key: String) -> [String: SuiteValue]? {
        value(forKey: key).flatMap([String: SuiteValue].init(suiteValue:))
    }

    /// Decodes a value stored with `set(encodable:forKey:)`, or JSON stored as `Data`
    /// (as most `UserDefaults` code stores Codable values).
    ///
    /// - Returns: nil when nothing is stored for `key`.
    /// - Throws: `SuiteError` with code `.typeMismatch` when the stored value is
    ///   neither encoded JSON nor data, or does not decode as `type`.
    public func decodable<T: Decodable>(_ type: T.Type, forKey key: String) throws -> T? {
        guard let stored = value(forKey: key) else { return nil }
        let json: Data
        switch stored {
        case .json(let data), .data(let data): json = data
        default:
            throw SuiteError(.typeMismatch, key: key,
                             message: "The value is a \(stored.typeName), not an encoded \(T.self); it was not written with set(encodable:forKey:).")
        }
        do {
            return try JSONDecoder().decode(T.self, from: json)
        } catch {
            throw SuiteError(.typeMismatch, key: key,
                             message: "The stored JSON does not decode as \(T.self): \(error). Store a new value to replace it.")
        }
    }
}
