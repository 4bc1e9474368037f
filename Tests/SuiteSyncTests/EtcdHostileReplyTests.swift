import Foundation
import SuiteSync
import Testing
import Synchronization
import TestSupport

/// Replies no etcd sends, from a fake server on loopback: each is a typed error, in
/// bounded time, and never a crash.
@Suite("The etcd client treats every reply as hostile input", .onThreadsOfItsOwn)
struct EtcdHostileReplyTests {
    static let header = #"{"cluster_id":"1","member_id":"2","revision":"7","raft_term":"2"}"#

    /// A client of `server` with short deadlines and a 1 MiB cap.
    func client(of servers: FakeHTTPServer..., credentials: EtcdCredentials? = nil,
                requestTimeout: Duration = .milliseconds(800)) throws -> EtcdClient {
        try EtcdClient(configuration: EtcdConfiguration(endpoints: servers.map(\.url), credentials: credentials,
                                                        requestTimeout: requestTimeout, maximumReplyBytes: 1 << 20))
    }

    /// The error of one `get` against a server that answers `steps`.
    func errorOfGet(answering steps: [FakeHTTPServer.Step], requestTimeout: Duration = .milliseconds(800)) async throws -> EtcdError? {
        let server = try FakeHTTPServer { _ in steps }
        let client = try client(of: server, requestTimeout: requestTimeout)
        return try await within(.seconds(30), "an answer") { await etcdError { _ = try await client.get(bytes("/k")) } }
    }

    func isMalformed(_ error: EtcdError?) -> Bool {
        if case .malformedReply = error { true } else { false }
    }

    @Test(arguments: [
        "this is not JSON",
        "[1, 2, 3]",
        "{\"kvs\": []}",
        "{\"header\": {\"revision\": \"seven\"}}",
        "{\"header\": {\"revision\": \"-3\"}}",
        "{\"header\": {\"revision\": 7.5}}",
        "{\"header\": {\"revision\": true}}",
        "{\"header\": {\"revision\": \"7\"}, \"kvs\": [{\"key\": \"!!not base64!!\", \"mod_revision\": \"7\"}]}",
        "{\"header\": {\"revision\": \"7\"}, \"kvs\": [{\"key\": \"L2s=\", \"value\": 12, \"mod_revision\": \"7\"}]}",
        "{\"header\": {\"revision\": \"7\"}, \"kvs\": [{\"value\": \"eA==\", \"mod_revision\": \"7\"}]}",
        "{\"header\": {\"revision\": \"7\"}, \"kvs\": [{\"key\": \"L2s=\"}]}",
        "{\"header\": {\"revision\": \"7\"}, \"kvs\": {\"key\": \"L2s=\"}}",
        "{\"header\": {\"revision\": \"7\"}, \"more\": \"yes\"}",
        "{\"header\": {\"revision\": \"99999999999999999999999\"}}",
        "{\"header\": " + String(repeating: "[", count: 100_000),
    ])
    func aMalformedReplyIsAMalformedReplyError(body: String) async throws {
        let error = try await errorOfGet(answering: [FakeHTTPServer.reply(body)])
        #expect(isMalformed(error), "\(String(describing: error))")
    }

