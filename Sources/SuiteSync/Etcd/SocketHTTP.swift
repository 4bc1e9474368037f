import Foundation
#if canImport(Glibc)
import Glibc
#endif
import SuiteDefaults
import Synchronization

/// HTTP/1.1 over TCP, and over TLS (OpenSSL, see `TLSLibrary`) for `https://` endpoints.
///
/// Why not URLSession: swift-corelibs-foundation's URLSession on Linux stops the whole
/// process ("Transfer completed, but there's no response.") when a reply carries HTTP
/// trailers, and etcd's gateway sends a trailer (`Grpc-Trailer-Content-Type`) with every
/// error reply: a wrong password or a refused request would crash the caller. It also
/// cannot be given a CA file on Linux. This transport reads trailers and ignores them,
/// and trusts exactly the CA file it is given.
///
/// Each exchange has its own connection (`Connection: close`) and its own thread, which
/// blocks in `poll` in slices of 100 ms so that a cancel is seen at once; on loopback a
/// connection costs tens of microseconds.
struct SocketTransport: HTTPTransport {
    /// For `https://` endpoints; nil when the client has none.
    let tls: TLSContext?

    func start(_ request: HTTPRequest, handler: any HTTPTaskHandler) -> any HTTPExchangeHandle {
        let exchange = SocketExchange()
        let tls = tls
        let thread = Thread { exchange.run(request, tls: tls, handler) }
        thread.stackSize = 1 << 20
        thread.start()
        return exchange
    }

    func close() {}
}

/// Why a socket exchange ended without a whole reply.
struct SocketFailure: Error, Sendable {
    let text: String
}

/// One exchange on one connection; `cancel()` ends it from any thread.
final class SocketExchange: HTTPExchangeHandle, Sendable {
    private struct State {
        var socket: StreamSocket?
        var cancelled = false
    }

    private let state = Mutex(State())

    func cancel() {
        state.withLock { state in
            state.cancelled = true
            state.socket?.shutdown()
        }
    }

    private var isCancelled: Bool { state.withLock { $0.cancelled } }

    func run(_ request: HTTPRequest, tls: TLSContext?, _ handler: any HTTPTaskHandler) {
        do {
            let socket = try connect(to: request.url, timeout: request.connectTimeout)
            defer {
                state.withLock { $0.socket = nil }
                socket.close()
            }
            var channel = Channel.plain(socket)
            if request.url.scheme?.lowercased() == "https" {
                guard let tls else { throw SocketFailure(text: "https without TLS") }
                // The handshake blocks: bound it, then bound each read by the idle timeout.
                socket.setTimeouts(request.connectTimeout)
                channel = .tls(try TLSConnection(over: socket.descriptor, host: request.url.host ?? "", context: tls), socket)
                socket.setTimeouts(request.idleTimeout ?? .zero)
            }
            try send(Self.head(of: request) + request.body, on: channel)
            try receive(on: channel, idleTimeout: request.idleTimeout, handler)
            handler.completed(error: nil)
        } catch {
            handler.completed(error: isCancelled ? SocketFailure(text: "cancelled") : error)
        }
    }

    /// A connection's byte stream: the socket itself, or TLS over it.
    enum Channel {
        case plain(StreamSocket)
        case tls(TLSConnection, StreamSocket)

        var socket: StreamSocket {
            switch self {
            case .plain(let socket), .tls(_, let socket): socket
            }
        }

        /// How many bytes were read into `buffer`, 0 at the end; nil when it failed.
        func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
            switch self {
            case .plain(let socket): return try? socket.receive(into: buffer)
            case .tls(let connection, _):
                while true {
                    let count = connection.read(into: buffer)
                    if count < 0 && errno == EINTR { continue }
                    return count < 0 ? nil : count
                }
            }
        }

        /// How many of `bytes` were written; nil when it failed.
        func write(_ bytes: UnsafeRawBufferPointer) -> Int? {
            switch self {
            case .plain(let socket): return try? socket.send(bytes)
            case .tls(let connection, _):
                while true {
                    let count = connection.write(bytes)
                    if count < 0 && errno == EINTR { continue }
                    return count <= 0 ? nil : count
                }
            }
        }

