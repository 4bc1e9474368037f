import Foundation

/// What a mirror keeps durably for one suite and one etcd prefix, beside the suite in
/// `NAME.suite.sync-HASH` (`MirrorState.fileName(suite:prefix:)`):
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
///   before they existed, which load as they are.
///
/// Values are held as their typed JSON text, exactly as etcd holds them.
struct MirrorState: Codable, Equatable {
    struct Entry: Codable, Equatable {
        /// The value's typed JSON text; nil for a deleted or absent key.
        var value: String?
        /// The key's `mod_revision` in etcd (for a deletion, the revision that deleted it).
        var modRevision: Int64
    }

    var format = 1
    var prefix: String
    var revision: Int64 = 0
    var base: [String: Entry] = [:]
    var pending: [String: Entry] = [:]
    var pendingAfter: UInt64?
    var pendingBy: Int32?

    init(prefix: String) {
        self.prefix = prefix
    }

    /// `NAME.suite.sync-` and 16 hexadecimal digits of the prefix's 64-bit FNV-1a hash:
    /// never the name of a suite's data, lock, temporary, history or damaged file (those
    /// end in `.suite`, or continue `.suite.` with `lock`, `tmp.`, `h.` or `damaged-`),
    /// so that neither the engine, `suite-defaults domains` nor directory observation
    /// takes it for one of theirs. At most 252 bytes for the longest suite name (224).
    static func fileName(suite: String, prefix: String) -> String {
        suite + ".suite.sync-" + prefixHash(prefix)
    }

    /// Where a new state is written before it is renamed over the old one:
    /// `NAME.suite.synctmp-HASH`, at most 255 bytes (a name's limit) for the longest
    /// suite name, where `fileName + ".tmp"` would be 256 and could not be made.
    static func temporaryFileName(suite: String, prefix: String) -> String {
        suite + ".suite.synctmp-" + prefixHash(prefix)
    }

    private static func prefixHash(_ prefix: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in prefix.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// Opens and locks the state in `path` (see `DurableFile`): a fresh state when the
    /// file is new or empty. Throws when another mirror holds it, or when it is not a
    /// regular file, not readable, or another prefix's.
    static func open(path: String, temporaryPath: String, prefix: String) throws -> (state: MirrorState, file: DurableFile) {
        let (file, contents): (DurableFile, Data?)
        do {
            (file, contents) = try DurableFile.openLocked(path, temporaryPath: temporaryPath)
        } catch {
            throw MirrorFailure("the sync state: \(error)")
        }
        guard let data = contents else { return (MirrorState(prefix: prefix), file) }
        let state: MirrorState
        do {
            state = try JSONDecoder().decode(MirrorState.self, from: data)
        } catch {
            throw MirrorFailure("the sync state \(path) is not readable (\(type(of: error))); move it away to start afresh")
        }
        guard state.format == 1 else { throw MirrorFailure("the sync state \(path) has format \(state.format), not 1") }
        guard state.prefix == prefix else {
            throw MirrorFailure("the sync state \(path) belongs to the prefix \(state.prefix), not \(prefix)")
        }
        return (state, file)
    }

    /// Writes the state to its file, atomically and durably, keeping it locked.
    func save(to file: DurableFile) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try file.replace(with: try encoder.encode(self))
    }
}

/// A failure of the mirror that is not etcd's: a state file, a suite.
public struct MirrorFailure: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
