/// The numbers of the outcome policy. Every field has a default; a configuration file may override any, within the
/// bounds its declaration gives (Worker's `Configuration.retrySettings`, checked by the loader).
public struct RetrySettings: Sendable, Codable, Equatable {
    /// First retry after a 5xx: Apple asks for 15 minutes; doubles per attempt.
    public var serverErrorBaseSeconds: Int64 = 900
    /// Longest wait after a 5xx (4 hours).
    public var serverErrorCapSeconds: Int64 = 14_400
    /// Each delay is spread uniformly over delay*(1-j) ... delay*(1+j) so retries after an outage do not
    /// arrive together. 0.1 = plus or minus 10%.
    public var jitterFraction: Double = 0.1
    /// First retry after 429 TooManyRequests (too many pushes to one device) or a failed connection; doubles.
    public var throttleBaseSeconds: Int64 = 10
    /// Longest wait after a 429 TooManyRequests (10 minutes).
    public var throttleCapSeconds: Int64 = 600
    /// Attempts per job, counting the first send and every resend; the one that would exceed it fails.
    public var maxAttempts: Int = 8
    /// How long the worker parks jobs of an app whose credentials APNs refused (not counted as attempts).
    public var configurationPauseSeconds: Int64 = 60
    /// First pause of a destination that cannot be reached (connect or TLS failures, a server that processes
    /// nothing); doubles while the outage lasts. Jobs wait in Redis meanwhile, with no attempt counted.
    public var outagePauseSeconds: Int64 = 1
    /// Longest outage pause: how long after APNs is reachable again the worker may take to notice at worst.
    public var outagePauseCapSeconds: Int64 = 30
    /// A job whose next try would fall later than this long after its first attempt fails (`GaveUp:<reason>`)
    /// instead; 0: no such limit (only `maxAttempts` and the job's expiration end it).
    public var giveUpAfterSeconds: Int64 = 0

    public init() {}

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = RetrySettings()
        serverErrorBaseSeconds = try c.decodeIfPresent(Int64.self, forKey: .serverErrorBaseSeconds) ?? d.serverErrorBaseSeconds
        serverErrorCapSeconds = try c.decodeIfPresent(Int64.self, forKey: .serverErrorCapSeconds) ?? d.serverErrorCapSeconds
        jitterFraction = try c.decodeIfPresent(Double.self, forKey: .jitterFraction) ?? d.jitterFraction
        throttleBaseSeconds = try c.decodeIfPresent(Int64.self, forKey: .throttleBaseSeconds) ?? d.throttleBaseSeconds
        throttleCapSeconds = try c.decodeIfPresent(Int64.self, forKey: .throttleCapSeconds) ?? d.throttleCapSeconds
        maxAttempts = try c.decodeIfPresent(Int.self, forKey: .maxAttempts) ?? d.maxAttempts
        configurationPauseSeconds =
            try c.decodeIfPresent(Int64.self, forKey: .configurationPauseSeconds) ?? d.configurationPauseSeconds
        outagePauseSeconds = try c.decodeIfPresent(Int64.self, forKey: .outagePauseSeconds) ?? d.outagePauseSeconds
        outagePauseCapSeconds = try c.decodeIfPresent(Int64.self, forKey: .outagePauseCapSeconds) ?? d.outagePauseCapSeconds
        giveUpAfterSeconds = try c.decodeIfPresent(Int64.self, forKey: .giveUpAfterSeconds) ?? d.giveUpAfterSeconds
    }

}
