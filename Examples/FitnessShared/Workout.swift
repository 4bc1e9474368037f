import Foundation
import SuiteDefaults

/// One logged workout. Amounts are stored in metric units, always.
public struct Workout: Codable, Equatable, Sendable {
    public enum Kind: String, Codable, Sendable {
        case run, lift
    }

    public var kind: Kind
    /// Metres for a run, kilograms for a lift.
    public var amount: Double
    public var date: Date

    public init(kind: Kind, amount: Double, date: Date = Date()) {
        self.kind = kind
        self.amount = amount
        self.date = date
    }
}

extension SuiteKey where Value == [Workout] {
    /// The workout log, oldest first.
    public static let workouts = SuiteKey(codable: "fitness.workouts", default: [])
}

extension Suite {
    /// Appends a workout to the log, atomically with every other process's.
    public func log(_ workout: Workout) throws {
        try update { transaction in
            try transaction.set(transaction.value(for: .workouts) + [workout], for: .workouts)
        }
    }

    /// The most recent workout of a kind.
    public func lastWorkout(_ kind: Workout.Kind) -> Workout? {
        value(for: .workouts).last { $0.kind == kind }
    }
}
