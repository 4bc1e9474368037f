#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One suite as this process sees it, shared by every `Suite` instance of the same
/// suite in the process: the engine's state behind a lock, and the registered
/// defaults.
///
/// Threads are kept apart by the lock, processes by `flock` on the lock file. In a
/// forked child, the first use opens the files again (the parent's descriptors carry
/// the parent's locks) and reads the suite afresh, collecting no changes.
final class SuiteStore: Sendable {
    let name: String
    let directoryPath: String
    private let sharing: Suite.Sharing
    private let state: Locked<StoreState>
    /// This suite's registered defaults: the process's, shared with every store of it.
    private let defaults: RegisteredDefaults
    /// The thread inside an `update` block, to catch a block that calls back into
    /// the suite (which would deadlock) with a clear message.
    private let transactionThread = ThreadMark()
    /// Who receives the commits applied while the state collects changes (the
    /// layer above sets it up when it first wants them).
    private let listener = Locked<(any AppliedCommitListener)?>(nil)

    init(name: String, directory: DirectoryHandle, sharing: Suite.Sharing, lockTimeout: Duration?) throws {
        self.name = name
        self.directoryPath = directory.path
        self.sharing = sharing
        self.defaults = RegisteredDefaults.of(suite: name, directoryPath: directory.path)
        self.state = Locked(try StoreState(files: SuiteFiles(suite: name, directory: directory, sharing: sharing)))
        // Read the suite now, so that a foreign or unreadable file fails the open.
        try refresh(lockTimeout: lockTimeout)
    }

    /// Whether the calling thread is inside an `update` block of this store.
    var isInsideTransactionOnCurrentThread: Bool {
        transactionThread.isCurrentThread
    }

    private func checkNotInsideTransaction() {
        if isInsideTransactionOnCurrentThread { stopUsedInsideItsOwnUpdate() }
    }

    /// Apart from the check, which every read and write runs: its message's code stays
    /// out of the way of the code a widget starts with.
    @inline(never)
    private func stopUsedInsideItsOwnUpdate() -> Never {
        // fatalError, not preconditionFailure: an optimized build drops the latter's
        // message, and this one tells the programmer what to change.
        fatalError("Suite \"\(name)\" was used inside its own update block; use the transaction passed to the block instead.")
    }

    /// Whether this process's next commit may skip its files' status calls, having
    /// found them as they should be while watched (`StoreState.FileWatch`).
    var skipsFileStatusWhileUnchanged: Bool { state.withLock { $0.fileWatch.verifiedAt != nil } }

    /// The directory the suite's files are in now.
    var directory: DirectoryHandle { state.withLock { $0.files.directory } }

    /// The state under the lock; in a forked child, a new state with files of its own
    /// (starting from what the parent had read, so that a read that cannot refresh
    /// answers with that rather than with nothing).
    private func current(_ state: inout StoreState) throws -> StoreState {
        if state.epoch != ForkEpoch.current {
            state = try StoreState(files: files(in: state.files.directory), continuing: state, collectingChanges: false)
        }
        return state
    }

    private func files(in directory: DirectoryHandle) -> SuiteFiles {
        SuiteFiles(suite: name, directory: directory, sharing: sharing)
    }

    /// The suite's directory was removed and a directory made at its path: moves to
    /// the files there, keeping the contents read so far (so that the difference is
    /// collected as net changes) and whether changes are collected.
    func moveToReplacedDirectory() throws {
        let directory = try SuiteFiles.openDirectory(path: directoryPath, sharing: sharing, suite: name, creating: false)
        try state.withLock { state in
            let previous = try current(&state)
            state = try StoreState(files: files(in: directory), continuing: previous, collectingChanges: previous.collectsChanges)
        }
    }

    /// Runs `body` with the state locked, then takes what the engine did: the
    /// commits it applied go to the listener before the lock is released, so that
    /// they reach it in commit order; the diagnostics are reported after.
    private func withState<R>(_ body: (StoreState) throws -> R) throws -> R {
        checkNotInsideTransaction()
        var diagnostics: [SuiteDiagnostic] = []
        defer { diagnostics.forEach(SuiteDiagnostics.report) }
        return try state.withLock { state in try run(body, on: &state, diagnostics: &diagnostics) }
    }

