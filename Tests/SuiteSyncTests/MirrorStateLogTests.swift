import ChildProcess
import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults
@_spi(Tools) import SuiteSync
import Testing
import TestSupport

/// The log that continues `suite-sync`'s state file (`NAME.suite.synclog-HASH`): a tail a
/// kill left torn, garbage and other hostile files at its name, and its compaction into
/// the state file, with real `suite-sync` processes and a real etcd.
@Suite("suite-sync's state log", .onThreadsOfItsOwn, .needsEtcd, .serialized)
struct MirrorStateLogTests {
    static let prefix = "/suite-defaults/statelog"

    static func statePath(of machine: Machine, prefix: String = Self.prefix) -> String {
        SuiteMirrorTests.statePath(of: machine, prefix: prefix)
    }

    static func logPath(of machine: Machine, prefix: String = Self.prefix) -> String {
        MirrorStateFiles.logPath(ofStatePath: statePath(of: machine, prefix: prefix))
    }

    /// The state file alone, as JSON, without its log.
    static func snapshot(_ path: String) throws -> [String: Any] {
        try SuiteMirrorTests.stateObject(try #require(FileManager.default.contents(atPath: path)))
    }

    /// Each base entry of `state` as "VALUE@MOD_REVISION" (VALUE the typed JSON text, or null).
    static func base(_ state: [String: Any]) -> [String: String] {
        ((state["base"] as? [String: Any]) ?? [:]).mapValues { entry in
            let entry = entry as? [String: Any] ?? [:]
            return "\((entry["value"] as? String) ?? "null")@\(entry["modRevision"].map { "\($0)" } ?? "?")"
        }
    }

    /// A record's framing as the log writes it, for a payload of `length` bytes: length,
    /// then 4 bytes standing for the checksum.
    static func recordHeader(length: UInt32, checksum: UInt32 = 0x1234_5678) -> Data {
        var data = Data()
        withUnsafeBytes(of: length.littleEndian) { data.append(contentsOf: $0) }
        withUnsafeBytes(of: checksum.littleEndian) { data.append(contentsOf: $0) }
        return data
    }

    static func append(_ data: Data, to path: String) throws {
        let handle = try #require(FileHandle(forWritingAtPath: path))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: data)
    }

    /// Sets `keys` on `machine` and waits until its state (with the log) agrees on each.
    static func setAndWaitForTheBase(_ keys: [String: String], on machine: Machine, _ client: EtcdClient) async throws {
        for (key, value) in keys.sorted(by: { $0.key < $1.key }) { try machine.suite("s").set(value, forKey: key) }
        let path = statePath(of: machine)
        try await eventually(.seconds(20), "the state agreeing on \(keys.keys.sorted())",
                             describe: { "\(base(try SuiteMirrorTests.readState(path)).keys.sorted())" }) {
            let state = base(try SuiteMirrorTests.readState(path))
            return keys.allSatisfy { key, value in state[key]?.hasPrefix(#""\#(value)"@"#) == true }
        }
    }

    /// `suite-sync --once` on `machine`, 20 s at most.
    static func once(_ machine: Machine) async throws -> ProgramRun {
        try await blocking { try run(program: "suite-sync", machine.arguments + ["--once"], within: .seconds(20)) }
    }

    /// A kill that cut a record short leaves a torn tail: the restart ignores it, keeps
    /// every step before it (acknowledged: their bases are there, nothing is sent again),
    /// starts the log afresh, and goes on in both directions.
    @Test func aTornLogTailAfterAKillIsIgnoredAndNothingAcknowledgedIsLost() async throws {
        let rig = try await MirrorRig(["a", "b"], prefix: Self.prefix, suites: ["s"])
        let (client, a, b) = (rig.client, rig.machines[0], rig.machines[1])
        try await rig.startAll()
        let keys = Dictionary(uniqueKeysWithValues: (0..<5).map { ("k\($0)", "v\($0)") })
        try await Self.setAndWaitForTheBase(keys, on: a, client)
        try await converge([a, b], client, prefix: Self.prefix)
        let statePath = Self.statePath(of: a), logPath = Self.logPath(of: a)
        // The steps are in the log only: the state file was written once, at the start.
        #expect(Self.base(try Self.snapshot(statePath))["k4"] == nil)
        let acknowledged = Self.base(try SuiteMirrorTests.readState(statePath))
        await a.kill()

        // A record cut short: its length runs past the end, whatever follows.
        let torn = Data(#"{"base":{"k0":{"torn-tail-marker"#.utf8)
        try Self.append(Self.recordHeader(length: 400) + torn, to: logPath)
        let revision = try await etcdValues(client, prefix: Self.prefix).revision
        let restarted = try await a.start()
        let restartedState = Self.base(try SuiteMirrorTests.readState(statePath))
        for (key, entry) in acknowledged { #expect(restartedState[key] == entry, "\(key)") }
        #expect(!restarted.lines.contains { $0.contains(#""event":"sent""#) || $0.contains(#""event":"error""#) }, "\(restarted.lines)")
        #expect(try await etcdValues(client, prefix: Self.prefix).revision == revision)

        // The log was started afresh, and takes the next steps both ways.
        try b.suite("s").set("from-b", forKey: "k0")
        try a.suite("s").set("from-a", forKey: "k1")
        let final = try await converge([a, b], client, prefix: Self.prefix)
        #expect(final["s/k0"] == #""from-b""# && final["s/k1"] == #""from-a""#, "\(final)")
        let log = try #require(FileManager.default.contents(atPath: logPath))
        #expect(log.range(of: torn) == nil)
        await a.kill()
        let again = try await a.start()
        #expect(!again.lines.contains { $0.contains(#""event":"sent""#) }, "\(again.lines)")
        #expect(Self.base(try SuiteMirrorTests.readState(statePath))["k0"]?.hasPrefix(#""from-b"@"#) == true)
    }

    /// Garbage at the log's name is refused with a clear error (status 3, like a state
    /// file that cannot be read) and left as it is; so are a FIFO (at once, not waited
    /// on), a symbolic link and another prefix's log. Garbage after whole records (a
    /// huge length, a whole record with a wrong checksum) ends the log there: what came
    /// before is kept, the damage is reported, and the log is started afresh.
    @Test func garbageAndHostileFilesAtTheLogsNameAreRefusedOrEndTheLog() async throws {
        let rig = try await MirrorRig(["a"], prefix: Self.prefix, suites: ["s"])
        let (client, a) = (rig.client, rig.machines[0])
        try await a.start()
        try await Self.setAndWaitForTheBase(["k": "one", "l": "two"], on: a, client)
        await a.kill()
        let statePath = Self.statePath(of: a), logPath = Self.logPath(of: a)
        let goodLog = try #require(FileManager.default.contents(atPath: logPath))
        let goodState = try #require(FileManager.default.contents(atPath: statePath))

        // Garbage: refused, both files left as they were.
        var generator = SystemRandomNumberGenerator()
        let garbage = Data((0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) })
        try garbage.write(to: URL(fileURLWithPath: logPath))
        var refused = try await Self.once(a)
        #expect(refused.status == .exited(3), "\(refused.status.map(\.description) ?? "hung"); \(refused.errors)")
        #expect(refused.errors.contains("sync state log") && refused.errors.contains("not readable"), "\(refused.errors)")
        #expect(FileManager.default.contents(atPath: logPath) == garbage)
        #expect(FileManager.default.contents(atPath: statePath) == goodState)

        // A FIFO: refused at once; a symbolic link: refused, not followed.
        #expect(unlink(logPath) == 0 && mkfifo(logPath, 0o600) == 0)
        refused = try await Self.once(a)
        #expect(refused.status == .exited(3), "\(refused.status.map(\.description) ?? "hung"); \(refused.errors)")
        #expect(refused.errors.contains("not a regular file"), "\(refused.errors)")
        let target = a.directory.url.appendingPathComponent("elsewhere").path
        try goodLog.write(to: URL(fileURLWithPath: target))
        #expect(unlink(logPath) == 0 && symlink(target, logPath) == 0)
        refused = try await Self.once(a)
        #expect(refused.status == .exited(3), "\(refused.status.map(\.description) ?? "hung"); \(refused.errors)")
        #expect(refused.errors.contains("symbolic link"), "\(refused.errors)")
        #expect(unlink(logPath) == 0)

        // Another prefix's log (copied to this one's name): refused, naming the prefix.
        let other = Machine("other", endpoints: rig.cluster.endpoints, prefix: Self.prefix + "-other", suites: ["s"])
        try other.suite("s").set("x", forKey: "k")
        let otherRun = try await Self.once(other)
        #expect(otherRun.status == .exited(0), "\(otherRun.errors)")
        try #require(FileManager.default.contents(atPath: Self.logPath(of: other, prefix: Self.prefix + "-other")))
            .write(to: URL(fileURLWithPath: logPath))
        refused = try await Self.once(a)
        #expect(refused.status == .exited(3), "\(refused.status.map(\.description) ?? "hung"); \(refused.errors)")
        #expect(refused.errors.contains("belongs to the prefix \(Self.prefix)-other"), "\(refused.errors)")
        let revision = try await etcdValues(client, prefix: Self.prefix).revision  // The other prefix's write counts.

        // Whole records, then a length of almost 4 GiB: a torn tail, silently ended there.
        try (goodLog + Self.recordHeader(length: 0xFFFF_FFF0) + garbage.prefix(100)).write(to: URL(fileURLWithPath: logPath))
        var taken = try await Self.once(a)
        #expect(taken.status == .exited(0), "\(taken.status.map(\.description) ?? "hung"); \(taken.errors)")
        #expect(!taken.lines.contains { $0.contains(#""event":"sent""#) || $0.contains(#""event":"error""#) }, "\(taken.lines)")

        // Whole records, then a whole one whose checksum is wrong: reported, ended there.
        let logNow = try #require(FileManager.default.contents(atPath: logPath))
        try (logNow + Self.recordHeader(length: 20) + Data(repeating: 0x41, count: 20) + garbage.prefix(50))
            .write(to: URL(fileURLWithPath: logPath))
        taken = try await Self.once(a)
        #expect(taken.status == .exited(0), "\(taken.status.map(\.description) ?? "hung"); \(taken.errors)")
        #expect(taken.lines.contains { $0.contains(#""event":"error""#) && $0.contains("damaged") }, "\(taken.lines)")
        #expect(!taken.lines.contains { $0.contains(#""event":"sent""#) }, "\(taken.lines)")
        #expect(try await etcdValues(client, prefix: Self.prefix).revision == revision)
        let state = Self.base(try SuiteMirrorTests.readState(statePath))
        #expect(state["k"]?.hasPrefix(#""one"@"#) == true && state["l"]?.hasPrefix(#""two"@"#) == true, "\(state)")
    }

    /// Steps past the compaction threshold (256 KiB for a small state) fold the log into
    /// the state file; the state survives a restart across it: nothing is sent again, a
    /// remote change made while down is applied, a local one afterwards is sent.
    @Test func theLogIsCompactedIntoTheStateFileAndTheStateSurvivesARestart() async throws {
        let rig = try await MirrorRig(["a", "b"], prefix: Self.prefix, suites: ["s"])
        let (client, a, b) = (rig.client, rig.machines[0], rig.machines[1])
        try await rig.startAll()
        let statePath = Self.statePath(of: a), logPath = Self.logPath(of: a)
        let logAtStart = try #require(FileManager.default.contents(atPath: logPath))
        #expect(logAtStart.count < 1024)

        // 12 values of 30 KB each: 360 KB of records, more than the threshold.
        let big = Dictionary(uniqueKeysWithValues: (0..<12).map { ("big\($0)", String(repeating: "\($0 % 10)", count: 30_000)) })
        try await Self.setAndWaitForTheBase(big, on: a, client)
        try await converge([a, b], client, prefix: Self.prefix)
        let snapshotBase = Self.base(try Self.snapshot(statePath))
        #expect(snapshotBase.keys.filter { $0.hasPrefix("big") }.count >= 8, "compacted: \(snapshotBase.keys.sorted())")
        let logSize = try #require(FileManager.default.contents(atPath: logPath)).count
        #expect(logSize < 256 << 10, "\(logSize)")
        let before = Self.base(try SuiteMirrorTests.readState(statePath))

        await a.kill()
        try b.suite("s").set("while-down", forKey: "big0")
        try await eventually(.seconds(20), "b's change in etcd") {
            try await etcdValues(client, prefix: Self.prefix).values["s/big0"] == #""while-down""#
        }
        let restarted = try await a.start()
        #expect(!restarted.lines.contains { $0.contains(#""event":"sent""#) }, "\(restarted.lines)")
        try a.suite("s").set("after", forKey: "big1")
        let final = try await converge([a, b], client, prefix: Self.prefix)
        #expect(final["s/big0"] == #""while-down""# && final["s/big1"] == #""after""#)
        let after = Self.base(try SuiteMirrorTests.readState(statePath))
        for key in before.keys where key != "big0" && key != "big1" { #expect(after[key] == before[key], "\(key)") }
    }
}
