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
            return Self.sameBytes(a, b)
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
                Self.sameBytes(keyA, keyB) && a[keyA]!.isStored(identicallyTo: b[keyB]!)
            }
        default:
            return false
        }
    }

    /// Whether two strings are the same UTF-8 bytes (String's `==` compares canonical
    /// equivalence). Compared as contiguous bytes, eight at a time: the generic
    /// `elementsEqual` costs a set of an unchanged value thirty instructions a byte.
    private static func sameBytes(_ a: String, _ b: String) -> Bool {
        // Strings that differ, the usual case of a write, are told apart by `==`
        // without copying their bytes; only equal ones need the byte comparison.
        guard a.utf8.count == b.utf8.count, a == b else { return false }
        var a = a, b = b
        return a.withUTF8 { first in b.withUTF8 { second in first.hasSameBytes(as: second) } }
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
