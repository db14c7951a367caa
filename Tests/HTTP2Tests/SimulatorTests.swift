import Foundation
import Glibc
import HeraldTestSupport
import HTTP2
import Simulators
import Reactor
import Testing

/// The transport against Herald's APNs simulator and its scripted faults: GOAWAY, REFUSED_STREAM, a changing
/// stream limit, silence and dropped connections. What every test holds to: each request (each attempt)
/// ends exactly once, with an answer or a typed error that says truthfully whether the server may have
/// processed it; the answered ones are exactly what the simulator accepted.
@Suite struct SimulatorTests {
    /// Generous: the machine is small and shared. A test that passes is never near them.
    static let waitSeconds = 90.0

    // MARK: GOAWAY

    @Test func goawayAfterRequestsFailsStreamsAboveLastStreamIDAndNothingIsLostOrDoubled() throws {
        let sim = try SimulatorFixture(faults: MockFaultScript(goawayAfterRequests: 7, goawayReason: "ServiceUnavailable"))
        defer { sim.stop() }
        let events = EventLog()
        let pool = try sim.makePool(events: events)
        let count = 40
        let ids = (0..<count).map { _ in lowerUUID() }
        let requests = ids.indices.map { sim.request(token: deviceToken("ab", $0), apnsID: ids[$0]) }

        // Round 1: no resends. The pool must not resend by itself either.
        let first = AttemptLedger(expected: count)
        try sim.loop.submit { sendAll(requests, on: pool, into: first) }
        #expect(first.wait(seconds: Self.waitSeconds), "not every request completed")
        usleep(200_000)  // a second completion, if any, would show up here
        #expect(first.everyAttemptCompletedOnce)
        let results = first.finalResults
        let answered = results.compactMapValues { try? $0.get() }
        let failures = results.compactMapValues { if case let .failure(e) = $0 { e } else { nil } }
        #expect(answered.count + failures.count == count)
        #expect(!answered.isEmpty)
        #expect(!failures.isEmpty, "a GOAWAY after 7 of 40 requests must leave some unprocessed")
        #expect(answered.values.allSatisfy { $0.status == 200 })
        #expect(failures.values.allSatisfy { $0.isGoawayUnprocessed && $0.safeToResend }, "\(failures.values)")
        #expect(failures.values.allSatisfy { $0.goawayReason == "ServiceUnavailable" }, "\(failures.values)")
        // Streams above the last-stream-id failed; answered ones are at or below it on their connection.
        for error in failures.values {
            if case let .goawayUnprocessed(last, code, _) = error {
                #expect(last > 0)
                #expect(code == 0)
            }
        }
        // What was answered is exactly what the simulator accepted: nothing more was processed (or resent).
        let accepted = sim.acceptedIDs()
        #expect(Set(accepted.keys) == Set(answered.keys.map { ids[$0] }))
        #expect(accepted.values.allSatisfy { $0 == 1 })
        for (index, response) in answered { #expect(response.header("apns-id") == ids[index]) }
        #expect(sim.server.stats().goawaysSent >= 1)
        #expect(events.all.contains { if case .connection(.goaway(_, _, _, "ServiceUnavailable")) = $0 { true } else { false } })

        // Round 2: the caller resends the unprocessed ones until delivered (each new connection takes 7 more):
        // in the end every notification was accepted exactly once.
        let again = failures.keys.sorted()
        let second = AttemptLedger(expected: again.count)
        try sim.loop.submit { sendAll(again.map { requests[$0] }, on: pool, into: second, maxAttempts: 50) }
        #expect(second.wait(seconds: Self.waitSeconds), "not every resent request completed")
        usleep(200_000)
        #expect(second.everyAttemptCompletedOnce)
        #expect(second.finalResults.values.allSatisfy { (try? $0.get())?.status == 200 }, "\(second.allFailures)")
        #expect(second.allFailures.allSatisfy { $0.isGoawayUnprocessed }, "\(second.allFailures)")
        let finalAccepted = sim.acceptedIDs()
        #expect(finalAccepted.count == count)
        #expect(Set(finalAccepted.keys) == Set(ids))
        #expect(finalAccepted.values.allSatisfy { $0 == 1 }, "a notification was accepted twice")
    }

    @Test func goawayFateRefusesItsOwnStreamAndLaterOnesWithTheReason() throws {
        // Token prefix "ff" makes the simulator send GOAWAY(IdleTimeout) with last-stream-id just below that request.
        let sim = try SimulatorFixture(faults: MockFaultScript(rules: [MockFaultRule(fate: .goaway, tokenPrefix: "ff", reason: "IdleTimeout")]))
        defer { sim.stop() }
        let pool = try sim.makePool()
        let warmIDs = (0..<10).map { _ in lowerUUID() }
        let warm = AttemptLedger(expected: 10)
        try sim.loop.submit {
            sendAll(warmIDs.indices.map { sim.request(token: deviceToken("ab", $0), apnsID: warmIDs[$0]) }, on: pool, into: warm)
        }
        #expect(warm.wait(seconds: Self.waitSeconds))
        #expect(warm.finalResults.values.allSatisfy { (try? $0.get())?.status == 200 })
        let firstConnection = try #require(try? warm.finalResults[0]?.get().connectionID)

        // The trigger goes first, 20 ordinary ones right behind it on the same connection.
        let ids = (0..<21).map { _ in lowerUUID() }
        let requests = [sim.request(token: deviceToken("ff", 0), apnsID: ids[0])]
            + (1..<21).map { sim.request(token: deviceToken("ab", 100 + $0), apnsID: ids[$0]) }
        let ledger = AttemptLedger(expected: 21)
        try sim.loop.submit { sendAll(requests, on: pool, into: ledger) }
        #expect(ledger.wait(seconds: Self.waitSeconds))
        usleep(200_000)
        #expect(ledger.everyAttemptCompletedOnce)
        let results = ledger.finalResults
        guard case let .failure(trigger)? = results[0] else {
            Issue.record("the GOAWAY trigger was answered: \(String(describing: results[0]))")
            return
        }
        #expect(trigger.goawayReason == "IdleTimeout", "\(trigger)")
        #expect(trigger.safeToResend)
        let answered = results.compactMapValues { try? $0.get() }
        let failed = results.compactMapValues { if case let .failure(e) = $0 { e } else { nil } }
        #expect(failed.values.allSatisfy { $0.goawayReason == "IdleTimeout" }, "\(failed.values)")
        // The last-stream-id is below the trigger: the connection's earlier streams were all answered.
        if case let .goawayUnprocessed(last, _, _) = trigger { #expect(last >= 19 && last % 2 == 1, "last-stream-id \(last)") }
        let accepted = sim.acceptedIDs()
        #expect(Set(accepted.keys) == Set(warmIDs).union(answered.keys.map { ids[$0] }))
        #expect(accepted[ids[0]] == nil)
        #expect(answered.values.allSatisfy { $0.connectionID == firstConnection })
        #expect(sim.server.stats().goawaysSent == 1)

        // The pool replaces the connection; a later request goes through on a newer one.
        let after = AttemptLedger(expected: 1)
        try sim.loop.submit { sendAll([sim.request(token: deviceToken("ab", 999), apnsID: lowerUUID())], on: pool, into: after) }
        #expect(after.wait(seconds: Self.waitSeconds))
        let response = try #require(try? after.finalResults[0]?.get())
        #expect(response.status == 200)
        #expect(response.connectionID > firstConnection)
    }

    // MARK: REFUSED_STREAM

    @Test func refusedStreamsAreSafeToResendAndEveryRequestEndsOnce() throws {
        let sim = try SimulatorFixture(faults: MockFaultScript(seed: 11, rules: [MockFaultRule(fate: .refuseStream, rate: 0.3)]))
        defer { sim.stop() }
        let pool = try sim.makePool()
        let count = 200
        let ids = (0..<count).map { _ in lowerUUID() }
        let requests = ids.indices.map { sim.request(token: deviceToken("cd", $0), apnsID: ids[$0]) }

        let first = AttemptLedger(expected: count)
        try sim.loop.submit { sendAll(requests, on: pool, into: first) }
        #expect(first.wait(seconds: Self.waitSeconds))
        usleep(200_000)
        #expect(first.everyAttemptCompletedOnce)
        let results = first.finalResults
        #expect(results.count == count)
        let refused = results.filter { if case .failure(.refusedStream) = $0.value { true } else { false } }
        let answered = results.compactMapValues { try? $0.get() }
        #expect(refused.count + answered.count == count, "\(first.allFailures.filter { $0 != .refusedStream })")
        #expect(refused.count > 20 && refused.count < 110, "about 30 % refused, got \(refused.count)")
        #expect(HTTP2ClientError.refusedStream.safeToResend)
        #expect(sim.server.stats().refusedStreams == refused.count)
        #expect(Set(sim.acceptedIDs().keys) == Set(answered.keys.map { ids[$0] }))

        // Resending the refused ones until answered delivers every notification exactly once.
        let again = refused.keys.sorted()
        let second = AttemptLedger(expected: again.count)
        try sim.loop.submit { sendAll(again.map { requests[$0] }, on: pool, into: second, maxAttempts: 40) }
        #expect(second.wait(seconds: Self.waitSeconds))
        usleep(200_000)
        #expect(second.everyAttemptCompletedOnce)
        #expect(second.allFailures.allSatisfy { $0 == .refusedStream })
        #expect(second.finalResults.values.allSatisfy { (try? $0.get())?.status == 200 })
        let accepted = sim.acceptedIDs()
        #expect(Set(accepted.keys) == Set(ids))
        #expect(accepted.values.allSatisfy { $0 == 1 })
        #expect(sim.server.stats().connectionsAccepted == 1, "refused streams must not cost the connection")
    }

    // MARK: changing SETTINGS_MAX_CONCURRENT_STREAMS

    @Test func followsTheSimulatorsChangingStreamLimit() throws {
        // 1 stream until the first valid token, then 50; back to 1 after every rejected push, up after the next 200.
        let faults = MockFaultScript(dropStreamsAfterRejection: true, rules: [MockFaultRule(fate: .otherTopic, tokenPrefix: "bad0")])
        let sim = try SimulatorFixture(faults: faults) { $0.maxConcurrentStreams = 50 }
        defer { sim.stop() }
        let events = EventLog()
        let pool = try sim.makePool(events: events)
        #expect(waitUntil(seconds: 30) { (try? sim.loop.submit { pool.value.liveConnections }) == 1 })
        #expect(try sim.loop.submit { pool.value.availableStreams } == 1, "before any token the simulator allows 1 stream")

        // A burst while the limit is 1: one stream goes out, the rest wait in the pool until the limit rises.
        var delivered: [String] = []
        func burst(_ size: Int, from base: Int) throws {
            let burstIDs = (0..<size).map { _ in lowerUUID() }
            let ledger = AttemptLedger(expected: size)
            let (inFlight, queued) = try sim.loop.submit { () -> (Int, Int) in
                sendAll(burstIDs.indices.map { sim.request(token: deviceToken("ab", base + $0), apnsID: burstIDs[$0]) }, on: pool, into: ledger)
                return (pool.value.inFlight, pool.value.queued)
            }
            #expect(inFlight == 1)
            #expect(queued == size - 1)
            #expect(ledger.wait(seconds: Self.waitSeconds))
            #expect(ledger.everyAttemptCompletedOnce)
            #expect(ledger.finalResults.values.allSatisfy { (try? $0.get())?.status == 200 }, "\(ledger.allFailures)")
            delivered += burstIDs
        }
        try burst(100, from: 10_000)
        #expect(waitUntil(seconds: 30) { (try? sim.loop.submit { pool.value.availableStreams }) == 50 }, "the limit rose to 50")

        // One rejected push: the simulator drops the limit to 1 and the client follows.
        let rejected = AttemptLedger(expected: 1)
        try sim.loop.submit { sendAll([sim.request(token: deviceToken("bad0", 1), apnsID: lowerUUID())], on: pool, into: rejected) }
        #expect(rejected.wait(seconds: Self.waitSeconds))
        #expect((try? rejected.finalResults[0]?.get())?.status == 400)
        #expect(waitUntil(seconds: 30) { (try? sim.loop.submit { pool.value.availableStreams }) == 1 }, "the limit fell to 1")
        try burst(100, from: 20_000)

        // Mixed traffic: a rejection every 25 pushes, so the limit keeps falling and rising under load.
        let count = 600
        let ids = (0..<count).map { _ in lowerUUID() }
        let requests = ids.indices.map { index in
            sim.request(token: index % 25 == 24 ? deviceToken("bad0", index) : deviceToken("ab", index), apnsID: ids[index])
        }
        let ledger = AttemptLedger(expected: count)
        // Refused streams happen when the client opened a stream before it read the lowered limit: resend them.
        try sim.loop.submit { sendAll(requests, on: pool, into: ledger, maxAttempts: 20) { $0 == .refusedStream } }
        #expect(ledger.wait(seconds: Self.waitSeconds))
        usleep(200_000)
        #expect(ledger.everyAttemptCompletedOnce)
        let results = ledger.finalResults
        for (index, result) in results {
            let response = try? result.get()
            #expect(response?.status == (index % 25 == 24 ? 400 : 200), "request \(index): \(result)")
        }
        #expect(ledger.allFailures.allSatisfy { $0 == .refusedStream }, "\(ledger.allFailures.filter { $0 != .refusedStream })")

        let maxOpen = try sim.loop.submit { pool.value.maxObservedOpenStreams }
        let stats = sim.server.stats()
        #expect(maxOpen <= 50)
        #expect(maxOpen > 1, "the client never used the raised limit")
        #expect(stats.maxConcurrentStreamsInUse <= 50)
        #expect(stats.maxConcurrentStreamsInUse > 1)
        // Exceeding an acknowledged limit is a connection error in nghttp2: one connection served everything.
        #expect(stats.connectionsAccepted == 1)
        #expect(stats.byReason["DeviceTokenNotForTopic"] == count / 25 + 1)
        #expect(Set(sim.acceptedIDs().keys) == Set(ids.indices.filter { $0 % 25 != 24 }.map { ids[$0] } + delivered))
        #expect(!events.all.contains { if case .connection(.closed) = $0 { true } else { false } })
    }

    // MARK: silence

    /// Issue 30, item 12: a request's timeout ran from `send`, so one that waited most of it for a stream (or a
    /// connection) was written with no time left, timed out in flight (outcome unknown) just before the server's
    /// answer came, and was sent again: delivered twice. The answer's time now starts when the request is
    /// written, and one whose queue time is over is never written at all.
    @Test func timeWaitingForAStreamIsNotTakenFromTheServersTimeToAnswer() throws {
        let sim = try SimulatorFixture(faults: MockFaultScript(latencyMs: MockLatency(milliseconds: 400))) { $0.maxConcurrentStreams = 1 }
        defer { sim.stop() }
        let pool = try sim.makePool()
        // The connection first: on a loaded machine its handshake alone can take the 300 ms the second request
        // has to spare, and what is under test is the wait for a stream.
        let warm = AttemptLedger(expected: 1), warmID = lowerUUID()
        try sim.loop.submit { sendAll([sim.request(token: deviceToken("ab", 500), apnsID: warmID)], on: pool, into: warm) }
        #expect(warm.wait(seconds: Self.waitSeconds))
        #expect((try? warm.finalResults[0]?.get())?.status == 200)
        let ids = (0..<3).map { _ in lowerUUID() }
        var requests = ids.enumerated().map { sim.request(token: deviceToken("ab", $0.offset), apnsID: $0.element, timeoutMilliseconds: 700) }
        // The third may wait 300 ms for its stream: the two before it hold the only one for 800 ms.
        requests[2].queueTimeoutMilliseconds = 300
        let ledger = AttemptLedger(expected: requests.count)
        try sim.loop.submit { [requests] in sendAll(requests, on: pool, into: ledger) }
        #expect(ledger.wait(seconds: Self.waitSeconds))
        let results = ledger.finalResults
        #expect((try? results[0]?.get())?.status == 200)
        #expect((try? results[1]?.get())?.status == 200, "waited 400 ms for the stream, then had its full 700 ms: \(String(describing: results[1]))")
        guard case .failure(let error)? = results[2] else { Issue.record("the third got \(String(describing: results[2]))"); return }
        #expect(error == .queueTimedOut && error.safeToResend)
        usleep(600_000)  // anything written would have been answered by now
        #expect(sim.acceptedIDs() == [warmID: 1, ids[0]: 1, ids[1]: 1], "the one that ran out of queue time never reached the server")
    }

    @Test func aSilentStreamTimesOutAndTheConnectionLivesOn() throws {
        let sim = try SimulatorFixture(faults: MockFaultScript(rules: [MockFaultRule(fate: .silence, tokenPrefix: "51")]))
        defer { sim.stop() }
        let pool = try sim.makePool()
        let silentCount = 5
        let requests = (0..<silentCount).map { sim.request(token: deviceToken("51", $0), apnsID: lowerUUID(), timeoutMilliseconds: 1_500) }
            + (0..<20).map { sim.request(token: deviceToken("ab", $0), apnsID: lowerUUID()) }
        // One ordinary push first so the simulator raises its stream limit above 1.
        let warm = AttemptLedger(expected: 1)
        try sim.loop.submit { sendAll([sim.request(token: deviceToken("ab", 500), apnsID: lowerUUID())], on: pool, into: warm) }
        #expect(warm.wait(seconds: Self.waitSeconds))
        let connection = try #require(try? warm.finalResults[0]?.get().connectionID)

        let ledger = AttemptLedger(expected: requests.count)
        try sim.loop.submit { sendAll(requests, on: pool, into: ledger) }
        #expect(ledger.wait(seconds: Self.waitSeconds))
        usleep(300_000)
        #expect(ledger.everyAttemptCompletedOnce)
        let results = ledger.finalResults
        for index in 0..<silentCount {
            guard case .failure(let error)? = results[index] else {
                Issue.record("silent request \(index) got \(String(describing: results[index]))")
                continue
            }
            #expect(error == .timedOut)
            #expect(!error.safeToResend, "a timed-out request may have been processed")
        }
        for index in silentCount..<requests.count { #expect((try? results[index]?.get())?.status == 200) }
        #expect(sim.server.stats().silencedRequests == silentCount)

        // The cancelled streams freed their slots; the same connection keeps working.
        let later = AttemptLedger(expected: 5)
        try sim.loop.submit {
            sendAll((0..<5).map { sim.request(token: deviceToken("ab", 600 + $0), apnsID: lowerUUID()) }, on: pool, into: later)
        }
        #expect(later.wait(seconds: Self.waitSeconds))
        #expect(later.finalResults.values.allSatisfy { (try? $0.get()).map { $0.status == 200 && $0.connectionID == connection } ?? false })
        #expect(try sim.loop.submit { pool.value.inFlight } == 0)
    }

    /// Found by the fault suite: a half-open connection (a black hole on the path) swallowed every request until
    /// the idle PING, an hour later with the default `ping_idle_seconds`, so resends timed out on it until their
    /// attempts ran out. A request that times out with nothing read since it went out now sends a PING at once.
    @Test func aTimeoutOnASilentConnectionSendsAPINGAtOnceAndTheDeadConnectionIsReplaced() throws {
        let sim = try SimulatorFixture(faults: MockFaultScript(silenceAfterRequests: 3))
        defer { sim.stop() }
        let options = HTTP2ConnectionOptions(pingIdleMilliseconds: 3_600_000, pingTimeoutMilliseconds: 1_500)
        let events = EventLog()
        let pool = try sim.makePool(connection: options, events: events)
        let count = 6
        let requests = (0..<count).map { sim.request(token: deviceToken("ab", 700 + $0), apnsID: lowerUUID(), timeoutMilliseconds: 1_000) }
        let ledger = AttemptLedger(expected: count)
        try sim.loop.submit { sendAll(requests, on: pool, into: ledger) }
        #expect(ledger.wait(seconds: Self.waitSeconds))
        let failures = ledger.finalResults.compactMapValues { if case let .failure(e) = $0 { e } else { nil } }
        #expect(failures.count == count - 3)
        #expect(failures.values.allSatisfy { $0 == .timedOut })
        // The PING goes unanswered: the connection is declared dead well before the hour-long idle PING.
        let closed = waitUntil(seconds: 20) {
            events.all.contains { if case .connection(.closed(_, .connectionLost(let why)?)) = $0 { why.contains("PING") } else { false } }
        }
        #expect(closed, "the silent connection was never replaced: \(events.all.suffix(5))")
        try sim.server.replaceFaults(MockFaultScript())
        let after = AttemptLedger(expected: 3)
        try sim.loop.submit {
            sendAll((0..<3).map { sim.request(token: deviceToken("ab", 800 + $0), apnsID: lowerUUID()) }, on: pool, into: after)
        }
        #expect(after.wait(seconds: Self.waitSeconds))
        #expect(after.finalResults.values.allSatisfy { (try? $0.get())?.status == 200 })
    }

    @Test func aSilentPeerFailsThePINGAndOpenStreamsEndAsConnectionLost() throws {
        let sim = try SimulatorFixture(faults: MockFaultScript(silenceAfterRequests: 3))
        defer { sim.stop() }
        // PING after 300 ms of quiet, dead after 3 s without ACK (long enough for a loaded machine to answer a live
        // peer's PING); request deadlines (5 min) are far beyond the test's waits, so only the PING can end the stuck streams.
        let options = HTTP2ConnectionOptions(pingIdleMilliseconds: 300, pingTimeoutMilliseconds: 3_000)
        let events = EventLog()
        let pool = try sim.makePool(connection: options, events: events)
        let count = 10
        let ids = (0..<count).map { _ in lowerUUID() }
        let requests = ids.indices.map { sim.request(token: deviceToken("ab", $0), apnsID: ids[$0], timeoutMilliseconds: 300_000) }
        let ledger = AttemptLedger(expected: count)
        try sim.loop.submit { sendAll(requests, on: pool, into: ledger) }
        #expect(ledger.wait(seconds: Self.waitSeconds), "a request hung on a silent connection")
        usleep(200_000)
        #expect(ledger.everyAttemptCompletedOnce)
        let results = ledger.finalResults
        let answered = results.compactMapValues { try? $0.get() }
        let failures = results.compactMapValues { if case let .failure(e) = $0 { e } else { nil } }
        #expect(answered.count == 3)
        #expect(failures.count == count - 3)
        for error in failures.values {
            #expect(error.isConnectionLost, "\(error)")
            #expect(!error.safeToResend)
            #expect(error.description.contains("PING"), "\(error)")
        }
        #expect(Set(sim.acceptedIDs().keys) == Set(answered.keys.map { ids[$0] }))
        #expect(events.all.contains { if case .connection(.closed(_, .connectionLost?)) = $0 { true } else { false } })

        // With the fault lifted, the pool's replacement connection delivers.
        try sim.server.replaceFaults(MockFaultScript())
        let after = AttemptLedger(expected: 5)
        try sim.loop.submit {
            sendAll((0..<5).map { sim.request(token: deviceToken("ab", 100 + $0), apnsID: lowerUUID()) }, on: pool, into: after)
        }
        #expect(after.wait(seconds: Self.waitSeconds))
        #expect(after.finalResults.values.allSatisfy { (try? $0.get())?.status == 200 }, "\(after.allFailures)")
    }

    // MARK: dropped connection

    @Test func anAbruptDropFailsOpenStreamsAsUnknownAndThePoolReconnects() throws {
        let sim = try SimulatorFixture(faults: MockFaultScript(dropAfterRequests: 5))
        defer { sim.stop() }
        let events = EventLog()
        let pool = try sim.makePool(events: events)
        let count = 30
        let ids = (0..<count).map { _ in lowerUUID() }
        let requests = ids.indices.map { sim.request(token: deviceToken("ab", $0), apnsID: ids[$0]) }
        let ledger = AttemptLedger(expected: count)
        try sim.loop.submit { sendAll(requests, on: pool, into: ledger) }
        #expect(ledger.wait(seconds: Self.waitSeconds))
        usleep(200_000)
        #expect(ledger.everyAttemptCompletedOnce)
        let results = ledger.finalResults
        let answered = results.compactMapValues { try? $0.get() }
        let failures = results.compactMapValues { if case let .failure(e) = $0 { e } else { nil } }
        #expect(!answered.isEmpty)
        #expect(!failures.isEmpty)
        #expect(answered.values.allSatisfy { $0.status == 200 })
        // Open streams: outcome unknown. Anything else must be a never-sent kind.
        #expect(failures.values.allSatisfy { $0.isConnectionLost || $0.safeToResend }, "\(failures.values)")
        #expect(failures.values.contains { $0.isConnectionLost })
        #expect(failures.values.filter(\.isConnectionLost).allSatisfy { $0.wasProcessedPossibly })
        // Everything answered was accepted; whatever the simulator accepted but never answered is among the
        // "outcome unknown" failures, never among the answered or the safe-to-resend ones.
        let accepted = Set(sim.acceptedIDs().keys)
        let answeredIDs = Set(answered.keys.map { ids[$0] })
        let unknownIDs = Set(failures.filter { $0.value.isConnectionLost }.keys.map { ids[$0] })
        #expect(answeredIDs.isSubset(of: accepted))
        #expect(accepted.subtracting(answeredIDs).isSubset(of: unknownIDs))
        #expect(sim.server.stats().connectionsDropped >= 1)
        let firstConnection = answered.values.map(\.connectionID).min() ?? 0

        // Later requests succeed on a reconnected connection.
        try sim.server.replaceFaults(MockFaultScript())
        let after = AttemptLedger(expected: 10)
        try sim.loop.submit {
            sendAll((0..<10).map { sim.request(token: deviceToken("ab", 200 + $0), apnsID: lowerUUID()) }, on: pool, into: after)
        }
        #expect(after.wait(seconds: Self.waitSeconds))
        #expect(after.everyAttemptCompletedOnce)
        let later = after.finalResults.values.compactMap { try? $0.get() }
        #expect(later.count == 10, "\(after.allFailures)")
        #expect(later.allSatisfy { $0.status == 200 && $0.connectionID > firstConnection })
        #expect(events.all.contains { if case .connection(.closed(_, .connectionLost?)) = $0 { true } else { false } })
        #expect(sim.server.stats().connectionsAccepted >= 2)
    }

    // MARK: everything at once

    @Test func aFlakyServiceNeverLosesOrDoublesANotification() throws {
        // Latency keeps streams below a GOAWAY's last-stream-id open while it arrives: they must still finish.
        let faults = MockFaultScript(seed: 3, latencyMs: MockLatency(min: 0, max: 30), goawayAfterRequests: 37, rules: [
            MockFaultRule(fate: .error, rate: 0.02, status: 500, reason: "InternalServerError"),
            MockFaultRule(fate: .refuseStream, rate: 0.05),
        ])
        let sim = try SimulatorFixture(faults: faults)
        defer { sim.stop() }
        let pool = try sim.makePool(connectionCount: 2)
        let count = 2_000
        let ids = (0..<count).map { _ in lowerUUID() }
        let requests = ids.indices.map { sim.request(token: deviceToken("ab", $0), apnsID: ids[$0]) }
        let ledger = AttemptLedger(expected: count)
        // The caller's part of the promise: resend what was certainly not processed, nothing else.
        try sim.loop.submit { sendAll(requests, on: pool, into: ledger, maxAttempts: 200) }
        #expect(ledger.wait(seconds: Self.waitSeconds))
        usleep(200_000)
        #expect(ledger.everyAttemptCompletedOnce)
        let failures = ledger.allFailures
        #expect(failures.allSatisfy { $0.safeToResend }, "\(failures.filter { !$0.safeToResend })")
        #expect(failures.contains(.refusedStream))
        #expect(failures.contains { $0.isGoawayUnprocessed })
        let final = ledger.finalResults
        let delivered = final.filter { (try? $0.value.get())?.status == 200 }.keys
        let serverErrors = final.filter { (try? $0.value.get())?.status == 500 }.keys
        #expect(delivered.count + serverErrors.count == count, "\(final.values.filter { (try? $0.get()) == nil })")
        #expect(!serverErrors.isEmpty)
        let accepted = sim.acceptedIDs()
        #expect(Set(accepted.keys) == Set(delivered.map { ids[$0] }))
        #expect(accepted.values.allSatisfy { $0 == 1 }, "a notification was accepted twice")
        #expect(sim.server.stats().goawaysSent >= 5)
        #expect(try sim.loop.submit { (pool.value.inFlight, pool.value.queued) } == (0, 0))
    }
}
