import Basics
import Forwarder
import Foundation
import RedisQueue
import Worker

/// `herald forward`: the results (and dropped tokens) to a webhook.
enum ForwardCommand {
    static let command = Command(
        name: "forward", abstract: "POST the results and dropped tokens to a webhook, in batches, at least once.",
        discussion: """
        Reads <prefix>:results and <prefix>:dropped-tokens with a Redis consumer group and POSTs each batch as JSON \
        ({"stream": key, "entries": [{"stream_id": ..., fields...}]}) to --url. Entries are acknowledged only after a \
        2xx; a failing batch is retried with back-off (0.5 s doubling to 30 s, or half of --claim-idle-seconds) until it goes through. Run several \
        forwarders with the same --group to share the work; entries a dead one read and never acknowledged are taken \
        over after --claim-idle-seconds. A receiver may see an entry twice (after such a take-over): deduplicate by \
        stream and stream_id. Secrets: the header from HERALD_FORWARD_HEADER and the signing key from \
        HERALD_FORWARD_HMAC_KEY or --hmac-key-file, never on the command line. Signed bodies carry \
        X-Herald-Signature: sha256=<hex HMAC-SHA256 of the body>.
        """,
        options: redisOptions + [
            .value("url", "url", "Webhook URL (http or https). Required."),
            .value("stream", "name", "results, dropped-tokens or dropped-channels (default: results and dropped-tokens).", repeatable: true),
            .value("group", "name", "Consumer group (default herald-forward); one per receiver."),
            .value("consumer", "name", "This forwarder's name in the group (default host-pid-random)."),
            .value("batch", "n", "Entries per POST (default 100, at most 10000)."),
            .value("timeout-ms", "ms", "Whole request timeout (default 10000)."),
            .value("connect-timeout-ms", "ms", "Connect timeout (default 5000)."),
            .value("ca-file", "file", "PEM CA bundle to trust instead of the system store."),
            .value("proxy", "url", "Proxy URL, e.g. http://proxy:3128."),
            .value("header", "text", "Extra header 'Name: value' (not for secrets: visible in ps).", repeatable: true),
            .value("hmac-key-file", "file", "Sign each body with the key in this file (its bytes, a final newline dropped)."),
            .value("claim-idle-seconds", "s", "Take over entries another forwarder left unacknowledged this long (default 60)."),
            .flag("from-start", "A new group starts at the oldest entry instead of new ones."),
        ],
        environment: [
            EnvironmentSpec("HERALD_FORWARD_HEADER", "A secret header 'Name: value' sent with every POST (e.g. Authorization: Bearer ...)."),
            EnvironmentSpec("HERALD_FORWARD_HMAC_KEY", "Key for the body signature (instead of --hmac-key-file)."),
        ],
        run: run)

    static func run(_ args: ParsedArguments) throws -> Int32 {
        let settings = try redisSettings(args)
        let url = try args.required("url")
        guard let scheme = URLComponents(string: url)?.scheme, scheme == "http" || scheme == "https" else {
            throw UsageError("--url must be an http:// or https:// URL")
        }
        var options = WebhookOptions(url: url)
        options.timeoutMilliseconds = try args.integer("timeout-ms", as: Int.self, in: 100...600_000) ?? options.timeoutMilliseconds
        options.connectTimeoutMilliseconds = try args.integer("connect-timeout-ms", as: Int.self, in: 100...600_000) ?? options.connectTimeoutMilliseconds
        options.caFile = args.value("ca-file")
        options.proxy = args.value("proxy")
        let environment = ProcessInfo.processInfo.environment
        options.headers = args.all("header") + [environment["HERALD_FORWARD_HEADER"]].compactMap { $0 }.filter { !$0.isEmpty }
        for header in options.headers where !header.contains(":") || header.contains("\n") || header.contains("\r") {
            throw UsageError("a header must read 'Name: value' on one line")
        }
        if let file = args.value("hmac-key-file") {
            guard var key = FileManager.default.contents(atPath: file).map(Array.init) else { throw UsageError("cannot read --hmac-key-file \(file)") }
            if key.last == UInt8(ascii: "\n") { key.removeLast() }
            options.signingKey = key
        } else if let key = environment["HERALD_FORWARD_HMAC_KEY"], !key.isEmpty {
            options.signingKey = Array(key.utf8)
        }
        if options.signingKey?.isEmpty == true { throw UsageError("the HMAC key is empty") }

        // One consumer group read covers its streams together, which a cluster allows only within one slot.
        if settings.shards.count > 1 {
            let first = settings.shards.shards[0].keys.prefix
            throw UsageError("herald forward follows one shard: run one per shard, e.g. --shards 1 --prefix '\(first)'")
        }
        var streams: [String] = []
        for name in args.all("stream").isEmpty ? ["results", "dropped-tokens"] : args.all("stream") {
            switch name {
            case "results": streams.append(settings.keys.results)
            case "dropped-tokens": streams.append(settings.keys.droppedTokens)
            case "dropped-channels": streams.append(settings.keys.droppedChannels)
            default: throw UsageError("--stream takes results, dropped-tokens or dropped-channels, got '\(name)'")
            }
        }
        var forward = ForwarderSettings(streams: streams, consumer: args.value("consumer") ?? defaultWorkerID())
        forward.group = args.value("group") ?? forward.group
        forward.batchSize = try args.integer("batch", as: Int.self, in: 1...10_000) ?? forward.batchSize
        if let idle = try args.integer("claim-idle-seconds", as: Int.self, in: 1...86_400) { forward.claimIdleMilliseconds = idle * 1000 }
        // A live forwarder touches its entries between retries; its longest wait (plus a request) must stay inside
        // the idle time, or another would take them over from it (only a duplicate, but needless).
        forward.retryMaxMilliseconds = min(forward.retryMaxMilliseconds, forward.claimIdleMilliseconds / 2)
        forward.retryInitialMilliseconds = min(forward.retryInitialMilliseconds, forward.retryMaxMilliseconds)
        forward.fromStart = args.flag("from-start")

        // JSON lines on stderr, like the worker's, the scheduler's and the dashboard's (docs/operations.md).
        let logger = Logger(component: "forward")
        let stop = StopFlag()
        let watcher = SignalWatcher(onFirst: { stop.set() })
        defer { withExtendedLifetime(watcher) {} }
        let client = try WebhookClient(options)
        let redis = try settings.connect()
        let forwarder = StreamForwarder(redis: redis, client: client, settings: forward, log: { logger.warning($0) },
                                        shouldStop: { stop.isSet })
        logger.info("forward started", ["consumer": .string(forward.consumer), "group": .string(forward.group),
                                        "streams": .string(streams.joined(separator: " ")), "url": .string(redactedURL(url))])
        try forwarder.run()
        let c = forwarder.counters
        logger.info("forward stopped", ["posts": .int(c.posted), "entries_acknowledged": .int(c.entriesAcknowledged),
                                        "failed_posts": .int(c.failedPosts)])
        return ExitCode.success
    }

    /// The URL without user info or query (either may hold a secret) for the log.
    static func redactedURL(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return "<url>" }
        components.user = nil
        components.password = nil
        components.query = nil
        return components.string ?? "<url>"
    }
}
