import Foundation
import HeraldProviders
import HeraldTestSupport
import Testing
import Worker

/// The issue-15 settings: fair share, per-queue retry policies, the archive.
@Suite struct OpsConfigurationTests {
    private func load(_ sections: String) throws -> Configuration {
        let path = makeTemporaryDirectory("herald-config") + "/herald.json"
        let json = #"{"apps":[{"name":"shop","bundle_id":"com.example.shop","token":{"team_id":"ABCDE12345","key_id":"KEY1234567","key_file":"k.p8"}}],"# + sections + "}"
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return try ConfigurationLoader.load(path: path, environment: [:])
    }

    private func problems(_ sections: String) -> [String] {
        do {
            _ = try load(sections)
            return []
        } catch {
            return (error as? ConfigurationError)?.problems ?? ["\(error)"]
        }
    }

    @Test func weightsAndPerQueueRetryPoliciesAreReadOverTheDefaults() throws {
        let c = try load(#"""
        "redis": {"queues": ["herald:queue:login", "herald:queue:news"], "queue_mode": "weighted", "queue_weights": {"herald:queue:login": 3}},
        "retry": {"max_attempts": 6, "queues": {"herald:queue:login": {"server_error_base_seconds": 30, "max_attempts": 3, "give_up_after_seconds": 120}}},
        "worker": {"archive_max_length": 5000}
        """#)
        #expect(c.redis.claimWeights == [3, 1], "a queue without a weight weighs 1")
        let login = c.retry(forQueue: "herald:queue:login")
        #expect(login.serverErrorBaseSeconds == 30 && login.maxAttempts == 3 && login.giveUpAfterSeconds == 120)
        #expect(login.serverErrorCapSeconds == 14_400 && login.throttleBaseSeconds == 10, "what it does not override is the global policy")
        #expect(c.retry(forQueue: "herald:queue:news").maxAttempts == 6)
        #expect(c.retry(forQueue: "herald:queue:news").serverErrorBaseSeconds == 900)
        #expect(c.worker.archiveMaxLength == 5000)
    }

    @Test func strictPriorityStaysTheDefault() throws {
        let c = try load(#""redis": {"queues": ["a", "b"]}"#)
        #expect(c.redis.queueMode == .priority)
        #expect(c.redis.claimWeights == nil)
        #expect(c.worker.archiveMaxLength == 100_000)
    }

    @Test func weightsAndPoliciesOfUnknownQueuesAndBadValuesAreRefused() {
        let found = problems(#"""
        "redis": {"queues": ["a"], "queue_mode": "fair", "queue_weights": {"b": 2, "a": 0}},
        "retry": {"queues": {"c": {"max_attempts": 2}, "a": {"max_attempts": 0, "outage_pause_seconds": 5}}}
        """#)
        #expect(found.contains { $0.contains("queue_mode must be") })
        #expect(found.contains { $0.contains("'b' is not one of redis.queues") })
        #expect(found.contains { $0.contains("the weight of 'a' must be 1...1000") })
        #expect(found.contains { $0.contains("retry.queues: 'c' is not one of redis.queues") })
        #expect(found.contains { $0.contains("retry.queues.a.max_attempts must be 1...1000, got 0") })
        #expect(found.contains { $0.contains("unknown setting 'retry.queues.a.outage_pause_seconds'") }, "pauses are per destination, not per queue")
    }
}
