import RedisQueue

/// Campaigns on `herald api`'s event loop (`/v1/campaigns`): `CampaignCalls` sent as `Campaigns` runs them blocking.
extension DeviceRegistryLoop {
    /// Creates the campaign in every shard: made, existed with this document (nothing changed) or taken by another.
    public func create(_ campaign: Campaign, done: @escaping Done<CampaignCalls.Created>) throws(DeviceError) {
        runAll(try campaignCalls.create(campaign, now: clock())) { done($0.map(CampaignCalls.created)) }
    }

    /// The campaign's document as first created.
    public func campaign(_ id: String, done: @escaping Done<Campaign?>) {
        redis.send(campaignCalls.document(id)) { done($0.map(CampaignCalls.campaign)) }
    }

    public func status(_ id: String, done: @escaping Done<CampaignStatus?>) {
        sendAll(campaignCalls.status(id)) { done($0.map { CampaignCalls.status(id, replies: $0, now: self.clock()) }) }
    }

    /// Runs `action` in every shard, then reads the status.
    public func control(_ campaign: Campaign, _ action: Campaigns.Action, done: @escaping Done<CampaignStatus?>) {
        runAll(campaignCalls.control(campaign, action, now: clock())) { [self] result in
            if case .failure(let error) = result { return done(.failure(error)) }
            status(campaign.id, done: done)
        }
    }
}
