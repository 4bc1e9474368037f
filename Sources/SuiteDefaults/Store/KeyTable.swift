/// The table of a suite's keys and their entries: open addressing with linear probing,
/// keys hashed by their UTF-8 bytes, in one array that is copied on write.
///
/// Why not `Dictionary<String, Entry>`: a `String` key is hashed through `Hasher`
/// (SipHash), which took a quarter of the instructions of a fresh read. And why not a
/// `Dictionary` keyed by a type of ours with its own hash: a dictionary's storage is
/// made at run time for its key type, and the runtime then looks that type's
/// `Hashable` conformance up through every conformance that the process has loaded,
/// once per process, which cost opening a suite about 100 µs in a new process. This
/// table is not generic and needs no conformance.
///
/// Every key in the table is in Unicode NFC (writes normalize their keys, and reading
/// a file normalizes the keys it reads). Between two strings in NFC, `==` (canonical
/// equivalence) is equality of their bytes, so a hash of the bytes agrees with it. A
/// key spelled otherwise may hash elsewhere and miss: `nfcTwin(of:)` gives the
/// spelling to try after a miss, which costs only misses, and only for keys that are
/// not ASCII.
struct KeyTable: Sendable {
    typealias Entry = SuiteContents.Entry

    private struct Bucket: Sendable {
        var key: String
        var entry: Entry
    }

    /// Empty, or a power of two of buckets, at most three quarters full.
    private var buckets: [Bucket?] = []
    private(set) var count = 0

    init() {}

    init(minimumCapacity: Int) {
        if minimumCapacity > 0 { buckets = Array(repeating: nil, count: Self.bucketCount(holding: minimumCapacity)) }
    }

    /// How many keys the table holds before it grows.
    var capacity: Int { buckets.count / 4 * 3 }

    var isEmpty: Bool { count == 0 }

    /// The fewest buckets, a power of two and at least 8, that hold `capacity` keys.
    private static func bucketCount(holding capacity: Int) -> Int {
        var buckets = 8
        while buckets / 4 * 3 < capacity { buckets <<= 1 }
        return buckets
    }

    // MARK: Looking up

    /// `text` in its normal form, for a second lookup after a miss; nil when `text` is
    /// ASCII, which is its own normal form.
    static func nfcTwin(of text: String) -> String? {
        Validation.isASCII(text) ? nil : UTF8Text.normalForm(text).text
    }

    /// The entry stored under `key`, as spelled (see `nfcTwin(of:)`).
    subscript(key: String) -> Entry? {
        guard let index = index(forKey: key) else { return nil }
        return buckets[index].unsafelyUnwrapped.entry
    }

    /// Where `key`, as spelled, is in the table: a position for `entry(at:)` and
    /// `swapEntry(at:with:)`, good until the table next changes.
    func index(forKey key: String) -> Int? {
        guard !buckets.isEmpty else { return nil }
        let (index, found) = find(key)
        return found ? index : nil
    }

    func entry(at index: Int) -> Entry {
        buckets[index].unsafelyUnwrapped.entry
    }

    /// The bucket that holds `key`, or the empty one where it would go. The table is
    /// never full, so the probe ends.
    private func find(_ key: String) -> (index: Int, found: Bool) {
        let mask = buckets.count - 1
        var index = Self.hash(key, seed) & mask
        return buckets.withUnsafeBufferPointer { buckets in
            while true {
                guard let bucket = buckets[index] else { return (index, false) }
                if bucket.key == key { return (index, true) }
                index = (index + 1) & mask
            }
        }
    }

    // MARK: Changing

    /// Swaps `entry` with the entry at `index` (from `index(forKey:)`).
    mutating func swapEntry(at index: Int, with entry: inout Entry) {
        swap(&buckets[index]!.entry, &entry)
    }

    /// Stores `entry` under `key` (in NFC); returns the entry it replaced.
    @discardableResult
    mutating func updateValue(_ entry: Entry, forKey key: String) -> Entry? {
        if !buckets.isEmpty {
            let (index, found) = find(key)
            if found {
                var entry = entry
                swapEntry(at: index, with: &entry)
                return entry
            }
            if count < capacity {
                buckets[index] = Bucket(key: key, entry: entry)
                count += 1
                return nil
            }
        }
        // A new key with no room left: only then does the table grow.
        grow(toHold: count + 1)
        insertNew(entry, forKey: key)
        return nil
    }

