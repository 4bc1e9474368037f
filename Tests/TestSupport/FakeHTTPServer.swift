import Foundation
import Glibc
import Synchronization

/// A tiny HTTP server on a loopback port, for replies no real server sends: garbage,
/// huge or truncated bodies, streams that stop mid-line, connections that hang.
///
/// Each connection reads one request, asks `respond` what to do, does it step by step,
/// and closes. `stop()` (also at deinit) ends every connection and joins every thread.
public final class FakeHTTPServer: Sendable {
    /// What the server does on a connection, in order.
    public enum Step: Sendable {
        /// Writes these bytes.
        case send(Data)
        /// Waits, then goes on.
        case pause(Duration)
        /// Keeps the connection open, sending nothing, until the server stops.
        case hang
    }

    /// The request as the server read it.
    public struct Request: Sendable {
        public var path: String
        public var headers: [String: String]
        public var body: Data
    }

    public let url: URL
    private let shared: Shared

    /// What the threads share with the server; the threads hold only this, so that the
    /// server's deinit (which stops them) runs when the test lets go of it.
    private final class Shared: Sendable {
        let listener: CInt
        let state = Mutex(State())
        let finished = NSCondition()

        init(listener: CInt) {
            self.listener = listener
        }

        var stopping: Bool { state.withLock { $0.stopping } }
    }

    private struct State {
        var stopping = false
        var stopped = false
        var connections: Set<CInt> = []
        var threads = 0
        var requests: [Request] = []
    }

    /// Starts listening on 127.0.0.1 on a free port.
    public init(respond: @escaping @Sendable (Request) -> [Step]) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw EtcdClusterError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0, listen(descriptor, 16) == 0 else {
            close(descriptor)
            throw EtcdClusterError("bind/listen: errno \(errno)")
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        url = URL(string: "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))")!
        let shared = Shared(listener: descriptor)
        self.shared = shared
        Self.startThread(shared) { Self.acceptLoop(shared, respond) }
    }

    deinit {
        stop()
    }

    /// Every request read so far.
    public var requests: [Request] { shared.state.withLock { $0.requests } }

    /// Ends every connection, stops listening, and waits for every thread.
    public func stop() {
        let open = shared.state.withLock { state -> Set<CInt>? in
            guard !state.stopping else { return nil }
            state.stopping = true
            return state.connections
        }
        guard let open else { return }
        for connection in open { shutdown(connection, Int32(SHUT_RDWR)) }
        shared.finished.lock()
        while shared.state.withLock({ $0.threads }) > 0 { _ = shared.finished.wait(until: Date().addingTimeInterval(0.1)) }
        shared.finished.unlock()
        close(shared.listener)
    }

    private static func startThread(_ shared: Shared, _ body: @escaping @Sendable () -> Void) {
        shared.state.withLock { $0.threads += 1 }
        let thread = Thread {
            body()
            shared.finished.lock()
            shared.state.withLock { $0.threads -= 1 }
            shared.finished.broadcast()
            shared.finished.unlock()
        }
        thread.start()
    }

    /// Waits up to 100 ms for `descriptor` to be readable; false when it is not.
    private static func readable(_ descriptor: CInt) -> Bool {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 100) > 0
    }

    private static func acceptLoop(_ shared: Shared, _ respond: @escaping @Sendable (Request) -> [Step]) {
        while !shared.stopping {
            guard readable(shared.listener) else { continue }
            let connection = accept(shared.listener, nil, nil)
            guard connection >= 0 else { continue }
            let accepted = shared.state.withLock { state -> Bool in
                guard !state.stopping else { return false }
                state.connections.insert(connection)
                return true
            }
            guard accepted else {
                close(connection)
                break
            }
            startThread(shared) { serve(connection, shared, respond) }
        }
    }

    private static func serve(_ connection: CInt, _ shared: Shared, _ respond: @escaping @Sendable (Request) -> [Step]) {
        defer {
            shared.state.withLock { _ = $0.connections.remove(connection) }
            close(connection)
        }
        guard let request = readRequest(connection, shared) else { return }
        shared.state.withLock { $0.requests.append(request) }
        for step in respond(request) {
            switch step {
            case .send(let bytes):
                var offset = 0
                while offset < bytes.count && !shared.stopping {
                    let sent = bytes[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if sent <= 0 { return }
                    offset += sent
                }
            case .pause(let duration):
                let deadline = ContinuousClock.now + duration
                while ContinuousClock.now < deadline && !shared.stopping { usleep(10_000) }
            case .hang:
                while !shared.stopping { usleep(10_000) }
            }
        }
    }

    /// Reads the request line, the headers and a body of Content-Length bytes.
    private static func readRequest(_ connection: CInt, _ shared: Shared) -> Request? {
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        var headerEnd: Range<Data.Index>?
        var expected = 0
        while !shared.stopping {
            if let end = headerEnd, received.count >= end.upperBound + expected { break }
            guard readable(connection) else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            received.append(contentsOf: buffer[0..<count])
            if headerEnd == nil, let end = received.range(of: Data("\r\n\r\n".utf8)) {
                headerEnd = end
                let head = String(decoding: received[..<end.lowerBound], as: UTF8.self)
                for line in head.split(separator: "\r\n").dropFirst() where line.lowercased().hasPrefix("content-length:") {
                    expected = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
        }
        guard let end = headerEnd else { return nil }
        let head = String(decoding: received[..<end.lowerBound], as: UTF8.self)
        let lines = head.split(separator: "\r\n")
        let path = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? ""
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Request(path: path, headers: headers, body: Data(received[end.upperBound...].prefix(expected)))
    }

    // MARK: Replies

    /// A whole reply with a Content-Length.
    public static func reply(status: Int = 200, _ body: Data) -> Step {
        .send(Data("HTTP/1.1 \(status) X\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body)
    }

    public static func reply(status: Int = 200, _ body: String) -> Step { reply(status: status, Data(body.utf8)) }

    /// The head of a chunked reply, for streams.
    public static let streamHead = Step.send(Data("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".utf8))

    /// One chunk of a chunked reply.
    public static func chunk(_ text: String) -> Step {
        let bytes = Data(text.utf8)
        return .send(Data(String(bytes.count, radix: 16).utf8) + Data("\r\n".utf8) + bytes + Data("\r\n".utf8))
    }

    /// The last chunk of a chunked reply.
    public static let streamEnd = Step.send(Data("0\r\n\r\n".utf8))
}