    /// Under the state lock: `body` on the current state, then what the engine did.
    @inline(__always)
    private func run<R>(_ body: (StoreState) throws -> R, on state: inout StoreState,
                        diagnostics: inout [SuiteDiagnostic]) throws -> R {
        let state = try current(&state)
        defer {
            handOverCommits(state)
            diagnostics = state.takeDiagnostics()
        }
        return try body(state)
    }

    /// Under the state lock: gives the commits applied so far to the listener.
    private func handOverCommits(_ state: StoreState) {
        guard !state.appliedCommits.isEmpty else { return }
        listener.withLock { $0 }?.store(self, applied: state.appliedCommits)
        state.appliedCommitsHandedOver()
    }

    // MARK: Collecting changes

    /// The listener of this store, made by `make` when there is none of that type.
    func listener<Listener: AppliedCommitListener>(orMake make: () -> Listener) -> Listener {
        listener.withLock { current in
            if let existing = current as? Listener { return existing }
            let made = make()
            current = made
            return made
        }
    }

    /// Under the state lock: catches up (with `catchingUp`, as far as that needs no
    /// file lock: `catchUpWithoutFileLock`), hands what that applied to the listener,
    /// then runs `body` on the contents, where it says whether changes are collected
    /// from now on. So nothing committed falls between what the listener was given and
    /// what `body` sees.
    func withChangeCollection<R>(catchingUp: Bool, _ body: (SuiteContents, inout Bool) -> R) throws -> R {
        try withState { state in
            // Not `catchUp`, which trusts the header as only the file lock makes it
            // trustworthy: without the lock, a header read while a compaction changes
            // it may name the new file with the old length, and the state read from
            // that goes back in time.
            if catchingUp { _ = state.catchUpWithoutFileLock() }
            handOverCommits(state)
            return body(state.contents, &state.collectsChanges)
        }
    }

    /// The contents as this process last read them, without reading anything: what
    /// a test looks at to see when the process caught up.
    var contentsAsLastRead: SuiteContents {
        state.withLock { $0.contents }
    }

    // MARK: Reading

    /// Runs `body` on the current contents. A failure to refresh (a lock held past
    /// `lockTimeout` among them) is reported as a diagnostic, and the last contents
    /// read are used.
    func read<R>(lockTimeout: Duration?, _ body: (SuiteContents) -> R) -> R {
        // The fresh case, by far the most frequent, touches nothing but the freshness
        // check and the contents.
        checkNotInsideTransaction()
        var result: R?
        let fresh = state.withLock { state in
            guard state.epoch == ForkEpoch.current, state.isFresh else { return false }
            result = body(state.contents)
            return true
        }
        if fresh, let result { return result }
        var failure: (any Error)?
        do {
            try refresh(lockTimeout: lockTimeout)
        } catch {
            failure = error
        }
        do {
            return try withState { state in
                if let failure {
                    let message = "\(failure)"
                    if state.lastRefreshFailure != message {
                        state.lastRefreshFailure = message
                        state.diagnose(.refreshFailed, "Could not read the latest state; answering from the state read before: \(message)")
                    }
                } else {
                    state.lastRefreshFailure = nil
                }
                return body(state.contents)
            }
        } catch {
            // Only a forked child that cannot open the files again lands here.
            SuiteDiagnostics.report(SuiteDiagnostic(kind: .refreshFailed, suite: name, directory: directoryPath,
                                                    message: "Could not open the suite's files again after fork: \(error)"))
            return body(SuiteContents())
        }
    }

    /// Runs `body` on every commit after `sequence`, in order, read after a refresh (see
    /// `StoreState.forEachCommit(after:_:)`); false when the journal and its history no
    /// longer hold every one.
    func forEachCommit(after sequence: UInt64, lockTimeout: Duration?, _ body: (Record) -> Void) throws -> Bool {
        do {
            try refresh(lockTimeout: lockTimeout)
        } catch {
            throw SuiteError(error, suite: name, doing: "read the suite")
        }
        return try withState { $0.forEachCommit(after: sequence, body) }
    }

    /// Whether the contents are the committed state as far as the shared header says,
    /// without taking any lock: false when a catch-up is still to be made.
    var isCaughtUp: Bool {
        (try? withState { $0.isFresh }) ?? false
    }

