import ChildProcess
import Foundation
import Glibc
import LocalEtcd
import SuiteDefaults
import ToolSupport

/// Two machines through etcd (Docs/Sync.md): a local etcd started here on loopback, and
/// for each row two suite directories, "machine A" (this process writes there) and
/// "machine B", each with its own `suite-sync` process.
extension Bench {
    /// What the rows say where `etcd` is not on PATH.
    static let etcdNotInstalled = "not installed (apt-get install etcd-server)"

    /// sync_latency and sync_throughput; without etcd, both with the not-installed note.
    func syncRows() throws -> [BenchRow] {
        guard LocalEtcd.executable != nil else {
            return ["sync_latency", "sync_throughput"].map {
                BenchRow(name: $0, ours: .init(median: .nan, p99: nil), foundation: nil, floor: nil, note: Self.etcdNotInstalled)
            }
        }
        let etcd = try LocalEtcd.start(in: root)
        defer { etcd.shutDown() }
        return [try syncLatencyRow(etcd), try syncThroughputRow(etcd)]
    }

    /// From `set` returning on machine A to the observer, another process on machine B,
    /// receiving the change: one change at a time, the next once the last arrived and
    /// 1–3 ms more.
    private func syncLatencyRow(_ etcd: LocalEtcd) throws -> BenchRow {
        let changes = options.samples(200, quick: 30)
        let pair = try SyncPair(self, etcd, name: "latency")
        defer { pair.stop() }
        let watcher = try worker("watch", ["suite": SyncPair.suite, "count": "\(changes)", "dir": pair.b.path])
        _ = try watcher.expect("ready")
        var returned: [UInt64] = []
        for sequence in 0..<changes {
            try pair.suiteA.set(sequence, forKey: "t")
            returned.append(monotonicNanoseconds())
            _ = try watcher.expect("got \(sequence) ", within: .seconds(30))
            usleep(1_000 + UInt32.random(in: 0..<2_000))
        }
        var latencies = Samples()
        latencies.add(contentsOf: Self.deliveryLatencies(reportedBy: watcher, returned: returned))
        watcher.closeInput()
        _ = watcher.wait(timeout: .seconds(60))
        guard latencies.values.count == changes, let figure = BenchRow.Figure(latencies) else {
            throw ToolError(status: 1, message: "machine B's observer received \(latencies.values.count) of \(changes) changes")
        }
        return BenchRow(name: "sync_latency", ours: figure, foundation: nil, floor: nil,
                        note: String(format: "from set returning on machine A to an observer (another process) on machine B receiving it, through a local etcd (one member, its data on %@) and two suite-sync processes; %d changes, one at a time, 1–3 ms after the last arrived; max %.0f µs",
                                     fileSystem(of: root), changes, latencies.maximum ?? 0))
    }

