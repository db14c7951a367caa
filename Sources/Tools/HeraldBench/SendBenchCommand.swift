import APNs
import Basics
import Foundation
import HTTP2
import PushCore
import Reactor
import Worker

/// The APNs client alone: `count` notifications built in memory beforehand, kept `concurrency` in flight
/// over `connections`, timed from the first send to the last answer after a warm-up (connect, TLS, the
/// server's stream-limit ramp). What this gets against h2load is the client's own overhead.
enum SendBenchCommand {
    static let command = Command(
        bench: "send", abstract: "The APNs client alone, straight from memory.",
        options: [
            .value("host", "host", "APNs host (default 127.0.0.1)."),
            .value("port", "n", "APNs port."),
            .value("ca-file", "pem", "CA that signed the server's certificate (required)."),
            .value("key-file", "p8", "Provider key (required)."),
            .value("key-id", "id", "Key ID (required)."),
            .value("team-id", "id", "Team ID (required)."),
            .value("count", "n", "Notifications to send (default 100000)."),
            .value("concurrency", "n", "Requests in flight (default 1000)."),
            .value("connections", "n", "HTTP/2 connections (default 1)."),
            .value("warmup", "n", "Requests sent before timing starts (default 2000)."),
            .value("timeout", "seconds", "Give up after this long (default 300)."),
        ],
        run: run)

    static func run(_ flags: ParsedArguments) throws {
        let host = flags.value("host") ?? "127.0.0.1"
        let port = try flags.int("port", default: 0)
        let count = try flags.int("count", default: 100_000)
        let concurrency = max(1, try flags.int("concurrency", default: 1000))
        let connections = max(1, try flags.int("connections", default: 1))
        let warmup = try flags.int("warmup", default: 2000)
        let timeout = try flags.double("timeout", default: 300)
        var tls = TLSConfiguration()
        tls.caFile = try flags.required("ca-file")
        let key = try SigningKey(p8File: try flags.required("key-file"))
        let tokenCache = try ProviderTokenCache(keyID: try flags.required("key-id"), teamID: try flags.required("team-id"), key: key)

        let distinct = 4096
        let notifications = (0..<distinct).map { i in
            PushNotification.apns(deviceToken: BenchJobs.token(i), topic: BenchJobs.topic, environment: .production,
                                  pushType: .alert, payload: Array(BenchJobs.payload(i).utf8))
        }
        let loop = try EventLoop.startThread(name: "bench-send")
        defer { loop.stop(); _ = loop.waitUntilStopped() }
        let done = DispatchSemaphore(value: 0)
        let run = try loop.submit { [tls] in
            let client = try APNsClient(loop: loop, host: host, port: port, tls: tls, tokenCache: tokenCache,
                                        connections: connections, requestTimeoutMilliseconds: 30_000,
                                        maxQueued: max(20_000, concurrency))
            let send: SendRun.Send = { index, completion in
                client.send(notifications[index % notifications.count]) { completion($0.result) }
            }
            return LoopBound(SendRun(send: send, close: { client.close(graceful: false) }, done: done), loop: loop)
        }
        try timePhases(loop: loop, run: run, done: done, warmup: warmup, count: count, concurrency: concurrency, connections: connections,
                       timeout: timeout)
    }

    /// Runs the warm-up, then the timed phase, and prints the timed phase's figures.
    static func timePhases(loop: EventLoop, run: LoopBound<SendRun>, done: DispatchSemaphore, warmup: Int, count: Int, concurrency: Int,
                           connections: Int, timeout: Double) throws {
        for (phase, total) in [("warmup", warmup), ("timed", count)] where total > 0 {
            let started = monotonicNanos()
            let cpuBefore = cpuSeconds()
            loop.execute { run.value.begin(total: total, concurrency: concurrency) }
            guard done.wait(timeout: .now() + timeout) == .success else {
                fail("\(phase): not every answer arrived within \(timeout) s", status: 1)
            }
            guard phase == "timed" else { continue }
            let seconds = Double(monotonicNanos() &- started) / 1e9
            let cpu = cpuSeconds() - cpuBefore
            let summary = try loop.submit { run.value.summary() }
            printJSONLine([
                "count": total, "ok": summary.ok, "failed": summary.failed, "statuses": summary.statuses,
                "seconds": seconds, "per_s": (Double(total) / seconds).rounded(), "cpu_s": cpu,
                "cpu_us_per_request": (cpu / Double(total) * 1e6).rounded(),
                "concurrency": concurrency, "connections": connections,
            ])
        }
        try loop.submit { run.value.close() }
    }

    /// User + system CPU of this process so far.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}

/// One phase of sends, made and touched on the loop's thread only (`done` is the hand-off to main).
final class SendRun {
    /// Sends request `index`; false when the client pushed back.
    typealias Send = (_ index: Int, _ completion: @escaping (DeliveryResult) -> Void) -> Bool
    let send: Send
    let close: () -> Void
    let done: DispatchSemaphore
    private var total = 0
    private var started = 0
    private var answered = 0
    private var ok = 0
    private var failed = 0
    private var statuses: [String: Int] = [:]

    init(send: @escaping Send, close: @escaping () -> Void, done: DispatchSemaphore) {
        self.send = send
        self.close = close
        self.done = done
    }

    func begin(total: Int, concurrency: Int) {
        self.total = total
        started = 0
        answered = 0
        ok = 0
        failed = 0
        statuses = [:]
        for _ in 0..<min(concurrency, total) { next() }
    }

    private func next() {
        guard started < total else { return }
        let index = started
        started += 1
        let accepted = send(index) { [self] result in
            answered += 1
            switch result {
            case .answer(let response):
                statuses[String(response.status), default: 0] += 1
                if (200...299).contains(response.status) { ok += 1 } else { failed += 1 }
            case .transport(let failure):
                statuses["transport:\(failure)", default: 0] += 1
                failed += 1
            }
            if answered == total { done.signal() } else { next() }
        }
        if !accepted {
            answered += 1
            failed += 1
            statuses["queue_full", default: 0] += 1
            if answered == total { done.signal() }
        }
    }

    func summary() -> (ok: Int, failed: Int, statuses: [String: Int]) { (ok, failed, statuses) }
}
