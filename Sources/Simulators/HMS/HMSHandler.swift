import Basics
import Foundation
import Reactor

/// The Push Kit simulator's part of its `SendAPICore`: the apps, the access tokens issued, and the endpoints as
/// Huawei answers them: `POST /oauth2/v3/token` (client credentials), `POST /v1/<app id>/messages:send` (bearer
/// check, Push Kit's message rules, the tokens' fates, `{"code","msg","requestId"}`), any other path a 404.
///
/// Confined to the loop thread, inside its core.
final class HMSHandler: SendAPIHandler {
    typealias Settings = MockHMSApps
    typealias Counters = MockHMSCounters
    typealias Accepted = MockHMSAcceptedMessage
    typealias Send = HMSSend

    static let service = "Push Kit"
    static let tokenPath = "/oauth2/v3/token"
    static let overQuota: WritableKeyPath<MockHMSCounters, Int> & Sendable = \.flowControlled

    /// Client secrets by app id.
    let apps: [String: String]
    private var issued: [String: (app: String, expiresAt: Int64)] = [:]
    private var requestIDs = HuaweiRequestIDs()

    init(apps: [MockHMSApp]) {
        var secrets: [String: String] = [:]
        for app in apps { secrets[app.appId] = app.clientSecret }
        self.apps = secrets
    }

    /// `/v1/<app id>/messages:send` → `<app id>`.
    static func sendTarget(_ path: String) -> String? { UTF8Matching.segment(of: path, between: "/v1/", and: "/messages:send") }

    func unknownPath(_ path: String, core: Core) -> RoutedAnswer {
        RoutedAnswer(status: 404, headers: [("content-type", "text/plain")], body: Array("Service not found\n".utf8))
    }

    private func now() -> Int64 { wallClockMillis() / 1000 }

    /// Huawei's shape of an access token: base64 (so `/` and `+` occur), about 130 characters.
    private static func newAccessToken(_ random: inout SeededRandom) -> String {
        var bytes: [UInt8] = [0x0e, 0x01, 0x00]
        while bytes.count < 99 { withUnsafeBytes(of: random.next()) { bytes += $0 } }
        return Data(bytes.prefix(99)).base64EncodedString()
    }

