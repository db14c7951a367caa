import Foundation
import Glibc
import HeraldTestSupport
import Reactor
import Testing
@testable import RedisQueue

/// `ReplicaWaitSender` over a real master, with and without a replica to confirm.
@Suite struct ReplicaWaitTests {
    /// Runs one fresh script (EVALSHA, NOSCRIPT, EVAL: the WAIT must come after the EVAL) and a second call.
    /// `waitMilliseconds`: WAIT's own timeout; a replica that is there gets seconds (its ack can take longer
    /// than 300 ms on a loaded machine), the case without one needs only a short wait to fail.
    private func twoWrites(_ url: RedisURL, replicas: Int, key: String, waitMilliseconds: Int = 300) throws -> [Result<RESPValue, RedisError>] {
        let harness = try LoopHarness()
        defer { harness.stop() }
        let script = RedisScript("redis.call('INCR', KEYS[1]) return '\(UInt32.random(in: 0...UInt32.max))'")
        let results = Box<[Result<RESPValue, RedisError>]>([])
        let done = DispatchSemaphore(value: 0)
        try harness.loop.submit {
            let connection = RedisConnection(url: url, loop: harness.loop)
            let sender = ReplicaWaitSender(connection, replicas: replicas, timeoutMilliseconds: waitMilliseconds)
            sender.start()
            for _ in 0..<2 {
                sender.evalScript(script, keys: [Array(key.utf8)], args: []) { result in
                    results.value.append(result)
                    if results.value.count == 2 { sender.close(); done.signal() }
                }
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        return try harness.loop.submit { results.value }
    }

    @Test func writesAReplicaConfirmedComeBackAsTheScriptsReply() throws {
        let master = try RedisServer(extraArguments: ["--repl-diskless-sync-delay", "0"])
        defer { master.stop() }
        let replica = try RedisServer(extraArguments: ["--replicaof", "127.0.0.1", String(master.port)])
        defer { replica.stop() }
        let synced = waitUntil(seconds: 15) { (try? BlockingRedis(url: replica.redisURL).command(["INFO", "replication"]).string)??.contains("master_link_status:up") == true }
        #expect(synced)
        let results = try twoWrites(master.redisURL, replicas: 1, key: "confirmed", waitMilliseconds: 3_000)
        #expect(results.allSatisfy { if case .success(.bulk) = $0 { true } else { false } }, "\(results)")
        // WAIT covered both: the replica has both increments the moment the replies arrived.
        #expect(try BlockingRedis(url: replica.redisURL).command(["GET", "confirmed"]) == .bulk(Array("2".utf8)))
    }

    @Test func writesNoReplicaConfirmedFailAsNotReplicatedYetRanOnTheMaster() throws {
        let master = try RedisServer()
        defer { master.stop() }
        let results = try twoWrites(master.redisURL, replicas: 1, key: "unconfirmed")
        #expect(results == [.failure(.notReplicated(acknowledged: 0, wanted: 1)), .failure(.notReplicated(acknowledged: 0, wanted: 1))])
        #expect(RedisError.notReplicated(acknowledged: 0, wanted: 1).outcomeUnknown)
        #expect(try BlockingRedis(url: master.redisURL).command(["GET", "unconfirmed"]) == .bulk(Array("2".utf8)))
    }
}
