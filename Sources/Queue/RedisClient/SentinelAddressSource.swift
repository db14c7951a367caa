import Reactor

/// The master's address from Redis Sentinel, for a `RedisConnection` (`redis.mode = "sentinel"`).
///
/// Before every (re)connect it asks the sentinels in turn (`SENTINEL get-master-addr-by-name`), each with its
/// own timeout, starting with the last one that answered; the connection then checks `ROLE` says master
/// after its handshake (a replica, or a demoted master still reachable at the old address, is dropped and the
/// sentinels asked again after the back-off). A `SentinelSubscriber` listens for `+switch-master` and drops
/// the connection as soon as our master moves. Loop-confined like the connection it serves.
public final class SentinelAddressSource: RedisAddressSource {
    public let settings: SentinelSettings
    public let loop: EventLoop
    /// Told (on the loop) about sentinels that did not answer and masters that moved, for logs.
    public var onEvent: ((String) -> Void)?
    private weak var connection: RedisConnection?
    private var subscriber: SentinelSubscriber?
    /// The sentinel to ask first: the last that answered.
    private var first = 0
    /// Where the connection was last sent.
    public private(set) var master: RedisNodeAddress?

    public init(settings: SentinelSettings, loop: EventLoop) {
        precondition(!settings.sentinels.isEmpty, "SentinelSettings without sentinels")
        self.settings = settings
        self.loop = loop
    }

    public var handshakeCheck: (command: [[UInt8]], check: ((RESPValue) -> String?)?)? {
        let address = master?.description ?? "the master"
        return (SentinelSettings.roleCommand, { SentinelSettings.roleProblem($0, at: address) })
    }

    public func attach(to connection: RedisConnection) {
        self.connection = connection
    }

    /// Stops listening for failovers (the connection closed for good).
    public func detach() {
        subscriber?.close()
        subscriber = nil
    }

    deinit { subscriber?.close() }

    /// Listens from the first question on, not from creation: a connection never started subscribes nowhere.
    private func subscribe() {
        guard subscriber == nil else { return }
        let subscriber = SentinelSubscriber(settings: settings, loop: loop)
        subscriber.onSwitch = { [weak self] address in self?.masterSwitched(to: address) }
        subscriber.onSubscribed = { [weak self] in self?.recheck() }
        subscriber.onEvent = { [weak self] text in self?.onEvent?(text) }
        self.subscriber = subscriber
        subscriber.start()
    }

    public func resolve(_ completion: @escaping (Result<RedisURL.Endpoint, RedisError>) -> Void) {
        subscribe()
        ask(attempt: 0, failures: []) { [weak self] result in
            completion(result.map { address in
                self?.master = address
                return address.endpoint
            })
        }
    }

    /// Asks sentinel `first + attempt`, moving on to the next on any failure; fails when all have.
    private func ask(attempt: Int, failures: [String], _ completion: @escaping (Result<RedisNodeAddress, RedisError>) -> Void) {
        let count = settings.sentinels.count
        guard attempt < count else {
            completion(.failure(.connectFailed("no sentinel named the master \(settings.masterName.debugDescription): \(failures.joined(separator: "; "))")))
            return
        }
        let index = (first + attempt) % count
        let sentinel = settings.sentinels[index]
        Self.askOnce(settings: settings, sentinel: sentinel, loop: loop) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let address):
                self.first = index
                completion(.success(address))
            case .failure(let error):
                self.onEvent?("sentinel \(sentinel) did not answer: \(error)")
                self.ask(attempt: attempt + 1, failures: failures + ["\(sentinel): \(error)"], completion)
            }
        }
    }

    /// One question to one sentinel over a short-lived connection, answered within the timeout.
    static func askOnce(settings: SentinelSettings, sentinel: RedisNodeAddress, loop: EventLoop,
                        _ completion: @escaping (Result<RedisNodeAddress, RedisError>) -> Void) {
        var options = RedisConnection.Options()
        options.connectTimeoutMilliseconds = settings.timeoutMilliseconds
        options.commandTimeoutMilliseconds = settings.timeoutMilliseconds
        options.waitingLimit = 1
        let query = RedisConnection(url: settings.url(of: sentinel), loop: loop, options: options)
        query.send(settings.question) { result in
            query.close()
            completion(result.flatMap { settings.masterAddress(from: $0, sentinel: sentinel) })
        }
    }

    private func masterSwitched(to address: RedisNodeAddress) {
        onEvent?("sentinel: master \(settings.masterName) switched to \(address)")
        guard address != master else { return }
        master = nil
        connection?.reconnect(reason: "sentinel +switch-master: \(settings.masterName) is now at \(address)")
    }

    /// After (re)subscribing, a switch may have gone unheard: compare the sentinels' answer with where we are.
    private func recheck() {
        guard let current = master else { return }
        ask(attempt: 0, failures: []) { [weak self] result in
            guard let self, case .success(let address) = result, address != current, self.master == current else { return }
            self.masterSwitched(to: address)
        }
    }
}
