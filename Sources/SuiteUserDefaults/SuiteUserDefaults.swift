import Foundation
import SuiteDefaults
import Synchronization

/// Foundation's `UserDefaults`, backed by a suite: existing code changes one type name
/// and gains every guarantee of `Suite` (no lost update, fresh reads in every process,
/// crash safety).
///
/// ```swift
/// let defaults = SuiteUserDefaults(suiteName: "group.com.example.fitness")!
/// defaults.set("imperial", forKey: "unitSystem")
/// defaults.string(forKey: "unitSystem")      // "imperial", in every process at once
/// defaults.integer(forKey: "unitSystem")     // 0, as Foundation converts it
/// ```
///
/// Every method of `UserDefaults` behaves as Foundation documents it; Docs/UserDefaults.md
/// lists each behaviour, and where this class differs. In short:
///
/// - Values map to and from `SuiteValue` as `PropertyListBridge` says. A value
///   Foundation would trap on (a custom type, `NSNull`, a dictionary with non-string
///   keys) is refused instead: nothing is stored, and the error goes to
///   `writeFailureHandler` and to standard error. So does a write that fails (a full
///   disk, a lock held past its timeout). `checkedSet(_:forKey:)` throws instead.
/// - `register(defaults:)` registers for this suite in this process, for every
///   instance of the suite.
/// - `UserDefaults.didChangeNotification` is posted with this instance as its object:
///   synchronously, on the writing thread, after each write made through this
///   instance; and on a private queue, once per commit, when another process changes
///   the suite. Writes in this process through another instance or a `Suite` post on
///   that instance only (or nothing, for a `Suite`).
/// - `synchronize()` returns true and does nothing: every write is already shared.
///
/// A read-then-write sequence (if absent, store) is not atomic across processes: use
/// `setIfAbsent(_:forKey:)`, or `suite.update { }` for any read-modify-write.
open class SuiteUserDefaults: UserDefaults {
    /// The suite every read and write goes to: use it for what `UserDefaults` has no
    /// word for (`update`, `compareAndSet`, typed keys, observation).
    public let suite: Suite

    private struct State {
        var observation: SuiteCancellable?
        var lastPostedSequence: UInt64?
        var writeFailureHandler: (@Sendable (SuiteError) -> Void)?
    }

    private let state = Mutex(State())

    /// Opens the suite `suitename` in `Suite.defaultDirectory()` (which honours
    /// `$SUITE_DEFAULTS_DIR`), as `UserDefaults(suiteName:)` opens an App Group's suite.
    ///
    /// A nil name means this application's own suite, as in Foundation: the suite
    /// named after the process (`ProcessInfo.processInfo.processName`).
    ///
    /// - Returns: nil when the suite cannot be opened (an invalid name, an unusable
    ///   directory); the reason is written to standard error. To get it as an error,
    ///   use `init(suite: try Suite(named:directory:options:))`.
    public override init?(suiteName suitename: String?) {
        let name = suitename ?? ProcessInfo.processInfo.processName
        do {
            suite = try Suite(named: name)
        } catch {
            Self.writeToStandardError("cannot open suite \"\(name)\": \(error)")
            return nil
        }
        super.init(suiteName: name)
        startObserving()
    }

    /// Uses `suite`, opened wherever and however the caller chose.
    public init(suite: Suite) {
        self.suite = suite
        // Foundation's initializer returns nil for no name on Linux.
        super.init(suiteName: suite.name)!
        startObserving()
    }

    /// Unavailable: `UserDefaults()` is Foundation's own defaults. Use
    /// `SuiteUserDefaults(suiteName:)`, which can say that a suite cannot be opened.
    @available(*, unavailable, message: "use SuiteUserDefaults(suiteName:) or SuiteUserDefaults(suite:)")
    public convenience init() {
        self.init(suite: try! Suite(named: ProcessInfo.processInfo.processName))
    }

    deinit {
        state.withLock { $0.observation }?.cancel()
    }

    /// Called with the error of every write that stored nothing: a value that is not a
    /// property-list value (`.invalidValue`), an invalid key, a failed write. It runs
    /// on the writing thread. Each such error is also written to standard error,
    /// unless `SuiteDiagnostics.printsToStandardError` is false.
    public var writeFailureHandler: (@Sendable (SuiteError) -> Void)? {
        get { state.withLock { $0.writeFailureHandler } }
        set { state.withLock { $0.writeFailureHandler = newValue } }
    }

    // MARK: Reading

    /// The value from the argument domain (`-key value` on the command line), else the
    /// stored value, else the registered default, else nil; see `PropertyListBridge`
    /// for the types returned.
    open override func object(forKey defaultName: String) -> Any? {
        if let argument = volatileDomain(forName: UserDefaults.argumentDomain)[defaultName] { return argument }
        return suite.value(forKey: defaultName).map(PropertyListBridge.object(from:))
    }

