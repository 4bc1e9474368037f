/// What keeps a suite's store in the registry: every `Suite` instance of the suite in
/// this process holds it, and so does every observation of it. The registry and the
/// observer hub, which must not keep a store open, refer to the lease weakly, and never
/// to the store: a weak reference gives an object a side table, after which every
/// retain and release of it takes the runtime's slow path (a pair on every `set`).
final class StoreLease: Sendable {
    let store: SuiteStore
    fileprivate init(_ store: SuiteStore) { self.store = store }
}

/// Gives every `Suite` instance of one suite in this process the same `SuiteStore`,
/// as long as any of them is alive, so they share one cache and one set of files.
enum StoreRegistry {
    private final class WeakLease {
        weak var lease: StoreLease?
        init(_ lease: StoreLease) { self.lease = lease }
    }

    /// Keyed by the directory's device and inode and the suite's name, as text: a
    /// dictionary keyed by a struct of our own costs a new process a runtime
    /// conformance lookup of its own the first time it opens a suite. A String key
    /// costs the lookup of `String: Hashable`, made once for every dictionary of String
    /// keys in the process. (A list in its place, tried, made no start faster: see
    /// Performance.md, "After the seventeenth pass".)
    private static let leases = Locked<Leases>(Leases())

    private struct Leases {
        var byKey: [String: WeakLease] = [:]
        /// The count at which leases of closed suites are next dropped: twice the live
        /// ones after each pruning, so that a process opening thousands of suites
        /// prunes now and then rather than looking at every lease at every open.
        var pruneAt = 64
    }

    static func lease(named name: String, directoryPath: String, sharing: Suite.Sharing, lockTimeout: Duration?) throws -> StoreLease {
        let directory = try SuiteFiles.openDirectory(path: directoryPath, sharing: sharing, suite: name)
        let key = "\(directory.status.device):\(directory.status.inode)/\(name)"
        if let existing = leases.withLock({ $0.byKey[key]?.lease }) { return existing }
        // Opened outside the registry's lock: opening reads the file and may wait for
        // another process's lock.
        let opened = StoreLease(try SuiteStore(name: name, directory: directory, sharing: sharing, lockTimeout: lockTimeout))
        return leases.withLock { leases in
            if let raced = leases.byKey[key]?.lease { return raced }
            if leases.byKey.count >= leases.pruneAt {
                leases.byKey = leases.byKey.filter { $0.value.lease != nil }
                leases.pruneAt = max(64, 2 * leases.byKey.count)
            }
            leases.byKey[key] = WeakLease(opened)
            return opened
        }
    }
}
