import COpenSSL
import Foundation
import Reactor

/// The APNs simulator's provider state on the loop: keys, faults, channels, counters and the accepted log;
/// the shared `MockServerCore` runs its connections, each with an `APNsConnection`.
///
/// Confined to the loop thread; `MockAPNsServer` reaches it only through its `SimulatorHandle`, inside `loop.submit`.
final class APNsCore: MockProvider {
    let configuration: MockAPNsConfiguration
    let verifier: ProviderTokenVerifier
    let faults: APNsFaultEngine
    /// The APNs counters; the connection ones are in `counters` (`snapshot()` joins them).
    var stats = MockAPNsStats()
    let counters: ConnectionCounters
    var accepted: [MockAcceptedNotification] = []
    let channels: ChannelRegistry
    /// The broadcast observation log (kept with `recordAccepted`).
    var broadcasts: [MockBroadcast] = []
    /// Requests as received (kept with `recordRequests`).
    var requests: [MockRecordedRequest] = []
    private let logFile: JSONLinesLog?
    /// apns-id and channel-id generation.
    var random = SeededRandom.fromSystem()
    private var statusCounts = StatusCounts()

    init(configuration: MockAPNsConfiguration, counters: ConnectionCounters) throws {
        self.configuration = configuration
        self.counters = counters
        var keyMap: [String: MockProviderKey] = [:]
        for key in configuration.keys { keyMap[key.keyID] = key }
        verifier = ProviderTokenVerifier(keys: keyMap)
        faults = APNsFaultEngine(script: configuration.faults, defaultSeed: configuration.seed)
        channels = ChannelRegistry(limit: configuration.maxChannels)
        logFile = try configuration.logFile.map { try JSONLinesLog(path: $0) }
    }

    /// h2 only (APNs speaks nothing else), with the client CA when certificate auth is on; nil for `cleartext`.
    func makeTLSContext() throws -> OpaquePointer? {
        configuration.cleartext ? nil : try Self.makeContext(configuration)
    }

    private static func makeContext(_ configuration: MockAPNsConfiguration) throws -> OpaquePointer {
        guard let tls = configuration.tls else { throw SimulatorError.configuration("TLS needs a certificate and key (or generate them)") }
        let context = try ServerLoop.makeTLSContext(tls)
        var ok = false
        defer { if !ok { SSL_CTX_free(context) } }
        copenssl_mock_ctx_select_h2(context)
        if let caFile = configuration.clientCAFile {
            guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else { throw OpenSSLSupport.lastError("client CA \(caFile)") }
            if let names = SSL_load_client_CA_file(caFile) { SSL_CTX_set_client_CA_list(context, names) }
            // Ask for a certificate but do not demand one: token clients share the port, as on APNs.
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        }
        ok = true
        return context
    }

    // MARK: connections

    /// HTTP/2 only; the idle timeout is APNs'.
    var connectionSettings: MockConnectionSettings { MockConnectionSettings(watchesIdle: true) }

    var connectionFaults: ConnectionFaults { faults.script.connectionFaults }

    /// A connection on the server's port (listener 0) or its management port (listener 1).
    func makeHandler(for connection: MockServerConnection, listener: Int) -> any MockConnectionHandler {
        APNsConnection(connection: connection, core: self, role: configuration.managementPort == nil ? .both : listener == 0 ? .push : .management)
    }

    func stopping() { logFile?.flush() }

    /// Topics a verified client certificate may push to (configured, else subject UID, else CN after ": ").
    func certificateTopics(for ssl: OpaquePointer) -> [String]? {
        guard configuration.clientCAFile != nil, let cert = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(cert) }
        guard SSL_get_verify_result(ssl) == X509_V_OK else { return nil }
        if let configured = configuration.certificateTopics { return configured }
        let name = X509_get_subject_name(cert)
        func entry(_ nid: Int32) -> String? {
            var buffer = [CChar](repeating: 0, count: 256)
            let length = X509_NAME_get_text_by_NID(name, nid, &buffer, Int32(buffer.count))
            guard length > 0 else { return nil }
            return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        if let uid = entry(NID_userId) { return [uid] }
        if let cn = entry(NID_commonName) {
            if let colon = cn.range(of: ": ") { return [String(cn[colon.upperBound...])] }
            return [cn]
        }
        return []
    }

    // MARK: helpers for connections

