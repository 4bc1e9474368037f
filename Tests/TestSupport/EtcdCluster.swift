import Foundation
import LocalEtcd

/// Real `etcd` processes for tests: a `LocalEtcd` (one member or a cluster on loopback
/// ports chosen there, data in a temporary directory, every process reaped when the
/// cluster goes away, also when a test fails or throws), with its client URLs as `URL`s
/// and its blocking methods made async.
///
/// Every wait runs on a thread of its own (`offThePool`), not on the tasks' cooperative
/// threads, which other tests running at the same time need.
public final class EtcdCluster: Sendable {
    /// The `etcd` program on $PATH; nil when it is not installed.
    public static var executable: String? { LocalEtcd.executable }

    /// Why the etcd tests skip where `etcd` is missing.
    public static let missingMessage = "etcd is not installed: the etcd tests need it (\(LocalEtcd.installCommand))"

    /// The processes themselves.
    public let etcd: LocalEtcd

    /// The members' client URLs, in member order: https ones when started with TLS files.
    public let endpoints: [URL]

    private init(_ etcd: LocalEtcd) {
        self.etcd = etcd
        endpoints = etcd.endpoints.map { URL(string: $0)! }
    }

    /// Starts `size` members and waits until each answers, or throws. A start that fails
    /// because another program took a port in the meantime is tried again on new ports.
    public static func start(size: Int = 1, timeout: Duration = .seconds(30), tls: EtcdTLSFiles? = nil) async throws
        -> EtcdCluster {
        try await offThePool { EtcdCluster(try LocalEtcd.start(members: size, timeout: timeout, tls: tls)) }
    }

    /// Kills and reaps every member, and removes their data.
    public func shutDown() { etcd.shutDown() }

    /// Stops member `index` with SIGTERM and reaps it (SIGKILL if it lingers).
    public func stop(_ index: Int) async {
        await offThePool { self.etcd.stop(index) }
    }

    /// Kills member `index` with SIGKILL and reaps it.
    public func kill(_ index: Int) async {
        await offThePool { self.etcd.kill(index) }
    }

    /// Starts member `index` again, on its ports and data directory, and waits until it answers.
    public func restart(_ index: Int, timeout: Duration = .seconds(30)) async throws {
        try await offThePool { try self.etcd.restart(index, timeout: timeout) }
    }

    /// Whether member `index` runs.
    public func isRunning(_ index: Int) -> Bool { etcd.isRunning(index) }

    /// The index of the member that is leader, as the running members agree; nil if none
    /// is by the deadline.
    public func leader(timeout: Duration = .seconds(10)) async -> Int? {
        await offThePool { self.etcd.leader(timeout: timeout) }
    }

    /// Turns authentication on with a `root` user (the role etcd requires) and `password`.
    public func enableAuthentication(rootPassword password: String) async throws {
        try await offThePool { try self.etcd.enableAuthentication(rootPassword: password) }
    }
}

/// The certificate and key an https member serves with.
public typealias EtcdTLSFiles = LocalEtcd.TLSFiles

/// Why an etcd cluster for a test (or a fake server) could not be had.
public typealias EtcdClusterError = LocalEtcdError