    @Test func numbersAreReadAsJSONStringsAndAsJSONNumbers() async throws {
        let server = try FakeHTTPServer { _ in
            [FakeHTTPServer.reply(#"{"header":{"revision":9},"kvs":[{"key":"L2s=","value":"eA==","create_revision":"3","mod_revision":9,"version":2}]}"#)]
        }
        let read = try await client(of: server).get(bytes("/k"))
        #expect(read == EtcdRangeResult(keyValues: [EtcdKeyValue(key: bytes("/k"), value: bytes("x"), createRevision: 3,
                                                                 modRevision: 9, version: 2)], revision: 9, more: false))
    }

    @Test func aHugeReplyIsCutAtTheLimit() async throws {
        let huge = Data(repeating: UInt8(ascii: "a"), count: 3 << 20)
        let error = try await errorOfGet(answering: [FakeHTTPServer.reply(huge)])
        #expect(error == .replyTooLarge(endpoint: try #require(error.flatMap(endpoint)), limit: 1 << 20))
        // Without a length, as a stream that never ends, too.
        let endless = try await errorOfGet(answering: [FakeHTTPServer.streamHead, FakeHTTPServer.chunk(String(repeating: "b", count: 2 << 20)), .hang])
        guard case .replyTooLarge = endless else {
            Issue.record("expected .replyTooLarge, got \(String(describing: endless))")
            return
        }
    }

    @Test func aSilentOrTruncatedReplyFailsOverAndEndsAsUnavailableInTime() async throws {
        // The reasons show which guard ended each: a deadline for the silent ones (wall
        // time is no measure here: other tests may hold the threads). That is the
        // client's own, unless the threads were held so long that the socket's idle
        // timeout, one second later, came first: either is a deadline.
        let deadlines: Set = ["no reply in time", "no data in time"]
        // The replies that end at once get a deadline that threads held by other
        // tests cannot outlast (it once ended a cut reply first, under a full run).
        let shortDeadline = Duration.milliseconds(800), longDeadline = Duration.seconds(20)
        for (steps, reasons, deadline): ([FakeHTTPServer.Step], Set<String>, Duration) in [
            ([.hang], deadlines, shortDeadline),
            ([.send(Data("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"header\":".utf8))], ["connection lost"], longDeadline),
            ([.send(Data("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"header\":".utf8)), .hang], deadlines, shortDeadline),
            ([.send(Data("garbage that is not HTTP\r\n\r\n".utf8))], ["not an HTTP reply"], longDeadline),
            ([FakeHTTPServer.reply(status: 503, "{\"error\":\"no leader\",\"code\":14}")], ["HTTP 503, gRPC code 14: no leader"], longDeadline),
        ] {
            let error = try await errorOfGet(answering: steps, requestTimeout: deadline)
            guard case .unavailable(let failures) = error else {
                Issue.record("expected .unavailable, got \(String(describing: error))")
                continue
            }
            #expect(failures.count == 1 && failures.allSatisfy { reasons.contains($0.reason) },
                    "\(failures.map(\.reason)) is not one of \(reasons.sorted())")
        }
    }

    @Test func aRefusedConnectionAndAFailingMemberFailOverToTheNextEndpoint() async throws {
        let refused = try FakeHTTPServer { _ in [] }
        refused.stop()  // nothing listens on its port now
        let failing = try FakeHTTPServer { _ in [FakeHTTPServer.reply(status: 503, "{\"error\":\"etcdserver: leader changed\",\"code\":14}")] }
        let working = try FakeHTTPServer { _ in [FakeHTTPServer.reply("{\"header\":\(Self.header)}")] }
        let client = try client(of: refused, failing, working)
        #expect(try await client.put(bytes("/k"), value: bytes("v")) == 7)
        #expect(client.currentEndpoint == working.url)
        // The client remembers the endpoint that worked: the next request goes there first.
        try await client.put(bytes("/k"), value: bytes("v"))
        #expect(failing.requests.count == 1 && working.requests.count == 2)
    }

    @Test func aRequestRefusedByEtcdIsNotRetriedElsewhere() async throws {
        let refusing = try FakeHTTPServer { _ in
            [FakeHTTPServer.reply(status: 400, #"{"error":"etcdserver: key is not provided","message":"etcdserver: key is not provided","code":3}"#)]
        }
        let other = try FakeHTTPServer { _ in [FakeHTTPServer.reply("{\"header\":\(Self.header)}")] }
        let error = await etcdError { _ = try await client(of: refusing, other).get(bytes("/k")) }
        #expect(error == .rejected(endpoint: refusing.url.absoluteString, httpStatus: 400, grpcCode: 3,
                                   message: "etcdserver: key is not provided"))
        #expect(other.requests.isEmpty)
    }

    @Test func aRevisionBelowOneAlreadySeenIsAnError() async throws {
        let revisions = RevisionScript([100, 5])
        let server = try FakeHTTPServer { _ in
            [FakeHTTPServer.reply("{\"header\":{\"revision\":\"\(revisions.next())\"}}")]
        }
        let client = try client(of: server)
        #expect(try await client.put(bytes("/k"), value: bytes("v")) == 100)
        let error = await etcdError { _ = try await client.put(bytes("/k"), value: bytes("v")) }
        #expect(error == .revisionWentBackwards(endpoint: server.url.absoluteString, known: 100, received: 5))
    }

    @Test func aRejectedTokenIsRenewedOnceAndAnEchoedPasswordIsHidden() async throws {
        let password = "hunter2-\(UInt32.random(in: 0...UInt32.max))"
        let tokens = RevisionScript([1, 2, 3])
        let server = try FakeHTTPServer { request in
            if request.path == "/v3/auth/authenticate" {
                return [FakeHTTPServer.reply("{\"header\":\(Self.header),\"token\":\"token\(tokens.next())\"}")]
            }
            // The first token is "expired"; the second works.
            if request.headers["authorization"] == "token1" {
                return [FakeHTTPServer.reply(status: 401, #"{"error":"etcdserver: invalid auth token","code":16}"#)]
            }
            return [FakeHTTPServer.reply("{\"header\":\(Self.header)}")]
        }
        let client = try client(of: server, credentials: EtcdCredentials(name: "root", password: password))
        #expect(try await client.put(bytes("/k"), value: bytes("v")) == 7)
        #expect(server.requests.map(\.path) == ["/v3/auth/authenticate", "/v3/kv/put", "/v3/auth/authenticate", "/v3/kv/put"])
        #expect(server.requests.allSatisfy { $0.path == "/v3/auth/authenticate" || !String(decoding: $0.body, as: UTF8.self).contains(password) })

        // A hostile server that quotes the password back never gets it into an error.
        let echoing = try FakeHTTPServer { request in
            [FakeHTTPServer.reply(status: 400, "{\"error\":\"bad password \(password) for root\",\"code\":3}")]
        }
        let error = await etcdError {
            _ = try await self.client(of: echoing, credentials: EtcdCredentials(name: "root", password: password)).get(bytes("/k"))
        }
        guard case .authenticationFailed = error else {
            Issue.record("expected .authenticationFailed, got \(String(describing: error))")
            return
        }
        #expect(!String(describing: error).contains(password))
    }

    // MARK: Watches

    /// A watch on a server that streams `chunks` after the created line, and its outcome:
    /// the events delivered and the error that ended it.
    func watchOutcome(_ chunks: [FakeHTTPServer.Step], from startRevision: Int64 = 0)
        async throws -> (events: [EtcdWatchEvent], error: EtcdError?) {
        let server = try FakeHTTPServer { _ in
            [FakeHTTPServer.streamHead,
             FakeHTTPServer.chunk("{\"result\":{\"header\":\(Self.header),\"created\":true}}\n")] + chunks
        }
        let client = try client(of: server)
        let watch = try await client.watch(prefix: bytes("/w/"), from: startRevision)
        return try await within(.seconds(30), "the end of the watch") {
            var events: [EtcdWatchEvent] = []
            do {
                for try await batch in watch { events += batch.events }
                return (events, nil)
            } catch {
                return (events, error as? EtcdError)
            }
        }
    }

    static func eventLine(_ revision: Int, key: String = "L3cvYQ==", type: String? = nil) -> String {
        let kind = type.map { "\"type\":\"\($0)\"," } ?? ""
        return "{\"result\":{\"header\":{\"revision\":\"\(revision)\"},\"events\":[{\(kind)\"kv\":{\"key\":\"\(key)\",\"value\":\"eA==\",\"mod_revision\":\"\(revision)\",\"create_revision\":\"8\",\"version\":\"1\"}}]}}\n"
    }

    @Test func linesSplitAcrossChunksOrJoinedInOneAreEachOneBatch() async throws {
        let two = Self.eventLine(8) + Self.eventLine(9, type: "DELETE")
        let third = Self.eventLine(10)
        let middle = third.index(third.startIndex, offsetBy: 25)
        let outcome = try await watchOutcome([
            FakeHTTPServer.chunk(two), FakeHTTPServer.chunk(String(third[..<middle])), .pause(.milliseconds(50)),
            FakeHTTPServer.chunk(String(third[middle...])), FakeHTTPServer.streamEnd,
        ])
        #expect(outcome.events.map(\.keyValue.modRevision) == [8, 9, 10])
        #expect(outcome.events.map(\.kind) == [.put, .delete, .put])
        guard case .watchInterrupted(_, let lastRevision, _) = outcome.error else {
            Issue.record("the end of the stream was not .watchInterrupted: \(String(describing: outcome.error))")
            return
        }
        #expect(lastRevision == 10)
    }

    @Test func aStreamThatEndsInsideALineOrWhoseServerDiesIsInterrupted() async throws {
        for ending: [FakeHTTPServer.Step] in [
            [FakeHTTPServer.chunk(Self.eventLine(8)), FakeHTTPServer.chunk("{\"result\":{\"hea")],
            [FakeHTTPServer.chunk(Self.eventLine(8)), .send(Data("5\r\nab".utf8))],
        ] {
            let outcome = try await watchOutcome(ending)
            #expect(outcome.events.map(\.keyValue.modRevision) == [8])
            guard case .watchInterrupted(_, 8, _) = outcome.error else {
                Issue.record("expected .watchInterrupted after 8, got \(String(describing: outcome.error))")
                continue
            }
        }
    }

    @Test(arguments: [
        ("{\"result\":{\"header\":{\"revision\":\"9\"},\"canceled\":true,\"compact_revision\":\"42\"}}\n", "compacted"),
        ("{\"result\":{\"header\":{\"revision\":\"9\"},\"canceled\":true,\"cancel_reason\":\"mvcc: required revision is a future revision\"}}\n", "canceled"),
        ("{\"error\":{\"grpc_code\":14,\"http_code\":503,\"message\":\"etcdserver: no leader\"}}\n", "interrupted"),
        ("not json\n", "malformed"),
        ("{\"result\":{\"header\":{\"revision\":\"9\"},\"events\":[{\"type\":\"EXPLODE\",\"kv\":{\"key\":\"L3cvYQ==\",\"mod_revision\":\"9\"}}]}}\n", "malformed"),
        ("{\"result\":{\"header\":{\"revision\":\"9\"},\"events\":[{\"kv\":{\"key\":\"%%%\",\"mod_revision\":\"9\"}}]}}\n", "malformed"),
        ("{\"result\":{\"header\":{\"revision\":\"9\"},\"events\":[{\"kv\":{\"key\":\"L3cvYQ==\",\"mod_revision\":\"12\"}}]}}\n", "malformed"),
        (eventLine(6), "backwards"),
        ("{\"result\":{\"header\":{\"revision\":\"3\"}}}\n", "backwards"),
        ("2 MiB without a line end", "tooLarge"),
    ])
    func aBadLineEndsTheWatchWithItsTypedError(line: String, expected: String) async throws {
        let line = expected == "tooLarge" ? String(repeating: "x", count: 2 << 20) : line
        let outcome = try await watchOutcome([FakeHTTPServer.chunk(Self.eventLine(8)), FakeHTTPServer.chunk(line), .hang], from: 5)
        #expect(outcome.events.map(\.keyValue.modRevision) == [8])
        let kind = switch outcome.error {
        case .compacted(_, 42): "compacted"
        case .watchCanceled: "canceled"
        case .watchInterrupted(_, 8, _): "interrupted"
        case .malformedReply: "malformed"
        case .revisionWentBackwards: "backwards"
        case .replyTooLarge: "tooLarge"
        default: "\(String(describing: outcome.error))"
        }
        #expect(kind == expected)
    }

    @Test func aWatchThatIsNeverCreatedFailsInTimeAndACancelledOneEnds() async throws {
        let silent = try FakeHTTPServer { _ in [FakeHTTPServer.streamHead, .hang] }
        let error = try await within(.seconds(30), "the watch's failure") {
            await etcdError { _ = try await self.client(of: silent).watch(prefix: bytes("/w/")) }
        }
        guard case .unavailable(let failures) = error else {
            Issue.record("expected .unavailable, got \(String(describing: error))")
            return
        }
        #expect(failures.map(\.reason) == ["no reply in time"])

        // A watch that streams nothing ends when its task is cancelled.
        let quiet = try FakeHTTPServer { _ in
            [FakeHTTPServer.streamHead, FakeHTTPServer.chunk("{\"result\":{\"header\":\(Self.header),\"created\":true}}\n"), .hang]
        }
        let watch = try await client(of: quiet).watch(prefix: bytes("/w/"))
        let iteration = Task(executorPreference: ThreadsOfItsOwnExecutor.shared) { () -> Bool in
            for try await _ in watch {}
            return true
        }
        iteration.cancel()
        #expect(try await within(.seconds(30), "the end of a cancelled watch") { try await iteration.value })
    }
}

/// Answers from a list, one per call, the last one again when the list runs out.
final class RevisionScript: Sendable {
    private let values: Mutex<[Int]>

    init(_ values: [Int]) {
        self.values = Mutex(values)
    }

    func next() -> Int {
        values.withLock { $0.count > 1 ? $0.removeFirst() : $0[0] }
    }
}

/// The endpoint an error names, when it names one.
func endpoint(of error: EtcdError) -> String? {
    switch error {
    case .replyTooLarge(let endpoint, _), .malformedReply(let endpoint, _), .rejected(let endpoint, _, _, _),
         .authenticationFailed(let endpoint, _):
        endpoint
    default:
        nil
    }
}
