import Foundation
import HeraldProviders
import HeraldTestSupport
import Testing
import Worker

/// `redis.mode = "sentinel"`, its keys, and `redis.wait_replicas`: read, and refused with clear words.
@Suite struct SentinelConfigurationTests {
    private func load(_ redis: String) throws -> Configuration {
        let path = makeTemporaryDirectory("herald-config") + "/herald.json"
        let json = #"{"apps":[{"name":"shop","bundle_id":"com.example.shop","token":{"team_id":"ABCDE12345","key_id":"KEY1234567","key_file":"k.p8"}}],"redis":"# + redis + "}"
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return try ConfigurationLoader.load(path: path, environment: [:])
    }

    private func problems(_ redis: String) -> [String] {
        do {
            _ = try load(redis)
            return []
        } catch {
            return (error as? ConfigurationError)?.problems ?? ["\(error)"]
        }
    }

    @Test func sentinelKeysAreReadAndStandaloneStaysTheDefault() throws {
        let plain = try load(#"{"url": "redis://10.0.0.5:6380/2"}"#)
        #expect(plain.redis.mode == .standalone)
        #expect(plain.redis.waitReplicas == 0)
        #expect(try plain.redis.sentinelSettings() == nil)

        let c = try load(#"""
            {"url": "redis://app:pw@ignored:1/3", "mode": "sentinel", "sentinels": ["10.0.0.1:26379", "[::1]:26380"],
             "master_name": "herald", "sentinel_password": "spw", "wait_replicas": 1, "wait_timeout_ms": 500, "connect_timeout_ms": 800}
            """#)
        let settings = try #require(try c.redis.sentinelSettings())
        #expect(settings.sentinels.map(\.description) == ["10.0.0.1:26379", "[::1]:26380"])
        #expect(settings.masterName == "herald" && settings.password == "spw" && settings.user == nil)
        #expect(settings.timeoutMilliseconds == 800)
        #expect(c.redis.waitReplicas == 1 && c.redis.waitTimeoutMs == 500)
    }

    @Test func incompleteOrMisplacedSentinelSettingsAreRefusedByName() {
        let missing = problems(#"{"mode": "sentinel"}"#)
        #expect(missing.contains { $0.contains("redis.sentinels must list at least one sentinel") })
        #expect(missing.contains { $0.contains("redis.master_name must name the master") })
        #expect(problems(#"{"mode": "sentinels"}"#).contains { $0.contains(#"redis.mode must be "standalone", "sentinel" or "cluster""#) })
        #expect(problems(#"{"mode": "sentinel", "master_name": "m", "sentinels": ["10.0.0.1", "h:0", "h:26379"]}"#)
            .filter { $0.contains("is not host:port") }.count == 2)
        #expect(problems(#"{"sentinels": ["h:26379"], "master_name": "m"}"#).contains { $0.contains(#"need redis.mode "sentinel""#) })
        #expect(problems(#"{"mode": "sentinel", "master_name": "m", "sentinels": ["h:1"], "url": "unix:///tmp/r.sock"}"#)
            .contains { $0.contains("a unix socket cannot be a Sentinel-managed master") })
        #expect(problems(#"{"mode": "sentinel", "master_name": "m", "sentinels": ["h:1"], "sentinel_user": "u"}"#)
            .contains { $0.contains("redis.sentinel_user needs redis.sentinel_password") })
    }

    @Test func waitSettingsOutsideTheirRangesAreRefused() {
        #expect(problems(#"{"wait_replicas": -1}"#).contains { $0.contains("redis.wait_replicas must be 0 (off) ... 16") })
        #expect(problems(#"{"wait_replicas": 1, "wait_timeout_ms": 0}"#).contains { $0.contains("redis.wait_timeout_ms must be 1...600000, got 0") })
        #expect(problems(#"{"wait_replicas": 1, "wait_timeout_ms": 20000}"#).contains { $0.contains("below redis.command_timeout_ms (10000)") })
        #expect(problems(#"{"wait_replicas": 1, "wait_timeout_ms": 200}"#).isEmpty)
        #expect(problems(#"{"wait_replicas": 1, "mode": "cluster", "url": "redis://h:7000/0", "prefix": "{h}"}"#)
            .contains { $0.contains("redis.wait_replicas is not available in cluster mode") })
    }
}
