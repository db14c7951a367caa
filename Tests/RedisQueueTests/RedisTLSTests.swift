import Foundation
import HeraldTestSupport
import Reactor
import TLS
import Testing
@testable import RedisQueue

/// `rediss://` against a redis-server that speaks only TLS, with a CA and certificates made by the test.
@Suite(.serialized) struct RedisTLSTests {
    static func context(_ server: RedisTLSServer, ca: String? = nil, client: Bool = false, serverName: String? = nil,
                        verify: Bool = true) throws -> TLSContext {
        let certificates = server.certificates
        return try TLSContext(TLSConfiguration(caFile: ca ?? certificates.caFile, useSystemTrustStore: false, verifyPeer: verify,
                                               clientCertificateFile: client ? certificates.clientCertificate : nil,
                                               clientKeyFile: client ? certificates.clientKey : nil, serverName: serverName), alpn: [])
    }

    /// The `.connectFailed` text a blocking connect throws, or nil when it connected and answered PING.
    static func blockingFailure(_ server: RedisTLSServer, _ tls: TLSContext?, url: String? = nil) throws -> String? {
        let parsed = try RedisURL(parsing: url ?? server.url)
        do throws(RedisError) {
            let redis = try BlockingRedis(url: parsed, tls: tls, connectTimeoutMilliseconds: 3_000)
            _ = try redis.command(["PING"])
            return nil
        } catch {
            guard case .connectFailed(let why) = error else { throw error }
            return why
        }
    }

    /// Starts a loop client, sends a PING once connected and returns the first reason it gives for being
    /// disconnected (nil if the PING was answered).
    static func loopFailure(_ server: RedisTLSServer, _ tls: TLSContext?) throws -> String? {
        let harness = try LoopHarness()
        defer { harness.stop() }
        let seen = Box<String?>(nil)
        let finished = Box(false)
        let done = DispatchSemaphore(value: 0)
        try harness.loop.submit {
            var options = RedisConnection.Options()
            options.tls = tls
            let connection = RedisConnection(url: try! RedisURL(parsing: server.url), loop: harness.loop, options: options)
            func finish(_ reason: String?) {
                guard !finished.value else { return }
                finished.value = true
                seen.value = reason
                connection.close()
                done.signal()
            }
            connection.onStateChange = { state in
                switch state {
                case .disconnected(let reason, _) where reason != "not started": finish(reason)
                case .connected:
                    connection.send(["PING"]) { result in if case .success = result { finish(nil) } }
                default: break
                }
            }
            connection.start()
        }
        #expect(done.wait(timeout: .now() + 20) == .success)
        return try harness.loop.submit { seen.value }
    }

    @Test func trustedCAConnectsBothClientsAndRunsAClaimCompleteRound() throws {
        let server = try RedisTLSServer()
        let tls = try Self.context(server)
        let url = try RedisURL(parsing: server.url)
        let redis = try BlockingRedis(url: url, tls: tls)
        _ = try redis.command(["SET", "tls-key", String(repeating: "x", count: 100_000)])
        #expect(try redis.command(["STRLEN", "tls-key"]).int == 100_000)
        let keys = TestRedis.keys()
        try push(redis, key: keys.queue, jobs: (0..<50).map { "job-\($0)" })
        let blockingQueue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "blocking")
        let firstLeases = try blockingQueue.claim(max: 20)
        #expect(firstLeases.count == 20)
        #expect(try blockingQueue.complete(delivered(firstLeases, worker: "blocking")).applied == 20)

        let harness = try LoopHarness()
        defer { harness.stop() }
        let outcome = Box<(counted: [Int64], claimed: Int, applied: Int)>(([], 0, 0))
        let done = DispatchSemaphore(value: 0)
        try harness.loop.submit {
            var options = RedisConnection.Options()
            options.tls = tls
            let connection = RedisConnection(url: url, loop: harness.loop, options: options)
            connection.start()
            // Pipelined across TLS records: 2,000 replies in order.
            for index in 0..<2_000 {
                connection.send(["INCR", "tls-counter"]) { result in
                    outcome.value.counted.append((try? result.get())?.int ?? -1)
                    guard index == 1_999 else { return }
                    let queue = try! JobQueue(connection: connection, keys: keys, workerID: "loop")
                    queue.claim(max: 100) { claimed in
                        let leases = (try? claimed.get()) ?? []
                        outcome.value.claimed = leases.count
                        queue.complete(delivered(leases, worker: "loop")) { report in
                            outcome.value.applied = (try? report.get())?.applied ?? -1
                            connection.close()
                            done.signal()
                        }
                    }
                }
            }
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        let result = try harness.loop.submit { outcome.value }
        #expect(result.counted == Array(1...2_000))
        #expect(result.claimed == 30 && result.applied == 30)
        #expect(try redis.command(["XLEN", keys.results]).int == 50)
        #expect(try redis.command(["LLEN", keys.queue]).int == 0)
    }

