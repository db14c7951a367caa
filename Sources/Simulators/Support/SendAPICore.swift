import Foundation

/// A send-API provider (FCM, Push Kit): an OAuth token endpoint and a bearer-checked `messages:send`, routed by
/// path. What it brings to the shared `SendAPICore`: its paths, its token grant, its checks of a send and its
/// answers; the rules and quota are its `Settings.Faults`'. Loop-confined, owned by its core.
protocol SendAPIHandler: AnyObject {
    associatedtype Settings: SendAPISettings where Settings.Faults: SendAPIFaults
    associatedtype Counters: SendAPICounters
    /// One entry of the accepted log.
    associatedtype Accepted: Encodable & Sendable
    /// A send body that passed the provider's checks.
    associatedtype Send
    typealias Core = SendAPICore<Self>
    typealias Failure = Settings.Faults.Rule.Answer

    /// Names the provider in the TLS error ("FCM", "Push Kit").
    static var service: String { get }
    static var tokenPath: String { get }
    /// The project or app of a send path; nil for any other path.
    static func sendTarget(_ path: String) -> String?
    /// The counter of sends the quota refused.
    static var overQuota: WritableKeyPath<Counters, Int> & Sendable { get }

    /// `POST <tokenPath>`: the grant, checked and answered.
    func token(_ request: RoutedRequest, core: Core) -> RoutedAnswer
    /// The bearer check of a send to `target`; nil: it passes.
    func authenticate(_ request: RoutedRequest, target: String, core: Core) -> Failure?
    /// The body's checks (`bodyTooLarge`: it was over the read limit).
    func parse(_ request: RoutedRequest) -> Result<Send, Failure>
    func subject(_ send: Send, target: String) -> SendSubject
    /// A send the faults let through: recorded and answered.
    func accept(_ send: Send, target: String, connection: Int, transport: String, core: Core) -> RoutedAnswer
    /// An error answer, counted.
    func reject(_ failure: Failure, core: Core) -> RoutedAnswer
    /// Any other path.
    func unknownPath(_ path: String, core: Core) -> RoutedAnswer
    /// Control paths of its own (`POST /_mock/expire-tokens`): the status word to answer, nil for none.
    func control(method: String, path: String) -> String?
    /// Every access token issued so far is refused from now on.
    func revokeAccessTokens()
}

/// A send-API simulator's state on the loop, shared by FCM and Push Kit: configuration, faults, counters and the
/// accepted log; the routing of every request (`/_mock/...`, the token path, sends, the rest) and the send's
/// steps (bearer check, body, faults, answer); the handler does what is the provider's.
///
/// Confined to the loop thread; the public server reaches it only through its `SimulatorHandle`, inside `loop.submit`.
final class SendAPICore<Handler: SendAPIHandler>: MockProvider, RoutingProvider {
    typealias Script = FaultScript<Handler.Settings.Faults>
    let configuration: SendAPIConfiguration<Handler.Settings>
    let faults: SendAPIFaultEngine<Handler.Settings.Faults>
    let handler: Handler
    /// The provider's counters; the connection ones are in `counters` (`snapshot()` joins them).
    var stats = SendAPIStats<Handler.Counters>()
    let counters: ConnectionCounters
    var accepted: [Handler.Accepted] = []
    /// Answers by status, kept by number on the hot path.
    var statusCounts = StatusCounts()
    /// For generated ids and tokens.
    var random = SeededRandom.fromSystem()
    private let logFile: JSONLinesLog?

    init(configuration: SendAPIConfiguration<Handler.Settings>, handler: Handler, counters: ConnectionCounters) throws {
        try configuration.faults.check()
        self.configuration = configuration
        self.handler = handler
        self.counters = counters
        faults = SendAPIFaultEngine(script: configuration.faults, defaultSeed: configuration.seed)
        logFile = try configuration.logFile.map { try JSONLinesLog(path: $0) }
    }

