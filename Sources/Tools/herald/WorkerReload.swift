import Basics
import Foundation
import Reactor
import Worker

/// What `herald worker` loads at its start and again at each SIGHUP, checked the same way both times (and as
/// `herald check-config` checks it): the configuration with its environment overrides and flags, every app's
/// credential read and proven, and the warnings that do not stop a worker.
struct LoadedWorker {
    var configuration: Configuration
    var credentials: [AppCredentials]
    var warnings: [String]

    var logger: Logger { Logger(component: "worker", minimumLevel: LogLevel(name: configuration.worker.logLevel) ?? .info) }
}

/// One event loop's delivery pipeline, replaced whole at a reload. Loop-confined.
final class WorkerSlot {
    let index: Int
    private(set) var pipeline: DeliveryPipeline
    private var replacing = false
    private var stopped = false
    /// A stop that came while the old pipeline was draining for a reload: it runs when the drain ends.
    private var stopWhenDrained: (() -> Void)?

    init(index: Int, pipeline: DeliveryPipeline) {
        self.index = index
        self.pipeline = pipeline
    }

    /// Drains the running pipeline as SIGTERM does (claiming stops, in-flight jobs finish until the deadline, the
    /// rest go back to their queue), then starts `next` under the same worker id: no job is held by both, so
    /// none is lost or sent twice. `done(true)` once `next` runs; `done(false)` when a stop came first.
    func replace(with next: DeliveryPipeline, deadlineSeconds: Int, done: @escaping (Bool) -> Void) {
        pipeline.loop.preconditionInLoop()
        guard !stopped, !replacing else { return done(false) }
        replacing = true
        pipeline.shutdown(deadlineSeconds: deadlineSeconds, forReload: true) { [self] in
            replacing = false
            if let stop = stopWhenDrained {
                stopWhenDrained = nil
                stopped = true
                stop()
                return done(false)
            }
            pipeline = next
            next.start()
            done(true)
        }
    }

    /// The SIGTERM drain of whichever pipeline runs; `done` on the loop when it has stopped.
    func stop(deadlineSeconds: Int, done: @escaping () -> Void) {
        pipeline.loop.preconditionInLoop()
        guard !stopped, stopWhenDrained == nil else { return }
        if replacing { return stopWhenDrained = done }
        stopped = true
        pipeline.shutdown(deadlineSeconds: deadlineSeconds, done: done)
    }
}

/// SIGHUP: re-reads the configuration and, when it is valid, rolls it onto the event loops one at a time
/// (each loop's pipeline drained and replaced by one built from the new configuration), the process, its
/// worker ids and its metrics listener staying up. An invalid one is refused with the problems logged and
/// nothing touched. Settings the process holds for its life (Redis, loops, the listener, the id) keep their
/// old value, named in a warning. Reloads run one at a time on their own queue, never on a loop.
final class ConfigurationReloader: Sendable {
    private let queue = DispatchQueue(label: "herald.reload")
    private let slots: [LoopBound<WorkerSlot>]
    private let workerIDs: [String]
    private let reload: @Sendable () throws -> LoadedWorker
    let reloads = ConfigReloads()
    /// The endpoint, once started: told of every replaced pipeline.
    private let endpoint = LockedValue<LoopBound<WorkerEndpoint>?>(nil)
    /// The configuration running now and its logger (changed on the reload queue, read by the signal handlers).
    private let state: LockedValue<(configuration: Configuration, logger: Logger, stopping: Bool)>

    init(running: LoadedWorker, slots: [LoopBound<WorkerSlot>], workerIDs: [String], reload: @escaping @Sendable () throws -> LoadedWorker) {
        self.slots = slots
        self.workerIDs = workerIDs
        self.reload = reload
        state = LockedValue((running.configuration, running.logger, false))
    }

    var logger: Logger { state.withLock { $0.logger } }
    var configuration: Configuration { state.withLock { $0.configuration } }

    func attach(_ endpoint: LoopBound<WorkerEndpoint>?) { self.endpoint.withLock { $0 = endpoint } }

