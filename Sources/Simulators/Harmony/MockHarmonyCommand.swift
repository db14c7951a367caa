import Basics
import Foundation
import Settings

/// `herald mock-harmony ...`: runs the Push Kit v3 simulator until SIGTERM/SIGINT; SIGHUP reloads `--config`.
public enum MockHarmonyCommand {
    /// `herald mock-harmony`: parsing, `--help` and usage errors as for every herald command.
    public static let command = SendAPICommand<MockHarmonyServer>.command

    /// Runs the command. `arguments` are the words after `mock-harmony` (a leading "mock-harmony" is skipped too).
    public static func main(arguments: [String]) -> Int32 { SendAPICommand<MockHarmonyServer>.main(arguments) }
}

/// Parsed `herald mock-harmony` flags.
typealias MockHarmonyOptions = SendAPIOptions<MockHarmonyServer>

/// `herald mock-harmony`'s own flags, parsed.
struct MockHarmonyFlags: CommandFlags {
    var project = "101653523863785276"
    var serviceAccounts: [String] = []
}

/// What `herald mock-harmony` adds to the shared command: the service accounts, and the first one's key file.
extension MockHarmonyServer: SendAPIServing {
    static let name = "mock-harmony"
    static let abstract = "Run the HarmonyOS Push Kit v3 simulator (scenario-specific messages:send, JWT checked, TLS, scripted faults)."
    static let discussion = """
        An HTTPS server (HTTP/2 and HTTP/1.1) that answers like Push Kit v3's messages:send for HarmonyOS NEXT,
        checking each request's PS256 JWT against the project's service-account key. Writes the first account's key
        file and prints one JSON line when ready: {"base_url":...,"ca_file":...,"host":...,"key_id":...,"pid":...,
        "port":...,"project_id":...,"send_url":...,"service_account_file":...}. Runs until SIGTERM/SIGINT (exit 0);
        SIGHUP reloads --config. See docs/mock-harmony.md.
        Exit codes: 0 stopped by signal, 64 usage error, 69 cannot start, 73 cannot write, 78 bad config or account.
        """
    static let generatedFile = "harmony-service-account.json"
    static let configHolds = "Device state, faults and flow control"
    static let kept = "checked sends"
    static var settings: [Setting<MockHarmonyFlags>] {
        [
            .option("project", \.project, "id", "Project of the generated service account (default 101653523863785276)."),
            .repeated("service-account", \.serviceAccounts, "file", "Accept JWTs of this Huawei service-account key file (its project_id) instead of generating one."),
        ]
    }
    static var settingsAfterConfig: [Setting<MockHarmonyFlags>] { [] }

    static func check(_ flags: MockHarmonyFlags, given args: ParsedArguments) throws(UsageError) {
        if !flags.serviceAccounts.isEmpty && args.value("project") != nil { throw UsageError("--project names the generated account; --service-account files carry their own") }
    }

    static func configure(_ configuration: inout MockHarmonyConfiguration, from options: MockHarmonyOptions) throws(CommandFailure) {
        configuration.defaultProjectID = options.provider.project
        do {
            configuration.accounts = try options.provider.serviceAccounts.map { try MockHarmonyAccount.load(file: $0) }
        } catch { throw CommandFailure(text: "service account: \(error)", code: 78) }
    }

    /// The key file goes beside the generated TLS files (or into a scratch directory with --cert).
    static func filesDirectory(_ options: MockHarmonyOptions) throws -> String? {
        try options.generateTLS ?? CommandSupport.temporaryDirectory(prefix: "herald-mock-harmony")
    }

    /// The first account's key file (mode 0600): what a client's `service_account_file` names.
    func readyFields(directory: String?) throws(CommandFailure) -> [String: Any] {
        let file = ((directory ?? "") as NSString).appendingPathComponent(Self.generatedFile)
        do { try account.write(to: file) } catch { throw CommandFailure(text: "cannot write \(file): \(error)", code: 73) }
        return ["project_id": account.projectID, "key_id": account.keyID, "service_account_file": file, "base_url": baseURL, "send_url": sendURL()]
    }
}
