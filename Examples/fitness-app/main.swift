// fitness-app: the main app of the family. It keeps the user's unit preference and
// a workout log in the shared suite, always in metric units, and shows them in the
// user's units.
//
//     fitness-app [--dir DIR] units [metric|imperial|auto]
//     fitness-app [--dir DIR] log-run DISTANCE      e.g. 5, "3.1 mi", 5km
//     fitness-app [--dir DIR] log-lift WEIGHT       e.g. 90, "198 lbs"
//     fitness-app [--dir DIR] history
//     fitness-app [--dir DIR] shell                 commands on standard input, one per line
import FitnessShared
import Foundation
import SuiteDefaults
import ToolSupport
import UnitPreferences

let syntax = CommandLineSyntax(
    synopsis: ["fitness-app [--dir DIR] units [metric|imperial|auto] | log-run DISTANCE | log-lift WEIGHT | history | shell"],
    arguments: [
        CommandLineArgument("units [metric|imperial|auto]", help: "show the unit system, or set it (auto: from the locale)"),
        CommandLineArgument("log-run DISTANCE", help: "log a run, e.g. 5, \"3.1 mi\", 5km"),
        CommandLineArgument("log-lift WEIGHT", help: "log a lift, e.g. 90, \"198 lbs\""),
        CommandLineArgument("history", help: "the workouts logged"),
        CommandLineArgument("shell", help: "commands on standard input, one per line"),
    ],
    options: [FitnessSuite.directoryOption],
    // An amount such as -3 is refused as an amount, not as an option.
    takesUndeclaredOptionsAsArguments: true
)

/// What a command did: its message, and when its write started (CLOCK_MONOTONIC).
struct Outcome {
    var message: String
    var writeStartedAt: UInt64?
}

func execute(_ words: [String], in suite: Suite) throws(ToolError) -> Outcome {
    func attempt<T>(_ body: () throws -> T) throws(ToolError) -> T {
        do {
            return try body()
        } catch let error as UnitInputError {
            throw ToolError(status: 1, message: error.message)
        } catch let error as SuiteError {
            throw ToolError(status: 3, message: error.message)
        } catch {
            throw ToolError(status: 3, message: "\(error)")
        }
    }
    switch (words.first, words.count) {
    case ("units", 1):
        let system = try attempt { try UnitSystem.current(in: suite) }
        return Outcome(message: "Units: \(system.displayName)")
    case ("units", 2):
        let system: UnitSystem
        switch words[1] {
        case "metric": system = .metric
        case "imperial": system = .imperial
        case "auto": system = UnitSystem.fromLocale()
        default: throw ToolError.usage("units takes metric, imperial or auto")
        }
        let started = monotonicNanoseconds()
        try attempt { try UnitSystem.setCurrent(system, in: suite) }
        let origin = words[1] == "auto" ? " (from the locale)" : ""
        return Outcome(message: "Units set to \(system.displayName)\(origin)", writeStartedAt: started)
    case ("log-run", 2), ("log-lift", 2):
        let system = try attempt { try UnitSystem.current(in: suite) }
        let isRun = words[0] == "log-run"
        let amount = try attempt {
            isRun ? try parseDistance(words[1], system: system) : try parseWeight(words[1], system: system)
        }
        let started = monotonicNanoseconds()
        try attempt { try suite.log(Workout(kind: isRun ? .run : .lift, amount: amount)) }
        let shown = isRun ? formatDistance(meters: amount, system: system) : formatWeight(kilograms: amount, system: system)
        return Outcome(message: "Logged a \(isRun ? "run" : "lift") of \(shown)", writeStartedAt: started)
    case ("history", 1):
        let system = try attempt { try UnitSystem.current(in: suite) }
        let workouts = suite.value(for: .workouts)
        guard !workouts.isEmpty else { return Outcome(message: "No workouts yet.") }
        let dateFormat = Date.FormatStyle(date: .numeric, time: .shortened).locale(POSIXLocale.numberLocale())
        let lines = workouts.map { workout in
            let amount = workout.kind == .run ? formatDistance(meters: workout.amount, system: system)
                : formatWeight(kilograms: workout.amount, system: system)
            return "\(workout.date.formatted(dateFormat))  \(workout.kind.rawValue.padding(toLength: 4, withPad: " ", startingAt: 0))  \(amount)"
        }
        return Outcome(message: lines.joined(separator: "\n"))
    default:
        throw ToolError.usage("usage: " + syntax.synopsis[0])
    }
}

let commandLine = syntax.parseCommandLine()
let arguments = commandLine.arguments
let suite = FitnessSuite.open(commandLine)

if arguments == ["shell"] {
    // One answer line per command: "ok NANOSECONDS MESSAGE" (CLOCK_MONOTONIC when its
    // write started; 0 for a command that writes nothing) or "error MESSAGE".
    while let line = readLine() {
        let words = line.split(separator: " ", maxSplits: 1).map(String.init)
        guard !words.isEmpty else { continue }
        do {
            let outcome = try execute(words, in: suite)
            Output.line("ok \(outcome.writeStartedAt ?? 0) \(outcome.message.replacingOccurrences(of: "\n", with: " | "))")
        } catch {
            Output.line("error \(error.message)")
        }
    }
    exit(0)
}

do {
    Output.line(try execute(arguments, in: suite).message)
} catch {
    error.exit()
}
