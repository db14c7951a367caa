import COpenSSL
import Foundation
import Reactor

/// The APNs side of one simulator connection: Apple's request rules, token and certificate auth (bound to the
/// connection, as APNs binds it), the fault script's verdicts, and APNs' answers. The wire (TLS, HTTP/2, the
/// connection-level faults) is its `MockServerConnection`'s, which owns it.
final class APNsConnection: MockConnectionHandler {
    unowned let connection: MockServerConnection
    unowned let core: APNsCore
    /// The API this connection's port answers.
    let role: ListenerRole

    // Auth state, as APNs binds it to a connection.
    private var currentToken: VerifiedProviderToken?
    private var tokenAdoptedAt: UInt64 = 0
    private var boundKeyID: String?
    private var certificateTopics: [String]?
    private var streamsRaised = false

    init(connection: MockServerConnection, core: APNsCore, role: ListenerRole) {
        self.connection = connection
        self.core = core
        self.role = role
        streamsRaised = !core.configuration.requireAuthentication
    }

    var id: Int { connection.id }

    /// One stream until the first valid token (as APNs), unless authentication is off.
    var initialMaxConcurrentStreams: UInt32 {
        core.configuration.requireAuthentication ? 1 : core.configuration.maxConcurrentStreams
    }

    func connectionReady() {
        certificateTopics = connection.ssl.flatMap { core.certificateTopics(for: $0) }
    }

    func makeRequest(streamID: Int32) -> MockRequest {
        let request = IncomingRequest(streamID: streamID)
        if core.configuration.recordRequests { request.headerLog = [] }
        return request
    }

    func requestComplete(_ mockRequest: MockRequest) {
        let request = unsafeDowncast(mockRequest, to: IncomingRequest.self)
        if request.isControl {
            let (status, body) = core.control(request)
            respond(request, status: status, headers: [("content-type", "application/json")], body: body)
            return
        }
        core.recordRequest(request)
        guard case .admitted(let goawayDue) = connection.admit(request) else { return }
        process(request)
        if goawayDue { connection.sendGoaway(lastStreamID: request.streamID, reason: core.faults.script.goawayReason ?? "Shutdown") }
    }

    private func process(_ request: IncomingRequest) {
        let isManagement = request.path.map { UTF8Matching.hasPrefix($0, BroadcastRules.managementPrefix) } ?? false
        if (role == .push && isManagement) || (role == .management && !isManagement) {
            request.usesRequestID = role == .management
            return reject(request, Rejection(status: 404, reason: "BadPath"))
        }
        if let path = request.path {
            if UTF8Matching.hasPrefix(path, BroadcastRules.broadcastPrefix) { return processBroadcast(request, path: path) }
            if isManagement { return processManagement(request, path: path) }
        }
        let token: String
        switch RequestRules.deviceToken(method: request.method, path: request.path) {
        case .failure(let rejection): return reject(request, rejection)
        case .success(let value): token = value
        }
        var topic = request.topic
        let key: MockProviderKey?
        switch authenticate(request) {
        case .failure(let rejection): return reject(request, rejection)
        case .success(let value): key = value
        }
        if topic == nil, key == nil, let certificateTopics, let first = certificateTopics.first { topic = first }
        if let rejection = RequestRules.validate(request, topic: topic, requirePushType: core.configuration.requirePushType) {
            return reject(request, rejection)
        }
        let effectiveTopic = topic ?? ""
        if let rejection = topicRefusal(key, topic: effectiveTopic) { return reject(request, rejection) }
        var recordedID: String?
        applyFaults(request, token: token, topic: effectiveTopic, received: { [unowned self] in
            recordedID = self.record(request, token: token, topic: effectiveTopic)
        }) { [unowned self] in
            self.accept(request, token: token, topic: effectiveTopic, recordedID: recordedID)
        }
    }

    /// The fault script's verdict for a request that passed Apple's checks (`token`: the device token or channel ID),
    /// after its latency; `accept` answers it when the verdict is to accept. `received` runs at once for a request
    /// that will be accepted when the script says `recordOnReceipt` (processed on arrival, answered or not).
    func applyFaults(_ request: IncomingRequest, token: String, topic: String, received: (() -> Void)? = nil,
                     accept: @escaping () -> Void) {
        let (verdict, delay) = core.faults.decide(token: token, topic: topic)
        if case .accept = verdict, core.faults.script.recordOnReceipt == true { received?() }
        connection.after(milliseconds: delay) { [unowned self] in self.apply(verdict, to: request, accept: accept) }
    }

    private func apply(_ verdict: FaultVerdict<ScriptedRejection>, to request: IncomingRequest, accept: () -> Void) {
        guard connection.isPending(request) else { return }
        switch verdict {
        case .accept: accept()
        case .answer(let answer): reject(request, Rejection(status: answer.status, reason: answer.reason), timestamp: answer.timestamp)
        case .connection(let fault): connection.apply(fault, to: request)
        }
    }

    // MARK: auth

