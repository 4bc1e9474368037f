import Foundation
@_spi(Tools) import SuiteDefaults

/// Mirrors suites through etcd: every local change not made by the mirror goes to
/// etcd, every change in etcd comes to the suite, and etcd's order decides what wins.
///
/// Per key, a three-way merge with a durable **base** (`MirrorState`): the value last
/// agreed with etcd and its `mod_revision` there.
///
/// - **Reconcile** (at start, after a compaction, and for `once`): read the prefix at
///   revision H and compare, per key, the local value L, the base B and the remote R.
///   L changed and R not: send L. R changed and L not: apply R. Both: L is an offline
///   write, sent now and so later in etcd's order: it wins, except a default, which is
///   sent create-only and loses to any remote value; the base takes R first, so that L
///   set back to B before the send still differs from it. L equal to R: agreed.
/// - **Local → etcd.** A change not marked mirrored makes its key dirty; a dirty key
///   whose value differs from the base is sent: a put, a delete, or for a first-access
///   default a create-only transaction (which, when etcd has a value, brings that value
///   here instead). The value is written ahead in the state's `sending`, then the base
///   takes the revision etcd returns: a restart after a kill between the two takes a
///   local value other than the one sent as changed, even when it equals the old base.
/// - **etcd → local** (the watch): an event at or below the key's base revision is
///   the mirror's own write coming back, and is skipped. Another is written ahead in
///   the state's `pending`, then applied in one mirrored transaction only where the
///   local value still equals the base; where the user changed it meanwhile, the local
///   value is sent and wins by etcd's order.
///
/// Everything runs on one serial path, so that sends follow commit order and a base
/// never changes under a decision.
public final class SuiteMirror: Sendable {
    public struct Configuration: Sendable {
        public var etcd: EtcdConfiguration
        /// The etcd prefix, `/suite-defaults/alice`: keys are `PREFIX/SUITE/KEY`.
        public var prefix: String
        /// The suites' directory; `Suite.defaultDirectory()` when nil.
        public var directory: URL?
        public var suites: [String]

        public init(etcd: EtcdConfiguration, prefix: String, directory: URL?, suites: [String]) {
            self.etcd = etcd
            self.prefix = prefix
            self.directory = directory
            self.suites = suites
        }
    }

    let configuration: Configuration
    let client: EtcdClient
    let report: @Sendable (MirrorEvent) -> Void

    public init(configuration: Configuration, report: @escaping @Sendable (MirrorEvent) -> Void) throws {
        guard !MirrorKeys(prefix: configuration.prefix).prefix.isEmpty else {
            throw MirrorFailure("the prefix must not be empty or only slashes")
        }
        guard configuration.prefix.hasPrefix("/") else { throw MirrorFailure("the prefix must start with /") }
        guard !configuration.suites.isEmpty else { throw MirrorFailure("name at least one suite") }
        for suite in configuration.suites { try Suite.validate(name: suite) }
        self.configuration = configuration
        self.client = try EtcdClient(configuration: configuration.etcd)
        self.report = report
    }

    /// Reconciles every suite with etcd, then, unless `once`, mirrors until the task is
    /// cancelled. Throws only what retrying cannot mend: an unusable suite or state
    /// file, refused credentials, an etcd whose revisions went backwards. A suite whose
    /// lock another process holds (an app stopped or stuck) is waited for, however
    /// long, with `once` too.
    public func run(once: Bool = false) async throws {
        let (inbox, continuation) = AsyncStream<MirrorInput>.makeStream()
        let engine = MirrorEngine(mirror: self, inbox: continuation)
        defer { engine.stop() }
        try await engine.open()
        report(.started(suites: engine.sides.count, prefix: engine.keys.prefix))
        for name in engine.order { try await engine.resolvePending(engine.sides[name]!) }
        var revision = try await engine.reconcileAll()
        if once { return }
        engine.startWatch(from: revision + 1)
        for await input in inbox {
            switch input {
            case .local(let suite, let key):
                engine.markDirty(suite: suite, key: key)
            case .batch(let batch):
                try await engine.apply(batch)
            case .watchEnded(let error):
                switch error {
                case .cancelled:
                    return
                case .compacted:
                    report(.error("\(error); reading everything again"))
                    revision = try await engine.reconcileAll()
                    engine.startWatch(from: revision + 1)
                case .revisionWentBackwards, .authenticationFailed, .permissionDenied:
                    throw error
                default:
                    report(.error("\(error); watching again"))
                    engine.startWatch(from: engine.deliveredThrough + 1, after: .milliseconds(100))
                }
            }
            try await engine.sendDirty()
        }
    }
}