    /// TLS only; ALPN picks h2, else http/1.1.
    func makeTLSContext() throws -> OpaquePointer? { try ServerLoop.makeH2OrHTTP1Context(configuration.tls, service: Handler.service) }

    var connectionFaults: ConnectionFaults { faults.script.connectionFaults }
    var maxConcurrentStreams: UInt32 { configuration.maxConcurrentStreams }

    func stopping() { logFile?.flush() }

    /// Whether accepted messages are kept or logged (else the handler need not build their entries).
    var keepsAccepted: Bool { configuration.recordAccepted || logFile != nil }

    /// Keeps and logs one accepted message, as configured.
    func record(_ entry: Handler.Accepted) {
        if configuration.recordAccepted { accepted.append(entry) }
        logFile?.append(entry)
    }

    // MARK: endpoints

    private static func pathOnly(_ request: RoutedRequest) -> String {
        request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
    }

    /// True for a send (what the connection-level faults count; token and control paths are not).
    static func isSend(_ request: RoutedRequest) -> Bool { request.method == "POST" && Handler.sendTarget(pathOnly(request)) != nil }

    /// Routes one complete request; returns what to do and the latency to add first.
    func handle(_ request: RoutedRequest, connection: Int, transport: String) -> (RoutedOutcome, Int) {
        let path = Self.pathOnly(request)
        if UTF8Matching.hasPrefix(path, "/_mock/") { return (.answer(control(request, path: path)), 0) }
        if path == Handler.tokenPath && request.method == "POST" { return (.answer(handler.token(request, core: self)), 0) }
        if let target = Handler.sendTarget(path), request.method == "POST" {
            return send(request, target: target, connection: connection, transport: transport)
        }
        return (.answer(handler.unknownPath(path, core: self)), 0)
    }

    private func send(_ request: RoutedRequest, target: String, connection: Int, transport: String) -> (RoutedOutcome, Int) {
        if let failure = handler.authenticate(request, target: target, core: self) { return (.answer(handler.reject(failure, core: self)), 0) }
        let parsed: Handler.Send
        switch handler.parse(request) {
        case .failure(let failure): return (.answer(handler.reject(failure, core: self)), 0)
        case .success(let value): parsed = value
        }
        let (verdict, overQuota, delay) = faults.decide(handler.subject(parsed, target: target))
        switch verdict {
        case .accept:
            return (.answer(handler.accept(parsed, target: target, connection: connection, transport: transport, core: self)), delay)
        case .answer(let failure):
            if overQuota { stats.provider[keyPath: Handler.overQuota] += 1 }
            return (.answer(handler.reject(failure, core: self)), delay)
        case .connection(let fault):
            return (.fault(fault), delay)
        }
    }

    func snapshot() -> SendAPIStats<Handler.Counters> {
        var copy = stats
        counters.report(into: &copy.shared)
        copy.http2Connections = counters.http2Connections
        copy.http1Connections = counters.http1Connections
        copy.byStatus = statusCounts.byStatus
        return copy
    }

    // MARK: control paths (not part of the provider)

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
                faults.replace(try Script.parse(Data(request.body)), defaultSeed: configuration.seed)
                return .json(200, json(["status": "loaded"]))
            } catch {
                return .json(400, json(["error": "\(error)"]))
            }
        case ("POST", "/_mock/revoke-tokens"):
            handler.revokeAccessTokens()
            return .json(200, json(["status": "revoked"]))
        default:
            if let status = handler.control(method: request.method, path: path) { return .json(200, json(["status": status])) }
            return .json(404, json(["error": "unknown control path \(path)"]))
        }
    }

    /// Zeroes the counters, the accepted log, the fault counters and the quota windows (connections and tokens stay).
    func resetCounters() {
        stats = SendAPIStats()
        counters.reset()
        statusCounts = StatusCounts()
        accepted.removeAll()
        faults.replace(faults.script, defaultSeed: configuration.seed)
    }
}
