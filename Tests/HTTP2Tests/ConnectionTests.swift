import Foundation
import Glibc
import HeraldTestSupport
@testable import HTTP2
import Reactor
import Testing

/// The client against servers nobody here wrote (nghttpd) and scripted python3-h2 peers.
@Suite final class ConnectionTests {
    let loop: EventLoop
    let certificates: TestCertificates

    init() throws {
        loop = try EventLoop.startThread(name: "http2-test")
        certificates = try TestCertificates()
    }

    deinit {
    }

    private func tls(trustingTestCA: Bool = true, serverName: String? = nil) throws -> TLSContext {
        try TLSContext(TLSConfiguration(caFile: trustingTestCA ? certificates.caCertificate : nil, serverName: serverName))
    }

    /// Opens a connection on the loop and fires `count` requests at once; waits for every completion.
    private func fire(
        _ count: Int, port: Int, tls: TLSContext, options: HTTP2ConnectionOptions = .init(),
        request: HTTP2Request = postRequest(), waitSeconds: Double = 60, events: EventLog? = nil, sendWhenReady: Bool = false
    ) throws -> (Outcomes, LoopBound<HTTP2ClientConnection>) {
        let outcomes = Outcomes(expected: count)
        let connection = try loop.submit { [loop] () -> LoopBound<HTTP2ClientConnection> in
            let connection = HTTP2ClientConnection(loop: loop, endpoint: HTTP2Endpoint(host: "127.0.0.1", port: port), tls: tls, options: options)
            connection.onEvent = { events?.append(.connection($0)) }
            connection.connect()
            if !sendWhenReady { Self.send(count, request, on: connection, into: outcomes) }
            return LoopBound(connection, loop: loop)
        }
        if sendWhenReady {
            #expect(waitUntil(seconds: 10) { (try? loop.submit { connection.value.state }) == .ready })
            try loop.submit { Self.send(count, request, on: connection.value, into: outcomes) }
        }
        #expect(outcomes.wait(seconds: waitSeconds), "not every request completed in time")
        return (outcomes, connection)
    }

    private static func send(_ count: Int, _ request: HTTP2Request, on connection: HTTP2ClientConnection, into outcomes: Outcomes) {
        for index in 0..<count {
            let accepted = connection.send(request) { outcomes.record(index, $0) }
            if !accepted { outcomes.record(index, .failure(.queueFull)) }
        }
    }

    @Test func thousandsOfConcurrentPostsOverOneConnection() throws {
        let docroot = try makeDocroot()
        defer { try? FileManager.default.removeItem(atPath: docroot) }
        let server = try ServerProcess.nghttpd(port: freeLoopbackPort(), docroot: docroot, certificates: certificates)
        defer { server.stop() }
        let (outcomes, connection) = try fire(5_000, port: server.port, tls: try tls())
        #expect(outcomes.completedOnceEach)
        #expect(outcomes.successes.count == 5_000)
        #expect(outcomes.successes.allSatisfy { $0.status == 200 && $0.body == Array("ok\n".utf8) })
        let (maxOpen, limit) = try loop.submit { (connection.value.maxObservedOpenStreams, connection.value.maxConcurrentStreams) }
        #expect(limit == 100)  // nghttpd's default
        #expect(maxOpen <= 100)
        #expect(maxOpen > 1)
        try loop.submit { connection.value.close() }
    }

    @Test func honoursASmallMaxConcurrentStreams() throws {
        let docroot = try makeDocroot()
        defer { try? FileManager.default.removeItem(atPath: docroot) }
        let server = try ServerProcess.nghttpd(port: freeLoopbackPort(), docroot: docroot, certificates: certificates, extra: ["--max-concurrent-streams=3"])
        defer { server.stop() }
        let (outcomes, connection) = try fire(300, port: server.port, tls: try tls())
        #expect(outcomes.successes.count == 300)
        let maxOpen = try loop.submit { connection.value.maxObservedOpenStreams }
        #expect(maxOpen <= 3)
        #expect(maxOpen >= 1)
    }

