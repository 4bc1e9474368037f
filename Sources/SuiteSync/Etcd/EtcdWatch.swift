import Foundation
import Synchronization

/// A watch of a key range: an asynchronous sequence of batches of changes, in revision
/// order, until it is cancelled or fails.
///
/// It fails with a typed `EtcdError`:
/// - `.compacted` when its start revision was compacted away (read the range again, and
///   watch from that read's revision + 1);
/// - `.watchInterrupted` when the stream ended or its endpoint died or went silent past
///   `watchIdleTimeout`; its `lastRevision` is where to resume, on any endpoint;
/// - `.watchCanceled`, `.malformedReply`, `.replyTooLarge`, `.revisionWentBackwards` for
///   what etcd should not send.
///
/// The connection is closed, and its thread ends, when the sequence ends,
/// when the iterating task is cancelled, when `cancel()` is called, or when the last
/// copy of the watch is dropped. A watch is iterated once.
public struct EtcdWatch: AsyncSequence, Sendable {
    public typealias Element = EtcdWatchBatch
    public typealias Failure = EtcdError

    /// The endpoint the watch is connected to.
    public let endpoint: URL
    /// The revision the watch started from: its first event is at or after it.
    public let startRevision: Int64

    let stream: AsyncThrowingStream<EtcdWatchBatch, any Error>
    let connection: WatchConnection

    /// Closes the watch: the sequence ends (returns nil) after what was already received.
    public func cancel() {
        connection.stop()
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: stream.makeAsyncIterator())
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncThrowingStream<EtcdWatchBatch, any Error>.AsyncIterator

        public mutating func next() async throws(EtcdError) -> EtcdWatchBatch? {
            do {
                return try await base.next()
            } catch {
                throw error as? EtcdError ?? .cancelled
            }
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(EtcdError) -> EtcdWatchBatch? {
            do {
                return try await base.next(isolation: actor)
            } catch {
                throw error as? EtcdError ?? .cancelled
            }
        }
    }
}

extension EtcdClient {
    /// Watches every key that starts with `prefix`, from `startRevision` (0: from now on),
    /// with each change's previous key-value when `previousKeyValues`.
    ///
    /// Returns once etcd has confirmed the watch, so that every change after this returns
    /// is seen. Connecting fails over like a request; once connected, the watch stays on
    /// its endpoint, and a lost endpoint ends it with `EtcdError.watchInterrupted`.
    public func watch(prefix: Data, from startRevision: Int64 = 0, previousKeyValues: Bool = true) async throws(EtcdError)
        -> EtcdWatch {
        let key = prefix.isEmpty ? Data([0]) : prefix
        return try await watch(key: key, rangeEnd: EtcdKeyRange.rangeEnd(ofPrefix: prefix), from: startRevision,
                               previousKeyValues: previousKeyValues)
    }

