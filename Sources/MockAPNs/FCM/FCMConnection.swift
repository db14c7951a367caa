/// The FCM side of one simulator connection: sends go through the connection-level faults, then `FCMCore`
/// routes every request (`/token`, `messages:send`, `/_mock/...`) and the answer goes out after its latency.
/// The wire (TLS, HTTP/2 or HTTP/1.1, the connection-level faults) is its `MockServerConnection`'s, which owns it.
final class FCMConnection: MockConnectionHandler {
    unowned let connection: MockServerConnection
    unowned let core: FCMCore

    init(connection: MockServerConnection, core: FCMCore) {
        self.connection = connection
        self.core = core
    }

    var initialMaxConcurrentStreams: UInt32 { core.configuration.maxConcurrentStreams }

    func connectionReady() {}

    func makeRequest(streamID: Int32) -> MockRequest { FCMRequest(streamID: streamID) }

    func requestComplete(_ mockRequest: MockRequest) {
        let request = unsafeDowncast(mockRequest, to: FCMRequest.self)
        var goawayDue = false
        if FCMCore.isSend(request) {
            guard case .admitted(let due) = connection.admit(request) else { return }
            goawayDue = due
        }
        let (outcome, delay) = core.handle(request, connection: connection.id, transport: connection.protocolName)
        connection.after(milliseconds: delay) { [unowned self] in self.apply(outcome, to: request, goawayAfter: goawayDue) }
    }

    private func apply(_ outcome: FCMOutcome, to request: FCMRequest, goawayAfter: Bool) {
        guard connection.isPending(request) else { return }
        switch outcome {
        case .answer(let answer):
            connection.respond(request, status: answer.status, headers: answer.headers, body: answer.body, thenGoaway: goawayAfter)
        case .fault(let fault): connection.apply(fault, to: request)
        }
    }
}
