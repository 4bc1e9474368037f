import Dispatch
import Foundation
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
    /// The queues of observation, made with the first observer: a process that only
    /// reads and writes never starts libdispatch for them.
    private struct ObserverQueues: @unchecked Sendable {
        /// Where observers' handlers run, one change at a time, in commit order.
        let delivery: DispatchQueue
        /// Where this suite catches up when the change watcher says its file changed,
        /// so that a suite whose lock is held for long delays no other suite's changes.
        let refreshing: DispatchQueue
    }
    private let observerQueues = Mutex<ObserverQueues?>(nil)
    private let refreshScheduled = Atomic<Bool>(false)

    private var queues: ObserverQueues {
        observerQueues.withLock { queues in
            if let queues { return queues }
            let made = ObserverQueues(delivery: DispatchQueue(label: "suite-defaults.changes.\(name)"),
                                      refreshing: DispatchQueue(label: "suite-defaults.refresh.\(name)"))
            queues = made
            return made
        }
    }
    private let nextObserverID = Atomic<UInt64>(1)
    /// The directory's device and inode, for the change watcher.
    let directoryIdentity: DirectoryIdentity
    /// A path to exactly the directory this store has open, wherever it is now.
    let watchPath: String

    init(name: String, directory: DirectoryHandle, identity: DirectoryIdentity, sharing: Suite.Sharing) throws {
        self.name = name
        self.directoryPath = directory.path
        self.directoryIdentity = identity
        self.watchPath = "/proc/self/fd/\(directory.descriptor.rawValue)"
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

    /// Runs `body` with the state locked, then reports what it diagnosed. The changes
    /// it found are queued for the observers before the lock is released, so they
    /// reach every observer in commit order.
    private func withState<R>(_ body: (StoreState) throws -> R) rethrows -> R {
        checkNotInsideTransaction()
        var diagnostics: [SuiteDiagnostic] = []
        defer { diagnostics.forEach(SuiteDiagnostics.report) }
        return try state.withLock { state in
            defer {
                diagnostics = state.pendingDiagnostics
                state.pendingDiagnostics = []
                deliverPendingChanges(state)
            }
            return try body(state)
        }
    }

    /// Under the state lock: hands the changes found to the observers registered now.
    private func deliverPendingChanges(_ state: StoreState) {
        guard !state.pendingChanges.isEmpty else { return }
        let changes = state.pendingChanges
        let sinks = Array(state.observers.values)
        state.pendingChanges = []
        queues.delivery.async {
            for change in changes {
                for sink in sinks { sink.receive(change) }
            }
        }
    }

    // MARK: Reading

    /// Runs `body` on the current contents. A failure to refresh is reported as a
    /// diagnostic, and the last contents read are used.
    func read<R>(_ body: (SuiteContents) -> R) -> R {
        // The fresh case, by far the most frequent, touches nothing but the freshness
        // check and the contents.
        checkNotInsideTransaction()
        var result: R?
        let fresh = state.withLock { state in
            guard state.isFresh else { return false }
            result = body(state.contents)
            return true
        }
        if fresh, let result { return result }
        return withState { state in
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

    // MARK: Observation

    /// Adds an observer. The directory is watched before the observer is registered,
    /// so no write can fall between the two unseen.
    func addObserver(keys: Set<String>?, initialValues: SuiteChange.Kind?,
                     handler: @escaping @Sendable (SuiteChange) -> Void) throws -> SuiteCancellable {
        try ChangeWatcher.shared.watch(self)
        let sink = ObserverSink(keys: keys, handler: handler)
        let id = nextObserverID.wrappingAdd(1, ordering: .relaxed).oldValue
        withState { state in
            // Catch up first: what was committed before this point is not a change to
            // this observer, and earlier observers receive it before anything below.
            try? state.refresh()
            deliverPendingChanges(state)
            if let kind = initialValues {
                let now = Date()
                let contents = state.contents
                let delivered = (keys.map(Array.init) ?? Array(contents.values.keys)).sorted()
                let initial = delivered.compactMap { key in
                    contents[key].map {
                        SuiteChange(suite: name, key: key, oldValue: nil, newValue: $0, sequence: contents.lastSequence,
                                    pid: 0, isFromThisProcess: false, kind: kind, timestamp: now)
                    }
                }
                queues.delivery.async { initial.forEach(sink.receive) }
            }
            state.observers[id] = sink
        }
        // The token keeps the store alive: an observation lasts until it is cancelled,
        // even when no `Suite` instance remains.
        return SuiteCancellable {
            sink.deactivate()
            self.removeObserver(id)
        }
    }

    private func removeObserver(_ id: UInt64) {
        let removed = state.withLock { $0.observers.removeValue(forKey: id) != nil }
        if removed { ChangeWatcher.shared.unwatch(self) }
    }

    /// How many observers this suite has in this process.
    var observerCount: Int { state.withLock { $0.observers.count } }

    /// Called by the change watcher when the suite's file changed, or may have: the
    /// suite catches up on its own queue. Events that come while a catch-up is
    /// waiting to start are covered by it.
    func scheduleRefreshForObservers() {
        guard !refreshScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queues.refreshing.async { [self] in
            refreshScheduled.store(false, ordering: .releasing)
            refreshForObservers()
        }
    }

    private func refreshForObservers() {
        withState { state in
            do {
                try state.refresh()
            } catch {
                state.diagnose(.refreshFailed, "Could not read a change of the suite: \(error)")
            }
        }
    }

    /// Says that change events were lost; the refresh that follows catches up.
    func reportLostEvents() {
        SuiteDiagnostics.report(SuiteDiagnostic(
            kind: .changeEventsLost, suite: name, directory: directoryPath,
            message: "Change events were lost (the inotify queue overflowed or a watch was lost); catching up from the suite file."))
    }

    /// Runs `work` on the observers' queue after the changes already queued.
    func enqueueForObservers(_ work: @escaping @Sendable () -> Void) {
        queues.delivery.async(execute: work)
    }

    /// Waits until every change found so far has been handed to the observers.
    func waitForDelivery() {
        queues.delivery.sync {}
    }
}
