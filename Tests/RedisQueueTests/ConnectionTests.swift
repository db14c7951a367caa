import Foundation
import Glibc
import HeraldTestSupport
import Reactor
import Testing
@testable import RedisQueue

/// Runs `body` on a fresh loop; `body` signals the returned box when done. Stops the loop afterwards.
final class LoopHarness: @unchecked Sendable {
    let loop: EventLoop
    init() throws { loop = try EventLoop.startThread(name: "redis-test") }
    func stop() { loop.stop(); loop.waitUntilStopped() }
}

@Suite struct ConnectionTests {
    @Test func pipelinedRepliesComeBackInOrder() throws {
        let harness = try LoopHarness()
        defer { harness.stop() }
        let key = "t-pipeline-\(UInt32.random(in: 0...UInt32.max))"
        let done = DispatchSemaphore(value: 0)
        let replies = Box<[Int64]>([])
        try harness.loop.submit {
            let connection = RedisConnection(url: TestRedis.url, loop: harness.loop)
            connection.start()
            for index in 0..<3_000 {
                connection.send(["INCR", key]) { result in
                    replies.value.append((try? result.get())?.int ?? -1)
                    if index == 2_999 { connection.close(); done.signal() }
                }
            }
        }
        #expect(done.wait(timeout: .now() + 20) == .success)
        let values = try harness.loop.submit { replies.value }
        #expect(values == Array(1...3_000))
    }

