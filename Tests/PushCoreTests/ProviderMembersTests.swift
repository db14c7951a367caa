import APNs
import HeraldProviders
import ProviderKit
@testable import PushCore
import Testing

/// Jobs read as the worker reads them (the envelope, then their provider's members), for the behaviour the move of
/// the members into the providers had to keep, and the two it changed on purpose.
@Suite struct ProviderMembersTests {
    static let members = heraldProviders.jobMembers
    static let channel = "dHJhY2sgdGhlIGdhbWUh"

    private func read(_ text: String) throws(JobError) -> JobSpec { try heraldProviders.read(Array(text.utf8), table: Self.members) }

    private func error(_ text: String) -> JobError? {
        do { _ = try read(text); return nil } catch { return error }
    }

    @Test func anEscapedKeyIsItsMemberAndTwiceIsStillTwice() throws {
        let bytes = Array(#"{"token":"ab","payload":{},"push\u005ftype":"voip"}"#.utf8)
        let spec = try read(String(decoding: bytes, as: UTF8.self))
        #expect(try APNsProvider.readJob(bytes, spec: spec).pushType == .voip)
        #expect(error(#"{"token":"ab","payload":{},"push_type":"voip","push\u005ftype":"alert"}"#) == .duplicateField("push_type"))
        #expect(error(#"{"platform":"fcm","message":{"topic":"a"},"message":{"topic":"b"}}"#) == .duplicateField("message"),
                "a name two providers read is one member of the job")
    }

    @Test func tokensBesideASubscriptionAreRefusedForWebPushWithoutAPlatform() {
        #expect(error(#"{"tokens":["ab"],"subscription":{},"payload":"x"}"#)
                == .badTokens("\"tokens\" (multicast) is for APNs jobs; a Web Push job names its \"subscription\""))
    }

    @Test func aBroadcastNamingPushTypeNullKeepsTheDefaultThatTheValidatorRefuses() throws {
        let text = #"{"channel":"\#(Self.channel)","push_type":null,"payload":{}}"#
        let spec = try read(text)
        let apns = try APNsProvider.readJob(Array(text.utf8), spec: spec)
        #expect(apns.pushType == .alert, "named, even as null: not the broadcast's default")
        let n = apns.notification(spec, topic: "com.example.app", environment: .production, bundleID: "com.example.app")
        #expect(NotificationValidator.validate(n)?.reason == .invalidPushType)
        let unnamed = #"{"channel":"\#(Self.channel)","payload":{}}"#
        #expect(try APNsProvider.readJob(Array(unnamed.utf8), spec: read(unnamed)).pushType == .liveactivity)
    }

    /// Changed on purpose: a member only another provider reads is an unknown field to this job, whatever its value.
    @Test func anotherProvidersMemberIsIgnoredWhateverItsValue() throws {
        for member in [#""priority":"x""#, #""environment":"development""#, #""push_type":"fax""#, #""channel":"not base64!""#,
                       #""subscriptions":5"#, #""urgency":7"#] {
            #expect(try read(#"{"platform":"fcm","message":{"topic":"news"},\#(member)}"#).platform == .fcm, "\(member)")
        }
        #expect(error(#"{"token":"ab","payload":{},"priority":"x"}"#) == .wrongType(field: "priority", expected: "an integer"),
                "its own provider still judges it")
    }

    /// A provider's own reading (`PushProvider.parse`, one provider's table, as its tests use) agrees with the
    /// worker's (every provider's table) on its jobs.
    @Test(arguments: [
        #"{"token":"ab","payload":{},"environment":"sandbox","push_type":"voip","priority":5}"#,
        #"{"channel":"dHJhY2sgdGhlIGdhbWUh","payload":{}}"#, #"{"token":"ab","payload":{},"environment":"x"}"#,
        #"{"message":{"topic":"news"}}"#, #"{"platform":"fcm","message":"x"}"#,
        #"{"platform":"hms","message":{"token":["t"]}}"#, #"{"platform":"hms","payload":{}}"#,
        #"{"subscription":{"endpoint":"https://x/"},"payload":"x","ttl":60}"#, #"{"platform":"webpush","payload":"x"}"#,
    ])
    func aProvidersOwnReadingAgreesWithTheWorkers(text: String) throws {
        let bytes = Array(text.utf8)
        let worker: Result<Platform, JobError>
        do throws(JobError) { worker = .success(try read(text).platform) } catch { worker = .failure(error) }
        let platform = (try? JobParser.parse(bytes, members: Self.members).platform) ?? .apns
        func own<P: PushProvider>(_: P.Type) -> Result<Platform, JobError> {
            do throws(JobError) { return .success(try P.parse(bytes).spec.platform) } catch { return .failure(error) }
        }
        #expect(own(heraldProviders.provider(for: platform)) == worker)
    }
}
