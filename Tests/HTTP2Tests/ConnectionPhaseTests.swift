import Foundation
import Glibc
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

    private func connection(host: String = "127.0.0.1", port: Int, options: HTTP2ConnectionOptions = .init()) throws -> HTTP2ClientConnection {
        let tls = try TLSContext(TLSConfiguration(caFile: certificates.caCertificate))
        return try loop.submitAndWait {
            HTTP2ClientConnection(loop: self.loop, endpoint: HTTP2Endpoint(host: host, port: port), tls: tls, options: options)
        }
    }

    @Test func closingBeforeConnectFailsQueuedRequestsAsClosedAndRefusesNewOnes() throws {
        let connection = try connection(port: try freePort())
        let outcomes = Outcomes(expected: 2)
        let (queuedWhileIdle, acceptedAfterClose, state) = try loop.submitAndWait { () -> (Int, Bool, HTTP2ClientConnection.State) in
            for index in 0..<2 where !connection.send(postRequest(), completion: { outcomes.record(index, $0) }) {
                outcomes.record(index, .failure(.queueFull))
            }
            let queued = connection.queuedRequests
            connection.close()
            return (queued, connection.send(postRequest()) { _ in }, connection.state)
        }
        #expect(queuedWhileIdle == 2)
        #expect(outcomes.wait(seconds: 5))
        #expect(outcomes.completedOnceEach)
        #expect(outcomes.failures == [.closed, .closed])
        #expect(!acceptedAfterClose)
        #expect(state == .closed)
    }

    @Test func aGracefulCloseWhileResolvingEndsAtOnceAndTheLateLookupChangesNothing() throws {
        let connection = try connection(host: "localhost", port: try freePort())
        let outcomes = Outcomes(expected: 1)
        let events = EventLog()
        let state = try loop.submitAndWait { () -> HTTP2ClientConnection.State in
            connection.onEvent = { events.append(.connection($0)) }
            connection.connect()  // the lookup runs off the loop; its answer arrives after the close
            if !connection.send(postRequest(), completion: { outcomes.record(0, $0) }) { outcomes.record(0, .failure(.queueFull)) }
            connection.closeGracefully()
            return connection.state
        }
        #expect(state == .closed)
        #expect(outcomes.wait(seconds: 5))
        #expect(outcomes.failures == [.closed])
        usleep(300_000)  // time for the lookup to come back
        #expect(try loop.submitAndWait { connection.state } == .closed)
        #expect(outcomes.completedOnceEach)
        #expect(events.all == [.connection(.closed(connectionID: connection.id, error: nil))])
    }

    @Test func aPeerSilentDuringTheTLSHandshakeFailsAtTheConnectTimeout() throws {
        // A listening socket nobody accepts from: the kernel completes TCP, the ClientHello goes unanswered.
        let listener = try Sockets.listen(host: "127.0.0.1", port: 0)
        defer { close(listener) }
        let connection = try connection(port: Sockets.localPort(listener), options: HTTP2ConnectionOptions(connectTimeoutMilliseconds: 1_500))
        let outcomes = Outcomes(expected: 1)
        try loop.submitAndWait {
            connection.connect()
            if !connection.send(postRequest(), completion: { outcomes.record(0, $0) }) { outcomes.record(0, .failure(.queueFull)) }
        }
        let handshaking = eventually(seconds: 5) {
            (try? loop.submitAndWait { () -> Bool in if case .handshaking = connection.phase { true } else { false } }) == true
        }
        #expect(handshaking, "never reached the TLS handshake")
        #expect(try loop.submitAndWait { connection.state } == .connecting)
        #expect(outcomes.wait(seconds: 10))
        guard case let .connectFailed(message)? = outcomes.failures.first else {
            Issue.record("expected connectFailed, got \(outcomes.failures)")
            return
        }
        #expect(message.contains("no HTTP/2 connection within 1500 ms"), "\(message)")
        #expect(try loop.submitAndWait { connection.state } == .closed)
    }
}
