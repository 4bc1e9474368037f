import Foundation
import Glibc

/// A directory, by device and inode: what one inotify watch covers.
struct DirectoryIdentity: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
}

/// The one inotify instance of this process, and the one thread that reads it.
///
/// It watches each directory that holds an observed suite (one watch serves every
/// suite in it, and follows the directory if it is moved), and on every event for a
/// suite's data file tells that suite to catch up. The suite then reads the new
/// commits from its journal, so what the event said beyond "look" does not matter:
/// coalesced events lose nothing, and after a queue overflow every suite catches up.
final class ChangeWatcher: Sendable {
    static let shared = ChangeWatcher()

    private final class WeakStore {
        weak var store: SuiteStore?
        var observations = 0
        init(_ store: SuiteStore) { self.store = store }
    }

    /// Watches of directories for whole-directory listeners (`Suite.observeSuites`).
    private final class DirectoryListener {
        let handler: @Sendable (String?) -> Void
        init(_ handler: @escaping @Sendable (String?) -> Void) { self.handler = handler }
    }

    private struct Watch {
        var descriptor: Int32
        /// Keyed by suite name.
        var stores: [String: WeakStore] = [:]
        var listeners: [UInt64: DirectoryListener] = [:]
        var isEmpty: Bool { stores.isEmpty && listeners.isEmpty }
    }

    private struct State {
        /// The fork epoch this state belongs to: a forked child shares the parent's
        /// inotify descriptor (reading it would steal the parent's events) and has
        /// no reader thread, so it starts over.
        var epoch = ForkEpoch.current
        var inotify: CInt = -1
        var watches: [DirectoryIdentity: Watch] = [:]
        var identities: [Int32: DirectoryIdentity] = [:]
        var nextListener: UInt64 = 0
    }

    private let locked = Locked(State())

    /// Runs `body` on the state of this process, begun afresh in a forked child.
    private func withState<R>(_ body: (inout State) throws -> R) rethrows -> R {
        try locked.withLock { state in
            if state.epoch != ForkEpoch.current {
                if state.inotify >= 0 { Inotify.close(state.inotify) }
                state = State()
            }
            return try body(&state)
        }
    }

    /// Starts watching the directory of `store` for it; counted, so that every `watch`
    /// needs one `unwatch`.
    func watch(_ store: SuiteStore) throws {
        try withState { state in
            try ensureWatch(&state, store.directoryIdentity, path: store.watchPath, suite: store.name)
            let entry = state.watches[store.directoryIdentity]!.stores[store.name] ?? WeakStore(store)
            entry.store = store
            entry.observations += 1
            state.watches[store.directoryIdentity]!.stores[store.name] = entry
        }
    }

    func unwatch(_ store: SuiteStore) {
        withState { state in
            guard let entry = state.watches[store.directoryIdentity]?.stores[store.name] else { return }
            entry.observations -= 1
            if entry.observations <= 0 { state.watches[store.directoryIdentity]!.stores[store.name] = nil }
            removeWatchIfUnused(&state, store.directoryIdentity)
        }
    }

    /// Calls `handler` with the name of every suite whose data file is created or
    /// changed in a directory, and with nil when events were lost (so that the
    /// listener looks at the whole directory again), until the token is cancelled.
    func listen(to directory: DirectoryIdentity, path: String, handler: @escaping @Sendable (String?) -> Void) throws -> SuiteCancellable {
        let token = try withState { state in
            try ensureWatch(&state, directory, path: path, suite: nil)
            state.nextListener += 1
            state.watches[directory]!.listeners[state.nextListener] = DirectoryListener(handler)
            return state.nextListener
        }
        return SuiteCancellable { [self] in
            withState { state in
                state.watches[directory]?.listeners[token] = nil
                removeWatchIfUnused(&state, directory)
            }
        }
    }

