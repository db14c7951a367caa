import APNs
import PushCore
import RedisQueue
import Testing
@testable import Worker

/// The core's metrics agree with what it writes: one `herald_results_total` per result entry, by app and outcome,
/// answers by status and reason, resends by cause, latencies from the injected clock, pauses as gauges.
@Suite struct DeliveryMetricsTests {
    @Test func everyResultEntryIsCountedOnceByAppAndOutcomeWithAnswersResendsAndLatencies() throws {
        let rig = CoreRig()
        rig.start()
        let leases = (1...6).map { rig.job($0) } + [rig.job(7, app: "news"), rig.lease("not json")]
        rig.answerClaim(leases)
        rig.clock.advance(milliseconds: 30)
        let sends = rig.takeSends()
        try #require(sends.count == 2, "one probe per destination goes first")
        for job in sends { rig.answer(job, status: 200) }
        let rest = rig.takeSends()
        try #require(rest.count == 5)
        rig.clock.advance(milliseconds: 30)
        rig.answer(rest[0], status: 410, reason: "Unregistered")
        rig.answer(rest[1], status: 400, reason: "DeviceTokenNotForTopic")
        rig.answer(rest[2], status: 500, reason: "InternalServerError")
        rig.fail(rest[3], .outcomeUnknown)
        rig.answer(rest[4], status: 200)
        let resent = rig.takeSends()
        try #require(resent.count == 1)
        rig.answer(resent[0], status: 200)
        rig.recordAllKeepingResults()

        let values = rig.core.metrics.values
        var expected: [String: UInt64] = [:]
        for result in rig.results { expected["\(result.app ?? "unknown")/\(result.platform ?? "unknown")/\(result.outcome.rawValue)", default: 0] += 1 }
        var counted: [String: UInt64] = [:]
        for platform in MetricsSnapshot.jobPlatforms {
            for (app, name) in (CoreRig.apps.map(\.name) + ["unknown"]).enumerated() {
                for outcome in JobOutcome.allCases {
                    let n = values.jobs[values.jobIndex(platform, app, outcome)]
                    if n > 0 { counted["\(name)/\(platform?.rawValue ?? "unknown")/\(outcome.rawValue)"] = n }
                }
            }
        }
        #expect(counted == expected)
        #expect(counted["shop/apns/delivered"] == 3 && counted["news/apns/delivered"] == 1 && counted["unknown/unknown/rejected"] == 1,
                "the job that is not JSON names no platform: \(counted)")
        #expect(values.jobs(.tokenDropped) == 1 && values.jobs(.failed) == 1 && values.jobs(.retrying) == 1)

        let text = WorkerMetricsText.render(values)
        #expect(text.contains(#"herald_push_responses_total{platform="apns",status="200",reason=""} 4"#))
        #expect(text.contains(#"herald_push_responses_total{platform="apns",status="410",reason="Unregistered"} 1"#))
        #expect(text.contains(#"herald_push_transport_failures_total{platform="apns",kind="connection_lost"} 1"#))
        #expect(text.contains(#"herald_push_resends_total{platform="apns",cause="connection_lost"} 1"#))
        // Eight answers, each 30 ms after its send (the probes, then the five they released) but the resend's, at once.
        #expect(values.requestLatency[0].count == 8)
        #expect(values.requestLatency[0].sumNanos == 7 * 30_000_000)
        #expect(values.jobLatency[0].count == 6, "the terminal outcomes of sent jobs: 4 delivered, 1 dropped, 1 failed")
    }

    /// A rejected job counts under the platform its result entry names (one of each platform, none configured but
    /// APNs'); a job not readable as one names none and counts under `unknown`.
    @Test func aRejectedJobIsCountedUnderItsOwnPlatform() throws {
        let rig = CoreRig()
        rig.start()
        let others = Platform.allCases.filter { $0 != JobSpec().platform }
        try #require(!others.isEmpty)
        rig.answerClaim(others.map { rig.lease(#"{"id":"\#($0.rawValue)","platform":"\#($0.rawValue)","message":{},"subscription":{},"payload":{}}"#) } + [rig.lease("not json")])
        rig.recordAllKeepingResults()
        #expect(rig.results.map(\.outcome) == Array(repeating: .rejected, count: others.count + 1))
        #expect(others.allSatisfy { platform in rig.results.contains { $0.id == platform.rawValue && $0.platform == platform.rawValue } }, "\(rig.results)")
        #expect(rig.results.filter { $0.platform == nil }.count == 1, "the job that is not JSON names no platform")
        let values = rig.core.metrics.values
        for platform in MetricsSnapshot.jobPlatforms {
            let entries = rig.results.filter { $0.platform == platform?.rawValue }.count
            #expect(values.jobs[values.jobIndex(platform, CoreRig.apps.count, .rejected)] == UInt64(entries), "\(platform?.rawValue ?? "unknown")")
        }
    }

    @Test func aRefusedCredentialShowsAsAPausedDestinationAndCountsOnePause() throws {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([rig.job(1)])
        rig.answer(rig.takeSends()[0], status: 403, reason: "InvalidProviderToken")
        #expect(rig.core.pausedDestinations == [PausedDestination(app: "shop", environment: "production", kind: "credential")])
        #expect(rig.core.metrics.values.pauses == 1)
        let text = WorkerMetricsText.render(rig.core.metrics.values + MetricsSnapshot(appNames: CoreRig.apps.map(\.name)))
        #expect(text.contains("herald_destination_pauses_total 1"))
    }

    /// Two loops' pools of one destination are one line per remote address, their connections added up.
    @Test func connectionsPerRemoteAddressAreOneSeriesEachSummedOverLoops() throws {
        var a = MetricsSnapshot(appNames: ["shop"])
        var b = MetricsSnapshot(appNames: ["shop"])
        var poolA = PoolSnapshot(app: "shop", environment: "production")
        poolA.remotes = ["17.0.0.1:443": 1, "17.0.0.2:443": 1]
        var poolB = PoolSnapshot(app: "shop", environment: "production")
        poolB.remotes = ["17.0.0.2:443": 2, "[2620:149::1]:443": 1]
        a.pools = [poolA]
        b.pools = [poolB]
        let text = WorkerMetricsText.render(a + b)
        let lines = text.split(separator: "\n").filter { $0.hasPrefix("herald_pool_remote_connections{") }
        #expect(lines == [
            #"herald_pool_remote_connections{app="shop",environment="production",remote="17.0.0.1:443"} 1"#,
            #"herald_pool_remote_connections{app="shop",environment="production",remote="17.0.0.2:443"} 3"#,
            #"herald_pool_remote_connections{app="shop",environment="production",remote="[2620:149::1]:443"} 1"#,
        ], "\(lines)")
    }
}
