import Basics
import COpenSSL
import Foundation
import Reactor

/// The Expo push service as `herald mock-expo` answers it, on the shared simulator server: `POST
/// /--/api/v2/push/send` (a message or a list of up to 100, each `to` a token or a list; a ticket per token in
/// order) and `POST /--/api/v2/push/getReceipts` (up to 1,000 ids; the receipts that are ready), both with the
/// access-token check and gzip bodies; `GET /_mock/stats`. Fates by token (`ExpoFate`). Loop-confined.
final class ExpoCore: MockProvider, RoutingProvider {
    let configuration: MockExpoConfiguration
    private var stats = MockExpoStats()
    /// Every ok ticket: its token's fate and when its receipt is ready (ms), and the asks for it.
    private var tickets: [String: (fate: ExpoFate, readyAt: Int64, asks: Int, lastAsk: Int64)] = [:]
    private var nextTicket: UInt64 = 0
    private var second: Int64 = 0, inSecond = 0

    init(configuration: MockExpoConfiguration) { self.configuration = configuration }

    func makeTLSContext() throws -> OpaquePointer? { try ServerLoop.makeH2OrHTTP1Context(configuration.tls, service: "Expo") }
    var connectionFaults: ConnectionFaults {
        ConnectionFaults(goawayAfterRequests: configuration.goawayAfterRequests, dropAfterRequests: configuration.dropAfterRequests,
                         silenceAfterRequests: configuration.silenceAfterRequests)
    }
    var maxConcurrentStreams: UInt32 { 1000 }
    func stopping() {}

    static let sendPath = "/--/api/v2/push/send", receiptsPath = "/--/api/v2/push/getReceipts"
    /// Expo's limits on one request.
    static let maxMessages = 100, maxReceiptIDs = 1000

    static func isSend(_ request: RoutedRequest) -> Bool { request.path == sendPath || request.path == receiptsPath }

    var snapshot: MockExpoStats { stats }

    func handle(_ request: RoutedRequest, connection: Int, transport: String) -> (RoutedOutcome, Int) {
        (.answer(answer(request)), configuration.latencyMs)
    }

    private func answer(_ request: RoutedRequest) -> RoutedAnswer {
        if request.method == "GET" && request.path == "/_mock/stats" {
            let body = (try? JSONEncoder().encode(stats)).map(Array.init) ?? []
            return .json(200, body)
        }
        guard Self.isSend(request) else { return RoutedAnswer(status: 404, headers: [("content-type", "text/plain")], body: Array("Not Found\n".utf8)) }
        guard request.method == "POST" else { return error(405, "METHOD_NOT_ALLOWED", "use POST") }
        if let token = configuration.accessToken, request.authorization != "Bearer " + token {
            stats.unauthorized += 1
            return error(401, "UNAUTHORIZED", "The bearer token is invalid or missing; enhanced push security is on for this project.")
        }
        var body = request.body
        if Gunzip.isGzip(body) {
            guard let inflated = Gunzip.inflate(body, limit: RoutedRequest.bodyLimit) else { return error(400, "VALIDATION_ERROR", "the gzip body does not inflate") }
            body = inflated
            stats.gzipRequests += 1
        }
        guard !request.bodyTooLarge, let json = try? JSONSerialization.jsonObject(with: Data(body)) else {
            stats.badRequests += 1
            return error(400, "VALIDATION_ERROR", "the body must be JSON")
        }
        return request.path == Self.sendPath ? send(json) : receipts(json)
    }

    /// `{"errors":[{"code":...,"message":...}]}`, as Expo refuses a whole request.
    private func error(_ status: Int, _ code: String, _ message: String) -> RoutedAnswer {
        .json(status, Array((try? JSONSerialization.data(withJSONObject: ["errors": [["code": code, "message": message]]])) ?? Data()))
    }

