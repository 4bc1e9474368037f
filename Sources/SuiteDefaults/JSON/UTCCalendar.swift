/// What `gmtime_r` and `timegm` compute, in plain Swift: the proleptic Gregorian
/// calendar in UTC, without leap seconds, for any year (year 0 is 1 BC). No system
/// call and no time zone is involved, so nothing here touches the C library.
/// (The algorithms are Howard Hinnant's `civil_from_days` and `days_from_civil`.)
enum UTCCalendar {
    /// A moment split into calendar fields, as `struct tm` has them, but with the
    /// year itself rather than the year minus 1900, and months and days from 1.
    struct Fields: Equatable {
        var year: Int64
        var month: Int  // 1...12
        var day: Int  // 1...31
        var hour: Int
        var minute: Int
        var second: Int
    }

    /// The fields of `seconds` since 1970-01-01T00:00:00Z (`gmtime_r`). A time
    /// before the epoch counts back from it: -1 is 1969-12-31T23:59:59.
    static func fields(ofUnixSeconds seconds: Int64) -> Fields {
        let (days, secondOfDay) = floorDivision(seconds, 86_400)
        let (year, month, day) = civil(fromDays: days)
        return Fields(year: year, month: month, day: day, hour: Int(secondOfDay / 3600),
                      minute: Int(secondOfDay % 3600 / 60), second: Int(secondOfDay % 60))
    }

    /// Seconds since 1970-01-01T00:00:00Z of the fields (`timegm`). Fields past
    /// their range carry over, as `timegm` normalizes them: second 60 is the first
    /// second of the next minute. `month` and `day` must be in range; the arithmetic
    /// wraps for years beyond about ±2.9 × 10^11.
    static func unixSeconds(of fields: Fields) -> Int64 {
        let days = self.days(fromYear: fields.year, month: fields.month, day: fields.day)
        return days &* 86_400 &+ Int64(fields.hour * 3600 + fields.minute * 60 + fields.second)
    }

    /// Days since 1970-01-01 of a date.
    private static func days(fromYear year: Int64, month: Int, day: Int) -> Int64 {
        let y = month <= 2 ? year &- 1 : year
        let era = floorDivision(y, 400).quotient
        let yearOfEra = y &- era &* 400  // 0...399
        let shiftedMonth = Int64(month > 2 ? month - 3 : month + 9)  // March is 0
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + Int64(day) - 1  // 0...365
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear  // 0...146096
        return era &* 146_097 &+ dayOfEra &- 719_468
    }

    /// The date of a day counted from 1970-01-01.
    private static func civil(fromDays days: Int64) -> (year: Int64, month: Int, day: Int) {
        let shifted = days + 719_468  // from 0000-03-01
        let era = floorDivision(shifted, 146_097).quotient
        let dayOfEra = shifted - era * 146_097  // 0...146096
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365  // 0...399
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)  // 0...365
        let shiftedMonth = (5 * dayOfYear + 2) / 153  // March is 0
        let day = Int(dayOfYear - (153 * shiftedMonth + 2) / 5 + 1)
        let month = Int(shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9)
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The quotient rounded down, and the remainder that goes with it (never negative).
    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let (quotient, remainder) = value.quotientAndRemainder(dividingBy: divisor)
        return remainder < 0 ? (quotient - 1, remainder + divisor) : (quotient, remainder)
    }
}
