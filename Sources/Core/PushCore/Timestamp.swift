/// Reads RFC 3339 timestamps (`2026-12-24T18:00:00Z`, `2026-12-24T19:00:00.250+01:00`) into milliseconds since
/// the epoch, without Foundation: the job parser runs on the worker's hot path. Pure.
public enum Timestamp {
    public static func rfc3339Milliseconds(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        func digits(_ at: Int, _ count: Int) -> Int64? {
            guard at + count <= b.count else { return nil }
            var v: Int64 = 0
            for i in at..<(at + count) {
                guard b[i] >= 48, b[i] <= 57 else { return nil }
                v = v * 10 + Int64(b[i] - 48)
            }
            return v
        }
        guard b.count >= 20, let year = digits(0, 4), b[4] == 45, let month = digits(5, 2), b[7] == 45,
              let day = digits(8, 2), b[10] == 84 || b[10] == 116 || b[10] == 32, let hour = digits(11, 2), b[13] == 58,
              let minute = digits(14, 2), b[16] == 58, let second = digits(17, 2),
              (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour < 24, minute < 60, second < 61
        else { return nil }
        var i = 19
        var millis: Int64 = 0
        if i < b.count, b[i] == 46 {  // fraction: milliseconds kept, the rest ignored
            i += 1
            var n = 0
            while i < b.count, b[i] >= 48, b[i] <= 57 {
                if n < 3 { millis = millis * 10 + Int64(b[i] - 48) }
                n += 1
                i += 1
            }
            guard n > 0 else { return nil }
            if n < 3 { for _ in n..<3 { millis *= 10 } }
        }
        guard i < b.count else { return nil }
        var offsetMinutes: Int64 = 0
        if b[i] == 90 || b[i] == 122 {  // Z
            i += 1
        } else if b[i] == 43 || b[i] == 45, let oh = digits(i + 1, 2), i + 3 < b.count, b[i + 3] == 58, let om = digits(i + 4, 2),
                  oh < 24, om < 60 {
            offsetMinutes = (oh * 60 + om) * (b[i] == 45 ? -1 : 1)
            i += 6
        } else {
            return nil
        }
        guard i == b.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + min(second, 59) - offsetMinutes * 60
        return seconds * 1000 + millis
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
