import Foundation
import HeraldProviders
import ProviderKit
import Testing
import Worker

/// `registry.apps`: each configured app's default time zone and quiet hours for its campaigns (docs/campaigns.md).
@Suite struct RegistryAppsSettingTests {
    private func load(_ apps: String) -> Result<Configuration, ConfigurationError> {
        let text = #"{"apps": [{"name": "shop", "bundle_id": "com.example.shop", "token": {"team_id": "ABCDE12345", "key_id": "KEY1234567", "key_file": "k.p8"}}], "registry": {"apps": \#(apps)}}"#
        let root = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        do { return .success(try ConfigurationLoader.load(root: root, environment: [:])) } catch { return .failure(error) }
    }

    @Test func anAppsZoneAndQuietHoursAreReadAndBadOnesRefused() throws {
        let read = try load(#"{"shop": {"time_zone": "Europe/Berlin", "quiet_hours": {"start": "22:00", "end": "08:00"}}}"#).get()
        #expect(read.registry.apps["shop"] == .init(timeZone: "Europe/Berlin", quietHours: QuietHours(start: "22:00", end: "08:00", members: 2)))
        func problems(_ apps: String) -> [String] { if case .failure(let error) = load(apps) { error.problems } else { [] } }
        #expect(problems(#"{"shop": {"time_zone": "CET+1"}}"#) == ["registry.apps.shop.time_zone must be an IANA time zone such as Europe/Berlin"])
        #expect(problems(#"{"shop": {"quiet_hours": {"start": "22:00", "end": "8:00"}}}"#)
            == ["registry.apps.shop.quiet_hours: \(QuietHours.rule)"])
        #expect(problems(#"{"shop": {"zone": "UTC"}}"#) == [#"registry.apps.shop must be {"time_zone", "quiet_hours"}"#])
        #expect(problems(#"{"shoe": {"time_zone": "UTC"}}"#) == ["registry.apps.shoe is not a configured app"])
    }
}
