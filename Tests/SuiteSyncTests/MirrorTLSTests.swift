import ChildProcess
import Foundation
@_spi(Tools) import SuiteDefaults
import SuiteSync
import Testing
import TestSupport

/// `suite-sync` against an etcd that speaks only https: with `--cacert` naming the CA
/// that signed the server's certificate, two machines mirror each other; with another
/// CA's file it syncs nothing and says the server was not trusted; with a file that is
/// not there it stops with a usage-level error.
@Suite("suite-sync over https trusts exactly --cacert", .onThreadsOfItsOwn, .needsEtcd, .serialized,
       .enabled(if: openssl != nil, "openssl is not installed: the https test makes its certificates with it"))
struct MirrorTLSTests {
    static let prefix = "/suite-defaults/tls"

    @Test func twoMachinesSyncWithTheirCAAndNotWithAnother() async throws {
        let certificates = TemporaryDirectory("suite-sync-tls")
        let cluster = try await EtcdTLSTests.startHTTPSCluster(certificatesIn: certificates)
        let client = try EtcdClient(configuration: EtcdConfiguration(
            endpoints: cluster.endpoints, certificateAuthorityFile: certificates.file("ca.pem").path))
        let machines = ["a", "b"].map {
            Machine($0, endpoints: cluster.endpoints, prefix: Self.prefix, suites: ["s"],
                    options: ["--cacert", certificates.file("ca.pem").path])
        }
        for machine in machines { try await machine.start() }
        try machines[0].suite("s").set("imperial", forKey: "units")
        try machines[1].suite("s").set(3, forKey: "count")
        let final = try await converge(machines, client, prefix: Self.prefix)
        #expect(final["s/units"] == "\"imperial\"" && final["s/count"] == "3")

        // Another CA: the server is not trusted; the machine says so and sends nothing.
        let untrusting = Machine("c", endpoints: cluster.endpoints, prefix: Self.prefix, suites: ["s"],
                                 options: ["--cacert", certificates.file("other.pem").path])
        try untrusting.suite("s").set("from an untrusting machine", forKey: "untrusted")
        try await untrusting.start(waitUntilWatching: false)
        try await eventually(.seconds(30), "c saying the server was not trusted",
                             describe: { "\(untrusting.lines.suffix(4)) \(untrusting.errors.suffix(300))" }) {
            (untrusting.lines.joined(separator: "\n") + untrusting.errors).contains("not trusted")
        }
        #expect(!untrusting.lines.contains { $0.contains("\"event\":\"watching\"") })
        #expect(try await etcdValues(client, prefix: Self.prefix).values["s/untrusted"] == nil)
        await untrusting.kill()

        // A CA file that is not there: refused before any connection, with a typed error.
        let missing = Machine("d", endpoints: cluster.endpoints, prefix: Self.prefix, suites: ["s"],
                              options: ["--cacert", certificates.file("no-such-ca.pem").path])
        let refused = try await missing.start(waitUntilWatching: false)
        let status = await offThePool { refused.wait(timeout: .seconds(30)) }
        #expect(status != nil && status != .exited(0), "a missing CA file ended with \(String(describing: status))")
        #expect((missing.lines.joined(separator: "\n") + missing.errors).contains("no-such-ca.pem"),
                "the error names the file: \(missing.lines.suffix(3)) \(missing.errors)")
        for machine in machines { await machine.kill() }
    }
}
