import Basics
import Foundation
import HeraldProviders
import PushCore
import Reactor
import Worker

/// `herald worker`: claims jobs and delivers them until SIGTERM/SIGINT, then drains and exits 0.
enum WorkerCommand {
    static let command = Command(
        name: "worker", abstract: "Claim jobs from Redis and deliver them to " + Platform.allCases.map(\.displayName).joinedAsList("and") + ".",
        discussion: """
        SIGHUP reloads the configuration file (docs/operations.md, "Reload"): checked as at the start, refused
        with the problems logged when invalid (the old one keeps running), else each event loop drains as at
        shutdown and resumes with the new apps and credentials.
        Runs until SIGTERM or SIGINT: then it stops claiming, lets in-flight requests finish (up to
        worker.shutdown_deadline_seconds), returns unsent jobs to the queue, writes every result and exits 0.
        A second signal exits at once; the leases then expire and another worker takes the jobs.
        A SIGUSR1 or SIGUSR2 is ignored (not the default, which would end the process without a drain).
        Flags win over the environment, which wins over the configuration file.
        """,
        options: [
            .value("config", "file", "Configuration file (or HERALD_CONFIG)."),
            .value("redis", "url", "Redis URL (overrides the configuration and HERALD_REDIS_URL)."),
            .value("prefix", "prefix", "Key prefix (overrides the configuration and HERALD_REDIS_PREFIX)."),
            .value("id", "worker-id", "Worker id (default <host>-<pid>-<random>)."),
            .value("log-level", "level", "debug, info, warning or error."),
        ],
        environment: workerEnvironment,
        run: run)

    /// HERALD_CONFIG, then every declared override with its key and the first sentence of its help.
    static let workerEnvironment: [EnvironmentSpec] = [EnvironmentSpec("HERALD_CONFIG", "Configuration file when --config is not given.")]
        + Configuration.environmentSettings.map { setting in
            EnvironmentSpec(setting.environment!, "\(setting.key): \(setting.summary)")
        }

    static func run(_ args: ParsedArguments) throws -> Int32 {
        // Before any thread starts: a stray SIGUSR1/2 (a log rotator, a mistaken `kill -USR1`) must not end
        // the worker without a drain.
        signal(SIGUSR1, SIG_IGN)
        signal(SIGUSR2, SIG_IGN)
        let loaded = try load(args)
        let configuration = loaded.configuration
        let logger = loaded.logger
        for warning in loaded.warnings { logger.warning(warning) }

        let baseID = configuration.worker.id ?? defaultWorkerID()
        let ids = (0..<configuration.worker.eventLoops).map { configuration.worker.eventLoops == 1 ? baseID : "\(baseID)-\($0)" }
        var slots: [LoopBound<WorkerSlot>] = []
        var running: [(EventLoop, LoopBound<DeliveryPipeline>)] = []
        for index in 0..<configuration.worker.eventLoops {
            let loop = try EventLoop.startThread(name: "herald-worker-\(index)")
            let id = ids[index]
            let config = configuration
            let creds = loaded.credentials
            let (slot, pipeline) = try loop.submit { () -> (LoopBound<WorkerSlot>, LoopBound<DeliveryPipeline>) in
                let pipeline = try DeliveryPipeline(configuration: config, credentials: creds, loop: loop, workerID: id, logger: logger,
                                                    loops: config.worker.eventLoops)
                pipeline.start()
                return (LoopBound(WorkerSlot(index: index, pipeline: pipeline), loop: loop), LoopBound(pipeline, loop: loop))
            }
            slots.append(slot)
            running.append((loop, pipeline))
        }
        logger.info("worker started", [
            "worker": .string(baseID), "queues": .string(configuration.redis.queueKeys.joined(separator: ",")),
            "apps": .int(configuration.apps.count), "max_in_flight": .int(configuration.worker.maxInFlight),
            "event_loops": .int(configuration.worker.eventLoops),
        ])
        // The worker ids stay at a reload, so the leases under them are the new pipelines' to return.
        let reloader = ConfigurationReloader(running: loaded, slots: slots, workerIDs: ids) { try load(args) }
        let endpoint = startEndpoint(configuration.metrics.listen, pipelines: running, reloads: reloader.reloads, logger: logger)
        reloader.attach(endpoint)
        reloader.listen()
        let allSlots = slots
        let watcher = SignalWatcher(onFirst: {
            reloader.stopReloading()
            reloader.logger.info("shutdown requested")
            let deadline = reloader.configuration.worker.shutdownDeadlineSeconds
            for slot in allSlots {
                let loop = slot.loop
                loop.execute {
                    slot.value.stop(deadlineSeconds: deadline) {
                        // `/readyz` answers 503 while draining; the listener goes with its loop.
                        if let endpoint, endpoint.loop === loop { endpoint.value.close() }
                        loop.stop()
                    }
                }
            }
        }, onSecond: {
            reloader.logger.warning("second signal: exiting at once")
            exitAtOnce()
        })
        for slot in slots {
            while !slot.loop.waitUntilStopped(timeoutSeconds: 3600) {}
        }
        withExtendedLifetime((watcher, reloader)) {}
        return ExitCode.success
    }

