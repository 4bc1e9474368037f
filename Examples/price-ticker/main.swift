// price-ticker: keeps the last valid BTC price for the app and its widget, as a
// Codable value with a Decimal, which comes back exactly.
//
//     price-ticker [--dir DIR] set PRICE CURRENCY [--timestamps]   e.g. set 68901.23 USD
//     price-ticker [--dir DIR] show
//     price-ticker [--dir DIR] watch [--once] [--timestamps]
import FitnessShared
import Foundation
import SuiteDefaults

func rendered(_ quote: PriceQuote?) -> String {
    guard let quote else { return "BTC: no price yet" }
    return "BTC: \(quote.value) \(quote.currency)"
}

var arguments = Array(CommandLine.arguments.dropFirst())
let suite = FitnessSuite.open(&arguments)
switch arguments.first {
case "set":
    let timestamps = arguments.contains("--timestamps")
    arguments.removeAll { $0 == "--timestamps" }
    guard arguments.count == 3 else { Output.fail("usage: price-ticker set PRICE CURRENCY [--timestamps]", status: 2) }
    // Decimal(string:) reads the digits as written: no binary floating point on the way.
    guard let value = Decimal(string: arguments[1], locale: Locale(identifier: "en_US_POSIX")), value > 0,
          arguments[1].allSatisfy({ $0.isNumber || $0 == "." })
    else { Output.fail("\(arguments[1]) is not a price; write it like 68901.23", status: 1) }
    let currency = arguments[2].uppercased()
    guard currency.count == 3, currency.allSatisfy(\.isLetter) else {
        Output.fail("\(arguments[2]) is not a currency code such as USD", status: 1)
    }
    let started = Output.monotonicNanoseconds()
    do {
        try suite.set(encodable: PriceQuote(value: value, currency: currency), forKey: PriceQuote.storageKey)
    } catch {
        Output.fail("cannot store the price: \(error)", status: 3)
    }
    // With --timestamps, the line starts with CLOCK_MONOTONIC when the write started.
    let stored = "Stored \(rendered(PriceQuote(value: value, currency: currency)))"
    Output.line(timestamps ? "\(started) \(stored)" : stored)
case "show":
    guard arguments.count == 1 else { Output.fail("usage: price-ticker show", status: 2) }
    let quote = PriceQuote.cached(in: suite)
    Output.line(rendered(quote))
    if let quote {
        // What the same digits become through a Double, as in a cache that keeps the
        // price as a plain number (JSONSerialization, property lists): the nearest
        // Double, read back as a Decimal.
        let throughDouble = NSNumber(value: Double(quote.value.description) ?? 0).decimalValue
        Output.line("  stored exactly as \(quote.value); through a Double it would read \(throughDouble)")
    }
case "watch":
    Widget.run(keys: [PriceQuote.storageKey], arguments: Array(arguments.dropFirst()), suite: suite) { suite in
        rendered(PriceQuote.cached(in: suite))
    }
default:
    Output.fail("usage: price-ticker [--dir DIR] set PRICE CURRENCY | show | watch [--once] [--timestamps]", status: 2)
}
