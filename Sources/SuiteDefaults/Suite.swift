#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A named set of preferences that many processes share, like an App Group's
/// `UserDefaults(suiteName:)`, kept in a file guarded by `flock`.
///
/// ```swift
/// let suite = try Suite(named: "group.com.example.fitness")
/// try suite.set("imperial", forKey: "units.system")
/// suite.string(forKey: "units.system")          // "imperial", in every process
/// try suite.update { tx in                       // read-modify-write, atomically
///     try tx.set((tx.integer(forKey: "count") ?? 0) + 1, forKey: "count")
/// }
/// ```
///
/// Every method may be called from any thread. A read always sees every write that
/// returned before it started, in any process, without `synchronize()`. A write that
/// returns has been applied to the latest committed state and survives the crash of
/// any process; with `.durable` it survives a power loss too. An operation that
/// throws a `SuiteError` has changed nothing.
///
/// ## Giving a default: which way when
///
/// - A key's own default, `SuiteKey("k", default: v)`: the usual way. Declared once
///   with the key, read wherever the key is read, never stored, so a later change of
///   the default reaches every reader.
/// - `register(defaults:)`: for code that reads by name (`integer(forKey:)` and the
///   like) and for values computed at launch. In this process's memory only, for
///   as long as the process runs, as with `UserDefaults`.
///
/// The read order, in one place: a read by name (`string(forKey:)` and the like)
/// returns the stored value, else the registered default, else nil. A read through
/// a `SuiteKey` returns the stored value if it is a valid `Value`, else the
/// registered default if it is one, else the key's own default.
/// - `valueStoringDefault(for:)`: when every process must agree on one value that
///   is detected, not declared (the unit system from a locale): the first process
///   to read stores its detection, atomically, and the others read that.
/// - `setIfAbsent(_:forKey:)`: the same compare-and-set by name, for a value that
///   is not a `SuiteKey`'s default.
public final class Suite: SuiteWritable, Sendable {
    /// The suite's name, in Unicode NFC (the form its files are named in).
    public let name: String
    /// The directory that holds the suite's files, standardized.
    public var directory: URL { URL(fileURLWithPath: directoryPath, isDirectory: true) }
    /// The directory's path, standardized.
    let directoryPath: String
    /// The options this instance was opened with.
    public let options: Options
    let store: SuiteStore
    /// Keeps `store` shared with this process's other instances of the suite.
    let lease: StoreLease

    /// The longest suite name, in UTF-8 bytes: the file-name limit (255) minus the
    /// suffixes the store adds.
    public static let maximumNameLength = Validation.maximumNameLength
    /// The longest key, in UTF-8 bytes.
    public static let maximumKeyLength = Validation.maximumKeyLength

    /// Opens a suite, creating its directory when missing. Its files are created on
    /// the first write.
    ///
    /// - Parameters:
    ///   - name: 1 to 224 bytes (in Unicode NFC, to which it is normalized), without
    ///     `/`, `..`, NUL, control characters or a leading `.`; for example
    ///     `"group.com.example.fitness"`.
    ///   - directory: where the suite lives; `Suite.defaultDirectory()` when nil.
    ///   - options: durability, sharing and limits.
    /// - Throws: `SuiteError` for an invalid name, a directory or file that is not
    ///   usable (another user's, a symbolic link, another format), or failed I/O.
    public init(named name: String, directory: URL? = nil, options: Options = Options()) throws {
        let name = Validation.normalized(name)
        try Validation.checkSuiteName(name)
        self.name = name
        self.directoryPath = PathNormalization.standardized(directory?.filePath ?? Suite.defaultDirectoryPath())
        self.options = options
        self.lease = try StoreRegistry.lease(named: name, directoryPath: directoryPath, sharing: options.sharing,
                                             lockTimeout: options.lockTimeout)
        self.store = lease.store
    }

    /// Checks a suite name without opening anything.
    ///
    /// - Throws: `SuiteError` `.invalidSuiteName`, saying what is wrong with it.
    public static func validate(name: String) throws {
        try Validation.checkSuiteName(Validation.normalized(name))
    }

    /// A name or key in the form the suite stores it under: Unicode NFC, as the
    /// standard library computes it, applied until it no longer changes (which a mirror
    /// must use too: Foundation's differs for some scripts).
    package static func normalized(_ text: String) -> String {
        Validation.normalized(text)
    }

