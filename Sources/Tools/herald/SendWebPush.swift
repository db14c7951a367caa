import Basics
import Foundation
import ProviderKit
import PushCore
import Reactor
import WebPush
import Worker

/// `herald send --platform webpush`: one message to one browser subscription through the worker's own Web Push
/// sender (encrypted for the subscription, VAPID-signed), answer as JSON.
enum SendWebPush {
    static func run(_ args: ParsedArguments) throws -> Int32 {
        var settings = WebPushSettings()
        let auth: WebPushAuth
        let name: String
        if let key = args.value("vapid-key") {
            guard let subject = args.value("subject") else { throw UsageError("--vapid-key needs --subject (mailto:... or https://...)") }
            var policy = PushServicePolicy()
            if let hosts = args.value("push-service-hosts") {
                policy = PushServicePolicy(hosts: hosts.split(separator: ",").map(String.init), allowsIPLiterals: args.flag("allow-local"),
                                           allowsPrivateAddresses: args.flag("allow-local"))
            }
            auth = WebPushAuth(vapidKey: key, subject: subject, policy: policy)
            name = "send"
        } else if args.value("config") != nil {
            let configuration = try loadConfiguration(args)
            settings = configuration.webPush
            let index = try AppDirectory(configuration.apps).index(app: args.value("app"), topic: nil, platform: .webpush)
            guard let appAuth = configuration.apps[index].webpush else { throw UsageError("app '\(configuration.apps[index].name)' is not a Web Push app") }
            auth = appAuth
            name = configuration.apps[index].name
        } else {
            throw UsageError("Web Push needs --config with a Web Push app, or --vapid-key and --subject")
        }
        if let ca = args.value("ca-file") { settings.caFile = ca }
        let timeout = try args.int("timeout-ms") ?? settings.requestTimeoutMs
        guard (100...3_600_000).contains(timeout) else { throw UsageError("--timeout-ms must be 100...3600000") }
        settings.requestTimeoutMs = timeout
        guard let subscription = args.value("subscription") else { throw UsageError("missing --subscription (the PushSubscription's JSON)") }
        let payloadText = args.value("payload") ?? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        var read = WebPushJobMembers()
        read.subscription = Array(subscription.utf8)
        read.payload = Array(payloadText.utf8)
        read.ttl = try args.int("ttl").map(Int64.init)
        read.urgency = args.value("urgency")
        let credential = try auth.load()
        let message: WebPushMessage
        switch WebPushJob.message(read, topic: args.value("topic"), policy: auth.policy) {
        case .success(let m): message = m
        case .failure(let failure):
            printJSON(["outcome": "rejected", "platform": "webpush", "reason": failure.description, "status": 0])
            return ExitCode.dataError
        }

        let loop = try EventLoop.startThread(name: "herald-send")
        defer { loop.stop(); loop.waitUntilStopped() }
        let answer = LockedValue<DeliveryResult?>(nil)
        try loop.submit { [settings] in
            let sender = WebPushSender(apps: [ProviderApp(index: 0, name: name, auth: auth, credential: credential)], loop: loop, settings: settings,
                                       logger: Logger(component: "send", minimumLevel: .warning))
            let admission = sender.send(message, app: 0) { outcome in
                answer.withLock { $0 = outcome.result }
                sender.closeAll()
            }
            if admission != .accepted { answer.withLock { $0 = .transport(.connectionFailed("\(admission)")) } }
        }
        guard let result = answer.wait(until: { $0 != nil }, timeoutSeconds: Double(timeout + 15_000) / 1000, then: { $0 }) ?? nil else {
            printJSON(["outcome": "failed", "platform": "webpush", "reason": "no answer in time", "status": 0])
            return ExitCode.failure
        }
        switch result {
        case .answer(let answer):
            guard let response = answer as? WebPushResponse else { return ExitCode.failure }
            let delivered = response.answerClass == .delivered
            var object: [String: Any] = ["platform": "webpush", "status": response.status, "outcome": delivered ? "delivered" : "failed"]
            if let id = response.messageID { object["message_id"] = id }
            if !delivered { object["reason"] = response.reasonName }
            if let seconds = response.retryAfterSeconds { object["retry_after"] = seconds }
            printJSON(object)
            return delivered ? ExitCode.success : ExitCode.failure
        case .transport(let failure):
            printJSON(["outcome": "failed", "platform": "webpush", "status": 0, "reason": "\(failure)"])
            return ExitCode.failure
        }
    }
}
