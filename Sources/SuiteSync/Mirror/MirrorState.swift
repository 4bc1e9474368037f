import Foundation
@_spi(Tools) import SuiteDefaults

/// What a mirror keeps durably for one suite and one etcd prefix, beside the suite in
/// `NAME.suite.sync-HASH` (`MirrorState.fileName(suite:prefix:)`), the snapshot, and the
/// log that continues it, `NAME.suite.synclog-HASH` (`MirrorStateLog`, `MirrorStateStore`):
///
/// - `revision`: the etcd revision through which every change under the prefix was
///   applied (a watch batch's `deliveredThrough`, or a full read's revision);
/// - `base`: per key, the value last agreed with etcd and its `mod_revision` there
///   (a nil value: deleted, or absent when the revision was read). A key missing here
///   was never agreed on;
/// - `pending`: remote changes written ahead of being applied to the suite, so that a
///   process killed between the two knows, when it starts again, whether the change
///   reached the suite (see `SuiteMirror`);
/// - `pendingAfter`, `pendingBy`: the suite's last commit sequence number just before
///   `pending` was written, and the mirror process that wrote it, so that a mirror
///   started again can look in the suite's journal for that process's mirrored commit
///   of a pending change (`Suite.keysOfMirroredCommits`). Absent in files written
///   before they existed, which load as they are;
/// - `sending`: sends written ahead, per key the local value (nil: a removal) about to
///   be sent, as a digest, cleared with the save of the base the send got. A kill after etcd took the
///   value but before that save leaves the old base; a local value that is neither the
///   one sent nor, then, distinguishable from the old base (a removal after a first put,
///   most often) would otherwise look unchanged on restart, and the value sent would be
///   applied over it (see `SuiteMirror`'s reconcile). Absent when nothing is under way,
///   and in files written before it existed;
/// - `log`: the id of the log whose records continue this snapshot. A log with another
///   id (or a snapshot without one: written before logs, or fresh) is not replayed.
///
/// Values are held as their typed JSON text, exactly as etcd holds them.
struct MirrorState: Codable, Equatable {
    struct Entry: Codable, Equatable {
        /// The value's typed JSON text; nil for a deleted or absent key.
        var value: String?
        /// The key's `mod_revision` in etcd (for a deletion, the revision that deleted it).
        var modRevision: Int64
    }

    /// A send written ahead: the local value being sent, as its length and 64-bit FNV-1a
    /// hash, enough to tell it from another and no larger for a large value.
    struct Sending: Codable, Equatable {
        /// nil for a removal.
        var digest: String?

        init(of text: String?) {
            digest = text.map { "\($0.utf8.count)-" + MirrorState.fnv1a($0.utf8) }
        }
    }

    var format = 1
    var prefix: String
    var revision: Int64 = 0
    var base = MirrorEntries()
    var pending: [String: Entry] = [:]
    var pendingAfter: UInt64?
    var pendingBy: Int32?
    var sending: [String: Sending]?
    var log: String?

    init(prefix: String) {
        self.prefix = prefix
    }

    /// One step of the state, as a log record carries it: the keys of `base` set since
    /// the last step (nil: removed), and the rest whole (`pending` is one batch at most,
    /// `sending` one round of sends).
    struct Change: Codable {
        var revision: Int64
        var base: [String: Entry?]
        var pending: [String: Entry]
        var pendingAfter: UInt64?
        var pendingBy: Int32?
        var sending: [String: Sending]?
    }

    /// The step from the state last saved to this one.
    var change: Change {
        var changed: [String: Entry?] = [:]
        for key in base.touched { changed[key] = .some(base[key]) }
        return Change(revision: revision, base: changed, pending: pending, pendingAfter: pendingAfter, pendingBy: pendingBy,
                      sending: sending)
    }

    /// Replays a step read from the log.
    mutating func apply(_ change: Change) {
        revision = change.revision
        for (key, entry) in change.base { base[key] = entry }
        pending = change.pending
        pendingAfter = change.pendingAfter
        pendingBy = change.pendingBy
        sending = change.sending
    }

