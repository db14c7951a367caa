import APNs
import Basics
import FCM
import Foundation
import PushCore
import Reactor
import Worker

/// `herald send --platform fcm`: one FCM v1 message through the worker's own FCM sender (token exchange with
/// libcurl, HTTP/2 to the FCM host), answer as JSON. The access token is never printed.
enum SendFCM {
    static func run(_ args: ParsedArguments) throws -> Int32 {
        var fcm = Configuration.FCMSettings.fcm
        var app: Configuration.AppSettings
        if args.value("config") != nil && args.value("service-account") == nil {
            let configuration = try loadConfiguration(args)
            fcm = configuration.fcm
            let index = try AppDirectory(configuration.apps).index(app: args.value("app"), topic: nil, platform: .fcm)
            app = configuration.apps[index]
            // The command needs the app's service account (its FCM settings), whatever the app is named.
            guard app.fcm != nil else { throw UsageError("app '\(app.name)' is not an FCM app") }
        } else if let file = args.value("service-account") {
            app = Configuration.AppSettings(name: "send", bundleID: "", fcm: .init(serviceAccountFile: file))
        } else {
            throw UsageError("FCM needs --service-account FILE, or --config with an FCM app")
        }
        if let url = args.value("url") { fcm.url = url }
        if let ca = args.value("ca-file") { fcm.caFile = ca }
        guard APNsURL(fcm.url) != nil else { throw UsageError("--url must look like https://host:port") }
        let timeout = try args.int(renamedFlag(args, "timeout-ms", deprecated: "timeout")) ?? fcm.requestTimeoutMs
        guard (100...3_600_000).contains(timeout) else { throw UsageError("--timeout-ms must be 100...3600000") }
        fcm.requestTimeoutMs = timeout
        guard let auth = app.fcm else { throw UsageError("app '\(app.name)' is not an FCM app") }
        let account = try auth.load()
        let name = app.name
        let messageText = args.value("message") ?? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        let message = Array(messageText.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        let target: FCMTarget
        switch FCMMessageValidator.validate(message) {
        case .success(let t): target = t
        case .failure(let failure):
            printJSON(["outcome": "rejected", "platform": "fcm", "reason": failure.errorCode, "message": failure.message, "status": 0])
            return ExitCode.dataError
        }
        let notification = JobSpec().fcmNotification(message: message, target: target)

        let settings = fcm
        let seconds = Double(timeout + settings.tokenTimeoutMs + 15_000) / 1000
        let destination = Destination(app: 0, environment: .production, platform: .fcm)
        guard let result = try sendOnce(notification, to: destination, timeoutSeconds: seconds, sender: { loop in
            FCMSender(apps: [ProviderApp(index: 0, name: name, auth: auth, credential: account)], loop: loop, fcm: settings,
                      logger: Logger(component: "send", minimumLevel: .warning))
        }) else {
            printJSON(["outcome": "failed", "platform": "fcm", "reason": "no answer in time", "status": 0])
            return ExitCode.failure
        }
        switch result {
        case .answer(let answer):
            guard let response = answer as? FCMResponse else { return ExitCode.failure }
            var object: [String: Any] = ["platform": "fcm", "status": response.status, "outcome": response.status == 200 ? "delivered" : "failed"]
            if let name = response.name { object["name"] = name }
            if response.status != 200 { object["reason"] = response.grantRefused.map { "TokenRefused: " + $0 } ?? response.reasonName }
            if let status = response.rpcStatus { object["error_status"] = status }
            if let message = response.message { object["error_message"] = message }
            if let seconds = response.retryAfterSeconds { object["retry_after"] = seconds }
            printJSON(object)
            return response.status == 200 ? ExitCode.success : ExitCode.failure
        case .transport(let failure):
            printJSON(["outcome": "failed", "platform": "fcm", "status": 0, "reason": "\(failure)"])
            return ExitCode.failure
        }
    }
}
