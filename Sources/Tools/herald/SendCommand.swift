import APNs
import Basics
import Foundation
import HTTP2
import PushCore
import Reactor
import Worker

/// `herald send`: one notification from flags, straight to APNs (or any host:port), result as JSON.
enum SendCommand {
    static let command = Command(
        name: "send",
        abstract: "Send one notification now (to " + Platform.allCases.map(\.displayName).joinedAsList("or")
            + ", by --platform) and print the answer as JSON.",
        discussion: """
        Credentials come from --config (with --app, or the app matching --topic) or inline from --key-file,
        --key-id and --team-id (or --cert/--cert-key/--p12 for certificate auth). The payload comes from
        --payload or standard input. Exits 0 when APNs answered 200, 1 otherwise, 65 when the notification is
        refused locally (with the reason APNs would give), 64 on usage errors.
        Example: herald send --key-file AuthKey_ABC123DEFG.p8 --key-id ABC123DEFG --team-id TEAM123456 \\
                   --topic com.example.app --token <hex> --environment sandbox --payload '{"aps":{"alert":"hi"}}'
        FCM: --platform fcm with --service-account FILE (or --config and an FCM --app) and --message, the FCM v1
        message object (or standard input); --url and --ca-file point it at another host (the simulator). Exits
        0 when FCM answered 200 (the message name is printed), 1 otherwise, 65 when refused locally.
        Web Push: --platform webpush with --subscription (the PushSubscription's JSON), --payload (a string) and
        --config with a Web Push app (or --vapid-key and --subject); --topic, --ttl and --urgency set its headers.
        Exits 0 when the push service answered 201 (its message id is printed), 1 otherwise, 65 when refused.
        Huawei Push Kit: --platform hms with --app-id and --client-secret-file (or --config and a Huawei --app) and
        --message, the Push Kit message (or standard input); --url, --token-url and --ca-file point it at the
        simulator. Exits 0 when Push Kit answered 80000000, 1 otherwise, 65 when refused locally.
        HarmonyOS (Push Kit v3): --platform harmony with --service-account (Huawei's key file; or --config and a
        HarmonyOS --app), --token, --payload (the scenario's payload object), --push-type (alert, widget,
        text_to_speech, background, live_view, call) and --push-options; exits as for hms.
        Example: herald send --platform fcm --service-account sa.json \\
                   --message '{"token":"<fcm token>","notification":{"title":"hi","body":"there"}}'
        """,
        options: [
            .value("config", "file", "Configuration file with the app's credentials."),
            .value("app", "name", "App from the configuration."),
            .value("key-file", "path", "Token auth: the .p8 key."),
            .value("key-id", "id", "Token auth: the 10-character Key ID."),
            .value("team-id", "id", "Token auth: the 10-character Team ID."),
            .value("cert", "pem", "Certificate auth: client certificate (PEM)."),
            .value("cert-key", "pem", "Certificate auth: its private key (PEM; default: in --cert)."),
            .value("p12", "path", "Certificate auth: PKCS#12 bundle (password from HERALD_P12_PASSWORD)."),
            .value("topic", "topic", "apns-topic (bundle ID plus the push type's suffix)."),
            .value("token", "hex", "Device token."),
            .value("environment", "env", "production (default) or sandbox."),
            .value("push-type", "type", "alert (default), background, voip, ...; harmony: alert, widget, background, live_view, call, ..."),
            .value("priority", "n", "10, 5 or 1."),
            .value("expiration", "unix-seconds", "apns-expiration."),
            .value("collapse-id", "id", "apns-collapse-id."),
            .value("apns-id", "uuid", "apns-id."),
            .value("payload", "json", "The JSON payload (default: read standard input)."),
            .value("url", "https://host:port", "Send here instead of Apple's host for the environment."),
            .value("ca-file", "pem", "Extra trusted CA (e.g. the simulator's)."),
            .value("timeout-ms", "ms", "Request timeout (default 15000)."),
            .value("timeout", "ms", "Deprecated name of --timeout-ms."),
            .value("platform", Platform.allCases.map(\.rawValue).joined(separator: "|"),
                   Platform.allCases.map(\.rawValue).joinedAsList("or") + "; apns by default, fcm when --message or --service-account is given."),
            .value("service-account", "json", "FCM: the service account's JSON key file; harmony: Huawei's service-account key file."),
            .value("push-options", "json", "harmony: Push Kit v3's pushOptions object (ttl, testMessage, biTag, receiptId)."),
            .value("message", "json", "FCM: the v1 message object; hms: the Push Kit message (default: read standard input)."),
            .value("app-id", "id", "hms: the Huawei app ID (OAuth client ID)."),
            .value("client-secret-file", "path", "hms: the file holding the app's client secret."),
            .value("token-url", "https://host:port/path", "hms: the OAuth token endpoint (default Huawei's; the simulator's in tests)."),
            .value("subscription", "json", "Web Push: the browser's PushSubscription.toJSON()."),
            .value("vapid-key", "key", "Web Push: the VAPID private key, PEM or base64url (else the --config app's)."),
            .value("subject", "uri", "Web Push: the VAPID sub, mailto:... or https://..."),
            .value("ttl", "seconds", "Web Push: TTL (default four weeks)."),
            .value("urgency", "level", "Web Push: very-low, low, normal or high."),
            .value("push-service-hosts", "hosts", "Web Push with --vapid-key: allowed push-service hosts, comma-separated."),
            .value("access-token-file", "path", "expo: the file holding the project's access token (with --token ExponentPushToken[...] and --payload)."),
            .flag("allow-local", "Web Push with --push-service-hosts: allow IP literals and local addresses (the simulator)."),
        ],
        run: run)