    /// `NAME.suite.sync-` and 16 hexadecimal digits of the prefix's 64-bit FNV-1a hash:
    /// never the name of a suite's data, lock, temporary, history or damaged file (those
    /// end in `.suite`, or continue `.suite.` with `lock`, `tmp.`, `h.` or `damaged-`),
    /// so that neither the engine, `suite-defaults domains` nor directory observation
    /// takes it for one of theirs. At most 252 bytes for the longest suite name (224).
    static func fileName(suite: String, prefix: String) -> String {
        suite + ".suite.sync-" + prefixHash(prefix)
    }

    /// Where a new state (or a new log) is written before it is renamed into place:
    /// `NAME.suite.synctmp-HASH`, at most 255 bytes (a name's limit) for the longest
    /// suite name, where `fileName + ".tmp"` would be 256 and could not be made.
    static func temporaryFileName(suite: String, prefix: String) -> String {
        suite + ".suite.synctmp-" + prefixHash(prefix)
    }

    /// The log continuing the state file: `NAME.suite.synclog-HASH`, 255 bytes at most.
    static func logFileName(suite: String, prefix: String) -> String {
        suite + ".suite.synclog-" + prefixHash(prefix)
    }

    private static func prefixHash(_ prefix: String) -> String { fnv1a(prefix.utf8) }