    /// The configuration (file, environment, then flags) with every app's credential loaded and proven: the
    /// start and each SIGHUP reload refuse the same problems, which are `herald check-config`'s.
    static func load(_ args: ParsedArguments) throws -> LoadedWorker {
        var environment = ProcessInfo.processInfo.environment
        if let url = args.value("redis") { environment["HERALD_REDIS_URL"] = url }
        if let prefix = args.value("prefix") { environment["HERALD_REDIS_PREFIX"] = prefix }
        // The `api` section is `herald api`'s: the worker neither reads nor checks it (docs/configuration.md).
        var configuration = try loadConfiguration(args, environment: environment, ignoring: ["api"])
        if let level = args.value("log-level") {
            guard LogLevel(name: level) != nil else { throw UsageError("--log-level must be debug, info, warning or error") }
            configuration.worker.logLevel = level
        }
        if let id = args.value("id") { configuration.worker.id = id }
        var credentials: [AppCredentials] = []
        var problems: [String] = []
        var warnings: [String] = []
        for app in configuration.apps {
            do {
                credentials.append(try AppCredentials.load(app, configuration: configuration))
            } catch {
                problems.append("app '\(app.name)': \(error)")
            }
            warnings += AppCredentials.warnings(app, configuration: configuration)
        }
        if !problems.isEmpty { throw ConfigurationError(problems) }
        return LoadedWorker(configuration: configuration, credentials: credentials, warnings: warnings)
    }

    /// The metrics listener on the first loop. A port that cannot be bound is logged, not fatal: delivery
    /// matters more than its metrics (and a second worker on the same host with the default port still runs).
    private static func startEndpoint(_ listen: String, pipelines: [(EventLoop, LoopBound<DeliveryPipeline>)], reloads: ConfigReloads,
                                      logger: Logger)
        -> LoopBound<WorkerEndpoint>? {
        guard !listen.isEmpty, let address = ListenAddress(listen), let home = pipelines.first?.0 else { return nil }
        let bound = pipelines.map(\.1)
        do {
            let endpoint = try home.submit { () -> LoopBound<WorkerEndpoint> in
                LoopBound(try WorkerEndpoint(address: address, home: home, pipelines: bound, reloads: reloads), loop: home)
            }
            let port = try home.submit { endpoint.value.port }
            logger.info("metrics listening", ["address": .string(ListenAddress("\(address.host):\(port)")?.description ?? listen),
                                              "paths": .string("/metrics /healthz /readyz")])
            return endpoint
        } catch {
            logger.error("metrics listener not started; the worker runs without it", ["address": .string(listen), "error": .string("\(error)")])
            return nil
        }
    }
}
