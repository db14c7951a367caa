import Foundation
import HeraldTestSupport
import Simulators
import Testing

extension EndToEnd {
    /// A producer's W3C `traceparent` follows its job to every result entry: delivered, retrying then delivered,
    /// each multicast token's own entries, and a rejected job's entry and log line.
    @Suite struct TraceContext {
        @Test(.timeLimit(.minutes(2)))
        func aJobsTraceparentIsInEveryResultEntryAndTheRejectionLog() throws {
            let world = try EndToEndWorld(faults: MockFaultScript(seed: 31, rules: [
                MockFaultRule(fate: .failFirst, tokenPrefix: "e5", status: 500, reason: "InternalServerError", count: 1),
            ]))
            defer { world.shutdown(); world.removeFiles() }
            func trace(_ n: Int) -> String { "00-\(String(format: "%032x", n + 1))-00f067aa0ba902b7-01" }
            let multicast = (0..<3).map { "\"\(deviceToken(prefix: "00", index: 100 + $0))\"" }.joined(separator: ",")
            try world.push([
                Array(#"{"id":"plain","token":"\#(deviceToken(prefix: "00", index: 1))","traceparent":"\#(trace(1))","payload":{"aps":{}}}"#.utf8),
                Array(#"{"id":"again","token":"\#(deviceToken(prefix: "e5", index: 2))","traceparent":"\#(trace(2))","payload":{"aps":{}}}"#.utf8),
                Array(#"{"id":"many","tokens":[\#(multicast)],"traceparent":"\#(trace(3))","payload":{"aps":{}}}"#.utf8),
                Array(#"{"id":"bad","token":"not-hex","traceparent":"\#(trace(4))","payload":{"aps":{}}}"#.utf8),
                Array(#"{"id":"none","token":"\#(deviceToken(prefix: "00", index: 5))","traceparent":"garbage","payload":{"aps":{}}}"#.utf8),
            ])
            let worker = try world.startWorker(id: "trace-1", config: try world.writeConfig(retry: ["server_error_base_seconds": 1]))
            let ledger = ResultsLedger(redisURL: world.redisURL)
            // plain, again, the three tokens of many, bad, none.
            #expect(try ledger.waitForTerminal(7, seconds: 60) {
                if !worker.isRunning { throw TestSupportError("worker exited:\n\(world.workerLogs())") }
            }, "\(world.workerLogs())")
            let expected = ["plain": trace(1), "again": trace(2), "many": trace(3), "bad": trace(4)]
            for entry in ledger.entries where entry.id != "none" {
                let job = entry.id.hasPrefix("many") ? "many" : entry.id
                #expect(entry.fields["traceparent"] == expected[job], "\(entry.fields)")
            }
            #expect(ledger.byJob["again"]?.map(\.outcome) == ["retrying", "delivered"], "\(ledger.byJob["again"] ?? [])")
            #expect(ledger.entries.filter { $0.fields["traceparent"] == trace(3) }.count == 3, "each token of the multicast")
            #expect(ledger.byJob["bad"]?.first?.outcome == "rejected")
            #expect(ledger.byJob["none"]?.first?.outcome == "delivered" && ledger.byJob["none"]?.first?.fields["traceparent"] == nil,
                    "a malformed traceparent is ignored, the job sent")
            let rejection = world.workerLogs(lastLines: 200).split(separator: "\n").first { $0.contains("job rejected") && $0.contains("\"bad\"") }
            #expect(rejection?.contains(trace(4)) == true, "\(rejection ?? "no rejection line")")
        }
    }
}