    /// 16 hexadecimal digits of the 64-bit FNV-1a hash of `bytes`.
    static func fnv1a(_ bytes: some Sequence<UInt8>) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The state as the state file holds it: JSON with sorted keys.
    func snapshotJSON() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try encoder.encode(self)
    }

    /// The most the state file may hold, judged by its size before reading.
    static let sizeLimit = 256 << 20
    /// The most the log may hold: compacted by `sizeLimit` at the latest, plus one
    /// record, itself at most a state.
    static let logSizeLimit = 2 * sizeLimit

    /// What `load` found.
    struct Loaded {
        var state: MirrorState
        /// The log's whole records end here when it continues the state and holds
        /// nothing else (more records may follow them); nil when it must be started
        /// afresh before the next step is written (absent, stale, torn or damaged).
        var appendableLogEnd: Int?
        /// Damage found in the log, to be reported.
        var damage: String?
    }

    /// The state that a snapshot's bytes (nil or empty: fresh) and its log's (nil: none)
    /// hold: the snapshot, then each whole record of the log when the log continues it.
    /// `prefix` and `suite`, when given, must be theirs. Shared by the mirror's start and
    /// by what reads a state without taking it (`MirrorStateFiles`).
    static func load(snapshot: Data?, log: Data?, prefix: String?, suite: String?, path: String, logPath: String)
        throws(MirrorFailure) -> Loaded {
        var state = MirrorState(prefix: prefix ?? "")
        if let snapshot, !snapshot.isEmpty {
            do {
                state = try JSONDecoder().decode(MirrorState.self, from: snapshot)
            } catch {
                throw MirrorFailure("the sync state \(path) is not readable (\(type(of: error))); move it away to start afresh")
            }
            guard state.format == 1 else { throw MirrorFailure("the sync state \(path) has format \(state.format), not 1") }
            if let prefix, state.prefix != prefix {
                throw MirrorFailure("the sync state \(path) belongs to the prefix \(state.prefix), not \(prefix)")
            }
        }
        state.base.markSaved()
        guard let log else { return Loaded(state: state) }
        let contents: MirrorStateLog.Contents
        do {
            guard let parsed = try MirrorStateLog.parse(log) else { return Loaded(state: state) }
            contents = parsed
        } catch {
            throw MirrorFailure("the sync state log \(logPath) is not readable (\(error)); move it and the state file away to start afresh")
        }
        if let prefix, contents.header.prefix != prefix {
            throw MirrorFailure("the sync state log \(logPath) belongs to the prefix \(contents.header.prefix), not \(prefix)")
        }
        if let suite, contents.header.suite != suite {
            throw MirrorFailure("the sync state log \(logPath) belongs to the suite \(contents.header.suite), not \(suite)")
        }
        // Another snapshot's log: this snapshot was written after it (a compaction killed
        // before the new log took its name) or afresh; everything it needs is in it.
        guard state.log == contents.header.id else { return Loaded(state: state) }
        var damage = contents.damage.map { "the sync state log \(logPath): \($0)" }
        var replayed = 0
        for record in contents.records {
            guard let change = try? JSONDecoder().decode(Change.self, from: record) else {
                damage = "the sync state log \(logPath): record \(replayed + 1) is not readable; it and the rest are ignored"
                break
            }
            state.apply(change)
            replayed += 1
        }
        state.base.markSaved()
        let whole = damage == nil && contents.end == log.count
        return Loaded(state: state, appendableLogEnd: whole ? contents.end : nil, damage: damage)
    }

    /// Opens and locks the state of `suite` and `prefix` in `directory` (`fileName`, see
    /// `DurableFile`) and reads the log that continues it (`logFileName`): a fresh state
    /// when the file is new or empty. Throws when another mirror holds it, or when either
    /// file is not a regular file, not readable, or another prefix's (the log: or another
    /// suite's).
    static func open(directory: String, suite: String, prefix: String) throws
        -> (state: MirrorState, store: MirrorStateStore, damage: String?) {
        let path = directory + "/" + fileName(suite: suite, prefix: prefix)
        let temporaryPath = directory + "/" + temporaryFileName(suite: suite, prefix: prefix)
        let logPath = directory + "/" + logFileName(suite: suite, prefix: prefix)
        let (file, contents): (DurableFile, Data?)
        do {
            (file, contents) = try DurableFile.openLocked(path, temporaryPath: temporaryPath, limit: sizeLimit)
        } catch {
            throw MirrorFailure("the sync state: \(error)")
        }
        let opened: (descriptor: FileDescriptor, bytes: Data)?
        do {
            opened = try MirrorStateLog.open(logPath, limit: logSizeLimit)
        } catch {
            throw MirrorFailure("the sync state log: \(error)")
        }
        var loaded: Loaded
        do {
            loaded = try load(snapshot: contents, log: opened?.bytes, prefix: prefix, suite: suite, path: path, logPath: logPath)
        } catch {
            if let opened { opened.descriptor.close() }
            throw error
        }
        var log: MirrorStateLog?
        if let opened {
            if let end = loaded.appendableLogEnd, let id = loaded.state.log {
                log = MirrorStateLog.continuing(logPath, id: id, descriptor: opened.descriptor, size: end)
            } else {
                opened.descriptor.close()
            }
        }
        let store = MirrorStateStore(snapshot: file, snapshotSize: contents?.count ?? 0, log: log,
                                     logPath: logPath, temporaryPath: temporaryPath, prefix: prefix, suite: suite)
        loaded.state.prefix = prefix
        return (loaded.state, store, loaded.damage)
    }
}

/// `MirrorState.base`: the entries, and which keys were set since the last save, so that
/// a save appends only those (`MirrorState.change`). Encoded as the entries alone.
struct MirrorEntries: Codable, Equatable {
    private(set) var entries: [String: MirrorState.Entry] = [:]
    /// Keys set since the state was last saved (or loaded).
    private(set) var touched: Set<String> = []

    init() {}

    subscript(key: String) -> MirrorState.Entry? {
        get { entries[key] }
        set {
            entries[key] = newValue
            touched.insert(key)
        }
    }

    var keys: Dictionary<String, MirrorState.Entry>.Keys { entries.keys }

    /// Everything so far is saved: the next step starts from here.
    mutating func markSaved() {
        touched.removeAll(keepingCapacity: true)
    }

    init(from decoder: Decoder) throws {
        entries = try decoder.singleValueContainer().decode([String: MirrorState.Entry].self)
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(entries)
    }

    static func == (lhs: MirrorEntries, rhs: MirrorEntries) -> Bool { lhs.entries == rhs.entries }
}

