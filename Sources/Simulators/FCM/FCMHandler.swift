import Basics
import Foundation
import Reactor

/// The FCM simulator's part of its `SendAPICore`: the accounts, the access tokens issued, and the endpoints as
/// Google answers them: `POST /token` (the JWT-bearer grant), `messages:send` (bearer check, FCM's message
/// rules, `{"name":...}`), the legacy `/fcm/send` and any other path (Google's HTML 404).
///
/// Confined to the loop thread, inside its core.
final class FCMHandler: SendAPIHandler {
    typealias Settings = MockFCMAccounts
    typealias Counters = MockFCMCounters
    typealias Accepted = MockFCMAcceptedMessage
    typealias Send = FCMSend

    static let service = "FCM"
    static let tokenPath = "/token"
    static let overQuota: WritableKeyPath<MockFCMCounters, Int> & Sendable = \.quotaRejections

    /// Accounts by client email.
    let accounts: [String: MockServiceAccount]
    /// Set once the port is known: `https://<host>:<port>/token`.
    var tokenURI = ""
    private var issued: [String: IssuedToken] = [:]

    /// An access token this server handed out.
    struct IssuedToken {
        let account: MockServiceAccount
        let scopes: [String]
        let expiresAt: Int64
    }

    init(accounts: [MockServiceAccount]) {
        var byEmail: [String: MockServiceAccount] = [:]
        for account in accounts { byEmail[account.clientEmail] = account }
        self.accounts = byEmail
    }

    /// `/v1/projects/<project>/messages:send` → `<project>`.
    static func sendTarget(_ path: String) -> String? { UTF8Matching.segment(of: path, between: "/v1/projects/", and: "/messages:send") }

    /// The legacy `/fcm/send` (counted) and any other path: Google's front end answers with a plain HTML page.
    func unknownPath(_ path: String, core: Core) -> RoutedAnswer {
        if path == "/fcm/send" { core.stats.legacyRequests += 1 }
        return Self.notFoundPage(path)
    }

    static func notFoundPage(_ path: String) -> RoutedAnswer {
        var escaped = ""
        for character in path {
            switch character {
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "&": escaped += "&amp;"
            default: escaped.append(character)
            }
        }
        let html = """
        <!DOCTYPE html>
        <html lang=en>
          <meta charset=utf-8>
          <title>Error 404 (Not Found)!!1</title>
          <p><b>404.</b> <ins>That’s an error.</ins>
          <p>The requested URL <code>\(escaped)</code> was not found on this server.  <ins>That’s all we know.</ins>

        """
        return RoutedAnswer(status: 404, headers: [("content-type", "text/html; charset=UTF-8")], body: Array(html.utf8))
    }

    private func now() -> Int64 { wallClockMillis() / 1000 }

    private static func randomHex(_ bytes: Int, _ random: inout SeededRandom) -> String {
        var out = ""
        out.reserveCapacity(bytes * 2)
        var remaining = bytes
        while remaining > 0 {
            let value = random.next()
            let take = min(8, remaining)
            for shift in 0..<take { out += String(format: "%02x", Int((value >> (UInt64(shift) * 8)) & 0xff)) }
            remaining -= take
        }
        return out
    }