    @Test func untrustedCAIsRefusedSayingTheCertificateFailedVerification() throws {
        let server = try RedisTLSServer()
        let wrong = try Self.context(server, ca: server.certificates.otherCAFile)
        let blocking = try #require(try Self.blockingFailure(server, wrong))
        #expect(blocking.contains("certificate verification failed") && blocking.contains("certificate verify failed"), "\(blocking)")
        let loop = try #require(try Self.loopFailure(server, wrong))
        #expect(loop.contains("certificate verification failed"), "\(loop)")
        // rediss:// without a CA file trusts only the system store, which does not know the test CA.
        let system = try #require(try Self.blockingFailure(server, nil))
        #expect(system.contains("certificate verification failed"), "\(system)")
    }

    @Test func verificationOffConnectsToASelfSignedServerThatVerificationRefuses() throws {
        let server = try RedisTLSServer(selfSigned: true)
        let verified = try #require(try Self.blockingFailure(server, try Self.context(server)))
        #expect(verified.contains("certificate verification failed") && verified.contains("self-signed"), "\(verified)")
        let unverified = try Self.context(server, verify: false)
        #expect(try Self.blockingFailure(server, unverified) == nil)
        #expect(try Self.loopFailure(server, unverified) == nil)
    }

    @Test func mutualTLSConnectsWithTheClientCertificateAndIsRefusedWithout() throws {
        let server = try RedisTLSServer(requireClientCertificate: true)
        let withCertificate = try Self.context(server, client: true)
        #expect(try Self.blockingFailure(server, withCertificate) == nil)
        #expect(try Self.loopFailure(server, withCertificate) == nil)
        let without = try Self.context(server)
        let blocking = try #require(try Self.blockingFailure(server, without))
        #expect(blocking.contains("client certificate"), "\(blocking)")
        let loop = try #require(try Self.loopFailure(server, without))
        #expect(loop.contains("client certificate"), "\(loop)")
    }

    @Test func aServerNameTheCertificateDoesNotNameIsRefused() throws {
        let server = try RedisTLSServer()
        let mismatch = try #require(try Self.blockingFailure(server, try Self.context(server, serverName: "redis.example.com")))
        #expect(mismatch.contains("certificate verification failed") && mismatch.contains("hostname mismatch"), "\(mismatch)")
        #expect(try Self.blockingFailure(server, try Self.context(server, serverName: "localhost")) == nil)
        // The URL's host is the name checked when none is configured: localhost is on the certificate too.
        #expect(try Self.blockingFailure(server, try Self.context(server), url: "rediss://localhost:\(server.port)/0") == nil)
    }

    @Test func plainAndTLSPortsMixedUpSayWhichIsWhich() throws {
        let server = try RedisTLSServer()
        let plainToTLS = try #require(try Self.blockingFailure(server, nil, url: "redis://127.0.0.1:\(server.port)/0"))
        #expect(plainToTLS.contains("rediss://"), "\(plainToTLS)")
        let plainServer = try RedisServer()
        defer { plainServer.stop() }
        let tlsToPlain = try #require(try Self.blockingFailure(server, try Self.context(server), url: "rediss://127.0.0.1:\(plainServer.port)/0"))
        #expect(tlsToPlain.contains("does not speak TLS") || tlsToPlain.contains("is this port serving TLS"), "\(tlsToPlain)")
    }

    @Test func theLoopClientReconnectsOverTLSAfterTheServerRestarts() throws {
        let server = try RedisTLSServer()
        let tls = try Self.context(server)
        let harness = try LoopHarness()
        defer { harness.stop() }
        let replies = Box<[String]>([])
        let connectionBox = Box<RedisConnection?>(nil)
        try harness.loop.submit {
            var options = RedisConnection.Options()
            options.tls = tls
            let connection = RedisConnection(url: try! RedisURL(parsing: server.url), loop: harness.loop, options: options)
            connectionBox.value = connection
            connection.send(["SET", "before", "1"]) { replies.value.append((try? $0.get())?.string ?? "\($0)") }
        }
        #expect(waitUntil(seconds: 20) { (try? harness.loop.submit { replies.value.count }) == 1 })
        server.stop()
        try server.start()
        let answered = waitUntil(seconds: 30) {
            let semaphore = DispatchSemaphore(value: 0)
            let got = Box<String>("")
            _ = try? harness.loop.submit {
                connectionBox.value!.send(["PING"]) { result in
                    got.value = (try? result.get())?.string ?? "\(result)"
                    semaphore.signal()
                }
            }
            guard semaphore.wait(timeout: .now() + 15) == .success else { return false }
            if got.value == "PONG" { return true }
            usleep(100_000)
            return false
        }
        #expect(answered)
        let connects = try harness.loop.submit { () -> UInt64 in
            let count = connectionBox.value!.stats.connects
            connectionBox.value!.close()
            return count
        }
        #expect(replies.value == ["OK"] && connects >= 2)
    }
}
