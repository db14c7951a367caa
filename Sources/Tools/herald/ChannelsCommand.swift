import APNs
import Basics
import PushCore
import Worker

/// `herald channels create|get|delete|list`: broadcast channels of a configured app on Apple's channel-management
/// host of one environment, with the app's credential. One JSON line per call.
enum ChannelsCommand {
    static let command = Command(
        CommandSpec(
            usageName: "herald channels", abstract: "Create, read, delete or list an app's broadcast channels (Live Activities).",
            discussion: """
            Runs one call on the channel-management host of the environment (apns.channels_production_url or
            apns.channels_sandbox_url; api-manage-broadcast[.sandbox].push.apple.com) with the app's key from --config,
            and prints the answer as one JSON line. create prints the new channel ID exactly as Apple sent it in
            apns-channel-id: give that to devices and put it in broadcast jobs as "channel". Exits 0 on success,
            1 when Apple refused or did not answer, 65 when the call is refused locally, 64 on usage errors.
            Examples: herald channels create --config herald.json --app scores --environment sandbox --storage none
                      herald channels delete --config herald.json --app scores --environment sandbox --channel <id>
            """,
            positionals: "create|get|delete|list",
            options: [
                .value("config", "file", "Configuration file with the app's credentials (or HERALD_CONFIG)."),
                .value("app", "name", "App from the configuration (default: the only one)."),
                .value("environment", "env", "production or sandbox (default: the app's default environment)."),
                .value("channel", "id", "get and delete: the channel ID."),
                .value("storage", "policy", "create: none (No Messages Stored) or most-recent (default: most-recent)."),
                .value("request-id", "uuid", "apns-request-id to send (Apple makes one otherwise)."),
                .value("url", "https://host:port", "Use this channel-management host instead of the configured one."),
                .value("timeout-ms", "ms", "Request timeout (default apns.request_timeout_ms)."),
                .value("timeout", "ms", "Deprecated name of --timeout-ms."),
            ]),
        run: run)

    static func run(_ args: ParsedArguments) throws -> Int32 {
        guard args.positionals.count == 1, let verb = args.positionals.first else {
            throw UsageError("give one of create, get, delete, list")
        }
        let operation: ChannelManagement.Operation
        switch verb {
        case "create":
            let raw = args.value("storage") ?? "most-recent"
            guard let policy = MessageStoragePolicy(name: raw) else { throw UsageError("--storage must be none or most-recent") }
            operation = .create(policy)
        case "get", "delete":
            guard let channel = args.value("channel") else { throw UsageError("\(verb) needs --channel") }
            operation = verb == "get" ? .read(channelID: channel) : .delete(channelID: channel)
        case "list":
            operation = .list
        default:
            throw UsageError("unknown channels command '\(verb)'; expected create, get, delete or list")
        }
        let timeout = try args.int(renamedFlag(args, "timeout-ms", deprecated: "timeout"))
        if let timeout, !(100...3_600_000).contains(timeout) { throw UsageError("--timeout-ms must be 100...3600000") }
        let configuration = try loadConfiguration(args)
        let directory = AppDirectory(configuration.apps)
        let app = configuration.apps[try directory.index(app: args.value("app"), topic: nil)]
        let environment: APNsEnvironment
        if let raw = args.value("environment") {
            guard let env = APNsEnvironment(rawValue: raw) else { throw UsageError("--environment must be production or sandbox") }
            environment = env
        } else {
            environment = APNsEnvironment(rawValue: app.defaultEnvironment) ?? .production
        }
        let result = try ChannelManager.perform(
            operation, app: app, environment: environment, apns: configuration.apns, url: args.value("url"),
            requestID: args.value("request-id"), timeoutMilliseconds: timeout)
        var object: [String: Any] = ["app": app.name, "environment": environment.rawValue, "bundle_id": app.bundleID]
        switch result {
        case .failure(.invalid(let failure)):
            object["outcome"] = "rejected"
            object["reason"] = failure.reason.rawValue
            object["message"] = failure.message
            printJSON(object)
            return ExitCode.dataError
        case .failure(let failure):
            object["outcome"] = "failed"
            object["reason"] = failure.description
            printJSON(object)
            return ExitCode.failure
        case .success(let reply):
            if let id = reply.requestID { object["apns_request_id"] = id }
            switch reply.answer {
            case .created(let id):
                object["outcome"] = "created"
                object["channel"] = id
                if case .create(let policy) = operation { object["message_storage_policy"] = policy.rawValue }
            case .channel(let policy):
                object["outcome"] = "found"
                object["channel"] = args.value("channel") ?? ""
                object["message_storage_policy"] = policy.rawValue
                object["push_type"] = "LiveActivity"
            case .deleted:
                object["outcome"] = "deleted"
                object["channel"] = args.value("channel") ?? ""
            case .channels(let ids):
                object["outcome"] = "listed"
                object["channels"] = ids
            case .failed(let status, let reason):
                object["outcome"] = "failed"
                object["status"] = status
                if let reason { object["reason"] = reason.rawValue }
                printJSON(object)
                return ExitCode.failure
            }
            printJSON(object)
            return ExitCode.success
        }
    }
}
