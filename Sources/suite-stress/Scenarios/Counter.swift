import ChildProcess
import Foundation
import SuiteDefaults
import WorkerRoles

/// N processes × T threads, each doing K read-increment-write updates of one key:
/// the count must end at exactly N×T×K.
enum CounterScenario {
    static func run(_ stress: StressRun) throws -> [ScenarioResult] {
        let options = stress.options
        let processes = options.count(options.processes, quick: 4, normal: 8)
        let threads = options.count(options.threads, quick: 2, normal: 4)
        let iterations = options.count(options.iterations, quick: 2_500, normal: 5_000)
        return try stress.oursThenFoundation { foundation in try once(stress, foundation: foundation, processes, threads, iterations) }
    }

    private static func once(_ stress: StressRun, foundation: Bool, _ processes: Int, _ threads: Int, _ iterations: Int) throws -> ScenarioResult {
        var result = ScenarioResult(scenario: "counter", foundation: foundation)
        let directory = stress.freshDirectory("counter-\(result.subject)")
        let expected = processes * threads * iterations
        try timed({ result in
            let workers = try (0..<processes).map { _ in
                try stress.worker(foundation ? "fd-increment" : "increment", in: directory,
                                  ["suite": "counter", "threads": "\(threads)", "count": "\(iterations)"])
            }
            stress.runTogether(workers, into: &result)
        }, &result)
        let final = foundation ? (FoundationStore.storedValues(suiteName: "counter", directory: directory)?["counter"] as? Int ?? 0)
            : (try Suite(named: "counter", directory: directory).integer(forKey: "counter") ?? 0)
        result.operations = expected
        result.lost = max(0, expected - final)
        result.torn = max(0, final - expected)
        result.figure("final", final)
        if !foundation && final != expected { result.fail("the counter ended at \(final), not \(expected)") }
        return result
    }
}