    @Test func followsTheServersLimitAsItChanges() throws {
        let report = NSTemporaryDirectory() + "herald-h2-limits-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: report) }
        let peer = try ServerProcess.peer(mode: "limits", certificates: certificates, extra: ["--raise", "5", "--report", report])
        defer { peer.stop() }
        let (outcomes, connection) = try fire(200, port: peer.port, tls: try tls())
        #expect(outcomes.successes.count == 200)
        let (maxOpen, limit) = try loop.submit { (connection.value.maxObservedOpenStreams, connection.value.maxConcurrentStreams) }
        #expect(limit == 5)
        #expect(maxOpen <= 5)
        let serverSaw = Int((try? String(contentsOfFile: report, encoding: .utf8)) ?? "") ?? -1
        #expect(serverSaw >= 1 && serverSaw <= 5, "server saw \(serverSaw) streams open at once")
    }

    @Test func dropsBackWhenTheServerLowersItsLimit() throws {
        let peer = try ServerProcess.peer(mode: "limits", certificates: certificates, extra: ["--raise", "8", "--lower-after", "50"])
        defer { peer.stop() }
        let (outcomes, connection) = try fire(200, port: peer.port, tls: try tls())
        #expect(outcomes.completedOnceEach)
        #expect(outcomes.successes.count == 200, "\(outcomes.failures.prefix(3))")
        let (maxOpen, limit) = try loop.submit { (connection.value.maxObservedOpenStreams, connection.value.maxConcurrentStreams) }
        #expect(limit == 1)
        #expect(maxOpen <= 8)
    }

    @Test func refusesAServerItCannotVerify() throws {
        let docroot = try makeDocroot()
        defer { try? FileManager.default.removeItem(atPath: docroot) }
        let server = try ServerProcess.nghttpd(port: freeLoopbackPort(), docroot: docroot, certificates: certificates)
        defer { server.stop() }

        let (untrusted, _) = try fire(3, port: server.port, tls: try tls(trustingTestCA: false))
        #expect(untrusted.completedOnceEach)
        #expect(untrusted.failures.count == 3)
        for error in untrusted.failures {
            guard case let .tlsFailed(message) = error else { Issue.record("expected tlsFailed, got \(error)"); continue }
            #expect(message.contains("certificate verification failed"))
            #expect(error.safeToResend)
        }

        let (wrongName, _) = try fire(1, port: server.port, tls: try tls(serverName: "push.example.com"))
        guard case .tlsFailed = wrongName.failures.first else {
            Issue.record("a certificate for another name was accepted: \(wrongName.all)")
            return
        }

        let (trusted, _) = try fire(3, port: server.port, tls: try tls())
        #expect(trusted.successes.count == 3)
    }

    @Test func failsClearlyWhenTheServerDoesNotSpeakHTTP2() throws {
        let peer = try ServerProcess.peer(mode: "http11", certificates: certificates)
        defer { peer.stop() }
        let (outcomes, _) = try fire(1, port: peer.port, tls: try tls())
        guard case let .tlsFailed(message)? = outcomes.failures.first else {
            Issue.record("expected tlsFailed, got \(outcomes.all)")
            return
        }
        #expect(message.contains("ALPN"))
    }

    @Test func perRequestTimeoutCancelsTheStream() throws {
        let peer = try ServerProcess.peer(mode: "silent", certificates: certificates)
        defer { peer.stop() }
        let (outcomes, connection) = try fire(3, port: peer.port, tls: try tls(), request: postRequest(timeoutMilliseconds: 300), waitSeconds: 10, sendWhenReady: true)
        #expect(outcomes.completedOnceEach)
        #expect(outcomes.failures == [.timedOut, .timedOut, .timedOut])
        #expect(outcomes.failures.allSatisfy { $0.wasProcessedPossibly })
        // The connection itself survives a request timeout.
        let state = try loop.submit { connection.value.state }
        #expect(state == .ready)
    }

    @Test func pingTimeoutDeclaresASilentConnectionDead() throws {
        let peer = try ServerProcess.peer(mode: "silent", certificates: certificates)
        defer { peer.stop() }
        let events = EventLog()
        let options = HTTP2ConnectionOptions(pingIdleMilliseconds: 200, pingTimeoutMilliseconds: 300)
        let (outcomes, connection) = try fire(2, port: peer.port, tls: try tls(), options: options, waitSeconds: 10, events: events)
        #expect(outcomes.completedOnceEach)
        for error in outcomes.failures {
            guard case let .connectionLost(why) = error else { Issue.record("expected connectionLost, got \(error)"); continue }
            #expect(why.contains("PING"))
        }
        #expect(try loop.submit { connection.value.state } == .closed)
        #expect(events.all.contains { if case .connection(.closed(_, .connectionLost?)) = $0 { true } else { false } })
    }

