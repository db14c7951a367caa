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
