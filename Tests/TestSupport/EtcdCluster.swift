import ChildProcess
import Foundation
import Glibc
import Synchronization

/// Real `etcd` processes for tests: one member or a cluster, on loopback ports chosen
/// here, each member with its own data directory inside one temporary directory.
///
/// Every process is a `ChildProcess`, so it is killed and reaped when the cluster goes
/// away, also when a test fails or throws; `shutDown()` does it at once. Members bind
/// only to 127.0.0.1. They run with short heartbeats and election timeouts, so that a
/// cluster elects a new leader within about a second of losing one.
public final class EtcdCluster: Sendable {
    /// The `etcd` program on $PATH; nil when it is not installed.
    public static let executable: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/etcd" }.first { access($0, X_OK) == 0 }
    }()

    /// Why the etcd tests skip where `etcd` is missing.
    public static let missingMessage = "etcd is not installed: the etcd tests need it (apt-get install -y etcd-server)"

    /// One member: its name, ports and data directory, which stay the same across restarts.
    public struct Member: Sendable {
        public let name: String
        public let clientPort: UInt16
        public let peerPort: UInt16
        public let dataDirectory: String
        let scheme: String
        public var clientURL: URL { URL(string: "\(scheme)://127.0.0.1:\(clientPort)")! }
        var peerURL: String { "http://127.0.0.1:\(peerPort)" }
    }

    public let members: [Member]
    private let directory: TemporaryDirectory
    private let tls: EtcdTLSFiles?
    private let processes: Mutex<[ChildProcess?]>

    /// The members' client URLs, in member order.
    public var endpoints: [URL] { members.map(\.clientURL) }

    /// Starts `size` members and waits until each answers, or throws. A start that fails
    /// because another program took a port in the meantime is tried again on new ports.
    ///
    /// The waiting runs on a thread of its own, not on the tasks' cooperative threads,
    /// which other tests running at the same time need.
    public static func start(size: Int = 1, timeout: Duration = .seconds(30), tls: EtcdTLSFiles? = nil) async throws
        -> EtcdCluster {
        try await offThePool { try startBlocking(size: size, timeout: timeout, tls: tls) }
    }

    private static func startBlocking(size: Int, timeout: Duration, tls: EtcdTLSFiles?) throws -> EtcdCluster {
        guard let executable else { throw EtcdClusterError(missingMessage) }
        var lastFailure = ""
        for _ in 1...3 {
            do {
                return try EtcdCluster(size: size, executable: executable, ports: try FreePorts.pick(2 * size),
                                       timeout: timeout, tls: tls)
            } catch let failure as EtcdClusterError {
                lastFailure = failure.message
                // Only a port taken between choosing and binding is worth another try.
                guard failure.message.contains("address already in use") else { break }
            }
        }
        throw EtcdClusterError("etcd did not start: \(lastFailure)")
    }

    private init(size: Int, executable: String, ports: [UInt16], timeout: Duration, tls: EtcdTLSFiles?) throws {
        let directory = TemporaryDirectory("suite-sync-etcd")
        self.directory = directory
        self.tls = tls
        members = (0..<size).map { index in
            Member(name: "member\(index)", clientPort: ports[2 * index], peerPort: ports[2 * index + 1],
                   dataDirectory: directory.file("member\(index)").path, scheme: tls == nil ? "http" : "https")
        }
        processes = Mutex(Array(repeating: nil, count: size))
        do {
            for index in members.indices { try launch(index, executable: executable) }
            for index in members.indices { try waitUntilReady(index, timeout: timeout) }
        } catch {
            shutDown()
            throw error
        }
    }

    deinit {
        shutDown()
    }

    /// Kills and reaps every member.
    public func shutDown() {
        let all = processes.withLock { current in
            defer { current = current.map { _ in nil } }
            return current
        }
        for process in all { process?.kill() }
    }

    private func launch(_ index: Int, executable: String) throws {
        let member = members[index]
        let cluster = members.map { "\($0.name)=\($0.peerURL)" }.joined(separator: ",")
        let arguments = [
            "--name", member.name, "--data-dir", member.dataDirectory,
            "--listen-client-urls", member.clientURL.absoluteString,
            "--advertise-client-urls", member.clientURL.absoluteString,
            "--listen-peer-urls", member.peerURL, "--initial-advertise-peer-urls", member.peerURL,
            "--initial-cluster", cluster, "--initial-cluster-state", "new",
            "--initial-cluster-token", "suite-sync-test-\(getpid())-\(members[0].peerPort)",
            "--heartbeat-interval", "50", "--election-timeout", "500",
            "--logger", "zap", "--log-level", "error",
        ] + (tls.map { ["--cert-file", $0.certificate, "--key-file", $0.key] } ?? [])
        let process = try ChildProcess(executable: executable, arguments: arguments)
        process.closeInput()
        processes.withLock { $0[index] = process }
    }

    /// Waits until member `index` serves a linearizable read (it has joined a cluster with
    /// a leader), or throws at the deadline or when the process ends.
    public func waitUntilReady(_ index: Int, timeout: Duration = .seconds(30)) throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let process = processes.withLock({ $0[index] }) else { throw EtcdClusterError("member \(index) is not running") }
            if let ended = process.wait(timeout: .zero) {
                throw EtcdClusterError("member \(index) \(ended): \(process.standardError.suffix(2000))")
            }
            if tls != nil {
                // No TLS here: a member whose client port accepts has started serving.
                if Self.accepts(members[index].clientPort) && (process.wait(timeout: .milliseconds(200)) == nil) { return }
            } else if let reply = Self.post(members[index].clientURL, "/v3/kv/range", ["key": "AA=="], timeout: .seconds(2)),
               reply.status == 200 || reply.status == 400 || reply.status == 401 {
                // 400/401: auth is on and the request had no token; the member serves.
                return
            }
            // The member is starting: its port refuses connections. Ask again shortly.
            _ = process.waitForError(containing: "address already in use", timeout: .milliseconds(50))
        }
        throw EtcdClusterError("member \(index) did not answer within \(timeout)")
    }

    /// Stops member `index` with SIGTERM and reaps it (SIGKILL if it lingers).
    public func stop(_ index: Int) async {
        await offThePool { self.stopBlocking(index) }
    }

    private func stopBlocking(_ index: Int) {
        guard let process = processes.withLock({ current in defer { current[index] = nil }; return current[index] }) else { return }
        process.signal(SIGTERM)
        if process.wait(timeout: .seconds(10)) == nil { process.kill() }
    }

    /// Kills member `index` with SIGKILL and reaps it.
    public func kill(_ index: Int) async {
        await offThePool { self.killBlocking(index) }
    }

    private func killBlocking(_ index: Int) {
        let process = processes.withLock { current in defer { current[index] = nil }; return current[index] }
        process?.kill()
    }

    /// Starts member `index` again, on its ports and data directory, and waits until it answers.
    public func restart(_ index: Int, timeout: Duration = .seconds(30)) async throws {
        try await offThePool { try self.restartBlocking(index, timeout: timeout) }
    }

    private func restartBlocking(_ index: Int, timeout: Duration) throws {
        guard let executable = Self.executable else { throw EtcdClusterError(Self.missingMessage) }
        killBlocking(index)
        try launch(index, executable: executable)
        try waitUntilReady(index, timeout: timeout)
    }

    /// Whether member `index` runs.
    public func isRunning(_ index: Int) -> Bool { processes.withLock { $0[index] != nil } }

    /// The index of the member that is leader, as the running members agree; nil if none
    /// is by the deadline.
    public func leader(timeout: Duration = .seconds(10)) async -> Int? {
        await offThePool { self.leaderBlocking(timeout: timeout) }
    }

    private func leaderBlocking(timeout: Duration) -> Int? {
        let deadline = ContinuousClock.now + timeout
        repeat {
            var leaders: Set<String> = []
            var own: [String: Int] = [:]
            for index in members.indices where isRunning(index) {
                guard let reply = Self.post(members[index].clientURL, "/v3/maintenance/status", [:], timeout: .seconds(2)),
                      reply.status == 200,
                      let object = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any],
                      let header = object["header"] as? [String: Any], let memberID = header["member_id"] as? String
                else { continue }
                own[memberID] = index
                if let leader = object["leader"] as? String, leader != "0" { leaders.insert(leader) }
            }
            if leaders.count == 1, let leader = leaders.first, let index = own[leader] { return index }
            // An election is under way: it takes a few heartbeats of 50 ms.
            Thread.sleep(forTimeInterval: 0.05)
        } while ContinuousClock.now < deadline
        return nil
    }

    /// Turns authentication on with a `root` user (the role etcd requires) and `password`.
    public func enableAuthentication(rootPassword password: String) async throws {
        try await offThePool { try self.enableAuthenticationBlocking(rootPassword: password) }
    }

    private func enableAuthenticationBlocking(rootPassword password: String) throws {
        let url = members[0].clientURL
        for (path, body) in [("/v3/auth/user/add", ["name": "root", "password": password]),
                             ("/v3/auth/role/add", ["name": "root"]),
                             ("/v3/auth/user/grant", ["user": "root", "role": "root"]),
                             ("/v3/auth/enable", [:])] as [(String, [String: String])] {
            guard let reply = Self.post(url, path, body, timeout: .seconds(10)), reply.status == 200 else {
                throw EtcdClusterError("\(path) failed")
            }
        }
    }

    /// One JSON POST to `url` + `path`; nil when no whole reply came by the deadline.
    ///
    /// Over a plain socket, not URLSession: URLSession on Linux stops the process when a
    /// reply carries HTTP trailers, as every error reply of etcd's gateway does.
    public static func post(_ url: URL, _ path: String, _ body: [String: String], timeout: Duration = .seconds(5))
        -> (status: Int, body: Data)? {
        guard let port = url.port, let json = try? JSONSerialization.data(withJSONObject: body) else { return nil }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
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
            guard poll(&poller, 1, Int32(min(left.components.seconds * 1000 + 1, 1000))) >= 0 || errno == EINTR else { return nil }
            guard poller.revents != 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 { return nil }
            if count == 0 { break }
            received.append(contentsOf: buffer[0..<count])
        }
        guard let headEnd = received.range(of: Data("\r\n\r\n".utf8)) else { return nil }
        let head = String(decoding: received[..<headEnd.lowerBound], as: UTF8.self)
        let statusLine = head.split(separator: "\r\n").first ?? ""
        guard let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
        var payload = Data(received[headEnd.upperBound...])
        if head.lowercased().contains("transfer-encoding: chunked") {
            // De-chunk: size line, data, CRLF, until the size 0 (trailers after it are dropped).
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
}

