import CurlHTTP
import HTTP2
import ProviderKit
import PushCore
import Reactor

/// `PushSender` over FCM HTTP v1: per FCM app its service account's access tokens and one HTTP/2 pool to the
/// FCM host (a pool per project), made on first use (`BearerPoolSender`, shared with Huawei's). A message goes out
/// as `POST /v1/projects/<project>/messages:send` with `{"message":<the job's bytes>}`. Acts on 401s before the
/// core hears them: the refused access token is dropped, so the core's resend carries a new one. Loop-confined.
public final class FCMSender: BearerPoolBacked {
    public let shared: BearerPoolSender

    /// `apps`: the configuration's FCM apps; `post` makes the token exchanges' POSTs (tests hold or count them).
    public init(apps: [ProviderApp<FCMAuth, ServiceAccount>], loop: EventLoop, fcm: FCMSettings, logger: Logger,
                post: @escaping OAuthTokenEndpoint.Post = OAuthTokenEndpoint.curlPost) {
        shared = BearerPoolSender(loop: loop, settings: fcm, platform: .fcm, logger: logger)
        let options = fcm.tokenOptions
        for app in apps {
            let auth = app.auth
            shared.add(index: app.index, name: app.name, path: Self.path(app.credential),
                       exchange: FCMTokenGrant.exchange(app.credential, options: options, post: post)) {
                // Reads the service account file again (a reload after a pause).
                let account = try auth.load()
                return (FCMTokenGrant.exchange(account, options: options, post: post), Self.path(account))
            }
        }
    }

    static func path(_ account: ServiceAccount) -> String { "/v1/projects/\(account.projectID)/messages:send" }

    /// The body FCM expects around the producer's message bytes, which are not re-encoded; `validateOnly` asks
    /// FCM for its dry run (every check of a real send, nothing delivered).
    public static func body(message: [UInt8], validateOnly: Bool = false) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(message.count + 34)
        // The literals' bytes straight in, no intermediate arrays.
        body.append(contentsOf: "{\"message\":".utf8)
        body.append(contentsOf: message)
        if validateOnly { body.append(contentsOf: ",\"validate_only\":true".utf8) }
        body.append(UInt8(ascii: "}"))
        return body
    }

    public func send(_ notification: PushNotification, to destination: Destination, afterConnection: Int,
                     completion: @escaping (PushOutcome) -> Void) -> SendAdmission {
        shared.send(app: destination.app, body: Self.body(message: notification.payload, validateOnly: notification.validateOnly),
                    afterConnection: afterConnection,
                    grantRefused: { .fcm(FCMResponse(status: 0, grantRefused: $0)) },
                    read: { response, token in
                        var answer = FCMResponse.decode(status: response.status, body: response.body, retryAfter: response.header("retry-after"))
                        var verdict = BearerPoolSender.TokenVerdict.unknown
                        if response.status == 401 && answer.errorCode == nil {
                            answer.afterTokenRefresh = token.afterRefusal
                            verdict = .refused
                        } else if response.status == 200 {
                            verdict = .accepted
                        }
                        return (.fcm(answer), verdict)
                    },
                    completion: completion)
    }

    /// What to check when FCM refused an app's credential: the Firebase console's APNs key when FCM says the
    /// third party (Apple) refused, else the service account.
    public static func credentialHint(_ reason: String) -> String {
        if reason.hasPrefix("THIRD_PARTY_AUTH_ERROR") {
            return "the APNs key (or web push key) in the Firebase console is missing or invalid: Project settings, Cloud Messaging"
        }
        return "check the service account file (herald check-config); it needs the Firebase Cloud Messaging API Admin role"
    }
}
