import Expo
import ProviderKit
import PushCore
import Testing

/// An Expo job's rules before anything is sent: the token's shape (dead-lettered as unreadable), the payload's
/// members and size (rejected with Expo's words), and `to` as a list fanned out one job per token.
@Suite struct ExpoJobTests {
    private func read(_ text: String) throws(JobError) -> (JobSpec, ExpoJob) { try ExpoProvider.parse(Array(text.utf8)) }

    private func admit(_ text: String) throws -> AdmittedJob {
        let (spec, job) = try read(text)
        var app = Configuration.AppSettings(name: "rn", bundleID: "")
        app.expo = ExpoAuth(accessTokenFile: "/t")
        return try ExpoProvider.admit(job: Array(text.utf8), spec: spec, read: job, app: app, index: 3)
    }

    @Test func tokensAreCheckedForExposShape() throws {
        for good in ["ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]", "ExpoPushToken[abc-123_Z]"] { #expect(ExpoPushToken.isValid(good), "\(good)") }
        for bad in ["", "ExponentPushToken[]", "ExponentPushToken[x", "ExpoPushToken[a]b", "7b1f00aa", "ExponentPushToken[a\"b]",
                    "ExponentPushToken[a b]", "ExponentPushToken[" + String(repeating: "a", count: 300) + "]"] {
            #expect(!ExpoPushToken.isValid(bad), "\(bad)")
        }
        #expect(throws: JobError.self) { _ = try read(#"{"platform":"expo","to":"not-a-token","payload":{}}"#) }
        #expect(throws: JobError.self) { _ = try read(#"{"platform":"expo","payload":{"title":"x"}}"#) }
        #expect(throws: JobError.self) { _ = try read(#"{"platform":"expo","to":"ExpoPushToken[a]","payload":"text"}"#) }
        #expect(throws: JobError.self) { _ = try read(#"{"platform":"expo","to":["ExpoPushToken[a]",7],"payload":{}}"#) }
    }

    @Test func thePayloadIsExposMessageWithoutTo() throws {
        let job = try admit(#"{"platform":"expo","to":"ExpoPushToken[a]","payload":{"title":"t","body":"b","data":{"k":1},"sound":"default","badge":2,"ttl":60,"expiration":1900000000,"priority":"high","channelId":"c","categoryId":"k","subtitle":"s","mutableContent":true}}"#)
        #expect(job.notification.deviceToken == "ExpoPushToken[a]" && job.destination.platform == .expo && job.destination.app == 3)
        #expect(job.multicast == nil)
        for (payload, reason) in [(#"{"to":"ExpoPushToken[b]"}"#, "BadMessage: \"to\" belongs"), (#"{"titel":"t"}"#, "BadMessage: unknown member"),
                                  (#"{"badge":"2"}"#, "BadMessage: \"badge\" has the wrong type"), (#"{"priority":"urgent"}"#, "BadMessage: \"priority\""),
                                  (#"{"body":""# + String(repeating: "x", count: 4100) + #""}"#, "MessageTooBig")] {
            do {
                _ = try admit(#"{"platform":"expo","to":"ExpoPushToken[a]","payload":"# + payload + "}")
                Issue.record("\(payload) was admitted")
            } catch let refusal as AdmissionRefusal {
                #expect(refusal.reason.hasPrefix(reason), "\(refusal.reason)")
            }
        }
    }

    @Test func aListInToFansOutOneJobPerTokenEachOnce() throws {
        let text = #"{"id":"m","platform":"expo","to":["ExpoPushToken[a]","ExpoPushToken[b]","ExpoPushToken[a]"],"payload":{"body":"x"}}"#
        let job = try admit(text)
        let multicast = try #require(job.multicast)
        #expect(multicast.tokens == ["\"ExpoPushToken[a]\"", "\"ExpoPushToken[b]\""])
        let child = String(decoding: multicast.jobPrefix + Array(multicast.tokens[1].utf8) + multicast.jobSuffix, as: UTF8.self)
        #expect(child == #"{"id":"m","platform":"expo","to":"ExpoPushToken[b]","payload":{"body":"x"}}"#)
        let (_, read) = try self.read(child)
        #expect(read.tokens == ["ExpoPushToken[b]"])
    }

    @Test func aMessageIsThePayloadWithItsTo() {
        #expect(ExpoSender.message(token: "ExpoPushToken[a]", payload: Array(#"{"title":"t"}"#.utf8)) == Array(#"{"to":"ExpoPushToken[a]","title":"t"}"#.utf8))
        #expect(ExpoSender.message(token: "ExpoPushToken[a]", payload: Array(" { } ".utf8)) == Array(#"{"to":"ExpoPushToken[a]"}"#.utf8))
    }
}
