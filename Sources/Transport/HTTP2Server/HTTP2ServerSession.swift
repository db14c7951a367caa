import CNghttp2

// The server side of HTTP/2 over nghttp2, shared by the simulators (Simulators) and `herald api`: the session
// callbacks, the box that carries a connection through nghttp2's `user_data`, and submitting an answer.

/// Why a server session could not be made (nghttp2 out of memory).
public struct HTTP2ServerError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "nghttp2: \(message)" }
}

/// What an HTTP/2 server connection hears from its nghttp2 session, and where response bodies come from.
public protocol H2ServerStreamHandler: AnyObject {
    func beginStream(_ streamID: Int32)
    func header(_ streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>)
    func data(_ streamID: Int32, _ chunk: UnsafeBufferPointer<UInt8>)
    func requestComplete(_ streamID: Int32)
    /// A request's HEADERS frame ended (its fields are all in), before any of its DATA; `endStream`: it has no body.
    func headersComplete(_ streamID: Int32, endStream: Bool)
    func streamClosed(_ streamID: Int32)
    /// Copies the pending answer body of `streamID` into nghttp2's DATA frame buffer.
    func readBody(_ streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int
}

extension H2ServerStreamHandler {
    public func headersComplete(_ streamID: Int32, endStream: Bool) {}
}

/// nghttp2's `user_data`: a C callback cannot hold a protocol existential, so it reaches the connection
/// through this box. The connection owns it and outlives its session (which it frees in `close()`).
public final class H2SessionEvents {
    unowned(unsafe) let handler: any H2ServerStreamHandler
    public init(_ handler: any H2ServerStreamHandler) { self.handler = handler }
    public var userData: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    @inline(__always)
    static func handler(_ userData: UnsafeMutableRawPointer) -> any H2ServerStreamHandler {
        Unmanaged<H2SessionEvents>.fromOpaque(userData).takeUnretainedValue().handler
    }
}

/// The nghttp2 server callbacks one simulator core shares among its connections. Owns the callbacks object.
public final class H2ServerCallbacks {
    public let pointer: OpaquePointer

    public init() throws(HTTP2ServerError) {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        guard let callbacks else { throw HTTP2ServerError("nghttp2_session_callbacks_new failed") }
        pointer = callbacks
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, userData in
            guard let frame, let userData else { return 0 }
            if frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) && frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
                H2SessionEvents.handler(userData).beginStream(frame.pointee.hd.stream_id)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, userData in
            guard let frame, let name, let userData else { return 0 }
            H2SessionEvents.handler(userData).header(
                frame.pointee.hd.stream_id, name: UnsafeBufferPointer(start: name, count: nameLength),
                value: UnsafeBufferPointer(start: value, count: valueLength))
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, userData in
            guard let userData, let data else { return 0 }
            H2SessionEvents.handler(userData).data(streamID, UnsafeBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, userData in
            guard let frame, let userData else { return 0 }
            let type = frame.pointee.hd.type
            if type == UInt8(NGHTTP2_HEADERS.rawValue) && frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST {
                H2SessionEvents.handler(userData).headersComplete(
                    frame.pointee.hd.stream_id, endStream: frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0)
            }
            if (type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue))
                && frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 {
                H2SessionEvents.handler(userData).requestComplete(frame.pointee.hd.stream_id)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, _, userData in
            guard let userData else { return 0 }
            H2SessionEvents.handler(userData).streamClosed(streamID)
            return 0
        }
    }

    deinit { nghttp2_session_callbacks_del(pointer) }

    /// A server session whose callbacks reach `events`' handler.
    public func makeSession(_ events: H2SessionEvents) throws(HTTP2ServerError) -> OpaquePointer {
        var session: OpaquePointer?
        let rc = nghttp2_session_server_new(&session, pointer, events.userData)
        guard rc == 0, let session else { throw HTTP2ServerError("nghttp2_session_server_new: \(rc)") }
        return session
    }

    /// Submits `:status` and `headers`; with `hasBody` the body comes from the handler's `readBody`.
    public static func submitResponse(_ session: OpaquePointer, streamID: Int32, status: Int, headers: [(String, String)], hasBody: Bool) {
        var storage: [UInt8] = []
        var spans: [(Int, Int, Int, Int)] = []
        for (name, value) in [(":status", String(status))] + headers {
            let nameStart = storage.count
            storage.append(contentsOf: name.utf8)
            let valueStart = storage.count
            storage.append(contentsOf: value.utf8)
            spans.append((nameStart, name.utf8.count, valueStart, value.utf8.count))
        }
        storage.withUnsafeMutableBufferPointer { base in
            var nvs = spans.map { span in
                nghttp2_nv(name: base.baseAddress! + span.0, value: base.baseAddress! + span.2, namelen: span.1, valuelen: span.3,
                           flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            if hasBody {
                var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: bodyReader)
                nghttp2_submit_response(session, streamID, &nvs, nvs.count, &provider)
            } else {
                nghttp2_submit_response(session, streamID, &nvs, nvs.count, nil)
            }
        }
    }

    /// Copies `body` into nghttp2's DATA buffer, removing what was copied, and flags EOF when it is empty.
    public static func copyBody(_ body: inout [UInt8], into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        let count = min(length, body.count)
        if count > 0 {
            body.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress!, count: count) }
            body.removeFirst(count)
        }
        if body.isEmpty { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }
}

private let bodyReader: nghttp2_data_source_read_callback = { _, streamID, buffer, length, flags, _, userData in
    guard let userData, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    return H2SessionEvents.handler(userData).readBody(streamID, into: buffer, length: length, flags: flags)
}
