import Foundation

extension UnitSystem {
    /// The regions whose everyday distances and weights are imperial.
    public static let imperialRegions: Set<String> = ["US", "LR", "MM"]

    /// The system the environment's locale calls for: the measurement category's
    /// locale (`LC_ALL`, then `LC_MEASUREMENT`, then `LANG`), imperial exactly for
    /// the regions US, LR and MM; metric for any other region, and for `C`, `POSIX`,
    /// empty or unparsable values.
    public static func fromLocale(environment: [String: String] = ProcessInfo.processInfo.environment) -> UnitSystem {
        guard let region = POSIXLocale.governing("LC_MEASUREMENT", in: environment)?.region else { return .metric }
        return imperialRegions.contains(region) ? .imperial : .metric
    }
}
