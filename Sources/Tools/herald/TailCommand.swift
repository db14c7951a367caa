import Basics
import Forwarder
import Foundation
import RedisQueue

/// `herald tail`: follows the results stream, human-readable or as JSON lines.
enum TailCommand {
    static let command = Command(
        name: "tail", abstract: "Follow the results stream.",
        options: redisOptions + [
            .flag("json", "One JSON object per entry."),
            .value("outcome", "name", "Only this outcome (" + ResultEntry.Outcome.allCases.map(\.rawValue).joined(separator: ", ") + "); repeatable.", repeatable: true),
            .flag("from-start", "Start at the oldest entry instead of new ones."),
            .value("count", "n", "Exit after printing this many entries."),
            .value("stream", "key", "Follow another stream, e.g. <prefix>:dropped-tokens or <prefix>:dropped-channels."),
        ],
        run: run)

    static func run(_ args: ParsedArguments) throws -> Int32 {
        let settings = try redisSettings(args)
        let outcomes = Set(args.all("outcome"))
        let known = Set(ResultEntry.Outcome.allCases.map(\.rawValue))
        for outcome in outcomes where !known.contains(outcome) { throw UsageError("unknown outcome '\(outcome)'") }
        let limit = try args.int("count")
        if let limit, limit < 1 { throw UsageError("--count must be at least 1") }
        let stream = args.value("stream") ?? settings.shards.basePrefix + ":results"
        // The stream of every shard: entries come shard by shard as each has them (in order within a shard).
        var streams: [String] = []
        for index in 0..<settings.shards.count {
            guard let key = settings.shards.key(stream, inShard: index) else {
                throw UsageError("--stream \(stream) is not under the prefix \(settings.shards.basePrefix): with shards, name it <prefix>:<stream>")
            }
            streams.append(key)
        }
        let stop = StopFlag()
        let watcher = SignalWatcher(onFirst: { stop.set() })
        defer { withExtendedLifetime(watcher) {} }
        let redis = try settings.connect()
        var lastIDs = [String](repeating: args.flag("from-start") ? "0-0" : "$", count: streams.count)
        var printed = 0
        while !stop.isSet {
            var quiet = true
            for (index, key) in streams.enumerated() where !stop.isSet {
                // One shard blocks on its stream; several read without blocking (a block on one would hold back
                // the others, and XREAD over several keys is refused across cluster slots) and pause when all are quiet.
                let block = streams.count == 1 ? ["BLOCK", "1000"] : []
                let reply = try redis.command(["XREAD", "COUNT", "500"] + block + ["STREAMS", key, lastIDs[index]])
                if lastIDs[index] == "$" {
                    // Pin the position to the stream's current end so nothing between reads is missed.
                    if reply.isNil {
                        if let info = try? redis.command(["XREVRANGE", key, "+", "-", "COUNT", "1"]).array, let id = info.first?.array?.first?.string {
                            lastIDs[index] = id
                        } else if streams.count > 1 {
                            lastIDs[index] = "0-0"
                        }
                        continue
                    }
                }
                for entry in StreamEntry.entries(readReply: reply) {
                    quiet = false
                    lastIDs[index] = entry.id
                    let map = Dictionary(entry.fields, uniquingKeysWith: { a, _ in a })
                    if !outcomes.isEmpty, !outcomes.contains(map["outcome"] ?? "") { continue }
                    print(args.flag("json") ? jsonLine(id: entry.id, fields: entry.fields) : humanLine(id: entry.id, map: map))
                    printed += 1
                    if let limit, printed >= limit { return ExitCode.success }
                }
            }
            if quiet && streams.count > 1 { stop.sleep(milliseconds: 100) }
        }
        return ExitCode.success
    }

    static func jsonLine(id: String, fields: [(String, String)]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: ForwardBody.object(streamID: id, fields: fields), options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    static func humanLine(id: String, map: [String: String]) -> String {
        let millis = Int64(id.split(separator: "-").first ?? "0") ?? 0
        let date = Date(timeIntervalSince1970: Double(millis) / 1000)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var text = formatter.string(from: date) + "  " + (map["outcome"] ?? "?").padding(toLength: 13, withPad: " ", startingAt: 0)
        text += " " + (map["status"] ?? "0").leftPad(3)
        text += "  id=" + (map["id"] ?? "?")
        if let token = map["token"] { text += " token=" + String(token.prefix(12)) + (token.count > 12 ? "…" : "") }
        if let app = map["app"] { text += " app=" + app }
        if let attempt = map["attempt"], attempt != "1" { text += " attempt=" + attempt }
        if let reason = map["reason"], !reason.isEmpty { text += " reason=" + reason }
        if let retry = map["retry_at"], let ms = Double(retry) {
            text += " retry_in=" + String(format: "%.1fs", max(0, ms / 1000 - Date().timeIntervalSince1970))
        }
        if let latency = map["latency_ms"] { text += " latency=\(latency)ms" }
        return text
    }
}
