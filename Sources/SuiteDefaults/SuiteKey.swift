#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// A key with its type and its default, so that an app declares each shared
/// preference once, as `@AppStorage` does on Apple platforms:
///
/// ```swift
/// extension SuiteKey where Value == Bool {
///     static let showsTips = SuiteKey("tips.shown", default: true)
/// }
/// suite.value(for: .showsTips)          // the stored value, or true
/// try suite.set(false, for: .showsTips)
/// ```
///
/// A read through a key returns, in this order:
/// 1. the stored value, if it is a valid `Value`;
/// 2. else the default registered for the key's name in this process
///    (`Suite.register(defaults:)`), if it is a valid `Value`;
/// 3. else the key's own default.
///
/// A stored value that is not a valid `Value` reads as absent, with an
/// `invalidStoredValue` diagnostic from `valueStoringDefault(for:)`; it never traps.
///
/// A key of an optional type means "nil when absent", as `@AppStorage var x: T?`:
///
/// ```swift
/// extension SuiteKey where Value == String? {
///     static let nickname = SuiteKey("user.nickname")
/// }
/// suite.value(for: .nickname)            // nil until set
/// try suite.set(nil, for: .nickname)     // removes the value
/// ```
public struct SuiteKey<Value: Sendable>: Sendable {
    /// The key under which the value is stored.
    public let name: String
    private let makeDefault: @Sendable () -> Value
    /// The value as stored; nil removes it (an optional key set to nil).
    let encode: @Sendable (Value) throws -> SuiteValue?
    let decode: @Sendable (SuiteValue) -> Value?

    /// The default: what a read returns when nothing valid is stored. It is computed
    /// each time it is needed, so it may depend on the environment.
    public var defaultValue: Value { makeDefault() }

    /// A key for a storable value (strings, numbers, Booleans, data, dates, arrays and
    /// dictionaries of them).
    public init(_ name: String, default defaultValue: @autoclosure @escaping @Sendable () -> Value) where Value: SuiteStorable {
        self.name = name
        self.makeDefault = defaultValue
        self.encode = { $0.suiteValue }
        self.decode = { Value(suiteValue: $0) }
    }

    /// A key for a `RawRepresentable` (such as an enum), stored as its raw value.
    @_disfavoredOverload
    public init(_ name: String, default defaultValue: @autoclosure @escaping @Sendable () -> Value)
    where Value: RawRepresentable, Value.RawValue: SuiteStorable {
        self.name = name
        self.makeDefault = defaultValue
        self.encode = { $0.rawValue.suiteValue }
        self.decode = { Value.RawValue(suiteValue: $0).flatMap(Value.init(rawValue:)) }
    }

    /// A key for any `Codable` value, stored as JSON (`Decimal`s stay exact). It also
    /// reads JSON stored as `Data`, as most `UserDefaults` code stores Codable values.
    public init(codable name: String, default defaultValue: @autoclosure @escaping @Sendable () -> Value) where Value: Codable {
        self.name = name
        self.makeDefault = defaultValue
        self.encode = { .json(try SuiteValue.encodeJSON($0, key: name)) }
        self.decode = { SuiteValue.decodeJSON(Value.self, from: $0) }
    }

    /// An optional key for a storable value: nil when absent; setting nil removes it.
    public init<Wrapped: SuiteStorable>(_ name: String) where Value == Wrapped? {
        self.name = name
        self.makeDefault = { nil }
        self.encode = { $0?.suiteValue }
        self.decode = { Wrapped(suiteValue: $0).map { .some($0) } }
    }

    /// An optional key for a `RawRepresentable` (such as an enum), stored as its raw
    /// value: nil when absent; setting nil removes it.
    @_disfavoredOverload
    public init<Wrapped: RawRepresentable>(_ name: String) where Value == Wrapped?, Wrapped.RawValue: SuiteStorable {
        self.name = name
        self.makeDefault = { nil }
        self.encode = { $0?.rawValue.suiteValue }
        self.decode = { Wrapped.RawValue(suiteValue: $0).flatMap(Wrapped.init(rawValue:)).map { .some($0) } }
    }

    /// An optional key for any `Codable` value, stored as JSON: nil when absent;
    /// setting nil removes it (rather than storing JSON `null`).
    public init<Wrapped: Codable & Sendable>(codable name: String) where Value == Wrapped? {
        self.name = name
        self.makeDefault = { nil }
        self.encode = { try $0.map { .json(try SuiteValue.encodeJSON($0, key: name)) } }
        self.decode = { SuiteValue.decodeJSON(Wrapped.self, from: $0).map { .some($0) } }
    }