    /// A random lowercase UUID (version 4), as APNs generates when a request has no apns-id.
    func makeUUID() -> String {
        var high = random.next()
        var low = random.next()
        high = (high & ~0xF000) | 0x4000  // version 4 (bits 12-15 of the third group)
        low = (low & ~(0xC000 << 48)) | (0x8000 << 48)  // variant 10xx
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 36) { buffer in
            var index = 0
            func put(_ value: UInt64, _ nibbles: Int) {
                var shift = (nibbles - 1) * 4
                while shift >= 0 {
                    buffer[index] = digits.utf8Start[Int((value >> UInt64(shift)) & 0xf)]
                    index += 1
                    shift -= 4
                }
            }
            put(high >> 32, 8); buffer[index] = 0x2d; index += 1
            put(high >> 16, 4); buffer[index] = 0x2d; index += 1
            put(high, 4); buffer[index] = 0x2d; index += 1
            put(low >> 48, 4); buffer[index] = 0x2d; index += 1
            put(low, 12)
            return 36
        }
    }

    /// Counts one answer; statuses are kept by number on the hot path and turned into strings in `snapshot()`.
    func answered(status: Int, reason: String?) {
        statusCounts.count(status)
        if status == 200 { stats.accepted += 1 }
        if let reason { stats.byReason[reason, default: 0] += 1 }
    }

    func snapshot() -> MockAPNsStats {
        var copy = stats
        counters.report(into: &copy)
        copy.refusedStreams = counters.refusedStreams
        copy.streamsInUse = counters.streamsInUse
        copy.maxConcurrentStreamsInUse = counters.maxConcurrentStreamsInUse
        copy.byStatus = statusCounts.byStatus
        return copy
    }

    func recordAccepted(_ request: IncomingRequest, token: String, topic: String, apnsID: String, connection: Int) {
        guard configuration.recordAccepted || logFile != nil else { return }
        let entry = MockAcceptedNotification(
            token: token, topic: topic, apnsID: apnsID, pushType: request.pushType ?? "alert",
            priority: Int(request.priority ?? "10") ?? 10, payloadBytes: request.bodySize,
            payload: configuration.logPayloads ? request.payloadText : nil,
            connection: connection, stream: request.streamID, timeMillis: wallClockMillis())
        if configuration.recordAccepted { accepted.append(entry) }
        logFile?.append(entry)
    }

    func recordBroadcast(_ request: IncomingRequest, channel: String, bundleID: String, requestID: String, connection: Int) {
        stats.broadcastsAccepted += 1
        channels.countBroadcast(channel)
        guard configuration.recordAccepted else { return }
        broadcasts.append(MockBroadcast(
            channel: channel, bundleID: bundleID, requestID: requestID, priority: Int(request.priority ?? "10") ?? 10,
            expiration: Int64(request.expiration ?? "0") ?? 0, payloadBytes: request.bodySize,
            payload: configuration.logPayloads ? request.payloadText : nil, connection: connection, stream: request.streamID,
            timeMillis: wallClockMillis()))
    }

    func recordRequest(_ request: IncomingRequest) {
        guard let headers = request.headerLog else { return }
        requests.append(MockRecordedRequest(method: request.method ?? "", path: request.path ?? "", headers: headers, body: request.payloadText))
    }

    // MARK: control paths (not part of APNs)

    func control(_ request: IncomingRequest) -> (Int, [UInt8]) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        func json(_ value: some Encodable) -> [UInt8] { (try? encoder.encode(value)).map { [UInt8]($0) } ?? Array("{}".utf8) }
        func message(_ key: String, _ text: String) -> [UInt8] {
            json([key: text])
        }
        let path = request.path ?? ""
        switch (request.method ?? "", path) {
        case ("GET", "/_mock/stats"):
            return (200, json(snapshot()))
        case ("GET", "/_mock/accepted"):
            return (200, json(accepted))
        case ("GET", "/_mock/broadcasts"):
            return (200, json(broadcasts))
        case ("GET", "/_mock/channels"):
            return (200, json(channels.all))
        case ("GET", "/_mock/requests"):
            return (200, json(requests))
        case ("POST", "/_mock/reset"):
            resetCounters()
            return (200, message("status", "reset"))
        case ("POST", "/_mock/config"):
            do {
                let script = try MockFaultScript.parse(Data(request.body))
                faults.replace(script, defaultSeed: configuration.seed)
                return (200, message("status", "loaded"))
            } catch {
                return (400, message("error", "\(error)"))
            }
        case ("GET", "/_mock/config"):
            return (200, json(faults.script))
        default:
            return (404, message("error", "unknown control path \(path)"))
        }
    }

    func resetCounters() {
        stats = MockAPNsStats()
        counters.reset()
        statusCounts = StatusCounts()
        accepted.removeAll()
        broadcasts.removeAll()
        requests.removeAll()
        faults.replace(faults.script, defaultSeed: configuration.seed)
    }
}

extension IncomingRequest {
    var bodySize: Int { body.count }
    var payloadText: String { String(decoding: body, as: UTF8.self) }
}
