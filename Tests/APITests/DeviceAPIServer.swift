import API
import Foundation
import HeraldProviders
import HeraldTestSupport
import Reactor
import RedisQueue
import Worker

/// `herald api`'s front door and server in this process, on a loop of its own, against a Redis: the configuration
/// is the test's to change after it is read (`registry.enabled`), as a file cannot say everything a test needs.
final class DeviceAPIServer {
    let loop: EventLoop
    private let parts: LoopBound<(server: HTTP1Server, redis: any RedisCommandSender)>
    let url: String

    init(redisURL: String, redisExtra: String = "", api: String = "{}", apps: String = APIProcess.shopApp, sections: String = "",
         registry: Bool = true) throws {
        let text = #"{"redis": {"url": "\#(redisURL)"\#(redisExtra)}, "api": \#(api), "apps": [\#(apps)]\#(sections.isEmpty ? "" : ", " + sections)}"#
        let root = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        var configuration = try ConfigurationLoader.load(root: root, providers: heraldProviders, environment: [:])
        configuration.registry.enabled = registry
        let frozen = configuration
        let shards = try configuration.redis.queueShards()
        let loop = try EventLoop.startThread(name: "test-api")
        self.loop = loop
        parts = try loop.submit {
            let redis = try frozen.redis.makeClient(loop: loop)
            redis.start()
            var settings = FrontDoor.Settings()
            settings.maxJobsPerRequest = frozen.api.maxJobsPerRequest
            let door = try FrontDoor(configuration: frozen, shards: shards, redis: redis, settings: settings, readiness: { redis.isConnected })
            let server = try HTTP1Server(loop: loop, host: "127.0.0.1", port: 0, errorBody: { door.rejectRequest($0, $1) },
                                         headCheck: { door.decideFromHead($0) }) { door.handle($0, respond: $1) }
            return LoopBound((server, redis as any RedisCommandSender), loop: loop)
        }
        let parts = self.parts
        url = "http://127.0.0.1:\(try loop.submit { parts.value.server.port })/"
    }

    deinit {
        let parts = self.parts
        try? loop.submit {
            parts.value.server.close()
            parts.value.redis.close()
        }
        loop.stop()
        loop.waitUntilStopped(timeoutSeconds: 5)
    }
}
