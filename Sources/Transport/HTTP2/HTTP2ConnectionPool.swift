import Basics
import Reactor
import TLS

/// Settings of a pool: how many connections, how much may wait, how reconnects back off.
public struct HTTP2PoolOptions: Sendable, Hashable {
    public var connectionCount: Int
    /// Requests waiting for a free stream, across the pool. Beyond it `send` refuses: back-pressure, not memory.
    public var maxQueuedRequests: Int
    /// Reconnect back-off after failures: doubles from the minimum to the maximum, with jitter.
    public var reconnectMinimumMilliseconds: Int
    public var reconnectMaximumMilliseconds: Int
    /// A connection that lived at least this long before dying counts as healthy: its replacement opens at once.
    public var healthyLifetimeMilliseconds: Int
    public var connection: HTTP2ConnectionOptions
    /// When a connection attempt fails and no connection is live, fail the waiting requests at once with
    /// that error (`.connectFailed` / `.tlsFailed`, never sent) instead of letting them wait out their deadlines.
    public var failWaitingRequestsWhenUnreachable: Bool
    /// Connections open at least this far apart, at start and when replacing several: never a burst (Apple
    /// asks to stagger opening connections). 0 opens them all at once.
    public var staggerMilliseconds: Int

    public init(
        connectionCount: Int = 1, maxQueuedRequests: Int = 10_000,
        reconnectMinimumMilliseconds: Int = 1_000, reconnectMaximumMilliseconds: Int = 60_000,
        healthyLifetimeMilliseconds: Int = 10_000, connection: HTTP2ConnectionOptions = .init(),
        failWaitingRequestsWhenUnreachable: Bool = true, staggerMilliseconds: Int = 0
    ) {
        self.failWaitingRequestsWhenUnreachable = failWaitingRequestsWhenUnreachable
        self.staggerMilliseconds = max(0, staggerMilliseconds)
        self.connectionCount = max(1, connectionCount)
        self.maxQueuedRequests = maxQueuedRequests
        self.reconnectMinimumMilliseconds = reconnectMinimumMilliseconds
        self.reconnectMaximumMilliseconds = reconnectMaximumMilliseconds
        self.healthyLifetimeMilliseconds = healthyLifetimeMilliseconds
        self.connection = connection
    }
}

/// What a pool reports to its owner's log.
public enum HTTP2PoolEvent: Sendable, Equatable {
    case connection(HTTP2ConnectionEvent)
    /// The pool started a connection (DNS is next, off the loop): when the stagger applies.
    case opening(connectionID: Int)
    case reconnectScheduled(delayMilliseconds: Int, consecutiveFailures: Int)
}

/// What a pool can do right now, for an owner deciding whether to hand it work.
public struct HTTP2PoolStatus: Sendable, Equatable {
    /// At least one connection is ready: connected, the server's SETTINGS received, not draining.
    public var hasUsableConnection: Bool
    /// Connections in a row that failed to connect or died young, since the last healthy one (drives the back-off).
    public var consecutiveFailures: Int
    /// The largest stream limit a usable connection has now: the server's SETTINGS_MAX_CONCURRENT_STREAMS,
    /// capped by the local limit. 0 means the server takes nothing at the moment; nil without a usable connection.
    public var streamLimit: Int?

    public init(hasUsableConnection: Bool, consecutiveFailures: Int, streamLimit: Int?) {
        self.hasUsableConnection = hasUsableConnection
        self.consecutiveFailures = consecutiveFailures
        self.streamLimit = streamLimit
    }
}

