import HTTP2
import PushCore

extension TransportFailure {
    /// What the transport's error means for the job: not processed (resend freely), outcome unknown, or
    /// never connected.
    public init(_ error: HTTP2ClientError) {
        switch error {
        case .refusedStream, .goawayUnprocessed, .notSent, .queueTimedOut, .closed, .queueFull:
            self = .notProcessed
        case .connectionLost, .streamReset:
            self = .outcomeUnknown
        case .timedOut:
            self = .timedOut
        case .connectFailed(let detail), .tlsFailed(let detail), .addressRefused(let detail),
             .http1Only(let detail):
            self = .connectionFailed(detail)
        }
    }
}
