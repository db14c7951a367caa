import Basics
import DeviceRegistry
import Foundation
import Glibc
import RedisQueue

/// `herald campaigns create|get|list|pause|resume|cancel`: audience sends (docs/campaigns.md) from a shell, on the
/// blocking store over every shard. The fan-out itself is `herald scheduler`'s.
enum CampaignsCommand {
    static let command = Command(
        CommandSpec(
            usageName: "herald campaigns", abstract: "Create, show, pause, resume or cancel campaigns (audience sends).",
            discussion: """
            create reads a campaign document ({"id", "app", "audience": {"user"|"topic": name} or {"topics": [names]} or \
            {"app": app}, "notification", "queue", "rate_per_second", "finish_within"|"finish_by"}) from --file (- for \
            standard input) and creates it, or prints the existing one when the id \
            holds the same document (a create is idempotent by id; another document is refused id_taken). get prints a campaign's state and counters, list every running \
            or paused one; pause, resume and cancel act on one. A running herald scheduler fans it out.
            Exits 0, 1 when the campaign does not exist or the document was refused (or list left out a campaign \
            whose key holds the wrong type, named on stderr), 64 on usage errors.

            Examples:
              herald campaigns create --file goal.json
              herald campaigns get goal-17
              herald campaigns cancel goal-17
            """,
            positionals: "create|get|list|pause|resume|cancel [id]",
            options: redisOptions + [.value("file", "path", "create: the campaign document (- for standard input).")]),
        run: run)

    enum Verb: String { case create, get, list, pause, resume, cancel }

    static func run(_ args: ParsedArguments) throws -> Int32 {
        guard let raw = args.positionals.first, let verb = Verb(rawValue: raw) else {
            throw UsageError("give one of create, get, list, pause, resume, cancel")
        }
        let operands = Array(args.positionals.dropFirst())
        switch verb {
        case .create, .list: guard operands.isEmpty else { throw UsageError("\(raw) takes no operands") }
        default: guard operands.count == 1 else { throw UsageError("\(raw) takes a campaign id") }
        }
        var campaign: Campaign?
        if verb == .create {
            guard let path = args.value("file") else { throw UsageError("create needs --file") }
            let data = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: path))
            do { campaign = try Campaign.parse(Array(data)) } catch {
                printError("herald campaigns: \(error.code): \(error.description)")
                return ExitCode.failure
            }
        }
        let settings = try redisSettings(args)
        let redis = try settings.connect()
        defer { redis.close() }
        let store = Campaigns(redis: redis, shards: settings.shards)
        var status: CampaignStatus?
        switch verb {
        case .create:
            do { try store.create(campaign!) } catch let error as DeviceError {
                printError("herald campaigns: \(error.code): \(error.description)")
                return ExitCode.failure
            }
            status = try store.status(campaign!.id)
        case .list:
            let open = try store.openStatuses()
            for status in open.statuses { print(DevicesCommand.jsonLine(status.json)) }
            // A key of the wrong type costs its campaign only: the others are listed, the key named, the exit 1.
            for problem in open.keyErrors { printError("herald campaigns: \(problem) (its campaigns left out)") }
            return open.keyErrors.isEmpty ? ExitCode.success : ExitCode.failure
        case .get: status = try store.status(operands[0])
        case .pause: status = try store.control(operands[0], .pause)
        case .resume: status = try store.control(operands[0], .resume)
        case .cancel: status = try store.control(operands[0], .cancel)
        }
        guard let status else {
            printError("herald campaigns: no campaign \(operands.first ?? "")")
            return ExitCode.failure
        }
        print(DevicesCommand.jsonLine(status.json))
        return ExitCode.success
    }
}
