import API
import APNs
import Basics
import Foundation
import HeraldProviders
import PushCore
import RedisQueue
import Worker

/// `herald check-config`: loads everything a worker would, signs a test token (APNs) or OAuth assertion (FCM)
/// per app, trades Huawei client credentials for a token, reports every problem.
enum CheckConfigCommand {
    static let command = Command(
        name: "check-config", abstract: "Load the configuration and credentials and report every problem at once.",
        options: [
            .value("config", "file", "Configuration file (or HERALD_CONFIG)."),
            .flag("skip-redis", "Do not try to reach Redis."),
        ],
        run: run)

    static func run(_ args: ParsedArguments) throws -> Int32 {
        let path = args.value("config") ?? ProcessInfo.processInfo.environment["HERALD_CONFIG"]
        guard let path else { throw UsageError("give --config FILE or set HERALD_CONFIG") }
        var warnings: [String] = []
        // Every problem at once (issue 54): the settings' problems, then the credentials of the apps that read,
        // proven as the worker would, rather than the credentials' only once the settings are right.
        let (configuration, found) = ConfigurationLoader.read(path: path)
        let settingProblems = found.all
        var problems = settingProblems
        // An app whose own settings have a problem is left to it (its credential cannot be read as written).
        for app in configuration.apps where !app.name.isEmpty && !found.hasProblems(app: app.name) {
            do {
                let credentials = try AppCredentials.load(app, configuration: configuration)
                print("ok   app '\(app.name)' " + (try credentials.checkedLine(configuration: configuration)))
            } catch {
                problems.append("app '\(app.name)': \(error)")
            }
            warnings += AppCredentials.warnings(app, configuration: configuration)
        }
        if !args.flag("skip-redis") && !settingProblems.contains(where: { $0.contains("redis.") }) {
            do {
                let redis = try configuration.redis.makeBlockingClient()
                _ = try redis.command(["PING"])
                print("ok   redis \(configuration.redis.redactedURL) answers")
            } catch {
                // Unreachable may be temporary (a warning); a refusal is the configuration's (an error).
                if isRefusal(error.description) { problems.append("redis: \(error)") } else { warnings.append("redis: \(error)") }
            }
        }
        // herald api raises its soft limit to the hard one: the hard limit is what max_connections must fit in.
        if let shortfall = FileDescriptorLimit.shortfall(maxConnections: configuration.api.maxConnections, limit: FileDescriptorLimit.hardLimit()) {
            warnings.append("open files here: \(shortfall)")
        }
        for warning in warnings { print("warn \(warning)") }
        for problem in problems { print("FAIL \(problem)") }
        if problems.isEmpty {
            print("configuration OK (\(warnings.count) warning\(warnings.count == 1 ? "" : "s"))")
            return ExitCode.success
        }
        print("\(problems.count) problem\(problems.count == 1 ? "" : "s") found")
        return ExitCode.configuration
    }

    /// What Redis (or a sentinel) said when it refused the connection for a reason only the configuration can
    /// change: credentials, the database, TLS verification, a master the sentinels do not know. A timeout or a
    /// refused TCP connection is not among them: that is unreachable, maybe for now.
    static let refusalMarks = ["AUTH refused", "HELLO refused", "SELECT refused", "WRONGPASS", "NOAUTH", "NOPERM",
                               "certificate verification failed", "hostname mismatch", "does not know a master named"]

    static func isRefusal(_ message: String) -> Bool { refusalMarks.contains { message.contains($0) } }
}
