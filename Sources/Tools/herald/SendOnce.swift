import Basics
import PushCore
import Reactor
import Worker

/// One notification through a provider's own sender on a loop of its own, for `herald send`: the sender is made on
/// the loop, closed after its answer; nil when no answer came within `timeoutSeconds`.
func sendOnce(_ notification: PushNotification, to destination: Destination, timeoutSeconds: Double,
              sender makeSender: @escaping @Sendable (EventLoop) -> PushSender) throws -> DeliveryResult? {
    let loop = try EventLoop.startThread(name: "herald-send")
    defer { loop.stop(); loop.waitUntilStopped() }
    let answer = LockedValue<DeliveryResult?>(nil)
    try loop.submit {
        let sender = makeSender(loop)
        let admission = sender.send(notification, to: destination, afterConnection: 0) { outcome in
            answer.withLock { $0 = outcome.result }
            sender.closeAll()
        }
        if admission != .accepted { answer.withLock { $0 = .transport(.connectionFailed("\(admission)")) } }
    }
    return answer.wait(until: { $0 != nil }, timeoutSeconds: timeoutSeconds, then: { $0 }) ?? nil
}

/// The one app of `platform` that `herald send --config FILE [--app NAME]` names, and the configuration it is in.
func sendConfiguredApp(_ args: ParsedArguments, platform: Platform) throws -> (configuration: Configuration, app: Configuration.AppSettings) {
    let configuration = try loadConfiguration(args)
    return (configuration, configuration.apps[try AppDirectory(configuration.apps).index(app: args.value("app"), topic: nil, platform: platform)])
}

/// A bearer-pool provider's `--url`, `--ca-file` and `--timeout-ms` over its settings (Huawei's, HarmonyOS', Expo's).
func sendPoolFlags(_ args: ParsedArguments, into pool: inout BearerPoolSettings) throws {
    if let url = args.value("url") { pool.url = url }
    if let ca = args.value("ca-file") { pool.caFile = ca }
    if let timeout = try args.int("timeout-ms") {
        guard (100...3_600_000).contains(timeout) else { throw UsageError("--timeout-ms must be 100...3600000") }
        pool.requestTimeoutMs = timeout
    }
}
