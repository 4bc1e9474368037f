/// Why text a user typed is not a distance or a weight.
public struct UnitInputError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Reason: Sendable, Equatable {
        /// Nothing but white space.
        case empty
        /// No number could be read.
        case notANumber
        /// NaN, infinity, or a number too large to represent.
        case notFinite
        /// A distance of zero or less.
        case notPositive
        /// A weight below zero.
        case negative
        /// A unit of the other kind: a weight unit for a distance, or the reverse.
        case wrongKindOfUnit(String)
        /// A unit that is not known.
        case unknownUnit(String)
        /// More than any distance or weight a person covers or lifts.
        case tooLarge
    }

    public var reason: Reason
    /// The text as typed.
    public var input: String
    /// What is wrong and what to type instead, in a sentence.
    public var message: String

    public var description: String { message }
}
