import Foundation
#if canImport(Glibc)
import Glibc
#endif
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
        var descriptor: CInt = -1
        var cancelled = false
    }

    private let state = Mutex(State())

    func cancel() {
        state.withLock { state in
            state.cancelled = true
            if state.descriptor >= 0 { shutdown(state.descriptor, Int32(SHUT_RDWR)) }
        }
    }

    private var isCancelled: Bool { state.withLock { $0.cancelled } }

    func run(_ request: HTTPRequest, tls: TLSContext?, _ handler: any HTTPTaskHandler) {
        do {
            let descriptor = try connect(to: request.url, timeout: request.connectTimeout)
            defer {
                state.withLock { $0.descriptor = -1 }
                Glibc.close(descriptor)
            }
            var channel = Channel.plain(descriptor)
            if request.url.scheme?.lowercased() == "https" {
                guard let tls else { throw SocketFailure(text: "https without TLS") }
                // The handshake blocks: bound it, then bound each read by the idle timeout.
                Self.setTimeouts(descriptor, request.connectTimeout)
                channel = .tls(try TLSConnection(over: descriptor, host: request.url.host ?? "", context: tls), descriptor)
                Self.setTimeouts(descriptor, request.idleTimeout ?? .zero)
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
        case plain(CInt)
        case tls(TLSConnection, CInt)

        var descriptor: CInt {
            switch self {
            case .plain(let descriptor), .tls(_, let descriptor): descriptor
            }
        }

        func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
            switch self {
            case .plain(let descriptor): recv(descriptor, buffer.baseAddress, buffer.count, 0)
            case .tls(let connection, _): connection.read(into: buffer)
            }
        }

        func write(_ bytes: UnsafeRawBufferPointer) -> Int {
            switch self {
            case .plain(let descriptor): Glibc.send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
            case .tls(let connection, _): connection.write(bytes)
            }
        }

        /// Bytes TLS has already decrypted, which `poll` cannot see.
        var hasPendingBytes: Bool {
            if case .tls(let connection, _) = self { connection.hasPendingBytes } else { false }
        }
    }

    /// Bounds each blocking send and receive on `descriptor` (zero: no bound).
    static func setTimeouts(_ descriptor: CInt, _ timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
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

    private func connect(to url: URL, timeout: Duration) throws -> CInt {
        guard let host = url.host, let port = url.port ?? (url.scheme == "http" ? 80 : nil) else {
            throw SocketFailure(text: "no host or port")
        }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else {
            throw SocketFailure(text: "host not found")
        }
        defer { freeaddrinfo(found) }
        let deadline = ContinuousClock.now + timeout
        var lastFailure = SocketFailure(text: "connection refused")
        var address: UnsafeMutablePointer<addrinfo>? = first
        while let current = address {
            address = current.pointee.ai_next
            let descriptor = socket(current.pointee.ai_family, current.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue),
                                    current.pointee.ai_protocol)
            guard descriptor >= 0 else { continue }
            let registered = state.withLock { state -> Bool in
                guard !state.cancelled else { return false }
                state.descriptor = descriptor
                return true
            }
            guard registered else {
                Glibc.close(descriptor)
                throw SocketFailure(text: "cancelled")
            }
            do {
                try connect(descriptor, current.pointee.ai_addr, current.pointee.ai_addrlen, deadline: deadline)
                var one: CInt = 1
                setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<CInt>.size))
                return descriptor
            } catch let failure as SocketFailure {
                lastFailure = failure
                state.withLock { $0.descriptor = -1 }
                Glibc.close(descriptor)
            }
        }
        throw lastFailure
    }

    private func connect(_ descriptor: CInt, _ address: UnsafeMutablePointer<sockaddr>?, _ length: socklen_t,
                         deadline: ContinuousClock.Instant) throws {
        let flags = fcntl(descriptor, F_GETFL)
        _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
        if Glibc.connect(descriptor, address, length) != 0 {
            guard errno == EINPROGRESS else { throw SocketFailure(text: Self.connectFailure(errno)) }
            try wait(for: Int16(POLLOUT), on: descriptor, until: deadline, what: "no connection in time")
            var error: CInt = 0
            var size = socklen_t(MemoryLayout<CInt>.size)
            getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &size)
            guard error == 0 else { throw SocketFailure(text: Self.connectFailure(error)) }
        }
        _ = fcntl(descriptor, F_SETFL, flags)
    }

    private static func connectFailure(_ code: CInt) -> String {
        switch code {
        case ECONNREFUSED: "connection refused"
        case ETIMEDOUT: "connection timed out"
        case ENETUNREACH, EHOSTUNREACH: "unreachable"
        default: "connect: \(String(cString: strerror(code)))"
        }
    }

    /// Waits until `events` happen on `descriptor`, in slices that notice a cancel.
    private func wait(for events: Int16, on descriptor: CInt, until deadline: ContinuousClock.Instant?, what: String) throws {
        while true {
            if isCancelled { throw SocketFailure(text: "cancelled") }
            var slice: Int32 = 100
            if let deadline {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { throw SocketFailure(text: what) }
                slice = min(slice, Int32(max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)))
            }
            var poller = pollfd(fd: descriptor, events: events, revents: 0)
            let ready = poll(&poller, 1, slice)
            if ready > 0 { return }
            if ready < 0 && errno != EINTR { throw SocketFailure(text: "poll: \(String(cString: strerror(errno)))") }
        }
    }

    // MARK: Sending and receiving

    private func send(_ data: Data, on channel: Channel) throws {
        var offset = data.startIndex
        while offset < data.endIndex {
            let sent = data[offset...].withUnsafeBytes { channel.write($0) }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { throw SocketFailure(text: isCancelled ? "cancelled" : "connection lost while sending") }
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
                try wait(for: Int16(POLLIN), on: channel.descriptor, until: idleTimeout.map { ContinuousClock.now + $0 },
                         what: "no data in time")
            }
            let count = buffer.withUnsafeMutableBytes { channel.read(into: $0) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 {
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
