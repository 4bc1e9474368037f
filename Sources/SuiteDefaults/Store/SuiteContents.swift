import Synchronization

/// A key whose value a commit changed: the net effect of one record on one key.
struct KeyChange: Sendable, Equatable {
    var key: String
    var oldValue: SuiteValue?
    var newValue: SuiteValue?
    /// Whether the new value was stored as a first-access default.
    var newValueIsDefault = false
}

/// The committed key-value state of a suite, as this process last read it.
struct SuiteContents: Sendable {
    struct Entry: Sendable {
        var value: SuiteValue
        /// The size of this entry in a snapshot record, for the live-size estimate,
        /// and in its top bit whether the value is a first-access default. 32 bits,
        /// since a value is at most `FormatLimits.maximumFileSize` (2^30): with them,
        /// an entry takes 24 bytes of the table rather than 32.
        private var sizeAndDefault: UInt32
        private static let defaultBit: UInt32 = 1 << 31

        var size: Int { Int(sizeAndDefault & ~Self.defaultBit) }
        /// Whether the value was stored as a first-access default, not chosen.
        var isDefault: Bool { sizeAndDefault & Self.defaultBit != 0 }

        init(value: SuiteValue, size: Int, isDefault: Bool = false) {
            self.value = value
            sizeAndDefault = UInt32(size) | (isDefault ? Self.defaultBit : 0)
        }
    }

    private(set) var entries = KeyTable() {
        didSet { revision &+= 1 }
    }
    /// Counts the changes to the table: an index into it (a `Slot`) is used only while
    /// this is what it was. Each new table starts 2^32 beyond the last one made in the
    /// process, so that a table replaced by another (a repair reads a new one) never
    /// takes the old one's number.
    private var revision = Self.revisionBases.add(1, ordering: .relaxed).newValue << 32
    private static let revisionBases = Atomic<UInt64>(0)
    /// The sum of the entries' sizes: what a compacted file would hold.
    private(set) var liveBytes = 0
    /// The sequence number of the last record applied.
    private(set) var lastSequence: UInt64 = 0

    /// The value stored for `key`, spelled in any normalization form.
    subscript(key: String) -> SuiteValue? { entry(forKey: key)?.value }

    /// The value and size stored for `key`, spelled in any normalization form.
    func entry(forKey key: String) -> Entry? {
        if let entry = entries[key] { return entry }
        return KeyTable.nfcTwin(of: key).flatMap { entries[$0] }
    }

    var count: Int { entries.count }

    var values: [String: SuiteValue] { mapEntries(\.value) }

    /// Every entry, transformed, by key.
    func mapEntries<T>(_ transform: (Entry) -> T) -> [String: T] {
        var result: [String: T] = .init(minimumCapacity: entries.count)
        entries.forEach { key, entry in result[key] = transform(entry) }
        return result
    }

    /// Whether one operation would change the contents (as stored: `-0.0` over `0.0`
    /// is a change), and the live size after it: the single write, the most common
    /// commit, with one lookup of its key.
    func effect(of operation: Operation) -> (changes: Bool, liveBytes: Int) {
        switch operation {
        case .set(let key, let value, let size, let asDefault):
            let effect = effect(ofSetting: key, to: value, size: size, asDefault: asDefault)
            return (effect.changes, effect.liveBytes)
        case .remove(let key):
            guard let old = entries[key] else { return (false, liveBytes) }
            return (true, liveBytes - old.size)
        case .removeAll:
            return (!entries.isEmpty, 0)
        }
    }

    /// Where a key is in the table, so that `set(_:forKey:size:asDefault:at:sequence:)`
    /// stores it without looking it up again.
    struct Slot {
        fileprivate let index: Int?
        fileprivate let revision: UInt64
    }

    /// The value stored for `key` (spelled in any normalization form), and the key's
    /// slot, found in one lookup: for a transaction that reads a key and then writes it.
    func valueAndSlot(forKey key: String) -> (value: SuiteValue?, slot: Slot) {
        let index = entries.index(forKey: key) ?? KeyTable.nfcTwin(of: key).flatMap { entries.index(forKey: $0) }
        return (index.map { entries.entry(at: $0).value }, Slot(index: index, revision: revision))
    }

