import Foundation
import SuiteDefaults

/// What one run of a scenario found, on suite-defaults or on Foundation's UserDefaults.
struct ScenarioResult: Sendable {
    var scenario: String
    /// "suite-defaults" or "foundation".
    var subject: String
    var operations = 0
    var lost = 0
    var torn = 0
    var errors = 0
    /// Processes that ended by a signal they were not sent, or that failed to report.
    var crashed = 0
    var seconds = 0.0
    /// Further figures particular to the scenario.
    var figures: [(String, Int)] = []
    /// What went wrong, when an invariant failed (ours only; Foundation is expected to fail).
    var failures: [String] = []
    /// Why the scenario did not run (sync without etcd); it then passes.
    var skipped: String?

    /// A result of this library, or of Foundation's UserDefaults run beside it.
    init(scenario: String, foundation: Bool = false) {
        self.scenario = scenario
        subject = foundation ? "foundation" : "suite-defaults"
    }

    var isOurs: Bool { subject == "suite-defaults" }

    var passed: Bool { lost == 0 && torn == 0 && crashed == 0 && failures.isEmpty }

    /// Only our failures fail a run: Foundation's are what the comparison reports.
    var failsTheRun: Bool { isOurs && !passed }

    var line: String {
        let name = isOurs ? scenario : "\(scenario) (\(subject))"
        if let skipped { return "\(name): skipped: \(skipped)" }
        var text = "\(name): \(operations) ops, \(lost) lost, \(torn) torn, \(errors) errors, \(String(format: "%.2f", seconds)) s"
        if crashed > 0 { text += ", \(crashed) crashed" }
        if !figures.isEmpty { text += " [" + figures.map { "\($0.0) \($0.1)" }.joined(separator: ", ") + "]" }
        return text
    }

    var jsonValue: SuiteValue {
        var object: [String: SuiteValue] = [
            "scenario": .string(scenario), "subject": .string(subject), "operations": .integer(operations),
            "lost": .integer(lost), "torn": .integer(torn), "errors": .integer(errors), "crashed": .integer(crashed),
            "seconds": .double((seconds * 1000).rounded() / 1000), "passed": .bool(passed),
            "failures": .array(failures.map { .string($0) }),
        ]
        for (name, value) in figures { object[name] = .integer(value) }
        if let skipped { object["skipped"] = .string(skipped) }
        return .dictionary(object)
    }

    mutating func fail(_ message: String) {
        if failures.count < 20 { failures.append(message) }
    }

    mutating func figure(_ name: String, _ value: Int) {
        figures.append((name, value))
    }

    /// Figures that say how a round was set up, not what it counted: rounds keep the first's.
    static let settings: Set<String> = ["seed", "machines", "members"]

    /// Adds a further round of the same scenario (`--duration`): counts and times add
    /// up, a `slowest_…` figure keeps the larger, the settings (`seed`, sync's `machines`
    /// and `members`) keep the first round's.
    mutating func absorb(_ round: ScenarioResult) {
        operations += round.operations
        lost += round.lost
        torn += round.torn
        errors += round.errors
        crashed += round.crashed
        seconds += round.seconds
        for (index, (name, value)) in figures.enumerated() {
            guard let other = round.figures.first(where: { $0.0 == name })?.1 else { continue }
            figures[index].1 = Self.settings.contains(name) ? value : name.hasPrefix("slowest_") ? max(value, other) : value + other
        }
        for failure in round.failures { fail(failure) }
    }
}

/// Measures a scenario's wall-clock time.
func timed(_ body: (inout ScenarioResult) throws -> Void, _ result: inout ScenarioResult) rethrows {
    let clock = ContinuousClock()
    let start = clock.now
    try body(&result)
    let elapsed = clock.now - start
    result.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}
