import Reactor

/// `/metrics`, `/healthz` and `/readyz` of a worker process, on its first event loop.
///
/// A scrape asks every loop for a copy of its counters (`execute` on each, the copy handed back to this
/// loop), merges them and answers; the hot path only ever adds to its own loop's plain counters. A loop that
/// does not answer within `gatherMilliseconds` (stopped, or stuck) is left out and counts as not ready.
/// Loop-confined to `home` (checked by the listener and the `LoopBound`s).
public final class WorkerEndpoint {
    public let home: EventLoop
    private var pipelines: [LoopBound<DeliveryPipeline>]
    private let reloads: ConfigReloads
    private var listener: HTTPListener?
    private let gatherMilliseconds: Int

    public init(address: ListenAddress, home: EventLoop, pipelines: [LoopBound<DeliveryPipeline>], reloads: ConfigReloads = ConfigReloads(),
                gatherMilliseconds: Int = 2000) throws(SystemError) {
        self.home = home
        self.pipelines = pipelines
        self.reloads = reloads
        self.gatherMilliseconds = gatherMilliseconds
        listener = nil
        listener = try HTTPListener(loop: home, host: address.host, port: address.port) { [weak self] request, respond in
            guard let self else { return respond(.init(status: 503, body: "shutting down\n")) }
            self.answer(request, respond)
        }
    }

    public var port: Int { listener?.port ?? 0 }

    /// A reload replaced loop `index`'s pipeline: scrapes ask the new one (whose counters start at 0, as at a restart).
    public func replace(_ index: Int, with pipeline: LoopBound<DeliveryPipeline>) {
        home.preconditionInLoop()
        pipelines[index] = pipeline
    }

    public func close() {
        listener?.close()
        listener = nil
    }

    private func answer(_ request: HTTPListener.Request, _ respond: @escaping (HTTPListener.Response) -> Void) {
        switch request.path {
        case "/metrics":
            gather { snapshot in
                guard let snapshot else { return respond(.init(status: 503, body: "no event loop answered\n")) }
                respond(.init(status: 200, contentType: PrometheusText.contentType, body: WorkerMetricsText.render(snapshot, reloads: self.reloads)))
            }
        case "/healthz":
            // Answered on the loop that also runs delivery: a stuck loop answers nothing, which is the point.
            respond(.init(status: 200, body: "ok\n"))
        case "/readyz":
            gather { snapshot in
                let verdict = Self.readiness(snapshot, loops: self.pipelines.count)
                respond(.init(status: verdict.ready ? 200 : 503, body: verdict.text + "\n"))
            }
        case "/":
            respond(.init(status: 200, body: "herald worker: /metrics /healthz /readyz\n"))
        default:
            respond(.init(status: 404, body: "not found: try /metrics, /healthz or /readyz\n"))
        }
    }

    /// Ready: every loop answered, has Redis and is claiming (not draining after SIGTERM).
    static func readiness(_ snapshot: MetricsSnapshot?, loops: Int) -> (ready: Bool, text: String) {
        guard let s = snapshot else { return (false, "not ready: no event loop answered") }
        if s.drainingLoops > 0 { return (false, "not ready: draining (shutdown requested)") }
        if s.redisConnected < loops { return (false, "not ready: redis not connected (\(s.redisConnected) of \(loops) loops)") }
        if s.claimingLoops < loops { return (false, "not ready: not claiming yet (\(s.claimingLoops) of \(loops) loops)") }
        return (true, "ready")
    }

    /// One copy of every loop's metrics, merged; nil when none answered in time.
    private func gather(_ done: @escaping (MetricsSnapshot?) -> Void) {
        home.preconditionInLoop()
        let home = self.home
        let state = LoopBound(Gathering(expected: pipelines.count, done: done), loop: home)
        state.value.timer = home.schedule(afterMilliseconds: gatherMilliseconds) { state.value.finish() }
        for pipeline in pipelines {
            pipeline.loop.execute {
                let copy = pipeline.value.metricsSnapshot()
                home.execute { state.value.add(copy) }
            }
        }
    }

    private final class Gathering {
        let expected: Int
        var parts: [MetricsSnapshot] = []
        var done: ((MetricsSnapshot?) -> Void)?
        var timer: LoopTimer?

        init(expected: Int, done: @escaping (MetricsSnapshot?) -> Void) {
            self.expected = expected
            self.done = done
        }

        func add(_ part: MetricsSnapshot) {
            parts.append(part)
            if parts.count == expected { finish() }
        }

        func finish() {
            guard let done else { return }
            self.done = nil
            timer?.cancel()
            guard var merged = parts.first else { return done(nil) }
            for part in parts.dropFirst() { merged = merged + part }
            merged.loops = expected
            done(merged)
        }
    }
}
