import PushCore
import RedisQueue

/// Why a job was sent again at once (`herald_push_resends_total{cause}`).
public enum ResendCause: Int, CaseIterable, Sendable {
    case expiredProviderToken, connectionReplaced, connectionLost, timedOut, notProcessed, environmentFallback

    public var label: String {
        switch self {
        case .expiredProviderToken: "expired_provider_token"
        case .connectionReplaced: "connection_replaced"
        case .connectionLost: "connection_lost"
        case .timedOut: "timed_out"
        case .notProcessed: "not_processed"
        case .environmentFallback: "environment_fallback"
        }
    }
}

/// A transport failure: a send that got no HTTP answer (`herald_push_transport_failures_total{kind}`).
public enum TransportFailureKind: Int, CaseIterable, Sendable {
    case notProcessed, connectionLost, timedOut, connectionFailed

    public var label: String {
        switch self {
        case .notProcessed: "not_processed"
        case .connectionLost: "connection_lost"
        case .timedOut: "timed_out"
        case .connectionFailed: "connection_failed"
        }
    }

    init(_ failure: TransportFailure) {
        switch failure {
        case .notProcessed: self = .notProcessed
        case .outcomeUnknown: self = .connectionLost
        case .timedOut: self = .timedOut
        case .connectionFailed: self = .connectionFailed
        }
    }
}

/// The outcome label of `herald_results_total`: one per result entry written, so the counter agrees with the
/// results stream (`retrying` included; a scheduled job writes no entry and is counted apart).
public typealias JobOutcome = ResultEntry.Outcome

/// What one event loop's delivery core has done, for `/metrics`: plain integers in fixed arrays indexed by
/// platform, app, outcome, status and reason, so counting an answer is a few additions with no lock, no
/// hashing of strings and no allocation. Loop-confined like the core that owns it; `snapshot()` copies
/// it (on the loop) for a scrape, which merges the copies of every loop.
public final class DeliveryMetrics {
    /// The statuses the providers document; anything else counts under `other`.
    static let statuses = [200, 201, 400, 401, 403, 404, 405, 410, 413, 429, 500, 502, 503]
    /// Reason slots: 0 is "no reason" (a success), then every reason the providers document (each once, in the
    /// providers' order), then `other`.
    public static func reasonNames(of providers: [any PushProvider.Type]) -> [String] {
        var seen = Set<String>()
        return [""] + providers.flatMap { $0.metricsReasons }.filter { seen.insert($0).inserted } + ["other"]
    }
    /// Each documented reason's slot among the snapshot's `reasonNames`.
    private let reasonSlots: [String: Int]

    let appNames: [String]
    private(set) var values: MetricsSnapshot

    /// `reasonNames`: `reasonNames(of:)` the configuration's providers; without them every reason counts as `other`.
    public init(appNames: [String], appEnvironments: [[String]]? = nil, appPlatforms: [Platform]? = nil,
                reasonNames: [String] = reasonNames(of: [])) {
        self.appNames = appNames
        var slots: [String: Int] = [:]
        for (slot, name) in reasonNames.enumerated().dropFirst().dropLast() { slots[name] = slot }
        reasonSlots = slots
        values = MetricsSnapshot(appNames: appNames, appEnvironments: appEnvironments, appPlatforms: appPlatforms, reasonNames: reasonNames)
    }

    /// A result entry was built for a job of app `app` (nil: the job named no known app) and `platform` (nil: a
    /// rejected job whose platform cannot be told).
    @inline(__always)
    func job(_ platform: Platform?, app: Int?, _ outcome: JobOutcome) {
        values.jobs[values.jobIndex(platform, app ?? appNames.count, outcome)] &+= 1
    }

    /// A job reached a terminal outcome `nanoseconds` after its claim.
    @inline(__always)
    func jobFinished(_ platform: Platform, afterNanoseconds nanoseconds: UInt64) {
        values.jobLatency[platform.slot].observe(nanoseconds)
    }