    @Test func errorsNoscriptFallbackAndBinaryArguments() throws {
        let harness = try LoopHarness()
        defer { harness.stop() }
        let done = DispatchSemaphore(value: 0)
        let seen = Box<[String]>([])
        let script = RedisScript("return {ARGV[1], #ARGV[1], '\(UInt32.random(in: 0...UInt32.max))'}")
        try harness.loop.submit {
            let connection = RedisConnection(url: TestRedis.url, loop: harness.loop)
            connection.send(["NOSUCHCOMMAND"]) { result in
                if case .failure(.server(let message)) = result { seen.value.append(message.hasPrefix("ERR") ? "err" : message) }
            }
            connection.send(["SCRIPT", "FLUSH"]) { _ in }
            connection.evalScript(script, keys: [], args: [[0, 255, 10]]) { result in
                let items = (try? result.get())?.array ?? []
                seen.value.append(items.first == .bulk([0, 255, 10]) && items.dropFirst().first == .integer(3) ? "eval" : "bad \(result)")
                connection.evalScript(script, keys: [], args: [[1]]) { result in
                    seen.value.append((try? result.get())?.array?.first == .bulk([1]) ? "evalsha" : "bad")
                    connection.close()
                    done.signal()
                }
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(try harness.loop.submit { seen.value } == ["err", "eval", "evalsha"])
    }

    @Test func waitingCommandsAreBoundedAndTimeOut() throws {
        let harness = try LoopHarness()
        defer { harness.stop() }
        let port = freeLoopbackPort()  // nothing listens there
        var options = RedisConnection.Options()
        options.waitingLimit = 1
        options.commandTimeoutMilliseconds = 200
        let done = DispatchSemaphore(value: 0)
        let errors = Box<[RedisError]>([])
        let states = Box<[String]>([])
        try harness.loop.submit { [options] in
            let connection = RedisConnection(url: RedisURL(endpoint: .tcp(host: "127.0.0.1", port: port)), loop: harness.loop, options: options)
            connection.onStateChange = { state in
                if case .disconnected = state { states.value.append("down") }
            }
            connection.start()
            connection.send(["PING"]) { result in
                if case .failure(let error) = result { errors.value.append(error) }
                connection.close()
                done.signal()
            }
            connection.send(["PING"]) { result in
                if case .failure(let error) = result { errors.value.append(error) }
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(try harness.loop.submit { errors.value } == [.notConnected, .notConnected])
        #expect(try harness.loop.submit { states.value.first } == "down")
    }

    @Test func authAndSelectOnConnect() throws {
        let server = try RedisServer(extraArguments: ["--requirepass", "s3cret"])
        defer { server.stop() }
        #expect(throws: RedisError.self) { try BlockingRedis(url: RedisURL(endpoint: .tcp(host: "127.0.0.1", port: server.port), password: "wrong")) }
        let good = try BlockingRedis(url: RedisURL(parsing: "redis://default:s3cret@127.0.0.1:\(server.port)/5"))
        _ = try good.command(["SET", "k", "in-db-5"])
        let other = try BlockingRedis(url: RedisURL(parsing: "redis://:s3cret@127.0.0.1:\(server.port)/0"))
        #expect(try other.command(["GET", "k"]).isNil)
        #expect(try other.command(["SELECT", "5"]) == .simple("OK"))
        #expect(try other.command(["GET", "k"]).string == "in-db-5")
        let pipelined = try other.pipeline([["PING"], ["NOPE"], ["ECHO", "x"]])
        #expect(pipelined.count == 3 && pipelined[0] == .simple("PONG") && pipelined[1].errorMessage != nil && pipelined[2].string == "x")

        let harness = try LoopHarness()
        defer { harness.stop() }
        let done = DispatchSemaphore(value: 0)
        let got = Box<String>("")
        try harness.loop.submit {
            let connection = RedisConnection(url: try RedisURL(parsing: "redis://default:s3cret@127.0.0.1:\(server.port)/5"), loop: harness.loop)
            connection.send(["GET", "k"]) { result in
                got.value = (try? result.get())?.string ?? "\(result)"
                connection.close()
                done.signal()
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(try harness.loop.submit { got.value } == "in-db-5")
    }
}

@Suite struct ReconnectTests {
    /// A command in flight when the server drops the connection fails with `.connectionLost`; a command re-sent
    /// from that very completion waits for the reconnect and succeeds.
    @Test func inFlightFailsAndResendFromCompletionWorksAfterReconnect() throws {
        let harness = try LoopHarness()
        defer { harness.stop() }
        let admin = try TestRedis.blocking()
        let clientID = Box<Int64>(-1)
        let outcome = Box<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let key = "t-blpop-\(UInt32.random(in: 0...UInt32.max))"
        try harness.loop.submit {
            let connection = RedisConnection(url: TestRedis.url, loop: harness.loop)
            connection.send(["CLIENT", "ID"]) { result in clientID.value = (try? result.get())?.int ?? -2 }
            connection.send(["BLPOP", key, "10"]) { result in
                outcome.value.append(result == .failure(.connectionLost) ? "lost" : "\(result)")
                connection.send(["PING"]) { result in
                    outcome.value.append((try? result.get())?.string ?? "\(result)")
                    connection.close()
                    done.signal()
                }
            }
        }
        #expect(waitUntil(seconds: 10) { (try? harness.loop.submit { clientID.value }) ?? -1 > 0 })
        usleep(50_000)  // let BLPOP reach the server
        let id = try harness.loop.submit { clientID.value }
        #expect(try admin.command(["CLIENT", "KILL", "ID", "\(id)"]).int == 1)
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(try harness.loop.submit { outcome.value } == ["lost", "PONG"])
    }

    @Test func unixSocket() throws {
        let socketPath = NSTemporaryDirectory() + "herald-\(UInt32.random(in: 0...UInt32.max)).sock"
        let server = try RedisServer(extraArguments: ["--unixsocket", socketPath, "--unixsocketperm", "700"])
        defer { server.stop(); unlink(socketPath) }
        let url = try RedisURL(parsing: "unix://\(socketPath)?db=2")
        let blocking = try BlockingRedis(url: url)
        _ = try blocking.command(["SET", "where", "unix-db2"])
        let harness = try LoopHarness()
        defer { harness.stop() }
        let done = DispatchSemaphore(value: 0)
        let got = Box<String>("")
        try harness.loop.submit {
            let connection = RedisConnection(url: url, loop: harness.loop)
            connection.send(["GET", "where"]) { result in
                got.value = (try? result.get())?.string ?? "\(result)"
                connection.close()
                done.signal()
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(try harness.loop.submit { got.value } == "unix-db2")
    }
}

@Suite struct MaintenanceTests {
    @Test func maintenanceReapsAndMovesDueRetriesOnTheLoop() throws {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        try push(redis, key: keys.queue, jobs: ["a", "b"])
        var short = JobQueueOptions()
        short.leaseMilliseconds = 100
        let doomed = try BlockingJobQueue(redis: redis, keys: keys, workerID: "doomed", options: short)
        #expect(try doomed.claim(max: 2).count == 2)
        _ = try redis.command([bytes("ZADD"), bytes(keys.retry), bytes("1"), JobEnvelope.wrap(job: bytes("c"), attempt: 2, id: "c", queue: keys.queue)])
        let harness = try LoopHarness()
        defer { harness.stop() }
        let events = Box<[JobQueue.MaintenanceEvent]>([])
        try harness.loop.submit {
            let connection = RedisConnection(url: TestRedis.url, loop: harness.loop)
            let queue = try JobQueue(connection: KeyCheckedSender(connection), keys: keys, workerID: "keeper")
            queue.startMaintenance(reapIntervalMilliseconds: 20, schedulerMaxSleepMilliseconds: 20) { events.value.append($0) }
            events.value = []
            harness.loop.schedule(afterMilliseconds: 3_000) { queue.stopMaintenance(); connection.close() }
        }
        #expect(try waitUntil(seconds: 10) { try redis.command(["LLEN", keys.queue]).int == 3 })
        // The replies reach the loop just after Redis applied the scripts.
        #expect(try waitUntil(seconds: 10) {
            let seen = try harness.loop.submit { events.value }
            return seen.contains(.reaped(jobs: 2)) && seen.contains(.movedRetries(1))
        })
        #expect(try redis.command(["ZCARD", keys.retry]).int == 0)
    }
}
