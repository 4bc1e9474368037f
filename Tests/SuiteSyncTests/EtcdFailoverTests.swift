import Foundation
import SuiteSync
import Testing
import TestSupport

@Suite("The etcd client fails over between the members of a 3-member cluster", .onThreadsOfItsOwn, .needsEtcd, .serialized)
struct EtcdFailoverTests {
    @Test func aKilledMembersRequestsAndWatchGoToAnotherMember() async throws {
        let cluster = try await EtcdCluster.start(size: 3)
        let leader = try #require(await cluster.leader(), "the cluster elected no leader")
        let follower = (leader + 1) % 3
        // The client starts on a follower, so that the others keep a leader and a quorum.
        let order = [follower] + (0..<3).filter { $0 != follower }
        let client = try EtcdClient(configuration: EtcdConfiguration(endpoints: order.map { cluster.endpoints[$0] },
                                                                     requestTimeout: .seconds(3)))
        let before = try await client.put(bytes("/f/before"), value: bytes("1"))
        #expect(client.currentEndpoint == cluster.endpoints[follower])
        let watch = try await client.watch(prefix: bytes("/f/"), from: before)
        #expect(watch.endpoint == cluster.endpoints[follower])
        #expect(try await events(of: watch, count: 1).map(\.keyValue.modRevision) == [before])

        await cluster.kill(follower)

        // The watch on the dead member ends with a typed error that says where to resume.
        let error = try await within(.seconds(30), "the watch's error") {
            await etcdError { _ = try await events(of: watch, count: 1, within: .seconds(60)) }
        }
        guard case .watchInterrupted(let endpoint, let lastRevision, _) = error else {
            Issue.record("expected .watchInterrupted, got \(String(describing: error))")
            return
        }
        #expect(endpoint == cluster.endpoints[follower].absoluteString && lastRevision == before)

        // The next request succeeds against another member, which the client then keeps.
        let after = try await client.put(bytes("/f/after"), value: bytes("2"))
        #expect(client.currentEndpoint != cluster.endpoints[follower])
        #expect(try await client.get(bytes("/f/before")).keyValues.first?.value == bytes("1"))

        // A watch resumed from the last revision, on another member, misses nothing.
        let resumed = try await client.watch(prefix: bytes("/f/"), from: lastRevision + 1)
        #expect(resumed.endpoint != cluster.endpoints[follower])
        #expect(try await events(of: resumed, count: 1).map(\.keyValue.modRevision) == [after])
    }

    @Test func theClusterServesAgainAfterItsLeaderIsKilledAndTheLeaderCatchesUpOnRestart() async throws {
        let cluster = try await EtcdCluster.start(size: 3)
        let leader = try #require(await cluster.leader(), "the cluster elected no leader")
        let order = [leader] + (0..<3).filter { $0 != leader }
        let client = try EtcdClient(configuration: EtcdConfiguration(endpoints: order.map { cluster.endpoints[$0] },
                                                                     requestTimeout: .seconds(3)))
        try await client.put(bytes("/l/1"), value: bytes("before"))
        #expect(client.currentEndpoint == cluster.endpoints[leader])

        await cluster.kill(leader)

        // Until the others elect a leader (about a second), they answer "unavailable" or
        // hold the request; a write then succeeds on one of them.
        let written = try await within(.seconds(30), "a write after the leader died") {
            while true {
                do {
                    return try await client.put(bytes("/l/2"), value: bytes("after"))
                } catch EtcdError.unavailable(let failures) {
                    #expect(failures.count == 3)
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
        }
        #expect(client.currentEndpoint != cluster.endpoints[leader])
        let newLeader = try #require(await cluster.leader())
        #expect(newLeader != leader)

        // The old leader, restarted on its data directory, catches up and serves the write.
        try await cluster.restart(leader)
        let direct = try EtcdClient(configuration: EtcdConfiguration(endpoints: [cluster.endpoints[leader]]))
        let read = try await within(.seconds(30), "the restarted member's read") {
            try await direct.get(bytes("/l/2"))
        }
        #expect(read.keyValues.first?.value == bytes("after") && read.revision >= written)
        let status = try await direct.status(of: cluster.endpoints[leader])
        #expect(!status.isLeader || status.leaderID == status.memberID)
        #expect(status.version.hasPrefix("3."))
    }
}
