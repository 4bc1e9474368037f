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
    /// Every key whose stored value differs afterwards, in the order touched.
    var changes: [KeyChange]
    /// Whether a mirror made the commit (`Record.Flags.mirrored`).
    var isMirrored = false
}

/// What the engine did while one caller held the store: the commits it applied,
/// in order, and what it diagnosed. Commits are recorded only while
/// `StoreState.collectsChanges` is on, since computing them costs.
struct EngineOutcome: Sendable {
    var commits: [AppliedCommit] = []
    var diagnostics: [SuiteDiagnostic] = []
}

/// Receives the commits a store applied while collecting changes, under the store's
/// lock: so in commit order, and before any later commit. It must not block.
protocol AppliedCommitListener: AnyObject, Sendable {
    func store(_ store: SuiteStore, applied commits: [AppliedCommit])
}
