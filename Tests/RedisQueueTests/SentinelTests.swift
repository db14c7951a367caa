import Foundation
import Glibc
import HeraldTestSupport
import Reactor
import Testing
@testable import RedisQueue

/// Discovery through real `redis-sentinel` processes, the role check and `+switch-master`, on loopback.
@Suite(.serialized) struct SentinelTests {
    /// A connection whose master comes from the sentinels; `url`'s host and port lead nowhere on purpose.
    private static func sentinelClient(_ set: SentinelSet, on loop: EventLoop, masterName: String? = nil, sentinels: [String]? = nil,
                                       commandTimeoutMilliseconds: Int = 3000, events: Box<[String]>) -> RedisConnection {
        let addresses = (sentinels ?? set.sentinelAddresses).compactMap(RedisNodeAddress.init(parsing:))
        let settings = SentinelSettings(sentinels: addresses, masterName: masterName ?? set.masterName, timeoutMilliseconds: 1000)
        var options = RedisConnection.Options()
        options.reconnectMaxMilliseconds = 500
        options.commandTimeoutMilliseconds = commandTimeoutMilliseconds
        let connection = RedisConnection(url: try! RedisURL(parsing: "redis://127.0.0.1:1/0"), loop: loop, options: options)
        connection.addressSource = SentinelAddressSource(settings: settings, loop: loop)
        connection.onStateChange = { state in
            if case .disconnected(let reason, _) = state { events.value.append(reason) }
        }
        return connection
    }

    /// Sends one command on the loop and waits for its reply (deadline `seconds`).
    private static func ask(_ client: LoopBound<RedisConnection>, _ args: [String], seconds: Double = 10) throws -> Result<RESPValue, RedisError> {
        let reply = Box<Result<RESPValue, RedisError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        try client.loop.submit {
            client.value.send(args) { result in
                reply.value = result
                done.signal()
            }
        }
        guard done.wait(timeout: .now() + seconds) == .success, let result = reply.value else { throw TestSupportError("no reply to \(args) within \(seconds) s") }
        return result
    }

    private static func port(of client: LoopBound<RedisConnection>) throws -> Int? {
        guard case .success(let reply) = try ask(client, ["CONFIG", "GET", "port"]), let items = reply.array, items.count == 2 else { return nil }
        return items[1].int.map(Int.init)
    }

    @Test(.timeLimit(.minutes(1)))
    func discoveryConnectsToTheMasterTheSentinelsNameSkippingADeadSentinel() throws {
        let set = try SentinelSet()
        defer { set.stop(); set.removeFiles() }
        let harness = try LoopHarness()
        defer { harness.stop() }
        let events = Box<[String]>([])
        // The first sentinel listed is not running: the question moves on to the next.
        let dead = "127.0.0.1:\(freeLoopbackPort())"
        let client = try harness.loop.submit {
            LoopBound(Self.sentinelClient(set, on: harness.loop, sentinels: [dead] + set.sentinelAddresses, events: events), loop: harness.loop)
        }
        defer { try? harness.loop.submit { client.value.close() } }
        #expect(try Self.ask(client, ["SET", "sentinel-discovery", "1"]) == .success(.simple("OK")))
        #expect(try Self.port(of: client) == set.master.port)
        let master = try harness.loop.submit { (client.value.addressSource as? SentinelAddressSource)?.master?.port }
        #expect(master == set.master.port)

        // The tools' blocking client finds the same master.
        let settings = SentinelSettings(sentinels: ([dead] + set.sentinelAddresses).compactMap(RedisNodeAddress.init(parsing:)),
                                        masterName: set.masterName)
        let blocking = try BlockingRedis.connectToMaster(sentinel: settings, url: try RedisURL(parsing: "redis://127.0.0.1:1/0"))
        #expect(try blocking.command(["CONFIG", "GET", "port"]).array?[1].int == Int64(set.master.port))
        // A name no sentinel monitors is refused with the name in the message.
        var unknown = settings
        unknown.masterName = "no-such-master"
        #expect {
            _ = try BlockingRedis.connectToMaster(sentinel: unknown, url: try RedisURL(parsing: "redis://127.0.0.1:1/0"))
        } throws: { error in
            "\(error)".contains("does not know a master named \"no-such-master\"")
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func roleCheckRefusesAReplicaTheSentinelsNameAsMaster() throws {
        let set = try SentinelSet()
        defer { set.stop(); set.removeFiles() }
        // A sentinel told to watch the replica as a master answers with the replica's address.
        let port = set.sentinelPorts[0]
        #expect(try set.sentinelCommand(port: port, ["SENTINEL", "MONITOR", "impostor", "127.0.0.1", String(set.replica.port), "2"]) == .simple("OK"))
        let harness = try LoopHarness()
        defer { harness.stop() }
        let events = Box<[String]>([])
        let client = try harness.loop.submit {
            LoopBound(Self.sentinelClient(set, on: harness.loop, masterName: "impostor", sentinels: ["127.0.0.1:\(port)"],
                                         commandTimeoutMilliseconds: 1500, events: events), loop: harness.loop)
        }
        defer { try? harness.loop.submit { client.value.close() } }
        // The write waits, then fails unsent: it never reaches the replica.
        #expect(try Self.ask(client, ["SET", "impostor-write", "1"]) == .failure(.notConnected))
        let reasons = try harness.loop.submit { events.value }
        #expect(reasons.contains { $0.contains("answers ROLE slave, not master") }, "\(reasons)")
        #expect(try harness.loop.submit { client.value.stats.connects } == 0)

        let settings = SentinelSettings(sentinels: [RedisNodeAddress(host: "127.0.0.1", port: port)], masterName: "impostor")
        #expect {
            _ = try BlockingRedis.connectToMaster(sentinel: settings, url: try RedisURL(parsing: "redis://127.0.0.1:1/0"))
        } throws: { error in
            "\(error)".contains("not master")
        }
        let replica = try BlockingRedis(url: try RedisURL(parsing: set.replica.url))
        #expect(try replica.command(["EXISTS", "impostor-write"]) == .integer(0))
    }

    @Test(.timeLimit(.minutes(1)))
    func switchMasterMovesTheConnectionToThePromotedReplica() throws {
        let set = try SentinelSet()
        defer { set.stop(); set.removeFiles() }
        let harness = try LoopHarness()
        defer { harness.stop() }
        let events = Box<[String]>([])
        let client = try harness.loop.submit { LoopBound(Self.sentinelClient(set, on: harness.loop, events: events), loop: harness.loop) }
        defer { try? harness.loop.submit { client.value.close() } }
        #expect(try Self.port(of: client) == set.master.port)
        // Let the subscription settle before the switch (it is made on the first question).
        usleep(300_000)

        // A failover with the old master still alive: only +switch-master (or ROLE, once it is demoted) says so.
        #expect(try set.sentinelCommand(port: set.sentinelPorts[1], ["SENTINEL", "FAILOVER", set.masterName]) == .simple("OK"))
        #expect(set.waitForMaster(port: set.replica.port), "the sentinels did not promote the replica")
        let moved = waitUntil(seconds: 20, interval: 0.1) { (try? Self.port(of: client)) == set.replica.port }
        let seen = try harness.loop.submit { events.value }
        #expect(moved, "still on the old master: \(seen)")
        #expect(try Self.ask(client, ["SET", "after-switch", "1"]) == .success(.simple("OK")))
        let reasons = try harness.loop.submit { events.value }
        #expect(reasons.contains { $0.contains("+switch-master") && $0.contains(String(set.replica.port)) }, "\(reasons)")
    }
}