/// N connections to one endpoint with one TLS identity (one credential: APNs binds a team to a connection).
///
/// Requests go to the live connection with the most free streams; the rest wait in one bounded pool queue
/// and flow as streams free up, so no connection ever exceeds its server's limit. Dead connections are
/// replaced with exponential back-off and jitter. Loop-confined, not Sendable: create it and call every
/// method on the loop's thread; completions and events arrive there too.
public final class HTTP2ConnectionPool {
    public let loop: EventLoop
    public let endpoint: HTTP2Endpoint
    public let tls: TLSContext
    public let options: HTTP2PoolOptions
    /// Connection and reconnect events, for logging.
    public var onEvent: ((HTTP2PoolEvent) -> Void)?
    /// Every connection's `addressCheck` (Web Push: no private addresses behind a push service's name).
    public var addressCheck: ((SocketAddress) -> String?)?
    /// Every connection's host lookup (getaddrinfo afresh per connection; tests map a name themselves).
    public var resolver: HTTP2ClientConnection.Resolver = Sockets.resolve(host:port:)

    private var connections: [HTTP2ClientConnection] = []
    private var retiring: [HTTP2ClientConnection] = []
    private var readyAt: [Int: UInt64] = [:]
    private var queue = FIFO<RequestContext>()
    /// Requests that must go on a connection newer than a given id: kept apart so they cannot block the rest.
    private var freshQueue = FIFO<RequestContext>()
    private var backoff: ReconnectBackoff
    private var addresses = AddressRotation()
    /// Pending the next staggered open; `lastOpenAt` is when the latest connection started (monotonic nanoseconds).
    private var staggerTimer: LoopTimer?
    private var lastOpenAt: UInt64?
    private var reconnectTimer: LoopTimer?
    /// When the pending reconnect attempt is due (monotonic nanoseconds); nil when none is pending.
    private var reconnectAt: UInt64?
    /// Why the last connect was refused by `addressCheck` (the name resolved to an address the owner refuses),
    /// until a connection gets ready: requests that cannot wait for the next try fail with it, not as an outage,
    /// so their owner ends them (Web Push's `EndpointRefused`) instead of retrying them for ever (issue 54).
    private var addressRefusal: String?
    /// A zero-delay timer that fails what cannot be sent before its queue deadline (never inside `send`).
    private var hopelessTimer: LoopTimer?
    private var sweepTimer: LoopTimer?
    /// `send` starts an unstarted pool; a closed one refuses everything.
    private enum Lifecycle { case unstarted, open, closed }
    private var lifecycle = Lifecycle.unstarted
    private var closed: Bool { lifecycle == .closed }
    /// Re-entrancy guard: a completion run by `enqueue` may send, which must not dispatch recursively.
    private var dispatching = false

    public init(loop: EventLoop, endpoint: HTTP2Endpoint, tls: TLSContext, options: HTTP2PoolOptions = .init()) {
        self.loop = loop
        self.endpoint = endpoint
        self.tls = tls
        self.options = options
        backoff = ReconnectBackoff(minimumMilliseconds: options.reconnectMinimumMilliseconds, maximumMilliseconds: options.reconnectMaximumMilliseconds)
    }

    /// Convenience: builds the TLS context too. Throws `.tlsFailed` for unreadable CA, certificate or key files.
    public convenience init(
        loop: EventLoop, endpoint: HTTP2Endpoint, tlsConfiguration: TLSConfiguration, options: HTTP2PoolOptions = .init()
    ) throws(HTTP2ClientError) {
        self.init(loop: loop, endpoint: endpoint, tls: try TLSContext(tlsConfiguration), options: options)
    }

    /// A pool dropped without `close` still completes every request: queued ones with `.closed`, while its
    /// connections finish their open streams and close.
    deinit {
        close(graceful: true)
    }

    // MARK: state

    /// Requests on the wire (streams open on this pool's connections).
    public var inFlight: Int { connections.reduce(0) { $0 + $1.openStreams } + retiring.reduce(0) { $0 + $1.openStreams } }
    /// Requests waiting for a stream.
    public var queued: Int { queue.count + freshQueue.count }
    public var liveConnections: Int { connections.reduce(0) { $0 + ($1.state == .ready ? 1 : 0) } }
    /// Ids of the connections taking requests now (not the retiring ones).
    public var connectionIDs: [Int] { connections.map(\.id) }
    /// The most streams any current connection ever had open at once (tests check the server's limit with it).
    public var maxObservedOpenStreams: Int { (connections + retiring).map(\.maxObservedOpenStreams).max() ?? 0 }
    /// Ready connections per remote address (`ip:port`, the proxy's through one): how they spread over the hosts.
    public var connectionsByRemoteAddress: [String: Int] {
        var counts: [String: Int] = [:]
        for connection in connections where connection.state == .ready {
            if let address = connection.remoteAddress { counts[address.description, default: 0] += 1 }
        }
        return counts
    }
    /// Free streams across live connections: what a caller may send without anything queuing.
    public var availableStreams: Int { connections.reduce(0) { $0 + $1.availableStreams } }

