import Foundation

/// Why a request to etcd failed.
///
/// Every reply is treated as hostile input, so each way a reply can be wrong has its own
/// case, and none of them is a crash or a hang. No case ever carries a password or a
/// stored value: what a server says is cut to a short, single-line message first.
public enum EtcdError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The client's configuration cannot work: no endpoint, an endpoint that is not an
    /// `http`/`https` URL or that holds a user name, an unreadable password file.
    case invalidConfiguration(String)

    /// Every endpoint failed with a connection error, a timeout, or a 5xx or
    /// "unavailable" answer, in the order they were tried. The request may be tried
    /// again later; for a write, it may or may not have been applied.
    case unavailable([EtcdEndpointFailure])

    /// The user name or password was refused by `/v3/auth/authenticate`, or a request
    /// was refused as unauthenticated even after authenticating again.
    case authenticationFailed(endpoint: String, message: String)

    /// The user is authenticated but has no permission for the key (gRPC code 7).
    case permissionDenied(endpoint: String, message: String)

    /// etcd refused the request itself (a 4xx that is not about authentication): asking
    /// another member would give the same answer.
    case rejected(endpoint: String, httpStatus: Int, grpcCode: Int?, message: String)

    /// The reply was not what etcd sends: not JSON, a missing or mistyped field, base64
    /// that does not decode, a number that is not a number.
    case malformedReply(endpoint: String, reason: String)

    /// The reply, or one line of a watch's stream, was larger than the client accepts
    /// (`EtcdConfiguration.maximumReplyBytes`); the rest was not read.
    case replyTooLarge(endpoint: String, limit: Int)

    /// A reply's revision is below one already seen: the endpoint serves another cluster,
    /// or a cluster restored from an older backup. A mirror should stop and resync.
    case revisionWentBackwards(endpoint: String, known: Int64, received: Int64)

    /// The watch's start revision was compacted away. Read the whole range again and
    /// watch from that read's revision + 1.
    case compacted(endpoint: String, compactRevision: Int64)

    /// etcd canceled the watch for another reason than compaction (its `cancel_reason`).
    case watchCanceled(endpoint: String, reason: String)

    /// The watch's stream ended, or its endpoint died or stopped answering. Every event
    /// up to `lastRevision` was delivered; watch again from `lastRevision + 1`, on any
    /// endpoint.
    case watchInterrupted(endpoint: String, lastRevision: Int64, reason: String)

    /// The calling task was cancelled, or the client was closed.
    case cancelled

    public var description: String {
        switch self {
        case .invalidConfiguration(let reason):
            "etcd: invalid configuration: \(reason)"
        case .unavailable(let failures):
            "etcd: no endpoint answered: " + failures.map(\.description).joined(separator: "; ")
        case .authenticationFailed(let endpoint, let message):
            "etcd \(endpoint): authentication failed: \(message)"
        case .permissionDenied(let endpoint, let message):
            "etcd \(endpoint): permission denied: \(message)"
        case .rejected(let endpoint, let status, let code, let message):
            "etcd \(endpoint): request rejected (HTTP \(status)\(code.map { ", gRPC code \($0)" } ?? "")): \(message)"
        case .malformedReply(let endpoint, let reason):
            "etcd \(endpoint): malformed reply: \(reason)"
        case .replyTooLarge(let endpoint, let limit):
            "etcd \(endpoint): reply larger than \(limit) bytes"
        case .revisionWentBackwards(let endpoint, let known, let received):
            "etcd \(endpoint): revision went backwards from \(known) to \(received)"
        case .compacted(let endpoint, let compactRevision):
            "etcd \(endpoint): the watch's start revision was compacted (compact revision \(compactRevision)); read the range again"
        case .watchCanceled(let endpoint, let reason):
            "etcd \(endpoint): watch canceled: \(reason)"
        case .watchInterrupted(let endpoint, let lastRevision, let reason):
            "etcd \(endpoint): watch interrupted after revision \(lastRevision): \(reason)"
        case .cancelled:
            "etcd: cancelled"
        }
    }
}

/// One endpoint's failure within an `EtcdError.unavailable`.
public struct EtcdEndpointFailure: Sendable, Equatable, CustomStringConvertible {
    /// The endpoint, as configured (it never holds credentials).
    public var endpoint: String
    /// What went wrong: a connection error, a timeout, an HTTP status.
    public var reason: String

    public var description: String { "\(endpoint): \(reason)" }
}

/// What a server says, made fit for an error message: one line, at most 200 characters,
/// and never the password, should a hostile server echo it.
func sanitizedServerText(_ text: String, hiding secret: String? = nil) -> String {
    var cleaned = text
    if let secret, !secret.isEmpty { cleaned = cleaned.replacingOccurrences(of: secret, with: "<hidden>") }
    let singleLine = String(cleaned.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) })
    return singleLine.count > 200 ? String(singleLine.prefix(200)) + "…" : singleLine
}
