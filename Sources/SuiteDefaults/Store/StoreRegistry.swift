/// Gives every `Suite` instance of one suite in this process the same `SuiteStore`,
/// as long as any of them is alive, so they share one cache and one set of files.
enum StoreRegistry {
    private final class WeakStore {
        weak var store: SuiteStore?
        init(_ store: SuiteStore) { self.store = store }
    }

    /// Keyed by the directory's device and inode and the suite's name, as text: a
    /// dictionary keyed by a struct of our own costs a new process a runtime
    /// conformance lookup the first time it opens a suite, a String key does not.
    private static let stores = Locked<[String: WeakStore]>([:])

    static func store(named name: String, directoryPath: String, sharing: Suite.Sharing, lockTimeout: Duration?) throws -> SuiteStore {
        let directory = try SuiteFiles.openDirectory(path: directoryPath, sharing: sharing, suite: name)
        let key = "\(directory.status.device):\(directory.status.inode)/\(name)"
        if let existing = stores.withLock({ $0[key]?.store }) { return existing }
        // Opened outside the registry's lock: opening reads the file and may wait for
        // another process's lock.
        let opened = try SuiteStore(name: name, directory: directory, sharing: sharing, lockTimeout: lockTimeout)
        return stores.withLock { stores in
            if let raced = stores[key]?.store { return raced }
            if stores.values.contains(where: { $0.store == nil }) { stores = stores.filter { $0.value.store != nil } }
            stores[key] = WeakStore(opened)
            return opened
        }
    }
}
