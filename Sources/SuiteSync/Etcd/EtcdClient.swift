import Foundation
import Synchronization

/// A client of an etcd v3 cluster through its JSON gateway (etcd 3.4: `/v3/kv/range`,
/// `/v3/kv/put`, `/v3/kv/txn`, `/v3/watch`, ...), over HTTP/1.1 or HTTPS (`SocketTransport`).
///
/// - **Failover.** A request goes to the endpoint that last answered. When that one fails
///   with a connection error, a timeout, or a 5xx or "unavailable" answer, the request
///   goes to the next endpoint, and so on once around the list; the first endpoint that
///   answers is remembered. Answers that another member would give too (a refused
///   request, a wrong password, a malformed reply) are thrown at once.
/// - **Deadlines.** Each request to each endpoint has `requestTimeout`; nothing waits
///   forever. Cancelling the calling task cancels the request.
/// - **Authentication.** With `credentials`, the client gets a token from
///   `/v3/auth/authenticate`, sends it in the `Authorization` header, and authenticates
///   again once when etcd rejects the token (simple tokens expire after 5 idle minutes).
/// - **Revisions.** A reply whose revision is below one that an earlier, completed
///   request saw is an `EtcdError.revisionWentBackwards`.
/// - **Hostile replies** are typed errors (`EtcdError`); a reply is read up to
///   `maximumReplyBytes`.
///
/// Keys and values are bytes. Every method may be called from any task at once.
public final class EtcdClient: Sendable {
    public let configuration: EtcdConfiguration

    private struct State {
        var preferredEndpoint = 0
        /// The token to send; nil when none was got yet, "" when auth is off on the server.
        var token: String?
        var highestRevision: Int64 = 0
        var closed = false
    }

    private let state = Mutex(State())
    private let transport: SocketTransport

    /// A client of the cluster that `configuration` names. It connects on first use.
    public init(configuration: EtcdConfiguration) throws(EtcdError) {
        try configuration.validate()
        self.configuration = configuration
        transport = SocketTransport(tls: try EtcdTrust.context(for: configuration))
    }

    /// Makes later requests and watches throw `EtcdError.cancelled`. Requests under way
    /// end at their deadline; watches end when cancelled or dropped.
    public func close() {
        state.withLock { $0.closed = true }
    }

    /// The transport for requests and watches to `endpoint`.
    func transport(for endpoint: URL) -> any HTTPTransport { transport }

    /// The endpoint that requests go to first: the one that last answered.
    public var currentEndpoint: URL {
        configuration.endpoints[state.withLock { $0.preferredEndpoint }]
    }

    /// The highest revision any reply has shown so far.
    public var highestRevisionSeen: Int64 { state.withLock { $0.highestRevision } }

    // MARK: Reads

    /// The value of one key: its key-value when present (at most one), and the revision.
    public func get(_ key: Data) async throws(EtcdError) -> EtcdRangeResult {
        try await range(key: key, rangeEnd: nil)
    }

    /// Every key that starts with `prefix`, in key order, and the revision they were read
    /// at. `limit` (0: none) caps the count; `revision` (0: the latest) reads the store
    /// as it was then, so that a large prefix can be read in pages at one revision.
    public func range(prefix: Data, limit: Int64 = 0, revision: Int64 = 0) async throws(EtcdError) -> EtcdRangeResult {
        // An empty prefix means every key: from "\0" to the end.
        let key = prefix.isEmpty ? Data([0]) : prefix
        return try await range(key: key, rangeEnd: EtcdKeyRange.rangeEnd(ofPrefix: prefix), limit: limit, revision: revision)
    }

    /// The keys from `key` up to, not including, `rangeEnd` (nil: `key` alone; `[0]`:
    /// every key from `key` on).
    public func range(key: Data, rangeEnd: Data?, limit: Int64 = 0, revision: Int64 = 0) async throws(EtcdError)
        -> EtcdRangeResult {
        var body: [String: Any] = ["key": EtcdRequestBody.base64(key)]
        if let rangeEnd { body["range_end"] = EtcdRequestBody.base64(rangeEnd) }
        if limit > 0 { body["limit"] = EtcdRequestBody.number(limit) }
        if revision > 0 { body["revision"] = EtcdRequestBody.number(revision) }
        let reply = try await call("/v3/kv/range", body)
        return try Self.rangeResult(of: reply, revision: try reply.headerRevision())
    }

    static func rangeResult(of reply: EtcdReply, revision: Int64) throws(EtcdError) -> EtcdRangeResult {
        var keyValues: [EtcdKeyValue] = []
        for entry in try reply.objects("kvs") { keyValues.append(try entry.keyValue()) }
        return EtcdRangeResult(keyValues: keyValues, revision: revision, more: try reply.flag("more"))
    }

    // MARK: Writes

