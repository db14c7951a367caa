import Basics
import Foundation
import Settings

/// `herald mock-fcm ...`: runs the FCM simulator until SIGTERM/SIGINT; SIGHUP reloads `--config`.
public enum MockFCMCommand {
    /// `herald mock-fcm`: parsing, `--help` and usage errors as for every herald command.
    public static let command = SendAPICommand<MockFCMServer>.command

    /// Runs the command. `arguments` are the words after `mock-fcm` (a leading "mock-fcm" is skipped too).
    public static func main(arguments: [String]) -> Int32 { SendAPICommand<MockFCMServer>.main(arguments) }
}

/// Parsed `herald mock-fcm` flags.
typealias MockFCMOptions = SendAPIOptions<MockFCMServer>

/// `herald mock-fcm`'s own flags, parsed.
struct MockFCMFlags: CommandFlags {
    var project = "herald-mock"
    var serviceAccounts: [String] = []
    var serviceAccountDir: String?
    var deviceQuota = false
}

/// What `herald mock-fcm` adds to the shared command: the accounts, the per-device quota flag and its ready line.
extension MockFCMServer: SendAPIServing {
    static let name = "mock-fcm"
    static let abstract = "Run the FCM simulator (HTTP v1 messages:send and the OAuth token endpoint, TLS, scripted faults)."
    static let discussion = """
        An HTTPS server (HTTP/2 and HTTP/1.1) that answers like FCM HTTP v1 and Google's OAuth2 token endpoint.
        Writes a service-account JSON whose token_uri points at it, and prints one JSON line when ready:
        {"ca_file":...,"host":...,"pid":...,"port":...,"project_id":...,"service_account_file":...,"send_url":...}.
        Runs until SIGTERM/SIGINT (exit 0); SIGHUP reloads --config. See docs/mock-fcm.md.
        Exit codes: 0 stopped by signal, 64 usage error, 69 cannot start, 73 cannot write, 78 bad config or account.
        """
    static let generatedFile = "service-account.json"
    static let configHolds = "Device state, faults and quotas"
    static let kept = "accepted messages"
    static var settings: [Setting<MockFCMFlags>] {
        [
            .option("project", \.project, "id", "Project of the generated service account (default herald-mock)."),
            .repeated("service-account", \.serviceAccounts, "file", "Accept this service-account JSON instead of generating one; it is written out again (service-account.json, service-account-2.json, ...) with token_uri pointing here."),
            .option("service-account-dir", \.serviceAccountDir, "dir", as: CommandSupport.absolute, "Where to write the service-account JSON files (default: the --generate-tls directory)."),
        ]
    }
    static var settingsAfterConfig: [Setting<MockFCMFlags>] {
        [.option("device-quota", \.deviceQuota, "Enforce FCM's per-device limits (240 a minute, 5000 an hour to one token).")]
    }

    static func check(_ flags: MockFCMFlags, given args: ParsedArguments) throws(UsageError) {
        if !flags.serviceAccounts.isEmpty && args.value("project") != nil { throw UsageError("--project names the generated account; --service-account files carry their own") }
    }

    static func configure(_ configuration: inout MockFCMConfiguration, from options: MockFCMOptions) throws(CommandFailure) {
        configuration.projectID = options.provider.project
        if options.provider.deviceQuota { configuration.faults.deviceQuota = true }
        do {
            configuration.serviceAccounts = try options.provider.serviceAccounts.map { try MockServiceAccount.load(file: $0) }
        } catch { throw CommandFailure(text: "service account: \(error)", code: 78) }
        configuration.serviceAccountDirectory = options.provider.serviceAccountDir ?? options.generateTLS
    }

    /// The generated TLS files go to `--generate-tls` (else a temporary directory); the accounts' files go where
    /// `serviceAccountDirectory` says.
    static func filesDirectory(_ options: MockFCMOptions) throws -> String? { options.generateTLS }

    func readyFields(directory: String?) throws(CommandFailure) -> [String: Any] {
        ["project_id": projectID, "service_account_file": serviceAccountFile, "token_uri": tokenURI, "send_url": sendURL()]
    }
}
