import Foundation
import HeraldProviders
import HeraldTestSupport
import Reactor
import RedisQueue
import Testing
import Worker

@Suite struct ClusterConfigurationTests {
    private let app = #""apps":[{"name":"shop","bundle_id":"com.example.shop","token":{"team_id":"ABCDE12345","key_id":"KEY1234567","key_file":"k.p8"}}]"#

    @Test func clusterModeRefusesOtherDatabasesUntaggedPrefixesAndBadSeeds() throws {
        let path = try writeConfigurationFile(#"{"redis":{"mode":"cluster","url":"redis://10.0.0.1:7000/2","prefix":"herald","cluster_nodes":["10.0.0.2:7000","redis://x/1"]},"# + app + "}")
        #expect {
            try ConfigurationLoader.load(path: path, environment: [:])
        } throws: { error in
            let text = "\(error)"
            return text.contains("only database 0") && text.contains("hash tag") && text.contains("'redis://x/1' is not host:port")
                && !text.contains("'10.0.0.2:7000'")
        }
        let typo = try writeConfigurationFile(#"{"redis":{"mode":"clustered"},"# + app + "}")
        #expect { try ConfigurationLoader.load(path: typo, environment: [:]) } throws: { "\($0)".contains("redis.mode must be") }
    }

    @Test func clusterModeWithATaggedPrefixLoads() throws {
        let path = try writeConfigurationFile(#"{"redis":{"mode":"cluster","url":"redis://10.0.0.1:7000","prefix":"{herald}","cluster_nodes":["10.0.0.2:7000"]},"# + app + "}")
        let configuration = try ConfigurationLoader.load(path: path, environment: [:])
        #expect(configuration.redis.mode == .cluster)
        #expect(configuration.redis.clusterNodes == ["10.0.0.2:7000"])
        #expect(try ConfigurationLoader.load(path: try writeConfigurationFile("{" + app + "}"), environment: [:]).redis.mode == .standalone)
    }

    @Test func clusterModeClientsRouteOverTheMasters() throws {
        let fixture = try RedisClusterFixture(masters: 3, replicasPerMaster: 0)
        defer { fixture.stop() }
        var settings = Configuration.RedisSettings()
        settings.mode = .cluster
        settings.url = "redis://127.0.0.1:\(fixture.ports[0])"
        settings.clusterNodes = ["127.0.0.1:\(fixture.ports[1])"]
        let redis = try settings.makeBlockingClient()
        defer { redis.close() }
        let keys = (0..<30).map { "cfg-\($0)" }
        #expect(try redis.pipeline(keys.map { ["SET", $0, $0] }) == Array(repeating: .simple("OK"), count: keys.count))
        #expect(try redis.pipeline(keys.map { ["GET", $0] }).map(\.string) == keys)
        let loop = try EventLoop.startThread(name: "cluster-config")
        defer { loop.stop(); _ = loop.waitUntilStopped() }
        let frozen = settings
        let isCluster = try loop.submit { () throws -> Bool in
            let client = try frozen.makeClient(loop: loop)
            defer { client.close() }
            return client is RedisCluster
        }
        #expect(isCluster)
    }
}