/// What the serial path of a mirror receives.
enum MirrorInput: Sendable {
    case local(suite: String, key: String)
    case batch(EtcdWatchBatch)
    case watchEnded(EtcdError)
}

/// One mirrored suite: the suite, its state and its file, and its dirty keys in the
/// order they changed.
final class MirrorSide {
    let suite: Suite
    /// The state file and its log, the file open and locked while the mirror runs.
    let store: MirrorStateStore
    var state: MirrorState
    var dirty: [String] = []
    var dirtySet: Set<String> = []

    init(suite: Suite, store: MirrorStateStore, state: MirrorState) {
        self.suite = suite
        self.store = store
        self.state = state
    }

    var name: String { suite.name }

    func save() throws {
        // Marks of a write-ahead outlive it only to mislead.
        if state.pending.isEmpty {
            state.pendingAfter = nil
            state.pendingBy = nil
        }
        if state.sending?.isEmpty == true { state.sending = nil }
        do {
            try store.save(&state)
        } catch {
            throw MirrorFailure("cannot write the sync state of \(name): \(error)")
        }
    }

    /// Saves the state with `pending` just written ahead of a mirrored commit, noting
    /// the suite's last commit and this process, so that a mirror started after a kill
    /// can tell from the journal whether the commit was made.
    func saveWritingAhead() throws {
        state.pendingAfter = suite.lastCommitSequence
        state.pendingBy = ProcessIdentity.id
        try save()
    }

    /// The sends of `keys` to write ahead (`MirrorState.sending`): each whose local value
    /// differs from its base, with that value.
    func sends(of keys: [String]) -> [String: MirrorState.Sending] {
        var sends: [String: MirrorState.Sending] = [:]
        for key in keys {
            let text = local(key)?.text
            if text != state.base[key]?.value { sends[key] = MirrorState.Sending(of: text) }
        }
        return sends
    }

    /// Writes `sends` ahead in one save, unless every one is written already.
    func writeAhead(_ sends: [String: MirrorState.Sending]) throws {
        guard sends.contains(where: { state.sending?[$0.key] != $0.value }) else { return }
        state.sending = (state.sending ?? [:]).merging(sends) { $1 }
        try save()
    }

    /// Saves the base a send got, with its send no longer written ahead.
    func settleSend(_ key: String, base entry: MirrorState.Entry) throws {
        state.base[key] = entry
        state.sending?[key] = nil
        try save()
    }

    /// The local value's typed JSON text and whether it is a default; nil when absent.
    func local(_ key: String) -> (text: String, isDefault: Bool)? {
        suite.storedEntry(forKey: key).map { ($0.value.jsonText(style: .typed), $0.isDefault) }
    }
}

/// The serial path's state. Used only by the task running `SuiteMirror.run`.
final class MirrorEngine {
    let mirror: SuiteMirror
    let keys: MirrorKeys
    let inbox: AsyncStream<MirrorInput>.Continuation
    var sides: [String: MirrorSide] = [:]
    var order: [String] = []
    var observations: [SuiteCancellable] = []
    var watchTask: Task<Void, Never>?
    /// Every change under the prefix up to this revision has been handled.
    var deliveredThrough: Int64 = 0

    var client: EtcdClient { mirror.client }
    func report(_ event: MirrorEvent) { mirror.report(event) }

