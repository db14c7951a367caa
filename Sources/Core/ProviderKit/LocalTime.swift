import Foundation

/// Wall-clock times in a device's time zone (docs/campaigns.md, "Local time and quiet hours"): a campaign's
/// `deliver_at_local`, an app's or a campaign's quiet hours. Foundation's `TimeZone` carries its own zone data (ICU's,
/// in swift-foundation), so a machine without `/usr/share/zoneinfo` or `TZ` resolves the same zones.
public enum LocalTime {
    /// A time zone as registrations and settings take it: an IANA name (`Europe/Berlin`) or `UTC`, not an
    /// abbreviation or an offset that Foundation would also read.
    public static func zone(_ name: String) -> TimeZone? {
        guard name.contains("/") || name == "UTC" else { return nil }
        return TimeZone(identifier: name)
    }

    /// A Gregorian calendar in `zone`.
    public static func calendar(_ zone: TimeZone) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        return calendar
    }

    /// The instant (ms since the epoch) of `time` on the local day `day` (year, month, day) in `calendar`'s zone. A
    /// wall time that does not exist (a DST gap) moves forward by the gap (02:30 on a spring-forward night is
    /// 03:30); one that occurs twice (the fall-back hour) is the first.
    public static func instant(_ day: DateComponents, _ time: TimeOfDay, in calendar: Calendar) -> Int64? {
        var components = DateComponents(year: day.year, month: day.month, day: day.day, hour: time.hour, minute: time.minute)
        components.calendar = calendar
        guard let date = calendar.date(from: components) else { return nil }
        return Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// The local day (year, month, day) and time of day (minutes) of `ms` in `calendar`'s zone.
    public static func local(_ ms: Int64, in calendar: Calendar) -> (day: DateComponents, minutes: Int) {
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: Date(timeIntervalSince1970: Double(ms) / 1000))
        return (DateComponents(year: parts.year, month: parts.month, day: parts.day), (parts.hour ?? 0) * 60 + (parts.minute ?? 0))
    }

    /// The local day after `day`.
    public static func next(_ day: DateComponents, in calendar: Calendar) -> DateComponents {
        var noon = day
        noon.hour = 12
        guard let date = calendar.date(from: noon), let after = calendar.date(byAdding: .day, value: 1, to: date) else { return day }
        let parts = calendar.dateComponents([.year, .month, .day], from: after)
        return DateComponents(year: parts.year, month: parts.month, day: parts.day)
    }

    /// The first instant at or after `from` (ms) whose local wall time is `time` (the next day's when today's has
    /// passed).
    public static func next(_ time: TimeOfDay, from: Int64, in calendar: Calendar) -> Int64? {
        let today = local(from, in: calendar).day
        guard let at = instant(today, time, in: calendar) else { return nil }
        return at >= from ? at : instant(next(today, in: calendar), time, in: calendar)
    }
}

/// A wall-clock time of day, `HH:MM` (00:00 to 23:59).
public struct TimeOfDay: Sendable, Equatable, CustomStringConvertible {
    public let hour: Int
    public let minute: Int

    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(TimeOfDay.isDigit) }),
              let hour = Int(parts[0]), let minute = Int(parts[1]), (0...23).contains(hour), (0...59).contains(minute) else { return nil }
        self.hour = hour
        self.minute = minute
    }

    public var minutes: Int { hour * 60 + minute }

    /// 0 to 9 only (`Int` would take a sign, `isNumber` other scripts' digits): for the fixed-width forms of times and dates.
    public static func isDigit(_ character: Character) -> Bool { character.isASCII && character.isNumber }
    public var description: String { String(format: "%02d:%02d", hour, minute) }
}

/// A window of local time during which non-urgent messages wait (`{"start": "22:00", "end": "08:00"}`): from
/// `start` up to `end`, across midnight when `end` is earlier.
public struct QuietHours: Sendable, Equatable {
    public let start: TimeOfDay
    public let end: TimeOfDay

    /// The rule every reader of a window states.
    public static let rule = #"quiet hours are {"start": "HH:MM", "end": "HH:MM"} (two different local times; the window may cross midnight)"#

    /// The window of a `{"start", "end"}` object's members: nil unless both are `HH:MM`, differ, and nothing else is given.
    public init?(start: String?, end: String?, members: Int) {
        guard members == 2, let start = start.flatMap({ TimeOfDay($0) }), let end = end.flatMap({ TimeOfDay($0) }), start != end else { return nil }
        self.start = start
        self.end = end
    }

    /// When `ms` falls inside the window in `calendar`'s zone, the window's end after it (ms); nil outside.
    public func end(after ms: Int64, in calendar: Calendar) -> Int64? {
        let (day, minutes) = LocalTime.local(ms, in: calendar)
        let inside = start.minutes < end.minutes ? (start.minutes..<end.minutes).contains(minutes)
                                                 : minutes >= start.minutes || minutes < end.minutes
        guard inside else { return nil }
        // Before midnight in a window that crosses it: it ends on the next day.
        let endDay = start.minutes > end.minutes && minutes >= start.minutes ? LocalTime.next(day, in: calendar) : day
        guard let at = LocalTime.instant(endDay, end, in: calendar) else { return nil }
        if at > ms { return at }
        // An end inside the hour a fall-back repeats, checked in its second pass (02:15 the second time, ending at
        // 02:30): `instant` gives the first 02:30, already past; the end is its second occurrence, later by the
        // offsets' difference.
        let zone = calendar.timeZone
        let shift = Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(at) / 1000))
                          - zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(ms) / 1000))) * 1000
        return at + shift > ms ? at + shift : nil
    }
}