    func scheduled() { values.scheduled &+= 1 }
    func unguarded() { values.unguarded &+= 1 }

    /// One answer (or transport failure) to one request sent `nanoseconds` ago.
    @inline(__always)
    func answer(_ platform: Platform, _ result: DeliveryResult, afterNanoseconds nanoseconds: UInt64) {
        values.requestLatency[platform.slot].observe(nanoseconds)
        switch result {
        case .answer(let answer):
            let status = Self.statuses.firstIndex(of: answer.status) ?? Self.statuses.count
            let name = answer.metricsReason
            let reason = name.isEmpty ? 0 : reasonSlots[name] ?? values.reasonNames.count - 1
            values.responses[values.responseIndex(platform, status: status, reason: reason)] &+= 1
        case .transport(let failure):
            values.transport[platform.slot * TransportFailureKind.allCases.count + TransportFailureKind(failure).rawValue] &+= 1
        }
    }

    @inline(__always)
    /// A job that went to its app's other environment after BadDeviceToken ended: `resolved` when delivered there.
    func fallbackEnded(app: Int, resolved: Bool) {
        values.fallbacks[app * 2 + (resolved ? 0 : 1)] &+= 1
    }

    func resend(_ platform: Platform, _ cause: ResendCause) {
        values.resends[platform.slot * ResendCause.allCases.count + cause.rawValue] &+= 1
    }

    /// The cause of a `.resendNow` / `.resendUnprocessed` decision on `result`.
    static func resendCause(_ result: DeliveryResult) -> ResendCause {
        switch result {
        case .transport(.notProcessed): .notProcessed
        case .transport(.timedOut): .timedOut
        case .transport: .connectionLost
        // A resend for a new credential token (APNs' ExpiredProviderToken, FCM's 401 on a stale access token),
        // else for a replaced connection (IdleTimeout, UnrelatedKeyIdInToken).
        case .answer(let answer):
            if case .resendNow(_, refreshToken: true) = answer.answerClass { .expiredProviderToken } else { .connectionReplaced }
        }
    }

    func destinationPaused() { values.pauses &+= 1 }
}

/// A histogram with fixed bounds, counted per bucket (made cumulative when written out). Sum in nanoseconds.
public struct LatencyHistogram: Sendable, Equatable {
    /// Upper bounds in seconds, the last bucket being +Inf.
    public static let boundsSeconds: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]
    static let boundsNanos: [UInt64] = boundsSeconds.map { UInt64($0 * 1e9) }

    public var buckets = [UInt64](repeating: 0, count: boundsSeconds.count + 1)
    public var sumNanos: UInt64 = 0
    public var count: UInt64 = 0

    public init() {}

    @inline(__always)
    public mutating func observe(_ nanoseconds: UInt64) {
        var index = 0
        let bounds = Self.boundsNanos
        while index < bounds.count && nanoseconds > bounds[index] { index += 1 }
        buckets[index] &+= 1
        sumNanos &+= nanoseconds
        count &+= 1
    }

    static func + (a: LatencyHistogram, b: LatencyHistogram) -> LatencyHistogram {
        var c = a
        for i in c.buckets.indices { c.buckets[i] &+= b.buckets[i] }
        c.sumNanos &+= b.sumNanos
        c.count &+= b.count
        return c
    }

    /// The value below which `quantile` of the observations fall, interpolated in its bucket (as PromQL's
    /// histogram_quantile does); nil without observations.
    public func quantileSeconds(_ quantile: Double) -> Double? {
        guard count > 0 else { return nil }
        let rank = quantile * Double(count)
        var seen: UInt64 = 0
        for (index, n) in buckets.enumerated() {
            if Double(seen + n) >= rank && n > 0 {
                let lower = index == 0 ? 0 : Self.boundsSeconds[index - 1]
                guard index < Self.boundsSeconds.count else { return lower }
                let upper = Self.boundsSeconds[index]
                return lower + (upper - lower) * (rank - Double(seen)) / Double(n)
            }
            seen += n
        }
        return Self.boundsSeconds.last
    }
}
