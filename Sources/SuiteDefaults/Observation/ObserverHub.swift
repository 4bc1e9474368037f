#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization

/// The observers of one suite in this process, and where they are served.
///
/// The store hands it every commit it applies while someone observes (under the
/// store's lock, so in commit order); the hub turns them into `SuiteChange`s and
/// queues them for the observers registered at that moment. The change watcher
/// tells it when the suite's file changed, and it catches the store up on its
/// queue. One hub per store, made with the first observer: a process that only
/// reads and writes starts no thread for observers.
final class ObserverHub: AppliedCommitListener {
    /// Weak: the store owns its hub. An observation's token keeps the lease, and so
    /// the store, alive.
    private weak let lease: StoreLease?
    private var store: SuiteStore? { lease?.store }
    let suite: String
    let directoryPath: String

    private struct Observers {
        /// A forked child starts with none: observations stay with the parent.
        var epoch = ForkEpoch.current
        var sinks: [UInt64: ObserverSink] = [:] {
            didSet {
                list = Array(sinks.values)
                allOnWatcherThread = !sinks.isEmpty && list.allSatisfy(\.onWatcherThread)
            }
        }
        /// The sinks, as handed to each delivery (made once per change of observers, not per delivery).
        private(set) var list: [ObserverSink] = []
        /// Whether there are observers and all of them asked for `.watcherThread`.
        private(set) var allOnWatcherThread = false
        var nextID: UInt64 = 1
        var queue: ObserverQueue?
    }

    private let observers = Locked(Observers())

    private init(lease: StoreLease) {
        self.lease = lease
        suite = lease.store.name
        directoryPath = lease.store.directoryPath
    }

    /// The hub of the leased store, made with its first observer.
    static func of(_ lease: StoreLease) -> ObserverHub {
        lease.store.listener { ObserverHub(lease: lease) }
    }

    /// Runs `body` on the observers of this process, begun afresh in a forked child.
    private func withObservers<R>(_ body: (inout Observers) -> R) -> R {
        observers.withLock { observers in
            if observers.epoch != ForkEpoch.current { observers = Observers() }
            return body(&observers)
        }
    }

    /// The queue of this suite's observers, made with the first; in a forked child,
    /// made again (the parent's thread does not exist there). Nil when its thread
    /// could not be started: then nobody observes the suite in this process (`add`
    /// throws).
    private var queue: ObserverQueue? {
        withObservers(Self.queue(of:))
    }

    /// The observers registered now, whether all of them asked for `.watcherThread`,
    /// and their queue, under one lock; nil when there are none (no queue is made for
    /// nobody).
    private func sinksAndQueue() -> (sinks: [ObserverSink], onWatcherThread: Bool, queue: ObserverQueue)? {
        withObservers { observers in
            guard !observers.sinks.isEmpty, let queue = Self.queue(of: &observers) else { return nil }
            return (observers.list, observers.allOnWatcherThread, queue)
        }
    }

    private static func queue(of observers: inout Observers) -> ObserverQueue? {
        if let queue = observers.queue { return queue }
        guard let serial = SerialQueue(name: "suite-observers") else { return nil }
        let made = ObserverQueue(serial: serial)
        observers.queue = made
        return made
    }

    // MARK: Observers

    /// Adds an observer. The directory is watched before the observer is registered,
    /// so no write can fall between the two unseen; what was committed before
    /// registration is not a change to this observer.
    func add(_ sink: ObserverSink, initialValues: SuiteChange.Kind?, lockTimeout: Duration?) throws -> SuiteCancellable {
        guard let lease else { throw SuiteError(.ioFailure, suite: suite, message: "The suite was closed.") }
        let store = lease.store
        // The queue first: an observer is registered only where it can be served.
        guard let queue else {
            throw SuiteError.threadNotStarted("a thread for the suite's observers", suite: suite)
        }
        try ChangeWatcher.shared.watch(self, directory: store.directory)
        // Catch up first, so that earlier observers receive what came before this one.
        try? store.reload(lockTimeout: lockTimeout)
        let id: UInt64
        do {
            id = try store.withChangeCollection(catchingUp: true) { contents, collectsChanges in
                collectsChanges = true
                if let kind = initialValues {
                    let initial = initialChanges(of: contents, keys: sink.keys, kind: kind)
                    queue.async(mayRunElsewhere: sink.onWatcherThread) { initial.forEach(sink.receive) }
                }
                return withObservers { observers in
                    defer { observers.nextID += 1 }
                    observers.sinks[observers.nextID] = sink
                    return observers.nextID
                }
            }
        } catch {
            ChangeWatcher.shared.unwatch(self)
            throw error
        }
        // A registration that could not catch up (the suite's lock held past the
        // timeout while what changed needs it, say a new data file) leaves the rest to
        // the suite's queue, which waits for the lock: a change made before the
        // directory was watched would otherwise reach this observer only with the
        // next write.
        if !store.isCaughtUp { scheduleRefresh() }
        let epoch = ForkEpoch.current
        // The token holds the lease: an observation lasts until it is cancelled, even
        // when no `Suite` instance remains.
        return SuiteCancellable { [lease] in
            sink.deactivate()
            // In a forked child, the observation stayed with the parent; the watcher's
            // state inherited from it, which holds this hub, is let go of.
            guard epoch == ForkEpoch.current else { return ChangeWatcher.shared.forgetStateInheritedByFork() }
            // The removal waits for the store's lock; an observer called on the watcher's
            // thread, which waits for no suite, leaves it to the suite's queue.
            if ChangeWatcher.shared.isReaderThread {
                self.enqueue { self.remove(id, from: lease.store) }
            } else {
                self.remove(id, from: lease.store)
            }
        }
    }

