// The article's getter with the one-line fix Docs/UserDefaults.md recommends: the
// check-then-set becomes `setIfAbsent`, which stores the detected system only if
// nothing is stored yet, under the suite's lock, and returns what is stored. Every
// process then returns the same value, and a choice the user made in another process
// between the read and the write is never overwritten.

import Foundation
import SuiteUserDefaults

var unitSystemFixed: UnitSystem {
    get {
        if let rawValue = sharedDefaults.string(forKey: "unitSystem"),
           let system = UnitSystem(rawValue: rawValue) {
            return system
        }
        let system: UnitSystem = Locale.current.measurementSystem == .us ? .imperial : .metric
        return sharedDefaults.setIfAbsent(system, forKey: "unitSystem")   // was: set(system.rawValue, …); return system
    }
    set {
        sharedDefaults.set(newValue.rawValue, forKey: "unitSystem")
    }
}
