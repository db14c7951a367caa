import PushCore
import RedisQueue
import Testing
import WebPush
@testable import Worker

/// Web Push jobs of one app go to many push services: one that cannot be reached pauses its own origin's jobs
/// only (no attempt spent, nothing failed), while the app's jobs to the other services go on, and its jobs go
/// out again once it answers.
@Suite("Web Push pause per push service")
struct WebPushOriginPauseTests {
    static let origins = ["https://a.push.example", "https://b.push.example"]

    /// The Web Push app "web", allowed to send to both `origins`.
    static let app: Configuration.AppSettings = {
        var web = Configuration.AppSettings(name: "web", bundleID: "")
        web.webpush = WebPushAuth(vapidKey: String(repeating: "A", count: 42) + "Q", subject: "mailto:ops@example.com",
                                  policy: PushServicePolicy(hosts: ["a.push.example", "b.push.example"]))
        return web
    }()

    static func rig() -> CoreRig {
        CoreRig(apps: CoreRig.apps + [app]) {
            $0.retry.outagePauseSeconds = 1
            $0.retry.outagePauseCapSeconds = 1
        }
    }

    /// A Web Push job to `origin` (RFC 8291's example subscriber keys).
    static func job(_ rig: CoreRig, _ n: Int, origin: Int) -> Lease {
        let subscription = #"{"endpoint":"\#(origins[origin])/push/\#(n)","keys":{"p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4","auth":"BTBZMqHH6r4Tts7J_aSIgg"}}"#
        return rig.lease(#"{"id":"w\#(n)","app":"web","platform":"webpush","subscription":\#(subscription),"payload":"hi","ttl":60}"#)
    }

    static func nextClaim(_ rig: CoreRig) {
        for _ in 0..<50 where rig.claims.isEmpty { rig.advance(milliseconds: 100) }
    }

    @Test func anUnreachablePushServicePausesItsOwnJobsOnlyAndTheyGoOutOnceItIsBack() throws {
        let rig = Self.rig()
        rig.start()
        rig.answerClaim([Self.job(rig, 1, origin: 0), Self.job(rig, 2, origin: 1)])
        let first = rig.takeSends()
        #expect(Set(first.map(\.destination.route)) == Set(Self.origins), "one probe per push service")
        rig.fail(try #require(first.first { $0.id == "w1" }), .connectionFailed("connect: Connection refused"))
        rig.core.answered(try #require(first.first { $0.id == "w2" }), PushOutcome(result: .answer(WebPushResponse(status: 201)), connectionID: 1))
        rig.drain()
        #expect(rig.core.pausedDestinations == [PausedDestination(app: "web", environment: Self.origins[0], kind: "outage")])

        // While a.push.example is paused: its job waits, b.push.example's go out.
        Self.nextClaim(rig)
        rig.answerClaim([Self.job(rig, 3, origin: 0), Self.job(rig, 4, origin: 1), Self.job(rig, 5, origin: 1)])
        let during = rig.takeSends()
        #expect(during.map(\.id) == ["w4", "w5"])
        for job in during { rig.core.answered(job, PushOutcome(result: .answer(WebPushResponse(status: 201)), connectionID: 1)) }
        rig.drain()
        rig.recordAllKeepingResults()
        let byID = Dictionary(grouping: rig.results, by: \.id)
        #expect(["w2", "w4", "w5"].allSatisfy { byID[$0]?.map(\.outcome) == [.delivered] })
        for id in ["w1", "w3"] {
            #expect(byID[id]?.map(\.outcome) == [.retrying], "\(id)")
            #expect(byID[id]?.first?.attempt == 1, "no attempt spent on \(id)")
            #expect(byID[id]?.first?.reason?.hasPrefix("Unavailable: ConnectionFailed") == true, "\(String(describing: byID[id]?.first?.reason))")
        }
        #expect(rig.core.counters.failed == 0)

        // The pause ends; the service stays down in the gauges until an answer proves it reachable (issue 52); it
        // answers the probe, and its waiting jobs are delivered.
        rig.advance(milliseconds: 1_100)
        #expect(rig.core.pausedDestinations == [PausedDestination(app: "web", environment: Self.origins[0], kind: "outage")])
        Self.nextClaim(rig)
        rig.answerClaim([Self.job(rig, 1, origin: 0), Self.job(rig, 3, origin: 0)])
        let probe = rig.takeSends()
        #expect(probe.map(\.id) == ["w1"], "one probe first")
        #expect(rig.connects.contains { $0.route == Self.origins[0] }, "the probe's pool reconnects at once")
        rig.core.answered(probe[0], PushOutcome(result: .answer(WebPushResponse(status: 201)), connectionID: 2))
        rig.drain()
        #expect(rig.core.pausedDestinations.isEmpty, "the probe's answer proves it reachable")
        let rest = rig.takeSends()
        #expect(rest.map(\.id) == ["w3"])
        rig.core.answered(rest[0], PushOutcome(result: .answer(WebPushResponse(status: 201)), connectionID: 2))
        rig.drain()
        rig.results.removeAll()
        rig.recordAllKeepingResults()
        #expect(rig.results.map(\.outcome) == [.delivered, .delivered])
        #expect(rig.core.counters.failed == 0)
    }
}
