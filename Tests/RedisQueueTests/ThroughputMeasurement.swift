import Foundation
import Reactor
import Testing
@testable import RedisQueue

/// Not a test of speed (nothing is asserted about it): a measurement for docs/queue-design.md, run by hand with
/// HERALD_REDIS_BENCH=1. It claims and completes (with a full result entry) every job through `JobQueue` on one
/// event loop, keeping a few claims in flight, and prints jobs per second.
@Suite struct ThroughputMeasurement {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["HERALD_REDIS_BENCH"] == "1"))
    func claimCompleteThroughput() throws {
        let keys = TestRedis.keys()
        let admin = try TestRedis.blocking()
        let total = Int(ProcessInfo.processInfo.environment["HERALD_REDIS_BENCH_JOBS"] ?? "") ?? 200_000
        let batch = Int(ProcessInfo.processInfo.environment["HERALD_REDIS_BENCH_BATCH"] ?? "") ?? 256
        let inFlight = 4
        let job = #"{"token":"740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad","topic":"com.example.app","payload":{"aps":{"alert":"Hello"}},"id":"%"}"#
        var index = 0
        while index < total {
            let count = min(5_000, total - index)
            _ = try admin.command(["LPUSH", keys.queue] + (index..<(index + count)).map { job.replacingOccurrences(of: "%", with: "\($0)") })
            index += count
        }
        let harness = try LoopHarness()
        defer { harness.stop() }
        let done = DispatchSemaphore(value: 0)
        let completed = Box<Int>(0)
        let start = monotonicNanos()
        try harness.loop.submit {
            let connection = RedisConnection(url: TestRedis.url, loop: harness.loop)
            connection.start()
            let queue = try JobQueue(connection: connection, keys: keys, workerID: "bench")
            func step() {
                queue.claim(max: batch) { result in
                    guard case .success(let leases) = result, !leases.isEmpty else { return }
                    let completions = leases.map { lease in
                        JobCompletion(lease: lease, result: ResultEntry(
                            id: "x", outcome: .delivered, status: 200, token: "740f4707bebcf74f9b7c25d48e3358945f6aa01da5ddb387462c7eaf61bb78ad",
                            topic: "com.example.app", environment: "production", app: "default", apnsID: "3B5F0D1E-6B6E-4F3A-9D0B-6B7C1E2A9F10",
                            attempt: lease.attempt, latencyMilliseconds: 12, worker: "bench"))
                    }
                    queue.complete(completions) { result in
                        if case .success(let report) = result { completed.value += report.applied }
                        if completed.value >= total { done.signal() }
                    }
                    step()
                }
            }
            for _ in 0..<inFlight { step() }
        }
        #expect(done.wait(timeout: .now() + 600) == .success)
        let seconds = Double(monotonicNanos() - start) / 1e9
        print("HERALD_BENCH claim+complete: \(total) jobs, batch \(batch), \(inFlight) claims in flight: \(String(format: "%.2f", seconds)) s, \(Int(Double(total) / seconds)) jobs/s")
        _ = try admin.command(["DEL", keys.results, keys.queue, keys.leases(worker: "bench"), keys.workers])
    }
}
