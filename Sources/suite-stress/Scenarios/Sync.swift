import ChildProcess
import Foundation
import Glibc
import LocalEtcd
@_spi(Tools) import SuiteDefaults
import ToolSupport

/// Machines that follow each other through etcd (Docs/Sync.md). Each machine is a suite
/// directory of its own with its own `suite-sync` process and a writer process, all on a
/// real etcd that the scenario starts on loopback (one member, or a cluster whose leader
/// is killed midway). The writers commit to keys every machine writes and to their own,
/// and set and remove, while `suite-sync` processes are SIGKILLed at random instants and
/// started again. Once the writers stop: every machine's suite must equal the prefix in
/// etcd; each own key must hold its writer's last acknowledged write, and each shared key
/// the last acknowledged write of one of the writers (etcd's order decides which); etcd
/// must have taken no more revisions than there were local writes plus what the restarts'
/// reconciliations sent, and none once everything agrees (no echo).
enum SyncScenario {
    static let suite = "sync"
    static let prefix = "/suite-stress"
    static let sharedKeys = 8
    static let ownKeys = 16

    struct Settings {
        var machines: Int
        var members: Int
        var writes: Int
        var kills: Int
    }

    static func run(_ stress: StressRun) throws -> [ScenarioResult] {
        var result = ScenarioResult(scenario: "sync")
        guard LocalEtcd.executable != nil else {
            result.skipped = "etcd not installed (\(LocalEtcd.installCommand))"
            return [result]
        }
        let options = stress.options
        let settings = Settings(machines: options.machines ?? (options.quick ? 2 : 3), members: options.members ?? 1,
                                writes: options.count(options.iterations, quick: 200, normal: 2_000),
                                kills: options.kills ?? (options.quick ? 10 : 50))
        try timed({ result in try once(stress, settings, &result) }, &result)
        return [result]
    }

