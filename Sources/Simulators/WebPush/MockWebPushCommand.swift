import Basics
import Foundation
import Glibc
import Settings

/// `herald mock-webpush ...`: runs the push-service simulator until SIGTERM/SIGINT; SIGHUP reloads `--config`.
public enum MockWebPushCommand {
    /// `herald mock-webpush`: parsing, `--help` and usage errors as for every herald command.
    public static let command = Command(MockWebPushOptions.spec) { parsed in run(try MockWebPushOptions(parsed)) }

    /// Starts the server from `options`, mints the subscriptions asked for, prints the ready line, then serves until
    /// SIGTERM/SIGINT; each SIGHUP loads the fault rules again (a bad file keeps the old ones, and says why).
    static func run(_ options: MockWebPushOptions) -> Int32 {
        func fail(_ text: String, code: Int32) -> Int32 { CommandSupport.fail("mock-webpush", text, code: code) }
        var faults = MockWebPushFaultScript()
        if let file = options.configFile {
            do { faults = try MockWebPushFaultScript.load(file: file) } catch { return fail("\(error)", code: 78) }
        }
        var caFile: String?
        let tls: MockTLSFiles
        do {
            (tls, caFile) = try CommandSupport.tlsFiles(certificate: options.server.certFile, key: options.server.keyFile,
                                                        generateIn: options.generateTLS, prefix: "herald-mock-webpush")
        } catch { return fail("TLS: \(error)", code: 69) }

        let server: MockWebPushServer
        do { server = try MockWebPushServer(tls: tls, host: options.server.host, port: options.server.port, faults: faults, http1Only: options.http1Only) } catch {
            return fail("cannot start: \(error)", code: 69)
        }
        var minted: [MockWebPushSubscription] = []
        do {
            for (prefix, count) in options.mint {
                for _ in 0..<count { minted.append(try server.subscribe(prefix: prefix, applicationServerKey: options.applicationServerKey)) }
            }
        } catch { server.stop(); return fail("cannot mint subscriptions: \(error)", code: 69) }
        let outputs: [(String?, (MockWebPushSubscription) -> String)] = [(options.subscriptionsFile, { $0.json }),
                                                                          (options.jobsFile, { job($0, app: options.jobsApp) })]
        for (file, line) in outputs {
            guard let file else { continue }
            do { try Data(minted.map { line($0) + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: file), options: .atomic) } catch {
                server.stop()
                return fail("cannot write \(file): \(error)", code: 73)
            }
        }

        var ready: [String: Any] = ["port": server.port, "pid": Int(getpid()), "host": options.server.host, "origin": server.origin,
                                    "subscribe_url": server.origin + "/_mock/subscribe", "stats_url": server.origin + "/_mock/stats",
                                    "subscriptions": minted.count, "http1_only": options.http1Only]
        if let caFile { ready["ca_file"] = caFile }
        if let file = options.subscriptionsFile { ready["subscriptions_file"] = file }
        if let file = options.jobsFile { ready["jobs_file"] = file }
        let wait = {
            CommandSupport.waitForTermination(reloading: options.configFile) { file in
                _ = CommandSupport.reload(command: "mock-webpush", configFile: file) { try server.replaceFaults(try MockWebPushFaultScript.load(file: file)) }
            }
        }
        return CommandSupport.serve(ready, readyFile: options.readyFile, command: "mock-webpush", wait: wait, stop: server.stop)
    }

    /// A Herald Web Push job to `subscription` (`--jobs-file`: jobs for `herald enqueue --file`, the Compose
    /// demo's), its id and payload naming the subscription, whose prefix is its fate here.
    static func job(_ subscription: MockWebPushSubscription, app: String?) -> String {
        let appField = app.map { #""app":"\#($0)","# } ?? ""
        return #"{"id":"webpush-\#(subscription.id)",\#(appField)"platform":"webpush","subscription":\#(subscription.json),"#
            + #""payload":{"title":"Herald","body":"to \#(subscription.id)"},"ttl":3600,"urgency":"normal"}"#
    }
}

/// Parsed `herald mock-webpush` flags (see `spec`).
struct MockWebPushOptions {
    var server = ServerFlags()
    var generateTLS: String?
    var configFile: String?
    /// Subscriptions to mint at start: (id prefix, how many), in order.
    var mint: [(prefix: String, count: Int)] = []
    var applicationServerKey: [UInt8]?
    var subscriptionsFile: String?
    var jobsFile: String?
    var jobsApp: String?
    var readyFile: String?
    var http1Only = false

