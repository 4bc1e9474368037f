// Runs the seed article's code as a program, one command per run, so that tests and
// users can start it as many processes at once. The suite lives in
// Suite.defaultDirectory() ($SUITE_DEFAULTS_DIR, else ~/.config/suite-defaults).
//
//   seed-port units [--fixed] [--wait]      the unit system (first access stores it)
//   seed-port set-units metric|imperial [--wait]
//   seed-port distance METERS               formatDistance(meters:)
//   seed-port save NAME METERS              saveExercise(name:meters:)
//   seed-port history                       the saved exercises
//
// --wait prints "ready", then waits for a line on standard input before it acts: a
// start line for processes that race.

import Foundation

let usage = """
    usage: seed-port units [--fixed] [--wait]
           seed-port set-units metric|imperial [--wait]
           seed-port distance METERS
           seed-port save NAME METERS
           seed-port history
    """

func fail(_ message: String, status: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data("seed-port: \(message)\n".utf8))
    exit(status)
}

func waitForStart(_ arguments: [String]) {
    guard arguments.contains("--wait") else { return }
    FileHandle.standardOutput.write(Data("ready\n".utf8))   // unbuffered, so it arrives now
    _ = readLine()
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "units":
    let options = arguments.dropFirst()
    guard options.allSatisfy({ $0 == "--fixed" || $0 == "--wait" }) else { fail(usage) }
    waitForStart(arguments)
    let system = options.contains("--fixed") ? unitSystemFixed : unitSystem
    print(system.rawValue)
case "set-units":
    guard arguments.count >= 2, let system = UnitSystem(rawValue: arguments[1]),
          arguments.dropFirst(2).allSatisfy({ $0 == "--wait" }) else { fail(usage) }
    waitForStart(arguments)
    unitSystem = system
    print(system.rawValue)
case "distance":
    guard arguments.count == 2, let meters = Double(arguments[1]), meters.isFinite, meters >= 0 else { fail(usage) }
    print(formatDistance(meters: meters))
case "save":
    guard arguments.count == 3, let meters = Double(arguments[2]), meters.isFinite, meters >= 0 else { fail(usage) }
    saveExercise(name: arguments[1], meters: meters)
    print("Saved \(arguments[1]): \(formatDistance(meters: meters))")
case "history":
    let exercises = sharedDefaults.array(forKey: "exercises") as? [[String: Any]] ?? []
    for exercise in exercises {
        let name = exercise["name"] as? String ?? "?"
        let meters = exercise["meters"] as? Double ?? 0
        print("\(name): \(formatDistance(meters: meters))")
    }
case "-h", "--help":
    print(usage)
default:
    fail(usage)
}
