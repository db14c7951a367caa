import Foundation

/// What `GET /v1/campaigns/<id>` and `herald campaigns get` answer: the campaign's shards summed.
public struct CampaignStatus: Sendable, Equatable {
    public enum State: String, Sendable, Equatable {
        case running, paused, cancelled, done
    }

    public let id: String
    public var app = ""
    public var audienceKind = ""
    /// The owner, topic or app it names, or its topics.
    public var audienceNames: [String] = []
    /// Whether its audience counts a device once per topic (`topics`), so that `repeated` devices were in its size.
    public var countsRepeats = false
    public var state = State.done
    /// How many shards are in each state: a control cut short (it runs shard by shard) leaves them mixed, which the
    /// summed `state` alone would hide; running it again finishes it.
    public var shardStates: [State: Int] = [:]
    /// Index members (devices, active and stale) when it was created.
    public var audience = 0
    /// Jobs pushed onto the queue: one per active device read.
    public var sent = 0
    /// Devices read that were not active (stale, or removed since they were indexed): nothing pushed.
    public var skipped = 0
    /// Devices whose provider could not render the notification for them: nothing pushed, logged.
    public var unrendered = 0
    /// Devices found in the sent set and not sent twice: named again by an app audience's scan (ZSCAN may), or read
    /// in a second of a `topics` audience's topics (its audience counts those; an app's does not).
    public var repeated = 0
    /// Index members after the cursor when it was cancelled: never read, never sent.
    public var cancelled = 0
    /// Terminal outcomes of its jobs counted from the results streams (`CampaignDriver.tally`): `delivered`,
    /// `token_dropped` and `channel_dropped`, `failed` and `rejected` (so the `unrendered` devices' entries too),
    /// and any other (`duplicate`, `cancelled`).
    public var delivered = 0, dropped = 0, failed = 0, otherOutcomes = 0
    /// Results entries after the tally's cursor were trimmed before they were counted while it was open (in some
    /// shard): its outcome counts are short, and `in_flight` may never reach 0.
    public var uncounted = false
    public var createdAt: Int64 = 0
    /// When its last shard finished or it was cancelled (ms), 0 while it runs.
    public var finishedAt: Int64 = 0

    /// A paced campaign's rate over its running shards (jobs a second), 0 when unpaced or paused.
    public var ratePerSecond = 0.0
    /// A paced campaign's estimated end (ms): when its slowest running shard reads its last device at its rate (0
    /// while paused: a paused shard's end would move with the clock).
    public var estimatedEndAt: Int64 = 0

    /// Jobs pushed whose `deliver_at` is still ahead (at `now` when read): waiting for their local time or the end
    /// of quiet hours (docs/campaigns.md, "Local time and quiet hours"), and the latest such time (ms, 0 when none).
    public var waitingLocal = 0
    public var waitingLocalUntil: Int64 = 0

    public init(id: String) { self.id = id }

    /// Adds one of `shards` shards' hash (HGETALL's fields) at `now` (ms, which a paced shard's rate depends on); the
    /// state is the least finished of the shards'. `campaign` is its `doc` field parsed (`CampaignDocuments`: once a
    /// campaign, not once a shard), nil when it has none or it does not parse.
    mutating func add(_ fields: [String: String], campaign: Campaign?, shards: Int, now: Int64) {
        func int(_ name: String) -> Int { fields[name].flatMap { Int($0) } ?? 0 }
        // `step` counts the jobs it pushed per `deliver_at` (`due:<ms>`): those after now still wait.
        for (name, count) in fields where name.hasPrefix("due:") {
            guard let due = Int64(name.dropFirst(4)), due > now else { continue }
            waitingLocal += Int(count) ?? 0
            waitingLocalUntil = max(waitingLocalUntil, due)
        }
        if let campaign {
            app = campaign.app
            audienceKind = campaign.audience.kind
            audienceNames = campaign.audience.names
            countsRepeats = campaign.audience.countsRepeats
            let left = campaign.audience.left(int)
            // Only a running shard moves: a paused one has no rate, and its end is not estimated.
            if fields["state"] == State.running.rawValue,
               let rate = campaign.shardRate(left: left, created: Int64(int("created")), now: now, shards: shards) {
                ratePerSecond += rate
                let from = max(fields["paced"].flatMap { Double($0) } ?? Double(int("created")), Double(now))
                estimatedEndAt = max(estimatedEndAt, Campaign.milliseconds(from + Double(left) * 1000 / rate))
            }
        }
        audience += int("audience")
        sent += int("sent")
        skipped += int("skipped")
        unrendered += int("unrendered")
        repeated += int("repeated")
        cancelled += int("cancelled")
        delivered += int("delivered")
        dropped += int("dropped")
        failed += int("failed")
        otherOutcomes += int("other")
        if fields["uncounted"] == "1" { uncounted = true }
        createdAt = max(createdAt, Int64(int("created")))
        finishedAt = max(finishedAt, Int64(int("finished")))
        let shardState = fields["state"].flatMap(State.init(rawValue:)) ?? .done
        shardStates[shardState, default: 0] += 1
        state = Self.rank(shardState) > Self.rank(state) ? shardState : state
    }

    /// A cancelled shard makes the campaign cancelled; else one paused, else one running, keeps it so.
    private static func rank(_ state: State) -> Int {
        switch state {
        case .done: 0
        case .running: 1
        case .paused: 2
        case .cancelled: 3
        }
    }

    /// Jobs without a terminal outcome yet. An unrendered device was never sent but its `rejected` entry is counted
    /// in `failed`, so it is added back.
    public var inFlight: Int { max(0, sent + unrendered - delivered - dropped - failed - otherOutcomes) }

    /// Devices not read yet while it runs: the audience less what was read (`repeated` too for a `topics` audience,
    /// whose audience counts a device once per topic); 0 once it is done or cancelled.
    public var waiting: Int {
        guard state == .running || state == .paused else { return 0 }
        return Campaign.Audience.left(audience: audience, sent: sent, skipped: skipped, unrendered: unrendered, repeated: repeated,
                                      countsRepeats: countsRepeats)
    }

    /// The device counts under their status fields' names, in one list: the JSON and the metrics' `state` label
    /// (`herald_campaign_devices`) both take it, so a count added here shows in both.
    public var counts: [(field: String, value: Int)] {
        [("audience_size", audience), ("sent", sent), ("skipped", skipped), ("unrendered", unrendered), ("repeated", repeated),
         ("cancelled", cancelled), ("waiting", waiting), ("waiting_local", waitingLocal), ("in_flight", inFlight), ("delivered", delivered), ("dropped", dropped),
         ("failed", failed), ("other_outcomes", otherOutcomes)]
    }

    public var json: [String: Any] {
        var object: [String: Any] = ["id": id, "app": app, "audience": [audienceKind: audienceKind == "topics" ? audienceNames as Any : audienceNames.first ?? ""], "state": state.rawValue,
                                     "created_at": createdAt, "uncounted": uncounted]
        for (field, value) in counts { object[field] = value }
        if finishedAt > 0 && state != .running && state != .paused { object["finished_at"] = finishedAt }
        object["shard_states"] = Dictionary(uniqueKeysWithValues: shardStates.map { ($0.key.rawValue, $0.value) })
        if ratePerSecond > 0 {
            object["rate_per_second"] = Int(ratePerSecond.rounded())
            object["estimated_end_at"] = estimatedEndAt
        }
        if waitingLocal > 0 { object["waiting_local_until"] = waitingLocalUntil }
        return object
    }
}
