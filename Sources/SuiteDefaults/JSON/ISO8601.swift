#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// ISO 8601 dates in UTC that keep a date's stored number exactly:
/// "2026-11-22T10:15:00.25Z", "+12345-01-01T00:00:00Z", "-0001-06-30T12:00:00Z".
///
/// A date is stored as a Double of seconds since 2001-01-01 UTC. The text holds the
/// shortest decimal that converts back to that Double, moved to the calendar with
/// decimal digits rather than binary fractions, and reading converts one decimal string
/// with one correctly rounded `Double(_:)`; so a text this writes reads back to the
/// same bits, except that -0.0 reads back as 0.0. Years outside 0000...9999 take the
/// expanded form: a sign and at least four digits.
enum ISO8601 {
    /// 2001-01-01T00:00:00Z in seconds since 1970, the epoch of `UTCCalendar`.
    private static let referenceEpoch: Int64 = 978_307_200

    /// The most fractional digits written. A double has at most 17 significant digits,
    /// so only a date within a second of 2001-01-01 needs more, and a number of seconds
    /// says that better than a row of zeros.
    static let maximumFractionDigits = 17

    /// The date's ISO 8601 text, or for a date that has none (see `text(forInterval:)`)
    /// its number of seconds since 2001-01-01 UTC: for display.
    static func format(_ date: Date) -> String {
        let interval = date.timeIntervalSinceReferenceDate
        return text(forInterval: interval) ?? "\(interval)"
    }

    /// The ISO 8601 text of `interval` seconds since 2001-01-01 UTC; nil when it is not
    /// finite, its year is beyond what `struct tm` holds (about ±2^31 years), or it needs more
    /// than `maximumFractionDigits` fractional digits.
    static func text(forInterval interval: Double) -> String? {
        guard interval.isFinite, let decimal = ShortestDecimal(interval),
              decimal.integer.count <= 17, decimal.fraction.count <= maximumFractionDigits
        else { return nil }
        // Floor to whole seconds: below zero the fraction counts up from the second before.
        var seconds = Int64(String(decoding: decimal.integer, as: UTF8.self)) ?? 0
        var fraction = decimal.fraction
        if decimal.negative {
            seconds = -seconds
            if !fraction.isEmpty {
                seconds -= 1
                fraction = complement(fraction)
            }
        }
        let parts = UTCCalendar.fields(ofUnixSeconds: seconds + referenceEpoch)
        // The years gmtime gives: its tm_year, the year minus 1900, is a C int.
        guard Int32(exactly: parts.year - 1900) != nil else { return nil }
        let year = Int(parts.year)
        let yearText = (0...9999).contains(year) ? pad(year, 4) : (year < 0 ? "-" : "+") + pad(abs(year), 4)
        var text = "\(yearText)-\(pad(parts.month, 2))-\(pad(parts.day, 2))"
            + "T\(pad(parts.hour, 2)):\(pad(parts.minute, 2)):\(pad(parts.second, 2))"
        if !fraction.isEmpty { text += "." + String(decoding: fraction, as: UTF8.self) }
        return text + "Z"
    }

    /// The date that `interval(parsing:)` reads, or nil.
    static func parse(_ text: String) -> Date? {
        interval(parsing: text).map(Date.init(timeIntervalSinceReferenceDate:))
    }