    /// Stores `value` under `key`; returns the revision of the write.
    @discardableResult
    public func put(_ key: Data, value: Data) async throws(EtcdError) -> Int64 {
        let reply = try await call("/v3/kv/put", ["key": EtcdRequestBody.base64(key), "value": EtcdRequestBody.base64(value)])
        return try reply.headerRevision()
    }

    /// Deletes `key`; says whether it was there, and the revision after.
    @discardableResult
    public func delete(_ key: Data) async throws(EtcdError) -> EtcdDeleteResult {
        let reply = try await call("/v3/kv/deleterange", ["key": EtcdRequestBody.base64(key)])
        let deleted = try reply.count("deleted")
        guard deleted <= 1 else { throw reply.malformed("deleted \(deleted) keys for one key") }
        return EtcdDeleteResult(deleted: deleted, revision: try reply.headerRevision())
    }

    /// Stores `value` under `key` only if the key is absent (a transaction comparing
    /// `create_revision` with 0); otherwise returns what is stored. This is how a default
    /// detected on one machine never overwrites a choice made on another.
    ///
    /// After a failover the transaction may have been applied by the member that failed
    /// before it answered; then this returns `.exists` with the value written here.
    public func create(_ key: Data, value: Data) async throws(EtcdError) -> EtcdCreateOutcome {
        let compare: [String: Any] = ["target": "CREATE", "result": "EQUAL", "key": EtcdRequestBody.base64(key),
                                      "create_revision": "0"]
        let reply = try await transaction(compare: compare, onSuccess: putOperation(key, value), key: key)
        switch reply {
        case .succeeded(let revision): return .created(revision: revision)
        case .failed(let current, let revision): return .exists(current, revision: revision)
        }
    }

    /// Stores `value` under `key` only if the key's `mod_revision` is `modRevision` (0: the
    /// key is absent); otherwise returns the key as it is.
    public func put(_ key: Data, value: Data, ifModRevision modRevision: Int64) async throws(EtcdError)
        -> EtcdCompareOutcome {
        try await transaction(compare: modRevisionCompare(key, modRevision), onSuccess: putOperation(key, value), key: key)
    }

    /// Deletes `key` only if its `mod_revision` is `modRevision`; otherwise returns the key
    /// as it is.
    public func delete(_ key: Data, ifModRevision modRevision: Int64) async throws(EtcdError) -> EtcdCompareOutcome {
        try await transaction(compare: modRevisionCompare(key, modRevision),
                              onSuccess: ["request_delete_range": ["key": EtcdRequestBody.base64(key)]], key: key)
    }

    private func putOperation(_ key: Data, _ value: Data) -> [String: Any] {
        ["request_put": ["key": EtcdRequestBody.base64(key), "value": EtcdRequestBody.base64(value)]]
    }

    private func modRevisionCompare(_ key: Data, _ modRevision: Int64) -> [String: Any] {
        ["target": "MOD", "result": "EQUAL", "key": EtcdRequestBody.base64(key),
         "mod_revision": EtcdRequestBody.number(modRevision)]
    }

    /// One compare, one operation when it holds, and a read of `key` when it does not.
    private func transaction(compare: [String: Any], onSuccess operation: [String: Any], key: Data) async throws(EtcdError)
        -> EtcdCompareOutcome {
        let body: [String: Any] = ["compare": [compare], "success": [operation],
                                   "failure": [["request_range": ["key": EtcdRequestBody.base64(key)]]]]
        let reply = try await call("/v3/kv/txn", body)
        let revision = try reply.headerRevision()
        // A failed transaction has no "succeeded" field at all (false is left out).
        if try reply.flag("succeeded") { return .succeeded(revision: revision) }
        let responses = try reply.objects("responses")
        guard responses.count == 1, let read = try responses[0].object("response_range") else {
            throw reply.malformed("a failed transaction without its read")
        }
        let found = try Self.rangeResult(of: read, revision: revision).keyValues
        guard found.count <= 1, found.allSatisfy({ $0.key == key }) else {
            throw reply.malformed("a transaction's read returned another key")
        }
        return .failed(current: found.first, revision: revision)
    }

    /// Compacts the store's history up to `revision`: watches from before it fail with
    /// `EtcdError.compacted` afterwards.
    public func compact(upTo revision: Int64) async throws(EtcdError) {
        _ = try await call("/v3/kv/compaction", ["revision": EtcdRequestBody.number(revision)])
    }

    // MARK: Members

    /// What one member says of itself (`/v3/maintenance/status`), asked of that endpoint
    /// only, with no failover.
    public func status(of endpoint: URL) async throws(EtcdError) -> EtcdMemberStatus {
        guard let index = configuration.endpoints.firstIndex(of: endpoint) else {
            throw .invalidConfiguration("\(endpoint.absoluteString) is not one of the client's endpoints")
        }
        let reply = try await call("/v3/maintenance/status", [:], endpoints: [index])
        guard let header = try reply.object("header") else { throw reply.malformed("no header") }
        return EtcdMemberStatus(memberID: try header.unsigned("member_id"), leaderID: try reply.unsigned("leader"),
                                revision: try reply.headerRevision(), version: try reply.string("version") ?? "")
    }

