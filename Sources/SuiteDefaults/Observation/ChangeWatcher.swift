import Foundation
import Glibc

/// The one inotify instance of this process, and the one thread that reads it.
///
/// It watches each directory that holds an observed suite (one watch serves every
/// suite in it, and follows the directory if it is moved), and on every event for a
/// suite's data file tells that suite to catch up. The suite then reads the new
/// commits from its journal, so what the event said beyond "look" does not matter:
/// coalesced events lose nothing, and after a queue overflow every suite catches up.
///
/// A watched directory can be removed while the suites in it have it open (the
/// kernel then says nothing of the directory itself), so its parent is watched too,
/// for the directory's name going away. Its observers are then told (a
/// `directoryReplaced` diagnostic), and the thread looks for a directory at the same
/// path ten times a second; once one is there, its suites are opened there and
/// watched again.
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

    /// What watches one directory: the stores of suites in it and the listeners.
    private struct Watchers {
        /// Keyed by suite name.
        var stores: [String: WeakStore] = [:]
        var listeners: [UInt64: DirectoryListener] = [:]
        var isEmpty: Bool { stores.isEmpty && listeners.isEmpty }

        /// Counts one observation of `store` less, forgetting it at none; false when
        /// `store` is not among these.
        mutating func release(_ store: SuiteStore) -> Bool {
            guard let entry = stores[store.name], entry.store === store else { return false }
            entry.observations -= 1
            if entry.observations <= 0 { stores[store.name] = nil }
            return true
        }
    }

    private struct Watch {
        var descriptor: Int32
        /// The directory, to ask whether it still has a name.
        var directory: DirectoryHandle
        /// The watch of its parent, and its name there; nil for "/".
        var parent: (descriptor: Int32, name: String)?
        var watchers = Watchers()
        /// Its path when it was watched: where to look for it again.
        var path: String { directory.path }
    }

    private struct State {
        /// The fork epoch this state belongs to: a forked child shares the parent's
        /// inotify descriptor (reading it would steal the parent's events) and has
        /// no reader thread, so it starts over.
        var epoch = ForkEpoch.current
        var inotify: CInt = -1
        var watches: [DirectoryIdentity: Watch] = [:]
        var identities: [Int32: DirectoryIdentity] = [:]
        /// The watches of parents of watched directories, and whose parents they are.
        var parents: [Int32: Set<DirectoryIdentity>] = [:]
        /// Watchers of directories that were removed, by the path to look for.
        var lost: [String: Watchers] = [:]
        var nextListener: UInt64 = 0
    }

    private let locked = Locked(State())

    /// How often a removed directory is looked for again.
    static let lookAgainInterval = Duration.milliseconds(100)

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
        let directory = store.directory
        try withState { state in
            try ensureWatch(&state, directory, suite: store.name)
            let entry = state.watches[directory.identity]!.watchers.stores[store.name] ?? WeakStore(store)
            entry.store = store
            entry.observations += 1
            state.watches[directory.identity]!.watchers.stores[store.name] = entry
        }
    }

    func unwatch(_ store: SuiteStore) {
        withState { state in
            // Wherever it is now: its directory may have been replaced since.
            for identity in Array(state.watches.keys) where state.watches[identity]!.watchers.release(store) {
                removeWatchIfUnused(&state, identity)
                return
            }
            for path in Array(state.lost.keys) where state.lost[path]!.release(store) {
                if state.lost[path]!.isEmpty { state.lost[path] = nil }
                return
            }
        }
    }

    /// Calls `handler` with the name of every suite whose data file is created or
    /// changed in a directory, and with nil when events were lost (so that the
    /// listener looks at the whole directory again), until the token is cancelled.
    func listen(to directory: DirectoryHandle, handler: @escaping @Sendable (String?) -> Void) throws -> SuiteCancellable {
        let token = try withState { state in
            try ensureWatch(&state, directory, suite: nil)
            state.nextListener += 1
            state.watches[directory.identity]!.watchers.listeners[state.nextListener] = DirectoryListener(handler)
            return state.nextListener
        }
        return SuiteCancellable { [self] in
            withState { state in
                for (identity, watch) in state.watches where watch.watchers.listeners[token] != nil {
                    state.watches[identity]!.watchers.listeners[token] = nil
                    removeWatchIfUnused(&state, identity)
                }
                for (path, watchers) in state.lost where watchers.listeners[token] != nil {
                    state.lost[path]!.listeners[token] = nil
                    if state.lost[path]!.isEmpty { state.lost[path] = nil }
                }
            }
        }
    }

    private func ensureWatch(_ state: inout State, _ directory: DirectoryHandle, suite: String?) throws {
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
        let identity = directory.identity
        guard state.watches[identity] == nil else { return }
        // IN_MASK_ADD: the same directory may be watched as another's parent too.
        let events: Int32 = IN_MODIFY | IN_CREATE | IN_MOVED_TO | IN_ATTRIB | IN_DELETE
        let mask = UInt32(events | IN_ONLYDIR) | UInt32(bitPattern: IN_MASK_ADD)
        let descriptor: Int32
        do {
            // Through the open directory: exactly the directory the suite has open,
            // wherever its path leads now.
            descriptor = try Inotify.watch(state.inotify, path: directory.procPath, mask: mask)
        } catch let failure as SystemCallError {
            throw SuiteError(.ioFailure, suite: suite, path: directory.path, errno: failure.errno,
                             message: "Could not watch the suite directory for changes (inotify_add_watch). Raise fs.inotify.max_user_watches if the limit was reached.")
        }
        // Two paths to one directory give one watch descriptor; keep one entry.
        if let other = state.identities[descriptor], other != identity, let existing = state.watches[other] {
            state.watches[identity] = existing
            state.watches[other] = nil
        } else {
            state.watches[identity] = Watch(descriptor: descriptor, directory: directory,
                                            parent: watchParent(&state, of: directory, identity))
        }
        state.identities[descriptor] = identity
    }

    /// Watches the parent of a watched directory for its name being removed or moved
    /// away. Best effort: without it, a removal goes unnoticed, as it did before.
    private func watchParent(_ state: inout State, of directory: DirectoryHandle, _ identity: DirectoryIdentity) -> (Int32, String)? {
        let path = PathNormalization.standardized(directory.path)
        guard path != "/", let slash = path.lastIndex(of: "/") else { return nil }
        let parent = slash == path.startIndex ? "/" : String(path[..<slash])
        let name = String(path[path.index(after: slash)...])
        let mask = UInt32(IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR) | UInt32(bitPattern: IN_MASK_ADD)
        guard let descriptor = try? Inotify.watch(state.inotify, path: parent, mask: mask) else { return nil }
        state.parents[descriptor, default: []].insert(identity)
        return (descriptor, name)
    }

    private func removeWatchIfUnused(_ state: inout State, _ identity: DirectoryIdentity) {
        guard let watch = state.watches[identity], watch.watchers.isEmpty else { return }
        forget(&state, identity)
    }

    /// Removes a directory's watch, and its parent's when no other needs it.
    private func forget(_ state: inout State, _ identity: DirectoryIdentity) {
        guard let watch = state.watches.removeValue(forKey: identity) else { return }
        state.identities[watch.descriptor] = nil
        // A directory that is also a watched one's parent keeps its watch for that.
        if state.parents[watch.descriptor] == nil { Inotify.removeWatch(state.inotify, watch.descriptor) }
        if let parent = watch.parent {
            state.parents[parent.descriptor]?.remove(identity)
            if state.parents[parent.descriptor]?.isEmpty == true {
                state.parents[parent.descriptor] = nil
                // A parent that is also a watched directory keeps its watch descriptor.
                if state.identities[parent.descriptor] == nil { Inotify.removeWatch(state.inotify, parent.descriptor) }
            }
        }
    }

    // MARK: Removed directories

    /// Under a parent watch, a name went away: the watched directories of that name
    /// that have no name any more were removed. Returns the stores to tell.
    private func nameRemoved(_ state: inout State, parent: Int32, name: String) -> [SuiteStore] {
        var lostStores: [SuiteStore] = []
        for identity in state.parents[parent] ?? [] {
            guard let watch = state.watches[identity], watch.parent?.name == name,
                  (try? watch.directory.descriptor.status())?.linkCount == 0
            else { continue }
            lostStores += lose(&state, identity)
        }
        return lostStores
    }

    /// A watched directory that was removed: its watchers wait for a directory at
    /// the same path. Returns the stores to tell.
    private func lose(_ state: inout State, _ identity: DirectoryIdentity) -> [SuiteStore] {
        guard let watch = state.watches[identity] else { return [] }
        forget(&state, identity)
        guard !watch.watchers.isEmpty else { return [] }
        var waiting = state.lost[watch.path] ?? Watchers()
        waiting.stores.merge(watch.watchers.stores) { _, new in new }
        waiting.listeners.merge(watch.watchers.listeners) { _, new in new }
        state.lost[watch.path] = waiting
        return watch.watchers.stores.values.compactMap(\.store)
    }

    /// Looks for the removed directories again; watches those that are back and
    /// hands their suites the new directory.
    private func lookForLostDirectories() {
        let found = withState { state -> [(DirectoryHandle, Watchers)] in
            var found: [(DirectoryHandle, Watchers)] = []
            for (path, watchers) in state.lost {
                guard let directory = try? DirectoryHandle.open(path: path) else { continue }
                state.lost[path] = nil
                found.append((directory, watchers))
            }
            return found
        }
        for (directory, watchers) in found {
            for entry in watchers.stores.values {
                guard let store = entry.store else { continue }
                let observations = entry.observations
                // On the store's own queue: opening may wait for its lock, and this
                // thread waits for no suite.
                store.enqueueForObservers { [self] in
                    do {
                        try store.moveToReplacedDirectory()
                        let directory = store.directory
                        try withState { state in
                            try ensureWatch(&state, directory, suite: store.name)
                            let moved = WeakStore(store)
                            moved.observations = observations
                            state.watches[directory.identity]!.watchers.stores[store.name] = moved
                        }
                        store.reportDirectoryReplaced(found: true)
                        store.scheduleRefreshForObservers()
                    } catch {
                        store.reportDirectoryReplaced(found: false, error)
                    }
                }
            }
            guard !watchers.listeners.isEmpty else { continue }
            let watched: Bool = (try? withState { state -> Bool in
                try ensureWatch(&state, directory, suite: nil)
                state.watches[directory.identity]!.watchers.listeners.merge(watchers.listeners) { _, new in new }
                return true
            }) ?? false
            // The listeners look at the whole directory again.
            if watched { for listener in watchers.listeners.values { listener.handler(nil) } }
        }
    }

    // MARK: The reader thread

    private func run(_ inotify: CInt) {
        let capacity = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        while true {
            // While directories are missing, wake up now and then to look for them.
            if withState({ !$0.lost.isEmpty }) {
                let ready = Inotify.wait(inotify, timeout: Self.lookAgainInterval)
                lookForLostDirectories()
                if !ready { continue }
            }
            guard let count = Inotify.read(inotify, into: buffer, capacity: capacity) else { return }
            var touched: [(DirectoryIdentity, String)] = []
            var everything = false
            var lostStores: [SuiteStore] = []
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
                    // A watch we did not remove ourselves was lost: its directory is gone.
                    lostStores += withState { state in
                        guard let identity = state.identities[event.wd] else { return [] }
                        return lose(&state, identity)
                    }
                    continue
                }
                if event.mask & UInt32(IN_DELETE | IN_MOVED_FROM) != 0 && event.mask & UInt32(IN_ISDIR) != 0 {
                    lostStores += withState { state in nameRemoved(&state, parent: event.wd, name: name) }
                    // The same descriptor may also watch that parent as a suite directory.
                }
                guard name.hasSuffix(SuiteFiles.dataSuffix), let identity = withState({ $0.identities[event.wd] }) else {
                    continue
                }
                let suite = String(name.dropLast(SuiteFiles.dataSuffix.count))
                if !touched.contains(where: { $0.0 == identity && $0.1 == suite }) { touched.append((identity, suite)) }
            }
            for store in lostStores { store.reportDirectoryRemoved() }
            // Collected under the lock, called outside it. Neither call blocks: this one
            // thread serves every suite, so it never waits for any suite's lock.
            let (stores, listeners) = withState { state -> ([SuiteStore], [(DirectoryListener, String?)]) in
                var stores: [SuiteStore] = []
                var listeners: [(DirectoryListener, String?)] = []
                if everything {
                    stores = state.watches.values.flatMap { $0.watchers.stores.values.compactMap(\.store) }
                    listeners = state.watches.values.flatMap { $0.watchers.listeners.values.map { ($0, nil) } }
                }
                for (identity, suite) in touched {
                    guard let watch = state.watches[identity] else { continue }
                    guard !everything else { break }
                    if let store = watch.watchers.stores[suite]?.store { stores.append(store) }
                    listeners += watch.watchers.listeners.values.map { ($0, suite) }
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
