import Foundation
import SuiteDefaults
import ToolSupport

extension Bench {
    /// A write that other processes see when it returns, on a 100-key suite.
    func setRow() throws -> BenchRow {
        let suite = try self.suite("set", keys: 100)
        let ours = try measureEach(options.samples(20_000, quick: 2_000), warmUp: 500) { index in
            let (key, value) = Bench.write(index)
            try suite.set(value, forKey: key)
        }
        let defaults = foundationSuite("set", keys: 100)
        let foundation = measureEach(options.samples(2_000, quick: 200), warmUp: 20) { index in
            let (key, value) = Bench.write(index)
            defaults.set(value, forKey: key)
            defaults.synchronize()
        }
        let floor = Floor.appendUnderLock(options.samples(20_000, quick: 2_000), in: root)
        let systemCalls = Floor.commitSystemCalls(options.samples(20_000, quick: 2_000), in: root)
        return BenchRow(name: "set", ours: .init(ours)!, foundation: .init(foundation), floor: .init(floor),
                        note: "set(_:forKey:) on a 100-key suite; Foundation: set + synchronize(); floor: flock + 100-byte append + unlock; our commit's five system calls alone (flock, the status of two files, pwrite, unlock): \(Report.format(systemCalls.median, unit: "µs"))",
                        systemCalls: .init(systemCalls))
    }

    /// A read that is fresh across processes, and Foundation's two kinds of read.
    func getRows() throws -> [BenchRow] {
        let suite = try self.suite("get", keys: 100)
        let batches = options.samples(400, quick: 40)
        var found = 0
        let ours = measureBatches(batches, of: 1_000) { index in
            if suite.string(forKey: Bench.keys[index % 100]) != nil { found += 1 }
        }
        let defaults = foundationSuite("get", keys: 100)
        let cached = measureBatches(batches, of: 1_000) { index in
            if defaults.string(forKey: Bench.keys[index % 100]) != nil { found += 1 }
        }
        let synchronized = measureEach(options.samples(2_000, quick: 200), warmUp: 20) { index in
            defaults.synchronize()
            if defaults.string(forKey: Bench.keys[index % 100]) != nil { found += 1 }
        }
        let floor = Floor.sharedLoad(batches: batches, in: root)
        precondition(found > 0)
        return [
            BenchRow(name: "get", ours: .init(ours)!, foundation: .init(cached), floor: .init(floor),
                     note: "string(forKey:), fresh across processes (per call, timed in batches of 1,000); Foundation: its cached get, which is stale (never sees another process's write); floor: an 8-byte acquire load from a shared mapping"),
            BenchRow(name: "get_foundation_sync", ours: .init(ours)!, foundation: .init(synchronized), floor: .init(floor),
                     note: "ours as in get; Foundation: synchronize() + get, its fresh read"),
        ]
    }

    /// The seed's own figure: 100 writes in a row (time for all 100).
    func writes100Row() throws -> BenchRow {
        let suite = try self.suite("writes100", keys: 100)
        let rounds = options.samples(200, quick: 20)
        var ours = Samples()
        for round in 0..<rounds {
            let start = monotonicNanoseconds()
            for index in 0..<100 {
                let (key, value) = Bench.write(round * 100 + index)
                try suite.set(value, forKey: key)
            }
            ours.add(Double(monotonicNanoseconds() - start) / 1_000)
        }
        let defaults = foundationSuite("writes100", keys: 100)
        var foundation = Samples()
        for round in 0..<options.samples(10, quick: 3) {
            let start = monotonicNanoseconds()
            for index in 0..<100 {
                let (key, value) = Bench.write(round * 100 + index)
                defaults.set(value, forKey: key)
                defaults.synchronize()
            }
            foundation.add(Double(monotonicNanoseconds() - start) / 1_000)
        }
        let single = Floor.appendUnderLock(rounds * 100, in: root)
        let floor = Samples(stride(from: 0, to: single.values.count - 99, by: 100).map { single.values[$0..<($0 + 100)].reduce(0, +) })
        return BenchRow(name: "writes100", ours: .init(ours)!, foundation: .init(foundation), floor: .init(floor),
                        note: "100 persisted writes in a row, total time; an M1 Mac's UserDefaults took 27 ms")
    }

    /// Read-modify-write in one process, with no one else writing.
    func updateRow() throws -> BenchRow {
        let suite = try self.suite("update", keys: 100)
        let ours = try measureEach(options.samples(20_000, quick: 2_000), warmUp: 500) { _ in
            try suite.update { tx in try tx.set((tx.integer(forKey: "counter") ?? 0) + 1, forKey: "counter") }
        }
        let defaults = foundationSuite("update", keys: 100)
        let foundation = measureEach(options.samples(2_000, quick: 200), warmUp: 20) { _ in
            defaults.synchronize()
            defaults.set(defaults.integer(forKey: "counter") + 1, forKey: "counter")
            defaults.synchronize()
        }
        let floor = Floor.appendUnderLock(options.samples(20_000, quick: 2_000), in: root)
        return BenchRow(name: "update", ours: .init(ours)!, foundation: .init(foundation), floor: .init(floor),
                        note: "update { read, +1, write }, uncontended; Foundation: synchronize, get, set, synchronize (not atomic)")
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