    /// Watches the keys from `key` up to `rangeEnd` (nil: `key` alone); see
    /// `watch(prefix:from:previousKeyValues:)`.
    public func watch(key: Data, rangeEnd: Data?, from startRevision: Int64 = 0, previousKeyValues: Bool = true)
        async throws(EtcdError) -> EtcdWatch {
        guard startRevision >= 0 else { throw .invalidConfiguration("a negative start revision") }
        var create: [String: Any] = ["key": EtcdRequestBody.base64(key), "prev_kv": previousKeyValues]
        if let rangeEnd { create["range_end"] = EtcdRequestBody.base64(rangeEnd) }
        if startRevision > 0 { create["start_revision"] = EtcdRequestBody.number(startRevision) }
        if configuration.watchIdleTimeout != nil { create["progress_notify"] = true }
        let body = EtcdRequestBody.encode(["create_request": create])

        let count = configuration.endpoints.count
        let first = configuration.endpoints.firstIndex(of: currentEndpoint) ?? 0
        var failures: [EtcdEndpointFailure] = []
        for index in (0..<count).map({ (first + $0) % count }) {
            let endpoint = configuration.endpoints[index]
            var authenticatedAgain = false
            while true {
                guard !isClosed, !Task.isCancelled else { throw .cancelled }
                let token: String?
                do {
                    token = try await tokenForWatch(at: endpoint)
                } catch let error as EtcdError {
                    throw error
                } catch {
                    let reason = (error as? EtcdClient.Failover)?.reason ?? "authentication failed"
                    failures.append(EtcdEndpointFailure(endpoint: endpoint.absoluteString, reason: reason))
                    break
                }
                let connection = WatchConnection(client: self, endpointIndex: index, startRevision: startRevision)
                let request = makeRequest("/v3/watch", body, at: endpoint, token: token,
                                          idleTimeout: configuration.watchIdleTimeout)
                switch await connection.start(request, through: transport(for: endpoint),
                                              timeout: configuration.requestTimeout) {
                case .started(let watch):
                    prefer(index)
                    return watch
                case .failover(let reason):
                    failures.append(EtcdEndpointFailure(endpoint: endpoint.absoluteString, reason: reason))
                case .unauthenticated(let message):
                    if configuration.credentials != nil && !authenticatedAgain {
                        authenticatedAgain = true
                        forgetToken(token)
                        continue
                    }
                    throw .authenticationFailed(endpoint: endpoint.absoluteString, message: message)
                case .failed(let error):
                    throw error
                }
                break
            }
        }
        throw .unavailable(failures)
    }
}

/// One watch's HTTP stream: its own connection, the lines it cuts, the checks on
/// each, and the batches it hands to the watch's sequence.
final class WatchConnection: HTTPTaskHandler, Sendable {
    enum StartOutcome: Sendable {
        case started(EtcdWatch)
        case failover(String)
        case unauthenticated(String)
        case failed(EtcdError)
    }

    private enum Phase {
        /// Waiting for the line that says the watch was created.
        case starting(CheckedContinuation<StartOutcome, Never>?)
        case streaming
        case ended
    }

    private struct State {
        var phase = Phase.starting(nil)
        var status = 0
        /// The body of a non-200 answer, up to a small limit.
        var errorBody = Data()
        var lines: LineSplitter
        var transport: (any HTTPTransport)?
        var exchange: (any HTTPExchangeHandle)?
        var lastHeaderRevision: Int64 = 0
        var lastEventRevision: Int64 = 0
        /// Every change up to here was delivered.
        var deliveredThrough: Int64 = 0
        var pendingStart: StartOutcome?
    }

    private let state: Mutex<State>
    private let endpointIndex: Int
    private let endpoint: URL
    private let startRevision: Int64
    private let limit: Int
    private let password: String?
    private let stream: AsyncThrowingStream<EtcdWatchBatch, any Error>
    private let continuation: AsyncThrowingStream<EtcdWatchBatch, any Error>.Continuation
    private weak let client: EtcdClient?

    init(client: EtcdClient, endpointIndex: Int, startRevision: Int64) {
        self.client = client
        self.endpointIndex = endpointIndex
        endpoint = client.configuration.endpoints[endpointIndex]
        self.startRevision = startRevision
        limit = client.configuration.maximumReplyBytes
        password = client.configuration.credentials?.password
        state = Mutex(State(lines: LineSplitter(maximumLineBytes: limit),
                            deliveredThrough: max(0, startRevision - 1)))
        // Unbounded: dropping a batch would lose changes; each line is capped instead.
        (stream, continuation) = AsyncThrowingStream.makeStream(of: EtcdWatchBatch.self, bufferingPolicy: .unbounded)
    }

    private var name: String { endpoint.absoluteString }

    /// Connects and waits for etcd's confirmation, an answer that refuses the watch, or
    /// the deadline.
    func start(_ request: HTTPRequest, through transport: any HTTPTransport, timeout: Duration) async -> StartOutcome {
        state.withLock { $0.transport = transport }
        continuation.onTermination = { [weak self] _ in self?.stop() }
        let deadline = DispatchWorkItem { [weak self] in
            self?.settleStart(.failover("no reply in time"))
        }
        defer { deadline.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { waiting in
                let early = state.withLock { state -> StartOutcome? in
                    if let pending = state.pendingStart { return pending }
                    state.phase = .starting(waiting)
                    return nil
                }
                if let early {
                    waiting.resume(returning: early)
                    return
                }
                let exchange = transport.start(request, handler: self)
                let ended = state.withLock { state -> Bool in
                    if case .ended = state.phase { return true }
                    state.exchange = exchange
                    return false
                }
                if ended { exchange.cancel() }
                DispatchQueue.global().asyncAfter(deadline: .now() + timeout.timeInterval, execute: deadline)
            }
        } onCancel: {
            settleStart(.failed(.cancelled))
        }
    }

