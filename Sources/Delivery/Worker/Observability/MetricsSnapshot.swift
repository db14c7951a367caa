import ProviderKit
import PushCore
import RedisQueue

/// One copy of a worker's metrics for a scrape: the counters of one or more event loops (added up) and the
/// gauges read when the copy was taken. Sendable, so each loop hands its copy to the loop that answers.
public struct MetricsSnapshot: Sendable {
    public var appNames: [String]
    /// The environments each app has (an APNs app its configured ones, the others only `production`): the
    /// per-environment families list no series an app cannot have.
    public var appEnvironments: [[String]]
    /// Each app's platform, when known: `herald_results_total` lists an app's zero series for its own platform only
    /// (issue 52: 80 series for 2 apps, 60 of them impossible); another platform's shows once it has a count.
    public var appPlatforms: [Platform]?
    /// [platform, then "unknown"][app, then "unknown"][outcome]
    public var jobs: [UInt64]
    /// [platform][status slot][reason slot]
    public var responses: [UInt64]
    /// [platform][TransportFailureKind]
    public var transport: [UInt64]
    /// [platform][ResendCause]
    public var resends: [UInt64]
    public var jobLatency: [LatencyHistogram]
    public var requestLatency: [LatencyHistogram]
    public var scheduled: UInt64 = 0
    /// Producer jobs sent without the idempotency check: their id's key held another type.
    public var unguarded: UInt64 = 0
    /// Destination pauses started (outage, refused credential, set-up failure).
    public var pauses: UInt64 = 0
    /// Workers whose heartbeat ran out that this process's reapers reaped.
    public var workersReaped: UInt64 = 0

    // Gauges and counters read from their owners when the copy is taken.
    public var inFlight = 0
    public var backlog = 0
    /// What the providers' senders add: their pools and tokens signed.
    public var provider: ProviderMetrics
    public var pools: [PoolSnapshot] {
        get { provider.pools }
        set { provider.pools = newValue }
    }
    public var paused: [PausedDestination] = []
    /// Per app: its per-second budget as it is now (0: none); the lowest any loop holds.
    public var budgetAppPerSecond: [Int] = []
    public var tokensSigned: [Int] {
        get { provider.tokensSigned }
        set { provider.tokensSigned = newValue }
    }
    public var redis = RedisConnectionStats()
    public var redisConnected = 0
    /// Event loops whose pipeline is running and claiming (not idle, draining or stopped).
    public var claimingLoops = 0
    public var drainingLoops = 0
    public var loops = 1
    /// Environment fallbacks by app, each ended `resolved` (delivered on the other environment) or not (dropped
    /// or failed there too): [app * 2 + (resolved ? 0 : 1)].
    public var fallbacks: [UInt64]

    static let outcomeCount = JobOutcome.allCases.count

    /// The `reason` labels of `responses`, by slot (`DeliveryMetrics.reasonNames(of:)`).
    public let reasonNames: [String]

    init(appNames: [String], appEnvironments: [[String]]? = nil, appPlatforms: [Platform]? = nil,
         reasonNames: [String] = DeliveryMetrics.reasonNames(of: [])) {
        self.appNames = appNames
        self.appPlatforms = appPlatforms
        self.reasonNames = reasonNames
        self.appEnvironments = appEnvironments ?? appNames.map { _ in ["production", "sandbox"] }
        let platforms = Platform.allCases.count
        jobs = [UInt64](repeating: 0, count: (platforms + 1) * (appNames.count + 1) * Self.outcomeCount)
        fallbacks = [UInt64](repeating: 0, count: appNames.count * 2)
        responses = [UInt64](repeating: 0, count: platforms * (DeliveryMetrics.statuses.count + 1) * reasonNames.count)
        transport = [UInt64](repeating: 0, count: platforms * TransportFailureKind.allCases.count)
        resends = [UInt64](repeating: 0, count: platforms * ResendCause.allCases.count)
        jobLatency = [LatencyHistogram](repeating: LatencyHistogram(), count: platforms)
        requestLatency = jobLatency
        provider = ProviderMetrics(apps: appNames.count)
    }

    /// The platforms of `jobs` in slot order, nil for `unknown` (a rejected job whose platform cannot be told).
    static let jobPlatforms: [Platform?] = Platform.allCases.map { $0 } + [nil]

