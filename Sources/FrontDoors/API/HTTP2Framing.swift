import CNghttp2
import HTTP1
import HTTP2Server
import Reactor

/// The HTTP/2 framing of one API connection (h2 chosen by ALPN, or h2c with prior knowledge) on nghttp2's server
/// session: every stream becomes the same `HTTP1Parser.Request` the HTTP/1.1 parser gives and goes to the same
/// handler, so routes, checks and answers are one path with two framings. The head and body bounds are the
/// parser's, per stream (a refused stream is answered 431/413 in the same JSON shape); nghttp2 refuses streams
/// past `maxConcurrentStreams`.
///
/// Owned by its connection, which feeds it bytes and writes what it produces; owns the `nghttp2_session*` (freed
/// in deinit). Loop-confined; nghttp2's callbacks reach it through `H2SessionEvents`.
final class HTTP2Framing: H2ServerStreamHandler {
    /// One request as its frames arrive, then its answer.
    private final class Stream {
        var method = ""
        var path = ""
        var query = ""
        var headers: [(name: String, value: String)] = []
        var body: [UInt8] = []
        /// Header bytes as RFC 9113 counts them (name + value + 32 per field).
        var headBytes = 0
        /// Refused by a bound: answered with it, the handler never sees it.
        var refusal: HTTP1Parser.Failure?
        var complete = false
        var answered = false
        /// The answer's body still to go into DATA frames.
        var answer: [UInt8] = []
        let startedAt = monotonicNanos()
    }

    private var session: OpaquePointer?
    private var events: H2SessionEvents!
    private var streams: [Int32: Stream] = [:]
    private let limits: HTTP1Server.Limits
    private let handler: HTTP1Server.Handler
    private let headCheck: HTTP1Server.HeadCheck?
    private let errorBody: (Int, String) -> HTTP1Server.Response
    /// Answers are ready to be written (called only outside nghttp2's callbacks).
    private let answered: () -> Void
    /// Inside `nghttp2_session_mem_recv`, where nghttp2 must not be asked for output.
    private var receiving = false

