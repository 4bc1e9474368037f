import ChildProcess
import Foundation
import Glibc
import Synchronization
import ToolSupport

/// A throwaway etcd on loopback, for the tools and examples (suite-stress sync,
/// suite-bench's sync rows, sync-demo) and, through TestSupport's `EtcdCluster`, for the
/// tests: one member or a cluster, on ports chosen here, with its data in a temporary
/// directory of its own, over http or (given a certificate and key) https.
///
/// Every member is a `ChildProcess`, so it is killed and reaped when this goes away;
/// `shutDown()` does it at once and removes the data directory. A member also ends when
/// the process that started it ends, however that ends (its data directory stays).
/// Members listen on 127.0.0.1 only, with short heartbeats, so a cluster elects a new
/// leader within about a second of losing one. Every wait has a deadline. The methods block: callers on the
/// tasks' cooperative threads run them on a thread of their own.
public final class LocalEtcd: Sendable {
    /// The `etcd` program on $PATH; nil when it is not installed.
    public static var executable: String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/etcd" }.first { access($0, X_OK) == 0 }
    }

    /// How to install it, for the messages of the programs that need it.
    public static let installCommand = "apt-get install -y etcd-server"

    /// The certificate and key an https member serves with.
    public struct TLSFiles: Sendable {
        public let certificate: String
        public let key: String

        public init(certificate: String, key: String) {
            self.certificate = certificate
            self.key = key
        }
    }

    /// One member: its name, loopback ports and data directory, the same across a restart.
    public struct Member: Sendable {
        public let name: String
        public let clientPort: UInt16
        public let peerPort: UInt16
        public let dataDirectory: String
        /// "http", or "https" for members serving with TLS files.
        public let scheme: String
        public var clientURL: String { "\(scheme)://127.0.0.1:\(clientPort)" }
        var peerURL: String { "http://127.0.0.1:\(peerPort)" }
    }

    private struct State {
        var processes: [ChildProcess?]
        var isShutDown = false
        /// Set by `enableAuthentication`: from then on a member refuses a request without a token.
        var authenticates = false
    }

    public let members: [Member]
    /// The temporary directory holding every member's data; removed by `shutDown()`.
    public let directory: URL
    private let executable: String
    private let tls: TLSFiles?
    private let state: Mutex<State>

    /// The members' client URLs, in member order.
    public var endpoints: [String] { members.map(\.clientURL) }

    /// Starts `size` members, their data in a new directory inside `parent` (default:
    /// the temporary directory), serving https with `tls` if given, and waits until each
    /// serves; throws otherwise, having stopped what it started. A start that fails because
    /// another program took a chosen port in the meantime is tried again on new ports.
    public static func start(members size: Int = 1, in parent: URL? = nil, timeout: Duration = .seconds(30),
                             tls: TLSFiles? = nil) throws -> LocalEtcd {
        guard let executable else { throw LocalEtcdError("etcd is not installed (\(installCommand))") }
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try LocalEtcd(size: size, executable: executable, ports: try freePorts(2 * size), parent: parent,
                                     timeout: timeout, tls: tls)
            } catch let error as LocalEtcdError where error.message.contains("address already in use") && attempt < 3 {
                continue
            }
        }
    }

    private init(size: Int, executable: String, ports: [UInt16], parent: URL?, timeout: Duration, tls: TLSFiles?) throws {
        do {
            directory = try makeTemporaryDirectory(prefix: "local-etcd", in: parent)
        } catch {
            throw LocalEtcdError(error.message)
        }
        self.executable = executable
        self.tls = tls
        members = (0..<size).map { [directory] index in
            Member(name: "member\(index)", clientPort: ports[2 * index], peerPort: ports[2 * index + 1],
                   dataDirectory: directory.appendingPathComponent("member\(index)").path, scheme: tls == nil ? "http" : "https")
        }
        state = Mutex(State(processes: Array(repeating: nil, count: size)))
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
        let all = state.withLock { state in
            defer { state.processes = state.processes.map { _ in nil }; state.isShutDown = true }
            return state.processes
        }
        for process in all { process?.kill() }
        try? FileManager.default.removeItem(at: directory)
    }

    private func launch(_ index: Int) throws {
        let member = members[index]
        let cluster = members.map { "\($0.name)=\($0.peerURL)" }.joined(separator: ",")
        let arguments = [
            "--name", member.name, "--data-dir", member.dataDirectory,
            "--listen-client-urls", member.clientURL, "--advertise-client-urls", member.clientURL,
            "--listen-peer-urls", member.peerURL, "--initial-advertise-peer-urls", member.peerURL,
            "--initial-cluster", cluster, "--initial-cluster-state", "new",
            "--initial-cluster-token", "local-etcd-\(getpid())-\(members[0].peerPort)",
            "--heartbeat-interval", "50", "--election-timeout", "500",
            "--logger", "zap", "--log-level", "error",
        ] + (tls.map { ["--cert-file", $0.certificate, "--key-file", $0.key] } ?? [])
        // etcd never reads its input, so a pipe's end would not end it: it ends with
        // this process by `endsWithThisProcess` (a test that crashes leaves no server).
        let process = try ChildProcess(executable: executable, arguments: arguments, endsWithThisProcess: true)
        process.closeInput()
        let refused = state.withLock { state in
            guard !state.isShutDown else { return true }
            state.processes[index] = process
            return false
        }
        if refused {
            process.kill()
            throw LocalEtcdError("the etcd was shut down")
        }
    }

    /// The running process of member `index`, taken out of the members (it is no longer running).
    private func takeProcess(_ index: Int) -> ChildProcess? {
        state.withLock { state in defer { state.processes[index] = nil }; return state.processes[index] }
    }

    /// Waits until member `index` serves a read (it has joined a cluster with a leader),
    /// or throws at the deadline or when the process ends. An https member is taken to
    /// serve once its client port accepts connections (requests here are plain http).
    public func waitUntilReady(_ index: Int, timeout: Duration = .seconds(30)) throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            guard let process = state.withLock({ $0.processes[index] }) else { throw LocalEtcdError("member \(index) is not running") }
            if let ended = process.wait(timeout: .zero) {
                throw LocalEtcdError("etcd member \(index) \(ended): \(process.standardError.suffix(2000))")
            }
            if tls != nil {
                if Self.accepts(members[index].clientPort) && process.wait(timeout: .milliseconds(200)) == nil { return }
            } else if let reply = Self.post(port: members[index].clientPort, "/v3/kv/range", ["key": "AA=="], timeout: .seconds(2)) {
                // 400/401 once authentication is on: the request had no token, and the member serves.
                let serving: Set<Int> = state.withLock({ $0.authenticates }) ? [200, 400, 401] : [200]
                if serving.contains(reply.status) { return }
            }
            // Starting: its port refuses connections. Ask again shortly, or at once if it fails.
            _ = process.waitForError(containing: "address already in use", timeout: .milliseconds(50))
        }
        throw LocalEtcdError("etcd member \(index) did not answer within \(timeout)")
    }

    /// Kills member `index` with SIGKILL and reaps it.
    public func kill(_ index: Int) {
        takeProcess(index)?.kill()
    }

    /// Stops member `index` with SIGTERM and reaps it (SIGKILL if it lingers past `timeout`).
    public func stop(_ index: Int, timeout: Duration = .seconds(10)) {
        guard let process = takeProcess(index) else { return }
        process.signal(SIGTERM)
        if process.wait(timeout: timeout) == nil { process.kill() }
    }

    /// Starts member `index` again, on its ports and data, and waits until it answers.
    public func restart(_ index: Int, timeout: Duration = .seconds(30)) throws {
        kill(index)
        try launch(index)
        try waitUntilReady(index, timeout: timeout)
    }

    /// The process ids of the running members.
    public var processIDs: [pid_t] { state.withLock { $0.processes.compactMap { $0?.pid } } }

    /// Whether member `index` runs.
    public func isRunning(_ index: Int) -> Bool { state.withLock { $0.processes[index] != nil } }

    /// The client URLs of the running members.
    public var runningEndpoints: [String] { members.indices.filter(isRunning).map { members[$0].clientURL } }

    /// The index of the leader, as the running members agree; nil if none by the deadline.
    public func leader(timeout: Duration = .seconds(10)) -> Int? {
        let deadline = ContinuousClock.now + timeout
        repeat {
            var leaders: Set<String> = []
            var own: [String: Int] = [:]
            for index in members.indices where isRunning(index) {
                guard let object = Self.postJSON(port: members[index].clientPort, "/v3/maintenance/status", [:], timeout: .seconds(2)),
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
            guard let object = Self.postJSON(port: members[index].clientPort, "/v3/kv/range", body, timeout: timeout),
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

    /// Turns authentication on with a `root` user (the role etcd requires) and `password`,
    /// through member 0.
    public func enableAuthentication(rootPassword password: String, timeout: Duration = .seconds(10)) throws {
        let port = members[0].clientPort
        for (path, body) in [("/v3/auth/user/add", ["name": "root", "password": password]),
                             ("/v3/auth/role/add", ["name": "root"]),
                             ("/v3/auth/user/grant", ["user": "root", "role": "root"]),
                             ("/v3/auth/enable", [:])] as [(String, [String: String])] {
            guard let reply = Self.post(port: port, path, body, timeout: timeout), reply.status == 200 else {
                throw LocalEtcdError("\(path) failed")
            }
        }
        state.withLock { $0.authenticates = true }
    }

    /// A POST's reply as a JSON object, when the status is 200.
    private static func postJSON(port: UInt16, _ path: String, _ body: [String: String], timeout: Duration) -> [String: Any]? {
        guard let reply = post(port: port, path, body, timeout: timeout), reply.status == 200 else { return nil }
        return try? JSONSerialization.jsonObject(with: reply.body) as? [String: Any]
    }
}

/// Why a local etcd could not be had.
public struct LocalEtcdError: Error, CustomStringConvertible, Sendable {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
