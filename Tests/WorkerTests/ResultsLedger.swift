import Foundation
import HeraldTestSupport
import RedisQueue

/// One entry of a Redis stream as read back: its id (whose first part is Redis's time in ms) and fields.
struct StreamEntry: Equatable {
    let streamID: String
    let fields: [String: String]

    var millis: Int64 { Int64(streamID.split(separator: "-").first ?? "0") ?? 0 }
    var id: String { fields["id"] ?? "" }
    var outcome: String { fields["outcome"] ?? "" }
    var isTerminal: Bool { outcome != "retrying" && outcome != "accepted" }
}

/// Reads `herald:results` (or other streams: one per shard) incrementally, reconnecting when Redis went away,
/// and checks the contract: per job id exactly one terminal entry, last, with only `retrying` (and a second phase's
/// `accepted`) entries before it.
final class ResultsLedger {
    let streams: [String]
    private let connect: () throws -> any BlockingRedisCommands
    private(set) var entries: [StreamEntry] = []
    /// The index in `streams` of each entry's stream, in `entries` order.
    private(set) var streamOfEntry: [Int] = []
    private(set) var terminalCount = 0
    private var lastIDs: [String]
    private var redis: (any BlockingRedisCommands)?

    convenience init(redisURL: String, stream: String = "herald:results") {
        self.init(streams: [stream]) {
            try BlockingRedis(url: try RedisURL(parsing: redisURL), connectTimeoutMilliseconds: 500, commandTimeoutMilliseconds: 5000)
        }
    }

    /// `connect` makes a client (a cluster's, say); it is called again after a failure.
    init(streams: [String], connect: @escaping () throws -> any BlockingRedisCommands) {
        self.streams = streams
        self.connect = connect
        lastIDs = Array(repeating: "0-0", count: streams.count)
    }

    /// Reads whatever is new; returns false when Redis could not be reached (e.g. while it restarts).
    @discardableResult
    func poll() -> Bool {
        for index in streams.indices where !poll(index) { return false }
        return true
    }

    private func poll(_ streamIndex: Int) -> Bool {
        let stream = streams[streamIndex]
        do {
            if redis == nil { redis = try connect() }
            while true {
                let reply = try redis!.command(["XRANGE", stream, "(" + lastIDs[streamIndex], "+", "COUNT", "5000"])
                guard let items = reply.array, !items.isEmpty else { return true }
                for item in items {
                    guard let parts = item.array, parts.count == 2, let id = parts[0].string, let flat = parts[1].array else { continue }
                    var map: [String: String] = [:]
                    var index = 0
                    while index + 1 < flat.count {
                        map[flat[index].string ?? ""] = flat[index + 1].string ?? ""
                        index += 2
                    }
                    let entry = StreamEntry(streamID: id, fields: map)
                    entries.append(entry)
                    streamOfEntry.append(streamIndex)
                    if entry.isTerminal { terminalCount += 1 }
                    lastIDs[streamIndex] = id
                }
            }
        } catch {
            redis?.close()
            redis = nil
            return false
        }
    }

    /// Polls until `count` terminal entries exist or the deadline passes; `check` runs between polls and may
    /// throw to stop early (a worker that died, for instance).
    func waitForTerminal(_ count: Int, seconds: Double, check: () throws -> Void = {}) throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            poll()
            if terminalCount >= count { return true }
            try check()
            usleep(100_000)
        }
        poll()
        return terminalCount >= count
    }

    var byJob: [String: [StreamEntry]] {
        Dictionary(grouping: entries, by: \.id)
    }

    /// Problems with the one-terminal-outcome contract for `ids` (empty when all is well): a job without a
    /// terminal entry, with two, with anything after its terminal entry, or with the wrong terminal outcome.
    /// `key` names what has one outcome (a job id; for multicast, id and token); entries `excluding` these
    /// outcomes are left out (e.g. `duplicate`, one per extra copy of an id, counted apart).
    func contractProblems(expected: [String: String], key: (StreamEntry) -> String = \.id, excluding: Set<String> = []) -> [String] {
        let grouped = Dictionary(grouping: entries.filter { !excluding.contains($0.outcome) }, by: key)
        var problems: [String] = []
        for (id, outcome) in expected.sorted(by: { $0.key < $1.key }) {
            let list = grouped[id] ?? []
            let terminals = list.filter(\.isTerminal)
            if terminals.count != 1 {
                problems.append("\(id): \(terminals.count) terminal entries \(list.map(\.outcome))")
                continue
            }
            if !(list.last?.isTerminal ?? false) {
                problems.append("\(id): entries after the terminal one \(list.map(\.outcome))")
            }
            if terminals[0].outcome != outcome {
                problems.append("\(id): expected \(outcome), got \(terminals[0].outcome) (\(terminals[0].fields["reason"] ?? "")) after \(list.map(\.outcome))")
            }
        }
        return problems
    }

    /// Counts of terminal outcomes.
    var terminalByOutcome: [String: Int] {
        var counts: [String: Int] = [:]
        for entry in entries where entry.isTerminal { counts[entry.outcome, default: 0] += 1 }
        return counts
    }
}

/// Reads a whole stream once (for `herald:dropped-tokens`).
func readStream(_ redis: any BlockingRedisCommands, _ key: String) throws -> [StreamEntry] {
    var out: [StreamEntry] = []
    var last = "0-0"
    while true {
        guard let items = try redis.command(["XRANGE", key, "(" + last, "+", "COUNT", "5000"]).array, !items.isEmpty else { return out }
        for item in items {
            guard let parts = item.array, parts.count == 2, let id = parts[0].string, let flat = parts[1].array else { continue }
            var map: [String: String] = [:]
            var index = 0
            while index + 1 < flat.count {
                map[flat[index].string ?? ""] = flat[index + 1].string ?? ""
                index += 2
            }
            out.append(StreamEntry(streamID: id, fields: map))
            last = id
        }
    }
}

/// Lists a summary of problems for a test message: the count and the first few.
func summarize(_ problems: [String], limit: Int = 15) -> String {
    problems.isEmpty ? "none" : "\(problems.count) problems, first: \n" + problems.prefix(limit).joined(separator: "\n")
}
