import ChildProcess
import Foundation
@_spi(Tools) import SuiteDefaults
import SuiteSync
import Testing
import TestSupport

/// `suite-sync` against an etcd that requires a user and password: the mirror works
/// with `--user` and `--password-file`, refuses a wrong password with a typed error, and
/// never prints the password.
@Suite("suite-sync with etcd authentication", .onThreadsOfItsOwn, .needsEtcd, .serialized)
struct MirrorAuthenticationTests {
    static let prefix = "/suite-defaults/auth"

    @Test func twoMachinesSyncWithAPasswordThatNeverAppears() async throws {
        let cluster = try await EtcdCluster.start()
        let password = "pw-\(UInt64.random(in: 1 ... .max))"
        try await cluster.enableAuthentication(rootPassword: password)
        let secrets = TemporaryDirectory("suite-sync-secrets")
        try secrets.write(Array((password + "\n").utf8), to: "password")
        let options = ["--user", "root", "--password-file", secrets.file("password").path]
        let client = try EtcdClient(configuration: EtcdConfiguration(
            endpoints: cluster.endpoints, credentials: EtcdCredentials(name: "root", password: password)))
        let machines = ["a", "b"].map {
            Machine($0, endpoints: cluster.endpoints, prefix: Self.prefix, suites: ["s"], options: options)
        }
        for machine in machines { try await machine.start() }
        try machines[0].suite("s").set("imperial", forKey: "units")
        try machines[1].suite("s").set(3, forKey: "count")
        let final = try await converge(machines, client, prefix: Self.prefix)
        #expect(final["s/units"] == "\"imperial\"")
        #expect(try machines[1].values("s")["units"] == "\"imperial\"")

        // A wrong password: refused with a typed error, status 3, and the password it
        // was given is not printed either.
        let wrong = "wrong-\(UInt64.random(in: 1 ... .max))"
        try secrets.write(Array((wrong + "\n").utf8), to: "wrong")
        let refused = Machine("c", endpoints: cluster.endpoints, prefix: Self.prefix, suites: ["s"],
                              options: ["--user", "root", "--password-file", secrets.file("wrong").path])
        let process = try await refused.start(waitUntilWatching: false)
        let status = await offThePool { process.wait(timeout: .seconds(30)) }
        #expect(status == .exited(3), "a wrong password ended with \(String(describing: status))")
        let refusal = process.standardError + process.lines.joined(separator: "\n")
        #expect(refusal.lowercased().contains("auth") || refusal.lowercased().contains("password"),
                "no word of the refusal: \(refusal)")

        for machine in machines + [refused] {
            let said = machine.lines.joined(separator: "\n") + machine.errors
            #expect(!said.contains(password), "\(machine.name) printed the password")
            #expect(!said.contains(wrong), "\(machine.name) printed the wrong password")
        }
        for machine in machines { await machine.kill() }
    }
}
