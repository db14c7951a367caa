import Foundation
import Glibc
import HeraldTestSupport
import Reactor
@testable import RedisQueue

/// The shared throwaway Redis from scripts/test (HERALD_TEST_REDIS_URL), or one started for this test process.
enum TestRedis {
    /// The server started when scripts/test did not start one; stopped at exit by its pid.
    nonisolated(unsafe) private static var own: RedisServer?

    static let url: RedisURL = {
        if let text = sharedRedisURL, let url = try? RedisURL(parsing: text) {
            return url
        }
        let server = try! RedisServer()
        own = server
        atexit { TestRedis.own?.stop() }
        return server.redisURL
    }()

    static func keys(_ name: String = #function) -> QueueKeys {
        let clean = name.filter { $0.isLetter || $0.isNumber }
        return try! QueueKeys(prefix: "t-\(clean)-\(UInt32.random(in: 0...UInt32.max))")
    }

    /// A client whose scripts run key-checked (`KeyCheck`): every test through it also shows that the scripts
    /// touch only the keys they declare.
    static func blocking(_ url: RedisURL = TestRedis.url) throws -> KeyCheckedRedis { KeyCheckedRedis(try BlockingRedis(url: url)) }
}

final class Box<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
