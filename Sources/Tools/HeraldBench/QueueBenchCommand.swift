import APNs
import Basics
import Foundation
import PushCore
import Reactor
import RedisQueue
import TLS

/// The queue's own work with no APNs: `lanes` independent claim -> complete loops (claim a batch, write a
/// `delivered` result and ack for each job, claim again), pipelined on one connection as the worker does.
/// The jobs must already be queued. Against `redis-benchmark` this is the cost of the Lua scripts. With
/// `--once-window` each claim also runs the idempotency check (`claimOnce`) and each completion ends the job's
/// id key, as a worker with `idempotency_window_seconds` does: the difference is idempotency's cost per job. With
/// `--index-ttl` each completion also keeps the job's result index (`results.index_ttl_seconds`).
enum QueueBenchCommand {
    static let command = Command(
        bench: "queue", abstract: "Claim + ack + result with no APNs at all (jobs must be queued).",
        options: [
            .value("redis", "url", "Redis URL (required); rediss:// measures the queue over TLS."),
            .value("tls-ca-file", "file", "CA that signed a rediss:// server's certificate (default: the system trust store)."),
            .value("count", "n", "Jobs to process (default 100000)."),
            .value("batch", "n", "Jobs per claim (default 256)."),
            .value("lanes", "n", "Independent claim loops (default 4)."),
            .value("prefix", "prefix", "Key prefix (default herald)."),
            .value("timeout", "seconds", "Give up after this long (default 300)."),
            .value("once-window", "ms", "Idempotency window: check every job id and mark it done (default 0: off)."),
            .value("index-ttl", "seconds", "Keep the per-job result index as results.index_ttl_seconds does (default 0: off)."),
            .value("wait-replicas", "n", "WAIT for n replicas after every script call, as redis.wait_replicas (default 0: off)."),
            .value("wait-timeout", "ms", "WAIT's timeout (default 1000)."),
        ],
        run: run)

    static func run(_ flags: ParsedArguments) throws {
        let url = try RedisURL(parsing: try flags.required("redis"))
        let count = try flags.int("count", default: 100_000)
        let batch = max(1, try flags.int("batch", default: 256))
        let lanes = max(1, try flags.int("lanes", default: 4))
        let prefix = flags.value("prefix") ?? "herald"
        let timeout = try flags.double("timeout", default: 300)
        let onceWindow = Int64(try flags.int("once-window", default: 0))
        let waitReplicas = try flags.int("wait-replicas", default: 0)
        var queueOptions = JobQueueOptions()
        queueOptions.resultIndexTTLSeconds = try flags.int("index-ttl", default: 0)
        let frozenOptions = queueOptions
        let waitTimeout = try flags.int("wait-timeout", default: 1000)
        var connectionOptions = RedisConnection.Options()
        if let caFile = flags.value("tls-ca-file") {
            connectionOptions.tls = try TLSContext(TLSConfiguration(caFile: caFile, useSystemTrustStore: false), alpn: [])
        }
        let options = connectionOptions
        let loop = try EventLoop.startThread(name: "bench-queue")
        defer { loop.stop(); _ = loop.waitUntilStopped() }
        let done = DispatchSemaphore(value: 0)
        let started = monotonicNanos()
        let run = try loop.submit {
            let connection = RedisConnection(url: url, loop: loop, options: options)
            connection.start()
            let sender: any RedisCommandSender = waitReplicas > 0
                ? ReplicaWaitSender(connection, replicas: waitReplicas, timeoutMilliseconds: waitTimeout) : connection
            let queue = try JobQueue(connection: sender, keys: try QueueKeys(prefix: prefix), workerID: "bench-\(getpid())", options: frozenOptions)
            let run = QueueRun(queue: queue, count: count, batch: batch, onceWindow: onceWindow, done: done)
            for _ in 0..<lanes { run.lane() }
            return LoopBound(run, loop: loop)
        }
        guard done.wait(timeout: .now() + timeout) == .success else { fail("queue: not done within \(timeout) s", status: 1) }
        let seconds = Double(monotonicNanos() &- started) / 1e9
        let summary = try loop.submit { run.value.summary() }
        try loop.submit { run.value.queue.connection.close() }
        printJSONLine(["completed": summary.completed, "errors": summary.errors, "seconds": seconds,
                       "per_s": (Double(summary.completed) / seconds).rounded(), "batch": batch, "lanes": lanes,
                       "once_window_ms": onceWindow, "index_ttl_seconds": frozenOptions.resultIndexTTLSeconds, "wait_replicas": waitReplicas, "duplicates": summary.duplicates])
    }
}

/// The lanes' shared state, made and touched on the loop's thread only (`done` is the hand-off to main).
private final class QueueRun {
    let queue: JobQueue
    let count: Int
    let batch: Int
    let onceWindow: Int64
    let done: DispatchSemaphore
    private var claimed = 0
    private var duplicates = 0
    private var completed = 0
    private var errors = 0
    private var activeLanes = 0
    private var signalled = false

    init(queue: JobQueue, count: Int, batch: Int, onceWindow: Int64, done: DispatchSemaphore) {
        self.queue = queue
        self.count = count
        self.batch = batch
        self.onceWindow = onceWindow
        self.done = done
    }

    func lane() {
        activeLanes += 1
        claimNext()
    }

    private func laneEnded() {
        activeLanes -= 1
        if activeLanes == 0 && !signalled {
            signalled = true
            done.signal()
        }
    }

    private func claimNext() {
        guard claimed < count else { laneEnded(); return }
        let n = min(batch, count - claimed)
        claimed += n
        queue.claim(max: n) { [self] result in
            guard case .success(let leases) = result, !leases.isEmpty else {
                if case .failure = result { errors += 1 }
                laneEnded()
                return
            }
            claimed -= n - leases.count
            guard onceWindow > 0 else { return complete(leases, once: nil) }
            let ids = leases.map { (lease: $0, jobID: JobParser.readableID($0.job) ?? $0.id) }
            queue.claimOnce(ids, windowMilliseconds: onceWindow) { [self] result in
                guard case .success(let verdicts) = result else {
                    errors += 1
                    return laneEnded()
                }
                duplicates += verdicts.filter { $0 == .duplicate }.count
                complete(leases, once: zip(ids, verdicts).map { $1 == .claimed ? $0.jobID : nil })
            }
        }
    }

    /// Writes a `delivered` result and acks each lease; `once`: the id key each one ends (nil: none).
    private func complete(_ leases: [Lease], once: [String?]?) {
        let completions = leases.enumerated().map { index, lease in
            var completion = JobCompletion(lease: lease, result: ResultEntry(
                id: lease.jobID ?? lease.id, outcome: .delivered, status: 200, token: BenchJobs.token(0),
                topic: BenchJobs.topic, environment: "production", app: "bench", apnsID: "3f2b6a9e-1c4d-4e8f-9a0b-1c2d3e4f5a6b",
                attempt: 1, latencyMilliseconds: 1, worker: queue.workerID))
            if let id = once?[index] { completion.once = OnceUpdate(jobID: id, expect: .lease, state: .done) }
            return completion
        }
        queue.complete(completions) { [self] result in
            switch result {
            case .success: completed += completions.count
            case .failure: errors += 1
            }
            claimNext()
        }
    }

    func summary() -> (completed: Int, errors: Int, duplicates: Int) { (completed, errors, duplicates) }
}
