import ChildProcess
import Foundation
import Glibc
import SuiteDefaults
import ToolSupport

extension Bench {
    /// Four worker processes of `role` incrementing one counter of the suite `name`
    /// `each` times, started at once: the seconds from the start to the last one done.
    func contend(_ role: String, suite name: String, each: Int) throws -> Double {
        let workers = try (0..<4).map { _ in try worker(role, ["suite": name, "count": "\(each)"]) }
        for process in workers { _ = try process.expect("ready") }
        let start = monotonicNanoseconds()
        for process in workers { process.send("go\n") }
        for process in workers { _ = try process.expect("done", within: .seconds(3_600)) }
        let seconds = Double(monotonicNanoseconds() - start) / 1e9
        for process in workers { _ = process.wait(timeout: .seconds(60)) }
        return seconds
    }

    /// How many turns each contender takes at update_contended, each with four new processes.
    static let contendedRounds = 5

    /// Four processes incrementing one counter at once: commits per second, and the
    /// count checked at the end. Ours, the floor and the peers take turns (`Turns`),
    /// each turn four new processes; a figure is all its commits over all its turns' time.
    func contendedUpdateRow() throws -> (BenchRow, verified: Bool) {
        let each = options.samples(20_000, quick: 1_000), foundationEach = options.samples(300, quick: 30)
        _ = try suite("contended", keys: 0)
        let peers = try contendedPeerTurns()
        var turns = Turns(rounds: Self.contendedRounds)
        turns.add(.ours) { Samples([try contend("contend", suite: "contended", each: $0.count)]) }
        turns.add(.floor) { Samples([try contend("floor-contend", suite: "floor.contend", each: $0.count)]) }
        for peer in peers { turns.add(.peer(peer.peer), peer.measure) }
        let seconds = try turns.run(each)
        func perSecond(_ contender: Turns.Contender) -> Double {
            Double(4 * each) / (seconds[contender]?.values.reduce(0, +) ?? .infinity)
        }
        let ours = try Suite(named: "contended", directory: root).integer(forKey: "counter") ?? 0
        let floorFinal = Floor.counter(at: root.appendingPathComponent("floor.contend").path)
        // Foundation's commits are a thousand times as slow; it does not take turns.
        UserDefaults(suiteName: "fd-contended")?.set(0, forKey: "counter")
        UserDefaults(suiteName: "fd-contended")?.synchronize()
        let foundationSeconds = try contend("fd-contend", suite: "fd-contended", each: foundationEach)
        // UserDefaults answers from its cache until synchronize() reads the file again.
        let defaults = UserDefaults(suiteName: "fd-contended")
        defaults?.synchronize()
        let foundationFinal = defaults?.integer(forKey: "counter") ?? 0
        var verified = ours == 4 * each && floorFinal == UInt64(4 * each)
        var row = BenchRow(name: "update_contended", ours: .init(median: perSecond(.ours), p99: nil),
                           foundation: .init(median: Double(4 * foundationEach) / foundationSeconds, p99: nil),
                           floor: .init(median: perSecond(.floor), p99: nil),
                           note: "commits per second (not µs) across 4 processes, in \(Self.contendedRounds) turns; ours ended at \(ours) of \(4 * each) (\(verified ? "exact" : "WRONG")), Foundation at \(foundationFinal) of \(4 * foundationEach); floor: 4 processes each taking the blocking flock, reading an 8-byte counter, writing it back plus one, unlocking (it ended at \(floorFinal))")
        if options.peers {
            row.peers = try peers.map { peer in
                let (column, exact) = try contendedPeerColumn(peer, seconds: seconds[.peer(peer.peer)], each: each)
                if !exact { verified = false }
                return column
            }
        }
        return (row, verified)
    }

    /// Process start → open the suite → first read, with a 100-key suite.
    func coldStartRow() throws -> BenchRow {
        _ = try suite("cold", keys: 100)
        _ = foundationSuite("cold", keys: 100)
        func run(_ role: String) throws -> (library: Samples, whole: Samples) {
            var library = Samples(), whole = Samples()
            for _ in 0..<options.samples(60, quick: 10) {
                let spawned = monotonicNanoseconds()
                let process = try worker(role, ["suite": "cold"])
                let fields = try process.expect("cold").split(separator: " ")
                _ = process.wait(timeout: .seconds(60))
                guard fields.count == 4, let start = UInt64(fields[1]), let read = UInt64(fields[2]), fields[3] == "true" else {
                    throw ToolError(status: 1, message: "a cold start (\(role)) did not read its value: \(fields)")
                }
                library.add(Double(read - start) / 1_000)
                whole.add(Double(read - spawned) / 1_000)
            }
            return (library, whole)
        }
        let ours = try run("cold"), foundation = try run("fd-cold"), baseline = try run("swift-baseline")
        let floor = Floor.openAndRead(options.samples(2_000, quick: 200), path: root.appendingPathComponent("cold.suite").path)
        return BenchRow(name: "cold_start", ours: .init(ours.library)!, foundation: .init(foundation.library), floor: .init(floor),
                        note: String(format: "the library part, from just before opening the suite to the first value read, in a new process; from spawn it is %.0f µs (Foundation %.0f µs); of it, a new Swift process's first dictionary insert of such a value alone takes %.0f µs; floor: open + fstat + pread + close of the file",
                                     ours.whole.median ?? 0, foundation.whole.median ?? 0, baseline.library.median ?? 0))
    }

    /// Peak resident memory of a process holding a 10,000-key suite.
    func memoryRow() throws -> BenchRow {
        _ = try suite("memory", keys: 10_000)
        _ = foundationSuite("memory", keys: 10_000)
        func run(_ role: String) throws -> (peak: Double, baseline: Double, heap: Double) {
            let fields = try worker(role, ["suite": "memory", "count": "10000"]).expect("memory").split(separator: " ")
            guard fields.count == 5, let before = Double(fields[1]), let peak = Double(fields[2]), fields[3] == "10000",
                  let heap = Double(fields[4])
            else {
                throw ToolError(status: 1, message: "a memory probe did not load 10,000 keys")
            }
            return (peak / 1_024, before / 1_024, heap / 1_048_576)
        }
        let ours = try run("memory"), foundation = try run("fd-memory")
        let dataSize = Double((try? FileManager.default.attributesOfItem(atPath: root.appendingPathComponent("memory.suite").path)[.size] as? Int) ?? 0) / 1_048_576
        return BenchRow(name: "memory", ours: .init(median: ours.peak, p99: nil), foundation: .init(median: foundation.peak, p99: nil),
                        floor: .init(median: dataSize, p99: nil),
                        note: String(format: "MiB, not µs: peak RSS (VmHWM) of a process holding a 10,000-key suite and having read every value once; %.1f MiB of it is the process before opening; the heap it holds after opening is %.2f MiB, %.1f× the file (Foundation's %.2f MiB); floor: the suite file's size",
                                     ours.baseline, ours.heap, dataSize > 0 ? ours.heap / dataSize : 0, foundation.heap))
    }
}
