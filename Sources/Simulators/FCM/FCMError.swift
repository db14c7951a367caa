import Basics

/// An FCM error answer: the HTTP status, the google.rpc status name, the message, and the details FCM adds.
struct FCMError: Error, Equatable {
    var status: Int
    var rpcStatus: String
    var message: String
    /// The `FcmError` detail's `errorCode` (nil: no FcmError detail, as for auth and JSON-shape errors).
    var errorCode: String?
    /// `google.rpc.BadRequest` field violations: (field, description).
    var fieldViolations: [(String, String)] = []
    /// `google.rpc.ErrorInfo` reason (CREDENTIALS_MISSING, ACCESS_TOKEN_EXPIRED, ...).
    var errorInfoReason: String?
    var retryAfterSeconds: Int?

    static func == (a: FCMError, b: FCMError) -> Bool {
        a.status == b.status && a.rpcStatus == b.rpcStatus && a.message == b.message && a.errorCode == b.errorCode
            && a.fieldViolations.map(\.0) == b.fieldViolations.map(\.0) && a.errorInfoReason == b.errorInfoReason
            && a.retryAfterSeconds == b.retryAfterSeconds
    }

    /// The google.rpc code name Google pairs with an HTTP status.
    static func rpcStatus(for status: Int) -> String {
        switch status {
        case 400: return "INVALID_ARGUMENT"
        case 401: return "UNAUTHENTICATED"
        case 403: return "PERMISSION_DENIED"
        case 404: return "NOT_FOUND"
        case 409: return "ABORTED"
        case 429: return "RESOURCE_EXHAUSTED"
        case 501: return "UNIMPLEMENTED"
        case 503: return "UNAVAILABLE"
        case 504: return "DEADLINE_EXCEEDED"
        default: return status >= 500 ? "INTERNAL" : "FAILED_PRECONDITION"
        }
    }

    /// The FCM errorCode an injected error of this status carries unless the rule names one.
    static func errorCode(for status: Int) -> String {
        switch status {
        case 400: return "INVALID_ARGUMENT"
        case 401: return "THIRD_PARTY_AUTH_ERROR"
        case 403: return "SENDER_ID_MISMATCH"
        case 404: return "UNREGISTERED"
        case 429: return "QUOTA_EXCEEDED"
        case 500: return "INTERNAL"
        case 503: return "UNAVAILABLE"
        default: return "UNSPECIFIED_ERROR"
        }
    }

    static func defaultMessage(for errorCode: String) -> String {
        switch errorCode {
        case "UNREGISTERED": return "Requested entity was not found."
        case "INVALID_ARGUMENT": return "Request contains an invalid argument."
        case "SENDER_ID_MISMATCH": return "SenderId mismatch"
        case "THIRD_PARTY_AUTH_ERROR": return "Auth error from APNS or Web Push Service"
        case "QUOTA_EXCEEDED": return "Quota exceeded for quota metric 'Send requests' and limit 'Send requests per minute'."
        case "UNAVAILABLE": return "The service is currently unavailable."
        case "INTERNAL": return "Internal error encountered."
        default: return "Unknown error."
        }
    }

    /// An FCM error as FCM words it, with the FcmError detail.
    static func fcm(_ status: Int, _ errorCode: String, message: String? = nil, retryAfter: Int? = nil) -> FCMError {
        FCMError(status: status, rpcStatus: rpcStatus(for: status), message: message ?? defaultMessage(for: errorCode),
                 errorCode: errorCode, retryAfterSeconds: retryAfter)
    }

    /// The 401 for an access token Google does not accept (no FcmError detail: it is not about the message).
    static func unauthenticated(_ message: String? = nil) -> FCMError {
        FCMError(status: 401, rpcStatus: "UNAUTHENTICATED", message: message ?? "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
                 errorCode: nil)
    }

    static let invalidToken = FCMError(
        status: 400, rpcStatus: "INVALID_ARGUMENT", message: "The registration token is not a valid FCM registration token",
        errorCode: "INVALID_ARGUMENT", fieldViolations: [("message.token", "The registration token is not a valid FCM registration token")])

    /// A validation failure of the message: INVALID_ARGUMENT with the FcmError detail and the field named.
    static func invalid(_ field: String, _ description: String) -> FCMError {
        FCMError(status: 400, rpcStatus: "INVALID_ARGUMENT", message: description, errorCode: "INVALID_ARGUMENT",
                 fieldViolations: [(field, description)])
    }

    /// A JSON-to-proto mapping failure (unknown field, wrong type): only a BadRequest detail, as Google's front end answers.
    static func badPayload(_ field: String, _ description: String) -> FCMError {
        FCMError(status: 400, rpcStatus: "INVALID_ARGUMENT", message: description, errorCode: nil, fieldViolations: [(field, description)])
    }

    /// `{"error":{"code","message","status","details":[...]}}`.
    func body() -> [UInt8] {
        var out = Array(#"{"error":{"code":"#.utf8)
        out += Array(String(status).utf8)
        out += Array(#","message":"#.utf8)
        appendJSONString(message, to: &out)
        out += Array(#","status":"#.utf8)
        appendJSONString(rpcStatus, to: &out)
        out += Array(#","details":["#.utf8)
        var first = true
        func separator() { if !first { out.append(UInt8(ascii: ",")) }; first = false }
        if let errorCode {
            separator()
            out += Array(#"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"#.utf8)
            appendJSONString(errorCode, to: &out)
            out.append(UInt8(ascii: "}"))
        }
        if !fieldViolations.isEmpty {
            separator()
            out += Array(#"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":["#.utf8)
            for (index, (field, description)) in fieldViolations.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out += Array(#"{"field":"#.utf8)
                appendJSONString(field, to: &out)
                out += Array(#","description":"#.utf8)
                appendJSONString(description, to: &out)
                out.append(UInt8(ascii: "}"))
            }
            out += Array("]}".utf8)
        }
        if let errorInfoReason {
            separator()
            out += Array(#"{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"#.utf8)
            appendJSONString(errorInfoReason, to: &out)
            out += Array(#","domain":"googleapis.com","metadata":{"service":"fcm.googleapis.com","method":"google.firebase.fcm.v1.FcmService.SendMessage"}}"#.utf8)
        }
        out += Array("]}}".utf8)
        return out
    }
}

