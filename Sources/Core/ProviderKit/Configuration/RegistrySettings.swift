import PushCore

extension Configuration {
    /// The device registry (docs/devices.md): off by default, so a deployment that keeps its own device table pays
    /// nothing. Ages in days, per platform where `platforms` names one.
    public struct RegistrySettings: Sendable, Equatable {
        public init() {}
        public var enabled = false
        /// Google's published rule for FCM (a token unrefreshed for a month is stale, an Android token unused for 270
        /// days expires), the default of every platform: the others publish none.
        public var staleAfterDays = 30
        public var removeAfterDays = 270
        /// Per platform (`Platform.rawValue`): its own ages, where the file gives them.
        public var platforms: [String: Aging] = [:]
        /// How long a removed device's record (state, reason, answer) stays readable before the sweeper purges it.
        public var removedRetentionDays = 30
        public var sweepIntervalMs = 60_000
        /// The most devices one sweep call ages, removes or purges in one list.
        public var sweepBatch = 1_000
        public var eventsMaxLength = 1_000_000
        /// The largest `events_max_length` a configuration may give.
        public static let maxEventsLength = 100_000_000
        /// Per app (its name): the local-time defaults of its campaigns (docs/campaigns.md, "Local time and quiet hours").
        public var apps: [String: AppLocalTime] = [:]

        /// An app's time zone for devices registered without one (UTC when nil), and its quiet hours.
        public struct AppLocalTime: Sendable, Equatable {
            public var timeZone: String?
            public var quietHours: QuietHours?
            public init(timeZone: String? = nil, quietHours: QuietHours? = nil) {
                self.timeZone = timeZone
                self.quietHours = quietHours
            }
        }

        public struct Aging: Sendable, Equatable {
            public var staleAfterDays: Int
            public var removeAfterDays: Int
            public init(staleAfterDays: Int, removeAfterDays: Int) {
                self.staleAfterDays = staleAfterDays
                self.removeAfterDays = removeAfterDays
            }
        }

        /// The ages that apply to `platform`'s devices.
        public func aging(_ platform: Platform) -> Aging {
            platforms[platform.rawValue] ?? Aging(staleAfterDays: staleAfterDays, removeAfterDays: removeAfterDays)
        }
    }
}
