import Foundation
import SuiteSync
import Testing
import TestSupport

@Suite("The etcd client against one real etcd member", .onThreadsOfItsOwn, .needsEtcd)
struct EtcdClientTests {
    @Test func binaryAndNonASCIIKeysAndValuesRoundTrip() async throws {
        let cluster = try await EtcdCluster.start()
        let client = try EtcdClient(configuration: EtcdConfiguration(endpoints: cluster.endpoints))
        let pairs: [(Data, Data)] = [
            (bytes("/t/plain"), bytes("imperial")),
            (bytes("/t/ünïcødé/日本語"), bytes("värde ✓ 🚀")),
            (Data([0x2F, 0x74, 0x2F, 0x00, 0xFF, 0xFE, 0x80]), Data([0x00, 0xFF, 0x0A, 0x0D, 0x80, 0x00])),
            (bytes("/t/empty"), Data()),
        ]
        var lastRevision: Int64 = 0
        for (key, value) in pairs {
            let revision = try await client.put(key, value: value)
            #expect(revision > lastRevision)
            lastRevision = revision
            let read = try await client.get(key)
            #expect(read.keyValues == [EtcdKeyValue(key: key, value: value, createRevision: revision, modRevision: revision,
                                                    version: 1)])
            #expect(read.revision == revision)
        }
        let absent = try await client.get(bytes("/t/absent"))
        #expect(absent.keyValues.isEmpty && absent.revision == lastRevision)

        let deleted = try await client.delete(pairs[2].0)
        #expect(deleted.deleted == 1 && deleted.revision == lastRevision + 1)
        #expect(try await client.get(pairs[2].0).keyValues.isEmpty)
        #expect(try await client.delete(pairs[2].0).deleted == 0)
        #expect(client.highestRevisionSeen == lastRevision + 1)
    }

    @Test func aPrefixRangeHoldsExactlyTheKeysWithThePrefixUpToThe0xFFEdge() async throws {
        #expect(EtcdKeyRange.rangeEnd(ofPrefix: bytes("/p/")) == bytes("/p0"))
        #expect(EtcdKeyRange.rangeEnd(ofPrefix: Data([0x61, 0xFF])) == Data([0x62]))
        #expect(EtcdKeyRange.rangeEnd(ofPrefix: Data([0x61, 0xFF, 0xFF])) == Data([0x62]))
        #expect(EtcdKeyRange.rangeEnd(ofPrefix: Data([0xFF, 0xFF])) == Data([0]))
        #expect(EtcdKeyRange.rangeEnd(ofPrefix: Data()) == Data([0]))

        let cluster = try await EtcdCluster.start()
        let client = try EtcdClient(configuration: EtcdConfiguration(endpoints: cluster.endpoints))
        let inside = [Data([0x70, 0xFF]), Data([0x70, 0xFF, 0x01]), Data([0x70, 0xFF, 0xFF, 0x05])]
        let outside = [Data([0x70, 0xFE, 0xFF]), Data([0x71]), Data([0x71, 0x00]), Data([0x70])]
        let allFF = [Data([0xFF]), Data([0xFF, 0xFF, 0x00])]
        for key in inside + outside + allFF { try await client.put(key, value: key) }

        let range = try await client.range(prefix: Data([0x70, 0xFF]))
        #expect(range.keyValues.map(\.key) == inside)
        #expect(range.keyValues.map(\.value) == inside)
        #expect(try await client.range(prefix: Data([0xFF])).keyValues.map(\.key) == allFF)
        #expect(try await client.range(prefix: Data([0xFF, 0xFF])).keyValues.map(\.key) == [Data([0xFF, 0xFF, 0x00])])
        #expect(try await client.range(prefix: Data()).keyValues.count == inside.count + outside.count + allFF.count)

        let firstPage = try await client.range(prefix: Data([0x70, 0xFF]), limit: 2)
        #expect(firstPage.keyValues.map(\.key) == Array(inside.prefix(2)) && firstPage.more)
    }

    @Test func aCreateOnlyTransactionCreatesOnceAndThenReturnsWhatIsStored() async throws {
        let cluster = try await EtcdCluster.start()
        let client = try EtcdClient(configuration: EtcdConfiguration(endpoints: cluster.endpoints))
        let key = bytes("/suite-defaults/alice/units/units.system")

        guard case .created(let revision) = try await client.create(key, value: bytes("\"metric\"")) else {
            Issue.record("the first create did not create")
            return
        }
        let second = try await client.create(key, value: bytes("\"imperial\""))
        #expect(second == .exists(EtcdKeyValue(key: key, value: bytes("\"metric\""), createRevision: revision,
                                               modRevision: revision, version: 1), revision: revision))

        // Compare-and-put on mod_revision: a stale revision fails with the stored key.
        let stale = try await client.put(key, value: bytes("\"imperial\""), ifModRevision: revision - 1)
        guard case .failed(let current, _) = stale else {
            Issue.record("a put with a stale mod_revision succeeded")
            return
        }
        #expect(current?.value == bytes("\"metric\""))
        guard case .succeeded(let putRevision) = try await client.put(key, value: bytes("\"imperial\""), ifModRevision: revision)
        else {
            Issue.record("a put with the current mod_revision failed")
            return
        }
        #expect(try await client.get(key).keyValues.first?.value == bytes("\"imperial\""))
        // 0 means absent.
        #expect(try await client.put(bytes("/absent"), value: bytes("1"), ifModRevision: 0) == .succeeded(revision: putRevision + 1))
        #expect(try await client.delete(key, ifModRevision: revision) != .succeeded(revision: putRevision + 2))
        #expect(try await client.delete(key, ifModRevision: putRevision) == .succeeded(revision: putRevision + 2))
        #expect(try await client.get(key).keyValues.isEmpty)
    }

    @Test func aWatchFromThePastDeliversPutsAndDeletesInOrderWithPreviousValues() async throws {
        let cluster = try await EtcdCluster.start()
        let client = try EtcdClient(configuration: EtcdConfiguration(endpoints: cluster.endpoints))
        let first = try await client.put(bytes("/w/a"), value: bytes("1"))
        try await client.put(bytes("/w/a"), value: bytes("2"))
        try await client.put(bytes("/elsewhere"), value: bytes("x"))
        try await client.delete(bytes("/w/a"))
        try await client.put(bytes("/w/ü"), value: Data([0, 0xFF]))

        let watch = try await client.watch(prefix: bytes("/w/"), from: first)
        let past = try await events(of: watch, count: 4)
        #expect(past.map(\.kind) == [.put, .put, .delete, .put])
        #expect(past.map(\.keyValue.key) == [bytes("/w/a"), bytes("/w/a"), bytes("/w/a"), bytes("/w/ü")])
        #expect(past.map(\.keyValue.modRevision) == [first, first + 1, first + 3, first + 4])
        #expect(past.map(\.keyValue.value) == [bytes("1"), bytes("2"), Data(), Data([0, 0xFF])])
        #expect(past.map { $0.previous?.value } == [nil, bytes("1"), bytes("2"), nil])

        // Live changes come after the past ones, on the same watch.
        let live = try await client.put(bytes("/w/b"), value: bytes("live"))
        let next = try await events(of: watch, count: 1)
        #expect(next.map(\.keyValue.modRevision) == [live])
        watch.cancel()
        let ended = try await within(.seconds(30), "the end of a cancelled watch") {
            var iterator = watch.makeAsyncIterator()
            while try await iterator.next() != nil {}
            return true
        }
        #expect(ended)
    }

    @Test func aWatchFromACompactedRevisionFailsWithTheCompactRevision() async throws {
        let cluster = try await EtcdCluster.start()
        let client = try EtcdClient(configuration: EtcdConfiguration(endpoints: cluster.endpoints))
        let first = try await client.put(bytes("/c/k"), value: bytes("1"))
        try await client.put(bytes("/c/k"), value: bytes("2"))
        let third = try await client.put(bytes("/c/k"), value: bytes("3"))
        try await client.compact(upTo: third)

        let error = await etcdError {
            let watch = try await client.watch(prefix: bytes("/c/"), from: first)
            _ = try await events(of: watch, count: 1)
        }
        guard case .compacted(_, let compactRevision) = error else {
            Issue.record("expected .compacted, got \(String(describing: error))")
            return
        }
        #expect(compactRevision == third)
        // From the compact revision on, the watch works.
        let watch = try await client.watch(prefix: bytes("/c/"), from: third)
        #expect(try await events(of: watch, count: 1).map(\.keyValue.value) == [bytes("3")])
    }
}
