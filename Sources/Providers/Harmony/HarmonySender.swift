import Basics
import Foundation
import HTTP2
import ProviderKit
import PushCore
import Reactor

/// `PushSender` over Push Kit v3: per app (one project each) its self-signed JWTs and one HTTP/2 pool to the push
/// host, made on first use (`BearerPoolSender`, shared with FCM's and HMS'). The JWT is the bearer token itself: its
/// "exchange" signs one locally (no request), which the cache reuses until shortly before it ends and signs anew
/// when Push Kit refuses it. A message goes out as `POST /v3/<project id>/messages:send` with `push-type: <n>` and
/// `{"payload":<the job's bytes>,"target":{"token":[...]},"pushOptions":<the job's bytes>}`. Loop-confined.
public final class HarmonySender: BearerPoolBacked {
    public let shared: BearerPoolSender

    /// `apps`: the configuration's HarmonyOS apps.
    public init(apps: [ProviderApp<HarmonyAuth, HarmonyServiceAccount>], loop: EventLoop, harmony: HarmonySettings, logger: Logger) {
        shared = BearerPoolSender(loop: loop, settings: harmony.pool, platform: .harmony, logger: logger)
        let lifetime = Int64(harmony.jwtLifetimeSeconds)
        for app in apps {
            let auth = app.auth
            shared.add(index: app.index, name: app.name, path: app.credential.sendPath,
                       exchange: Self.signer(app.credential, lifetime: lifetime)) {
                // Reads the key file again (a reload after a pause).
                let account = try auth.load()
                return (Self.signer(account, lifetime: lifetime), account.sendPath)
            }
        }
    }

    /// The cache's exchange: a JWT signed now, valid `lifetime` seconds; a key that cannot sign is a refused credential.
    public static func signer(_ account: HarmonyServiceAccount, lifetime: Int64) -> AccessTokenCache.Exchange {
        {
            do {
                let jwt = try HarmonyJWT.sign(account, issuedAt: Int64(Date().timeIntervalSince1970), lifetimeSeconds: lifetime)
                return .success((token: jwt, lifetimeSeconds: lifetime))
            } catch {
                return .failure(.refused("cannot sign a JWT with \(account): \(error)"))
            }
        }
    }

    /// The request body around the producer's bytes, which are not re-encoded.
    public static func body(payload: [UInt8], tokens: [String], pushOptions: [UInt8]?) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(payload.count + (pushOptions?.count ?? 0) + tokens.reduce(64) { $0 + $1.utf8.count + 3 })
        body.append(contentsOf: #"{"payload":"#.utf8)
        body.append(contentsOf: payload)
        body.append(contentsOf: #","target":{"token":["#.utf8)
        for (index, token) in tokens.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            appendJSONString(token, to: &body)
        }
        body.append(contentsOf: "]}".utf8)
        if let pushOptions {
            body.append(contentsOf: #","pushOptions":"#.utf8)
            body.append(contentsOf: pushOptions)
        }
        body.append(UInt8(ascii: "}"))
        return body
    }

    public func send(_ notification: PushNotification, to destination: Destination, afterConnection: Int,
                     completion: @escaping (PushOutcome) -> Void) -> SendAdmission {
        guard let fields = notification.provider as? HarmonyFields else { return .unavailable("not a HarmonyOS notification") }
        return shared.send(app: destination.app, body: Self.body(payload: notification.payload, tokens: fields.tokens, pushOptions: fields.pushOptions),
                           headers: [HTTP2Header(name: "push-type", value: fields.pushType.header)],
                           afterConnection: afterConnection,
                           grantRefused: { .harmony(HarmonyResponse(signingFailed: $0)) },
                           read: Self.read,
                           completion: completion)
    }

    /// Push Kit's answer, and what it says of the JWT: a refused or expired one is dropped so the resend signs another.
    static func read(_ response: HTTP2Response, token: AccessTokenCache.Token) -> (DeliveryResult, BearerPoolSender.TokenVerdict) {
        var answer = HarmonyResponse.decode(status: response.status, body: response.body)
        guard !answer.envelope.refusesAccessToken else {
            answer.envelope.afterTokenRefresh = token.afterRefusal
            return (.harmony(answer), .refused)
        }
        return (.harmony(answer), response.status == 200 ? .accepted : .unknown)
    }

    /// What to check when Push Kit refused an app's JWT.
    public static func credentialHint(_ reason: String) -> String {
        "check the app's service account key file (API Console, Credentials: project_id, key_id, sub_account, private_key) and that Push Kit is enabled for the project; herald check-config signs a JWT with it"
    }
}
