import Basics
import Foundation
import HTTP1
import RedisQueue

/// `GET /v1/jobs/<id>`: a job's latest result entries, one per token, from the index the completion script keeps
/// while `results.index_ttl_seconds` is set (`QueueKeys.resultIndex`), on the shard the id routes to
/// (`QueueShards.shard(forJobID:)`, the rule every push follows). One HGETALL per request.
extension FrontDoor {
    static let jobsPathPrefix = "/v1/jobs/"

    func status(_ request: HTTP1Parser.Request, respond: @escaping (HTTP1Server.Response) -> Void) {
        // A path's `+` is itself (only a query's means a space).
        let id = Self.percentDecoded(Substring(request.path.dropFirst(Self.jobsPathPrefix.count).replacingOccurrences(of: "+", with: "%2B")))
        let key: APIAccess.Key?
        switch authenticated(request) {
        case .success(let presented): key = presented
        case .failure(let refusal): return respond(refusal.response)
        }
        guard !id.isEmpty else { return respond(Self.error(404, "not_found", "no job id in the path: GET /v1/jobs/<id>")) }
        guard indexTTLSeconds > 0 else {
            return respond(Self.error(404, "not_found", "no job status is kept: results.index_ttl_seconds is 0 (see docs/api.md, \"Job status\")"))
        }
        // A key's jobs are kept under its tenant's scope (docs/api.md, "Tenancy"): another key's are not there to find.
        // Jobs pushed straight to Redis are no tenant's: looked up as they are when the key has no job of that id
        // (within its apps and queues, as before), never for an id that names a tenant.
        guard let key else { return readStatus(jobID: id, id: id, key: nil, respond: respond) }
        let scoped = access.tenant(of: key) + "/" + id
        readStatus(jobID: scoped, id: id, key: key, orElse: Self.tenantPrefix(id) == nil ? id : nil, respond: respond)
    }

    /// Answers with the index of `jobID` (the job the producer calls `id`), or when it has nothing for `key`, with
    /// that of `orElse`.
    private func readStatus(jobID: String, id: String, key: APIAccess.Key?, orElse: String? = nil, respond: @escaping (HTTP1Server.Response) -> Void) {
        let shard = shards.shards[shards.shard(forJobID: jobID)]
        let deviceLinks = deviceRegistry != nil
        redis.send([Array("HGETALL".utf8), Array(shard.keys.resultIndex(jobID: jobID).utf8)]) { [weak self, shards] result in
            let items: [RESPValue]
            switch result {
            case .failure(.server(let message)) where message.hasPrefix("WRONGTYPE"):
                // Not an index Herald wrote (workers pass such a key over): nothing kept.
                items = []
            case .failure(let error):
                return respond(Self.error(503, "unavailable", "Redis did not answer HGETALL: \(error)"))
            case .success(let reply):
                items = reply.array ?? []
            }
            var entries: [(streamID: String, json: String)] = []
            var index = 1
            while index < items.count {
                if let json = items[index].string, let fields = Self.flatObject(json), Self.mayRead(fields, key: key, shards: shards) {
                    let entry = jobID == id ? json : Self.unscoped(json, jobID: jobID, id: id)
                    entries.append((fields["stream_id"] ?? "", deviceLinks ? Self.namingDevice(entry, fields) : entry))
                }
                index += 2
            }
            if entries.isEmpty, let orElse, let self { return self.readStatus(jobID: orElse, id: id, key: key, respond: respond) }
            guard !entries.isEmpty else {
                return respond(Self.error(404, "not_found", "no results for job \(id.debugDescription): unknown, not finished yet, or its status expired (results.index_ttl_seconds)"))
            }
            // Oldest first, by stream id (`<ms>-<seq>`).
            entries.sort { Self.streamIDOrder($0.streamID, $1.streamID) }
            respond(Self.json(200, "{\"id\":\(jsonEscaped(id)),\"results\":[" + entries.map(\.json).joined(separator: ",") + "]}"))
        }
    }

    /// An index entry of a scoped job with the id its producer knows: the entry's `id` member (the first after `queue`,
    /// as `ResultEntry.indexJSON` writes it) made `id`.
    static func unscoped(_ json: String, jobID: String, id: String) -> String {
        guard let range = json.range(of: ",\"id\":" + jsonEscaped(jobID) + ",") else { return json }
        return json.replacingCharacters(in: range, with: ",\"id\":" + jsonEscaped(id) + ",")
    }

    /// An index entry with the path of the device it was for (`device`), when it names the app, platform and token.
    static func namingDevice(_ json: String, _ fields: [String: String]) -> String {
        guard let app = fields["app"], let platform = fields["platform"], let token = fields["token"], json.hasSuffix("}") else { return json }
        return json.dropLast() + ",\"device\":" + jsonEscaped(devicePath(app: app, platform: platform, token: token)) + "}"
    }

    /// A key limited to apps or queues sees only entries of its apps and queues: another's look the same as none.
    static func mayRead(_ fields: [String: String], key: APIAccess.Key?, shards: QueueShards) -> Bool {
        guard let key else { return true }
        if !key.apps.isEmpty && !key.apps.contains(fields["app"] ?? "") { return false }
        if !key.queues.isEmpty && !key.queues.contains(shards.configuredQueue(fields["queue"] ?? "")) { return false }
        return true
    }

    /// An index entry's members (every value a string, as the completion script writes them); nil otherwise.
    static func flatObject(_ json: String) -> [String: String]? {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] else { return nil }
        return object.compactMapValues { $0 as? String }
    }

    static func streamIDOrder(_ a: String, _ b: String) -> Bool {
        func parts(_ s: String) -> (UInt64, UInt64) {
            let p = s.split(separator: "-")
            return (UInt64(p.first ?? "") ?? 0, p.count > 1 ? UInt64(p[1]) ?? 0 : 0)
        }
        return parts(a) < parts(b)
    }
}
