import APNs
import Foundation
import WebPush
import PushCore
import RedisQueue

/// Reads the JSON configuration and the environment overrides, collecting every problem instead of
/// stopping at the first, so `herald check-config` can list them all in one run.
public enum ConfigurationLoader {
    /// Environment variables that override the file, from the declarations (documented in docs/configuration.md).
    public static var environmentOverrides: [String] { Configuration.environmentSettings.compactMap(\.environment) }

    public static func load(path: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError) -> Configuration {
        try load(root: try path.map(readObject), label: path, environment: environment)
    }

    /// The same from a parsed file (`root`, nil for none); each of its problems starts with `label`.
    public static func load(root: [String: Any]?, label: String? = nil, environment: [String: String]) throws(ConfigurationError) -> Configuration {
        var configuration = Configuration()
        var problems: [String] = []
        if let root {
            let lead = label.map { "\($0): " } ?? ""
            problems += SettingsReader.apply(Configuration.settings, object: root, to: &configuration, at: "").map { lead + $0 }
        }
        problems += applyEnvironment(environment, to: &configuration)
        problems += validate(configuration)
        if !problems.isEmpty { throw ConfigurationError(problems) }
        return configuration
    }

    /// Only the `redis` section (plus environment overrides), for tools that do not send.
    public static func loadRedisOnly(path: String, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError) -> Configuration.RedisSettings {
        try loadSections(["redis"], path: path, environment: environment).redis
    }

    /// Only these sections of the file (the rest at their defaults, and unchecked), with the environment's
    /// overrides: for tools that need a setting or two beside Redis (`herald scheduled cancel`: `results`).
    public static func loadSections(_ sections: [String], path: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(ConfigurationError) -> Configuration {
        let root: [String: Any]
        do { root = try readObject(path) } catch { throw ConfigurationError(["cannot read configuration file \(path) as a JSON object"]) }
        var configuration = Configuration()
        let chosen = Configuration.settings.filter { setting in sections.contains { setting.key.hasPrefix($0 + ".") } }
        var object: [String: Any] = [:]
        for section in sections { object[section] = root[section] ?? [String: Any]() }
        var problems = SettingsReader.apply(chosen, object: object, to: &configuration, at: "")
        problems += applyEnvironment(environment, to: &configuration)
        if !problems.isEmpty { throw ConfigurationError(problems) }
        return configuration
    }

    /// The defaults with the environment's overrides (HERALD_REDIS_URL, HERALD_REDIS_TLS_*, ...), for tools run
    /// without a configuration file.
    public static func redisFromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError) -> Configuration.RedisSettings {
        var configuration = Configuration()
        let problems = applyEnvironment(environment, to: &configuration)
        if !problems.isEmpty { throw ConfigurationError(problems) }
        return configuration.redis
    }

    private static func readObject(_ path: String) throws(ConfigurationError) -> [String: Any] {
        guard let data = FileManager.default.contents(atPath: path) else { throw ConfigurationError(["cannot read configuration file \(path)"]) }
        let object: Any
        do { object = try JSONSerialization.jsonObject(with: data) } catch {
            throw ConfigurationError(["\(path): not valid JSON (\(error.localizedDescription))"])
        }
        guard let root = object as? [String: Any] else { throw ConfigurationError(["\(path): the top level must be a JSON object"]) }
        return root
    }

    /// Every declared override that is set; a set but empty variable counts only where the declaration says so.
    static func applyEnvironment(_ env: [String: String], to c: inout Configuration) -> [String] {
        Configuration.environmentSettings.compactMap { setting in
            guard let name = setting.environment, let value = env[name], let read = setting.readEnvironment else { return nil }
            return read(value, &c)
        }
    }

