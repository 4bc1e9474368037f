import ChildProcess
import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults
@_spi(Tools) import SuiteSync
import Testing
import TestSupport

/// `suite-sync` between "machines": each a suite directory of its own with its own
/// `suite-sync` process, all mirroring one prefix of a real etcd.
@Suite("suite-sync mirrors suites through etcd", .onThreadsOfItsOwn, .needsEtcd, .serialized)
struct SuiteMirrorTests {
    static let prefix = "/suite-defaults/test"

    @Test func twoMachinesConvergeAfterConcurrentWrites() async throws {
        let rig = try await MirrorRig(["a", "b"], prefix: Self.prefix, suites: ["s", "t"])
        let (cluster, client, machines) = (rig.cluster, rig.client, rig.machines)
        try await rig.startAll()
        let before = try await etcdValues(client, prefix: Self.prefix).revision

        // Both sides write the same keys and their own, set and remove, at the same time.
        var writes = 0
        try await withThrowingTaskGroup(of: Int.self) { group in
            for (index, machine) in machines.enumerated() {
                group.addTask {
                    let s = try machine.suite("s"), t = try machine.suite("t")
                    var count = 0
                    for round in 0..<40 {
                        try s.set("\(machine.name)-\(round)", forKey: "shared.\(round % 5)")
                        try t.set(round * 10 + index, forKey: "\(machine.name).\(round % 7)")
                        try s.set(Double(round) + 0.5, forKey: "d.\(index)")
                        count += 3
                        if round % 9 == 8 {
                            try s.setValue(nil, forKey: "shared.\(round % 5)")
                            count += 1
                        }
                        if round % 4 == 0 { try await Task.sleep(for: .milliseconds(2)) }
                    }
                    try s.set(Data([0, 1, 2, 255]), forKey: "bytes.\(machine.name)")
                    try s.set(Date(timeIntervalSinceReferenceDate: 1234.5), forKey: "date")
                    return count + 2
                }
            }
            for try await count in group { writes += count }
        }
        let final = try await converge(machines, client, prefix: Self.prefix)
        #expect(final["s/bytes.a"] == #"{"$data":"AAEC/w=="}"#)
        #expect(final.keys.contains { $0.hasPrefix("t/a.") } && final.keys.contains { $0.hasPrefix("t/b.") })
        // No echo: etcd saw at most one write per local write.
        let after = try await etcdValues(client, prefix: Self.prefix).revision
        #expect(after - before <= Int64(writes), "\(after - before) revisions for \(writes) writes")

        // A third machine with --once takes everything and exits 0; SIGTERM stops the others with 0.
        let third = Machine("c", endpoints: cluster.endpoints, prefix: Self.prefix, suites: ["s", "t"])
        let once = try await blocking { try run(program: "suite-sync", third.arguments + ["--once"], within: .seconds(30)) }
        #expect(once.status == .exited(0), "\(once.errors)")
        #expect(try third.allValues() == final)
        #expect(once.lines.filter { $0.contains("\"reconciled\"") }.count == 2)
        for machine in machines {
            let process = try #require(machine.process)
            process.signal(SIGTERM)
            let ended = try await blocking { process.wait(timeout: .seconds(10)) }
            #expect(ended == .exited(0))
        }
    }

