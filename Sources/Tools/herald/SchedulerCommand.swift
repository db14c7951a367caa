import Basics
import DeviceRegistry
import Foundation
import Glibc
import HeraldProviders
import RedisQueue
import Worker

/// `herald scheduler`: moves due retries to their queues, reaps dead workers' leases, asks for receipts, and fans
/// campaigns out (docs/campaigns.md), in every shard.
enum SchedulerCommand {
    static let command = Command(
        name: "scheduler", abstract: "Move due retries back to the queue, return dead workers' jobs and fan campaigns out.",
        discussion: "Workers do this by default; run it alone when they are configured with run_scheduler false, run one wherever the configuration has Expo apps (it asks for their receipts), and one wherever campaigns are used (only the scheduler fans them out and counts their outcomes, docs/campaigns.md). Safe to run in several places at once.",
        options: redisOptions + [.flag("once", "One pass, then exit (for cron and tests)."),
                                 .flag("receipts", "Ask for the receipts of tickets (Expo's second phase) and write their outcomes, or fail to start: needs the configuration's apps (--config or HERALD_CONFIG). Without the flag it is done whenever that configuration has such apps.")],
        run: run)

    static func run(_ args: ParsedArguments) throws -> Int32 {
        let settings = try redisSettings(args)
        let logger = Logger(component: "scheduler")
        let poller = try receiptPoller(args, logger: logger)
        let given = configurationGiven(args)
        let configuration = try? given?.get()
        // A configuration given that does not load would leave campaigns at UTC, without quiet hours or the apps'
        // check: none is driven (retries, reaping and receipts go on), once said.
        let drivesCampaigns: Bool
        if case .failure(let error)? = given {
            drivesCampaigns = false
            logger.error("campaigns not driven: the configuration did not load", ["error": .string("\(error)")])
        } else {
            drivesCampaigns = true
        }
        let stop = StopFlag()
        let watcher = SignalWatcher(onFirst: { stop.set() })
        defer { withExtendedLifetime(watcher) {} }
        var redis: (any BlockingRedisCommands)? = nil
        var driver: CampaignDriver? = nil
        var failures = 0
        repeat {
            do {
                if redis == nil {
                    redis = try settings.connect()
                }
                if driver == nil && drivesCampaigns {
                    driver = CampaignDriver(campaigns: Campaigns(redis: redis!, shards: settings.shards), providers: heraldProviders,
                                            logger: logger)
                    driver!.apps = configuration.map { Set($0.apps.map(\.name)) }
                    driver!.maxScheduleDays = configuration?.worker.maxScheduleDays
                    driver!.localTime = configuration?.registry.apps ?? [:]
                }
                // Every shard in turn; the pass sleeps until the soonest retry of any shard falls due.
                var moved = 0
                var reaped = 0
                var settled = 0
                var sleepMs = 1000
                for shard in settings.shards.shards {
                    let queue = try BlockingJobQueue(redis: redis!, keys: shard.keys, workerID: "scheduler-\(getpid())", queueKeys: shard.queues)
                    var shardSleep = 1000
                    repeat {
                        let move = try queue.moveDueRetries()
                        moved += move.moved
                        shardSleep = move.sleepMilliseconds(batchLimit: 1000)
                    } while shardSleep == 0 && !stop.isSet
                    sleepMs = min(sleepMs, shardSleep)
                    reaped += try queue.reap()
                    if let poller {
                        let receipts = BlockingReceiptSet(redis: redis!, keys: shard.keys)
                        let pass = try poller.pass(receipts, shouldStop: { stop.isSet })
                        settled += pass.settled
                        if let next = pass.nextDue { sleepMs = min(sleepMs, Int(max(0, next - pass.now))) }
                    }
                }
                // A chunk of every running campaign per pass; a pass that pushed some comes round again at once, or
                // when a paced campaign's next chunk is due.
                let campaigns = try driver?.pass(shouldStop: { stop.isSet }) ?? CampaignDriver.Pass()
                if moved > 0 || reaped > 0 || settled > 0 || campaigns.pushed > 0 {
                    logger.info("pass", ["moved": .int(moved), "reaped": .int(reaped), "receipts_settled": .int(settled),
                                         "campaign_jobs": .int(campaigns.pushed)])
                }
                failures = 0
                if args.flag("once") {
                    print("{\"moved\":\(moved),\"reaped\":\(reaped),\"receipts_settled\":\(settled),\"campaign_jobs\":\(campaigns.pushed)}")
                    return ExitCode.success
                }
                if let sleep = campaigns.sleepMilliseconds(otherwise: sleepMs) { stop.sleep(milliseconds: sleep) }
            } catch {
                if args.flag("once") { throw error }
                redis = nil
                driver = nil
                failures += 1
                logger.warning("redis unavailable; retrying", ["error": .string("\(error)")])
                stop.sleep(milliseconds: min(5000, 100 << min(failures, 6)))
            }
        } while !stop.isSet
        return ExitCode.success
    }
}

/// The receipts poller: the configuration's apps with a second phase, their credentials loaded. With `--receipts` a
/// configuration without such apps, or one that does not load, stops the start (as a worker's does). Without it the
/// poller runs whenever the configuration (`--config`, `HERALD_CONFIG`: the shipped units set it) has such apps, so
/// the shipped scheduler asks for receipts without an extra flag (the file is read at start: restart it after adding
/// the first Expo app); a configuration that does not load is then logged and the scheduler goes on moving retries.
private func receiptPoller(_ args: ParsedArguments, logger: Logger) throws -> ReceiptPoller? {
    let required = args.flag("receipts")
    guard required || args.value("config") != nil || ProcessInfo.processInfo.environment["HERALD_CONFIG"] != nil else { return nil }
    do {
        let configuration = try loadConfiguration(args)
        guard ReceiptPoller.needed(configuration) else {
            if required { throw UsageError("--receipts: no app in the configuration has a provider with receipts (expo)") }
            return nil
        }
        return ReceiptPoller(configuration: configuration, credentials: try ReceiptPoller.credentials(configuration),
                             pollerID: "receipts-\(getpid())", logger: logger)
    } catch {
        if required { throw error }
        logger.warning("receipts poller not started: the configuration did not load", ["error": .string("\(error)")])
        return nil
    }
}

/// The configuration when one is given (`--config`, `HERALD_CONFIG`): campaign documents of an app it does not name
/// are refused `bad_app`, and its `registry.apps` give campaigns their apps' time zones and quiet hours; the error
/// when it does not load (then no campaign is driven); nil (no app checked, UTC, no quiet hours) without one.
private func configurationGiven(_ args: ParsedArguments) -> Result<Configuration, any Error>? {
    guard args.value("config") != nil || ProcessInfo.processInfo.environment["HERALD_CONFIG"] != nil else { return nil }
    return Result { try loadConfiguration(args) }
}

/// A stop request from a signal, and a sleep that ends early when it comes.
final class StopFlag: Sendable {
    private let flag = LockedValue(false)

    var isSet: Bool { flag.withLock { $0 } }

    func set() { flag.withLock { $0 = true } }

    func sleep(milliseconds: Int) {
        _ = flag.wait(until: { $0 }, timeoutSeconds: Double(milliseconds) / 1000) { _ in }
    }
}
