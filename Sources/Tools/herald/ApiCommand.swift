import API
import Basics
import Foundation
import HMS
import Reactor
import RedisQueue
import TLS
import Worker

/// `herald api`: the HTTP front door (docs/api.md). Validates jobs as the worker would and pushes the good ones
/// onto Redis; holds no state of its own, so any number of them can run side by side.
enum ApiCommand {
    static let command = Command(
        name: "api", abstract: "Serve the HTTP API: POST /v1/jobs validates jobs and queues them on Redis.",
        discussion: """
        Reads the same configuration as the worker (its redis, apps and api sections): every job is checked by the
        worker's own intake and a refused one never reaches Redis; an accepted one is in Redis before the 202.
        Listens on loopback unless told otherwise. Stops on SIGTERM or SIGINT (answers in flight are finished
        for up to a second); a second signal exits at once.
        """,
        options: [
            .value("config", "file", "Configuration file (or HERALD_CONFIG)."),
            .value("listen", "addr", "Address to serve on (default api.listen, 127.0.0.1:8088; :port for every interface)."),
            .value("redis", "url", "Redis URL (overrides the configuration and HERALD_REDIS_URL)."),
            .value("prefix", "prefix", "Key prefix (overrides the configuration and HERALD_REDIS_PREFIX)."),
        ],
        run: run)

    static func run(_ args: ParsedArguments) throws -> Int32 {
        var environment = ProcessInfo.processInfo.environment
        if let url = args.value("redis") { environment["HERALD_REDIS_URL"] = url }
        if let prefix = args.value("prefix") { environment["HERALD_REDIS_PREFIX"] = prefix }
        let configuration = try loadConfiguration(args, environment: environment)
        let listenText = args.value("listen") ?? configuration.api.listen
        guard let address = ListenAddress(listenText) else { throw UsageError("--listen must be host:port or :port, got '\(listenText)'") }
        let api = configuration.api
        var limits = HTTP1Server.Limits()
        limits.maxConnections = api.maxConnections
        limits.parser.maxBodyBytes = api.maxBodyBytes
        limits.parser.maxHeadBytes = api.maxHeadBytes
        limits.parser.requireHost = true
        limits.requestTimeoutMilliseconds = api.requestTimeoutMs
        limits.idleTimeoutMilliseconds = api.idleTimeoutMs
        let logger = Logger(component: "api", minimumLevel: LogLevel(name: configuration.worker.logLevel) ?? .info)
        // As many open files as the process may have; connections past what fit are refused with 503, not accepted
        // into a full descriptor table.
        let fileLimit = FileDescriptorLimit.raiseSoftToHard()
        if let shortfall = FileDescriptorLimit.shortfall(maxConnections: api.maxConnections, limit: fileLimit) {
            logger.warning("too few open files for api.max_connections", ["detail": .string(shortfall)])
            limits.maxConnections = FileDescriptorLimit.connections(fitting: fileLimit)
        }
        var settings = FrontDoor.Settings()
        settings.logger = logger
        settings.maxJobsPerRequest = api.maxJobsPerRequest
        settings.gorushMetrics = api.gorushMetrics
        for app in configuration.apps { if let hms = app.hms { settings.hmsAppIDs[hms.appID] = app.name } }
        var tls: TLSServerContext?
        if !api.tlsCertificateFile.isEmpty {
            do {
                tls = try TLSServerContext(certificateFile: api.tlsCertificateFile, keyFile: api.tlsKeyFile,
                                           clientCAFile: api.tlsClientCAFile.isEmpty ? nil : api.tlsClientCAFile)
            } catch {
                throw ConfigurationError(["api.tls: \(error.message)"])
            }
        }
        // h2 when the client offers it (ALPN), else HTTP/1.1; cleartext serves both too (h2c with prior knowledge).
        tls?.chooseH2OrHTTP1()
        let scheme = tls == nil ? "http" : "https"
        let serverTLS = tls
        let shards = try configuration.redis.queueShards()
        let loop = try EventLoop.startThread(name: "herald-api")
        let frozenLimits = limits
        let frozenSettings = settings
        let server = try loop.submit { () -> LoopBound<HTTP1Server> in
            // Made on the loop and reachable only from the server's handler: it never leaves the loop's thread.
            let client = try configuration.redis.makeClient(loop: loop)
            // Only the changes: a Redis that keeps refusing is one warning per state change, not per retry.
            var last: [String: Bool] = [:]
            client.observeConnections { endpoint, state in
                let up = state == .connected
                guard last[endpoint] != up else { return }
                last[endpoint] = up
                if up {
                    logger.info("redis connected", ["url": .string(endpoint)])
                } else if case .disconnected(let reason, _) = state {
                    logger.warning("redis unreachable; requests get 503 until it is back", ["url": .string(endpoint), "reason": .string(reason)])
                }
            }
            client.start()
            let door = try FrontDoor(configuration: configuration, shards: shards, redis: client, settings: frozenSettings,
                                     readiness: { client.isConnected })
            let server = try HTTP1Server(loop: loop, host: address.host, port: address.port, limits: frozenLimits, tls: serverTLS,
                                         errorBody: { door.rejectRequest($0, $1) }, headCheck: { door.decideFromHead($0) }) { request, respond in
                door.handle(request, respond: respond)
            }
            door.openConnections = { [weak server] in server?.openConnections ?? 0 }
            return LoopBound(server, loop: loop)
        }
        let port = try loop.submit { server.value.port }
        let shown = ListenAddress("\(address.host):\(port)")?.description ?? listenText
        logger.info("api listening", ["url": .string("\(scheme)://\(shown)/"), "redis": .string(configuration.redis.redactedURL)])
        // Scripts and tests read the URL from this line.
        print("api: \(scheme)://\(shown)/")
        serveUntilSignalled(loop) {
            logger.info("shutdown requested")
            // New connections wait in the backlog; answers waiting for Redis get a moment to go out.
            _ = loop.schedule(afterMilliseconds: 1_000) {
                server.value.close()
                loop.stop()
            }
        }
        return ExitCode.success
    }
}
