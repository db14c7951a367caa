import Foundation
import HeraldTestSupport
import Testing

/// `herald devices` against a real Redis, the built binary run as an operator would: import, export, list, show,
/// remove, and a bad line reported by its number while the others are kept.
@Suite(.serialized) struct DevicesCommandTests {
    private func herald(_ redis: RedisServer, _ arguments: [String], input: String? = nil) throws -> ProgramRun {
        guard let herald = heraldExecutable() else { throw TestSupportError("the herald executable is not beside the test bundle: run `swift build` first") }
        return try runProgram(herald, ["devices"] + arguments + ["--redis", redis.url], input: input, errorsApart: true)
    }

    private func lines(_ text: String) -> [[String: Any]] { text.split(separator: "\n").map { jsonObject(String($0)) } }

    @Test func anExportImportsBackToTheSameDevicesAndABadLineIsReportedByItsNumber() throws {
        let redis = try RedisServer()
        let input = [
            #"{"app": "shop", "platform": "fcm", "token": "f1", "owner": "u1", "topics": ["news"], "locale": "de"}"#,
            #"{"app": "shop", "platform": "apns", "token": "a1", "owner": "u1", "environment": "sandbox", "time_zone": "Europe/Berlin"}"#,
            #"{"app": "shop", "platform": "nokia", "token": "n1"}"#,
            "",
            #"{"app": "shop", "platform": "webpush", "token": "https://push.example/x", "subscription": {"endpoint": "https://push.example/x", "keys": {"p256dh": "BPk", "auth": "c2Vj"}}}"#,
            "not json",
            #"{"app": "other", "platform": "fcm", "token": "o1", "owner": "u1"}"#,
        ].joined(separator: "\n")
        let imported = try herald(redis, ["import", "-"], input: input)
        #expect(imported.status == 1, "a refused line fails the run: \(imported.output) \(imported.errorOutput)")
        #expect(imported.output.contains("4 registered, 0 refreshed, 0 moved, 2 refused"), "\(imported.output)")
        #expect(imported.errorOutput.contains("line 3: bad_platform") && imported.errorOutput.contains("line 6: bad_request"), "\(imported.errorOutput)")
        let export = try herald(redis, ["export", "--app", "shop"])
        #expect(export.status == 0)
        let exported = lines(export.output)
        // Each line carries the device's history (state, first and last registration), which an import keeps.
        #expect(exported.count == 3 && exported.allSatisfy { $0["state"] as? String == "active" && $0["created_at"] != nil && $0["last_seen_at"] != nil },
                "\(export.output)")
        // Into another Redis and out again: the same lines, the times included.
        let other = try RedisServer()
        let again = try herald(other, ["import", "-"], input: export.output)
        #expect(again.status == 0 && again.output.contains("3 registered"), "\(again.output) \(again.errorOutput)")
        let second = try herald(other, ["export", "--app", "shop"])
        #expect(Set(second.output.split(separator: "\n")) == Set(export.output.split(separator: "\n")), "\(second.output)")
        // A full listing (state and times) reads back too.
        let listed = try herald(redis, ["list", "--app", "shop"])
        #expect(try herald(other, ["import", "-"], input: listed.output).output.contains("3 refreshed"))
    }

    @Test func listShowAndRemoveADevice() throws {
        let redis = try RedisServer()
        let input = [#"{"app": "shop", "platform": "fcm", "token": "f1", "owner": "u1", "topics": ["news"]}"#,
                     #"{"app": "shop", "platform": "fcm", "token": "f2", "owner": "u2"}"#].joined(separator: "\n")
        #expect(try herald(redis, ["import", "-"], input: input).status == 0)
        #expect(lines(try herald(redis, ["list", "--app", "shop", "--owner", "u1"]).output).map { $0["token"] as? String } == ["f1"])
        #expect(lines(try herald(redis, ["list", "--app", "shop", "--topic", "news"]).output).map { $0["token"] as? String } == ["f1"])
        #expect(lines(try herald(redis, ["list", "--app", "shop", "--limit", "1"]).output).count == 1)
        let shown = try herald(redis, ["show", "shop", "fcm", "f2"])
        #expect(shown.status == 0 && jsonObject(shown.output)["owner"] as? String == "u2" && jsonObject(shown.output)["state"] as? String == "active")
        #expect(try herald(redis, ["remove", "shop", "fcm", "f2"]).status == 0)
        let removedAgain = try herald(redis, ["remove", "shop", "fcm", "f2"])
        #expect(removedAgain.status == 1 && removedAgain.errorOutput.contains("not registered"))
        #expect(jsonObject(try herald(redis, ["show", "shop", "fcm", "f2"]).output)["state"] as? String == "removed")
        #expect(try herald(redis, ["show", "shop", "fcm", "nobody"]).status == 1)
        #expect(lines(try herald(redis, ["export", "--app", "shop"]).output).count == 1, "an export leaves removed devices out")
        #expect(try herald(redis, ["list"]).status == 64)
    }
}
