/// A provider whose requests are `RoutedRequest`s routed by path (FCM, Push Kit): it says which requests the
/// connection-level faults count and what each request gets.
protocol RoutingProvider: AnyObject {
    var maxConcurrentStreams: UInt32 { get }
    /// True for the provider's sends (what the connection-level faults count; token and control paths are not).
    static func isSend(_ request: RoutedRequest) -> Bool
    /// What to do with one complete request, and the latency to add first.
    func handle(_ request: RoutedRequest, connection: Int, transport: String) -> (RoutedOutcome, Int)
}

/// The wire Google's and Huawei's front ends share, given once: HTTP/2 and HTTP/1.1 (ALPN), answers that carry
/// content-length, bodies read up to FCM's 256 KiB (1,000 Push Kit tokens of ~150 bytes fill 150 KiB; a longer
/// body is the provider's size error), a `RoutedConnection` per connection.
extension RoutingProvider where Self: MockProvider {
    var connectionSettings: MockConnectionSettings {
        MockConnectionSettings(servesHTTP1: true, http1BodyLimit: RoutedRequest.bodyLimit, sendsContentLength: true)
    }

    func makeHandler(for connection: MockServerConnection, listener: Int) -> any MockConnectionHandler {
        RoutedConnection(connection: connection, core: self)
    }
}

/// One simulator connection of a `RoutingProvider`: sends pass the connection-level faults first, then the
/// provider routes every request and the answer goes out after its latency. The wire (TLS, HTTP/2 or HTTP/1.1,
/// the connection-level faults) is its `MockServerConnection`'s, which owns it.
final class RoutedConnection<Core: RoutingProvider>: MockConnectionHandler {
    unowned let connection: MockServerConnection
    unowned let core: Core

    init(connection: MockServerConnection, core: Core) {
        self.connection = connection
        self.core = core
    }

    var initialMaxConcurrentStreams: UInt32 { core.maxConcurrentStreams }

    func connectionReady() {}

    func makeRequest(streamID: Int32) -> MockRequest { RoutedRequest(streamID: streamID) }

    func requestComplete(_ mockRequest: MockRequest) {
        let request = unsafeDowncast(mockRequest, to: RoutedRequest.self)
        var goawayDue = false
        if Core.isSend(request) {
            guard case .admitted(let due) = connection.admit(request) else { return }
            goawayDue = due
        }
        let (outcome, delay) = core.handle(request, connection: connection.id, transport: connection.protocolName)
        connection.after(milliseconds: delay) { [unowned self] in self.apply(outcome, to: request, goawayAfter: goawayDue) }
    }

    private func apply(_ outcome: RoutedOutcome, to request: RoutedRequest, goawayAfter: Bool) {
        guard connection.isPending(request) else { return }
        switch outcome {
        case .answer(let answer):
            connection.respond(request, status: answer.status, headers: answer.headers, body: answer.body, thenGoaway: goawayAfter)
        case .fault(let fault): connection.apply(fault, to: request)
        }
    }
}
