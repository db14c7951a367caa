extension DeviceKeys {
    /// HASH per campaign and shard: its document, state, this shard's cursor and counters (`CampaignScripts`).
    public func campaign(_ id: String) -> String { "\(prefix):campaign:\(id)" }
    /// SET per campaign and shard of the SHA-1 (hex) of each `<platform>\n<token>` sent, for the audiences that may
    /// name a device twice (an app's ZSCAN, `topics`); dropped when the shard is done or the campaign cancelled,
    /// expiring `CampaignScripts.sentTTLMs` after its last step, pause or resume.
    public func campaignSent(_ id: String) -> String { "\(prefix):campaign:\(id):sent" }
    /// ZSET campaign id -> created (ms): the running and paused campaigns the driver walks.
    public var campaigns: String { "\(prefix):campaigns" }
    /// LIST of campaign documents a producer LPUSHes (the Redis way to create one); the first shard's is read.
    public var newCampaigns: String { "\(prefix):campaigns:new" }
    /// HASH `results` -> the last entry of this shard's `<p>:results` whose outcome the campaigns counted.
    public var campaignTally: String { "\(prefix):campaigns:tally" }
    /// LIST of `{"error", "document"}` for documents taken from `newCampaigns` that were refused.
    public var refusedCampaigns: String { "\(prefix):campaigns:refused" }
}
