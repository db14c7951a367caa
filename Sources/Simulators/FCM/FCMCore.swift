import Basics
import COpenSSL
import Foundation
import Glibc
import Reactor
import TLS

/// The FCM simulator's provider state on the loop: accounts, issued access tokens, faults, counters and the
/// accepted log; and the endpoints (`/token`, `messages:send`, `/fcm/send`, `/_mock/...`). The shared
/// `MockServerCore` runs its connections, each with a `RoutedConnection`.
///
/// Confined to the loop thread; `MockFCMServer` reaches it only through its `SimulatorHandle`, inside `loop.submit`.
final class FCMCore: MockProvider, RoutingProvider {
    let configuration: MockFCMConfiguration
    let faults: FCMFaultEngine
    /// Accounts by client email.
    let accounts: [String: MockServiceAccount]
    /// Set once the port is known: `https://<host>:<port>/token`.
    var tokenURI = ""
    /// The FCM counters; the connection ones are in `counters` (`snapshot()` joins them).
    var stats = MockFCMStats()
    let counters: ConnectionCounters
    var accepted: [MockFCMAcceptedMessage] = []
    private var statusCounts = StatusCounts()
    private var issued: [String: IssuedToken] = [:]
    private let logFile: JSONLinesLog?
    private var random = SeededRandom.fromSystem()

    /// An access token this server handed out.
    struct IssuedToken {
        let account: MockServiceAccount
        let scopes: [String]
        let expiresAt: Int64
    }

    init(configuration: MockFCMConfiguration, accounts: [MockServiceAccount], counters: ConnectionCounters) throws {
        self.configuration = configuration
        self.counters = counters
        var byEmail: [String: MockServiceAccount] = [:]
        for account in accounts { byEmail[account.clientEmail] = account }
        self.accounts = byEmail
        faults = FCMFaultEngine(script: configuration.faults, defaultSeed: configuration.seed)
        logFile = try configuration.logFile.map { try JSONLinesLog(path: $0) }
    }

    /// FCM is TLS only; ALPN picks h2, else http/1.1.
    func makeTLSContext() throws -> OpaquePointer? { try ServerLoop.makeH2OrHTTP1Context(configuration.tls, service: "FCM") }

    // MARK: connections

    var connectionFaults: ConnectionFaults { faults.script.connectionFaults }
    var maxConcurrentStreams: UInt32 { configuration.maxConcurrentStreams }

    func stopping() { logFile?.flush() }

    // MARK: endpoints

    /// Routes one complete request. Sends go through the connection-level faults first (the caller counted them).
    func handle(_ request: RoutedRequest, connection: Int, transport: String) -> (RoutedOutcome, Int) {
        let path = request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        if UTF8Matching.hasPrefix(path, "/_mock/") { return (.answer(control(request, path: path)), 0) }
        if path == "/token" && request.method == "POST" { return (.answer(token(request)), 0) }
        if path == "/fcm/send" {
            stats.legacyRequests += 1
            return (.answer(Self.notFoundPage(path)), 0)
        }
        if let project = Self.sendProject(path), request.method == "POST" {
            return send(request, project: project, connection: connection, transport: transport)
        }
        return (.answer(Self.notFoundPage(path)), 0)
    }

    /// `/v1/projects/<project>/messages:send` → `<project>`.
    static func sendProject(_ path: String) -> String? {
        let prefix = "/v1/projects/", suffix = "/messages:send"
        guard path.utf8.count > prefix.utf8.count + suffix.utf8.count, UTF8Matching.hasPrefix(path, prefix), UTF8Matching.hasSuffix(path, suffix) else { return nil }
        let project = String(path.utf8.dropFirst(prefix.utf8.count).dropLast(suffix.utf8.count))!
        return project.contains("/") ? nil : project
    }

    /// True for the path of a send (counted by the connection-level faults).
    static func isSend(_ request: RoutedRequest) -> Bool {
        request.method == "POST" && sendProject(request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? "") != nil
    }

    /// Google's front end answers unknown paths (the legacy `/fcm/send` among them) with this plain HTML page.
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

