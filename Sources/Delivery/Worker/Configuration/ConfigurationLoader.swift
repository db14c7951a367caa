import Foundation
import PushCore
import RedisQueue

/// Reads the JSON configuration and the environment overrides, collecting every problem instead of
/// stopping at the first, so `herald check-config` can list them all in one run. `providers`: the composition
/// root's list (`heraldProviders`), one per `Platform` case in `allCases` order; the loaded configuration carries it.
public enum ConfigurationLoader {
    /// Environment variables that override the file, from the declarations (documented in docs/configuration.md).
    public static func environmentOverrides(_ providers: [any PushProvider.Type]) -> [String] {
        Configuration.environmentSettings(providers).compactMap(\.environment)
    }

    /// `ignoring`: top-level sections a process does not use, neither read nor checked (the worker's `api`: a
    /// reload is not refused for a key the API alone reads, issue 54); they stay at their defaults.
    public static func load(path: String?, providers: [any PushProvider.Type],
                            environment: [String: String] = ProcessInfo.processInfo.environment,
                            ignoring: Set<String> = []) throws(ConfigurationError) -> Configuration {
        try load(root: try path.map(readObject), label: path, providers: providers, environment: environment, ignoring: ignoring)
    }

    /// The same from a parsed file (`root`, nil for none); each of its problems starts with `label`.
    public static func load(root: [String: Any]?, label: String? = nil, providers: [any PushProvider.Type],
                            environment: [String: String], ignoring: Set<String> = []) throws(ConfigurationError) -> Configuration {
        let (configuration, problems) = read(root: root, label: label, providers: providers, environment: environment, ignoring: ignoring)
        if !problems.all.isEmpty { throw ConfigurationError(problems.all) }
        return configuration
    }

    /// The configuration as far as it reads, with every problem, for `check-config`: it goes on to prove the
    /// credentials of what did read, so one run shows the settings' problems and the credentials' together.
    public static func read(path: String, providers: [any PushProvider.Type],
                            environment: [String: String] = ProcessInfo.processInfo.environment) -> (Configuration, ConfigurationProblems) {
        do {
            return read(root: try readObject(path), label: path, providers: providers, environment: environment)
        } catch {
            return (Configuration(providers: checked(providers)), ConfigurationProblems(all: error.problems))
        }
    }

    static func read(root: [String: Any]?, label: String?, providers: [any PushProvider.Type],
                     environment: [String: String], ignoring: Set<String> = []) -> (Configuration, ConfigurationProblems) {
        var configuration = Configuration(providers: checked(providers))
        var problems: [String] = []
        if let root {
            let lead = label.map { "\($0): " } ?? ""
            let read = root.filter { !ignoring.contains($0.key) }
            problems += SettingsReader.apply(Configuration.settings(providers), object: read, to: &configuration, at: "").map { lead + $0 }
        }
        problems += applyEnvironment(environment, to: &configuration, ignoring: ignoring)
        let rules = validated(configuration)
        return (configuration, ConfigurationProblems(all: problems + rules.all, apps: rules.apps))
    }

    /// The list as given, once held to `Platform.allCases`: a provider per case at its `slot`, which intake's lookup
    /// (an index) relies on. A wrong list is the composition root's bug, not the file's.
    static func checked(_ providers: [any PushProvider.Type]) -> [any PushProvider.Type] {
        precondition(providers.map { $0.platform } == Platform.allCases, "the providers must be one per Platform case, in allCases order")
        return providers
    }

    /// Only the `redis` section (plus environment overrides), for tools that do not send.
    public static func loadRedisOnly(path: String, providers: [any PushProvider.Type],
                                     environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError) -> Configuration.RedisSettings {
        try loadSections(["redis"], path: path, providers: providers, environment: environment).redis
    }

