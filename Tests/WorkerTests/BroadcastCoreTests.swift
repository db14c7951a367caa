import APNs
import PushCore
import RedisQueue
import Testing
@testable import Worker

/// Broadcast jobs in the delivery core: the same path as device pushes, with the channel in place of the token.
@Suite struct BroadcastCoreTests {
    static let channel = "dHN0LXNyY2gtY2hubA=="

    func broadcast(_ rig: CoreRig, _ id: String, extra: String = "") -> Lease {
        rig.lease(#"{"id":"\#(id)","app":"news","channel":"\#(Self.channel)","payload":{"aps":{"event":"update"}}\#(extra)}"#)
    }

    @Test func aBroadcastGoesToItsAppsBundleAndAGoneChannelIsDropped() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([broadcast(rig, "b1"), broadcast(rig, "b2"), rig.job(3, app: "news")])
        let sends = rig.takeSends()
        #expect(sends.count == 1, "the first send of a destination is its probe")
        let probe = sends[0]
        #expect(probe.notification.target == .channel(id: Self.channel, bundleID: "com.example.news"))
        #expect(probe.notification.path == "/4/broadcasts/apps/com.example.news")
        #expect(probe.notification.pushType == .liveactivity)
        rig.answer(probe, status: 200)
        let rest = rig.takeSends()
        #expect(rest.count == 2, "the device push shares the destination (app and environment) with the broadcasts")
        for job in rest {
            rig.answer(job, status: job.notification.isBroadcast ? 400 : 200, reason: job.notification.isBroadcast ? "ChannelNotRegistered" : nil)
        }
        rig.advance(milliseconds: 10)
        let completions = rig.batches.flatMap(\.completions)
        let byID = Dictionary(uniqueKeysWithValues: completions.compactMap { c in c.result.map { ($0.id, c) } })
        #expect(byID["b1"]?.result?.outcome == .delivered)
        #expect(byID["b1"]?.result?.channel == Self.channel)
        #expect(byID["b1"]?.result?.token == nil)
        #expect(byID["b1"]?.result?.topic == "com.example.news")
        #expect(byID["b2"]?.result?.outcome == .channelDropped)
        #expect(byID["b2"]?.result?.reason == "ChannelNotRegistered")
        #expect(byID["b2"]?.droppedChannel == DroppedChannel(channel: Self.channel, bundleID: "com.example.news", environment: "production",
                                                             reason: "ChannelNotRegistered"))
        #expect(byID["b2"]?.droppedToken == nil && byID["b2"]?.retry == nil)
        #expect(byID["j3"]?.result?.outcome == .delivered && byID["j3"]?.droppedChannel == nil)
        #expect(rig.core.counters.channelsDropped == 1 && rig.core.counters.delivered == 2)
    }

    @Test func broadcastConfigurationErrorsFailTheJobWithoutPausingTheApp() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([broadcast(rig, "b1"), rig.job(2, app: "news")])
        let probe = rig.takeSends()[0]
        #expect(probe.notification.isBroadcast)
        rig.answer(probe, status: 400, reason: "FeatureNotEnabled")
        // The app's device push still goes out: FeatureNotEnabled is about broadcasts only.
        let next = rig.takeSends()
        #expect(next.count == 1 && !(next.first?.notification.isBroadcast ?? true))
        if let job = next.first { rig.answer(job, status: 200) }
        rig.advance(milliseconds: 10)
        let results = rig.batches.flatMap(\.completions).compactMap(\.result)
        #expect(results.first { $0.id == "b1" }.map { $0.outcome == .failed && $0.reason == "FeatureNotEnabled" } == true)
        #expect(results.first { $0.id == "j2" }?.outcome == .delivered)
        #expect(rig.reloads.isEmpty)
    }

    @Test func broadcastsAppleWouldRefuseAreRejectedLocally() {
        let rig = CoreRig()
        rig.start()
        rig.answerClaim([broadcast(rig, "b1", extra: #","push_type":"alert""#),
                         rig.lease(#"{"id":"b2","app":"news","channel":"***","payload":{}}"#)])
        #expect(rig.sends.isEmpty)
        rig.advance(milliseconds: 10)
        let results = rig.batches.flatMap(\.completions).compactMap(\.result)
        #expect(results.map(\.outcome) == [.rejected, .rejected])
        #expect(results[0].reason?.hasPrefix("InvalidPushType") == true, "\(results[0].reason ?? "")")
        #expect(results[0].channel == Self.channel)
        #expect(results[1].reason?.hasPrefix("bad_channel") == true, "\(results[1].reason ?? "")")
    }
}
