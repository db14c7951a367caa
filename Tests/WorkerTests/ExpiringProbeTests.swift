import Foundation
import Glibc
import HeraldTestSupport
import Simulators
import Testing

extension EndToEndWaiting {
    /// The first request on an unproven credential is a probe; when APNs refuses the credential, the probe's
    /// job may itself expire during the pause (its outcome is then `failed` Expired), but the credential is
    /// still unproven: the jobs waiting behind it must not go out with the broken key.
    @Suite struct ExpiringProbe {
        @Test(.timeLimit(.minutes(2)))
        func anExpiredProbeDoesNotProveABrokenKey() throws {
            let app = E2EApp(name: "main", bundleID: "com.example.e2e", teamID: "TEAME2E001", keyID: "KEYE2E0001")
            let world = try EndToEndWorld(apps: [app], faults: MockFaultScript(latencyMs: MockLatency(min: 0, max: 2)))
            defer { world.shutdown(); world.removeFiles() }
            let wrongDirectory = world.directory + "/wrong-key"
            try FileManager.default.createDirectory(atPath: wrongDirectory, withIntermediateDirectories: true)
            let impostor = try MockProviderKey.generate(keyID: app.keyID, teamID: app.teamID, directory: wrongDirectory)

            // The probe: first in line, expiring one second from now (inside the two-second pause).
            let expiring = Int(Date().timeIntervalSince1970) + 1
            var jobs: [[UInt8]] = [Array("""
            {"id":"probe","token":"\(deviceToken(prefix: "03", index: 0))","expiration":\(expiring),"payload":{"aps":{"alert":"soon gone"}}}
            """.utf8)]
            for i in 0..<200 { jobs.append(jobBytes(id: "wait-\(i)", token: deviceToken(prefix: "04", index: i))) }
            try world.push(jobs)
            let config = try world.writeConfig(worker: ["claim_batch": 300, "max_in_flight": 300],
                                               retry: ["configuration_pause_seconds": 2],
                                               keyFiles: ["main": impostor.privateKeyFile!])
            let worker = try world.startWorker(id: "probe-1", config: config)
            // Long enough for the probe's answer, its expiry and one resume with the still-broken key.
            let ledger = ResultsLedger(redisURL: world.redisURL)
            _ = waitUntil(seconds: 6) { _ = ledger.poll(); return false }
            let rejected = world.simulator.stats().byStatus["403", default: 0]
            #expect(rejected <= 4, "\(rejected) requests went out with the broken key (one probe per pause expected):\n\(worker.output.suffix(1500))")
            #expect(worker.output.contains("app paused: credential rejected"))
            #expect(world.simulator.stats().accepted == 0)
            worker.signal(SIGTERM)
            #expect(worker.waitForExit(seconds: 15) == 0)
        }
    }
}