    // MARK: Requests

    /// How one attempt at one endpoint ended, when it did not end with a reply or a
    /// definitive error.
    struct Failover: Error {
        var reason: String
    }

    /// POSTs `body` to `path`, with failover over `endpoints` (nil: all, starting at the
    /// preferred one), and returns the parsed reply of the first endpoint that answers.
    func call(_ path: String, _ body: [String: Any], endpoints chosen: [Int]? = nil) async throws(EtcdError) -> EtcdReply {
        let encoded = EtcdRequestBody.encode(body)
        let (closed, preferred, knownRevision) = state.withLock { ($0.closed, $0.preferredEndpoint, $0.highestRevision) }
        guard !closed else { throw .cancelled }
        let count = configuration.endpoints.count
        let order = chosen ?? (0..<count).map { (preferred + $0) % count }
        var failures: [EtcdEndpointFailure] = []
        for index in order {
            let endpoint = configuration.endpoints[index]
            do {
                let reply = try await attempt(path, encoded, at: endpoint)
                // Key-value requests are linearizable; a member's status is its own view.
                if path.hasPrefix("/v3/kv/") { try noteRevision(of: reply, known: knownRevision) }
                if chosen == nil { state.withLock { $0.preferredEndpoint = index } }
                return reply
            } catch let failover as Failover {
                failures.append(EtcdEndpointFailure(endpoint: endpoint.absoluteString, reason: failover.reason))
            } catch let error as EtcdError {
                throw error
            } catch {
                throw .malformedReply(endpoint: endpoint.absoluteString, reason: "unexpected \(type(of: error))")
            }
        }
        throw .unavailable(failures)
    }

    /// Checks that the reply's revision is not below what a request completed before this
    /// one started saw, and raises the highest revision seen.
    private func noteRevision(of reply: EtcdReply, known: Int64) throws(EtcdError) {
        guard let header = try reply.object("header"), header.has("revision") else { return }
        let revision = try header.count("revision")
        guard revision >= known else {
            throw .revisionWentBackwards(endpoint: reply.endpoint, known: known, received: revision)
        }
        state.withLock { $0.highestRevision = max($0.highestRevision, revision) }
    }

    /// One request to one endpoint, authenticating first when needed and once more when
    /// the token is rejected. Throws `Failover` when another endpoint should be asked.
    private func attempt(_ path: String, _ body: Data, at endpoint: URL) async throws -> EtcdReply {
        let name = endpoint.absoluteString
        var authenticatedAgain = false
        while true {
            var token = state.withLock { $0.token }
            if configuration.credentials != nil && token == nil {
                token = try await authenticate(at: endpoint)
            }
            let reply = try await exchange(path, body, at: endpoint, token: token)
            if reply.status == 200 { return try EtcdReply(parsing: reply.body, from: name) }
            let problem = GatewayProblem(reply, hiding: configuration.credentials?.password)
            if problem.isUnavailable { throw Failover(reason: problem.summary) }
            if problem.isUnauthenticated {
                if configuration.credentials != nil && !authenticatedAgain {
                    authenticatedAgain = true
                    state.withLock { if $0.token == token { $0.token = nil } }
                    continue
                }
                throw EtcdError.authenticationFailed(endpoint: name, message: problem.message)
            }
            if problem.grpcCode == 7 { throw EtcdError.permissionDenied(endpoint: name, message: problem.message) }
            throw EtcdError.rejected(endpoint: name, httpStatus: reply.status, grpcCode: problem.grpcCode,
                                     message: problem.message)
        }
    }

