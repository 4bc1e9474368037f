import Glibc
import Synchronization

/// One suite as this process sees it, shared by every `Suite` instance of the same
/// suite in the process: the cache, the open files, the registered defaults.
///
/// Threads are kept apart by a mutex, processes by `flock` on the lock file.
final class SuiteStore: Sendable {
    let name: String
    let directoryPath: String
    private let state: Mutex<StoreState>
    private let defaults = Mutex<[String: SuiteValue]>([:])
    /// The thread inside an `update` block, to catch a block that calls back into
    /// the suite (which would deadlock) with a clear message.
    private let transactionThread = Atomic<UInt>(0)

    init(name: String, directory: DirectoryHandle, sharing: Suite.Sharing) throws {
        self.name = name
        self.directoryPath = directory.path
        let state = try StoreState(files: SuiteFiles(suite: name, directory: directory, sharing: sharing))
        // Read the suite now, so that a foreign or unreadable file fails the open.
        try state.refresh()
        let diagnostics = state.pendingDiagnostics
        state.pendingDiagnostics = []
        self.state = Mutex(state)
        diagnostics.forEach(SuiteDiagnostics.report)
    }

    private static var currentThread: UInt { UInt(bitPattern: Int(bitPattern: UInt(pthread_self()))) }

    private func checkNotInsideTransaction() {
        if transactionThread.load(ordering: .relaxed) == Self.currentThread {
            preconditionFailure("Suite \"\(name)\" was used inside its own update block; use the transaction passed to the block instead.")
        }
    }

    /// Runs `body` with the state locked, then reports what it diagnosed.
    private func withState<R>(_ body: (StoreState) throws -> R) rethrows -> R {
        checkNotInsideTransaction()
        var diagnostics: [SuiteDiagnostic] = []
        defer { diagnostics.forEach(SuiteDiagnostics.report) }
        return try state.withLock { state in
            defer {
                diagnostics = state.pendingDiagnostics
                state.pendingDiagnostics = []
            }
            return try body(state)
        }
    }

    // MARK: Reading

    /// Runs `body` on the current contents. A failure to refresh is reported as a
    /// diagnostic, and the last contents read are used.
    func read<R>(_ body: (SuiteContents) -> R) -> R {
        withState { state in
            do {
                try state.refresh()
                state.lastRefreshFailure = nil
            } catch {
                let message = "\(error)"
                if state.lastRefreshFailure != message {
                    state.lastRefreshFailure = message
                    state.diagnose(.refreshFailed, "Could not read the latest state; answering from the state read before: \(message)")
                }
            }
            return body(state.contents)
        }
    }

    /// Refreshes, throwing what a read would only report.
    func reload() throws {
        try withState { state in
            do {
                try state.refresh()
            } catch {
                throw SuiteError(error, suite: name, doing: "read the suite")
            }
        }
    }

    // MARK: Registered defaults

    func register(_ values: [String: SuiteValue]) {
        defaults.withLock { $0.merge(values) { _, new in new } }
    }

    func registeredDefault(forKey key: String) -> SuiteValue? {
        defaults.withLock { $0[key] }
    }

    var registeredDefaults: [String: SuiteValue] {
        defaults.withLock { $0 }
    }

    // MARK: Writing

    /// Commits operations built outside any lock, dropping those that change nothing.
    func commit(_ operations: [Operation], durability: Suite.Durability, options: Suite.Options) throws {
        try withState { state in
            try exclusively(state) {
                let changing = operations.filter { operation in
                    switch operation {
                    case .set(let key, let value, _): state.contents[key] != value
                    case .remove(let key): state.contents[key] != nil
                    case .removeAll: state.contents.count > 0
                    }
                }
                try state.commit(changing, durability: durability, options: options)
            }
        }
    }

    /// Runs a transaction under the exclusive lock and commits what it wrote.
    func transaction<R>(
        durability: Suite.Durability, options: Suite.Options, _ body: (SuiteTransaction) throws -> R
    ) throws -> R {
        let defaults = registeredDefaults
        return try withState { state in
            try exclusively(state) {
                let transaction = SuiteTransaction(suite: name, base: state.contents, defaults: defaults,
                                                   maximumValueSize: options.maximumValueSize)
                let result: R
                do {
                    transactionThread.store(Self.currentThread, ordering: .relaxed)
                    defer { transactionThread.store(0, ordering: .relaxed) }
                    result = try body(transaction)
                } catch {
                    transaction.abandon()
                    throw error
                }
                try state.commit(transaction.finish(), durability: durability, options: options)
                return result
            }
        }
    }

    /// Compacts the journal now, whatever its size.
    func compact(durable: Bool) throws {
        try withState { state in
            try exclusively(state) { try state.compact(durable: durable) }
        }
    }

    /// Makes every committed write durable.
    func flush() throws {
        try withState { state in
            try state.withFileLock(.shared) {
                do {
                    try state.catchUp(exclusive: false)
                } catch is NeedsExclusiveLock {
                    // A repair is due; the next write makes it. What is on disk is synced as it is.
                }
                try state.synchronizeToDisk()
            }
        }
    }

    /// Takes the exclusive lock and catches up: the start of every write.
    private func exclusively<R>(_ state: StoreState, _ body: () throws -> R) throws -> R {
        guard state.writable else {
            throw SuiteError(.readOnly, suite: name, path: directoryPath,
                             message: "This process may only read the suite (its files or directory are not writable).")
        }
        return try state.withFileLock(.exclusive) {
            do {
                try state.catchUp(exclusive: true)
                return try body()
            } catch let error as SuiteError {
                throw error
            } catch is NeedsExclusiveLock {
                throw SuiteError(.ioFailure, suite: name, message: "The suite's lock file could not be mapped.")
            } catch let failure as SystemCallError {
                throw SuiteError(failure, suite: name, doing: "write the suite")
            }
        }
    }
}