    /// Throws `SuiteError` `.invalidValue` when two of `keys` are spellings of one key, as
    /// `importJSON` does: for a bridge that replaces every value at once.
    package static func refuseKeysSpelledTwice(_ keys: some Sequence<String>, suite: String?) throws {
        try Validation.refuseKeysSpelledTwice(keys, suite: suite)
    }

    /// Checks a key as every write does, without writing.
    ///
    /// - Throws: `SuiteError` `.invalidKey`, saying what is wrong with it.
    public static func validate(key: String) throws {
        _ = try Validation.normalizedKey(key, suite: nil)
    }

    /// The suite's data file: `NAME.suite` in its directory (absent until the first write).
    public var fileURL: URL { URL(fileURLWithPath: directoryPath + "/" + SuiteFiles.dataFileName(of: name)) }

    /// The suite's lock file, `NAME.suite.lock`: the target of every process's `flock`.
    public var lockFileURL: URL { URL(fileURLWithPath: directoryPath + "/" + SuiteFiles.lockFileName(of: name)) }

    // MARK: Reading

    /// The value stored for `key`, ignoring registered defaults; nil when absent.
    public func storedValue(forKey key: String) -> SuiteValue? {
        store.read(lockTimeout: options.lockTimeout) { $0[key] }
    }

    /// The default registered for `key` in this process; nil when none.
    public func registeredDefault(forKey key: String) -> SuiteValue? {
        store.registeredDefault(forKey: key)
    }

    /// Every stored value, ignoring registered defaults.
    public func storedValues() -> [String: SuiteValue] {
        store.read(lockTimeout: options.lockTimeout) { $0.values }
    }

    /// Every value a read would return: the registered defaults, overridden by the
    /// stored values.
    public func dictionaryRepresentation() -> [String: SuiteValue] {
        store.registeredDefaults.merging(storedValues()) { _, stored in stored }
    }

    /// Registers fallbacks that reads return for keys with no stored value, replacing
    /// those registered before for the same keys. They live in this process's memory
    /// only, for as long as it runs, for every `Suite` instance of this suite (the
    /// same name in the same directory), also those opened later, as with
    /// `UserDefaults.register(defaults:)`.
    ///
    /// A key or value that a write would refuse is left out, with a `refusedDefault`
    /// diagnostic: what is registered can always be stored.
    public func register(defaults: [String: SuiteValue]) {
        var accepted: [String: SuiteValue] = [:]
        for (key, value) in defaults {
            do {
                if case .set(let key, let value, _, _) = try Operation.validated(value, forKey: key, suite: name,
                                                                               maximumValueSize: options.maximumValueSize) {
                    accepted[key] = value
                }
            } catch {
                SuiteDiagnostics.report(SuiteDiagnostic(kind: .refusedDefault, suite: name, directory: directoryPath,
                                                        message: "The default for \(key) was not registered: \(error)"))
            }
        }
        store.register(accepted)
    }

    /// Reads the latest state now, throwing what a read would only report as a
    /// diagnostic (reads answer from the last state read when the file fails them).
    /// It also moves this process to a new lock file when the one it has lost its name
    /// (see Design.md, "Limitations that remain").
    public func reload() throws {
        try store.reload(lockTimeout: options.lockTimeout)
    }

    // MARK: Writing

    /// Stores `value` for `key`, or removes `key` when `value` is nil, with the
    /// suite's durability.
    public func setValue(_ value: SuiteValue?, forKey key: String) throws {
        try setValue(value, forKey: key, durability: options.durability)
    }

    /// Stores `value` for `key`, or removes `key` when `value` is nil.
    public func setValue(_ value: SuiteValue?, forKey key: String, durability: Durability) throws {
        let operation = try Operation.validated(value, forKey: key, suite: name, maximumValueSize: options.maximumValueSize)
        try store.commit(operation, durability: durability, options: options)
    }

    /// Stores a value with the given durability, whatever the suite's default.
    public func set<T: SuiteStorable>(_ value: T, forKey key: String, durability: Durability) throws {
        try setValue(value.suiteValue, forKey: key, durability: durability)
    }

