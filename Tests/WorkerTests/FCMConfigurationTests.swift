import APNs
import Foundation
import HeraldProviders
import HeraldTestSupport
import PushCore
import Testing
import Worker

@Suite struct FCMConfigurationTests {
    private func write(_ json: String) throws -> String {
        let path = makeTemporaryDirectory("herald-config") + "/herald.json"
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func problems(_ json: String) -> [String] {
        do {
            _ = try ConfigurationLoader.load(path: try write(json), environment: [:])
            return []
        } catch let error as ConfigurationError {
            return error.problems
        } catch {
            return ["\(error)"]
        }
    }

    @Test func anFCMAppNeedsOnlyItsServiceAccountAndTheFCMSectionIsRead() throws {
        let json = #"{"fcm": {"url": "https://127.0.0.1:8444", "ca_file": "/etc/ca.pem", "connections_per_pool": 3, "token_timeout_ms": 5000}, "#
            + #""apps": [{"name": "android", "fcm": {"service_account_file": "/etc/herald/sa.json"}}, "#
            + #"{"name": "shop", "bundle_id": "com.example.shop", "token": {"team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "k.p8"}}]}"#
        let configuration = try ConfigurationLoader.load(path: try write(json), environment: ["HERALD_FCM_PROXY": "http://proxy:3128"])
        #expect(configuration.fcm.url == "https://127.0.0.1:8444" && configuration.fcm.caFile == "/etc/ca.pem")
        #expect(configuration.fcm.connectionsPerPool == 3 && configuration.fcm.tokenTimeoutMs == 5000)
        #expect(configuration.fcm.proxy == "http://proxy:3128")
        #expect(configuration.apps.map(\.platform) == [Platform.fcm, .apns])
        #expect(configuration.apps[0].fcm?.serviceAccountFile == "/etc/herald/sa.json")
    }

    @Test func fcmMistakesAreNamed() {
        let both = #"{"apps":[{"name":"a","fcm":{"service_account_file":"s.json"},"token":{"team_id":"ABCDE12345","key_id":"KEY1234567","key_file":"k"}}]}"#
        #expect(problems(both).contains { $0 == #"app 'a': an app takes one provider's credential, this one names APNs ("token" or "certificate") and FCM ("fcm"); make an app for each"# })
        #expect(problems(#"{"apps":[{"name":"a","fcm":{}}]}"#).contains { $0.contains("fcm.service_account_file is required") })
        #expect(problems(#"{"fcm":{"url":"http://x"},"apps":[{"name":"a","fcm":{"service_account_file":"s"}}]}"#)
            .contains { $0.hasPrefix("fcm.url must look like") })
        #expect(problems(#"{"apps":[{"name":"a","fcm":{"service_account_file":"s","key":"x"}}]}"#)
            .contains { $0.contains("unknown setting 'apps[0].fcm.key'") })
    }
}
