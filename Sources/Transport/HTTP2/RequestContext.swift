import Reactor

/// The completion every request carries: called exactly once, on the loop's thread.
public typealias HTTP2Completion = (Result<HTTP2Response, HTTP2ClientError>) -> Void

/// One request from `send` to its single completion: the only per-request allocation besides the body and
/// response bytes. Loop-confined. `done` flips the moment a result is decided, so nothing can decide twice.
final class RequestContext {
    let request: HTTP2Request
    private var completion: HTTP2Completion?
    /// While it waits: the end of its queue time. Once written: the end of the server's time to answer, so
    /// time spent waiting for a connection is never taken from the server (issue 30, item 12).
    private(set) var deadline: UInt64
    private(set) var written = false
    /// Only a connection with an id above this may carry it (resend after a retired connection).
    let newerThanConnectionID: Int
    var done = false
    var streamID: Int32 = -1
    var status = 0
    var headers: [(name: String, value: String)] = []
    var body: [UInt8] = []
    /// How much of `request.body` nghttp2 has taken.
    var bodyOffset = 0
    var result: Result<HTTP2Response, HTTP2ClientError>?

    init(request: HTTP2Request, newerThanConnectionID: Int, completion: @escaping HTTP2Completion) {
        self.request = request
        self.completion = completion
        self.newerThanConnectionID = newerThanConnectionID
        self.deadline = monotonicNanos() &+ UInt64(max(1, request.queueTimeoutMilliseconds ?? request.timeoutMilliseconds)) &* 1_000_000
    }

    /// Called as the request is handed to a connection's session: false when its queue time is already over (the
    /// caller fails it as `.queueTimedOut` and writes nothing); else the answer's deadline starts now.
    func startWriting(now: UInt64 = monotonicNanos()) -> Bool {
        guard !written else { return true }
        if now >= deadline { return false }
        written = true
        deadline = now &+ UInt64(max(1, request.timeoutMilliseconds)) &* 1_000_000
        return true
    }

    /// Decides the outcome (first decision wins); the completion runs later, in `deliver()`, outside any
    /// nghttp2 callback so that it may call back into the pool.
    @discardableResult
    func decide(_ outcome: Result<HTTP2Response, HTTP2ClientError>) -> Bool {
        if done { return false }
        done = true
        result = outcome
        return true
    }

    func deliver() {
        guard let completion, let result else { return }
        self.completion = nil
        completion(result)
    }
}
