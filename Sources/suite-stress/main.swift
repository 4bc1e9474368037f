// suite-stress: concurrency, crash and fault-injection runs over real processes.
//
//     suite-stress SCENARIO [--processes N] [--threads T] [--iterations K] [--duration S]
//                           [--dir DIR] [--json] [--against foundation]
//     suite-stress sync [--machines N] [--members M] [--kills K] [--iterations K]
//     suite-stress all [--quick] [--json]
//
// --duration S repeats the scenario until S seconds have passed: the long runs.
// Each scenario spawns this program as its worker processes (`suite-stress worker
// ROLE ...`) and reaps them, and ends with one summary line.
import Foundation
import Glibc
@_spi(Tools) import SuiteDefaults
import ToolSupport

let scenarios: [(String, (StressRun) throws -> [ScenarioResult])] = [
    ("counter", CounterScenario.run), ("distinct-keys", DistinctKeysScenario.run),
    ("first-access", FirstAccessScenario.run), ("readers", ReadersScenario.run), ("crash", CrashScenario.run),
    ("corrupt", CorruptScenario.run), ("notify", NotifyScenario.run), ("disk-full", DiskFullScenario.run),
    ("fuzz", FuzzScenario.run), ("fork", ForkScenario.run), ("hostile", HostileScenario.run), ("sync", SyncScenario.run),
]

let arguments = Array(CommandLine.arguments.dropFirst())
if arguments.first == "worker" {
    Worker(Array(arguments.dropFirst())).run()
}

let options: StressOptions
do {
    options = try StressOptions(StressOptions.syntax.parseCommandLine())
} catch {
    error.exit()
}
let chosen = options.scenario == "all" ? scenarios : scenarios.filter { $0.0 == options.scenario }
guard !chosen.isEmpty else { StressOptions.syntax.usageError("unknown scenario \(options.scenario)").exit() }

// Diagnostics of the repairs the scenarios provoke are counted, not printed.
SuiteDiagnostics.printsToStandardError = false
/// Runs a scenario once, or with --duration round after round until the time is up,
/// each round in a directory of its own.
func rounds(of scenario: (StressRun) throws -> [ScenarioResult]) throws -> [ScenarioResult] {
    let clock = ContinuousClock()
    let deadline = options.duration.map { clock.now + .milliseconds(Int($0 * 1000)) }
    var total: [ScenarioResult] = []
    var count = 0
    repeat {
        let run: StressRun
        do {
            run = try StressRun(options: options)
        } catch {
            error.exit()
        }
        defer { run.removeFiles() }
        let round = try scenario(run)
        total = total.isEmpty ? round : zip(total, round).map { sum, next in
            var sum = sum
            sum.absorb(next)
            return sum
        }
        count += 1
    } while deadline.map { clock.now < $0 } == true && !total.contains(where: { $0.failsTheRun || $0.skipped != nil })
    if options.duration != nil { total = total.map { var result = $0; result.figure("rounds", count); return result } }
    return total
}

var results: [ScenarioResult] = []
for (name, scenario) in chosen {
    do {
        let outcome = try rounds(of: scenario)
        results += outcome
        if !options.json {
            for result in outcome {
                print(result.line)
                for failure in result.failures where result.isOurs { print("  FAILED: \(failure)") }
            }
        }
    } catch {
        var failed = ScenarioResult(scenario: name)
        failed.fail("the scenario could not run: \(error)")
        results.append(failed)
        if !options.json { print("\(name): could not run: \(error)") }
    }
}
if options.json {
    let rows = SuiteValue.array(results.map(\.jsonValue))
    print(SuiteValue.dictionary(["scenarios": rows, "passed": .bool(!results.contains(where: \.failsTheRun))])
        .jsonText(pretty: false))
}
exit(results.contains(where: \.failsTheRun) ? 1 : 0)
