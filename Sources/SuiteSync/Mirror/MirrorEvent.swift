import Foundation
@_spi(Tools) import SuiteDefaults

/// What a mirror reports as it works. No event ever carries a value: keys and
/// revisions only, since values may be private.
public enum MirrorEvent: Sendable, Equatable {
    /// The mirror opened its suites and is about to read etcd.
    case started(suites: Int, prefix: String)
    /// A full comparison of a suite with etcd ended (at start, after a compaction, or
    /// with `--once`): how many keys were sent and applied, at which etcd revision.
    case reconciled(suite: String, sent: Int, applied: Int, revision: Int64)
    /// A local change was written to etcd: `operation` is put, delete or create (a
    /// default, create-only), at `revision`.
    case sent(suite: String, key: String, operation: String, revision: Int64)
    /// A local default was not stored in etcd, which had a value: that value replaced it.
    case defaultReplaced(suite: String, key: String, revision: Int64)
    /// A change from etcd was applied to the suite.
    case applied(suite: String, key: String, revision: Int64)
    /// A change from etcd was not applied because the suite's value changed since it
    /// was last agreed; the local value is sent instead, and wins by etcd's order.
    case superseded(suite: String, key: String, revision: Int64)
    /// Something under the prefix in etcd was not applied: a key that is no suite key,
    /// a value that is not typed JSON or too large. The suite is untouched.
    case skipped(suite: String?, key: String, reason: String)
    /// The mirror is watching etcd from `revision`.
    case watching(from: Int64, endpoint: String)
    /// Something failed; the mirror goes on (retrying) unless it says it stops.
    case error(String)

    /// The event as one JSON object, for `--json`.
    public var jsonLine: String {
        var fields: [(String, String)] = []
        func text(_ name: String, _ value: String) { fields.append((name, SuiteValue.string(value).jsonText(style: .plain))) }
        func number(_ name: String, _ value: Int64) { fields.append((name, String(value))) }
        switch self {
        case .started(let suites, let prefix):
            text("event", "started"); number("suites", Int64(suites)); text("prefix", prefix)
        case .reconciled(let suite, let sent, let applied, let revision):
            text("event", "reconciled"); text("suite", suite); number("sent", Int64(sent)); number("applied", Int64(applied))
            number("revision", revision)
        case .sent(let suite, let key, let operation, let revision):
            text("event", "sent"); text("suite", suite); text("key", key); text("operation", operation); number("revision", revision)
        case .defaultReplaced(let suite, let key, let revision):
            text("event", "default-replaced"); text("suite", suite); text("key", key); number("revision", revision)
        case .applied(let suite, let key, let revision):
            text("event", "applied"); text("suite", suite); text("key", key); number("revision", revision)
        case .superseded(let suite, let key, let revision):
            text("event", "superseded"); text("suite", suite); text("key", key); number("revision", revision)
        case .skipped(let suite, let key, let reason):
            text("event", "skipped")
            if let suite { text("suite", suite) }
            text("key", key); text("reason", reason)
        case .watching(let revision, let endpoint):
            text("event", "watching"); number("from", revision); text("endpoint", endpoint)
        case .error(let message):
            text("event", "error"); text("message", message)
        }
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// The event as a line for people.
    public var humanLine: String {
        switch self {
        case .started(let suites, let prefix): "mirroring \(suites) suite(s) under \(prefix)"
        case .reconciled(let suite, let sent, let applied, let revision):
            "\(suite): reconciled at revision \(revision): \(sent) sent, \(applied) applied"
        case .sent(let suite, let key, let operation, let revision): "\(suite) \(key): sent (\(operation)) at revision \(revision)"
        case .defaultReplaced(let suite, let key, let revision):
            "\(suite) \(key): the local default was replaced by etcd's value of revision \(revision)"
        case .applied(let suite, let key, let revision): "\(suite) \(key): applied revision \(revision)"
        case .superseded(let suite, let key, let revision):
            "\(suite) \(key): revision \(revision) not applied: the local value changed and is sent"
        case .skipped(let suite, let key, let reason): "skipped \(suite.map { "\($0) " } ?? "")\(key): \(reason)"
        case .watching(let revision, let endpoint): "watching from revision \(revision) at \(endpoint)"
        case .error(let message): "error: \(message)"
        }
    }

    /// Whether the event is a problem (people see those on standard error).
    public var isProblem: Bool {
        switch self {
        case .skipped, .error: true
        default: false
        }
    }
}
