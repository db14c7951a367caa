import APNs
import Basics
import FCM
import Foundation
import PushCore
import Reactor
import Worker

/// The FCM sender alone (the worker's own `FCMSender`: OAuth token via libcurl, HTTP/2 pool), `count`
/// messages kept `concurrency` in flight, timed after a warm-up like `send`.
enum FCMSendBenchCommand {
    static let command = Command(
        bench: "fcm-send", abstract: "The FCM sender alone, straight from memory.",
        options: [
            .value("url", "https://host:port", "FCM host (the simulator's base URL; required)."),
            .value("ca-file", "pem", "CA of the host and of the token endpoint (required)."),
            .value("service-account", "json", "Service account file (required)."),
            .value("count", "n", "Messages to send (default 100000)."),
            .value("concurrency", "n", "Requests in flight (default 1000)."),
            .value("connections", "n", "HTTP/2 connections (default 2)."),
            .value("warmup", "n", "Requests sent before timing starts (default 2000)."),
            .value("timeout", "seconds", "Give up after this long (default 300)."),
        ],
        run: run)

    static func run(_ flags: ParsedArguments) throws {
        var fcm = Configuration.FCMSettings.fcm
        fcm.url = try flags.required("url")
        fcm.caFile = try flags.required("ca-file")
        fcm.connectionsPerPool = max(1, try flags.int("connections", default: 2))
        fcm.requestTimeoutMs = 30_000
        let count = try flags.int("count", default: 100_000)
        let concurrency = max(1, try flags.int("concurrency", default: 1000))
        fcm.maxQueuedPerPool = max(20_000, concurrency)
        let auth = FCMAuth(serviceAccountFile: try flags.required("service-account"))
        let account = try auth.load()
        let notifications = (0..<4096).map { i -> PushNotification in
            JobSpec().fcmNotification(message: Array(BenchJobs.fcmMessage(i).utf8), target: .token(BenchJobs.fcmToken(i)))
        }
        let loop = try EventLoop.startThread(name: "bench-fcm-send")
        defer { loop.stop(); _ = loop.waitUntilStopped() }
        let done = DispatchSemaphore(value: 0)
        let settings = fcm
        let run = try loop.submit {
            let sender = FCMSender(apps: [ProviderApp(index: 0, name: "bench", auth: auth, credential: account)], loop: loop, fcm: settings, logger: Logger(component: "bench", minimumLevel: .warning))
            let destination = Destination(app: 0, environment: .production, platform: .fcm)
            let send: SendRun.Send = { index, completion in
                sender.send(notifications[index % notifications.count], to: destination, afterConnection: 0) { completion($0.result) } == .accepted
            }
            return LoopBound(SendRun(send: send, close: { sender.closeAll() }, done: done), loop: loop)
        }
        try SendBenchCommand.timePhases(loop: loop, run: run, done: done, warmup: try flags.int("warmup", default: 2000), count: count,
                                        concurrency: concurrency, connections: fcm.connectionsPerPool,
                                        timeout: try flags.double("timeout", default: 300))
    }
}
