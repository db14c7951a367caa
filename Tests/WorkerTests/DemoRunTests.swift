import Foundation
import HeraldTestSupport
import Testing

/// `herald demo` is what a new user runs first: the whole product against all four simulators. It exits 0 only
/// when every outcome matched what its sample jobs were scripted to get.
@Suite struct DemoRunTests {
    @Test(.timeLimit(.minutes(3)))
    func theDemoEndsEveryJobAsScriptedOnEveryPlatform() throws {
        let herald = try #require(heraldExecutable(), "build herald first (swift build)")
        let run = try HeraldRun.run(herald: herald, ["demo", "--jobs", "600", "--timeout-seconds", "90"], seconds: 120)
        #expect(run.status == 0, "herald demo: \(run.output)")
        #expect(!run.output.contains("MISMATCH"), "\(run.output)")
        for outcome in ["delivered", "token_dropped", "failed", "rejected"] {
            let line = run.output.split(separator: "\n").first { $0.hasPrefix(outcome + " ") }
            #expect(line?.hasSuffix("ok") == true, "\(outcome): \(line.map(String.init) ?? "no line")\n\(run.output)")
        }
        // Every simulator was sent to: "<name> simulator: N requests, ...", N > 0.
        for name in ["APNs", "FCM", "Web Push", "Huawei Push Kit"] {
            let line = run.output.split(separator: "\n").first { $0.hasPrefix("\(name) simulator:") }
            let requests = line.flatMap { $0.split(separator: ":", maxSplits: 1).last }.flatMap { Int($0.split(separator: " ").first ?? "") }
            #expect((requests ?? 0) > 0, "\(name): \(line.map(String.init) ?? "no line")\n\(run.output)")
        }
    }
}