    /// Refreshes, throwing what a read would only report, and follows a lock file that
    /// lost its name to a newer one even when the state is fresh by the old one's
    /// header: for `Suite.reload()` and observers. With no `lockTimeout`, waits as long
    /// as it takes, without keeping the process's other threads from reading.
    func reload(lockTimeout: Duration?) throws {
        do {
            try refresh(lockTimeout: lockTimeout, skipping: .whenFreshWithItsLockFile)
        } catch {
            throw SuiteError(error, suite: name, doing: "read the suite")
        }
    }

    /// Catches up as `reload` does, if that needs no more than a short wait: for the
    /// change watcher's thread, which serves every observed suite of the process and
    /// so must never wait for one. The event that wakes it comes from a writer's
    /// append, before the writer has published its commit (and released its lock), so
    /// the commit is often still in progress when it looks: for a few nanoseconds, or,
    /// when its wake-up preempted the writer on the same processor, until the writer
    /// runs again. So between attempts it yields the processor rather than spinning.
    /// False when a commit stayed in progress or a lock stayed held for 50 µs, or a
    /// repair is needed, or it failed: the caller then reloads the waiting way, which
    /// also reports the failure.
    func catchUpWithoutWaiting() -> Bool {
        yieldingWhileBusy(tryCatchUp) { $0 == .busy } == .caughtUp
    }

    /// How long a catch-up waits for a commit in progress to be published (and the
    /// change watcher tries a suite's locks) before it takes the waiting way: a writer
    /// holds them for microseconds.
    static let busyWaitNanoseconds: UInt64 = 50_000

    /// Repeats `attempt` while it finds the suite busy, yielding the processor between
    /// tries (the writer it waits for may be the one that its wake-up preempted), for at
    /// most `busyWaitNanoseconds`; returns what the last attempt found.
    private func yieldingWhileBusy<T>(_ attempt: () throws -> T, isBusy: (T) -> Bool) rethrows -> T {
        var deadline: UInt64?
        while true {
            let found = try attempt()
            guard isBusy(found) else { return found }
            let now = MonotonicClock.nanoseconds()
            if deadline == nil { deadline = now + Self.busyWaitNanoseconds }
            guard now < deadline! else { return found }
            Threads.yieldProcessor()
        }
    }

    private enum CatchUpAttempt { case caughtUp, busy, failed }

    /// One attempt of `catchUpWithoutWaiting`: `refresh`'s first attempt, made only if
    /// the state's lock is free.
    private func tryCatchUp() -> CatchUpAttempt {
        var diagnostics: [SuiteDiagnostic] = []
        defer { diagnostics.forEach(SuiteDiagnostics.report) }
        let outcome = state.withLockIfFree { state -> CatchUpAttempt in
            do {
                return try run({ state in
                    switch state.catchUpWithoutFileLock() {
                    case .caughtUp: return .caughtUp
                    case .changeInProgress: return .busy
                    case .needsFileLock:
                        try oneAttempt(.shared, skipping: .whenFreshWithItsLockFile, on: state) { try $0.catchUp(exclusive: false) }
                        return .caughtUp
                    }
                }, on: &state, diagnostics: &diagnostics)
            } catch is AlreadyFresh {
                return .caughtUp
            } catch is LockBusy {
                return .busy
            } catch {
                return .failed
            }
        }
        return outcome ?? .busy
    }

    /// Brings the contents up to the committed state: without the file lock when the
    /// shared header vouches for what is read (`catchUpWithoutFileLock`), else under
    /// the shared lock, and under the exclusive lock when a repair turns out to be needed.
    /// A state that is fresh is left as it is (`skipping`).
    private func refresh(lockTimeout: Duration?, skipping: LockSkip = .whenFresh) throws {
        // A commit in progress is waited for without the lock: what a reader needs is
        // its publication, which comes before the writer's unlock.
        let unlocked = try yieldingWhileBusy({ try withState { $0.catchUpWithoutFileLock() } }) { $0 == .changeInProgress }
        if unlocked == .caughtUp { return }
        var kind = FileDescriptor.LockKind.shared
        while true {
            do {
                try withFileLocked(kind, timeout: lockTimeout, skipping: skipping) { state in
                    try state.catchUp(exclusive: kind == .exclusive)
                }
                return
            } catch is AlreadyFresh {
                return
            } catch is NeedsExclusiveLock {
                guard try withState({ $0.writable }) else {
                    try withFileLocked(.shared, timeout: lockTimeout) { try $0.loadWithoutRepair() }
                    return
                }
                kind = .exclusive
            }
        }
    }