    /// Every declared setting's bounds (`Configuration.settings`, each naming its key), then the rules across
    /// settings: URLs, keys, topology, app names, exactly one credential per app. `check-config` and the worker's
    /// start both come here, so what one accepts the other runs.
    public static func validate(_ c: Configuration) -> [String] {
        var problems = Configuration.settings.flatMap { setting in
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
        for platform in Platform.allCases { problems += ProviderRegistry.provider(for: platform).problems(c) }
        if LogLevel(name: c.worker.logLevel) == nil { problems.append("worker.log_level must be debug, info, warning or error") }
        if c.apps.isEmpty { problems.append("no apps configured: add at least one entry to \"apps\"") }
        var seen = Set<String>()
        for (index, app) in c.apps.enumerated() {
            let label = app.name.isEmpty ? "apps[\(index)]" : "app '\(app.name)'"
            if app.name.isEmpty { problems.append("\(label): name is required") }
            if !seen.insert(app.name).inserted { problems.append("\(label): the name is used twice") }
            problems += ProviderRegistry.provider(for: app.platform).problems(app, label: label)
        }
        // A rule checked twice (the shard count is also checked alone, for the tools) is reported once.
        var reported = Set<String>()
        return problems.filter { reported.insert($0).inserted }
    }
}

/// Reads declared settings out of a parsed JSON object: each value at its dotted key, wrong types and bounds as
/// problems naming the key, and every key no declaration names as an unknown setting.
enum SettingsReader {
    static func apply<Root>(_ settings: [Setting<Root>], object: [String: Any], to root: inout Root, at prefix: String) -> [String] {
        var problems: [String] = []
        var known: [String: Set<String>] = [:]  // object path ("" or "redis.tls") -> its declared member names
        var notObjects = Set<String>()
        for setting in settings {
            let parts = setting.key.split(separator: ".").map(String.init)
            for depth in 0..<parts.count { known[parts[..<depth].joined(separator: "."), default: []].insert(parts[depth]) }
            var current = object
            var path: [String] = []
            var found = true
            for part in parts.dropLast() {
                path.append(part)
                guard let next = current[part] else { found = false; break }
                guard let inner = next as? [String: Any] else {
                    let name = prefix + path.joined(separator: ".")
                    if notObjects.insert(name).inserted { problems.append("\(name) must be an object") }
                    found = false
                    break
                }
                current = inner
            }
            guard found, let value = current[parts.last!] else { continue }
            if let problem = setting.read(value, &root, prefix + setting.key) { problems += problem.split(separator: "\n").map(String.init) }
        }
        problems += unknownKeys(object, known: known, path: "", at: prefix)
        return problems
    }

    /// Members of `object` (and of the declared objects inside it) that no declaration names. Keys starting
    /// with `//` are comments (JSON has none), so a shipped example can explain itself; a typo of a real key
    /// never starts that way, so it is still caught.
    static func unknownKeys(_ object: [String: Any], known: [String: Set<String>], path: String, at prefix: String) -> [String] {
        let names = known[path] ?? []
        var problems: [String] = []
        for key in object.keys.sorted() where !key.hasPrefix("//") {
            let child = path.isEmpty ? key : path + "." + key
            if !names.contains(key) {
                problems.append("unknown setting '\(prefix)\(child)'")
            } else if known[child] != nil, let inner = object[key] as? [String: Any] {
                problems += unknownKeys(inner, known: known, path: child, at: prefix)
            }
        }
        return problems
    }
}

/// Reads one app's object; the apps are a list of objects with credentials of their own, so they keep a reader
/// of their own (their rules are in `validate`).
struct AppReader {
    var problems: [String]

