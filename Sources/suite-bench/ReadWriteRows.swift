import Foundation
import SuiteDefaults
import ToolSupport

extension Bench {
    /// A write that other processes see when it returns, on a 100-key suite.
    func setRow() throws -> BenchRow {
        let suite = try self.suite("set", keys: 100)
        let peers = try peerTurns("set")
        var turns = Turns()
        turns.add(.ours) { indices in
            try measureEach(indices, warmUp: 100) { index in
                let (key, value) = Bench.write(index)
                try suite.set(value, forKey: key)
            }
        }
        turns.add(.floor) { Floor.appendUnderLock($0.count, in: root) }
        turns.add(.systemCalls) { Floor.commitSystemCalls($0.count, in: root) }
        for peer in peers { turns.add(.peer(peer.peer), peer.measure) }
        let samples = try turns.run(options.samples(20_000, quick: 2_000))
        // Foundation's set takes a thousand times as long; it does not take turns.
        let defaults = foundationSuite("set", keys: 100)
        let foundation = measureEach(options.samples(2_000, quick: 200), warmUp: 20) { index in
            let (key, value) = Bench.write(index)
            defaults.set(value, forKey: key)
            defaults.synchronize()
        }
        let systemCalls = samples[.systemCalls] ?? Samples()
        return BenchRow(name: "set", ours: .init(samples[.ours] ?? Samples())!, foundation: .init(foundation),
                        floor: samples[.floor].flatMap(BenchRow.Figure.init),
                        note: "set(_:forKey:) on a 100-key suite; Foundation: set + synchronize(); floor: flock + 100-byte append + unlock; our commit's five system calls alone (flock, a read of the process's inotify instance, lseek of the data file, pwrite, unlock): \(Report.format(systemCalls.median, unit: "µs"))",
                        peers: peerColumns(peers, samples), systemCalls: .init(systemCalls))
    }

    /// A read that is fresh across processes, and Foundation's two kinds of read.
    func getRows() throws -> [BenchRow] {
        let suite = try self.suite("get", keys: 100)
        let defaults = foundationSuite("get", keys: 100)
        let peers = try peerTurns("get")
        var found = 0
        var turns = Turns()
        turns.add(.ours) { batches in
            measureBatches(batches, of: 1_000) { index in
                if suite.string(forKey: Bench.keys[index % 100]) != nil { found += 1 }
            }
        }
        turns.add(.foundation) { batches in
            measureBatches(batches, of: 1_000) { index in
                if defaults.string(forKey: Bench.keys[index % 100]) != nil { found += 1 }
            }
        }
        turns.add(.floor) { Floor.sharedLoad(batches: $0.count, in: root) }
        for peer in peers { turns.add(.peer(peer.peer), peer.measure) }
        let samples = try turns.run(options.samples(400, quick: 40))
        let synchronized = measureEach(options.samples(2_000, quick: 200), warmUp: 20) { index in
            defaults.synchronize()
            if defaults.string(forKey: Bench.keys[index % 100]) != nil { found += 1 }
        }
        precondition(found > 0)
        let ours = BenchRow.Figure(samples[.ours] ?? Samples())!, floor = samples[.floor].flatMap(BenchRow.Figure.init)
        let peerColumns = peerColumns(peers, samples)
        return [
            BenchRow(name: "get", ours: ours, foundation: samples[.foundation].flatMap(BenchRow.Figure.init), floor: floor,
                     note: "string(forKey:), fresh across processes (per call, timed in batches of 1,000); Foundation: its cached get, which is stale (never sees another process's write); floor: an 8-byte acquire load from a shared mapping",
                     peers: peerColumns),
            BenchRow(name: "get_foundation_sync", ours: ours, foundation: .init(synchronized), floor: floor,
                     note: "ours as in get; Foundation: synchronize() + get, its fresh read",
                     peers: peerColumns?.map { .init(peer: $0.peer, figure: $0.figure, note: "the same reads as in get") }),
        ]
    }