    /// Thrown out of an attempt to lock the file that found it held: the caller waits
    /// on `point` and tries again. (Not a `R?` result: in a transaction's generic
    /// code, an optional of its result type costs a metadata lookup on every commit.)
    private struct LockBusy: Error {
        let point: LockWait.Point
    }

    /// Thrown when an attempt found the state fresh (`LockSkip`): nothing to do.
    private struct AlreadyFresh: Error {}

    /// When an attempt leaves the file lock alone, having nothing to catch up.
    enum LockSkip {
        /// Never: a write, or a catch-up that must read.
        case never
        /// When the state is fresh by the shared header: one load, for a read.
        case whenFresh
        /// When it is fresh and no newer lock file has taken the name of this
        /// process's (`lockFileIsCurrent()`): for `Suite.reload()` and observers,
        /// which follow such a file. The old one's header, which no process writes any
        /// more, stays fresh.
        case whenFreshWithItsLockFile
    }

    /// Runs `body` holding the suite's file lock of `kind`, and the state's lock, both
    /// released between attempts: a thread that waits for another process keeps no
    /// other thread of its process from reading. Throws `AlreadyFresh` without locking
    /// the file when `skipping` says so.
    ///
    /// - Throws: `SuiteError` `.lockTimeout`, naming the holder, once `timeout` has
    ///   passed (nil: waits as long as it takes).
    private func withFileLocked<R>(_ kind: FileDescriptor.LockKind, timeout: Duration?, skipping: LockSkip = .never,
                                   _ body: (StoreState) throws -> R) throws -> R {
        var wait = LockWait(timeout: timeout)
        defer { wait.finish() }
        while true {
            do {
                return try withState { try oneAttempt(kind, skipping: skipping, on: $0, whenLocked: { wait.finish() }, body) }
            } catch let busy as LockBusy {
                guard wait.pause(after: busy.point) else {
                    throw try withState { $0.lockTimeoutError(kind, waited: timeout ?? .zero) }
                }
            }
        }
    }

    /// One attempt of `withFileLocked`, on the state under its lock: `body` holding the
    /// file lock of `kind`. Throws `AlreadyFresh` without locking the file when
    /// `skipping` says so, and `LockBusy` when the file lock is held. `whenLocked` runs
    /// once the file is locked: a waiter stops counting itself there, so that its own
    /// release makes no wake-up call for it.
    @inline(__always)
    private func oneAttempt<R>(_ kind: FileDescriptor.LockKind, skipping: LockSkip, on state: StoreState,
                               whenLocked: () -> Void = {}, _ body: (StoreState) throws -> R) throws -> R {
        switch skipping {
        case .never: break
        case .whenFresh: if state.isFresh { throw AlreadyFresh() }
        case .whenFreshWithItsLockFile: if state.isFresh, try state.lockFileIsCurrent() { throw AlreadyFresh() }
        }
        if kind == .exclusive && !state.writable {
            throw SuiteError(.readOnly, suite: name, path: directoryPath,
                             message: "This process may only read the suite (its files or directory are not writable).")
        }
        let seen = state.releaseCountBeforeTry
        guard try state.tryLockFile(kind) else {
            // A writer that waits reads the holder's commit now, as far as it can
            // without the file lock, rather than once it holds the lock: every other
            // writer waits through that catch-up too.
            if kind == .exclusive { _ = state.catchUpWithoutFileLock() }
            throw LockBusy(point: state.lockWaitPoint(seen: seen))
        }
        defer { state.unlockFile() }
        whenLocked()
        return try body(state)
    }

    // MARK: Registered defaults

    func register(_ values: [String: SuiteValue]) {
        defaults.register(values)
    }

    func registeredDefault(forKey key: String) -> SuiteValue? {
        defaults[key]
    }

    var registeredDefaults: [String: SuiteValue] {
        defaults.all
    }

    // MARK: Writing

