import Basics
import Foundation
import RedisQueue

/// `herald queue list|pause|resume|purge`: the configured queues of every shard.
enum QueueCommand {
    static let command = Command(
        CommandSpec(
            usageName: "herald queue", abstract: "List, pause, resume or purge the configured job queues.",
            discussion: """
            list prints each configured queue (redis.queues) with the jobs waiting in it over every shard and \
            whether it is paused. pause keeps the pause in Redis (<prefix>:paused of every shard): every worker \
            stops taking jobs from that queue at its next claim (well within a second), jobs already claimed finish, \
            producers can still push; resume undoes it. purge removes every job waiting in the queue (no result \
            entry is written for them; claimed jobs are not touched). pause, resume and purge need --queue or \
            --all; with --dry-run they say what they would do and change nothing.
            Exits 0, 64 on usage errors.

            Examples:
              herald queue list
              herald queue pause --queue herald:queue:bulk
              herald queue purge --queue herald:queue:bulk --dry-run
            """,
            positionals: "list|pause|resume|purge",
            options: redisOptions + [
                .value("queue", "key", "A configured queue (repeatable).", repeatable: true),
                .flag("all", "pause, resume, purge: every configured queue."),
                .flag("dry-run", "pause, resume, purge: say what would change; change nothing."),
                .flag("json", "list: one JSON object per queue."),
            ]),
        run: run)

    enum Verb: String { case list, pause, resume, purge }

    static func run(_ args: ParsedArguments) throws -> Int32 {
        guard args.positionals.count == 1, let raw = args.positionals.first else { throw UsageError("give one of list, pause, resume, purge") }
        guard let verb = Verb(rawValue: raw) else { throw UsageError("unknown queue command '\(raw)'; expected list, pause, resume or purge") }
        let settings = try redisSettings(args)
        let configured = settings.shards.configuredQueues
        var queues = args.all("queue")
        for queue in queues where !configured.contains(queue) {
            throw UsageError("--queue \(queue) is not one of the configured queues (\(configured.joined(separator: ", ")))")
        }
        if args.flag("all") { queues = configured }
        if verb != .list && queues.isEmpty { throw UsageError("give --queue (repeatable) or --all") }
        let redis = try settings.connect()
        let states = try QueueAdmin.states(redis: redis, shards: settings.shards)
        switch verb {
        case .list:
            for state in states where queues.isEmpty || queues.contains(state.queue) {
                if args.flag("json") {
                    let object: [String: Any] = ["queue": state.queue, "length": state.length, "paused": state.paused, "partly_paused": state.partlyPaused]
                    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
                    print(String(decoding: data, as: UTF8.self))
                } else {
                    print("\(state.queue)  length=\(state.length)" + (state.paused ? "  paused" : state.partlyPaused ? "  paused in some shards" : ""))
                }
            }
        case .pause, .resume:
            if args.flag("dry-run") {
                printError("would \(verb.rawValue) \(queues.joined(separator: ", ")) in \(settings.shards.count) shard(s) (dry run: nothing changed)")
                return ExitCode.success
            }
            let changed = try QueueAdmin.setPaused(verb == .pause, queues: queues, redis: redis, shards: settings.shards)
            print("\(verb == .pause ? "paused" : "resumed") \(queues.joined(separator: ", ")) (\(changed) shard queue(s) changed; the others were already \(verb == .pause ? "paused" : "running"))")
        case .purge:
            let waiting = states.filter { queues.contains($0.queue) }.reduce(0) { $0 + $1.length }
            if args.flag("dry-run") {
                printError("would purge about \(waiting) job(s) from \(queues.joined(separator: ", ")) (dry run: nothing changed)")
                return ExitCode.success
            }
            let removed = try QueueAdmin.purge(queues: queues, redis: redis, shards: settings.shards)
            print("purged \(removed) job(s) from \(queues.joined(separator: ", "))")
        }
        return ExitCode.success
    }
}
