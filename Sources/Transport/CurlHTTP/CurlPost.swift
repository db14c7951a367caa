import CCurl
import Glibc

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
        /// HTTP/1.1 only (Web Push to a service without HTTP/2); else libcurl's default.
        public var http1Only = false
        /// Judges each IP address (4 or 16 bytes) before libcurl connects to it: a reason refuses it.
        public var addressCheck: (@Sendable ([UInt8]) -> String?)? = nil

        public init(timeoutMilliseconds: Int = 10_000, connectTimeoutMilliseconds: Int = 5_000, caFile: String? = nil, proxy: String? = nil,
                    http1Only: Bool = false, addressCheck: (@Sendable ([UInt8]) -> String?)? = nil) {
            self.timeoutMilliseconds = timeoutMilliseconds
            self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
            self.caFile = caFile
            self.proxy = proxy
            self.http1Only = http1Only
            self.addressCheck = addressCheck
        }
    }

    public struct Answer: Sendable, Equatable {
        public var status: Int
        /// The body's first `keepBodyBytes` bytes; the rest is read and dropped.
        public var body: [UInt8]
        /// The final answer's headers, names lower-cased (the last of a repeated name).
        public var headers: [String: String]

        public init(status: Int, body: [UInt8], headers: [String: String] = [:]) {
            self.status = status
            self.body = body
            self.headers = headers
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
    /// The socket callback's state: the address check and what it refused during the current post.
    private let gate: SocketGate

    /// libcurl's global state, set up once per process before the first handle (Swift's lazy globals are
    /// thread-safe).
    private static let globalInit: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))

    public init?(_ options: CurlPost.Options, keepBodyBytes: Int) {
        guard Self.globalInit == CURLE_OK, let handle = curl_easy_init() else { return nil }
        self.handle = handle
        self.keepBodyBytes = keepBodyBytes
        gate = SocketGate(handle: handle, check: options.addressCheck)
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
        set(ccurl_setopt_header_function(handle, collectHeader))
        if options.http1Only { set(ccurl_setopt_long(handle, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))) }
        set(ccurl_setopt_opensocket_function(handle, openCheckedSocket))
        set(ccurl_setopt_pointer(handle, CURLOPT_OPENSOCKETDATA, Unmanaged.passUnretained(gate).toOpaque()))
        if code != CURLE_OK { setupFailure = CurlFailure(String(cString: curl_easy_strerror(code))) }
    }

    deinit { curl_easy_cleanup(handle) }

    /// POSTs `body` to `url` with these `Name: value` headers and waits for the answer (at most the timeout).
    public func post(url: String, headers: [String], body: [UInt8]) -> Result<CurlPost.Answer, CurlFailure> {
        if let setupFailure { return .failure(setupFailure) }
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for header in headers { list = curl_slist_append(list, header) }
        // No `Expect: 100-continue` round trip for bodies over 1 KB.
        list = curl_slist_append(list, "Expect:")
        gate.refusal = nil
        gate.refusedResend = false
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
            set(ccurl_setopt_pointer(handle, CURLOPT_HEADERDATA, unmanaged.toOpaque()))
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
            _ = ccurl_setopt_pointer(handle, CURLOPT_HEADERDATA, nil)
            _ = ccurl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, nil)
        }
        guard code == CURLE_OK else {
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let name = String(cString: curl_easy_strerror(code))
            let configuration = code == CURLE_UNSUPPORTED_PROTOCOL || code == CURLE_URL_MALFORMAT
            // Failures before a byte of the request could have left: resolving, connecting, the TLS handshake.
            let neverSent = [CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR,
                             CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT]
                .contains(code)
            if gate.refusedResend {
                // Sent once on a connection that died before its answer: what happened to it is unknown, and the
                // caller decides whether and when to send again (an attempt of its own), not libcurl.
                return .failure(CurlFailure("connection closed after the request was sent, before an answer; libcurl's own resend refused"))
            }
            var failure = CurlFailure(detail.isEmpty ? name : "\(name): \(detail)", isConfiguration: configuration)
            failure.neverSent = neverSent || gate.refusal != nil
            failure.timedOut = code == CURLE_OPERATION_TIMEDOUT
            failure.refusedAddress = gate.refusal
            return .failure(failure)
        }
        var status = 0
        _ = ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return .success(CurlPost.Answer(status: status, body: sink.bytes, headers: sink.headers))
    }
}

