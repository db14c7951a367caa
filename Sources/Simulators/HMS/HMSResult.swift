import Basics
import Reactor

/// One Push Kit answer: the HTTP status and the body `{"code","msg","requestId"}` (the request id is added
/// when it goes out), with Huawei's result codes and wording.
struct HMSResult: Error, Equatable {
    var status: Int
    var code: String
    var msg: String
    var retryAfterSeconds: Int?

    static let success = HMSResult(status: 200, code: "80000000", msg: "Success")

    /// 80100000: some tokens were illegal. `msg` is itself JSON, as Huawei sends it: a string holding
    /// `{"success":n,"failure":m,"illegal_tokens":[...]}`.
    static func partialSuccess(success: Int, illegal: [String]) -> HMSResult {
        var inner = Array(#"{"success":\#(success),"failure":\#(illegal.count),"illegal_tokens":["#.utf8)
        for (index, token) in illegal.enumerated() {
            if index > 0 { inner.append(UInt8(ascii: ",")) }
            appendJSONString(token, to: &inner)
        }
        inner += Array("]}".utf8)
        return HMSResult(status: 200, code: "80100000", msg: String(decoding: inner, as: UTF8.self))
    }

    static func parameterError(_ detail: String) -> HMSResult {
        HMSResult(status: 400, code: "80100001", msg: "Some request parameters are incorrect: " + detail)
    }

    static func structureError(_ detail: String) -> HMSResult {
        HMSResult(status: 400, code: "80100003", msg: "Illegal payload, " + detail)
    }

    static let collapseKeyInvalid = HMSResult(status: 400, code: "80100013", msg: "The collapse_key message field is invalid")
    static let authenticationError = HMSResult(status: 401, code: "80200001", msg: "Oauth authentication error")
    static let tokenExpired = HMSResult(status: 401, code: "80200003", msg: "Oauth Token expired")
    static let allTokensInvalid = HMSResult(status: 400, code: "80300007", msg: "All the tokens are invalid")
    static let bodyTooLarge = HMSResult(status: 400, code: "80300008", msg: "The message body size exceeds the default value")
    static let tokenCount = HMSResult(status: 400, code: "80300010", msg: "The number of tokens in the message body exceeds the default value")
    static let internalError = HMSResult(status: 500, code: "81000001", msg: "System internal error")

    /// HTTP 503, Huawei's traffic control. The HTTP status is the signal (Huawei documents no result code of
    /// its own for it): the body carries 81000001.
    static func flowControl(retryAfter: Int? = nil) -> HMSResult {
        HMSResult(status: 503, code: "81000001", msg: "Flow control: the request rate is too high, spread the sends out", retryAfterSeconds: retryAfter)
    }

    /// An injected error: `status` (default 500) with `code` (default from the status) and `msg`.
    static func scripted(status: Int?, code: String?, message: String?, retryAfter: Int?) -> HMSResult {
        let status = status ?? 500
        let base: HMSResult
        switch status {
        case 401: base = .authenticationError
        case 503: base = .flowControl()
        case 400..<500: base = .parameterError("scripted")
        default: base = .internalError
        }
        return HMSResult(status: status, code: code ?? base.code, msg: message ?? base.msg, retryAfterSeconds: retryAfter)
    }

    func body(requestId: String) -> [UInt8] {
        var out = Array(#"{"code":"#.utf8)
        appendJSONString(code, to: &out)
        out += Array(#","msg":"#.utf8)
        appendJSONString(msg, to: &out)
        out += Array(#","requestId":"#.utf8)
        appendJSONString(requestId, to: &out)
        out.append(UInt8(ascii: "}"))
        return out
    }
}

extension HMSResult {
    /// The answer as it goes out (Push Kit v1's and v3's alike), counted by status and result code.
    func answer<Handler: SendAPIHandler>(requestId: String, core: SendAPICore<Handler>) -> RoutedAnswer where Handler.Counters == MockHMSCounters {
        core.statusCounts.count(status)
        core.stats.provider.byCode[code, default: 0] += 1
        var extra: [(String, String)] = []
        if let seconds = retryAfterSeconds { extra.append(("retry-after", String(seconds))) }
        return .json(status, body(requestId: requestId), extra: extra)
    }
}

/// Huawei's request ids are 24 digits: the time in milliseconds, then a sequence. Loop-confined, in its handler.
struct HuaweiRequestIDs {
    private var count: UInt64 = 0

    mutating func next() -> String {
        count &+= 1
        let sequence = String(count % 100_000_000_000)
        return String(wallClockMillis()) + String(repeating: "0", count: max(0, 11 - sequence.utf8.count)) + sequence
    }
}
