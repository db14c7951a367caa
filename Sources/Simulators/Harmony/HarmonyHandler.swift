import Basics
import Foundation
import Reactor

/// The Push Kit v3 simulator's part of its `SendAPICore`: the service accounts, the JWTs seen, and the endpoint as
/// Huawei answers it: `POST /v3/<project id>/messages:send` (the JWT checked, the `push-type` header and body checked,
/// the tokens' fates, `{"code","msg","requestId"}`); v3 has no token endpoint (the JWT is self-signed), so that
/// path is a 404 like any other.
///
/// Confined to the loop thread, inside its core.
final class HarmonyHandler: SendAPIHandler {
    typealias Settings = MockHarmonyAccounts
    typealias Counters = MockHMSCounters
    typealias Accepted = MockHarmonyAcceptedMessage
    typealias Send = HarmonySend

    static let service = "Push Kit v3"
    static let tokenPath = "/oauth2/v3/token"
    static let overQuota: WritableKeyPath<MockHMSCounters, Int> & Sendable = \.flowControlled

    /// Service accounts by project id.
    let accounts: [String: MockHarmonyAccount]
    /// JWTs that passed, and whether they were since revoked (80200001) or expired (80200003) by a control call.
    private var seen: [String: JWTState] = [:]
    private var requestIDs = HuaweiRequestIDs()

    private enum JWTState { case valid(expiresAt: Int64, project: String), revoked, expired }

    init(accounts: [MockHarmonyAccount]) {
        var byProject: [String: MockHarmonyAccount] = [:]
        for account in accounts { byProject[account.projectID] = account }
        self.accounts = byProject
    }

    /// `/v3/<project id>/messages:send` → `<project id>`.
    static func sendTarget(_ path: String) -> String? { UTF8Matching.segment(of: path, between: "/v3/", and: "/messages:send") }

    func unknownPath(_ path: String, core: Core) -> RoutedAnswer {
        RoutedAnswer(status: 404, headers: [("content-type", "text/plain")], body: Array("Service not found\n".utf8))
    }

    /// Push Kit v3 takes a self-signed JWT: no grant to make.
    func token(_ request: RoutedRequest, core: Core) -> RoutedAnswer { unknownPath(request.path, core: core) }

    /// A JWT seen before is not verified again (its signature and claims cannot have changed), only its `exp`:
    /// Push Kit's cost per request is then the request's, as a client reusing its JWT for an hour sees it.
    func authenticate(_ request: RoutedRequest, target project: String, core: Core) -> HMSResult? {
        guard core.configuration.requireAuthentication else { return nil }
        let now = wallClockMillis() / 1000
        let jwt = String(decoding: (request.authorization ?? "").utf8.dropFirst(7), as: UTF8.self).trimmingCharacters(in: .whitespaces)
        switch seen[jwt] {
        case .revoked?: return HMSResult(status: 401, code: "80200001", msg: "Authentication failed: the JWT was revoked")
        case .expired?: return .jwtExpired
        case .valid(let expiresAt, let seenProject)? where seenProject == project && UTF8Matching.hasPrefixIgnoringCase(request.authorization ?? "", "bearer "):
            return expiresAt > now ? nil : .jwtExpired
        default:
            if let refusal = MockHarmonyJWT.check(request.authorization, account: accounts[project], now: now) { return refusal }
            if seen.count >= 10_000 { seen = seen.filter { if case .valid = $0.value { false } else { true } } }  // bounded under a JWT per request
            seen[jwt] = .valid(expiresAt: MockHarmonyJWT.expiry(jwt) ?? now, project: project)
            return nil
        }
    }

    func parse(_ request: RoutedRequest) -> Result<HarmonySend, HMSResult> {
        request.bodyTooLarge ? .failure(.bodyTooLarge) : HarmonyMessageRules.parse(body: request.body, pushType: request.pushType)
    }

    func subject(_ send: HarmonySend, target project: String) -> SendSubject { SendSubject(target: project, tokens: send.tokens, topic: nil) }

    func reject(_ result: HMSResult, core: Core) -> RoutedAnswer { result.answer(requestId: requestIDs.next(), core: core) }

    /// A checked send that passed the faults: its tokens' fates decide 80000000, 80100000 or 80300007.
    func accept(_ send: HarmonySend, target project: String, connection: Int, transport: String, core: Core) -> RoutedAnswer {
        let illegal = send.tokens.filter(core.faults.script.extras.isIllegal)
        let result: HMSResult
        if illegal.count == send.tokens.count {
            result = .allTokensInvalidV3(illegal)
        } else if !illegal.isEmpty {
            result = .partialSuccessV3(success: send.tokens.count - illegal.count, illegal: illegal)
        } else {
            result = .success
        }
        core.stats.tokensIllegal += illegal.count
        if result.status == 200 {
            core.stats.accepted += 1
            core.stats.tokensDelivered += send.tokens.count - illegal.count
        }
        let requestId = requestIDs.next()
        if core.keepsAccepted {
            core.record(MockHarmonyAcceptedMessage(project: project, pushType: send.pushType, tokens: send.tokens, illegalTokens: illegal, code: result.code,
                                                   requestId: requestId, payload: String(decoding: send.payload, as: UTF8.self),
                                                   pushOptions: send.pushOptions.map { String(decoding: $0, as: UTF8.self) }, testMessage: send.testMessage,
                                                   transport: transport, connection: connection, timeMillis: wallClockMillis()))
        }
        return result.answer(requestId: requestId, core: core)
    }

    /// `POST /_mock/expire-tokens`, besides the shared control paths.
    func control(method: String, path: String) -> String? {
        guard method == "POST", path == "/_mock/expire-tokens" else { return nil }
        expireAccessTokens()
        return "expired"
    }

    /// Every JWT seen so far is refused from now on (80200001).
    func revokeAccessTokens() { for key in Array(seen.keys) { seen[key] = .revoked } }

    /// Every JWT seen so far has expired from now on (80200003): a client's re-signing path.
    func expireAccessTokens() { for key in Array(seen.keys) { seen[key] = .expired } }
}