    private func initialChanges(of contents: SuiteContents, keys: Set<String>?, kind: SuiteChange.Kind) -> [SuiteChange] {
        let now = Date()
        return (keys.map(Array.init) ?? Array(contents.values.keys)).sorted().compactMap { key in
            contents.entry(forKey: key).map {
                SuiteChange(suite: suite, key: key, oldValue: nil, newValue: $0.value, sequence: contents.lastSequence,
                            pid: 0, isFromThisProcess: false, kind: kind, timestamp: now, isDefault: $0.isDefault)
            }
        }
    }

    private func remove(_ id: UInt64, from store: SuiteStore) {
        let removed = (try? store.withChangeCollection(catchingUp: false) { _, collectsChanges in
            withObservers { observers in
                let removed = observers.sinks.removeValue(forKey: id) != nil
                collectsChanges = !observers.sinks.isEmpty
                return removed
            }
        }) ?? false
        if removed { ChangeWatcher.shared.unwatch(self) }
    }

    /// How many observers this suite has in this process.
    var count: Int { withObservers { $0.sinks.count } }

    // MARK: Changes

    /// Under the store's lock: queues the changes for the observers registered now.
    func store(_ store: SuiteStore, applied: AppliedCommits) {
        guard let (sinks, onWatcherThread, queue) = sinksAndQueue() else { return }
        let pid = ProcessIdentity.id
        var changes: [SuiteChange] = []
        changes.reserveCapacity(applied.changes.count)
        for commit in applied.commits {
            let kind: SuiteChange.Kind = commit.kind == .commit ? .commit : .netChange
            for change in applied.changes(of: commit) {
                changes.append(SuiteChange(suite: suite, key: change.key, oldValue: change.oldValue, newValue: change.newValue,
                                           sequence: commit.sequence, pid: commit.pid,
                                           isFromThisProcess: kind == .commit && commit.pid == pid,
                                           kind: kind, timestamp: commit.timestamp,
                                           isDefault: change.newValueIsDefault, isMirrored: commit.isMirrored))
            }
        }
        // Only observers that all asked for it may be called on the watcher's thread.
        queue.async(mayRunElsewhere: onWatcherThread) { [changes] in
            for change in changes {
                for sink in sinks { sink.receive(change) }
            }
        }
    }

    /// Called by the change watcher's reader, on its thread, when the suite's file
    /// changed or may have. When every observer asked for `.watcherThread` and neither
    /// the observers' queue nor a lock holds it up, the store catches up right here and
    /// the changes are delivered here, as jobs of the queue. Otherwise, `mayTakeQueue`,
    /// an idle queue is taken for the reader, which pauses its reading and runs it
    /// (`TakenQueue.run`); or the queue catches up on its own thread.
    func fileChanged(mayTakeQueue: Bool) -> TakenQueue? {
        if let (_, onWatcherThread, queue) = sinksAndQueue(), let store {
            if onWatcherThread {
                var caughtUp = false
                if queue.serial.runHereIfIdle({ caughtUp = store.catchUpWithoutWaiting() }), caughtUp { return nil }
            } else if mayTakeQueue, queue.serial.borrowIfIdle() {
                return TakenQueue(hub: self, queue: queue)
            }
        }
        scheduleRefresh()
        return nil
    }

    /// The observers' queue of a suite, idle, taken by the change watcher's reader: the
    /// catch-up of the change and its deliveries run as jobs of the queue on the
    /// reader's thread, its reading paused, saving the wake-up of the queue's own thread.
    struct TakenQueue {
        /// The hub whose queue it is.
        let hub: ObserverHub
        fileprivate let queue: ObserverQueue

        /// Catches up and delivers, then runs the queue's jobs until none is left, and
        /// gives the queue back. Only once the reader paused its reading
        /// (`ReaderRole.pause`): this may wait for locks, and runs the callbacks.
        func run() {
            queue.serial.runBorrowed(everyJob: true) { [hub] in
                if hub.store?.catchUpWithoutWaiting() == true { return }
                hub.refresh()
            }
        }

