import Basics
import Reactor

/// A `RedisCommandSender` over a Redis Cluster: one `RedisConnection` per master (not per key or shard), each
/// command sent to the master serving the slot of its key (scripts: of their keys, which must share a slot).
///
/// Loop-confined like `RedisConnection`: call everything on `loop`; completions run there, in send order per
/// node. The slot map comes from `CLUSTER SLOTS` of any reachable node (a seed first), and is read again on
/// MOVED, on a lost connection, while commands wait for an unreachable slot (at most every
/// `minRefreshIntervalMilliseconds`), and every `refreshIntervalMilliseconds`.
///
/// Only the replies meaning "not executed" are retried here: MOVED (map updated, sent to the named node), ASK
/// (ASKING + the command to the named node, once, map unchanged), TRYAGAIN and CLUSTERDOWN (again after a short
/// back-off), within the command timeout and at most `maxRedirects` times. A command in flight when its node's
/// connection drops fails with `.connectionLost` as on one Redis: the caller decides. A command whose master is
/// down waits (here, not in that connection) until the map names a reachable master or its timeout passes
/// (`.notConnected`).
public final class RedisCluster: MonitoredRedisClient {
    public struct Options: Sendable {
        /// For every node connection; its command timeout bounds a command's redirects and retries too.
        public var connection = RedisConnection.Options()
        /// MOVED/ASK/TRYAGAIN/CLUSTERDOWN followed per command before it fails (a misconfigured cluster must not loop).
        public var maxRedirects = 5
        public var minRefreshIntervalMilliseconds = 200
        public var refreshIntervalMilliseconds = 15_000
        public init() {}
    }

    public typealias Completion = RedisConnection.Completion

    private enum Body {
        case args([[UInt8]])
        case script(RedisScript, keys: [[UInt8]], args: [[UInt8]])
        case encodedScript(RedisScript, keys: [[UInt8]], arguments: RESPArguments)
    }

    private struct Command {
        let body: Body
        /// nil: keyless, any node.
        let slot: Int?
        let completion: Completion
        let deadline: UInt64
        var redirects = 0
        var retries = 0
        /// Set after an ASK: the next send goes to this node after ASKING.
        var asking: RedisNodeAddress?
    }

    public let loop: EventLoop
    public let seeds: [RedisNodeAddress]
    public let options: Options
    /// Credentials and options every node connection uses (its endpoint is replaced).
    private let baseURL: RedisURL
    private var map = ClusterSlotMap()
    private var connections: [RedisNodeAddress: RedisConnection] = [:]
    /// Commands whose node is not connected (or not known yet); sent on the next connect or map change.
    private var parked: [Command] = []
    private var refreshing = false
    private var refreshWhenConnected = false
    private var lastRefresh: UInt64 = 0
    private var refreshTimer: LoopTimer?
    private var refreshCursor = 0
    private var tickTimer: LoopTimer?
    private var started = false
    private var closed = false
    private var retiredStats = RedisConnectionStats()
    private var observer: ((String, RedisConnection.State) -> Void)?

    /// `seeds`: at least one node's URL; the first gives the credentials for all nodes. Database must be 0
    /// (a cluster has only db 0).
    public init(seeds: [RedisURL], loop: EventLoop, options: Options = Options()) throws(RedisError) {
        (self.seeds, self.baseURL) = try RedisNodeAddress.seeds(seeds)
        self.loop = loop
        self.options = options
    }

    /// The master serving `slot` in the current map (for tests and logs).
    public func master(forSlot slot: Int) -> RedisNodeAddress? { map.node(forSlot: slot) }

    /// The masters of the current map, each with its one connection.
    public var masters: [RedisNodeAddress] { map.masters }

    public var isConnected: Bool {
        !map.isEmpty && map.masters.allSatisfy { connections[$0]?.isConnected == true }
    }

    public var stats: RedisConnectionStats {
        connections.values.reduce(retiredStats) { $0 + $1.stats }
    }

    public func observeConnections(_ handler: @escaping (_ endpoint: String, _ state: RedisConnection.State) -> Void) {
        observer = handler
    }

    public func start() {
        loop.preconditionInLoop()
        guard !started, !closed else { return }
        started = true
        connectSeeds()
        scheduleTick()
    }

    public func close() {
        loop.preconditionInLoop()
        guard !closed else { return }
        closed = true
        refreshTimer?.cancel()
        tickTimer?.cancel()
        let waiting = parked
        parked = []
        let all = connections.values
        connections = [:]
        for connection in all {
            retiredStats = retiredStats + connection.stats
            connection.close()
        }
        for command in waiting { command.completion(.failure(.closed)) }
    }