    /// Removes `key` (in NFC); returns the entry it removed. The buckets after it move
    /// back into the gap where their probes allow, so no probe ever passes a gap.
    @discardableResult
    mutating func removeValue(forKey key: String) -> Entry? {
        guard let index = index(forKey: key) else { return nil }
        let mask = buckets.count - 1, seed = seed
        let removed = buckets[index].take().unsafelyUnwrapped
        var gap = index, next = (index + 1) & mask
        while let bucket = buckets[next] {
            let home = Self.hash(bucket.key, seed) & mask
            // Movable when the gap lies on its probe, from its home to where it is.
            if (next &- home) & mask >= (next &- gap) & mask {
                buckets[gap] = buckets[next].take()
                gap = next
            }
            next = (next + 1) & mask
        }
        count -= 1
        return removed.entry
    }

    mutating func reserveCapacity(_ minimumCapacity: Int) {
        if minimumCapacity > capacity { grow(toHold: minimumCapacity) }
    }

    private mutating func grow(toHold minimumCapacity: Int) {
        var grown = KeyTable(minimumCapacity: max(minimumCapacity, capacity * 2))
        forEach { key, entry in grown.insertNew(entry, forKey: key) }
        self = grown
    }

    /// Stores a key that the table does not hold yet, with room for it.
    private mutating func insertNew(_ entry: Entry, forKey key: String) {
        let mask = buckets.count - 1
        var index = Self.hash(key, seed) & mask
        buckets.withUnsafeMutableBufferPointer { buckets in
            while case .some = buckets[index] { index = (index + 1) & mask }
            buckets[index] = Bucket(key: key, entry: entry)
        }
        count += 1
    }

    /// Calls `body` with every key and its entry, in no particular order.
    func forEach(_ body: (String, Entry) throws -> Void) rethrows {
        for case let bucket? in buckets { try body(bucket.key, bucket.entry) }
    }

    // MARK: Hashing

    /// Differs with the number of buckets: keys taken in one table's order and put
    /// into a table of another size would otherwise fill its buckets in runs.
    private var seed: UInt64 {
        Self.processKey ^ (UInt64(truncatingIfNeeded: buckets.count) &* 0x9E37_79B9_7F4A_7C15)
    }

    /// A key drawn at random for the process by `Hasher` (fixed under
    /// `SWIFT_DETERMINISTIC_HASHING`, as `Hasher` is), so that keys crafted to fall into
    /// one run of buckets in one process do not in another.
    private static let processKey: UInt64 = {
        var hasher = Hasher()
        hasher.combine(0x5375_6974_654B_6579 as UInt64)
        return UInt64(bitPattern: Int64(hasher.finalize()))
    }()

    /// The hash of `key`'s UTF-8 bytes with `seed`.
    static func hash(_ key: String, _ seed: UInt64) -> Int {
        // In place (a native string's bytes are contiguous), rather than through
        // `withUTF8`, whose copy of the string costs a retain and a release.
        if let hash = key.utf8.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0), seed) }) {
            return hash
        }
        return Array(key.utf8).withUnsafeBytes { hash($0, seed) }
    }

    /// The bytes in words of eight, the last word overlapping the one before (keys
    /// shorter than eight bytes are read in parts that may overlap), each word mixed in
    /// by a multiply and a shift, with the length; then SplitMix64's finalizer, so that
    /// every bit reaches the low bits that a bucket is chosen by. With the length mixed
    /// in, the words read say which bytes the key holds.
    private static func hash(_ bytes: UnsafeRawBufferPointer, _ seed: UInt64) -> Int {
        let count = bytes.count
        var state = seed ^ (UInt64(truncatingIfNeeded: count) &* 0xC2B2_AE3D_27D4_EB4F)
        let last: UInt64
        if count >= 8 {
            var offset = 0
            while offset + 8 < count {
                state = mix(state ^ bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
                offset += 8
            }
            last = bytes.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)
        } else if count >= 4 {
            last = UInt64(bytes.loadUnaligned(as: UInt32.self)) << 32
                | UInt64(bytes.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self))
        } else if count > 0 {
            last = UInt64(bytes[0]) << 16 | UInt64(bytes[count >> 1]) << 8 | UInt64(bytes[count - 1])
        } else {
            last = 0
        }
        state = mix(state ^ last)
        state = (state ^ (state >> 30)) &* 0xBF58_476D_1CE4_E5B9
        state = (state ^ (state >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int(truncatingIfNeeded: state ^ (state >> 31))
    }

    @inline(__always)
    private static func mix(_ value: UInt64) -> UInt64 {
        let product = value &* 0xFF51_AFD7_ED55_8CCD
        return product ^ (product >> 32)
    }
}
