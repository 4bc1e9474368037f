import Foundation
import SuiteDefaults

extension Bench {
    /// The set cost as the suite grows; each row's figure is the set median at that size.
    func scalingRows() throws -> [BenchRow] {
        var rows: [BenchRow] = []
        for (name, keys, bigValue) in [("scale_10", 10, false), ("scale_1000", 1_000, false), ("scale_10000", 10_000, false),
                                        ("scale_1mib_value", 100, true)] {
            let suite = try self.suite(name, keys: keys)
            if bigValue { try suite.set(Data(count: 1 << 20), forKey: "big") }
            let ours = try measureEach(options.samples(5_000, quick: 500), warmUp: 200) { index in
                let (key, value) = Bench.write(index)
                try suite.set(value, forKey: key)
            }
            let defaults = foundationSuite(name, keys: keys)
            if bigValue { defaults.set(Data(count: 1 << 20), forKey: "big") }
            let foundation = measureEach(options.samples(keys >= 10_000 || bigValue ? 100 : 500, quick: 20), warmUp: 5) { index in
                let (key, value) = Bench.write(index)
                defaults.set(value, forKey: key)
                defaults.synchronize()
            }
            let size = bigValue ? "100 keys and one 1 MiB value" : "\(keys) keys"
            rows.append(BenchRow(name: name, ours: .init(ours)!, foundation: .init(foundation), floor: nil,
                                 note: "set on a suite of \(size); Foundation: set + synchronize(), which rewrites the whole file"))
        }
        return rows
    }
}
