import Basics
import Foundation
import HMS
import PushCore
import Worker

/// `herald send --platform hms`: one Push Kit message through the worker's own Huawei sender (client-credentials
/// token with libcurl, HTTP/2 to the push host), answer as JSON. Neither the secret nor the access token is printed.
enum SendHMS {
    static func run(_ args: ParsedArguments) throws -> Int32 {
        var hms = Configuration.HMSSettings()
        let auth: HMSAuth
        let name: String
        if let appID = args.value("app-id") {
            guard let file = args.value("client-secret-file") else { throw UsageError("--app-id needs --client-secret-file") }
            auth = HMSAuth(appID: appID, clientSecretFile: file)
            name = "send"
        } else if args.value("config") != nil {
            let (configuration, app) = try sendConfiguredApp(args, platform: .hms)
            hms = configuration.hms
            guard let found = app.hms else { throw UsageError("app '\(app.name)' is not a Huawei app") }
            auth = found
            name = app.name
        } else {
            throw UsageError("hms needs --app-id and --client-secret-file, or --config with a Huawei app")
        }
        try sendPoolFlags(args, into: &hms.pool)
        if let url = args.value("token-url") { hms.tokenURL = url }
        guard HTTPSURL(hms.pool.url) != nil, HTTPSURL(hms.tokenURL) != nil else { throw UsageError("--url and --token-url must look like https://host:port") }
        let credential = try auth.load()
        let text = args.value("message") ?? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        let message = Array(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        let target: HMSTarget
        switch HMSMessageValidator.validate(message) {
        case .success(let t): target = t
        case .failure(let failure):
            printJSON(["outcome": "rejected", "platform": "hms", "reason": failure.description, "status": 0])
            return ExitCode.dataError
        }
        let settings = hms
        let seconds = Double(settings.pool.requestTimeoutMs + settings.pool.tokenTimeoutMs + 15_000) / 1000
        let result = try sendOnce(JobSpec().hmsNotification(message: message, target: target), to: Destination(app: 0, environment: .production, platform: .hms),
                                  timeoutSeconds: seconds) { loop in
            HMSSender(apps: [ProviderApp(index: 0, name: name, auth: auth, credential: credential)], loop: loop, hms: settings,
                      logger: Logger(component: "send", minimumLevel: .warning))
        }
        guard let response = result?.hms else {
            printJSON(["outcome": "failed", "platform": "hms", "status": 0, "reason": result.map { "\($0)" } ?? "no answer in time"])
            return ExitCode.failure
        }
        let delivered = response.answerClass == .delivered
        var object: [String: Any] = ["platform": "hms", "status": response.status, "outcome": delivered ? "delivered" : "failed"]
        if let code = response.code { object["code"] = code }
        if let msg = response.msg { object["msg"] = msg }
        if let id = response.requestID { object["request_id"] = id }
        // A many-token send's partial success: the tokens Push Kit named as illegal (a worker drops those).
        if !response.illegalTokens.isEmpty { object["illegal_tokens"] = response.illegalTokens }
        if !delivered { object["reason"] = response.grantRefused.map { "TokenRefused: " + $0 } ?? response.reasonName }
        printJSON(object)
        return delivered ? ExitCode.success : ExitCode.failure
    }
}
