import Foundation
@_spi(Tools) import SuiteDefaults
import ToolSupport

/// Mutation-based fuzzing of the file decoder, seeded from valid suite files that the
/// library itself writes. Each input is read as a suite file; some are also opened as
/// a suite and written to, which runs the repair paths. Nothing may trap, and what
/// the decoder reports must be consistent with the bytes.
struct Fuzzer {
    let seed: UInt64

    /// Valid files of several shapes: a journal of commits, a compacted file (a
    /// snapshot, then commits), every value type, nested values.
    static func seeds(in directory: URL) -> [[UInt8]] {
        var files: [[UInt8]] = []
        func make(_ name: String, _ body: (Suite) throws -> Void) {
            guard let suite = try? Suite(named: name, directory: directory) else { return }
            try? body(suite)
            if let data = try? Data(contentsOf: suite.fileURL) { files.append([UInt8](data)) }
        }
        make("journal") { suite in
            for index in 0..<12 { try suite.set("value \(index)", forKey: "k\(index % 5)") }
            try suite.removeValue(forKey: "k1")
        }
        make("compacted") { suite in
            for index in 0..<6 { try suite.set(index, forKey: "n\(index)") }
            try suite.compact()
            try suite.set(true, forKey: "after")
            try suite.update { tx in
                try tx.set(1.5, forKey: "d")
                try tx.removeAll()
                try tx.set("x", forKey: "y")
            }
        }
        make("types") { suite in
            try suite.set(Data((0..<40).map { UInt8($0) }), forKey: "data")
            try suite.set(Date(timeIntervalSinceReferenceDate: 1234.5), forKey: "date")
            try suite.set([["a": [1, 2.5, "three"]]] as SuiteValue, forKey: "nested")
            try suite.set(encodable: ["price": Decimal(string: "68901.23")!], forKey: "json")
            try suite.set(Int.min, forKey: "min")
        }
        return files
    }

    /// Runs inputs `start ..< end`; returns how many ran and how many broke an invariant.
    func run(from start: Int, to end: Int, directory: URL) -> (Int, Int) {
        let seeds = Self.seeds(in: directory.appendingPathComponent("seeds"))
        let scratch = directory.appendingPathComponent("opened")
        try? FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        var violations = 0
        for index in start..<end {
            var random = SplitMix64(seed: seed ^ (UInt64(index) &* 0x2545_F491_4F6C_DD1D))
            let input = mutate(seeds, &random)
            let inspection = SuiteFileInspection(bytes: input)
            if !consistent(inspection, input) { violations += 1 }
            if index % 256 == 0 { open(input, in: scratch) }
        }
        for seed in seeds where SuiteFileInspection(bytes: seed).verdict != .intact { violations += 1 }
        return (end - start, violations)
    }

    private func mutate(_ seeds: [[UInt8]], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = seeds[Int(random.next() % UInt64(seeds.count))]
        func position() -> Int { bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count)) }
        for _ in 0...(random.next() % 3) {
            switch random.next() % 9 {
            case 0:  // flip bits
                for _ in 0...(random.next() % 8) where !bytes.isEmpty { bytes[position()] ^= 1 << (random.next() % 8) }
            case 1:  // interesting values
                let values: [UInt8] = [0, 0xFF, 0x7F, 0x80, 0x01]
                for _ in 0...(random.next() % 4) where !bytes.isEmpty { bytes[position()] = values[Int(random.next() % 5)] }
            case 2:  // truncate
                bytes.removeLast(bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count)))
            case 3:  // delete a range
                let from = position(), length = min(bytes.count - from, Int(random.next() % 64))
                bytes.removeSubrange(from..<(from + length))
            case 4:  // insert random bytes
                bytes.insert(contentsOf: (0..<(random.next() % 32)).map { _ in UInt8(truncatingIfNeeded: random.next()) }, at: position())
            case 5:  // duplicate a range elsewhere
                let from = position(), length = min(bytes.count - from, Int(random.next() % 128))
                bytes.insert(contentsOf: Array(bytes[from..<(from + length)]), at: position())
            case 6:  // splice two files
                let other = seeds[Int(random.next() % UInt64(seeds.count))]
                bytes = Array(bytes.prefix(position())) + Array(other.suffix(other.isEmpty ? 0 : Int(random.next() % UInt64(other.count))))
            case 7:  // a record magic where none belongs
                let at = position()
                for (offset, byte) in Array("SDR1".utf8).enumerated() where at + offset < bytes.count { bytes[at + offset] = byte }
            default:  // a large length where a length might be
                let at = position()
                let length = [UInt32.max, 0x7FFF_FFFF, 0x1_0000, UInt32(random.next() % 4096)][Int(random.next() % 4)]
                withUnsafeBytes(of: length.littleEndian) { raw in
                    for offset in 0..<4 where at + offset < bytes.count { bytes[at + offset] = raw[offset] }
                }
            }
        }
        return bytes
    }

    /// What the decoder reports must fit the bytes: records inside them, in order,
    /// not overlapping, with rising sequence numbers.
    private func consistent(_ inspection: SuiteFileInspection, _ bytes: [UInt8]) -> Bool {
        var end = 0
        var sequence: UInt64?
        for record in inspection.records {
            guard record.range.lowerBound >= end, record.range.upperBound <= bytes.count else { return false }
            if let sequence, record.sequence <= sequence { return false }
            end = record.range.upperBound
            sequence = record.sequence
        }
        return inspection.unreadableBytes <= bytes.count
    }

    /// Puts the bytes where a suite file goes and uses the suite: open, read, write.
    private func open(_ bytes: [UInt8], in directory: URL) {
        let file = directory.appendingPathComponent("fuzz.suite")
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [] {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(entry))
        }
        guard (try? Data(bytes).write(to: file)) != nil, let suite = try? Suite(named: "fuzz", directory: directory) else { return }
        _ = suite.storedValues()
        try? suite.set("written after", forKey: "fuzz.probe")
        _ = suite.storedValues()
    }
}