        /// Bytes TLS has already decrypted, which `poll` cannot see.
        var hasPendingBytes: Bool {
            if case .tls(let connection, _) = self { connection.hasPendingBytes } else { false }
        }
    }

    static func head(of request: HTTPRequest) -> Data {
        let url = request.url
        let host = url.host ?? "localhost"
        let hostHeader = (host.contains(":") ? "[\(host)]" : host) + (url.port.map { ":\($0)" } ?? "")
        let path = url.path.isEmpty ? "/" : url.path
        var head = "POST \(path) HTTP/1.1\r\nHost: \(hostHeader)\r\nContent-Length: \(request.body.count)\r\n"
            + "Connection: close\r\nAccept: application/json\r\n"
        for (name, value) in request.headers.sorted(by: { $0.key < $1.key }) { head += "\(name): \(value)\r\n" }
        return Data((head + "\r\n").utf8)
    }

    // MARK: Connecting

    private func connect(to url: URL, timeout: Duration) throws -> StreamSocket {
        guard let host = url.host, let port = url.port ?? (url.scheme == "http" ? 80 : nil) else {
            throw SocketFailure(text: "no host or port")
        }
        guard let addresses = StreamSocket.addresses(of: host, port: port), !addresses.isEmpty else {
            throw SocketFailure(text: "host not found")
        }
        let deadline = ContinuousClock.now + timeout
        var lastFailure = SocketFailure(text: "connection refused")
        for address in addresses {
            guard let socket = try? StreamSocket.open(for: address) else { continue }
            let registered = state.withLock { state -> Bool in
                guard !state.cancelled else { return false }
                state.socket = socket
                return true
            }
            guard registered else {
                socket.close()
                throw SocketFailure(text: "cancelled")
            }
            do {
                if try !socket.beginConnecting(to: address) {
                    try wait(until: .writable, on: socket, until: deadline, what: "no connection in time")
                    try socket.finishConnecting()
                }
                socket.sendWithoutDelay()
                return socket
            } catch {
                lastFailure = (error as? SocketFailure) ?? SocketFailure(text: Self.connectFailure(error))
                state.withLock { $0.socket = nil }
                socket.close()
            }
        }
        throw lastFailure
    }

    private static func connectFailure(_ error: any Error) -> String {
        guard let failure = error as? SystemCallError else { return "connect: \(error)" }
        switch failure.errno {
        case ECONNREFUSED: return "connection refused"
        case ETIMEDOUT: return "connection timed out"
        case ENETUNREACH, EHOSTUNREACH: return "unreachable"
        default: return "\(failure.call): \(failure.code)"
        }
    }

    /// Waits until `socket` is `readiness`, in slices that notice a cancel.
    private func wait(until readiness: StreamSocket.Readiness, on socket: StreamSocket, until deadline: ContinuousClock.Instant?,
                      what: String) throws {
        while true {
            if isCancelled { throw SocketFailure(text: "cancelled") }
            var slice: Int32 = 100
            if let deadline {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { throw SocketFailure(text: what) }
                slice = min(slice, Int32(max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)))
            }
            do {
                if try socket.wait(until: readiness, milliseconds: slice) { return }
            } catch {
                throw SocketFailure(text: "\(error)")
            }
        }
    }

    // MARK: Sending and receiving

    private func send(_ data: Data, on channel: Channel) throws {
        var offset = data.startIndex
        while offset < data.endIndex {
            let sent = data[offset...].withUnsafeBytes { channel.write($0) }
            guard let sent, sent > 0 else { throw SocketFailure(text: isCancelled ? "cancelled" : "connection lost while sending") }
            offset += sent
        }
    }

    /// Reads the reply and hands its status and body (de-chunked, trailers dropped) to
    /// `handler`, until the body ends or the handler declines more.
    private func receive(on channel: Channel, idleTimeout: Duration?, _ handler: any HTTPTaskHandler) throws {
        var parser = HTTPReplyParser()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            if !channel.hasPendingBytes {
                try wait(until: .readable, on: channel.socket, until: idleTimeout.map { ContinuousClock.now + $0 },
                         what: "no data in time")
            }
            guard let count = buffer.withUnsafeMutableBytes({ channel.read(into: $0) }) else {
                // TLS reports a close without close_notify as an error: after a whole body, it is the end.
                if case .tls = channel, parser.endOfStream() { return }
                throw SocketFailure(text: isCancelled ? "cancelled" : "connection lost")
            }
            if count == 0 {
                guard parser.endOfStream() else { throw SocketFailure(text: "connection lost") }
                return
            }
            var proceed = true
            let done = try parser.feed(buffer[0..<count]) { event in
                switch event {
                case .status(let status): proceed = proceed && handler.received(status: status)
                case .body(let data): proceed = proceed && handler.received(data: data)
                }
                return proceed
            }
            if !proceed { throw SocketFailure(text: "cancelled") }
            if done { return }
        }
    }
}

