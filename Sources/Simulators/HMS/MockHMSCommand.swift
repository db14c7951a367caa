import Basics
import Foundation
import Settings

/// `herald mock-hms ...`: runs the Push Kit simulator until SIGTERM/SIGINT; SIGHUP reloads `--config`.
public enum MockHMSCommand {
    /// `herald mock-hms`: parsing, `--help` and usage errors as for every herald command.
    public static let command = SendAPICommand<MockHMSServer>.command

    /// Runs the command. `arguments` are the words after `mock-hms` (a leading "mock-hms" is skipped too).
    public static func main(arguments: [String]) -> Int32 { SendAPICommand<MockHMSServer>.main(arguments) }
}

/// Parsed `herald mock-hms` flags.
typealias MockHMSOptions = SendAPIOptions<MockHMSServer>

/// `herald mock-hms`'s own flags, parsed.
struct MockHMSFlags: CommandFlags {
    var apps: [MockHMSApp] = []
}

/// What `herald mock-hms` adds to the shared command: the apps, and the first app's secret in a file.
extension MockHMSServer: SendAPIServing {
    static let name = "mock-hms"
    static let abstract = "Run the Huawei Push Kit simulator (v1 messages:send and the OAuth token endpoint, TLS, scripted faults)."
    static let discussion = """
        An HTTPS server (HTTP/2 and HTTP/1.1) that answers like Push Kit's v1 messages:send and Huawei's OAuth 2.0
        token endpoint (client credentials), on one port. Writes the first app's client secret to a file and prints
        one JSON line when ready: {"app_id":...,"base_url":...,"ca_file":...,"client_secret_file":...,"host":...,
        "pid":...,"port":...,"send_url":...,"token_url":...}. Runs until SIGTERM/SIGINT (exit 0); SIGHUP reloads
        --config. See docs/mock-hms.md.
        Exit codes: 0 stopped by signal, 64 usage error, 69 cannot start, 73 cannot write, 78 bad config.
        """
    static let generatedFile = "hms-client-secret"
    static let configHolds = "Device state, faults and flow control"
    static let kept = "checked sends"
    static var settings: [Setting<MockHMSFlags>] {
        [
            .commandLine("app", "id:secret", repeatable: true, default: "app 10000001 with a generated secret",
                         "Accept this app id (digits, as Huawei's client ids) with this client secret (default: app 10000001 with a generated secret).") { args, flags throws(UsageError) in
                for word in args.all("app") {
                    let parts = word.split(separator: ":", maxSplits: 1).map(String.init)
                    guard parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64, parts[0].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), !parts[1].isEmpty else {
                        throw UsageError("--app takes id:secret, the id digits (Huawei's client_id)")
                    }
                    flags.apps.append(MockHMSApp(appId: parts[0], clientSecret: parts[1]))
                }
            },
        ]
    }
    static var settingsAfterConfig: [Setting<MockHMSFlags>] { [] }

    static func check(_ flags: MockHMSFlags, given args: ParsedArguments) throws(UsageError) {}

    static func configure(_ configuration: inout MockHMSConfiguration, from options: MockHMSOptions) throws(CommandFailure) {
        configuration.apps = options.provider.apps
    }

    /// The secret file goes beside the generated TLS files (or into a scratch directory with --cert).
    static func filesDirectory(_ options: MockHMSOptions) throws -> String? {
        try options.generateTLS ?? CommandSupport.temporaryDirectory(prefix: "herald-mock-hms")
    }

    /// The first app's secret in a file of its own (mode 0600): what a client's credentials file holds.
    func readyFields(directory: String?) throws(CommandFailure) -> [String: Any] {
        let secretFile = ((directory ?? "") as NSString).appendingPathComponent("hms-client-secret")
        guard FileManager.default.createFile(atPath: secretFile, contents: Data(app.clientSecret.utf8), attributes: [.posixPermissions: 0o600]) else {
            throw CommandFailure(text: "cannot write \(secretFile)", code: 73)
        }
        return ["app_id": app.appId, "client_secret_file": secretFile, "token_url": tokenURL, "base_url": baseURL, "send_url": sendURL()]
    }
}