    /// Changes per second carried from machine A to machine B: A writes `changes` keys as
    /// fast as it can, each its own commit; timed from the first write to B's observer
    /// receiving the last, then every key checked on B and in etcd.
    private func syncThroughputRow(_ etcd: LocalEtcd) throws -> BenchRow {
        let changes = options.samples(2_000, quick: 200)
        let pair = try SyncPair(self, etcd, name: "throughput")
        defer { pair.stop() }
        let suiteB = try Suite(named: SyncPair.suite, directory: pair.b)
        final class Arrivals: @unchecked Sendable {
            let lock = NSLock()
            var seen = Set<Int>()
            var lastAt: UInt64 = 0
            let done = DispatchSemaphore(value: 0)
        }
        let arrivals = Arrivals()
        let token = try suiteB.observe { change in
            guard case .integer(let value)? = change.newValue, change.key == "n.\(value)" else { return }
            let now = monotonicNanoseconds()
            let complete = arrivals.lock.withLock {
                arrivals.seen.insert(value)
                arrivals.lastAt = now
                return arrivals.seen.count == changes
            }
            if complete { arrivals.done.signal() }
        }
        let start = monotonicNanoseconds()
        for index in 0..<changes { try pair.suiteA.set(index, forKey: "n.\(index)") }
        let written = monotonicNanoseconds()
        guard arrivals.done.wait(timeout: .now() + 120) == .success else {
            let count = arrivals.lock.withLock { arrivals.seen.count }
            throw ToolError(status: 1, message: "machine B received \(count) of \(changes) changes within 120 s")
        }
        token.cancel()
        let seconds = Double(arrivals.lock.withLock { arrivals.lastAt } - start) / 1e9
        // Every change on B and in etcd, with its value.
        let expected = Dictionary(uniqueKeysWithValues: (0..<changes).map { ("n.\($0)", SuiteValue.integer($0)) })
        guard suiteB.storedValues() == expected else { throw ToolError(status: 1, message: "machine B's suite is not what A wrote") }
        let inEtcd = etcd.range(prefix: "\(pair.prefix)/\(SyncPair.suite)/")?.values ?? [:]
        guard inEtcd.count == changes, (0..<changes).allSatisfy({ inEtcd["\(pair.prefix)/\(SyncPair.suite)/n.\($0)"] == Data("\($0)".utf8) })
        else { throw ToolError(status: 1, message: "etcd holds \(inEtcd.count) of \(changes) keys, or wrong values") }
        return BenchRow(name: "sync_throughput", ours: .init(median: Double(changes) / seconds, p99: nil), foundation: nil, floor: nil,
                        note: String(format: "changes per second carried from machine A to an observer on machine B: %d sets of distinct keys as fast as A can (%.0f/s locally), timed to the last one's arrival on B; all %d arrived, every value checked on B and in etcd",
                                     changes, Double(changes) / (Double(written - start) / 1e9), changes))
    }
}

/// The file system of the longest mount point that holds `directory` (where etcd keeps its data).
private func fileSystem(of directory: URL) -> String {
    let mounts = ((try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? "").split(separator: "\n")
        .map { $0.split(separator: " ").map(String.init) }.filter { $0.count >= 3 }
    return mounts.filter { directory.path.hasPrefix($0[1]) }.max { $0[1].count < $1[1].count }?[2] ?? "an unknown file system"
}

/// Machines A and B of one row: two suite directories, each with its own `suite-sync`
/// on the etcd, mirroring one suite under a prefix of the row's own.
private final class SyncPair {
    static let suite = "sync"
    static let program = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        ?? CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("suite-sync").path

    let a: URL
    let b: URL
    let prefix: String
    let suiteA: Suite
    private var processes: [ChildProcess] = []

    init(_ bench: Bench, _ etcd: LocalEtcd, name: String) throws {
        guard access(Self.program, X_OK) == 0 else {
            throw ToolError(status: 1, message: "no suite-sync beside suite-bench (\(Self.program)); build it with `swift build`")
        }
        prefix = "/suite-bench/\(name)"
        a = bench.root.appendingPathComponent("sync-\(name)-a", isDirectory: true)
        b = bench.root.appendingPathComponent("sync-\(name)-b", isDirectory: true)
        for directory in [a, b] { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
        suiteA = try Suite(named: Self.suite, directory: a)
        for directory in [a, b] {
            let process = try ChildProcess(executable: Self.program, arguments: [
                "--endpoints", etcd.endpoints.joined(separator: ","), "--prefix", prefix, "--dir", directory.path, "--json", Self.suite,
            ])
            process.closeInput()
            processes.append(process)
            guard process.waitForLine(timeout: .seconds(60), where: { $0.contains("\"event\":\"watching\"") }) != nil else {
                throw ToolError(status: 1, message: "suite-sync did not start watching: \(process.lines.suffix(3)) \(process.standardError.suffix(300))")
            }
        }
    }

    /// Stops both suite-sync processes (SIGTERM, then SIGKILL if one lingers) and reaps them.
    func stop() {
        for process in processes { process.signal(SIGTERM) }
        for process in processes where process.wait(timeout: .seconds(10)) == nil { process.kill() }
        processes.removeAll()
    }
}
