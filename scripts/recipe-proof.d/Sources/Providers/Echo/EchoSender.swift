import Basics
import HTTP2
import ProviderKit
import PushCore
import Reactor

/// `PushSender` for the echo service on ProviderKit's shared bearer-token HTTP/2 sender: per app one pool, its key
/// as the bearer token (no exchange), `POST /echo` with `{"token":...,"note":...,"payload":<the job's payload>}`.
public final class EchoSender: BearerPoolBacked {
    public let shared: BearerPoolSender

    public init(apps: [ProviderApp<EchoAuth, EchoCredential>], loop: EventLoop, settings: EchoSettings, logger: Logger) {
        shared = BearerPoolSender(loop: loop, settings: settings.pool, platform: .echo, logger: logger)
        for app in apps {
            let auth = app.auth
            shared.add(index: app.index, name: app.name, path: "/echo", exchange: Self.exchange(app.credential)) {
                (Self.exchange(try auth.load()), "/echo")
            }
        }
    }

    /// The key is the token, valid for a day.
    static func exchange(_ credential: EchoCredential) -> AccessTokenCache.Exchange {
        let key = credential.key
        return { .success((key, 86_400)) }
    }

    public static func body(_ notification: PushNotification) -> [UInt8] {
        var body = Array(#"{"token":"#.utf8)
        appendJSONString(notification.deviceToken, to: &body)
        if let note = (notification.provider as? EchoFields)?.note {
            body += Array(#","note":"#.utf8)
            appendJSONString(note, to: &body)
        }
        body += Array(#","payload":"#.utf8) + notification.payload + [UInt8(ascii: "}")]
        return body
    }

    public func send(_ notification: PushNotification, to destination: Destination, afterConnection: Int,
                     completion: @escaping (PushOutcome) -> Void) -> SendAdmission {
        shared.send(app: destination.app, body: Self.body(notification), afterConnection: afterConnection,
                    grantRefused: { .answer(EchoResponse(status: 0, grantRefused: $0)) },
                    read: { response, _ in (.answer(EchoResponse(status: response.status)), .unknown) },
                    completion: completion)
    }
}
