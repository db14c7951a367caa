import Basics
import PushCore

/// One answer from FCM HTTP v1, decoded. Never fails: a body that is not FCM's JSON (the legacy endpoint's
/// HTML 404, a proxy's page) just has no error fields, and the status decides.
public struct FCMResponse: Sendable, Equatable {
    public var status: Int
    /// `projects/<project>/messages/<id>` on success.
    public var name: String?
    /// The RPC status (`error.status`): `NOT_FOUND`, `UNAVAILABLE`, `RESOURCE_EXHAUSTED`...
    public var rpcStatus: String?
    /// The FCM error code from `error.details[]` (`@type` ...FcmError): `UNREGISTERED`, `SENDER_ID_MISMATCH`...
    public var errorCode: String?
    public var message: String?
    /// The fields a `google.rpc.BadRequest` detail names (`message.token`...).
    public var fieldViolations: [String]
    /// `Retry-After` in seconds, when the answer had one.
    public var retryAfterSeconds: Int64?
    /// Set by the sender: the request carried an access token fetched after an earlier 401, so a 401 now means
    /// the credential is refused, not that the token went stale.
    public var afterTokenRefresh: Bool
    /// No request was sent: the token endpoint refused the service account's grant (`invalid_grant`...), which
    /// only a fixed key file cures. Status 0.
    public var grantRefused: String?

    public init(status: Int, name: String? = nil, rpcStatus: String? = nil, errorCode: String? = nil, message: String? = nil,
                fieldViolations: [String] = [], retryAfterSeconds: Int64? = nil, afterTokenRefresh: Bool = false,
                grantRefused: String? = nil) {
        self.grantRefused = grantRefused
        self.status = status
        self.name = name
        self.rpcStatus = rpcStatus
        self.errorCode = errorCode
        self.message = message
        self.fieldViolations = fieldViolations
        self.retryAfterSeconds = retryAfterSeconds
        self.afterTokenRefresh = afterTokenRefresh
    }

    /// The most specific name of the error: the FCM code, else the RPC status, else `HTTP <status>`; an empty
    /// one (`"status":""`, found by FuzzFCMResponse) names nothing and is passed over.
    public var reasonName: String { [errorCode, rpcStatus].lazy.compactMap { $0 }.first { !$0.isEmpty } ?? "HTTP \(status)" }

    /// Room for FCM's codes; a hostile peer's long strings are cut like APNs reasons.
    static let maxTextBytes = 256

    public static func decode(status: Int, body: [UInt8], retryAfter: String?) -> FCMResponse {
        var response = FCMResponse(status: status)
        response.retryAfterSeconds = retryAfter.flatMap(parseRetryAfterSeconds)
        body.withUnsafeBufferPointer { buffer in
            // Read as scanned, kept only if the whole body proves to be one JSON object.
            var read = response
            let isObject = JSONScanner.scanObject(buffer) { scanner, key, value in
                if value.kind == .string, scanner.stringEquals(key, "name") { read.name = text(scanner, value) }
                guard value.kind == .object, scanner.stringEquals(key, "error") else { return }
                scanner.forEachMember(at: value.range.lowerBound) { field, item in
                    switch item.kind {
                    case .string where scanner.stringEquals(field, "status"): read.rpcStatus = text(scanner, item)
                    case .string where scanner.stringEquals(field, "message"): read.message = text(scanner, item)
                    case .array where scanner.stringEquals(field, "details"): readDetails(scanner, item, into: &read)
                    default: break
                    }
                }
            }
            if isObject { response = read }
        }
        return response
    }

    private static func readDetails(_ scanner: JSONScanner, _ array: JSONToken, into response: inout FCMResponse) {
        for element in elements(scanner, array) where element.kind == .object {
            let members = FCMMessageValidator.members(scanner, at: element.range.lowerBound)
            let type = members.first { $0.0 == "@type" }.map { scanner.stringValue($0.1) } ?? ""
            if type.hasSuffix("google.firebase.fcm.v1.FcmError"),
               let code = members.first(where: { $0.0 == "errorCode" && $0.1.kind == .string }) {
                response.errorCode = text(scanner, code.1)
            }
            if type.hasSuffix("google.rpc.BadRequest"), let violations = members.first(where: { $0.0 == "fieldViolations" }) {
                for violation in elements(scanner, violations.1) where violation.kind == .object {
                    for (name, value) in FCMMessageValidator.members(scanner, at: violation.range.lowerBound)
                    where name == "field" && value.kind == .string {
                        response.fieldViolations.append(text(scanner, value))
                    }
                }
            }
        }
    }

    /// The values of an (already validated) array.
    private static func elements(_ outer: JSONScanner, _ array: JSONToken) -> [JSONToken] { outer.elements(of: array) }

    private static func text(_ scanner: JSONScanner, _ token: JSONToken) -> String {
        BoundedText.truncate(scanner.stringValue(token), maxBytes: maxTextBytes)
    }
}
