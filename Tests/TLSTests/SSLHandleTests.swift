import COpenSSL
import Foundation
import Glibc
import HeraldTestSupport
import Reactor
import Testing
import TLS

/// `SSLHandle`'s steps on both sides of one socket pair: the client mode the HTTP/2 and Redis connections use
/// and the server mode (an accepted socket under a server `SSL_CTX`) the simulators use.
@Suite struct SSLHandleTests {
    /// Files, socket pair and server context of one test; everything is freed in `close()`.
    final class Pair {
        let certificates: TLSTestCertificates
        let serverContext: OpaquePointer
        let fds: [Int32]

        init() throws {
            let directory = NSTemporaryDirectory() + "herald-ssl-\(UInt32.random(in: 0...UInt32.max))"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            certificates = try TLSTestCertificates(directory: directory)
            serverContext = SSL_CTX_new(TLS_server_method())!
            #expect(SSL_CTX_use_certificate_chain_file(serverContext, certificates.serverCertificate) == 1)
            #expect(SSL_CTX_use_PrivateKey_file(serverContext, certificates.serverKey, SSL_FILETYPE_PEM) == 1)
            var pair: [Int32] = [-1, -1]
            #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &pair) == 0)
            fds = pair
        }

        func client(caFile: String) throws -> SSLHandle {
            let context = try TLSContext(TLSConfiguration(caFile: caFile, useSystemTrustStore: false), alpn: [])
            return try SSLHandle(context: context, fd: fds[0], serverName: "localhost")
        }

        func server() throws -> SSLHandle { try SSLHandle(accepting: fds[1], serverContext: serverContext) }

        func close() {
            for fd in fds { Glibc.close(fd) }
            SSL_CTX_free(serverContext)
            try? FileManager.default.removeItem(atPath: certificates.directory)
        }
    }

    /// Steps both handshakes in turn until both finish (or one throws), with a deadline.
    static func handshake(_ client: SSLHandle, _ server: SSLHandle) throws(TLSError) -> Bool {
        let deadline = monotonicNanos() + 10_000_000_000
        var done = (client: false, server: false)
        while !(done.client && done.server) && monotonicNanos() < deadline {
            if !done.client { done.client = try client.handshake() == .done }
            if !done.server { done.server = try server.handshake() == .done }
        }
        return done.client && done.server
    }

    /// Reads on `handle` until `count` bytes came or the deadline passed.
    static func read(_ handle: SSLHandle, count: Int) throws -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        let deadline = monotonicNanos() + 10_000_000_000
        while received.count < count && monotonicNanos() < deadline {
            let progress = try buffer.withUnsafeMutableBytes { try handle.read(into: $0.baseAddress!, count: $0.count) }
            if case .bytes(let n) = progress { received += buffer[..<n] }
            if progress == .endOfFile { break }
        }
        return received
    }

    @Test func aServerHandleOnAnAcceptedSocketCarriesBytesBothWaysAndItsCloseNotifyReadsAsEndOfFile() throws {
        let pair = try Pair()
        defer { pair.close() }
        let client = try pair.client(caFile: pair.certificates.caFile)
        let server = try pair.server()
        #expect(try Self.handshake(client, server))
        #expect(client.established && server.established)

        let ping = Array("PING".utf8)
        #expect(try ping.withUnsafeBytes { try client.write(from: $0.baseAddress!, count: $0.count) } == .bytes(4))
        #expect(try Self.read(server, count: 4) == ping)

        // More than one record (16 KiB each) and more than the socket buffer: the reader drains record after record.
        let big = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var sent = 0
        var received: [UInt8] = []
        let deadline = monotonicNanos() + 10_000_000_000
        while received.count < big.count && monotonicNanos() < deadline {
            if sent < big.count, case .bytes(let n) = try big.withUnsafeBytes({ try server.write(from: $0.baseAddress! + sent, count: $0.count - sent) }) {
                sent += n
            }
            received += try Self.read(client, count: 1)
        }
        #expect(received == big)

        server.shutdown()
        #expect(!server.established)
        var buffer = [UInt8](repeating: 0, count: 64)
        #expect(try buffer.withUnsafeMutableBytes { try client.read(into: $0.baseAddress!, count: $0.count) } == .endOfFile)
    }

    @Test func aClientThatTrustsAnotherCASaysTheCertificateFailedVerification() throws {
        let pair = try Pair()
        defer { pair.close() }
        let client = try pair.client(caFile: pair.certificates.otherCAFile)
        let server = try pair.server()
        let error = #expect(throws: TLSError.self) { try Self.handshake(client, server) }
        #expect(error?.message.hasPrefix("certificate verification failed") == true)
        #expect(!client.established)
    }
}