    /// Removes every stored key.
    public func removeAll() throws {
        try store.commit(.removeAll, durability: options.durability, options: options)
    }

    /// Runs `body` as one transaction under the suite's exclusive lock: its reads see
    /// the latest committed state, and its writes commit together when it returns,
    /// or not at all when it throws.
    ///
    /// Keep the block short: every other writer, in every process, waits for it. Use
    /// the transaction inside the block, not the suite.
    ///
    /// - Returns: what `body` returns.
    @discardableResult @inlinable
    public func update<R>(durability: Durability? = nil, _ body: (SuiteTransaction) throws -> R) throws -> R {
        try update(durability: durability, mirrored: false, keeping: body)
    }

    /// `update(_:)` for a mirror (`suite-sync`) applying changes made elsewhere: the
    /// commit is marked (`SuiteChange.isMirrored`), so that no mirror sends it back.
    @discardableResult
    package func updateAsMirror<R>(_ body: (SuiteTransaction) throws -> R) throws -> R {
        try update(durability: nil, mirrored: true, keeping: body)
    }

    /// A transaction whose block's result is kept here, so that the transaction
    /// underneath is not generic. Inlined into the caller, which knows `R`: run
    /// unspecialized, a generic transaction cost an update 3.5% more instructions
    /// (Performance.md, "The sixteenth pass").
    @inlinable
    func update<R>(durability: Durability?, mirrored: Bool, keeping body: (SuiteTransaction) throws -> R) throws -> R {
        var result: R?
        try update(durability: durability, mirrored: mirrored) { result = try body($0) }
        // Set: the transaction returns only once the block has returned.
        return result!
    }

    /// Runs `body` as a transaction; it returns only once `body` has returned and
    /// its writes are committed.
    @usableFromInline
    func update(durability: Durability?, mirrored: Bool, _ body: (SuiteTransaction) throws -> Void) throws {
        try store.transaction(durability: durability ?? options.durability, options: options,
                              flags: mirrored ? .mirrored : [], body)
    }

    /// The sequence number of the last commit to the suite (0 before the first): what
    /// a mirror notes before writing a change ahead, to look for its commit later.
    package var lastCommitSequence: UInt64 {
        store.read(lockTimeout: options.lockTimeout) { $0.lastSequence }
    }

    /// Every key that a mirrored commit (`updateAsMirror`) of the process `pid` set or
    /// removed after the commit `sequence`; nil when the journal, with its history
    /// (`Options.changeHistorySize`), no longer holds every commit since (history
    /// trimmed or not kept, a repair) or does not verify. The commits are visited one
    /// by one, holding one file at a time (the data file, and one history file).
    ///
    /// - Throws: `SuiteError`; `.lockTimeout` when reading the latest state needs the
    ///   suite's lock (a writer stopped inside a commit, a repair) and another process
    ///   holds it past `Options.lockTimeout`.
    package func keysOfMirroredCommits(after sequence: UInt64, by pid: Int32) throws -> Set<String>? {
        var keys: Set<String> = []
        let complete = try store.forEachCommit(after: sequence, lockTimeout: options.lockTimeout) { record in
            guard record.pid == pid, record.flags.contains(.mirrored) else { return }
            // A mirror never removes everything; `removeAll` names no key.
            for operation in record.operations { if let key = operation.key { keys.insert(key) } }
        }
        return complete ? keys : nil
    }

    /// A stored value and whether it is a first-access default.
    package struct StoredEntry: Sendable, Equatable {
        package var value: SuiteValue
        package var isDefault: Bool
    }

    /// The stored value of `key` with whether it is a first-access default; nil when
    /// absent.
    package func storedEntry(forKey key: String) -> StoredEntry? {
        store.read(lockTimeout: options.lockTimeout) { contents in
            contents.entry(forKey: key).map { StoredEntry(value: $0.value, isDefault: $0.isDefault) }
        }
    }

    /// Every stored value with whether it is a first-access default: what a mirror
    /// compares with what it last sent.
    package func storedEntries() -> [String: StoredEntry] {
        store.read(lockTimeout: options.lockTimeout) { contents in
            contents.mapEntries { StoredEntry(value: $0.value, isDefault: $0.isDefault) }
        }
    }