    static func run(_ args: ParsedArguments) throws -> Int32 {
        let implied: Platform = args.value("message") != nil || args.value("service-account") != nil ? .fcm : .apns
        // Exhaustive: a new provider does not build until `herald send` can send to it.
        switch try args.choice("platform", Platform.allCases) ?? implied {
        case .fcm: return try SendFCM.run(args)
        case .webpush: return try SendWebPush.run(args)
        case .expo: return try SendExpo.run(args)
        case .hms: return try SendHMS.run(args)
        case .harmony: return try SendHarmony.run(args)
        case .apns: break
        }
        guard let tokenHex = args.value("token") else { throw UsageError("missing --token") }
        let environment: APNsEnvironment
        if let raw = args.value("environment") {
            guard let env = APNsEnvironment(rawValue: raw) else { throw UsageError("--environment must be production or sandbox") }
            environment = env
        } else {
            environment = .production
        }
        let pushType: PushType
        if let raw = args.value("push-type") {
            guard let type = PushType(rawValue: raw) else { throw UsageError("unknown --push-type '\(raw)'") }
            pushType = type
        } else {
            pushType = .alert
        }
        var apns = Configuration.APNsSettings()
        var tls = TLSConfiguration()
        var tokenCache: ProviderTokenCache? = nil
        var topic = args.value("topic")
        if args.value("config") != nil {
            let configuration = try loadConfiguration(args)
            apns = configuration.apns
            let directory = AppDirectory(configuration.apps)
            let index = try directory.index(app: args.value("app"), topic: topic)
            let app = configuration.apps[index]
            let credential = try APNsCredential.load(app.apnsAuth, caFile: apns.caFile)
            tls = credential.tls
            tokenCache = credential.tokenCache
            if topic == nil { topic = pushType.topic(forBundleID: app.bundleID) }
        } else if let keyFile = args.value("key-file") {
            guard let keyID = args.value("key-id"), let teamID = args.value("team-id") else {
                throw UsageError("--key-file needs --key-id and --team-id")
            }
            let key = try SigningKey(p8File: keyFile)
            tokenCache = try ProviderTokenCache(keyID: keyID, teamID: teamID, key: key)
        } else if let cert = args.value("cert") {
            tls.clientCertificateFile = cert
            tls.clientKeyFile = args.value("cert-key") ?? cert
        } else if let p12 = args.value("p12") {
            tls.pkcs12File = p12
            tls.pkcs12Password = ProcessInfo.processInfo.environment["HERALD_P12_PASSWORD"]
        } else {
            throw UsageError("give --config, or --key-file/--key-id/--team-id, or --cert/--p12")
        }
        if let ca = args.value("ca-file") { tls.caFile = ca }
        guard let topic else { throw UsageError("missing --topic") }
        let payloadText = args.value("payload") ?? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        let notification = PushNotification.apns(
            deviceToken: tokenHex, topic: topic, environment: environment, pushType: pushType,
            priority: try args.int("priority"), expiration: try args.int("expiration").map(Int64.init),
            collapseID: args.value("collapse-id"), apnsID: args.value("apns-id"),
            payload: Array(payloadText.trimmingCharacters(in: .whitespacesAndNewlines).utf8))
        if let failure = NotificationValidator.validate(notification, bundleID: nil) {
            printJSON(["outcome": "rejected", "reason": failure.reason.rawValue, "message": failure.message, "status": 0])
            return ExitCode.dataError
        }
        let urlText = args.value("url") ?? (environment == .production ? apns.productionURL : apns.sandboxURL)
        guard let url = APNsURL(urlText) else { throw UsageError("--url must look like https://host:port") }
        let timeout = try args.int(renamedFlag(args, "timeout-ms", deprecated: "timeout")) ?? apns.requestTimeoutMs
        guard (100...3_600_000).contains(timeout) else { throw UsageError("--timeout-ms must be 100...3600000") }

        let loop = try EventLoop.startThread(name: "herald-send")
        defer { loop.stop(); loop.waitUntilStopped() }
        let answer = LockedValue<APNsClient.Outcome?>(nil)
        let cache = tokenCache
        let tlsSettings = tls
        let proxy = apns.proxy
        try loop.submit {
            let client = try APNsClient(loop: loop, host: url.host, port: url.port, tls: tlsSettings, tokenCache: cache,
                                        connections: 1, requestTimeoutMilliseconds: timeout, proxy: proxy)
            client.send(notification) { outcome in
                answer.withLock { $0 = outcome }
                client.close(graceful: false)
            }
        }
        guard let outcome = answer.wait(until: { $0 != nil }, timeoutSeconds: Double(timeout + 15_000) / 1000, then: { $0 }) ?? nil else {
            printJSON(["outcome": "failed", "reason": "no answer in time", "status": 0])
            return ExitCode.failure
        }
        switch outcome.result {
        case .answer(let answer):
            guard let response = answer as? APNsResponse else {
                printJSON(["outcome": "failed", "status": answer.status, "reason": answer.reasonName])
                return ExitCode.failure
            }
            var object: [String: Any] = ["status": response.status, "outcome": response.status == 200 ? "delivered" : "failed"]
            if let id = response.apnsID { object["apns_id"] = id }
            if let id = response.apnsUniqueID { object["apns_unique_id"] = id }
            if let reason = response.reason { object["reason"] = reason.rawValue }
            if let timestamp = response.timestamp { object["timestamp"] = timestamp }
            printJSON(object)
            return response.status == 200 ? ExitCode.success : ExitCode.failure
        case .transport(let failure):
            printJSON(["outcome": "failed", "status": 0, "reason": "\(failure)"])
            return ExitCode.failure
        }
    }
}
