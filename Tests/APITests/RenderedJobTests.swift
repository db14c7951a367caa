import Foundation
import HeraldProviders
import HeraldTestSupport
import PushCore
import ProviderKit
import RedisQueue
import Testing
@testable import Worker

/// Every provider's rendering of a neutral notification (docs/notifications.md) is a job the worker takes: read
/// and admitted by its provider as the worker's intake does, never dead-lettered or rejected, and within the
/// published job schema.
@Suite(.serialized) struct RenderedJobTests {
    /// A device of each platform, for its app of `JobSchemaTests.app(of:)`.
    static func device(_ platform: Platform, locale: String?) -> RenderDevice {
        var device = RenderDevice(app: JobSchemaTests.app(of: platform).name, locale: locale, id: "n-\(platform.rawValue)",
                                  envelope: ["traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "user_id": 42])
        switch platform.rawValue {
        case "apns": device.token = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
        case "webpush": device.subscription = NotificationFixtures.webPushSubscription
        case "expo": device.token = "ExponentPushToken[xxxxxxxxxxxxxxxxxxxxxx]"
        default: device.token = "dGVzdA:APA91bHeraldRenderToken"
        }
        return device
    }

    /// The notifications rendered: every member with each variant chosen, the title alone, and one with overrides
    /// for every platform.
    static var notifications: [(String, NeutralNotification, String?)] {
        var overridden = NotificationFixtures.full
        overridden.overrides = [
            .apns: ["expiration": 0, "payload": ["aps": ["sound": ["critical": 1, "name": "alarm.caf", "volume": 1]]]],
            .fcm: ["message": ["android": ["ttl": "3600s"]]], .webpush: ["ttl": 60, "payload": ["mutable": true]],
            .hms: ["message": ["android": ["notification": ["badge": ["add_num": 1, "class": "com.example.Main"]]]]],
            .harmony: ["pushOptions": ["ttl": 3600, "biTag": "orders"]], .expo: ["payload": ["channelId": "orders", "ttl": 60]],
        ]
        return [("full", NotificationFixtures.full, "de-AT"), ("full", NotificationFixtures.full, "pt_BR"), ("full", NotificationFixtures.full, nil),
                ("minimal", NotificationFixtures.minimal, "de"), ("overridden", overridden, "en")]
    }

    /// The platforms whose providers render (rendering is optional for a provider: docs/adding-a-provider.md), at
    /// least the six of issue 50.
    static var rendering: [Platform] {
        Platform.allCases.filter { platform in
            do throws(NotificationError) {
                _ = try heraldProviders.provider(for: platform).render(NotificationFixtures.minimal, for: device(platform, locale: nil))
            } catch {
                return error.code != "not_rendered"
            }
            return true
        }
    }

    static func rendered() throws -> [(Platform, String, [UInt8])] {
        #expect(Set(rendering.map(\.rawValue)).isSuperset(of: ["apns", "fcm", "webpush", "hms", "harmony", "expo"]), "\(rendering)")
        return try rendering.flatMap { platform in
            try notifications.map { name, n, locale in
                (platform, "\(name) \(locale ?? "-")", try heraldProviders.provider(for: platform).render(n, for: device(platform, locale: locale)))
            }
        }
    }

    @Test func everyProviderRendersJobsItsIntakeAdmits() throws {
        let intake = JobIntake(directory: AppDirectory(Platform.allCases.map(JobSchemaTests.app(of:))), providers: heraldProviders)
        for (platform, name, job) in try Self.rendered() {
            let lease = Lease(id: "l1", queueKey: "herald:queue", raw: job)
            let outcome = intake.admit(lease, claimedAt: 0, wallMillis: 1_764_590_000_000, makeID: { "made" })
            guard case .accepted(let attempt) = outcome else {
                Issue.record("\(platform.rawValue) \(name): not admitted (\(outcome)): \(String(decoding: job, as: UTF8.self))")
                continue
            }
            #expect(attempt.id == "n-\(platform.rawValue)" && attempt.destination.platform == platform && attempt.appName == JobSchemaTests.app(of: platform).name,
                    "\(platform.rawValue) \(name)")
        }
    }

    @Test func everyRenderedJobMatchesTheJobSchema() throws {
        let lines = try Self.rendered().map { String(decoding: $0.2, as: UTF8.self) }
        let file = makeTemporaryDirectory("herald-render") + "/rendered.jsonl"
        try lines.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let quoted = [JobSchemaTests.script, "schemas/job.schema.json", file].map { "'\($0)'" }.joined(separator: " ")
        let (output, status) = try run("sh", ["-c", "cd '\(JobSchemaTests.root)' && python3 \(quoted)"])
        #expect(status == 0, "\(output)")
    }

}
