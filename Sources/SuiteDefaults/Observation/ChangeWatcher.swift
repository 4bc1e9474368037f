#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one inotify instance of this process, and the one thread that reads it.
///
/// It watches each directory that holds an observed suite (one watch serves every
/// suite in it, and follows the directory if it is moved), and on every event for a
/// suite's data file tells that suite's observers to catch up. They then read the new
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

    /// A watched suite's hub, held while its observations are counted: every `watch`
    /// is ended by an `unwatch` (a cancelled or released observation), and a forked
    /// child starts over. Held strongly: a weak reference would give the hub a side
    /// table, through which every retain and release of it takes the runtime's slow
    /// path (440 of some 10,300 instructions per change delivered, by callgrind).
    private final class WatchedHub {
        let hub: ObserverHub
        /// The suite's name in bytes, to compare with the names in events.
        let suite: [UInt8]
        var observations = 0
        init(_ hub: ObserverHub) {
            self.hub = hub
            suite = Array(hub.suite.utf8)
        }
    }

    /// Watches of directories for whole-directory listeners (`Suite.observeSuites`).
    private final class DirectoryListener {
        let handler: @Sendable (String?) -> Void
        init(_ handler: @escaping @Sendable (String?) -> Void) { self.handler = handler }
    }

    /// What watches one directory: the observers of suites in it and the listeners.
    private struct Watchers {
        /// Keyed by the hub: one suite may have two stores in a process (opened
        /// before and after its directory was made again), each with its hub.
        var hubs: [ObjectIdentifier: WatchedHub] = [:]
        var listeners: [UInt64: DirectoryListener] = [:]
        var isEmpty: Bool { hubs.isEmpty && listeners.isEmpty }

        /// Adds `other`'s hubs and listeners to these.
        mutating func add(_ other: Watchers) {
            hubs.merge(other.hubs) { _, new in new }
            listeners.merge(other.listeners) { _, new in new }
        }

        /// Counts one observation of `hub` less, forgetting it at none; false when
        /// `hub` is not among these.
        mutating func release(_ hub: ObserverHub) -> Bool {
            guard let entry = hubs[ObjectIdentifier(hub)] else { return false }
            entry.observations -= 1
            if entry.observations <= 0 { hubs[ObjectIdentifier(hub)] = nil }
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
        /// no reader thread, so it starts over, reading none of the parent's.
        var epoch = ForkEpoch.current
        var inotify: CInt = -1
        /// The reading's role, made with the instance; nil without a timer.
        var role: ReaderRole?
        var watches: [DirectoryIdentity: Watch] = [:]
        var identities: [Int32: DirectoryIdentity] = [:]
        /// The watches of parents of watched directories, and whose parents they are.
        var parents: [Int32: Set<DirectoryIdentity>] = [:]
        /// Watchers of directories that were removed, by the path to look for.
        var lost: [String: Watchers] = [:]
        /// Hubs whose suites are being moved to a directory made again at the lost
        /// one's path, on their own queues: still counted, so that an observation
        /// cancelled meanwhile is not watched again.
        var moving = Watchers()
        var nextListener: UInt64 = 0

        /// Whether a pause of the reading for the observers of `taken` holds back
        /// anyone else: observers of another hub (another suite, or the same suite
        /// through another store) or a directory's listener, watched, lost or being
        /// moved. Asked of the others, not counted: `taken` may have lost its last
        /// observation since its queue was taken, and still runs.
        func holdsBackAnyone(besides taken: ObserverHub) -> Bool {
            let takenHub = ObjectIdentifier(taken)
            for watchers in watches.values.lazy.map(\.watchers) + lost.values + [moving] {
                if !watchers.listeners.isEmpty || watchers.hubs.keys.contains(where: { $0 != takenHub }) { return true }
            }
            return false
        }
    }

    private let locked = Locked(State())
    /// The reader thread: to tell a call made on it.
    private let readerThread = ThreadMark()

    /// Whether the caller runs on this process's reader thread (an observer called
    /// there, with `.watcherThread`), which must never wait for a suite.
    var isReaderThread: Bool { readerThread.isCurrentThread }

    /// How often a removed directory is looked for again.
    static let lookAgainInterval = Duration.milliseconds(100)

    /// Runs `body` on the state of this process, begun afresh in a forked child.
    private func withState<R>(_ body: (inout State) throws -> R) rethrows -> R {
        // A forked child lets go of the parent's state only after the lock: what it
        // holds (hubs, their observers' callbacks, and what those own) may end
        // observations as it goes, which takes this lock again.
        var inherited: State?
        defer { withExtendedLifetime(inherited) {} }
        return try locked.withLock { state in
            if state.epoch != ForkEpoch.current {
                // The parent's descriptors are left open (close-on-exec), never closed
                // by number: the child may have closed them and opened its own there.
                inherited = state
                state = State()
            }
            return try body(&state)
        }
    }

    /// Starts watching `directory` for the suite of `hub`; counted, so that every
    /// `watch` needs one `unwatch`.
    func watch(_ hub: ObserverHub, directory: DirectoryHandle) throws {
        let added = try withState { state in
            try ensureWatch(&state, directory, suite: hub.suite)
            let entry = state.watches[directory.identity]!.watchers.hubs[ObjectIdentifier(hub)] ?? WatchedHub(hub)
            entry.observations += 1
            state.watches[directory.identity]!.watchers.hubs[ObjectIdentifier(hub)] = entry
            return entry.observations == 1 ? state.role : nil
        }
        added?.othersWatched()
    }

    func unwatch(_ hub: ObserverHub) {
        withState { state in
            // Wherever it is now: its directory may have been replaced since.
            for identity in Array(state.watches.keys) where state.watches[identity]!.watchers.release(hub) {
                removeWatchIfUnused(&state, identity)
                return
            }
            for path in Array(state.lost.keys) where state.lost[path]!.release(hub) {
                if state.lost[path]!.isEmpty { state.lost[path] = nil }
                return
            }
            _ = state.moving.release(hub)
        }
    }

    /// Calls `handler` with the name of every suite whose data file is created or
    /// changed in a directory, and with nil when events were lost (so that the
    /// listener looks at the whole directory again), until the token is cancelled.
    func listen(to directory: DirectoryHandle, handler: @escaping @Sendable (String?) -> Void) throws -> SuiteCancellable {
        let (token, role) = try withState { state in
            try ensureWatch(&state, directory, suite: nil)
            state.nextListener += 1
            state.watches[directory.identity]!.watchers.listeners[state.nextListener] = DirectoryListener(handler)
            return (state.nextListener, state.role)
        }
        role?.othersWatched()
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
            // Nil without a timer: the reader then takes no queue.
            let role = ReaderRole()
            if let failure = Threads.tryStart(name: Self.readerThreadName, { [self] in run(descriptor, role) }) {
                Inotify.close(descriptor)
                throw SuiteError.threadNotStarted("the thread that watches for changes", suite: suite, errno: failure)
            }
            state.inotify = descriptor
            state.role = role
        }
        let identity = directory.identity
        guard state.watches[identity] == nil else { return }
        // Adding to an existing mask: the same directory may be watched as another's parent too.
        let mask: Inotify.Mask = [.modified, .created, .movedTo, .attributesChanged, .deleted, .onlyDirectory, .addingToExisting]
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
        let mask: Inotify.Mask = [.deleted, .movedFrom, .onlyDirectory, .addingToExisting]
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
    /// that have no name any more were removed. Returns the observers to tell.
    private func nameRemoved(_ state: inout State, parent: Int32, name: String) -> [ObserverHub] {
        var lostHubs: [ObserverHub] = []
        for identity in state.parents[parent] ?? [] {
            guard let watch = state.watches[identity], watch.parent?.name == name,
                  (try? watch.directory.descriptor.status())?.linkCount == 0
            else { continue }
            lostHubs += lose(&state, identity)
        }
        return lostHubs
    }

    /// A watched directory that was removed: its watchers wait for a directory at
    /// the same path. Returns the observers to tell.
    private func lose(_ state: inout State, _ identity: DirectoryIdentity) -> [ObserverHub] {
        guard let watch = state.watches[identity] else { return [] }
        forget(&state, identity)
        guard !watch.watchers.isEmpty else { return [] }
        var waiting = state.lost[watch.path] ?? Watchers()
        waiting.add(watch.watchers)
        state.lost[watch.path] = waiting
        return watch.watchers.hubs.values.map(\.hub)
    }

    /// Looks for the removed directories again; watches those that are back and
    /// moves their suites there.
    private func lookForLostDirectories() {
        let found = withState { state -> [(DirectoryHandle, Watchers)] in
            var found: [(DirectoryHandle, Watchers)] = []
            for (path, watchers) in state.lost {
                guard let directory = try? DirectoryHandle.open(path: path) else { continue }
                state.lost[path] = nil
                // Moving from here on, in the same hold of the lock: an observation
                // cancelled in between would find its hub nowhere, and the hub's count
                // would never reach zero.
                state.moving.hubs.merge(watchers.hubs) { _, new in new }
                found.append((directory, watchers))
            }
            return found
        }
        for (directory, watchers) in found {
            for (key, entry) in watchers.hubs {
                let hub = entry.hub
                hub.moveToReplacedDirectory { [self] directory in
                    try withState { state in
                        // Cancelled meanwhile, or the move failed: nothing to watch.
                        guard let entry = state.moving.hubs.removeValue(forKey: key),
                              let directory
                        else { return }
                        try ensureWatch(&state, directory, suite: hub.suite)
                        state.watches[directory.identity]!.watchers.hubs[key] = entry
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

    /// The reading's instance can no longer be read (code of the process closed its
    /// number and gave it to another file): every watched directory is watched again
    /// through a new instance, read by a new thread, and its suites catch up, since
    /// their events were lost meanwhile. Observers whose directory cannot be watched
    /// again are told (`watchingEnded`).
    private func watchAgain(after ended: CInt) {
        let (watched, failed) = withState { state -> ([Watchers], [ObserverHub]) in
            // A forked child's state, or one begun afresh already, is not this instance's.
            guard state.inotify == ended else { return ([], []) }
            let old = state.watches.values
            // The old number is another file's now: never closed from here.
            state.inotify = -1
            state.role = nil
            state.watches = [:]
            state.identities = [:]
            state.parents = [:]
            var watched: [Watchers] = [], failed: [ObserverHub] = []
            for watch in old {
                do {
                    try ensureWatch(&state, watch.directory, suite: nil)
                    state.watches[watch.directory.identity]!.watchers.add(watch.watchers)
                    watched.append(watch.watchers)
                } catch {
                    failed += watch.watchers.hubs.values.map(\.hub)
                }
            }
            return (watched, failed)
        }
        for watchers in watched {
            for entry in watchers.hubs.values {
                entry.hub.lostEvents()
                entry.hub.scheduleRefresh()
            }
            for listener in watchers.listeners.values { listener.handler(nil) }
        }
        for hub in failed { hub.watchingEnded() }
    }

    /// In a forked child: lets go of the state inherited from the parent, and with it
    /// the parent's hubs, when an observation made in the parent ends there (it
    /// stayed with the parent, and nothing else would end the hold).
    func forgetStateInheritedByFork() {
        withState { _ in }
    }

    // MARK: For tests

    /// The paths of the directories watched for suites or listeners now.
    var watchedDirectories: [String] { withState { $0.watches.values.map(\.path) } }

    /// How many observed suites are being moved to a directory made again.
    var suitesBeingMoved: Int { withState { $0.moving.hubs.count } }

    // MARK: The reader thread

    /// The name of the threads that read the instance (and run the queues they take).
    static let readerThreadName = "suite-watcher"

    /// The reader's loop, on the thread that reads for `role`; it ends when the
    /// instance fails, or when the thread, done with an observers' queue it took while
    /// another took the reading over, finds a third standing by.
    private func run(_ inotify: CInt, _ role: ReaderRole?) {
        readerThread.markCurrentThread()
        let capacity = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 8)
        defer { buffer.deallocate() }
        // Kept from one wake-up to the next, so that the usual one (one event, one
        // suite) allocates nothing here. `touched` holds watch descriptors, resolved
        // under the lock that collects the hubs (one lock per usual wake-up), and the
        // suites' names as bytes of `buffer`, read into again only once they are used.
        var events: [Inotify.Event] = [], touched: [(watch: Int32, suite: UnsafeBufferPointer<UInt8>)] = []
        var hubs: [ObserverHub] = [], listeners: [(DirectoryListener, String?)] = []
        // Directories are lost only by the reader (`lose`), so it keeps track itself.
        var directoriesLost = withState { !$0.lost.isEmpty }
        while true {
            // While directories are missing, wake up now and then to look for them.
            if directoriesLost {
                let ready = Inotify.wait(inotify, timeout: Self.lookAgainInterval)
                lookForLostDirectories()
                directoriesLost = withState { !$0.lost.isEmpty }
                if !ready { continue }
            }
            guard let count = Inotify.read(inotify, into: buffer, capacity: capacity) else {
                role?.end()
                watchAgain(after: inotify)
                return
            }
            var everything = false
            var lostHubs: [ObserverHub] = []
            // A simulated overflow loses this batch's events, as a real one would.
            if SuiteFaultInjection.takeSimulatedOverflow() {
                everything = true
            } else {
                Inotify.append(eventsIn: buffer, count: count, to: &events)
            }
            for event in events {
                if event.mask.contains(.queueOverflowed) {
                    // Events were lost: every suite catches up from its file.
                    everything = true
                    continue
                }
                if event.mask.contains(.watchRemoved) {
                    // A watch we did not remove ourselves was lost: its directory is gone.
                    lostHubs += withState { state in
                        guard let identity = state.identities[event.watch] else { return [] }
                        return lose(&state, identity)
                    }
                    continue
                }
                if !event.mask.isDisjoint(with: [.deleted, .movedFrom]) && event.mask.contains(.isDirectory) {
                    lostHubs += withState { state in nameRemoved(&state, parent: event.watch, name: event.nameString) }
                    // The same descriptor may also watch that parent as a suite directory.
                }
                guard let suite = SuiteFiles.suiteName(ofDataFile: event.name) else { continue }
                if !touched.contains(where: { $0.watch == event.watch && $0.suite.elementsEqual(suite) }) {
                    touched.append((event.watch, suite))
                }
            }
            for hub in lostHubs { hub.directoryRemoved() }
            // Collected under the lock, called outside it. Neither call blocks: this one
            // thread serves every suite, so it never waits for any suite's lock.
            withState { state in
                directoriesLost = !state.lost.isEmpty
                if everything {
                    hubs = state.watches.values.flatMap { $0.watchers.hubs.values.map(\.hub) }
                    listeners = state.watches.values.flatMap { $0.watchers.listeners.values.map { ($0, nil) } }
                    return
                }
                for (descriptor, suite) in touched {
                    guard let identity = state.identities[descriptor], let watch = state.watches[identity] else { continue }
                    for watched in watch.watchers.hubs.values where watched.suite.elementsEqual(suite) {
                        hubs.append(watched.hub)
                    }
                    guard !watch.watchers.listeners.isEmpty else { continue }
                    let name = String(decoding: suite, as: UTF8.self)
                    for listener in watch.watchers.listeners.values { listeners.append((listener, name)) }
                }
            }
            // One observers' queue at most is taken: its callbacks would hold back any
            // other taken here.
            var taken: ObserverHub.TakenQueue?
            for hub in hubs {
                if everything { hub.lostEvents() }
                let took = hub.fileChanged(mayTakeQueue: taken == nil && role != nil)
                taken = taken ?? took
            }
            for (listener, suite) in listeners { listener.handler(suite) }
            // Emptied now, so that no hub or listener is kept alive until the next event.
            events.removeAllKeepingStorage()
            touched.removeAllKeepingStorage()
            hubs.removeAllKeepingStorage()
            listeners.removeAllKeepingStorage()
            guard taken != nil else { continue }
            guard let role, role.ensureStandingBy(start: {
                Threads.tryStart(name: Self.readerThreadName) { [self] in
                    if role.standBy(started: true) { run(inotify, role) }
                } == nil
            }) else {
                // Nobody could take the reading over: the queue's own thread runs it.
                taken?.giveBack()
                continue
            }
            // Unmarked first: once paused, a thread standing by may take over and mark itself.
            readerThread.clear()
            role.pause { withState { state in taken.map { state.holdsBackAnyone(besides: $0.hub) } ?? true } }
            taken?.run()
            // Not kept (nor the suite's store with it) by a thread that stands by.
            taken = nil
            if !role.resume() {
                // The thread standing by reads now.
                guard role.standBy(started: false) else { return }
            }
            readerThread.markCurrentThread()
            directoriesLost = withState { !$0.lost.isEmpty }
        }
    }
}

