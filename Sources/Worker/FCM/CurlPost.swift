import CCurl

/// One blocking HTTPS POST with libcurl: the OAuth token exchange, done once an hour per service account.
/// Blocking on purpose: callers run it on a helper thread, never on an event loop. The easy handle has one
/// owner (`Handle`), freed in its deinit.
enum CurlPost {
    struct Options: Sendable {
        var timeoutMilliseconds = 10_000
        var connectTimeoutMilliseconds = 5_000
        /// CA bundle; nil uses the system's.
        var caFile: String? = nil
        /// `http://host:port`; nil goes direct unless libcurl finds `https_proxy` in the environment.
        var proxy: String? = nil
    }

    struct Answer: Sendable {
        var status: Int
        var body: [UInt8]
    }

    /// Bodies larger than this are cut (a token answer is under 2 KB; a hostile peer's is not read whole).
    static let maxBodyBytes = 64 * 1024

    /// libcurl's global state, set up once per process (thread-safe through Swift's lazy global initialisation).
    private static let globalInit: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    static func post(url: String, contentType: String, body: [UInt8], options: Options) -> Result<Answer, CurlFailure> {
        guard globalInit == CURLE_OK else { return .failure(CurlFailure("curl_global_init failed")) }
        guard let handle = Handle() else { return .failure(CurlFailure("curl_easy_init failed")) }
        return handle.post(url: url, contentType: contentType, body: body, options: options)
    }

    private final class Handle {
        let curl: UnsafeMutableRawPointer
        var headers: UnsafeMutablePointer<curl_slist>?

        init?() {
            guard let curl = curl_easy_init() else { return nil }
            self.curl = curl
        }

        deinit {
            if let headers { curl_slist_free_all(headers) }
            curl_easy_cleanup(curl)
        }

        func post(url: String, contentType: String, body: [UInt8], options: Options) -> Result<Answer, CurlFailure> {
            let sink = Sink()
            let context = Unmanaged.passRetained(sink)
            defer { context.release() }
            headers = curl_slist_append(headers, "Content-Type: " + contentType)
            headers = curl_slist_append(headers, "Accept: application/json")
            var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
            var code = CURLE_OK
            func set(_ result: CURLcode) { if code == CURLE_OK { code = result } }
            let text = body.withUnsafeBufferPointer { String(decoding: $0, as: UTF8.self) }
            errorBuffer.withUnsafeMutableBufferPointer { errors in
                set(ccurl_setopt_pointer(curl, CURLOPT_ERRORBUFFER, errors.baseAddress))
                set(ccurl_setopt_string(curl, CURLOPT_URL, url))
                set(ccurl_setopt_long(curl, CURLOPT_NOSIGNAL, 1))
                set(ccurl_setopt_long(curl, CURLOPT_POST, 1))
                set(ccurl_setopt_offset(curl, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)))
                set(ccurl_setopt_string(curl, CURLOPT_COPYPOSTFIELDS, text))
                set(ccurl_setopt_pointer(curl, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(headers)))
                set(ccurl_setopt_long(curl, CURLOPT_TIMEOUT_MS, options.timeoutMilliseconds))
                set(ccurl_setopt_long(curl, CURLOPT_CONNECTTIMEOUT_MS, options.connectTimeoutMilliseconds))
                set(ccurl_setopt_long(curl, CURLOPT_FOLLOWLOCATION, 0))
                set(ccurl_setopt_long(curl, CURLOPT_SSL_VERIFYPEER, 1))
                set(ccurl_setopt_long(curl, CURLOPT_SSL_VERIFYHOST, 2))
                if let caFile = options.caFile { set(ccurl_setopt_string(curl, CURLOPT_CAINFO, caFile)) }
                if let proxy = options.proxy { set(ccurl_setopt_string(curl, CURLOPT_PROXY, proxy)) }
                set(ccurl_setopt_write_function(curl) { data, size, count, user in
                    guard let data, let user else { return 0 }
                    let sink = Unmanaged<Sink>.fromOpaque(user).takeUnretainedValue()
                    let n = size * count
                    let room = max(0, CurlPost.maxBodyBytes - sink.bytes.count)
                    data.withMemoryRebound(to: UInt8.self, capacity: n) { p in
                        sink.bytes.append(contentsOf: UnsafeBufferPointer(start: p, count: min(n, room)))
                    }
                    return n
                })
                set(ccurl_setopt_pointer(curl, CURLOPT_WRITEDATA, context.toOpaque()))
                if code == CURLE_OK { code = curl_easy_perform(curl) }
            }
            guard code == CURLE_OK else {
                let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                let name = String(cString: curl_easy_strerror(code))
                return .failure(CurlFailure(detail.isEmpty ? name : "\(name): \(detail)"))
            }
            var status = 0
            _ = ccurl_getinfo_long(curl, CURLINFO_RESPONSE_CODE, &status)
            return .success(Answer(status: status, body: sink.bytes))
        }
    }

    /// Collects the body inside the write callback; lives for one `perform`.
    private final class Sink {
        var bytes: [UInt8] = []
    }
}

/// Why a POST got no HTTP answer (DNS, connect, TLS, timeout), in libcurl's words.
struct CurlFailure: Error, Sendable, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
