#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One key's change in a suite, as an observer receives it.
public struct SuiteChange: Sendable, Equatable, CustomStringConvertible {
    /// Where a change comes from.
    public enum Kind: Sendable, Equatable {
        /// Read from one commit: `sequence` and `pid` are that commit's.
        case commit
        /// The net change since the last state the observer saw, computed by comparing
        /// states: after damage was repaired, or when several compactions outran the
        /// observer. Intermediate values may have been folded; the final one is exact.
        case netChange
        /// The value when the observation started, delivered first on request.
        case initialValue
    }

    /// The suite's name.
    public var suite: String
    public var key: String
    /// The value before the change; nil when the key was absent.
    public var oldValue: SuiteValue?
    /// The value after the change; nil when the key was removed.
    public var newValue: SuiteValue?
    /// The commit's sequence number (for a net change or an initial value, the
    /// sequence number of the state it was computed from, or for a net change to a
    /// state numbered lower, such as a suite that started over, the one it came from:
    /// the numbers an observer receives never go back, unless the suite's lock file and
    /// data file were both destroyed; see Observation.md).
    public var sequence: UInt64
    /// The process that wrote the commit; 0 for net changes and initial values.
    public var pid: Int32
    /// Whether this process wrote the commit.
    public var isFromThisProcess: Bool
    public var kind: Kind
    /// When the commit was written (for net changes and initial values, when the
    /// change was found).
    public var timestamp: Date
    /// Whether the new value was stored as a first-access default (by
    /// `setIfAbsent(_:forKey:)` or a key's `storingDefault`), rather than chosen. A
    /// mirror such as `suite-sync` sends such a value only where none is stored yet.
    public var isDefault: Bool
    /// Whether the commit was made by a mirror such as `suite-sync`, applying a change
    /// made on another machine; false for net changes and initial values.
    public var isMirrored: Bool

    /// Creates a change. Mostly for the library itself and for tests.
    public init(suite: String, key: String, oldValue: SuiteValue?, newValue: SuiteValue?, sequence: UInt64,
                pid: Int32, isFromThisProcess: Bool, kind: Kind, timestamp: Date,
                isDefault: Bool = false, isMirrored: Bool = false) {
        self.suite = suite
        self.key = key
        self.oldValue = oldValue
        self.newValue = newValue
        self.sequence = sequence
        self.pid = pid
        self.isFromThisProcess = isFromThisProcess
        self.kind = kind
        self.timestamp = timestamp
        self.isDefault = isDefault
        self.isMirrored = isMirrored
    }

    public var description: String {
        "\(suite) \(key): \(oldValue?.description ?? "(absent)") → \(newValue?.description ?? "(absent)") [seq \(sequence), pid \(pid)]"
    }
}
