import DeviceRegistry

extension CampaignStatus {
    /// The dashboard's campaign families (docs/observability.md) from the open campaigns' statuses
    /// (`Campaigns.openStatuses`), read with the queue-wide ones. Only open campaigns get series, so the
    /// `campaign` label stays bounded by what runs or is paused; one that ends leaves the page.
    public static func write(open: [CampaignStatus], to out: inout PrometheusText) {
        out.family("herald_campaigns", .gauge, "Open campaigns (running or paused in some shard) by their summed state.")
        var byState: [State: Int] = [.running: 0, .paused: 0]
        for status in open { byState[status.state, default: 0] += 1 }
        for (state, count) in byState.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            out.sample("herald_campaigns", [("state", state.rawValue)], count)
        }
        out.family("herald_campaign_state", .gauge, "1 for each open campaign under its summed state (running, paused; cancelled while a control cut short leaves its shards mixed).")
        for status in open { out.sample("herald_campaign_state", [("campaign", status.id), ("state", status.state.rawValue)], 1) }
        out.family("herald_campaign_devices", .gauge,
                   "Each open campaign's devices by its status's counts (GET /v1/campaigns/<id>): audience_size, sent, skipped, waiting, in_flight, delivered...")
        for status in open {
            for (field, value) in status.counts {
                out.sample("herald_campaign_devices", [("campaign", status.id), ("app", status.app), ("state", field)], value)
            }
        }
        out.family("herald_campaign_uncounted", .gauge, "1 when results entries were trimmed before the campaign's outcomes were counted: its outcome counts are short.")
        for status in open { out.sample("herald_campaign_uncounted", [("campaign", status.id)], status.uncounted ? 1 : 0) }
        let paced = open.filter { $0.ratePerSecond > 0 }
        out.family("herald_campaign_rate_per_second", .gauge, "A paced open campaign's rate over its running shards (devices read a second: a job each active one); none while paused.")
        for status in paced { out.sample("herald_campaign_rate_per_second", [("campaign", status.id), ("app", status.app)], status.ratePerSecond) }
        out.family("herald_campaign_estimated_end_timestamp_seconds", .gauge,
                   "When a paced open campaign's slowest running shard reads its last device at its rate, in seconds since the epoch; none while paused.")
        for status in paced {
            out.sample("herald_campaign_estimated_end_timestamp_seconds", [("campaign", status.id), ("app", status.app)], Double(status.estimatedEndAt) / 1000)
        }
    }
}
