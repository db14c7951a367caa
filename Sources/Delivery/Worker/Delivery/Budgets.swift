import PushCore
import RedisQueue

/// Which budget held a job: the reason of its `retrying` entry is `RateLimited:<kind>`.
enum BudgetKind: String, Sendable {
    case device, app, queue, channel
}

/// The budgets a job counts against (`budgets.*`), as `BudgetLimit`s for the Redis check, and each app's
/// adaptive per-second rate. Loop-confined, like the core that owns it.
final class Budgets {
    let settings: Configuration.BudgetSettings
    /// Per app index: the per-second budget as it is now (lowered after a 429), 0 when off.
    private(set) var appRates: [AdaptiveBudget]

    init(settings: Configuration.BudgetSettings, appCount: Int) {
        self.settings = settings
        appRates = (0..<appCount).map { _ in
            AdaptiveBudget(configured: settings.appPerSecond, floorPercent: settings.adaptiveFloorPercent,
                           recoveryAnswers: settings.adaptiveRecoveryAnswers)
        }
    }

    /// Slots of a budget of `rate` per `seconds`, in µs: the period plus `DeliveryCore.pacedGraceMilliseconds`
    /// shared out, since a paced job may leave up to that long after its slot; so any window of the period holds
    /// at most `rate` sends even when every one left late.
    private static func interval(perSecond rate: Double, seconds: Int64 = 1) -> Int64 {
        Int64(((Double(seconds) * 1_000_000 + Double(DeliveryCore.pacedGraceMilliseconds) * 1000) / rate).rounded(.up))
    }
    static func interval(_ count: Int, perSeconds seconds: Int64) -> Int64 { interval(perSecond: Double(count), seconds: seconds) }

    /// A budget's name, `<head><subject><tail>`, in one allocation: interpolating it grew the string twice
    /// (about 1,700 instructions a job with a device budget).
    static func name(_ head: String, _ subject: String, _ tail: String) -> String {
        var name = head
        name.reserveCapacity(head.utf8.count + subject.utf8.count + tail.utf8.count)
        name += subject
        name += tail
        return name
    }

    /// The job's limits and, alongside, what kind each one is; empty when none applies.
    func limits(for job: JobAttempt) -> (limits: [BudgetLimit], kinds: [BudgetKind]) {
        var limits: [BudgetLimit] = []
        var kinds: [BudgetKind] = []
        func add(_ kind: BudgetKind, _ name: String, _ micros: Int64) {
            limits.append(BudgetLimit(name: name, intervalMicros: micros, calendar: kind != .device))
            kinds.append(kind)
        }
        let n = job.notification
        if let channel = n.channelID {
            if settings.channelPerSecond > 0 { add(.channel, Self.name("channel:", channel, ":s"), Self.interval(settings.channelPerSecond, perSeconds: 1)) }
        } else if !n.deviceToken.isEmpty && n.platform.hasDeviceBudget && job.batchTokens.isEmpty {
            // A many-token send is paced by its app's and queue's budgets only: one device's budget would pace a
            // request for a thousand, and a thousand budgets per request would cost more than the send.
            let published = settings.fcmDeviceDefaults ? n.platform.publishedDeviceLimits : nil
            let perMinute = settings.devicePerMinute > 0 ? settings.devicePerMinute : published?.perMinute ?? 0
            let perHour = settings.devicePerHour > 0 ? settings.devicePerHour : published?.perHour ?? 0
            let token = n.deviceToken
            if settings.devicePerSecond > 0 { add(.device, Self.name("device:", token, ":s"), Self.interval(settings.devicePerSecond, perSeconds: 1)) }
            if perMinute > 0 { add(.device, Self.name("device:", token, ":m"), Self.interval(perMinute, perSeconds: 60)) }
            if perHour > 0 { add(.device, Self.name("device:", token, ":h"), Self.interval(perHour, perSeconds: 3600)) }
        }
        let app = job.destination.app
        let rate = appRates[app].current
        if rate > 0 { add(.app, Self.name("app:", job.appName, ":s"), Self.interval(perSecond: rate)) }
        if settings.appPerMinute > 0 { add(.app, Self.name("app:", job.appName, ":m"), Self.interval(settings.appPerMinute, perSeconds: 60)) }
        if settings.queuePerSecond > 0 { add(.queue, Self.name("queue:", job.lease.queueKey, ":s"), Self.interval(settings.queuePerSecond, perSeconds: 1)) }
        return (limits, kinds)
    }

    /// A provider's answer for the app: a 429 lowers its budget, a delivery counts towards climbing back.
    func answered(app: Int, status: Int, delivered: Bool) {
        if status == 429 { appRates[app].throttled() } else if delivered { appRates[app].good() }
    }
}

/// One app's per-second budget after the provider's answers: halved on a 429 (not below the floor), one tenth of
/// the configured rate back after every `recoveryAnswers` good answers, never above the configured rate.
struct AdaptiveBudget {
    let configured: Double
    private let floor: Double
    private let recoveryAnswers: Int
    private(set) var current: Double
    private var goodSinceStep = 0

    init(configured: Int, floorPercent: Int, recoveryAnswers: Int) {
        self.configured = Double(configured)
        floor = Double(configured) * Double(floorPercent) / 100
        self.recoveryAnswers = max(1, recoveryAnswers)
        current = Double(configured)
    }

    mutating func throttled() {
        guard configured > 0 else { return }
        current = max(floor, current / 2)
        goodSinceStep = 0
    }

    mutating func good() {
        guard current < configured else { return }
        goodSinceStep += 1
        guard goodSinceStep >= recoveryAnswers else { return }
        goodSinceStep = 0
        current = min(configured, current + configured / 10)
    }
}

/// Claimed jobs waiting for Redis's word on their budgets: the jobs, their limits and the limits' kinds.
public struct BudgetBatch {
    public let jobs: [JobAttempt]
    public let limits: [[BudgetLimit]]
    let kinds: [[BudgetKind]]
}

extension Configuration.BudgetSettings {
    /// Each budget that is on, as the spacing of its slots in µs, and that spacing shared among `shards`: the
    /// arithmetic the bounds must keep from overflowing (`DerivedValues`, run by `FuzzConfigurationBounds`).
    public func intervalsMicros(shards: Int) -> [Int64] {
        let rates = [(appPerSecond, 1), (appPerMinute, 60), (devicePerSecond, 1), (devicePerMinute, 60), (devicePerHour, 3600),
                     (queuePerSecond, 1), (channelPerSecond, 1)] as [(Int, Int64)]
        return rates.filter { $0.0 > 0 }.flatMap { rate, seconds in
            let limit = BudgetLimit(name: "", intervalMicros: Budgets.interval(rate, perSeconds: seconds))
            return [limit.intervalMicros, limit.share(among: Int64(max(1, shards))).intervalMicros]
        }
    }
}
