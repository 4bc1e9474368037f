import ChildProcess
import Foundation
import SuiteDefaults

/// Mutation-based fuzzing of the file decoder in worker processes: none may crash,
/// and what the decoder reports must fit the bytes.
enum FuzzScenario {
    static func run(_ stress: StressRun) throws -> [ScenarioResult] {
        let options = stress.options
        let inputs = options.count(options.iterations, quick: 300_000, normal: 1_000_000)
        let processes = options.count(options.processes, quick: 2, normal: 2)
        let seed = UInt64(getpid()) &* 0x9E37_79B9
        var result = ScenarioResult(scenario: "fuzz")
        try timed({ result in
            let share = (inputs + processes - 1) / processes
            let workers = try (0..<processes).map { index in
                try stress.worker("fuzz", in: stress.freshDirectory("fuzz-\(index)"),
                                  ["suite": "fuzz", "seed": "\(seed)", "from": "\(index * share)", "to": "\(min(inputs, (index + 1) * share))"])
            }
            for (index, worker) in workers.enumerated() {
                let summary = ChildProcess.fields(worker.line(startingWith: "done", within: .seconds(7_200)))
                result.operations += summary["done"] ?? 0
                result.torn += summary["violations"] ?? 0
                if !worker.endedCleanly() {
                    result.crashed += 1
                    result.fail("a fuzz worker crashed on inputs \(index * share)..<\((index + 1) * share) of seed \(seed): \(worker.standardError.suffix(500))")
                }
            }
        }, &result)
        result.figure("seed", Int(truncatingIfNeeded: seed))
        if result.torn > 0 { result.fail("\(result.torn) inputs were decoded inconsistently") }
        return [result]
    }
}
