/// The view of a suite inside `Suite.update(_:)`: reads see the latest committed
/// state plus this transaction's own writes, and the writes commit together when
/// the block returns, or not at all when it throws.
///
/// A transaction is valid only inside its block; the exclusive lock is held for the
/// whole block, so keep it short, and use the transaction, not the suite, inside it.
public final class SuiteTransaction: SuiteWritable {
    /// Unowned and unretained: the store runs the block and is held until it returns,
    /// and an ended transaction refuses every use on the block's thread (`checkOpen`)
    /// before it reaches the store; reflection sees only `isOpen` (`customMirror`).
    /// A use from another thread that races the block's end is outside the contract
    /// (a transaction is not `Sendable`). Retaining the store and its registered
    /// defaults cost every update two atomic operations more.
    private unowned(unsafe) let store: SuiteStore
    private let maximumValueSize: Int
    // A transaction belongs to the one thread running its block (it is not
    // Sendable), so its properties skip the runtime's exclusivity checks, which cost
    // an update more than its bookkeeping.
    /// The committed state at the start; released when the transaction ends, so that
    /// applying the commit does not copy it.
    @exclusivity(unchecked) private var base: SuiteContents?
    /// The write of a transaction that writes one key, the usual one, kept here rather
    /// than in a list that each update would make and free; nil in a transaction that
    /// wrote more keys (`writes`) or none.
    @exclusivity(unchecked) private var onlyWrite: Operation?
    /// Whether `onlyWrite` or `writes` holds a write: asked before either is looked
    /// at, since testing the optional write for nil copies it.
    @exclusivity(unchecked) private var hasWrites = false
    /// The last write to each key, in the order keys were first written, once a
    /// second key is written; empty before.
    @exclusivity(unchecked) private var writes: [Operation] = []
    /// Where each key's write is in `writes`, once there are more than
    /// `searchedWrites`: a short list is searched, which saves making a table for a
    /// transaction of a few keys.
    @exclusivity(unchecked) private var positions = [String: Int]()
    private static let searchedWrites = 8
    @exclusivity(unchecked) private var clearsAll = false
    /// The last key read from `base`, and its slot: a transaction that reads a key
    /// and then writes it (an update) finds the key's place once, not twice.
    @exclusivity(unchecked) private var lastRead: (key: String, slot: SuiteContents.Slot)?
    @exclusivity(unchecked) private var isOpen = true

    init(store: SuiteStore, base: SuiteContents, maximumValueSize: Int) {
        self.store = store
        self.base = base
        self.maximumValueSize = maximumValueSize
    }

    private func checkOpen() {
        // fatalError, whose message an optimized build keeps (precondition's it drops).
        if !isOpen { fatalError("A SuiteTransaction was used after its update block returned.") }
    }

    /// The write to `key` in this transaction, if it was written. Writes are kept under
    /// their keys' normal forms, and so is `key` looked for: Swift's `==` is canonical
    /// equivalence through one round of NFC, which after some marks calls two spellings
    /// of one normal form different.
    private func write(of key: String) -> Operation? {
        let key = Validation.normalized(key)
        guard !writes.isEmpty else { return onlyWrite.flatMap { $0.key == key ? $0 : nil } }
        return position(of: key).map { writes[$0] }
    }

    /// Where the write to `key` is in `writes`, if it was written.
    private func position(of key: String) -> Int? {
        guard writes.count > Self.searchedWrites else { return writes.firstIndex { $0.key == key } }
        return positions[key]
    }

    /// The value committed or written in this transaction; registered defaults aside.
    public func storedValue(forKey key: String) -> SuiteValue? {
        checkOpen()
        // (A read before any write, the usual update's, skips looking for one.)
        if hasWrites, let write = write(of: key) {
            if case .set(_, let value, _, _) = write { return value }
            return nil
        }
        guard !clearsAll, let base else { return nil }
        let (value, slot) = base.valueAndSlot(forKey: key)
        lastRead = (key, slot)
        return value
    }

    public func registeredDefault(forKey key: String) -> SuiteValue? {
        checkOpen()
        return store.registeredDefault(forKey: key)
    }

    /// Stages a write; it commits with the transaction.
    ///
    /// - Throws: `SuiteError` at once for an invalid key or value.
    public func setValue(_ value: SuiteValue?, forKey key: String) throws {
        try setValue(value, forKey: key, asDefault: false)
    }