/// An HTTP/1.1 reply read as it arrives: status line and headers, then a body framed by
/// Content-Length, by chunks (trailers read and dropped), or by the end of the
/// connection. Headers are capped at 64 KiB; interim 1xx replies are skipped.
struct HTTPReplyParser {
    enum Event {
        case status(Int)
        case body(Data)
    }

    private enum Phase {
        case head
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case untilClose
        case done
    }

    private var phase = Phase.head
    private var pending = Data()

    /// Whether the connection may end now: the body ended, or runs to the end.
    mutating func endOfStream() -> Bool {
        switch phase {
        case .done, .untilClose: return true
        default: return false
        }
    }

    /// Feeds received bytes; `emit` gets each event and returns false to stop. Returns
    /// whether the reply is complete.
    mutating func feed(_ bytes: ArraySlice<UInt8>, _ emit: (Event) -> Bool) throws -> Bool {
        pending.append(contentsOf: bytes)
        while true {
            switch phase {
            case .done:
                return true
            case .head:
                guard let head = try takeText(endingWith: "\r\n\r\n", limit: 65536, tooLong: "reply headers too large") else { return false }
                var lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
                let statusLine = lines.isEmpty ? "" : lines.removeFirst()
                let parts = statusLine.split(separator: " ", maxSplits: 2)
                guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]), (100...599).contains(status) else {
                    throw SocketFailure(text: "not an HTTP reply")
                }
                if status < 200 { continue }
                var length: Int?
                var chunked = false
                for line in lines {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    let name = line[..<colon].lowercased()
                    let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                    if name == "content-length" {
                        guard let number = Int(value), number >= 0 else { throw SocketFailure(text: "bad Content-Length") }
                        length = number
                    } else if name == "transfer-encoding" {
                        chunked = value.lowercased().contains("chunked")
                    }
                }
                phase = chunked ? .chunkSize : length.map { $0 == 0 ? .done : .fixed(remaining: $0) } ?? .untilClose
                guard emit(.status(status)) else { return false }
            case .fixed(let remaining):
                guard !pending.isEmpty else { return false }
                let part = take(upTo: remaining)
                phase = remaining == part.count ? .done : .fixed(remaining: remaining - part.count)
                guard emit(.body(part)) else { return false }
            case .untilClose:
                guard !pending.isEmpty else { return false }
                let part = pending
                pending = Data()
                guard emit(.body(part)) else { return false }
            case .chunkSize:
                guard let line = try takeText(endingWith: "\r\n", limit: 1024, tooLong: "bad chunk size") else { return false }
                let digits = line.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
                guard !digits.isEmpty, digits.count <= 15, let size = Int(digits, radix: 16) else {
                    throw SocketFailure(text: "bad chunk size")
                }
                phase = size == 0 ? .trailers : .chunkData(remaining: size)
            case .chunkData(let remaining):
                guard !pending.isEmpty else { return false }
                let part = take(upTo: remaining)
                phase = remaining == part.count ? .chunkDataEnd : .chunkData(remaining: remaining - part.count)
                guard emit(.body(part)) else { return false }
            case .chunkDataEnd:
                guard pending.count >= 2 else { return false }
                guard pending.prefix(2) == Data("\r\n".utf8) else { throw SocketFailure(text: "bad chunk end") }
                pending = Data(pending.dropFirst(2))
                phase = .chunkSize
            case .trailers:
                // Trailer lines (etcd's Grpc-Trailer-Content-Type), then an empty line.
                guard let line = try takeText(endingWith: "\r\n", limit: 65536, tooLong: "reply trailers too large") else { return false }
                if line.isEmpty { phase = .done }
            }
        }
    }

    /// The text before the next `delimiter`, taken from the bytes received with the
    /// delimiter; nil while it has not arrived, and a failure once more than `limit`
    /// bytes came without it.
    private mutating func takeText(endingWith delimiter: String, limit: Int, tooLong: String) throws -> String? {
        guard let end = pending.range(of: Data(delimiter.utf8)) else {
            guard pending.count <= limit else { throw SocketFailure(text: tooLong) }
            return nil
        }
        let text = String(decoding: pending[pending.startIndex..<end.lowerBound], as: UTF8.self)
        pending = Data(pending[end.upperBound...])
        return text
    }

    /// Up to `count` of the bytes received, taken.
    private mutating func take(upTo count: Int) -> Data {
        let part = Data(pending.prefix(count))
        pending = Data(pending.dropFirst(part.count))
        return part
    }
}
