import APNs
import Basics
import Foundation
import HTTP2
import Simulators
import PushCore
import Reactor
import Synchronization
import Testing

/// `APNs.APNsClient` against Herald's APNs simulator: what reaches APNs, how the JWT is reused, how error
/// answers decode, and how connection advice retires a connection so a resend goes out on a newer one.
@Suite struct APNsClientTests {
    static let waitSeconds = 60.0
    static let keyID = "KEY1234567"
    static let teamID = "TEAM123456"

    @Test func theRightHeadersAndExactPayloadReachAPNs() throws {
        let sim = try ClientSimulator()
        defer { sim.stop() }
        let client = try sim.makeClient(tokenCache: try sim.tokenCache())
        let upperID = UUID().uuidString  // producers often send Foundation's uppercase form
        let notifications = [
            PushNotification.apns(deviceToken: clientToken(1), topic: "com.example.app", environment: .production, pushType: .alert,
                             apnsID: upperID, payload: Array(#"{"aps":{"alert":"héllo"},"k":[1,2.5,null]}"#.utf8)),
            PushNotification.apns(deviceToken: clientToken(2), topic: "com.example.app", environment: .production, pushType: .background,
                             collapseID: "c1", payload: Array(#"{"aps":{"content-available":1}}"#.utf8)),
            PushNotification.apns(deviceToken: clientToken(3), topic: "com.example.app.voip", environment: .production, pushType: .voip,
                             priority: 1, expiration: 0, payload: Array(#"{ "call" : "x" }"#.utf8)),
        ]
        let outcomes = OutcomeBox(expected: notifications.count)
        try sim.loop.submit {
            for (index, n) in notifications.enumerated() { client.value.send(n) { outcomes.record(index, $0) } }
        }
        #expect(outcomes.wait(seconds: Self.waitSeconds))
        let results = outcomes.all
        for index in notifications.indices {
            guard let response = results[index]?.result.apns else {
                Issue.record("notification \(index): \(String(describing: results[index]))")
                continue
            }
            #expect(response.status == 200)
            #expect(response.reason == nil)
        }
        if let response = results[0]?.result.apns { #expect(response.apnsID == upperID.lowercased()) }

        let accepted = sim.server.acceptedNotifications()
        #expect(accepted.count == 3)
        let byToken = Dictionary(accepted.map { ($0.token, $0) }, uniquingKeysWith: { a, _ in a })
        let alert = try #require(byToken[clientToken(1)])
        #expect(alert.topic == "com.example.app")
        #expect(alert.pushType == "alert")
        #expect(alert.priority == 10)
        #expect(alert.apnsID == upperID.lowercased())
        #expect(alert.payloadBytes == notifications[0].payload.count)
        #expect(alert.payload.map { Array($0.utf8) } == notifications[0].payload)
        let background = try #require(byToken[clientToken(2)])
        #expect(background.pushType == "background")
        #expect(background.priority == 5)
        #expect(background.payload.map { Array($0.utf8) } == notifications[1].payload)
        let voip = try #require(byToken[clientToken(3)])
        #expect(voip.topic == "com.example.app.voip")
        #expect(voip.pushType == "voip")
        #expect(voip.priority == 1)
        #expect(voip.payload == #"{ "call" : "x" }"#)  // the producer's bytes, never re-encoded
        // Without an apns-id of its own, the notification gets the simulator's (lowercase) one.
        if let response = results[1]?.result.apns { #expect(response.apnsID == background.apnsID) }
    }

    @Test func oneTokenServesManyRequests() throws {
        let sim = try ClientSimulator()
        defer { sim.stop() }
        let cache = try sim.tokenCache()
        let client = try sim.makeClient(tokenCache: cache, connections: 2)
        // Both connections up first, so both carry requests (one could otherwise take everything once its limit rose).
        try sim.loop.submit { client.value.pool.start() }
        let deadline = Date().addingTimeInterval(Self.waitSeconds)
        while try sim.loop.submit({ client.value.pool.liveConnections }) < 2 && Date() < deadline { usleep(20_000) }
        #expect(try sim.loop.submit { client.value.pool.liveConnections } == 2)
        let count = 300
        let outcomes = OutcomeBox(expected: count)
        try sim.loop.submit {
            for index in 0..<count {
                let n = PushNotification.apns(deviceToken: clientToken(index), topic: "com.example.app", environment: .production,
                                         payload: Array(#"{"aps":{"alert":"x"}}"#.utf8))
                client.value.send(n) { outcomes.record(index, $0) }
            }
        }
        #expect(outcomes.wait(seconds: Self.waitSeconds))
        let all = outcomes.all.values
        #expect(all.allSatisfy { $0.result.apns?.status == 200 })
        let connections = Set(all.map(\.connectionID))
        let tokens = Set(all.map(\.token))
        #expect(tokens.count == 1)
        #expect(cache.tokensMade == 1)
        let stats = sim.server.stats()
        #expect(stats.accepted == count)
        // Each connection verified the signature once; nothing was re-signed or re-verified per request.
        #expect(stats.tokenVerifications == connections.count)
        #expect(stats.tokenVerifications == 2)
        #expect(stats.connectionsAccepted == 2)
    }

    @Test func aWrongKeyIsAnswered403InvalidProviderToken() throws {
        let sim = try ClientSimulator()
        defer { sim.stop() }
        // Same key and team IDs, different private key: the signature does not verify.
        let impostor = try MockProviderKey.generate(keyID: Self.keyID, teamID: Self.teamID, directory: sim.directory + "/other")
        let cache = try ProviderTokenCache(keyID: Self.keyID, teamID: Self.teamID, key: SigningKey(p8File: try #require(impostor.privateKeyFile)))
        let client = try sim.makeClient(tokenCache: cache)
        let outcome = try sim.sendOne(client, PushNotification.apns(deviceToken: clientToken(7), topic: "com.example.app", environment: .production,
                                                               payload: Array(#"{"aps":{}}"#.utf8)))
        guard let response = outcome.result.apns else {
            Issue.record("expected an answer, got \(outcome.result)")
            return
        }
        #expect(response.status == 403)
        #expect(response.reason == .invalidProviderToken)
        #expect(sim.server.stats().accepted == 0)
    }

    @Test func anUnregisteredTokenIsAnswered410WithItsTimestamp() throws {
        let stamp: Int64 = 1_700_000_123_456
        let sim = try ClientSimulator(faults: MockFaultScript(rules: [MockFaultRule(fate: .unregistered, tokenPrefix: "dead", timestamp: stamp)]))
        defer { sim.stop() }
        let client = try sim.makeClient(tokenCache: try sim.tokenCache())
        let token = "dead" + String(repeating: "0", count: 60)
        let outcome = try sim.sendOne(client, PushNotification.apns(deviceToken: token, topic: "com.example.app", environment: .production,
                                                               payload: Array(#"{"aps":{}}"#.utf8)))
        guard let response = outcome.result.apns else {
            Issue.record("expected an answer, got \(outcome.result)")
            return
        }
        #expect(response.status == 410)
        #expect(response.reason == .unregistered)
        #expect(response.timestamp == stamp)
        #expect(response.apnsID != nil)
        #expect(OutcomePolicy().decide(outcome.result, attempt: 1, expiration: nil, nowSeconds: 0)
            == .dropToken(invalidSince: stamp, reason: "Unregistered"))
    }

    @Test func expiredProviderTokenRetiresTheConnectionAndTheResendGoesOutOnANewerOne() throws {
        let sim = try ClientSimulator()
        defer { sim.stop() }
        // The cache's clock starts two hours back, so its first token is past the simulator's 3600 s lifetime.
        let offset = ClockOffset(seconds: -7_200)
        let cache = try ProviderTokenCache(keyID: Self.keyID, teamID: Self.teamID, key: try sim.signingKey()) {
            Int64(Date().timeIntervalSince1970) + offset.seconds.load(ordering: .relaxed)
        }
        let client = try sim.makeClient(tokenCache: cache)
        let n = PushNotification.apns(deviceToken: clientToken(9), topic: "com.example.app", environment: .production,
                                 apnsID: UUID().uuidString, payload: Array(#"{"aps":{"alert":"again"}}"#.utf8))
        let first = try sim.sendOne(client, n)
        guard let refused = first.result.apns else {
            Issue.record("expected an answer, got \(first.result)")
            return
        }
        #expect(refused.status == 403)
        #expect(refused.reason == .expiredProviderToken)
        #expect(first.connectionID > 0)
        let policy = OutcomePolicy()
        #expect(policy.connectionAdvice(first.result) == .replace)
        #expect(policy.decide(first.result, attempt: 1, expiration: nil, nowSeconds: 0) == .resendNow(freshConnection: true, refreshToken: true))

        offset.seconds.store(0, ordering: .relaxed)  // the machine's clock is right again
        try sim.loop.submit { client.value.handleConnectionAdvice(first, advice: policy.connectionAdvice(first.result)) }
        #expect(try sim.loop.submit { client.value.pool.connectionIDs.contains(first.connectionID) } == false)
        let second = try sim.sendOne(client, n, afterConnection: first.connectionID)
        guard let delivered = second.result.apns else {
            Issue.record("expected an answer, got \(second.result)")
            return
        }
        #expect(delivered.status == 200)
        #expect(second.connectionID > first.connectionID)
        #expect(second.token != first.token)
        #expect(cache.tokensMade == 2)
        #expect(sim.server.acceptedNotifications().map(\.apnsID) == [n.apnsID!.lowercased()])
    }

    @Test func unrelatedKeyIdRetiresTheConnectionAndTheResendGoesOutOnANewerOne() throws {
        let sim = try ClientSimulator(extraKeyID: "KEY7654321")
        defer { sim.stop() }
        let owner = try sim.makeClient(tokenCache: try sim.tokenCache())
        // Two clients for two keys of the same team on one pool: the connection is bound to the first key used.
        let (firstCache, secondCache) = (try sim.tokenCache(), try sim.tokenCache(extra: true))
        let (first, second) = try sim.loop.submit { [loop = sim.loop] in
            (LoopBound(APNsClient(pool: owner.value.pool, tokenCache: firstCache, requestTimeoutMilliseconds: 30_000), loop: loop),
             LoopBound(APNsClient(pool: owner.value.pool, tokenCache: secondCache, requestTimeoutMilliseconds: 30_000), loop: loop))
        }
        let push = { (i: Int) in
            PushNotification.apns(deviceToken: clientToken(i), topic: "com.example.app", environment: .production, payload: Array(#"{"aps":{}}"#.utf8))
        }
        let bound = try sim.sendOne(first, push(1))
        guard let ok = bound.result.apns else {
            Issue.record("expected an answer, got \(bound.result)")
            return
        }
        #expect(ok.status == 200)
        let rejected = try sim.sendOne(second, push(2))
        guard let unrelated = rejected.result.apns else {
            Issue.record("expected an answer, got \(rejected.result)")
            return
        }
        #expect(unrelated.status == 403)
        #expect(unrelated.reason == .unrelatedKeyIdInToken)
        #expect(rejected.connectionID == bound.connectionID)
        let policy = OutcomePolicy()
        try sim.loop.submit { second.value.handleConnectionAdvice(rejected, advice: policy.connectionAdvice(rejected.result)) }
        let resent = try sim.sendOne(second, push(2), afterConnection: rejected.connectionID)
        guard let delivered = resent.result.apns else {
            Issue.record("expected an answer, got \(resent.result)")
            return
        }
        #expect(delivered.status == 200)
        #expect(resent.connectionID > rejected.connectionID)
        #expect(sim.server.acceptedNotifications().map(\.token) == [clientToken(1), clientToken(2)])
    }
}

/// Moves an injected clock: a class, so a `@Sendable` clock closure can share the atomic.
private final class ClockOffset: Sendable {
    let seconds: Atomic<Int64>
    init(seconds: Int64) { self.seconds = Atomic(seconds) }
}

/// A 64-hex-digit device token for `index`.
private func clientToken(_ index: Int) -> String {
    let digits = String(index, radix: 16)
    return "ab" + String(repeating: "0", count: 62 - digits.count) + digits
}

/// The simulator (with payload logging) and a client loop; `stop()` closes the clients, both loops and the files.
private final class ClientSimulator: Sendable {
    let directory: String
    let key: MockProviderKey
    let extraKey: MockProviderKey?
    let caFile: String
    let server: MockAPNsServer
    let loop: EventLoop
    private let clients = LockedValue<[LoopBound<APNsClient>]>([])

    init(faults: MockFaultScript = MockFaultScript(), extraKeyID: String? = nil) throws {
        let directory = NSTemporaryDirectory() + "herald-apnsclient-\(UUID().uuidString)"
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory + "/other", withIntermediateDirectories: true)
        let files = try MockTLSFiles.generate(in: directory)
        caFile = try #require(files.caFile)
        key = try MockProviderKey.generate(keyID: APNsClientTests.keyID, teamID: APNsClientTests.teamID, directory: directory)
        extraKey = try extraKeyID.map { try MockProviderKey.generate(keyID: $0, teamID: APNsClientTests.teamID, directory: directory) }
        var configuration = MockAPNsConfiguration()
        configuration.tls = files
        configuration.keys = [key] + (extraKey.map { [$0] } ?? [])
        configuration.faults = faults
        configuration.recordAccepted = true
        configuration.logPayloads = true
        server = try MockAPNsServer(configuration: configuration)
        do {
            loop = try EventLoop.startThread(name: "apnsclient-test")
        } catch {
            server.stop()
            throw error
        }
    }

    func signingKey(extra: Bool = false) throws -> SigningKey {
        try SigningKey(p8File: try #require((extra ? extraKey : key)?.privateKeyFile))
    }

    func tokenCache(extra: Bool = false) throws -> ProviderTokenCache {
        try ProviderTokenCache(keyID: (extra ? extraKey : key)!.keyID, teamID: APNsClientTests.teamID, key: try signingKey(extra: extra))
    }

    func makeClient(tokenCache: ProviderTokenCache?, connections: Int = 1) throws -> LoopBound<APNsClient> {
        let client = try loop.submit { () throws -> LoopBound<APNsClient> in
            let client = try APNsClient(loop: self.loop, host: "127.0.0.1", port: self.server.port, tls: TLSConfiguration(caFile: self.caFile),
                                        tokenCache: tokenCache, connections: connections, requestTimeoutMilliseconds: 30_000)
            return LoopBound(client, loop: self.loop)
        }
        clients.withLock { $0.append(client) }
        return client
    }

    /// Sends one notification from the loop and waits (with a deadline) for its outcome.
    func sendOne(_ client: LoopBound<APNsClient>, _ n: PushNotification, afterConnection: Int = 0) throws -> APNsClient.Outcome {
        let box = OutcomeBox(expected: 1)
        let accepted = try loop.submit { client.value.send(n, afterConnection: afterConnection) { box.record(0, $0) } }
        try #require(accepted)
        try #require(box.wait(seconds: APNsClientTests.waitSeconds), "no outcome in time")
        return try #require(box.all[0])
    }

    func stop() {
        let all = clients.withLock { $0 }
        try? loop.submit { for client in all { client.value.close(graceful: false) } }
        loop.stop()
        loop.waitUntilStopped()
        server.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// Outcomes by index, recorded on the loop's thread; a second outcome for one index is kept and fails `all`'s users.
private final class OutcomeBox: @unchecked Sendable {
    private let lock = NSLock()
    private var outcomes: [Int: APNsClient.Outcome] = [:]
    private var count = 0
    private var duplicates = 0
    private let expected: Int
    private let done = DispatchSemaphore(value: 0)

    init(expected: Int) { self.expected = expected }

    func record(_ index: Int, _ outcome: APNsClient.Outcome) {
        let finished = lock.withLock { () -> Bool in
            if outcomes[index] != nil { duplicates += 1 }
            outcomes[index] = outcome
            count += 1
            return count == expected
        }
        if finished { done.signal() }
    }

    func wait(seconds: Double) -> Bool {
        guard done.wait(timeout: .now() + seconds) == .success else { return false }
        return lock.withLock { duplicates == 0 && outcomes.count == expected }
    }

    var all: [Int: APNsClient.Outcome] { lock.withLock { outcomes } }
}
