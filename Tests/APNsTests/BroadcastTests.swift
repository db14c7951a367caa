import APNs
import ProviderKit
import PushCore
import Testing

private let channel = "dHN0LXNyY2gtY2hubA=="
private let liveActivity = Array(#"{"aps":{"timestamp":1685952000,"event":"update","content-state":{"score":"1-0"}}}"#.utf8)

private func broadcast(
    channel: String = channel, bundleID: String = "com.example.app", type: PushType = .liveactivity, expiration: Int64? = nil,
    payload: [UInt8] = liveActivity
) -> PushNotification {
    PushNotification.apns(target: .channel(id: channel, bundleID: bundleID), topic: bundleID, environment: .sandbox, pushType: type,
                     expiration: expiration, payload: payload)
}

@Suite struct BroadcastTests {
    @Test(arguments: [channel, "AAAAAAAAAAAAAAAAAAAAAA==", "abc+/w==", "abcd", "abc", "ab"])
    func channelIDsAsAppleSendsThemAreValid(id: String) {
        #expect(Broadcast.isValidChannelID(id))
        #expect(NotificationValidator.validate(broadcast(channel: id)) == nil)
    }

    @Test(arguments: ["", "a", "not*base64!", "abc=d", "ab===", "abcde=", "====", "dHN0 LXNy", String(repeating: "QUFB", count: 33)])
    func malformedChannelIDsAreRefusedLikeApple(id: String) {
        #expect(!Broadcast.isValidChannelID(id))
        let expected: APNsReason = id.isEmpty ? .missingChannelId : .badChannelId
        #expect(NotificationValidator.validate(broadcast(channel: id))?.reason == expected)
    }

    @Test func broadcastsAreLiveActivityUpdatesToTheBareBundleID() {
        #expect(NotificationValidator.validate(broadcast(type: .alert))?.reason == .invalidPushType)
        #expect(NotificationValidator.validate(broadcast(bundleID: "com.example.app.push-type.liveactivity"))?.reason == .topicDisallowed)
        #expect(NotificationValidator.validate(broadcast(bundleID: ""))?.reason == .badPath)
        #expect(NotificationValidator.validate(broadcast(expiration: -1))?.reason == .badExpirationDate)
    }

    @Test func broadcastPayloadsMayBe5120Bytes() {
        func sized(_ n: Int) -> [UInt8] {
            let head = Array(#"{"aps":{},"x":""#.utf8), tail = Array(#""}"#.utf8)
            return head + [UInt8](repeating: UInt8(ascii: "x"), count: n - head.count - tail.count) + tail
        }
        #expect(NotificationValidator.validate(broadcast(payload: sized(5120))) == nil)
        #expect(NotificationValidator.validate(broadcast(payload: sized(5121)))?.reason == .payloadTooLarge)
        // The same body as a device Live Activity push is over its 4096-byte limit.
        let device = PushNotification.apns(deviceToken: "a1b2", topic: "com.example.app.push-type.liveactivity", environment: .sandbox,
                                      pushType: .liveactivity, payload: sized(5120))
        #expect(NotificationValidator.validate(device)?.reason == .payloadTooLarge)
    }

    @Test func theTargetDecidesThePath() {
        #expect(broadcast().path == "/4/broadcasts/apps/com.example.app")
        #expect(broadcast().channelID == channel)
        #expect(broadcast().deviceToken == "")
        var n = broadcast()
        n.deviceToken = "a1b2"
        #expect(n.path == "/3/device/a1b2")
        #expect(!n.isBroadcast)
    }

    @Test func channelNotRegisteredIsDocumentedAs400() {
        #expect(APNsReason("ChannelNotRegistered").documentedStatus == 400)
        #expect(APNsReason("FeatureNotEnabled").documentedStatus == 400)
    }
}

@Suite struct ChannelManagementTests {
    @Test func requestsAreApplesDocumentedOnes() throws {
        let id = "5B0B4E2A-6F1D-4C3E-9A8B-7C6D5E4F3A2B"
        let create = try ChannelManagement.request(.create(.mostRecentMessageStored), bundleID: "com.example.app", requestID: id)
        #expect(create.method == "POST")
        #expect(create.path == "/1/apps/com.example.app/channels")
        #expect(create.body.map { String(decoding: $0, as: UTF8.self) } == #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)
        #expect(create.headers.map(\.name) == ["apns-request-id"])
        #expect(create.headers.first?.value == id.lowercased())

        let noStorage = try ChannelManagement.request(.create(.noMessagesStored), bundleID: "com.example.app")
        #expect(noStorage.body.map { String(decoding: $0, as: UTF8.self) } == #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#)
        #expect(noStorage.headers.isEmpty)

        let read = try ChannelManagement.request(.read(channelID: channel), bundleID: "com.example.app")
        #expect(read.method == "GET")
        #expect(read.path == "/1/apps/com.example.app/channels")
        #expect(read.headers.map(\.name) == ["apns-channel-id"])
        #expect(read.headers.first?.value == channel)
        #expect(read.body == nil)

        let delete = try ChannelManagement.request(.delete(channelID: channel), bundleID: "com.example.app")
        #expect(delete.method == "DELETE")
        #expect(delete.path == read.path)
        #expect(delete.headers.map(\.value) == [channel])

        let list = try ChannelManagement.request(.list, bundleID: "com.example.app")
        #expect(list.method == "GET")
        #expect(list.path == "/1/apps/com.example.app/all-channels")
        #expect(list.headers.isEmpty)
    }

    @Test func requestsAppleWouldRefuseAreNotBuilt() {
        func reason(_ op: ChannelManagement.Operation, bundle: String = "com.example.app", id: String? = nil) -> APNsReason? {
            do {
                _ = try ChannelManagement.request(op, bundleID: bundle, requestID: id)
                return nil
            } catch {
                return error.reason
            }
        }
        #expect(reason(.read(channelID: "")) == .missingChannelId)
        #expect(reason(.delete(channelID: "no good")) == .badChannelId)
        #expect(reason(.list, bundle: "com.example.app.push-type.liveactivity") == .topicDisallowed)
        #expect(reason(.list, bundle: "") == .badPath)
        #expect(reason(.list, id: "not-a-uuid") == .badMessageId)
    }

    @Test func answersDecode() {
        let body = { (text: String) in Array(text.utf8) }
        #expect(ChannelManagement.decode(.create(.noMessagesStored), status: 201, channelIDHeader: channel, body: [])
            == .created(channelID: channel))
        #expect(ChannelManagement.decode(.create(.noMessagesStored), status: 201, channelIDHeader: nil, body: [])
            == .failed(status: 201, reason: nil))
        #expect(ChannelManagement.decode(.read(channelID: channel), status: 200, channelIDHeader: nil,
                                         body: body(#"{"message-storage-policy":0,"push-type":"LiveActivity"}"#)) == .channel(.noMessagesStored))
        #expect(ChannelManagement.decode(.read(channelID: channel), status: 200, channelIDHeader: nil,
                                         body: body(#"{"message-storage-policy":9}"#)) == .failed(status: 200, reason: nil))
        #expect(ChannelManagement.decode(.delete(channelID: channel), status: 204, channelIDHeader: nil, body: []) == .deleted)
        #expect(ChannelManagement.decode(.list, status: 200, channelIDHeader: nil, body: body(#"{"channels": ["a==", "b"] }"#))
            == .channels(["a==", "b"]))
        #expect(ChannelManagement.decode(.list, status: 200, channelIDHeader: nil, body: body(#"{"channels":[]}"#)) == .channels([]))
        #expect(ChannelManagement.decode(.list, status: 200, channelIDHeader: nil, body: body(#"{"channels":[1]}"#))
            == .failed(status: 200, reason: nil))
        #expect(ChannelManagement.decode(.list, status: 400, channelIDHeader: nil, body: body(#"{"reason":"FeatureNotEnabled"}"#))
            == .failed(status: 400, reason: .featureNotEnabled))
        #expect(ChannelManagement.decode(.read(channelID: channel), status: 400, channelIDHeader: nil,
                                         body: body(#"{"reason":"ChannelNotRegistered"}"#)) == .failed(status: 400, reason: .channelNotRegistered))
    }

    @Test func storagePolicyNames() {
        #expect(MessageStoragePolicy(name: "none") == .noMessagesStored)
        #expect(MessageStoragePolicy(name: "most-recent") == .mostRecentMessageStored)
        #expect(MessageStoragePolicy(name: "all") == nil)
    }
}