    init(mirror: SuiteMirror, inbox: AsyncStream<MirrorInput>.Continuation) {
        self.mirror = mirror
        self.keys = MirrorKeys(prefix: mirror.configuration.prefix)
        self.inbox = inbox
    }

    /// Opens every suite and its state file, and observes the suite. A process's first
    /// read of a suite needs its lock: a suite whose lock another process holds past the
    /// lock timeout is opened again once it is free (`waitingForTheSuiteLock`).
    func open() async throws {
        let directory = mirror.configuration.directory ?? Suite.defaultDirectory()
        let inbox = self.inbox
        for name in mirror.configuration.suites {
            let suite = try await waitingForTheSuiteLock("cannot open \(name)") { try Suite(named: name, directory: directory) }
            guard sides[suite.name] == nil else { continue }
            let (state, store, damage) = try MirrorState.open(directory: suite.directory.path, suite: suite.name, prefix: keys.prefix)
            // What the log held before the damage is kept; the next save starts a new log.
            if let damage { report(.error("\(damage)")) }
            let side = MirrorSide(suite: suite, store: store, state: state)
            sides[suite.name] = side
            order.append(suite.name)
            // Observed before anything is read, so that no change falls between.
            let suiteName = suite.name
            observations.append(try suite.observe(onError: { [report = mirror.report] error in
                report(.error("\(suiteName): \(error.message)"))
            }, onChange: { change in
                // A net change may fold mirrored commits in: comparing with the base decides.
                if change.kind != .commit || !change.isMirrored { inbox.yield(.local(suite: suiteName, key: change.key)) }
            }))
        }
    }

    func stop() {
        watchTask?.cancel()
        observations.forEach { $0.cancel() }
        inbox.finish()
    }

    // MARK: Retrying

    /// Runs `body` until it does not fail with an error that another try may mend
    /// (no endpoint answered, a malformed or truncated reply), waiting longer each time.
    func retrying<T>(_ what: String, _ body: () async throws(EtcdError) -> T) async throws -> T {
        var delay = Duration.milliseconds(50)
        var reported = false
        while true {
            do {
                return try await body()
            } catch {
                switch error {
                case .unavailable, .malformedReply, .replyTooLarge, .watchInterrupted:
                    if !reported { report(.error("\(what): \(error); retrying")) }
                    reported = true
                    try await Task.sleep(for: delay)
                    delay = min(delay * 2, .seconds(2))
                default:
                    throw error
                }
            }
        }
    }