    private func ensureWatch(_ state: inout State, _ identity: DirectoryIdentity, path: String, suite: String?) throws {
        if state.inotify < 0 {
            let descriptor: CInt
            do {
                descriptor = try Inotify.open()
            } catch let failure as SystemCallError {
                throw SuiteError(.ioFailure, suite: suite, errno: failure.errno,
                                 message: "Could not start watching for changes (inotify_init1). Raise fs.inotify.max_user_instances if the limit was reached.")
            }
            state.inotify = descriptor
            Threads.start(name: "suite-watcher") { [self] in run(descriptor) }
        }
        guard state.watches[identity] == nil else { return }
        let mask = UInt32(IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_DELETE | IN_ONLYDIR)
        let descriptor: Int32
        do {
            descriptor = try Inotify.watch(state.inotify, path: path, mask: mask)
        } catch let failure as SystemCallError {
            throw SuiteError(.ioFailure, suite: suite, path: path, errno: failure.errno,
                             message: "Could not watch the suite directory for changes (inotify_add_watch). Raise fs.inotify.max_user_watches if the limit was reached.")
        }
        // Two paths to one directory give one watch descriptor; keep one entry.
        if let other = state.identities[descriptor], other != identity, let existing = state.watches[other] {
            state.watches[identity] = existing
            state.watches[other] = nil
        } else {
            state.watches[identity] = Watch(descriptor: descriptor)
        }
        state.identities[descriptor] = identity
    }

    private func removeWatchIfUnused(_ state: inout State, _ identity: DirectoryIdentity) {
        guard let watch = state.watches[identity], watch.isEmpty else { return }
        Inotify.removeWatch(state.inotify, watch.descriptor)
        state.watches[identity] = nil
        state.identities[watch.descriptor] = nil
    }

    // MARK: The reader thread

    private func run(_ inotify: CInt) {
        let capacity = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        while true {
            guard let count = Inotify.read(inotify, into: buffer, capacity: capacity) else { return }
            var touched: [(DirectoryIdentity, String)] = []
            var everything = false
            // A simulated overflow loses this batch's events, as a real one would.
            var offset = SuiteFaultInjection.takeSimulatedOverflow() ? count : 0
            if offset == count { everything = true }
            while offset + MemoryLayout<inotify_event>.size <= count {
                let event = (buffer + offset).loadUnaligned(as: inotify_event.self)
                let nameStart = buffer + offset + MemoryLayout<inotify_event>.size
                let name = event.len > 0 ? String(cString: nameStart.assumingMemoryBound(to: CChar.self)) : ""
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    // Events were lost: every suite catches up from its file.
                    everything = true
                    continue
                }
                if event.mask & UInt32(IN_IGNORED) != 0 {
                    // A watch we did not remove ourselves was lost (its directory is gone).
                    if withState({ $0.identities.removeValue(forKey: event.wd) }) != nil { everything = true }
                    continue
                }
                guard name.hasSuffix(SuiteFiles.dataSuffix), let identity = withState({ $0.identities[event.wd] }) else {
                    continue
                }
                let suite = String(name.dropLast(SuiteFiles.dataSuffix.count))
                if !touched.contains(where: { $0.0 == identity && $0.1 == suite }) { touched.append((identity, suite)) }
            }
            // Collected under the lock, called outside it. Neither call blocks: this one
            // thread serves every suite, so it never waits for any suite's lock.
            let (stores, listeners) = withState { state -> ([SuiteStore], [(DirectoryListener, String?)]) in
                var stores: [SuiteStore] = []
                var listeners: [(DirectoryListener, String?)] = []
                if everything {
                    stores = state.watches.values.flatMap { $0.stores.values.compactMap(\.store) }
                    listeners = state.watches.values.flatMap { $0.listeners.values.map { ($0, nil) } }
                }
                for (identity, suite) in touched {
                    guard let watch = state.watches[identity] else { continue }
                    guard !everything else { break }
                    if let store = watch.stores[suite]?.store { stores.append(store) }
                    listeners += watch.listeners.values.map { ($0, suite) }
                }
                return (stores, listeners)
            }
            for store in stores {
                if everything { store.reportLostEvents() }
                store.scheduleRefreshForObservers()
            }
            for (listener, suite) in listeners { listener.handler(suite) }
        }
    }
}