    @Test func goawayFailsOnlyTheStreamsAboveLastStreamID() throws {
        let peer = try ServerProcess.peer(mode: "goaway", certificates: certificates, extra: ["--count", "10", "--last-stream", "9"])
        defer { peer.stop() }
        let events = EventLog()
        let (outcomes, connection) = try fire(10, port: peer.port, tls: try tls(), waitSeconds: 15, events: events)
        #expect(outcomes.completedOnceEach)
        #expect(outcomes.successes.count == 5)  // streams 1, 3, 5, 7, 9
        #expect(outcomes.successes.allSatisfy { $0.status == 200 && $0.header("apns-id") != nil })
        #expect(outcomes.failures.count == 5)
        for error in outcomes.failures {
            #expect(error == .goawayUnprocessed(lastStreamID: 9, errorCode: 0, reason: "Shutdown"))
            #expect(error.safeToResend)
        }
        let connectionID = try loop.submit { connection.value.id }
        #expect(waitUntil(seconds: 5) {
            events.all.contains(.connection(.goaway(connectionID: connectionID, lastStreamID: 9, errorCode: 0, reason: "Shutdown")))
        })
        #expect(waitUntil(seconds: 5) { (try? loop.submit { connection.value.state }) == .closed })
    }

    @Test func refusedStreamsAreReportedAsNotProcessed() throws {
        let peer = try ServerProcess.peer(mode: "refuse", certificates: certificates)
        defer { peer.stop() }
        let (outcomes, _) = try fire(20, port: peer.port, tls: try tls(), waitSeconds: 15)
        #expect(outcomes.completedOnceEach)
        #expect(outcomes.successes.count == 10)
        #expect(outcomes.failures.count == 10)
        #expect(outcomes.failures.allSatisfy { $0 == .refusedStream && $0.safeToResend })
    }

    @Test func resolvesAHostNameAndTriesEachAddressInTurn() throws {
        // "localhost" usually resolves to ::1 and 127.0.0.1; nghttpd listens on 127.0.0.1 only, so an
        // IPv6-first answer exercises falling through to the next address. The certificate names localhost.
        let docroot = try makeDocroot()
        defer { try? FileManager.default.removeItem(atPath: docroot) }
        let server = try ServerProcess.nghttpd(port: freeLoopbackPort(), docroot: docroot, certificates: certificates)
        defer { server.stop() }
        let tls = try tls()
        let outcomes = Outcomes(expected: 1)
        try loop.submit { [loop] in
            let connection = HTTP2ClientConnection(loop: loop, endpoint: HTTP2Endpoint(host: "localhost", port: server.port), tls: tls)
            connection.connect()
            if !connection.send(postRequest(), completion: { outcomes.record(0, $0) }) { outcomes.record(0, .failure(.queueFull)) }
        }
        #expect(outcomes.wait(seconds: 15))
        #expect(outcomes.successes.first?.status == 200, "\(outcomes.failures)")
    }

    /// Sends `count` requests to a peer that answers its first 100 all at once (after half a second), and keeps the
    /// loop busy meanwhile: the client wakes to every answer (and whatever follows them) in one go.
    private func sendAndSleepThroughTheAnswers(_ count: Int, peer: ServerProcess) throws -> (Outcomes, LoopBound<HTTP2ClientConnection>) {
        let outcomes = Outcomes(expected: count)
        let tls = try tls()
        let connection = try loop.submit { [loop] () -> LoopBound<HTTP2ClientConnection> in
            let connection = HTTP2ClientConnection(loop: loop, endpoint: HTTP2Endpoint(host: "127.0.0.1", port: peer.port), tls: tls)
            connection.connect()
            Self.send(count, postRequest(), on: connection, into: outcomes)
            return LoopBound(connection, loop: loop)
        }
        #expect(waitUntil(seconds: 10) { (try? loop.submit { connection.value.openStreams }) == 100 })
        try loop.submit { usleep(1_500_000) }
        return (outcomes, connection)
    }

    /// The server answers every open stream and closes the connection (no GOAWAY); the client wakes with the
    /// answers and the close together. Every answer is delivered, and the queued requests end as never sent:
    /// none goes out on the dying connection, where it would end as possibly processed.
    @Test func answersThatArriveWithTheServersCloseAreDeliveredAndQueuedRequestsEndAsNeverSent() throws {
        let peer = try ServerProcess.peer(mode: "hangup", certificates: certificates, extra: ["--count", "100"])
        defer { peer.stop() }
        // The loop is busy while the peer answers and closes, so one wake sees the answers and the hangup.
        let (outcomes, _) = try sendAndSleepThroughTheAnswers(300, peer: peer)
        #expect(outcomes.wait(seconds: 30), "not every request completed in time")
        #expect(outcomes.completedOnceEach)
        #expect(outcomes.successes.count == 100)
        #expect(outcomes.successes.allSatisfy { $0.status == 200 })
        let failures = outcomes.failures
        #expect(failures.count == 200)
        #expect(failures.allSatisfy { !$0.wasProcessedPossibly }, "\(failures.filter(\.wasProcessedPossibly).prefix(3))")
    }

    /// Answers worth more than one wake's reads (about 300 KB against `LiveSession.chunksPerWake` chunks) arrive
    /// at once: the rest is read in the loop's next turns, every answer is delivered once, and the connection
    /// goes on serving.
    @Test func aBurstOfAnswersLargerThanOneWakesReadsIsDeliveredWholeAndTheConnectionServesOn() throws {
        let peer = try ServerProcess.peer(mode: "burst", certificates: certificates, extra: ["--count", "100"])
        defer { peer.stop() }
        let (first, connection) = try sendAndSleepThroughTheAnswers(100, peer: peer)
        #expect(first.wait(seconds: 30), "not every answer of the burst was delivered")
        #expect(first.completedOnceEach)
        #expect(first.successes.count == 100)
        #expect(first.successes.allSatisfy { ($0.headers.first { $0.name == "x-pad" }?.value.count ?? 0) > 3000 })
        let second = Outcomes(expected: 50)
        try loop.submit { Self.send(50, postRequest(), on: connection.value, into: second) }
        #expect(second.wait(seconds: 30))
        #expect(second.successes.count == 50)
        try loop.submit { connection.value.close() }
    }

    @Test func aClosedConnectionIsFreed() throws {
        let docroot = try makeDocroot()
        defer { try? FileManager.default.removeItem(atPath: docroot) }
        let server = try ServerProcess.nghttpd(port: freeLoopbackPort(), docroot: docroot, certificates: certificates)
        defer { server.stop() }
        let watcher = WeakWatcher()
        do {
            let (outcomes, connection) = try fire(5, port: server.port, tls: try tls(), waitSeconds: 15)
            #expect(outcomes.successes.count == 5)
            try loop.submit {
                watcher.object = connection.value
                connection.value.close()
            }
        }
        // No cycle through timers, the loop or nghttp2's user data keeps a closed connection alive.
        #expect(waitUntil(seconds: 5) { (try? loop.submit { watcher.object == nil }) == true })
    }

    @Test func connectionRefusedFailsAsConnectFailed() throws {
        let (outcomes, _) = try fire(2, port: freeLoopbackPort(), tls: try tls(), waitSeconds: 10)
        #expect(outcomes.completedOnceEach)
        #expect(outcomes.failures.allSatisfy { if case .connectFailed = $0 { true } else { false } }, "\(outcomes.failures)")
    }

    @Test func configurationDescriptionHidesThePassword() {
        let text = "\(TLSConfiguration(pkcs12File: "cert.p12", pkcs12Password: "hunter2"))"
        #expect(!text.contains("hunter2"))
        #expect(text.contains("cert.p12"))
    }

    @Test func headerNamesAreLowerCased() {
        #expect(HTTP2Header(name: "APNs-Topic", value: "X").name == "apns-topic")
        #expect(HTTP2Header(name: "apns-id", value: "Y").value == "Y")
    }

    @Test func goawayReasonIsReadFromTheDebugDataJSON() {
        #expect(HTTP2ClientConnection.goawayReason(Array(#"{"reason":"ExpiredProviderToken"}"#.utf8)) == "ExpiredProviderToken")
        #expect(HTTP2ClientConnection.goawayReason(Array("plain".utf8)) == "plain")
        #expect(HTTP2ClientConnection.goawayReason([]) == nil)
    }

    @Test func unreadableCredentialsAreTypedErrors() {
        #expect(throws: HTTP2ClientError.self) { try TLSContext(TLSConfiguration(caFile: "/nonexistent/ca.pem")) }
        #expect(throws: HTTP2ClientError.self) { try TLSContext(TLSConfiguration(pkcs12File: "/nonexistent/cert.p12", pkcs12Password: "x")) }
        #expect(throws: HTTP2ClientError.self) { try HTTP2Endpoint(host: "h", port: 1, proxy: "socks5://p:1").validate() }
    }
}