    // MARK: sending

    public func send(_ args: [[UInt8]], completion: @escaping Completion) {
        loop.preconditionInLoop()
        submit(.args(args), slot: CommandKey.of(args).map(ClusterSlot.of), completion: completion)
    }

    public func evalScript(_ script: RedisScript, keys: [[UInt8]], args: [[UInt8]], completion: @escaping Completion) {
        loop.preconditionInLoop()
        switch CommandKey.scriptSlot(keys) {
        case .success(let slot): submit(.script(script, keys: keys, args: args), slot: slot, completion: completion)
        case .failure(let error): completion(.failure(error))
        }
    }

    public func evalScript(_ script: RedisScript, keys: [[UInt8]], arguments: RESPArguments, completion: @escaping Completion) {
        loop.preconditionInLoop()
        switch CommandKey.scriptSlot(keys) {
        case .success(let slot): submit(.encodedScript(script, keys: keys, arguments: arguments), slot: slot, completion: completion)
        case .failure(let error): completion(.failure(error))
        }
    }

    private func submit(_ body: Body, slot: Int?, completion: @escaping Completion) {
        guard !closed else { completion(.failure(.closed)); return }
        if !started { start() }
        let deadline = monotonicNanos() &+ UInt64(options.connection.commandTimeoutMilliseconds) * 1_000_000
        dispatch(Command(body: body, slot: slot, completion: completion, deadline: deadline))
    }

    private func dispatch(_ command: Command) {
        guard !closed else { command.completion(.failure(.closed)); return }
        let target: RedisNodeAddress?
        if let asking = command.asking {
            target = asking
        } else if let slot = command.slot {
            target = map.node(forSlot: slot)
        } else {
            target = map.masters.first { connections[$0]?.isConnected == true }
        }
        guard let target, let connection = connection(to: target), connection.isConnected else {
            park(command)
            return
        }
        transmit(command, on: connection, node: target)
    }

    private func park(_ command: Command) {
        guard parked.count < options.connection.waitingLimit else {
            command.completion(.failure(.notConnected))
            return
        }
        parked.append(command)
        requestRefresh()
    }

    private func transmit(_ command: Command, on connection: RedisConnection, node: RedisNodeAddress) {
        let handle: Completion = { [weak self] result in
            guard let self else { command.completion(result); return }
            self.handle(result, of: command, from: node)
        }
        if command.asking != nil {
            // ASKING holds for the next command on this connection only; EVAL, not EVALSHA, so no NOSCRIPT
            // round trip has to repeat it.
            connection.send([Array("ASKING".utf8)]) { _ in }
            switch command.body {
            case .args(let args): connection.send(args, completion: handle)
            case .script(let script, let keys, let args): connection.send(script.eval(keys: keys, args: args), completion: handle)
            case .encodedScript(let script, let keys, let arguments):
                let prefix = [Array("EVAL".utf8), Array(script.source.utf8), Array(String(keys.count).utf8)] + keys
                connection.send(encoded: arguments.command(prefix: prefix), completion: handle)
            }
            return
        }
        switch command.body {
        case .args(let args): connection.send(args, completion: handle)
        case .script(let script, let keys, let args): connection.evalScript(script, keys: keys, args: args, completion: handle)
        case .encodedScript(let script, let keys, let arguments):
            connection.evalScript(script, keys: keys, arguments: arguments, completion: handle)
        }
    }

    private func handle(_ result: Result<RESPValue, RedisError>, of sent: Command, from node: RedisNodeAddress) {
        switch result {
        case .failure(.server(let message)):
            guard let redirect = ClusterRedirect(message, replier: node) else { break }
            var command = sent
            command.asking = nil
            switch redirect {
            case .moved(let slot, let target):
                map.assign(slot: slot, to: target)
                requestRefresh()
                if follow(&command, message) { dispatch(command) }
            case .ask(_, let target):
                command.asking = target
                if follow(&command, message) { dispatch(command) }
            case .tryAgain, .clusterDown:
                if case .clusterDown = redirect { requestRefresh() }
                let delay = min(500, 25 << min(command.retries, 5))
                command.retries += 1
                guard command.retries <= options.maxRedirects * 4,
                      monotonicNanos() &+ UInt64(delay) * 1_000_000 < command.deadline else {
                    sent.completion(result)
                    return
                }
                _ = loop.schedule(afterMilliseconds: delay) { [weak self] in
                    guard let self else { command.completion(.failure(.closed)); return }
                    self.dispatch(command)
                }
            }
            return
        case .failure(.connectionLost), .failure(.timeout):
            requestRefresh()
        default:
            break
        }
        sent.completion(result)
    }