    /// `effect(of:)` for setting `key`, with the slot of the key: `knownSlot` when it
    /// is one of this table's (`valueAndSlot(forKey:)` found it for the same key), else
    /// looked up.
    func effect(ofSetting key: String, to value: SuiteValue, size: Int, asDefault: Bool,
                knownSlot: Slot? = nil) -> (changes: Bool, liveBytes: Int, slot: Slot) {
        let slot = knownSlot.flatMap { $0.revision == revision ? $0 : nil } ?? Slot(index: entries.index(forKey: key), revision: revision)
        let newSize = RecordFormat.size(ofSetting: key, valueSize: size)
        guard let index = slot.index else { return (true, liveBytes + newSize, slot) }
        let old = entries.entry(at: index)
        if old.value.isStored(identicallyTo: value), old.isDefault == asDefault { return (false, liveBytes, slot) }
        return (true, liveBytes - old.size + newSize, slot)
    }

    /// Applies a record holding only the setting of `key`, numbered `sequence`, at the
    /// slot that `effect(ofSetting:to:size:asDefault:)` found (looked up again if the
    /// table changed since).
    mutating func set(_ value: SuiteValue, forKey key: String, size: Int, asDefault: Bool, at slot: Slot, sequence: UInt64) {
        if slot.revision == revision, let index = slot.index {
            var entry = Entry(value: value, size: RecordFormat.size(ofSetting: key, valueSize: size), isDefault: asDefault)
            let newSize = entry.size
            // Swapped in place: reading the old entry's size out of the table would copy it.
            entries.swapEntry(at: index, with: &entry)
            liveBytes += newSize - entry.size
        } else {
            store(value, forKey: key, size: size, asDefault: asDefault)
        }
        lastSequence = sequence
    }

    /// The live size after `operations`, without applying them.
    func liveBytes(after operations: [Operation]) -> Int {
        if operations.count == 1, let operation = operations.first { return effect(of: operation).liveBytes }
        var total = liveBytes
        var sizes: [String: Int] = [:]
        var cleared = false
        for operation in operations {
            switch operation {
            case .set(let key, _, let size, _):
                total -= sizes[key] ?? (cleared ? 0 : entries[key]?.size ?? 0)
                let newSize = RecordFormat.size(ofSetting: key, valueSize: size)
                sizes[key] = newSize
                total += newSize
            case .remove(let key):
                total -= sizes[key] ?? (cleared ? 0 : entries[key]?.size ?? 0)
                sizes[key] = 0
            case .removeAll:
                total = 0
                sizes = [:]
                cleared = true
            }
        }
        return total
    }

    /// Applies a record, appending to `changes` the net change of every key whose
    /// value differs afterwards, in the order the keys were first touched.
    mutating func apply(_ record: Record, changes: inout [KeyChange]) {
        // The most common commit, one set or removal, touches one key: its change needs
        // no bookkeeping of first values.
        if record.kind == .transaction, record.operations.count == 1 {
            switch record.operations[0] {
            case .set(let key, let value, let size, let asDefault):
                let old = store(value, forKey: key, size: size, asDefault: asDefault)
                if !(old?.value).isStored(identicallyTo: value) {
                    changes.append(KeyChange(key: key, oldValue: old?.value, newValue: value, newValueIsDefault: asDefault))
                }
                lastSequence = record.sequence
                return
            case .remove(let key):
                if let old = removeEntry(forKey: key) {
                    changes.append(KeyChange(key: key, oldValue: old.value, newValue: nil, newValueIsDefault: false))
                }
                lastSequence = record.sequence
                return
            case .removeAll:
                break
            }
        }
        var before: [String: SuiteValue?] = [:]
        var touched: [String] = []
        func remember(_ key: String, _ old: SuiteValue?) {
            guard before[key] == nil else { return }
            before[key] = .some(old)
            touched.append(key)
        }
        // Keys cleared at once are reported in sorted order, the same in every process.
        func rememberAll() {
            var all: [(key: String, value: SuiteValue)] = []
            entries.forEach { key, entry in all.append((key, entry.value)) }
            for (key, value) in all.sorted(by: { $0.key < $1.key }) { remember(key, value) }
        }
        if record.kind == .snapshot {
            rememberAll()
            clear()
        }
        for operation in record.operations {
            switch operation {
            case .set(let key, let value, let size, let asDefault):
                let old = store(value, forKey: key, size: size, asDefault: asDefault)
                remember(key, old?.value)
            case .remove(let key):
                if let old = removeEntry(forKey: key) { remember(key, old.value) }
            case .removeAll:
                rememberAll()
                clear()
            }
        }
        lastSequence = record.sequence
        for key in touched {
            let old = before[key]!
            let new = entries[key]
            if !old.isStored(identicallyTo: new?.value) {
                changes.append(KeyChange(key: key, oldValue: old, newValue: new?.value, newValueIsDefault: new?.isDefault ?? false))
            }
        }
    }

