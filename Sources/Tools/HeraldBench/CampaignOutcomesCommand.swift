import Basics
import DeviceRegistry
import Foundation
import Reactor
import RedisQueue

/// Follows one campaign of `scripts/bench-campaign` to its end: reads the results stream from its start and checks,
/// for devices `DevicesCommand` made (active indexes `[0, active)`, stale ones `[active, active + stale)`), that every
/// active device has exactly one terminal outcome and no stale one has any; meanwhile it reads the campaign's hash for
/// when the fan-out was done. Rides out Redis restarting (reconnects until the deadline). One shard: the bench's Redis.
enum CampaignOutcomesCommand {
    static let command = Command(
        bench: "campaign-outcomes", abstract: "Follow a campaign's results to its last outcome; check each active device ended once.",
        options: [
            .value("redis", "url", "Redis URL (required)."),
            .value("campaign", "id", "The campaign id (required)."),
            .value("prefix", "p", "Key prefix (default herald)."),
            .value("active", "n", "Active devices, indexes 0 to n-1 (required)."),
            .value("stale", "n", "Stale devices after them (default 0)."),
            .value("timeout", "seconds", "Give up after this long (default 3600)."),
            .value("settle", "seconds", "After the last expected outcome, watch this long for any second one (default 3)."),
        ],
        run: run)

    static func run(_ flags: ParsedArguments) throws {
        let url = try RedisURL(parsing: try flags.required("redis"))
        guard let campaign = flags.value("campaign"), let active = try flags.int("active") else { fail("--campaign and --active are required", status: 64) }
        let stale = try flags.int("stale", default: 0)
        let keys = try QueueKeys(prefix: flags.value("prefix") ?? "herald")
        let shard = DeviceKeys(keys)
        let deadline = monotonicNanos() &+ UInt64(try flags.double("timeout", default: 3600) * 1e9)
        let settle = UInt64(try flags.double("settle", default: 3) * 1e9)
        let redis = ReconnectingRedis(url: url, deadline: deadline)
        let marker = Campaign.jobIDMarker + campaign + "/"

        var ended = [UInt8](repeating: 0, count: active + stale)
        var endedActive = 0, duplicates = 0, staleOutcomes = 0, unknown = 0, retries = 0, reconnects = 0
        var outcomes: [String: Int] = [:]
        var lastOutcomeAt: Int64 = 0
        var created: Int64 = 0, finished: Int64 = 0, sent = 0, skipped = 0
        var lastID = "0-0"
        var allEndedAt: UInt64?
        var nextStatus: UInt64 = 0
        while monotonicNanos() < deadline {
            if monotonicNanos() >= nextStatus {
                let fields = try redis.command(["HMGET", shard.campaign(campaign), "created", "finished", "sent", "skipped"]).array ?? []
                func int(_ at: Int) -> Int64 { at < fields.count ? fields[at].string.flatMap { Int64($0) } ?? 0 : 0 }
                (created, finished, sent, skipped) = (int(0), int(1), Int(int(2)), Int(int(3)))
                nextStatus = monotonicNanos() &+ 200_000_000
            }
            let entries = StreamEntry.entries(readReply: try redis.command(["XREAD", "COUNT", "20000", "STREAMS", keys.results, lastID]))
            for entry in entries {
                lastID = entry.id
                guard let id = entry["id"], id.hasPrefix(marker), let outcome = entry["outcome"] else { continue }
                guard let kind = ResultEntry.Outcome(rawValue: outcome), kind.isTerminal else { retries += outcome == "retrying" ? 1 : 0; continue }
                // The token's last 8 hexadecimal digits are its index (BenchJobs.token).
                guard let index = Int(id.suffix(8), radix: 16), index < ended.count, id.hasSuffix(BenchJobs.token(index)) else { unknown += 1; continue }
                outcomes[outcome, default: 0] += 1
                lastOutcomeAt = max(lastOutcomeAt, entry.milliseconds)
                if index >= active { staleOutcomes += 1; continue }
                if ended[index] > 0 { duplicates += 1 } else { endedActive += 1 }
                ended[index] &+= 1
            }
            reconnects = redis.reconnects
            if endedActive == active && finished > 0 {
                if allEndedAt == nil { allEndedAt = monotonicNanos() }
                if monotonicNanos() &- allEndedAt! >= settle { break }
            }
            if entries.isEmpty { usleep(20_000) }
        }
        let fanout = finished > created && created > 0 ? Double(finished - created) / 1000 : 0
        printJSONLine([
            "campaign": campaign, "active": active, "stale": stale, "ended": endedActive, "missing": active - endedActive,
            "duplicates": duplicates, "stale_outcomes": staleOutcomes, "unknown_ids": unknown, "retrying_entries": retries,
            "outcomes": outcomes, "sent": sent, "skipped": skipped, "reconnects": reconnects,
            "created_at": created, "fanout_done_at": finished, "last_outcome_at": lastOutcomeAt,
            "fanout_seconds": fanout, "devices_per_second": fanout > 0 ? Double(active + stale) / fanout : 0,
            "last_outcome_seconds": lastOutcomeAt > created && created > 0 ? Double(lastOutcomeAt - created) / 1000 : 0,
            "timed_out": endedActive < active || finished == 0,
        ])
    }
}
