import Foundation
import Testing
@testable import Simulators

/// Debian's curl sends the requests of Apple's broadcast pages (as the reference quotes them) to the simulator, which
/// must answer the way Apple describes: every channel-management call, a broadcast, and every error of the seed's
/// broadcast table that a request can provoke.
@Suite("broadcast and channels: curl against the simulator")
struct BroadcastCurlTests {
    static let bundle = "com.example.app"
    /// Apple's Live Activity update example.
    static let liveActivityPayload =
        #"{"aps":{"timestamp":1685952000,"event":"update","content-state":{"currentHealthLevel":0.941,"eventDescription":"Power Panda found a sword!"}}}"#

    static func management(_ fixture: Fixture, _ tail: String = "/channels", bundle: String = bundle) -> String {
        "\(fixture.url)/1/apps/\(bundle)\(tail)"
    }
    static func broadcastURL(_ fixture: Fixture, bundle: String = bundle) -> String { "\(fixture.url)/4/broadcasts/apps/\(bundle)" }

    /// curl's own headers taken off, so only the documented ones go out.
    static let bare = ["user-agent:", "accept:", "content-type:"]

    static func createBody(_ policy: Int) -> String { #"{"message-storage-policy":\#(policy),"push-type":"LiveActivity"}"# }

    static func broadcastHeaders(_ bearer: String, channel: String?, pushType: String? = "liveactivity", expiration: String? = "0",
                                 priority: String? = "10", requestID: String? = nil) -> [String] {
        var headers = bare
        if let channel { headers.append("apns-channel-id: \(channel)") }
        if let pushType { headers.append("apns-push-type: \(pushType)") }
        if let expiration { headers.append("apns-expiration: \(expiration)") }
        if let priority { headers.append("apns-priority: \(priority)") }
        if let requestID { headers.append("apns-request-id: \(requestID)") }
        headers.append("authorization: \(bearer)")
        return headers
    }

    @Test func channelLifecycleAndBroadcastAnswerAsAppleDescribes() throws {
        // The peer must really speak HTTP/2: Debian's curl is built with nghttp2.
        let version = try runProcess("/usr/bin/curl", ["-V"])
        let features = version.output.split(separator: "\n").first { $0.hasPrefix("Features:") } ?? ""
        try #require(features.split(separator: " ").contains("HTTP2"), "curl -V: \(version.output)")
        let fixture = try Fixture()
        defer { fixture.stop() }
        let bearer = fixture.defaultBearer
        let createID = "5b0b4e2a-6f1d-4c3e-9a8b-7c6d5e4f3a2b"
        let created = try curl(fixture, [(Self.management(fixture), "POST", Self.bare + ["apns-request-id: \(createID)", "authorization: \(bearer)"],
                                           Self.createBody(1))])[0]
        #expect(created.status == 201)
        #expect(created.headers["apns-request-id"] == createID)
        let channel = try #require(created.headers["apns-channel-id"])
        #expect(Data(base64Encoded: channel) != nil, "channel ID \(channel) is base64")
        #expect(created.body.isEmpty)

        let auth = ["authorization: \(bearer)"]
        let answers = try curl(fixture, [
            (Self.management(fixture), "GET", Self.bare + ["apns-channel-id: \(channel)"] + auth, nil),
            (Self.management(fixture, "/all-channels"), "GET", Self.bare + auth, nil),
            (Self.broadcastURL(fixture), "POST", Self.broadcastHeaders(bearer, channel: channel, requestID: createID), Self.liveActivityPayload),
            (Self.management(fixture), "DELETE", Self.bare + ["apns-channel-id: \(channel)"] + auth, nil),
            (Self.management(fixture), "GET", Self.bare + ["apns-channel-id: \(channel)"] + auth, nil),
            (Self.broadcastURL(fixture), "POST", Self.broadcastHeaders(bearer, channel: channel), Self.liveActivityPayload),
            (Self.management(fixture, "/all-channels"), "GET", Self.bare + auth, nil),
        ])
        #expect(answers.map(\.status) == [200, 200, 200, 204, 400, 400, 200])
        #expect(answers[0].json["message-storage-policy"] as? Int == 1)
        #expect(answers[0].json["push-type"] as? String == "LiveActivity")
        #expect(answers[1].json["channels"] as? [String] == [channel])
        #expect(answers[2].headers["apns-request-id"] == createID)
        #expect(answers[2].body.isEmpty)
        #expect(answers[3].body.isEmpty)
        #expect(answers[4].reason == "ChannelNotRegistered")
        #expect(answers[5].reason == "ChannelNotRegistered")
        #expect(answers[5].headers["apns-request-id"].map(RequestRules.isUUID) == true)
        #expect(answers[6].json["channels"] as? [String] == [])

        let received = fixture.server.broadcastsReceived()
        #expect(received.count == 1)
        #expect(received.first?.channel == channel)
        #expect(received.first?.bundleID == Self.bundle)
        #expect(received.first?.payloadBytes == Self.liveActivityPayload.utf8.count)
        let stats = fixture.server.stats()
        #expect(stats.broadcastsAccepted == 1)
        #expect(stats.channelsCreated == 1)
        #expect(stats.channelsDeleted == 1)
        #expect(fixture.server.channels().isEmpty)
    }

    /// Every reason of the seed's table that a request can provoke, through one connection (as a provider would).
    @Test func everyErrorOfApplesBroadcastTable() throws {
        let fixture = try Fixture { configuration in
            configuration.maxChannels = 2
            configuration.broadcastBundleIDs = [Self.bundle, "com.example.faults"]
        }
        defer { fixture.stop() }
        let bearer = fixture.defaultBearer
        let auth = ["authorization: \(bearer)"]
        // Two channels (the limit) per app: one storing, one not; two more to carry faults.
        let setup = try curl(fixture, [
            (Self.management(fixture), "POST", Self.bare + auth, Self.createBody(1)),
            (Self.management(fixture), "POST", Self.bare + auth, Self.createBody(0)),
            (Self.management(fixture, bundle: "com.example.faults"), "POST", Self.bare + auth, Self.createBody(1)),
            (Self.management(fixture, bundle: "com.example.faults"), "POST", Self.bare + auth, Self.createBody(1)),
        ])
        #expect(setup.map(\.status) == [201, 201, 201, 201])
        let ids = setup.compactMap { $0.headers["apns-channel-id"] }
        try #require(ids.count == 4)
        let (storing, noStorage, failing, throttled) = (ids[0], ids[1], ids[2], ids[3])
        try fixture.server.replaceFaults(MockFaultScript(rules: [
            MockFaultRule(fate: .error, token: failing, status: 500, reason: "InternalServerError"),
            MockFaultRule(fate: .throttle, token: throttled, limit: 0),
        ]))
        let big = #"{"aps":{"event":"update"},"x":""# + String(repeating: "x", count: 5200) + #""}"#
        let fits = #"{"aps":{"event":"update"},"x":""# + String(repeating: "x", count: 5000) + #""}"#
        let expired = try fixture.bearer(issuedAt: wallClockSeconds() - 7200)
        let another = try fixture.bearer(issuedAt: wallClockSeconds() - 5)
        let payload = Self.liveActivityPayload
        let b = Self.broadcastURL(fixture)
        let cases: [(String, (url: String, method: String, headers: [String], body: String?), Int, String?)] = [
            ("accepted", (b, "POST", Self.broadcastHeaders(bearer, channel: storing), payload), 200, nil),
            ("5120-byte limit, not 4096", (b, "POST", Self.broadcastHeaders(bearer, channel: storing), fits), 200, nil),
            ("not enabled", (Self.management(fixture, bundle: "com.example.other"), "POST", Self.bare + auth, Self.createBody(1)), 400, "FeatureNotEnabled"),
            ("not enabled (send)", (Self.broadcastURL(fixture, bundle: "com.example.other"), "POST", Self.broadcastHeaders(bearer, channel: storing), payload), 400, "FeatureNotEnabled"),
            ("no channel header", (b, "POST", Self.broadcastHeaders(bearer, channel: nil), payload), 400, "MissingChannelId"),
            ("no channel header (read)", (Self.management(fixture), "GET", Self.bare + auth, nil), 400, "MissingChannelId"),
            ("channel not base64", (b, "POST", Self.broadcastHeaders(bearer, channel: "not*base64!"), payload), 400, "BadChannelId"),
            ("channel too long", (b, "POST", Self.broadcastHeaders(bearer, channel: String(repeating: "QUFB", count: 40)), payload), 400, "BadChannelId"),
            ("unknown channel", (b, "POST", Self.broadcastHeaders(bearer, channel: "AAAAAAAAAAAAAAAAAAAAAA=="), payload), 400, "ChannelNotRegistered"),
            ("another app's channel", (b, "POST", Self.broadcastHeaders(bearer, channel: failing), payload), 400, "ChannelNotRegistered"),
            ("unknown attribute", (Self.management(fixture), "POST", Self.bare + auth, #"{"message-storage-policy":1,"push-type":"LiveActivity","colour":"red"}"#), 400, "BadRequestParams"),
            ("bad storage policy", (Self.management(fixture), "POST", Self.bare + auth, #"{"message-storage-policy":7,"push-type":"LiveActivity"}"#), 400, "BadRequestParams"),
            ("unparseable create", (Self.management(fixture), "POST", Self.bare + auth, #"{"message-storage-policy":"#), 400, "BadRequestPayload"),
            ("unparseable broadcast", (b, "POST", Self.broadcastHeaders(bearer, channel: storing), #"{"aps":"#), 400, "BadRequestPayload"),
            ("empty broadcast", (b, "POST", Self.broadcastHeaders(bearer, channel: storing), nil), 400, "PayloadEmpty"),
            ("empty create", (Self.management(fixture), "POST", Self.bare + auth, nil), 400, "PayloadEmpty"),
            ("bad request id", (b, "POST", Self.broadcastHeaders(bearer, channel: storing, requestID: "nope"), payload), 400, "BadMessageId"),
            ("no push type", (b, "POST", Self.broadcastHeaders(bearer, channel: storing, pushType: nil), payload), 400, "MissingPushType"),
            ("no push type (create)", (Self.management(fixture), "POST", Self.bare + auth, #"{"message-storage-policy":1}"#), 400, "MissingPushType"),
            ("alert push type", (b, "POST", Self.broadcastHeaders(bearer, channel: storing, pushType: "alert"), payload), 400, "InvalidPushType"),
            ("alert push type (create)", (Self.management(fixture), "POST", Self.bare + auth, #"{"message-storage-policy":1,"push-type":"Alert"}"#), 400, "InvalidPushType"),
            ("channel limit", (Self.management(fixture), "POST", Self.bare + auth, Self.createBody(1)), 400, "CannotCreateChannelConfig"),
            ("stored message on a no-storage channel", (b, "POST", Self.broadcastHeaders(bearer, channel: noStorage, expiration: "1999999999"), payload), 400, "BadExpirationDate"),
            ("0 on a no-storage channel", (b, "POST", Self.broadcastHeaders(bearer, channel: noStorage, expiration: "0"), payload), 200, nil),
            ("expiration not a number", (b, "POST", Self.broadcastHeaders(bearer, channel: storing, expiration: "soon"), payload), 400, "BadExpirationDate"),
            ("push type suffix on the bundle", (Self.broadcastURL(fixture, bundle: Self.bundle + ".push-type.liveactivity"), "POST", Self.broadcastHeaders(bearer, channel: storing), payload), 400, "TopicDisallowed"),
            ("priority 7", (b, "POST", Self.broadcastHeaders(bearer, channel: storing, priority: "7"), payload), 400, "BadPriority"),
            ("no token", (b, "POST", Self.bare + ["apns-channel-id: \(storing)", "apns-push-type: liveactivity"], payload), 403, "MissingProviderToken"),
            ("junk token", (b, "POST", Self.broadcastHeaders("bearer junk", channel: storing), payload), 403, "InvalidProviderToken"),
            ("old token", (b, "POST", Self.broadcastHeaders(expired, channel: storing), payload), 403, "ExpiredProviderToken"),
            ("token changed too soon", (Self.management(fixture, "/all-channels"), "GET", Self.bare + ["authorization: \(another)"], nil), 429, "TooManyProviderTokenUpdates"),
            ("no bundle in the path", (fixture.url + "/4/broadcasts/apps/", "POST", Self.broadcastHeaders(bearer, channel: storing), payload), 404, "BadPath"),
            ("unknown management path", (Self.management(fixture, "/channelz"), "GET", Self.bare + auth, nil), 404, "BadPath"),
            ("PUT a channel", (Self.management(fixture), "PUT", Self.bare + auth, Self.createBody(1)), 405, "MethodNotAllowed"),
            ("GET a broadcast", (b, "GET", Self.broadcastHeaders(bearer, channel: storing), nil), 405, "MethodNotAllowed"),
            ("too large", (b, "POST", Self.broadcastHeaders(bearer, channel: storing), big), 413, "PayloadTooLarge"),
            ("throttled (fault)", (Self.broadcastURL(fixture, bundle: "com.example.faults"), "POST", Self.broadcastHeaders(bearer, channel: throttled), payload), 429, "TooManyRequests"),
            ("server error (fault)", (Self.broadcastURL(fixture, bundle: "com.example.faults"), "POST", Self.broadcastHeaders(bearer, channel: failing), payload), 500, "InternalServerError"),
        ]
        let answers = try curl(fixture, cases.map(\.1))
        for (index, answer) in answers.enumerated() {
            let (name, _, status, reason) = cases[index]
            #expect(answer.status == status, "\(name)")
            #expect(answer.reason == reason, "\(name): \(answer.body)")
            #expect(answer.headers["apns-request-id"].map(RequestRules.isUUID) == true, "\(name)")
        }
        #expect(fixture.server.broadcastsReceived().count == 3)
        #expect(fixture.server.channels().map(\.broadcasts) == [2, 1, 0, 0])
    }

    /// With a management port, as at Apple, each port answers only its own API.
    @Test func aSeparateManagementPortAnswersOnlyChannelManagement() throws {
        let fixture = try Fixture { $0.managementPort = 0 }
        defer { fixture.stop() }
        let manage = "https://127.0.0.1:\(try #require(fixture.server.managementPort))"
        #expect(fixture.server.managementPort != fixture.server.port)
        let auth = Self.bare + ["authorization: \(fixture.defaultBearer)"]
        let created = try curl(fixture, [(manage + "/1/apps/\(Self.bundle)/channels", "POST", auth, Self.createBody(1))])[0]
        #expect(created.status == 201)
        let channel = try #require(created.headers["apns-channel-id"])
        let answers = try curl(fixture, [
            (Self.management(fixture), "POST", auth, Self.createBody(1)),
            (Self.broadcastURL(fixture), "POST", Self.broadcastHeaders(fixture.defaultBearer, channel: channel), Self.liveActivityPayload),
            (fixture.deviceURL(), "POST", try fixture.headers(), #"{"aps":{"alert":"hi"}}"#),
        ])
        #expect(answers.map(\.status) == [404, 200, 200])
        #expect(answers[0].reason == "BadPath")
        let wrongPort = try curl(fixture, [
            (manage + "/4/broadcasts/apps/\(Self.bundle)", "POST", Self.broadcastHeaders(fixture.defaultBearer, channel: channel), Self.liveActivityPayload),
            (manage + "/1/apps/\(Self.bundle)/all-channels", "GET", auth, nil),
        ])
        #expect(wrongPort.map(\.status) == [404, 200])
        #expect(wrongPort[1].json["channels"] as? [String] == [channel])
    }
}