    /// Whether the calling thread is inside an `update` block of this suite, through
    /// this instance or any other of the same suite (the same name in the same
    /// directory). Using the suite there, rather than the block's transaction, is a
    /// programming error that stops the process (it would deadlock); code that takes
    /// calls from elsewhere, such as the C interface, asks this first and refuses them.
    public var isInsideUpdateOnCurrentThread: Bool {
        store.isInsideTransactionOnCurrentThread
    }

    /// Stores `value` only if nothing is stored for `key`, atomically across processes.
    ///
    /// `value` is evaluated only when the key is found absent, before the suite's lock
    /// is taken, so that it may read the suite (a detector that consults another
    /// key); it is stored only if the key is still absent under the lock. Registered
    /// defaults do not count as stored.
    ///
    /// - Returns: the value stored after the call: the existing one, or `value`.
    /// - Throws: `SuiteError` `.typeMismatch` when the stored value is not a `T`.
    @discardableResult
    public func setIfAbsent<T: SuiteStorable>(_ value: @autoclosure () throws -> T, forKey key: String) throws -> T {
        try setIfAbsent(value, forKey: key, encode: \.suiteValue, decode: T.init(suiteValue:))
    }

    /// Stores a `RawRepresentable` only if nothing is stored for `key`; see the
    /// other `setIfAbsent`. A stored raw value that is no valid `T` throws `.typeMismatch`.
    @_disfavoredOverload
    @discardableResult
    public func setIfAbsent<T: RawRepresentable>(_ value: @autoclosure () throws -> T, forKey key: String) throws -> T
    where T.RawValue: SuiteStorable {
        try setIfAbsent(value, forKey: key, encode: { $0.rawValue.suiteValue },
                        decode: { T.RawValue(suiteValue: $0).flatMap(T.init(rawValue:)) })
    }

    private func setIfAbsent<T>(
        _ make: () throws -> T, forKey key: String, encode: (T) -> SuiteValue, decode: (SuiteValue) -> T?
    ) throws -> T {
        // Normalized first, as a write does: a key's length limit holds for its NFC.
        _ = try Validation.normalizedKey(key, suite: name)
        func existing(_ stored: SuiteValue) throws -> T {
            guard let typed = decode(stored) else {
                throw SuiteError(.typeMismatch, suite: name, key: key,
                                 message: "The stored value is a \(stored.typeName), which is not a \(T.self); it was left as it is.")
            }
            return typed
        }
        // A present value stays the answer; only absence needs the lock.
        if let stored = storedValue(forKey: key) { return try existing(stored) }
        let value = try make()
        return try update { transaction in
            if let stored = transaction.storedValue(forKey: key) { return try existing(stored) }
            try transaction.setValue(encode(value), forKey: key, asDefault: true)
            return value
        }
    }

    /// Stores `new` (or removes the key when nil) only if the stored value equals
    /// `expected` (nil meaning absent), atomically across processes. Values compare
    /// as stored, byte for byte: an integer never equals a double, `-0.0` never
    /// equals `0.0`, and strings compare as their (stored) UTF-8.
    ///
    /// - Returns: whether the value was replaced.
    @discardableResult
    public func compareAndSet<T: SuiteStorable>(expected: T?, new: T?, forKey key: String) throws -> Bool {
        let operation = try Operation.validated(new?.suiteValue, forKey: key, suite: name,
                                                maximumValueSize: options.maximumValueSize)
        let expectedValue = expected?.suiteValue
        return try update { transaction in
            guard transaction.storedValue(forKey: key).isStored(identicallyTo: expectedValue) else { return false }
            switch operation {
            case .set(_, let value, _, _): try transaction.setValue(value, forKey: key)
            default: try transaction.setValue(nil, forKey: key)
            }
            return true
        }
    }

    // MARK: Maintenance

    /// Rewrites the journal as a snapshot of the live state now. The store does this by
    /// itself when the journal grows past twice the live size; this is for tools.
    public func compact() throws {
        try store.compact(options: options)
    }

    /// Makes every committed write durable (`fdatasync` of the file, `fsync` of the
    /// directory), for suites that write with `.standard` durability.
    public func flush() throws {
        try store.flush(lockTimeout: options.lockTimeout)
    }
}
