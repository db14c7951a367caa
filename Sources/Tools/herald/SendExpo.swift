import Basics
import Expo
import Foundation
import PushCore
import Worker

/// `herald send --platform expo`: one message to one Expo push token through the worker's own Expo sender (HTTP/2,
/// the access token as a bearer), its ticket as JSON. The receipt comes later (`herald scheduler --receipts` writes
/// it for a worker's jobs); the access token is never printed.
enum SendExpo {
    static func run(_ args: ParsedArguments) throws -> Int32 {
        var expo = Configuration.ExpoSettings()
        let auth: ExpoAuth
        let name: String
        if let file = args.value("access-token-file") {
            auth = ExpoAuth(accessTokenFile: file)
            name = "send"
        } else if args.value("config") != nil {
            let (configuration, app) = try sendConfiguredApp(args, platform: .expo)
            expo = configuration.expo
            guard let found = app.expo else { throw UsageError("app '\(app.name)' is not an Expo app") }
            auth = found
            name = app.name
        } else {
            throw UsageError("expo needs --access-token-file, or --config with an Expo app")
        }
        try sendPoolFlags(args, into: &expo.pool)
        guard HTTPSURL(expo.pool.url) != nil else { throw UsageError("--url must look like https://host:port") }
        guard let token = args.value("token") else { throw UsageError("expo needs --token ExponentPushToken[...]") }
        let credential = try auth.load()
        let text = args.value("payload") ?? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        let payload = Array(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        let refusal: String? = ExpoPushToken.isValid(token) ? ExpoMessageRules.validate(payload)?.description : "bad_expo_token: not an Expo push token"
        if let refusal {
            printJSON(["outcome": "rejected", "platform": "expo", "reason": refusal, "status": 0])
            return ExitCode.dataError
        }
        let settings = expo
        let notification = PushNotification(deviceToken: token, topic: "", environment: .production, payload: payload, platform: .expo)
        let result = try sendOnce(notification, to: Destination(app: 0, environment: .production, platform: .expo),
                                  timeoutSeconds: Double(settings.pool.requestTimeoutMs + 15_000) / 1000) { loop in
            ExpoSender(apps: [ProviderApp(index: 0, name: name, auth: auth, credential: credential)], loop: loop, expo: settings,
                       logger: Logger(component: "send", minimumLevel: .warning))
        }
        guard let response = result?.expo else {
            printJSON(["outcome": "failed", "platform": "expo", "status": 0, "reason": result.map { "\($0)" } ?? "no answer in time"])
            return ExitCode.failure
        }
        var object: [String: Any] = ["platform": "expo", "status": response.status]
        if case .awaitReceipt(let ticket, _) = response.answerClass {
            object["outcome"] = "accepted"
            object["ticket"] = ticket
        } else {
            object["outcome"] = "failed"
            object["reason"] = response.reasonName
            if let message = response.message { object["message"] = message }
        }
        printJSON(object)
        return object["outcome"] as? String == "accepted" ? ExitCode.success : ExitCode.failure
    }
}
