import APNs
import Basics
import Foundation
import HeraldProviders
import Glibc
import PushCore
import Reactor
import RedisQueue
import Worker

/// Loads the configuration from `--config` or `HERALD_CONFIG`, with environment overrides.
/// `ignoring`: sections this process does not read (see `ConfigurationLoader.load`).
func loadConfiguration(_ args: ParsedArguments, environment: [String: String] = ProcessInfo.processInfo.environment,
                       ignoring: Set<String> = []) throws -> Configuration {
    let path = args.value("config") ?? environment["HERALD_CONFIG"]
    return try ConfigurationLoader.load(path: path, environment: environment, ignoring: ignoring)
}

/// Redis settings for commands that need only Redis: `--redis` and `--prefix` flags, else the config file,
/// else the environment and defaults (no apps required).
func redisSettings(_ args: ParsedArguments) throws -> ToolRedis {
    var settings = Configuration.RedisSettings()
    let path = args.value("config") ?? ProcessInfo.processInfo.environment["HERALD_CONFIG"]
    if let path {
        // Tools that only read Redis need only the redis section; the apps may be incomplete here.
        settings = try ConfigurationLoader.loadRedisOnly(path: path)
    } else {
        settings = try ConfigurationLoader.redisFromEnvironment()
    }
    if let url = args.value("redis") { settings.url = url }
    if let prefix = args.value("prefix") { settings.prefix = prefix }
    if let shards = try args.integer("shards", as: Int.self, in: 1...Configuration.RedisSettings.maxShards) {
        settings.shards = shards
        settings.shardPrefixes = []
    }
    do { _ = try RedisURL(parsing: settings.url) } catch { throw UsageError(error.description) }
    let keys: QueueKeys
    do { keys = try QueueKeys(prefix: settings.prefix) } catch { throw UsageError(error.description) }
    for queue in settings.queueKeys where !QueueKeys.isValid(queue) {
        throw UsageError("'\(queue)' is not a usable queue key (quotes, backslashes or control characters)")
    }
    if let problem = settings.shardProblems().first { throw UsageError(problem) }
    let shards: QueueShards
    do { shards = try settings.queueShards() } catch { throw UsageError(error.description) }
    return ToolRedis(settings: settings, keys: keys, queues: settings.queueKeys, shards: shards, configured: path != nil)
}

/// A tool's Redis: where and how to connect (`settings`), the keys, the queues in priority order, and every
/// shard's keys and queues (`keys` and `queues` are shard 0's when there is one shard, the base prefix's else).
struct ToolRedis {
    let settings: Configuration.RedisSettings
    let keys: QueueKeys
    let queues: [String]
    let shards: QueueShards
    /// The queues came from a configuration file (the workers'), not from defaults: a queue not among them is one
    /// no worker reads.
    let configured: Bool

    /// For log lines (no password).
    var description: String { settings.redactedURL }

    func connect(connectTimeoutMilliseconds: Int = 2_000, commandTimeoutMilliseconds: Int = 10_000) throws(RedisError) -> any BlockingRedisCommands {
        try settings.makeBlockingClient(connectTimeoutMilliseconds: connectTimeoutMilliseconds, commandTimeoutMilliseconds: commandTimeoutMilliseconds)
    }
}

let redisOptions: [OptionSpec] = [
    .value("config", "file", "Configuration file (or HERALD_CONFIG); only its redis section is used."),
    .value("redis", "url", "Redis URL (overrides the configuration), e.g. redis://127.0.0.1:6379/0 or rediss://host:6380/0 (TLS)."),
    .value("prefix", "prefix", "Key prefix (default herald)."),
    .value("shards", "n", "Shards, each its own key set {<prefix>:<i>} (default 1, or redis.shards)."),
]

/// A unique worker id: host, pid and a random suffix.
func defaultWorkerID() -> String {
    var name = [CChar](repeating: 0, count: 256)
    gethostname(&name, 255)
    let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    let safeHost = host.isEmpty ? "host" : host.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "-" }.reduce("") { $0 + String($1) }
    return "\(safeHost)-\(getpid())-\(String(UInt32.random(in: 0...UInt32.max), radix: 36))"
}

/// Exits at once with 130 (the second signal): output streams are flushed, but no atexit handler runs while loop
/// threads are still busy. (OpenSSL's own handler, which freed its locks under a loop making a TLS context, a
/// SEGV in CRYPTO_THREAD_unlock under ThreadSanitizer, is off for every exit: `keepOpenSSLUntilExit`.)
func exitAtOnce() -> Never {
    fflush(nil)
    _exit(130)
}

/// Delivers SIGTERM/SIGINT as calls on a dispatch queue; the first asks for a graceful stop, the second exits.
/// Serves until SIGTERM or SIGINT: then `stop` runs on `loop` and must end by stopping it; a second signal exits
/// at once. The main thread of `herald api` and `herald dashboard`.
func serveUntilSignalled(_ loop: EventLoop, stop: @escaping @Sendable () -> Void) {
    let watcher = SignalWatcher(onFirst: { loop.execute(stop) }, onSecond: { exitAtOnce() })
    while !loop.waitUntilStopped(timeoutSeconds: 3600) {}
    withExtendedLifetime(watcher) {}
}

final class SignalWatcher {
    private var sources: [DispatchSourceSignal] = []

    convenience init(onFirst: @escaping @Sendable () -> Void, onSecond: @escaping @Sendable () -> Void = { exitAtOnce() }) {
        self.init(onSignal: { _ in onFirst() }, onSecond: { _ in onSecond() })
    }

    /// The handlers are given the signal's number.
    init(onSignal onFirst: @escaping @Sendable (Int32) -> Void, onSecond: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "herald.signals")
        let received = LockedValue(0)
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            // Signals that arrive before the handler runs are merged into one event, counted in `data`: two
            // quick SIGTERMs must still count as two. The handler holds its source, and both live as long as
            // the process: cancelling them at the end would free what the handlers hold (the worker's pipelines)
            // on the signal queue while the main thread exits (TSan: OpenSSL freed under atexit cleanup).
            source.setEventHandler {
                let signals = max(1, Int(source.data))
                let count = received.withLock { count -> Int in
                    count += signals
                    return count
                }
                if count == 1 { onFirst(sig) } else { onSecond(sig) }
            }
            source.resume()
            sources.append(source)
        }
    }
}

/// Prints a JSON object on stdout, one line.
func printJSON(_ object: [String: Any]) {
    if let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]),
       let text = String(data: data, encoding: .utf8) {
        print(text)
    }
}

/// A duration flag renamed to carry its unit in its name (`--timeout` to `--timeout-ms`, as every other duration
/// flag does): the old name still works but says on stderr that it is deprecated, and giving both is a usage
/// error. Returns the name to read the value by.
func renamedFlag(_ args: ParsedArguments, _ name: String, deprecated old: String) throws(UsageError) -> String {
    guard args.value(old) != nil else { return name }
    if args.value(name) != nil { throw UsageError("--\(old) is the deprecated name of --\(name): give only --\(name)") }
    printError("herald: --\(old) is deprecated; use --\(name)")
    return old
}