    /// What `object(forKey:)` returns, as a `SuiteValue`; nil for what does not map.
    private func resolvedValue(forKey key: String) -> SuiteValue? {
        object(forKey: key).flatMap { try? PropertyListBridge.suiteValue(from: $0) }
    }

    /// A string; a number as its text ("42", "3.5", a Boolean as "1" or "0"); nil for
    /// anything else.
    open override func string(forKey defaultName: String) -> String? {
        Coercions.string(resolvedValue(forKey: defaultName))
    }

    /// The number, truncated (3.7 is 3); a Boolean as 1 or 0; a string's leading
    /// integer ("42" is 42); 0 for anything else.
    open override func integer(forKey defaultName: String) -> Int {
        Coercions.integer(resolvedValue(forKey: defaultName))
    }

    /// The number; a Boolean as 1 or 0; a string parsed ("2.5"); 0 for anything else.
    open override func double(forKey defaultName: String) -> Double {
        Coercions.double(resolvedValue(forKey: defaultName))
    }

    /// `double(forKey:)` as a `Float`.
    open override func float(forKey defaultName: String) -> Float {
        Float(Coercions.double(resolvedValue(forKey: defaultName)))
    }

    /// The Boolean; a number other than 0; "YES" or "true" (in any case), or a string
    /// starting with a non-zero integer; false for anything else.
    open override func bool(forKey defaultName: String) -> Bool {
        Coercions.bool(resolvedValue(forKey: defaultName))
    }

    /// A URL stored by `set(_:forKey:)`, or a string: text with a scheme is that URL,
    /// other text a file path ("~" expanded); nil for anything else (data is never
    /// unarchived).
    open override func url(forKey defaultName: String) -> URL? {
        Coercions.url(resolvedValue(forKey: defaultName))
    }

    /// Bytes, and the JSON text of a value another process stored with
    /// `Suite.set(encodable:forKey:)`; nil for anything else.
    open override func data(forKey defaultName: String) -> Data? {
        object(forKey: defaultName) as? Data
    }

    /// An array; nil for anything else.
    open override func array(forKey defaultName: String) -> [Any]? {
        object(forKey: defaultName) as? [Any]
    }

    /// An array holding only strings; nil for anything else.
    open override func stringArray(forKey defaultName: String) -> [String]? {
        object(forKey: defaultName) as? [String]
    }

    /// A dictionary; nil for anything else.
    open override func dictionary(forKey defaultName: String) -> [String: Any]? {
        object(forKey: defaultName) as? [String: Any]
    }

    /// The registered defaults, overridden by the stored values.
    open override func dictionaryRepresentation() -> [String: Any] {
        suite.dictionaryRepresentation().mapValues(PropertyListBridge.object(from:))
    }

    // MARK: Writing

    /// Stores a property-list value, or removes the key for nil. A value of another
    /// type stores nothing (Foundation traps); see `writeFailureHandler`.
    open override func set(_ value: Any?, forKey defaultName: String) {
        report { try checkedSet(value, forKey: defaultName) }
    }

    /// Stores `value`, or removes the key for nil; throws instead of reporting.
    ///
    /// - Throws: `SuiteError`: `.invalidValue` for a value that is not a property-list
    ///   value (`PropertyListBridge`), `.invalidKey`, or what the write failed with.
    ///   Nothing is stored then.
    public func checkedSet(_ value: Any?, forKey defaultName: String) throws(SuiteError) {
        let stored: SuiteValue?
        if let value {
            do { stored = try PropertyListBridge.suiteValue(from: value, key: defaultName) } catch {
                throw SuiteError(error.code, suite: suite.name, key: defaultName, message: error.message)
            }
        } else {
            stored = nil
        }
        try store(stored, forKey: defaultName)
    }

    /// Stores an integer.
    open override func set(_ value: Int, forKey defaultName: String) { report { try store(.integer(value), forKey: defaultName) } }
    /// Stores a double; NaN and infinities are refused (reported, nothing stored).
    open override func set(_ value: Double, forKey defaultName: String) { report { try store(.double(value), forKey: defaultName) } }
    /// Stores a float, as a double (exactly); NaN and infinities are refused.
    open override func set(_ value: Float, forKey defaultName: String) { report { try store(.double(Double(value)), forKey: defaultName) } }
    /// Stores a Boolean, which stays one (never the integer 1 or 0).
    open override func set(_ value: Bool, forKey defaultName: String) { report { try store(.bool(value), forKey: defaultName) } }

    /// Stores a URL as text: a file URL as its path, any other URL as its absolute
    /// string, so the scheme and host survive (Foundation on Linux keeps only the path).
    open override func set(_ url: URL?, forKey defaultName: String) {
        report { try store(url?.suiteValue, forKey: defaultName) }
    }

    /// Removes the stored value, so that reads return the registered default, if any.
    open override func removeObject(forKey defaultName: String) {
        report { try store(nil, forKey: defaultName) }
    }

