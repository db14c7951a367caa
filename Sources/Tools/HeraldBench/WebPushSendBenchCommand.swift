import Basics
import Foundation
import ProviderKit
import PushCore
import Reactor
import WebPush
import Worker

/// The Web Push sender alone (the worker's own `WebPushSender`: a fresh encryption and a cached VAPID token per
/// message, a pool per origin), `count` messages kept `concurrency` in flight to the subscriptions in a file
/// (`herald mock-webpush --subscriptions-file`), timed after a warm-up like `send`.
enum WebPushSendBenchCommand {
    static let command = Command(
        bench: "webpush-send", abstract: "The Web Push sender alone, straight from memory.",
        options: [
            .value("subscriptions", "file", "PushSubscription JSON lines (the simulator's --subscriptions-file; required)."),
            .value("ca-file", "pem", "CA of the push service (required)."),
            .value("vapid-key", "key", "VAPID private key, PEM or base64url (required)."),
            .value("count", "n", "Messages to send (default 20000)."),
            .value("concurrency", "n", "Requests in flight (default 500)."),
            .value("connections", "n", "HTTP/2 connections to the push service (default 2)."),
            .value("warmup", "n", "Requests sent before timing starts (default 1000)."),
            .value("timeout", "seconds", "Give up after this long (default 300)."),
        ],
        run: run)

    static func run(_ flags: ParsedArguments) throws {
        var settings = WebPushSettings()
        settings.caFile = try flags.required("ca-file")
        settings.connectionsPerPool = max(1, try flags.int("connections", default: 2))
        settings.requestTimeoutMs = 30_000
        let count = try flags.int("count", default: 20_000)
        let concurrency = max(1, try flags.int("concurrency", default: 500))
        settings.maxQueuedPerPool = max(20_000, concurrency)
        let lines = try BenchJobs.subscriptions(file: try flags.required("subscriptions"))
        let policy = PushServicePolicy(hosts: ["127.0.0.1", "localhost"], allowsIPLiterals: true, allowsPrivateAddresses: true)
        let auth = WebPushAuth(vapidKey: try flags.required("vapid-key"), subject: "mailto:bench@example.com", policy: policy)
        let credential = try auth.load()
        let messages = try lines.enumerated().map { index, line -> WebPushMessage in
            var read = WebPushJobMembers()
            read.subscription = Array(line.utf8)
            read.payload = Array(BenchJobs.webPushPayload(index).utf8)
            read.ttl = 60
            switch WebPushJob.message(read, topic: nil, policy: policy) {
            case .success(let message): return message
            case .failure(let failure): throw BenchError("subscription \(index + 1): \(failure)")
            }
        }
        let loop = try EventLoop.startThread(name: "bench-webpush-send")
        defer { loop.stop(); _ = loop.waitUntilStopped() }
        let done = DispatchSemaphore(value: 0)
        let run = try loop.submit { [settings] in
            let sender = WebPushSender(apps: [ProviderApp(index: 0, name: "bench", auth: auth, credential: credential)], loop: loop,
                                       settings: settings, logger: Logger(component: "bench", minimumLevel: .warning))
            let send: SendRun.Send = { index, completion in
                sender.send(messages[index % messages.count], app: 0) { completion($0.result) } == .accepted
            }
            return LoopBound(SendRun(send: send, close: { sender.closeAll() }, done: done), loop: loop)
        }
        try SendBenchCommand.timePhases(loop: loop, run: run, done: done, warmup: try flags.int("warmup", default: 1000), count: count,
                                        concurrency: concurrency, connections: settings.connectionsPerPool,
                                        timeout: try flags.double("timeout", default: 300))
    }
}
