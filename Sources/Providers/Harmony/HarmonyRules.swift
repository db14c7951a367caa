import PushCore

/// Why Push Kit would refuse a harmony job, as its own result code and text (`80300010 ...`): the job's rejection
/// reason.
public struct HarmonyRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    public let code: String, message: String
    public var description: String { "\(code) \(message)" }
}

/// Refuses locally what Push Kit v3 would refuse (each refusal costs a round trip), from its request body reference:
/// 1 to 1,000 tokens, each a non-empty string (at most 10 for a test message); `pushOptions`' `testMessage` a
/// boolean, `ttl` whole seconds up to 15 days, `biTag` a string of at most 64 bytes, `receiptId` a string,
/// `collapseKey` an integer; the body without its tokens within 4,096 bytes. The bytes are never changed. Pure.
public enum HarmonyRules {
    public static let maxTokens = 1000
    /// `testMessage: true`: Huawei caps a test message's tokens at 10.
    public static let maxTestTokens = 10
    public static let maxBodyBytes = 4096
    public static let maxTTLSeconds: Int64 = 1_296_000
    public static let maxBiTagBytes = 64

    public static let parameterCode = "80100001"
    public static let structureCode = "80100003"
    public static let tooLargeCode = "80300008"
    public static let tokenCountCode = "80300010"

    /// The tokens, each once in the producer's order, or Push Kit's refusal.
    public static func check(_ job: HarmonyJob) -> Result<[String], HarmonyRefusal> {
        guard !job.tokens.isEmpty else { return .failure(.init(code: tokenCountCode, message: "target.token is empty")) }
        guard job.tokens.count <= maxTokens else {
            return .failure(.init(code: tokenCountCode, message: "target.token lists \(job.tokens.count) tokens; at most \(maxTokens)"))
        }
        if let index = job.tokens.firstIndex(where: \.isEmpty) { return .failure(.init(code: parameterCode, message: "target.token[\(index)] is empty")) }
        var test = false
        if let options = job.pushOptions {
            switch pushOptions(options) {
            case .failure(let refusal): return .failure(refusal)
            case .success(let isTest): test = isTest
            }
        }
        var seen = Set<String>()
        let tokens = job.tokens.filter { seen.insert($0).inserted }
        if test && tokens.count > maxTestTokens {
            return .failure(.init(code: tokenCountCode, message: "a test message carries at most \(maxTestTokens) tokens; target.token lists \(tokens.count)"))
        }
        // The request body as the sender writes it, less the token list: `{"payload":…,"target":{"token":[]},"pushOptions":…}`.
        let bodyBytes = job.payload.count + (job.pushOptions.map { $0.count + 15 } ?? 0) + 36
        guard bodyBytes <= maxBodyBytes else {
            return .failure(.init(code: tooLargeCode, message: "the message body is \(bodyBytes) bytes besides its tokens; at most \(maxBodyBytes)"))
        }
        return .success(tokens)
    }

    /// `pushOptions`' members Push Kit reads, typed and ranged; others go as written. True for a test message.
    static func pushOptions(_ bytes: [UInt8]) -> Result<Bool, HarmonyRefusal> {
        bytes.withUnsafeBufferPointer { buffer in
            let scanner = JSONScanner(buffer)
            var test = false
            for (key, value) in scanner.members(at: 0) where value.kind != .null {
                switch key {
                case "testMessage":
                    guard value.kind == .bool else { return .failure(parameter("pushOptions.testMessage must be a boolean")) }
                    test = scanner.bytes[value.range.lowerBound] == UInt8(ascii: "t")
                case "ttl":
                    guard value.kind == .number, value.isInteger, let ttl = scanner.int64Value(value), (0...maxTTLSeconds).contains(ttl) else {
                        return .failure(parameter("pushOptions.ttl must be whole seconds from 0 to \(maxTTLSeconds) (15 days)"))
                    }
                case "biTag":
                    guard value.kind == .string, scanner.stringValue(value).utf8.count <= maxBiTagBytes else {
                        return .failure(parameter("pushOptions.biTag must be a string of at most \(maxBiTagBytes) bytes"))
                    }
                case "receiptId":
                    guard value.kind == .string else { return .failure(parameter("pushOptions.receiptId must be a string")) }
                case "collapseKey":
                    guard value.kind == .number, value.isInteger else { return .failure(parameter("pushOptions.collapseKey must be an integer")) }
                default: break
                }
            }
            return .success(test)
        }
    }

    private static func parameter(_ text: String) -> HarmonyRefusal { HarmonyRefusal(code: parameterCode, message: text) }
}