    /// Gets a token for the credentials from `endpoint` and keeps it; "" when the server
    /// has authentication off.
    private func authenticate(at endpoint: URL) async throws -> String {
        guard let credentials = configuration.credentials else { return "" }
        let name = endpoint.absoluteString
        let body = EtcdRequestBody.encode(["name": credentials.name, "password": credentials.password])
        let reply = try await exchange("/v3/auth/authenticate", body, at: endpoint, token: nil)
        let token: String
        if reply.status == 200 {
            let parsed = try EtcdReply(parsing: reply.body, from: name)
            guard let text = try parsed.string("token"), !text.isEmpty, text.utf8.count <= 4096,
                  text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F })
            else { throw parsed.malformed("authenticate gave no usable token") }
            token = text
        } else {
            let problem = GatewayProblem(reply, hiding: credentials.password)
            if problem.isUnavailable { throw Failover(reason: problem.summary) }
            // etcd 3.4: "etcdserver: authentication is not enabled" (FailedPrecondition).
            guard problem.message.contains("authentication is not enabled") else {
                throw EtcdError.authenticationFailed(endpoint: name, message: problem.message)
            }
            token = ""
        }
        state.withLock { $0.token = token }
        return token
    }

    /// One HTTP exchange; transport failures and timeouts become `Failover`.
    private func exchange(_ path: String, _ body: Data, at endpoint: URL, token: String?) async throws -> HTTPReply {
        // The request's deadline ends it (and names the failure); the socket's own idle
        // timeout, a second later, is only a backstop.
        let request = makeRequest(path, body, at: endpoint, token: token, idleTimeout: configuration.requestTimeout + .seconds(1))
        let result = await UnaryExchange.perform(request, through: transport(for: endpoint),
                                                 limit: configuration.maximumReplyBytes, timeout: configuration.requestTimeout)
        switch result {
        case .success(let reply):
            return reply
        case .failure(.tooLarge):
            throw EtcdError.replyTooLarge(endpoint: endpoint.absoluteString, limit: configuration.maximumReplyBytes)
        case .failure(.cancelled):
            throw EtcdError.cancelled
        case .failure(let failure):
            if state.withLock({ $0.closed }) { throw EtcdError.cancelled }
            throw Failover(reason: failure.reason)
        }
    }

    func makeRequest(_ path: String, _ body: Data, at endpoint: URL, token: String?, idleTimeout: Duration?) -> HTTPRequest {
        var headers = ["Content-Type": "application/json"]
        if let token, !token.isEmpty { headers["Authorization"] = token }
        return HTTPRequest(url: endpoint.appendingPathComponent(String(path.dropFirst())), headers: headers, body: body,
                           connectTimeout: configuration.requestTimeout, idleTimeout: idleTimeout)
    }

    /// The current token (nil: authenticate first), for the watch.
    func currentToken() -> String? { state.withLock { $0.token } }

    /// Forgets `token` after etcd rejected it, for the watch.
    func forgetToken(_ token: String?) { state.withLock { if $0.token == token { $0.token = nil } } }

    /// Gets a token at `endpoint` when credentials are set and none is held, for the watch.
    func tokenForWatch(at endpoint: URL) async throws -> String? {
        if let token = currentToken() { return token }
        guard configuration.credentials != nil else { return nil }
        return try await authenticate(at: endpoint)
    }

    /// Makes `index` the endpoint requests try first, for the watch that connected there.
    func prefer(_ index: Int) { state.withLock { $0.preferredEndpoint = index } }

    /// Moves requests off `index` after a watch lost it, unless they moved already.
    func avoid(_ index: Int) {
        let count = configuration.endpoints.count
        state.withLock { if $0.preferredEndpoint == index { $0.preferredEndpoint = (index + 1) % count } }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    /// Passes the revisions of a watch through the same check as replies.
    func noteWatchRevision(_ revision: Int64) {
        state.withLock { $0.highestRevision = max($0.highestRevision, revision) }
    }

}

/// What one member says of itself.
public struct EtcdMemberStatus: Sendable, Equatable {
    /// This member's ID.
    public var memberID: UInt64
    /// The leader's ID, as this member knows it (0: none).
    public var leaderID: UInt64
    /// The member's revision.
    public var revision: Int64
    /// The etcd version, such as "3.4.23".
    public var version: String

    /// Whether this member is the leader.
    public var isLeader: Bool { memberID != 0 && memberID == leaderID }
}

/// A gateway's non-200 answer: `{"error": ..., "message": ..., "code": gRPC code}`, read
/// leniently, since a failing proxy may send anything.
struct GatewayProblem {
    var grpcCode: Int?
    var message: String
    var status: Int

    init(_ reply: HTTPReply, hiding secret: String?) {
        status = reply.status
        let object = (try? JSONSerialization.jsonObject(with: reply.body)) as? [String: Any]
        grpcCode = (object?["code"] as? NSNumber).map { $0.intValue }
        let text = object?["message"] as? String ?? object?["error"] as? String ?? ""
        message = sanitizedServerText(text.isEmpty ? "HTTP \(reply.status)" : text, hiding: secret)
    }

    /// Another member may answer: a 5xx, gRPC "unavailable" (14: no leader, leader
    /// changed, request timed out) or "deadline exceeded" (4).
    var isUnavailable: Bool { status >= 500 || status == 0 || grpcCode == 14 || grpcCode == 4 }

    /// The token was rejected or missing: gRPC 16, HTTP 401, or the "user name is empty"
    /// of a request without a token to a cluster with authentication on.
    var isUnauthenticated: Bool {
        grpcCode == 16 || status == 401 || message.contains("user name is empty")
    }

    var summary: String { "HTTP \(status)\(grpcCode.map { ", gRPC code \($0)" } ?? ""): \(message)" }
}