    /// Ends the start phase with `outcome`; anything but a start stops the connection.
    private func settleStart(_ outcome: StartOutcome) {
        let waiting = state.withLock { state -> CheckedContinuation<StartOutcome, Never>?? in
            guard case .starting(let waiting) = state.phase else { return nil }
            if waiting == nil { state.pendingStart = outcome }
            state.phase = if case .started = outcome { .streaming } else { .ended }
            return .some(waiting)
        }
        guard let waiting else { return }
        if case .started = outcome {} else {
            continuation.finish()
            closeConnection()
        }
        waiting?.resume(returning: outcome)
    }

    /// Closes the connection; the sequence ends after what it holds.
    func stop() {
        state.withLock { $0.phase = .ended }
        continuation.finish()
        closeConnection()
    }

    private func closeConnection() {
        let (transport, exchange) = state.withLock { state in
            defer {
                state.transport = nil
                state.exchange = nil
            }
            return (state.transport, state.exchange)
        }
        exchange?.cancel()
        transport?.close()
    }

    /// Ends the stream with `error`, once.
    private func fail(_ error: EtcdError) {
        let streaming = state.withLock { state -> Bool in
            guard case .streaming = state.phase else { return false }
            state.phase = .ended
            return true
        }
        guard streaming else { return }
        if case .watchInterrupted = error { client?.avoid(endpointIndex) }
        continuation.finish(throwing: error)
        closeConnection()
    }

    // MARK: HTTPTaskHandler

    func received(status: Int) -> Bool {
        state.withLock { $0.status = status }
        return true
    }

    func received(data: Data) -> Bool {
        enum Next {
            case lines([Data])
            case errorBody
            case stop
            case failure(EtcdError)
        }
        let next = state.withLock { state -> Next in
            if case .ended = state.phase { return .stop }
            guard state.status == 200 else {
                if state.errorBody.count < 65536 { state.errorBody.append(data.prefix(65536 - state.errorBody.count)) }
                return .errorBody
            }
            do {
                return .lines(try state.lines.append(data))
            } catch {
                return .failure(.replyTooLarge(endpoint: name, limit: limit))
            }
        }
        switch next {
        case .stop:
            return false
        case .errorBody:
            return true
        case .failure(let error):
            settleStart(.failed(error))
            fail(error)
            return false
        case .lines(let lines):
            for line in lines {
                if !handle(line) { return false }
            }
            return true
        }
    }

    func completed(error: (any Error)?) {
        let (status, body, unfinished) = state.withLock { ($0.status, $0.errorBody, $0.lines.unfinishedByteCount) }
        if status != 200 && status != 0 {
            let problem = GatewayProblem(HTTPReply(status: status, body: body), hiding: password)
            if problem.isUnavailable {
                settleStart(.failover(problem.summary))
            } else if problem.isUnauthenticated {
                settleStart(.unauthenticated(problem.message))
            } else {
                settleStart(.failed(.rejected(endpoint: name, httpStatus: status, grpcCode: problem.grpcCode,
                                              message: problem.message)))
            }
            return
        }
        let reason = if let error { transportFailureText(error) }
            else if unfinished > 0 { "the stream ended inside a line" } else { "the stream ended" }
        settleStart(.failover(reason))
        let last = state.withLock { $0.deliveredThrough }
        fail(.watchInterrupted(endpoint: name, lastRevision: last, reason: reason))
    }

    // MARK: Lines

