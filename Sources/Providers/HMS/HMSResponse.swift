import Basics
import PushCore

/// One answer from Push Kit's `messages:send`, decoded from the HTTP status and its JSON
/// `{"code":"80000000","msg":"Success","requestId":"..."}`. Never fails: a body that is not Push Kit's JSON (a
/// proxy's page, an empty 503) just has no code, and the status decides.
public struct HMSResponse: Sendable, Equatable {
    public var status: Int
    /// Push Kit's result code (`80000000` success, `80100000` partial success...), as text.
    public var code: String?
    /// Its text; for a partial success a JSON string naming the counts and the illegal tokens.
    public var msg: String?
    public var requestID: String?
    /// From a partial success's `msg`: how many tokens took the message, how many did not, and which were illegal.
    public var successCount: Int64?
    public var failureCount: Int64?
    public var illegalTokens: [String] = []
    /// Push Kit v3's reason for each of `illegalTokens` (`tokenFormatError`, `noPushTypeRight`...), in the same order;
    /// empty for v1's plain list.
    /// Empty, or one per `illegalTokens` entry ("" for one named without a reason).
    public var illegalReasons: [String] = []
    /// Set by the sender: the request carried an access token fetched after an earlier 401, so a 401 now means the
    /// credential is refused, not that the token went stale.
    public var afterTokenRefresh = false
    /// No request was sent: the token endpoint refused the app's client credentials. Status 0.
    public var grantRefused: String?

    /// An answer with only a status (and, for a refused grant, why); `decode` reads the rest.
    public init(status: Int, grantRefused: String? = nil) {
        self.status = status
        self.grantRefused = grantRefused
    }

    /// `<code> <text>` (Push Kit's own words, the job's reason), else `HTTP <status>`.
    public var reasonName: String {
        guard let code, !code.isEmpty else { return "HTTP \(status)" }
        guard let msg, !msg.isEmpty else { return code }
        return code + " " + msg
    }

    /// Room for Push Kit's texts; a hostile peer's long strings are cut like APNs reasons.
    static let maxTextBytes = 256
    /// The illegal tokens kept from one partial success (a request carries at most 1,000).
    static let maxIllegalTokens = 1000

    public static func decode(status: Int, body: [UInt8]) -> HMSResponse {
        var response = HMSResponse(status: status)
        body.withUnsafeBufferPointer { buffer in
            // Read as scanned, kept only if the whole body proves to be one JSON object.
            var read = response
            let isObject = JSONScanner.scanObject(buffer) { scanner, key, value in
                switch value.kind {
                // Documented as a string; a number is read as its digits.
                case .string where scanner.stringEquals(key, "code"): read.code = text(scanner, value)
                case .number where scanner.stringEquals(key, "code"): read.code = scanner.text(value)
                case .string where scanner.stringEquals(key, "msg"): read.msg = scanner.stringValue(value)
                case .string where scanner.stringEquals(key, "requestId"): read.requestID = text(scanner, value)
                default: break
                }
            }
            if isObject { response = read }
        }
        // Only an object can be a partial success's counts (a success's `msg` is just "Success").
        if let msg = response.msg, msg.utf8.first(where: { !Self.isJSONWhitespace($0) }) == UInt8(ascii: "{") {
            readPartial(Array(msg.utf8), into: &response)
        }
        if let msg = response.msg { response.msg = BoundedText.truncate(msg, maxBytes: maxTextBytes) }
        return response
    }

    private static func isJSONWhitespace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 }

    /// A partial success's `msg`: `{"success":1,"failure":1,"illegal_tokens":["..."]}` (also `illegalTokens`), or
    /// Push Kit v3's (HarmonyOS) `{"illegalTokens":{"<why>":["..."]},"success":1,"failure":1}`, the tokens by reason.
    private static func readPartial(_ bytes: [UInt8], into response: inout HMSResponse) {
        bytes.withUnsafeBufferPointer { buffer in
            guard (try? JSONScanner.validate(buffer))?.kind == .object else { return }
            let scanner = JSONScanner(buffer)
            for (key, value) in scanner.members(at: 0) {
                switch (key, value.kind) {
                case ("success", .number): response.successCount = scanner.int64Value(value)
                case ("failure", .number): response.failureCount = scanner.int64Value(value)
                case ("illegal_tokens", .array), ("illegalTokens", .array):
                    for token in scanner.elements(of: value).prefix(maxIllegalTokens) where token.kind == .string && response.illegalTokens.count < maxIllegalTokens {
                        response.illegalTokens.append(scanner.stringValue(token))
                        // Reasons stay in step with the tokens once any is given: "" is none (both forms in one answer).
                        if !response.illegalReasons.isEmpty { response.illegalReasons.append("") }
                    }
                case ("illegalTokens", .object):
                    while response.illegalReasons.count < response.illegalTokens.count { response.illegalReasons.append("") }
                    for (why, list) in scanner.members(at: value.range.lowerBound) where list.kind == .array {
                        for token in scanner.elements(of: list) where token.kind == .string && response.illegalTokens.count < maxIllegalTokens {
                            response.illegalTokens.append(scanner.stringValue(token))
                            response.illegalReasons.append(BoundedText.truncate(why, maxBytes: 64))
                        }
                    }
                default: break
                }
            }
        }
    }

    private static func text(_ scanner: JSONScanner, _ token: JSONToken) -> String {
        BoundedText.truncate(scanner.stringValue(token), maxBytes: maxTextBytes)
    }
}
