import DeviceRegistry
import PushCore
import Reactor
import RedisQueue

/// The worker's side of the device registry (`registry.enabled`): each completion batch's dropped and delivered
/// tokens, sent as `RegistryScripts.settle` calls just before the batch's completion, so a device answered gone is
/// usually removed at once without a round trip of its own. Sent on the client itself, not through `redis.wait_replicas`'
/// WAIT (the completion's own WAIT follows). Not retried: a call that is lost (a worker killed before it reached
/// Redis, the device's cluster master down) is made good by the sweeper's `DroppedFollow` from the dropped-tokens
/// stream, which the completion writes atomically. Loop-confined.
final class RegistryWriter {
    private let redis: any RedisCommandSender
    private let shards: [DeviceKeys]
    private let eventsMax: Int
    private let logger: Logger
    private var failures = WarningThrottle(seconds: 30)

    init(redis: any RedisCommandSender, shards: [DeviceKeys], settings: Configuration.RegistrySettings, logger: Logger) {
        self.redis = redis
        self.shards = shards
        self.eventsMax = settings.eventsMaxLength
        self.logger = logger
    }

    func record(_ batch: [JobCompletion]) {
        for update in RegistryUpdate.updates(for: batch, shards: shards, now: wallClockMillis(), eventsMax: eventsMax) {
            redis.evalScript(RegistryScripts.settle, keys: update.keys, args: update.args) { [weak self] result in
                guard case .failure(let error) = result, let self, error != .closed, self.failures.allow() else { return }
                self.logger.warning("device registry update failed; the sweeper removes its dropped devices from the dropped-tokens stream", [
                    "error": .string(error.description),
                ])
            }
        }
    }
}

/// The registry's sweeper in every worker (`registry.sweep_interval_ms`). Per shard: one `DroppedFollow` step (the
/// removals the completions' own calls missed), then one bounded `RegistryScripts.sweep` per list; at once again while
/// something had more than a batch. Many workers sweeping only share the work: each call is atomic and finds what the
/// others left, and the follow cursor only moves forward. Loop-confined.
final class RegistrySweeper {
    private let redis: any RedisCommandSender
    private let shards: [DeviceKeys]
    private let settings: Configuration.RegistrySettings
    private let logger: Logger
    private var timer: LoopTimer?
    private var failures = WarningThrottle(seconds: 300)

    init(redis: any RedisCommandSender, shards: [DeviceKeys], settings: Configuration.RegistrySettings, logger: Logger) {
        self.redis = redis
        self.shards = shards
        self.settings = settings
        self.logger = logger
    }

    func start() { schedule(afterMilliseconds: settings.sweepIntervalMs) }

    func stop() {
        timer?.cancel()
        timer = nil
    }

    private func schedule(afterMilliseconds ms: Int) {
        timer = redis.loop.schedule(afterMilliseconds: ms) { [weak self] in self?.sweep() }
    }

    private func bytes(_ command: [String]) -> [[UInt8]] { command.map { Array($0.utf8) } }

    /// Counts the steps still running; reschedules once all are done.
    private final class Pass {
        var pending = 0
        var more = false
    }

    private func sweep() {
        let pass = Pass()
        let now = wallClockMillis()
        let finished: (Bool) -> Void = { [weak self] more in
            pass.more = pass.more || more
            pass.pending -= 1
            guard pass.pending == 0, let self, self.timer != nil else { return }
            self.schedule(afterMilliseconds: pass.more ? 10 : self.settings.sweepIntervalMs)
        }
        pass.pending = shards.count * 2
        for keys in shards {
            follow(keys, now: now, done: finished)
            sweepLists(keys, now: now, done: finished)
        }
    }

    private func follow(_ keys: DeviceKeys, now: Int64, done: @escaping (Bool) -> Void) {
        redis.send(bytes(["GET", keys.droppedCursor])) { [weak self] result in
            guard let self else { return }
            guard case .success(let value) = result else { return self.failed(result, done) }
            let cursor = value.string
            self.redis.send(DroppedFollow.read(keys, cursor: cursor)) { [weak self] result in
                guard let self else { return }
                guard case .success(let reply) = result else { return self.failed(result, done) }
                let read = DroppedFollow.entries(reply)
                let updates = cursor == nil ? [] : RegistryUpdate.updates(results: [], dropped: read.dropped, shards: self.shards, now: now,
                                                                           eventsMax: self.settings.eventsMaxLength)
                var left = updates.count
                var ok = true
                let advance = { [weak self] in
                    guard let self, ok, let move = DroppedFollow.advance(keys, from: cursor, to: read.last) else { return done(false) }
                    self.redis.evalScript(RegistryScripts.advance, keys: move.keys, args: move.args) { [weak self] result in
                        if case .failure = result { self?.failed(result, done) } else { done(cursor != nil && read.dropped.count >= DroppedFollow.batch) }
                    }
                }
                guard left > 0 else { return advance() }
                for update in updates {
                    self.redis.evalScript(RegistryScripts.settle, keys: update.keys, args: update.args) { [weak self] result in
                        if case .failure(let error) = result { ok = false; self?.warn(error) }
                        left -= 1
                        if left == 0 { advance() }
                    }
                }
            }
        }
    }

    private func sweepLists(_ keys: DeviceKeys, now: Int64, done: @escaping (Bool) -> Void) {
        redis.send(bytes(["SMEMBERS", keys.lists])) { [weak self] result in
            guard let self else { return }
            guard case .success(let value) = result else { return self.failed(result, done) }
            let lists: [(platform: Platform, app: String)] = (value.array ?? []).compactMap { member in
                guard let list = member.string.flatMap(DeviceKeys.list), let platform = Platform(rawValue: list.platform) else { return nil }
                return (platform, list.app)
            }
            var left = lists.count
            var full = false
            guard left > 0 else { return done(false) }
            for list in lists {
                let call = DeviceRegistry.call(keys, app: list.app, platform: list.platform.rawValue, now: now, eventsMax: self.settings.eventsMaxLength,
                                               DeviceRegistry.sweepBounds(self.settings, platform: list.platform, now: now))
                self.redis.evalScript(RegistryScripts.sweep, keys: call.keys, args: call.args) { [weak self] reply in
                    switch reply {
                    case .success(let value):
                        full = full || (value.array ?? []).contains { ($0.int ?? 0) >= Int64(self?.settings.sweepBatch ?? .max) }
                    case .failure(let error): self?.warn(error)
                    }
                    left -= 1
                    if left == 0 { done(full) }
                }
            }
        }
    }

    private func failed(_ result: Result<RESPValue, RedisError>, _ done: (Bool) -> Void) {
        if case .failure(let error) = result { warn(error) }
        done(false)
    }

    private func warn(_ error: RedisError) {
        guard error != .closed, failures.allow() else { return }
        logger.warning("device registry sweep failed; the next one goes on", ["error": .string(error.description)])
    }
}
