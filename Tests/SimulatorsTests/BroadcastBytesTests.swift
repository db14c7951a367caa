import APNs
import Basics
import Foundation
import HTTP2
import PushCore
import Reactor
import Testing
@testable import Simulators

/// Herald's channel-management and broadcast requests are the documented ones byte for byte: the simulator records
/// what curl (sending Apple's examples) and Herald's `APNsChannelClient` / `APNsClient` sent, and the two must
/// have the same method, path, headers (names, values, order) and body. `content-length` is left out of the
/// comparison: curl adds it, Herald does not, and in HTTP/2 the DATA frames carry the length.
@Suite("broadcast: Herald's requests against Apple's examples")
struct BroadcastBytesTests {
    typealias C = BroadcastCurlTests

    @Test func heraldSendsTheDocumentedRequestsByteForByte() throws {
        let fixture = try Fixture { $0.recordRequests = true }
        defer { fixture.stop() }
        let keyFile = try #require(fixture.key.privateKeyFile)
        let cache = try ProviderTokenCache(keyID: fixture.key.keyID, teamID: fixture.key.teamID, key: try SigningKey(p8File: keyFile))
        let bearer = try cache.bearer
        let ids = (0..<5).map { _ in UUID().uuidString.lowercased() }

        // Apple's examples through curl: create, then read, list and broadcast to the channel created (the delete
        // comes at the end, after Herald's calls on the same channel).
        let created = try curl(fixture, [(C.management(fixture), "POST", C.bare + ["apns-request-id: \(ids[0])", "authorization: \(bearer)"], C.createBody(0))])[0]
        let channel = try #require(created.headers["apns-channel-id"])
        let curlAnswers = try curl(fixture, [
            (C.management(fixture), "GET", C.bare + ["apns-channel-id: \(channel)", "apns-request-id: \(ids[1])", "authorization: \(bearer)"], nil),
            (C.management(fixture, "/all-channels"), "GET", C.bare + ["apns-request-id: \(ids[2])", "authorization: \(bearer)"], nil),
            (C.broadcastURL(fixture), "POST", C.broadcastHeaders(bearer, channel: channel, requestID: ids[3]), C.liveActivityPayload),
        ])
        #expect(curlAnswers.map(\.status) == [200, 200, 200])

        // The same calls from Herald, with the same JWT and request ids; then curl deletes the channel, and Herald's
        // delete of it finds nothing.
        let loop = try EventLoop.startThread(name: "bytes-test")
        defer { loop.stop(); loop.waitUntilStopped() }
        typealias Answer = Result<APNsChannelClient.Reply, APNsChannelClient.Failure>
        let replies = LockedValue<[Int: Answer]>([:])
        let broadcast = LockedValue<DeliveryResult?>(nil)
        let port = fixture.server.port
        let caFile = try #require(fixture.tls.caFile)
        let operations: [ChannelManagement.Operation] = [.create(.noMessagesStored), .read(channelID: channel), .list]
        let clients = try loop.submit { () throws -> LoopBound<(APNsChannelClient, APNsClient)> in
            let tls = TLSConfiguration(caFile: caFile)
            let channels = try APNsChannelClient(loop: loop, host: "127.0.0.1", port: port, tls: tls, bundleID: C.bundle, tokenCache: cache)
            let pushes = try APNsClient(loop: loop, host: "127.0.0.1", port: port, tls: tls, tokenCache: cache)
            pushes.pool.start()
            return LoopBound((channels, pushes), loop: loop)
        }
        try loop.submit {
            let (channels, pushes) = clients.value
            // One after another, so the recorded order is the order sent.
            func step(_ index: Int) {
                switch index {
                case 0..<3:
                    channels.perform(operations[index], requestID: ids[index]) { result in
                        replies.withLock { $0[index] = result }
                        step(index + 1)
                    }
                case 3:
                    let n = PushNotification.apns(
                        target: .channel(id: channel, bundleID: C.bundle), topic: C.bundle, environment: .production,
                        pushType: .liveactivity, priority: 10, expiration: 0, apnsID: ids[3], payload: Array(C.liveActivityPayload.utf8))
                    pushes.send(n) { outcome in
                        broadcast.withLock { $0 = outcome.result }
                        step(index + 1)
                    }
                default:
                    pushes.close(graceful: false)
                }
            }
            step(0)
        }
        #expect(broadcast.wait(until: { $0 != nil }, timeoutSeconds: 30, then: { _ in true }) == true)
        let deleted = try curl(fixture, [(C.management(fixture), "DELETE",
                                          C.bare + ["apns-channel-id: \(channel)", "apns-request-id: \(ids[4])", "authorization: \(bearer)"], nil)])
        #expect(deleted.first?.status == 204)
        try loop.submit {
            let (channels, _) = clients.value
            channels.perform(.delete(channelID: channel), requestID: ids[4]) { result in
                replies.withLock { $0[4] = result }
                channels.close(graceful: false)
            }
        }
        let answered = try #require(replies.wait(until: { $0.count == 4 }, timeoutSeconds: 30, then: { $0 }))
        guard case .success(let create)? = answered[0], case .created(let heraldChannel) = create.answer else {
            Issue.record("create: \(String(describing: answered[0]))")
            return
        }
        #expect(heraldChannel != channel)
        #expect(create.requestID == ids[0])
        #expect((try? answered[1]?.get())?.answer == .channel(.noMessagesStored))
        guard case .channels(let listed)? = (try? answered[2]?.get())?.answer else {
            Issue.record("list: \(String(describing: answered[2]))")
            return
        }
        #expect(Set(listed) == [channel, heraldChannel])
        if let r = broadcast.withLock({ $0 })?.apns {
            #expect(r.status == 200)
            #expect(r.apnsID == ids[3])
        } else {
            Issue.record("broadcast: \(String(describing: broadcast.withLock { $0 }))")
        }
        #expect((try? answered[4]?.get())?.answer == .failed(status: 400, reason: .channelNotRegistered))

        // Recorded in order: curl's four, Herald's four, curl's delete, Herald's delete.
        let all = fixture.server.recordedRequests()
        try #require(all.count == 10)
        let curlRequests = Array(all[0..<4]) + [all[8]]
        let heraldRequests = Array(all[4..<8]) + [all[9]]
        for (index, (ours, theirs)) in zip(heraldRequests, curlRequests).enumerated() {
            #expect(ours.method == theirs.method, "request \(index)")
            #expect(ours.path == theirs.path, "request \(index)")
            #expect(ours.body == theirs.body, "request \(index)")
            let strip: ([[String]]) -> [[String]] = { $0.filter { $0.first != "content-length" } }
            #expect(strip(ours.headers) == strip(theirs.headers), "request \(index): \(ours.method) \(ours.path)")
        }
        #expect(heraldRequests.map(\.path) == [
            "/1/apps/com.example.app/channels", "/1/apps/com.example.app/channels", "/1/apps/com.example.app/all-channels",
            "/4/broadcasts/apps/com.example.app", "/1/apps/com.example.app/channels",
        ])
    }

    /// Apple's limit: 10,000 channels per app and environment (the simulator's default). The 10,001st create is
    /// CannotCreateChannelConfig; deleting one makes room again; another app is unaffected.
    @Test func theTenThousandChannelLimitHoldsPerApp() throws {
        let fixture = try Fixture { $0.recordAccepted = false }
        defer { fixture.stop() }
        let keyFile = try #require(fixture.key.privateKeyFile)
        let cache = try ProviderTokenCache(keyID: fixture.key.keyID, teamID: fixture.key.teamID, key: try SigningKey(p8File: keyFile))
        let loop = try EventLoop.startThread(name: "limit-test")
        defer { loop.stop(); loop.waitUntilStopped() }
        let port = fixture.server.port
        let caFile = try #require(fixture.tls.caFile)
        let clients = try loop.submit { () throws -> LoopBound<(APNsChannelClient, APNsChannelClient)> in
            let tls = TLSConfiguration(caFile: caFile)
            return LoopBound((try APNsChannelClient(loop: loop, host: "127.0.0.1", port: port, tls: tls, bundleID: C.bundle, tokenCache: cache),
                              try APNsChannelClient(loop: loop, host: "127.0.0.1", port: port, tls: tls, bundleID: "com.example.other", tokenCache: cache)),
                             loop: loop)
        }
        typealias Answer = Result<APNsChannelClient.Reply, APNsChannelClient.Failure>
        /// Runs `operations` on one client, all at once, and waits for every answer.
        func run(_ operations: [ChannelManagement.Operation], other: Bool = false) throws -> [ChannelManagement.Answer?] {
            let answers = LockedValue<[Int: Answer]>([:])
            try loop.submit {
                let client = other ? clients.value.1 : clients.value.0
                for (index, operation) in operations.enumerated() {
                    client.perform(operation) { result in answers.withLock { $0[index] = result } }
                }
            }
            let all = answers.wait(until: { $0.count == operations.count }, timeoutSeconds: 120, then: { $0 }) ?? [:]
            return operations.indices.map { (try? all[$0]?.get())?.answer }
        }
        // In rounds of 1,000: the client's pool queues at most that many calls (management is not a bulk path).
        var created: [ChannelManagement.Answer?] = []
        for _ in 0..<10 { created += try run(Array(repeating: .create(.noMessagesStored), count: 1_000)) }
        let ids = created.compactMap { answer -> String? in
            if case .created(let id)? = answer { return id }
            return nil
        }
        #expect(ids.count == 10_000)
        #expect(Set(ids).count == 10_000)
        #expect(try run([.create(.mostRecentMessageStored)]) == [.failed(status: 400, reason: .cannotCreateChannelConfig)])
        #expect(try run([.create(.noMessagesStored)], other: true).first.map { if case .created? = $0 { true } else { false } } == true)
        #expect(try run([.delete(channelID: ids[0])]) == [.deleted])
        let again = try run([.create(.mostRecentMessageStored), .create(.mostRecentMessageStored)])
        #expect(again.filter { if case .created? = $0 { true } else { false } }.count == 1)
        #expect(again.contains(.failed(status: 400, reason: .cannotCreateChannelConfig)))
        guard case .channels(let listed)? = try run([.list]).first else {
            Issue.record("list failed")
            return
        }
        #expect(listed.count == 10_000)
        #expect(!listed.contains(ids[0]))
        try loop.submit {
            clients.value.0.close(graceful: false)
            clients.value.1.close(graceful: false)
        }
    }
}
