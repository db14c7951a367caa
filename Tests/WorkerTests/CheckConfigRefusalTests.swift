import CurlHTTP
import Foundation
import HeraldTestSupport
import Simulators
import RedisQueue
import Testing

extension EndToEnd {
    /// Issue 30: `check-config` said OK (exit 0, one warning) for a Redis password Redis refuses, an untrusted
    /// Redis certificate and a master the sentinels do not know, and accepted a token_uri that is not https.
    /// A refusal only the configuration can cure is an error (exit 78); an unreachable Redis stays a warning.
    @Suite struct CheckConfigRefusals {
        @Test(.timeLimit(.minutes(2)))
        func aRefusedPasswordOrCertificateIsAnErrorAndUnreachableAWarning() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            let guarded = try RedisServer()
            defer { guarded.stop() }
            // Set once it answers (the fixture's readiness check speaks without a password).
            _ = try BlockingRedis(url: try RedisURL(parsing: guarded.url)).command(["CONFIG", "SET", "requirepass", "right-password"])
            let wrong = try world.writeConfig(name: "wrong-password", redis: ["url": "redis://:wrong-password@127.0.0.1:\(guarded.port)/0"])
            let refused = try world.runHerald(["check-config", "--config", wrong])
            #expect(refused.status == 78 && refused.output.contains("FAIL redis:") && refused.output.contains("AUTH refused"), "\(refused.output)")
            #expect(!refused.output.contains("wrong-password"), "the password is never printed: \(refused.output)")
            let right = try world.writeConfig(name: "right-password", redis: ["url": "redis://:right-password@127.0.0.1:\(guarded.port)/0"])
            let accepted = try world.runHerald(["check-config", "--config", right])
            #expect(accepted.status == 0 && accepted.output.contains("answers"), "\(accepted.output)")

            let unreachable = try world.writeConfig(name: "unreachable", redis: ["url": "redis://127.0.0.1:\(freeLoopbackPort())/0"])
            let down = try world.runHerald(["check-config", "--config", unreachable])
            #expect(down.status == 0 && down.output.contains("warn redis:"), "unreachable may be temporary: \(down.output)")

            // A certificate no configured CA vouches for (the test CA is not in the system trust store).
            let tls = try RedisTLSServer(requireClientCertificate: false)
            defer { tls.stop() }
            let untrusted = try world.writeConfig(name: "untrusted", redis: ["url": tls.url])
            let unverified = try world.runHerald(["check-config", "--config", untrusted])
            #expect(unverified.status == 78 && unverified.output.contains("FAIL redis:")
                    && unverified.output.contains("certificate verification failed"), "\(unverified.output)")
        }

        @Test(.timeLimit(.minutes(2)))
        func aMasterTheSentinelsDoNotKnowIsAnError() throws {
            let world = try EndToEndWorld()
            defer { world.shutdown(); world.removeFiles() }
            let sentinels = try SentinelSet(sentinelCount: 1)
            defer { sentinels.stop(); sentinels.removeFiles() }
            let config = try world.writeConfig(name: "unknown-master", redis: [
                "url": "redis://ignored:1/0", "mode": "sentinel", "sentinels": sentinels.sentinelAddresses, "master_name": "not-herald"])
            let check = try world.runHerald(["check-config", "--config", config])
            #expect(check.status == 78 && check.output.contains("does not know a master named"), "\(check.output)")
        }

        @Test(.timeLimit(.minutes(2)))
        func aTokenURIThatIsNotHTTPSIsAnError() throws {
            let world = try EndToEndWorld(fcmFaults: MockFCMFaultScript(rules: []))
            defer { world.shutdown(); world.removeFiles() }
            let account = try MockServiceAccount.generate(projectID: "herald-demo", clientEmail: "sender@herald-demo.iam.gserviceaccount.com")
            for uri in ["http://127.0.0.1:1/token", "file:///etc/passwd", "gopher://127.0.0.1:1/", "dict://127.0.0.1:1/"] {
                let file = world.directory + "/account-\(uri.prefix { $0 != ":" }).json"
                try account.write(to: file, tokenURI: uri)
                let config = try world.writeConfig(name: "token-uri", serviceAccountFile: file)
                let check = try world.runHerald(["check-config", "--config", config, "--skip-redis"])
                #expect(check.status == 78 && check.output.contains("is not an https:// URL"), "\(uri): \(check.output)")
            }
        }

        /// A scheme libcurl does not speak is the URL's fault, which no retry cures: the worker reads it as a
        /// configuration error, and a port nobody listens on as an outage.
        @Test func libcurlsUnsupportedProtocolIsAConfigurationErrorAndARefusedConnectionIsNot() {
            let options = CurlPost.Options()
            guard case .failure(let scheme) = CurlPost.post(url: "nosuchscheme://127.0.0.1/token", contentType: "text/plain", body: [], options: options),
                  case .failure(let closed) = CurlPost.post(url: "https://127.0.0.1:\(freeLoopbackPort())/token", contentType: "text/plain", body: [], options: options)
            else { Issue.record("a post that cannot succeed succeeded"); return }
            #expect(scheme.isConfiguration, "\(scheme)")
            #expect(!closed.isConfiguration, "\(closed)")
        }
    }
}
