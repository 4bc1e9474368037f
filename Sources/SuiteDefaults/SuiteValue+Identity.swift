#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension SuiteValue {
    /// Whether the two values are stored as the same bytes. Swift's `==` is looser:
    /// `-0.0 == 0.0`, and strings that are canonically equivalent ("é" precomposed
    /// and decomposed) are equal. Deciding whether a write changes anything, whether
    /// a compare-and-set matches, and whether an observer hears of a change all
    /// compare as stored.
    func isStored(identicallyTo other: SuiteValue) -> Bool {
        switch (self, other) {
        case (.string(let a), .string(let b)):
            return a.hasSameBytes(as: b)
        case (.integer(let a), .integer(let b)):
            return a == b
        case (.double(let a), .double(let b)):
            return a.bitPattern == b.bitPattern
        case (.bool(let a), .bool(let b)):
            return a == b
        case (.data(let a), .data(let b)), (.json(let a), .json(let b)):
            return a == b
        case (.date(let a), .date(let b)):
            return a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isStored(identicallyTo: $1) }
        case (.dictionary(let a), .dictionary(let b)):
            guard a.count == b.count else { return false }
            // In the order the encoding writes them, key bytes against key bytes.
            return zip(a.keys.sorted(), b.keys.sorted()).allSatisfy { keyA, keyB in
                keyA.hasSameBytes(as: keyB) && a[keyA]!.isStored(identicallyTo: b[keyB]!)
            }
        default:
            return false
        }
    }
}

extension Optional where Wrapped == SuiteValue {
    /// Whether two optional values are stored identically (both absent counts).
    func isStored(identicallyTo other: SuiteValue?) -> Bool {
        switch (self, other) {
        case (nil, nil): true
        case (let a?, let b?): a.isStored(identicallyTo: b)
        default: false
        }
    }
}
