import Basics
import COpenSSL
import Foundation
import Reactor
import TLS

/// The Push Kit simulator's provider state on the loop: apps, issued access tokens, faults, counters and the
/// accepted log; and the endpoints (`POST /oauth2/v3/token`, `POST /v1/<app id>/messages:send`, `/_mock/...`).
/// Requests and answers are the shapes it shares with FCM (`RoutedRequest`, `RoutedAnswer`).
///
/// Confined to the loop thread; `MockHMSServer` reaches it only through its `SimulatorHandle`, inside `loop.submit`.
final class HMSCore: MockProvider, RoutingProvider {
    let configuration: MockHMSConfiguration
    let faults: HMSFaultEngine
    /// Client secrets by app id.
    let apps: [String: String]
    var stats = MockHMSStats()
    let counters: ConnectionCounters
    var accepted: [MockHMSAcceptedMessage] = []
    private var statusCounts = StatusCounts()
    private var issued: [String: (app: String, expiresAt: Int64)] = [:]
    private let logFile: JSONLinesLog?
    private var random = SeededRandom.fromSystem()
    private var requestCount: UInt64 = 0

    init(configuration: MockHMSConfiguration, apps: [MockHMSApp], counters: ConnectionCounters) throws {
        try configuration.faults.check()
        self.configuration = configuration
        self.counters = counters
        var secrets: [String: String] = [:]
        for app in apps { secrets[app.appId] = app.clientSecret }
        self.apps = secrets
        faults = HMSFaultEngine(script: configuration.faults, defaultSeed: configuration.seed)
        logFile = try configuration.logFile.map { try JSONLinesLog(path: $0) }
    }

    /// Push Kit is TLS only; ALPN picks h2, else http/1.1 (Huawei's Python SDK speaks HTTP/1.1 through requests).
    func makeTLSContext() throws -> OpaquePointer? { try ServerLoop.makeH2OrHTTP1Context(configuration.tls, service: "Push Kit") }

    var connectionFaults: ConnectionFaults { faults.script.connectionFaults }
    var maxConcurrentStreams: UInt32 { configuration.maxConcurrentStreams }

    func stopping() { logFile?.flush() }

    // MARK: endpoints

    /// `/v1/<app id>/messages:send` → `<app id>`.
    static func sendApp(_ path: String) -> String? {
        let prefix = "/v1/", suffix = "/messages:send"
        guard path.utf8.count > prefix.utf8.count + suffix.utf8.count, UTF8Matching.hasPrefix(path, prefix), UTF8Matching.hasSuffix(path, suffix) else { return nil }
        let app = String(path.utf8.dropFirst(prefix.utf8.count).dropLast(suffix.utf8.count))!
        return app.contains("/") ? nil : app
    }

    private static func pathOnly(_ request: RoutedRequest) -> String {
        request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
    }

    /// True for a send (what the connection-level faults count).
    static func isSend(_ request: RoutedRequest) -> Bool { request.method == "POST" && sendApp(pathOnly(request)) != nil }

    /// Routes one complete request; returns what to do and the latency to add first.
    func handle(_ request: RoutedRequest, connection: Int, transport: String) -> (RoutedOutcome, Int) {
        let path = Self.pathOnly(request)
        if UTF8Matching.hasPrefix(path, "/_mock/") { return (.answer(control(request, path: path)), 0) }
        if path == "/oauth2/v3/token" && request.method == "POST" { return (.answer(token(request)), 0) }
        if let app = Self.sendApp(path), request.method == "POST" { return send(request, app: app, connection: connection, transport: transport) }
        return (.answer(RoutedAnswer(status: 404, headers: [("content-type", "text/plain")], body: Array("Service not found\n".utf8))), 0)
    }

    private func now() -> Int64 { wallClockMillis() / 1000 }