/// Collects the first `keep` bytes of a body inside the write callback, and the headers; lives for one post.
private final class BodySink {
    let keep: Int
    var bytes: [UInt8] = []
    var headers: [String: String] = [:]
    init(keep: Int) { self.keep = keep }
}

/// A session's socket callback state: its address check, what the check refused during the current post, and
/// whether it refused libcurl's own resend of a request already sent.
private final class SocketGate {
    let handle: UnsafeMutableRawPointer
    let check: (@Sendable ([UInt8]) -> String?)?
    var refusal: String?
    var refusedResend = false
    init(handle: UnsafeMutableRawPointer, check: (@Sendable ([UInt8]) -> String?)?) {
        self.handle = handle
        self.check = check
    }
}

/// Opens the socket for an address the check accepts; refuses (no socket, libcurl gives up on it) the others.
/// Also refuses any connection opened after this post's request went out: libcurl resends a request whose reused
/// connection died before the answer, on a new connection, behind the caller's back (issue 54: a push sent twice,
/// no attempt counted, a lost 429's Retry-After ignored). The caller then sees the outcome as unknown.
private func openCheckedSocket(_ user: UnsafeMutableRawPointer?, _ purpose: curlsocktype, _ address: UnsafeMutablePointer<curl_sockaddr>?) -> curl_socket_t {
    guard let user, let address else { return -1 }
    let gate = Unmanaged<SocketGate>.fromOpaque(user).takeUnretainedValue()
    var issued = 0
    if ccurl_getinfo_long(gate.handle, CURLINFO_REQUEST_SIZE, &issued) == CURLE_OK, issued > 0 {
        gate.refusedResend = true
        return -1
    }
    let family = address.pointee.family
    let raw = UnsafeRawPointer(ccurl_sockaddr_address(address)!)
    if let check = gate.check {
        var ip: [UInt8]?
        if family == AF_INET { ip = Array(UnsafeRawBufferPointer(start: raw + 4, count: 4)) }
        if family == AF_INET6 { ip = Array(UnsafeRawBufferPointer(start: raw + 8, count: 16)) }
        guard let ip, check(ip) == nil else {
            gate.refusal = ip.flatMap(check) ?? "not an IP address"
            return -1
        }
    }
    return socket(family, address.pointee.socktype, ccurl_sockaddr_protocol(address))
}

/// Keeps the final answer's headers: a status line (an interim 1xx's, then the final one's) starts afresh.
private func collectHeader(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?) -> Int {
    let total = size * count
    guard let data, let user else { return total }
    let sink = Unmanaged<BodySink>.fromOpaque(user).takeUnretainedValue()
    let bytes = data.withMemoryRebound(to: UInt8.self, capacity: total) { Array(UnsafeBufferPointer(start: $0, count: total)) }
    if bytes.starts(with: Array("HTTP/".utf8)) { sink.headers.removeAll(); return total }
    guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), sink.headers.count < 100 else { return total }
    let blank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
    var value = bytes[(colon + 1)...]
    while let first = value.first, blank(first) { value.removeFirst() }
    while let last = value.last, blank(last) { value.removeLast() }
    sink.headers[String(decoding: bytes[..<colon], as: UTF8.self).lowercased()] = String(decoding: value, as: UTF8.self)
    return total
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
    /// Certainly not sent: DNS, connect, the TLS handshake or a refused address failed (safe to resend).
    public var neverSent = false
    /// The timeout passed (the request may have been processed).
    public var timedOut = false
    /// The address check refused the address connected to, with its reason.
    public var refusedAddress: String?
    /// The URL itself is at fault (a scheme libcurl does not speak, a malformed URL): no retry can succeed, so
    /// the caller must treat it as a configuration error, never as an outage.
    public let isConfiguration: Bool
    public init(_ description: String, isConfiguration: Bool = false) {
        self.description = description
        self.isConfiguration = isConfiguration
    }
}