    /// Every flag, declared once: parsing, `--help` and docs/mock-webpush.md's table are made from these.
    static var settings: [Setting<MockWebPushOptions>] {
        ServerFlags.listen(at: \.server) + ServerFlags.certificate(at: \.server) + [
            .option("generate-tls", \.generateTLS, "dir", as: CommandSupport.absolute, "Write ca.pem, ca-key.pem, server.pem and server-key.pem to this directory (default without --cert: a temporary directory)."),
            .option("config", \.configFile, "file", "Fault rules by subscription prefix (JSON; reloaded on SIGHUP, a bad file keeps the old rules)."),
            .commandLine("mint", "[prefix:]n", repeatable: true, "Mint n subscriptions at start whose ids begin with prefix (default sub-).") { args, options throws(UsageError) in
                for word in args.all("mint") {
                    let (prefix, countText) = word.lastIndex(of: ":").map { (String(word[..<$0]), word[word.index(after: $0)...]) } ?? ("sub-", Substring(word))
                    guard let count = Int(countText), (1...100_000).contains(count), !prefix.isEmpty, !prefix.contains("/") else {
                        throw UsageError("--mint takes [prefix:]n with n in 1...100000 and a prefix without '/', not '\(word)'")
                    }
                    options.mint.append((prefix, count))
                }
            },
            .commandLine("application-server-key", "key", "Bind minted subscriptions to this VAPID public key (base64url, uncompressed point), as a browser does.") { args, options throws(UsageError) in
                guard let text = args.value("application-server-key") else { return }
                guard let key = Base64URL.decode(text), key.count == 65, key.first == 4 else {
                    throw UsageError("--application-server-key is a P-256 public key, base64url of its 65-byte uncompressed point")
                }
                options.applicationServerKey = key
            },
            .option("subscriptions-file", \.subscriptionsFile, "file", as: CommandSupport.absolute, "Write the minted subscriptions here, one PushSubscription.toJSON() a line."),
            .option("jobs-file", \.jobsFile, "file", as: CommandSupport.absolute, "Also write a Herald Web Push job per minted subscription, for herald enqueue --file (the demo's)."),
            .option("jobs-app", \.jobsApp, "name", "The app those jobs name (default: none, the configuration's Web Push app)."),
            .option("ready-file", \.readyFile, "file", "Write the ready JSON line to this file once listening."),
            .option("http1-only", \.http1Only, "Be a push service without HTTP/2: its ALPN picks http/1.1 only, as some services do."),
        ]
    }

    static let spec = CommandSpec(
        usageName: "herald mock-webpush",
        abstract: "Run the Web Push simulator (a push service: subscriptions, VAPID check, payload decryption, scripted fates).",
        discussion: """
        An HTTPS server (HTTP/2 and HTTP/1.1) that answers like a browser vendor's push service (RFC 8030): it checks
        each message's VAPID header, decrypts its payload with the subscriber's private key and answers by the fault
        rules, which match on the subscription id's prefix. Subscriptions come from --mint (written to
        --subscriptions-file, one PushSubscription.toJSON() a line) or from POST /_mock/subscribe
        ({"prefix":...,"applicationServerKey":...}); GET /_mock/stats gives the counters. Prints one JSON line when
        ready: {"ca_file":...,"host":...,"origin":...,"pid":...,"port":...,"stats_url":...,"subscribe_url":...,
        "subscriptions":N,...}. Runs until SIGTERM/SIGINT (exit 0); SIGHUP reloads --config. See docs/mock-webpush.md and docs/webpush.md.
        Exit codes: 0 stopped by signal, 64 usage error, 69 cannot start, 73 cannot write, 78 bad config.
        """,
        options: SettingsReader.options(settings))

    init(_ args: ParsedArguments) throws(UsageError) {
        try SettingsReader.apply(Self.settings, arguments: args, to: &self)
        try server.check()
        if (subscriptionsFile != nil || jobsFile != nil) && mint.isEmpty { throw UsageError("--subscriptions-file and --jobs-file need --mint") }
        if let jobsApp, jobsApp.isEmpty || jobsApp.contains("\"") { throw UsageError("--jobs-app is an app name") }
    }
}
