import Foundation
import Glibc
import HeraldTestSupport
import Reactor
import Testing
@testable import RedisClient

/// `RedisConnection`'s phases against a real redis-server: what each stage holds when the connection is in it.
@Suite struct ConnectionPhaseTests {
    /// A refused AUTH leaves no socket behind, keeps the waiting command (it never reached Redis), backs off and
    /// retries; once the password is accepted the waiting command goes out on the new link.
    @Test func aRefusedAuthBacksOffWithoutASocketAndTheWaitingCommandGoesOutOnceAuthPasses() throws {
        let server = try RedisServer(extraArguments: ["--requirepass", "other"])
        defer { server.stop() }
        let harness = try LoopHarness()
        defer { harness.stop() }
        var options = RedisConnection.Options()
        options.reconnectInitialMilliseconds = 20
        options.reconnectMaxMilliseconds = 50
        options.commandTimeoutMilliseconds = 20_000
        let connection = Box<RedisConnection?>(nil)
        let reply = Box<String?>(nil)
        let states = Box<[String]>([])
        try harness.loop.submit { [options] in
            let redis = RedisConnection(url: try RedisURL(parsing: "redis://:s3cret@127.0.0.1:\(server.port)/3"), loop: harness.loop, options: options)
            redis.onStateChange = { state in states.value.append(state.name) }
            redis.send(["PING"]) { result in reply.value = (try? result.get())?.string ?? "\(result)" }
            connection.value = redis
        }
        #expect(waitUntil(seconds: 10) {
            (try? harness.loop.submit {
                guard case let .backingOff(reason, _, _) = connection.value!.phase else { return false }
                return reason.contains("AUTH refused")
            }) ?? false
        })
        let backingOff = try harness.loop.submit { (connection.value!.phase.socket == nil, connection.value!.pendingCount, reply.value) }
        #expect(backingOff.0 && backingOff.1 == 1 && backingOff.2 == nil)

        let admin = try BlockingRedis(url: RedisURL(parsing: "redis://:other@127.0.0.1:\(server.port)/0"))
        _ = try admin.command(["CONFIG", "SET", "requirepass", "s3cret"])
        #expect(waitUntil(seconds: 10) { (try? harness.loop.submit { reply.value }) ?? nil != nil })
        let after = try harness.loop.submit { () -> (String?, String, Int, UInt64, [String]) in
            let redis = connection.value!
            defer { redis.close() }
            return (reply.value, redis.phase.name, redis.phase.link?.inFlight.count ?? -1, redis.stats.connects, states.value)
        }
        #expect(after.0 == "PONG")
        #expect(after.1 == "connected" && after.2 == 0 && after.3 == 1)
        #expect(after.4.first == "connecting" && after.4.contains("disconnected") && after.4.last == "connected")
    }

    /// A dropped link fails what was in flight only once the phase has moved on: a command re-sent from that
    /// completion waits (not written into the dead socket) and goes out after the reconnect.
    @Test func aDropFailsInFlightAfterTheLinkIsGoneAndTheResendWaitsForTheReconnect() throws {
        let harness = try LoopHarness()
        defer { harness.stop() }
        let admin = try BlockingRedis(url: TestRedis.url)
        let clientID = Box<Int64>(-1)
        let seen = Box<[String]>([])
        let done = DispatchSemaphore(value: 0)
        let key = "t-phase-blpop-\(UInt32.random(in: 0...UInt32.max))"
        try harness.loop.submit {
            let connection = RedisConnection(url: TestRedis.url, loop: harness.loop)
            connection.send(["CLIENT", "ID"]) { result in clientID.value = (try? result.get())?.int ?? -2 }
            connection.send(["BLPOP", key, "10"]) { result in
                seen.value.append(result == .failure(.connectionLost) ? "lost" : "\(result)")
                seen.value.append(connection.phase.name)
                seen.value.append(connection.phase.socket == nil ? "no socket" : "socket")
                connection.send(["PING"]) { result in
                    seen.value.append((try? result.get())?.string ?? "\(result)")
                    seen.value.append("\(connection.phase.name) connects=\(connection.stats.connects)")
                    connection.close()
                    done.signal()
                }
                seen.value.append("pending \(connection.pendingCount)")
            }
        }
        #expect(waitUntil(seconds: 10) { (try? harness.loop.submit { clientID.value }) ?? -1 > 0 })
        let id = try harness.loop.submit { clientID.value }
        // BLPOP is in flight once the server lists the client as blocked in it.
        #expect(try waitUntil(seconds: 10) { try admin.command(["CLIENT", "LIST", "ID", "\(id)"]).string?.contains("cmd=blpop") == true })
        #expect(try admin.command(["CLIENT", "KILL", "ID", "\(id)"]).int == 1)
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(try harness.loop.submit { seen.value } == ["lost", "backingOff", "no socket", "pending 1", "PONG", "connected connects=2"])
    }

    /// `close()` while backing off cancels the reconnect and fails the waiting command with `.closed`.
    @Test func closeWhileBackingOffFailsTheWaitingCommandAndNeverReconnects() throws {
        let harness = try LoopHarness()
        defer { harness.stop() }
        let port = freeLoopbackPort()  // nothing listens there
        var options = RedisConnection.Options()
        options.reconnectInitialMilliseconds = 20
        options.reconnectMaxMilliseconds = 20
        let connection = Box<RedisConnection?>(nil)
        let result = Box<RedisError?>(nil)
        let changes = Box(0)
        try harness.loop.submit { [options] in
            let redis = RedisConnection(url: RedisURL(endpoint: .tcp(host: "127.0.0.1", port: port)), loop: harness.loop, options: options)
            redis.send(["PING"]) { if case .failure(let error) = $0 { result.value = error } }
            connection.value = redis
        }
        #expect(waitUntil(seconds: 10) { (try? harness.loop.submit { connection.value!.phase.name == "backingOff" }) ?? false })
        try harness.loop.submit {
            connection.value!.close()
            connection.value!.onStateChange = { _ in changes.value += 1 }
        }
        usleep(200_000)  // ten back-off periods: a timer left running would have reconnected by now
        let after = try harness.loop.submit { (result.value, connection.value!.phase.name, changes.value) }
        #expect(after.0 == .closed && after.1 == "closed" && after.2 == 0)
    }
}

extension RedisConnectionPhase {
    var name: String {
        switch self {
        case .idle: return "idle"
        case .resolving: return "resolving"
        case .connecting: return "connecting"
        case .securing: return "securing"
        case .handshaking: return "handshaking"
        case .connected: return "connected"
        case .backingOff: return "backingOff"
        case .closed: return "closed"
        }
    }
}

extension RedisConnection.State {
    var name: String {
        switch self {
        case .connecting: return "connecting"
        case .connected: return "connected"
        case .disconnected: return "disconnected"
        case .closed: return "closed"
        }
    }
}
