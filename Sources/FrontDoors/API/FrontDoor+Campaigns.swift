import DeviceRegistry
import HTTP1
import RedisQueue

/// `/v1/campaigns` (docs/campaigns.md, docs/api.md "Campaigns"): create a campaign (`POST /v1/campaigns`), read its
/// status (`GET /v1/campaigns/<id>`), pause, resume or cancel it (`POST /v1/campaigns/<id>/<action>`), on the
/// registry's loop. A key limited to apps may touch only their campaigns. 404 while `registry.enabled` is off.
extension FrontDoor {
    static let campaignsPath = "/v1/campaigns"

    static func isCampaignsPath(_ path: String) -> Bool { path == campaignsPath || path.hasPrefix(campaignsPath + "/") }

    /// The key (nil when the API is open) and the registry: what every campaigns route checks first, from the head too.
    func campaignAccess(_ request: HTTP1Parser.Request) -> Result<(key: APIAccess.Key?, registry: DeviceRegistryLoop), Refusal> {
        let key: APIAccess.Key?
        switch authenticated(request) {
        case .success(let presented): key = presented
        case .failure(let refusal): return .failure(refusal)
        }
        guard let registry = deviceRegistry else {
            return .failure(Refusal(Self.error(404, "not_found", "campaigns need the device registry: set registry.enabled (see docs/campaigns.md)")))
        }
        return .success((key, registry))
    }

    /// 403 when `key` is limited to apps and `app` is not one of them.
    static func campaignForbidden(_ key: APIAccess.Key?, app: String) -> HTTP1Server.Response? {
        guard let key, !key.apps.isEmpty, !key.apps.contains(app) else { return nil }
        return Self.error(403, "forbidden", "key '\(key.name)' may not manage campaigns of app '\(app)' (its apps: \(key.apps.joined(separator: ", ")))")
    }

    func campaigns(_ request: HTTP1Parser.Request, respond: @escaping (HTTP1Server.Response) -> Void) {
        let (key, registry): (APIAccess.Key?, DeviceRegistryLoop)
        switch campaignAccess(request) {
        case .success(let allowed): (key, registry) = allowed
        case .failure(let refusal): return respond(refusal.response)
        }
        let parts = request.path.dropFirst(Self.campaignsPath.count).split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            .map { Self.percentDecoded($0) }
        switch (request.method, parts.count) {
        case ("POST", 0): createCampaign(request, key: key, registry: registry, respond: respond)
        case ("GET", 1), ("POST", 2):
            let action = parts.count == 2 ? Campaigns.Action(rawValue: parts[1]) : nil
            if parts.count == 2 && action == nil {
                return respond(Self.error(404, "not_found", "no route \(request.method) \(request.path): use .../pause, .../resume or .../cancel"))
            }
            registry.campaign(parts[0]) { result in
                switch result {
                case .failure(let error): respond(Self.redisFailed(error))
                case .success(nil): respond(Self.error(404, "not_found", "no campaign \(parts[0])"))
                case .success(let campaign?):
                    if let forbidden = Self.campaignForbidden(key, app: campaign.app) { return respond(forbidden) }
                    let answer: (Result<CampaignStatus?, RedisError>) -> Void = { result in
                        switch result {
                        case .failure(let error): respond(Self.redisFailed(error))
                        case .success(nil): respond(Self.error(404, "not_found", "no campaign \(parts[0])"))
                        case .success(let status?): respond(Self.jsonObject(200, status.json))
                        }
                    }
                    if let action { registry.control(campaign, action, done: answer) } else { registry.status(campaign.id, done: answer) }
                }
            }
        case (_, 0): respond(Self.error(405, "method_not_allowed", "use POST", headers: [("Allow", "POST")]))
        case (_, 1): respond(Self.error(405, "method_not_allowed", "use GET", headers: [("Allow", "GET")]))
        case (_, 2): respond(Self.error(405, "method_not_allowed", "use POST", headers: [("Allow", "POST")]))
        default: respond(Self.error(404, "not_found", "no route \(request.method) \(request.path)"))
        }
    }

    /// POST: the body is the campaign document. 201 with its status when it was made, 200 with the existing one's
    /// when the id held this document (a create is idempotent by id), 409 `id_taken` when it holds another.
    private func createCampaign(_ request: HTTP1Parser.Request, key: APIAccess.Key?, registry: DeviceRegistryLoop,
                                respond: @escaping (HTTP1Server.Response) -> Void) {
        let campaign: Campaign
        do {
            campaign = try Campaign.parse(request.body)
            try campaign.check(apps: appNames, maxScheduleDays: maxScheduleDays, now: registry.clock())
        } catch { return respond(Self.error(400, error.code, error.description)) }
        if let forbidden = Self.campaignForbidden(key, app: campaign.app) { return respond(forbidden) }
        do throws(DeviceError) {
            try registry.create(campaign) { created in
                registry.status(campaign.id) { status in
                    switch (created, status) {
                    case (.failure(let error), _), (_, .failure(let error)): respond(Self.redisFailed(error))
                    case (.success, .success(nil)): respond(Self.error(404, "not_found", "no campaign \(campaign.id)"))
                    case (.success(let made), .success(let status?)):
                        // The id may be another app's campaign: answered only to a key that may see that app.
                        if let forbidden = Self.campaignForbidden(key, app: status.app) { return respond(forbidden) }
                        if made == .taken {
                            let taken = CampaignCalls.idTaken(campaign.id)
                            return respond(Self.error(409, taken.code, taken.description))
                        }
                        respond(Self.jsonObject(made == .made ? 201 : 200, status.json))
                    }
                }
            }
        } catch {
            respond(Self.error(400, error.code, error.description))
        }
    }
}
