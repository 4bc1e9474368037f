#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Write access to a suite: what `Suite` (each write its own commit) and
/// `SuiteTransaction` (writes that commit together) share.
public protocol SuiteWritable: SuiteReadable, AnyObject {
    /// Stores `value` for `key`, or removes `key` when `value` is nil.
    ///
    /// - Throws: `SuiteError` for an invalid key or value before anything is written,
    ///   or for a failed write, after which nothing stored has changed.
    func setValue(_ value: SuiteValue?, forKey key: String) throws
    /// Removes every stored key.
    func removeAll() throws
}

extension SuiteWritable {
    /// Stores a value of any storable type: strings, numbers, Booleans, data, dates,
    /// and arrays and dictionaries of them.
    public func set<T: SuiteStorable>(_ value: T, forKey key: String) throws {
        try setValue(value.suiteValue, forKey: key)
    }

    /// Stores a `RawRepresentable` (such as an enum) as its raw value.
    @_disfavoredOverload
    public func set<T: RawRepresentable>(_ value: T, forKey key: String) throws where T.RawValue: SuiteStorable {
        try setValue(value.rawValue.suiteValue, forKey: key)
    }

    /// Stores any `Encodable` as JSON text; read it back with `decodable(_:forKey:)`.
    /// `Decimal` values round-trip exactly.
    public func set<T: Encodable>(encodable value: T, forKey key: String) throws {
        try setValue(.json(try SuiteValue.encodeJSON(value, key: key)), forKey: key)
    }

    /// Removes the value stored for `key`; removing an absent key does nothing.
    public func removeValue(forKey key: String) throws {
        try setValue(nil, forKey: key)
    }
}

extension SuiteValue {
    /// `type` decoded from encoded JSON, or from JSON stored as data; nil for any
    /// other value, or JSON that does not decode as `type`.
    static func decodeJSON<T: Decodable>(_ type: T.Type, from stored: SuiteValue) -> T? {
        switch stored {
        case .json(let data), .data(let data): try? JSONDecoder().decode(T.self, from: data)
        default: nil
        }
    }

    /// The JSON text that `set(encodable:forKey:)` stores: keys sorted, so that equal
    /// values encode to equal bytes and compare equal.
    static func encodeJSON<T: Encodable>(_ value: T, key: String) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return try encoder.encode(value)
        } catch {
            throw SuiteError(.encodingFailed, key: key, message: "The value could not be encoded as JSON: \(error).")
        }
    }
}