/// The certificate and key an https member serves with.
public struct EtcdTLSFiles: Sendable {
    public let certificate: String
    public let key: String

    public init(certificate: String, key: String) {
        self.certificate = certificate
        self.key = key
    }
}

extension EtcdCluster {
    /// Whether something accepts connections on the loopback `port`.
    static func accepts(_ port: UInt16) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}

/// Runs blocking work (waiting for processes and sockets) on a thread of its own, so that
/// it never holds one of the few cooperative threads that every test's tasks share.
public func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

public func offThePool<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}

/// Why an etcd cluster for a test could not be had.
public struct EtcdClusterError: Error, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Free loopback ports, learnt by binding port 0 and closing. Another program may take
/// one before etcd binds it; `EtcdCluster` starts again on new ports then.
public enum FreePorts {
    public static func pick(_ count: Int) throws -> [UInt16] {
        var sockets: [CInt] = []
        defer { sockets.forEach { close($0) } }
        var ports: [UInt16] = []
        // All held open at once, so that the count are distinct.
        for _ in 0..<count {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { throw EtcdClusterError("socket: errno \(errno)") }
            sockets.append(descriptor)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else { throw EtcdClusterError("bind: errno \(errno)") }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            ports.append(UInt16(bigEndian: address.sin_port))
        }
        return ports
    }
}