    /// Only these sections of the file (the rest at their defaults, and unchecked), with the environment's
    /// overrides: for tools that need a setting or two beside Redis (`herald scheduled cancel`: `results`).
    public static func loadSections(_ sections: [String], path: String, providers: [any PushProvider.Type],
                                    environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError) -> Configuration {
        let root: [String: Any]
        do { root = try readObject(path) } catch { throw ConfigurationError(["cannot read configuration file \(path) as a JSON object"]) }
        var configuration = Configuration(providers: checked(providers))
        let chosen = Configuration.settings(providers).filter { setting in sections.contains { setting.key.hasPrefix($0 + ".") } }
        var object: [String: Any] = [:]
        for section in sections { object[section] = root[section] ?? [String: Any]() }
        var problems = SettingsReader.apply(chosen, object: object, to: &configuration, at: "")
        problems += applyEnvironment(environment, to: &configuration)
        if !problems.isEmpty { throw ConfigurationError(problems) }
        return configuration
    }

    /// The defaults with the environment's overrides (HERALD_REDIS_URL, HERALD_REDIS_TLS_*, ...), for tools run
    /// without a configuration file.
    public static func redisFromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment,
                                            providers: [any PushProvider.Type]) throws(ConfigurationError) -> Configuration.RedisSettings {
        var configuration = Configuration(providers: checked(providers))
        let problems = applyEnvironment(environment, to: &configuration)
        if !problems.isEmpty { throw ConfigurationError(problems) }
        return configuration.redis
    }

    private static func readObject(_ path: String) throws(ConfigurationError) -> [String: Any] {
        guard let data = FileManager.default.contents(atPath: path) else { throw ConfigurationError(["cannot read configuration file \(path)"]) }
        // Strict JSON first (issue 52: a trailing comma passed, and an error named no place): the scanner the jobs
        // are read with, its error at a line and column.
        var bytes = [UInt8](data)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        do {
            _ = try bytes.withUnsafeBufferPointer { buffer throws(JSONScanError) in try JSONScanner.validate(buffer) }
        } catch {
            let (line, column) = JSONScanError.lineAndColumn(of: error.offset ?? bytes.count, in: bytes)
            throw ConfigurationError(["\(path): not valid JSON at line \(line), column \(column): \(error)"])
        }
        let object: Any
        do { object = try JSONSerialization.jsonObject(with: data) } catch {
            throw ConfigurationError(["\(path): not valid JSON (\(error.localizedDescription))"])
        }
        guard let root = object as? [String: Any] else { throw ConfigurationError(["\(path): the top level must be a JSON object"]) }
        return root
    }

    /// Every declared override that is set; a set but empty variable counts only where the declaration says so.
    /// `ignoring`: sections whose overrides are not applied, by the declared key's section (its first part), not by
    /// the variable's name (`HERALD_LOG_LEVEL` is `worker.log_level`'s).
    static func applyEnvironment(_ env: [String: String], to c: inout Configuration, ignoring: Set<String> = []) -> [String] {
        Configuration.environmentSettings(c.providers).compactMap { setting in
            guard let name = setting.environment, let value = env[name], let read = setting.readEnvironment else { return nil }
            if !ignoring.isEmpty, let section = setting.key.split(separator: ".").first, ignoring.contains(String(section)) { return nil }
            return read(value, &c, setting.key)
        }
    }

    /// Every declared setting's bounds (`Configuration.settings`, each naming its key), then the rules across
    /// settings: URLs, keys, topology, app names, exactly one credential per app. `check-config` and the worker's
    /// start both come here, so what one accepts the other runs.
    public static func validate(_ c: Configuration) -> [String] { validated(c).all }

    /// `validate`'s problems, with each app's own (its rules: name, credential block) grouped by its name.
    static func validated(_ c: Configuration) -> ConfigurationProblems {
        var problems = Configuration.settings(c.providers).flatMap { setting in
            setting.check(c, setting.key).map { $0.split(separator: "\n").map(String.init) } ?? []
        }
        problems += Configuration.retryProblems(c.retry, [], at: "retry.")
        do {
            _ = try RedisURL(parsing: c.redis.url)
        } catch {
            // The parse error names the URL with its password redacted.
            problems.append("redis.url: \(error.description)")
        }
        if c.redis.mode == .cluster { problems += c.redis.clusterProblems() }
        problems += c.redis.tls.problems(url: c.redis.url)
        if !c.metrics.listen.isEmpty && ListenAddress(c.metrics.listen) == nil {
            problems.append("metrics.listen must be host:port, [v6]:port or :port (empty turns it off), got '\(c.metrics.listen)'")
        }
        if c.redis.prefix.isEmpty { problems.append("redis.prefix must not be empty") }
        if !QueueKeys.isValid(c.redis.prefix) { problems.append("redis.prefix may not contain quotes, backslashes or control characters") }
        for queue in c.redis.queues where queue.isEmpty || !QueueKeys.isValid(queue) {
            problems.append("redis.queues: '\(queue)' is not a usable key (empty, or quotes, backslashes, control characters)")
        }
        if let id = c.worker.id, id.isEmpty || !QueueKeys.isValid(id) {
            problems.append("worker.id '\(id)' may not be empty or contain quotes, backslashes or control characters")
        }
        problems += c.redis.shardProblems()
        problems += c.redis.topologyProblems()
        for provider in c.providers { problems += provider.problems(c) }
        if LogLevel(name: c.worker.logLevel) == nil { problems.append("worker.log_level must be debug, info, warning or error") }
        if c.apps.isEmpty { problems.append("no apps configured: add at least one entry to \"apps\"") }
        var seen = Set<String>()
        var appProblems: [(name: String, problems: [String])] = []
        for (index, app) in c.apps.enumerated() {
            let label = app.name.isEmpty ? "apps[\(index)]" : "app '\(app.name)'"
            var own: [String] = []
            if app.name.isEmpty { own.append("\(label): name is required") }
            if !seen.insert(app.name).inserted { own.append("\(label): the name is used twice") }
            own += ProviderRegistry.credentialProblems(app, label: label, providers: c.providers)
            own += c.providers.provider(for: app.platform).problems(app, label: label)
            appProblems.append((app.name, own))
        }
        // A rule checked twice (the shard count is also checked alone, for the tools) is reported once.
        var reported = Set<String>()
        var result = ConfigurationProblems(all: problems.filter { reported.insert($0).inserted })
        for (name, own) in appProblems {
            let new = own.filter { reported.insert($0).inserted }
            result.all += new
            if !own.isEmpty { result.apps[name, default: []] += new }
        }
        return result
    }
}

