import Foundation
import HeraldProviders
import HeraldTestSupport
import Testing
import Worker

/// `redis.tls`: read from the file and the environment, and every problem named by its key before a
/// connection is tried.
@Suite struct RedisTLSConfigurationTests {
    private static let app = #""apps":[{"name":"shop","bundle_id":"com.example.shop","token":{"team_id":"ABCDE12345","key_id":"KEY1234567","key_file":"k.p8"}}]"#

    private func load(_ redis: String, environment: [String: String] = [:]) throws -> Result<Configuration, ConfigurationError> {
        let path = makeTemporaryDirectory("herald-config") + "/herald.json"
        try Data("{\"redis\":\(redis),\(Self.app)}".utf8).write(to: URL(fileURLWithPath: path))
        return Result { () throws(ConfigurationError) in try ConfigurationLoader.load(path: path, environment: environment) }
    }

    @Test func theTLSKeysAndTheirOverridesAreReadAndVerificationIsOnByDefault() throws {
        let certificates = try TLSTestCertificates(directory: makeTemporaryDirectory("herald-tls-config"))
        defer { try? FileManager.default.removeItem(atPath: certificates.directory) }
        let configuration = try load(#"{"url":"rediss://redis.example.com:6380/0","tls":{"ca_file":"\#(certificates.caFile)","server_name":"cache"}}"#,
                                     environment: ["HERALD_REDIS_TLS_CERT_FILE": certificates.clientCertificate,
                                                   "HERALD_REDIS_TLS_KEY_FILE": certificates.clientKey]).get()
        let tls = configuration.redis.tls
        #expect(tls.caFile == certificates.caFile && tls.serverName == "cache" && tls.verify)
        #expect(tls.certFile == certificates.clientCertificate && tls.keyFile == certificates.clientKey)
        // A CA file replaces the system store instead of adding to it.
        #expect(!tls.tlsConfiguration.useSystemTrustStore && tls.tlsConfiguration.verifyPeer)
        #expect(try load(#"{"url":"rediss://redis.example.com:6380/0"}"#).get().redis.tls.tlsConfiguration.useSystemTrustStore)
    }

    @Test func eachTLSMistakeIsNamedByItsKey() throws {
        func problems(_ redis: String) throws -> [String] {
            guard case .failure(let error) = try load(redis) else { return [] }
            return error.problems
        }
        let missing = try problems(#"{"url":"rediss://h:6380/0","tls":{"key_file":"/nonexistent/key.pem","verify":"yes","ciphers":"x"}}"#)
        #expect(missing.contains { $0.contains("redis.tls.key_file /nonexistent/key.pem: no such file") }, "\(missing)")
        #expect(missing.contains { $0.contains("redis.tls.key_file needs redis.tls.cert_file") }, "\(missing)")
        #expect(missing.contains { $0.contains("redis.tls.verify must be") }, "\(missing)")
        #expect(missing.contains { $0.contains("unknown setting 'redis.tls.ciphers'") }, "\(missing)")
        let plain = try problems(#"{"url":"redis://h:6379/0","tls":{"verify":false}}"#)
        #expect(plain.contains { $0.contains("redis.url is not rediss://") }, "\(plain)")
        let empty = try problems(#"{"url":"rediss://h:6380/0","tls":{"server_name":""}}"#)
        #expect(empty.contains { $0.contains("redis.tls.server_name is empty") }, "\(empty)")
    }
}
