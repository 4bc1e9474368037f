import ChildProcess
import Foundation
import Glibc

/// A throwaway etcd on loopback for the tools and examples (suite-stress sync,
/// suite-bench's sync rows, sync-demo): one member or a cluster, on ports chosen here,
/// with its data in a temporary directory of its own.
///
/// Every member is a `ChildProcess`, so it is killed and reaped when this goes away;
/// `shutDown()` does it at once and removes the data directory. Members listen on
/// 127.0.0.1 only, with short heartbeats, so a cluster elects a new leader within about
/// a second of losing one. Requests go over a plain socket: one JSON POST per request.
public final class LocalEtcd: @unchecked Sendable {
    /// The `etcd` program on $PATH; nil when it is not installed.
    public static var executable: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/etcd" }.first { access($0, X_OK) == 0 }
    }

    /// How to install it, for the messages of the programs that need it.
    public static let installCommand = "apt-get install -y etcd-server"

    /// One member: its name and loopback ports, the same across a restart.
    public struct Member: Sendable {
        public let name: String
        public let clientPort: UInt16
        public let peerPort: UInt16
        public var clientURL: String { "http://127.0.0.1:\(clientPort)" }
        var peerURL: String { "http://127.0.0.1:\(peerPort)" }
    }

    public let members: [Member]
    /// The temporary directory holding every member's data; removed by `shutDown()`.
    public let directory: URL
    private let executable: String
    private let lock = NSLock()
    private var processes: [ChildProcess?]
    private var isShutDown = false

    /// The members' client URLs, in member order.
    public var endpoints: [String] { members.map(\.clientURL) }

    /// Starts `size` members, their data in a new directory inside `parent` (default:
    /// the temporary directory), and waits until each serves reads; throws otherwise,
    /// having stopped what it started. A start that fails because another program took
    /// a chosen port in the meantime is tried again on new ports.
    public static func start(members size: Int = 1, in parent: URL? = nil, timeout: Duration = .seconds(30)) throws -> LocalEtcd {
        guard let executable else { throw LocalEtcdError("etcd is not installed (\(installCommand))") }
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try LocalEtcd(size: size, executable: executable, ports: try freePorts(2 * size), parent: parent,
                                     timeout: timeout)
            } catch let error as LocalEtcdError where error.message.contains("address already in use") && attempt < 3 {
                continue
            }
        }
    }

    private init(size: Int, executable: String, ports: [UInt16], parent: URL?, timeout: Duration) throws {
        let parent = parent ?? URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
        var template = Array(parent.appendingPathComponent("local-etcd.XXXXXX").path.utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw LocalEtcdError("cannot create a directory in \(parent.path): \(String(cString: strerror(errno)))")
        }
        directory = URL(fileURLWithPath: String(cString: made), isDirectory: true)
        self.executable = executable
        members = (0..<size).map { Member(name: "member\($0)", clientPort: ports[2 * $0], peerPort: ports[2 * $0 + 1]) }
        processes = Array(repeating: nil, count: size)
        do {
            for index in members.indices { try launch(index) }
            for index in members.indices { try waitUntilReady(index, timeout: timeout) }
        } catch {
            shutDown()
            throw error
        }
    }

    deinit {
        shutDown()
    }

    /// Kills and reaps every member, and removes the data directory. Idempotent.
    public func shutDown() {
        let all = lock.withLock {
            defer { processes = processes.map { _ in nil }; isShutDown = true }
            return processes
        }
        for process in all { process?.kill() }
        try? FileManager.default.removeItem(at: directory)
    }

    private func launch(_ index: Int) throws {
        let member = members[index]
        let cluster = members.map { "\($0.name)=\($0.peerURL)" }.joined(separator: ",")
        let arguments = [
            "--name", member.name, "--data-dir", directory.appendingPathComponent(member.name).path,
            "--listen-client-urls", member.clientURL, "--advertise-client-urls", member.clientURL,
            "--listen-peer-urls", member.peerURL, "--initial-advertise-peer-urls", member.peerURL,
            "--initial-cluster", cluster, "--initial-cluster-state", "new",
            "--initial-cluster-token", "local-etcd-\(getpid())-\(members[0].peerPort)",
            "--heartbeat-interval", "50", "--election-timeout", "500",
            "--logger", "zap", "--log-level", "error",
        ]
        let process = try ChildProcess(executable: executable, arguments: arguments)
        process.closeInput()
        let refused = lock.withLock {
            guard !isShutDown else { return true }
            processes[index] = process
            return false
        }
        if refused {
            process.kill()
            throw LocalEtcdError("the etcd was shut down")
        }
    }

    /// Waits until member `index` serves a read (it has joined a cluster with a leader),
    /// or throws at the deadline or when the process ends.
    public func waitUntilReady(_ index: Int, timeout: Duration = .seconds(30)) throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let process = lock.withLock({ processes[index] }) else { throw LocalEtcdError("member \(index) is not running") }
            if let ended = process.wait(timeout: .zero) {
                throw LocalEtcdError("etcd member \(index) \(ended): \(process.standardError.suffix(2000))")
            }
            if let reply = Self.post(port: members[index].clientPort, "/v3/kv/range", ["key": "AA=="], timeout: .seconds(2)),
               reply.status == 200 {
                return
            }
            // Starting: its port refuses connections. Ask again shortly, or at once if it fails.
            _ = process.waitForError(containing: "address already in use", timeout: .milliseconds(50))
        }
        throw LocalEtcdError("etcd member \(index) did not answer within \(timeout)")
    }

    /// Kills member `index` with SIGKILL and reaps it.
    public func kill(_ index: Int) {
        let process = lock.withLock { defer { processes[index] = nil }; return processes[index] }
        process?.kill()
    }

    /// Starts member `index` again, on its ports and data, and waits until it answers.
    public func restart(_ index: Int, timeout: Duration = .seconds(30)) throws {
        kill(index)
        try launch(index)
        try waitUntilReady(index, timeout: timeout)
    }

    /// The process ids of the running members.
    public var processIDs: [pid_t] { lock.withLock { processes.compactMap { $0?.pid } } }

    /// Whether member `index` runs.
    public func isRunning(_ index: Int) -> Bool { lock.withLock { processes[index] != nil } }

    /// The client URLs of the running members.
    public var runningEndpoints: [String] { members.indices.filter(isRunning).map { members[$0].clientURL } }

    /// The index of the leader, as the running members agree; nil if none by the deadline.
    public func leader(timeout: Duration = .seconds(10)) -> Int? {
        let deadline = ContinuousClock.now + timeout
        repeat {
            var leaders: Set<String> = []
            var own: [String: Int] = [:]
            for index in members.indices where isRunning(index) {
                guard let reply = Self.post(port: members[index].clientPort, "/v3/maintenance/status", [:], timeout: .seconds(2)),
                      reply.status == 200,
                      let object = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any],
                      let header = object["header"] as? [String: Any], let memberID = header["member_id"] as? String
                else { continue }
                own[memberID] = index
                if let leader = object["leader"] as? String, leader != "0" { leaders.insert(leader) }
            }
            if leaders.count == 1, let leader = leaders.first, let index = own[leader] { return index }
            // An election is under way: it takes a few heartbeats of 50 ms.
            usleep(50_000)
        } while ContinuousClock.now < deadline
        return nil
    }

    /// Every key under `prefix` with its value, and the store's revision, as a running
    /// member answers (a linearizable read); nil when none answers.
    public func range(prefix: String, timeout: Duration = .seconds(5)) -> (values: [String: Data], revision: Int64)? {
        var end = Array(prefix.utf8)
        guard let last = end.popLast() else { return nil }
        end.append(last + 1)
        let body = ["key": Data(prefix.utf8).base64EncodedString(), "range_end": Data(end).base64EncodedString()]
        for index in members.indices where isRunning(index) {
            guard let reply = Self.post(port: members[index].clientPort, "/v3/kv/range", body, timeout: timeout),
                  reply.status == 200,
                  let object = try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any],
                  let header = object["header"] as? [String: Any],
                  let revision = (header["revision"] as? String).flatMap({ Int64($0) })
            else { continue }
            var values: [String: Data] = [:]
            for pair in object["kvs"] as? [[String: Any]] ?? [] {
                guard let key = (pair["key"] as? String).flatMap({ Data(base64Encoded: $0) }) else { continue }
                values[String(decoding: key, as: UTF8.self)] = (pair["value"] as? String).flatMap { Data(base64Encoded: $0) } ?? Data()
            }
            return (values, revision)
        }
        return nil
    }

    /// One JSON POST to the loopback `port`; nil when no whole reply came by the deadline.
    public static func post(port: UInt16, _ path: String, _ body: [String: String], timeout: Duration = .seconds(5))
        -> (status: Int, body: Data)? {
        guard let json = try? JSONSerialization.data(withJSONObject: body) else { return nil }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var address = loopback(port)
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

    private static func loopback(_ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        return address
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
}

/// Why a local etcd could not be had.
public struct LocalEtcdError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
