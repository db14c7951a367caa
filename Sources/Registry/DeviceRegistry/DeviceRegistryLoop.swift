import ProviderKit
import PushCore
import Reactor
import RedisQueue

/// The registry's operations on an event loop (`herald api`): `DeviceCalls` sent with a `RedisCommandSender`,
/// each answered once Redis has replied, the commands of one step pipelined. What `DeviceRegistry` does
/// blocking, without a thread of its own. Loop-confined (the sender's loop).
public final class DeviceRegistryLoop {
    public typealias Done<T> = (Result<T, RedisError>) -> Void

    public let redis: any RedisCommandSender
    public let calls: DeviceCalls
    /// The campaigns' commands (`/v1/campaigns`), over the same shards.
    public let campaignCalls: CampaignCalls
    /// Milliseconds since the epoch.
    public let clock: () -> Int64

    public init(redis: any RedisCommandSender, shards: QueueShards, settings: Configuration.RegistrySettings,
                clock: @escaping () -> Int64 = wallClockMillis) {
        self.redis = redis
        calls = DeviceCalls(shards: shards.shards.map { DeviceKeys($0.keys) }, eventsMax: settings.eventsMaxLength)
        campaignCalls = CampaignCalls(shards: shards)
        self.clock = clock
    }

    /// Registers or refreshes a device: the event written (`registered`, `refreshed` or `moved`).
    public func register(_ id: DeviceID, _ attributes: DeviceAttributes, history: DeviceHistory = DeviceHistory(), done: @escaping Done<String>) {
        run(calls.register(id, attributes, history: history, now: clock())) { done($0.map(DeviceCalls.registered)) }
    }

    /// Unregisters a device: false when it was not registered.
    public func unregister(_ id: DeviceID, reason: String = "unregistered", done: @escaping Done<Bool>) {
        run(calls.unregister(id, reason: reason, now: clock())) { done($0.map(DeviceCalls.unregistered)) }
    }

    public func device(_ id: DeviceID, done: @escaping Done<Device?>) {
        sendAll(calls.device(id)) { done($0.map { DeviceCalls.device(id, replies: $0) }) }
    }

    /// `owner`'s devices in `app` (active and stale; `platform`'s only, when given), at most `limit`; `more` when the
    /// index holds others.
    public func devices(app: String, owner: String, platform: Platform? = nil, limit: Int, done: @escaping Done<(devices: [Device], more: Bool)>) {
        indexed(app: app, name: owner, platform: platform, limit: limit, key: { $0.owners(app: app) }, done: done)
    }

    /// The active and stale devices of `app` subscribed to `topic` (`platform`'s only, when given), at most `limit`;
    /// `more` when there are others.
    public func devices(app: String, topic: String, platform: Platform? = nil, limit: Int, done: @escaping Done<(devices: [Device], more: Bool)>) {
        indexed(app: app, name: topic, platform: platform, limit: limit, key: { $0.topics(app: app) }, done: done)
    }

    /// One page of an app's devices, as `DeviceRegistry.page` reads it.
    public func page(app: String, platform: Platform?, cursor: String, count: Int, done: @escaping Done<(devices: [Device], next: String?)>) {
        step(DeviceCalls.Page(app: app, platform: platform, cursor: cursor, count: count, shardCount: calls.shards.count), done: done)
    }

    private func step(_ page: DeviceCalls.Page, done: @escaping Done<(devices: [Device], next: String?)>) {
        guard !page.done else { return done(.success(([], nil))) }
        redis.send(page.command(calls.shards)) { [self] result in
            var next = page
            switch result {
            case .failure(let error): done(.failure(error))
            case .success(let reply):
                let read = next.read(reply, calls.shards)
                // An empty scan step (HSCAN may return none): go on, as the blocking page does.
                guard let hmget = read.delivered else { return step(next, done: done) }
                redis.send(hmget) { delivered in
                    done(delivered.map { (DeviceCalls.Page.devices(read.ids, records: read.records, delivered: $0), next.cursor) })
                }
            }
        }
    }

    private func indexed(app: String, name: String, platform: Platform?, limit: Int, key: (DeviceKeys) -> String,
                         done: @escaping Done<(devices: [Device], more: Bool)>) {
        // One more than asked from each shard: whether there are more is known without counting them.
        sendAll(calls.shards.map { DeviceCalls.indexRange(key($0), name: name, platform: platform, limit: limit + 1) }) { [self] result in
            switch result {
            case .failure(let error): done(.failure(error))
            case .success(let replies):
                let ids = replies.flatMap { DeviceCalls.indexed(app: app, $0) }
                let taken = Array(ids.prefix(limit))
                sendAll(taken.flatMap { calls.device($0) }) { records in
                    done(records.map { replies in
                        let devices = taken.indices.compactMap { DeviceCalls.device(taken[$0], replies: Array(replies[2 * $0 ..< 2 * $0 + 2])) }
                        return (devices, ids.count > limit)
                    })
                }
            }
        }
    }

    private func run(_ call: DeviceCalls.ScriptCall, done: @escaping Done<RESPValue>) {
        redis.evalScript(call.script, keys: call.keys, args: call.args, completion: done)
    }

    /// Sends every command at once; `done` gets their replies in order once all came, or the first failure.
    func sendAll(_ commands: [[[UInt8]]], done: @escaping Done<[RESPValue]>) {
        together(commands.map { command in { [redis] in redis.send(command, completion: $0) } }, done: done)
    }

    /// Runs every script call at once (a campaign's, one per shard), as `sendAll`.
    func runAll(_ calls: [DeviceCalls.ScriptCall], done: @escaping Done<[RESPValue]>) {
        together(calls.map { call in { [redis] in redis.evalScript(call.script, keys: call.keys, args: call.args, completion: $0) } }, done: done)
    }

    private func together(_ sends: [(@escaping RedisConnection.Completion) -> Void], done: @escaping Done<[RESPValue]>) {
        guard !sends.isEmpty else { return done(.success([])) }
        let pending = Pending(count: sends.count)
        for (index, send) in sends.enumerated() {
            send { result in
                switch result {
                case .success(let reply): pending.replies[index] = reply
                case .failure(let error): if pending.failure == nil { pending.failure = error }
                }
                pending.remaining -= 1
                if pending.remaining == 0 { done(pending.failure.map { .failure($0) } ?? .success(pending.replies)) }
            }
        }
    }

    private final class Pending {
        var replies: [RESPValue]
        var remaining: Int
        var failure: RedisError?
        init(count: Int) {
            replies = Array(repeating: .bulk(nil), count: count)
            remaining = count
        }
    }
}