    /// Commits one operation built outside any lock, unless it changes nothing (as
    /// stored: `-0.0` over `0.0` is a change): a set, the most common commit, with one
    /// lookup of its key, which decides whether it changes anything and what size the
    /// suite grows to, and finds where it goes.
    func commit(_ operation: consuming Operation, durability: Suite.Durability, options: Suite.Options) throws {
        // Taken apart outside the lock, and moved rather than copied: a copy of the
        // key and of the value would cost a set two atomic retains and releases.
        switch consume operation {
        case .set(let key, let value, let size, let asDefault):
            try exclusively(options: options) { state in
                let effect = state.contents.effect(ofSetting: key, to: value, size: size, asDefault: asDefault)
                guard effect.changes else { return try state.commit([], durability: durability, options: options) }
                try state.commitSet(key: key, value: value, size: size, asDefault: asDefault, slot: effect.slot,
                                    liveBytesAfter: effect.liveBytes, durability: durability, options: options)
            }
        case let other:
            try exclusively(options: options) { state in
                let effect = state.contents.effect(of: other)
                try state.commit(effect.changes ? [other] : [], durability: durability, options: options,
                                 liveBytesAfter: effect.liveBytes)
            }
        }
    }

    /// How long a transaction's block may run before its lock file is checked again.
    static let transactionCheckedAfterNanoseconds: Int64 = 100_000

    /// Runs a transaction under the exclusive lock and commits what it wrote. (Its
    /// block returns nothing: `Suite.update` keeps the block's result, so that no layer
    /// under it is generic, which called from another module would run unspecialized.)
    func transaction(
        durability: Suite.Durability, options: Suite.Options, flags: Record.Flags = [], _ body: (SuiteTransaction) throws -> Void
    ) throws {
        try exclusively(options: options) { state in
            let transaction = SuiteTransaction(store: self, base: state.contents, maximumValueSize: options.maximumValueSize)
            // The wall clock, read twice, times the block and stamps the record (one
            // reading fewer than a monotonic clock as well): a step back longer than the
            // block counts as a long block (Design.md, "Deleting the lock file during a
            // write", says what a shorter one can do).
            let started = WallClock.nanosecondsSince1970()
            do {
                transactionThread.markCurrentThread()
                defer { transactionThread.clear() }
                try body(transaction)
            } catch {
                transaction.abandon()
                throw error
            }
            let commit = transaction.finish()
            // A block that ran for long gave time to delete the lock file, after which
            // another process may hold the new one and the two would write at once. (A
            // short one is as safe as a plain write, which does not look again.)
            let finished = WallClock.nanosecondsSince1970()
            let ranLong = !(0...Self.transactionCheckedAfterNanoseconds).contains(finished &- started)
            guard try commit.isEmpty || !ranLong || state.lockFileHasName() else {
                throw SuiteError(.ioFailure, suite: name, path: directoryPath,
                                 message: "The suite's lock file was deleted while the transaction ran, so another process could be writing at the same time; nothing was written. Try again.")
            }
            switch commit {
            case .set(let key, let value, let size, let asDefault, let slot, let liveBytesAfter):
                try state.commitSet(key: key, value: value, size: size, asDefault: asDefault, slot: slot,
                                    liveBytesAfter: liveBytesAfter, durability: durability, options: options, flags: flags,
                                    timestamp: finished)
            case .operations(let operations, let liveBytesAfter):
                try state.commit(operations, durability: durability, options: options, liveBytesAfter: liveBytesAfter, flags: flags,
                                 timestamp: finished)
            }
        }
    }

    /// Compacts the journal now, whatever its size.
    func compact(options: Suite.Options) throws {
        try exclusively(options: options) { state in
            try state.compact(durable: options.durability == .durable, historyLimit: options.changeHistorySize)
        }
    }

    /// Makes every committed write durable.
    func flush(lockTimeout: Duration?) throws {
        try withFileLocked(.shared, timeout: lockTimeout) { state in
            do {
                try state.catchUp(exclusive: false)
            } catch is NeedsExclusiveLock {
                // A repair is due; the next write makes it. What is on disk is synced as it is.
            }
            try state.synchronizeToDisk()
        }
    }

    /// Takes the exclusive lock and catches up: the start of every write.
    private func exclusively<R>(options: Suite.Options, _ body: (StoreState) throws -> R) throws -> R {
        try withFileLocked(.exclusive, timeout: options.lockTimeout) { state in
            do {
                try state.catchUp(exclusive: true)
                return try body(state)
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
