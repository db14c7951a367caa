import COpenSSL
import Foundation
import TLS

/// One request as a Web Push connection collects it.
final class WebPushRequest: MockRequest {
    var method = ""
    var path = ""
    var headers: [String: String] = [:]
    var body: [UInt8] = []
    var bodyTooLarge = false

    /// Push services refuse bodies past 4096 bytes; a little room so the 413 is the service's answer, not a cut.
    static let bodyLimit = 8192

    override func setHeader(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        let text = String(decoding: value, as: UTF8.self)
        if UTF8Matching.equal(name, ":path") { path = text }
        else if UTF8Matching.equal(name, ":method") { method = text }
        else { headers[String(decoding: name, as: UTF8.self).lowercased()] = text }
    }

    override func append(body chunk: UnsafeBufferPointer<UInt8>) {
        if body.count + chunk.count > Self.bodyLimit { bodyTooLarge = true; return }
        body.append(contentsOf: chunk)
    }
}

/// A push message the simulator accepted, decrypted with its subscriber's private key.
public struct MockWebPushMessage: Sendable, Equatable {
    public let subscription: String
    public let plaintext: [UInt8]
    public let ttl: Int
    public let urgency: String?
    public let topic: String?
    /// The VAPID `sub` it came with.
    public let subject: String
    public let transport: String
}

/// The counters of the Web Push simulator (its connections' among them).
public struct MockWebPushStats: Sendable, Codable, Equatable, ReportsConnectionCounters {
    public var requests = 0
    public var connectionsAccepted = 0
    public var connectionsOpen = 0
    public var connectionsDropped = 0
    public var goawaysSent = 0
    public var silencedRequests = 0
    public var handshakeFailures = 0
    public var delivered = 0
    public var vapidRefused = 0
    public var decryptionFailures = 0
    public var subscriptionsMinted = 0
}

/// The Web Push simulator on its loop: the subscriptions it minted, their messages, the fault rules; a push
/// service's endpoint (`POST /push/<id>`) and its control paths (`POST /_mock/subscribe`, `GET /_mock/stats`).
final class WebPushCore: MockProvider {
    let tls: MockTLSFiles
    let faults: ScriptedFaults<MockWebPushFaultFields>
    let counters: ConnectionCounters
    /// `https://host:port`, set once the port is known: the `aud` VAPID tokens must carry.
    var origin = ""
    var subscribers: [String: MockSubscriber] = [:]
    var messages: [MockWebPushMessage] = []
    var stats = MockWebPushStats()
    private var minted = 0
    private var messageCount = 0
    private let decryption: MockDecryptionContexts
    /// VAPID headers whose signature verified, by origin and header: a sender sends one token per origin for
    /// many messages, and verifying it anew each time cost the simulator more CPU than the sender spends.
    private var verifiedVAPID = VAPIDCheck.Verified()

    /// HTTP/1.1 only, or refusing every handshake: what its ALPN callback answers.
    let alpn: WebPushALPNChoice

    init(tls: MockTLSFiles, script: MockWebPushFaultScript, counters: ConnectionCounters, http1Only: Bool = false) throws {
        try script.check()
        self.tls = tls
        alpn = WebPushALPNChoice(http1Only: http1Only)
        self.counters = counters
        faults = ScriptedFaults(script: script, defaultSeed: 23)
        decryption = try MockDecryptionContexts()
    }

    func makeTLSContext() throws -> OpaquePointer? {
        let context = try ServerLoop.makeTLSContext(tls)
        // The context dies with the server core, before this provider (and its choice) does.
        SSL_CTX_set_alpn_select_cb(context, selectForWebPush, Unmanaged.passUnretained(alpn).toOpaque())
        return context
    }

    /// HTTP/2 and HTTP/1.1: push services offer both (pywebpush speaks HTTP/1.1).
    var connectionSettings: MockConnectionSettings {
        MockConnectionSettings(servesHTTP1: true, http1BodyLimit: WebPushRequest.bodyLimit, sendsContentLength: true)
    }
    var connectionFaults: ConnectionFaults { faults.script.connectionFaults }
    func makeHandler(for connection: MockServerConnection, listener: Int) -> any MockConnectionHandler {
        WebPushConnection(connection: connection, core: self)
    }
    func stopping() {}

    /// A new subscription; `prefix` starts its id (the fault rules' `subscriptionPrefix`).
    func subscribe(prefix: String, applicationServerKey: [UInt8]?) throws -> MockWebPushSubscription {
        minted += 1
        let id = prefix + String(minted)
        let subscriber = try MockSubscriber(id: id, applicationServerKey: applicationServerKey)
        subscribers[id] = subscriber
        stats.subscriptionsMinted += 1
        return MockWebPushSubscription(id: id, endpoint: origin + "/push/" + id, p256dh: Base64URL.encode(subscriber.publicPoint),
                                       auth: Base64URL.encode(subscriber.auth), privateKeyPEM: subscriber.privateKeyPEM)
    }

