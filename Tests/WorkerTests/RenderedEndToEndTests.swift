import Foundation
import HeraldProviders
import HeraldTestSupport
import PushCore
import Simulators
import Testing

extension EndToEnd {
    /// One neutral notification (docs/notifications.md) rendered for a device of every platform, pushed as a producer
    /// pushes jobs, sent by a worker: each simulator received what the rendering wrote, its German variant included.
    @Suite struct RenderedNotifications {
        @Test(.timeLimit(.minutes(2)))
        func aRenderedJobOfEveryPlatformReachesItsSimulatorAsRendered() throws {
            let world = try EndToEndWorld(fcmFaults: MockFCMFaultScript()) { $0.logPayloads = true }
            defer { world.shutdown(); world.removeFiles() }
            let fcm = try #require(world.fcm)
            let push = try MockWebPushServer(tls: world.tls)
            defer { push.stop() }
            var hmsConfiguration = MockHMSConfiguration()
            hmsConfiguration.tls = world.tls
            hmsConfiguration.recordAccepted = true
            hmsConfiguration.apps = [MockHMSApp(appId: "10000001", clientSecret: "render-secret")]
            let hms = try MockHMSServer(configuration: hmsConfiguration)
            defer { hms.stop() }
            var harmonyConfiguration = MockHarmonyConfiguration()
            harmonyConfiguration.tls = world.tls
            harmonyConfiguration.recordAccepted = true
            let harmony = try MockHarmonyServer(configuration: harmonyConfiguration)
            defer { harmony.stop() }
            let (expo, expoToken) = try world.startExpo(accessToken: "render-expo-token")
            defer { expo.stop() }
            let hmsSecret = world.directory + "/hms-secret", harmonyKey = world.directory + "/harmony-service-account.json"
            try Data("render-secret".utf8).write(to: URL(fileURLWithPath: hmsSecret))
            try harmony.account.write(to: harmonyKey)
            let subscription = try push.subscribe(prefix: "render-")

            let devices: [Platform: RenderDevice] = [
                .apns: RenderDevice(app: "main", token: deviceToken(prefix: "00", index: 1)),
                .fcm: RenderDevice(app: "android", token: "render-dGVzdA:APA91bHerald_e2e"),
                .webpush: RenderDevice(app: "web", subscription: JSONValue(parsing: Array(subscription.json.utf8))),
                .hms: RenderDevice(app: "huawei", token: "render-hms"),
                .harmony: RenderDevice(app: "harmony", token: "render-harmony"),
                .expo: RenderDevice(app: "rn", token: "ExponentPushToken[render-expo]"),
            ]
            var rendered: [Platform: JSONValue] = [:]
            for (platform, chosen) in devices {
                var device = chosen
                device.locale = "de_AT"
                device.id = "render-\(platform.rawValue)"
                let job = try heraldProviders.provider(for: platform).render(NotificationFixtures.full, for: device)
                rendered[platform] = JSONValue(parsing: job)
                try world.push([job])
            }

            let config = try world.writeConfig()
            var document = try #require(JSONValue(parsing: Array(try Data(contentsOf: URL(fileURLWithPath: config)))))
            guard case .array(let apps)? = document["apps"] else { Issue.record("no apps in \(config)"); return }
            let vapidKey = base64URLEncoded((1...32).map { UInt8($0) })
            let added: [JSONValue] = [
                ["name": "web", "webpush": ["vapid_key": .string(vapidKey), "subject": "mailto:e2e@example.com", "push_service_hosts": ["127.0.0.1"],
                                            "allow_ip_literals": true, "allow_private_addresses": true]],
                ["name": "huawei", "hms": ["app_id": "10000001", "client_secret_file": .string(hmsSecret)]],
                ["name": "harmony", "harmony": ["service_account_file": .string(harmonyKey)]],
                ["name": "rn", "expo": ["access_token_file": .string(expoToken)]],
            ]
            document = document.merged(with: [
                "apps": .array(apps + added), "web_push": ["ca_file": .string(world.tls.caFile ?? "")],
                "hms": ["url": .string(hms.baseURL), "token_url": .string(hms.tokenURL), "ca_file": .string(hms.caFile ?? "")],
                "harmony": ["url": .string(harmony.baseURL), "ca_file": .string(harmony.caFile ?? "")],
                "expo": ["url": .string(expo.baseURL), "ca_file": .string(expo.caFile ?? "")],
            ])
            try Data(document.bytes).write(to: URL(fileURLWithPath: config))
            try world.startWorker(id: "render", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            // Five terminal outcomes and Expo's ticket (its receipt comes from the scheduler, not run here).
            let finished = try ledger.waitForTerminal(5, seconds: 60)
            let deadline = Date().addingTimeInterval(20)
            while ledger.byJob["render-expo"]?.isEmpty != false && Date() < deadline { usleep(100_000); ledger.poll() }
            #expect(finished, "only \(ledger.terminalCount) results:\n\(world.workerLogs())")
            let outcomes = ledger.byJob.mapValues { $0.last?.outcome ?? "" }
            #expect(outcomes == ["render-apns": "delivered", "render-fcm": "delivered", "render-webpush": "delivered", "render-hms": "delivered",
                                 "render-harmony": "delivered", "render-expo": "accepted"], "\(outcomes)\n\(world.workerLogs())")

            // What each service received is what the rendering wrote, the German variant's title among it.
            let apns = try #require(world.simulator.acceptedNotifications().first)
            #expect(JSONValue(parsing: Array((apns.payload ?? "").utf8)) == rendered[.apns]?["payload"])
            #expect(apns.pushType == "alert" && apns.priority == 10)
            #expect(rendered[.apns]?["payload"]?["aps"]?["alert"]?["title"] == "Versandt")
            let message = try #require(fcm.acceptedMessages().first)
            #expect(JSONValue(parsing: Array(message.message.utf8)) == rendered[.fcm]?["message"])
            let web = try #require(push.messages().first)
            #expect(JSONValue(parsing: web.plaintext) == rendered[.webpush]?["payload"])
            #expect(web.urgency == "high" && web.topic == "order-17")
            let huawei = try #require(hms.acceptedMessages().first)
            #expect(JSONValue(parsing: Array(huawei.message.utf8)) == rendered[.hms]?["message"])
            let harmonyMessage = try #require(harmony.acceptedMessages().first)
            #expect(JSONValue(parsing: Array(harmonyMessage.payload.utf8)) == rendered[.harmony]?["payload"] && harmonyMessage.pushType == 0)
        }
    }
}