    @Test func aFirstAccessRaceKeepsTheExplicitChoiceOnEveryMachine() async throws {
        let trials = 200
        let cluster = try await EtcdCluster.start()
        let client = try EtcdClient(configuration: EtcdConfiguration(endpoints: cluster.endpoints))
        let suites = (0..<trials).map { "race-\($0)" }
        let machines = (0..<3).map { Machine("m\($0)", endpoints: cluster.endpoints, prefix: Self.prefix, suites: suites) }
        for machine in machines { try await machine.start(timeout: .seconds(60)) }

        // Per machine a process detecting metric; on machine 0 another choosing imperial.
        var workers: [ChildProcess] = []
        defer { workers.forEach { _ = $0.kill() } }
        for machine in machines {
            workers.append(try startWorker("units-trials", in: machine.directory, suite: "race",
                                           ["trials": "\(trials)", "lang": "de_DE.UTF-8"]))
        }
        workers.append(try startWorker("units-trials", in: machines[0].directory, suite: "race",
                                       ["trials": "\(trials)", "system": "imperial"]))
        for worker in workers { worker.expectLine(startingWith: "opened") }
        try await blocking { [workers] in
            for trial in 0..<trials {
                // Half the trials choose at once; the others a few milliseconds later,
                // when some machines' detected defaults may have reached etcd first.
                for worker in workers.prefix(3) { worker.send("\n") }
                if trial % 2 == 1 { usleep(UInt32.random(in: 0...8000)) }
                workers[3].send("\n")
                for worker in workers {
                    guard worker.waitForLine(timeout: .seconds(30), where: { $0.hasPrefix("trial \(trial) ") }) != nil else {
                        throw DeadlinePassed(what: "trial \(trial) of worker \(worker.pid): \(worker.lines.suffix(3))")
                    }
                }
            }
        }
        for worker in workers {
            #expect(!worker.lines.contains { $0.hasPrefix("trial") && $0.contains("error") }, "\(worker.lines.suffix(3))")
        }
        let final = try await converge(machines, client, prefix: Self.prefix, within: .seconds(60))
        let lost = suites.filter { final["\($0)/units.system"] != #""imperial""# }
        #expect(final.count == trials && lost.isEmpty, "the choice was lost in \(lost.count) trials: \(lost.prefix(5))")
        for machine in machines {
            #expect(!machine.lines.contains { $0.contains("\"error\"") }, "\(machine.name): \(machine.lines.filter { $0.contains("error") }.prefix(3))")
        }
        // How the races went: detections that stored metric first, defaults etcd refused.
        let metricSeen = workers.prefix(3).map { $0.lines.filter { $0.hasSuffix(" metric") }.count }
        let replaced = machines.map { $0.lines.filter { $0.contains("default-replaced") }.count }
        let created = machines.map { $0.lines.filter { $0.contains("\"operation\":\"create\"") }.count }
        print("first-access race: metric answered \(metricSeen), defaults created in etcd \(created), replaced \(replaced)")
    }

    @Test func anOfflineWriteIsSentOnReconnect() async throws {
        let rig = try await MirrorRig(["a", "b"], prefix: Self.prefix, suites: ["s"])
        let (cluster, client, a, b) = (rig.cluster, rig.client, rig.machines[0], rig.machines[1])
        try await rig.startAll()
        try a.suite("s").set("before", forKey: "k")
        try await converge([a, b], client, prefix: Self.prefix)

        // etcd stops; both sides write; etcd comes back: both writes arrive everywhere.
        await cluster.stop(0)
        try a.suite("s").set("offline-a", forKey: "k")
        try b.suite("s").set("offline-b", forKey: "other")
        try b.suite("s").setValue(nil, forKey: "gone-never-existed")
        try await cluster.restart(0)
        var final = try await converge([a, b], client, prefix: Self.prefix)
        #expect(final == ["s/k": #""offline-a""#, "s/other": #""offline-b""#])

        // suite-sync is killed; a local write and a remote write of another key while it
        // is down; it reconciles both when it starts again.
        await a.kill()
        try a.suite("s").set(42, forKey: "while-down")
        try a.suite("s").setValue(nil, forKey: "other")
        try b.suite("s").set("from-b", forKey: "k")
        try await eventually(.seconds(20), "b's write in etcd") {
            try await etcdValues(client, prefix: Self.prefix).values["s/k"] == #""from-b""#
        }
        try await a.start()
        final = try await converge([a, b], client, prefix: Self.prefix)
        #expect(final == ["s/k": #""from-b""#, "s/while-down": "42"])
    }

    /// A removal made while suite-sync was down, of a value it had applied just before
    /// it was killed (between its mirrored commit and the save that agrees on it): the
    /// local value equals the old base, as if the change had never been applied, but the
    /// journal holds the mirror's commit, so the removal is a local change and is sent.
    @Test func aRemovalWhileDownOfAValueAppliedJustBeforeAKillIsSent() async throws {
        let rig = try await MirrorRig(["a", "b"], prefix: Self.prefix, suites: ["s"])
        let (client, a, b) = (rig.client, rig.machines[0], rig.machines[1])
        try await rig.startAll()
        let sequence = try a.suite("s").lastCommitSequence
        let pid = try #require(a.process).pid
        try b.suite("s").set("from-b", forKey: "other")
        try await converge([a, b], client, prefix: Self.prefix)
        let statePath = Self.statePath(of: a)
        try await eventually(.seconds(20), "a's state agreeing on other", describe: { "\(try Self.readState(statePath))" }) {
            let state = try Self.readState(statePath)
            return (state["base"] as? [String: Any])?["other"] != nil && (state["pending"] as? [String: Any])?.isEmpty == true
        }
        await a.kill()

        // What a kill in that window leaves: the change still pending, the base not yet it.
        var state = try Self.readState(statePath)
        var base = try #require(state["base"] as? [String: Any])
        let entry = try #require(base["other"])
        base["other"] = nil
        state["base"] = base
        state["pending"] = ["other": entry]
        state["pendingAfter"] = sequence
        state["pendingBy"] = pid
        try Self.writeState(state, statePath)

        try a.suite("s").setValue(nil, forKey: "other")
        try await a.start()
        let final = try await converge([a, b], client, prefix: Self.prefix)
        #expect(final["s/other"] == nil, "\(final)")
    }

    /// A change written ahead whose mirrored commit never happened (killed between the
    /// two) is applied on restart, though the suite had an unrelated commit since.
    @Test func aValueWrittenAheadButNotAppliedBeforeAKillIsAppliedOnRestart() async throws {
        let rig = try await MirrorRig(["a", "b"], prefix: Self.prefix, suites: ["s"])
        let (client, a, b) = (rig.client, rig.machines[0], rig.machines[1])
        try await rig.startAll()
        let pid = try #require(a.process).pid
        await a.kill()
        try b.suite("s").set("from-b", forKey: "other")
        var remote: EtcdKeyValue?
        try await eventually(.seconds(20), "b's write in etcd") {
            remote = try await client.range(key: Data("\(Self.prefix)/s/other".utf8), rangeEnd: nil).keyValues.first
            return remote != nil
        }
        let suite = try a.suite("s")
        let sequence = suite.lastCommitSequence
        try suite.set(1, forKey: "unrelated")

        let statePath = Self.statePath(of: a)
        var state = try Self.readState(statePath)
        state["pending"] = ["other": ["value": String(decoding: try #require(remote).value, as: UTF8.self),
                                      "modRevision": try #require(remote).modRevision] as [String: Any]]
        state["pendingAfter"] = sequence
        state["pendingBy"] = pid
        try Self.writeState(state, statePath)

        try await a.start()
        let final = try await converge([a, b], client, prefix: Self.prefix)
        #expect(final == ["s/other": #""from-b""#, "s/unrelated": "1"])
    }

    /// A removal made while suite-sync was down, just after its put of the key's first
    /// value was acknowledged by etcd but before the base was saved (the log as such a kill
    /// leaves it: its last record dropped). The local value, absent, equals the base the
    /// restart finds (none), as if nothing had changed here, but the send written ahead
    /// says the key held another value since: the removal is sent, not undone by applying
    /// the value sent.
    @Test func aRemovalAfterASendWhoseBaseAKillNeverSavedIsSent() async throws {
        let rig = try await MirrorRig(["a", "b"], prefix: Self.prefix, suites: ["s"])
        let (client, a, b) = (rig.client, rig.machines[0], rig.machines[1])
        try await rig.startAll()
        try a.suite("s").set("first", forKey: "k")
        let statePath = Self.statePath(of: a)
        try await eventually(.seconds(20), "a's state agreeing on k", describe: { "\(try Self.readState(statePath))" }) {
            ((try Self.readState(statePath)["base"] as? [String: Any])?["k"] as? [String: Any])?["value"] as? String == #""first""#
        }
        try await converge([a, b], client, prefix: Self.prefix)
        await a.kill()

        // The kill came after etcd took the put, before the record of its base.
        let logPath = MirrorStateFiles.logPath(ofStatePath: statePath)
        let log = try #require(FileManager.default.contents(atPath: logPath))
        let (start, payload) = try #require(Self.lastRecord(of: log))
        let record = try Self.stateObject(payload)
        #expect((record["base"] as? [String: Any])?["k"] != nil, "the last record is not the base of k: \(record)")
        #expect(truncate(logPath, off_t(start)) == 0)
        #expect((try Self.readState(statePath)["base"] as? [String: Any])?["k"] == nil)

        try a.suite("s").setValue(nil, forKey: "k")
        try await a.start()
        let final = try await converge([a, b], client, prefix: Self.prefix)
        #expect(final["s/k"] == nil, "\(final)")
    }

    /// A key changed on both sides while suite-sync was down: the restart sends the local
    /// value. Where that send does not happen at once (here etcd refuses the value, over
    /// its request limit; in a loaded run, the restart's other sends go first) and the
    /// user meanwhile sets the key back to the value last agreed, that is sent too: the
    /// base took etcd's value when the restart decided, so the old one does not look like
    /// no change while etcd holds another.
    @Test func aLocalChangeBackToTheOldBaseAfterARestartFoundBothSidesChangedIsSent() async throws {
        let rig = try await MirrorRig(["a", "b"], prefix: Self.prefix, suites: ["s"])
        let (client, a, b) = (rig.client, rig.machines[0], rig.machines[1])
        try await rig.startAll()
        try a.suite("s").set("agreed", forKey: "k")
        try await converge([a, b], client, prefix: Self.prefix)
        await a.kill()

        try b.suite("s").set("from-b", forKey: "k")
        try await eventually(.seconds(20), "b's write in etcd") {
            try await etcdValues(client, prefix: Self.prefix).values["s/k"] == #""from-b""#
        }
        try a.suite("s").set(String(repeating: "x", count: 2 << 20), forKey: "k")
        let mirror = try await a.start()
        #expect(mirror.lines.contains { $0.contains("\"error\"") && $0.contains("not sent") }, "\(mirror.lines.suffix(5))")

        try a.suite("s").set("agreed", forKey: "k")
        let final = try await converge([a, b], client, prefix: Self.prefix)
        #expect(final["s/k"] == #""agreed""#, "\(final)")
    }

    /// Where the last record of a state log's bytes starts, and its payload; nil when it
    /// holds only its header.
    static func lastRecord(of log: Data) -> (start: Int, payload: Data)? {
        let bytes = [UInt8](log)
        var offset = 8, records: [(start: Int, payload: Data)] = []
        while offset + 8 <= bytes.count {
            let length = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
            guard offset + 8 + length <= bytes.count else { break }
            records.append((offset, Data(bytes[offset + 8..<offset + 8 + length])))
            offset += 8 + length
        }
        // The first record is the header.
        return records.count > 1 ? records.last : nil
    }

    /// Where `machine` keeps the sync state of suite `s` under `prefix`.
    static func statePath(of machine: Machine, prefix: String = Self.prefix) -> String {
        machine.directory.url.appendingPathComponent(MirrorHostileTests.stateFileName("s", prefix: prefix)).path
    }

    /// The state at `path` as a mirror starting now would find it: the state file with
    /// its log replayed.
    static func readState(_ path: String) throws -> [String: Any] {
        try stateObject(MirrorStateFiles.currentStateJSON(statePath: path))
    }

    /// A state's JSON as an object.
    static func stateObject(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    /// Makes `state` the whole state at `path`: written as the state file, its log
    /// removed (a missing log leaves the state file as it is).
    static func writeState(_ state: [String: Any], _ path: String) throws {
        try JSONSerialization.data(withJSONObject: state, options: [.sortedKeys]).write(to: URL(fileURLWithPath: path))
        let logPath = MirrorStateFiles.logPath(ofStatePath: path)
        #expect(unlink(logPath) == 0 || errno == ENOENT)
    }

    @Test func suiteSyncKilledMidStream100TimesLosesNothingAndDoesNotEcho() async throws {
        let rig = try await MirrorRig(["a", "b"], prefix: Self.prefix, suites: ["s"])
        let (client, a, b) = (rig.client, rig.machines[0], rig.machines[1])
        try await rig.startAll()
        let before = try await etcdValues(client, prefix: Self.prefix).revision

        // The writer: keys w.0 ... w.19 on machine a, each write acknowledged when set returned.
        let stop = Locked(false)
        let writer = Task.detached(executorPreference: ThreadsOfItsOwnExecutor.shared) { () throws -> (count: Int, last: [String: Int]) in
            let suite = try a.suite("s")
            var last: [String: Int] = [:]
            var count = 0
            while !stop.value {
                let key = "w.\(count % 20)"
                try suite.set(count, forKey: key)
                last[key] = count
                count += 1
                usleep(1000)
            }
            return (count, last)
        }
        var generator = SystemRandomNumberGenerator()
        for kill in 0..<100 {
            let machine = kill % 2 == 0 ? a : b
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...40, using: &generator)))
            await machine.kill()
            try await machine.start(waitUntilWatching: kill % 10 == 9)
        }
        stop.value = true
        let (count, last) = try await writer.value
        for machine in [a, b] where machine.process == nil { try await machine.start() }
        let final = try await converge([a, b], client, prefix: Self.prefix, within: .seconds(60))
        for (key, value) in last { #expect(final["s/\(key)"] == "\(value)", "\(key)") }
        let after = try await etcdValues(client, prefix: Self.prefix).revision
        #expect(after - before <= Int64(count), "\(after - before) revisions for \(count) writes: an echo")
        // And nothing goes on writing once everything agrees.
        try await Task.sleep(for: .milliseconds(300))
        #expect(try await etcdValues(client, prefix: Self.prefix).revision == after)
    }

    @Test func syncGoesOnWhenTheLeaderOfA3MemberClusterIsKilled() async throws {
        let cluster = try await EtcdCluster.start(size: 3)
        let leader = try #require(await cluster.leader(), "no leader")
        // Both machines start on the leader, so that its death moves requests and watches.
        let endpoints = [cluster.endpoints[leader]] + cluster.endpoints.indices.filter { $0 != leader }.map { cluster.endpoints[$0] }
        let a = Machine("a", endpoints: endpoints, prefix: Self.prefix, suites: ["s"])
        let b = Machine("b", endpoints: endpoints, prefix: Self.prefix, suites: ["s"])
        try await a.start()
        try await b.start()
        let survivors = cluster.endpoints.indices.filter { $0 != leader }.map { cluster.endpoints[$0] }
        let client = try EtcdClient(configuration: EtcdConfiguration(endpoints: survivors, requestTimeout: .seconds(3)))
        try a.suite("s").set("before", forKey: "k")
        try await converge([a, b], client, prefix: Self.prefix)

        await cluster.kill(leader)
        for round in 0..<20 {
            try a.suite("s").set("a-\(round)", forKey: "k")
            try b.suite("s").set(round, forKey: "b.\(round % 3)")
        }
        let final = try await converge([a, b], client, prefix: Self.prefix, within: .seconds(60))
        #expect(final["s/k"] == #""a-19""# && final["s/b.1"] == "19")
    }

    @Test func aWatchResumedPastACompactionReadsEverythingAgain() async throws {
        let cluster = try await EtcdCluster.start(size: 3)
        let leader = try #require(await cluster.leader(), "no leader")
        let follower = (leader + 1) % 3
        let others = cluster.endpoints.indices.filter { $0 != follower }.map { cluster.endpoints[$0] }
        // b reaches etcd only through one member; a and the test through the others.
        let a = Machine("a", endpoints: others, prefix: Self.prefix, suites: ["s"])
        let b = Machine("b", endpoints: [cluster.endpoints[follower]], prefix: Self.prefix, suites: ["s"])
        let client = try EtcdClient(configuration: EtcdConfiguration(endpoints: others, requestTimeout: .seconds(3)))
        try await a.start()
        try await b.start()
        try a.suite("s").set("one", forKey: "k")
        try a.suite("s").set(true, forKey: "gone")
        try await converge([a, b], client, prefix: Self.prefix)

        // b's member dies; a changes, sets and removes keys; etcd compacts its history.
        await cluster.kill(follower)
        try a.suite("s").set("two", forKey: "k")
        try a.suite("s").setValue(nil, forKey: "gone")
        for index in 0..<10 { try a.suite("s").set(index, forKey: "n.\(index)") }
        try await eventually(.seconds(20), "a's writes in etcd") {
            try await etcdValues(client, prefix: Self.prefix).values.count == 11
        }
        let revision = try await etcdValues(client, prefix: Self.prefix).revision
        try await client.compact(upTo: revision)
        // The member comes back: b's watch from its last revision is compacted; it reads again.
        try await cluster.restart(follower)
        let final = try await converge([a, b], client, prefix: Self.prefix, within: .seconds(60))
        #expect(final["s/k"] == #""two""# && final["s/gone"] == nil && final.count == 11)
        #expect(b.lines.contains { $0.contains("compact") }, "\(b.lines.suffix(5))")
        // b stores what it read before it reports the reconciliation, so the values can
        // converge before the line arrives.
        try await eventually(.seconds(10), "b's second reconciliation") {
            b.lines.filter { $0.contains("\"reconciled\"") }.count == 2
        }
    }

    @Test func garbageInEtcdIsSkippedAndTheSuiteIsUntouched() async throws {
        let rig = try await MirrorRig(["a"], prefix: Self.prefix, suites: ["s"])
        let (client, a) = (rig.client, rig.machines[0])
        try await a.start()
        try a.suite("s").set("kept", forKey: "good")
        try await eventually(.seconds(20), "the good key in etcd") {
            try await etcdValues(client, prefix: Self.prefix).values["s/good"] == #""kept""#
        }

        let secret = "SECRET-VALUE-TEXT"
        let deep = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        let garbage: [(String, Data)] = [
            ("s/notjson", Data("{\(secret)".utf8)),
            ("s/badtype", Data(#"{"$date": "\#(secret)"}"#.utf8)),
            ("s/deep", Data(deep.utf8)),
            ("s/notutf8", Data([0xFF, 0xFE, 0x22])),
            ("s/", Data(#""\#(secret)""#.utf8)),
            ("s/nul\u{0}key", Data(#""\#(secret)""#.utf8)),
            ("s/" + String(repeating: "k", count: Suite.maximumKeyLength + 1), Data(#""\#(secret)""#.utf8)),
            ("s/e\u{301}-not-nfc", Data(#""\#(secret)""#.utf8)),
            ("no-suite-part", Data(#""\#(secret)""#.utf8)),
            ("s/good", Data("not json at all \(secret)".utf8)),
        ]
        for (key, value) in garbage { try await client.put(Data("\(Self.prefix)/\(key)".utf8), value: value) }
        try await client.put(Data("\(Self.prefix)/s/".utf8) + Data([0xC3, 0x28]), value: Data(#""\#(secret)""#.utf8))
        // A valid change after the garbage arrives: the process is alive and past it.
        try await client.put(Data("\(Self.prefix)/s/after".utf8), value: Data("7".utf8))
        try await eventually(.seconds(20), "the valid change after the garbage") { try a.values("s")["after"] == "7" }
        let seen = try a.values("s")
        #expect(seen == ["good": #""kept""#, "after": "7"], "\(seen.keys.sorted())")
        let skipped = a.lines.filter { $0.contains("\"skipped\"") }
        #expect(skipped.count >= garbage.count, "\(skipped)")
        #expect(!a.lines.contains { $0.contains(secret) } && !(a.process?.standardError.contains(secret) ?? false))

        // Restarted, it reads the garbage in its full read, skips it again, and keeps the suite.
        await a.kill()
        try await a.start()
        #expect(try a.values("s") == ["good": #""kept""#, "after": "7"])
        #expect(a.process?.wait(timeout: .zero) == nil)
        #expect(!a.lines.contains { $0.contains(secret) })
    }
}

/// A value behind a lock, for flags shared with a detached task.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