    /// Huawei's shape of an access token: base64 (so `/` and `+` occur), about 130 characters.
    private func newAccessToken() -> String {
        var bytes: [UInt8] = [0x0e, 0x01, 0x00]
        while bytes.count < 99 { withUnsafeBytes(of: random.next()) { bytes += $0 } }
        return Data(bytes.prefix(99)).base64EncodedString()
    }

    /// `{"error":1101,"sub_error":N,"error_description":...}` with 400, as Huawei's OAuth server refuses a client.
    private func oauthError(_ sub: Int, _ description: String, status: Int = 400, error: Int = 1101) -> RoutedAnswer {
        stats.tokenErrors["\(error)/\(sub)", default: 0] += 1
        var body = Array(#"{"error":\#(error),"sub_error":\#(sub),"error_description":"#.utf8)
        appendJSONString(description, to: &body)
        body.append(UInt8(ascii: "}"))
        return .json(status, body)
    }

    /// `POST /oauth2/v3/token`: the client-credentials grant.
    private func token(_ request: RoutedRequest) -> RoutedAnswer {
        stats.tokenRequests += 1
        if faults.tokenRequestFails() { return oauthError(0, "System rate limiting triggered", status: 503, error: 503) }
        let fields = FormFields.parse(request.body)
        guard fields["grant_type"] == "client_credentials" else { return oauthError(20001, "unsupported grant_type") }
        guard let client = fields["client_id"], !client.isEmpty, client.utf8.count <= 64, client.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return oauthError(20002, "invalid client_id format")
        }
        guard let secret = apps[client] else { return oauthError(20003, "invalid client_id") }
        guard let given = fields["client_secret"], !given.isEmpty else { return oauthError(20171, "client_secret is empty") }
        guard given == secret else { return oauthError(12304, "invalid client_secret") }
        let lifetime = configuration.accessTokenLifetimeSeconds
        if issued.count >= 10_000 { issued = issued.filter { $0.value.expiresAt > now() } }  // bounded under a refresh storm
        let token = newAccessToken()
        issued[token] = (client, now() + Int64(lifetime))
        stats.tokensIssued += 1
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
    private func authenticate(_ request: RoutedRequest, app: String) -> HMSResult? {
        guard configuration.requireAuthentication else { return nil }
        guard let header = request.authorization, header.utf8.count > 7, UTF8Matching.hasPrefixIgnoringCase(header, "bearer ") else {
            return .authenticationError
        }
        let token = String(decoding: header.utf8.dropFirst(7), as: UTF8.self).trimmingCharacters(in: .whitespaces)
        guard let entry = issued[token], entry.app == app else { return .authenticationError }
        return entry.expiresAt <= now() ? .tokenExpired : nil
    }

    private func send(_ request: RoutedRequest, app: String, connection: Int, transport: String) -> (RoutedOutcome, Int) {
        if let error = authenticate(request, app: app) { return (.answer(answer(error)), 0) }
        if request.bodyTooLarge { return (.answer(answer(.bodyTooLarge)), 0) }
        let parsed: HMSSend
        switch HMSMessageRules.parse(body: request.body) {
        case .failure(let error): return (.answer(answer(error)), 0)
        case .success(let value): parsed = value
        }
        let (verdict, overQuota, delay) = faults.decide(HMSSubject(app: app, tokens: parsed.tokens ?? [], topic: parsed.topic))
        switch verdict {
        case .accept:
            return (.answer(deliver(parsed, app: app, connection: connection, transport: transport)), delay)
        case .answer(let result):
            if overQuota { stats.flowControlled += 1 }
            return (.answer(answer(result)), delay)
        case .connection(let fault):
            return (.fault(fault), delay)
        }
    }

    /// Huawei's request ids are 24 digits: the time in milliseconds, then a sequence.
    private func nextRequestId() -> String {
        requestCount &+= 1
        let sequence = String(requestCount % 100_000_000_000)
        return String(wallClockMillis()) + String(repeating: "0", count: max(0, 11 - sequence.utf8.count)) + sequence
    }

    private func answer(_ result: HMSResult, requestId: String? = nil) -> RoutedAnswer {
        statusCounts.count(result.status)
        stats.byCode[result.code, default: 0] += 1
        var extra: [(String, String)] = []
        if let seconds = result.retryAfterSeconds { extra.append(("retry-after", String(seconds))) }
        return .json(result.status, result.body(requestId: requestId ?? nextRequestId()), extra: extra)
    }

    /// A checked send that passed the faults: its tokens' fates decide 80000000, 80100000 or 80300007.
    private func deliver(_ send: HMSSend, app: String, connection: Int, transport: String) -> RoutedAnswer {
        let tokens = send.tokens ?? []
        let script = faults.script
        let illegal = tokens.filter(script.isIllegal)
        let result: HMSResult
        if !tokens.isEmpty && illegal.count == tokens.count {
            result = .allTokensInvalid
        } else if !illegal.isEmpty {
            result = .partialSuccess(success: tokens.count - illegal.count, illegal: illegal)
        } else {
            result = .success
        }
        stats.tokensIllegal += illegal.count
        if result.status == 200 {
            stats.accepted += 1
            stats.tokensDelivered += tokens.count - illegal.count
            if send.validateOnly { stats.validateOnly += 1 }
        }
        let requestId = nextRequestId()
        if configuration.recordAccepted || logFile != nil {
            let entry = MockHMSAcceptedMessage(app: app, tokens: send.tokens, topic: send.topic, condition: send.condition, illegalTokens: illegal,
                                               code: result.code, requestId: requestId, message: String(decoding: send.message, as: UTF8.self),
                                               validateOnly: send.validateOnly, transport: transport, connection: connection, timeMillis: wallClockMillis())
            if configuration.recordAccepted { accepted.append(entry) }
            logFile?.append(entry)
        }
        return answer(result, requestId: requestId)
    }

    func snapshot() -> MockHMSStats {
        var copy = stats
        counters.report(into: &copy)
        copy.http2Connections = counters.http2Connections
        copy.http1Connections = counters.http1Connections
        copy.byStatus = statusCounts.byStatus
        return copy
    }

    // MARK: control paths (not part of Push Kit)

    private func control(_ request: RoutedRequest, path: String) -> RoutedAnswer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        func json(_ value: some Encodable) -> [UInt8] { (try? encoder.encode(value)).map { [UInt8]($0) } ?? Array("{}".utf8) }
        switch (request.method, path) {
        case ("GET", "/_mock/stats"): return .json(200, json(snapshot()))
        case ("GET", "/_mock/accepted"): return .json(200, json(accepted))
        case ("GET", "/_mock/config"): return .json(200, json(faults.script))
        case ("POST", "/_mock/reset"):
            resetCounters()
            return .json(200, json(["status": "reset"]))
        case ("POST", "/_mock/config"):
            do {
                faults.replace(try MockHMSFaultScript.parse(Data(request.body)), defaultSeed: configuration.seed)
                return .json(200, json(["status": "loaded"]))
            } catch {
                return .json(400, json(["error": "\(error)"]))
            }
        case ("POST", "/_mock/revoke-tokens"):
            revokeAccessTokens()
            return .json(200, json(["status": "revoked"]))
        case ("POST", "/_mock/expire-tokens"):
            expireAccessTokens()
            return .json(200, json(["status": "expired"]))
        default:
            return .json(404, json(["error": "unknown control path \(path)"]))
        }
    }

    /// Every access token issued so far is unknown from now on (80200001).
    func revokeAccessTokens() { issued.removeAll() }

    /// Every access token issued so far has expired from now on (80200003): a client's refresh path.
    func expireAccessTokens() {
        let past = now() - 1
        for key in Array(issued.keys) { issued[key]?.expiresAt = past }
    }

    func resetCounters() {
        stats = MockHMSStats()
        counters.reset()
        statusCounts = StatusCounts()
        accepted.removeAll()
        faults.replace(faults.script, defaultSeed: configuration.seed)
    }
}