    private static func once(_ stress: StressRun, _ settings: Settings, _ result: inout ScenarioResult) throws {
        let seed = UInt64(getpid()) &* 0x9E37_79B9 &+ UInt64(monotonicNanoseconds() % 1_000_000)
        var random = SplitMix64(seed: seed)
        let etcd = try LocalEtcd.start(members: settings.members, in: stress.root)
        defer { etcd.shutDown() }
        // With a cluster, every machine starts on the leader, so that its death moves them.
        var endpoints = etcd.endpoints
        if settings.members >= 3 {
            guard let leader = etcd.leader() else { throw ToolError(status: 1, message: "the etcd cluster elected no leader") }
            endpoints = [endpoints[leader]] + endpoints.indices.filter { $0 != leader }.map { endpoints[$0] }
        }
        let machines = try (0..<settings.machines).map { index in
            try SyncMachine(index, directory: stress.freshDirectory("machine-\(index)"), endpoints: endpoints)
        }
        defer { for machine in machines { machine.kill() } }
        for machine in machines { try machine.start(waitUntilWatching: true) }
        guard let before = etcd.range(prefix: prefix + "/")?.revision else { throw ToolError(status: 1, message: "etcd did not answer") }

        let writers = try machines.map { machine in
            try stress.worker("sync-writer", in: machine.directory, [
                "suite": suite, "prefix": "m\(machine.index)", "keys": "\(ownKeys)", "shared": "\(sharedKeys)",
                "pause-micros": "1000", "seed": "\(random.next() % 1_000_000_000)",
            ])
        }
        defer { for writer in writers { writer.kill() } }
        for writer in writers where writer.line(startingWith: "ready") == nil { result.crashed += 1 }
        for writer in writers { writer.send("go\n") }

        // The kills, at random instants while the writers write; every tenth restart
        // waits until it watches, the others are killed again whenever chance says.
        var leaderKilled = false
        func killLeader() {
            guard settings.members >= 3, !leaderKilled, let leader = etcd.leader() else { return }
            etcd.kill(leader)
            leaderKilled = true
        }
        for kill in 0..<settings.kills {
            usleep(UInt32(random.next() % 40_000))
            if kill == settings.kills / 2 { killLeader() }
            let machine = machines[Int(random.next() % UInt64(machines.count))]
            machine.kill()
            try machine.start(waitUntilWatching: kill % 10 == 9)
        }
        if settings.members >= 3 && !leaderKilled {
            _ = writers[0].waitForLines(timeout: .seconds(600)) { acknowledged($0) >= settings.writes / 2 }
            killLeader()
        }
        for (index, writer) in writers.enumerated()
        where !writer.waitForLines(timeout: .seconds(600), until: { acknowledged($0) >= settings.writes }) {
            result.fail("machine \(index)'s writer did not reach \(settings.writes) writes: \(writer.lines.suffix(2)) \(writer.standardError.suffix(300))")
        }
        for writer in writers { writer.send("stop\n") }
        for writer in writers {
            result.errors += ChildProcess.fields(writer.line(startingWith: "done", within: .seconds(60)))["errors"] ?? 0
            if !writer.endedCleanly() { result.crashed += 1 }
        }

        // Every machine's suite-sync runs again (one that ended on its own crashed), and
        // they converge.
        for machine in machines { try machine.ensureRunning() }
        let convergeStart = ContinuousClock.now
        var remote: [String: String] = [:]
        var after: Int64 = 0
        var converged = false
        while ContinuousClock.now < convergeStart + .seconds(120) {
            if let read = etcdValues(etcd) {
                (remote, after) = read
                if try machines.allSatisfy({ try $0.values() == remote }) {
                    converged = true
                    break
                }
            }
            usleep(20_000)
        }
        let convergeTime = ContinuousClock.now - convergeStart
        if !converged {
            for machine in machines {
                let local = try machine.values()
                let differing = Set(local.keys).union(remote.keys).filter { local[$0] != remote[$0] }.sorted()
                if !differing.isEmpty { result.fail("machine \(machine.index) differs from etcd after 120 s in \(differing.prefix(5))") }
            }
        }
        // Nothing goes on writing once everything agrees.
        usleep(500_000)
        if let quiet = etcdValues(etcd), quiet.revision != after {
            result.fail("etcd went on from revision \(after) to \(quiet.revision) after convergence: an echo")
        }

        // Every acknowledged write's last value where the conflict rule says.
        var writes = 0
        var last: [[String: String?]] = []
        var everWritten: [String: Set<String>] = [:]
        for writer in writers {
            var own: [String: String?] = [:]
            for line in writer.lines where line.hasPrefix("ack ") {
                let fields = line.split(separator: " ").map(String.init)
                guard fields.count == 4 else { continue }
                writes += 1
                own[fields[2]] = fields[3] == "-" ? String?.none : quoted(fields[3])
                if fields[3] != "-" { everWritten[fields[2], default: []].insert(quoted(fields[3])) }
            }
            last.append(own)
        }
        let keys = Set(last.flatMap(\.keys)).union(remote.keys)
        for key in keys.sorted() {
            let final = remote[key]
            // Own keys: their writer's last; shared ones: the last of one of the writers.
            let candidates: [String?] = last.compactMap { $0[key] }
            guard !candidates.contains(final) else { continue }
            if let final, !(everWritten[key]?.contains(final) ?? false) {
                result.torn += 1
                result.fail("\(key) holds \(final), which no writer wrote")
            } else {
                result.lost += 1
                result.fail("\(key) holds \(final ?? "nothing"), not a last acknowledged write (\(candidates.map { $0 ?? "removed" }))")
            }
        }

        // No echo: revisions within the writes and what reconciliations sent.
        let statusLines = machines.flatMap(\.lines)
        var reconcileSends = 0
        for line in statusLines where line.contains("\"event\":\"reconciled\"") {
            if let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
               let sent = object["sent"] as? Int {
                reconcileSends += sent
            }
        }
        let revisions = Int(after - before), bound = writes + reconcileSends
        if revisions > bound { result.fail("etcd took \(revisions) revisions for \(writes) writes and \(reconcileSends) reconciliation sends: an echo") }
        for machine in machines { result.crashed += machine.crashed }
        // SIGTERM stops each with status 0.
        for machine in machines where !machine.terminate() {
            result.fail("machine \(machine.index)'s suite-sync did not exit 0 on SIGTERM")
        }
        result.operations = writes
        result.figure("machines", settings.machines)
        result.figure("members", settings.members)
        result.figure("kills", settings.kills)
        result.figure("leader_killed", leaderKilled ? 1 : 0)
        result.figure("slowest_converge_ms", Int(convergeTime.components.seconds * 1_000 + convergeTime.components.attoseconds / 1_000_000_000_000_000))
        result.figure("revisions", revisions)
        result.figure("revisions_bound", bound)
        result.figure("reconcile_sends", reconcileSends)
        result.figure("sent", statusLines.filter { $0.contains("\"event\":\"sent\"") }.count)
        result.figure("applied", statusLines.filter { $0.contains("\"event\":\"applied\"") }.count)
        result.figure("superseded", statusLines.filter { $0.contains("\"event\":\"superseded\"") }.count)
        result.figure("sync_error_lines", statusLines.filter { $0.contains("\"event\":\"error\"") }.count)
        result.figure("keys", remote.count)
    }

