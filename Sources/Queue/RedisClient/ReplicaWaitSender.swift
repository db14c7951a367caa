import Reactor

/// Durability on request (`redis.wait_replicas`): every script call (Herald's scripts all write) is followed,
/// pipelined on the same connection, by `WAIT replicas timeout`, and its caller sees the script's reply only
/// once WAIT has answered. Fewer confirmations than asked turn a successful reply into
/// `.notReplicated` (outcome unknown, like a lost reply): the worker re-sends a completion batch as a repeat
/// (safe by the lease-lost rule), puts back what a claim took, and retries the maintenance scripts.
///
/// A decorator over any `RedisCommandSender` whose `send` reaches the same server as the script before it
/// (one connection; for a cluster, wrap each node's connection). Plain commands pass through without WAIT.
/// Loop-confined like the sender it wraps.
public final class ReplicaWaitSender: RedisCommandSender {
    public let inner: any RedisCommandSender
    public let replicas: Int
    public let timeoutMilliseconds: Int
    /// Script calls the replicas did not confirm in time, for metrics.
    public private(set) var shortfalls: UInt64 = 0
    /// Told (on the loop) of each shortfall: replicas that confirmed, replicas wanted.
    public var onShortfall: ((Int, Int) -> Void)?
    private let waitCommand: [[UInt8]]

    public init(_ inner: any RedisCommandSender, replicas: Int, timeoutMilliseconds: Int) {
        precondition(replicas > 0 && timeoutMilliseconds >= 0)
        self.inner = inner
        self.replicas = replicas
        self.timeoutMilliseconds = timeoutMilliseconds
        waitCommand = [Array("WAIT".utf8), Array(String(replicas).utf8), Array(String(timeoutMilliseconds).utf8)]
    }

    public var loop: EventLoop { inner.loop }
    public func start() { inner.start() }
    public func close() { inner.close() }

    public func send(_ args: [[UInt8]], completion: @escaping RedisConnection.Completion) {
        inner.send(args, completion: completion)
    }

    public func evalScript(_ script: RedisScript, keys: [[UInt8]], args: [[UInt8]], completion: @escaping RedisConnection.Completion) {
        let call = PendingWait(completion)
        inner.evalScript(script, keys: keys, args: args) { [weak self] result in self?.scriptAnswered(call, result) }
        waitBehind(call)
    }

    public func evalScript(_ script: RedisScript, keys: [[UInt8]], arguments: RESPArguments, completion: @escaping RedisConnection.Completion) {
        let call = PendingWait(completion)
        inner.evalScript(script, keys: keys, arguments: arguments) { [weak self] result in self?.scriptAnswered(call, result) }
        waitBehind(call)
    }

    /// One script call between its reply and its WAIT's.
    private final class PendingWait {
        let completion: RedisConnection.Completion
        var script: Result<RESPValue, RedisError>?
        var wait: Result<RESPValue, RedisError>?
        init(_ completion: @escaping RedisConnection.Completion) { self.completion = completion }
    }

    private func waitBehind(_ call: PendingWait) {
        inner.send(waitCommand) { [weak self] result in
            guard let self else { return }
            guard call.script != nil else {
                // The script's reply is not in yet: it went out again after this WAIT (EVAL after NOSCRIPT),
                // so this WAIT does not cover it; the next one, sent once it answers, will.
                call.wait = result
                return
            }
            call.wait = result
            self.finish(call)
        }
    }

    private func scriptAnswered(_ call: PendingWait, _ result: Result<RESPValue, RedisError>) {
        call.script = result
        guard call.wait != nil else { return }
        // The WAIT already answered before the script's (late) reply: ask again behind it.
        if case .success = result {
            call.wait = nil
            waitBehind(call)
        } else {
            finish(call)
        }
    }

    private func finish(_ call: PendingWait) {
        guard let script = call.script, let wait = call.wait else { return }
        // A script that failed changed nothing (error reply) or is already unknown (lost reply): its own error.
        guard case .success = script else { return call.completion(script) }
        let confirmed: Int
        switch wait {
        case .success(let reply): confirmed = reply.int.map(Int.init) ?? 0
        case .failure(let error) where error.outcomeUnknown || error == .closed || error == .notConnected:
            // The connection went with the WAIT in flight: the script ran, replicated or not.
            return call.completion(.failure(error == .closed ? .closed : .connectionLost))
        case .failure:
            confirmed = 0
        }
        guard confirmed < replicas else { return call.completion(script) }
        shortfalls &+= 1
        onShortfall?(confirmed, replicas)
        call.completion(.failure(.notReplicated(acknowledged: confirmed, wanted: replicas)))
    }
}
