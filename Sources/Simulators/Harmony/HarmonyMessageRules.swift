import Basics
import Foundation

/// One v3 `messages:send` that passed Push Kit's checks: its scenario, tokens and the members' bytes as sent.
struct HarmonySend {
    var pushType: Int
    /// `target.token`: 1 to 1000, in order.
    var tokens: [String]
    var payload: [UInt8]
    var pushOptions: [UInt8]?
    var testMessage: Bool
}

/// Push Kit v3's checks of a scenario-specific send, at the level of Huawei's request body reference: the
/// `push-type` header one of 0, 1, 2, 6, 7, 10; a JSON object with a `payload` object, a `target` whose `token` is
/// 1 to 1000 strings (10 for a test message), an optional `pushOptions` object (`testMessage` a boolean, `ttl` whole
/// seconds up to 15 days, `biTag` at most 64 bytes); the body at most 4096 bytes besides its tokens.
enum HarmonyMessageRules {
    static let pushTypes = [0, 1, 2, 6, 7, 10]
    static let tokenLimit = 1000
    static let testTokenLimit = 10
    static let bodyLimit = 4096
    static let ttlLimitSeconds: Int64 = 1_296_000

    static func parse(body: [UInt8], pushType header: String?) -> Result<HarmonySend, HMSResult> {
        guard let header, let pushType = Int(header), pushTypes.contains(pushType) else {
            return .failure(.parameterError("the push-type header must be one of 0, 1, 2, 6, 7, 10"))
        }
        guard let ranges = JSONShape.memberValueRanges(body),
              let root = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return .failure(.structureError("the request body is not a JSON object"))
        }
        guard root["payload"] is [String: Any], let payloadRange = ranges["payload"] else { return .failure(.structureError("payload must be an object")) }
        guard let target = root["target"] as? [String: Any], let targetRange = ranges["target"],
              let list = target["token"] as? [Any], !list.isEmpty else { return .failure(.tokenCount) }
        guard let tokens = list as? [String] else { return .failure(.structureError("target.token must be an array of strings")) }
        var send = HarmonySend(pushType: pushType, tokens: tokens, payload: Array(body[payloadRange]), testMessage: false)
        if let options = root["pushOptions"], !(options is NSNull) {
            guard let object = options as? [String: Any], let range = ranges["pushOptions"] else { return .failure(.structureError("pushOptions must be an object")) }
            if let error = pushOptions(object, into: &send) { return .failure(error) }
            send.pushOptions = Array(body[range])
        }
        if tokens.count > (send.testMessage ? testTokenLimit : tokenLimit) { return .failure(.tokenCount) }
        let tokenBytes = JSONShape.memberValueRanges(Array(body[targetRange]))?["token"]?.count ?? 0
        if body.count - tokenBytes > bodyLimit { return .failure(.bodyTooLarge) }
        return .success(send)
    }

    private static func pushOptions(_ options: [String: Any], into send: inout HarmonySend) -> HMSResult? {
        if let test = options["testMessage"] {
            guard HMSMessageRules.isBool(test), let flag = test as? Bool else { return .parameterError("pushOptions.testMessage must be a boolean") }
            send.testMessage = flag
        }
        if let ttl = options["ttl"] {
            guard !HMSMessageRules.isBool(ttl), let number = ttl as? NSNumber, number.doubleValue == Double(number.int64Value),
                  (0...ttlLimitSeconds).contains(number.int64Value) else {
                return .parameterError("pushOptions.ttl must be whole seconds up to 15 days")
            }
        }
        if let tag = options["biTag"] {
            guard let text = tag as? String, text.utf8.count <= 64 else { return .parameterError("pushOptions.biTag must be a string of at most 64 bytes") }
        }
        if let receipt = options["receiptId"], !(receipt is String) { return .parameterError("pushOptions.receiptId must be a string") }
        return nil
    }
}

extension HMSResult {
    /// v3's 80100000: `msg` holds `{"illegalTokens":{"<why>":[...]},"success":n,"failure":m}`.
    static func partialSuccessV3(success: Int, illegal: [String], why: String = "tokenFormatError") -> HMSResult {
        HMSResult(status: 200, code: "80100000", msg: v3Counts(illegal: illegal, why: why, success: success))
    }

    /// v3's 80300007 (every token refused), naming them as the partial success does.
    static func allTokensInvalidV3(_ illegal: [String], why: String = "tokenFormatError") -> HMSResult {
        HMSResult(status: 400, code: "80300007", msg: v3Counts(illegal: illegal, why: why, success: nil))
    }

    private static func v3Counts(illegal: [String], why: String, success: Int?) -> String {
        var inner = Array(#"{"illegalTokens":{"#.utf8)
        appendJSONString(why, to: &inner)
        inner += Array(":[".utf8)
        for (index, token) in illegal.enumerated() {
            if index > 0 { inner.append(UInt8(ascii: ",")) }
            appendJSONString(token, to: &inner)
        }
        inner += Array("]}".utf8)
        if let success { inner += Array(#","success":\#(success)"#.utf8) }
        inner += Array(#","failure":\#(illegal.count)}"#.utf8)
        return String(decoding: inner, as: UTF8.self)
    }
}
