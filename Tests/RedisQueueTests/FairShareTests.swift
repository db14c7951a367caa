import Foundation
import Testing
@testable import RedisQueue

@Suite struct FairShareTests {
    @Test func rotationPutsEachQueueFirstInProportionToItsWeightWithoutLongRuns() {
        var rotation = QueueRotation(keys: ["a", "b", "c"], weights: [3, 1, 2])
        var first: [String: Int] = [:]
        var run = 0
        var longestRun = 0
        var previous = ""
        for _ in 0..<600 {
            let order = rotation.next()
            #expect(Set(order) == ["a", "b", "c"])
            first[order[0], default: 0] += 1
            run = order[0] == previous ? run + 1 : 1
            longestRun = max(longestRun, run)
            previous = order[0]
        }
        #expect(first == ["a": 300, "b": 100, "c": 200])
        // Smooth: the heaviest queue never goes first more than twice in a row at weights 3:1:2.
        #expect(longestRun <= 2)
    }

    /// Two queues holding `counts` jobs, claimed by one claimant with these weights (nil: strict priority).
    private func twoQueues(_ names: (String, String), counts: (Int, Int), weights: [Int]?) throws -> (BlockingJobQueue, String, String) {
        let keys = TestRedis.keys()
        let redis = try TestRedis.blocking()
        let a = keys.queue(named: names.0), b = keys.queue(named: names.1)
        try push(redis, key: a, jobs: (0..<counts.0).map { "\(names.0)-\($0)" })
        try push(redis, key: b, jobs: (0..<counts.1).map { "\(names.1)-\($0)" })
        var options = JobQueueOptions()
        options.queueWeights = weights
        return (try BlockingJobQueue(redis: redis, keys: keys, workerID: "claimant", queueKeys: [a, b], options: options), a, b)
    }

    @Test func weightedClaimsAlternateBetweenBackloggedQueuesAndSkipAnEmptyOne() throws {
        let (queue, big, small) = try twoQueues(("big", "small"), counts: (1000, 30), weights: [1, 1])
        var fromSmall = 0
        var claims = 0
        // Strict priority would take 1000 big jobs before the first small one; equal weights take turns.
        while fromSmall < 30 && claims < 20 {
            let leases = try queue.claim(max: 10)
            claims += 1
            fromSmall += leases.filter { $0.queueKey == small }.count
        }
        #expect(fromSmall == 30)
        #expect(claims == 6, "small's 30 jobs came in every other claim of 10")
        // The small queue is empty now: every claim takes a full batch from the big one.
        let next = try queue.claim(max: 10)
        #expect(next.count == 10 && next.allSatisfy { $0.queueKey == big })
    }

    @Test func withoutWeightsTheFirstQueueKeepsStrictPriority() throws {
        let (queue, first, _) = try twoQueues(("first", "second"), counts: (50, 50), weights: nil)
        var leases: [Lease] = []
        for _ in 0..<5 { leases += try queue.claim(max: 10) }
        #expect(leases.allSatisfy { $0.queueKey == first })
    }
}