    /// Handles one line of the stream; false when it ended the watch.
    private func handle(_ line: Data) -> Bool {
        do {
            let object = try EtcdReply(parsing: line, from: name)
            if let problem = try object.object("error") {
                // The gateway's in-stream error: {"error":{"grpc_code":14,"http_code":503,"message":...}}.
                let message = sanitizedServerText(try problem.string("message") ?? "an error", hiding: password)
                throw EtcdError.watchInterrupted(endpoint: name, lastRevision: state.withLock { $0.deliveredThrough },
                                                 reason: message)
            }
            guard let result = try object.object("result") else { throw object.malformed("no result") }
            let starting = state.withLock { if case .starting = $0.phase { true } else { false } }
            if try result.flag("canceled") {
                let compactRevision = try result.count("compact_revision")
                let reason = sanitizedServerText(try result.string("cancel_reason") ?? "", hiding: password)
                if compactRevision > 0 { throw EtcdError.compacted(endpoint: name, compactRevision: compactRevision) }
                if starting && (reason.contains("Unauthenticated") || reason.contains("user name is empty")) {
                    settleStart(.unauthenticated(reason))
                    return false
                }
                throw EtcdError.watchCanceled(endpoint: name, reason: reason.isEmpty ? "no reason given" : reason)
            }
            if starting {
                guard try result.flag("created") else { throw result.malformed("the first line did not create the watch") }
                let revision = try result.headerRevision()
                state.withLock {
                    $0.lastHeaderRevision = revision
                    if startRevision == 0 { $0.deliveredThrough = revision }
                }
                client?.noteWatchRevision(revision)
                settleStart(.started(EtcdWatch(endpoint: endpoint, startRevision: startRevision, stream: stream,
                                               connection: self)))
                return true
            }
            guard try !result.flag("created") else { throw result.malformed("a second created line") }
            let batch = try batch(of: result)
            client?.noteWatchRevision(batch.revision)
            continuation.yield(batch)
            return true
        } catch {
            let failure = error as? EtcdError ?? .malformedReply(endpoint: name, reason: "unreadable line")
            // An in-stream error before the watch was created (no leader, say): another
            // member may do better.
            if case .watchInterrupted(_, _, let reason) = failure { settleStart(.failover(reason)) }
            settleStart(.failed(failure))
            fail(failure)
            return false
        }
    }

    /// The batch of one result line, checked: revisions never go backwards, and each
    /// event lies between the start revision and the header's revision.
    private func batch(of result: EtcdReply) throws(EtcdError) -> EtcdWatchBatch {
        let revision = try result.headerRevision()
        var events: [EtcdWatchEvent] = []
        for entry in try result.objects("events") {
            let kind: EtcdWatchEvent.Kind
            switch try entry.string("type") {
            case nil, "PUT": kind = .put
            case "DELETE": kind = .delete
            default: throw entry.malformed("an event of unknown type")
            }
            guard let keyValue = try entry.object("kv") else { throw entry.malformed("an event without kv") }
            let previous = try entry.object("prev_kv")
            events.append(EtcdWatchEvent(kind: kind, keyValue: try keyValue.keyValue(), previous: try previous?.keyValue()))
        }
        return try state.withLock { state throws(EtcdError) -> EtcdWatchBatch in
            guard revision >= state.lastHeaderRevision else {
                throw .revisionWentBackwards(endpoint: name, known: state.lastHeaderRevision, received: revision)
            }
            var lastEvent = state.lastEventRevision
            for event in events {
                let eventRevision = event.keyValue.modRevision
                guard eventRevision >= lastEvent, eventRevision >= startRevision else {
                    throw .revisionWentBackwards(endpoint: name, known: max(lastEvent, startRevision), received: eventRevision)
                }
                guard eventRevision <= revision else {
                    throw .malformedReply(endpoint: name, reason: "an event after its header's revision")
                }
                lastEvent = eventRevision
            }
            state.lastHeaderRevision = revision
            state.lastEventRevision = lastEvent
            state.deliveredThrough = events.isEmpty ? max(state.deliveredThrough, revision) : lastEvent
            return EtcdWatchBatch(revision: revision, events: events, deliveredThrough: state.deliveredThrough)
        }
    }
}
