import Foundation
import Glibc
import SuiteSync
import Testing
import TestSupport

/// `openssl` on $PATH, to make a throwaway certificate authority; nil when missing.
let openssl: String? = {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    return path.split(separator: ":").map { "\($0)/openssl" }.first { access($0, X_OK) == 0 }
}()

@Suite("The etcd client over https trusts exactly its CA file", .onThreadsOfItsOwn, .needsEtcd,
       .enabled(if: openssl != nil, "openssl is not installed: the https test makes its certificates with it"))
struct EtcdTLSTests {
    /// A CA and a server certificate for 127.0.0.1 signed by it, and a second CA that
    /// signed nothing, made with `openssl` in `directory`.
    static func makeCertificates(in directory: TemporaryDirectory) throws {
        let tool = try #require(openssl)
        let runs: [[String]] = [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=suite-sync test CA"],
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other.key", "-out", "other.pem", "-days", "1", "-subj", "/CN=another CA"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"],
            ["x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem",
             "-days", "1", "-extfile", "san.cnf"],
        ]
        try directory.write(Array("subjectAltName=IP:127.0.0.1\n".utf8), to: "san.cnf")
        for arguments in runs {
            let made = try run(program: "/bin/sh", ["-c", "cd \"$0\" && exec \"$@\"", directory.path, tool] + arguments,
                               within: .seconds(60))
            try #require(made.status == .exited(0), "openssl \(arguments[0]): \(made.errors)")
        }
    }

    /// A one-member etcd that speaks only https, with a certificate signed by the CA in
    /// `directory` (`makeCertificates`).
    static func startHTTPSCluster(certificatesIn directory: TemporaryDirectory) async throws -> EtcdCluster {
        try makeCertificates(in: directory)
        let cluster = try await EtcdCluster.start(tls: EtcdTLSFiles(certificate: directory.file("server.pem").path,
                                                                    key: directory.file("server.key").path))
        #expect(cluster.endpoints[0].scheme == "https")
        return cluster
    }

    @Test func requestsAndWatchesWorkWithTheCAAndFailTypedWithout() async throws {
        let directory = TemporaryDirectory("suite-sync-tls")
        let cluster = try await Self.startHTTPSCluster(certificatesIn: directory)

        let trusted = try EtcdClient(configuration: EtcdConfiguration(
            endpoints: cluster.endpoints, certificateAuthorityFile: directory.file("ca.pem").path))
        let revision = try await within(.seconds(30), "the first https put") {
            try await trusted.put(bytes("/tls/k"), value: bytes("secret value"))
        }
        #expect(try await trusted.get(bytes("/tls/k")).keyValues.first?.value == bytes("secret value"))
        let watch = try await trusted.watch(prefix: bytes("/tls/"), from: revision)
        #expect(try await events(of: watch, count: 1).map(\.keyValue.modRevision) == [revision])

        // Another CA, or none (the system store), does not trust the server: a typed error.
        for caFile in [directory.file("other.pem").path, nil] {
            let untrusting = try EtcdClient(configuration: EtcdConfiguration(
                endpoints: cluster.endpoints, certificateAuthorityFile: caFile, requestTimeout: .seconds(2)))
            let error = await etcdError { _ = try await untrusting.get(bytes("/tls/k")) }
            guard case .unavailable(let failures) = error else {
                Issue.record("expected .unavailable, got \(String(describing: error))")
                continue
            }
            #expect(failures.first?.reason.contains("not trusted") == true, "\(failures)")
            #expect(!String(describing: error).contains("secret value"))
        }

        // A CA file that is not one is refused when the client is made.
        let bad = await etcdError {
            _ = try EtcdClient(configuration: EtcdConfiguration(endpoints: cluster.endpoints,
                                                                certificateAuthorityFile: directory.file("san.cnf").path))
        }
        guard case .invalidConfiguration = bad else {
            Issue.record("expected .invalidConfiguration, got \(String(describing: bad))")
            return
        }
    }
}
