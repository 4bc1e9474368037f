import ChildProcess
import Foundation
import Glibc
import SuiteDefaults
import ToolSupport
import WorkerRoles

/// Writers are killed with SIGKILL at random instants, many while holding the lock.
/// Each trial: the suite opens in a new process, every acknowledged write is there,
/// nothing is torn, and another process's write went through at once after the kill.
enum CrashScenario {
    /// How long a write may wait for a dead holder's lock, at most.
    static let blockingBound = Duration.seconds(2)

    static func run(_ stress: StressRun) throws -> [ScenarioResult] {
        let options = stress.options
        let trials = options.count(options.iterations, quick: 150, normal: 500)
        return try stress.oursThenFoundation { foundation in try once(stress, foundation: foundation, trials) }
    }

    private static func once(_ stress: StressRun, foundation: Bool, _ trials: Int) throws -> ScenarioResult {
        var result = ScenarioResult(scenario: "crash", foundation: foundation)
        var random = SplitMix64(seed: UInt64(getpid()))
        var kills = 0, killsHoldingLock = 0, slowestProbe = Duration.zero, acknowledged = 0
        try timed({ result in
            for trial in 0..<trials {
                let directory = stress.freshDirectory("crash-\(trial)")
                let name = "crash"
                // One plain writer and one whose transactions keep the lock a while;
                // half the trials compact often.
                let slack = trial % 2 == 0 ? "512" : "65536"
                let writers = try (0..<2).map { index in
                    try stress.worker(foundation ? "fd-ack-loop" : "ack-loop", in: directory,
                                      ["suite": name, "prefix": "w\(index)", "compaction-slack": slack,
                                       "hold-micros": index == 1 ? "300" : "0"])
                }
                for writer in writers where writer.line(startingWith: "ready") == nil { result.crashed += 1 }
                let lockFile = directory.appendingPathComponent(name + ".suite.lock").path
                for writer in writers {
                    // Let it write a random while, then kill it at once.
                    let target = Int(random.next() % 150)
                    _ = writer.line(startingWith: "ack \(target)")
                    if !foundation, ProcessLocks(file: lockFile)?.isHeld(by: writer.pid) == true { killsHoldingLock += 1 }
                    writer.kill()
                    kills += 1
                }
                if !foundation {
                    // Another process's write: the dead holders block it no longer.
                    let clock = ContinuousClock()
                    let start = clock.now
                    try Suite(named: name, directory: directory).set(true, forKey: "probe")
                    let waited = clock.now - start
                    slowestProbe = max(slowestProbe, waited)
                    if waited > blockingBound { result.fail("trial \(trial): a write waited \(waited) after the kill") }
                    let opener = try stress.worker("open", in: directory, ["suite": name])
                    if opener.line(startingWith: "opened") == nil || !opener.endedCleanly() {
                        result.fail("trial \(trial): the suite did not open in a new process: \(opener.standardError)")
                    }
                }
                let stored: [String: Any] = foundation ? (FoundationStore.storedValues(suiteName: name, directory: directory) ?? [:])
                    : try Suite(named: name, directory: directory).storedValues().compactMapValues { value -> Any? in
                        if case .integer(let number) = value { return number } else { return value }
                    }
                for (index, writer) in writers.enumerated() {
                    for line in writer.lines where line.hasPrefix("ack ") {
                        guard let value = Int(line.dropFirst(4)) else { continue }
                        acknowledged += 1
                        switch stored["w\(index).\(value)"] {
                        case let number as Int where number == value: break
                        case nil: result.lost += 1
                        default: result.torn += 1
                        }
                    }
                }
                stress.removeDirectory(directory)
            }
        }, &result)
        result.operations = acknowledged
        result.figure("kills", kills)
        if !foundation {
            result.figure("kills_holding_lock", killsHoldingLock)
            result.figure("slowest_write_after_kill_us", Int(slowestProbe.components.attoseconds / 1_000_000_000_000 + slowestProbe.components.seconds * 1_000_000))
            if result.lost + result.torn > 0 { result.fail("\(result.lost) acknowledged writes lost, \(result.torn) torn") }
        }
        return result
    }
}
