import Basics
import PushCore

/// One answer from APNs. Decoding never fails: a body that is not the documented JSON yields no reason.
public struct APNsResponse: Sendable, Equatable {
    /// Apple's reasons are short names; an unknown one longer than this (a broken or hostile peer) is kept cut
    /// to it, marked `…(truncated, N bytes)`, so it cannot travel whole into logs and every results entry.
    public static let maxReasonBytes = 256

    public var status: Int
    public var apnsID: String?
    /// Sandbox only: lets Apple's delivery log find the notification.
    public var apnsUniqueID: String?
    public var reason: APNsReason?
    /// Milliseconds since 1970: when the token stopped being valid (410 only).
    public var timestamp: Int64?

    public init(status: Int, apnsID: String? = nil, apnsUniqueID: String? = nil, reason: APNsReason? = nil, timestamp: Int64? = nil) {
        self.status = status
        self.apnsID = apnsID
        self.apnsUniqueID = apnsUniqueID
        self.reason = reason
        self.timestamp = timestamp
    }

    public var isSuccess: Bool { status == 200 }

    public static func decode(status: Int, apnsID: String?, apnsUniqueID: String?, body: [UInt8]) -> APNsResponse {
        var response = APNsResponse(status: status, apnsID: apnsID, apnsUniqueID: apnsUniqueID)
        if let (reason, timestamp) = decodeBody(body) {
            response.reason = reason
            response.timestamp = timestamp
        }
        return response
    }

    /// `reason` and `timestamp` of an error body, or of a GOAWAY's debug data (same JSON shape);
    /// nil when the bytes are not a JSON object. Unknown members are ignored.
    public static func decodeBody(_ body: [UInt8]) -> (reason: APNsReason?, timestamp: Int64?)? {
        guard !body.isEmpty else { return nil }
        return body.withUnsafeBufferPointer { buffer -> (APNsReason?, Int64?)? in
            guard (try? JSONScanner.validate(buffer))?.kind == .object else { return nil }
            var scanner = JSONScanner(buffer)
            var reason: APNsReason?
            var timestamp: Int64?
            do throws(JSONScanError) {
                try scanner.beginObject()
                var first = true
                while let (key, value) = try scanner.nextMember(first: &first) {
                    if scanner.stringEquals(key, "reason"), value.kind == .string {
                        reason = APNsReason(BoundedText.truncate(scanner.stringValue(value), maxBytes: maxReasonBytes))
                    } else if scanner.stringEquals(key, "timestamp"), value.kind == .number {
                        timestamp = scanner.int64Value(value) ?? Double(scanner.text(value)).flatMap { Int64(exactly: $0.rounded(.down)) }
                    }
                }
            } catch {
                return nil
            }
            return (reason, timestamp)
        }
    }
}
