import CCurl

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

/// Posts JSON bodies with one reused libcurl easy handle (its connection is kept alive between posts). Owns the
/// handle and frees it in deinit; one thread at a time (not Sendable).
public final class WebhookClient {
    private let handle: UnsafeMutableRawPointer
    private let options: WebhookOptions

    /// libcurl's global set-up, once per process before the first handle.
    private static let globalInit: Void = { _ = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    public init(_ options: WebhookOptions) throws(WebhookError) {
        Self.globalInit
        guard let handle = curl_easy_init() else { throw WebhookError("curl_easy_init failed") }
        self.handle = handle
        self.options = options
        try configure()
    }

    deinit { curl_easy_cleanup(handle) }

    private func check(_ code: CURLcode, _ what: String) throws(WebhookError) {
        guard code == CURLE_OK else { throw WebhookError("\(what): \(String(cString: curl_easy_strerror(code)))") }
    }

    private func configure() throws(WebhookError) {
        try check(ccurl_setopt_string(handle, CURLOPT_URL, options.url), "url")
        try check(ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1), "nosignal")
        try check(ccurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, options.timeoutMilliseconds), "timeout")
        try check(ccurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, options.connectTimeoutMilliseconds), "connect timeout")
        // Only http and https, also across redirects (which are not followed anyway).
        try check(ccurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"), "protocols")
        if let caFile = options.caFile { try check(ccurl_setopt_string(handle, CURLOPT_CAINFO, caFile), "ca file") }
        if let proxy = options.proxy { try check(ccurl_setopt_string(handle, CURLOPT_PROXY, proxy), "proxy") }
        try check(ccurl_setopt_write_function(handle, collectBody), "write function")
    }

    /// POSTs `body` as `application/json` and waits for the answer (at most the timeout).
    public func post(_ body: [UInt8]) -> WebhookAnswer {
        var headers = ["Content-Type: application/json", "Expect:"] + options.headers
        if let key = options.signingKey { headers.append("X-Herald-Signature: sha256=" + BodySignature.hmacSHA256Hex(key: key, body: body)) }
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for header in headers { list = curl_slist_append(list, header) }
        defer { curl_slist_free_all(list) }
        let sink = BodySink()
        let unmanaged = Unmanaged.passRetained(sink)
        defer { unmanaged.release() }
        var code = ccurl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list))
        if code == CURLE_OK { code = ccurl_setopt_pointer(handle, CURLOPT_WRITEDATA, unmanaged.toOpaque()) }
        if code == CURLE_OK { code = ccurl_setopt_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)) }
        if code == CURLE_OK {
            // COPYPOSTFIELDS copies POSTFIELDSIZE bytes (set just above), so the body needs no terminating NUL.
            let bytes = body.isEmpty ? [0] : body
            code = bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { ccurl_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) }
            }
        }
        if code == CURLE_OK { code = curl_easy_perform(handle) }
        // The header list and the sink die with this call: libcurl must not keep pointers to them.
        _ = ccurl_setopt_pointer(handle, CURLOPT_HTTPHEADER, nil)
        _ = ccurl_setopt_pointer(handle, CURLOPT_WRITEDATA, nil)
        guard code == CURLE_OK else { return .transportError(String(cString: curl_easy_strerror(code))) }
        var status = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return .status(status, body: String(decoding: sink.bytes, as: UTF8.self))
    }
}

/// The first bytes of an answer's body, for a log line; the rest is read and dropped.
private final class BodySink {
    static let keep = 512
    var bytes: [UInt8] = []
}

private func collectBody(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?) -> Int {
    let total = size * count
    if let data, let user {
        let sink = Unmanaged<BodySink>.fromOpaque(user).takeUnretainedValue()
        let room = max(0, BodySink.keep - sink.bytes.count)
        if room > 0 {
            data.withMemoryRebound(to: UInt8.self, capacity: total) { sink.bytes.append(contentsOf: UnsafeBufferPointer(start: $0, count: min(room, total))) }
        }
    }
    return total
}

public struct WebhookError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