    /// Counts one redirect; past the limit the command fails with a clear error instead.
    private func follow(_ command: inout Command, _ message: String) -> Bool {
        command.redirects += 1
        guard command.redirects > options.maxRedirects else { return true }
        command.completion(.failure(.server("CLUSTER REDIRECTS: still redirected after \(options.maxRedirects) redirects "
            + "(last: \(message)); the cluster's slot configuration is inconsistent")))
        return false
    }

    private func redispatchParked() {
        guard !parked.isEmpty else { return }
        let now = monotonicNanos()
        let waiting = parked
        parked = []
        for command in waiting {
            if command.deadline < now { command.completion(.failure(.notConnected)) } else { dispatch(command) }
        }
    }

    // MARK: connections

    private func connection(to node: RedisNodeAddress) -> RedisConnection? {
        if let existing = connections[node] { return existing }
        guard !closed else { return nil }
        let connection = RedisConnection(url: node.url(from: baseURL), loop: loop, options: options.connection)
        connection.onStateChange = { [weak self] state in self?.connectionChanged(node, state) }
        connections[node] = connection
        connection.start()
        return connection
    }

    private func connectSeeds() {
        refreshWhenConnected = true
        for seed in seeds { _ = connection(to: seed) }
    }

    private func connectionChanged(_ node: RedisNodeAddress, _ state: RedisConnection.State) {
        observer?(node.description, state)
        switch state {
        case .connected:
            if refreshWhenConnected {
                refreshWhenConnected = false
                requestRefresh()
            }
            redispatchParked()
        case .disconnected:
            if started { requestRefresh() }
        default: break
        }
    }

    // MARK: the slot map

    /// Reads the map again now, or as soon as `minRefreshIntervalMilliseconds` since the last read allow.
    private func requestRefresh() {
        guard started, !closed, !refreshing, refreshTimer == nil else { return }
        let earliest = lastRefresh &+ UInt64(options.minRefreshIntervalMilliseconds) * 1_000_000
        let now = monotonicNanos()
        if lastRefresh != 0 && now < earliest {
            refreshTimer = loop.schedule(afterNanoseconds: earliest - now) { [weak self] in
                self?.refreshTimer = nil
                self?.refresh()
            }
        } else {
            refresh()
        }
    }

    /// Asks one connected node, a different one each time (a node cut off from the others may hold a stale map).
    private func refresh() {
        guard !closed, !refreshing else { return }
        let candidates = connections.filter { $0.value.isConnected }.sorted { $0.key.description < $1.key.description }
        guard !candidates.isEmpty else {
            // Nothing up: make sure the seeds and the known masters are being connected, and read the map then.
            connectSeeds()
            for master in map.masters { _ = connection(to: master) }
            return
        }
        let (node, connection) = candidates[refreshCursor % candidates.count]
        refreshCursor &+= 1
        refreshing = true
        lastRefresh = monotonicNanos()
        connection.send([Array("CLUSTER".utf8), Array("SLOTS".utf8)]) { [weak self] result in
            guard let self else { return }
            self.refreshing = false
            guard case .success(let reply) = result, let fresh = try? ClusterSlotMap(clusterSlots: reply, replier: node) else {
                return  // the tick asks again while commands wait
            }
            self.apply(fresh)
        }
    }

    private func apply(_ fresh: ClusterSlotMap) {
        map = fresh
        for master in map.masters { _ = connection(to: master) }
        // A node that is no longer a master (demoted, removed, a seed that is a replica) is closed once idle.
        let masters = Set(map.masters)
        for (node, connection) in connections where !masters.contains(node) && connection.pendingCount == 0 {
            retiredStats = retiredStats + connection.stats
            connection.onStateChange = nil
            connection.close()
            connections[node] = nil
        }
        redispatchParked()
    }

    private func scheduleTick() {
        tickTimer = loop.schedule(afterMilliseconds: 100) { [weak self] in
            guard let self, !self.closed else { return }
            self.tick()
            self.scheduleTick()
        }
    }

    /// Expires parked commands, keeps re-reading the map while some wait, and re-reads it periodically.
    private func tick() {
        let now = monotonicNanos()
        if parked.contains(where: { $0.deadline < now }) {
            var expired: [Command] = []
            parked.removeAll { command in
                if command.deadline < now { expired.append(command); return true }
                return false
            }
            for command in expired { command.completion(.failure(.notConnected)) }
        }
        if !parked.isEmpty || map.isEmpty
            || now &- lastRefresh > UInt64(options.refreshIntervalMilliseconds) * 1_000_000 {
            requestRefresh()
        }
    }
}
