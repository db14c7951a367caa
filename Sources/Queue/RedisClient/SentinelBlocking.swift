import TLS

extension BlockingRedis {
    /// A blocking client to the master the sentinels name (for tools): asks them in turn, each with the
    /// sentinel timeout, then connects with `url`'s AUTH and database and checks `ROLE` says master. Resolved
    /// once: a tool whose master moves fails and is run again, as after any lost connection. `tls` is for the
    /// master (as in the worker); the sentinels are asked in plain TCP.
    public static func connectToMaster(sentinel settings: SentinelSettings, url: RedisURL, tls: TLSContext? = nil, connectTimeoutMilliseconds: Int = 2_000,
                                       commandTimeoutMilliseconds: Int = 10_000) throws(RedisError) -> BlockingRedis {
        var failures: [String] = []
        for sentinel in settings.sentinels {
            let address: RedisNodeAddress
            do {
                let client = try BlockingRedis(url: settings.url(of: sentinel), connectTimeoutMilliseconds: settings.timeoutMilliseconds,
                                               commandTimeoutMilliseconds: settings.timeoutMilliseconds)
                defer { client.close() }
                address = try settings.masterAddress(from: client.command(settings.question), sentinel: sentinel).get()
            } catch {
                failures.append("\(sentinel): \(error)")
                continue
            }
            var masterURL = url
            masterURL.endpoint = address.endpoint
            let master = try BlockingRedis(url: masterURL, tls: tls, connectTimeoutMilliseconds: connectTimeoutMilliseconds,
                                           commandTimeoutMilliseconds: commandTimeoutMilliseconds)
            if let problem = SentinelSettings.roleProblem(try master.command(SentinelSettings.roleCommand), at: address.description) {
                master.close()
                throw .connectFailed(problem)
            }
            return master
        }
        throw .connectFailed("no sentinel named the master \(settings.masterName.debugDescription): \(failures.joined(separator: "; "))")
    }
}
