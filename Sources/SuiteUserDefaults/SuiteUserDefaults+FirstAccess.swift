import Foundation
import SuiteDefaults

/// The atomic first access: "if absent, set", decided under the suite's lock.
extension SuiteUserDefaults {
    /// Stores `value` only if nothing is stored for the key, atomically across
    /// processes: the one-line replacement of "if absent, set".
    ///
    /// `value` is evaluated only when the key is found absent, before the suite's lock
    /// is taken (so it may read these defaults); it is stored only if the key is
    /// still absent under the lock. Registered defaults do not count as stored.
    ///
    /// - Returns: the value stored after the call (the one found, or `value`), as
    ///   `object(forKey:)` returns it; nil when the write failed (reported as by
    ///   `set(_:forKey:)`).
    @discardableResult
    public func setIfAbsent(_ value: @autoclosure () -> Any, forKey defaultName: String) -> Any? {
        let outcome = report { () throws -> (SuiteValue, Bool) in
            try firstAccess(forKey: defaultName, accepting: { _ in true }, make: { () throws(SuiteError) -> SuiteValue in
                try PropertyListBridge.suiteValue(from: value(), key: defaultName)
            })
        }
        return outcome.map { PropertyListBridge.object(from: $0.0) }
    }

    /// Returns the `T` stored for the key; when nothing is stored, or what is stored
    /// is no valid `T`, stores `value` (checking again under the suite's lock) and
    /// returns it, so every process returns the same value.
    ///
    /// ```swift
    /// // was: defaults.set(detected.rawValue, forKey: "unitSystem"); return detected
    /// return defaults.setIfAbsent(detected, forKey: "unitSystem")
    /// ```
    ///
    /// - Returns: the stored value; `value` itself when the write failed (reported as
    ///   by `set(_:forKey:)`).
    @discardableResult
    public func setIfAbsent<T: RawRepresentable>(_ value: @autoclosure () -> T, forKey defaultName: String) -> T
    where T.RawValue: SuiteStorable {
        let decode = { (stored: SuiteValue) in T.RawValue(suiteValue: stored).flatMap(T.init(rawValue:)) }
        var made: T?
        let outcome = report { () throws -> (SuiteValue, Bool) in
            try firstAccess(forKey: defaultName, accepting: { decode($0) != nil }, make: {
                let new = value()
                made = new
                return new.rawValue.suiteValue
            })
        }
        if let outcome, let typed = decode(outcome.0) { return typed }
        return made ?? value()
    }

    /// The stored value if `accepting` takes it; else `make()`'s, stored. Returns the
    /// value and whether it was stored.
    ///
    /// `make()` runs before the suite's lock is taken, so that it may read these
    /// defaults (a detector that consults another key); what it made is stored only
    /// if, under the lock, still nothing acceptable is stored.
    private func firstAccess(forKey key: String, accepting: (SuiteValue) -> Bool,
                             make: () throws(SuiteError) -> SuiteValue) throws(SuiteError) -> (SuiteValue, Bool) {
        if let stored = suite.storedValue(forKey: key), accepting(stored) { return (stored, false) }
        let new = try make()
        let outcome: (SuiteValue, Bool)
        do {
            outcome = try suite.update { transaction -> (SuiteValue, Bool) in
                if let stored = transaction.storedValue(forKey: key), accepting(stored) { return (stored, false) }
                try transaction.setValue(new, forKey: key, asDefault: true)
                return (new, true)
            }
        } catch let error as SuiteError {
            throw SuiteError(error.code, suite: suite.name, key: error.key ?? key, path: error.path, errno: error.errno,
                             lockHolder: error.lockHolder, message: error.message)
        } catch {
            throw SuiteError(.ioFailure, suite: suite.name, key: key, message: "\(error)")
        }
        if outcome.1 { postOwnChange() }
        return outcome
    }
}
