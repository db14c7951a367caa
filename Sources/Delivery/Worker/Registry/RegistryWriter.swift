import DeviceRegistry
import PushCore
import Reactor
import RedisQueue

/// The worker's side of the device registry (`registry.enabled`): each completion batch's dropped and delivered
/// tokens, sent as `RegistryScripts.settle` calls on the connection the batch's completion then goes on, so they
/// ride in the same write (no round trip of their own) and Redis runs them first. A call that fails is not retried:
/// its device stays until a provider answers its token gone again (the next send to it), which is logged.
/// Loop-confined.
final class RegistryWriter {
    private let queues: [JobQueue]
    private let shards: [DeviceKeys]
    private let eventsMax: Int
    private let logger: Logger
    private var failures = WarningThrottle(seconds: 30)

    init(queues: [JobQueue], settings: Configuration.RegistrySettings, logger: Logger) {
        self.queues = queues
        self.shards = queues.map { DeviceKeys($0.keys) }
        self.eventsMax = settings.eventsMaxLength
        self.logger = logger
    }

    func record(_ batch: [JobCompletion]) {
        for update in RegistryUpdate.updates(for: batch, shards: shards, now: wallClockMillis(), eventsMax: eventsMax) {
            queues[update.shard].connection.evalScript(RegistryScripts.settle, keys: update.keys, args: update.args) { [weak self] result in
                guard case .failure(let error) = result, let self, error != .closed, self.failures.allow() else { return }
                self.logger.warning("device registry update failed; a dropped device stays until its token is answered gone again", [
                    "error": .string(error.description),
                ])
            }
        }
    }
}

/// The registry's sweeper in every worker (`registry.sweep_interval_ms`): one bounded `RegistryScripts.sweep` per
/// list and shard, at once again while some list had more due than a batch. Many workers sweeping only share the
/// work: each call is atomic and finds what the others left. Loop-confined.
final class RegistrySweeper {
    private let queues: [JobQueue]
    private let shards: [DeviceKeys]
    private let settings: Configuration.RegistrySettings
    private let logger: Logger
    private var timer: LoopTimer?
    private var failures = WarningThrottle(seconds: 300)

    init(queues: [JobQueue], settings: Configuration.RegistrySettings, logger: Logger) {
        self.queues = queues
        self.shards = queues.map { DeviceKeys($0.keys) }
        self.settings = settings
        self.logger = logger
    }

    func start() { schedule(afterMilliseconds: settings.sweepIntervalMs) }

    func stop() {
        timer?.cancel()
        timer = nil
    }

    private func schedule(afterMilliseconds ms: Int) {
        timer = queues[0].connection.loop.schedule(afterMilliseconds: ms) { [weak self] in self?.sweep() }
    }

    private func sweep() {
        var pending = shards.count
        var more = false
        let now = wallClockMillis()
        let done: (Bool) -> Void = { [weak self] full in
            more = more || full
            pending -= 1
            guard pending == 0, let self, self.timer != nil else { return }
            self.schedule(afterMilliseconds: more ? 10 : self.settings.sweepIntervalMs)
        }
        for (index, keys) in shards.enumerated() {
            let connection = queues[index].connection
            connection.send(["SMEMBERS", keys.lists].map { Array($0.utf8) }) { [weak self] result in
                guard let self else { return }
                let lists: [(platform: Platform, app: String)] = ((try? result.get())?.array ?? []).compactMap { member in
                    guard let text = member.string, let colon = text.firstIndex(of: ":"), let platform = Platform(rawValue: String(text[..<colon])) else { return nil }
                    return (platform, String(text[text.index(after: colon)...]))
                }
                if case .failure(let error) = result { self.failed(error) }
                var left = lists.count
                var full = false
                guard left > 0 else { return done(false) }
                for list in lists {
                    let call = DeviceRegistry.call(keys, app: list.app, platform: list.platform.rawValue, now: now, eventsMax: self.settings.eventsMaxLength,
                                                   DeviceRegistry.sweepBounds(self.settings, platform: list.platform, now: now))
                    connection.evalScript(RegistryScripts.sweep, keys: call.keys, args: call.args) { [weak self] reply in
                        switch reply {
                        case .success(let value):
                            full = full || (value.array ?? []).contains { ($0.int ?? 0) >= Int64(self?.settings.sweepBatch ?? .max) }
                        case .failure(let error): self?.failed(error)
                        }
                        left -= 1
                        if left == 0 { done(full) }
                    }
                }
            }
        }
    }

    private func failed(_ error: RedisError) {
        guard error != .closed, failures.allow() else { return }
        logger.warning("device registry sweep failed; the next one goes on", ["error": .string(error.description)])
    }
}