/// Where a mirror's state goes, durably: a record appended to the log per step (one
/// `fdatasync`), and, when the log has grown past `compactionThreshold` (or cannot be
/// continued: none yet, another snapshot's, torn, damaged, removed or replaced), a
/// compaction: the whole state written as a new snapshot the old way (temporary file,
/// `fsync`, `rename`, `fsync` of the directory), naming a new log id, then a new log of
/// that id made the same way. A kill between the two leaves the new snapshot and the
/// old log, whose id it does not name: the log is ignored, the snapshot holds it all.
final class MirrorStateStore {
    let snapshot: DurableFile
    private var snapshotSize: Int
    private var log: MirrorStateLog?
    let logPath: String
    let temporaryPath: String
    let prefix: String
    let suite: String

    /// A log past this is folded into a new snapshot: a few times the snapshot, so that
    /// a compaction's whole write is paid once per that much appended, and a start reads
    /// at most that much more than the snapshot; never under 256 KiB, so that a small
    /// state is not rewritten every few steps; never over the state file's limit, so that
    /// the log stays within its own (`MirrorState.logSizeLimit`).
    var compactionThreshold: Int { min(max(256 << 10, 4 * snapshotSize), MirrorState.sizeLimit) }

    init(snapshot: DurableFile, snapshotSize: Int, log: MirrorStateLog?, logPath: String, temporaryPath: String,
         prefix: String, suite: String) {
        self.snapshot = snapshot
        self.snapshotSize = snapshotSize
        self.log = log
        self.logPath = logPath
        self.temporaryPath = temporaryPath
        self.prefix = prefix
        self.suite = suite
    }

    /// Makes `state` durable: one log record of what changed since the last save, or a
    /// compaction. Stops (throws) when another mirror has taken the state file's name.
    func save(_ state: inout MirrorState) throws {
        // The snapshot checked first: a state file taken by another mirror stops this one
        // before anything is written.
        if try snapshot.checkStillOurs(), let log, state.log == log.id, log.size <= compactionThreshold,
           try log.isStillAtItsPath() {
            try log.append(try JSONEncoder().encode(state.change))
        } else {
            try compact(&state)
        }
        state.base.markSaved()
    }

    private func compact(_ state: inout MirrorState) throws {
        var id: UInt64 = 0
        while id == 0 { id = UInt64.random(in: .min ... .max) }
        state.log = String(id, radix: 16)
        let data = try state.snapshotJSON()
        // The old log goes only once the new snapshot names another id: until then, a kill
        // leaves the old snapshot and the log continuing it.
        log = nil
        try snapshot.replace(with: data)
        snapshotSize = data.count
        log = try MirrorStateLog.create(logPath, temporaryPath: temporaryPath,
                                        header: .init(id: state.log!, prefix: prefix, suite: suite))
    }
}

/// Reads a mirror's state without taking it (for tests and tools): the snapshot with its
/// log replayed, as a mirror starting now would find it.
@_spi(Tools) public enum MirrorStateFiles {
    /// The log beside the state file at `statePath` (`NAME.suite.sync-HASH`).
    public static func logPath(ofStatePath statePath: String) -> String {
        guard let range = statePath.range(of: ".suite.sync-", options: .backwards) else { return statePath + ".log" }
        return statePath.replacingCharacters(in: range, with: ".suite.synclog-")
    }

    /// The state at `statePath` with its log replayed, as JSON (the state file's encoding).
    public static func currentStateJSON(statePath: String) throws -> Data {
        let logPath = logPath(ofStatePath: statePath)
        let snapshot = FileManager.default.contents(atPath: statePath)
        let log = FileManager.default.contents(atPath: logPath)
        let loaded = try MirrorState.load(snapshot: snapshot, log: log, prefix: nil, suite: nil, path: statePath, logPath: logPath)
        return try loaded.state.snapshotJSON()
    }
}

/// A failure of the mirror that is not etcd's: a state file, a suite.
public struct MirrorFailure: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
