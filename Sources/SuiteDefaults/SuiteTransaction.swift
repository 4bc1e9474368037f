/// The view of a suite inside `Suite.update(_:)`: reads see the latest committed
/// state plus this transaction's own writes, and the writes commit together when
/// the block returns, or not at all when it throws.
///
/// A transaction is valid only inside its block; the exclusive lock is held for the
/// whole block, so keep it short, and use the transaction, not the suite, inside it.
public final class SuiteTransaction: SuiteWritable {
    private let suite: String
    private let maximumValueSize: Int
    private let defaults: [String: SuiteValue]
    /// The committed state at the start; released when the transaction ends, so that
    /// applying the commit does not copy it.
    private var base: SuiteContents?
    /// The last write to each key, and the order keys were first written.
    private var latest: [String: Operation] = [:]
    private var order: [String] = []
    private var clearsAll = false
    private var isOpen = true

    init(suite: String, base: SuiteContents, defaults: [String: SuiteValue], maximumValueSize: Int) {
        self.suite = suite
        self.base = base
        self.defaults = defaults
        self.maximumValueSize = maximumValueSize
    }

    private func checkOpen() {
        precondition(isOpen, "A SuiteTransaction was used after its update block returned.")
    }

    /// The value committed or written in this transaction; registered defaults aside.
    public func storedValue(forKey key: String) -> SuiteValue? {
        checkOpen()
        if let operation = latest[key] {
            if case .set(_, let value, _) = operation { return value }
            return nil
        }
        return clearsAll ? nil : base?[key]
    }

    public func registeredDefault(forKey key: String) -> SuiteValue? {
        defaults[key]
    }

    /// Stages a write; it commits with the transaction.
    ///
    /// - Throws: `SuiteError` at once for an invalid key or value.
    public func setValue(_ value: SuiteValue?, forKey key: String) throws {
        checkOpen()
        let operation = try Operation.validated(value, forKey: key, suite: suite, maximumValueSize: maximumValueSize)
        if latest.updateValue(operation, forKey: key) == nil { order.append(key) }
    }

    /// Stages the removal of every key; it commits with the transaction.
    public func removeAll() throws {
        checkOpen()
        latest = [:]
        order = []
        clearsAll = true
    }

    /// Ends the transaction and returns what it changed: one operation per key whose
    /// value differs from the committed state, after a `removeAll` if there was one.
    func finish() -> [Operation] {
        isOpen = false
        defer { base = nil }
        let base = self.base ?? SuiteContents()
        var operations: [Operation] = []
        if clearsAll && base.count > 0 { operations.append(.removeAll) }
        for key in order {
            let operation = latest[key]!
            let before = clearsAll ? nil : base[key]
            let after: SuiteValue? = if case .set(_, let value, _) = operation { value } else { nil }
            if !before.isStored(identicallyTo: after) { operations.append(operation) }
        }
        return operations
    }

    /// Ends the transaction without committing anything.
    func abandon() {
        isOpen = false
        base = nil
    }
}