@Suite struct BroadcastJobTests {
    private func parse(_ text: String) throws(JobError) -> (spec: JobSpec, read: APNsJob) { try APNsProvider.parse(Array(text.utf8)) }
    private func parseError(_ text: String) -> JobError? {
        do { _ = try parse(text); return nil } catch { return error }
    }

    @Test func aJobNamingAChannelIsALiveActivityBroadcast() throws {
        let (job, read) = try parse(#"{"id":"b1","channel":"\#(channel)","app":"scores","expiration":0,"priority":5,"payload":{"aps":{"event":"update"}}}"#)
        #expect(read.channel == channel)
        #expect(job.token == nil)
        #expect(read.pushType == .liveactivity)
        let n = read.notification(job, topic: "com.example.app", environment: .production, bundleID: "com.example.app")
        #expect(n.target == .channel(id: channel, bundleID: "com.example.app"))
        #expect(n.path == "/4/broadcasts/apps/com.example.app")
        #expect(NotificationValidator.validate(n) == nil)
    }

    @Test func anExplicitPushTypeIsKeptForTheValidatorToRefuse() throws {
        let (job, read) = try parse(#"{"channel":"\#(channel)","push_type":"alert","payload":{}}"#)
        #expect(read.pushType == .alert)
        let n = read.notification(job, topic: "com.example.app", environment: .production, bundleID: "com.example.app")
        #expect(NotificationValidator.validate(n)?.reason == .invalidPushType)
    }

    @Test func badBroadcastJobsAreRefusedWithAClearReason() {
        #expect(parseError(#"{"channel":"not base64!","payload":{}}"#) == .badChannel)
        #expect(parseError(#"{"channel":"\#(channel)","token":"ab","payload":{}}"#) == .tokenAndChannel)
        #expect(parseError(#"{"tokens":["ab","cd"],"channel":"\#(channel)","payload":{}}"#) == .tokenAndChannel)
        #expect(parseError(#"{"channel":5,"payload":{}}"#) == .wrongType(field: "channel", expected: "a string"))
        #expect(parseError(#"{"channel":"\#(channel)"}"#) == .missingPayload)
        #expect(parseError(#"{"payload":{}}"#) == .missingToken)
        #expect(JobError.tokenAndChannel.code == "token_and_channel")
    }
}
