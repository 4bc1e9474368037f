import Foundation
import SuiteDefaults
import ToolSupport

/// The last valid BTC price the app family has seen. `Decimal`, so that "68901.23"
/// is stored and read back exactly.
public struct PriceQuote: Codable, Equatable, Sendable {
    public var value: Decimal
    public var currency: String
    public var timestamp: Date

    public init(value: Decimal, currency: String, timestamp: Date = Date()) {
        self.value = value
        self.currency = currency
        self.timestamp = timestamp
    }
}

extension PriceQuote {
    /// The key the quote is cached under.
    public static let storageKey = "price.last"

    /// The cached quote; nil when there is none, or when the cache is unreadable (a
    /// damaged entry is reported on standard error, never a crash).
    public static func cached(in suite: Suite) -> PriceQuote? {
        do {
            return try suite.decodable(PriceQuote.self, forKey: storageKey)
        } catch {
            Output.errorLine("price-ticker: the cached price is unreadable and is treated as absent: \(error)")
            return nil
        }
    }
}