    /// Runs `body` until it does not fail with `SuiteError` `.lockTimeout`: another
    /// process (an app stopped or stuck) holds the suite's lock. Says so once (`what`,
    /// the error, "retrying") and tries again, waiting 50 ms doubling to 2 s, as long
    /// as it takes: a lock held for a while is no reason for a daemon to stop, and going
    /// on without what `body` does could lose a change or undo one. Other errors are
    /// thrown as they are.
    func waitingForTheSuiteLock<T>(_ what: String, _ body: () throws -> T) async throws -> T {
        var delay = Duration.milliseconds(50)
        var reported = false
        while true {
            do {
                return try body()
            } catch let error as SuiteError where error.code == .lockTimeout {
                if !reported { report(.error("\(what): \(error.message); retrying")) }
                reported = true
                try await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(2))
            }
        }
    }

    // MARK: Pending remote changes

    /// Settles the remote changes a killed mirror had written ahead: applied already
    /// (the local value is the pending one), not applied (the local value is the
    /// base, and the suite's journal holds no mirrored commit of the key by that
    /// mirror since it wrote ahead: apply it now), or overtaken by a local change
    /// (keep it; the base becomes the remote value, so that the local change is
    /// sent). A local value equal to the base after such a commit is a local change
    /// too: the user set the key back (a removal, most often) while no mirror ran.
    /// Without the journal (history trimmed, a repair, or a state file from before
    /// the marks), a local value equal to the base is taken as not applied.
    ///
    /// A suite whose lock another process holds while the journal is read (reading it
    /// may need the lock: a writer stopped inside a commit) is read again once the lock
    /// is free, however long that takes. Never the rule without the journal instead:
    /// for a key removed while no mirror ran, that would apply the pending value again
    /// and undo the removal for good.
    func resolvePending(_ side: MirrorSide) async throws {
        guard !side.state.pending.isEmpty else { return }
        var committed: Set<String>?
        if let after = side.state.pendingAfter, let pid = side.state.pendingBy {
            do {
                committed = try await waitingForTheSuiteLock("cannot read the journal of \(side.name)") {
                    try side.suite.keysOfMirroredCommits(after: after, by: pid)
                }
            } catch let error where !(error is CancellationError) {
                throw MirrorFailure("cannot read the journal of \(side.name): \(error)")
            }
        }
        for (key, remote) in side.state.pending.sorted(by: { $0.key < $1.key }) {
            let base = side.state.base[key]?.value
            let local = side.local(key)?.text
            if local != remote.value && local == base && committed?.contains(key) != true {
                try await applyLocally(side, [(key, remote.value)], expecting: [key: base])
            }
            side.state.base[key] = remote
        }
        side.state.pending = [:]
        try side.save()
    }

    /// Applies remote values in one mirrored transaction, each only where the local
    /// value is still `expecting[key]`. Returns the keys applied and those refused.
    ///
    /// A suite whose lock another process holds past the lock timeout (a stopped or
    /// stuck app) is tried again, waiting longer each time, until it is free: the
    /// change stays written ahead in `pending` meanwhile, and the mirror neither
    /// stops nor skips it.
    @discardableResult
    func applyLocally(_ side: MirrorSide, _ changes: [(key: String, text: String?)], expecting: [String: String?])
        async throws -> (applied: Set<String>, refused: Set<String>) {
        do {
            return try await waitingForTheSuiteLock("cannot write to \(side.name)") {
                try applyLocallyOnce(side, changes, expecting: expecting)
            }
        } catch let error where !(error is CancellationError) {
            throw MirrorFailure("cannot write to \(side.name): \(error)")
        }
    }

    private func applyLocallyOnce(_ side: MirrorSide, _ changes: [(key: String, text: String?)], expecting: [String: String?])
        throws -> (applied: Set<String>, refused: Set<String>) {
        try side.suite.updateAsMirror { tx in
            var applied: Set<String> = []
            var refused: Set<String> = []
            for (key, text) in changes {
                let current = tx.storedValue(forKey: key).map { $0.jsonText(style: .typed) }
                guard current == (expecting[key] ?? nil) else { continue }
                do {
                    try tx.setValue(try text.map { try SuiteValue(jsonText: $0) }, forKey: key)
                    applied.insert(key)
                } catch {
                    refused.insert(key)
                }
            }
            return (applied, refused)
        }
    }

    // MARK: Reconcile

    /// Reads the whole prefix and reconciles every suite with it; returns the revision read.
    func reconcileAll() async throws -> Int64 {
        let range = try await retrying("reading \(keys.prefix)") { () async throws(EtcdError) in
            try await client.range(prefix: keys.watchedPrefix)
        }
        var remote: [String: [String: EtcdKeyValue]] = [:]
        for keyValue in range.keyValues {
            guard let (suite, key) = parsedKey(keyValue.key) else { continue }
            remote[suite, default: [:]][key] = keyValue
        }
        for name in order {
            try await reconcile(sides[name]!, remote: remote[name] ?? [:], revision: range.revision)
        }
        deliveredThrough = range.revision
        return range.revision
    }

    /// The suite and key of an etcd key, for a suite mirrored here; invalid keys are
    /// reported as skipped, keys of other suites ignored.
    func parsedKey(_ bytes: Data) -> (String, String)? {
        switch keys.parse(bytes) {
        case .key(let suite, let key):
            return sides[suite] == nil ? nil : (suite, key)
        case .invalid(let suite, let shown, let reason):
            if suite == nil || sides[suite!] != nil { report(.skipped(suite: suite, key: shown, reason: reason)) }
            return nil
        }
    }

    func reconcile(_ side: MirrorSide, remote: [String: EtcdKeyValue], revision: Int64) async throws {
        let locals = side.suite.storedEntries()
        let allKeys = Set(locals.keys).union(side.state.base.keys).union(remote.keys).sorted()
        var applied = 0
        var toSend: [String] = []
        var toApply: [(key: String, text: String?, modRevision: Int64)] = []
        var expecting: [String: String?] = [:]
        for key in allKeys {
            let local = locals[key].map { $0.value.jsonText(style: .typed) }
            var base = side.state.base[key] ?? MirrorState.Entry(value: nil, modRevision: 0)
            // A send under way when the last mirror stopped, of a value the key no longer
            // holds: the key changed here since, even where it went back to the base (a
            // removal after a first put, most often), and etcd may hold the value sent.
            let changedSinceSend = side.state.sending?[key].map { $0 != MirrorState.Sending(of: local) } ?? false
            var remoteEntry: MirrorState.Entry?
            if let keyValue = remote[key] {
                switch MirrorKeys.canonicalText(of: keyValue.value, maximumValueSize: side.suite.options.maximumValueSize) {
                case .success(let text):
                    remoteEntry = MirrorState.Entry(value: text, modRevision: keyValue.modRevision)
                case .failure(let refusal):
                    report(.skipped(suite: side.name, key: key, reason: refusal.reason))
                    // Never applied; a local change still goes out, and replaces it.
                    if local != base.value || changedSinceSend { toSend.append(key) }
                    continue
                }
            }
            // etcd's value as a base (absent: none, at the revision read).
            let remoteBase = remoteEntry ?? MirrorState.Entry(value: nil, modRevision: revision)
            if changedSinceSend {
                // The remote value is the base: the local one is sent unless they agree.
                base = remoteBase
                side.state.base[key] = base
            }
            let remoteChanged = remoteEntry.map { $0.modRevision != base.modRevision } ?? (base.value != nil)
            let localChanged = local != base.value
            if !remoteChanged && !localChanged { continue }
            if local == remoteEntry?.value {
                // Agreed already (a send or an apply whose base a killed mirror never wrote).
                side.state.base[key] = remoteBase
            } else if !localChanged {
                toApply.append((key, remoteEntry?.value, remoteEntry?.modRevision ?? revision))
                expecting[key] = local
            } else {
                // Both changed: the base takes the remote value, which the local one
                // replaces, so that a local change back to the old base before the send
                // is sent too, not taken for no change while etcd holds another value.
                if remoteChanged { side.state.base[key] = remoteBase }
                toSend.append(key)
            }
        }
        if !toApply.isEmpty {
            side.state.pending = Dictionary(toApply.map { ($0.key, MirrorState.Entry(value: $0.text, modRevision: $0.modRevision)) },
                                            uniquingKeysWith: { $1 })
            try side.saveWritingAhead()
            let (done, refused) = try await applyLocally(side, toApply.map { ($0.key, $0.text) }, expecting: expecting)
            for change in toApply {
                if done.contains(change.key) {
                    side.state.base[change.key] = MirrorState.Entry(value: change.text, modRevision: change.modRevision)
                    applied += 1
                } else if refused.contains(change.key) {
                    report(.skipped(suite: side.name, key: change.key, reason: MirrorKeys.ValueRefusal.refusedBySuite.reason))
                } else {
                    // Changed locally since it was read: the local value is sent.
                    side.state.base[change.key] = MirrorState.Entry(value: change.text, modRevision: change.modRevision)
                    toSend.append(change.key)
                }
            }
            side.state.pending = [:]
        }
        // The sends below written ahead with the decisions, replacing those of the last mirror.
        side.state.sending = side.sends(of: toSend)
        side.state.revision = revision
        try side.save()
        var sent = 0
        for key in toSend where try await send(side, key) { sent += 1 }
        report(.reconciled(suite: side.name, sent: sent, applied: applied, revision: revision))
    }

    // MARK: Local → etcd

    func markDirty(suite: String, key: String) {
        guard let side = sides[suite], !side.dirtySet.contains(key) else { return }
        side.dirtySet.insert(key)
        side.dirty.append(key)
    }

    /// Sends every dirty key whose value differs from its base, suite by suite, in the
    /// order the keys changed.
    func sendDirty() async throws {
        for name in order {
            let side = sides[name]!
            // One save writes them all ahead; `send` writes again only a value changed since.
            try side.writeAhead(side.sends(of: side.dirty))
            while !side.dirty.isEmpty {
                let key = side.dirty.removeFirst()
                side.dirtySet.remove(key)
                try await send(side, key)
            }
        }
    }

    /// Sends the key's local value if it differs from the base; says whether it sent.
    @discardableResult
    func send(_ side: MirrorSide, _ key: String) async throws -> Bool {
        let local = side.local(key)
        let base = side.state.base[key]
        guard local?.text != base?.value else {
            side.state.sending?[key] = nil
            return false
        }
        // Written ahead: a kill after etcd took it, before the base is saved, must not let
        // a later local change look unchanged on restart (`MirrorState.sending`).
        try side.writeAhead([key: MirrorState.Sending(of: local?.text)])
        let etcdKey = keys.etcdKey(suite: side.name, key: key)
        do {
            if let local, local.isDefault {
                let outcome = try await retrying("sending \(side.name) \(key)") { () async throws(EtcdError) in
                    try await client.create(etcdKey, value: Data(local.text.utf8))
                }
                switch outcome {
                case .created(let revision):
                    try side.settleSend(key, base: MirrorState.Entry(value: local.text, modRevision: revision))
                    report(.sent(suite: side.name, key: key, operation: "create", revision: revision))
                case .exists(let keyValue, let revision):
                    guard let keyValue else {
                        side.state.sending?[key] = nil
                        report(.error("\(side.name) \(key): a create-only transaction failed on an absent key at \(revision)"))
                        return false
                    }
                    try await takeRemote(side, key, keyValue, replacingDefault: local.text)
                }
            } else if let local {
                let revision = try await retrying("sending \(side.name) \(key)") { () async throws(EtcdError) in
                    try await client.put(etcdKey, value: Data(local.text.utf8))
                }
                try side.settleSend(key, base: MirrorState.Entry(value: local.text, modRevision: revision))
                report(.sent(suite: side.name, key: key, operation: "put", revision: revision))
            } else {
                let result = try await retrying("sending \(side.name) \(key)") { () async throws(EtcdError) in
                    try await client.delete(etcdKey)
                }
                try side.settleSend(key, base: MirrorState.Entry(value: nil, modRevision: result.revision))
                report(.sent(suite: side.name, key: key, operation: "delete", revision: result.revision))
            }
            return true
        } catch let error as EtcdError {
            switch error {
            case .rejected, .permissionDenied:
                // Another try gets the same answer: the key stays as it is here.
                side.state.sending?[key] = nil
                report(.error("\(side.name) \(key): not sent: \(error)"))
                return false
            default:
                throw error
            }
        }
    }

    /// A create-only send found a value in etcd: it replaces the local default, unless
    /// the local value changed since (then that value is sent next, and wins).
    func takeRemote(_ side: MirrorSide, _ key: String, _ keyValue: EtcdKeyValue, replacingDefault defaultText: String) async throws {
        // etcd did not take the default: nothing of this send is there.
        side.state.sending?[key] = nil
        let text: String
        switch MirrorKeys.canonicalText(of: keyValue.value, maximumValueSize: side.suite.options.maximumValueSize) {
        case .success(let canonical): text = canonical
        case .failure(let refusal):
            report(.skipped(suite: side.name, key: key, reason: refusal.reason))
            return
        }
        let entry = MirrorState.Entry(value: text, modRevision: keyValue.modRevision)
        side.state.pending[key] = entry
        try side.saveWritingAhead()
        let (done, refused) = try await applyLocally(side, [(key, text)], expecting: [key: defaultText])
        side.state.pending[key] = nil
        side.state.base[key] = entry
        try side.save()
        if done.contains(key) {
            report(.defaultReplaced(suite: side.name, key: key, revision: keyValue.modRevision))
        } else if refused.contains(key) {
            report(.skipped(suite: side.name, key: key, reason: MirrorKeys.ValueRefusal.refusedBySuite.reason))
        } else {
            markDirty(suite: side.name, key: key)
        }
    }

    // MARK: etcd → local

    func startWatch(from revision: Int64, after delay: Duration = .zero) {
        watchTask?.cancel()
        let client = self.client
        let prefix = keys.watchedPrefix
        let inbox = self.inbox
        let report = mirror.report
        watchTask = Task {
            var wait = delay
            while !Task.isCancelled {
                if wait > .zero { try? await Task.sleep(for: wait) }
                let watch: EtcdWatch
                do {
                    watch = try await client.watch(prefix: prefix, from: revision)
                } catch let error as EtcdError {
                    if case .unavailable = error {
                        wait = wait == .zero ? .milliseconds(50) : min(wait * 2, .seconds(2))
                        continue
                    }
                    inbox.yield(.watchEnded(error))
                    return
                } catch {
                    inbox.yield(.watchEnded(.cancelled))
                    return
                }
                report(.watching(from: revision, endpoint: watch.endpoint.absoluteString))
                do {
                    for try await batch in watch { inbox.yield(.batch(batch)) }
                    if !Task.isCancelled {
                        inbox.yield(.watchEnded(.watchInterrupted(endpoint: watch.endpoint.absoluteString, lastRevision: 0,
                                                                  reason: "the stream ended")))
                    }
                } catch {
                    inbox.yield(.watchEnded(error as? EtcdError ?? .cancelled))
                }
                return
            }
        }
    }

    /// Applies one batch of the watch: per suite, the last change of each key that is
    /// not the mirror's own write coming back, written ahead, then applied together.
    func apply(_ batch: EtcdWatchBatch) async throws {
        var bySuite: [String: [(key: String, entry: MirrorState.Entry)]] = [:]
        for event in batch.events {
            guard let (suite, key) = parsedKey(event.keyValue.key), let side = sides[suite] else { continue }
            let modRevision = event.keyValue.modRevision
            if let base = side.state.base[key], modRevision <= base.modRevision { continue }
            var text: String?
            if event.kind == .put {
                switch MirrorKeys.canonicalText(of: event.keyValue.value, maximumValueSize: side.suite.options.maximumValueSize) {
                case .success(let canonical): text = canonical
                case .failure(let refusal):
                    report(.skipped(suite: suite, key: key, reason: refusal.reason))
                    continue
                }
            }
            bySuite[suite, default: []].removeAll { $0.key == key }
            bySuite[suite, default: []].append((key, MirrorState.Entry(value: text, modRevision: modRevision)))
        }
        for name in order {
            guard let changes = bySuite[name], !changes.isEmpty else { continue }
            let side = sides[name]!
            for change in changes { side.state.pending[change.key] = change.entry }
            try side.saveWritingAhead()
            var expecting: [String: String?] = [:]
            for change in changes { expecting[change.key] = side.state.base[change.key]?.value }
            let (done, refused) = try await applyLocally(side, changes.map { ($0.key, $0.entry.value) }, expecting: expecting)
            for change in changes {
                side.state.pending[change.key] = nil
                if refused.contains(change.key) {
                    report(.skipped(suite: name, key: change.key, reason: MirrorKeys.ValueRefusal.refusedBySuite.reason))
                    continue
                }
                side.state.base[change.key] = change.entry
                if done.contains(change.key) {
                    report(.applied(suite: name, key: change.key, revision: change.entry.modRevision))
                } else {
                    report(.superseded(suite: name, key: change.key, revision: change.entry.modRevision))
                    markDirty(suite: name, key: change.key)
                }
            }
            side.state.revision = batch.deliveredThrough
            try side.save()
        }
        deliveredThrough = max(deliveredThrough, batch.deliveredThrough)
    }
}