    public var status: HTTP2PoolStatus {
        var limit: Int?
        for connection in connections where connection.state == .ready {
            limit = max(limit ?? 0, connection.maxConcurrentStreams)
        }
        return HTTP2PoolStatus(hasUsableConnection: limit != nil, consecutiveFailures: backoff.consecutiveFailures, streamLimit: limit)
    }

    // MARK: operations

    /// Opens the connections. `send` does this on first use; call it early to have them ready.
    public func start() {
        guard lifecycle == .unstarted else { return }
        lifecycle = .open
        ensureConnections()
    }

    /// Sends `request` on the least-loaded live connection, or queues it. Returns false, and never calls
    /// `completion`, when the pool is closed or its queue is full (back-pressure). Otherwise `completion`
    /// runs exactly once on the loop's thread, never from inside this call.
    ///
    /// `onConnectionNewerThan`: only a connection whose id is greater may carry it; after retiring the
    /// connection that answered ExpiredProviderToken, pass that response's `connectionID`.
    public func send(_ request: HTTP2Request, onConnectionNewerThan minimumID: Int = 0, completion: @escaping HTTP2Completion) -> Bool {
        guard !closed else { return false }
        if lifecycle == .unstarted { start() }
        let context = RequestContext(request: request, newerThanConnectionID: minimumID, completion: completion)
        if minimumID == 0 ? queue.isEmpty : freshQueue.isEmpty, let connection = bestConnection(newerThan: minimumID),
           connection.enqueue(context) {
            return true
        }
        guard queue.count + freshQueue.count < options.maxQueuedRequests else { return false }
        if minimumID == 0 { queue.append(context) } else { freshQueue.append(context) }
        startSweep()
        if connections.isEmpty, reconnectAt != nil, hopelessTimer == nil {
            hopelessTimer = loop.schedule(afterMilliseconds: 0) { [weak self] in
                guard let self else { return }
                self.hopelessTimer = nil
                self.failWaitingBeyondReconnect()
            }
        }
        return true
    }

    /// Cuts a pending reconnect back-off short: the missing connections are opened now. For an owner whose own
    /// pause already spaced its attempts (the delivery core's probe after an outage pause): a probe that also
    /// waited out the pool's back-off, grown past the pause's cap, made recovery take up to the back-off's
    /// maximum instead (issue 30, item 13).
    public func connectNow() {
        guard !closed else { return }
        if lifecycle == .unstarted { return start() }
        reconnectTimer?.cancel()
        reconnectTimer = nil
        reconnectAt = nil
        ensureConnections()
    }

    /// Takes a connection out of service: it finishes its open streams, sends GOAWAY and closes; a fresh
    /// one replaces it at once. For APNs ExpiredProviderToken / UnrelatedKeyIdInToken.
    public func retire(connectionID: Int) {
        guard let index = connections.firstIndex(where: { $0.id == connectionID }) else { return }
        let connection = connections.remove(at: index)
        retiring.append(connection)
        connection.closeGracefully()
        ensureConnections()
    }

    /// Closes the pool. Queued requests complete with `.closed`. Graceful: open streams finish first;
    /// otherwise they complete with `.connectionLost`.
    public func close(graceful: Bool = true) {
        guard !closed else { return }
        lifecycle = .closed
        reconnectTimer?.cancel()
        reconnectTimer = nil
        reconnectAt = nil
        staggerTimer?.cancel()
        staggerTimer = nil
        hopelessTimer?.cancel()
        hopelessTimer = nil
        sweepTimer?.cancel()
        sweepTimer = nil
        let waiting = queue.removeAll() + freshQueue.removeAll()
        let all = connections + retiring
        connections.removeAll()
        retiring = all
        for connection in all {
            if graceful { connection.closeGracefully() } else { connection.close() }
        }
        for context in waiting where context.decide(.failure(.closed)) { context.deliver() }
    }

