import Foundation
import HeraldTestSupport
import Testing

/// `herald campaigns` against a real Redis, the built binary run as an operator would: create from standard input
/// (twice: idempotent), get, list, pause, resume, cancel, and refusals with their code and exit status.
@Suite(.serialized) struct CampaignsCommandTests {
    private func herald(_ redis: RedisServer, _ arguments: [String], input: String? = nil) throws -> ProgramRun {
        guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is not beside the test bundle: run `swift build` first") }
        return try runProgram(herald, ["campaigns"] + arguments + ["--redis", redis.url], input: input, errorsApart: true)
    }

    @Test func aCampaignIsCreatedOnceListedPausedResumedAndCancelledFromAShell() throws {
        let redis = try RedisServer()
        let document = #"{"id": "cli-1", "app": "shop", "audience": {"user": "u1"}, "notification": {"title": "Hi"}}"#
        let created = try herald(redis, ["create", "--file", "-"], input: document)
        #expect(created.status == 0 && jsonObject(created.output)["state"] as? String == "running", "\(created.output) \(created.errorOutput)")
        let again = try herald(redis, ["create", "--file", "-"], input: document)
        #expect(again.status == 0 && (jsonObject(again.output)["audience"] as? [String: Any])?["user"] as? String == "u1", "idempotent")
        let other = try herald(redis, ["create", "--file", "-"], input: document.replacingOccurrences(of: "u1", with: "u2"))
        #expect(other.status == 1 && other.errorOutput.contains("id_taken"), "\(other.errorOutput)")
        #expect(try herald(redis, ["list"]).output.contains(#""id":"cli-1""#))
        #expect(jsonObject(try herald(redis, ["pause", "cli-1"]).output)["state"] as? String == "paused")
        #expect(jsonObject(try herald(redis, ["resume", "cli-1"]).output)["state"] as? String == "running")
        #expect(jsonObject(try herald(redis, ["cancel", "cli-1"]).output)["state"] as? String == "cancelled")
        #expect(jsonObject(try herald(redis, ["get", "cli-1"]).output)["state"] as? String == "cancelled")
        #expect(try herald(redis, ["list"]).output.isEmpty, "no open campaign")
    }

    @Test func refusalsExitWithTheirCodeAndUsageErrorsWith64() throws {
        let redis = try RedisServer()
        let bad = try herald(redis, ["create", "--file", "-"], input: #"{"id": "x", "app": "shop", "audience": {"town": "Graz"}, "notification": {"title": "x"}}"#)
        #expect(bad.status == 1 && bad.errorOutput.contains("bad_audience"), "\(bad.errorOutput)")
        let missing = try herald(redis, ["get", "nope"])
        #expect(missing.status == 1 && missing.errorOutput.contains("no campaign nope"))
        #expect(try herald(redis, ["explode"]).status == 64)
        #expect(try herald(redis, ["get"]).status == 64)
        #expect(try herald(redis, ["create"]).status == 64)
    }
}
