import DeviceRegistry
import RedisQueue

extension EndToEndWorld {
    /// Creates a campaign from `document` in the world's Redis (one shard, the default prefix), as
    /// `herald campaigns create` would; with no `herald scheduler` running it stays open, so the dashboard's
    /// campaign families have it.
    func createCampaign(_ document: String) throws {
        try Campaigns(redis: try connectRedis(), shards: try QueueShards(single: QueueKeys())).create(Campaign.parse(Array(document.utf8)))
    }
}
