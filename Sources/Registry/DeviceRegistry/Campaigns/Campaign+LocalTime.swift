import Foundation
import ProviderKit
import PushCore

/// When each device gets a campaign's job (docs/campaigns.md, "Local time and quiet hours"): its `deliver_at_local`
/// in the device's zone, moved past its quiet hours, as the job's `deliver_at`, which the worker holds it until.
extension Campaign {
    /// A local wall time: every day's (the next at or after the campaign's creation), or one date's.
    public enum LocalDelivery: Sendable, Equatable {
        case next(TimeOfDay)
        /// Year, month and day, and the time on it.
        case on(DateComponents, TimeOfDay)
    }

    public enum QuietHoursChoice: Sendable, Equatable {
        /// The app's (`registry.apps`), if it has any.
        case app
        /// None: `quiet_hours: false`.
        case ignored
        case window(QuietHours)
    }

    /// The quiet hours its jobs keep: none for a time-sensitive notification (worth interrupting for) or
    /// `quiet_hours: false`, else its own window or its app's.
    public func quietHours(app: Configuration.RegistrySettings.AppLocalTime?, timeSensitive: Bool) -> QuietHours? {
        guard !timeSensitive else { return nil }
        switch quietHours {
        case .app: return app?.quietHours
        case .ignored: return nil
        case .window(let window): return window
        }
    }

    /// A job's `deliver_at` (ms) for a device in `zone` pushed at `now`, of a campaign created at `created`: the
    /// `deliver_at_local` instant (else now), moved to the end of `quiet` when it falls inside; nil to send at once.
    public func deliverAt(zone: TimeZone, quiet: QuietHours?, created: Int64, now: Int64) -> Int64? {
        guard deliverAtLocal != nil || quiet != nil else { return nil }
        let calendar = LocalTime.calendar(zone)
        let local = deliverAtLocal.flatMap { $0.instant(created: created, in: calendar) }
        if let quiet, let end = quiet.end(after: max(local ?? now, now), in: calendar) { return end }
        return local
    }
}

extension Campaign.LocalDelivery {
    /// Reads `deliver_at_local`: `"HH:MM"` or `"YYYY-MM-DDTHH:MM"`; nil when absent.
    static func parse(_ member: JSONValue?) throws(DeviceError) -> Self? {
        guard let member, member != .null else { return nil }
        let refused = DeviceError("bad_deliver_at_local", "deliver_at_local must be a local time \"HH:MM\" or a local date and time \"YYYY-MM-DDTHH:MM\"")
        guard case .string(let text) = member else { throw refused }
        if let time = TimeOfDay(text) { return .next(time) }
        let halves = text.split(separator: "T", omittingEmptySubsequences: false)
        let date = halves.first?.split(separator: "-", omittingEmptySubsequences: false) ?? []
        guard halves.count == 2, let time = TimeOfDay(halves[1]), date.count == 3, zip(date, [4, 2, 2]).allSatisfy({ $0.count == $1 && $0.allSatisfy(TimeOfDay.isDigit) }),
              let year = Int(date[0]), let month = Int(date[1]), let day = Int(date[2]), year >= 1970,
              // A real date: Feb 30 is refused, not moved into March.
              DateComponents(year: year, month: month, day: day).isValidDate(in: LocalTime.calendar(.gmt)) else { throw refused }
        return .on(DateComponents(year: year, month: month, day: day), time)
    }

    /// The instant (ms) of this local time in `calendar`'s zone: the date's, or the next at or after `created`.
    public func instant(created: Int64, in calendar: Calendar) -> Int64? {
        switch self {
        case .next(let time): LocalTime.next(time, from: created, in: calendar)
        case .on(let day, let time): LocalTime.instant(day, time, in: calendar)
        }
    }
}

extension Campaign.QuietHoursChoice {
    /// Reads `quiet_hours`: a window, or `false` to ignore the app's; the app's when absent.
    static func parse(_ member: JSONValue?) throws(DeviceError) -> Self {
        switch member {
        case nil, .null?: return .app
        case .bool(false)?: return .ignored
        case .object(let window)?:
            func text(_ key: String) -> String? { if case .string(let value)? = window[key] { value } else { nil } }
            if let hours = QuietHours(start: text("start"), end: text("end"), members: window.count) { return .window(hours) }
        default: break
        }
        throw DeviceError("bad_quiet_hours", "\(QuietHours.rule), or false to ignore the app's")
    }
}