    /// Applies a record, computing no changes.
    mutating func apply(_ record: Record) {
        if record.kind == .snapshot { clear() }
        for operation in record.operations { apply(operation) }
        lastSequence = record.sequence
    }

    /// Applies one operation of a record, computing no changes; `finish(_:)` ends the
    /// record. For reading a file without keeping its records' operations around.
    mutating func apply(_ operation: Operation) {
        switch operation {
        case .set(let key, let value, let size, let asDefault):
            store(value, forKey: key, size: size, asDefault: asDefault)
        case .remove(let key):
            removeEntry(forKey: key)
        case .removeAll:
            clear()
        }
    }

    /// Stores `value` (encoded in `size` bytes) for `key`, keeping `liveBytes`;
    /// returns the entry it replaced.
    @inline(__always) @discardableResult
    private mutating func store(_ value: SuiteValue, forKey key: String, size: Int, asDefault: Bool) -> Entry? {
        let entry = Entry(value: value, size: RecordFormat.size(ofSetting: key, valueSize: size), isDefault: asDefault)
        let old = entries.updateValue(entry, forKey: key)
        liveBytes += entry.size - (old?.size ?? 0)
        return old
    }

    /// Removes `key`, keeping `liveBytes`; returns the entry it removed.
    @inline(__always) @discardableResult
    private mutating func removeEntry(forKey key: String) -> Entry? {
        guard let old = entries.removeValue(forKey: key) else { return nil }
        liveBytes -= old.size
        return old
    }

    /// Makes room for `count` keys.
    mutating func reserve(_ count: Int) {
        entries.reserveCapacity(count)
    }

    /// Begins applying a record operation by operation: a snapshot replaces everything.
    mutating func begin(_ kind: Record.Kind) {
        if kind == .snapshot { clear() }
    }

    /// Ends applying a record operation by operation. A table left far larger than
    /// what it holds is made anew at its size: `reserve(_:)` made room for every set
    /// of the record, and a crafted record that sets one key over and over would
    /// otherwise keep room for hundreds of thousands of keys (tens of times its own
    /// size) for as long as the process runs.
    mutating func finish(sequence: UInt64) {
        lastSequence = sequence
        if entries.capacity > Self.keptSpareCapacity && entries.capacity / 4 > entries.count {
            var compact = KeyTable(minimumCapacity: entries.count)
            entries.forEach { key, entry in compact.updateValue(entry, forKey: key) }
            entries = compact
        }
    }

    /// A table whose capacity is at most this is never made anew for being too large.
    private static let keptSpareCapacity = 256

    /// Empties the table, capacity and all: clearing a table costs its capacity, and a
    /// crafted record that sets one key and removes all, over and over, would otherwise
    /// pay the capacity that its first keys (or `reserve(_:)`) made at every removal.
    private mutating func clear() {
        entries = KeyTable()
        liveBytes = 0
    }

    /// The snapshot record that recreates this state.
    func snapshot(timestamp: Int64, pid: Int32) -> Record {
        var operations: [Operation] = []
        operations.reserveCapacity(entries.count)
        entries.forEach { key, entry in
            let valueSize = entry.size - RecordFormat.size(ofSetting: key, valueSize: 0)
            operations.append(.set(key: key, value: entry.value, size: valueSize, asDefault: entry.isDefault))
        }
        return Record(kind: .snapshot, sequence: lastSequence, timestamp: timestamp, pid: pid, operations: operations)
    }

    /// The net changes from `self` to `other`, per key.
    func changes(to other: SuiteContents) -> [KeyChange] {
        var result: [KeyChange] = []
        entries.forEach { key, entry in
            let new = other.entries[key]
            if !(new?.value).isStored(identicallyTo: entry.value) {
                result.append(KeyChange(key: key, oldValue: entry.value, newValue: new?.value, newValueIsDefault: new?.isDefault ?? false))
            }
        }
        other.entries.forEach { key, entry in
            if entries[key] == nil {
                result.append(KeyChange(key: key, oldValue: nil, newValue: entry.value, newValueIsDefault: entry.isDefault))
            }
        }
        return result
    }
}
