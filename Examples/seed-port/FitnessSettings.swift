// The seed article's App Group code, as it was written for UserDefaults, with one
// change: `UserDefaults` became `SuiteUserDefaults` (and the module is imported).
// Everything else is the article's own, including its first-access race, which
// FitnessSettings+Fixed.swift fixes in one line.
//
// One word more than the article: `nonisolated(unsafe)`. On Linux, Foundation marks
// UserDefaults as not Sendable, so in Swift 6 a global UserDefaults, Foundation's or
// this subclass, needs it (or `@MainActor`). SuiteUserDefaults may be used from any
// thread, so it is sound here.

import Foundation
import SuiteUserDefaults

enum UnitSystem: String {
    case metric
    case imperial
}

nonisolated(unsafe) let sharedDefaults = SuiteUserDefaults(suiteName: "group.com.example.fitness")!

var unitSystem: UnitSystem {
    get {
        if let rawValue = sharedDefaults.string(forKey: "unitSystem"),
           let system = UnitSystem(rawValue: rawValue) {
            return system
        }
        let system: UnitSystem = Locale.current.measurementSystem == .us ? .imperial : .metric
        sharedDefaults.set(system.rawValue, forKey: "unitSystem")
        return system
    }
    set {
        sharedDefaults.set(newValue.rawValue, forKey: "unitSystem")
    }
}

func formatDistance(meters: Double) -> String {
    switch unitSystem {
    case .metric:
        return String(format: "%.1f km", meters / 1000)
    case .imperial:
        return String(format: "%.1f mi", meters / 1609.344)
    }
}

func saveExercise(name: String, meters: Double, date: Date = Date()) {
    var exercises = sharedDefaults.array(forKey: "exercises") as? [[String: Any]] ?? []
    exercises.append(["name": name, "meters": meters, "date": date])
    sharedDefaults.set(exercises, forKey: "exercises")
}
