import Foundation

/// One key as etcd stores it, with its revisions.
public struct EtcdKeyValue: Sendable, Equatable, CustomStringConvertible {
    /// The key's bytes (any bytes: etcd keys need not be UTF-8).
    public var key: Data
    /// The value's bytes; empty for the key of a delete event.
    public var value: Data
    /// The revision of the put that created the key (since it last did not exist).
    public var createRevision: Int64
    /// The revision of the last change to the key.
    public var modRevision: Int64
    /// How many times the key was put since it was created; 0 once deleted.
    public var version: Int64

    public init(key: Data, value: Data, createRevision: Int64, modRevision: Int64, version: Int64) {
        self.key = key
        self.value = value
        self.createRevision = createRevision
        self.modRevision = modRevision
        self.version = version
    }

    /// Never the value, which may be private: only its size.
    public var description: String {
        "EtcdKeyValue(key: \(key.count) bytes, value: \(value.count) bytes, create: \(createRevision), "
            + "mod: \(modRevision), version: \(version))"
    }
}

/// What a range read returned.
public struct EtcdRangeResult: Sendable, Equatable {
    /// The keys found, in key order.
    public var keyValues: [EtcdKeyValue]
    /// The store's revision when the read was served: watch from `revision + 1` to see
    /// every later change.
    public var revision: Int64
    /// Whether more keys are in the range than a `limit` let through.
    public var more: Bool

    public init(keyValues: [EtcdKeyValue], revision: Int64, more: Bool = false) {
        self.keyValues = keyValues
        self.revision = revision
        self.more = more
    }
}

/// What a create-only transaction did.
public enum EtcdCreateOutcome: Sendable, Equatable {
    /// The key was absent and is now stored, at this revision.
    case created(revision: Int64)
    /// The key was there already; this is what is stored (nil only if it vanished
    /// between the compare and the read, which one transaction rules out), and the
    /// store's revision.
    case exists(EtcdKeyValue?, revision: Int64)
}

/// What a compare-and-put or compare-and-delete transaction did.
public enum EtcdCompareOutcome: Sendable, Equatable {
    /// The compare held and the write was made, at this revision.
    case succeeded(revision: Int64)
    /// The compare failed; this is the key as stored now (nil when absent), and the
    /// store's revision.
    case failed(current: EtcdKeyValue?, revision: Int64)
}

/// What a delete did.
public struct EtcdDeleteResult: Sendable, Equatable {
    /// How many keys were deleted: 0 or 1 for one key.
    public var deleted: Int64
    /// The store's revision after the delete (unchanged when nothing was deleted).
    public var revision: Int64

    public init(deleted: Int64, revision: Int64) {
        self.deleted = deleted
        self.revision = revision
    }
}

/// One change seen by a watch.
public struct EtcdWatchEvent: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case put
        case delete
    }

    public var kind: Kind
    /// The key after the change; for a delete, the key with its `modRevision` set to the
    /// delete's revision and no value.
    public var keyValue: EtcdKeyValue
    /// The key before the change, when the watch asked for it and it existed (and was not
    /// compacted away).
    public var previous: EtcdKeyValue?

    public init(kind: Kind, keyValue: EtcdKeyValue, previous: EtcdKeyValue?) {
        self.kind = kind
        self.keyValue = keyValue
        self.previous = previous
    }
}

/// The events of one revision range, as one line of the watch's stream brings them.
public struct EtcdWatchBatch: Sendable, Equatable {
    /// The store's revision when etcd sent the batch (its `header.revision`). While a
    /// watch catches up from an old revision, etcd sends at most 1,000 revisions per
    /// batch but still stamps each with the current revision, so this is *not* a safe
    /// point to resume from: use `deliveredThrough`.
    public var revision: Int64
    /// The changes, in revision order; empty for a progress notification.
    public var events: [EtcdWatchEvent]
    /// Every matching change up to this revision has been delivered: the last event's
    /// revision, or for a progress notification (no events) the header's revision. Store
    /// this, and watch again from it + 1.
    public var deliveredThrough: Int64

    public init(revision: Int64, events: [EtcdWatchEvent], deliveredThrough: Int64) {
        self.revision = revision
        self.events = events
        self.deliveredThrough = deliveredThrough
    }
}

/// Key ranges as etcd's `range_end` expresses them.
public enum EtcdKeyRange {
    /// The `range_end` that, with `prefix` as the key, selects every key starting with
    /// `prefix`: the prefix with its last byte below 0xFF increased by one and what follows
    /// it dropped. A prefix of only 0xFF bytes (or an empty one) has no such end, and
    /// gets `[0]`, which etcd reads as "every key from the key on".
    public static func rangeEnd(ofPrefix prefix: Data) -> Data {
        var bytes = [UInt8](prefix)
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return Data(bytes)
            }
            bytes.removeLast()
        }
        return Data([0])
    }
}
