import Foundation
import Glibc
import HeraldTestSupport
import RedisQueue
import TLS
import Testing

extension EndToEnd {
    /// A worker and the tools as processes over `rediss://` with mutual TLS, configured only through
    /// `redis.url` and `redis.tls`, and `check-config` naming what is wrong with a TLS setup.
    @Suite struct RedisOverTLS {
        @Test(.timeLimit(.minutes(2)))
        func aWorkerAndTheToolsRunOverMutualTLS() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            let server = try RedisTLSServer(requireClientCertificate: true)
            defer { server.stop() }
            let certificates = server.certificates
            let tls: [String: Any] = ["ca_file": certificates.caFile, "cert_file": certificates.clientCertificate,
                                      "key_file": certificates.clientKey, "server_name": "localhost"]
            let config = try world.writeConfig(redis: ["url": server.url, "tls": tls])

            let check = try world.runHerald(["check-config", "--config", config])
            #expect(check.status == 0 && check.output.contains("ok   redis rediss://127.0.0.1:\(server.port)/0 answers"), "\(check.output)")

            let total = 200
            let file = world.directory + "/jobs.jsonl"
            let lines = (0..<total).map { String(decoding: jobBytes(id: "tls-\($0)", token: deviceToken(prefix: "00", index: $0)), as: UTF8.self) }
            try (lines.joined(separator: "\n") + "\n").write(toFile: file, atomically: true, encoding: .utf8)
            let enqueue = try world.runHerald(["enqueue", "--config", config, "--file", file])
            #expect(enqueue.status == 0 && enqueue.output.contains("\"pushed\":\(total)"), "\(enqueue.output)")

            let worker = try world.startWorker(id: "tls-worker", config: config)
            let redis = try BlockingRedis(url: try RedisURL(parsing: server.url), tls: try TLSContext(TLSConfiguration(
                caFile: certificates.caFile, useSystemTrustStore: false, clientCertificateFile: certificates.clientCertificate,
                clientKeyFile: certificates.clientKey), alpn: []))
            let finished = waitUntil(seconds: 60) { (try? redis.command(["XLEN", "herald:results"]).int) == Int64(total) || !worker.isRunning }
            #expect(finished && worker.isRunning, "\(world.workerLogs())")
            #expect(try redis.command(["XLEN", "herald:results"]).int == Int64(total))

            let stats = try world.runHerald(["stats", "--config", config, "--json"])
            #expect(stats.status == 0 && stats.output.contains("\"results_length\":\(total)"), "\(stats.output)")
            let tail = try world.runHerald(["tail", "--config", config, "--json", "--count", "3", "--from-start"], seconds: 15)
            #expect(tail.status == 0 && tail.output.split(separator: "\n").filter { $0.contains("\"outcome\":\"delivered\"") }.count == 3,
                    "\(tail.output)")
            worker.signal(SIGTERM)
            #expect(worker.waitForExit(seconds: 15) == 0, "\(world.workerLogs())")

            // Without the client certificate the server refuses, and the tool says so.
            let noCertificate = try world.writeConfig(name: "no-cert", redis: ["url": server.url, "tls": ["ca_file": certificates.caFile]])
            let refused = try world.runHerald(["stats", "--config", noCertificate, "--json"], seconds: 15)
            #expect(refused.status != 0 && refused.output.contains("client certificate"), "\(refused.output)")
        }

        @Test func checkConfigNamesEachTLSProblem() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            let certificates = try TLSTestCertificates(directory: makeTemporaryDirectory("herald-tls-files"))
            defer { try? FileManager.default.removeItem(atPath: certificates.directory) }
            let missing = try world.writeConfig(name: "missing", redis: [
                "url": "rediss://127.0.0.1:1/0", "tls": ["ca_file": certificates.directory + "/nope.crt", "cert_file": certificates.clientCertificate]])
            let first = try world.runHerald(["check-config", "--config", missing, "--skip-redis"])
            #expect(first.status == 78, "\(first.output)")
            #expect(first.output.contains("redis.tls.ca_file \(certificates.directory)/nope.crt: no such file"), "\(first.output)")
            #expect(first.output.contains("redis.tls.cert_file needs redis.tls.key_file"), "\(first.output)")
            let plain = try world.writeConfig(name: "plain", redis: ["tls": ["ca_file": certificates.caFile]])
            let second = try world.runHerald(["check-config", "--config", plain, "--skip-redis"])
            #expect(second.status == 78 && second.output.contains("redis.url is not rediss://"), "\(second.output)")
            // A key of another certificate: loading the pair fails before any connection is tried.
            let mismatched = try world.writeConfig(name: "mismatched", redis: [
                "url": "rediss://127.0.0.1:1/0", "tls": ["cert_file": certificates.clientCertificate, "key_file": certificates.serverKey]])
            let third = try world.runHerald(["check-config", "--config", mismatched, "--skip-redis"])
            #expect(third.status == 78 && third.output.contains("redis.tls: client key") && third.output.contains("mismatch"), "\(third.output)")
        }
    }
}
