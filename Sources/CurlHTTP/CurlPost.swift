import CCurl

/// Blocking HTTPS POSTs with libcurl, for the plain calls outside the HTTP/2 pools: the OAuth token exchange
/// (`CurlPost.post`, one call an hour per service account) and webhooks (a `CurlSession` kept for its
/// connection). Blocking on purpose: callers run them on a thread of their own, never on an event loop.
public enum CurlPost {
    public struct Options: Sendable {
        public var timeoutMilliseconds = 10_000
        public var connectTimeoutMilliseconds = 5_000
        /// CA bundle; nil uses the system's.
        public var caFile: String? = nil
        /// `http://host:port`; nil goes direct unless libcurl finds `https_proxy` in the environment.
        public var proxy: String? = nil

        public init(timeoutMilliseconds: Int = 10_000, connectTimeoutMilliseconds: Int = 5_000, caFile: String? = nil, proxy: String? = nil) {
            self.timeoutMilliseconds = timeoutMilliseconds
            self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
            self.caFile = caFile
            self.proxy = proxy
        }
    }

    public struct Answer: Sendable, Equatable {
        public var status: Int
        /// The body's first `keepBodyBytes` bytes; the rest is read and dropped.
        public var body: [UInt8]

        public init(status: Int, body: [UInt8]) {
            self.status = status
            self.body = body
        }
    }

    /// Bodies larger than this are cut (a token answer is under 2 KB; a hostile peer's is not read whole).
    public static let maxBodyBytes = 64 * 1024

    /// One POST on a handle of its own, with `Content-Type: contentType` and `Accept: application/json`.
    public static func post(url: String, contentType: String, body: [UInt8], options: Options) -> Result<Answer, CurlFailure> {
        guard let session = CurlSession(options, keepBodyBytes: maxBodyBytes) else { return .failure(CurlFailure("curl_easy_init failed")) }
        return session.post(url: url, headers: ["Content-Type: " + contentType, "Accept: application/json"], body: body)
    }
}

/// One libcurl easy handle, configured once, that POSTs again and again (libcurl keeps its connection alive
/// between posts). Owns the handle and frees it in deinit; one thread at a time (not Sendable).
public final class CurlSession {
    private let handle: UnsafeMutableRawPointer
    private let keepBodyBytes: Int
    /// Why setting the handle up failed, reported by the first post.
    private var setupFailure: CurlFailure?

    /// libcurl's global state, set up once per process before the first handle (Swift's lazy globals are
    /// thread-safe).
    private static let globalInit: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    public init?(_ options: CurlPost.Options, keepBodyBytes: Int) {
        guard Self.globalInit == CURLE_OK, let handle = curl_easy_init() else { return nil }
        self.handle = handle
        self.keepBodyBytes = keepBodyBytes
        var code = CURLE_OK
        func set(_ result: CURLcode) { if code == CURLE_OK { code = result } }
        set(ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1))
        set(ccurl_setopt_long(handle, CURLOPT_TIMEOUT_MS, options.timeoutMilliseconds))
        set(ccurl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, options.connectTimeoutMilliseconds))
        // Only http and https, and no redirects: a token or webhook answer is taken from the URL given.
        set(ccurl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https"))
        set(ccurl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0))
        set(ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1))
        set(ccurl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2))
        if let caFile = options.caFile { set(ccurl_setopt_string(handle, CURLOPT_CAINFO, caFile)) }
        if let proxy = options.proxy { set(ccurl_setopt_string(handle, CURLOPT_PROXY, proxy)) }
        set(ccurl_setopt_write_function(handle, collectBody))
        if code != CURLE_OK { setupFailure = CurlFailure(String(cString: curl_easy_strerror(code))) }
    }

    deinit { curl_easy_cleanup(handle) }

    /// POSTs `body` to `url` with these `Name: value` headers and waits for the answer (at most the timeout).
    public func post(url: String, headers: [String], body: [UInt8]) -> Result<CurlPost.Answer, CurlFailure> {
        if let setupFailure { return .failure(setupFailure) }
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for header in headers { list = curl_slist_append(list, header) }
        defer { curl_slist_free_all(list) }
        let sink = BodySink(keep: keepBodyBytes)
        let unmanaged = Unmanaged.passRetained(sink)
        defer { unmanaged.release() }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        var code = CURLE_OK
        func set(_ result: CURLcode) { if code == CURLE_OK { code = result } }
        errorBuffer.withUnsafeMutableBufferPointer { errors in
            set(ccurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errors.baseAddress))
            set(ccurl_setopt_string(handle, CURLOPT_URL, url))
            set(ccurl_setopt_long(handle, CURLOPT_POST, 1))
            set(ccurl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list)))
            set(ccurl_setopt_pointer(handle, CURLOPT_WRITEDATA, unmanaged.toOpaque()))
            set(ccurl_setopt_offset(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
            // COPYPOSTFIELDS copies POSTFIELDSIZE bytes (set just above): the body is sent byte for byte and needs
            // no terminating NUL.
            let bytes = body.isEmpty ? [0] : body
            set(bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { ccurl_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, $0.baseAddress) }
            })
            if code == CURLE_OK { code = curl_easy_perform(handle) }
            // The header list, the sink and the error buffer die with this call: libcurl must not keep them.
            _ = ccurl_setopt_pointer(handle, CURLOPT_HTTPHEADER, nil)
            _ = ccurl_setopt_pointer(handle, CURLOPT_WRITEDATA, nil)
            _ = ccurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, nil)
        }
        guard code == CURLE_OK else {
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let name = String(cString: curl_easy_strerror(code))
            let configuration = code == CURLE_UNSUPPORTED_PROTOCOL || code == CURLE_URL_MALFORMAT
            return .failure(CurlFailure(detail.isEmpty ? name : "\(name): \(detail)", isConfiguration: configuration))
        }
        var status = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return .success(CurlPost.Answer(status: status, body: sink.bytes))
    }
}

/// Collects the first `keep` bytes of a body inside the write callback; lives for one post.
private final class BodySink {
    let keep: Int
    var bytes: [UInt8] = []
    init(keep: Int) { self.keep = keep }
}

private func collectBody(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?) -> Int {
    let total = size * count
    if let data, let user {
        let sink = Unmanaged<BodySink>.fromOpaque(user).takeUnretainedValue()
        let room = max(0, sink.keep - sink.bytes.count)
        if room > 0 {
            data.withMemoryRebound(to: UInt8.self, capacity: total) { sink.bytes.append(contentsOf: UnsafeBufferPointer(start: $0, count: min(room, total))) }
        }
    }
    return total
}

/// Why a POST got no HTTP answer (DNS, connect, TLS, timeout), in libcurl's words.
public struct CurlFailure: Error, Sendable, CustomStringConvertible, Equatable {
    public let description: String
    /// The URL itself is at fault (a scheme libcurl does not speak, a malformed URL): no retry can succeed, so
    /// the caller must treat it as a configuration error, never as an outage.
    public let isConfiguration: Bool
    public init(_ description: String, isConfiguration: Bool = false) {
        self.description = description
        self.isConfiguration = isConfiguration
    }
}
