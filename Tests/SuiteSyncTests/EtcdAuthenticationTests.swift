import Foundation
import SuiteSync
import Testing
import TestSupport

@Suite("The etcd client authenticates with a user and password", .onThreadsOfItsOwn, .needsEtcd)
struct EtcdAuthenticationTests {
    static let password = "s3cret-pässwörd-\(UInt32.random(in: 0...UInt32.max))"

    @Test func aWrongPasswordIsATypedErrorThatNeverShowsAPassword() async throws {
        let cluster = try await EtcdCluster.start()
        try await cluster.enableAuthentication(rootPassword: Self.password)
        let wrongPassword = "wrong-\(Self.password)"

        let wrong = try EtcdClient(configuration: EtcdConfiguration(
            endpoints: cluster.endpoints, credentials: EtcdCredentials(name: "root", password: wrongPassword)))
        let error = await etcdError { _ = try await wrong.get(bytes("/a")) }
        guard case .authenticationFailed(_, let message) = error else {
            Issue.record("expected .authenticationFailed, got \(String(describing: error))")
            return
        }
        #expect(message.contains("authentication failed"))
        let watchError = await etcdError { _ = try await wrong.watch(prefix: bytes("/a")) }
        for text in [String(describing: error), String(describing: watchError), "\(wrong.configuration.credentials!)"] {
            #expect(!text.contains(Self.password) && !text.contains(wrongPassword), "a password in: \(text)")
        }

        // Without credentials, a cluster with authentication on refuses too.
        let anonymous = try EtcdClient(configuration: EtcdConfiguration(endpoints: cluster.endpoints))
        guard case .authenticationFailed = await etcdError({ _ = try await anonymous.put(bytes("/a"), value: bytes("1")) }) else {
            Issue.record("an anonymous put was not refused as unauthenticated")
            return
        }
    }

    @Test func theRightPasswordWorksAndARejectedTokenIsRenewedOnce() async throws {
        let cluster = try await EtcdCluster.start()
        try await cluster.enableAuthentication(rootPassword: Self.password)
        let directory = TemporaryDirectory("suite-sync-password")
        try directory.write(Array((Self.password + "\n").utf8), to: "password")
        let credentials = try EtcdCredentials(name: "root", passwordFile: directory.file("password").path)
        #expect(credentials.password == Self.password)
        let client = try EtcdClient(configuration: EtcdConfiguration(endpoints: cluster.endpoints, credentials: credentials))

        let revision = try await client.put(bytes("/auth/k"), value: bytes("v1"))
        #expect(try await client.get(bytes("/auth/k")).keyValues.first?.value == bytes("v1"))
        let watch = try await client.watch(prefix: bytes("/auth/"), from: revision)
        #expect(try await events(of: watch, count: 1).map(\.keyValue.value) == [bytes("v1")])
        watch.cancel()

        // etcd's simple tokens live in the member's memory: after a restart the client's
        // token is rejected, and the client authenticates again by itself.
        try await cluster.restart(0)
        let again = try await within(.seconds(30), "a put after the restart") {
            try await client.put(bytes("/auth/k"), value: bytes("v2"))
        }
        #expect(again > revision)
        let watchAgain = try await client.watch(prefix: bytes("/auth/"), from: again)
        #expect(try await events(of: watchAgain, count: 1).map(\.keyValue.value) == [bytes("v2")])
    }
}
