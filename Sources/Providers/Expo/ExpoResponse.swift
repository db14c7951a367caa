import Basics
import PushCore

/// One message's answer from Expo's `push/send`: the HTTP status of its request and its ticket from the answer's
/// `data` list (`{"status":"ok","id":"..."}` or `{"status":"error","message":"...","details":{"error":"..."}}`),
/// or the request's own error (`{"errors":[{"code":"...","message":"..."}]}`). Never fails: a body that is not
/// Expo's JSON (a proxy's page, an empty 503) just has no ticket, and the status decides.
public struct ExpoResponse: Sendable, Equatable {
    public var status: Int
    /// `ok` or `error`; nil when the answer held no ticket for this message.
    public var ticketStatus: String?
    /// The ticket's id: the receipt's id.
    public var ticketID: String?
    /// `details.error` of an error ticket (`DeviceNotRegistered`...), else the request error's `code`.
    public var error: String?
    /// The ticket's or the request error's `message`.
    public var message: String?
    /// Set by the sender: the request carried an access token fetched again after a 401, so a 401 now means the
    /// token is refused, not that it went stale.
    public var afterTokenRefresh = false
    /// Set by the sender: when the receipt of an `ok` ticket is first asked for.
    public var receiptDelayMilliseconds: Int64 = 0

    public init(status: Int, ticketStatus: String? = nil, ticketID: String? = nil, error: String? = nil, message: String? = nil) {
        self.status = status
        self.ticketStatus = ticketStatus
        self.ticketID = ticketID
        self.error = error
        self.message = message
    }

    /// Room for Expo's texts; a hostile peer's long strings are cut like APNs reasons.
    static let maxTextBytes = 256

    /// The answer to a request of `count` messages, one `ExpoResponse` per message in request order.
    public static func decode(status: Int, body: [UInt8], count: Int) -> [ExpoResponse] {
        var out = Array(repeating: ExpoResponse(status: status), count: count)
        body.withUnsafeBufferPointer { buffer in
            guard (try? JSONScanner.validate(buffer))?.kind == .object else { return }
            let scanner = JSONScanner(buffer)
            for (key, value) in scanner.members(at: 0) {
                switch (key, value.kind) {
                case ("data", .array):
                    for (index, ticket) in scanner.elements(of: value).prefix(count).enumerated() where ticket.kind == .object {
                        read(ticket: ticket, scanner, into: &out[index])
                    }
                case ("data", .object) where count == 1:
                    // One message sent as an object is answered with one ticket object.
                    read(ticket: value, scanner, into: &out[0])
                case ("errors", .array):
                    guard let first = scanner.elements(of: value).first, first.kind == .object else { break }
                    var code: String?, message: String?
                    for (k, v) in scanner.members(at: first.range.lowerBound) where v.kind == .string {
                        if k == "code" { code = text(scanner, v) } else if k == "message" { message = text(scanner, v) }
                    }
                    for index in out.indices where out[index].ticketStatus == nil {
                        out[index].error = code
                        out[index].message = message
                    }
                default: break
                }
            }
        }
        return out
    }

    private static func read(ticket: JSONToken, _ scanner: JSONScanner, into response: inout ExpoResponse) {
        for (key, value) in scanner.members(at: ticket.range.lowerBound) {
            switch (key, value.kind) {
            case ("status", .string): response.ticketStatus = text(scanner, value)
            case ("id", .string): response.ticketID = text(scanner, value)
            case ("message", .string): response.message = text(scanner, value)
            case ("details", .object):
                for (k, v) in scanner.members(at: value.range.lowerBound) where k == "error" && v.kind == .string { response.error = text(scanner, v) }
            default: break
            }
        }
    }

    static func text(_ scanner: JSONScanner, _ token: JSONToken) -> String {
        BoundedText.truncate(scanner.stringValue(token), maxBytes: maxTextBytes)
    }
}