    mutating func readApp(_ app: [String: Any], index: Int) -> Configuration.AppSettings {
        let at = "apps[\(index)]."
        check(app, known: ["name", "bundle_id", "environments", "default_environment", "environment_fallback", "token", "certificate", "fcm", "webpush", "hms"], at: at)
        var settings = Configuration.AppSettings(name: "", bundleID: "")
        string(app, "name", at, &settings.name)
        string(app, "bundle_id", at, &settings.bundleID)
        strings(app, "environments", at, &settings.environments)
        if settings.environments.count == 1 { settings.defaultEnvironment = settings.environments[0] }
        string(app, "default_environment", at, &settings.defaultEnvironment)
        bool(app, "environment_fallback", at, &settings.environmentFallback)
        if let token = object(app["token"], at + "token") {
            check(token, known: ["team_id", "key_id", "key_file", "refresh_minutes"], at: at + "token.")
            var auth = Configuration.AppSettings.TokenAuth(teamID: "", keyID: "", keyFile: "")
            string(token, "team_id", at + "token.", &auth.teamID)
            string(token, "key_id", at + "token.", &auth.keyID)
            string(token, "key_file", at + "token.", &auth.keyFile)
            int(token, "refresh_minutes", at + "token.", &auth.refreshMinutes)
            settings.token = auth
        }
        if let cert = object(app["certificate"], at + "certificate") {
            check(cert, known: ["pem_file", "key_file", "pkcs12_file", "password", "password_env"], at: at + "certificate.")
            var auth = Configuration.AppSettings.CertificateAuth()
            optionalString(cert, "pem_file", at + "certificate.", &auth.pemFile)
            optionalString(cert, "key_file", at + "certificate.", &auth.keyFile)
            optionalString(cert, "pkcs12_file", at + "certificate.", &auth.pkcs12File)
            optionalString(cert, "password", at + "certificate.", &auth.password)
            optionalString(cert, "password_env", at + "certificate.", &auth.passwordEnv)
            settings.certificate = auth
        }
        if let fcm = object(app["fcm"], at + "fcm") {
            check(fcm, known: ["service_account_file"], at: at + "fcm.")
            var auth = Configuration.AppSettings.FCMAuth(serviceAccountFile: "")
            string(fcm, "service_account_file", at + "fcm.", &auth.serviceAccountFile)
            settings.fcm = auth
        }
        if let hms = object(app["hms"], at + "hms") {
            check(hms, known: ["app_id", "client_secret_file"], at: at + "hms.")
            var auth = Configuration.AppSettings.HMSAuth(appID: "", clientSecretFile: "")
            string(hms, "app_id", at + "hms.", &auth.appID)
            string(hms, "client_secret_file", at + "hms.", &auth.clientSecretFile)
            settings.hms = auth
        }
        if let webpush = object(app["webpush"], at + "webpush") {
            let path = at + "webpush."
            check(webpush, known: ["vapid_key", "vapid_key_file", "subject", "push_service_hosts", "allow_ip_literals", "allow_private_addresses"], at: path)
            var auth = Configuration.AppSettings.WebPushAuth(subject: "")
            string(webpush, "vapid_key", path, &auth.vapidKey)
            optionalString(webpush, "vapid_key_file", path, &auth.vapidKeyFile)
            string(webpush, "subject", path, &auth.subject)
            var hosts = auth.policy.hosts
            strings(webpush, "push_service_hosts", path, &hosts)
            var allowIP = false, allowPrivate = false
            bool(webpush, "allow_ip_literals", path, &allowIP)
            bool(webpush, "allow_private_addresses", path, &allowPrivate)
            auth.policy = PushServicePolicy(hosts: hosts, allowsIPLiterals: allowIP, allowsPrivateAddresses: allowPrivate)
            settings.webpush = auth
        }
        return settings
    }

    mutating func check(_ object: [String: Any], known: Set<String>, at path: String) {
        problems += SettingsReader.unknownKeys(object, known: ["": known], path: "", at: path)
    }

    mutating func object(_ value: Any?, _ path: String) -> [String: Any]? {
        guard let value else { return nil }
        guard let object = value as? [String: Any] else { problems.append("\(path) must be an object"); return nil }
        return object
    }

    mutating func string(_ o: [String: Any], _ key: String, _ at: String, _ out: inout String) {
        guard let value = o[key] else { return }
        if let s = value as? String { out = s } else { problems.append("\(at)\(key) must be a string") }
    }

    mutating func optionalString(_ o: [String: Any], _ key: String, _ at: String, _ out: inout String?) {
        guard let value = o[key] else { return }
        if value is NSNull { out = nil } else if let s = value as? String { out = s } else { problems.append("\(at)\(key) must be a string") }
    }

    mutating func strings(_ o: [String: Any], _ key: String, _ at: String, _ out: inout [String]) {
        guard let value = o[key] else { return }
        if let list = value as? [String] { out = list } else { problems.append("\(at)\(key) must be a list of strings") }
    }

    mutating func int(_ o: [String: Any], _ key: String, _ at: String, _ out: inout Int) {
        guard let value = o[key] else { return }
        if let n = value as? NSNumber, !isBoolean(n), n.doubleValue == n.doubleValue.rounded() {
            out = n.intValue
        } else {
            problems.append("\(at)\(key) must be a whole number")
        }
    }

    mutating func bool(_ o: [String: Any], _ key: String, _ at: String, _ out: inout Bool) {
        guard let value = o[key] else { return }
        if let n = value as? NSNumber, isBoolean(n) { out = n.boolValue } else { problems.append("\(at)\(key) must be true or false") }
    }
}