    /// Seconds since 2001-01-01 UTC, correctly rounded, from
    /// "YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM|±HHMM)", where the year may be expanded
    /// ("+12345", "-0001", at most ten digits) and any number of fractional digits may
    /// follow; nil for anything else, for a day the month does not have, and for an
    /// offset beyond 23:59.
    static func interval(parsing text: String) -> Double? {
        let bytes = Array(text.utf8)
        var position = 0
        func isDigit(_ index: Int) -> Bool { index < bytes.count && (0x30...0x39).contains(bytes[index]) }
        func number(_ width: Int) -> Int? {
            guard position + width <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[position..<(position + width)] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            position += width
            return value
        }
        func literal(_ character: Character) -> Bool {
            guard position < bytes.count, bytes[position] == character.asciiValue! else { return false }
            position += 1
            return true
        }
        func sign() -> Int? {
            if literal("+") { return 1 }
            if literal("-") { return -1 }
            return nil
        }

        let year: Int
        if let yearSign = sign() {
            var width = 0
            while isDigit(position + width) { width += 1 }
            guard (4...10).contains(width), let magnitude = number(width), yearSign > 0 || magnitude > 0 else { return nil }
            year = yearSign * magnitude
        } else {
            guard let plain = number(4) else { return nil }
            year = plain
        }
        guard literal("-"), let month = number(2), literal("-"), let day = number(2),
              literal("T") || literal("t") || literal(" "),
              let hour = number(2), literal(":"), let minute = number(2), literal(":"), let second = number(2),
              (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
              hour < 24, minute < 60, second < 61,
              // The years timegm takes (tm_year, the year minus 1900, is a C int), less
              // the last: a leap second there would carry into a year it cannot hold.
              let tmYear = Int32(exactly: year - 1900), tmYear < Int32.max
        else { return nil }
        var fraction: ArraySlice<UInt8> = []
        if literal(".") {
            let start = position
            while isDigit(position) { position += 1 }
            guard position > start else { return nil }
            fraction = bytes[start..<position]
            while fraction.last == 0x30 { fraction.removeLast() }
        }
        var offset = 0
        if literal("Z") || literal("z") {
        } else if let offsetSign = sign() {
            let hours = number(2)
            _ = literal(":")  // optional, as in "+0200"
            guard let hours, let minutes = number(2), hours < 24, minutes < 60 else { return nil }
            offset = offsetSign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard position == bytes.count else { return nil }

        // Second 60, a leap second, counts as the first of the next minute.
        let unixSeconds = UTCCalendar.unixSeconds(
            of: .init(year: Int64(tmYear) + 1900, month: month, day: day, hour: hour, minute: minute, second: second))
        // The whole seconds and the fraction as one decimal, rounded once.
        let seconds = unixSeconds - Int64(offset) - referenceEpoch
        guard !fraction.isEmpty else { return Double(seconds) }
        if seconds >= 0 { return Double("\(seconds)." + String(decoding: fraction, as: UTF8.self)) }
        // seconds + 0.fraction = -((|seconds| - 1) + (1 - 0.fraction))
        return Double("-\(-(seconds + 1))." + String(decoding: complement(Array(fraction)), as: UTF8.self))
    }

    /// The digits of 1 - 0.digits, as many as `digits` has; the last digit must not be 0.
    private static func complement(_ digits: [UInt8]) -> [UInt8] {
        var result = digits.map { 0x30 + 0x39 - $0 }
        result[result.count - 1] += 1
        return result
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        guard month == 2 else { return [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] }
        return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

/// The shortest decimal that converts back to a Double (Swift's `description`), as
/// ASCII digits either side of the point: the integer part without leading zeros, the
/// fraction without trailing ones.
private struct ShortestDecimal {
    var negative: Bool
    var integer: [UInt8]
    var fraction: [UInt8]

    /// Nil when the integer part would have more than 20 digits: no calendar needs them.
    init?(_ number: Double) {
        let text = Array(number.description.utf8)  // "-1.5e-07", "723456789.12345", "1e+16"
        negative = text.first == UInt8(ascii: "-")
        var digits: [UInt8] = []
        var exponent = 0
        var afterPoint = false
        var index = negative ? 1 : 0
        while index < text.count {
            let byte = text[index]
            index += 1
            if byte == UInt8(ascii: "e") {
                guard let written = Int(String(decoding: text[index...], as: UTF8.self)) else { return nil }
                exponent += written
                break
            }
            if byte == UInt8(ascii: ".") {
                afterPoint = true
            } else {
                digits.append(byte)
                if afterPoint { exponent -= 1 }
            }
        }
        // The value is digits × 10^exponent.
        guard digits.count + exponent <= 20 else { return nil }
        if exponent >= 0 {
            integer = digits + Array(repeating: UInt8(ascii: "0"), count: exponent)
            fraction = []
        } else if digits.count > -exponent {
            integer = Array(digits[..<(digits.count + exponent)])
            fraction = Array(digits[(digits.count + exponent)...])
        } else {
            integer = []
            fraction = Array(repeating: UInt8(ascii: "0"), count: -exponent - digits.count) + digits
        }
        integer = Array(integer.drop(while: { $0 == UInt8(ascii: "0") }))
        while fraction.last == UInt8(ascii: "0") { fraction.removeLast() }
    }
}
