/// Where the sentinels are and which master to ask them for (`redis.mode = "sentinel"`). The master's own
/// AUTH, database (and TLS) still come from `redis.url`; only its host and port come from the sentinels.
public struct SentinelSettings: Sendable, Equatable {
    public var sentinels: [RedisNodeAddress]
    public var masterName: String
    /// AUTH for the sentinels themselves (`requirepass` / an ACL user in sentinel.conf), not for the master.
    public var user: String?
    public var password: String?
    /// For each question to one sentinel (connect + reply), and for the role check.
    public var timeoutMilliseconds: Int

    public init(sentinels: [RedisNodeAddress], masterName: String, user: String? = nil, password: String? = nil, timeoutMilliseconds: Int = 1_000) {
        self.sentinels = sentinels
        self.masterName = masterName
        self.user = user
        self.password = password
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// How Herald logs in to a sentinel.
    func url(of sentinel: RedisNodeAddress) -> RedisURL {
        RedisURL(endpoint: sentinel.endpoint, user: user, password: password, database: 0)
    }

    var question: [[UInt8]] { [Array("SENTINEL".utf8), Array("get-master-addr-by-name".utf8), Array(masterName.utf8)] }

    /// The master's address from a `SENTINEL get-master-addr-by-name` reply.
    func masterAddress(from reply: RESPValue, sentinel: RedisNodeAddress) -> Result<RedisNodeAddress, RedisError> {
        if reply.isNil { return .failure(.connectFailed("sentinel \(sentinel) does not know a master named \(masterName.debugDescription)")) }
        guard let parts = reply.array, parts.count == 2, let host = parts[0].string, let port = parts[1].int.map(Int.init),
              (1...65535).contains(port) else {
            return .failure(.protocolError("sentinel \(sentinel): unexpected get-master-addr-by-name reply \(reply)"))
        }
        return .success(RedisNodeAddress(host: host, port: port))
    }

    /// The master named in a `+switch-master` message (`<name> <old-ip> <old-port> <new-ip> <new-port>`), if ours.
    func switchedMaster(_ message: String) -> RedisNodeAddress? {
        let parts = message.split(separator: " ")
        guard parts.count == 5, parts[0] == masterName, let port = Int(parts[4]) else { return nil }
        return RedisNodeAddress(host: String(parts[3]), port: port)
    }

    static let roleCommand: [[UInt8]] = [Array("ROLE".utf8)]

    /// Nil when a `ROLE` reply says master; otherwise why the server must not take Herald's writes.
    static func roleProblem(_ reply: RESPValue, at address: String) -> String? {
        let role = reply.array?.first?.string ?? "unknown"
        return role == "master" ? nil : "\(address) answers ROLE \(role), not master (a replica or a demoted master); asking the sentinels again"
    }
}
