import Basics
import Foundation
import Harmony
import HeraldTestSupport
import ProviderKit
import PushCore
import Reactor
import Simulators
import Testing

/// A service account in a key file of Huawei's form, written by the simulator's account and read by Herald's loader.
enum HarmonyTestAccount {
    static func make() throws -> HarmonyServiceAccount {
        let directory = makeTemporaryDirectory("harmony-account")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/key.json"
        try MockHarmonyAccount.generate().write(to: path)
        return try HarmonyAuth(serviceAccountFile: path).load()
    }
}

/// A running Push Kit v3 simulator (its own directory, TLS files and key file) and a `HarmonySender` on its own loop
/// pointed at it. `deinit` stops both and removes the directory.
final class HarmonyFixture: @unchecked Sendable {
    // @unchecked: `sender` is touched only inside `loop.submit`/`execute` closures, on the loop thread.
    let directory = makeTemporaryDirectory("harmony-test")
    let server: MockHarmonyServer
    let keyFile: String
    let loop: EventLoop
    private var sender: HarmonySender?

    /// `foreignKey`: the sender signs with another key of the same project (one Push Kit does not know).
    /// `projects`: how many projects (accounts) the simulator knows, each an app of the sender, at index 0, 1...;
    /// `keyFile` is the first's.
    init(faults: MockHMSFaultScript = MockHMSFaultScript(), jwtLifetime: Int = 3600, foreignKey: Bool = false, projects: Int = 1) throws {
        var configuration = MockHarmonyConfiguration()
        configuration.tls = try MockTLSFiles.generate(in: directory)
        configuration.faults = faults
        configuration.recordAccepted = true
        configuration.accounts = try (0..<projects).map { try MockHarmonyAccount.generate(projectID: "10165352386378527\($0)") }
        server = try MockHarmonyServer(configuration: configuration)
        keyFile = directory + "/harmony-service-account.json"
        var apps: [ProviderApp<HarmonyAuth, HarmonyServiceAccount>] = []
        for (index, account) in server.accounts.enumerated() {
            let file = index == 0 ? keyFile : directory + "/harmony-service-account-\(index).json"
            try (foreignKey && index == 0 ? MockHarmonyAccount.generate(projectID: account.projectID) : account).write(to: file)
            let auth = HarmonyAuth(serviceAccountFile: file)
            apps.append(ProviderApp(index: index, name: "harmony-\(index)", auth: auth, credential: try auth.load()))
        }
        loop = try EventLoop.startThread(name: "harmony-test")
        var settings = HarmonySettings()
        settings.pool.url = server.baseURL
        settings.pool.caFile = server.caFile
        settings.jwtLifetimeSeconds = jwtLifetime
        try loop.submit { [self, settings, apps] in
            sender = HarmonySender(apps: apps, loop: loop, harmony: settings, logger: Logger(component: "test", minimumLevel: .error))
        }
    }

    deinit {
        try? loop.submit { [self] in sender?.closeAll(); sender = nil }
        loop.stop()
        server.stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    var caFile: String { server.caFile! }

    /// Sends one notification and waits (20 s at most) for its answer.
    func send(tokens: [String], payload: String = #"{"notification":{"category":"MARKETING","title":"t","body":"b","clickAction":{"actionType":0}}}"#,
              pushType: HarmonyPushType = .alert, pushOptions: String? = nil, app: Int = 0) throws -> DeliveryResult {
        let fields = HarmonyFields(pushType: pushType, pushOptions: pushOptions.map { Array($0.utf8) }, tokens: tokens)
        let notification = PushNotification(deviceToken: tokens[0], topic: "", environment: .production, payload: Array(payload.utf8),
                                            platform: .harmony, provider: fields)
        let outcome = LockedValue<PushOutcome?>(nil)
        loop.execute { [self] in
            _ = sender?.send(notification, to: Destination(app: app, environment: .production, platform: .harmony), afterConnection: 0) { result in
                outcome.withLock { $0 = result }
            }
        }
        #expect(waitUntil(seconds: 20) { outcome.withLock { $0 != nil } }, "an answer within 20 s")
        return try #require(outcome.withLock { $0 }).result
    }

    /// JWTs the sender signed so far.
    func signed() throws -> Int { try loop.submit { [self] in sender?.shared.apps[0]?.tokens.exchanges ?? -1 } }

    /// One request with curl (HTTP/2 unless `http1`): the status and the body. Every wait has a deadline.
    func curl(bearer: String?, pushType: String? = "0", body: String, http1: Bool = false) throws -> (status: Int, body: [String: Any]) {
        let bodyFile = directory + "/curl-\(UUID().uuidString).json"
        FileManager.default.createFile(atPath: bodyFile, contents: Data(body.utf8))
        var arguments = ["-sS", "--max-time", "20", "--cacert", caFile, "-o", bodyFile + ".out", "-w", "%{http_code}", "-X", "POST",
                         "-H", "Content-Type: application/json", "--data-binary", "@" + bodyFile, http1 ? "--http1.1" : "--http2"]
        if let bearer { arguments += ["-H", "Authorization: Bearer \(bearer)"] }
        if let pushType { arguments += ["-H", "push-type: \(pushType)"] }
        let child = try ChildProcess(name: "curl", executable: "/usr/bin/curl", arguments: arguments + [server.sendURL()])
        guard child.waitForExit(seconds: 30) == 0 else { _ = child.stop(); throw HarmonyPeerFailure(description: "curl: \(child.output)") }
        let answer = (try? Data(contentsOf: URL(fileURLWithPath: bodyFile + ".out"))) ?? Data()
        let object = (try? JSONSerialization.jsonObject(with: answer) as? [String: Any]) ?? [:]
        return (Int(child.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0, object)
    }
}

struct HarmonyPeerFailure: Error, CustomStringConvertible { let description: String }

/// Python 3 with PyJWT and cryptography (Debian's python3-jwt, python3-cryptography; scripts/setup installs them).
enum PyJWT {
    static let python = findPython(running: "import jwt, cryptography; jwt.get_algorithm_by_name('PS256')")

    /// Runs `code` with `arguments` (sys.argv[1:]); its standard output, trimmed.
    static func run(_ code: String, _ arguments: [String]) throws -> String {
        guard let python else { throw HarmonyPeerFailure(description: "no python3 with PyJWT and cryptography: run scripts/setup") }
        let child = try ChildProcess(name: "pyjwt", executable: python, arguments: ["-c", code] + arguments, errorsApart: true)
        guard let status = child.waitForExit(seconds: 60) else { _ = child.stop(); throw HarmonyPeerFailure(description: "PyJWT timed out") }
        guard status == 0 else { throw HarmonyPeerFailure(description: "PyJWT exit \(status): \(child.output) \(child.errorOutput)") }
        return child.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