    private func send(_ json: Any) -> RoutedAnswer {
        stats.sendRequests += 1
        if configuration.rateLimitPerSecond > 0 {
            let now = wallClockMillis() / 1000
            if now != second { second = now; inSecond = 0 }
            inSecond += 1
            if inSecond > configuration.rateLimitPerSecond {
                stats.rateLimited += 1
                return error(429, "TOO_MANY_REQUESTS", "too many requests; retry with exponential backoff")
            }
        }
        if configuration.failEvery > 0 && stats.sendRequests % configuration.failEvery == 0 {
            stats.faults += 1
            return error(503, "INTERNAL_SERVER_ERROR", "scripted fault")
        }
        let messages: [[String: Any]]
        if let one = json as? [String: Any] { messages = [one] } else if let list = json as? [[String: Any]] { messages = list } else {
            stats.badRequests += 1
            return error(400, "VALIDATION_ERROR", "the body must be a message or a list of messages")
        }
        guard messages.count <= Self.maxMessages else {
            stats.badRequests += 1
            return error(400, "PUSH_TOO_MANY_NOTIFICATIONS", "You are trying to send more than \(Self.maxMessages) push notifications in one request")
        }
        var data: [[String: Any]] = []
        for message in messages {
            let to: [String]
            if let one = message["to"] as? String { to = [one] } else if let many = message["to"] as? [String] { to = many } else {
                stats.badRequests += 1
                return error(400, "VALIDATION_ERROR", "\"to\" must be a push token or a list of them")
            }
            stats.messages += 1
            for token in to { data.append(ticket(token)) }
        }
        // One message sent as an object is answered with one ticket object, as Expo does.
        let answer: Any = (json is [String: Any] && data.count == 1) ? data[0] : data
        return .json(200, Array((try? JSONSerialization.data(withJSONObject: ["data": answer])) ?? Data()))
    }

    private func ticket(_ token: String) -> [String: Any] {
        let fate = ExpoFate(token: token)
        let valid = (token.hasPrefix("ExponentPushToken[") || token.hasPrefix("ExpoPushToken[")) && token.hasSuffix("]")
        if !valid || fate.ticketError != nil {
            stats.ticketErrors += 1
            let code = valid ? fate.ticketError! : "DeviceNotRegistered"
            let message = valid ? "\"\(token)\" is not a registered push notification recipient" : "\"\(token)\" is not a valid Expo push token"
            return ["status": "error", "message": message, "details": ["error": code, "expoPushToken": token]]
        }
        nextTicket += 1
        let id = String(format: "%08X-0000-4000-8000-%012llX", UInt32(truncatingIfNeeded: nextTicket >> 48 ^ 0xE0), nextTicket)
        tickets[id] = (fate, wallClockMillis() + (fate == .late ? Int64(configuration.receiptLateMs) : 0), 0, 0)
        stats.ticketsOK += 1
        return ["status": "ok", "id": id]
    }

    private func receipts(_ json: Any) -> RoutedAnswer {
        stats.receiptRequests += 1
        guard let object = json as? [String: Any], let ids = object["ids"] as? [String] else {
            stats.badRequests += 1
            return error(400, "VALIDATION_ERROR", "the body must be {\"ids\": [...]}")
        }
        guard ids.count <= Self.maxReceiptIDs else {
            stats.badRequests += 1
            return error(400, "PUSH_TOO_MANY_RECEIPTS", "You are trying to get more than \(Self.maxReceiptIDs) receipts in one request")
        }
        let now = wallClockMillis()
        var data: [String: Any] = [:]
        for id in ids {
            stats.receiptIDsAsked += 1
            guard var ticket = tickets[id] else { continue }
            if ticket.asks > 0 { stats.minAskGapMs = min(stats.minAskGapMs ?? .max, now - ticket.lastAsk) }
            ticket.asks += 1
            ticket.lastAsk = now
            tickets[id] = ticket
            stats.maxAsksPerID = max(stats.maxAsksPerID, ticket.asks)
            guard ticket.fate != .never, now >= ticket.readyAt else { continue }
            stats.receiptsAnswered += 1
            if let code = ticket.fate.receiptError {
                data[id] = ["status": "error", "message": "the receipt says \(code)", "details": ["error": code]]
            } else {
                data[id] = ["status": "ok"]
            }
        }
        return .json(200, Array((try? JSONSerialization.data(withJSONObject: ["data": data])) ?? Data()))
    }
}
