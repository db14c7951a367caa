import Basics
import PushCore

/// The notifications every benchmark sends: one shape (alert, ~200-byte payload, 64-hex device token) so
/// that the worker, the bare client, h2load and aioapns all do the same work per request.
enum BenchJobs {
    static let topic = "com.example.bench"
    /// The platform of `job` and `token`: the devices `herald-bench devices` registers for them.
    static let platform = Platform.apns
    static let payloadBytes = 200

    /// A distinct valid device token per index below 2^32 (64 hexadecimal digits, as Apple issues them): a fixed
    /// head and the index in 8 digits (`DevicesCommand.serverFill` makes the same in Lua).
    static func token(_ index: Int) -> String {
        let tail = String(UInt32(truncatingIfNeeded: index), radix: 16)
        return tokenHead + String(repeating: "0", count: 8 - tail.count) + tail
    }

    static let tokenHead = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c"

    /// A realistic alert payload padded to exactly `payloadBytes` bytes.
    static func payload(_ index: Int) -> String {
        let start = "{\"aps\":{\"alert\":{\"title\":\"Order shipped\",\"body\":\"Your order \(index) has shipped and arrives on Tuesday.\"},\"sound\":\"default\",\"badge\":1},\"order\":\(index),\"pad\":\""
        let end = "\"}"
        let fill = max(0, payloadBytes - start.utf8.count - end.utf8.count)
        return start + String(repeating: "x", count: fill) + end
    }

    /// One job line as a producer would LPUSH it.
    static func job(_ index: Int) -> String {
        "{\"id\":\"b\(index)\",\"token\":\"\(token(index))\",\"topic\":\"\(topic)\",\"payload\":\(payload(index))}"
    }

    /// An FCM registration token per index, in the shape Google issues (base64url text, colon, APA91b...).
    static func fcmToken(_ index: Int) -> String { "bench\(index)-dGVzdC10b2tlbg:APA91bHeraldBenchmarkToken\(index)" }

    /// The FCM message of the same notification: the same text, its order as a data string.
    static func fcmMessage(_ index: Int) -> String {
        "{\"token\":\"\(fcmToken(index))\",\"notification\":{\"title\":\"Order shipped\",\"body\":\"Your order \(index) has shipped and arrives on Tuesday.\"},\"data\":{\"order\":\"\(index)\"},\"android\":{\"priority\":\"HIGH\"}}"
    }

    /// Each platform's job maker (`fill --platform`), given the command's flags (Web Push cycles through
    /// `--subscriptions`). Exhaustive, so every platform `fill` lists has its jobs.
    static func maker(_ platform: Platform, _ flags: ParsedArguments) throws -> @Sendable (Int) -> String {
        switch platform {
        case .apns: return job
        case .fcm: return fcmJob
        case .hms:
            let tokens = try flags.int("tokens-per-job", default: 1)
            guard (1...1000).contains(tokens) else { throw BenchError("--tokens-per-job must be 1...1000 (Push Kit's most a request)") }
            return { hmsJob($0, tokens: tokens) }
        case .harmony:
            let tokens = try flags.int("tokens-per-job", default: 1)
            guard (1...1000).contains(tokens) else { throw BenchError("--tokens-per-job must be 1...1000 (Push Kit's most a request)") }
            return { harmonyJob($0, tokens: tokens) }
        case .webpush:
            let subscriptions = try subscriptions(file: try flags.required("subscriptions"))
            return { webPushJob($0, subscription: subscriptions[$0 % subscriptions.count]) }
        case .expo: return expoJob
        }
    }

    /// One FCM job line.
    static func fcmJob(_ index: Int) -> String {
        "{\"id\":\"b\(index)\",\"platform\":\"fcm\",\"message\":\(fcmMessage(index))}"
    }

    /// One Huawei Push Kit job line: the same notification, `data` a JSON string as Push Kit wants it, one token.
    /// `tokens` > 1: a many-token send, tokens `bench-hms-token-<index>-<k>`.
    static func hmsJob(_ index: Int, tokens: Int = 1) -> String {
        let list = tokens == 1 ? "\"bench-hms-token-\(index)\"" : (0..<tokens).map { "\"bench-hms-token-\(index)-\($0)\"" }.joined(separator: ",")
        return "{\"id\":\"b\(index)\",\"platform\":\"hms\",\"app\":\"bench-hms\",\"message\":{\"notification\":{\"title\":\"Order shipped\",\"body\":\"Your order \(index) has shipped and arrives on Tuesday.\"},"
            + "\"data\":\"{\\\"order\\\":\(index)}\",\"android\":{\"urgency\":\"HIGH\"},\"token\":[\(list)]}}"
    }

    /// One HarmonyOS (Push Kit v3) job line: the same notification as an alert, one token (`bench-harmony-token-<index>`)
    /// or, with `tokens` > 1, a many-token send in `target`.
    static func harmonyJob(_ index: Int, tokens: Int = 1) -> String {
        let target = tokens == 1 ? "\"token\":\"bench-harmony-token-\(index)\""
            : "\"target\":{\"token\":[" + (0..<tokens).map { "\"bench-harmony-token-\(index)-\($0)\"" }.joined(separator: ",") + "]}"
        return "{\"id\":\"b\(index)\",\"platform\":\"harmony\",\"app\":\"bench-harmony\",\(target),\"push_type\":\"alert\","
            + "\"payload\":{\"notification\":{\"category\":\"MARKETING\",\"title\":\"Order shipped\",\"body\":\"Your order \(index) has shipped and arrives on Tuesday.\",\"clickAction\":{\"actionType\":0}}}}"
    }

    /// One Expo job line: the same notification as Expo documents a message (without `to`), one push token, its
    /// fate in the simulator `ok` (`ExponentPushToken[ok-bench-<index>]`).
    static func expoJob(_ index: Int) -> String {
        "{\"id\":\"b\(index)\",\"platform\":\"expo\",\"to\":\"ExponentPushToken[ok-bench-\(index)]\",\"payload\":{\"title\":\"Order shipped\","
            + "\"body\":\"Your order \(index) has shipped and arrives on Tuesday.\",\"data\":{\"order\":\(index)},\"sound\":\"default\",\"priority\":\"high\"}}"
    }

    /// The Web Push payload of the same notification (JSON, as a service worker reads it; about 120 bytes).
    static func webPushPayload(_ index: Int) -> String {
        "{\"title\":\"Order shipped\",\"body\":\"Your order \(index) has shipped and arrives on Tuesday.\",\"order\":\(index)}"
    }

    /// One Web Push job line to `subscription` (a PushSubscription's JSON).
    static func webPushJob(_ index: Int, subscription: String) -> String {
        "{\"id\":\"b\(index)\",\"platform\":\"webpush\",\"subscription\":\(subscription),\"payload\":\(webPushPayload(index)),\"ttl\":60}"
    }

    /// The subscriptions of `herald mock-webpush --subscriptions-file`, one JSON object a line.
    static func subscriptions(file: String) throws -> [String] {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { throw BenchError("cannot read \(file)") }
        let lines = text.split(separator: "\n").map(String.init).filter { !$0.isEmpty }
        guard !lines.isEmpty else { throw BenchError("\(file) has no subscriptions") }
        return lines
    }
}
