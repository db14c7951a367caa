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
