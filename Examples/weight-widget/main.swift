// weight-widget: shows the last lift in the user's units, and redraws the moment the
// unit preference or the log changes, in any process.
//
//     weight-widget [--dir DIR] [--once] [--timestamps]
import FitnessShared
import SuiteDefaults
import UnitPreferences

Widget.run(.keys(.unitSystem, .workouts)) { suite in
    guard let lift = suite.lastWorkout(.lift) else { return "Last lift: none" }
    let system = (try? UnitSystem.current(in: suite)) ?? .metric
    return "Last lift: \(formatWeight(kilograms: lift.amount, system: system))"
}
