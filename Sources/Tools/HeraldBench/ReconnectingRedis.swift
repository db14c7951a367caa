import Basics
import Glibc
import Reactor
import RedisClient

/// A Redis connection for a bench client that must ride out Redis restarting (scripts/bench-campaign SIGKILLs it):
/// connects again every 100 ms until `deadline` (monotonic ns) when the connection is lost or Redis answers LOADING;
/// any other error reply is thrown at once.
/// A command whose reply was lost is sent again: fine for reads, and for a bench producer's LPUSH a job may then be
/// queued twice.
final class ReconnectingRedis {
    let url: RedisURL
    let deadline: UInt64
    private var redis: BlockingRedis?
    private(set) var reconnects = 0

    init(url: RedisURL, deadline: UInt64) {
        self.url = url
        self.deadline = deadline
    }

    func command(_ args: [String]) throws -> RESPValue { try command(args.map { Array($0.utf8) }) }

    func command(_ args: [[UInt8]]) throws -> RESPValue {
        while true {
            do {
                if redis == nil { redis = try BlockingRedis(url: url) }
                return try redis!.command(args)
            } catch .server(let message) where !message.hasPrefix("LOADING") {
                throw RedisError.server(message)
            } catch {
                redis?.close()
                redis = nil
                reconnects += 1
                guard monotonicNanos() < deadline else { throw error }
            }
            usleep(100_000)
        }
    }

    func close() { redis?.close() }
}
