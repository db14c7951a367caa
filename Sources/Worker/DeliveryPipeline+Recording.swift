import APNs
import APNsHTTP2
import Foundation
import HTTP2
import Reactor
import RedisQueue

/// Recording: results, acks, retries and dead letters go to Redis in batched scripts.
extension DeliveryPipeline {
    func record(_ completion: JobCompletion, entry: ResultEntry) {
        var completion = completion
        completion.result = entry
        pending.append(completion)
        if pending.count >= 512 {
            flush()
        } else if flushTimer == nil {
            flushTimer = loop.schedule(afterMilliseconds: configuration.worker.flushIntervalMs) { [weak self] in
                self?.flushTimer = nil
                self?.flush()
            }
        }
        retryBacklog()
    }

    func flush() {
        guard !pending.isEmpty, phase != .stopped else { return }
        let batch = pending
        pending.removeAll(keepingCapacity: true)
        write(batch)
    }

    /// Writes a batch; on a Redis failure writes it again (the lease-lost rule makes a repeat harmless).
    /// `isRepeat`: the batch went out before and its reply was lost (Redis went away); see
    /// `JobQueue.complete(_:isRepeat:completion:)` for why a repeat must not recover lost leases.
    func write(_ batch: [JobCompletion], isRepeat: Bool = false) {
        flushesOutstanding += 1
        queue.complete(batch, isRepeat: isRepeat) { [weak self] result in
            guard let self else { return }
            self.flushesOutstanding -= 1
            switch result {
            case .success(let report):
                self.inFlight -= batch.count
                self.account(report)
                self.pump()
                self.checkDrained()
            case .failure(let error):
                guard self.phase != .stopped else { return }
                if self.recordWarnings.allow() {
                    self.logger.warning("could not record results; will retry", ["error": .string(error.description), "jobs": .int(batch.count)])
                }
                // Only a lost reply (connection lost, timeout) may have left the batch applied in Redis.
                let maybeApplied = isRepeat || error == .connectionLost || error == .timeout
                self.flushesOutstanding += 1
                self.loop.schedule(afterMilliseconds: 250) { [weak self] in
                    self?.flushesOutstanding -= 1
                    self?.write(batch, isRepeat: maybeApplied)
                }
            }
        }
    }

    func account(_ report: CompletionReport) {
        counters.recovered += report.recovered
        if report.unconfirmed > 0 {
            logger.info("results re-sent after a lost reply were already recorded", ["jobs": .int(report.unconfirmed)])
        }
        if !report.leasesLost.isEmpty {
            counters.leasesLost += report.leasesLost.count
            logger.warning("lease lost: jobs were handed to another worker; they may be sent twice", ["leases": .int(report.leasesLost.count)])
        }
    }

    /// Jobs a full pool pushed back go out again as answers free room; the first refusal ends the pass, so a
    /// pool that stays full costs one attempt per recorded answer, not one per waiting job.
    func retryBacklog() {
        guard !backlog.isEmpty else { return }
        let jobs = backlog
        backlog.removeAll()
        for (index, job) in jobs.enumerated() {
            send(job)
            if !backlog.isEmpty {
                backlog.append(contentsOf: jobs[(index + 1)...])
                return
            }
        }
    }

    func logPoolEvent(_ event: HTTP2PoolEvent, app: String) {
        switch event {
        case .connection(.connected(let id, let streams)):
            logger.info("apns connected", ["app": .string(app), "connection": .int(id), "max_streams": .int(streams)])
        case .connection(.goaway(let id, let last, let code, let reason)):
            logger.warning("apns goaway", ["app": .string(app), "connection": .int(id), "last_stream": .int(Int(last)),
                                            "error_code": .int(Int(code)), "reason": .string(reason ?? "")])
        case .connection(.closed(let id, let error?)):
            let level: LogLevel = if case .tlsFailed = error { .error } else { .warning }
            logger.log(level, level == .error ? "tls failed" : "apns connection lost", ["app": .string(app), "connection": .int(id), "error": .string(error.description)])
        case .reconnectScheduled(let delay, let failures):
            logger.warning("apns reconnect scheduled", ["app": .string(app), "delay_ms": .int(delay), "failures": .int(failures)])
        default:
            break
        }
    }

    /// Jobs claimed and not yet recorded.
    public var jobsInFlight: Int { inFlight }
}
