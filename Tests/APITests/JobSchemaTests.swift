import Foundation
import HeraldProviders
import HeraldTestSupport
import PushCore
import RedisQueue
import Testing
@testable import Worker

/// schemas/job.schema.json against the documented examples and against what `herald api` queues, and
/// schemas/result.schema.json against the documented result examples, checked by python3-jsonschema (someone
/// else's validator).
@Suite(.serialized) struct JobSchemaTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    static let script = root + "/Tests/APITests/Fixtures/check_job_schema.py"

    private func validate(_ extra: [String] = []) throws -> (output: String, status: Int32) {
        let quoted = ([Self.script, "schemas/job.schema.json"] + extra).map { "'\($0)'" }.joined(separator: " ")
        return try run("sh", ["-c", "cd '\(Self.root)' && python3 \(quoted)"])
    }

    @Test func everyExampleJobInTheREADMEDocsAndExamplesMatchesTheSchema() throws {
        let (output, status) = try validate()
        #expect(status == 0, "\(output)")
        // The 500 sample jobs and the documented examples without placeholders.
        #expect((Int(output.split(separator: " ").first ?? "") ?? 0) > 500, "\(output)")
    }

    /// schemas/result.schema.json against the result examples of README.md and docs/ (the entries a run writes are
    /// checked by `EndToEnd/JobStatus`, which has the worker and the simulators).
    @Test func everyResultExampleInTheREADMEAndDocsMatchesTheResultSchema() throws {
        let quoted = [Self.root + "/Tests/APITests/Fixtures/check_result_schema.py", "schemas/result.schema.json"].map { "'\($0)'" }.joined(separator: " ")
        let (output, status) = try run("sh", ["-c", "cd '\(Self.root)' && python3 \(quoted)"])
        #expect(status == 0, "\(output)")
        // The forwarder's example (docs/operations.md) and the job status answer's (docs/api.md).
        #expect((Int(output.split(separator: " ").first ?? "") ?? 0) >= 2, "\(output)")
    }

    @Test func everyJobTheAPIQueuesMatchesTheSchema() throws {
        let redis = try RedisServer()
        // gorush's README examples queue APNs, FCM and Push Kit jobs (the live activity's topic is com.example.app's).
        let api = try APIProcess(redisURL: redis.url, apps: [APIProcess.app("app"), APIGorushTests.fcmApp, APIGorushTests.hmsApp].joined(separator: ","))
        let fixtures = try FileManager.default.contentsOfDirectory(atPath: APIGorushTests.fixtures.path).filter { $0.hasSuffix(".json") }
        for name in fixtures {
            let body = APIGorushTests.withHexTokens(try String(contentsOf: APIGorushTests.fixtures.appendingPathComponent(name), encoding: .utf8))
            #expect(try curl(["--data-binary", body, api.url + "api/push"]).status == 200)
        }
        #expect(try curl(["-H", "Idempotency-Key: k", "--data-binary", "{\"jobs\":[\(APIProcess.job()), \(APIProcess.job(id: "x"))]}".replacingOccurrences(of: "\"shop\"", with: "\"app\""), api.url + "v1/jobs"]).status == 202)
        let queued = try listElements(redis.url, "herald:queue")
        #expect(queued.count > 30 && queued.contains { $0.contains(#""platform":"hms""#) } && queued.contains { $0.contains(#""push_type":"liveactivity""#) })
        let file = makeTemporaryDirectory("herald-schema") + "/queued.jsonl"
        try queued.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let (output, status) = try validate([file])
        #expect(status == 0, "\(output)")
    }

    /// Both schemas' `platform` enums are `Platform.allCases`, and the job schema has a branch for each
    /// (`"<displayName> job"`): a new provider fails here until the schemas know it.
    @Test func theSchemasNameEveryPlatformAndNoOther() throws {
        func schema(_ name: String) throws -> [String: Any] {
            try #require(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: Self.root + "/schemas/" + name))) as? [String: Any])
        }
        let platforms = Set(Platform.allCases.map(\.rawValue))
        for name in ["job.schema.json", "result.schema.json"] {
            let properties = try #require(try schema(name)["properties"] as? [String: Any])
            let listed = try #require((properties["platform"] as? [String: Any])?["enum"] as? [Any])
            #expect(Set(listed.compactMap { $0 as? String }) == platforms, "\(name): \(listed)")
        }
        let branches = try #require(try schema("job.schema.json")["anyOf"] as? [[String: Any]]).compactMap { $0["title"] as? String }
        #expect(Set(branches) == Set(Platform.allCases.map { "\($0.displayName) job" }), "\(branches)")
    }

    /// README.md's and docs/'s `LPUSH` example jobs without placeholders, by the platform the worker's parser gives them.
    static func documentedJobs() throws -> [Platform: [String]] {
        let docs = try FileManager.default.contentsOfDirectory(atPath: root + "/docs").filter { $0.hasSuffix(".md") }.map { "docs/" + $0 }
        let example = try NSRegularExpression(pattern: #"LPUSH\s+\S+\s+'(\{.*?\})'"#, options: .dotMatchesLineSeparators)
        var found: [Platform: [String]] = [:]
        for path in ["README.md"] + docs.sorted() {
            let text = try String(contentsOfFile: root + "/" + path, encoding: .utf8)
            for match in example.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let job = String(text[Range(match.range(at: 1), in: text)!])
                if job.contains("...") || job.contains("\u{2026}") || job.contains("<") { continue }
                guard let spec = try? heraldProviders.read(Array(job.utf8), table: heraldProviders.jobMembers) else { continue }
                found[spec.platform, default: []].append(job.replacingOccurrences(of: "\n", with: " "))
            }
        }
        return found
    }

    /// An app of each platform, as the worker's configuration holds it: the first providers' written here, any
    /// other provider's from its declared credential block (so a new provider needs no line here,
    /// docs/adding-a-provider.md).
    static func app(of platform: Platform) -> Configuration.AppSettings {
        switch platform.rawValue {
        case "apns": return Configuration.AppSettings(name: "ios", bundleID: "com.example.app")
        case "fcm": return Configuration.AppSettings(name: "android", bundleID: "", fcm: .init(serviceAccountFile: "/sa.json"))
        case "webpush":
            var app = Configuration.AppSettings(name: "web", bundleID: "")
            app.webpush = .init(vapidKey: "k", subject: "mailto:ops@example.com")
            return app
        case "hms":
            var app = Configuration.AppSettings(name: "huawei", bundleID: "")
            app.hms = .init(appID: "10086", clientSecretFile: "/secret")
            return app
        default:
            // Its first credential block read from an empty object: the app is the provider's, its fields blank.
            var app = Configuration.AppSettings(name: platform.rawValue, bundleID: "")
            if let block = heraldProviders.provider(for: platform).credentialBlocks.first {
                _ = SettingsReader.apply([block], object: [block.key: [String: Any]()], to: &app, at: "")
            }
            return app
        }
    }

    /// A documented job of every platform matches the job schema, and the result entries the worker writes for it
    /// (`JobIntake` and `CompletionBuilder`, as the delivery core runs them: delivered, dropped, failed, retrying,
    /// rejected) match the result schema: a provider the schemas do not know fails here.
    @Test func aDocumentedJobAndTheWorkersResultEntriesOfEveryPlatformMatchTheSchemas() throws {
        let documented = try Self.documentedJobs()
        let intake = JobIntake(directory: AppDirectory(Platform.allCases.map(Self.app(of:))), providers: heraldProviders)
        let builder = CompletionBuilder(workerID: "host-1")
        let now: Int64 = 1_764_590_000_000
        var jobs: [String] = [], entries: [String] = []
        for platform in Platform.allCases {
            let examples = documented[platform] ?? []
            #expect(!examples.isEmpty, "no \(platform.rawValue) LPUSH example without placeholders in README.md or docs/")
            for text in examples {
                jobs.append(text)
                // Its platform's one app takes it, whatever app the example names.
                var object = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
                object["app"] = Self.app(of: platform).name
                let raw = Array(try JSONSerialization.data(withJSONObject: object))
                let lease = Lease(id: "l1", queueKey: "herald:queue", raw: raw)
                guard case .accepted(let job) = intake.admit(lease, claimedAt: 0, wallMillis: now, makeID: { "made" }) else {
                    Issue.record("\(platform.rawValue): the worker refused the documented job \(text)")
                    continue
                }
                let decisions: [Decision] = [.delivered, .dropToken(invalidSince: now, reason: "Unregistered"), .fail(reason: "BadDeviceToken"),
                                             .retry(afterMilliseconds: 1000, reason: "InternalServerError")]
                var written = decisions.flatMap { builder.decided(job, $0, answer: nil, now: 0, wallMillis: now).results }
                written += builder.rejected(lease, id: "r", reason: "bad_app: x", spec: try JobParser.parse(raw, members: heraldProviders.jobMembers), app: nil, wallMillis: now).results
                #expect(written.allSatisfy { $0.platform == platform.rawValue }, "\(written.map(\.platform))")
                entries += written.map { $0.indexJSON(queue: "herald:queue") }
            }
        }
        let directory = makeTemporaryDirectory("herald-schema")
        try jobs.joined(separator: "\n").write(toFile: directory + "/jobs.jsonl", atomically: true, encoding: .utf8)
        try entries.joined(separator: "\n").write(toFile: directory + "/entries.jsonl", atomically: true, encoding: .utf8)
        let (output, status) = try validate([directory + "/jobs.jsonl"])
        #expect(status == 0, "\(output)")
        let quoted = [Self.root + "/Tests/APITests/Fixtures/check_result_schema.py", "schemas/result.schema.json", directory + "/entries.jsonl"].map { "'\($0)'" }.joined(separator: " ")
        let results = try run("sh", ["-c", "cd '\(Self.root)' && python3 \(quoted)"])
        #expect(results.status == 0, "\(results.output)")
        #expect((Int(results.output.split(separator: " ").first ?? "") ?? 0) >= entries.count, "\(results.output)")
    }
}
