#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One commit as the engine applied it to the contents: the key changes a layer
/// above may hand on.
struct AppliedCommit: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// One record read or written: `sequence`, `pid` and `timestamp` are its own.
        case commit
        /// The difference between two states read whole (after a repair, or beyond the
        /// history of compacted journals): intermediate values may be folded.
        case netChange
    }

    var kind: Kind
    var sequence: UInt64
    /// The process that wrote the record; 0 for a net change.
    var pid: Int32
    /// When the record was written; for a net change, when it was found.
    var timestamp: Date
    /// Where its changes are in the `AppliedCommits.changes` that hold it: every key
    /// whose stored value differs afterwards, in the order touched.
    var changes: Range<Int>
    /// Whether a mirror made the commit (`Record.Flags.mirrored`).
    var isMirrored = false
}

/// The commits the engine applied, in order, with the changes of all of them in one
/// list. The state keeps it from one hand-over to the next, emptied, so that the
/// usual catch-up of an observer (one commit of one key) allocates no list.
struct AppliedCommits: Sendable {
    private(set) var commits: [AppliedCommit] = []
    private(set) var changes: [KeyChange] = []

    var isEmpty: Bool { commits.isEmpty }

    /// The changes of `commit`, one of these.
    func changes(of commit: AppliedCommit) -> ArraySlice<KeyChange> { changes[commit.changes] }

    /// Appends a commit whose changes `collect` appends to the list; none when it
    /// appends none (a commit that changed nothing).
    mutating func append(_ kind: AppliedCommit.Kind, sequence: UInt64, pid: Int32, timestamp: @autoclosure () -> Date,
                         isMirrored: Bool = false, changes collect: (inout [KeyChange]) -> Void) {
        let start = changes.count
        collect(&changes)
        guard changes.count > start else { return }
        commits.append(AppliedCommit(kind: kind, sequence: sequence, pid: pid, timestamp: timestamp(),
                                     changes: start..<changes.count, isMirrored: isMirrored))
    }

    /// Empties the lists, keeping their storage unless a large catch-up (a repair,
    /// a burst) made it large.
    mutating func removeAll() {
        if changes.capacity <= Self.keptCapacity && commits.capacity <= Self.keptCapacity {
            commits.removeAllKeepingStorage()
            changes.removeAllKeepingStorage()
        } else {
            self = AppliedCommits()
        }
    }

    private static let keptCapacity = 64
}

/// Receives the commits a store applied while collecting changes, under the store's
/// lock: so in commit order, and before any later commit. It must not block.
protocol AppliedCommitListener: AnyObject, Sendable {
    func store(_ store: SuiteStore, applied: AppliedCommits)
}