    /// The stored value decoded, or nil when absent; `isInvalid` when something is
    /// stored that is not a `Value`.
    func read(_ stored: SuiteValue?) -> (value: Value?, isInvalid: Bool) {
        guard let stored else { return (nil, false) }
        guard let value = decode(stored) else { return (nil, true) }
        return (value, false)
    }
}

extension SuiteReadable {
    /// The stored value of `key`; when nothing valid is stored, the default registered
    /// for its name, else its own default. No default is stored.
    public func value<Value>(for key: SuiteKey<Value>) -> Value {
        read(key).value ?? fallback(for: key)
    }

    func read<Value>(_ key: SuiteKey<Value>) -> (value: Value?, isInvalid: Bool) {
        key.read(storedValue(forKey: key.name))
    }

    /// What `key` reads as when nothing valid is stored: the registered default, if
    /// it is a valid `Value`, else the key's own default.
    func fallback<Value>(for key: SuiteKey<Value>) -> Value {
        registeredDefault(forKey: key.name).flatMap(key.decode) ?? key.defaultValue
    }
}

extension SuiteWritable {
    /// Stores `value` for `key`; for an optional key, nil removes the value.
    public func set<Value>(_ value: Value, for key: SuiteKey<Value>) throws {
        try setValue(try key.encode(value), forKey: key.name)
    }

    /// Removes the stored value of `key`, so that reads return its default again.
    public func removeValue<Value>(for key: SuiteKey<Value>) throws {
        try setValue(nil, forKey: key.name)
    }
}

extension Suite {
    /// The stored value of `key`; when nothing valid is stored, its default (the one
    /// registered for its name in this process, else the key's own), stored first,
    /// atomically across processes: the first process to get here stores its
    /// default, and every process returns the value actually stored. A choice stored
    /// by another process in the meantime is never overwritten.
    ///
    /// A stored value that is not a valid `Value` is replaced by the default, with an
    /// `invalidStoredValue` diagnostic.
    @discardableResult
    public func valueStoringDefault<Value>(for key: SuiteKey<Value>) throws -> Value {
        if let value = read(key).value { return value }
        var replacedInvalid: SuiteValue?
        // Made before the lock is taken, so that a default may read the suite.
        let fallback = fallback(for: key)
        let value = try update { transaction -> Value in
            let stored = transaction.storedValue(forKey: key.name)
            if let value = key.read(stored).value { return value }
            replacedInvalid = stored
            try transaction.setValue(try key.encode(fallback), forKey: key.name, asDefault: true)
            return fallback
        }
        if let invalid = replacedInvalid {
            SuiteDiagnostics.report(SuiteDiagnostic(
                kind: .invalidStoredValue, suite: name, directory: store.directoryPath,
                message: "The value stored for \(key.name), \(invalid), is not a valid \(Value.self); it was replaced by the default, \(value)."))
        }
        return value
    }

    /// The value of `key` now, then after every change from any process, as an
    /// asynchronous sequence; consecutive equal values are given once.
    ///
    /// - Parameter storingDefault: when nothing valid is stored, store the default
    ///   (as `valueStoringDefault(for:)` does) instead of only reporting it.
    public func values<Value: Equatable>(for key: SuiteKey<Value>, storingDefault: Bool = false) throws -> SuiteUpdates<Value> {
        try SuiteUpdates { yield, fail in
            let output = ChangedValues(yield)
            // Runs on the suite's observer queue, one change at a time, in commit order.
            let token = try SuiteObservation.keys(key).including(currentValues: true).start(in: self, onError: fail) { [self] change in
                if let value = key.read(change.newValue).value { return output.offer(value) }
                // Nothing valid is stored. Storing the default commits a change that comes
                // here in turn (as would a value another process stored meanwhile); an
                // optional key's nil stores nothing, so it is offered here.
                if storingDefault, (try? valueStoringDefault(for: key)) != nil, storedValue(forKey: key.name) != nil { return }
                output.offer(fallback(for: key))
            }
            // With nothing stored, no current value came: start from the default.
            if storedValue(forKey: key.name) == nil {
                if storingDefault { try valueStoringDefault(for: key) }
                if storedValue(forKey: key.name) == nil {
                    let fallback = fallback(for: key)
                    ObserverHub.of(lease).enqueue { output.offer(fallback) }
                }
            }
            return token
        }
    }
}

/// Hands on values, skipping a value equal to the one before it.
private final class ChangedValues<Value: Equatable & Sendable>: Sendable {
    private let yield: @Sendable (Value) -> Void
    private let last = Locked<Value?>(nil)

    init(_ yield: @escaping @Sendable (Value) -> Void) {
        self.yield = yield
    }

    func offer(_ value: Value) {
        let isNew = last.withLock { previous in
            defer { previous = value }
            return previous != value
        }
        if isNew { yield(value) }
    }
}
