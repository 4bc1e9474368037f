import ChildProcess
import Foundation
import SuiteDefaults

/// Writers keep a + b == 0 and a == version, changing all three in one transaction;
/// readers loop over them. No reader may see a torn state, a version going back, or
/// a state older than a write acknowledged before its read began.
enum ReadersScenario {
    static func run(_ stress: StressRun) throws -> [ScenarioResult] {
        let options = stress.options
        let writers = options.count(options.processes, quick: 2, normal: 2)
        let readers = options.count(options.threads, quick: 2, normal: 4)
        let versions = options.count(options.iterations, quick: 10_000, normal: 50_000)
        return try stress.oursThenFoundation { foundation in try once(stress, foundation: foundation, writers, readers, versions) }
    }

    private static func once(_ stress: StressRun, foundation: Bool, _ writerCount: Int, _ readerCount: Int, _ versions: Int) throws -> ScenarioResult {
        var result = ScenarioResult(scenario: "readers", foundation: foundation)
        let directory = stress.freshDirectory("readers-\(result.subject)")
        var reads = 0, stale = 0, emptyFiles = 0
        try timed({ result in
            let readers = try (0..<readerCount).map { _ in
                try stress.worker(foundation ? "fd-invariant-reader" : "invariant-reader", in: directory, ["suite": "pairs"])
            }
            let writers = try (0..<writerCount).map { _ in
                try stress.worker(foundation ? "fd-invariant-writer" : "invariant-writer", in: directory,
                                  ["suite": "pairs", "count": "\(versions / writerCount)"])
            }
            for process in readers + writers where process.line(startingWith: "ready") == nil { result.crashed += 1 }
            for writer in writers { writer.send("go\n") }
            for writer in writers where writer.line(startingWith: "done", within: .seconds(3_600)) == nil { result.crashed += 1 }
            for reader in readers { reader.send("stop\n") }
            // When each version was acknowledged: a read that began later must see it.
            var acknowledged: [(UInt64, Int)] = []
            for writer in writers {
                for line in writer.lines where line.hasPrefix("ack ") {
                    let parts = line.split(separator: " ")
                    if parts.count == 3, let version = Int(parts[1]), let time = UInt64(parts[2]) { acknowledged.append((time, version)) }
                }
                if !writer.endedCleanly() { result.crashed += 1 }
            }
            acknowledged.sort { $0.0 < $1.0 }
            var latestBefore: [Int] = []  // the highest version acknowledged by each time, in order
            for (_, version) in acknowledged { latestBefore.append(max(latestBefore.last ?? 0, version)) }
            for reader in readers {
                let summary = ChildProcess.fields(reader.line(startingWith: "reads "))
                reads += summary["reads"] ?? 0
                result.torn += summary["torn"] ?? 0
                result.lost += summary["regressions"] ?? 0
                emptyFiles += summary["empty"] ?? 0
                for line in reader.lines where line.hasPrefix("sample ") {
                    let parts = line.split(separator: " ")
                    guard parts.count == 3, let started = UInt64(parts[1]), let seen = Int(parts[2]) else { continue }
                    // The last acknowledgment strictly before the read began.
                    var low = 0, high = acknowledged.count
                    while low < high {
                        let middle = (low + high) / 2
                        if acknowledged[middle].0 < started { low = middle + 1 } else { high = middle }
                    }
                    if low > 0 && seen < latestBefore[low - 1] { stale += 1 }
                }
                if !reader.endedCleanly() { result.crashed += 1 }
            }
        }, &result)
        result.lost += stale
        result.operations = versions + reads
        result.figure("reads", reads)
        result.figure("stale_reads", stale)
        if foundation { result.figure("empty_file_reads", emptyFiles) }
        if !foundation && (result.torn > 0 || result.lost > 0) {
            result.fail("readers saw \(result.torn) torn states and \(result.lost) older than acknowledged")
        }
        return result
    }
}
