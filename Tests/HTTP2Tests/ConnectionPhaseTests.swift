import Foundation
import Glibc
import HeraldTestSupport
@testable import HTTP2
import Reactor
import Testing

/// The connection's life stages that the protocol tests never stop in: closing before or during set-up,
/// and a peer that accepts TCP but never answers TLS.
@Suite final class ConnectionPhaseTests {
    let loop: EventLoop
    let certificates: TestCertificates

    init() throws {
        loop = try EventLoop.startThread(name: "http2-phase-test")
        certificates = try TestCertificates()
    }

    deinit {
        loop.stop()
        loop.waitUntilStopped()
    }

    private func connection(host: String = "127.0.0.1", port: Int, options: HTTP2ConnectionOptions = .init()) throws -> LoopBound<HTTP2ClientConnection> {
        let tls = try TLSContext(TLSConfiguration(caFile: certificates.caCertificate))
        return try loop.submit { [loop] in
            LoopBound(HTTP2ClientConnection(loop: loop, endpoint: HTTP2Endpoint(host: host, port: port), tls: tls, options: options), loop: loop)
        }
    }

    @Test func closingBeforeConnectFailsQueuedRequestsAsClosedAndRefusesNewOnes() throws {
        let connection = try connection(port: freeLoopbackPort())
        let outcomes = Outcomes(expected: 2)
        let (queuedWhileIdle, acceptedAfterClose, state) = try loop.submit { () -> (Int, Bool, HTTP2ClientConnection.State) in
            for index in 0..<2 where !connection.value.send(postRequest(), completion: { outcomes.record(index, $0) }) {
                outcomes.record(index, .failure(.queueFull))
            }
            let queued = connection.value.queuedRequests
            connection.value.close()
            return (queued, connection.value.send(postRequest()) { _ in }, connection.value.state)
        }
        #expect(queuedWhileIdle == 2)
        #expect(outcomes.wait(seconds: 5))
        #expect(outcomes.completedOnceEach)
        #expect(outcomes.failures == [.closed, .closed])
        #expect(!acceptedAfterClose)
        #expect(state == .closed)
    }

    @Test func aGracefulCloseWhileResolvingEndsAtOnceAndTheLateLookupChangesNothing() throws {
        let connection = try connection(host: "localhost", port: freeLoopbackPort())
        let outcomes = Outcomes(expected: 1)
        let events = EventLog()
        let state = try loop.submit { () -> HTTP2ClientConnection.State in
            connection.value.onEvent = { events.append(.connection($0)) }
            connection.value.connect()  // the lookup runs off the loop; its answer arrives after the close
            if !connection.value.send(postRequest(), completion: { outcomes.record(0, $0) }) { outcomes.record(0, .failure(.queueFull)) }
            connection.value.closeGracefully()
            return connection.value.state
        }
        #expect(state == .closed)
        #expect(outcomes.wait(seconds: 5))
        #expect(outcomes.failures == [.closed])
        usleep(300_000)  // time for the lookup to come back
        #expect(try loop.submit { connection.value.state } == .closed)
        #expect(outcomes.completedOnceEach)
        let connectionID = try loop.submit { connection.value.id }
        #expect(events.all == [.connection(.closed(connectionID: connectionID, error: nil))])
    }

    @Test func aPeerSilentDuringTheTLSHandshakeFailsAtTheConnectTimeout() throws {
        // A listening socket nobody accepts from: the kernel completes TCP, the ClientHello goes unanswered.
        let listener = try Sockets.listen(host: "127.0.0.1", port: 0)
        defer { close(listener) }
        let connection = try connection(port: Sockets.localPort(listener), options: HTTP2ConnectionOptions(connectTimeoutMilliseconds: 1_500))
        let outcomes = Outcomes(expected: 1)
        try loop.submit {
            connection.value.connect()
            if !connection.value.send(postRequest(), completion: { outcomes.record(0, $0) }) { outcomes.record(0, .failure(.queueFull)) }
        }
        let handshaking = waitUntil(seconds: 5) {
            (try? loop.submit { () -> Bool in if case .handshaking = connection.value.phase { true } else { false } }) == true
        }
        #expect(handshaking, "never reached the TLS handshake")
        #expect(try loop.submit { connection.value.state } == .connecting)
        #expect(outcomes.wait(seconds: 10))
        guard case let .connectFailed(message)? = outcomes.failures.first else {
            Issue.record("expected connectFailed, got \(outcomes.failures)")
            return
        }
        #expect(message.contains("no HTTP/2 connection within 1500 ms"), "\(message)")
        #expect(try loop.submit { connection.value.state } == .closed)
    }
}