    /// Registers fallbacks for keys with no stored value, for this suite in this
    /// process (every instance of the suite sees them). A value that is not a
    /// property-list value is left out, and reported as a failed write.
    open override func register(defaults registrationDictionary: [String: Any]) {
        var registered: [String: SuiteValue] = [:]
        for (key, value) in registrationDictionary {
            do { registered[key] = try PropertyListBridge.suiteValue(from: value, key: key) } catch {
                reportFailure(SuiteError(error.code, suite: suite.name, key: key, message: "Not registered: " + error.message))
            }
        }
        suite.register(defaults: registered)
    }

    /// Returns true: every write is already on disk for every process, and every read
    /// already sees the latest write.
    @discardableResult
    open override func synchronize() -> Bool { true }

    // MARK: Domains

    /// This suite's stored values, without registered defaults, for its own name;
    /// Foundation's answer for any other domain.
    open override func persistentDomain(forName domainName: String) -> [String: Any]? {
        guard isOwnDomain(domainName) else { return super.persistentDomain(forName: domainName) }
        return suite.storedValues().mapValues(PropertyListBridge.object(from:))
    }

    /// For this suite's own name, replaces every stored value with `domain` in one
    /// atomic commit (nothing is replaced if any value is refused); for another name,
    /// Foundation's behaviour.
    open override func setPersistentDomain(_ domain: [String: Any], forName domainName: String) {
        guard isOwnDomain(domainName) else { return super.setPersistentDomain(domain, forName: domainName) }
        report {
            var values: [String: SuiteValue] = [:]
            for (key, value) in domain {
                do throws(SuiteError) { values[key] = try PropertyListBridge.suiteValue(from: value, key: key) } catch {
                    throw SuiteError(error.code, suite: suite.name, key: key, message: error.message)
                }
            }
            try Suite.refuseKeysSpelledTwice(values.keys, suite: suite.name)
            try suite.update { transaction in
                try transaction.removeAll()
                for (key, value) in values { try transaction.setValue(value, forKey: key) }
            }
            postOwnChange()
        }
    }

    /// For this suite's own name, removes every stored value; for another name,
    /// Foundation's behaviour.
    open override func removePersistentDomain(forName domainName: String) {
        guard isOwnDomain(domainName) else { return super.removePersistentDomain(forName: domainName) }
        report {
            try suite.removeAll()
            postOwnChange()
        }
    }

    private func isOwnDomain(_ name: String) -> Bool {
        Suite.normalized(name) == suite.name
    }

    // MARK: Internals

    private func store(_ value: SuiteValue?, forKey key: String) throws(SuiteError) {
        do {
            try suite.setValue(value, forKey: key)
        } catch let error as SuiteError {
            throw error
        } catch {
            throw SuiteError(.ioFailure, suite: suite.name, key: key, message: "\(error)")
        }
        postOwnChange()
    }

    /// Runs `body`; a failure is reported, and gives nil.
    @discardableResult
    func report<R>(_ body: () throws -> R) -> R? {
        do { return try body() } catch let error as SuiteError {
            reportFailure(SuiteError(error.code, suite: error.suite ?? suite.name, key: error.key, path: error.path,
                                     errno: error.errno, lockHolder: error.lockHolder, message: error.message))
        } catch {
            reportFailure(SuiteError(.ioFailure, suite: suite.name, message: "\(error)"))
        }
        return nil
    }

    private func reportFailure(_ error: SuiteError) {
        Self.writeToStandardError("write failed: \(error)")
        state.withLock { $0.writeFailureHandler }?(error)
    }

    private static func writeToStandardError(_ message: String) {
        guard SuiteDiagnostics.printsToStandardError else { return }
        FileHandle.standardError.write(Data("SuiteUserDefaults: \(message)\n".utf8))
    }

    func postOwnChange() {
        NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: self)
    }

    /// Posts `didChangeNotification` once per commit of another process.
    private func startObserving() {
        do {
            let target = WeakReference(self)
            let observation = try suite.observe { change in target.value?.deliver(change) }
            state.withLock { $0.observation = observation }
        } catch {
            Self.writeToStandardError("changes by other processes will not be notified: \(error)")
        }
    }

    private func deliver(_ change: SuiteChange) {
        guard !change.isFromThisProcess, change.kind != .initialValue else { return }
        let isNew = state.withLock { state in
            defer { state.lastPostedSequence = change.sequence }
            return state.lastPostedSequence != change.sequence
        }
        if isNew { NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: self) }
    }
}

/// A weak reference that an observation's `@Sendable` closure may hold: Foundation on
/// Linux marks `UserDefaults` as not `Sendable`, though this class is safe to use from
/// any thread (its state is behind a lock, its suite is `Sendable`).
private final class WeakReference: @unchecked Sendable {
    weak var value: SuiteUserDefaults?
    init(_ value: SuiteUserDefaults) { self.value = value }
}
