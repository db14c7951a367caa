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
        var key: APIAccess.Key?
        switch access.authenticate(request) {
        case .open: key = nil
        case .refused(let code, let message): return respond(Self.error(401, code, message, headers: [("WWW-Authenticate", "Bearer")]))
        case .key(let presented): key = presented
        }
        guard !id.isEmpty else { return respond(Self.error(404, "not_found", "no job id in the path: GET /v1/jobs/<id>")) }
        guard indexTTLSeconds > 0 else {
            return respond(Self.error(404, "not_found", "no job status is kept: results.index_ttl_seconds is 0 (see docs/api.md, \"Job status\")"))
        }
        let shard = shards.shards[shards.shard(forJobID: id)]
        redis.send([Array("HGETALL".utf8), Array(shard.keys.resultIndex(jobID: id).utf8)]) { [shards] result in
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
                    entries.append((fields["stream_id"] ?? "", json))
                }
                index += 2
            }
            guard !entries.isEmpty else {
                return respond(Self.error(404, "not_found", "no results for job \(id.debugDescription): unknown, not finished yet, or its status expired (results.index_ttl_seconds)"))
            }
            // Oldest first, by stream id (`<ms>-<seq>`).
            entries.sort { Self.streamIDOrder($0.streamID, $1.streamID) }
            respond(Self.json(200, "{\"id\":\(jsonEscaped(id)),\"results\":[" + entries.map(\.json).joined(separator: ",") + "]}"))
        }
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