    // MARK: dispatch

    private func bestConnection(newerThan minimumID: Int) -> HTTP2ClientConnection? {
        var best: HTTP2ClientConnection?
        var bestFree = 0
        for connection in connections where connection.id > minimumID {
            let free = connection.availableStreams
            if free > bestFree {
                best = connection
                bestFree = free
            }
        }
        return best
    }

    private func dispatch() {
        guard !dispatching else { return }
        dispatching = true
        defer { dispatching = false }
        while let context = queue.first {
            if context.done {
                _ = queue.popFirst()
                continue
            }
            guard let connection = bestConnection(newerThan: 0) else { break }
            _ = queue.popFirst()
            if !connection.enqueue(context) { queue.append(context) }
        }
        while let context = freshQueue.first {
            if context.done {
                _ = freshQueue.popFirst()
                continue
            }
            guard let connection = bestConnection(newerThan: context.newerThanConnectionID) else { break }
            _ = freshQueue.popFirst()
            if !connection.enqueue(context) { freshQueue.append(context) }
        }
    }

    // MARK: connections

    /// Opens the missing connections, `staggerMilliseconds` apart: one now (unless one opened less than that
    /// ago), the next from a timer.
    private func ensureConnections() {
        guard !closed, reconnectTimer == nil, staggerTimer == nil else { return }
        let gap = UInt64(options.staggerMilliseconds) &* 1_000_000
        while connections.count < options.connectionCount {
            let now = monotonicNanos()
            if gap > 0, let last = lastOpenAt, now &- last < gap {
                staggerTimer = loop.schedule(afterNanoseconds: gap - (now &- last)) { [weak self] in
                    guard let self else { return }
                    self.staggerTimer = nil
                    self.ensureConnections()
                }
                return
            }
            lastOpenAt = now
            openConnection()
        }
    }

    private func openConnection() {
        let connection = HTTP2ClientConnection(loop: loop, endpoint: endpoint, tls: tls, options: options.connection)
        connection.addressCheck = addressCheck
        connection.resolver = resolver
        connection.addressOrder = { [weak self, unowned connection] list in
            guard let self else { return list }
            let inUse = Set(self.connections.lazy.filter { $0 !== connection && $0.state != .closed }.compactMap { $0.remoteAddress?.description })
            return self.addresses.order(list, inUse: inUse)
        }
        connection.onEvent = { [weak self, unowned connection] event in
            self?.handle(event, from: connection)
        }
        connections.append(connection)
        connection.connect()
        onEvent?(.opening(connectionID: connection.id))
    }

    private func handle(_ event: HTTP2ConnectionEvent, from connection: HTTP2ClientConnection) {
        switch event {
        case .connected:
            readyAt[connection.id] = monotonicNanos()
            addressRefusal = nil
            dispatch()
        case .capacityAvailable:
            dispatch()
        case .goaway, .draining:
            connectionEnded(connection, graceful: true)
        case let .closed(_, error):
            let neverReady = readyAt[connection.id] == nil
            if neverReady, case .addressRefused(let why)? = error { addressRefusal = why }
            connectionEnded(connection, graceful: false)
            retiring.removeAll { $0 === connection }
            readyAt[connection.id] = nil
            if let error, neverReady, options.failWaitingRequestsWhenUnreachable, liveConnections == 0 {
                failWaiting(error)
            }
        }
        onEvent?(.connection(event))
    }

