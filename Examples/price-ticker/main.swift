// price-ticker: keeps the last valid BTC price for the app and its widget, as a
// Codable value with a Decimal, which comes back exactly.
//
//     price-ticker [--dir DIR] set PRICE CURRENCY [--timestamps]   e.g. set 68901.23 USD
//     price-ticker [--dir DIR] show
//     price-ticker [--dir DIR] watch [--once] [--timestamps]
import FitnessShared
import Foundation
import SuiteDefaults
import ToolSupport

func rendered(_ quote: PriceQuote?) -> String {
    guard let quote else { return "BTC: no price yet" }
    return "BTC: \(quote.value) \(quote.currency)"
}

let syntax = CommandLineSyntax(
    synopsis: ["price-ticker [--dir DIR] set PRICE CURRENCY [--timestamps]   e.g. set 68901.23 USD",
               "price-ticker [--dir DIR] show",
               "price-ticker [--dir DIR] watch [--once] [--timestamps]"],
    arguments: [
        CommandLineArgument("set PRICE CURRENCY", help: "store the price"),
        CommandLineArgument("show", help: "print the price, and what a Double would make of it"),
        CommandLineArgument("watch", help: "print the price, and again on every change"),
    ],
    options: Widget.options,
    // A price such as -5 is refused as a price, not as an option.
    takesUndeclaredOptionsAsArguments: true
)
let commandLine = syntax.parseCommandLine()
let arguments = commandLine.arguments
let suite = FitnessSuite.open(commandLine)
switch arguments.first {
case "set":
    let timestamps = commandLine.isSet("--timestamps")
    guard arguments.count == 3 else { ToolError.usage("usage: price-ticker set PRICE CURRENCY [--timestamps]").exit() }
    // Decimal(string:) reads the digits as written: no binary floating point on the way.
    guard let value = Decimal(string: arguments[1], locale: Locale(identifier: "en_US_POSIX")), value > 0,
          arguments[1].allSatisfy({ $0.isNumber || $0 == "." })
    else { ToolError(status: 1, message: "\(arguments[1]) is not a price; write it like 68901.23").exit() }
    let currency = arguments[2].uppercased()
    guard currency.count == 3, currency.allSatisfy(\.isLetter) else {
        ToolError(status: 1, message: "\(arguments[2]) is not a currency code such as USD").exit()
    }
    let started = monotonicNanoseconds()
    do {
        try suite.set(encodable: PriceQuote(value: value, currency: currency), forKey: PriceQuote.storageKey)
    } catch {
        ToolError(status: 3, message: "cannot store the price: \(error)").exit()
    }
    // With --timestamps, the line starts with CLOCK_MONOTONIC when the write started.
    let stored = "Stored \(rendered(PriceQuote(value: value, currency: currency)))"
    Output.line(timestamps ? "\(started) \(stored)" : stored)
case "show":
    guard arguments.count == 1 else { ToolError.usage("usage: price-ticker show").exit() }
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
    guard arguments.count == 1 else { ToolError.usage("usage: price-ticker watch [--once] [--timestamps]").exit() }
    Widget.run(.keys(named: [PriceQuote.storageKey]), suite: suite, commandLine: commandLine) { suite in
        rendered(PriceQuote.cached(in: suite))
    }
default:
    ToolError.usage("usage: price-ticker [--dir DIR] set PRICE CURRENCY | show | watch [--once] [--timestamps]").exit()
}
