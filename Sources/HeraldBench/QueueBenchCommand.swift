import Basics
import Foundation
import Reactor
import RedisQueue

/// The queue's own work with no APNs: `lanes` independent claim -> complete loops (claim a batch, write a
/// `delivered` result and ack for each job, claim again), pipelined on one connection as the worker does.
/// The jobs must already be queued. Against `redis-benchmark` this is the cost of the Lua scripts.
enum QueueBenchCommand {
    static let command = Command(
        bench: "queue", abstract: "Claim + ack + result with no APNs at all (jobs must be queued).",
        options: [
            .value("redis", "url", "Redis URL (required)."),
            .value("count", "n", "Jobs to process (default 100000)."),
            .value("batch", "n", "Jobs per claim (default 256)."),
            .value("lanes", "n", "Independent claim loops (default 4)."),
            .value("prefix", "prefix", "Key prefix (default herald)."),
            .value("timeout", "seconds", "Give up after this long (default 300)."),
        ],
        run: run)

    static func run(_ flags: ParsedArguments) throws {
        let url = try RedisURL(parsing: try flags.required("redis"))
        let count = try flags.int("count", default: 100_000)
        let batch = max(1, try flags.int("batch", default: 256))
        let lanes = max(1, try flags.int("lanes", default: 4))
        let prefix = flags.value("prefix") ?? "herald"
        let timeout = try flags.double("timeout", default: 300)
        let loop = try EventLoop.startThread(name: "bench-queue")
        defer { loop.stop(); _ = loop.waitUntilStopped() }
        let done = DispatchSemaphore(value: 0)
        let started = monotonicNanos()
        let run = try loop.submit {
            let connection = RedisConnection(url: url, loop: loop)
            connection.start()
            let queue = try JobQueue(connection: connection, keys: try QueueKeys(prefix: prefix), workerID: "bench-\(getpid())")
            let run = QueueRun(queue: queue, count: count, batch: batch, done: done)
            for _ in 0..<lanes { run.lane() }
            return LoopBound(run, loop: loop)
        }
        guard done.wait(timeout: .now() + timeout) == .success else { fail("queue: not done within \(timeout) s", status: 1) }
        let seconds = Double(monotonicNanos() &- started) / 1e9
        let summary = try loop.submit { run.value.summary() }
        try loop.submit { run.value.queue.connection.close() }
        printJSONLine(["completed": summary.completed, "errors": summary.errors, "seconds": seconds,
                       "per_s": (Double(summary.completed) / seconds).rounded(), "batch": batch, "lanes": lanes])
    }
}

/// The lanes' shared state, made and touched on the loop's thread only (`done` is the hand-off to main).
private final class QueueRun {
    let queue: JobQueue
    let count: Int
    let batch: Int
    let done: DispatchSemaphore
    private var claimed = 0
    private var completed = 0
    private var errors = 0
    private var activeLanes = 0
    private var signalled = false

    init(queue: JobQueue, count: Int, batch: Int, done: DispatchSemaphore) {
        self.queue = queue
        self.count = count
        self.batch = batch
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
            let completions = leases.map { lease in
                JobCompletion(lease: lease, result: ResultEntry(
                    id: lease.jobID ?? lease.id, outcome: .delivered, status: 200, token: BenchJobs.token(0),
                    topic: BenchJobs.topic, environment: "production", app: "bench", apnsID: "3f2b6a9e-1c4d-4e8f-9a0b-1c2d3e4f5a6b",
                    attempt: 1, latencyMilliseconds: 1, worker: queue.workerID))
            }
            queue.complete(completions) { [self] result in
                switch result {
                case .success: completed += completions.count
                case .failure: errors += 1
                }
                claimNext()
            }
        }
    }

    func summary() -> (completed: Int, errors: Int) { (completed, errors) }
}
