import Foundation

/// A locale as the POSIX locale variables name it: `language[_TERRITORY][.codeset][@modifier]`,
/// such as `en_US.UTF-8`, `es_US`, `en_LR.UTF-8@x` or `my_MM`; the BCP 47 form `de-DE`
/// is accepted too.
///
/// It is read from the environment rather than from Foundation's `Locale.current`,
/// which on Linux reports `en_001` whatever `LANG` says.
public struct POSIXLocale: Equatable, Sendable {
    /// The language, lowercase: "en".
    public var language: String
    /// The territory, uppercase: "US"; nil when the value names none.
    public var region: String?

    /// Parses a locale value; nil for the portable locales `C` and `POSIX` (with any
    /// codeset), for an empty value, and for anything that is not a locale name.
    public init?(_ value: String) {
        var name = Substring(value.trimmingCharacters(in: .whitespaces))
        if let at = name.firstIndex(of: "@") { name = name[..<at] }
        if let dot = name.firstIndex(of: ".") { name = name[..<dot] }
        let parts = name.split(separator: "_", maxSplits: 1, omittingEmptySubsequences: false)
            .flatMap { $0.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false) }
        guard let first = parts.first, (2...3).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            return nil
        }
        let language = first.lowercased()
        guard language != "c" else { return nil }
        var region: String?
        if parts.count > 1 {
            let territory = parts[1]
            let isLetters = territory.count == 2 && territory.allSatisfy { $0.isASCII && $0.isLetter }
            let isDigits = territory.count == 3 && territory.allSatisfy { $0.isASCII && $0.isNumber }
            guard isLetters || isDigits, parts.count == 2 else { return nil }
            region = territory.uppercased()
        }
        self.language = language
        self.region = region
    }

    /// The value that governs a locale category, by POSIX precedence: `LC_ALL`, then
    /// the category's own variable (such as `LC_MEASUREMENT`), then `LANG`. An empty
    /// variable counts as unset.
    public static func value(of category: String, in environment: [String: String]) -> String? {
        for variable in ["LC_ALL", category, "LANG"] {
            if let value = environment[variable], !value.isEmpty { return value }
        }
        return nil
    }

    /// The locale that governs `category` in `environment`; nil for C, POSIX, unset
    /// or unparsable values.
    public static func governing(_ category: String, in environment: [String: String]) -> POSIXLocale? {
        value(of: category, in: environment).flatMap(POSIXLocale.init)
    }

    /// The Foundation locale for formatting numbers (the `LC_NUMERIC` category); the
    /// POSIX locale (a point, no grouping) when the environment names none.
    public static func numberLocale(environment: [String: String] = ProcessInfo.processInfo.environment) -> Locale {
        governing("LC_NUMERIC", in: environment)?.foundationLocale ?? Locale(identifier: "en_US_POSIX")
    }

    /// This locale as Foundation names it: "es_ES".
    public var foundationLocale: Locale {
        Locale(identifier: region.map { "\(language)_\($0)" } ?? language)
    }
}
