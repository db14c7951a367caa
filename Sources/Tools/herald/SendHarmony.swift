import Basics
import Foundation
import Harmony
import PushCore
import Worker

/// `herald send --platform harmony`: one Push Kit v3 message through the worker's own HarmonyOS sender (a PS256 JWT
/// signed with the service account's key, HTTP/2 to the push host), answer as JSON. Neither key nor JWT is printed.
enum SendHarmony {
    static func run(_ args: ParsedArguments) throws -> Int32 {
        var harmony = Configuration.HarmonySettings()
        let auth: HarmonyAuth
        let name: String
        if let file = args.value("service-account") {
            auth = HarmonyAuth(serviceAccountFile: file)
            name = "send"
        } else if args.value("config") != nil {
            let (configuration, app) = try sendConfiguredApp(args, platform: .harmony)
            harmony = configuration.harmony
            guard let found = app.harmony else { throw UsageError("app '\(app.name)' is not a HarmonyOS app") }
            auth = found
            name = app.name
        } else {
            throw UsageError("harmony needs --service-account (Huawei's key file), or --config with a HarmonyOS app")
        }
        try sendPoolFlags(args, into: &harmony.pool)
        guard HTTPSURL(harmony.pool.url) != nil else { throw UsageError("--url must look like https://host:port") }
        guard let token = args.value("token") else { throw UsageError("harmony needs --token (the device's Push Token)") }
        let account = try auth.load()
        let text = args.value("payload") ?? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        var job = HarmonyJob()
        job.tokens = [token]
        job.payload = Array(text.trimmingCharacters(in: .whitespacesAndNewlines).utf8)
        job.pushOptions = args.value("push-options").map { Array($0.utf8) }
        if let word = args.value("push-type") {
            guard let type = HarmonyPushType(word: word) ?? Int(word).flatMap(HarmonyPushType.init(rawValue:)) else {
                throw UsageError("--push-type for harmony: " + HarmonyPushType.allCases.map(\.word).joined(separator: ", "))
            }
            job.pushType = type
        }
        guard JSONShapeCheck.isObject(job.payload), job.pushOptions.map(JSONShapeCheck.isObject) ?? true else {
            throw UsageError("--payload and --push-options must be JSON objects")
        }
        let tokens: [String]
        switch HarmonyRules.check(job) {
        case .success(let t): tokens = t
        case .failure(let refusal):
            printJSON(["outcome": "rejected", "platform": "harmony", "reason": refusal.description, "status": 0])
            return ExitCode.dataError
        }
        let notification = PushNotification(deviceToken: token, topic: "", environment: .production, payload: job.payload, platform: .harmony,
                                            provider: HarmonyFields(pushType: job.pushType, pushOptions: job.pushOptions, tokens: tokens))
        let settings = harmony
        let result = try sendOnce(notification, to: Destination(app: 0, environment: .production, platform: .harmony),
                                  timeoutSeconds: Double(settings.pool.requestTimeoutMs + 15_000) / 1000) { loop in
            HarmonySender(apps: [ProviderApp(index: 0, name: name, auth: auth, credential: account)], loop: loop, harmony: settings,
                          logger: Logger(component: "send", minimumLevel: .warning))
        }
        guard let response = result?.harmony else {
            printJSON(["outcome": "failed", "platform": "harmony", "status": 0, "reason": result.map { "\($0)" } ?? "no answer in time"])
            return ExitCode.failure
        }
        let delivered = response.answerClass == .delivered
        var object: [String: Any] = ["platform": "harmony", "status": response.status, "outcome": delivered ? "delivered" : "failed"]
        if let code = response.code { object["code"] = code }
        if let msg = response.envelope.msg { object["msg"] = msg }
        if let id = response.envelope.requestID { object["request_id"] = id }
        if !delivered { object["reason"] = response.reasonName }
        printJSON(object)
        return delivered ? ExitCode.success : ExitCode.failure
    }
}

/// Whether bytes are one JSON object (`herald send`'s flags, before they go out as written).
private enum JSONShapeCheck {
    static func isObject(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { (try? JSONScanner.validate($0))?.kind == .object }
    }
}
