import CNghttp2
import COpenSSL
import Glibc
import Reactor
import TLS

/// The byte stream under one simulator connection: TLS through the shared `SSLHandle` record path (the same
/// handshake, read and write steps and error reading as the worker's connections), or the plain socket.
///
/// Owns the descriptor and the `SSLHandle`, released in `close()` (or `deinit`). Confined to its connection's loop.
final class ServerTransport {
    let fd: Int32
    private(set) var tls: SSLHandle?
    private var isClosed = false

    /// `context` nil: cleartext. A failure leaves `fd` to the caller.
    init(fd: Int32, context: OpaquePointer?) throws {
        self.fd = fd
        if let context { tls = try SSLHandle(accepting: fd, serverContext: context) }
    }

    deinit { close() }

    /// The TLS session (for a client certificate), nil on cleartext.
    var ssl: OpaquePointer? { tls?.pointer }

    enum Handshake { case done, wantRead, wantWrite, failed }

    /// One step of the TLS accept.
    func handshake() -> Handshake {
        guard let tls else { return .done }
        do {
            switch try tls.handshake() {
            case .done: return .done
            case .wantRead: return .wantRead
            case .wantWrite: return .wantWrite
            }
        } catch {
            return .failed
        }
    }

    /// The protocol ALPN chose ("h2", "http/1.1"), or "" when none was.
    var selectedProtocol: String { tls?.alpnSelected ?? "" }

    /// >0 bytes read, 0 would block, <0 closed or failed. `wantsWrite` turns true when TLS must write first.
    func read(_ pointer: UnsafeMutablePointer<UInt8>, _ capacity: Int, wantsWrite: inout Bool) -> Int {
        let progress: IOProgress?
        if let tls {
            progress = try? tls.read(into: pointer, count: capacity)
            if tls.wantsWritable { wantsWrite = true }
        } else {
            progress = try? SocketIO.read(fd, into: pointer, count: capacity)
        }
        switch progress {
        case let .bytes(count)?: return count
        case .wouldBlock?: return 0
        case .endOfFile?, nil: return -1
        }
    }

    /// >0 bytes written, 0 would block, <0 failed.
    func write(_ pointer: UnsafeRawPointer, _ count: Int) -> Int {
        let progress: IOProgress? = if let tls { try? tls.write(from: pointer, count: count) } else { try? SocketIO.write(fd, from: pointer, count: count) }
        switch progress {
        case let .bytes(written)?: return written
        case .wouldBlock?: return 0
        case .endOfFile?, nil: return -1
        }
    }

    /// Our side is done: close_notify and FIN; the client may still send.
    func shutdownWrite() {
        tls?.shutdown()
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Reads and drops what the client still sends. False once it has closed (or the socket failed).
    func discardInput(_ buffer: UnsafeMutableBufferPointer<UInt8>) -> Bool {
        while true {
            switch try? SocketIO.read(fd, into: buffer.baseAddress!, count: buffer.count) {
            case .bytes?: continue
            case .wouldBlock?: return true
            case .endOfFile?, nil: return false
            }
        }
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
        tls = nil  // frees the SSL*; the socket is closed above, as before
    }
}

/// Bytes waiting for the socket: nghttp2's frames (pulled when the buffer is empty) or bytes appended directly.
struct PendingOutput {
    private var bytes: [UInt8] = []
    private var offset = 0

    var isEmpty: Bool { offset == bytes.count }

    mutating func append(_ data: [UInt8]) { bytes.append(contentsOf: data) }

    enum Flush { case done, blocked, failed }

    /// Writes until nothing is left (`done`) or the socket would block (`blocked`).
    mutating func flush(session: OpaquePointer?, transport: ServerTransport) -> Flush {
        while true {
            if offset == bytes.count {
                bytes.removeAll(keepingCapacity: true)
                offset = 0
                if let session {
                    while bytes.count < 65_536 {
                        var data: UnsafePointer<UInt8>?
                        let length = nghttp2_session_mem_send(session, &data)
                        if length < 0 { return .failed }
                        if length == 0 { break }
                        bytes.append(contentsOf: UnsafeBufferPointer(start: data, count: length))
                    }
                }
                if bytes.isEmpty { return .done }
            }
            let written = bytes.withUnsafeBytes { raw -> Int in transport.write(raw.baseAddress! + offset, raw.count - offset) }
            if written < 0 { return .failed }
            if written == 0 { return .blocked }
            offset += written
        }
    }
}

/// What an HTTP/2 server connection hears from its nghttp2 session, and where response bodies come from.
protocol H2ServerStreamHandler: AnyObject {
    func beginStream(_ streamID: Int32)
    func header(_ streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>)
    func data(_ streamID: Int32, _ chunk: UnsafeBufferPointer<UInt8>)
    func requestComplete(_ streamID: Int32)
    func streamClosed(_ streamID: Int32)
    /// Copies the pending answer body of `streamID` into nghttp2's DATA frame buffer.
    func readBody(_ streamID: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int
}

/// nghttp2's `user_data`: a C callback cannot hold a protocol existential, so it reaches the connection
/// through this box. The connection owns it and outlives its session (which it frees in `close()`).
final class H2SessionEvents {
    unowned(unsafe) let handler: any H2ServerStreamHandler
    init(_ handler: any H2ServerStreamHandler) { self.handler = handler }
    var userData: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    @inline(__always)
    static func handler(_ userData: UnsafeMutableRawPointer) -> any H2ServerStreamHandler {
        Unmanaged<H2SessionEvents>.fromOpaque(userData).takeUnretainedValue().handler
    }
}

/// The nghttp2 server callbacks one simulator core shares among its connections. Owns the callbacks object.
final class H2ServerCallbacks {
    let pointer: OpaquePointer

    init() throws {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        guard let callbacks else { throw MockAPNsError.nghttp2("nghttp2_session_callbacks_new failed") }
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
    func makeSession(_ events: H2SessionEvents) throws -> OpaquePointer {
        var session: OpaquePointer?
        let rc = nghttp2_session_server_new(&session, pointer, events.userData)
        guard rc == 0, let session else { throw MockAPNsError.nghttp2("nghttp2_session_server_new: \(rc)") }
        return session
    }

    /// Submits `:status` and `headers`; with `hasBody` the body comes from the handler's `readBody`.
    static func submitResponse(_ session: OpaquePointer, streamID: Int32, status: Int, headers: [(String, String)], hasBody: Bool) {
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
    static func copyBody(_ body: inout [UInt8], into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
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