    /// A connection stopped taking requests (GOAWAY or death): replace it, at once if it had been healthy,
    /// after a growing, jittered delay if connections keep failing.
    private func connectionEnded(_ connection: HTTP2ClientConnection, graceful: Bool) {
        guard let index = connections.firstIndex(where: { $0 === connection }) else { return }
        connections.remove(at: index)
        if connection.state != .closed { retiring.append(connection) }
        guard !closed else { return }
        let lived = readyAt[connection.id].map { monotonicNanos() &- $0 } ?? 0
        // Healthy: it lived long, or it answered requests before it ended, however it ended (GOAWAY, retired by
        // us, or cut): the server was reachable and working. Back-off is for connects that fail and connections
        // that die before any answer, so a server refusing connections is not hammered; counting connections that
        // served (APNs' GOAWAY on busy ones, a service cutting one request in 500) made back-off stall delivery
        // and pause healthy destinations (issue 54: 1,356 `Unavailable` entries, 53 s of back-off).
        let served = connection.responsesReceived > 0
        if lived >= UInt64(options.healthyLifetimeMilliseconds) &* 1_000_000 || served {
            backoff.succeeded()
            ensureConnections()
            return
        }
        let delays = backoff.failed()
        guard reconnectTimer == nil else { return }
        let delay = Int.random(in: delays)
        reconnectAt = monotonicNanos() &+ UInt64(delay) &* 1_000_000
        reconnectTimer = loop.schedule(afterMilliseconds: delay) { [weak self] in
            guard let self else { return }
            self.reconnectTimer = nil
            self.reconnectAt = nil
            self.ensureConnections()
        }
        onEvent?(.reconnectScheduled(delayMilliseconds: delay, consecutiveFailures: backoff.consecutiveFailures))
        failWaitingBeyondReconnect()
    }

    /// With no connection open or opening, a request whose queue deadline comes before the next reconnect
    /// attempt cannot be sent in time: it fails now, as never sent, instead of holding its job for the rest of
    /// the back-off (issue 30, item 14). Its owner can then pause the destination and hand the job back.
    private func failWaitingBeyondReconnect() {
        guard options.failWaitingRequestsWhenUnreachable, connections.isEmpty, let at = reconnectAt else { return }
        let now = monotonicNanos()
        let error = addressRefusal.map(HTTP2ClientError.addressRefused) ?? .connectFailed(
            "\(endpoint): reconnecting in \((at > now ? at - now : 0) / 1_000_000) ms after \(backoff.consecutiveFailures) failed connections")
        var hopeless: [RequestContext] = []
        for list in [queue, freshQueue] {
            list.forEach { context in
                if !context.done && context.deadline <= at && context.decide(.failure(error)) { hopeless.append(context) }
            }
        }
        guard !hopeless.isEmpty else { return }
        queue = Self.compacted(queue)
        freshQueue = Self.compacted(freshQueue)
        for context in hopeless { context.deliver() }
    }

    private func failWaiting(_ error: HTTP2ClientError) {
        let waiting = queue.removeAll() + freshQueue.removeAll()
        for context in waiting where context.decide(.failure(error)) { context.deliver() }
    }

    // MARK: queue deadlines

    private func startSweep() {
        guard sweepTimer == nil, !closed else { return }
        sweepTimer = loop.schedule(afterMilliseconds: options.connection.sweepIntervalMilliseconds) { [weak self] in
            guard let self else { return }
            self.sweepTimer = nil
            self.sweep()
            if !self.queue.isEmpty || !self.freshQueue.isEmpty { self.startSweep() }
        }
    }

    private func sweep() {
        let now = monotonicNanos()
        var expired: [RequestContext] = []
        for list in [queue, freshQueue] {
            list.forEach { context in
                if !context.done && context.deadline <= now && context.decide(.failure(.queueTimedOut)) { expired.append(context) }
            }
        }
        guard !expired.isEmpty else { return }
        queue = Self.compacted(queue)
        freshQueue = Self.compacted(freshQueue)
        for context in expired { context.deliver() }
    }

    private static func compacted(_ list: FIFO<RequestContext>) -> FIFO<RequestContext> {
        var result = FIFO<RequestContext>()
        list.forEach { if !$0.done { result.append($0) } }
        return result
    }
}
