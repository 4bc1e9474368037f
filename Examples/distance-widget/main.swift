// distance-widget: shows the last run in the user's units, and redraws the moment the
// unit preference or the log changes, in any process.
//
//     distance-widget [--dir DIR] [--once] [--timestamps]
import FitnessShared
import SuiteDefaults
import UnitPreferences

Widget.run(.keys(.unitSystem, .workouts)) { suite in
    guard let run = suite.lastWorkout(.run) else { return "Last run: none" }
    let system = (try? UnitSystem.current(in: suite)) ?? .metric
    return "Last run: \(formatDistance(meters: run.amount, system: system))"
}