    /// TopicDisallowed when the provider key may not push to `topic`, TopicMismatch when the client certificate
    /// does not cover it; nil when allowed (or authentication is off).
    func topicRefusal(_ key: MockProviderKey?, topic: String) -> Rejection? {
        guard core.configuration.requireAuthentication else { return nil }
        if let key {
            if !key.allows(topic: topic) { return Rejection(status: 400, reason: "TopicDisallowed") }
        } else if let certificateTopics, !certificateTopics.contains(where: { topic == $0 || UTF8Matching.hasPrefix(topic, $0 + ".") }) {
            return Rejection(status: 403, reason: "TopicMismatch")
        }
        return nil
    }

    func authenticate(_ request: IncomingRequest) -> Result<MockProviderKey?, Rejection> {
        guard core.configuration.requireAuthentication else { return .success(nil) }
        guard let header = request.authorization else {
            if certificateTopics != nil {
                if !streamsRaised { raiseStreams() }
                return .success(nil)
            }
            return .failure(Rejection(status: 403, reason: "MissingProviderToken"))
        }
        let now = wallClockMillis() / 1000
        let verified: VerifiedProviderToken
        if let current = currentToken, current.authorization == header {
            verified = current
        } else {
            guard header.utf8.count > 7, UTF8Matching.hasPrefixIgnoringCase(header, "bearer ") else {
                return .failure(Rejection(status: 403, reason: "InvalidProviderToken"))
            }
            let jwt = String(decoding: header.utf8.dropFirst(7), as: UTF8.self)
            core.stats.tokenVerifications += 1
            guard case .success(var candidate) = core.verifier.verify(jwt) else {
                return .failure(Rejection(status: 403, reason: "InvalidProviderToken"))
            }
            let environment = candidate.key.environment
            if environment != .both && environment != core.configuration.environment && core.configuration.environment != .both {
                return .failure(Rejection(status: 403, reason: "BadEnvironmentKeyIdInToken"))
            }
            if let boundKeyID, boundKeyID != candidate.key.keyID {
                return .failure(Rejection(status: 403, reason: "UnrelatedKeyIdInToken"))
            }
            if now - candidate.issuedAt > core.configuration.tokenLifetimeSeconds {
                return .failure(Rejection(status: 403, reason: "ExpiredProviderToken"))
            }
            let clock = monotonicNanos()
            if currentToken != nil, Double(clock &- tokenAdoptedAt) / 1e9 < core.configuration.tokenUpdateWindowSeconds {
                return .failure(Rejection(status: 429, reason: "TooManyProviderTokenUpdates"))
            }
            candidate.authorization = header
            currentToken = candidate
            tokenAdoptedAt = clock
            boundKeyID = candidate.key.keyID
            verified = candidate
        }
        if now - verified.issuedAt > core.configuration.tokenLifetimeSeconds {
            return .failure(Rejection(status: 403, reason: "ExpiredProviderToken"))
        }
        if !streamsRaised { raiseStreams() }
        return .success(verified.key)
    }

    private func raiseStreams() {
        streamsRaised = true
        connection.submitMaxStreams(core.configuration.maxConcurrentStreams)
    }

    // MARK: answers

    /// Logs `request` as accepted and returns the apns-id it is answered with.
    private func record(_ request: IncomingRequest, token: String, topic: String) -> String {
        let apnsID = request.apnsID ?? core.makeUUID()
        core.recordAccepted(request, token: token, topic: topic, apnsID: apnsID, connection: id)
        return apnsID
    }

    /// `recordedID`: the apns-id it was logged with on receipt (`recordOnReceipt`), so it is not logged twice.
    private func accept(_ request: IncomingRequest, token: String, topic: String, recordedID: String?) {
        let apnsID = recordedID ?? record(request, token: token, topic: topic)
        var headers = [("apns-id", apnsID)]
        if core.configuration.environment == .sandbox { headers.append(("apns-unique-id", core.makeUUID())) }
        respond(request, status: 200, headers: headers, body: nil)
        core.answered(status: 200, reason: nil)
        if core.faults.script.dropStreamsAfterRejection == true && !streamsRaised && (currentToken != nil || certificateTopics != nil) { raiseStreams() }
    }

    func reject(_ request: IncomingRequest, _ rejection: Rejection, timestamp: Int64? = nil) {
        var body = #"{"reason":"\#(rejection.reason)""#
        if let timestamp { body += #","timestamp":\#(timestamp)"# }
        body += "}"
        // Broadcast and channel management answer with `apns-request-id`, device pushes with `apns-id`.
        let idHeader = request.usesRequestID ? "apns-request-id" : "apns-id"
        let given = request.usesRequestID ? request.requestID : request.apnsID
        let apnsID = given.flatMap { RequestRules.isUUID($0) ? $0 : nil } ?? core.makeUUID()
        respond(request, status: rejection.status, headers: [(idHeader, apnsID), ("content-type", "application/json; charset=utf-8")], body: Array(body.utf8))
        core.answered(status: rejection.status, reason: rejection.reason)
        if core.faults.script.dropStreamsAfterRejection == true && streamsRaised {
            streamsRaised = false
            connection.submitMaxStreams(1)
        }
    }

    func respond(_ request: IncomingRequest, status: Int, headers: [(String, String)], body: [UInt8]?) {
        connection.respond(request, status: status, headers: headers, body: body)
    }
}
