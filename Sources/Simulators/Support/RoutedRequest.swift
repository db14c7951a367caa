/// One request as a `RoutedConnection` collects it (from HTTP/2 frames or an HTTP/1.1 message): FCM's and Push
/// Kit's requests have the same parts.
final class RoutedRequest: MockRequest {
    /// The largest body read at all (FCM's; 1,000 Push Kit tokens of ~150 bytes fill 150 KiB of it): anything
    /// bigger is the provider's "too big" whatever it holds.
    static let bodyLimit = 256 * 1024

    var method = ""
    var path = ""
    var authorization: String?
    /// Push Kit v3's scenario header (`push-type: 0`).
    var pushType: String?
    var body: [UInt8] = []
    var bodyTooLarge = false

    override func setHeader(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        if UTF8Matching.equal(name, ":path") { path = String(decoding: value, as: UTF8.self) }
        else if UTF8Matching.equal(name, ":method") { method = String(decoding: value, as: UTF8.self) }
        else if UTF8Matching.equal(name, "authorization") { authorization = String(decoding: value, as: UTF8.self) }
        else if UTF8Matching.equal(name, "push-type") { pushType = String(decoding: value, as: UTF8.self) }
    }

    override func append(body chunk: UnsafeBufferPointer<UInt8>) {
        if body.count + chunk.count > Self.bodyLimit { bodyTooLarge = true; return }
        body.append(contentsOf: chunk)
    }
}

/// An answer to send: status, headers (besides content-length) and body.
struct RoutedAnswer {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]

    static func json(_ status: Int, _ body: [UInt8], extra: [(String, String)] = []) -> RoutedAnswer {
        RoutedAnswer(status: status, headers: [("content-type", "application/json; charset=UTF-8")] + extra, body: body)
    }
}

/// What a connection does with a request, after its latency.
enum RoutedOutcome {
    case answer(RoutedAnswer)
    /// A fault on the connection instead of an answer.
    case fault(MockServerConnection.Fault)
}
