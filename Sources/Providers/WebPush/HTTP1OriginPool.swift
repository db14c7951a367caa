import Basics
import CurlHTTP
import Foundation
import HTTP2
import Reactor

/// HTTP/1.1 to one push service whose TLS handshake chose it by ALPN: `connections` threads, each with its own
/// libcurl handle (one keep-alive connection, one request at a time), taking requests from one bounded queue.
/// libcurl rather than a second HTTP client here: it already speaks HTTP/1.1 over TLS for the webhooks, keeps
/// connections alive and reconnects, and its socket callback lets the address check judge the very address it
/// connects to. Blocking handles on a few threads rather than libcurl's multi interface on the loop: a service
/// without HTTP/2 is the exception, so simplicity wins over the threads' cost, which is bounded
/// (`connections` per such origin, at most `web_push.max_pools` origins). Answers come back on the loop as the
/// HTTP/2 pool's do, so the sender classifies both alike.
final class HTTP1OriginPool: Sendable {
    struct Job: Sendable {
        let url: String
        let headers: [String]
        let body: [UInt8]
        /// Past this (monotonic nanoseconds) it is never sent: `.queueTimedOut`, as the HTTP/2 pool's queue does.
        let deadline: UInt64
        /// Made on the loop by `send` and called only there (through `loop.execute`): checked, not promised.
        let completion: LoopBound<HTTP2Completion>
    }

    private struct State {
        var queue = FIFO<Job>()
        var busy = 0
        var closed = false
    }

    let loop: EventLoop
    let connections: Int
    private let maxQueued: Int
    private let state = LockedValue(State())

    private let queueTimeoutNanos: UInt64

    init(loop: EventLoop, connections: Int, maxQueued: Int, options: CurlPost.Options) {
        self.loop = loop
        queueTimeoutNanos = UInt64(max(1, options.timeoutMilliseconds)) * 1_000_000
        self.connections = max(1, connections)
        self.maxQueued = maxQueued
        for index in 0..<self.connections {
            let thread = Thread { [self] in run(options) }
            thread.name = "webpush-http1-\(index)"
            thread.start()
        }
    }

    /// Requests being sent now.
    var inFlight: Int { state.withLock { $0.busy } }
    var queued: Int { state.withLock { $0.queue.count } }

    /// Queues a POST, on the loop; false (the completion never runs) when closed or the queue is full. The
    /// completion runs once, on the loop.
    func send(url: String, headers: [(String, String)], body: [UInt8], completion: @escaping HTTP2Completion) -> Bool {
        let job = Job(url: url, headers: headers.map { "\($0.0): \($0.1)" }, body: body, deadline: monotonicNanos() &+ queueTimeoutNanos,
                      completion: LoopBound(completion, loop: loop))
        return state.withLock { state in
            guard !state.closed, state.queue.count < maxQueued else { return false }
            state.queue.append(job)
            return true
        }
    }

    /// Stops the threads once their current request is done; what still waits completes with `.closed`.
    func close() {
        let waiting = state.withLock { state -> [Job] in
            state.closed = true
            return state.queue.removeAll()
        }
        for job in waiting { loop.execute { job.completion.value(.failure(.closed)) } }
    }

    private func run(_ options: CurlPost.Options) {
        let session = CurlSession(options, keepBodyBytes: CurlPost.maxBodyBytes)
        while let job = state.wait(until: { $0.closed || !$0.queue.isEmpty }, then: { state -> Job? in
            guard !state.closed, let job = state.queue.popFirst() else { return nil }
            state.busy += 1
            return job
        }) ?? nil {
            let result: Result<HTTP2Response, HTTP2ClientError>
            if monotonicNanos() >= job.deadline {
                result = .failure(.queueTimedOut)
            } else if let session {
                result = Self.response(session.post(url: job.url, headers: job.headers, body: job.body))
            } else {
                result = .failure(.notSent("curl_easy_init failed"))
            }
            state.withLock { $0.busy -= 1 }
            loop.execute { job.completion.value(result) }
        }
    }

    /// libcurl's answer in the HTTP/2 pool's terms: the same response, or the transport error that says as much
    /// about whether the service may have processed it.
    static func response(_ answer: Result<CurlPost.Answer, CurlFailure>) -> Result<HTTP2Response, HTTP2ClientError> {
        switch answer {
        case .success(let answer):
            return .success(HTTP2Response(status: answer.status, headers: answer.headers.map { (name: $0.key, value: $0.value) },
                                          body: answer.body, connectionID: 0))
        case .failure(let failure):
            if let refused = failure.refusedAddress { return .failure(.addressRefused(refused)) }
            if failure.neverSent { return .failure(.connectFailed(failure.description)) }
            if failure.timedOut { return .failure(.timedOut) }
            return .failure(.connectionLost(failure.description))
        }
    }
}