    /// The seed's own figure: 100 writes in a row (time for all 100).
    func writes100Row() throws -> BenchRow {
        let suite = try self.suite("writes100", keys: 100)
        let peers = try peerTurns("writes100")
        var turns = Turns()
        turns.add(.ours) { rounds in try measureWrites100(rounds) { key, value in try suite.set(value, forKey: key) } }
        turns.add(.floor) { rounds in
            let single = Floor.appendUnderLock(rounds.count * 100, in: root).values
            return Samples(stride(from: 0, to: single.count - 99, by: 100).map { single[$0..<($0 + 100)].reduce(0, +) })
        }
        for peer in peers { turns.add(.peer(peer.peer), peer.measure) }
        let samples = try turns.run(options.samples(200, quick: 20))
        let defaults = foundationSuite("writes100", keys: 100)
        let foundation = measureWrites100(0..<options.samples(10, quick: 3)) { key, value in
            defaults.set(value, forKey: key)
            defaults.synchronize()
        }
        return BenchRow(name: "writes100", ours: .init(samples[.ours] ?? Samples())!, foundation: .init(foundation),
                        floor: samples[.floor].flatMap(BenchRow.Figure.init),
                        note: "100 persisted writes in a row, total time; an M1 Mac's UserDefaults took 27 ms",
                        peers: peerColumns(peers, samples))
    }

    /// Read-modify-write in one process, with no one else writing.
    func updateRow() throws -> BenchRow {
        let suite = try self.suite("update", keys: 100)
        let peers = try peerTurns("update")
        var turns = Turns()
        turns.add(.ours) { indices in
            try measureEach(indices, warmUp: 100) { _ in
                try suite.update { tx in try tx.set((tx.integer(forKey: "counter") ?? 0) + 1, forKey: "counter") }
            }
        }
        turns.add(.floor) { Floor.appendUnderLock($0.count, in: root) }
        for peer in peers { turns.add(.peer(peer.peer), peer.measure) }
        let samples = try turns.run(options.samples(20_000, quick: 2_000))
        let defaults = foundationSuite("update", keys: 100)
        let foundation = measureEach(options.samples(2_000, quick: 200), warmUp: 20) { _ in
            defaults.synchronize()
            defaults.set(defaults.integer(forKey: "counter") + 1, forKey: "counter")
            defaults.synchronize()
        }
        return BenchRow(name: "update", ours: .init(samples[.ours] ?? Samples())!, foundation: .init(foundation),
                        floor: samples[.floor].flatMap(BenchRow.Figure.init),
                        note: "update { read, +1, write }, uncontended; Foundation: synchronize, get, set, synchronize (not atomic)",
                        peers: peerColumns(peers, samples))
    }

    /// A write that has reached the disk.
    func durableRow() throws -> BenchRow {
        let suite = try self.suite("durable", keys: 100, options: .init(durability: .durable))
        let ours = try measureEach(options.samples(500, quick: 50), warmUp: 10) { index in
            let (key, value) = Bench.write(index)
            try suite.set(value, forKey: key)
        }
        let floor = Floor.appendUnderLock(options.samples(500, quick: 50), in: root, sync: true)
        return BenchRow(name: "durable_set", ours: .init(ours)!, foundation: nil, floor: .init(floor),
                        note: "set with .durable (fdatasync before returning); floor: flock + append + fdatasync + unlock; Foundation offers no durable write")
    }
}

/// Rounds of 100 writes in a row, timed as a whole: one sample per round, each
/// round's writes made by `write` with the keys and values of `Bench.write`.
func measureWrites100(_ rounds: Range<Int>, _ write: (String, String) throws -> Void) rethrows -> Samples {
    var samples = Samples()
    for round in rounds {
        let start = monotonicNanoseconds()
        for index in 0..<100 {
            let (key, value) = Bench.write(round * 100 + index)
            try write(key, value)
        }
        samples.add(Double(monotonicNanoseconds() - start) / 1_000)
    }
    return samples
}
