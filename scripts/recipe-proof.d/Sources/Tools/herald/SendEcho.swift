import Basics
import Echo
import Foundation
import PushCore
import Worker

/// `herald send --platform echo --url ... --key-file ... --token ... --payload ...`: one echo message through the
/// echo provider's own sender, the answer as JSON.
enum SendEcho {
    static func run(_ args: ParsedArguments) throws -> Int32 {
        var settings = EchoSettings()
        guard let url = args.value("url"), let keyFile = args.value("key-file"), let token = args.value("token") else {
            throw UsageError("echo needs --url, --key-file and --token")
        }
        settings.pool.url = url
        settings.pool.caFile = args.value("ca-file")
        guard HTTPSURL(url) != nil else { throw UsageError("--url must look like https://host:port") }
        let auth = EchoAuth(keyFile: keyFile)
        let credential = try auth.load()
        let payload = Array((args.value("payload") ?? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)).utf8)
        let notification = PushNotification(deviceToken: token, topic: "", environment: .production, payload: payload, platform: EchoProvider.platform)
        let result = try sendOnce(notification, to: Destination(app: 0, environment: .production, platform: EchoProvider.platform), timeoutSeconds: 30) { [settings] loop in
            EchoSender(apps: [ProviderApp(index: 0, name: "send", auth: auth, credential: credential)], loop: loop, settings: settings,
                       logger: Logger(component: "send", minimumLevel: .warning))
        }
        guard let response = result?.answer(as: EchoResponse.self) else {
            printJSON(["outcome": "failed", "platform": EchoProvider.platform.rawValue, "status": 0, "reason": result.map { "\($0)" } ?? "no answer in time"])
            return ExitCode.failure
        }
        let delivered = response.answerClass == .delivered
        printJSON(["platform": EchoProvider.platform.rawValue, "status": response.status, "outcome": delivered ? "delivered" : "failed"])
        return delivered ? ExitCode.success : ExitCode.failure
    }
}
