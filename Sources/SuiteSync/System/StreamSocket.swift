import Glibc
import SuiteDefaults

/// An address a host name resolved to, with the kind of socket that reaches it.
struct SocketAddress: Sendable {
    let family: CInt
    let type: CInt
    let `protocol`: CInt
    /// The `sockaddr`'s bytes.
    let bytes: [UInt8]
}

/// A TCP socket: the system calls of an HTTP exchange (`SocketExchange`), each
/// retried after `EINTR` and failing with `SystemCallError`. Closing is explicit.
struct StreamSocket: Sendable {
    /// For TLS (`SSL_set_fd`) and for a cancel from another thread (`shutdown`).
    let descriptor: CInt

    /// The addresses of `host` (a name or a numeric address) at `port`, in the order to
    /// try them (`getaddrinfo`); nil when it has none.
    static func addresses(of host: String, port: Int) -> [SocketAddress]? {
        var hints = addrinfo()
        hints.ai_socktype = CInt(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let first = found else { return nil }
        defer { freeaddrinfo(found) }
        var addresses: [SocketAddress] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let current = next?.pointee {
            next = current.ai_next
            guard let address = current.ai_addr else { continue }
            let bytes = [UInt8](UnsafeRawBufferPointer(start: address, count: Int(current.ai_addrlen)))
            addresses.append(SocketAddress(family: current.ai_family, type: current.ai_socktype, protocol: current.ai_protocol, bytes: bytes))
        }
        return addresses
    }

    /// A new socket (close-on-exec) of the kind that reaches `address`.
    static func open(for address: SocketAddress) throws -> StreamSocket {
        StreamSocket(descriptor: try retryingInterrupts("socket") {
            socket(address.family, address.type | CInt(SOCK_CLOEXEC.rawValue), address.protocol)
        })
    }

    func close() {
        _ = Glibc.close(descriptor)
    }

    /// Ends the connection both ways, waking any thread blocked on it.
    func shutdown() {
        _ = Glibc.shutdown(descriptor, CInt(SHUT_RDWR))
    }

    // MARK: Connecting

    /// Starts connecting to `address` without blocking: true when connected at once,
    /// false while in progress (then wait until `writable`, and `finishConnecting`).
    func beginConnecting(to address: SocketAddress) throws -> Bool {
        let flags = try retryingInterrupts("fcntl") { fcntl(descriptor, F_GETFL) }
        _ = try retryingInterrupts("fcntl") { fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) }
        let result = address.bytes.withUnsafeBytes { bytes in
            Glibc.connect(descriptor, bytes.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(bytes.count))
        }
        if result == 0 { return try finishConnecting() }
        let code = errno
        guard code == EINPROGRESS || code == EINTR else { throw SystemCallError(call: "connect", errno: code) }
        return false
    }

    /// The outcome of a connection begun (`SO_ERROR`): true when connected, a failure
    /// (refused, unreachable, timed out) thrown. The socket blocks again afterwards.
    @discardableResult
    func finishConnecting() throws -> Bool {
        var error: CInt = 0
        var size = socklen_t(MemoryLayout<CInt>.size)
        _ = try retryingInterrupts("getsockopt") { getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &size) }
        guard error == 0 else { throw SystemCallError(call: "connect", errno: error) }
        let flags = try retryingInterrupts("fcntl") { fcntl(descriptor, F_GETFL) }
        _ = try retryingInterrupts("fcntl") { fcntl(descriptor, F_SETFL, flags & ~O_NONBLOCK) }
        return true
    }

    // MARK: Options

    /// Sends small writes at once (`TCP_NODELAY`): a request goes in one or two writes.
    func sendWithoutDelay() {
        var one: CInt = 1
        _ = setsockopt(descriptor, CInt(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<CInt>.size))
    }

    /// Bounds each blocking send and receive (zero: no bound).
    func setTimeouts(_ timeout: Duration) {
        let (seconds, attoseconds) = timeout.components
        var value = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        _ = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
    }

    // MARK: Waiting, receiving, sending

    enum Readiness {
        case readable, writable
        var events: Int16 { Int16(self == .readable ? POLLIN : POLLOUT) }
    }

    /// Waits at most `milliseconds` for the socket to become `readiness` (or to fail,
    /// which the next call then reports): whether it did. An interrupted wait says false.
    func wait(until readiness: Readiness, milliseconds: CInt) throws -> Bool {
        var poller = pollfd(fd: descriptor, events: readiness.events, revents: 0)
        let ready = poll(&poller, 1, milliseconds)
        if ready < 0 && errno != EINTR { throw SystemCallError(call: "poll", errno: errno) }
        return ready > 0
    }

    /// Receives up to `buffer.count` bytes: how many, 0 at the end of the stream.
    func receive(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        try retryingInterrupts("recv") { recv(descriptor, buffer.baseAddress, buffer.count, 0) }
    }

    /// Sends some of `bytes` (never raising `SIGPIPE`): how many.
    func send(_ bytes: UnsafeRawBufferPointer) throws -> Int {
        try retryingInterrupts("send") { Glibc.send(descriptor, bytes.baseAddress, bytes.count, CInt(MSG_NOSIGNAL)) }
    }
}