/// What `ConfigurationLoader.read` found wrong: every problem, and each app's own by its name, so a tool can leave
/// an app whose settings are wrong to them (`check-config` does not prove its credential) without reading texts.
public struct ConfigurationProblems: Sendable, Equatable {
    /// Every problem once, in the order found: the file's, the environment's, then the rules'.
    public var all: [String]
    /// The problems of each app's own rules (its name, its credential block: those labelled `app '<name>'`), by
    /// its name; two apps of one name share an entry. An app with none has no entry.
    public var apps: [String: [String]]

    public init(all: [String] = [], apps: [String: [String]] = [:]) {
        self.all = all
        self.apps = apps
    }

    /// True when the app named `name` has a problem of its own.
    public func hasProblems(app name: String) -> Bool { apps[name] != nil }
}

/// Reads one app's object: the keys every app has, then its provider's credential block, each declared
/// (`Configuration.appKeys`, the providers' `credentialBlocks`); their rules across keys are in `validate`.
enum AppReader {
    static func settings(_ providers: [any PushProvider.Type]) -> [Setting<Configuration.AppSettings>] {
        Configuration.appKeys + providers.flatMap { $0.credentialBlocks }
    }

    static func readApp(_ app: [String: Any], index: Int, providers: [any PushProvider.Type], problems: inout [String]) -> Configuration.AppSettings {
        var settings = Configuration.AppSettings(name: "", bundleID: "")
        problems += SettingsReader.apply(Self.settings(providers), object: app, to: &settings, at: "apps[\(index)].")
        // One environment is also the default, unless the app names another (which `validate` refuses).
        if settings.environments.count == 1 && app["default_environment"] == nil { settings.defaultEnvironment = settings.environments[0] }
        return settings
    }
}
