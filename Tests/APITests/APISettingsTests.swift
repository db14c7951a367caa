import Foundation
import HeraldProviders
import Testing
@testable import API
import Worker

/// `api.*` in the configuration file: what the loader refuses, and the key bucket's arithmetic.
@Suite struct APISettingsTests {
    private func problems(_ api: String) -> [String] {
        let text = #"{"apps": [{"name": "shop", "bundle_id": "com.example.shop", "token": {"team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "k.p8"}}], "api": \#(api)}"#
        let root = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        do {
            _ = try ConfigurationLoader.load(root: root, environment: [:])
            return []
        } catch {
            return error.problems
        }
    }

    @Test func keysMustBeHashesNamingConfiguredAppsAndQueues() {
        let hash = String(repeating: "ab", count: 32)
        #expect(problems(#"{"keys": [{"name": "k", "sha256": "\#(hash)", "apps": ["shop"], "rate_per_second": 10}]}"#).isEmpty)
        #expect(problems(#"{"keys": [{"name": "k", "sha256": "plain-secret"}]}"#)
            == ["api.keys[0].sha256 must be 64 hex digits: the SHA-256 of the key, not the key"])
        #expect(problems(#"{"keys": [{"name": "k", "sha256": "\#(hash)", "apps": ["nope"], "queues": ["elsewhere"]}]}"#)
            == ["api.keys: key 'k' names app 'nope', which is not configured", "api.keys: key 'k' names queue 'elsewhere', which is not one of redis.queues"])
        // Issue 51: the same hash twice was taken, the last entry's grants winning; it is refused, in any case of hex.
        #expect(problems(#"{"keys": [{"name": "k", "sha256": "\#(hash)"}, {"name": "k", "sha256": "\#(hash)", "rate_per_second": -1}]}"#)
            == ["api.keys[1].rate_per_second must be a whole number 0...1000000", "api.keys: the name 'k' is given twice",
                "api.keys: key 'k' has the sha256 of key 'k': each key needs its own secret"])
        #expect(problems(#"{"keys": [{"name": "a", "sha256": "\#(hash)"}, {"name": "b", "sha256": "\#(hash.uppercased())", "apps": ["shop"]}]}"#)
            == ["api.keys: key 'b' has the sha256 of key 'a': each key needs its own secret"])
    }

    @Test func theTLSFilesGoTogether() {
        #expect(problems(#"{"tls": {"cert_file": "c.pem"}}"#) == ["api.tls: cert_file and key_file go together (give both, or neither for plain HTTP)"])
        #expect(problems(#"{"tls": {"client_ca_file": "ca.pem"}}"#)
            == ["api.tls.client_ca_file needs cert_file and key_file: client certificates are asked for over TLS only"])
    }

    @Test func theBucketRefillsAtItsRateAndSaysHowLongToWait() {
        var bucket = TokenBucket(rate: 2, capacity: 4)
        let second: UInt64 = 1_000_000_000
        #expect(bucket.take(4, now: 10 * second) == nil)
        #expect(bucket.take(1, now: 10 * second) == 1)
        // Half a second refills one.
        #expect(bucket.take(1, now: 10 * second + second / 2) == nil)
        #expect(bucket.take(3, now: 10 * second + second / 2) == 2)
        // More than the bucket holds never fits (the front door answers 413 first); nothing is taken.
        #expect(bucket.take(9, now: 20 * second) == 1)
        #expect(bucket.take(4, now: 20 * second) == nil)
    }

    @Test func aPresentedKeyIsLookedUpByItsSHA256() {
        #expect(APIAccess.sha256Hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
