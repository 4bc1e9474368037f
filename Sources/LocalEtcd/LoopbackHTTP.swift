import Foundation
import Glibc

/// The loopback sockets a local etcd is driven through: a JSON POST, whether a port
/// accepts, and free ports to give members.
///
/// Over a plain socket, not URLSession: URLSession on Linux stops the process when a
/// reply carries HTTP trailers, as every error reply of etcd's gateway does.
extension LocalEtcd {
    /// One JSON POST to the loopback `port`; nil when no whole reply came by the deadline.
    public static func post(port: UInt16, _ path: String, _ body: [String: String], timeout: Duration = .seconds(5))
        -> (status: Int, body: Data)? {
        guard let json = try? JSONSerialization.data(withJSONObject: body), let descriptor = connected(to: port) else { return nil }
        defer { close(descriptor) }
        let request = Data("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\nContent-Length: \(json.count)\r\nConnection: close\r\n\r\n".utf8) + json
        let sent = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == request.count else { return nil }
        // The reply ends when the server closes the connection (Connection: close).
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let milliseconds = min(left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1, 1000)
            guard poll(&poller, 1, Int32(milliseconds)) >= 0 || errno == EINTR else { return nil }
            guard poller.revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 { return nil }
            if count == 0 { break }
            received.append(contentsOf: buffer[0..<count])
        }
        guard let headEnd = received.range(of: Data("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: received[..<headEnd.lowerBound], as: UTF8.self)
        guard let status = head.split(separator: "\r\n").first?.split(separator: " ").dropFirst().first.flatMap({ Int($0) })
        else { return nil }
        var payload = Data(received[headEnd.upperBound...])
        if head.lowercased().contains("transfer-encoding: chunked") {
            // Size line, data, CRLF, until the size 0 (trailers after it are dropped).
            var chunked = payload
            payload = Data()
            while let lineEnd = chunked.range(of: Data("\r\n".utf8)),
                  let size = Int(String(decoding: chunked[..<lineEnd.lowerBound], as: UTF8.self), radix: 16), size > 0,
                  chunked.count >= lineEnd.upperBound - chunked.startIndex + size {
                payload += chunked[lineEnd.upperBound..<(lineEnd.upperBound + size)]
                chunked = Data(chunked[(lineEnd.upperBound + size)...].dropFirst(2))
            }
        }
        return (status, payload)
    }

    /// Whether something accepts connections on the loopback `port`.
    static func accepts(_ port: UInt16) -> Bool {
        guard let descriptor = connected(to: port) else { return false }
        close(descriptor)
        return true
    }

    /// Free loopback ports, learnt by binding port 0, all held open at once so that they
    /// are distinct, then closed. Another program may take one before etcd binds it.
    static func freePorts(_ count: Int) throws -> [UInt16] {
        var sockets: [CInt] = []
        defer { sockets.forEach { close($0) } }
        var ports: [UInt16] = []
        for _ in 0..<count {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else { throw LocalEtcdError("socket: errno \(errno)") }
            sockets.append(descriptor)
            var address = loopback(0)
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { throw LocalEtcdError("bind: errno \(errno)") }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            ports.append(UInt16(bigEndian: address.sin_port))
        }
        return ports
    }

    /// A socket connected to the loopback `port`, for the caller to close; nil when refused.
    private static func connected(to port: UInt16) -> CInt? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var address = loopback(port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    private static func loopback(_ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return address
    }
}
