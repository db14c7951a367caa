import DeviceRegistry
import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import PushCore
import RedisQueue
import Testing

extension EndToEnd {
    /// APNs, FCM, Web Push and Huawei Push Kit jobs through the same queue and workers, against the four simulators.
    @Suite struct MixedPlatform {
        /// A fate picked by token prefix, and the terminal outcome (and reason) Herald must record.
        struct Fate {
            let platform: String
            let prefix: String
            let count: Int
            let outcome: String
            let reason: String?
            /// The reason of the retrying entry the fate causes (absent after a SIGKILL moved the job on).
            let retryReason: String?
        }

        static let fates: [Fate] = [
            Fate(platform: "apns", prefix: "dead", count: 300, outcome: "token_dropped", reason: "Unregistered", retryReason: nil),
            Fate(platform: "apns", prefix: "e5", count: 200, outcome: "delivered", reason: nil, retryReason: "InternalServerError"),
            Fate(platform: "apns", prefix: "bad0", count: 100, outcome: "failed", reason: "DeviceTokenNotForTopic", retryReason: nil),
            Fate(platform: "fcm", prefix: "unreg", count: 300, outcome: "token_dropped", reason: "UNREGISTERED", retryReason: nil),
            Fate(platform: "fcm", prefix: "badtok", count: 200, outcome: "token_dropped", reason: "INVALID_ARGUMENT", retryReason: nil),
            Fate(platform: "fcm", prefix: "other", count: 200, outcome: "token_dropped", reason: "SENDER_ID_MISMATCH", retryReason: nil),
            Fate(platform: "fcm", prefix: "busy", count: 200, outcome: "delivered", reason: nil, retryReason: "UNAVAILABLE"),
            Fate(platform: "fcm", prefix: "quota", count: 20, outcome: "delivered", reason: nil, retryReason: "QUOTA_EXCEEDED"),
            Fate(platform: "fcm", prefix: "ttl", count: 100, outcome: "failed", reason: "INVALID_ARGUMENT", retryReason: nil),
            Fate(platform: "webpush", prefix: "ok-", count: 1200, outcome: "delivered", reason: nil, retryReason: nil),
            Fate(platform: "webpush", prefix: "gone-", count: 150, outcome: "token_dropped", reason: "Gone", retryReason: nil),
            Fate(platform: "webpush", prefix: "nf-", count: 100, outcome: "token_dropped", reason: "NotFound", retryReason: nil),
            Fate(platform: "webpush", prefix: "big-", count: 50, outcome: "failed", reason: "PayloadTooLarge", retryReason: nil),
            Fate(platform: "webpush", prefix: "busy-", count: 100, outcome: "delivered", reason: nil, retryReason: "ServiceUnavailable"),
            Fate(platform: "hms", prefix: "hok-", count: 1000, outcome: "delivered", reason: nil, retryReason: nil),
            Fate(platform: "hms", prefix: "hdead-", count: 150, outcome: "token_dropped", reason: "80300007 All the tokens are invalid", retryReason: nil),
            Fate(platform: "harmony", prefix: "mok-", count: 500, outcome: "delivered", reason: nil, retryReason: nil),
            // Push Kit v3 names the token in the reason (`{"illegalTokens":{"tokenFormatError":["mdead-7"]},...}`): a prefix.
            Fate(platform: "harmony", prefix: "mdead-", count: 100, outcome: "token_dropped",
                 reason: #"80300007 {"illegalTokens":{"tokenFormatError":["mdead-"#, retryReason: nil),
            Fate(platform: "harmony", prefix: "mbusy-", count: 50, outcome: "delivered", reason: nil,
                 retryReason: "81000001 Flow control: the request rate is too high, spread the sends out"),
            // Expo's ticket errors end a token at once; its receipts have their own run (ExpoReceipts).
            Fate(platform: "expo", prefix: "gone", count: 100, outcome: "token_dropped", reason: "DeviceNotRegistered", retryReason: nil),
            Fate(platform: "expo", prefix: "big", count: 50, outcome: "failed", reason: "MessageTooBig", retryReason: nil),
        ]

        static func fcmToken(_ prefix: String, _ index: Int) -> String { "\(prefix)-\(index)-dGVzdA:APA91bHerald_e2e" }

        /// 10,000 jobs, about 36% APNs, 36% FCM, 16% Web Push (a multicast to 20 subscriptions among them) and 12%
        /// Huawei Push Kit (5 many-token sends of 40 tokens among them), 7% HarmonyOS Push Kit v3 (3 many-token sends of
        /// 30 among them), of
        /// every class of outcome; one of the two workers is SIGKILLed mid-run and a replacement started. Every job
        /// ends with exactly one terminal entry, the expected one, with its platform; FCM deliveries carry the
        /// message name; Web Push deliveries were decrypted by the push service; dropped tokens and gone
        /// subscriptions reach the dropped-tokens stream once with their platform; bad jobs are refused locally.
        @Test(.timeLimit(.minutes(3)))
        func tenThousandJobsOfEveryPlatformEachEndOnceThroughASigkill() throws {
            #expect(Set(Self.fates.map(\.platform)) == Set(Platform.allCases.map(\.rawValue)), "a platform without fates in the mixed run")
            let apnsFaults = MockFaultScript(seed: 11, latencyMs: MockLatency(min: 0, max: 2), rules: [
                MockFaultRule(fate: .unregistered, tokenPrefix: "dead"),
                MockFaultRule(fate: .otherTopic, tokenPrefix: "bad0"),
                MockFaultRule(fate: .failFirst, tokenPrefix: "e5", status: 500, reason: "InternalServerError", count: 1),
            ])
            let fcmFaults = MockFCMFaultScript(seed: 11, latencyMs: MockLatency(min: 0, max: 2), rules: [
                MockFCMRule(fate: .unregistered, tokenPrefix: "unreg-"),
                MockFCMRule(fate: .invalidToken, tokenPrefix: "badtok-"),
                MockFCMRule(fate: .senderIdMismatch, tokenPrefix: "other-"),
                MockFCMRule(fate: .failFirst, tokenPrefix: "busy-", status: 503, errorCode: "UNAVAILABLE", count: 1),
                MockFCMRule(fate: .failFirst, tokenPrefix: "quota-", status: 429, errorCode: "QUOTA_EXCEEDED", count: 1, retryAfterSeconds: 1),
                MockFCMRule(fate: .error, tokenPrefix: "ttl-", status: 400, errorCode: "INVALID_ARGUMENT",
                            message: "Invalid value at 'message.android.ttl'"),
            ])
            let world = try EndToEndWorld(faults: apnsFaults, fcmFaults: fcmFaults)
            defer { world.shutdown(); world.removeFiles() }
            let fcm = try #require(world.fcm)
            let push = try MockWebPushServer(tls: world.tls, faults: MockWebPushFaultScript(rules: [
                MockWebPushRule(subscriptionPrefix: "gone-", fate: .gone),
                MockWebPushRule(subscriptionPrefix: "nf-", fate: .notFound),
                MockWebPushRule(subscriptionPrefix: "big-", fate: .tooLarge),
                MockWebPushRule(subscriptionPrefix: "busy-", fate: .unavailable, failFirst: 1),
            ], latencyMs: MockLatency(min: 0, max: 2)))
            defer { push.stop() }
            var hmsConfiguration = MockHMSConfiguration()
            hmsConfiguration.tls = world.tls
            hmsConfiguration.apps = [MockHMSApp(appId: "10000001", clientSecret: "mixed-secret")]
            hmsConfiguration.faults = MockHMSFaultScript(latencyMs: MockLatency(min: 0, max: 2), invalidTokenPrefixes: ["hdead-"])
            let hms = try MockHMSServer(configuration: hmsConfiguration)
            defer { hms.stop() }
            let (expo, expoToken) = try world.startExpo(accessToken: "mixed-expo-token")
            defer { expo.stop() }
            let hmsSecret = world.directory + "/hms-secret"
            try Data("mixed-secret".utf8).write(to: URL(fileURLWithPath: hmsSecret))
            var harmonyConfiguration = MockHarmonyConfiguration()
            harmonyConfiguration.tls = world.tls
            harmonyConfiguration.recordAccepted = true
            harmonyConfiguration.faults = MockHMSFaultScript(latencyMs: MockLatency(min: 0, max: 2), invalidTokenPrefixes: ["mdead-"],
                                                             rules: [MockHMSRule(fate: .failFirst, tokenPrefix: "mbusy-", status: 503, count: 1)])
            let harmony = try MockHarmonyServer(configuration: harmonyConfiguration)
            defer { harmony.stop() }
            let harmonyKey = world.directory + "/harmony-service-account.json"
            try harmony.account.write(to: harmonyKey)

            var jobs: [[UInt8]] = []
            var expected: [String: String] = [:]
            var fateOf: [String: Fate] = [:]
            /// Each job's token as results and the dropped-tokens stream name it (a Web Push job's: its endpoint).
            var tokenOf: [String: String] = [:]
            var index = 0
            func add(_ fate: Fate) throws {
                let id = "\(fate.platform)-\(index)"
                switch fate.platform {
                case "fcm":
                    tokenOf[id] = Self.fcmToken(fate.prefix, index)
                    jobs.append(fcmJobBytes(id: id, token: tokenOf[id]!, body: "job \(index)"))
                case "expo":
                    tokenOf[id] = "ExponentPushToken[\(fate.prefix)-\(index)]"
                    jobs.append(Array(#"{"id":"\#(id)","platform":"expo","to":"\#(tokenOf[id]!)","payload":{"body":"job \#(index)"}}"#.utf8))
                case "hms":
                    tokenOf[id] = "\(fate.prefix)\(index)"
                    jobs.append(Array(#"{"id":"\#(id)","platform":"hms","message":{"data":"job \#(index)","token":["\#(tokenOf[id]!)"]}}"#.utf8))
                case "harmony":
                    tokenOf[id] = "\(fate.prefix)\(index)"
                    jobs.append(Array(#"{"id":"\#(id)","platform":"harmony","token":"\#(tokenOf[id]!)","payload":{"notification":{"title":"job \#(index)"}}}"#.utf8))
                case "webpush":
                    let subscription = try push.subscribe(prefix: fate.prefix)
                    tokenOf[id] = subscription.endpoint
                    // Half name their app, half are routed to the one Web Push app by platform.
                    let app = index % 2 == 0 ? #""app":"web","# : ""
                    jobs.append(Array(#"{"id":"\#(id)",\#(app)"platform":"webpush","subscription":\#(subscription.json),"payload":"job \#(index)","ttl":60}"#.utf8))
                default:
                    tokenOf[id] = deviceToken(prefix: fate.prefix, index: index)
                    jobs.append(jobBytes(id: id, token: tokenOf[id]!, body: "job \(index)"))
                }
                expected[id] = fate.outcome
                fateOf[id] = fate
                index += 1
            }
            for fate in Self.fates { for _ in 0..<fate.count { try add(fate) } }
            // A Web Push multicast: one job, 20 subscriptions, fanned out in Redis into one job each.
            var multicastEndpoints: [String] = []
            var multicastJSON: [String] = []
            for _ in 0..<20 {
                let subscription = try push.subscribe(prefix: "multi-")
                multicastEndpoints.append(subscription.endpoint)
                multicastJSON.append(subscription.json)
            }
            jobs.append(Array(#"{"id":"web-multi","subscriptions":[\#(multicastJSON.joined(separator: ","))],"payload":{"to":"many"}}"#.utf8))
            // Push Kit's many-token send: 5 jobs of 40 tokens, each one request, a fifth of the tokens illegal; an
            // outcome per token.
            var hmsMultiExpected: [String: String] = [:]
            for k in 0..<5 {
                let tokens = (0..<40).map { i in i % 5 == 4 ? "hdead-m\(k)-\(i)" : "hmok-\(k)-\(i)" }
                for token in tokens { hmsMultiExpected["hms-multi-\(k) " + token] = token.hasPrefix("hdead-") ? "token_dropped" : "delivered" }
                let list = tokens.map { "\"\($0)\"" }.joined(separator: ",")
                jobs.insert(Array(#"{"id":"hms-multi-\#(k)","platform":"hms","message":{"data":"many","token":[\#(list)]}}"#.utf8), at: jobs.count * (k + 1) / 6)
            }
            // Push Kit v3's many-token send: 3 jobs of 30 tokens in `target`, a fifth illegal; an outcome per token.
            var harmonyMultiExpected: [String: String] = [:]
            for k in 0..<3 {
                let tokens = (0..<30).map { i in i % 5 == 4 ? "mdead-m\(k)-\(i)" : "mmok-\(k)-\(i)" }
                for token in tokens { harmonyMultiExpected["harmony-multi-\(k) " + token] = token.hasPrefix("mdead-") ? "token_dropped" : "delivered" }
                let list = tokens.map { "\"\($0)\"" }.joined(separator: ",")
                jobs.insert(Array(#"{"id":"harmony-multi-\#(k)","platform":"harmony","target":{"token":[\#(list)]},"payload":{"notification":{"title":"many"}}}"#.utf8),
                            at: jobs.count * (k + 1) / 4)
            }
            // Refused locally with FCM's error name or as the wrong platform: nothing of them reaches a server.
            var rejected: [String: String] = [:]
            for i in 0..<10 {
                let id = "fcm-bad-data-\(i)"
                jobs.append(Array(#"{"id":"\#(id)","message":{"token":"x\#(i)","data":{"count":\#(i)}}}"#.utf8))
                rejected[id] = "INVALID_ARGUMENT: message.data.count must be a string"
                let wrong = "fcm-to-apns-app-\(i)"
                jobs.append(Array(#"{"id":"\#(wrong)","app":"main","message":{"token":"x\#(i)"}}"#.utf8))
                rejected[wrong] = "WrongPlatform"
            }
            // Web Push jobs refused locally, never sent: a key of the wrong length, an endpoint off the allow-list,
            // a payload too large once encrypted.
            let never = try push.subscribe(prefix: "never-")
            let badKey = never.json.replacingOccurrences(of: never.p256dh, with: String(never.p256dh.dropLast(3)))
            let foreign = never.json.replacingOccurrences(of: push.origin, with: "https://evil.example")
            for (id, subscription, payload, reason) in [
                ("web-bad-key", badKey, #""x""#, "BadSubscription"), ("web-foreign", foreign, #""x""#, "EndpointRefused"),
                ("web-too-large", never.json, "\"" + String(repeating: "a", count: 4000) + "\"", "PayloadTooLarge"),
            ] {
                jobs.append(Array(#"{"id":"\#(id)","platform":"webpush","subscription":\#(subscription),"payload":\#(payload)}"#.utf8))
                rejected[id] = reason
            }
            // HarmonyOS jobs of the envelope's kinds: a dry run (v3 has none: checked and never sent), one due in a
            // second, and one Push Kit would refuse (11 tokens in a test message), refused with its code.
            let alert = #""payload":{"notification":{"title":"kinds"}}"#
            jobs.append(Array(#"{"id":"harmony-validate","platform":"harmony","token":"mok-validate",\#(alert),"validate_only":true}"#.utf8))
            expected["harmony-validate"] = "validated"
            let due = Int64(Date().timeIntervalSince1970 * 1000) + 1000
            jobs.append(Array(#"{"id":"harmony-later","platform":"harmony","token":"mok-later",\#(alert),"deliver_at":\#(due)}"#.utf8))
            expected["harmony-later"] = "delivered"
            let eleven = (0..<11).map { "\"mok-t\($0)\"" }.joined(separator: ",")
            jobs.append(Array(#"{"id":"harmony-test-11","platform":"harmony","target":{"token":[\#(eleven)]},\#(alert),"pushOptions":{"testMessage":true}}"#.utf8))
            rejected["harmony-test-11"] = "80300010 "
            let apnsGood = Fate(platform: "apns", prefix: "00", count: 0, outcome: "delivered", reason: nil, retryReason: nil)
            let fcmGood = Fate(platform: "fcm", prefix: "ok", count: 0, outcome: "delivered", reason: nil, retryReason: nil)
            while jobs.count < 10_000 { try add(index % 2 == 0 ? apnsGood : fcmGood) }
            for (id, _) in rejected { expected[id] = "rejected" }
            // Interleave platforms and fates so every claim holds both: i -> i * 7919 mod n is a permutation
            // (7919 is prime to 10,000).
            let ordered = jobs
            for (i, job) in ordered.enumerated() { jobs[(i * 7919) % ordered.count] = job }
            try world.push(jobs)

            let config = try world.writeConfig(worker: ["max_in_flight": 500, "claim_batch": 100, "lease_seconds": 4],
                                               retry: ["max_attempts": 3], apns: ["request_timeout_ms": 60_000],
                                               fcmSettings: ["request_timeout_ms": 60_000], registry: ["enabled": true])
            // The Web Push app: a VAPID key as web-push libraries print it, the simulator's host allowed.
            let vapidKey = Data((1...32).map { UInt8($0) }).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            var document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: config))) as? [String: Any])
            document["apps"] = try #require(document["apps"] as? [[String: Any]]) + [[
                "name": "web", "webpush": ["vapid_key": vapidKey, "subject": "mailto:e2e@example.com", "push_service_hosts": ["127.0.0.1"],
                                           "allow_ip_literals": true, "allow_private_addresses": true],
            ], ["name": "huawei", "hms": ["app_id": "10000001", "client_secret_file": hmsSecret]],
               ["name": "harmony", "harmony": ["service_account_file": harmonyKey]], ["name": "rn", "expo": ["access_token_file": expoToken]]]
            document["harmony"] = ["url": harmony.baseURL, "ca_file": harmony.caFile ?? "", "request_timeout_ms": 60_000]
            document["expo"] = ["url": expo.baseURL, "ca_file": expo.caFile ?? "", "request_timeout_ms": 60_000]
            document["hms"] = ["url": hms.baseURL, "token_url": hms.tokenURL, "ca_file": hms.caFile ?? "", "request_timeout_ms": 60_000]
            document["web_push"] = ["ca_file": world.tls.caFile ?? "", "request_timeout_ms": 60_000]
            try JSONSerialization.data(withJSONObject: document, options: [.sortedKeys]).write(to: URL(fileURLWithPath: config))
            let check = try world.runHerald(["check-config", "--config", config, "--skip-redis"])
            #expect(check.status == 0, "\(check.output)")
            #expect(check.output.contains("ok   app 'web' (webpush, mailto:e2e@example.com): signed a test VAPID token; applicationServerKey B"), "\(check.output)")
            let total = expected.count + multicastEndpoints.count + hmsMultiExpected.count + harmonyMultiExpected.count
            let registered = try Self.registerDevices(world: world, tokenOf: tokenOf, fateOf: fateOf, multicastEndpoints: multicastEndpoints,
                                                      hmsMulti: Array(hmsMultiExpected.keys), harmonyMulti: Array(harmonyMultiExpected.keys))
            let started = Date()
            let victim = try world.startWorker(id: "mixed-a", config: config)
            try world.startWorker(id: "mixed-b", config: config)
            let ledger = ResultsLedger(redisURL: world.redisURL)
            // Kill one worker mid-run, with jobs in flight, and start a replacement under a new id.
            let midway = try ledger.waitForTerminal(3000, seconds: 60)
            #expect(midway, "only \(ledger.terminalCount) jobs finished before the kill:\n\(world.workerLogs())")
            victim.signal(SIGKILL)
            _ = victim.waitForExit(seconds: 10)
            try world.startWorker(id: "mixed-c", config: config)
            let finished = try ledger.waitForTerminal(total, seconds: 120) {
                for (id, worker) in world.workers where id != "mixed-a" && !worker.isRunning {
                    throw TestSupportError("worker \(id) exited early:\n\(world.workerLogs())")
                }
            }
            let elapsed = Date().timeIntervalSince(started)
            usleep(1_500_000)
            ledger.poll()
            #expect(finished, "only \(ledger.terminalCount) of \(total) results came:\n\(world.workerLogs())")
            let problems = ledger.contractProblems(expected: expected)
            #expect(problems.isEmpty, "\(summarize(problems))")

            var details: [String] = []
            let grouped = ledger.byJob
            for (id, fate) in fateOf {
                guard let terminal = grouped[id]?.last, terminal.isTerminal else { continue }
                if terminal.fields["platform"] != fate.platform { details.append("\(id): platform \(terminal.fields["platform"] ?? "-")") }
                if let reason = fate.reason, !(terminal.fields["reason"] ?? "").hasPrefix(reason) {
                    details.append("\(id): reason \(terminal.fields["reason"] ?? "-"), expected \(reason)")
                }
                if fate.platform != "apns" && terminal.fields["token"] != tokenOf[id] { details.append("\(id): token \(terminal.fields["token"] ?? "-")") }
                if fate.platform == "fcm" {
                    if terminal.fields["environment"] != nil { details.append("\(id): an FCM result with an environment") }
                    if terminal.outcome == "delivered" && !(terminal.fields["fcm_name"] ?? "").hasPrefix("projects/\(fcm.projectID)/messages/") {
                        details.append("\(id): delivered without fcm_name (\(terminal.fields["fcm_name"] ?? "-"))")
                    }
                }
                for retry in (grouped[id] ?? []).filter({ !$0.isTerminal }) {
                    let reason = retry.fields["reason"] ?? ""
                    // Parked while a 429 held the project back, or retried for the fate's own answer.
                    if reason != fate.retryReason && !reason.hasPrefix("Throttled: ") {
                        details.append("\(id): retrying entry \(reason)")
                    }
                }
            }
            for (id, prefix) in rejected {
                let entry = grouped[id]?.last
                if !(entry?.fields["reason"] ?? "").hasPrefix(prefix) { details.append("\(id): rejection \(entry?.fields["reason"] ?? "-")") }
            }
            #expect(details.isEmpty, "\(summarize(details))")
            let multicastExpected = Dictionary(uniqueKeysWithValues: multicastEndpoints.map { ("web-multi " + $0, "delivered") })
            let multicastProblems = ledger.contractProblems(expected: multicastExpected) { $0.id + " " + ($0.fields["token"] ?? "") }
            #expect(multicastProblems.isEmpty, "\(summarize(multicastProblems))")
            let hmsMultiProblems = ledger.contractProblems(expected: hmsMultiExpected) { $0.id + " " + ($0.fields["token"] ?? "") }
            #expect(hmsMultiProblems.isEmpty, "\(summarize(hmsMultiProblems))")
            let harmonyMultiProblems = ledger.contractProblems(expected: harmonyMultiExpected) { $0.id + " " + ($0.fields["token"] ?? "") }
            #expect(harmonyMultiProblems.isEmpty, "\(summarize(harmonyMultiProblems))")

            // Dropped tokens: one entry per dropped job (a job resent after the kill is dropped once), with platform.
            let redis = try world.connectRedis()
            let dropped = try readStream(redis, "herald:dropped-tokens")
            let droppedByToken = Dictionary(grouping: dropped, by: { $0.fields["token"] ?? "" })
            var droppedProblems: [String] = []
            for (id, fate) in fateOf where fate.outcome == "token_dropped" {
                let entries = droppedByToken[tokenOf[id]!] ?? []
                guard entries.count == 1 else { droppedProblems.append("\(id): \(entries.count) dropped-token entries"); continue }
                if entries[0].fields["platform"] != fate.platform { droppedProblems.append("\(id): platform \(entries[0].fields["platform"] ?? "-")") }
                let app = ["fcm": "android", "webpush": "web", "hms": "huawei", "harmony": "harmony", "expo": "rn"][fate.platform]
                if let app, entries[0].fields["app"] != app { droppedProblems.append("\(id): app \(entries[0].fields["app"] ?? "-")") }
                if !(entries[0].fields["reason"] ?? "").hasPrefix(fate.reason ?? "") { droppedProblems.append("\(id): reason \(entries[0].fields["reason"] ?? "-")") }
            }
            #expect(droppedProblems.isEmpty, "\(summarize(droppedProblems))")
            let droppedPlatforms = Set(dropped.compactMap { $0.fields["platform"] })
            #expect(droppedPlatforms == ["apns", "fcm", "webpush", "hms", "harmony", "expo"], "\(droppedPlatforms)")
            let hmsMultiDropped = hmsMultiExpected.filter { $0.value == "token_dropped" }.map { String($0.key.split(separator: " ")[1]) }
            #expect(hmsMultiDropped.allSatisfy { droppedByToken[$0]?.count == 1 && droppedByToken[$0]?.first?.fields["platform"] == "hms" },
                    "\(hmsMultiDropped.filter { droppedByToken[$0]?.count != 1 }.prefix(5)) not dropped once")
            let harmonyMultiDropped = harmonyMultiExpected.filter { $0.value == "token_dropped" }.map { String($0.key.split(separator: " ")[1]) }
            #expect(harmonyMultiDropped.allSatisfy { droppedByToken[$0]?.count == 1 && droppedByToken[$0]?.first?.fields["platform"] == "harmony" },
                    "\(harmonyMultiDropped.filter { droppedByToken[$0]?.count != 1 }.prefix(5)) not dropped once")
            #expect(dropped.count == fateOf.values.filter { $0.outcome == "token_dropped" }.count + hmsMultiDropped.count + harmonyMultiDropped.count,
                    "\(dropped.count) dropped-token entries")

            try Self.checkDevices(registered, redis: redis, dropped: Set(droppedByToken.keys))

            // Nothing left behind, the killed worker's leases included.
            #expect(try redis.command(["LLEN", "herald:queue"]).int == 0)
            #expect(try redis.command(["ZCARD", "herald:retry"]).int == 0)
            for key in try redis.command(["KEYS", "herald:leases:*"]).array ?? [] {
                #expect(try redis.command(["HLEN", key.string ?? ""]).int == 0, "leases left in \(key.string ?? "")")
            }

            // Every deliverable FCM token reached the simulator, with the producer's message byte for byte.
            let accepted = fcm.acceptedMessages()
            let fcmDelivered = Set(fateOf.filter { $0.value.platform == "fcm" && $0.value.outcome == "delivered" }.map(\.key))
            let acceptedTokens = Set(accepted.compactMap(\.token))
            #expect(fcmDelivered.allSatisfy { id in acceptedTokens.contains(Self.fcmToken(fateOf[id]!.prefix, Int(id.split(separator: "-")[1])!)) })
            let sample = try #require(accepted.first { $0.token?.hasPrefix("ok-") == true })
            let sampleID = "fcm-" + sample.token!.split(separator: "-")[1]
            let original = String(decoding: fcmJobBytes(id: sampleID, token: sample.token!, body: "job \(sample.token!.split(separator: "-")[1])"), as: UTF8.self)
            #expect(original.contains(sample.message), "the message reached FCM changed: \(sample.message)")
            // Every delivered Web Push job's payload reached the push service and was decrypted there; every
            // VAPID header passed its check.
            let received = Set(push.messages().map { String(decoding: $0.plaintext, as: UTF8.self) })
            let deliveredWeb = fateOf.filter { $0.value.platform == "webpush" && $0.value.outcome == "delivered" }.map { id, _ in "job " + id.split(separator: "-")[1] }
            #expect(deliveredWeb.allSatisfy(received.contains), "\(deliveredWeb.filter { !received.contains($0) }.prefix(5))")
            #expect(push.messages().filter { $0.subscription.hasPrefix("multi-") }.count >= 20)
            let pushStats = push.stats()
            #expect(pushStats.vapidRefused == 0 && pushStats.decryptionFailures == 0, "\(pushStats)")
            let stats = fcm.stats()
            #expect(stats.tokensIssued >= 1 && stats.tokensIssued <= 6, "access tokens issued: \(stats.tokensIssued) (one per worker process expected)")

            for (id, worker) in world.workers where worker.isRunning {
                worker.signal(SIGTERM)
                #expect(worker.waitForExit(seconds: 10) == 0, "worker \(id)")
            }
            let duplicates = duplicateDeliveries(world.simulator.acceptedNotifications()).duplicates
                + accepted.count - Set(accepted.map(\.message)).count
            // Every deliverable HarmonyOS token reached Push Kit v3 once at least, its payload as written.
            let harmonyAccepted = harmony.acceptedMessages().flatMap(\.delivered)
            let harmonyDelivered = fateOf.filter { $0.value.platform == "harmony" && $0.value.outcome == "delivered" }.map { tokenOf[$0.key]! }
            #expect(Set(harmonyDelivered).isSubset(of: Set(harmonyAccepted)), "HarmonyOS tokens never delivered")
            #expect(!harmonyAccepted.contains("mok-validate") && harmonyAccepted.contains("mok-later"), "the dry run was sent, or the later job was not")
            print("e2e mixed platform: 10000 jobs (APNs, FCM, Web Push, Huawei and HarmonyOS) in \(String(format: "%.1f", elapsed)) s, one of 2 workers SIGKILLed after \(3000)+ results; terminal \(ledger.terminalByOutcome), \(ledger.entries.count - ledger.terminalCount) retrying entries, \(duplicates) sent twice after the kill, \(stats.tokensIssued) FCM access tokens issued, \(stats.byStatus["429"] ?? 0) FCM 429s, \(pushStats.requests) Web Push requests, \(hms.stats().requests) Push Kit requests, \(harmony.stats().requests) Push Kit v3 requests")
        }
            /// The app each platform's jobs of this run resolve to (as their results and dropped tokens name it).
        static let appOf: [String: String] = ["apns": "main", "fcm": "android", "webpush": "web", "hms": "huawei", "harmony": "harmony", "expo": "rn"]

        /// The registry of the run: every token the jobs name, and more devices no job names, 100,000 in all. Half the
        /// APNs tokens the simulator answers 410 were registered before its 410 timestamp (the simulator's start: a
        /// manual clock a day back), half after it (now: the app gave the token again since), and those stay.
        /// Returns each device and whether it must be gone at the end.
        static func registerDevices(world: EndToEndWorld, tokenOf: [String: String], fateOf: [String: Fate], multicastEndpoints: [String],
                                    hmsMulti: [String], harmonyMulti: [String]) throws -> [(id: DeviceID, gone: Bool)] {
            let clock = ManualClock(0)
            clock.advance(milliseconds: Int64(Date().timeIntervalSince1970 * 1000))
            let registry = DeviceRegistry(redis: try BlockingRedis(url: RedisURL(parsing: world.redisURL)), shards: try QueueShards(single: QueueKeys())) { clock.wallMillis }
            var devices: [(id: DeviceID, gone: Bool)] = []
            var before = Set<DeviceID>()
            var apnsGone = 0
            for (id, fate) in fateOf.sorted(by: { $0.key < $1.key }) {
                let device = DeviceID(app: appOf[fate.platform]!, platform: Platform(rawValue: fate.platform)!, token: tokenOf[id]!)
                var gone = fate.outcome == "token_dropped"
                if gone && fate.platform == "apns" {
                    apnsGone += 1
                    if apnsGone % 2 == 0 { before.insert(device) } else { gone = false }
                }
                devices.append((device, gone))
            }
            for endpoint in multicastEndpoints { devices.append((DeviceID(app: "web", platform: .webpush, token: endpoint), false)) }
            for key in hmsMulti {
                let token = String(key.split(separator: " ")[1])
                devices.append((DeviceID(app: "huawei", platform: .hms, token: token), token.hasPrefix("hdead-")))
            }
            for key in harmonyMulti {
                let token = String(key.split(separator: " ")[1])
                devices.append((DeviceID(app: "harmony", platform: .harmony, token: token), token.hasPrefix("mdead-")))
            }
            var filler = 0
            while devices.count < 100_000 {
                let platform = Platform.allCases[filler % Platform.allCases.count]
                devices.append((DeviceID(app: appOf[platform.rawValue]!, platform: platform, token: "filler-\(filler)"), false))
                filler += 1
            }
            let fresh = devices.filter { !before.contains($0.id) }.map { ($0.id, DeviceAttributes(owner: "user-\($0.id.token.count % 97)")) }
            #expect(try registry.register(many: fresh).allSatisfy { $0 == "registered" })
            clock.advance(milliseconds: -(86_400_000))
            #expect(try registry.register(many: before.sorted { $0.token < $1.token }.map { ($0, DeviceAttributes()) }).allSatisfy { $0 == "registered" })
            #expect(try registry.counts().devices.map(\.active).reduce(0, +) == 100_000)
            return devices
        }

        /// Exactly the devices whose tokens a provider answered gone are removed (but the APNs ones registered again
        /// after the 410), each with one `removed` event; every other device is active, untouched.
        static func checkDevices(_ devices: [(id: DeviceID, gone: Bool)], redis: any BlockingRedisCommands, dropped: Set<String>) throws {
            let registry = DeviceRegistry(redis: redis, shards: try QueueShards(single: QueueKeys()))
            var problems: [String] = []
            for (id, gone) in devices where gone || dropped.contains(id.token) || !id.token.hasPrefix("filler-") {
                guard let device = try registry.device(id) else { problems.append("\(id): missing"); continue }
                if gone && device.state != .removed { problems.append("\(id): \(device.state), expected removed") }
                if !gone && device.state != .active { problems.append("\(id): \(device.state) (\(device.reason ?? "")), expected active") }
                if gone && !dropped.contains(id.token) { problems.append("\(id): removed without a dropped token") }
            }
            #expect(problems.isEmpty, "\(summarize(problems))")
            let removedEvents = try readStream(redis, "herald:device-events").filter { $0.fields["event"] == "removed" }
            let byToken = Dictionary(grouping: removedEvents, by: { $0.fields["token"] ?? "" })
            let goneTokens = Set(devices.filter(\.gone).map(\.id.token))
            #expect(Set(byToken.keys) == goneTokens, "removed events for \(byToken.count) tokens, \(goneTokens.count) devices gone")
            #expect(byToken.values.allSatisfy { $0.count == 1 }, "\(byToken.filter { $0.value.count != 1 }.keys.prefix(5)) removed more than once")
            let counts = try registry.counts()
            #expect(counts.devices.map(\.active).reduce(0, +) == devices.count - goneTokens.count && counts.devices.map(\.stale).reduce(0, +) == 0)
            #expect(counts.removals.map(\.count).reduce(0, +) == goneTokens.count, "\(counts.removals)")
            let kept = devices.filter { $0.id.platform == .apns && !$0.gone && dropped.contains($0.id.token) }.count
            #expect(kept > 100, "only \(kept) APNs devices answered 410 and registered after it were kept")
            print("e2e registry: \(devices.count) devices, \(goneTokens.count) removed once each, \(kept) APNs devices answered 410 kept (registered after it)")
        }
    }
}