    /// The number of writes a writer acknowledged, from its last "ack N ..." line.
    static func acknowledged(_ lines: [String]) -> Int {
        guard let line = lines.last(where: { $0.hasPrefix("ack ") }) else { return 0 }
        return (Int(line.split(separator: " ")[1]) ?? -1) + 1
    }

    /// A writer's value as its typed JSON (a string).
    static func quoted(_ value: String) -> String { "\"\(value)\"" }

    /// etcd's values under the scenario's suite, as "KEY" → typed JSON text, and its revision.
    static func etcdValues(_ etcd: LocalEtcd) -> (values: [String: String], revision: Int64)? {
        let keyPrefix = "\(prefix)/\(suite)/"
        guard let range = etcd.range(prefix: prefix + "/") else { return nil }
        var values: [String: String] = [:]
        for (key, value) in range.values where key.hasPrefix(keyPrefix) {
            values[String(key.dropFirst(keyPrefix.count))] = String(decoding: value, as: UTF8.self)
        }
        return (values, range.revision)
    }
}

/// One machine of the sync scenario: a suite directory and its `suite-sync` process.
final class SyncMachine {
    let index: Int
    let directory: URL
    private let arguments: [String]
    private let suite: Suite
    private(set) var process: ChildProcess?
    private var finishedLines: [String] = []
    /// suite-sync processes that ended without being killed.
    private(set) var crashed = 0

    static let program = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        ?? CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("suite-sync").path

    init(_ index: Int, directory: URL, endpoints: [String]) throws {
        guard access(Self.program, X_OK) == 0 else {
            throw ToolError(status: 1, message: "no suite-sync beside suite-stress (\(Self.program)); build it with `swift build`")
        }
        self.index = index
        self.directory = directory
        arguments = ["--endpoints", endpoints.joined(separator: ","), "--prefix", SyncScenario.prefix, "--dir", directory.path,
                     "--json", SyncScenario.suite]
        suite = try Suite(named: SyncScenario.suite, directory: directory)
    }

    /// Starts suite-sync; with `waitUntilWatching`, returns once it reconciled and watches.
    func start(waitUntilWatching: Bool) throws {
        let started = try ChildProcess(executable: Self.program, arguments: arguments)
        started.closeInput()
        process = started
        guard waitUntilWatching else { return }
        guard started.waitForLine(timeout: .seconds(60), where: { $0.contains("\"event\":\"watching\"") }) != nil else {
            throw ToolError(status: 1, message: "machine \(index)'s suite-sync did not start watching: \(started.lines.suffix(3)) \(started.standardError.suffix(500))")
        }
    }

    /// SIGKILLs the running suite-sync and reaps it; one that had ended on its own crashed.
    func kill() {
        guard let running = process else { return }
        process = nil
        if running.kill() != .signaled(SIGKILL) { crashed += 1 }
        finishedLines += running.lines
    }

    /// Makes sure a suite-sync runs and watches.
    func ensureRunning() throws {
        if let running = process, running.wait(timeout: .zero) != nil { kill() }
        if process == nil { try start(waitUntilWatching: true) }
    }

    /// Stops suite-sync with SIGTERM; whether it exited with status 0.
    func terminate() -> Bool {
        guard let running = process else { return true }
        process = nil
        running.signal(SIGTERM)
        let ended = running.wait(timeout: .seconds(10))
        if ended == nil { running.kill() }
        finishedLines += running.lines
        return ended == .exited(0)
    }

    /// Every status line of every suite-sync this machine ran.
    var lines: [String] { finishedLines + (process?.lines ?? []) }

    /// The suite's values as typed JSON text, by key.
    func values() throws -> [String: String] {
        suite.storedValues().mapValues { $0.jsonText(style: .typed) }
    }
}
