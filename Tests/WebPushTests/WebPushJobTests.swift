import PushCore
import Testing
@testable import WebPush

/// `"platform": "webpush"` jobs: read by the job parser, checked whole by `WebPushJob` before any request.
@Suite("Web Push jobs")
struct WebPushJobTests {
    static let subscription = String(decoding: SubscriptionTests.json(endpoint: "https://fcm.googleapis.com/fcm/send/abc"), as: UTF8.self)

    /// A job read as the worker reads a Web Push job: the envelope, then Web Push's members.
    static func job(_ fields: String) throws -> (spec: JobSpec, read: WebPushJobMembers) { try WebPushProvider.parse(Array("{\(fields)}".utf8)) }

    @Test func aSubscriptionJobIsWebPushWithItsFields() throws {
        let (spec, read) = try Self.job(#""id":"w1","platform":"webpush","subscription":\#(Self.subscription),"payload":"hi ✓","ttl":60,"urgency":"high","topic":"news""#)
        #expect(spec.platform == .webpush && spec.platformGiven)
        #expect(read.payload == Array("hi ✓".utf8), "a string payload is its text")
        #expect(read.ttl == 60 && read.urgency == "high" && spec.topic == "news")
        #expect(read.subscription == Array(Self.subscription.utf8))
        let message = try WebPushJob.message(read, topic: spec.topic, policy: PushServicePolicy()).get()
        #expect(message.urgency == .high && message.ttl == 60 && message.topic == "news")
        let notification = read.notification(message, expiration: spec.expiration)
        #expect(notification.deviceToken == "https://fcm.googleapis.com/fcm/send/abc")
        #expect(notification.platform == .webpush)
        #expect(try notification.webPushMessage() == message)
    }

    @Test func theShapeAloneMakesAWebPushJobAndAJSONPayloadKeepsItsBytes() throws {
        let (spec, read) = try Self.job(#""subscription":\#(Self.subscription),"payload":{"title":"x", "n":[1,2]}"#)
        #expect(spec.platform == .webpush && !spec.platformGiven)
        #expect(read.payload == Array(#"{"title":"x", "n":[1,2]}"#.utf8))
    }

    @Test func subscriptionsFanOutIntoOneJobEachWithTheirBytes() throws {
        let other = Self.subscription.replacingOccurrences(of: "/abc", with: "/def")
        let bytes = Array(#"{"id":"m","subscriptions":[\#(Self.subscription), \#(other),\#(Self.subscription)],"payload":"x"}"#.utf8)
        let (spec, read) = try WebPushProvider.parse(bytes)
        #expect(spec.platform == .webpush)
        #expect(read.uniqueSubscriptions == [Self.subscription, other], "a subscription listed twice is sent once")
        let parts = try #require(read.subscriptionJobParts(of: bytes))
        let child = parts.prefix + Array(other.utf8) + parts.suffix
        let (childSpec, childRead) = try WebPushProvider.parse(child)
        #expect(childRead.subscription == Array(other.utf8))
        #expect(childRead.subscriptions == nil && childSpec.id == "m" && childRead.payload == Array("x".utf8))
        #expect(throws: JobError.badTokens("give either \"subscription\" or \"subscriptions\", not both")) {
            try Self.job(#""subscription":\#(Self.subscription),"subscriptions":[\#(Self.subscription)],"payload":"x""#)
        }
        #expect(throws: JobError.badTokens("subscriptions[0] is not a JSON object")) { try Self.job(#""subscriptions":["x"],"payload":"x""#) }
        #expect(throws: JobError.badTokens("\"subscriptions\" is empty")) { try Self.job(#""subscriptions":[],"payload":"x""#) }
    }

    @Test func badWebPushJobsAreRefusedWithTheirReason() throws {
        #expect(throws: JobError.missingSubscription) { try Self.job(#""platform":"webpush","payload":"x""#) }
        #expect(throws: JobError.subscriptionNotAnObject) { try Self.job(#""platform":"webpush","subscription":"https://x","payload":"x""#) }
        #expect(throws: JobError.missingPayload) { try Self.job(#""platform":"webpush","subscription":\#(Self.subscription)"#) }
        #expect(throws: JobError.self) { try Self.job(#""platform":"webpush","tokens":["aa"],"subscription":\#(Self.subscription),"payload":"x""#) }

        func reason(_ fields: String, policy: PushServicePolicy = PushServicePolicy()) throws -> String {
            let (spec, read) = try Self.job(fields)
            guard case .failure(let error) = WebPushJob.message(read, topic: spec.topic, policy: policy) else { return "accepted" }
            return error.description
        }
        #expect(try reason(#""subscription":\#(Self.subscription),"payload":"x","urgency":"urgent""#).hasPrefix("BadUrgency"))
        #expect(try reason(#""subscription":\#(Self.subscription),"payload":"\#(String(repeating: "a", count: 3994))""#).hasPrefix("PayloadTooLarge"))
        #expect(try reason(#""subscription":\#(Self.subscription),"payload":"x","topic":"a b""#).hasPrefix("BadMessage"))
        // A `ttl` out of range is the provider's `BadMessage`, as docs/job-format.md says, not the parser's `out_of_range`.
        #expect(try reason(#""subscription":\#(Self.subscription),"payload":"x","ttl":-1"#) == "BadMessage: \"ttl\" is -1; expected 0 to 2419200 seconds")
        #expect(try reason(#""subscription":\#(Self.subscription),"payload":"x","ttl":2419201"#).hasPrefix("BadMessage"))
        #expect(try reason(#""subscription":{"endpoint":"http://x/","keys":{"p256dh":"a","auth":"b"}},"payload":"x""#).hasPrefix("BadSubscription"))
        #expect(try reason(#""subscription":\#(Self.subscription),"payload":"x""#, policy: PushServicePolicy(hosts: ["web.push.apple.com"]))
            .hasPrefix("EndpointRefused"))
        #expect(try reason(#""subscription":\#(Self.subscription),"payload":"\#(String(repeating: "a", count: 3993))""#) == "accepted")
    }
}
