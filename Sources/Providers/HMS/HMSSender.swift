import HTTP2
import ProviderKit
import PushCore
import Reactor

/// `PushSender` over Huawei Push Kit: per app its client-credentials access tokens and one HTTP/2 pool to the push
/// host, made on first use (`BearerPoolSender`, shared with FCM's). A message goes out as
/// `POST /v1/<app id>/messages:send` with `{"validate_only":<bool>,"message":<the job's bytes>}`. Acts on a refused
/// access token before the core hears it: the token is dropped, so the core's resend carries a new one. Loop-confined.
public final class HMSSender: BearerPoolBacked {
    public let shared: BearerPoolSender

    /// `apps`: the configuration's Huawei apps; `post` makes the token exchanges' POSTs (tests hold or count them).
    public init(apps: [ProviderApp<HMSAuth, HMSCredential>], loop: EventLoop, hms: HMSSettings, logger: Logger,
                post: @escaping OAuthTokenEndpoint.Post = OAuthTokenEndpoint.curlPost) {
        shared = BearerPoolSender(loop: loop, settings: hms.pool, platform: .hms, logger: logger)
        for app in apps {
            let auth = app.auth
            shared.add(index: app.index, name: app.name, path: app.credential.sendPath,
                       exchange: HMSTokenGrant.exchange(app.credential, settings: hms, post: post)) {
                // Reads the client secret file again (a reload after a pause).
                let credential = try auth.load()
                return (HMSTokenGrant.exchange(credential, settings: hms, post: post), credential.sendPath)
            }
        }
    }

    /// The body Push Kit expects around the producer's message bytes, which are not re-encoded; `validateOnly`
    /// asks for Push Kit's dry run.
    public static func body(message: [UInt8], validateOnly: Bool = false) -> [UInt8] {
        // One allocation, sized once: the literal's bytes are copied straight in (no interpolated String, no
        // intermediate arrays).
        let head = validateOnly ? "{\"validate_only\":true,\"message\":" : "{\"validate_only\":false,\"message\":"
        var body: [UInt8] = []
        body.reserveCapacity(head.utf8.count + message.count + 1)
        body.append(contentsOf: head.utf8)
        body.append(contentsOf: message)
        body.append(UInt8(ascii: "}"))
        return body
    }

    public func send(_ notification: PushNotification, to destination: Destination, afterConnection: Int,
                     completion: @escaping (PushOutcome) -> Void) -> SendAdmission {
        shared.send(app: destination.app, body: Self.body(message: notification.payload, validateOnly: notification.validateOnly),
                    afterConnection: afterConnection,
                    grantRefused: { .hms(HMSResponse(status: 0, grantRefused: $0)) },
                    read: Self.read,
                    completion: completion)
    }

    /// Push Kit's answer, and what it says of the access token: a refused or expired one is dropped so the resend
    /// fetches another.
    static func read(_ response: HTTP2Response, token: AccessTokenCache.Token) -> (DeliveryResult, BearerPoolSender.TokenVerdict) {
        var answer = HMSResponse.decode(status: response.status, body: response.body)
        guard !answer.refusesAccessToken else {
            answer.afterTokenRefresh = token.afterRefusal
            return (.hms(answer), .refused)
        }
        return (.hms(answer), response.status == 200 ? .accepted : .unknown)
    }

    /// What to check when Huawei refused an app's credential.
    public static func credentialHint(_ reason: String) -> String {
        "check the app's app_id and client secret file (AppGallery Connect, Project settings, App information); herald check-config does the exchange"
    }
}
