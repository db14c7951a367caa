import HTTP2

/// Connections opened and GOAWAYs met by one destination's pools, counted from their events; kept by a sender
/// across credential reloads, which replace the pools. Loop-confined, like the pools.
public final class PoolEventCounts {
    public private(set) var connected = 0
    public private(set) var goaways = 0

    public init() {}

    public func count(_ event: HTTP2PoolEvent) {
        switch event {
        case .connection(.connected): connected += 1
        case .connection(.goaway): goaways += 1
        default: break
        }
    }

    /// The pool's line of a scrape: `pool` nil once it was closed (a reload), with the events counted so far.
    public func snapshot(_ pool: HTTP2ConnectionPool?, app: String, environment: String, connectionsPerPool: Int) -> PoolSnapshot {
        var snapshot = PoolSnapshot(app: app, environment: environment)
        if let pool {
            snapshot.connections = pool.liveConnections
            snapshot.openStreams = pool.inFlight
            snapshot.streamLimit = pool.status.streamLimit ?? 0
            snapshot.queued = pool.queued
            snapshot.remotes = pool.connectionsByRemoteAddress
        }
        snapshot.reconnects = max(0, connected - connectionsPerPool)
        snapshot.goaways = goaways
        return snapshot
    }
}