    /// `platform` nil: the `unknown` slot, after every platform's.
    @inline(__always)
    func jobIndex(_ platform: Platform?, _ app: Int, _ outcome: JobOutcome) -> Int {
        ((platform?.slot ?? Platform.allCases.count) * (appNames.count + 1) + app) * Self.outcomeCount + Self.outcomeSlot(outcome)
    }

    @inline(__always)
    static func outcomeSlot(_ outcome: JobOutcome) -> Int {
        switch outcome {
        case .delivered: 0
        case .retrying: 1
        case .tokenDropped: 2
        case .failed: 3
        case .rejected: 4
        case .channelDropped: 5
        case .duplicate: 6
        // Written by `herald replay`, never by a worker: its count stays 0 here.
        case .replayed: 7
        // Written by `herald scheduled cancel`, never by a worker.
        case .cancelled: 8
        case .validated: 9
        // A ticket given (a provider with receipts): its job left the worker, its outcome comes from the receipt.
        case .accepted: 10
        }
    }

    @inline(__always)
    func responseIndex(_ platform: Platform, status: Int, reason: Int) -> Int {
        (platform.slot * (DeliveryMetrics.statuses.count + 1) + status) * reasonNames.count + reason
    }

    /// Jobs of one outcome over every app and platform (tests, the dashboard's cross-check).
    public func jobs(_ outcome: JobOutcome) -> UInt64 {
        var total: UInt64 = 0
        for platform in Self.jobPlatforms {
            for app in 0...appNames.count { total &+= jobs[jobIndex(platform, app, outcome)] }
        }
        return total
    }

    /// Adds another loop's copy (same apps): counters add up, pools of the same destination merge.
    public static func + (a: MetricsSnapshot, b: MetricsSnapshot) -> MetricsSnapshot {
        var c = a
        func add(_ x: inout [UInt64], _ y: [UInt64]) { for i in x.indices where i < y.count { x[i] &+= y[i] } }
        add(&c.jobs, b.jobs)
        add(&c.responses, b.responses)
        add(&c.transport, b.transport)
        add(&c.resends, b.resends)
        add(&c.fallbacks, b.fallbacks)
        for i in c.jobLatency.indices { c.jobLatency[i] = c.jobLatency[i] + b.jobLatency[i] }
        for i in c.requestLatency.indices { c.requestLatency[i] = c.requestLatency[i] + b.requestLatency[i] }
        for i in c.tokensSigned.indices where i < b.tokensSigned.count { c.tokensSigned[i] = max(c.tokensSigned[i], b.tokensSigned[i]) }
        // Like tokens signed: one cache per app whichever loop reports it, so the larger count is the true one.
        for i in c.provider.tokenExchanges.indices where i < b.provider.tokenExchanges.count && b.provider.tokenExchanges[i].answered > c.provider.tokenExchanges[i].answered {
            c.provider.tokenExchanges[i] = b.provider.tokenExchanges[i]
        }
        c.scheduled &+= b.scheduled
        c.unguarded &+= b.unguarded
        c.pauses &+= b.pauses
        c.workersReaped &+= b.workersReaped
        c.inFlight += b.inFlight
        c.backlog += b.backlog
        for pool in b.pools {
            if let i = c.pools.firstIndex(where: { $0.app == pool.app && $0.environment == pool.environment }) {
                c.pools[i] = c.pools[i] + pool
            } else {
                c.pools.append(pool)
            }
        }
        for pause in b.paused where !c.paused.contains(pause) { c.paused.append(pause) }
        for i in c.budgetAppPerSecond.indices where i < b.budgetAppPerSecond.count {
            let (x, y) = (c.budgetAppPerSecond[i], b.budgetAppPerSecond[i])
            c.budgetAppPerSecond[i] = x == 0 || y == 0 ? max(x, y) : min(x, y)
        }
        c.redis = c.redis + b.redis
        c.redisConnected += b.redisConnected
        c.claimingLoops += b.claimingLoops
        c.drainingLoops += b.drainingLoops
        c.loops += b.loops
        return c
    }
}

/// A destination the worker is not sending to for now.
public struct PausedDestination: Sendable, Equatable {
    public var app: String
    public var environment: String
    /// outage, credential or setup
    public var kind: String
}
