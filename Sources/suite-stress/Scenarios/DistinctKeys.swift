import ChildProcess
import Foundation
import SuiteDefaults
import WorkerRoles

/// Each of N writers owns a key range and writes it: no key may be lost or reverted.
enum DistinctKeysScenario {
    static func run(_ stress: StressRun) throws -> [ScenarioResult] {
        let options = stress.options
        let processes = options.count(options.processes, quick: 4, normal: 8)
        let keys = options.count(options.iterations, quick: 2_500, normal: 5_000)
        return try stress.oursThenFoundation { foundation in try once(stress, foundation: foundation, processes, keys) }
    }

    private static func once(_ stress: StressRun, foundation: Bool, _ processes: Int, _ keys: Int) throws -> ScenarioResult {
        var result = ScenarioResult(scenario: "distinct-keys", foundation: foundation)
        let directory = stress.freshDirectory("keys-\(result.subject)")
        try timed({ result in
            let workers = try (0..<processes).map { index in
                try stress.worker(foundation ? "fd-write-keys" : "write-keys", in: directory,
                                  ["suite": "keys", "prefix": "w\(index)", "count": "\(keys)"])
            }
            stress.runTogether(workers, into: &result)
        }, &result)
        result.operations = processes * keys
        if foundation {
            let stored = FoundationStore.storedValues(suiteName: "keys", directory: directory) ?? [:]
            for writer in 0..<processes {
                for key in 0..<keys where stored["w\(writer).\(key)"] as? Int != key { result.lost += 1 }
            }
        } else {
            let stored = try Suite(named: "keys", directory: directory).storedValues()
            for writer in 0..<processes {
                for key in 0..<keys {
                    switch stored["w\(writer).\(key)"] {
                    case .integer(key)?: break
                    case nil: result.lost += 1
                    default: result.torn += 1
                    }
                }
            }
            if result.lost + result.torn > 0 { result.fail("\(result.lost) keys lost and \(result.torn) reverted") }
        }
        return result
    }
}