        /// Gives the queue back unrun, its catch-up scheduled on its own thread: for a
        /// reader with no thread to stand by while it runs it.
        func giveBack() {
            queue.serial.runBorrowed(everyJob: false) { hub.scheduleRefresh() }
        }
    }

    /// The store catches up on the observers' queue. Events that come while a
    /// catch-up is waiting to start are covered by it.
    func scheduleRefresh() {
        // No queue: nobody observes the suite in this process.
        guard let queue = self.queue, !queue.refreshScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { [self] in
            queue.refreshScheduled.store(false, ordering: .releasing)
            refresh()
        }
    }

    private func refresh() {
        do {
            // Waits as long as it takes: a watcher has nobody to report a timeout to.
            try store?.reload(lockTimeout: nil)
        } catch {
            fail(.refreshFailed, SuiteError(error, suite: suite, doing: "read a change of the suite"),
                 "Could not read a change of the suite: \(error)")
        }
    }

    /// Runs `work` on the observers' queue after the changes already queued (at once
    /// when there is no queue: nobody observes the suite in this process).
    func enqueue(_ work: @escaping @Sendable () -> Void) {
        guard let queue else { return work() }
        queue.async(work)
    }

    /// Waits until every change found so far has been handed to the observers.
    func waitForDelivery() {
        queue?.waitForQueuedJobs()
    }

    // MARK: What keeps changes from arriving

    /// Reports a diagnostic, and hands `error` to every observer's error handler on
    /// the observers' queue (after the changes already queued).
    private func fail(_ kind: SuiteDiagnostic.Kind, _ error: SuiteError, _ message: String) {
        SuiteDiagnostics.report(SuiteDiagnostic(kind: kind, suite: suite, directory: directoryPath, message: message))
        guard let (sinks, onWatcherThread, queue) = sinksAndQueue() else { return }
        queue.async(mayRunElsewhere: onWatcherThread) { sinks.forEach { $0.fail(error) } }
    }

    /// The suite's directory was removed.
    func directoryRemoved() {
        let message = "The suite's directory was removed; its observers hear nothing until a directory is made at \(directoryPath), where the suite is then observed."
        fail(.directoryReplaced, SuiteError(.notFound, suite: suite, path: directoryPath, message: message), message)
    }

    /// A directory was made at the removed one's path: moves the store there, on the
    /// observers' queue (opening may wait for a lock, and the watcher waits for no
    /// suite), then catches up. `moved` receives the directory to watch, or nil when
    /// the suite could not be moved.
    func moveToReplacedDirectory(moved: @escaping @Sendable (DirectoryHandle?) throws -> Void) {
        enqueue { [self] in
            do {
                guard let store else { return try moved(nil) }
                try store.moveToReplacedDirectory()
                try moved(store.directory)
                SuiteDiagnostics.report(SuiteDiagnostic(
                    kind: .directoryReplaced, suite: suite, directory: directoryPath,
                    message: "A directory was made again at \(directoryPath); the suite is observed there, and its observers received what differs as net changes."))
                scheduleRefresh()
            } catch {
                try? moved(nil)
                let message = "A directory was made again at \(directoryPath), but the suite cannot be opened there: \(error); it is not observed any more."
                fail(.directoryReplaced, SuiteError(error, suite: suite, doing: "observe the suite in its new directory"), message)
            }
        }
    }

    /// The process's watch for changes ended (its instance's number is another
    /// file's now), and the suite's directory could not be watched again.
    func watchingEnded() {
        let message = "The process's watch for changes ended (code of the process closed its inotify descriptor and reused the number), and the suite's directory could not be watched again. Changes from other processes are no longer delivered to this observation."
        fail(.changeWatchingEnded, SuiteError(.ioFailure, suite: suite, path: directoryPath, message: message), message)
    }

    /// Change events were lost; the refresh that follows catches up.
    func lostEvents() {
        SuiteDiagnostics.report(SuiteDiagnostic(
            kind: .changeEventsLost, suite: suite, directory: directoryPath,
            message: "Change events were lost (the inotify queue overflowed or a watch was lost); catching up from the suite file."))
    }
}

/// Where one suite's observers are served: catch-ups and deliveries, one at a time,
/// in the order the changes were found under the lock.
private final class ObserverQueue: Sendable {
    let serial: SerialQueue
    /// Whether a catch-up is queued and not yet started.
    let refreshScheduled = Atomic<Bool>(false)

    init(serial: SerialQueue) { self.serial = serial }

    func async(mayRunElsewhere: Bool = false, _ job: @escaping @Sendable () -> Void) {
        serial.async(mayRunElsewhere: mayRunElsewhere, job)
    }
    func waitForQueuedJobs() { serial.waitForQueuedJobs() }
}