    /// Takes SIGHUP from now on (main blocks it in every thread, so the signalfd behind the source sees it).
    func listen() {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: queue)
        // Several SIGHUPs before the handler runs are one reload: each reads the file as it is then. The handler
        // holds its source, so both live as long as the process (as `SignalWatcher`'s do).
        source.setEventHandler { [weak self] in withExtendedLifetime(source) { self?.reloadNow() } }
        source.resume()
    }

    /// SIGTERM: no reload starts after this one; a reload under way stops at the loop it is draining.
    func stopReloading() { state.withLock { $0.stopping = true } }

    private func reloadNow() {
        let (old, logger, stopping) = state.withLock { $0 }
        guard !stopping else { return }
        logger.info("configuration reload requested")
        var loaded: LoadedWorker
        do {
            loaded = try reload()
        } catch {
            return refuse((error as? ConfigurationError)?.problems ?? ["\(error)"], logger: logger)
        }
        let fixed = Self.restartOnlyChanges(old, loaded.configuration)
        loaded.configuration = Self.keepingRestartOnly(old, loaded.configuration)
        let next = loaded.configuration
        let newLogger = loaded.logger
        for warning in loaded.warnings { newLogger.warning(warning) }
        if !fixed.isEmpty {
            newLogger.warning("configuration reload: these settings need a restart and keep their old value", ["settings": .string(fixed.joined(separator: ","))])
        }
        // Every new pipeline is built before any old one stops, so a failure here also leaves the old ones untouched.
        var pipelines: [LoopBound<DeliveryPipeline>] = []
        for (index, slot) in slots.enumerated() {
            let loop = slot.loop
            let id = workerIDs[index]
            let credentials = loaded.credentials
            do {
                pipelines.append(try loop.submit { () -> LoopBound<DeliveryPipeline> in
                    LoopBound(try DeliveryPipeline(configuration: next, credentials: credentials, loop: loop, workerID: id, logger: newLogger,
                                                   loops: next.worker.eventLoops), loop: loop)
                })
            } catch {
                return refuse(["\(error)"], logger: logger)
            }
        }
        let deadline = old.worker.shutdownDeadlineSeconds
        for (index, slot) in slots.enumerated() {
            let pipeline = pipelines[index]
            let swapped = LockedValue<Bool?>(nil)
            let endpoint = self.endpoint.withLock { $0 }
            slot.loop.execute {
                slot.value.replace(with: pipeline.value, deadlineSeconds: deadline) { ran in
                    if ran, let endpoint { endpoint.loop.execute { endpoint.value.replace(index, with: pipeline) } }
                    swapped.withLock { $0 = ran }
                }
            }
            // The drain is bounded by the deadline; the margin covers returning leases over a slow Redis.
            let ran = swapped.wait(until: { $0 != nil }, timeoutSeconds: Double(deadline) + 2 * Double(old.redis.commandTimeoutMs) / 1000 + 5) { $0 }
            guard ran == .some(.some(true)) else { return }
        }
        state.withLock { $0.configuration = next; $0.logger = newLogger }
        reloads.succeeded()
        let before = Set(old.apps.map(\.name)), after = Set(next.apps.map(\.name))
        newLogger.info("configuration reloaded", [
            "apps": .int(next.apps.count), "added": .string(after.subtracting(before).sorted().joined(separator: ",")),
            "removed": .string(before.subtracting(after).sorted().joined(separator: ",")),
        ])
    }

    private func refuse(_ problems: [String], logger: Logger) {
        reloads.refused()
        logger.error("configuration reload refused; the running configuration stays", ["problems": .string(problems.joined(separator: "; "))])
    }

    /// The settings a running process cannot change: its Redis (leases, connections and scripts belong to it),
    /// its event loops and metrics listener, its worker id. Each named by its key, `redis.url`, ...
    static func restartOnlyChanges(_ old: Configuration, _ new: Configuration) -> [String] {
        var changed = differingFields(old.redis, new.redis, prefix: "redis.") + differingFields(old.metrics, new.metrics, prefix: "metrics.")
        if old.worker.eventLoops != new.worker.eventLoops { changed.append("worker.event_loops") }
        if old.worker.id != new.worker.id { changed.append("worker.id") }
        return changed
    }

    static func keepingRestartOnly(_ old: Configuration, _ new: Configuration) -> Configuration {
        var kept = new
        kept.redis = old.redis
        kept.metrics = old.metrics
        kept.worker.eventLoops = old.worker.eventLoops
        kept.worker.id = old.worker.id
        return kept
    }

    /// The fields of a settings struct that differ, as configuration keys (`connectTimeoutMs`: `connect_timeout_ms`).
    private static func differingFields<T>(_ a: T, _ b: T, prefix: String) -> [String] {
        zip(Mirror(reflecting: a).children, Mirror(reflecting: b).children).compactMap { x, y in
            guard let label = x.label, String(describing: x.value) != String(describing: y.value) else { return nil }
            return prefix + label.reduce(into: "") { key, c in key += c.isUppercase ? "_" + c.lowercased() : String(c) }
        }
    }
}