    /// `{"error":1101,"sub_error":N,"error_description":...}` with 400, as Huawei's OAuth server refuses a client.
    private func oauthError(_ sub: Int, _ description: String, status: Int = 400, error: Int = 1101, core: Core) -> RoutedAnswer {
        core.stats.tokenErrors["\(error)/\(sub)", default: 0] += 1
        var body = Array(#"{"error":\#(error),"sub_error":\#(sub),"error_description":"#.utf8)
        appendJSONString(description, to: &body)
        body.append(UInt8(ascii: "}"))
        return .json(status, body)
    }

    /// `POST /oauth2/v3/token`: the client-credentials grant.
    func token(_ request: RoutedRequest, core: Core) -> RoutedAnswer {
        core.stats.tokenRequests += 1
        if core.faults.tokenRequestFails() { return oauthError(0, "System rate limiting triggered", status: 503, error: 503, core: core) }
        let fields = FormFields.parse(request.body)
        guard fields["grant_type"] == "client_credentials" else { return oauthError(20001, "unsupported grant_type", core: core) }
        guard let client = fields["client_id"], !client.isEmpty, client.utf8.count <= 64, client.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return oauthError(20002, "invalid client_id format", core: core)
        }
        guard let secret = apps[client] else { return oauthError(20003, "invalid client_id", core: core) }
        guard let given = fields["client_secret"], !given.isEmpty else { return oauthError(20171, "client_secret is empty", core: core) }
        guard given == secret else { return oauthError(12304, "invalid client_secret", core: core) }
        let lifetime = core.configuration.accessTokenLifetimeSeconds
        if issued.count >= 10_000 { issued = issued.filter { $0.value.expiresAt > now() } }  // bounded under a refresh storm
        let token = Self.newAccessToken(&core.random)
        issued[token] = (client, now() + Int64(lifetime))
        core.stats.tokensIssued += 1
        // Huawei escapes "/" in its JSON (its docs tell curl users to turn "\/" back into "/"): so does this.
        var body = Array(#"{"access_token":""#.utf8)
        for byte in token.utf8 {
            if byte == UInt8(ascii: "/") { body.append(UInt8(ascii: "\\")) }
            body.append(byte)
        }
        body += Array(#"","expires_in":\#(lifetime),"token_type":"Bearer"}"#.utf8)
        return .json(200, body, extra: [("cache-control", "no-store")])
    }

    /// The bearer check of `messages:send`: unknown, missing or another app's token 80200001, expired 80200003.
    func authenticate(_ request: RoutedRequest, target app: String, core: Core) -> HMSResult? {
        guard core.configuration.requireAuthentication else { return nil }
        guard let header = request.authorization, header.utf8.count > 7, UTF8Matching.hasPrefixIgnoringCase(header, "bearer ") else {
            return .authenticationError
        }
        let token = String(decoding: header.utf8.dropFirst(7), as: UTF8.self).trimmingCharacters(in: .whitespaces)
        guard let entry = issued[token], entry.app == app else { return .authenticationError }
        return entry.expiresAt <= now() ? .tokenExpired : nil
    }

    func parse(_ request: RoutedRequest) -> Result<HMSSend, HMSResult> {
        request.bodyTooLarge ? .failure(.bodyTooLarge) : HMSMessageRules.parse(body: request.body)
    }

    func subject(_ send: HMSSend, target app: String) -> SendSubject {
        SendSubject(target: app, tokens: send.tokens ?? [], topic: send.topic)
    }

    private func nextRequestId() -> String { requestIDs.next() }

    func reject(_ result: HMSResult, core: Core) -> RoutedAnswer { result.answer(requestId: nextRequestId(), core: core) }

    private func answer(_ result: HMSResult, requestId: String, core: Core) -> RoutedAnswer { result.answer(requestId: requestId, core: core) }

    /// A checked send that passed the faults: its tokens' fates decide 80000000, 80100000 or 80300007.
    func accept(_ send: HMSSend, target app: String, connection: Int, transport: String, core: Core) -> RoutedAnswer {
        let tokens = send.tokens ?? []
        let state = core.faults.script.extras
        let illegal = tokens.filter(state.isIllegal)
        let result: HMSResult
        if !tokens.isEmpty && illegal.count == tokens.count {
            result = .allTokensInvalid
        } else if !illegal.isEmpty {
            result = .partialSuccess(success: tokens.count - illegal.count, illegal: illegal)
        } else {
            result = .success
        }
        core.stats.tokensIllegal += illegal.count
        if result.status == 200 {
            core.stats.accepted += 1
            core.stats.tokensDelivered += tokens.count - illegal.count
            if send.validateOnly { core.stats.validateOnly += 1 }
        }
        let requestId = nextRequestId()
        if core.keepsAccepted {
            core.record(MockHMSAcceptedMessage(app: app, tokens: send.tokens, topic: send.topic, condition: send.condition, illegalTokens: illegal,
                                               code: result.code, requestId: requestId, message: String(decoding: send.message, as: UTF8.self),
                                               validateOnly: send.validateOnly, transport: transport, connection: connection, timeMillis: wallClockMillis()))
        }
        return answer(result, requestId: requestId, core: core)
    }

    /// `POST /_mock/expire-tokens`, besides the shared control paths.
    func control(method: String, path: String) -> String? {
        guard method == "POST", path == "/_mock/expire-tokens" else { return nil }
        expireAccessTokens()
        return "expired"
    }

    /// Every access token issued so far is unknown from now on (80200001).
    func revokeAccessTokens() { issued.removeAll() }

    /// Every access token issued so far has expired from now on (80200003): a client's refresh path.
    func expireAccessTokens() {
        let past = now() - 1
        for key in Array(issued.keys) { issued[key]?.expiresAt = past }
    }
}
