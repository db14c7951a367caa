import Foundation
import HeraldTestSupport
import Testing

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
        let api = try APIProcess(redisURL: redis.url, apps: APIProcess.shopApp + "," + APIGorushTests.fcmApp)
        let fixtures = try FileManager.default.contentsOfDirectory(atPath: APIGorushTests.fixtures.path).filter { $0.hasSuffix(".json") }
        for name in fixtures {
            let body = try String(contentsOf: APIGorushTests.fixtures.appendingPathComponent(name), encoding: .utf8)
                .replacingOccurrences(of: "token_a", with: APIProcess.token).replacingOccurrences(of: "token_b", with: "0a1b")
            #expect(try curl(["--data-binary", body, api.url + "api/push"]).status == 200)
        }
        #expect(try curl(["-H", "Idempotency-Key: k", "--data-binary", "{\"jobs\":[\(APIProcess.job()), \(APIProcess.job(id: "x"))]}", api.url + "v1/jobs"]).status == 202)
        let queued = try listElements(redis.url, "herald:queue")
        #expect(queued.count > 20)
        let file = makeTemporaryDirectory("herald-schema") + "/queued.jsonl"
        try queued.joined(separator: "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let (output, status) = try validate([file])
        #expect(status == 0, "\(output)")
    }
}
