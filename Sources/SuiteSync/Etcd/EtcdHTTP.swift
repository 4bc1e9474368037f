import Foundation
import Synchronization

/// One HTTP request, as both transports take it: always a POST of a JSON body.
struct HTTPRequest: Sendable {
    /// The endpoint with the path.
    var url: URL
    var headers: [String: String]
    var body: Data
    /// How long connecting may take.
    var connectTimeout: Duration
    /// How long the reply may stay silent; nil: forever (a watch without an idle timeout).
    var idleTimeout: Duration?
}

/// Receives one exchange's reply as it arrives. Returning false stops the exchange.
protocol HTTPTaskHandler: AnyObject, Sendable {
    func received(status: Int) -> Bool
    func received(data: Data) -> Bool
    /// Called once, last; `error` is nil when the whole reply was read.
    func completed(error: (any Error)?)
}

/// An exchange under way.
protocol HTTPExchangeHandle: Sendable {
    /// Stops the exchange; its handler's `completed` follows with an error.
    func cancel()
}

/// A way to make HTTP exchanges (`SocketTransport`; a seam for others).
protocol HTTPTransport: Sendable {
    func start(_ request: HTTPRequest, handler: any HTTPTaskHandler) -> any HTTPExchangeHandle
    /// Cancels every exchange and releases what the transport holds.
    func close()
}

/// What one HTTP exchange with one endpoint gave: a status and a body.
struct HTTPReply: Sendable {
    var status: Int
    var body: Data
}

/// Why one HTTP exchange with one endpoint gave no reply.
enum HTTPAttemptFailure: Error, Sendable, Equatable {
    /// No connection, or it broke: the text says how (never with a body in it).
    case transport(String)
    /// No complete reply within the deadline.
    case timedOut
    /// The reply was longer than the limit.
    case tooLarge
    /// The calling task was cancelled.
    case cancelled

    /// What to show of it in an `EtcdEndpointFailure`.
    var reason: String {
        switch self {
        case .transport(let text): text
        case .timedOut: "no reply in time"
        case .tooLarge: "reply too large"
        case .cancelled: "cancelled"
        }
    }
}

/// A short text for a transport error, never with a body in it.
func transportFailureText(_ error: any Error) -> String {
    (error as? SocketFailure)?.text ?? "connection failed"
}

/// One request and its whole reply, read up to a limit, with a deadline.
final class UnaryExchange: HTTPTaskHandler, Sendable {
    private struct State {
        var status = 0
        var body = Data()
        var continuation: CheckedContinuation<Result<HTTPReply, HTTPAttemptFailure>, Never>?
        var outcome: Result<HTTPReply, HTTPAttemptFailure>?
    }

    private let state = Mutex(State())
    private let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Sends `request` through `transport` and waits for its reply, the deadline, or the
    /// calling task's cancellation, whichever comes first.
    static func perform(_ request: HTTPRequest, through transport: any HTTPTransport, limit: Int,
                        timeout: Duration) async -> Result<HTTPReply, HTTPAttemptFailure> {
        let exchange = UnaryExchange(limit: limit)
        let handle = HandleBox()
        let deadline = DispatchWorkItem { [weak exchange] in
            exchange?.finish(.failure(.timedOut))
            handle.cancel()
        }
        defer { deadline.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                guard exchange.start(continuation) else { return }
                handle.set(transport.start(request, handler: exchange))
                DispatchQueue.global().asyncAfter(deadline: .now() + timeout.timeInterval, execute: deadline)
            }
        } onCancel: {
            exchange.finish(.failure(.cancelled))
            handle.cancel()
        }
    }

    /// Keeps the continuation; false (having answered it) when the exchange was settled
    /// before it started, by a cancel.
    private func start(_ continuation: CheckedContinuation<Result<HTTPReply, HTTPAttemptFailure>, Never>) -> Bool {
        let earlier: Result<HTTPReply, HTTPAttemptFailure>? = state.withLock {
            if let outcome = $0.outcome { return outcome }
            $0.continuation = continuation
            return nil
        }
        if let earlier { continuation.resume(returning: earlier) }
        return earlier == nil
    }

    /// Settles the exchange; only the first outcome counts.
    private func finish(_ outcome: Result<HTTPReply, HTTPAttemptFailure>) {
        let continuation = state.withLock { state -> CheckedContinuation<Result<HTTPReply, HTTPAttemptFailure>, Never>? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            state.body = Data()
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: outcome)
    }

    func received(status: Int) -> Bool {
        state.withLock { $0.status = status }
        return true
    }

    func received(data: Data) -> Bool {
        let fits = state.withLock { state -> Bool in
            guard state.outcome == nil else { return false }
            guard state.body.count + data.count <= limit else { return false }
            state.body.append(data)
            return true
        }
        if !fits { finish(.failure(.tooLarge)) }
        return fits
    }

    func completed(error: (any Error)?) {
        if let error {
            finish(.failure(.transport(transportFailureText(error))))
            return
        }
        let reply = state.withLock { HTTPReply(status: $0.status, body: $0.body) }
        finish(.success(reply))
    }
}

/// The handle of an exchange, set once it started; a cancel before that is kept and
/// applied when it is set.
final class HandleBox: Sendable {
    private let state = Mutex<(handle: (any HTTPExchangeHandle)?, cancelled: Bool)>((nil, false))

    func set(_ handle: any HTTPExchangeHandle) {
        let cancelled = state.withLock { state in
            state.handle = handle
            return state.cancelled
        }
        if cancelled { handle.cancel() }
    }

    func cancel() {
        let handle = state.withLock { state in
            state.cancelled = true
            return state.handle
        }
        handle?.cancel()
    }
}

extension Duration {
    /// The duration in seconds, as Foundation and Dispatch take it.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