    /// `POST /token`: the JWT-bearer grant.
    func token(_ request: RoutedRequest, core: Core) -> RoutedAnswer {
        core.stats.tokenRequests += 1
        if core.faults.tokenRequestFails() {
            core.stats.tokenErrors["internal_failure", default: 0] += 1
            return .json(503, OAuthError(status: 503, error: "internal_failure", description: "Backend Error").body())
        }
        switch FCMTokenGrant.verify(body: request.body, accounts: accounts, tokenURI: tokenURI, now: now()) {
        case .failure(let error):
            core.stats.tokenErrors[error.error, default: 0] += 1
            return .json(error.status, error.body())
        case .success(let grant):
            let lifetime = core.configuration.accessTokenLifetimeSeconds
            if issued.count >= 10_000 { issued = issued.filter { $0.value.expiresAt > now() } }  // bounded memory under a refresh storm
            let token = "ya29.mock." + Self.randomHex(32, &core.random)
            issued[token] = IssuedToken(account: grant.account, scopes: grant.scopes, expiresAt: now() + Int64(lifetime))
            core.stats.tokensIssued += 1
            var body = Array(#"{"access_token":"#.utf8)
            appendJSONString(token, to: &body)
            body += Array(#","expires_in":\#(lifetime),"token_type":"Bearer"}"#.utf8)
            return .json(200, body, extra: [("cache-control", "no-cache, no-store, max-age=0, must-revalidate")])
        }
    }

    /// The bearer check of `messages:send`, as Google answers it (none of these carry an FcmError detail).
    func authenticate(_ request: RoutedRequest, target project: String, core: Core) -> FCMError? {
        guard core.configuration.requireAuthentication else { return nil }
        let see = " Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
        guard let header = request.authorization else {
            return FCMError(status: 401, rpcStatus: "UNAUTHENTICATED", message: "Request is missing required authentication credential." + see,
                            errorCode: nil, errorInfoReason: "CREDENTIALS_MISSING")
        }
        let invalid = FCMError.unauthenticated()
        guard header.utf8.count > 7, UTF8Matching.hasPrefixIgnoringCase(header, "bearer ") else { return invalid }
        let token = String(decoding: header.utf8.dropFirst(7), as: UTF8.self).trimmingCharacters(in: .whitespaces)
        guard let entry = issued[token] else { return invalid }
        if entry.expiresAt <= now() {
            var expired = invalid
            expired.errorInfoReason = "ACCESS_TOKEN_EXPIRED"
            return expired
        }
        if !entry.scopes.contains(MockFCMScopes.messaging) && !entry.scopes.contains(MockFCMScopes.cloudPlatform) {
            return FCMError(status: 403, rpcStatus: "PERMISSION_DENIED", message: "Request had insufficient authentication scopes.",
                            errorCode: nil, errorInfoReason: "ACCESS_TOKEN_SCOPE_INSUFFICIENT")
        }
        if entry.account.projectID != project {
            return FCMError(status: 403, rpcStatus: "PERMISSION_DENIED",
                            message: "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).",
                            errorCode: nil, errorInfoReason: "IAM_PERMISSION_DENIED")
        }
        return nil
    }

    func parse(_ request: RoutedRequest) -> Result<FCMSend, FCMError> {
        if request.bodyTooLarge {
            return .failure(.invalid("message", "Message is too big: the request body is over \(RoutedRequest.bodyLimit) bytes."))
        }
        return FCMMessageRules.parse(body: request.body)
    }

    func subject(_ send: FCMSend, target project: String) -> SendSubject {
        SendSubject(target: project, tokens: send.token.map { [$0] } ?? [], topic: send.topic)
    }

    func reject(_ error: FCMError, core: Core) -> RoutedAnswer {
        core.statusCounts.count(error.status)
        core.stats.byErrorCode[error.errorCode ?? error.rpcStatus, default: 0] += 1
        var extra: [(String, String)] = []
        if let seconds = error.retryAfterSeconds { extra.append(("retry-after", String(seconds))) }
        return .json(error.status, error.body(), extra: extra)
    }

    func accept(_ send: FCMSend, target project: String, connection: Int, transport: String, core: Core) -> RoutedAnswer {
        core.statusCounts.count(200)
        core.stats.accepted += 1
        // A dry run answers a fixed fake id, as FCM does.
        let id = send.validateOnly ? "fake_message_id" : "0:\(wallClockMillis() * 1000 + Int64(core.random.next() % 1000))%\(Self.randomHex(8, &core.random))"
        if send.validateOnly { core.stats.validateOnly += 1 }
        let name = "projects/\(project)/messages/\(id)"
        if core.keepsAccepted {
            core.record(MockFCMAcceptedMessage(project: project, token: send.token, topic: send.topic, condition: send.condition, name: name,
                                               message: String(decoding: send.message, as: UTF8.self), validateOnly: send.validateOnly,
                                               transport: transport, connection: connection, timeMillis: wallClockMillis()))
        }
        var body = Array(#"{"name":"#.utf8)
        appendJSONString(name, to: &body)
        body.append(UInt8(ascii: "}"))
        return .json(200, body)
    }

    func control(method: String, path: String) -> String? { nil }

    /// Every access token issued so far is refused from now on (401, as Google answers a revoked token).
    func revokeAccessTokens() { issued.removeAll() }
}
