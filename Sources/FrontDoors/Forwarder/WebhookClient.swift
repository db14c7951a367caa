import CurlHTTP

/// How a webhook POST is made: the URL and libcurl's transport settings.
public struct WebhookOptions: Sendable {
    public var url: String
    /// Whole request, connect included.
    public var timeoutMilliseconds = 10_000
    public var connectTimeoutMilliseconds = 5_000
    /// PEM bundle to trust instead of the system's (a private CA, a test server).
    public var caFile: String?
    /// `http://host:port` (or any proxy URL libcurl takes).
    public var proxy: String?
    /// Extra `Name: value` headers (a secret bearer token, say).
    public var headers: [String] = []
    /// Key of the HMAC-SHA256 signature of each body, sent as `X-Herald-Signature: sha256=<hex>`; nil: none.
    public var signingKey: [UInt8]?

    public init(url: String) { self.url = url }
}

/// What one POST came back with.
public enum WebhookAnswer: Sendable, Equatable {
    /// An HTTP status (the body is not kept beyond its first bytes, for a log line).
    case status(Int, body: String)
    /// No HTTP answer: connect, TLS, timeout (libcurl's message).
    case transportError(String)

    public var isSuccess: Bool {
        if case .status(let code, _) = self { return (200...299).contains(code) }
        return false
    }
}

/// Posts JSON bodies over one `CurlSession` (its connection is kept alive between posts); one thread at a time
/// (not Sendable).
public final class WebhookClient {
    private let session: CurlSession
    private let options: WebhookOptions
    /// The first bytes of an answer's body kept for a log line; the rest is read and dropped.
    static let keptBodyBytes = 512

    public init(_ options: WebhookOptions) throws(WebhookError) {
        let transport = CurlPost.Options(timeoutMilliseconds: options.timeoutMilliseconds, connectTimeoutMilliseconds: options.connectTimeoutMilliseconds,
                                         caFile: options.caFile, proxy: options.proxy)
        guard let session = CurlSession(transport, keepBodyBytes: Self.keptBodyBytes) else { throw WebhookError("curl_easy_init failed") }
        self.session = session
        self.options = options
    }

    /// POSTs `body` as `application/json` and waits for the answer (at most the timeout).
    public func post(_ body: [UInt8]) -> WebhookAnswer {
        var headers = ["Content-Type: application/json", "Expect:"] + options.headers
        if let key = options.signingKey { headers.append("X-Herald-Signature: sha256=" + BodySignature.hmacSHA256Hex(key: key, body: body)) }
        switch session.post(url: options.url, headers: headers, body: body) {
        case .success(let answer): return .status(answer.status, body: String(decoding: answer.body, as: UTF8.self))
        case .failure(let failure): return .transportError(failure.description)
        }
    }
}

public struct WebhookError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