/// Client certificates (PEM and PKCS#12) and the CONNECT proxy.
@Suite final class CredentialAndProxyTests {
    let loop: EventLoop
    let certificates: TestCertificates

    init() throws {
        loop = try EventLoop.startThread(name: "http2-cred-test")
        certificates = try TestCertificates()
        try certificates.makeClientCertificate()
    }

    deinit {
        loop.stop()
        loop.waitUntilStopped()
    }

    private func one(port: Int, _ configuration: TLSConfiguration, proxy: String? = nil) throws -> Result<HTTP2Response, HTTP2ClientError> {
        let tls = try TLSContext(configuration)
        let outcomes = Outcomes(expected: 1)
        let connection = try loop.submit { [loop] () -> LoopBound<HTTP2ClientConnection> in
            let connection = HTTP2ClientConnection(loop: loop, endpoint: HTTP2Endpoint(host: "127.0.0.1", port: port, proxy: proxy), tls: tls)
            connection.connect()
            let accepted = connection.send(postRequest()) { outcomes.record(0, $0) }
            if !accepted { outcomes.record(0, .failure(.queueFull)) }
            return LoopBound(connection, loop: loop)
        }
        #expect(outcomes.wait(seconds: 15))
        try loop.submit { connection.value.close() }
        return try #require(outcomes.all[0]?.first)
    }

