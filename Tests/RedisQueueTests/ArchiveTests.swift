import Foundation
import Testing
@testable import RedisQueue

/// A lease completed as `failed` with an archive copy (what the worker's completion builder writes).
private func failed(_ lease: Lease, id: String, reason: String, app: String, worker: String) -> JobCompletion {
    var completion = JobCompletion(lease: lease, result: ResultEntry(id: id, outcome: .failed, reason: reason, app: app,
                                                                     attempt: lease.attempt, worker: worker))
    completion.archived = ArchivedJob(id: id, outcome: .failed, reason: reason, queue: lease.queueKey, app: app, token: "tok-\(id)",
                                      attempt: lease.attempt, job: lease.job)
    return completion
}

@Suite struct ArchiveTests {
    /// Claims the jobs of `queue` and fails them, the first half for `shop` with MaxAttempts, the rest for `news` expired.
    private func archiveJobs(_ count: Int, keys: QueueKeys, queue key: String, options: JobQueueOptions = JobQueueOptions()) throws -> BlockingJobQueue {
        let redis = try TestRedis.blocking()
        try push(redis, key: key, jobs: (0..<count).map { #"{"id":"j\#($0)","token":"t","payload":{}}"# })
        let queue = try BlockingJobQueue(redis: redis, keys: keys, workerID: "arch", queueKeys: [key], options: options)
        let leases = try queue.claim(max: count)
        let batch = leases.enumerated().map { index, lease in
            let id = producerID(lease.job)
            return index < count / 2 ? failed(lease, id: id, reason: "MaxAttempts:InternalServerError", app: "shop", worker: "arch")
                : failed(lease, id: id, reason: "Expired", app: "news", worker: "arch")
        }
        #expect(try queue.complete(batch).applied == count)
        return queue
    }

    @Test func failedJobsAreArchivedWithTheirBytesAndReasonInTheCompletionAndTrimmed() throws {
        let keys = TestRedis.keys()
        let key = keys.queue(named: "a")
        var options = JobQueueOptions()
        options.archiveMaxLength = 150
        let queue = try archiveJobs(400, keys: keys, queue: key, options: options)
        let length = try queue.redis.command(["XLEN", keys.archive]).int ?? 0
        // Trimmed approximately (whole macro nodes), like the results stream: far below 400, at least the cap.
        #expect(length >= 150 && length < 400)
        let all = try ArchiveReplay.select(redis: queue.redis, keys: keys, filter: ReplayFilter())
        #expect(all.count == Int(length))
        let newest = try #require(all.last)
        #expect(newest.job.job == Array(#"{"id":"j399","token":"t","payload":{}}"#.utf8))
        #expect(newest.job.reason == "Expired" && newest.job.queue == key && newest.job.app == "news" && newest.job.outcome == .failed)
    }

    @Test func archivingOffWritesNoArchive() throws {
        let keys = TestRedis.keys()
        var options = JobQueueOptions()
        options.archiveMaxLength = 0
        let queue = try archiveJobs(10, keys: keys, queue: keys.queue, options: options)
        #expect(try queue.redis.command(["EXISTS", keys.archive]).int == 0)
        #expect(try queue.redis.command(["XLEN", keys.results]).int == 10)
    }

    @Test func replayPutsChosenJobsBackWithAFreshAttemptTheirIdAndAReplayedResult() throws {
        let keys = TestRedis.keys()
        let key = keys.queue(named: "r")
        let queue = try archiveJobs(20, keys: keys, queue: key)
        var filter = ReplayFilter()
        filter.reasons = ["MaxAttempts"]
        filter.apps = ["shop"]
        let chosen = try ArchiveReplay.select(redis: queue.redis, keys: keys, filter: filter)
        #expect(chosen.count == 10)
        #expect(chosen.allSatisfy { $0.job.reason.hasPrefix("MaxAttempts") && $0.job.app == "shop" })
        let report = try ArchiveReplay.replay(chosen, redis: queue.redis, keys: keys, worker: "replayer")
        #expect(report.replayed == 10 && report.gone == 0)
        // Replayed again: nothing left to replay, nothing queued twice.
        #expect(try ArchiveReplay.replay(chosen, redis: queue.redis, keys: keys, worker: "replayer").gone == 10)
        #expect(try queue.redis.command(["LLEN", key]).int == 10)
        #expect(try ArchiveReplay.select(redis: queue.redis, keys: keys, filter: ReplayFilter()).count == 10)
        let leases = try queue.claim(max: 100)
        #expect(leases.count == 10)
        for lease in leases {
            #expect(lease.attempt == 1)
            #expect(lease.unmarkedEnvelopeAttempt == nil, "the replay marks the envelope with the epoch like the scheduler")
            #expect(lease.jobID.map { $0.hasPrefix("j") } == true)
            #expect(lease.job == Array(#"{"id":"\#(lease.jobID!)","token":"t","payload":{}}"#.utf8))
        }
        let replayed = StreamEntry.entries(try queue.redis.command(["XRANGE", keys.results, "-", "+"])).filter { $0["outcome"] == "replayed" }
        #expect(replayed.count == 10)
        #expect(replayed.allSatisfy { $0["reason"]?.hasPrefix("Replayed: MaxAttempts") == true && $0["attempt"] == "1" && $0["worker"] == "replayer" })
    }

    @Test func replayFiltersByIdAndTimeRange() throws {
        let keys = TestRedis.keys()
        let queue = try archiveJobs(6, keys: keys, queue: keys.queue)
        var byID = ReplayFilter()
        byID.ids = ["j1", "j4"]
        #expect(try ArchiveReplay.select(redis: queue.redis, keys: keys, filter: byID).map(\.job.id).sorted() == ["j1", "j4"])
        var future = ReplayFilter()
        future.since = Int64(Date().timeIntervalSince1970 * 1000) + 60_000
        #expect(try ArchiveReplay.select(redis: queue.redis, keys: keys, filter: future).isEmpty)
        var past = ReplayFilter()
        past.until = Int64(Date().timeIntervalSince1970 * 1000) + 60_000
        past.outcomes = [.failed]
        #expect(try ArchiveReplay.select(redis: queue.redis, keys: keys, filter: past, limit: 4).count == 4)
    }
}

/// The producer's id of a test job (`{"id":"j<n>",...}`).
private func producerID(_ job: [UInt8]) -> String {
    let text = String(decoding: job, as: UTF8.self)
    return String(text.dropFirst(7).prefix { $0 != "\"" })
}
