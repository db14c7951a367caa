import HMS
import PushCore

/// One answer from Push Kit v3's `messages:send`: the same envelope as v1's (`{"code","msg","requestId"}`, a partial
/// success's tokens in `msg`, here by reason: `{"illegalTokens":{"tokenFormatError":[...]},...}`), so HMS' decoder
/// reads it and HMS' table classes it (docs/harmony.md). Never fails on a body it does not know: the status decides.
public struct HarmonyResponse: Sendable, Equatable {
    /// Push Kit's answer as decoded: status, code, text, request id, the partial success's counts and tokens, and the
    /// sender's marks (the JWT was signed after a refusal; no JWT could be signed).
    public var envelope: HMSResponse

    public init(envelope: HMSResponse) { self.envelope = envelope }

    /// No request was sent: the app's key did not sign a JWT. Status 0.
    public init(signingFailed detail: String) { envelope = HMSResponse(status: 0, grantRefused: detail) }

    public static func decode(status: Int, body: [UInt8]) -> HarmonyResponse { HarmonyResponse(envelope: .decode(status: status, body: body)) }

    public var code: String? { envelope.code }
    /// The tokens a partial success or 80300007 named, and why (`illegalReasons`, the same order).
    public var illegalTokens: [String] { envelope.illegalTokens }

    /// The reasons Push Kit names that are the token's own (malformed, another project's app's, a third-party
    /// proxy's): such a token is gone for this app. The others (`noPushTypeRight`, `countryNotSupport`,
    /// `appinfoError`, a penalty...) are the app's or the message's: the token is kept.
    public static let tokenReasons: Set<String> = ["tokenFormatError", "noRight", "tokenPlatformNotSupport"]

    /// The named tokens to drop: those of a token reason (all of them when Push Kit gives no reasons, as v1).
    public var goneTokens: [String] { named { $0 == nil || Self.tokenReasons.contains($0!) } }
    /// The named tokens to fail and keep: those of any other reason.
    public var refusedTokens: [String] { named { $0 != nil && !Self.tokenReasons.contains($0!) } }

    private func named(_ keep: (String?) -> Bool) -> [String] {
        let reasons = envelope.illegalReasons
        // "" (or none at all) is a token named without a reason, as v1 names them: gone.
        return envelope.illegalTokens.enumerated().filter {
            let reason = $0.offset < reasons.count ? reasons[$0.offset] : ""
            return keep(reason.isEmpty ? nil : reason)
        }.map(\.element)
    }
}

/// Push Kit v3's answers in the classes every provider's fall in: v3 keeps v1's result codes (80000000 success,
/// 80100000 partial success, 80100001/80100003 parameters and structure, 80200001/80200003 authentication,
/// 80300007 all tokens invalid, 80300008 size, 80300010 token count, 81000001 internal error, 503 flow control),
/// so the table is HMS' (`HMSResponse.answerClass`): a JWT refused (401, 80200001, 80200003) is signed anew once,
/// then parks the app; a key that does not sign parks it at once. One difference: v3 says why each token was
/// refused, and a token refused for a reason not its own (`noPushTypeRight`...) is failed, never dropped.
extension HarmonyResponse: ProviderAnswer {
    public var status: Int { envelope.status }
    public var reasonName: String { envelope.reasonName }
    public var answerClass: AnswerClass {
        let table = envelope.answerClass
        guard case .dropToken = table, goneTokens.isEmpty, !refusedTokens.isEmpty else { return table }
        return .fail(reason: reasonName)
    }
    public var connectionAdvice: ConnectionAdvice { .keep }
    public var metricsReason: String { envelope.metricsReason }
    /// The `reason` label values besides `other`: v1's codes Push Kit v3 keeps, and the statuses it answers without one.
    public static var metricsReasons: [String] { HMSResponse.metricsReasons }
    /// `requestId` as the message id; the tokens named for a token reason are dropped, those named for another failed.
    public var resultFields: AnswerFields { AnswerFields(messageName: envelope.requestID, goneTokens: goneTokens, failedTokens: refusedTokens) }
}

extension DeliveryResult {
    /// A Push Kit v3 answer (tests and tools build results this way).
    public static func harmony(_ response: HarmonyResponse) -> DeliveryResult { .answer(response) }

    /// The Push Kit v3 answer, nil for a transport failure or another provider's answer.
    public var harmony: HarmonyResponse? { answer(as: HarmonyResponse.self) }
}
