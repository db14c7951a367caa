import PushCore

/// A Web Push job, checked whole at intake (so a bad one is rejected with its reason, never sent): the
/// subscription, the payload's size after encryption, `ttl`, `urgency`, `topic`, and the app's allow-list.
public enum WebPushJob {
    /// The message the job asks for, or the reason it cannot be sent.
    public static func message(_ spec: JobSpec, policy: PushServicePolicy) -> Result<WebPushMessage, WebPushJobError> {
        let subscription: PushSubscription
        do { subscription = try PushSubscription.parse(spec.subscription) } catch { return .failure(.init("BadSubscription: \(error)")) }
        do { try policy.check(subscription.endpoint) } catch { return .failure(.init("EndpointRefused: \(error)")) }
        var urgency: WebPushMessage.Urgency?
        if let text = spec.urgency {
            guard let value = WebPushMessage.Urgency(rawValue: text) else {
                return .failure(.init("BadUrgency: \"urgency\" is \"\(text.prefix(64))\"; expected very-low, low, normal or high"))
            }
            urgency = value
        }
        do {
            return .success(try WebPushMessage(subscription: subscription, payload: spec.payload, ttl: spec.ttl, urgency: urgency, topic: spec.topic))
        } catch .payloadTooLarge(let n) {
            return .failure(.init("PayloadTooLarge: " + WebPushMessageError.payloadTooLarge(n).description))
        } catch {
            return .failure(.init("BadMessage: \(error)"))
        }
    }
}

public struct WebPushJobError: Error, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

extension JobSpec {
    /// The notification the core carries for a Web Push job: its endpoint as the token (results and the
    /// dropped-tokens stream name it), its topic, payload and subscription.
    public func webPushNotification(_ message: WebPushMessage) -> PushNotification {
        var notification = PushNotification(deviceToken: message.subscription.endpoint.url, topic: message.topic ?? "", environment: .production,
                                            expiration: expiration, payload: payload, platform: .webpush)
        notification.webPush = WebPushFields(subscription: subscription, ttl: ttl, urgency: urgency)
        return notification
    }
}

extension PushNotification {
    /// The Web Push message back from a notification made by `webPushNotification` (the sender's side).
    func webPushMessage() throws -> WebPushMessage {
        guard let fields = webPush else { throw WebPushJobError("not a Web Push notification") }
        let subscription: PushSubscription
        do { subscription = try PushSubscription.parse(fields.subscription) } catch { throw WebPushJobError("BadSubscription: \(error)") }
        return try WebPushMessage(subscription: subscription, payload: payload, ttl: fields.ttl,
                                  urgency: fields.urgency.flatMap(WebPushMessage.Urgency.init(rawValue:)), topic: topic.isEmpty ? nil : topic)
    }
}
