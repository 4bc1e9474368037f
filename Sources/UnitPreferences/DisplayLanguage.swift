import Foundation

/// The languages the labels of `UnitSystem` exist in.
public enum DisplayLanguage: String, Sendable, CaseIterable {
    case english = "en"
    case spanish = "es"
    case portuguese = "pt"

    /// The language of messages in `environment` (`LC_ALL`, `LC_MESSAGES`, `LANG`);
    /// English when it is none of these.
    public static func fromLocale(environment: [String: String] = ProcessInfo.processInfo.environment) -> DisplayLanguage {
        POSIXLocale.governing("LC_MESSAGES", in: environment).flatMap { DisplayLanguage(rawValue: $0.language) } ?? .english
    }

    /// The language of this process's environment.
    public static var current: DisplayLanguage { fromLocale() }

    /// The language of a Foundation locale; English when it is none of these.
    public init(_ locale: Locale) {
        self = locale.language.languageCode.flatMap { DisplayLanguage(rawValue: $0.identifier) } ?? .english
    }
}
