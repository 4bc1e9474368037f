import Foundation
import Glibc
import ToolSupport

/// Durations in microseconds, and their percentiles.
struct Samples: Sendable {
    private(set) var values: [Double] = []

    init(_ values: [Double] = []) {
        self.values = values
    }

    mutating func add(_ microseconds: Double) { values.append(microseconds) }
    mutating func add(contentsOf microseconds: [Double]) { values += microseconds }

    var isEmpty: Bool { values.isEmpty }

    /// The value below which `fraction` of the samples lie (nearest rank).
    func percentile(_ fraction: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = Int((fraction * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }

    var median: Double? { percentile(0.5) }
    var p99: Double? { percentile(0.99) }
    var maximum: Double? { values.max() }
}

/// Times each call of `body` on its own, after `warmUp` calls that are not timed.
func measureEach(_ count: Int, warmUp: Int = 0, _ body: (Int) throws -> Void) rethrows -> Samples {
    for index in 0..<warmUp { try body(index) }
    return try measureEach(0..<count, warmUp: 0, body)
}

/// Times each call of `body` on its own, for each of `indices`, after `warmUp` calls
/// that are not timed. The warm-up calls get indices 3,200 further on: a write's value
/// then differs from the one the timed call of the same key writes next (`Bench.write`).
func measureEach(_ indices: Range<Int>, warmUp: Int, _ body: (Int) throws -> Void) rethrows -> Samples {
    for index in indices.lowerBound..<(indices.lowerBound + warmUp) { try body(index + Bench.warmUpShift) }
    var samples = Samples()
    for index in indices {
        let start = monotonicNanoseconds()
        try body(index)
        samples.add(Double(monotonicNanoseconds() - start) / 1_000)
    }
    return samples
}

/// Times batches of `batch` calls and keeps the time per call of each batch: for
/// operations so short that reading the clock around each would dominate.
func measureBatches(_ batches: Int, of batch: Int, _ body: (Int) -> Void) -> Samples {
    measureBatches(0..<batches, of: batch, body)
}

/// `measureBatches` of the batches numbered `batches`, after one batch that is not timed.
func measureBatches(_ batches: Range<Int>, of batch: Int, _ body: (Int) -> Void) -> Samples {
    for index in 0..<batch { body(index) }
    var samples = Samples()
    for round in batches {
        let start = monotonicNanoseconds()
        for index in 0..<batch { body(round &* batch &+ index) }
        samples.add(Double(monotonicNanoseconds() - start) / 1_000 / Double(batch))
    }
    return samples
}
