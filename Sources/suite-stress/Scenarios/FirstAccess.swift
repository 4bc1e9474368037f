import ChildProcess
import Foundation
import SuiteDefaults
import WorkerRoles
import UnitPreferences

/// Many trials. In each, on a fresh suite, several processes ask for the shared unit
/// system (`UnitSystem.current(in:)`, detecting metric), while another stores the
/// user's explicit choice, imperial, at the same moment. The acknowledged choice must
/// never be lost, and every getter must answer the value that ends up stored, or the
/// one stored before the choice.
enum FirstAccessScenario {
    static func run(_ stress: StressRun) throws -> [ScenarioResult] {
        let options = stress.options
        let trials = options.count(options.iterations, quick: 2_000, normal: 5_000)
        let getters = options.count(options.processes, quick: 3, normal: 3)
        return try stress.oursThenFoundation { foundation in try once(stress, foundation: foundation, trials, getters) }
    }

    private static func once(_ stress: StressRun, foundation: Bool, _ trials: Int, _ getterCount: Int) throws -> ScenarioResult {
        var result = ScenarioResult(scenario: "first-access", foundation: foundation)
        let directory = stress.freshDirectory("first-\(result.subject)")
        try timed({ result in
            // Long-lived processes, each told "go SUITE" per trial: the four act on the
            // same fresh suite at the same moment.
            let getters = try (0..<getterCount).map { _ in
                try stress.worker(foundation ? "fd-getter" : "getter", in: directory, ["suite": "unused", "lang": "de_DE.UTF-8"])
            }
            let setter = try stress.worker(foundation ? "fd-setter" : "setter", in: directory, ["suite": "unused"])
            let everyone = getters + [setter]
            for process in everyone where process.line(startingWith: "ready") == nil { result.crashed += 1 }
            for trial in 0..<trials {
                let name = "trial\(trial)"
                for process in everyone { process.send("go \(name)\n") }
                guard setter.line(startingWith: "set \(name)") != nil else {
                    result.crashed += 1
                    break
                }
                let answers = getters.map { $0.line(startingWith: "got \(name)").map { String($0.split(separator: " ").last ?? "") } }
                let stored = foundation ? FoundationStore.storedValues(suiteName: name, directory: directory)?["units.system"] as? String
                    : try Suite(named: name, directory: directory).string(forKey: SuiteKey.unitSystem.name)
                if stored != "imperial" { result.lost += 1 }
                for answer in answers {
                    guard let answer else { result.crashed += 1; continue }
                    if answer == "error" { result.errors += 1 } else if answer != stored && answer != "metric" { result.torn += 1 }
                }
            }
            for process in everyone { process.closeInput() }
            for process in everyone where !process.endedCleanly() { result.crashed += 1 }
        }, &result)
        result.operations = trials * (getterCount + 1)
        result.figure("trials", trials)
        result.figure("choice_lost", result.lost)
        if !foundation && result.lost + result.torn > 0 {
            result.fail("the user's acknowledged choice was lost in \(result.lost) trials")
        }
        return result
    }
}