    /// A push message: the VAPID header, the headers RFC 8030 requires, the fault rules, then decryption.
    func push(_ request: WebPushRequest, id: String, transport: String) -> (FaultVerdict<WebPushAnswer>, Int) {
        guard let subscriber = subscribers[id] else { return (.answer(.reason(404, "NotFound")), 0) }
        let now = Int64(Date().timeIntervalSince1970)
        let accepted: VAPIDCheck.Accepted
        switch VAPIDCheck.verify(request.headers["authorization"], origin: origin, boundKey: subscriber.applicationServerKey, now: now,
                                 verified: &verifiedVAPID) {
        case .success(let a): accepted = a
        case .failure(let refusal):
            stats.vapidRefused += 1
            return (.answer(.reason(refusal.status, refusal.reason, detail: refusal.detail)), 0)
        }
        guard let ttlText = request.headers["ttl"], let ttl = Int(ttlText), ttl >= 0 else {
            return (.answer(.reason(400, "MissingTTL")), 0)
        }
        guard request.headers["content-encoding"]?.lowercased() == "aes128gcm" else {
            return (.answer(.reason(415, "UnsupportedContentEncoding")), 0)
        }
        if request.bodyTooLarge || request.body.count > 4096 { return (.answer(.reason(413, "PayloadTooLarge")), 0) }
        let (verdict, delay) = faults.evaluate(key: id, id)
        if let verdict, case .accept = verdict {} else if let verdict { return (verdict, delay) }
        switch subscriber.decrypt(request.body, with: decryption) {
        case .failure(let why):
            stats.decryptionFailures += 1
            return (.answer(.reason(400, "DecryptionFailed", detail: "\(why)")), delay)
        case .success(let plaintext):
            messageCount += 1
            stats.delivered += 1
            messages.append(MockWebPushMessage(subscription: id, plaintext: plaintext, ttl: ttl, urgency: request.headers["urgency"],
                                               topic: request.headers["topic"], subject: accepted.subject, transport: transport))
            return (.answer(WebPushAnswer(status: 201, headers: [("location", origin + "/m/" + String(messageCount)), ("ttl", String(ttl))], body: [])),
                    delay)
        }
    }

    func snapshot() -> MockWebPushStats {
        var copy = stats
        counters.report(into: &copy)
        return copy
    }
}

/// A subscription the simulator minted, as a browser would hold it (and its private key, for inspection).
public struct MockWebPushSubscription: Sendable, Equatable {
    public let id: String
    public let endpoint: String
    public let p256dh: String
    public let auth: String
    public let privateKeyPEM: String

    /// As `PushSubscription.toJSON()` gives it.
    public var json: String {
        #"{"endpoint":"\#(endpoint)","expirationTime":null,"keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#
    }
}

/// The Web Push side of one simulator connection.
final class WebPushConnection: MockConnectionHandler {
    unowned let connection: MockServerConnection
    unowned let core: WebPushCore

    init(connection: MockServerConnection, core: WebPushCore) {
        self.connection = connection
        self.core = core
    }

    var initialMaxConcurrentStreams: UInt32 { 1000 }
    func connectionReady() {}
    func makeRequest(streamID: Int32) -> MockRequest { WebPushRequest(streamID: streamID) }

    func requestComplete(_ mockRequest: MockRequest) {
        let request = unsafeDowncast(mockRequest, to: WebPushRequest.self)
        if request.path == "/_mock/subscribe" && request.method == "POST" { return subscribe(request) }
        if request.path == "/_mock/stats" && request.method == "GET" { return respondStats(request) }
        guard request.method == "POST", request.path.hasPrefix("/push/") else {
            return connection.respond(request, status: 404, headers: [], body: Array("no such endpoint\n".utf8))
        }
        guard case .admitted(let goawayDue) = connection.admit(request) else { return }
        let (verdict, delay) = core.push(request, id: String(request.path.dropFirst(6)), transport: connection.protocolName)
        connection.after(milliseconds: delay) { [unowned self] in
            guard connection.isPending(request) else { return }
            switch verdict {
            case .answer(let answer):
                connection.respond(request, status: answer.status, headers: answer.headers, body: answer.body, thenGoaway: goawayDue)
            case .connection(let fault): connection.apply(fault, to: request)
            case .accept: connection.respond(request, status: 201, headers: [], body: [], thenGoaway: goawayDue)
            }
        }
    }

    /// `GET /_mock/stats`: the counters as JSON (`herald mock-webpush` run standalone has no other window).
    private func respondStats(_ request: WebPushRequest) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = (try? encoder.encode(core.snapshot())).map { [UInt8]($0) } ?? Array("{}".utf8)
        connection.respond(request, status: 200, headers: [("content-type", "application/json")], body: body)
    }

    /// `POST /_mock/subscribe` with `{"prefix":..., "applicationServerKey":...}` (both optional): a new subscription's JSON.
    private func subscribe(_ request: WebPushRequest) {
        let options = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any] ?? [:]
        let key = (options["applicationServerKey"] as? String).flatMap { Base64URL.decode($0) }
        do {
            let made = try core.subscribe(prefix: options["prefix"] as? String ?? "sub-", applicationServerKey: key)
            connection.respond(request, status: 201, headers: [("content-type", "application/json")], body: Array(made.json.utf8))
        } catch {
            connection.respond(request, status: 500, headers: [], body: Array("\(error)\n".utf8))
        }
    }
}
