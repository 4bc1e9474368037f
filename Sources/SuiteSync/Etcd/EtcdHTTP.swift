import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// Receives one URLSession task's callbacks. Returning false from a data callback
/// cancels the task.
protocol HTTPTaskHandler: AnyObject, Sendable {
    func received(response: URLResponse) -> Bool
    func received(data: Data) -> Bool
    func completed(error: (any Error)?)
}

/// A URLSession's delegate that hands each task's callbacks to that task's handler.
/// URLSession keeps its delegate until it is invalidated; the handlers are dropped as
/// their tasks complete, so nothing outlives its task.
final class HTTPTaskRouter: NSObject, URLSessionDataDelegate, Sendable {
    private let handlers = Mutex<[Int: any HTTPTaskHandler]>([:])

    func register(_ handler: any HTTPTaskHandler, for task: URLSessionTask) {
        handlers.withLock { $0[task.taskIdentifier] = handler }
    }

    private func handler(of task: URLSessionTask) -> (any HTTPTaskHandler)? {
        handlers.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        let proceed = handler(of: dataTask)?.received(response: response) ?? false
        completionHandler(proceed ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if handler(of: dataTask)?.received(data: data) == false { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let handler = handlers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        handler?.completed(error: error)
    }
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

/// A short text for a transport error: URLSession's code, never its full description
/// (which may quote the URL's query or a body).
func transportFailureText(_ error: any Error) -> String {
    guard let urlError = error as? URLError else { return "connection failed" }
    switch urlError.code {
    case .cannotConnectToHost: return "connection refused"
    case .networkConnectionLost: return "connection lost"
    case .timedOut: return "timed out"
    case .cannotFindHost, .dnsLookupFailed: return "host not found"
    case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
         .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected:
        return "TLS failed (URLError \(urlError.code.rawValue)); is the CA trusted? see EtcdTrust"
    case .badServerResponse: return "bad HTTP response"
    default: return "URLError \(urlError.code.rawValue)"
    }
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

    /// Sends `request` through `session` and waits for its reply, the deadline, or the
    /// calling task's cancellation, whichever comes first.
    static func perform(_ request: URLRequest, in session: URLSession, router: HTTPTaskRouter, limit: Int,
                        timeout: Duration) async -> Result<HTTPReply, HTTPAttemptFailure> {
        let exchange = UnaryExchange(limit: limit)
        let task = session.dataTask(with: request)
        router.register(exchange, for: task)
        let deadline = DispatchWorkItem { [weak exchange] in
            exchange?.finish(.failure(.timedOut))
            task.cancel()
        }
        defer { deadline.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                exchange.start(continuation)
                task.resume()
                DispatchQueue.global().asyncAfter(deadline: .now() + timeout.timeInterval, execute: deadline)
            }
        } onCancel: {
            exchange.finish(.failure(.cancelled))
            task.cancel()
        }
    }

    private func start(_ continuation: CheckedContinuation<Result<HTTPReply, HTTPAttemptFailure>, Never>) {
        let earlier: Result<HTTPReply, HTTPAttemptFailure>? = state.withLock {
            if let outcome = $0.outcome { return outcome }
            $0.continuation = continuation
            return nil
        }
        // Cancelled before it started: answer at once.
        if let earlier { continuation.resume(returning: earlier) }
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

    func received(response: URLResponse) -> Bool {
        state.withLock { $0.status = (response as? HTTPURLResponse)?.statusCode ?? 0 }
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

extension Duration {
    /// The duration in seconds, as Foundation and Dispatch take it.
    var timeInterval: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
