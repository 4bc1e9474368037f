#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The rules for suite names and keys, checked before any lock is taken.
///
/// Names and keys are normalized to Unicode NFC before anything else: on disk they
/// are bytes, while Swift's `String` equality treats "café" written precomposed and
/// decomposed as one string. Normalizing makes both spellings one suite, one file
/// and one key, in every process.
enum Validation {
    /// `text` in its normal form (`UTF8Text.normalForm`: Unicode NFC, applied until it
    /// no longer changes). ASCII, which most names and keys are, is already in it and is
    /// returned as it is, without asking Unicode's tables.
    static func normalized(_ text: String) -> String {
        bytesOf(text).isASCII ? text : UTF8Text.normalForm(text).text
    }

    /// Whether `text` is all ASCII, and so its own NFC.
    static func isASCII(_ text: String) -> Bool {
        bytesOf(text).isASCII
    }

    /// Whether `text` is all ASCII, and whether it holds a NUL byte, in one plain loop
    /// over contiguous bytes: a generic algorithm such as allSatisfy costs a new
    /// process a runtime lookup on first use, and iterating the UTF-8 view costs
    /// every write a hundred instructions more.
    private static func bytesOf(_ text: String) -> (isASCII: Bool, containsNUL: Bool) {
        func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> (isASCII: Bool, containsNUL: Bool) {
            var high: UInt8 = 0, lowest: UInt8 = 0xFF
            for byte in bytes {
                high |= byte
                lowest = min(lowest, byte)
            }
            return (high < 0x80, lowest == 0)
        }
        // In place (a native string's bytes are contiguous), rather than through
        // `withUTF8`, whose copy of the string costs a retain and a release.
        return text.utf8.withContiguousStorageIfAvailable(scan) ?? Array(text.utf8).withUnsafeBufferPointer(scan)
    }

    /// Suite names become file names, so they are limited by the file system's
    /// 255-byte name limit minus the longest suffix the store adds.
    static let maximumNameLength = 224
    static let maximumKeyLength = 1024

    static func checkSuiteName(_ name: String) throws {
        func refuse(_ why: String) -> SuiteError {
            SuiteError(.invalidSuiteName, suite: name,
                       message: "The suite name \(why). Use a name such as \"group.com.example.app\".")
        }
        let bytes = name.utf8.count
        if bytes == 0 { throw refuse("is empty") }
        if bytes > maximumNameLength {
            throw refuse("is \(bytes) bytes long; the limit is \(maximumNameLength) bytes")
        }
        // Byte loops rather than String searches: this runs every time a process
        // opens a suite, and the generic string algorithms cost hundreds of
        // microseconds on their first use.
        var previous: UInt8 = 0
        for byte in name.utf8 {
            if byte == 0 { throw refuse("contains a NUL byte") }
            if byte == UInt8(ascii: "/") { throw refuse("contains \"/\"; a suite is one file and cannot name a path") }
            if byte == UInt8(ascii: ".") && previous == UInt8(ascii: ".") { throw refuse("contains \"..\"") }
            previous = byte
        }
        if name.utf8.first == UInt8(ascii: ".") { throw refuse("starts with \".\"") }
        // The control characters (general category Cc) are exactly C0, DEL and C1;
        // asking Unicode for the category would load its tables at every start-up.
        if name.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) {
            throw refuse("contains a control character")
        }
    }

    /// `key` in its normal form, after checking it: what every write stores under.
    static func normalizedKey(_ key: String, suite: String?) throws -> String {
        let scan = bytesOf(key)
        if scan.isASCII {
            // ASCII is its own NFC, and its scan said all there is to say about NUL.
            try checkKey(key, suite: suite, containsNUL: scan.containsNUL)
            return key
        }
        let normalized = UTF8Text.normalForm(key)
        guard normalized.isSettled else {
            throw SuiteError(.invalidKey, suite: suite, key: key,
                             message: "The key has no Unicode normal form: NFC changes it again every time, so processes could read it as different keys.")
        }
        try checkKey(normalized.text, suite: suite, containsNUL: bytesOf(normalized.text).containsNUL)
        return normalized.text
    }

    /// Throws when two of `keys` are spellings of one key (one normal form): a whole
    /// replacement of a suite's values (an import) would keep one of them silently.
    /// Swift's `==`, a dictionary's, already tells most such pairs to be one key, but
    /// not all (it compares after one round of NFC).
    static func refuseKeysSpelledTwice(_ keys: some Sequence<String>, suite: String?) throws {
        var normalForms = Set<[UInt8]>()
        for key in keys where !normalForms.insert(Array(normalized(key).utf8)).inserted {
            throw SuiteError(.invalidValue, suite: suite, key: key,
                             message: "The key is there twice, spelled two canonically equivalent ways; nothing was replaced.")
        }
    }

    private static func checkKey(_ key: String, suite: String?, containsNUL: Bool) throws {
        let bytes = key.utf8.count
        if bytes == 0 {
            throw SuiteError(.invalidKey, suite: suite, key: key, message: "The key is empty; keys need at least one character.")
        }
        if bytes > maximumKeyLength {
            throw SuiteError(.invalidKey, suite: suite, key: String(key.prefix(64)) + "…",
                             message: "The key is \(bytes) bytes long; the limit is \(maximumKeyLength) bytes.")
        }
        if containsNUL {
            throw SuiteError(.invalidKey, suite: suite, key: key, message: "The key contains a NUL byte, which keys may not contain.")
        }
    }
}

extension Operation {
    /// The operation that stores `value` (or removes the key when nil), after checking
    /// the key and the value. This runs before any lock is taken.
    static func validated(_ value: SuiteValue?, forKey key: String, suite: String?, maximumValueSize: Int) throws -> Operation {
        let key = try Validation.normalizedKey(key, suite: suite)
        guard let value else { return .remove(key: key) }
        let size: Int
        do {
            size = try ValueEncoding.measure(value)
        } catch {
            throw SuiteError(.invalidValue, suite: suite, key: key, message: "The value cannot be stored: \(error.reason).")
        }
        guard size <= maximumValueSize else {
            throw SuiteError(.valueTooLarge, suite: suite, key: key,
                             message: "The value encodes to \(size) bytes, over the limit of \(maximumValueSize) bytes per value (Suite.Options.maximumValueSize). Store it in a file and keep its path here.")
        }
        return .set(key: key, value: value, size: size)
    }
}
