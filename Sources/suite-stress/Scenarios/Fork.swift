import ChildProcess
import Foundation
import SuiteDefaults

/// A process forks N children while one of its threads is inside a transaction,
/// holding the suite's locks; then the parent and every child run T threads × K
/// increments. No increment may be lost: a child has locks of its own, and never
/// releases or inherits the parent's.
enum ForkScenario {
    static func run(_ stress: StressRun) throws -> [ScenarioResult] {
        let options = stress.options
        let rounds = options.count(options.iterations, quick: 3, normal: 20)
        let children = options.count(options.processes, quick: 2, normal: 3)
        let threads = options.count(options.threads, quick: 2, normal: 2)
        let increments = options.quick ? 100 : 500
        var result = ScenarioResult(scenario: "fork")
        try timed({ result in
            for round in 0..<rounds {
                let directory = stress.freshDirectory("fork-\(round)")
                let worker = try stress.worker("fork-increment", in: directory,
                                               ["suite": "forked", "children": "\(children)", "threads": "\(threads)", "count": "\(increments)"])
                let report = ChildProcess.fields(worker.line(startingWith: "done", within: .seconds(600)))
                if !worker.endedCleanly() || report["failed"] != 0 { result.crashed += 1 }
                guard let made = report["done"] else {
                    result.fail("round \(round): the forking process did not finish: \(worker.standardError)")
                    continue
                }
                let final = try Suite(named: "forked", directory: directory).integer(forKey: "counter") ?? 0
                result.operations += made
                result.lost += max(0, made - final)
                result.torn += max(0, final - made)
                if final != made { result.fail("round \(round): the counter ended at \(final), not \(made)") }
            }
        }, &result)
        result.figure("rounds", rounds)
        result.figure("processes_per_round", children + 1)
        return [result]
    }
}
