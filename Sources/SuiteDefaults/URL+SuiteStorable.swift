#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A URL is stored as text, so that every reader (and `suite-defaults read`) sees it:
/// a file URL as its path, as Foundation's `UserDefaults` stores one; any other URL
/// as its absolute string (Foundation on Apple platforms archives those instead, and
/// on Linux it keeps only the path, losing the scheme and host).
///
/// Reading takes text that starts with a scheme ("https:", "file:") as that URL,
/// and any other text as a file path, a leading "~" standing for the home
/// directory, as `UserDefaults.url(forKey:)` does. Empty text reads as nil.
///
/// So what comes back is the same URL for an absolute URL and for a file URL's path;
/// a relative URL without a scheme (`URL(string: "a/b")`, `//host/p`) comes back as
/// a file URL of that path, and a file URL's host, query and fragment are not kept.
extension URL: SuiteStorable {
    public var suiteValue: SuiteValue {
        .string(isFileURL ? path : absoluteString)
    }

    public init?(suiteValue: SuiteValue) {
        guard case .string(let text) = suiteValue, !text.isEmpty else { return nil }
        if Self.startsWithScheme(text) {
            guard let url = URL(string: text) else { return nil }
            self = url
        } else {
            self = URL(fileURLWithPath: Self.expandingTilde(text))
        }
    }

    /// Whether `text` begins with a URL scheme: a letter, then letters, digits, "+",
    /// "-" or ".", then ":" (RFC 3986).
    private static func startsWithScheme(_ text: String) -> Bool {
        var scalars = text.unicodeScalars.makeIterator()
        guard let first = scalars.next(), ("a"..."z").contains(first) || ("A"..."Z").contains(first) else { return false }
        while let scalar = scalars.next() {
            if scalar == ":" { return true }
            let allowed = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                || scalar == "+" || scalar == "-" || scalar == "."
            if !allowed { return false }
        }
        return false
    }

    /// "~" and "~/…" with the home directory; other text as it is.
    private static func expandingTilde(_ path: String) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        return FileManager.default.homeDirectoryForCurrentUser.path + path.dropFirst()
    }
}

extension SuiteReadable {
    /// A URL; nil when absent or not one (see `URL`'s `SuiteStorable` conformance
    /// for how it is stored).
    public func url(forKey key: String) -> URL? { value(URL.self, forKey: key) }

    /// A `Float`; nil when absent or not a number.
    public func float(forKey key: String) -> Float? { value(Float.self, forKey: key) }

    /// An array of strings; nil when absent, not an array, or holding anything but strings.
    public func stringArray(forKey key: String) -> [String]? { value([String].self, forKey: key) }
}