    init?(callbacks: H2ServerCallbacks, limits: HTTP1Server.Limits, handler: @escaping HTTP1Server.Handler, headCheck: HTTP1Server.HeadCheck? = nil,
          errorBody: @escaping (Int, String) -> HTTP1Server.Response, answered: @escaping () -> Void) {
        self.limits = limits
        self.handler = handler
        self.headCheck = headCheck
        self.errorBody = errorBody
        self.answered = answered
        events = H2SessionEvents(self)
        guard let session = try? callbacks.makeSession(events) else { return nil }
        self.session = session
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: UInt32(limits.maxConcurrentStreams)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue), value: UInt32(limits.parser.maxHeadBytes)),
        ]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
    }

    /// Feeds bytes read from the client; false when the session failed (a protocol error: close the connection).
    func receive(_ bytes: UnsafePointer<UInt8>, count: Int) -> Bool {
        guard let session else { return false }
        receiving = true
        defer { receiving = false }
        return nghttp2_session_mem_recv(session, bytes, count) >= 0
    }

    /// Appends what nghttp2 has to send; false when the session failed.
    func output(into bytes: inout [UInt8]) -> Bool {
        guard let session else { return false }
        while bytes.count < 256 * 1024 {
            var data: UnsafePointer<UInt8>?
            let length = nghttp2_session_mem_send(session, &data)
            if length < 0 { return false }
            if length == 0 { break }
            bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
        }
        return true
    }

    /// Both sides are done (GOAWAY either way): the connection can close once its output is out.
    var isFinished: Bool {
        guard let session else { return true }
        return nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0
    }

    /// When the oldest request still arriving began, for the request timeout.
    var oldestPartialRequest: UInt64? {
        var oldest: UInt64?
        for stream in streams.values where !stream.complete && stream.startedAt < (oldest ?? .max) { oldest = stream.startedAt }
        return oldest
    }

    /// A request is with the handler: the connection is not idle.
    var hasRequestInHand: Bool { streams.values.contains { $0.complete && !$0.answered } }

    // MARK: nghttp2 events

    func beginStream(_ streamID: Int32) { streams[streamID] = Stream() }

    func header(_ streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let stream = streams[streamID], stream.refusal == nil, !stream.complete else { return }
        stream.headBytes += name.count + value.count + 32
        if stream.headBytes > limits.parser.maxHeadBytes {
            stream.refusal = HTTP1Parser.Failure(status: 431, message: "request head larger than \(limits.parser.maxHeadBytes) bytes")
            return
        }
        let fieldName = String(decoding: name, as: UTF8.self)
        let fieldValue = String(decoding: value, as: UTF8.self)
        switch fieldName {
        case ":method": stream.method = fieldValue
        case ":path":
            if let mark = fieldValue.firstIndex(of: "?") {
                stream.path = String(fieldValue[..<mark])
                stream.query = String(fieldValue[fieldValue.index(after: mark)...])
            } else {
                stream.path = fieldValue
            }
        case ":authority": stream.headers.append((name: "host", value: fieldValue))
        case ":scheme": break
        default:
            guard stream.headers.count < limits.parser.maxHeaderFields else {
                stream.refusal = HTTP1Parser.Failure(status: 431, message: "more than \(limits.parser.maxHeaderFields) header fields")
                return
            }
            stream.headers.append((name: fieldName, value: fieldValue))
        }
    }

    /// The head is in: a request the server refuses from its head alone (no key, say) is answered now, and its DATA
    /// dropped as it comes (nghttp2 resets the stream once answered), never held.
    func headersComplete(_ streamID: Int32, endStream: Bool) {
        guard let headCheck, let stream = streams[streamID], stream.refusal == nil, !stream.complete else { return }
        var headers = stream.headers
        // DATA will follow and no content-length says how much: HTTP/1.1 would say that with chunked framing, and so
        // the check sees it (a route that takes no body refuses it now, rather than buffering up to max_body_bytes).
        if !endStream && !headers.contains(where: { $0.name == "content-length" }) { headers.append((name: "transfer-encoding", value: "chunked")) }
        let head = HTTP1Parser.Request(method: stream.method, path: stream.path, query: stream.query, minorVersion: 1, headers: headers, body: [])
        guard let refusal = headCheck(head) else { return }
        stream.refusal = HTTP1Parser.Failure(status: refusal.status, message: "refused from its head")
        respond(streamID, stream, refusal, omitBody: false)
    }

    func data(_ streamID: Int32, _ chunk: UnsafeBufferPointer<UInt8>) {
        guard let stream = streams[streamID], stream.refusal == nil else { return }
        guard stream.body.count + chunk.count <= limits.parser.maxBodyBytes else {
            // Answered now; the rest of the body is read and dropped (nghttp2 resets the stream once answered).
            stream.body = []
            stream.refusal = HTTP1Parser.Failure(status: 413, message: "request body larger than \(limits.parser.maxBodyBytes) bytes")
            respond(streamID, stream, errorBody(413, stream.refusal!.message), omitBody: false)
            return
        }
        stream.body.append(contentsOf: chunk)
    }

    func requestComplete(_ streamID: Int32) {
        guard let stream = streams[streamID], !stream.complete else { return }
        stream.complete = true
        if let refusal = stream.refusal {
            // Answered already (refused from its head, or its body over the bound): once is enough.
            guard !stream.answered else { return }
            return respond(streamID, stream, errorBody(refusal.status, refusal.message), omitBody: false)
        }
        let request = HTTP1Parser.Request(method: stream.method, path: stream.path, query: stream.query, minorVersion: 1,
                                          headers: stream.headers, body: stream.body)
        stream.body = []
        let head = stream.method == "HEAD"
        handler(request) { [weak self] response in self?.respond(streamID, stream, response, omitBody: head) }
    }

    func streamClosed(_ streamID: Int32) { streams[streamID] = nil }

    func readBody(_ streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let stream = streams[streamID] else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        return H2ServerCallbacks.copyBody(&stream.answer, into: buffer, length: length, flags: flags)
    }

    /// HEADERS (and DATA) for `stream`, unless it was reset meanwhile. Field names lower-case, as HTTP/2 requires.
    private func respond(_ streamID: Int32, _ stream: Stream, _ response: HTTP1Server.Response, omitBody: Bool) {
        guard let session, streams[streamID] === stream, !stream.answered else { return }
        stream.answered = true
        stream.answer = omitBody ? [] : response.body
        var fields = [("content-type", response.contentType), ("content-length", String(response.body.count))]
        for (name, value) in response.headers { fields.append((name.lowercased(), value)) }
        H2ServerCallbacks.submitResponse(session, streamID: streamID, status: response.status, headers: fields, hasBody: !stream.answer.isEmpty)
        if !receiving { answered() }
    }
}
