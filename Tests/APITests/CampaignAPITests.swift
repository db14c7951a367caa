import DeviceRegistry
import Foundation
import HeraldTestSupport
import RedisQueue
import Testing

/// `/v1/campaigns` against a real Redis with curl: create (idempotent by id), read the status, pause, resume and
/// cancel; a key limited to apps sees only their campaigns; bad documents are 400 with their code.
@Suite(.serialized) struct CampaignAPITests {
    static func document(id: String, app: String = "shop") -> String {
        #"{"id": "\#(id)", "app": "\#(app)", "audience": {"topic": "scores"}, "notification": {"title": "Goal"}}"#
    }

    private func call(_ api: DeviceAPIServer, _ path: String, post body: String? = nil, _ extra: [String] = []) throws -> (status: Int, body: [String: Any]) {
        let data = body.map { ["-H", "Content-Type: application/json", "--data-binary", $0] } ?? []
        let answer = try curl(extra + data + [api.url + path])
        return (answer.status, jsonObject(answer.body))
    }

    private func code(_ body: [String: Any]) -> String? { (body["error"] as? [String: Any])?["code"] as? String }

    @Test func aCampaignIsCreatedOnceReadPausedResumedAndCancelled() throws {
        let redis = try RedisServer()
        let api = try DeviceAPIServer(redisURL: redis.url)
        for n in 0..<5 { _ = try curl(["-X", "PUT", "--data-binary", #"{"topics": ["scores"]}"#, api.url + "v1/devices/shop/fcm/t\(n)"]) }
        let created = try call(api, "v1/campaigns", post: Self.document(id: "goal-1"))
        #expect(created.status == 201 && created.body["state"] as? String == "running" && created.body["audience_size"] as? Int == 5, "\(created.body)")
        let again = try call(api, "v1/campaigns", post: Self.document(id: "goal-1"))
        #expect(again.status == 200 && (again.body["audience"] as? [String: Any])?["topic"] as? String == "scores", "the same document: \(again.body)")
        let other = try call(api, "v1/campaigns", post: #"{"id": "goal-1", "app": "shop", "audience": {"user": "u"}, "notification": {"title": "x"}}"#)
        #expect(other.status == 409 && code(other.body) == "id_taken", "another document is refused, not answered with the first: \(other.body)")
        let typo = try call(api, "v1/campaigns", post: Self.document(id: "goal-2", app: "shpo"))
        #expect(typo.status == 400 && code(typo.body) == "bad_app", "an app not configured: \(typo.body)")
        let read = try call(api, "v1/campaigns/goal-1")
        #expect(read.status == 200 && read.body["waiting"] as? Int == 5 && read.body["sent"] as? Int == 0)
        #expect(try call(api, "v1/campaigns/goal-1/pause", post: "").body["state"] as? String == "paused")
        #expect(try call(api, "v1/campaigns/goal-1/resume", post: "").body["state"] as? String == "running")
        let cancelled = try call(api, "v1/campaigns/goal-1/cancel", post: "")
        #expect(cancelled.status == 200 && cancelled.body["state"] as? String == "cancelled" && cancelled.body["cancelled"] as? Int == 5, "\(cancelled.body)")
        #expect(try call(api, "v1/campaigns/nope").status == 404)
        #expect(try call(api, "v1/campaigns/goal-1/explode", post: "").status == 404)
        #expect(try call(api, "v1/campaigns/goal-1", ["-X", "DELETE"]).status == 405)
        let metrics = try curl([api.url + "metrics"]).body
        for line in [#"route="/v1/campaigns",status="201""#, #"route="/v1/campaigns/{id}",status="200""#,
                     #"route="/v1/campaigns/{id}/{action}",status="200""#] {
            #expect(metrics.contains(line), "\(line) in \(metrics)")
        }
    }

    @Test func badDocumentsAre400WithTheirCode() throws {
        let redis = try RedisServer()
        let api = try DeviceAPIServer(redisURL: redis.url)
        let cases = [("{", "bad_campaign"), (#"{"id": "a", "app": "shop", "audience": {"app": "other"}, "notification": {"title": "x"}}"#, "bad_audience"),
                     (#"{"id": "a", "app": "shop", "audience": {"topic": "t"}, "notification": {"title": "x"}, "queue": "nope"}"#, "bad_queue"),
                     (#"{"id": "a", "app": "shop", "audience": {"topic": "t"}, "notification": {"title": "x"}, "deliver_at_local": "25:00"}"#, "bad_deliver_at_local"),
                     // Beyond worker.max_schedule_days (365): every worker would refuse its jobs.
                     (#"{"id": "a", "app": "shop", "audience": {"topic": "t"}, "notification": {"title": "x"}, "deliver_at_local": "2999-01-01T09:00"}"#, "bad_deliver_at_local"),
                     (#"{"id": "a", "app": "shop", "audience": {"topic": "t"}, "notification": {"title": "x"}, "quiet_hours": {"start": "22:00"}}"#, "bad_quiet_hours"),
                     (#"{"id": "a", "app": "shop", "audience": {"topic": "t"}, "notification": {"title": "x"}, "quiet": false}"#, "unknown_member")]
        for (body, expected) in cases {
            let answer = try call(api, "v1/campaigns", post: body)
            #expect(answer.status == 400 && code(answer.body) == expected, "\(body): \(answer.body)")
        }
    }

    @Test func aKeyLimitedToAppsSeesOnlyTheirCampaignsAndNoKeyIs401() throws {
        let redis = try RedisServer()
        let key = #"{"keys": [{"name": "shop-only", "sha256": "\#(APIAccessTests.secretHash)", "apps": ["shop"]}]}"#
        let api = try DeviceAPIServer(redisURL: redis.url, api: key, apps: APIProcess.shopApp + "," + APIProcess.app("other"))
        let auth = ["-H", "Authorization: Bearer \(APIAccessTests.secret)"]
        #expect(try call(api, "v1/campaigns", post: Self.document(id: "c1")).status == 401)
        let other = try call(api, "v1/campaigns", post: Self.document(id: "c2", app: "other"), auth)
        #expect(other.status == 403 && code(other.body) == "forbidden", "\(other.body)")
        #expect(try call(api, "v1/campaigns", post: Self.document(id: "c1"), auth).status == 201)
        // Made by someone else for another app: neither readable nor controllable with this key.
        let client = try BlockingRedis(url: try RedisURL(parsing: redis.url))
        defer { client.close() }
        try Campaigns(redis: client, shards: try QueueShards(single: try QueueKeys(prefix: "herald")))
            .create(Campaign.parse(Array(Self.document(id: "theirs", app: "other").utf8)))
        #expect(try call(api, "v1/campaigns/theirs", auth).status == 403)
        #expect(try call(api, "v1/campaigns/theirs/cancel", post: "", auth).status == 403)
        #expect(try call(api, "v1/campaigns", post: Self.document(id: "theirs"), auth).status == 403, "an id taken by another app")
        #expect(try call(api, "v1/campaigns/c1", auth).status == 200)
    }
}