    @Test func clientCertificatesAsPEMOrPKCS12() throws {
        let docroot = try makeDocroot()
        defer { try? FileManager.default.removeItem(atPath: docroot) }
        let server = try ServerProcess.nghttpd(port: freeLoopbackPort(), docroot: docroot, certificates: certificates, extra: ["--verify-client"])
        defer { server.stop() }
        let ca = certificates.caCertificate
        let pem = try one(port: server.port, TLSConfiguration(caFile: ca, clientCertificateFile: certificates.clientCertificate, clientKeyFile: certificates.clientKey))
        #expect((try? pem.get())?.status == 200)
        let p12 = try one(port: server.port, TLSConfiguration(caFile: ca, pkcs12File: certificates.clientPKCS12, pkcs12Password: TestCertificates.pkcs12Password))
        #expect((try? p12.get())?.status == 200)
        let none = try one(port: server.port, TLSConfiguration(caFile: ca))
        guard case .failure(let error) = none else { Issue.record("accepted without a client certificate"); return }
        #expect(error.safeToResend, "\(error)")
        #expect(throws: HTTP2ClientError.self) {
            try TLSContext(TLSConfiguration(pkcs12File: self.certificates.clientPKCS12, pkcs12Password: "wrong"))
        }
    }

    @Test func connectsThroughAConnectProxy() throws {
        let docroot = try makeDocroot()
        defer { try? FileManager.default.removeItem(atPath: docroot) }
        let server = try ServerProcess.nghttpd(port: freeLoopbackPort(), docroot: docroot, certificates: certificates)
        defer { server.stop() }
        let report = NSTemporaryDirectory() + "herald-h2-proxy-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: report) }
        let proxy = try ServerProcess.peer(mode: "proxy", certificates: certificates, extra: ["--report", report])
        defer { proxy.stop() }
        let result = try one(port: server.port, TLSConfiguration(caFile: certificates.caCertificate), proxy: "http://127.0.0.1:\(proxy.port)")
        #expect((try? result.get())?.status == 200, "\(result)")
        let targets = (try? String(contentsOfFile: report, encoding: .utf8)) ?? ""
        #expect(targets == "127.0.0.1:\(server.port)\n")
    }
}

private final class WeakWatcher: @unchecked Sendable {
    weak var object: HTTP2ClientConnection?
}