    /// Stages a write; with `asDefault`, the value is recorded as a first-access
    /// default rather than a choice (`SuiteChange.isDefault`), which a mirror such as
    /// `suite-sync` sends only where nothing is stored yet.
    package func setValue(_ value: SuiteValue?, forKey key: String, asDefault: Bool) throws {
        checkOpen()
        var operation = try Operation.validated(value, forKey: key, suite: store.name, maximumValueSize: maximumValueSize)
        if asDefault, case .set(let key, let value, let size, _) = operation {
            operation = .set(key: key, value: value, size: size, asDefault: true)
        }
        guard !writes.isEmpty else {
            // One key so far (or none): it stays the only write, or both go to the list.
            guard hasWrites, let first = onlyWrite, first.key != operation.key else {
                onlyWrite = operation
                hasWrites = true
                return
            }
            writes = [first, operation]
            onlyWrite = nil
            return
        }
        let key = operation.key!
        if let position = position(of: key) {
            writes[position] = operation
            return
        }
        writes.append(operation)
        if writes.count > Self.searchedWrites {
            if positions.isEmpty {
                for (position, write) in writes.enumerated() { positions[write.key!] = position }
            } else {
                positions[key] = writes.count - 1
            }
        }
    }

    /// Stages the removal of every key; it commits with the transaction.
    public func removeAll() throws {
        checkOpen()
        onlyWrite = nil
        writes = []
        positions = [:]
        hasWrites = false
        clearsAll = true
    }

    /// What a transaction commits.
    enum Commit {
        /// One set that changes its key, with the slot of the key, where the commit
        /// stores it without looking the key up again: the usual update.
        case set(key: String, value: SuiteValue, size: Int, asDefault: Bool, slot: SuiteContents.Slot, liveBytesAfter: Int)
        /// One operation per key whose value differs from the committed state, after a
        /// `removeAll` if there was one (none when nothing changes).
        case operations([Operation], liveBytesAfter: Int)

        /// Whether it writes anything.
        var isEmpty: Bool {
            guard case .operations(let operations, _) = self else { return false }
            return operations.isEmpty
        }
    }

    /// Ends the transaction and returns what it changed, and the live size of the
    /// suite after it, found in the same lookup of each key.
    func finish() -> Commit {
        isOpen = false
        // Taken, not copied: the commit then holds the only other reference to the
        // table, which it gives up before it applies the commit.
        let base = self.base.take() ?? SuiteContents()
        if writes.isEmpty, !clearsAll {
            // The only write taken, not copied: the transaction keeps nothing of it.
            switch onlyWrite.take() {
            case nil:
                return .operations([], liveBytesAfter: base.liveBytes)
            case .set(let key, let value, let size, let asDefault)?:
                // (`==` between strings is canonical equivalence, as the table's lookup is.)
                let knownSlot = lastRead.flatMap { $0.key == key ? $0.slot : nil }
                let effect = base.effect(ofSetting: key, to: value, size: size, asDefault: asDefault, knownSlot: knownSlot)
                guard effect.changes else { return .operations([], liveBytesAfter: effect.liveBytes) }
                return .set(key: key, value: value, size: size, asDefault: asDefault, slot: effect.slot, liveBytesAfter: effect.liveBytes)
            case let removal?:
                return commit(of: [removal], on: base)
            }
        }
        return commit(of: writes.isEmpty ? (onlyWrite.take().map { [$0] } ?? []) : writes, on: base)
    }

    /// What `writes`, each to another key, commit on `base`, after a `removeAll` if
    /// there was one.
    private func commit(of writes: [Operation], on base: SuiteContents) -> Commit {
        let clearsAll = self.clearsAll
        /// Whether the write changes the key, and by how much it changes the live size
        /// (each key is written once in `writes`, so the growths add up).
        func effect(of operation: Operation) -> (changes: Bool, growth: Int) {
            guard clearsAll else {
                let effect = base.effect(of: operation)
                return (effect.changes, effect.liveBytes - base.liveBytes)
            }
            // After the clear nothing is stored: a set stores, a removal changes nothing.
            guard case .set(let key, _, let size, _) = operation else { return (false, 0) }
            return (true, RecordFormat.size(ofSetting: key, valueSize: size))
        }
        var liveBytes = clearsAll ? 0 : base.liveBytes
        var allChange = true
        for operation in writes {
            let (changes, growth) = effect(of: operation)
            liveBytes += growth
            if !changes { allChange = false }
        }
        // Usually every write changes something: the list goes on as it is.
        var operations = allChange ? writes : writes.filter { effect(of: $0).changes }
        if clearsAll && base.count > 0 { operations.insert(.removeAll, at: 0) }
        return .operations(operations, liveBytesAfter: liveBytes)
    }

    /// Ends the transaction without committing anything.
    func abandon() {
        isOpen = false
        base = nil
    }
}

extension SuiteTransaction: CustomReflectable {
    /// Only whether the transaction is open: reflecting the unretained store of one
    /// kept past its block would read freed memory.
    public var customMirror: Mirror {
        Mirror(self, children: ["isOpen": isOpen], displayStyle: .class)
    }
}