    private func randomHex(_ bytes: Int) -> String {
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
    private func token(_ request: RoutedRequest) -> RoutedAnswer {
        stats.tokenRequests += 1
        if faults.tokenRequestFails() {
            stats.tokenErrors["internal_failure", default: 0] += 1
            return .json(503, OAuthError(status: 503, error: "internal_failure", description: "Backend Error").body())
        }
        switch FCMTokenGrant.verify(body: request.body, accounts: accounts, tokenURI: tokenURI, now: now()) {
        case .failure(let error):
            stats.tokenErrors[error.error, default: 0] += 1
            return .json(error.status, error.body())
        case .success(let grant):
            let lifetime = configuration.accessTokenLifetimeSeconds
            if issued.count >= 10_000 { issued = issued.filter { $0.value.expiresAt > now() } }  // bounded memory under a refresh storm
            let token = "ya29.mock." + randomHex(32)
            issued[token] = IssuedToken(account: grant.account, scopes: grant.scopes, expiresAt: now() + Int64(lifetime))
            stats.tokensIssued += 1
            var body = Array(#"{"access_token":"#.utf8)
            appendJSONString(token, to: &body)
            body += Array(#","expires_in":\#(lifetime),"token_type":"Bearer"}"#.utf8)
            return .json(200, body, extra: [("cache-control", "no-cache, no-store, max-age=0, must-revalidate")])
        }
    }

    /// The bearer check of `messages:send`, as Google answers it (none of these carry an FcmError detail).
    private func authenticate(_ request: RoutedRequest, project: String) -> FCMError? {
        guard configuration.requireAuthentication else { return nil }
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

    private func send(_ request: RoutedRequest, project: String, connection: Int, transport: String) -> (RoutedOutcome, Int) {
        if let error = authenticate(request, project: project) { return (.answer(reject(error)), 0) }
        if request.bodyTooLarge {
            return (.answer(reject(.invalid("message", "Message is too big: the request body is over \(RoutedRequest.bodyLimit) bytes."))), 0)
        }
        let parsed: FCMSend
        switch FCMMessageRules.parse(body: request.body) {
        case .failure(let error): return (.answer(reject(error)), 0)
        case .success(let value): parsed = value
        }
        let (verdict, delay) = faults.decide(token: parsed.token, topic: parsed.topic, project: project)
        switch verdict {
        case .accept:
            return (.answer(accept(parsed, project: project, connection: connection, transport: transport)), delay)
        case .answer(let rejection):
            if rejection.overQuota { stats.quotaRejections += 1 }
            return (.answer(reject(rejection.error)), delay)
        case .connection(let fault):
            return (.fault(fault), delay)
        }
    }

    private func reject(_ error: FCMError) -> RoutedAnswer {
        statusCounts.count(error.status)
        stats.byErrorCode[error.errorCode ?? error.rpcStatus, default: 0] += 1
        var extra: [(String, String)] = []
        if let seconds = error.retryAfterSeconds { extra.append(("retry-after", String(seconds))) }
        return .json(error.status, error.body(), extra: extra)
    }

    private func accept(_ send: FCMSend, project: String, connection: Int, transport: String) -> RoutedAnswer {
        statusCounts.count(200)
        stats.accepted += 1
        // A dry run answers a fixed fake id, as FCM does.
        let id = send.validateOnly ? "fake_message_id" : "0:\(wallClockMillis() * 1000 + Int64(random.next() % 1000))%\(randomHex(8))"
        if send.validateOnly { stats.validateOnly += 1 }
        let name = "projects/\(project)/messages/\(id)"
        if configuration.recordAccepted || logFile != nil {
            let entry = MockFCMAcceptedMessage(project: project, token: send.token, topic: send.topic, condition: send.condition, name: name,
                                               message: String(decoding: send.message, as: UTF8.self), validateOnly: send.validateOnly,
                                               transport: transport, connection: connection, timeMillis: wallClockMillis())
            if configuration.recordAccepted { accepted.append(entry) }
            logFile?.append(entry)
        }
        var body = Array(#"{"name":"#.utf8)
        appendJSONString(name, to: &body)
        body.append(UInt8(ascii: "}"))
        return .json(200, body)
    }

    func snapshot() -> MockFCMStats {
        var copy = stats
        counters.report(into: &copy)
        copy.http2Connections = counters.http2Connections
        copy.http1Connections = counters.http1Connections
        copy.byStatus = statusCounts.byStatus
        return copy
    }

    // MARK: control paths (not part of FCM)

    private func control(_ request: RoutedRequest, path: String) -> RoutedAnswer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        func json(_ value: some Encodable) -> [UInt8] { (try? encoder.encode(value)).map { [UInt8]($0) } ?? Array("{}".utf8) }
        switch (request.method, path) {
        case ("GET", "/_mock/stats"):
            return .json(200, json(snapshot()))
        case ("GET", "/_mock/accepted"):
            return .json(200, json(accepted))
        case ("POST", "/_mock/reset"):
            resetCounters()
            return .json(200, json(["status": "reset"]))
        case ("POST", "/_mock/config"):
            do {
                faults.replace(try MockFCMFaultScript.parse(Data(request.body)), defaultSeed: configuration.seed)
                return .json(200, json(["status": "loaded"]))
            } catch {
                return .json(400, json(["error": "\(error)"]))
            }
        case ("POST", "/_mock/revoke-tokens"):
            revokeAccessTokens()
            return .json(200, json(["status": "revoked"]))
        case ("GET", "/_mock/config"):
            return .json(200, json(faults.script))
        default:
            return .json(404, json(["error": "unknown control path \(path)"]))
        }
    }

    /// Every access token issued so far is refused from now on (401, as Google answers a revoked token).
    func revokeAccessTokens() { issued.removeAll() }

    func resetCounters() {
        stats = MockFCMStats()
        counters.reset()
        statusCounts = StatusCounts()
        accepted.removeAll()
        faults.replace(faults.script, defaultSeed: configuration.seed)
    }
}
