import Foundation
import Glibc

/// ISO 8601 dates in UTC with up to nine fractional digits: "2026-11-22T10:15:00.25Z".
/// Foundation's formatter keeps only milliseconds; this keeps nanoseconds, which
/// round-trips every date of our time exactly.
enum ISO8601 {
    /// The ISO 8601 text; for a date no calendar can show (not finite, or beyond
    /// ±10^14 seconds), the number of seconds since 1970 instead.
    static func format(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        guard interval.isFinite, abs(interval) < 1e14 else { return "\(interval)" }
        var seconds = interval.rounded(.down)
        var nanoseconds = ((interval - seconds) * 1e9).rounded()
        if nanoseconds >= 1e9 {
            seconds += 1
            nanoseconds = 0
        }
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(abs(Int(value)))
            return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        var text = "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))"
            + "T\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))"
        if nanoseconds > 0 {
            var fraction = pad(Int32(nanoseconds), 9)
            while fraction.hasSuffix("0") { fraction.removeLast() }
            text += "." + fraction
        }
        return text + "Z"
    }

    /// Parses "YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)"; nil for anything else.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        var position = 0
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
        guard let year = number(4), literal("-"), let month = number(2), literal("-"), let day = number(2),
              literal("T") || literal("t") || literal(" "),
              let hour = number(2), literal(":"), let minute = number(2), literal(":"), let second = number(2),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction = 0.0
        if literal(".") {
            let start = position
            while position < bytes.count, (0x30...0x39).contains(bytes[position]) { position += 1 }
            guard position > start, let digits = Double("0." + String(decoding: bytes[start..<position], as: UTF8.self)) else { return nil }
            fraction = digits
        }
        var offset = 0
        if literal("Z") || literal("z") {
        } else if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
            let sign = bytes[position] == UInt8(ascii: "-") ? -1 : 1
            position += 1
            let hours = number(2)
            _ = literal(":")  // optional, as in "+0200"
            guard let hours, let minutes = number(2) else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard position == bytes.count else { return nil }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let seconds = timegm(&parts)
        return Date(timeIntervalSince1970: Double(seconds - offset) + fraction)
    }
}
